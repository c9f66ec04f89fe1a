// Trace-driven discrete-event simulator of GPU cluster placement.
//
// Three modes (docs/simulator.md):
//  - kFill (the FGD paper's protocol): the trace's pods in seeded shuffled order, then pods
//    resampled with replacement until total GPU request reaches `tune` x capacity; each pod is
//    tried once, nothing departs. Records allocation and fragmentation against arrived demand.
//  - kChurn: Poisson arrivals at offered GPU load `load`; shapes and lifetimes drawn from the
//    trace; pods that do not fit wait in a queue (priority, then FIFO) and are retried when
//    resources free; measured over `duration_h` hours after `warmup_h` hours.
//  - kReplay: the trace's own creation and deletion times, compressed by `time_scale`, with the
//    same queue and report as kChurn.
//
// The simulator drives a sched::Framework through the same interface the live scheduler uses;
// nothing in `sched` depends on it. Runs are deterministic for a given seed.
// Thread-safety: Run is reentrant; distinct runs may execute concurrently.
#ifndef SEEDANCE_SIM_SIMULATOR_H_
#define SEEDANCE_SIM_SIMULATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"
#include "seedance/core/topology_template.h"
#include "seedance/sched/topology.h"

namespace seedance::sim {

enum class Mode { kFill, kChurn, kReplay };
// How kChurn turns --load into an arrival rate: kMeans = load x capacity / (mean lifetime x
// mean GPU request), the definition; kExact = load x capacity / E[lifetime x GPU].
enum class LoadBasis { kMeans, kExact };
std::string_view ModeName(Mode mode);
// Where kFill's random pod order and tie-break node order come from. kSeedance: mt19937_64
// seeded with the seed. kReference: Go's math/rand drawn exactly as the FGD authors' simulator
// draws it, so seed 42 replays the paper's seed 42 (docs/simulator.md, "Random streams").
enum class RngKind { kSeedance, kReference };

struct Workload {
  std::vector<core::NodeSpec> nodes;
  std::vector<core::PodSpec> pods;
  std::string name;  // e.g. the pod file's stem, for reports
};

struct SimOptions {
  Mode mode = Mode::kFill;
  uint64_t seed = 42;
  RngKind rng = RngKind::kSeedance;  // kReference: kFill only
  // kFill: total GPU request of the replayed pods as a multiple of cluster GPU capacity.
  double tune = 1.3;
  // kChurn: offered GPU load = arrival rate x mean lifetime x mean GPU request / capacity.
  double load = 1.2;
  LoadBasis load_basis = LoadBasis::kMeans;
  // kChurn/kReplay: measured window length and warm-up before it, in simulated hours.
  // warmup_h < 0 picks a default (kChurn: 3 mean lifetimes, capped at 7 days; kReplay: 0).
  double duration_h = 72.0;
  double warmup_h = -1.0;
  // kChurn: begin in steady state (pods already running, length-biased with uniform ages)
  // instead of an empty cluster.
  bool warm_start = true;
  // kReplay: trace times are divided by this.
  double time_scale = 1.0;
  // Coverage of the typical-shape workload handed to fgd (and used to measure fragmentation).
  double typical_coverage_pct = 95.0;
  // Tuning knobs passed to the policy factory.
  std::map<std::string, std::string> policy_params;
  bool score_cache = true;  // false: every Score recomputed (the cache must be invisible)
  // Keep what the live scheduler's same-decisions tests compare with the server's: kFill, every
  // pod's placement (RunResult::placements); kChurn/kReplay, every arrival, start and departure
  // in order (RunResult::events).
  bool record_placements = false;
  // A topology template applied to every node before the run (core/topology_template.h);
  // kNone keeps the nodes' own topology (the trace has none).
  core::TopologyTemplate topology = core::TopologyTemplate::kNone;
  // Whole-GPU pods get the topology chooser's GPU set (FrameworkOptions::topology_gpus);
  // false: the policy's own (lowest free indices), for side-by-side comparisons.
  bool topology_gpus = true;
};

// How the multi-GPU pods of a run fared on nodes with GPU topology (sched/topology.h).
struct TopologyStats {
  int64_t multi_gpu_pods = 0;  // placed on a node with GPU topology
  int64_t best_bandwidth = 0;  // of them, on a best-bandwidth GPU set
  double slowdown_sum = 0;     // of the all-reduce slowdown against the best set
  double allreduce_s_sum = 0;  // of the 1 GiB ring all-reduce time (sched::kAllReduceBytes)
  int64_t gpu_pods_numa = 0;   // GPU pods placed on GPUs whose NUMA node is known
  int64_t numa_local = 0;      // of them, with CPU and memory pinned to that NUMA node
  // One bound placement (after Allocate): its GPU set's quality and its NUMA locality.
  void Add(const core::ClusterState& state, const core::Placement& placement);
  void Add(const sched::GpuSetQuality& q);
  double numa_local_pct() const;     // NaN without such GPU pods
  double best_share_pct() const;     // NaN without multi-GPU pods
  double mean_slowdown() const;      // NaN without multi-GPU pods
  double mean_allreduce_ms() const;  // NaN without multi-GPU pods
};

// One point of a fill curve: means over the events whose arrived demand rounds to `arrived_pct`.
struct CurvePoint {
  int arrived_pct = 0;
  double alloc_pct = 0;
  double frag_ratio_pct = 0;
};

// One event of a churn or replay run, in the order the simulator handled it. `pod` numbers the
// run's arrivals from 0 (the warm start's pods first); trace_index is the trace pod it replays.
struct SimEvent {
  enum Kind { kArrive, kStart, kDepart };
  Kind kind;
  double time_s = 0;
  int64_t pod = 0;
  int trace_index = -1;       // kArrive
  core::Placement placement;  // kStart
};

struct RunResult {
  std::string policy;
  uint64_t seed = 0;
  Mode mode = Mode::kFill;
  int64_t pods_arrived = 0;
  int64_t pods_scheduled = 0;
  int64_t pods_failed = 0;  // kFill: never placed
  double wall_s = 0;
  // kFill.
  std::vector<CurvePoint> curve;  // arrived 0..max, integer percent
  double unalloc_gpu_pct_at_100 = 0;
  double unalloc_gpu_pct_at_130 = 0;
  double frag_ratio_pct_at_90 = 0;
  // kFill with record_placements: one per pod of PlanFill's order; node -1 = not placed.
  std::vector<core::Placement> placements;
  TopologyStats topology;  // kFill and kChurn/kReplay: every multi-GPU placement
  // From `topology` (NaN without multi-GPU pods on nodes with topology): the share of them on a
  // best-bandwidth GPU set, and their mean simulated all-reduce slowdown against that set.
  double best_bandwidth_pct = 0;
  double allreduce_slowdown = 0;
  double allreduce_ms = 0;    // mean 1 GiB ring all-reduce time of those pods
  double numa_local_pct = 0;  // GPU pods with CPU on their GPUs' NUMA node (NaN: none known)
  // kChurn / kReplay.
  double unalloc_gpu_pct_steady = 0;
  double queue_delay_p50_s = 0;
  double queue_delay_p99_s = 0;
  int64_t pods_waiting_at_end = 0;
  double idle_gpu_hours = 0;
  double idle_cost_usd = 0;
  double measured_hours = 0;
  // kChurn: GPU-time actually offered per unit time / capacity (E[lifetime x GPU] basis).
  double offered_load_exact = 0;
  // kChurn / kReplay with record_placements.
  std::vector<SimEvent> events;
  // Time series of (hours since start of window, unallocated GPU %) for reports.
  std::vector<std::pair<double, double>> unalloc_series;
};

// Runs one policy on one seed.
absl::StatusOr<RunResult> Run(const Workload& workload, const std::string& policy,
                              const SimOptions& options);

// The fill protocol's replay for options.seed and options.rng: the pods in arrival order (the
// trace's own first, shuffled, then the resampled ones) and the fixed node order that breaks
// score ties (indices into workload.nodes, first wins). Run(kFill) replays exactly this; it is
// public for analysis outside the simulator (`seedance simulate --dump-order`).
struct FillPlan {
  std::vector<core::PodSpec> pods;
  std::vector<int> node_order;
};
absl::StatusOr<FillPlan> PlanFill(const Workload& workload, const SimOptions& options);

// Most pods one run may replay (fill: the trace plus resampled pods; churn: the warm start plus
// the expected arrivals), so that no option makes a run's time or memory unbounded.
inline constexpr int64_t kMaxRunArrivals = 5'000'000;
// The checks Run makes before it starts, so callers can refuse bad input up front: options
// finite and within range (tune [0.01, 100]; churn: load [0.001, 100], duration (0, 87600] h;
// replay: time_scale [1e-6, 1e9]; warm-up <= 87600 h), a cluster with GPUs and at most
// kMaxGpuModels - 1 models, GPU demand, at most kMaxRunArrivals pods, and in replay a non-empty
// measured window (pods created at different times, a warm-up before the last arrival, and at
// least one arrival inside [warm-up, warm-up + duration)). kInvalidArgument with the reason.
absl::Status CheckRun(const Workload& workload, const SimOptions& options);

// Built-in deterministic cluster and workload used when no files are given (docs/simulator.md):
// 96 nodes (48 x 8-GPU, 32 x 2-GPU, 16 x 4-GPU over three GPU models) and pods drawn from a
// fixed shape mix resembling production GPU-sharing clusters, with lifetimes.
Workload BuiltinWorkload();

// Default on-demand price per GPU-hour (USD) of a GPU model, used when a node carries no price of
// its own: the hardware catalog's price (hw/catalog.h, sources cited there), 2.0 for a model it
// does not price.
double DefaultGpuPriceUsdPerHour(const std::string& model);

}  // namespace seedance::sim

#endif  // SEEDANCE_SIM_SIMULATOR_H_
