// Cluster autoscaler for the simulator (issue 17, part 2): node groups, scale-up of pending pods
// through an expander, a modelled provisioning delay, and scale-down of idle nodes.
//
// The contract follows the Kubernetes Cluster Autoscaler (CA) FAQ and its expander docs: a node
// group is a template node with a min and max size; every scan the pending pods that do not fit
// on nodes already requested are bin-packed (first fit, largest GPU request first) onto new nodes
// of each group's template, giving one expansion option per group; an expander picks one option
// and its nodes are requested; they join after the provisioning delay. A node with nothing
// running for idle_s or more is removed while its group is above its min size (an idle node has
// nothing to drain); optionally, as CA's utilization threshold, an underused node is drained.
//
// Expanders:
//   ca-least-waste  CA's least-waste: the option with the least wasted CPU fraction plus wasted
//                   memory fraction after fitting its pods; GPUs are not scored (as in CA).
//   seedance        the price of the GPU capacity the option leaves unallocated, in $/h (a
//                   partly used GPU's free share counts as waste in full), ties broken by CPU
//                   and memory waste, then by more pods helped; the count is then balanced over
//                   groups similar to the chosen one (same GPU model and count, CPU and memory
//                   within balance_tolerance), as CA's --balance-similar-node-groups.
//
// Everything here is a value driven by the caller's clock (no threads, no I/O).
// Thread-safety: not thread-safe; callers serialise access.
#ifndef SEEDANCE_CLUSTERSCALE_CLUSTER_AUTOSCALER_H_
#define SEEDANCE_CLUSTERSCALE_CLUSTER_AUTOSCALER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::clusterscale {

// A node group: a template node and the bounds on how many such nodes may exist.
struct NodeGroup {
  std::string name;
  core::NodeSpec node;  // template; cost_usd_per_hour is the whole node's price
  int min_size = 0;
  int max_size = 0;
};

struct GroupOptions {
  // min_size = floor(min_fraction x nodes of that shape); max_size = ceil(max_factor x nodes).
  double min_fraction = 0.0;
  double max_factor = 1.0;
};

// One group per distinct node shape (CPU, memory, GPU count, GPU model), in first-seen order,
// named "<model>x<gpus>-<cpu>c-<mem>g". InvalidArgument naming the field for an empty list or
// bad options (min_fraction outside [0, 1], max_factor < 1 or not finite).
absl::StatusOr<std::vector<NodeGroup>> GroupsFromNodes(const std::vector<core::NodeSpec>& nodes,
                                                       const GroupOptions& options = {});

enum class ExpanderKind { kCaLeastWaste, kSeedance };

// A pending pod as the autoscaler sees it: its request and the GPU models it accepts (empty =
// any model).
struct PendingPod {
  core::PodShape shape;
  std::vector<std::string> gpu_models;
};

// True when one empty `node` can hold `pod` (CPU, memory, GPU count and share, model).
bool FitsEmptyNode(const core::NodeSpec& node, const PendingPod& pod);

// One group's expansion option: how many new nodes and which pending pods (indices) they hold.
struct Option {
  int group = -1;
  int node_count = 0;
  std::vector<int> pods;
  double cpu_waste = 0;               // wasted CPU fraction of the new nodes
  double memory_waste = 0;            // wasted memory fraction
  double gpu_waste_usd_per_hour = 0;  // price of their unallocated GPU capacity
};

// Scale-up decision: nodes to add per group (the sum may span several groups after balancing).
struct ScaleUp {
  std::vector<int> add;  // per group
  int pods_helped = 0;
};

struct ScaleUpOptions {
  ExpanderKind expander = ExpanderKind::kSeedance;
  int max_nodes_per_scale_up = 1000;  // CA's --max-nodes-per-scaleup
  double balance_tolerance = 0.05;    // relative CPU/memory difference of similar groups
};

// Checks ScaleUpOptions: InvalidArgument naming the field.
absl::Status Validate(const ScaleUpOptions& options);

// The expansion option of every group that can take at least one pod, given `room[g]` more nodes
// allowed in group g. REQUIRES: room.size() == groups.size(), every room[g] >= 0.
std::vector<Option> ExpansionOptions(const std::vector<NodeGroup>& groups,
                                     const std::vector<PendingPod>& pending,
                                     const std::vector<int>& room, int max_nodes);

// Picks one option with the expander and balances it over similar groups (seedance only).
// Empty `add` (all zero) when no option exists. REQUIRES: Validate(options).ok().
ScaleUp DecideScaleUp(const std::vector<NodeGroup>& groups, const std::vector<PendingPod>& pending,
                      const std::vector<int>& room, const ScaleUpOptions& options);

// Churn simulation of the autoscaled cluster (docs/cluster-autoscaler.md).
struct ChurnOptions {
  ScaleUpOptions scale_up;
  double load = 0.9;             // offered GPU load against the full cluster (max sizes)
  double duration_h = 48;        // measured window
  double warmup_h = 6;           // before the window, not measured
  double scan_interval_s = 10;   // CA's --scan-interval
  double provision_min_s = 180;  // provisioning delay, uniform in [min, max]
  double provision_max_s = 240;
  double idle_s = 600;  // CA's --scale-down-unneeded-time
  // CA's --scale-down-utilization-threshold: a non-empty node whose utilization (as CA computes
  // it: the allocated GPU share on a GPU node, the larger of CPU and memory on a CPU node) stays
  // below this for idle_s is drained at a scan when every pod on it fits on the other ready
  // nodes: its pods move there (best fit, each keeping its remaining lifetime) and it is removed
  // while its group is above its min. 0 = off (only empty nodes are removed).
  double drain_below_utilization = 0;
  int max_drains_per_scan = 1;  // non-empty nodes drained per scan (CA drains one at a time)
  // Seedance's guard on draining: a node is drained only if the free GPU capacity of the ready
  // nodes left afterwards still covers the GPU demand expected to arrive before a new node could
  // join (the GPU milli arrived in the last hour, per second, x (provision_max_s +
  // scan_interval_s)), so a drain does not make the next arrivals wait for provisioning.
  bool drain_keeps_headroom = false;
  // Predictive pre-scaling: every scan, when the free GPU capacity of ready and provisioning
  // nodes (less what pending pods will take) is below the GPU demand expected to arrive before a
  // node requested now could join (the same estimate as the headroom guard), nodes are requested
  // for the shortfall, the expander sizing them for the latest arrivals' shapes.
  bool prescale = false;
  // Placement of arriving, retried and moved pods: empty = the built-in best fit (least free GPU,
  // then CPU, after placement); otherwise a registered sched policy (bestfit, fgd, cas, ...)
  // deciding on a ClusterState of the ready nodes, with its knobs in policy_params (fgd is
  // handed the trace's typical shapes, as in `seedance simulate`).
  std::string policy;
  std::map<std::string, std::string> policy_params;
  // The placement under the CA-like autoscaler in a comparison (ForAutoscaler): empty = `policy`
  // for both; else a registered policy, e.g. kube-scheduler's most-allocated or least-allocated,
  // the placement CA runs beside in a Kubernetes cluster. RunChurn itself does not read it.
  std::string ca_policy;
  // Replay instead of Poisson churn: every pod arrives once, at its creation_s (seconds from the
  // start of the run), and lives deletion_s - creation_s; `load` is not used. For job traces
  // (PodsFromJobs); the seed then only draws the provisioning delays.
  bool replay = false;
  uint64_t seed = 42;
};

absl::Status Validate(const ChurnOptions& options);

struct ChurnReport {
  int64_t pods_arrived = 0;    // in the window
  int64_t pods_never_fit = 0;  // trace pods no template can hold (left out)
  double pending_p50_s = 0;
  double pending_p99_s = 0;
  double gpu_hours_paid = 0;  // GPUs of nodes from request to removal, in the window
  double idle_gpu_hours = 0;  // joined GPUs not allocated, in the window
  double cost_usd = 0;        // node price paid in the window
  int64_t nodes_added = 0;
  int64_t nodes_removed = 0;    // empty or drained
  int64_t nodes_drained = 0;    // of those, drained of running pods
  int64_t pods_moved = 0;       // running pods moved off drained nodes (each a restart)
  int64_t nodes_prescaled = 0;  // of nodes_added, those requested ahead of pending pods
  int64_t pods_waited = 0;      // pods that waited at all (pending time > 0)
  double waited_p50_s = 0;      // their median pending time (a scale-up's latency)
  int64_t pods_waiting_at_end = 0;
};

// A job of a job trace (the Philly trace, docs/jobs.md) as the autoscaler replays it.
struct JobArrival {
  int64_t submit_s = 0;    // seconds after the start of the replay
  int64_t duration_s = 0;  // run time
  int32_t gpus = 0;        // all at once
};

// The pods of `jobs` for a replay (ChurnOptions::replay) on nodes of gpus_per_node GPUs: a job
// of at most gpus_per_node GPUs is one pod; a larger one is ceil(gpus / gpus_per_node) pods of
// whole nodes (the last takes the remainder) arriving together. They are placed one by one, not
// as a gang: the autoscaler sizes nodes for them alike either way. Pods ask for whole GPUs and
// no CPU or memory (a job trace records none). REQUIRES: gpus_per_node >= 1.
std::vector<core::PodSpec> PodsFromJobs(const std::vector<JobArrival>& jobs, int gpus_per_node);

// RunChurn's bounds on the work of one run: expected arrivals and autoscaler scans over warm-up
// and window.
inline constexpr int kMaxChurnArrivals = 5'000'000;
inline constexpr int kMaxChurnScans = 1'000'000;

// Runs churn (Poisson arrivals copying trace pods with their own lifetimes, or with
// options.replay each pod once at its creation time; pods without a deletion time are left
// out) from every group at its min size. Pods are placed by
// options.policy (default: best fit, least free GPU after placement, then least free CPU).
// InvalidArgument for bad options (an unknown policy or knob included), no pods, or a run past
// kMaxChurnArrivals or kMaxChurnScans.
absl::StatusOr<ChurnReport> RunChurn(const std::vector<NodeGroup>& groups,
                                     const std::vector<core::PodSpec>& pods,
                                     const ChurnOptions& options);

}  // namespace seedance::clusterscale

#endif  // SEEDANCE_CLUSTERSCALE_CLUSTER_AUTOSCALER_H_
