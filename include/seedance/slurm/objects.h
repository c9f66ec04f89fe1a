// Slurm's objects as slurmrestd (OpenAPI v0.0.38, Slurm 22.05) shows them, and the job
// submission Seedance makes: docs/slurm.md.
//
// GPUs are addressed one by one through typed GRES: gres.conf gives each GPU of a node its own
// Type, "<prefix><index>" (prefix "g" by default: g0 … g7), so that `gpu:g2:1` is GPU 2 and
// nothing else, and Slurm sets CUDA_VISIBLE_DEVICES to exactly the GPUs Seedance chose. Where
// gres.conf also types the `shard` GRES per GPU (shard:g2:4), a pod sharing a GPU gets shards of
// that GPU.
#ifndef SEEDANCE_SLURM_OBJECTS_H_
#define SEEDANCE_SLURM_OBJECTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::slurm {

// One node of GET /slurm/v0.0.38/nodes.
struct Node {
  std::string name;
  int64_t cpus = 0;
  int64_t memory_mib = 0;      // real_memory (Slurm's MB are MiB)
  int32_t num_gpus = 0;        // typed GPUs found (indices 0 .. num_gpus-1, each present)
  int32_t shards_per_gpu = 0;  // typed shards per GPU (0: none, or not the same on every GPU)
  std::string state;           // "idle", "mixed", "allocated", "down", "drained", ...
  std::vector<std::string> state_flags;  // "DRAIN", "NOT_RESPONDING", ...
  std::vector<std::string> features;
  std::vector<std::string> partitions;
  std::string reason;
  std::string address;  // slurmd's address and port (for a liveness probe)
  int port = 0;
  // Down, drained or draining, not responding, failing, powered off or in maintenance: Slurm
  // will start nothing there.
  bool Available() const;
  // Why not (empty when available): "down (Not responding)".
  std::string Unavailability() const;
  // Down, not responding or powered down: its jobs are gone (a drained node's run on).
  bool Lost() const;
};

// Decodes GET /nodes. `gpu_type_prefix` names the per-GPU types ("g": gpu:g3:1 is GPU 3); a GPU
// of another type is not counted, and a node whose typed GPUs leave a gap (g0, g2) has only those
// below the gap. InvalidArgument with the JSON path for a body that is not slurmrestd's.
absl::StatusOr<std::vector<Node>> ParseNodes(std::string_view body,
                                             std::string_view gpu_type_prefix = "g");

// Where a job is, for Seedance.
enum class JobPhase {
  kActive,     // PENDING, CONFIGURING, RUNNING, COMPLETING, SUSPENDED, ...: it holds its GPUs
  kSucceeded,  // COMPLETED
  kFailed,     // FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, DEADLINE, BOOT_FAIL
  kNodeLost,   // NODE_FAIL, PREEMPTED: lost through no fault of its own (requeue per policy)
};
JobPhase PhaseOf(std::string_view state);
std::string_view JobPhaseName(JobPhase phase);  // "Active", "Succeeded", "Failed", "NodeLost"

// One job of GET /jobs.
struct Job {
  int64_t id = 0;
  std::string name;
  std::string state;  // job_state, e.g. "RUNNING"
  std::string nodes;
  std::string reason;  // state_reason
  std::string comment;
  int64_t exit_code = 0;
  JobPhase phase = JobPhase::kActive;
};
absl::StatusOr<std::vector<Job>> ParseJobs(std::string_view body);

// What Seedance submits for a pod it placed.
struct JobSpec {
  std::string name;
  std::string script;  // the batch script, "#!..." first
  std::vector<std::string> argv;
  std::string partition;       // empty: the cluster's default
  std::string node;            // pinned: --nodelist
  std::string gres;            // "gpu:g2:1,gpu:g5:1", "shard:g2:2" or empty
  int64_t cpus = 1;            // --cpus-per-task (at least 1)
  int64_t memory_mib = 0;      // --mem (0: Slurm's default)
  int64_t time_limit_min = 0;  // 0: the partition's
  std::string cwd;
  std::string standard_output, standard_error;  // empty: Slurm's default (slurm-%j.out)
  std::string comment;
  std::map<std::string, std::string> environment;
};
// The body of POST /job/submit.
std::string SubmitBody(const JobSpec& spec);
// The job id of a submit reply, or slurmrestd's error ("slurm: Invalid partition name specified
// (error 2000)").
absl::StatusOr<int64_t> ParseSubmitReply(int http_status, std::string_view body);
// The errors[] of a slurmrestd reply as one status (OK when there are none); `what` starts it.
absl::Status ErrorsOf(int http_status, std::string_view body, std::string_view what);

// The GRES that pins a placement: one gpu:<prefix><i>:1 per GPU, or, for a pod that shares a
// GPU (gpu_milli < 1000) where the node has shards, shard:<prefix><i>:ceil(milli x shards /
// 1000). Empty for a CPU-only pod. FailedPrecondition for a GPU share on a node without shards.
absl::StatusOr<std::string> GresFor(std::span<const int8_t> gpus, int32_t gpu_milli,
                                    int32_t shards_per_gpu, std::string_view gpu_type_prefix = "g");

// The node as Seedance's ClusterState knows it. The GPU model is the first feature
// "gpu-<MODEL>" (gpu-H100 -> H100), else `default_gpu_model`.
core::NodeSpec ToNodeSpec(const Node& node, const std::string& default_gpu_model);

}  // namespace seedance::slurm

#endif  // SEEDANCE_SLURM_OBJECTS_H_
