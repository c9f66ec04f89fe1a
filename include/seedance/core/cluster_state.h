// Cluster state with exact integer accounting.
//
// A ClusterState holds a set of nodes and what is allocated on them: milli-CPU, MiB of memory
// and milli-GPU per GPU device. Every allocation is checked before it is applied, so no quantity
// ever goes negative or over capacity; a rejected allocation leaves the state untouched. Each
// node carries a version number that changes on every allocation, release or change of the node
// (UpdateNode, SetCordoned, RemoveNode), so that callers (score caches in `sched`) can tell when
// what they computed for a node is stale.
//
// Node identity. Nodes live in slots indexed 0..num_nodes()-1; a slot's index never changes, so
// an index held by a caller (a placement, a score cache entry, a node order) stays valid while
// nodes are added and removed. AddNode appends a slot; RemoveNode turns a slot dead: it keeps its
// index and its name (for messages) but has zero capacity, no GPUs and no labels, fits nothing,
// and its name is free again (FindNode no longer finds it; a node added later under that name
// gets a new slot). Names are unique among the live nodes; FindNode is a hash lookup.
//
// Schedulability. Fits and FeasibleNodes accept a node only if it is alive, not cordoned
// (SetCordoned) and has no taint with effect NoSchedule or NoExecute. Pods carry no tolerations
// yet, so such a taint keeps every new pod off the node; PreferNoSchedule does not block (no
// scorer reads it yet). Allocate does not look at cordons or taints (it is the commit of a
// decision already made, and recovery re-applies bindings to cordoned nodes); it refuses a dead
// node. While every node is schedulable (the simulator's case) FeasibleNodes runs the same
// branch-free pass it always did; otherwise it adds one byte per node to the pass.
//
// Invariants, checked in every build (SEEDANCE_CHECK: a bug aborts with what broke): after each
// Allocate/Release/AddNode/UpdateNode/RemoveNode the node's CPU, memory and per-GPU milli stay
// within 0..capacity and the cluster's allocated CPU and GPU milli within 0..capacity
// (O(GPUs of the node)); a Release must match a pod class bound on the node (else a
// FailedPrecondition status). CheckInvariants() audits the whole state in O(nodes + GPUs),
// including the name index, the dead slots (empty, unnamed in the index) and the count of
// unschedulable nodes.
//
// Thread-safety: not thread-safe. One ClusterState belongs to one scheduling loop; concurrent
// readers need external synchronisation.
#ifndef SEEDANCE_CORE_CLUSTER_STATE_H_
#define SEEDANCE_CORE_CLUSTER_STATE_H_

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

// Which kind of accelerator a pod's devices (num_gpu, gpu_milli) may be. A node's devices are
// all GPUs or all NPUs (NodeSpec::npu); a pod that asks for devices without saying a type takes
// the models its gpu_spec names whatever their kind, or, with no gpu_spec, GPUs only (so a CUDA
// job never lands on an Ascend node).
enum class DeviceClass : uint8_t { kUnset, kGpu, kNpu, kAny };
// "", "gpu", "npu", "any".
std::string_view DeviceClassName(DeviceClass c);
// Inverse of DeviceClassName for "gpu", "npu" and "any"; kUnset for anything else (callers
// validate first).
DeviceClass DeviceClassFromName(std::string_view name);

// What a pod asks of its devices beyond their count: their kind and the least memory each must
// have ("any accelerator with >= 48 GiB": {kAny, 49152}). Only pods with num_gpu > 0 ask.
struct DeviceAsk {
  DeviceClass type = DeviceClass::kUnset;
  int64_t memory_mib = 0;  // per device; 0 = any

  bool operator==(const DeviceAsk&) const = default;
};

// Whether a device model passes a pod's ask: `named` says whether the pod's gpu_spec names it
// (true for every model when the spec is empty), `npu` and `memory_mib` describe the model
// (memory 0 = unknown, which passes no memory floor). The one rule, used by the scheduler
// (ClusterState::PodModelMask) and by a federation front choosing a member.
bool DeviceAccepts(const DeviceAsk& ask, bool spec_empty, bool named, bool npu, int64_t memory_mib);

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

// Taint effects, as in Kubernetes.
inline constexpr std::string_view kTaintNoSchedule = "NoSchedule";
inline constexpr std::string_view kTaintPreferNoSchedule = "PreferNoSchedule";
inline constexpr std::string_view kTaintNoExecute = "NoExecute";

// A node taint. key non-empty; effect one of the kTaint* names (checked by AddNode/UpdateNode).
// NoSchedule and NoExecute keep every new pod off the node (pods have no tolerations yet).
// (The "= {}" on members here and below keeps partial designated initialisers warning-free.)
struct Taint {
  std::string key = {};
  std::string value = {};
  std::string effect = {};

  // True for NoSchedule and NoExecute.
  bool Blocks() const { return effect == kTaintNoSchedule || effect == kTaintNoExecute; }
  bool operator==(const Taint&) const = default;
};

// One NUMA node of a machine: its id (unique within the node, >= 0) and its share of the node's
// CPU and memory.
struct NumaInfo {
  int id = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;

  bool operator==(const NumaInfo&) const = default;
};

// Where one GPU is attached.
struct GpuTopology {
  int numa_node = -1;             // a NumaInfo::id of the same node; -1 = unknown
  std::string nvlink_group = {};  // GPUs sharing a non-empty group are NVLink-connected
  std::string pci_address = {};   // "0000:3b:00.0"; empty = unknown
  // GPUs sharing a non-empty switch name sit under one PCIe switch (peer-to-peer traffic stays
  // below the host bridge); empty = unknown.
  std::string pcie_switch = {};

  bool operator==(const GpuTopology&) const = default;
};

// A node's topology. Both lists may be empty (unknown). gpus is empty or has exactly one entry
// per GPU, gpus[i] describing GPU device i (the device index of Placement::gpus).
struct NodeTopology {
  std::vector<NumaInfo> numa = {};
  std::vector<GpuTopology> gpus = {};

  bool operator==(const NodeTopology&) const = default;
};

// A node's description: capacity, identity, labels, taints and topology.
struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpus = 0;
  std::string gpu_model;  // empty for CPU-only nodes
  double cost_usd_per_hour = 0.0;
  double power_w = 0.0;
  // The node's devices (num_gpus of gpu_model) are NPUs rather than GPUs. A model the hardware
  // catalog lists as an NPU (hw::DeviceKind::kNpu) is one whether or not this is set.
  bool npu = false;
  // Memory of one device, MiB; 0 = the catalog's figure for gpu_model (none for a model it does
  // not know).
  int64_t device_memory_mib = 0;
  // "= {}": aggregate initialisers that stop after power_w stay free of missing-initialiser
  // warnings.
  std::map<std::string, std::string> labels = {};
  std::vector<Taint> taints = {};
  NodeTopology topology = {};

  bool operator==(const NodeSpec&) const = default;
};

// Where a pod landed: node index, the GPU device indices it uses on that node, and the NUMA
// node its CPU and memory are pinned to.
struct Placement {
  int node = -1;
  int32_t num_gpus = 0;
  std::array<int8_t, kMaxGpusPerNode> gpus{};
  // A NumaInfo::id of the node: the pod's CPU cores and memory come from that NUMA node's
  // share. -1: not pinned (the node lists no NUMA nodes, or none had room); such pods count
  // against the node's totals only.
  int32_t numa = -1;

  std::span<const int8_t> gpu_ids() const { return {gpus.data(), static_cast<size_t>(num_gpus)}; }
};

class ClusterState {
 public:
  // The nodes in slots 0..nodes.size()-1, each checked as AddNode checks it (Create({}) is an
  // empty cluster). Errors as AddNode's, the first failing node's.
  static absl::StatusOr<ClusterState> Create(std::vector<NodeSpec> nodes);

  // Adds a node in a new slot (index num_nodes()) and returns the index. Errors, state
  // unchanged: AlreadyExists if a live node has the name; InvalidArgument for a negative
  // capacity, more than kMaxGpusPerNode GPUs, a full GPU model table, a taint with an empty key
  // or an unknown effect, or a topology that does not match the node (gpus neither empty nor one
  // per GPU, duplicate or negative NUMA ids, a GPU on a NUMA node the node does not list).
  absl::StatusOr<int> AddNode(NodeSpec spec);
  // Replaces live node n's spec (capacity, labels, taints, topology, cost, power) keeping what
  // is allocated, and bumps version(n). Errors, state unchanged: NotFound if n is not a live
  // slot; InvalidArgument if spec.name differs from the node's or the spec is invalid (as for
  // AddNode); FailedPrecondition if the new CPU or memory capacity is below what is allocated,
  // or the GPU count or model changes while a GPU pod is bound on the node. A new GPU model
  // takes a new id in the model table (ids are never reused).
  absl::Status UpdateNode(int n, NodeSpec spec);
  // Turns live node n into a dead slot (see above) and bumps version(n). NotFound if n is not a
  // live slot; FailedPrecondition while pods are bound on it (release them first: a drain).
  absl::Status RemoveNode(int n);
  // Cordons (true) or uncordons node n; a cordoned node fits no new pod, its bound pods stay.
  // Bumps version(n) when the flag changes. REQUIRES: n is a live slot (dies otherwise).
  void SetCordoned(int n, bool cordoned);
  bool cordoned(int n) const { return (blocked_[n] & kBlockedCordoned) != 0; }
  bool alive(int n) const { return (blocked_[n] & kBlockedDead) == 0; }
  // True if node n has a NoSchedule or NoExecute taint.
  bool tainted(int n) const { return (blocked_[n] & kBlockedTainted) != 0; }
  // Alive, not cordoned, not tainted: a node new pods may go to.
  bool schedulable(int n) const { return blocked_[n] == 0; }
  // Slot index of the live node named `name`, or -1. O(1) (hash map).
  int FindNode(std::string_view name) const;

  // Slots, dead ones included (indices are stable). Loop over 0..num_nodes()-1 and skip
  // !alive(n) where dead slots matter (they have zero capacity, so sums need not).
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_live_nodes() const { return num_live_; }
  // Nodes that are not schedulable (dead, cordoned or tainted).
  int num_unschedulable_nodes() const { return num_blocked_; }
  const NodeSpec& node(int n) const { return nodes_[n]; }
  const std::vector<NodeSpec>& nodes() const { return nodes_; }

  int64_t cpu_left(int n) const { return cpu_left_[n]; }
  int64_t memory_left(int n) const { return memory_left_[n]; }
  // CPU and memory of NUMA node `id` of node n not yet used by pods pinned there (its share in
  // the topology minus their requests); -1 when the node does not list that NUMA node.
  int64_t numa_cpu_left(int n, int id) const;
  int64_t numa_memory_left(int n, int id) const;
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
  // The mask a pod with devices resolves to: ModelMask(gpu_spec) narrowed to the models that
  // pass DeviceAccepts(ask, ...) (kind and memory). Pods without devices (`wants_devices`
  // false) get ModelMask(gpu_spec) unchanged. While the table holds no NPU and the ask sets no
  // memory floor and no type other than GPU, this is ModelMask(gpu_spec) (0 = any model).
  uint64_t PodModelMask(std::string_view gpu_spec, const DeviceAsk& ask, bool wants_devices) const;
  // Model `id`'s kind and per-device memory (MiB, 0 unknown), fixed when it entered the table.
  // REQUIRES: 0 <= id < gpu_models().size().
  bool model_npu(GpuModelId id) const { return model_npu_[id] != 0; }
  int64_t model_memory_mib(GpuModelId id) const { return model_memory_mib_[id]; }

  // True if node n has the GPU model the pod accepts (any node when the mask is 0).
  bool Accessible(int n, const PodShape& pod) const {
    if (pod.gpu_model_mask == 0) return true;
    return model_[n] != kNoGpuModel && ((pod.gpu_model_mask >> model_[n]) & 1u);
  }
  // True if the pod fits on node n: schedulable, model, CPU, memory, and enough GPUs with room.
  bool Fits(int n, const PodShape& pod) const {
    if (blocked_[n] != 0) return false;
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
  // Schedulable nodes by their number of entirely free GPUs: index f counts those with f free
  // (O(1), kept in step with every change).
  std::span<const int32_t> schedulable_by_free_gpus() const { return free_gpu_nodes_; }
  int32_t max_gpu_left(int n) const { return max_gpu_left_[n]; }
  // Milli-GPU left on node n, summed over its GPUs (O(1)).
  int32_t gpu_milli_left(int n) const { return gpu_milli_left_[n]; }

  // Places the pod on placement.node using exactly the listed GPUs, pinned to placement.numa
  // when >= 0. Fails (state unchanged) if anything would go negative (the node's totals, or
  // the pinned NUMA node's share), the GPU list is invalid, the NUMA node is not the node's,
  // or the node is dead. Cordons and taints are not checked (see above).
  absl::Status Allocate(const PodShape& pod, const Placement& placement);
  // Undoes an Allocate. Fails (state unchanged) if it would exceed capacity.
  absl::Status Release(const PodShape& pod, const Placement& placement);

  int64_t gpu_capacity_milli() const { return gpu_capacity_milli_; }
  int64_t gpu_allocated_milli() const { return gpu_allocated_milli_; }
  int64_t cpu_capacity_milli() const { return cpu_capacity_milli_; }
  int64_t cpu_allocated_milli() const { return cpu_allocated_milli_; }
  // GPUs of the live nodes (dead slots hold none).
  int total_gpus() const { return static_cast<int>(gpu_left_.size()); }

  // Audits every node and the cluster totals (capacities, what is left against what is
  // allocated, the per-node GPU summaries and class counts, model ids) and dies on the first
  // broken invariant. O(nodes + GPUs): for tests and coarse checkpoints, not per decision.
  void CheckInvariants() const;

 private:
  // Test-only: defined in cluster_state_test.cc, breaks internal state for the death tests.
  friend class ClusterStateTestPeer;
  ClusterState() = default;
  // blocked_ bits: why a node is not schedulable.
  static constexpr uint8_t kBlockedDead = 1;
  static constexpr uint8_t kBlockedCordoned = 2;
  static constexpr uint8_t kBlockedTainted = 4;
  // The checks AddNode and UpdateNode share (capacity, GPUs, taints, topology).
  static absl::Status ValidateSpec(const NodeSpec& spec);
  // The model id for `name` (kNoGpuModel for ""), adding it to the table if `add`; an error
  // when the table is full.
  absl::StatusOr<GpuModelId> ModelFor(const NodeSpec& spec, bool add);
  // Sets blocked_[n] and keeps num_blocked_ and free_gpu_nodes_ in step.
  void SetBlocked(int n, uint8_t bits);
  // Gives node n `count` GPUs, all free, moving the GPUs of later nodes. REQUIRES: every GPU of
  // node n is free.
  void ResizeGpus(int n, int count);
  // Branch-free feasibility pass; with_blocked also tests blocked_.
  template <bool kWithBlocked>
  void FeasibleSimple(const PodShape& pod, int* dst, size_t* count) const;
  // Dies unless node n and the cluster totals are within capacity (the O(1) + O(GPUs) share of
  // CheckInvariants, run after every change).
  void CheckAfterChange(int n) const;
  absl::Status CheckPlacement(const PodShape& pod, const Placement& p) const;
  bool FitsSlow(int n, const PodShape& pod) const;
  void RefreshGpuSummary(int n);

  // What pods pinned to a NUMA node use, per node, in the order of its topology.numa.
  struct NumaUse {
    int id = 0;
    int64_t cpu_used = 0;
    int64_t memory_used = 0;
  };
  // Index of NUMA node `id` in nodes_[n].topology.numa, or -1.
  int NumaIndex(int n, int id) const;
  // The pinned use of node n carried over to `spec`'s NUMA list; FailedPrecondition if a NUMA
  // node in use disappears or shrinks below its use.
  absl::StatusOr<std::vector<NumaUse>> NumaUseFor(int n, const NodeSpec& spec) const;

  std::vector<NodeSpec> nodes_;
  std::vector<std::vector<NumaUse>> numa_used_;
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
  std::vector<int32_t> gpu_milli_left_;
  std::vector<uint8_t> blocked_;  // kBlocked* bits per node; 0 = schedulable
  std::vector<std::string> model_names_;
  std::vector<uint8_t> model_npu_;         // per model id: 1 for NPUs
  std::vector<int64_t> model_memory_mib_;  // per model id: one device's memory, 0 unknown
  bool has_npu_models_ = false;
  absl::flat_hash_map<std::string, int> by_name_;  // live nodes only
  int num_live_ = 0;
  int num_blocked_ = 0;
  // Schedulable nodes by free_gpus_ value (schedulable_by_free_gpus).
  std::array<int32_t, kMaxGpusPerNode + 1> free_gpu_nodes_{};
  int64_t gpu_capacity_milli_ = 0;
  int64_t gpu_allocated_milli_ = 0;
  int64_t cpu_capacity_milli_ = 0;
  int64_t cpu_allocated_milli_ = 0;
};

}  // namespace seedance::core

#endif  // SEEDANCE_CORE_CLUSTER_STATE_H_
