// Job-trace simulation (`seedance simulate --mode jobs`, docs/jobs.md): gang jobs that carry a
// tenant, a GPU count, a submit time and a duration, replayed on 8-GPU nodes split among tenants.
//
// Two families of policy share the workload, the clock and the report:
//   * the reference protocol's queues (fifo, sjf, srtf), written to reproduce the Helios
//     artifact's "QSSF Service" simulator step for step on isolated or pooled partitions: an
//     integer one-second clock, consolidate placement, head-of-line blocking (fifo, sjf) and
//     SRTF's per-second re-sort with checkpoint overheads. The engine only visits the seconds at
//     which the reference's state can change, so it gives the same numbers in far less time;
//   * Seedance's tenancy policies on one shared pool: each tenant's partition size is its
//     guaranteed quota, idle quota is lent to others, the owner takes it back by preempting
//     borrowed jobs (the reference's checkpoint overheads are charged), and what is left is shared
//     by weighted fair share. Inside a tenant, jobs are ordered by submit time (`quota-fifo`) or by
//     least attained service (`quota-las`, which never reads a job's duration).
// Thread-safety: pure functions of their arguments.
#ifndef SEEDANCE_SIM_JOBS_H_
#define SEEDANCE_SIM_JOBS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/trace/job_trace.h"

namespace seedance::sim {

inline constexpr int kGpusPerJobNode = 8;

struct JobSpec {
  int64_t submit_s = 0;    // seconds after the first kept job's submit time
  int64_t duration_s = 0;  // run time without interruption
  int32_t gpus = 0;
  int32_t tenant = 0;  // index into JobWorkload::tenants
  int64_t line = 0;    // line in the trace file
};

struct JobTenant {
  std::string name;
  int32_t nodes = 0;  // after --capacity-scale: the partition (isolated) or guaranteed quota
  double weight = 1.0;
};

struct JobWorkload {
  std::vector<JobTenant> tenants;
  std::vector<JobSpec> jobs;  // sorted by submit time, file order among equal times
  int64_t origin_unix_s = 0;  // Unix time of submit_s == 0
  int64_t window_s = 0;       // the protocol's window length (last admissible submit_s)
  // Jobs left out and why: outside the window, no GPUs, a tenant without capacity, or more GPUs
  // than the job's partition can ever hold (the reference would wait for them forever).
  int64_t outside_window = 0, no_gpus = 0, unknown_tenant = 0, too_large = 0;
};

struct JobWindow {
  int64_t start_unix_s = 0;
  int64_t end_unix_s = 0;
};

// Order of jobs with equal submit times. The reference sorts with pandas' default quicksort,
// which is not stable; on the Philly bytes its output is reproduced by taking tied jobs in
// reverse file order (docs/jobs.md, "Ties"), which is the default.
enum class SubmitTies { kReverseFile, kFile };

struct JobSelection {
  JobWindow window;
  double capacity_scale = 1.0;
  bool pooled = false;
  SubmitTies ties = SubmitTies::kReverseFile;
};

// The reference protocol's job selection: jobs with GPUs in a tenant of `tenants`, sorted by
// submit time, submit >= window start, normalised to the first kept job, kept while the
// normalised submit is <= end - start. Each tenant's nodes become round-half-even(nodes x
// capacity_scale). With `pooled`, a job is too large only beyond the whole cluster.
absl::StatusOr<JobWorkload> SelectJobs(const std::vector<trace::TraceJob>& trace,
                                       const std::vector<trace::TenantSpec>& tenants,
                                       const JobSelection& selection);

enum class Partitioning { kIsolated, kPooled };

// Knobs of the tenancy policies (docs/jobs.md); the defaults are the documented ones.
struct TenancyOptions {
  // quota-las: attained GPU-seconds at which a job drops to the next priority level, and the
  // factor between successive thresholds.
  double las_first_threshold_gpu_s = 3600;
  double las_threshold_factor = 8;
  int las_levels = 4;
  // A job pending this long is served before every job of a lower level (aging), 0 = never.
  int64_t aging_s = 6 * 3600;
};

struct JobSimOptions {
  std::string policy = "fifo";  // fifo, sjf, srtf, quota-fifo, quota-las
  Partitioning partitioning = Partitioning::kIsolated;  // reference policies only
  TenancyOptions tenancy;
};

const std::vector<std::string>& JobPolicyNames();
bool IsReferenceJobPolicy(const std::string& policy);

struct JobOutcome {
  int64_t start_s = -1;  // first start
  int64_t end_s = -1;
  int64_t queue_s = 0;  // first wait plus every wait after a preemption
  int32_t preemptions = 0;
  int64_t lost_gpu_s = 0;  // checkpoint overhead x GPUs, over all preemptions
};

struct JobRun {
  std::string policy;
  std::vector<JobOutcome> jobs;  // parallel to JobWorkload::jobs
  // Per tenant: seconds during which it had a pending job that fits its guaranteed quota
  // beside what it runs, yet the job was not running.
  std::vector<int64_t> below_quota_s;
  std::vector<int64_t> busy_gpu_s;  // per tenant, GPU-seconds held (checkpoint overhead included)
  int64_t total_gpus = 0;
  int64_t scheduling_passes = 0;
};

absl::StatusOr<JobRun> RunJobs(const JobWorkload& workload, const JobSimOptions& options);

// Runs each policy on the jobs `selection` picks: the tenancy policies (and the reference ones
// with `pooled_reference`) on one pool, the others on isolated partitions. Fails when the
// partitionings leave out different jobs (a job larger than its tenant's partition but not
// than the pool), since their figures would not compare.
struct JobRunSet {
  JobWorkload workload;
  std::vector<JobRun> runs;
  double wall_s = 0;
};
absl::StatusOr<JobRunSet> RunJobPolicies(const std::vector<trace::TraceJob>& trace,
                                         const std::vector<trace::TenantSpec>& tenants,
                                         JobSelection selection, bool pooled_reference,
                                         const std::vector<std::string>& policies);

// Figures for one tenant or for all jobs ("all").
struct JobSummary {
  std::string name;
  int64_t jobs = 0;
  double avg_jct_s = 0, p99_jct_s = 0, avg_queue_s = 0, p99_queue_s = 0, p999_queue_s = 0;
  int64_t makespan_s = 0;  // last end - first submit (both normalised)
  int64_t preemptions = 0, preempted_jobs = 0;
  double lost_gpu_h = 0;
  double gpu_util = 0;          // busy GPU-seconds / (GPUs x makespan)
  int64_t below_quota_s = 0;    // "all": the largest tenant figure
  double below_quota_pct = 0;   // of the window
  double jain_fairness = 1.0;   // "all" only: Jain's index of the tenants' mean duration/JCT
};

// Unrounded figures (the reference's CSV rounds to two decimals).
JobSummary SummarizeJobs(const JobWorkload& workload, const JobRun& run, int tenant);  // -1 = all

inline constexpr char kJobsSchema[] = "simulate-jobs/v1";
// {"schema_version", "seedance_version", "command_line", "policies": [{"name", "summary":
// {...}, "tenants": [{"name", ...}]}]}; the CLI adds "meta".
nlohmann::ordered_json JobRunsToJson(const JobWorkload& workload, const std::vector<JobRun>& runs);
// The "meta" object of the JSON: inputs and options as given (`inputs`: trace, tenants,
// protocol, partition, capacity_scale), the window, the jobs kept and those left out, wall time.
nlohmann::ordered_json JobMetaJson(const JobRunSet& set, nlohmann::ordered_json inputs);
// The one-line summary: "N jobs, P policies in S s wall (K left out: ...)".
std::string JobRunSummary(const JobRunSet& set);
// Fixed-width table: one block per policy, the "all" row first, then one row per tenant.
std::string RenderJobTable(const JobWorkload& workload, const std::vector<JobRun>& runs);
// Comma list of job policies ('all' = every one), without repeats; "" when `list` is valid.
absl::StatusOr<std::vector<std::string>> ParseJobPolicies(const std::string& list);

}  // namespace seedance::sim

#endif  // SEEDANCE_SIM_JOBS_H_
