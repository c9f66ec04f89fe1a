// kube-scheduler's resource scoring, the placement a Kubernetes cluster gets without a
// GPU-aware scheduler: NodeResourcesFit (scoring strategy LeastAllocated, the default, or
// MostAllocated, the bin-packing one) plus NodeResourcesBalancedAllocation, each weight 1 over
// the default resources, CPU and memory, weight 1 each. Extended resources such as
// nvidia.com/gpu are filtered on (the node must have them) but not scored, as in the default
// configuration. Written from the published contract (kubernetes.io, "Resource Bin Packing" and
// the scheduler configuration reference), not from its code.
#include <algorithm>
#include <cmath>
#include <memory>

#include "policies.h"

namespace seedance::sched::internal {
namespace {

using core::ClusterState;
using core::PodShape;

// kube-scheduler scores a pod that requests nothing as if it asked for 100m CPU and 200 MiB
// (its non-zero defaults), so such pods still spread or pack.
constexpr int64_t kNonZeroCpuMilli = 100;
constexpr int64_t kNonZeroMemoryMib = 200;

// A node's CPU and memory requested after placing `pod`, and its capacity.
struct Requested {
  int64_t cpu = 0, cpu_cap = 0, memory = 0, memory_cap = 0;
};

Requested RequestedWith(const ClusterState& s, int n, const PodShape& pod) {
  const core::NodeSpec& node = s.node(n);
  Requested r;
  r.cpu_cap = node.cpu_milli;
  r.memory_cap = node.memory_mib;
  r.cpu = node.cpu_milli - s.cpu_left(n) + (pod.cpu_milli > 0 ? pod.cpu_milli : kNonZeroCpuMilli);
  r.memory = node.memory_mib - s.memory_left(n) +
             (pod.memory_mib > 0 ? pod.memory_mib : kNonZeroMemoryMib);
  return r;
}

// LeastAllocated: (capacity - requested) x 100 / capacity; MostAllocated: requested x 100 /
// capacity (requested capped at capacity). A resource the node lacks scores 0.
int64_t ResourceScore(int64_t requested, int64_t capacity, bool most) {
  if (capacity <= 0) return 0;
  requested = std::min(requested, capacity);
  const int64_t used = most ? requested : capacity - requested;
  return used * kMaxNodeScore / capacity;
}

class NodeResourcesFit : public ScorePlugin {
 public:
  explicit NodeResourcesFit(bool most) : most_(most) {}
  std::string_view Name() const override { return "NodeResourcesFit"; }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const Requested r = RequestedWith(s, n, *c.pod);
    // The weighted mean of the two resources, integer division as kube-scheduler's.
    return (ResourceScore(r.cpu, r.cpu_cap, most_) + ResourceScore(r.memory, r.memory_cap, most_)) /
           2;
  }

 private:
  bool most_;
};

// (1 - the standard deviation of the CPU and memory fractions requested) x 100; for two
// resources the standard deviation is half their difference.
class NodeResourcesBalancedAllocation : public ScorePlugin {
 public:
  std::string_view Name() const override { return "NodeResourcesBalancedAllocation"; }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const Requested r = RequestedWith(s, n, *c.pod);
    if (r.cpu_cap <= 0 || r.memory_cap <= 0) return kMinNodeScore;
    const double cpu = std::min(1.0, static_cast<double>(r.cpu) / static_cast<double>(r.cpu_cap));
    const double memory =
        std::min(1.0, static_cast<double>(r.memory) / static_cast<double>(r.memory_cap));
    const double sd = std::abs(cpu - memory) / 2;
    return static_cast<int64_t>((1 - sd) * static_cast<double>(kMaxNodeScore));
  }
};

absl::StatusOr<Profile> KubeDefault(const PolicyContext& ctx, const std::string& name, bool most) {
  if (absl::Status st = CheckReferencePolicyOptions(ctx, name); !st.ok()) return st;
  Profile p;
  p.name = name;
  p.scores.push_back({std::make_shared<NodeResourcesFit>(most), 1});
  p.scores.push_back({std::make_shared<NodeResourcesBalancedAllocation>(), 1});
  p.reserve = NewBestFitGpuReserve();
  return p;
}

}  // namespace

absl::StatusOr<Profile> MakeLeastAllocated(const PolicyContext& ctx) {
  return KubeDefault(ctx, "least-allocated", false);
}
absl::StatusOr<Profile> MakeMostAllocated(const PolicyContext& ctx) {
  return KubeDefault(ctx, "most-allocated", true);
}

}  // namespace seedance::sched::internal
