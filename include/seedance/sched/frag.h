// GPU fragmentation measure of FGD (Weng et al., "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23, §3).
//
// Given a target workload (task shapes with their frequencies), the fragment amount of a node is
// the expected amount of its idle milli-GPU that a task drawn from the workload could not use.
// Definitions follow the authors' simulator (pkg/utils/frag.go) exactly, including its quirks:
// CPU-only target shapes count every idle GPU as fragment (class XL/XR), and a shape that can
// run on the node still counts the GPUs too small for it as "lack GPU" fragment.
//
// Thread-safety: pure functions over values; safe to call concurrently.
#ifndef SEEDANCE_SCHED_FRAG_H_
#define SEEDANCE_SCHED_FRAG_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "seedance/core/cluster_state.h"

namespace seedance::sched {

// One task shape of a target workload. Memory is not part of FGD's shape.
struct TargetShape {
  int64_t cpu_milli = 0;
  int32_t num_gpu = 0;
  int32_t gpu_milli = 0;        // per GPU
  uint64_t gpu_model_mask = 0;  // 0 = any model (see core::PodShape)
  std::string gpu_spec;         // textual form, part of the shape's identity
  double freq = 0;              // share of the workload, sums to 1 over the list
};
using TargetWorkload = std::vector<TargetShape>;

// A node's free resources as FGD sees them: CPU left and milli-GPU left per GPU.
struct NodeResources {
  int64_t cpu_left = 0;
  int32_t num_gpus = 0;
  std::array<int32_t, core::kMaxGpusPerNode> gpu_left{};
  core::GpuModelId model = core::kNoGpuModel;

  static NodeResources Of(const core::ClusterState& s, int n);
  int64_t GpuLeftTotal() const;
};

// The reference's classes, in its index order.
enum class FragClass : int {
  kQ1LackBoth = 0,
  kQ2LackGpu = 1,
  kQ3Satisfied = 2,
  kQ4LackCpu = 3,
  kXlSatisfied = 4,
  kXrLackCpu = 5,
  kNoAccess = 6,
};
inline constexpr int kNumFragClasses = 7;
using FragAmount = std::array<double, kNumFragClasses>;

// True if the node's model is acceptable to the shape (any, if the mask is 0).
bool Accessible(const NodeResources& node, uint64_t gpu_model_mask);
// Class of the node with respect to one task shape (reference: GetNodePodFrag).
FragClass ClassifyNode(const NodeResources& node, const TargetShape& shape);
// Fragment amount per class in milli-GPU (reference: NodeGpuShareFragAmount).
FragAmount NodeFragAmount(const NodeResources& node, const TargetWorkload& workload);
// Sum over all classes but Q3 (reference: NodeGpuShareFragAmountScore).
double NodeFragScore(const NodeResources& node, const TargetWorkload& workload);

// A weighted count of one shape, the input to TypicalShapes.
struct ShapeCount {
  TargetShape shape;  // freq ignored
  double count = 0;
};

// The reference's GetTypicalPods: shapes sorted by decreasing count (ties: the larger shape by
// cpu, gpu_milli, num_gpu, gpu_spec first), taken one by one until they cover
// `coverage_pct` of all counted pods, then renormalised so frequencies sum to 1.
// CPU-only shapes are included (the paper's configuration).
TargetWorkload TypicalShapes(std::vector<ShapeCount> counts, double coverage_pct = 95.0);

// Total-variation distance between two workloads: half the sum over shapes (CPU, GPU count,
// milli-GPU, model mask and spec) of the difference of their frequencies, a shape missing from
// one counting 0 there. 0 for equal workloads, 1 for disjoint ones (frequencies summing to 1).
double WorkloadDistance(const TargetWorkload& a, const TargetWorkload& b);

// Counts identical shapes of `pods`; gpu_model_mask must already be resolved.
std::vector<ShapeCount> CountShapes(std::span<const core::PodSpec> pods);

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_FRAG_H_
