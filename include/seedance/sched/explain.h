// Why a pod fits nowhere: typed per-node filter reasons and their aggregate, like
// kube-scheduler's FitError ("0/1213 nodes fit: 800 insufficient GPU milli, 413 GPU model").
//
// NodeFilterReason gives the first check node n fails for a pod, in the order of FilterReason,
// which is the order ClusterState::Fits tests them in: a node gets exactly one reason, and it
// gets none exactly when Fits(n, pod) is true. Diagnose runs it over every live node (dead slots
// are not counted: nodes_total is num_live_nodes()); Framework::Explain adds the profile's
// Filter plugins as kPlugin. The work is O(live nodes + their GPUs) per call: a diagnosis is made
// when someone asks (an explain request, a failed cycle's message), never on the hot path.
//
// Thread-safety: pure functions of their arguments.
#ifndef SEEDANCE_SCHED_EXPLAIN_H_
#define SEEDANCE_SCHED_EXPLAIN_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "seedance/core/cluster_state.h"

namespace seedance::sched {

// Why a node was rejected, in the order the checks run.
enum class FilterReason : uint8_t {
  kNodeRemoved,           // a dead slot (only from NodeFilterReason; Diagnose skips them)
  kCordoned,              // the node is cordoned
  kTainted,               // a NoSchedule/NoExecute taint (pods have no tolerations yet)
  kGpuModel,              // the node's GPU model is not one the pod accepts
  kInsufficientCpu,       // less CPU left than asked
  kInsufficientMemory,    // less memory left than asked
  kTooFewGpus,            // the node has fewer GPUs than asked, even empty
  kInsufficientGpu,       // not enough entirely free GPUs for a whole-GPU pod
  kInsufficientGpuMilli,  // no GPU (or not enough GPUs) with that much milli left
  kPlugin,                // a Filter plugin of the profile said no
};
inline constexpr int kNumFilterReasons = 10;

// Lower-case phrase used in messages: "node removed", "cordoned", "untolerated taint",
// "GPU model", "insufficient CPU", "insufficient memory", "too few GPUs", "insufficient free
// GPUs", "insufficient GPU milli", "rejected by plugin".
std::string_view FilterReasonName(FilterReason reason);

struct Diagnosis {
  int nodes_total = 0;  // live nodes considered
  int nodes_fit = 0;    // of them, nodes the pod fits on now
  // Rejected nodes by first failing reason, indexed by FilterReason.
  std::array<int, kNumFilterReasons> counts{};
  // Name of the first Filter plugin that rejected a node (kPlugin); empty if none did.
  std::string plugin;

  int count(FilterReason r) const { return counts[static_cast<size_t>(r)]; }
  bool operator==(const Diagnosis&) const = default;
};

// The first check node n fails for `pod`, or nullopt if the pod fits there (exactly when
// state.Fits(n, pod)). REQUIRES: 0 <= n < state.num_nodes().
std::optional<FilterReason> NodeFilterReason(const core::ClusterState& state, int n,
                                             const core::PodShape& pod);

// First failing reason per live node (nodes_fit + the counts == nodes_total).
Diagnosis Diagnose(const core::ClusterState& state, const core::PodShape& pod);

// "0/1213 nodes fit: 800 insufficient GPU milli, 413 GPU model": fitting over total nodes, then
// the reasons by count, descending (ties in FilterReason order); kPlugin names the plugin
// ("2 rejected by plugin gang"). "3/3 nodes fit" when nothing was rejected; "0/0 nodes fit: the
// cluster has no nodes" for an empty cluster.
std::string FitErrorMessage(const Diagnosis& d);

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_EXPLAIN_H_
