#include "seedance/core/cluster_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace seedance::core {

// Reaches the state's internals so the death tests can break an invariant the public API cannot
// (that is what an invariant is); test-only, befriended in cluster_state.h.
class ClusterStateTestPeer {
 public:
  static std::vector<int64_t>& cpu_left(ClusterState& s) { return s.cpu_left_; }
  static std::vector<int64_t>& memory_left(ClusterState& s) { return s.memory_left_; }
  static std::vector<int32_t>& gpu_left(ClusterState& s) { return s.gpu_left_; }
  static std::vector<int32_t>& gpu_offset(ClusterState& s) { return s.gpu_offset_; }
  static std::vector<int32_t>& pods_on_node(ClusterState& s) { return s.pods_on_node_; }
  static std::vector<int16_t>& class_counts(ClusterState& s) { return s.class_counts_; }
  static std::vector<int32_t>& free_gpus(ClusterState& s) { return s.free_gpus_; }
  static int32_t& free_gpu_nodes(ClusterState& s, int f) { return s.free_gpu_nodes_[f]; }
  static std::vector<int32_t>& gpu_milli_left(ClusterState& s) { return s.gpu_milli_left_; }
  static std::vector<GpuModelId>& model(ClusterState& s) { return s.model_; }
  static std::vector<uint64_t>& model_bit(ClusterState& s) { return s.model_bit_; }
  static int64_t& cpu_allocated(ClusterState& s) { return s.cpu_allocated_milli_; }
  static int64_t& gpu_allocated(ClusterState& s) { return s.gpu_allocated_milli_; }
  static int64_t& cpu_capacity(ClusterState& s) { return s.cpu_capacity_milli_; }
  static std::vector<uint8_t>& blocked(ClusterState& s) { return s.blocked_; }
  static std::vector<NodeSpec>& nodes(ClusterState& s) { return s.nodes_; }
  static std::vector<uint8_t>& model_npu(ClusterState& s) { return s.model_npu_; }
  static int64_t& numa_cpu_used(ClusterState& s, int n, int i) {
    return s.numa_used_[n][i].cpu_used;
  }
  static void DropNumaUse(ClusterState& s, int n) { s.numa_used_[n].pop_back(); }
  static int& num_live(ClusterState& s) { return s.num_live_; }
  static void Rename(ClusterState& s, const std::string& from, int slot) {
    s.by_name_.erase(from);
    s.by_name_.emplace(from + "-other", slot);
  }
};

namespace {

using Peer = ClusterStateTestPeer;

NodeSpec Node(std::string name, int64_t cpu_milli, int64_t memory_mib, int32_t num_gpus,
              std::string model) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu_milli;
  n.memory_mib = memory_mib;
  n.num_gpus = num_gpus;
  n.gpu_model = std::move(model);
  return n;
}

PodShape Pod(int64_t cpu_milli, int64_t memory_mib, int32_t num_gpu = 0, int32_t gpu_milli = 0,
             uint64_t mask = 0) {
  PodShape p;
  p.cpu_milli = cpu_milli;
  p.memory_mib = memory_mib;
  p.num_gpu = num_gpu;
  p.gpu_milli = gpu_milli;
  p.gpu_model_mask = mask;
  return p;
}

Placement On(int node, std::initializer_list<int> gpus = {}) {
  Placement p;
  p.node = node;
  for (int g : gpus) p.gpus[p.num_gpus++] = static_cast<int8_t>(g);
  return p;
}

// Everything observable about a ClusterState, to check that a rejected call changed nothing.
struct Snapshot {
  std::vector<int64_t> cpu_left, memory_left;
  std::vector<std::vector<int32_t>> gpu_left;
  std::vector<std::vector<int16_t>> class_counts;
  std::vector<uint32_t> version;
  std::vector<int> num_pods;
  int64_t gpu_allocated = 0, cpu_allocated = 0;
  bool operator==(const Snapshot&) const = default;
};

Snapshot Snap(const ClusterState& s) {
  Snapshot out;
  for (int n = 0; n < s.num_nodes(); ++n) {
    out.cpu_left.push_back(s.cpu_left(n));
    out.memory_left.push_back(s.memory_left(n));
    out.gpu_left.emplace_back(s.gpu_left(n).begin(), s.gpu_left(n).end());
    out.class_counts.emplace_back(s.gpu_class_counts(n).begin(), s.gpu_class_counts(n).end());
    out.version.push_back(s.version(n));
    out.num_pods.push_back(s.num_pods(n));
  }
  out.gpu_allocated = s.gpu_allocated_milli();
  out.cpu_allocated = s.cpu_allocated_milli();
  return out;
}

class ClusterStateTest : public ::testing::Test {
 protected:
  // n0: 4xA, n1: 2xB, n2: CPU only, n3: 8xA.
  ClusterStateTest()
      : state_(*ClusterState::Create(
            {Node("n0", 32000, 65536, 4, "A"), Node("n1", 16000, 32768, 2, "B"),
             Node("n2", 8000, 16384, 0, ""), Node("n3", 64000, 131072, 8, "A")})) {}

  std::vector<int32_t> Gpus(int n) const {
    return {state_.gpu_left(n).begin(), state_.gpu_left(n).end()};
  }

  ClusterState state_;
};

// The count of schedulable nodes by free GPUs follows allocations, cordons, updates and removals.
TEST_F(ClusterStateTest, CountsSchedulableNodesByFreeGpus) {
  auto count = [&](int f) { return state_.schedulable_by_free_gpus()[static_cast<size_t>(f)]; };
  // n0 4 free, n1 2, n2 0 (no GPUs), n3 8.
  EXPECT_EQ(count(0), 1);
  EXPECT_EQ(count(2), 1);
  EXPECT_EQ(count(4), 1);
  EXPECT_EQ(count(8), 1);
  ASSERT_TRUE(state_.Allocate(Pod(100, 0, 2, 1000), On(3, {0, 1})).ok());
  EXPECT_EQ(count(8), 0);
  EXPECT_EQ(count(6), 1);
  ASSERT_TRUE(state_.Allocate(Pod(100, 0, 1, 300), On(0, {2})).ok());  // a share takes a GPU
  EXPECT_EQ(count(4), 0);
  EXPECT_EQ(count(3), 1);
  state_.SetCordoned(1, true);
  EXPECT_EQ(count(2), 0);
  state_.SetCordoned(1, false);
  EXPECT_EQ(count(2), 1);
  ASSERT_TRUE(state_.Release(Pod(100, 0, 2, 1000), On(3, {0, 1})).ok());
  EXPECT_EQ(count(6), 0);
  EXPECT_EQ(count(8), 1);
  ASSERT_TRUE(state_.UpdateNode(1, Node("n1", 16000, 32768, 4, "B")).ok());
  EXPECT_EQ(count(2), 0);
  EXPECT_EQ(count(4), 1);
  ASSERT_TRUE(state_.RemoveNode(1).ok());
  EXPECT_EQ(count(4), 0);
  state_.CheckInvariants();
}

// ---- Invariants (docs/reliability.md#invariants): one death test per check ---------------

using ClusterStateDeathTest = ClusterStateTest;

// A node with two NUMA nodes of 16 cores and 32 GiB each and four GPUs, two on each.
NodeSpec TwoSocket(std::string name) {
  NodeSpec n = Node(std::move(name), 32000, 65536, 4, "A");
  n.topology.numa = {{0, 16000, 32768}, {1, 16000, 32768}};
  n.topology.gpus = {{0}, {0}, {1}, {1}};
  return n;
}

Placement Pinned(int node, int numa, std::initializer_list<int> gpus = {}) {
  Placement p = On(node, gpus);
  p.numa = numa;
  return p;
}

TEST(ClusterStateNumaDeathTest, PinnedUseBeyondTheNumaShareIsCaught) {
  ClusterState s = *ClusterState::Create({TwoSocket("t0")});
  Peer::numa_cpu_used(s, 0, 1) = 16010;  // as if a pinned pod had been counted twice
  EXPECT_DEATH((void)s.Allocate(Pod(100, 0), On(0)),
               "invariant violated.*node 't0': NUMA node 1 has 16010 milli-CPU and 0 MiB pinned "
               "of 16000, 32768");
}

TEST(ClusterStateNumaDeathTest, PinnedUseListDisagreeingWithTheTopologyIsCaught) {
  ClusterState s = *ClusterState::Create({TwoSocket("t0")});
  Peer::DropNumaUse(s, 0);
  EXPECT_DEATH((void)s.Allocate(Pod(100, 0), On(0)),
               "invariant violated.*node 't0': pinned use kept for 1 NUMA nodes, the topology "
               "lists 2");
}

TEST_F(ClusterStateDeathTest, NodeCpuBeyondCapacityIsCaught) {
  Peer::cpu_left(state_)[0] = 32100;  // as if a pod had been released twice
  EXPECT_DEATH((void)state_.Allocate(Pod(50, 0), On(0)),
               "invariant violated.*node 'n0': 32050 milli-CPU left of 32000");
}

TEST_F(ClusterStateDeathTest, NodeMemoryBeyondCapacityIsCaught) {
  Peer::memory_left(state_)[0] = 65636;
  EXPECT_DEATH((void)state_.Allocate(Pod(0, 50), On(0)), "node 'n0': 65586 MiB left of 65536");
}

TEST_F(ClusterStateDeathTest, ClusterCpuOverAllocationIsCaught) {
  Peer::cpu_allocated(state_) = state_.cpu_capacity_milli();
  EXPECT_DEATH((void)state_.Allocate(Pod(100, 0), On(0)),
               "cluster: 120100 milli-CPU allocated of 120000");
}

TEST_F(ClusterStateDeathTest, ClusterGpuOverAllocationIsCaught) {
  Peer::gpu_allocated(state_) = state_.gpu_capacity_milli();
  EXPECT_DEATH((void)state_.Allocate(Pod(0, 0, 1, 1000), On(0, {0})),
               "cluster: 15000 milli-GPU allocated of 14000");
}

TEST_F(ClusterStateDeathTest, GpuMilliOutOfRangeIsCaught) {
  Peer::gpu_left(state_)[0] = 1500;
  EXPECT_DEATH((void)state_.Allocate(Pod(0, 0, 1, 300), On(0, {0})),
               "node 'n0': a GPU has 1200 milli left, outside 0..1000");
}

TEST_F(ClusterStateDeathTest, NegativePodCountIsCaught) {
  Peer::pods_on_node(state_)[0] = -5;
  EXPECT_DEATH((void)state_.Allocate(Pod(1, 1), On(0)), "node 'n0': -4 pods");
}

TEST_F(ClusterStateDeathTest, AuditCatchesAStaleGpuSummary) {
  state_.CheckInvariants();
  Peer::free_gpus(state_)[0] = 3;
  EXPECT_DEATH(state_.CheckInvariants(),
               "node 'n0': summary says 3 free GPUs, 1000 milli at most on one and 4000 milli in "
               "all, the GPUs say 4, 1000 and 4000");
}

TEST_F(ClusterStateDeathTest, AuditCatchesAStaleCountByFreeGpus) {
  state_.CheckInvariants();
  Peer::free_gpu_nodes(state_, 4) += 1;
  EXPECT_DEATH(state_.CheckInvariants(),
               "counts: 2 schedulable nodes with 4 free GPUs; the slots hold 1");
}

TEST_F(ClusterStateDeathTest, AuditCatchesAStaleGpuMilliTotal) {
  state_.CheckInvariants();
  Peer::gpu_milli_left(state_)[0] = 3500;
  EXPECT_DEATH(state_.CheckInvariants(),
               "node 'n0': summary says 4 free GPUs, 1000 milli at most on one and 3500 milli in "
               "all, the GPUs say 4, 1000 and 4000");
}

TEST_F(ClusterStateDeathTest, AuditCatchesAllocatedTotalsThatDisagreeWithTheNodes) {
  Peer::cpu_left(state_)[1] -= 1000;
  EXPECT_DEATH(state_.CheckInvariants(),
               "cluster says 0 milli-CPU and 0 milli-GPU allocated; the nodes hold 1000 and 0");
}

TEST_F(ClusterStateDeathTest, AuditCatchesCapacityTotalsThatDisagreeWithTheNodes) {
  Peer::cpu_capacity(state_) += 1;
  EXPECT_DEATH(state_.CheckInvariants(), "capacity totals 120001 milli-CPU");
}

TEST_F(ClusterStateDeathTest, AuditCatchesMoreClassedPodsThanPods) {
  Peer::class_counts(state_)[1] = 1;  // n0: one 1-GPU pod, but no pod bound
  EXPECT_DEATH(state_.CheckInvariants(), "node 'n0': 1 GPU pods by class but 0 pods");
}

TEST_F(ClusterStateDeathTest, AuditCatchesAnInvalidGpuModelId) {
  Peer::model(state_)[2] = 5;
  EXPECT_DEATH(state_.CheckInvariants(), "node 'n2': GPU model id 5 of 2");
}

TEST_F(ClusterStateDeathTest, AuditCatchesMisplacedGpuIndices) {
  Peer::gpu_offset(state_)[1] = 1;
  EXPECT_DEATH(state_.CheckInvariants(), "node 'n1': GPUs at offset 1, expected 4");
}

TEST_F(ClusterStateDeathTest, AuditCatchesPerNodeArraysOfDifferentLengths) {
  Peer::pods_on_node(state_).pop_back();  // one per-node array lost its last slot
  EXPECT_DEATH(state_.CheckInvariants(),
               "invariant violated.*per-node arrays disagree on the number of nodes \\(4\\)");
}

TEST_F(ClusterStateDeathTest, AuditCatchesAGpuMilliOutOfRange) {
  Peer::gpu_left(state_)[5] = -200;  // n1's second GPU
  EXPECT_DEATH(state_.CheckInvariants(),
               "invariant violated.*node 'n1': a GPU has -200 milli left");
}

TEST_F(ClusterStateDeathTest, AuditCatchesANegativeGpuClassCount) {
  Peer::class_counts(state_)[2] = -1;  // n0: minus one 2-GPU pod
  EXPECT_DEATH(state_.CheckInvariants(), "invariant violated.*node 'n0': a GPU class count is -1");
}

TEST_F(ClusterStateDeathTest, AuditCatchesAModelBitThatDisagreesWithTheModelId) {
  Peer::model_bit(state_)[1] = 1;  // n1 holds model B (id 1): its bit is 1 << 1
  EXPECT_DEATH(state_.CheckInvariants(),
               "invariant violated.*node 'n1': model bit disagrees with model id 1");
}

TEST_F(ClusterStateDeathTest, AuditCatchesGpusThatNoNodeHolds) {
  Peer::gpu_left(state_).push_back(kMilliGpu);  // a GPU beyond the last node's
  EXPECT_DEATH(state_.CheckInvariants(),
               "invariant violated.*nodes list 14 GPUs, the cluster holds 15");
}

// Unbinding must mirror a binding: a release of a pod class that is not on the node is refused
// (a status for the caller; Framework::Release turns it into an invariant failure).
TEST_F(ClusterStateTest, ReleaseOfAPodClassNotBoundIsRejected) {
  ASSERT_TRUE(state_.Allocate(Pod(100, 100, 1, 600), On(0, {0})).ok());
  ASSERT_TRUE(state_.Allocate(Pod(100, 100), On(0)).ok());
  ASSERT_TRUE(state_.Release(Pod(50, 50, 1, 300), On(0, {0})).ok());
  const Snapshot before = Snap(state_);
  const absl::Status st = state_.Release(Pod(50, 50, 1, 300), On(0, {0}));
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(st.message()), "n0: release of a GPU-sharing pod, none is bound there");
  EXPECT_EQ(Snap(state_), before);
  // Two 1-GPU pods do not make a 2-GPU pod.
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 1000), On(0, {1})).ok());
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 1000), On(0, {2})).ok());
  EXPECT_EQ(std::string(state_.Release(Pod(0, 0, 2, 1000), On(0, {1, 2})).message()),
            "n0: release of a 2-GPU pod, none is bound there");
  state_.CheckInvariants();
}

// Dynamic nodes: the checks added with AddNode/RemoveNode/SetCordoned.
TEST_F(ClusterStateDeathTest, SetCordonedOnADeadSlotIsCaught) {
  ASSERT_TRUE(state_.RemoveNode(2).ok());
  EXPECT_DEATH(state_.SetCordoned(2, true), "SetCordoned\\(2\\): not a live node \\(4 slots\\)");
}

TEST_F(ClusterStateDeathTest, SetCordonedOutOfRangeIsCaught) {
  EXPECT_DEATH(state_.SetCordoned(4, true), "SetCordoned\\(4\\): not a live node");
  EXPECT_DEATH(state_.SetCordoned(-1, false), "SetCordoned\\(-1\\): not a live node");
}

TEST_F(ClusterStateDeathTest, AuditCatchesABrokenNameIndex) {
  Peer::Rename(state_, "n1", 1);
  EXPECT_DEATH(state_.CheckInvariants(), "node 'n1' in slot 1: the name index says slot -1");
}

TEST_F(ClusterStateDeathTest, AuditCatchesSchedulabilityBitsThatDisagreeWithTaints) {
  Peer::blocked(state_)[3] = 4;  // tainted, but n3 has no taint
  EXPECT_DEATH(state_.CheckInvariants(),
               "node 'n3': schedulability bits 4 disagree with its taints");
}

TEST_F(ClusterStateDeathTest, AuditCatchesADeadSlotThatIsNotEmpty) {
  ASSERT_TRUE(state_.RemoveNode(2).ok());
  Peer::nodes(state_)[2].labels["zone"] = "a";
  EXPECT_DEATH(state_.CheckInvariants(), "dead slot 2 \\('n2'\\) is not empty");
}

TEST_F(ClusterStateDeathTest, AuditCatchesLiveAndUnschedulableCountsThatDisagree) {
  ++Peer::num_live(state_);
  EXPECT_DEATH(state_.CheckInvariants(),
               "counts: 5 live nodes, 4 names, 0 unschedulable; the slots hold 4 live, 0 "
               "unschedulable");
}

// ---- Create ------------------------------------------------------------------------------

TEST(ClusterStateCreateTest, RejectsInvalidNodes) {
  struct Case {
    std::string name;
    NodeSpec node;
  };
  const std::vector<Case> cases = {
      {"17 GPUs", Node("big", 1000, 1000, kMaxGpusPerNode + 1, "A")},
      {"negative cpu", Node("neg", -1, 1000, 0, "")},
      {"negative memory", Node("neg", 1000, -1, 0, "")},
      {"negative GPUs", Node("neg", 1000, 1000, -1, "A")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto s = ClusterState::Create({Node("ok", 1000, 1000, 1, "A"), c.node});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find(c.node.name), std::string::npos) << s.status();
  }
}

TEST(ClusterStateCreateTest, AcceptsSixteenGpusAndEmptyCluster) {
  auto s = ClusterState::Create({Node("max", 1000, 1000, kMaxGpusPerNode, "A")});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->total_gpus(), kMaxGpusPerNode);
  EXPECT_EQ(s->gpu_capacity_milli(), kMaxGpusPerNode * kMilliGpu);
  auto empty = ClusterState::Create({});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_nodes(), 0);
  EXPECT_EQ(empty->gpu_capacity_milli(), 0);
}

TEST(ClusterStateCreateTest, RejectsMoreThan63Models) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < kMaxGpuModels - 1; ++i) {
    nodes.push_back(Node("n" + std::to_string(i), 1000, 1000, 1, "M" + std::to_string(i)));
  }
  auto ok = ClusterState::Create(nodes);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->gpu_models().size(), static_cast<size_t>(kMaxGpuModels - 1));
  nodes.push_back(Node("last", 1000, 1000, 1, "one-too-many"));
  auto bad = ClusterState::Create(nodes);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClusterStateTest, InitialStateIsEmpty) {
  EXPECT_EQ(state_.num_nodes(), 4);
  EXPECT_EQ(state_.total_gpus(), 14);
  EXPECT_EQ(state_.gpu_capacity_milli(), 14000);
  EXPECT_EQ(state_.cpu_capacity_milli(), 120000);
  EXPECT_EQ(state_.gpu_allocated_milli(), 0);
  EXPECT_EQ(state_.cpu_allocated_milli(), 0);
  EXPECT_EQ(state_.cpu_left(1), 16000);
  EXPECT_EQ(state_.memory_left(1), 32768);
  EXPECT_EQ(Gpus(1), (std::vector<int32_t>{1000, 1000}));
  EXPECT_TRUE(state_.gpu_left(2).empty());
  for (int n = 0; n < state_.num_nodes(); ++n) {
    EXPECT_EQ(state_.version(n), 0u);
    EXPECT_EQ(state_.num_pods(n), 0);
    for (int16_t c : state_.gpu_class_counts(n)) EXPECT_EQ(c, 0);
  }
}

TEST_F(ClusterStateTest, ModelTableIsFirstSeenOrder) {
  EXPECT_EQ(state_.gpu_models(), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(state_.ModelId("A"), 0);
  EXPECT_EQ(state_.ModelId("B"), 1);
  EXPECT_EQ(state_.ModelId("C"), kNoGpuModel);
  EXPECT_EQ(state_.model(0), 0);
  EXPECT_EQ(state_.model(1), 1);
  EXPECT_EQ(state_.model(2), kNoGpuModel);
  EXPECT_EQ(state_.model(3), 0);
}

TEST(ClusterStateCreateTest, NodeWithoutGpusHasNoModelEvenIfNamed) {
  auto s = ClusterState::Create({Node("cpu", 1000, 1000, 0, "A"), Node("g", 1000, 1000, 1, "")});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->model(0), kNoGpuModel);
  EXPECT_EQ(s->model(1), kNoGpuModel);
  EXPECT_TRUE(s->gpu_models().empty());
}

// ---- Models, Accessible, Fits ------------------------------------------------------------

TEST_F(ClusterStateTest, ModelMaskTable) {
  struct Case {
    std::string spec;
    uint64_t want;
  };
  const std::vector<Case> cases = {
      {"", 0},
      {"A", 0b01},
      {"B", 0b10},
      {"A|B", 0b11},
      {"B|A", 0b11},
      {"A|Unknown", 0b01},
      {"|A||", 0b01},
      {"Unknown", ClusterState::kNoModelMatches},
      {"X|Y", ClusterState::kNoModelMatches},
      {"|", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("spec '" + c.spec + "'");
    EXPECT_EQ(state_.ModelMask(c.spec), c.want);
  }
}

// ---- NPUs and device asks -----------------------------------------------------------------

// A cluster with GPUs (H100 80 GiB, T4 16 GiB from the catalog), NPUs (Ascend910B 64 GiB from
// the catalog; "MLU" an NPU the catalog does not know, 48 GiB as its node says) and a CPU node.
ClusterState MixedCluster() {
  NodeSpec mlu = Node("mlu", 16000, 65536, 4, "MLU");
  mlu.npu = true;
  mlu.device_memory_mib = 48 * 1024;
  return *ClusterState::Create(
      {Node("h100", 32000, 65536, 8, "H100"), Node("t4", 16000, 65536, 4, "T4"),
       Node("ascend", 32000, 65536, 8, "Ascend910B"), mlu, Node("cpu", 8000, 16384, 0, "")});
}

// Which of the mixed cluster's nodes a one-device pod with this ask may go to.
std::string NodesFor(const ClusterState& s, std::string_view spec, DeviceAsk ask) {
  const PodShape pod = Pod(1000, 1024, 1, 1000, s.PodModelMask(spec, ask, true));
  std::string out;
  for (int n = 0; n < s.num_nodes(); ++n) {
    if (s.Fits(n, pod)) absl::StrAppend(&out, out.empty() ? "" : ",", s.node(n).name);
  }
  return out;
}

TEST(ClusterStateNpuTest, ModelsTakeTheirKindAndMemoryFromTheNodeOrTheCatalog) {
  const ClusterState s = MixedCluster();
  ASSERT_EQ(s.gpu_models().size(), 4u);
  EXPECT_FALSE(s.model_npu(s.ModelId("H100")));
  EXPECT_EQ(s.model_memory_mib(s.ModelId("H100")), 80 * 1024);
  EXPECT_TRUE(s.model_npu(s.ModelId("Ascend910B")));
  EXPECT_EQ(s.model_memory_mib(s.ModelId("Ascend910B")), 64 * 1024);
  EXPECT_TRUE(s.model_npu(s.ModelId("MLU")));
  EXPECT_EQ(s.model_memory_mib(s.ModelId("MLU")), 48 * 1024);
}

TEST(ClusterStateNpuTest, PodsGoOnlyToDevicesOfTheKindAndMemoryTheyAsk) {
  const ClusterState s = MixedCluster();
  struct Case {
    std::string spec;
    DeviceAsk ask;
    std::string want;
  };
  const std::vector<Case> cases = {
      // No type and no spec: GPUs only, never an NPU.
      {"", {}, "h100,t4"},
      {"", {DeviceClass::kGpu, 0}, "h100,t4"},
      {"", {DeviceClass::kNpu, 0}, "ascend,mlu"},
      {"", {DeviceClass::kAny, 0}, "h100,t4,ascend,mlu"},
      // "Any accelerator with >= 48 GiB", and floors that leave one kind.
      {"", {DeviceClass::kAny, 48 * 1024}, "h100,ascend,mlu"},
      {"", {DeviceClass::kAny, 64 * 1024}, "h100,ascend"},
      {"", {DeviceClass::kNpu, 60 * 1024}, "ascend"},
      {"", {DeviceClass::kGpu, 90 * 1024}, ""},
      // A spec naming a model takes it whatever its kind, unless the type says otherwise.
      {"Ascend910B", {}, "ascend"},
      {"Ascend910B|T4", {}, "t4,ascend"},
      {"Ascend910B|T4", {DeviceClass::kGpu, 0}, "t4"},
      {"H100", {DeviceClass::kNpu, 0}, ""},
      {"Nope", {DeviceClass::kAny, 0}, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("spec '", c.spec, "' type '",
                              std::string(DeviceClassName(c.ask.type)), "' memory ",
                              c.ask.memory_mib));
    EXPECT_EQ(NodesFor(s, c.spec, c.ask), c.want);
  }
}

TEST(ClusterStateNpuTest, PodsWithoutDevicesAreNotNarrowed) {
  const ClusterState s = MixedCluster();
  EXPECT_EQ(s.PodModelMask("", {DeviceClass::kNpu, 1}, false), 0u);
  EXPECT_EQ(s.PodModelMask("T4", {}, false), s.ModelMask("T4"));
}

TEST(ClusterStateNpuTest, WithoutNpusTheMaskIsTheSpecsOwn) {
  const ClusterState s = *ClusterState::Create({Node("a", 1000, 1024, 1, "A")});
  EXPECT_EQ(s.PodModelMask("", {}, true), 0u);
  EXPECT_EQ(s.PodModelMask("A", {DeviceClass::kGpu, 0}, true), s.ModelMask("A"));
  EXPECT_EQ(s.PodModelMask("", {DeviceClass::kNpu, 0}, true), ClusterState::kNoModelMatches);
}

TEST(ClusterStateNpuTest, AModelIsOneKind) {
  ClusterState s = MixedCluster();
  NodeSpec h = Node("h100-npu", 1000, 1024, 1, "H100");
  h.npu = true;  // the catalog says H100 is a GPU
  EXPECT_EQ(s.AddNode(h).status().code(), absl::StatusCode::kInvalidArgument);
  NodeSpec t = Node("t4-npu", 1000, 1024, 1, "Custom");
  ASSERT_TRUE(s.AddNode(t).ok());  // first seen as a GPU ...
  t.name = "t4-npu-2";
  t.npu = true;  // ... so a later node may not call it an NPU
  absl::StatusOr<int> added = s.AddNode(t);
  ASSERT_FALSE(added.ok());
  EXPECT_THAT(std::string(added.status().message()), ::testing::HasSubstr("first"));
  // Updating a node to call its GPUs NPUs is refused the same way, state unchanged.
  NodeSpec update = s.node(s.FindNode("h100"));
  update.npu = true;
  EXPECT_FALSE(s.UpdateNode(s.FindNode("h100"), update).ok());
  EXPECT_FALSE(s.node(s.FindNode("h100")).npu);
  // A node that does not say takes the kind as first seen.
  ASSERT_TRUE(s.AddNode(Node("mlu-2", 1000, 1024, 1, "MLU")).ok());
  EXPECT_EQ(NodesFor(s, "MLU", {}), "mlu,mlu-2");
  EXPECT_EQ(NodesFor(s, "MLU", {DeviceClass::kGpu, 0}), "");
}

TEST(ClusterStateNpuDeathTest, AModelTableOutOfStepIsCaught) {
  ClusterState s = MixedCluster();
  Peer::model_npu(s).pop_back();
  EXPECT_DEATH(s.CheckInvariants(), "the model table's kinds and memories disagree");
}

TEST_F(ClusterStateTest, UnknownOnlySpecMatchesNoNode) {
  const PodShape pod = Pod(1000, 100, 1, 500, state_.ModelMask("H100"));
  for (int n = 0; n < state_.num_nodes(); ++n) {
    EXPECT_FALSE(state_.Accessible(n, pod)) << "node " << n;
    EXPECT_FALSE(state_.Fits(n, pod)) << "node " << n;
  }
}

TEST_F(ClusterStateTest, AccessibleTable) {
  struct Case {
    std::string spec;
    std::vector<bool> want;  // per node n0..n3
  };
  const std::vector<Case> cases = {
      {"", {true, true, true, true}},      {"A", {true, false, false, true}},
      {"B", {false, true, false, false}},  {"A|B", {true, true, false, true}},
      {"Z", {false, false, false, false}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("spec '" + c.spec + "'");
    const PodShape pod = Pod(0, 0, 1, 500, state_.ModelMask(c.spec));
    for (int n = 0; n < state_.num_nodes(); ++n) {
      EXPECT_EQ(state_.Accessible(n, pod), c.want[n]) << "node " << n;
    }
  }
}

TEST_F(ClusterStateTest, FitsTable) {
  // n0 GPU 0 half used, GPU 1 full.
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 500), On(0, {0})).ok());
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 1000), On(0, {1})).ok());
  struct Case {
    std::string name;
    int node;
    PodShape pod;
    bool want;
  };
  const std::vector<Case> cases = {
      {"cpu-only pod on cpu node", 2, Pod(8000, 16384), true},
      {"cpu over", 2, Pod(8001, 0), false},
      {"memory over", 2, Pod(0, 16385), false},
      {"gpu pod on cpu node", 2, Pod(0, 0, 1, 100), false},
      {"sharing pod fits half GPU", 0, Pod(0, 0, 1, 500), true},
      {"two whole GPUs left", 0, Pod(0, 0, 2, 1000), true},
      {"three whole GPUs not left", 0, Pod(0, 0, 3, 1000), false},
      {"three half GPUs left", 0, Pod(0, 0, 3, 500), true},
      {"four half GPUs not left", 0, Pod(0, 0, 4, 500), false},
      {"wrong model", 1, Pod(0, 0, 1, 500, state_.ModelMask("A")), false},
      {"right model", 1, Pod(0, 0, 1, 500, state_.ModelMask("B")), true},
      {"more GPUs than node", 1, Pod(0, 0, 3, 1000), false},
      {"all eight", 3, Pod(64000, 131072, 8, 1000), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(state_.Fits(c.node, c.pod), c.want);
  }
}

// ---- Allocate / Release ------------------------------------------------------------------

TEST_F(ClusterStateTest, AllocateAndReleaseAccountExactly) {
  const PodShape share = Pod(3000, 1024, 1, 300);
  const PodShape two = Pod(8000, 4096, 2, 1000);
  ASSERT_TRUE(state_.Allocate(share, On(3, {5})).ok());
  EXPECT_EQ(state_.cpu_left(3), 61000);
  EXPECT_EQ(state_.memory_left(3), 130048);
  EXPECT_EQ(Gpus(3), (std::vector<int32_t>{1000, 1000, 1000, 1000, 1000, 700, 1000, 1000}));
  EXPECT_EQ(state_.gpu_allocated_milli(), 300);
  EXPECT_EQ(state_.cpu_allocated_milli(), 3000);
  EXPECT_EQ(state_.gpu_class_counts(3)[0], 1);
  EXPECT_EQ(state_.num_pods(3), 1);
  EXPECT_EQ(state_.version(3), 1u);

  ASSERT_TRUE(state_.Allocate(two, On(3, {7, 0})).ok());
  EXPECT_EQ(state_.cpu_left(3), 53000);
  EXPECT_EQ(state_.memory_left(3), 125952);
  EXPECT_EQ(Gpus(3), (std::vector<int32_t>{0, 1000, 1000, 1000, 1000, 700, 1000, 0}));
  EXPECT_EQ(state_.gpu_allocated_milli(), 2300);
  EXPECT_EQ(state_.cpu_allocated_milli(), 11000);
  EXPECT_EQ(state_.gpu_class_counts(3)[0], 1);
  EXPECT_EQ(state_.gpu_class_counts(3)[2], 1);
  EXPECT_EQ(state_.num_pods(3), 2);
  EXPECT_EQ(state_.version(3), 2u);
  // Other nodes untouched.
  EXPECT_EQ(state_.version(0), 0u);
  EXPECT_EQ(state_.cpu_left(0), 32000);

  ASSERT_TRUE(state_.Release(share, On(3, {5})).ok());
  EXPECT_EQ(Gpus(3), (std::vector<int32_t>{0, 1000, 1000, 1000, 1000, 1000, 1000, 0}));
  EXPECT_EQ(state_.gpu_class_counts(3)[0], 0);
  EXPECT_EQ(state_.gpu_class_counts(3)[2], 1);
  EXPECT_EQ(state_.num_pods(3), 1);
  EXPECT_EQ(state_.version(3), 3u);

  ASSERT_TRUE(state_.Release(two, On(3, {7, 0})).ok());
  EXPECT_EQ(state_.cpu_left(3), 64000);
  EXPECT_EQ(state_.memory_left(3), 131072);
  EXPECT_EQ(Gpus(3), std::vector<int32_t>(8, 1000));
  EXPECT_EQ(state_.gpu_allocated_milli(), 0);
  EXPECT_EQ(state_.cpu_allocated_milli(), 0);
  EXPECT_EQ(state_.gpu_class_counts(3)[2], 0);
  EXPECT_EQ(state_.num_pods(3), 0);
  EXPECT_EQ(state_.version(3), 4u);
}

TEST_F(ClusterStateTest, CpuOnlyPodCountsNoGpuClass) {
  ASSERT_TRUE(state_.Allocate(Pod(1000, 10), On(2)).ok());
  EXPECT_EQ(state_.num_pods(2), 1);
  for (int16_t c : state_.gpu_class_counts(2)) EXPECT_EQ(c, 0);
  EXPECT_EQ(state_.gpu_allocated_milli(), 0);
  EXPECT_EQ(state_.cpu_allocated_milli(), 1000);
}

TEST_F(ClusterStateTest, SharingPodsStackOnOneGpu) {
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 600), On(1, {1})).ok());
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 400), On(1, {1})).ok());
  EXPECT_EQ(Gpus(1), (std::vector<int32_t>{1000, 0}));
  EXPECT_EQ(state_.gpu_class_counts(1)[0], 2);
  EXPECT_FALSE(state_.Allocate(Pod(0, 0, 1, 1), On(1, {1})).ok());
}

TEST_F(ClusterStateTest, RejectedAllocationLeavesStateUnchanged) {
  // Some load first so that "unchanged" is not just "empty".
  ASSERT_TRUE(state_.Allocate(Pod(30000, 60000, 1, 700), On(0, {2})).ok());
  struct Case {
    std::string name;
    PodShape pod;
    Placement placement;
    absl::StatusCode want;
  };
  const std::vector<Case> cases = {
      {"over cpu", Pod(2001, 0), On(0), absl::StatusCode::kFailedPrecondition},
      {"over memory", Pod(0, 5537), On(0), absl::StatusCode::kFailedPrecondition},
      {"gpu too little room", Pod(0, 0, 1, 301), On(0, {2}), absl::StatusCode::kFailedPrecondition},
      {"whole gpu on shared gpu", Pod(0, 0, 2, 1000), On(0, {0, 2}),
       absl::StatusCode::kFailedPrecondition},
      {"duplicate gpu index", Pod(0, 0, 2, 1000), On(0, {1, 1}),
       absl::StatusCode::kInvalidArgument},
      {"placement lists fewer gpus", Pod(0, 0, 2, 1000), On(0, {1}),
       absl::StatusCode::kInvalidArgument},
      {"placement lists more gpus", Pod(0, 0, 1, 1000), On(0, {0, 1}),
       absl::StatusCode::kInvalidArgument},
      {"gpu pod without gpus", Pod(0, 0, 1, 500), On(0), absl::StatusCode::kInvalidArgument},
      {"gpu index out of range", Pod(0, 0, 1, 500), On(0, {4}), absl::StatusCode::kInvalidArgument},
      {"negative gpu index", Pod(0, 0, 1, 500), On(0, {-1}), absl::StatusCode::kInvalidArgument},
      {"gpu on cpu node", Pod(0, 0, 1, 500), On(2, {0}), absl::StatusCode::kInvalidArgument},
      {"node out of range", Pod(0, 0), On(4), absl::StatusCode::kInvalidArgument},
      {"negative node", Pod(0, 0), On(-1), absl::StatusCode::kInvalidArgument},
      {"negative cpu request", Pod(-1, 0), On(0), absl::StatusCode::kInvalidArgument},
      {"negative memory request", Pod(0, -1), On(0), absl::StatusCode::kInvalidArgument},
      {"over-size gpu milli", Pod(0, 0, 1, 1001), On(0, {0}), absl::StatusCode::kInvalidArgument},
      {"negative gpu milli", Pod(0, 0, 1, -5), On(0, {0}), absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Snapshot before = Snap(state_);
    const absl::Status st = state_.Allocate(c.pod, c.placement);
    EXPECT_EQ(st.code(), c.want) << st;
    EXPECT_TRUE(Snap(state_) == before);
  }
}

TEST_F(ClusterStateTest, RejectedReleaseLeavesStateUnchanged) {
  ASSERT_TRUE(state_.Allocate(Pod(1000, 100, 1, 400), On(0, {1})).ok());
  struct Case {
    std::string name;
    PodShape pod;
    Placement placement;
  };
  const std::vector<Case> cases = {
      {"more cpu than allocated", Pod(1001, 100, 1, 400), On(0, {1})},
      {"more memory than allocated", Pod(1000, 101, 1, 400), On(0, {1})},
      {"more gpu than allocated", Pod(1000, 100, 1, 401), On(0, {1})},
      {"gpu that was never used", Pod(1000, 100, 1, 400), On(0, {0})},
      {"node with no pods", Pod(0, 0), On(2)},
      {"bad gpu index", Pod(1000, 100, 1, 400), On(0, {9})},
      {"gpu count mismatch", Pod(1000, 100, 1, 400), On(0, {1, 2})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Snapshot before = Snap(state_);
    EXPECT_FALSE(state_.Release(c.pod, c.placement).ok());
    EXPECT_TRUE(Snap(state_) == before);
  }
}

TEST_F(ClusterStateTest, ReleaseOnEmptyClusterIsRejected) {
  const Snapshot before = Snap(state_);
  EXPECT_EQ(state_.Release(Pod(0, 0), On(0)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.Release(Pod(0, 0, 1, 100), On(0, {0})).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Snap(state_) == before);
}

TEST_F(ClusterStateTest, WholeNodeCanBeFilledExactly) {
  ASSERT_TRUE(state_.Allocate(Pod(64000, 131072, 8, 1000), On(3, {0, 1, 2, 3, 4, 5, 6, 7})).ok());
  EXPECT_EQ(state_.cpu_left(3), 0);
  EXPECT_EQ(state_.memory_left(3), 0);
  EXPECT_EQ(Gpus(3), std::vector<int32_t>(8, 0));
  EXPECT_EQ(state_.gpu_class_counts(3)[8], 1);
  EXPECT_FALSE(state_.Fits(3, Pod(1, 0)));
  EXPECT_TRUE(state_.Fits(3, Pod(0, 0)));
}

// ---- Property: random allocate/release never over-allocates and never loses a pod ---------

struct LivePod {
  PodShape pod;
  Placement placement;
};

void CheckInvariants(const ClusterState& s, const std::vector<LivePod>& live) {
  const int nn = s.num_nodes();
  std::vector<int64_t> cpu(nn, 0), mem(nn, 0);
  std::vector<int> pods(nn, 0);
  std::vector<std::vector<int64_t>> gpu(nn);
  std::vector<std::vector<int>> cls(nn, std::vector<int>(kMaxGpusPerNode + 1, 0));
  for (int n = 0; n < nn; ++n) gpu[n].assign(s.node(n).num_gpus, 0);
  int64_t total_gpu = 0, total_cpu = 0;
  for (const LivePod& p : live) {
    const int n = p.placement.node;
    cpu[n] += p.pod.cpu_milli;
    mem[n] += p.pod.memory_mib;
    ++pods[n];
    for (int8_t g : p.placement.gpu_ids()) gpu[n][g] += p.pod.gpu_milli;
    if (p.pod.num_gpu > 0) ++cls[n][p.pod.IsGpuSharing() ? 0 : p.pod.num_gpu];
    total_gpu += p.pod.TotalGpuMilli();
    total_cpu += p.pod.cpu_milli;
  }
  for (int n = 0; n < nn; ++n) {
    ASSERT_GE(s.cpu_left(n), 0);
    ASSERT_LE(s.cpu_left(n), s.node(n).cpu_milli);
    ASSERT_GE(s.memory_left(n), 0);
    ASSERT_LE(s.memory_left(n), s.node(n).memory_mib);
    ASSERT_EQ(s.cpu_left(n), s.node(n).cpu_milli - cpu[n]) << "node " << n;
    ASSERT_EQ(s.memory_left(n), s.node(n).memory_mib - mem[n]) << "node " << n;
    ASSERT_EQ(s.num_pods(n), pods[n]) << "node " << n;
    auto gl = s.gpu_left(n);
    for (size_t g = 0; g < gl.size(); ++g) {
      ASSERT_GE(gl[g], 0);
      ASSERT_LE(gl[g], kMilliGpu);
      ASSERT_EQ(gl[g], kMilliGpu - gpu[n][g]) << "node " << n << " gpu " << g;
    }
    auto cc = s.gpu_class_counts(n);
    for (int k = 0; k <= kMaxGpusPerNode; ++k) ASSERT_EQ(cc[k], cls[n][k]) << "class " << k;
  }
  ASSERT_EQ(s.gpu_allocated_milli(), total_gpu);
  ASSERT_EQ(s.cpu_allocated_milli(), total_cpu);
  ASSERT_LE(s.gpu_allocated_milli(), s.gpu_capacity_milli());
  ASSERT_LE(s.cpu_allocated_milli(), s.cpu_capacity_milli());
}

TEST(ClusterStatePropertyTest, RandomAllocateReleaseKeepsExactAccounting) {
  std::mt19937_64 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<NodeSpec> nodes;
  const int num_nodes = uniform(3, 6);
  const int gpu_choices[] = {0, 1, 2, 4, 8};
  for (int n = 0; n < num_nodes; ++n) {
    nodes.push_back(Node("n" + std::to_string(n), 1000 * uniform(4, 64), 1024 * uniform(4, 64),
                         gpu_choices[uniform(0, 4)], uniform(0, 1) ? "A" : "B"));
  }
  auto created = ClusterState::Create(nodes);
  ASSERT_TRUE(created.ok()) << created.status();
  ClusterState s = *std::move(created);
  std::vector<LivePod> live;
  int accepted = 0, released = 0;
  for (int step = 0; step < 10000; ++step) {
    if (!live.empty() && uniform(0, 9) < 4) {
      const size_t i = static_cast<size_t>(uniform(0, static_cast<int>(live.size()) - 1));
      ASSERT_TRUE(s.Release(live[i].pod, live[i].placement).ok()) << "step " << step;
      live[i] = live.back();
      live.pop_back();
      ++released;
    } else {
      PodShape pod = Pod(250 * uniform(0, 32), 256 * uniform(0, 32));
      const int kind = uniform(0, 3);  // 0 cpu-only, 1 sharing, 2-3 whole GPUs
      if (kind == 1) {
        pod.num_gpu = 1;
        pod.gpu_milli = 50 * uniform(1, 19);
      } else if (kind >= 2) {
        pod.num_gpu = 1 << uniform(0, 3);
        pod.gpu_milli = kMilliGpu;
      }
      Placement p = On(uniform(0, num_nodes - 1));
      // Random GPU indices, sometimes out of range or repeated, so rejections are exercised.
      const int ngpu = s.node(p.node).num_gpus;
      const int count = uniform(0, 9) == 0 ? pod.num_gpu + uniform(-1, 1) : pod.num_gpu;
      for (int k = 0; k < std::clamp(count, 0, kMaxGpusPerNode); ++k) {
        p.gpus[p.num_gpus++] = static_cast<int8_t>(uniform(0, ngpu));  // ngpu is out of range
      }
      // CheckInvariants below shows a rejected call left the quantities alone; the version
      // shows it did not touch the node either.
      const uint32_t version_before = s.version(p.node);
      if (s.Allocate(pod, p).ok()) {
        live.push_back({pod, p});
        ++accepted;
      } else {
        ASSERT_EQ(s.version(p.node), version_before) << "step " << step;
      }
    }
    CheckInvariants(s, live);
    s.CheckInvariants();
    if (HasFatalFailure()) FAIL() << "invariant broken at step " << step;
  }
  // The walk must have exercised both paths.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(released, 1000);
  RecordProperty("accepted", accepted);
  RecordProperty("released", released);
  // Drain: releasing every live pod returns the cluster to empty.
  for (const LivePod& p : live) ASSERT_TRUE(s.Release(p.pod, p.placement).ok());
  CheckInvariants(s, {});
  EXPECT_EQ(s.gpu_allocated_milli(), 0);
  EXPECT_EQ(s.cpu_allocated_milli(), 0);
}

// A placement listing more GPUs than the node has (here more than Placement::gpus can hold) is
// rejected before any GPU index is read.
TEST(ClusterStateCreateTest, RejectsPlacementListingMoreThanSixteenGpus) {
  ClusterState s = *ClusterState::Create({Node("n", 1000, 1000, kMaxGpusPerNode, "A")});
  Placement p = On(0, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  p.num_gpus = kMaxGpusPerNode + 1;
  const Snapshot before = Snap(s);
  EXPECT_EQ(s.Allocate(Pod(0, 0, kMaxGpusPerNode + 1, 1000), p).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Release(Pod(0, 0, kMaxGpusPerNode + 1, 1000), p).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Snap(s) == before);
}

// ---- Dynamic nodes -------------------------------------------------------------------------

NodeSpec Tainted(NodeSpec n, std::string effect) {
  n.taints.push_back({"dedicated", "infra", std::move(effect)});
  return n;
}

// Every node index the pod fits on, by calling Fits on each (FeasibleNodes must agree).
std::vector<int> FitsEach(const ClusterState& s, const PodShape& pod) {
  std::vector<int> out;
  for (int n = 0; n < s.num_nodes(); ++n) {
    if (s.Fits(n, pod)) out.push_back(n);
  }
  return out;
}

std::vector<int> Feasible(const ClusterState& s, const PodShape& pod) {
  std::vector<int> out;
  s.FeasibleNodes(pod, &out);
  EXPECT_EQ(out, FitsEach(s, pod));
  return out;
}

TEST(ClusterStateDynamicTest, EmptyClusterGrowsByAddNode) {
  ClusterState s = *ClusterState::Create({});
  EXPECT_EQ(s.num_nodes(), 0);
  EXPECT_EQ(s.num_live_nodes(), 0);
  EXPECT_EQ(s.FindNode("a"), -1);
  EXPECT_TRUE(Feasible(s, Pod(1, 1)).empty());
  absl::StatusOr<int> a = s.AddNode(Node("a", 4000, 8192, 2, "A100"));
  absl::StatusOr<int> b = s.AddNode(Node("b", 2000, 4096, 0, ""));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, 0);
  EXPECT_EQ(*b, 1);
  EXPECT_EQ(s.FindNode("a"), 0);
  EXPECT_EQ(s.FindNode("b"), 1);
  EXPECT_EQ(s.num_live_nodes(), 2);
  EXPECT_EQ(s.cpu_capacity_milli(), 6000);
  EXPECT_EQ(s.gpu_capacity_milli(), 2000);
  EXPECT_EQ(s.total_gpus(), 2);
  EXPECT_EQ(s.gpu_models(), std::vector<std::string>{"A100"});
  EXPECT_EQ(Feasible(s, Pod(1000, 1000)), (std::vector<int>{0, 1}));
  EXPECT_EQ(Feasible(s, Pod(1000, 1000, 1, 500)), std::vector<int>{0});
  ASSERT_TRUE(s.Allocate(Pod(1000, 1000, 2, 1000), On(0, {0, 1})).ok());
  s.CheckInvariants();
}

TEST(ClusterStateDynamicTest, AddNodeRejectsInvalidSpecsAndLeavesStateUnchanged) {
  struct Case {
    std::string name;
    NodeSpec node;
    absl::StatusCode code;
    std::string message;
  };
  NodeSpec topo_count = Node("t1", 1000, 1000, 2, "A");
  topo_count.topology.gpus.resize(1);
  NodeSpec numa_twice = Node("t2", 1000, 1000, 0, "");
  numa_twice.topology.numa = {{0, 500, 500}, {0, 500, 500}};
  NodeSpec numa_negative = Node("t3", 1000, 1000, 0, "");
  numa_negative.topology.numa = {{-2, 500, 500}};
  NodeSpec numa_capacity = Node("t4", 1000, 1000, 0, "");
  numa_capacity.topology.numa = {{0, -1, 500}};
  NodeSpec gpu_numa = Node("t5", 1000, 1000, 1, "A");
  gpu_numa.topology.numa = {{0, 1000, 1000}};
  gpu_numa.topology.gpus = {{.numa_node = 1}};
  NodeSpec empty_key = Node("t6", 1000, 1000, 0, "");
  empty_key.taints = {{"", "", "NoSchedule"}};
  const std::vector<Case> cases = {
      {"name taken", Node("n1", 1000, 1000, 0, ""), absl::StatusCode::kAlreadyExists,
       "node 'n1' already exists"},
      {"17 GPUs", Node("big", 1000, 1000, kMaxGpusPerNode + 1, "A"),
       absl::StatusCode::kInvalidArgument, "node 'big': 17 GPUs, at most 16"},
      {"negative cpu", Node("neg", -1, 1000, 0, ""), absl::StatusCode::kInvalidArgument,
       "node 'neg': negative capacity"},
      {"unknown taint effect", Tainted(Node("te", 1000, 1000, 0, ""), "NoWay"),
       absl::StatusCode::kInvalidArgument,
       "node 'te': taint 'dedicated' has effect 'NoWay'; expected NoSchedule, PreferNoSchedule "
       "or NoExecute"},
      {"empty taint key", empty_key, absl::StatusCode::kInvalidArgument,
       "node 't6': a taint has an empty key"},
      {"GPU topology count", topo_count, absl::StatusCode::kInvalidArgument,
       "node 't1': topology describes 1 GPUs, the node has 2"},
      {"NUMA id twice", numa_twice, absl::StatusCode::kInvalidArgument,
       "node 't2': NUMA node id 0 listed twice"},
      {"NUMA id negative", numa_negative, absl::StatusCode::kInvalidArgument,
       "node 't3': NUMA node id -2 is negative"},
      {"NUMA capacity negative", numa_capacity, absl::StatusCode::kInvalidArgument,
       "node 't4': NUMA node 0 has a negative capacity"},
      {"GPU on unlisted NUMA node", gpu_numa, absl::StatusCode::kInvalidArgument,
       "node 't5': GPU 0 is on NUMA node 1, which the node does not list"},
  };
  ClusterState s =
      *ClusterState::Create({Node("n0", 1000, 1000, 1, "A"), Node("n1", 1000, 1000, 0, "")});
  const Snapshot before = Snap(s);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<int> got = s.AddNode(c.node);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), c.code);
    EXPECT_EQ(got.status().message(), c.message);
    EXPECT_TRUE(Snap(s) == before);
    EXPECT_EQ(s.num_nodes(), 2);
    EXPECT_EQ(s.gpu_models().size(), 1u);
    s.CheckInvariants();
  }
}

TEST(ClusterStateDynamicTest, CreateRefusesDuplicateNames) {
  auto s = ClusterState::Create({Node("x", 1000, 1000, 0, ""), Node("x", 1000, 1000, 0, "")});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.status().message(), "node 'x' already exists");
}

TEST(ClusterStateDynamicTest, AddNodeWhenTheModelTableIsFullIsRejected) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < kMaxGpuModels - 1; ++i) {
    nodes.push_back(Node("n" + std::to_string(i), 1000, 1000, 1, "M" + std::to_string(i)));
  }
  ClusterState s = *ClusterState::Create(nodes);
  absl::StatusOr<int> got = s.AddNode(Node("last", 1000, 1000, 1, "one-too-many"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.num_nodes(), kMaxGpuModels - 1);
  // A known model still goes in; so does a node of an unknown model whose GPUs are absent.
  EXPECT_TRUE(s.AddNode(Node("again", 1000, 1000, 1, "M3")).ok());
  EXPECT_TRUE(s.AddNode(Node("cpu", 1000, 1000, 0, "one-too-many")).ok());
  s.CheckInvariants();
}

TEST_F(ClusterStateTest, CordonedNodeFitsNothingNewButKeepsItsPods) {
  ASSERT_TRUE(state_.Allocate(Pod(1000, 1000, 1, 1000), On(0, {0})).ok());
  const uint32_t version = state_.version(0);
  state_.SetCordoned(0, true);
  EXPECT_TRUE(state_.cordoned(0));
  EXPECT_FALSE(state_.schedulable(0));
  EXPECT_TRUE(state_.alive(0));
  EXPECT_EQ(state_.num_unschedulable_nodes(), 1);
  EXPECT_NE(state_.version(0), version);
  EXPECT_FALSE(state_.Fits(0, Pod(1, 1)));
  EXPECT_EQ(Feasible(state_, Pod(1, 1)), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(Feasible(state_, Pod(1, 1, 2, 500)), (std::vector<int>{1, 3}));  // the slow path
  EXPECT_EQ(Feasible(state_, Pod(1, 1, 1, 500)), (std::vector<int>{1, 3}));
  // Cordoning twice is one change; the pod stays and can still be released or added to
  // (recovery re-applies bindings to cordoned nodes).
  const uint32_t cordoned_version = state_.version(0);
  state_.SetCordoned(0, true);
  EXPECT_EQ(state_.version(0), cordoned_version);
  EXPECT_EQ(state_.num_pods(0), 1);
  ASSERT_TRUE(state_.Allocate(Pod(1000, 1000, 1, 1000), On(0, {1})).ok());
  ASSERT_TRUE(state_.Release(Pod(1000, 1000, 1, 1000), On(0, {0})).ok());
  state_.CheckInvariants();
  state_.SetCordoned(0, false);
  EXPECT_FALSE(state_.cordoned(0));
  EXPECT_EQ(state_.num_unschedulable_nodes(), 0);
  EXPECT_EQ(Feasible(state_, Pod(1, 1)), (std::vector<int>{0, 1, 2, 3}));
  state_.CheckInvariants();
}

TEST(ClusterStateDynamicTest, NoScheduleAndNoExecuteTaintsBlockPreferNoScheduleDoesNot) {
  ClusterState s =
      *ClusterState::Create({Tainted(Node("ns", 1000, 1000, 1, "A"), "NoSchedule"),
                             Tainted(Node("ne", 1000, 1000, 1, "A"), "NoExecute"),
                             Tainted(Node("pref", 1000, 1000, 1, "A"), "PreferNoSchedule"),
                             Node("plain", 1000, 1000, 1, "A")});
  EXPECT_TRUE(s.tainted(0));
  EXPECT_TRUE(s.tainted(1));
  EXPECT_FALSE(s.tainted(2));
  EXPECT_EQ(s.num_unschedulable_nodes(), 2);
  EXPECT_EQ(Feasible(s, Pod(1, 1)), (std::vector<int>{2, 3}));
  EXPECT_EQ(Feasible(s, Pod(1, 1, 1, 1000)), (std::vector<int>{2, 3}));
  // Lifting the taint by an update makes the node schedulable again; a cordon survives it.
  s.SetCordoned(1, true);
  ASSERT_TRUE(s.UpdateNode(0, Node("ns", 1000, 1000, 1, "A")).ok());
  ASSERT_TRUE(s.UpdateNode(1, Node("ne", 1000, 1000, 1, "A")).ok());
  EXPECT_FALSE(s.tainted(0));
  EXPECT_FALSE(s.tainted(1));
  EXPECT_TRUE(s.cordoned(1));
  EXPECT_EQ(Feasible(s, Pod(1, 1)), (std::vector<int>{0, 2, 3}));
  s.CheckInvariants();
}

TEST_F(ClusterStateTest, RemoveNodeNeedsAnEmptyNodeThenLeavesADeadSlot) {
  const Placement p = On(1, {1});
  ASSERT_TRUE(state_.Allocate(Pod(1000, 1000, 1, 1000), p).ok());
  absl::Status busy = state_.RemoveNode(1);
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(busy.message(), "node 'n1' has 1 pods bound");
  EXPECT_TRUE(state_.alive(1));
  ASSERT_TRUE(state_.Release(Pod(1000, 1000, 1, 1000), p).ok());
  const uint32_t version = state_.version(1);
  ASSERT_TRUE(state_.RemoveNode(1).ok());
  EXPECT_FALSE(state_.alive(1));
  EXPECT_FALSE(state_.schedulable(1));
  EXPECT_NE(state_.version(1), version);
  EXPECT_EQ(state_.num_nodes(), 4);  // the slot stays
  EXPECT_EQ(state_.num_live_nodes(), 3);
  EXPECT_EQ(state_.FindNode("n1"), -1);
  EXPECT_EQ(state_.node(1).name, "n1");
  EXPECT_EQ(state_.node(1).num_gpus, 0);
  EXPECT_EQ(state_.total_gpus(), 12);
  EXPECT_EQ(state_.cpu_capacity_milli(), 32000 + 8000 + 64000);
  EXPECT_EQ(state_.gpu_capacity_milli(), 12 * kMilliGpu);
  // A dead slot fits nothing, even an empty pod, and takes no allocation.
  EXPECT_FALSE(state_.Fits(1, Pod(0, 0)));
  EXPECT_EQ(Feasible(state_, Pod(0, 0)), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(state_.Allocate(Pod(0, 0), On(1)).code(), absl::StatusCode::kFailedPrecondition);
  // The GPUs of later nodes moved: n3's are still addressed by its own indices.
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 300), On(3, {7})).ok());
  EXPECT_EQ(state_.gpu_left(3)[7], 700);
  state_.CheckInvariants();
  // Removing again, or updating, a dead slot is NotFound; so is an index out of range.
  EXPECT_EQ(state_.RemoveNode(1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(state_.RemoveNode(9).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(state_.UpdateNode(1, Node("n1", 1, 1, 0, "")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(state_.UpdateNode(-1, Node("n1", 1, 1, 0, "")).code(), absl::StatusCode::kNotFound);
  // The name is free: a node added under it gets a new slot.
  absl::StatusOr<int> again = state_.AddNode(Node("n1", 1000, 1000, 2, "B"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 4);
  EXPECT_EQ(state_.FindNode("n1"), 4);
  EXPECT_EQ(state_.ModelId("B"), 1);  // model ids are never reused or renumbered
  state_.CheckInvariants();
}

TEST_F(ClusterStateTest, UpdateNodeKeepsAllocationsAndChangesCapacity) {
  ASSERT_TRUE(state_.Allocate(Pod(10000, 20000, 1, 400), On(0, {2})).ok());
  NodeSpec bigger = Node("n0", 40000, 70000, 4, "A");
  bigger.labels = {{"zone", "b"}};
  bigger.topology.numa = {{0, 40000, 70000}};
  bigger.topology.gpus = {{0, "g", "0000:01:00.0"}, {0, "g", ""}, {-1, "", ""}, {0, "", ""}};
  const uint32_t version = state_.version(0);
  ASSERT_TRUE(state_.UpdateNode(0, bigger).ok());
  EXPECT_NE(state_.version(0), version);
  EXPECT_EQ(state_.node(0), bigger);
  EXPECT_EQ(state_.cpu_left(0), 30000);
  EXPECT_EQ(state_.memory_left(0), 50000);
  EXPECT_EQ(Gpus(0), (std::vector<int32_t>{1000, 1000, 600, 1000}));
  EXPECT_EQ(state_.cpu_capacity_milli(), 40000 + 16000 + 8000 + 64000);
  state_.CheckInvariants();
  // Shrinking to exactly what is allocated is allowed; below it is not.
  EXPECT_TRUE(state_.UpdateNode(0, Node("n0", 10000, 20000, 4, "A")).ok());
  EXPECT_EQ(state_.cpu_left(0), 0);
  absl::Status below = state_.UpdateNode(0, Node("n0", 9999, 20000, 4, "A"));
  EXPECT_EQ(below.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(below.message(),
            "node 'n0': new capacity 9999 milli-CPU, 20000 MiB is below what is allocated "
            "(10000 milli-CPU, 20000 MiB)");
  EXPECT_EQ(state_.UpdateNode(0, Node("n0", 10000, 19999, 4, "A")).code(),
            absl::StatusCode::kFailedPrecondition);
  // GPU count or model may not change under a GPU pod.
  const Snapshot before = Snap(state_);
  absl::Status gpus = state_.UpdateNode(0, Node("n0", 10000, 20000, 8, "A"));
  EXPECT_EQ(gpus.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(gpus.message(),
            "node 'n0': GPU count or model may not change while a GPU pod is bound (4 A -> 8 A)");
  EXPECT_EQ(state_.UpdateNode(0, Node("n0", 10000, 20000, 4, "B")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.UpdateNode(0, Node("n0", 10000, 20000, 4, "C")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.gpu_models().size(), 2u);  // the refused update added no model
  // Renaming and invalid specs are refused too.
  EXPECT_EQ(state_.UpdateNode(0, Node("other", 10000, 20000, 4, "A")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state_.UpdateNode(0, Tainted(Node("n0", 10000, 20000, 4, "A"), "Bad")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Snap(state_) == before);
  state_.CheckInvariants();
}

TEST_F(ClusterStateTest, UpdateNodeChangesGpusOfANodeWithoutGpuPods) {
  // A CPU-only pod on n1 does not hold its GPUs.
  ASSERT_TRUE(state_.Allocate(Pod(1000, 1000), On(1)).ok());
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 2, 1000), On(3, {6, 7})).ok());
  ASSERT_TRUE(state_.UpdateNode(1, Node("n1", 16000, 32768, 6, "C")).ok());
  EXPECT_EQ(state_.node(1).num_gpus, 6);
  EXPECT_EQ(state_.model(1), state_.ModelId("C"));
  EXPECT_EQ(Gpus(1), std::vector<int32_t>(6, 1000));
  EXPECT_EQ(state_.total_gpus(), 18);
  EXPECT_EQ(state_.gpu_capacity_milli(), 18 * kMilliGpu);
  // n3's GPUs moved with the offsets and kept their allocation.
  EXPECT_EQ(Gpus(3), (std::vector<int32_t>{1000, 1000, 1000, 1000, 1000, 1000, 0, 0}));
  const uint64_t c = uint64_t{1} << state_.ModelId("C");
  EXPECT_EQ(Feasible(state_, Pod(0, 0, 6, 1000, c)), std::vector<int>{1});
  state_.CheckInvariants();
  // Down to no GPUs at all.
  ASSERT_TRUE(state_.UpdateNode(1, Node("n1", 16000, 32768, 0, "")).ok());
  EXPECT_EQ(state_.model(1), kNoGpuModel);
  EXPECT_EQ(state_.total_gpus(), 12);
  EXPECT_TRUE(Feasible(state_, Pod(0, 0, 1, 1000, c)).empty());
  ASSERT_TRUE(state_.Release(Pod(0, 0, 2, 1000), On(3, {6, 7})).ok());
  state_.CheckInvariants();
}

TEST(ClusterStateDynamicTest, UpdateNodeWhenTheModelTableIsFullIsRejected) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < kMaxGpuModels - 1; ++i) {
    nodes.push_back(Node("n" + std::to_string(i), 1000, 1000, 1, "M" + std::to_string(i)));
  }
  ClusterState s = *ClusterState::Create(nodes);
  absl::Status st = s.UpdateNode(0, Node("n0", 1000, 1000, 1, "one-too-many"));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.node(0).gpu_model, "M0");
  s.CheckInvariants();
}

// Random walk over every operation: after each step FeasibleNodes equals Fits on each node,
// and the audit holds.
TEST(ClusterStatePropertyTest, RandomNodeChurnKeepsFeasibilityAndAccounting) {
  std::mt19937_64 rng(1213);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ClusterState s = *ClusterState::Create({});
  std::vector<LivePod> live;
  int next_name = 0, adds = 0, removes = 0, updates = 0, cordons = 0, binds = 0;
  const int gpu_choices[] = {0, 1, 2, 4, 8};
  auto random_spec = [&](std::string name) {
    NodeSpec n = Node(std::move(name), 1000 * uniform(4, 64), 1024 * uniform(4, 64),
                      gpu_choices[uniform(0, 4)], uniform(0, 1) ? "A" : "B");
    if (uniform(0, 5) == 0)
      n.taints.push_back({"k", "", uniform(0, 1) ? "NoSchedule" : "PreferNoSchedule"});
    return n;
  };
  for (int step = 0; step < 4000; ++step) {
    const int op = uniform(0, 9);
    const int n = s.num_nodes() == 0 ? -1 : uniform(0, s.num_nodes() - 1);
    if (op == 0 || n < 0) {
      ASSERT_TRUE(s.AddNode(random_spec("n" + std::to_string(next_name++))).ok());
      ++adds;
    } else if (op == 1 && s.alive(n)) {
      // Drain, then remove.
      for (size_t i = 0; i < live.size();) {
        if (live[i].placement.node == n) {
          ASSERT_TRUE(s.Release(live[i].pod, live[i].placement).ok());
          live[i] = live.back();
          live.pop_back();
        } else {
          ++i;
        }
      }
      ASSERT_TRUE(s.RemoveNode(n).ok());
      ++removes;
    } else if (op == 2 && s.alive(n)) {
      updates += s.UpdateNode(n, random_spec(s.node(n).name)).ok();
    } else if (op == 3 && s.alive(n)) {
      s.SetCordoned(n, !s.cordoned(n));
      ++cordons;
    } else if (op <= 5 && !live.empty()) {
      const size_t i = static_cast<size_t>(uniform(0, static_cast<int>(live.size()) - 1));
      ASSERT_TRUE(s.Release(live[i].pod, live[i].placement).ok());
      live[i] = live.back();
      live.pop_back();
    } else {
      PodShape pod = Pod(250 * uniform(0, 16), 256 * uniform(0, 16));
      const int kind = uniform(0, 3);
      if (kind == 1) {
        pod.num_gpu = 1;
        pod.gpu_milli = 50 * uniform(1, 19);
      } else if (kind >= 2) {
        pod.num_gpu = 1 << uniform(0, 2);
        pod.gpu_milli = kind == 2 ? kMilliGpu : 500;
      }
      std::vector<int> fit;
      s.FeasibleNodes(pod, &fit);
      ASSERT_EQ(fit, FitsEach(s, pod)) << "step " << step;
      for (int f : fit) ASSERT_TRUE(s.schedulable(f)) << "step " << step;
      if (!fit.empty()) {
        Placement p = On(fit[static_cast<size_t>(uniform(0, static_cast<int>(fit.size()) - 1))]);
        std::span<const int32_t> gpus = s.gpu_left(p.node);
        for (int g = 0; g < static_cast<int>(gpus.size()) && p.num_gpus < pod.num_gpu; ++g) {
          if (gpus[g] >= pod.gpu_milli) p.gpus[p.num_gpus++] = static_cast<int8_t>(g);
        }
        ASSERT_TRUE(s.Allocate(pod, p).ok()) << "step " << step;
        live.push_back({pod, p});
        ++binds;
      }
    }
    CheckInvariants(s, live);
    s.CheckInvariants();
    if (HasFatalFailure()) FAIL() << "invariant broken at step " << step;
  }
  EXPECT_GT(adds, 100);
  EXPECT_GT(removes, 50);
  EXPECT_GT(updates, 50);
  EXPECT_GT(cordons, 100);
  EXPECT_GT(binds, 500);
  RecordProperty("adds", adds);
  RecordProperty("removes", removes);
}

}  // namespace
}  // namespace seedance::core

namespace seedance::core {
namespace {

// ---- NUMA pinning: a placement's CPU and memory on one NUMA node's share ----------------

TEST(ClusterStateNumaTest, PinnedPodsUseTheirNumaShareAndGiveItBack) {
  ClusterState s = *ClusterState::Create({TwoSocket("t0")});
  EXPECT_EQ(s.numa_cpu_left(0, 0), 16000);
  EXPECT_EQ(s.numa_memory_left(0, 1), 32768);
  EXPECT_EQ(s.numa_cpu_left(0, 7), -1);  // not one of its NUMA nodes
  const PodShape gpu_pod = Pod(12000, 20000, 2, 1000);
  ASSERT_TRUE(s.Allocate(gpu_pod, Pinned(0, 1, {2, 3})).ok());
  EXPECT_EQ(s.numa_cpu_left(0, 1), 4000);
  EXPECT_EQ(s.numa_memory_left(0, 1), 12768);
  EXPECT_EQ(s.numa_cpu_left(0, 0), 16000);
  EXPECT_EQ(s.cpu_left(0), 20000);  // the node's totals move as for any pod
  // Unpinned pods count against the totals only.
  ASSERT_TRUE(s.Allocate(Pod(8000, 0), On(0)).ok());
  EXPECT_EQ(s.numa_cpu_left(0, 1), 4000);
  EXPECT_EQ(s.cpu_left(0), 12000);
  ASSERT_TRUE(s.Release(gpu_pod, Pinned(0, 1, {2, 3})).ok());
  EXPECT_EQ(s.numa_cpu_left(0, 1), 16000);
  EXPECT_EQ(s.numa_memory_left(0, 1), 32768);
  s.CheckInvariants();
}

TEST(ClusterStateNumaTest, PinningBeyondTheShareOrToAForeignNumaNodeChangesNothing) {
  ClusterState s = *ClusterState::Create({TwoSocket("t0"), Node("plain", 8000, 8192, 0, "")});
  ASSERT_TRUE(s.Allocate(Pod(10000, 0), Pinned(0, 0)).ok());
  const Snapshot before = Snap(s);
  absl::Status over = s.Allocate(Pod(7000, 0), Pinned(0, 0));  // 6000 left on NUMA 0
  EXPECT_EQ(over.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(over.message().find("NUMA node 0"), std::string_view::npos);
  absl::Status foreign = s.Allocate(Pod(100, 0), Pinned(0, 5));
  EXPECT_EQ(foreign.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Allocate(Pod(100, 0), Pinned(1, 0)).code(), absl::StatusCode::kInvalidArgument);
  // Releasing more than is pinned there is refused too.
  EXPECT_EQ(s.Release(Pod(100, 0), Pinned(0, 1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Snap(s), before);
  EXPECT_EQ(s.numa_cpu_left(0, 0), 6000);
}

TEST(ClusterStateNumaTest, UpdateKeepsPinnedUseAndRefusesToShrinkBelowIt) {
  ClusterState s = *ClusterState::Create({TwoSocket("t0")});
  ASSERT_TRUE(s.Allocate(Pod(10000, 1024), Pinned(0, 1)).ok());
  NodeSpec shrunk = TwoSocket("t0");
  shrunk.topology.numa[1].cpu_milli = 9000;
  absl::Status st = s.UpdateNode(0, shrunk);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("NUMA node 1"), std::string_view::npos) << st;
  NodeSpec gone = TwoSocket("t0");
  gone.topology.numa.pop_back();
  gone.topology.gpus = {};
  EXPECT_EQ(s.UpdateNode(0, gone).code(), absl::StatusCode::kFailedPrecondition);
  NodeSpec grown = TwoSocket("t0");
  grown.cpu_milli = 40000;
  grown.topology.numa[1].cpu_milli = 24000;
  ASSERT_TRUE(s.UpdateNode(0, grown).ok());
  EXPECT_EQ(s.numa_cpu_left(0, 1), 14000);
  s.CheckInvariants();
}

}  // namespace
}  // namespace seedance::core
