// The Slurm backend of `seedance server --backend slurm` (docs/slurm.md): Seedance decides, Slurm
// runs. The scheduler places each pod (internal binding off: a placement is Assumed) and the
// backend submits it to slurmrestd pinned to the decision - --nodelist plus one typed GRES per GPU
// (gpu:g2:1 is GPU 2), or typed shards for a pod sharing a GPU - and then:
//   submitted         the pod is Bound, annotated slurm.seedance.io/job-id;
//   refused / down    the pod goes back to Pending, annotated slurm.seedance.io/error with
//                     Slurm's message, and is tried again after a backoff (never lost);
//   job ended         COMPLETED, FAILED, CANCELLED, TIMEOUT ...: the pod leaves the ledger and
//                     its GPUs are free;
//   node drained      (or draining, failing, rebooting) it is cordoned; its jobs run on;
//   node lost         the job is NODE_FAIL, or Slurm marks the node down or not responding,
//                     or (probe_slurmd) its slurmd refused two connects in a row: the node is
//                     cordoned and, with requeue = resubmit, its pods are
//                     requeued (their jobs cancelled) and placed again elsewhere;
//   pod deleted       through the API: its job is cancelled.
// Nodes come from GET /nodes (those of the partition, when one is given): CPUs, memory, the typed
// GPUs and shards, availability.
//
// Thread-safety: Start and the destructor from one thread; the backend runs its own threads.
#ifndef SEEDANCE_SERVER_SLURM_BACKEND_H_
#define SEEDANCE_SERVER_SLURM_BACKEND_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/server/service.h"
#include "seedance/slurm/rest.h"

namespace seedance::server {

// Annotations the backend reads and writes.
inline constexpr char kSlurmScript[] = "slurm.seedance.io/script";
inline constexpr char kSlurmPartition[] = "slurm.seedance.io/partition";
inline constexpr char kSlurmTimeLimit[] = "slurm.seedance.io/time-limit-min";
inline constexpr char kSlurmWorkdir[] = "slurm.seedance.io/workdir";
inline constexpr char kSlurmOutput[] = "slurm.seedance.io/output";
inline constexpr char kSlurmJobId[] = "slurm.seedance.io/job-id";
inline constexpr char kSlurmError[] = "slurm.seedance.io/error";

struct SlurmBackendOptions {
  slurm::RestOptions rest;
  std::string partition;          // jobs go there and only its nodes are learned; "" = all
  std::string gpu_model = "GPU";  // for nodes without a gpu-<MODEL> feature
  std::string workdir = "/tmp";   // a job's working directory without slurm.seedance.io/workdir
  std::string output;             // --output pattern without slurm.seedance.io/output
  double node_poll_s = 1;
  double job_poll_s = 0.25;
  int submitters = 16;        // submissions in flight at once
  bool resubmit_lost = true;  // node lost: requeue the pods (else they end as failed)
  bool probe_slurmd = false;  // connect to each node's slurmd every node poll (slurmd logs it)
};

struct SlurmBackendStats {
  int64_t submitted = 0, submit_errors = 0, succeeded = 0, failed = 0, requeued = 0, cancelled = 0,
          nodes_unavailable = 0;
  double submit_ms_total = 0;  // time in slurmrestd's submit calls
};

class SlurmBackend {
 public:
  // Lists Slurm's nodes once (so a wrong URL or token fails here, naming the flag), adds them,
  // adopts what an earlier run left (Assumed pods whose job exists are bound to it, Bound pods
  // whose job Slurm no longer knows have ended) and starts the threads.
  static absl::StatusOr<std::unique_ptr<SlurmBackend>> Start(Service& service,
                                                             SlurmBackendOptions options);
  // What Start checks first, without a service: the options, slurmrestd answering with the
  // token, the partition existing. The server calls it before it opens its state.
  static absl::Status Check(const SlurmBackendOptions& options);
  ~SlurmBackend();
  SlurmBackendStats stats() const;

  // POST /v1/pods admission: a pod needs its batch script (kSlurmScript, "#!" first).
  static absl::Status Admit(const sched::PodInfo& pod);

  struct State;

 private:
  SlurmBackend() = default;
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_SLURM_BACKEND_H_
