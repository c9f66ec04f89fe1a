// Cluster state with exact integer accounting.
//
// A ClusterState holds a fixed set of nodes and what is allocated on them: milli-CPU, MiB of
// memory and milli-GPU per GPU device. Every allocation is checked before it is applied, so no
// quantity ever goes negative or over capacity; a rejected allocation leaves the state untouched.
// Each node carries a version number that changes on every allocation or release, so that
// callers (score caches in `sched`) can tell when what they computed for a node is stale.
//
// Invariants, checked in every build (SEEDANCE_CHECK: a bug aborts with what broke): after each
// Allocate/Release the node's CPU, memory and per-GPU milli stay within 0..capacity and the
// cluster's allocated CPU and GPU milli within 0..capacity (O(GPUs of the node)); a Release must
// match a pod class bound on the node (else a FailedPrecondition status). CheckInvariants() audits
// the whole state in O(nodes + GPUs).
//
// Thread-safety: not thread-safe. One ClusterState belongs to one scheduling loop; concurrent
// readers need external synchronisation.
#ifndef SEEDANCE_CORE_CLUSTER_STATE_H_
#define SEEDANCE_CORE_CLUSTER_STATE_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::core {

// One whole GPU in milli-GPU.
inline constexpr int32_t kMilliGpu = 1000;
// Most GPUs one node may have; a node beyond this is rejected at construction.
inline constexpr int kMaxGpusPerNode = 16;
// Index into the cluster's GPU model table; kNoGpuModel for a node without GPUs.
using GpuModelId = int16_t;
inline constexpr GpuModelId kNoGpuModel = -1;
// Most distinct GPU models in one cluster (a pod's allowed models are a bit mask).
inline constexpr int kMaxGpuModels = 64;

// What a pod asks for. gpu_milli is per GPU: a GPU-sharing pod has num_gpu == 1 and
// gpu_milli < 1000; a pod asking for whole GPUs has gpu_milli == 1000.
struct PodShape {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;
  int32_t gpu_milli = 0;
  // GPU models the pod accepts, as bits of GpuModelId; 0 means any model.
  uint64_t gpu_model_mask = 0;

  bool IsGpuSharing() const { return num_gpu == 1 && gpu_milli < kMilliGpu && gpu_milli > 0; }
  int64_t TotalGpuMilli() const { return static_cast<int64_t>(num_gpu) * gpu_milli; }
  bool operator==(const PodShape&) const = default;
};

// A pod as read from a trace: its request plus identity, class and times.
struct PodSpec {
  std::string name;
  PodShape shape;
  std::string gpu_spec;  // e.g. "V100M16|V100M32"; empty = any model
  std::string qos;       // LS, BE, Burstable, Guaranteed (informational)
  int32_t priority = 0;  // higher is served first in queues
  int64_t creation_s = 0;
  int64_t deletion_s = -1;  // -1 = unknown / never
  int64_t scheduled_s = -1;
};

// A node's static description.
struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpus = 0;
  std::string gpu_model;  // empty for CPU-only nodes
  double cost_usd_per_hour = 0.0;
  double power_w = 0.0;
};

// Where a pod landed: node index and the GPU device indices it uses on that node.
struct Placement {
  int node = -1;
  int32_t num_gpus = 0;
  std::array<int8_t, kMaxGpusPerNode> gpus{};

  std::span<const int8_t> gpu_ids() const { return {gpus.data(), static_cast<size_t>(num_gpus)}; }
};

class ClusterState {
 public:
  // REQUIRES: every node has non-negative capacities and at most kMaxGpusPerNode GPUs, and
  // the cluster has at most kMaxGpuModels distinct GPU models (checked by Create).
  static absl::StatusOr<ClusterState> Create(std::vector<NodeSpec> nodes);

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const NodeSpec& node(int n) const { return nodes_[n]; }
  const std::vector<NodeSpec>& nodes() const { return nodes_; }

  int64_t cpu_left(int n) const { return cpu_left_[n]; }
  int64_t memory_left(int n) const { return memory_left_[n]; }
  // Milli-GPU left on each GPU of node n, indexed by device.
  std::span<const int32_t> gpu_left(int n) const {
    return {gpu_left_.data() + gpu_offset_[n], static_cast<size_t>(nodes_[n].num_gpus)};
  }
  GpuModelId model(int n) const { return model_[n]; }
  // Changes whenever node n's allocation changes.
  uint32_t version(int n) const { return version_[n]; }
  // Pods on node n by GPU class: index 0 = GPU-sharing pods, k = pods with k whole GPUs.
  std::span<const int16_t> gpu_class_counts(int n) const {
    return {class_counts_.data() + static_cast<size_t>(n) * (kMaxGpusPerNode + 1),
            kMaxGpusPerNode + 1};
  }
  int num_pods(int n) const { return pods_on_node_[n]; }

  // GPU model table: names in first-seen order of the node list.
  const std::vector<std::string>& gpu_models() const { return model_names_; }
  GpuModelId ModelId(std::string_view name) const;
  // Bit mask for a "A|B|C" spec; 0 for an empty spec. Unknown names contribute no bit, so a
  // spec naming only unknown models yields kNoModelMatches (matches no node).
  uint64_t ModelMask(std::string_view gpu_spec) const;
  static constexpr uint64_t kNoModelMatches = uint64_t{1} << 63;

  // True if node n has the GPU model the pod accepts (any node when the mask is 0).
  bool Accessible(int n, const PodShape& pod) const {
    if (pod.gpu_model_mask == 0) return true;
    return model_[n] != kNoGpuModel && ((pod.gpu_model_mask >> model_[n]) & 1u);
  }
  // True if the pod fits on node n: model, CPU, memory, and enough GPUs with room.
  bool Fits(int n, const PodShape& pod) const {
    if (!Accessible(n, pod)) return false;
    if (cpu_left_[n] < pod.cpu_milli || memory_left_[n] < pod.memory_mib) return false;
    if (pod.num_gpu == 0) return true;
    if (pod.gpu_milli >= kMilliGpu) return free_gpus_[n] >= pod.num_gpu;
    if (pod.num_gpu == 1) return max_gpu_left_[n] >= pod.gpu_milli;
    return FitsSlow(n, pod);
  }
  // Appends to `out` every node index the pod fits on, in index order. Same answer as calling
  // Fits on each node, in a branch-free pass over flat arrays (the scheduler's hot loop).
  void FeasibleNodes(const PodShape& pod, std::vector<int>* out) const;
  // Whole GPUs entirely free on node n, and the most milli-GPU left on any one of its GPUs.
  int free_gpus(int n) const { return free_gpus_[n]; }
  int32_t max_gpu_left(int n) const { return max_gpu_left_[n]; }

  // Places the pod on placement.node using exactly the listed GPUs.
  // Fails (state unchanged) if anything would go negative or the GPU list is invalid.
  absl::Status Allocate(const PodShape& pod, const Placement& placement);
  // Undoes an Allocate. Fails (state unchanged) if it would exceed capacity.
  absl::Status Release(const PodShape& pod, const Placement& placement);

  int64_t gpu_capacity_milli() const { return gpu_capacity_milli_; }
  int64_t gpu_allocated_milli() const { return gpu_allocated_milli_; }
  int64_t cpu_capacity_milli() const { return cpu_capacity_milli_; }
  int64_t cpu_allocated_milli() const { return cpu_allocated_milli_; }
  int total_gpus() const { return static_cast<int>(gpu_left_.size()); }

  // Audits every node and the cluster totals (capacities, what is left against what is
  // allocated, the per-node GPU summaries and class counts, model ids) and dies on the first
  // broken invariant. O(nodes + GPUs): for tests and coarse checkpoints, not per decision.
  void CheckInvariants() const;

 private:
  // Test-only: defined in cluster_state_test.cc, breaks internal state for the death tests.
  friend class ClusterStateTestPeer;
  ClusterState() = default;
  // Dies unless node n and the cluster totals are within capacity (the O(1) + O(GPUs) share of
  // CheckInvariants, run after every change).
  void CheckAfterChange(int n) const;
  absl::Status CheckPlacement(const PodShape& pod, const Placement& p) const;
  bool FitsSlow(int n, const PodShape& pod) const;
  void RefreshGpuSummary(int n);

  std::vector<NodeSpec> nodes_;
  std::vector<int64_t> cpu_left_;
  std::vector<int64_t> memory_left_;
  std::vector<int32_t> gpu_left_;
  std::vector<int32_t> gpu_offset_;
  std::vector<GpuModelId> model_;
  std::vector<uint32_t> version_;
  std::vector<int16_t> class_counts_;
  std::vector<int32_t> pods_on_node_;
  std::vector<uint64_t> model_bit_;  // 1 << model, 0 for nodes without a GPU model
  std::vector<int32_t> free_gpus_;
  std::vector<int32_t> max_gpu_left_;
  std::vector<std::string> model_names_;
  int64_t gpu_capacity_milli_ = 0;
  int64_t gpu_allocated_milli_ = 0;
  int64_t cpu_capacity_milli_ = 0;
  int64_t cpu_allocated_milli_ = 0;
};

}  // namespace seedance::core

#endif  // SEEDANCE_CORE_CLUSTER_STATE_H_
