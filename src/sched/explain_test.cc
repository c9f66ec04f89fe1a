#include "seedance/sched/explain.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "seedance/core/cluster_state.h"

namespace seedance::sched {
namespace {

using core::ClusterState;
using core::NodeSpec;
using core::Placement;
using core::PodShape;

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

TEST(FilterReasonNameTest, NamesEveryReasonDistinctly) {
  const std::vector<std::string> want = {"node removed",           "cordoned",
                                         "untolerated taint",      "GPU model",
                                         "insufficient CPU",       "insufficient memory",
                                         "too few GPUs",           "insufficient free GPUs",
                                         "insufficient GPU milli", "rejected by plugin"};
  ASSERT_EQ(want.size(), static_cast<size_t>(kNumFilterReasons));
  for (int r = 0; r < kNumFilterReasons; ++r) {
    EXPECT_EQ(FilterReasonName(static_cast<FilterReason>(r)), want[static_cast<size_t>(r)]);
  }
}

// One node per reason; a pod that asks for one A GPU's 600 milli, 4 CPUs and 4 GiB.
class NodeFilterReasonTest : public ::testing::Test {
 protected:
  NodeFilterReasonTest() {
    state_ = *ClusterState::Create({
        Node("removed", 8000, 8192, 1, "A"),   // 0
        Node("cordoned", 8000, 8192, 1, "A"),  // 1
        Node("tainted", 8000, 8192, 1, "A"),   // 2
        Node("model-b", 8000, 8192, 1, "B"),   // 3
        Node("cpu", 2000, 8192, 1, "A"),       // 4
        Node("memory", 8000, 1024, 1, "A"),    // 5
        Node("no-gpus", 8000, 8192, 0, ""),    // 6
        Node("busy", 8000, 8192, 1, "A"),      // 7: 500 milli taken
        Node("fits", 8000, 8192, 2, "A"),      // 8
    });
    EXPECT_TRUE(state_.RemoveNode(0).ok());
    state_.SetCordoned(1, true);
    NodeSpec t = state_.node(2);
    t.taints = {{"dedicated", "x", "NoSchedule"}};
    EXPECT_TRUE(state_.UpdateNode(2, t).ok());
    EXPECT_TRUE(state_.Allocate(Pod(0, 0, 1, 500), On(7, {0})).ok());
    pod_ = Pod(4000, 4096, 1, 600, uint64_t{1} << state_.ModelId("A"));
  }
  ClusterState state_ = *ClusterState::Create({});
  PodShape pod_;
};

TEST_F(NodeFilterReasonTest, FirstFailingCheckPerNode) {
  const std::vector<std::optional<FilterReason>> want = {
      FilterReason::kNodeRemoved,
      FilterReason::kCordoned,
      FilterReason::kTainted,
      FilterReason::kGpuModel,
      FilterReason::kInsufficientCpu,
      FilterReason::kInsufficientMemory,
      FilterReason::kGpuModel,  // no GPUs means no model, checked before the GPU count
      FilterReason::kInsufficientGpuMilli,
      std::nullopt};
  for (int n = 0; n < state_.num_nodes(); ++n) {
    SCOPED_TRACE(state_.node(n).name);
    EXPECT_EQ(NodeFilterReason(state_, n, pod_), want[static_cast<size_t>(n)]);
  }
}

TEST_F(NodeFilterReasonTest, GpuCountReasonsForWholeAndMultiGpuShares) {
  // Any model: the GPU-less node now fails on its GPU count.
  EXPECT_EQ(NodeFilterReason(state_, 6, Pod(0, 0, 1, 1000)), FilterReason::kTooFewGpus);
  EXPECT_EQ(NodeFilterReason(state_, 8, Pod(0, 0, 3, 1000)), FilterReason::kTooFewGpus);
  // Node 7 has one GPU with 500 left: whole GPUs lack free GPUs.
  EXPECT_EQ(NodeFilterReason(state_, 7, Pod(0, 0, 1, 1000)), FilterReason::kInsufficientGpu);
  // Two GPUs of 600 each on node 8 (2 GPUs) fit; after 500 on one, they do not.
  EXPECT_EQ(NodeFilterReason(state_, 8, Pod(0, 0, 2, 600)), std::nullopt);
  ASSERT_TRUE(state_.Allocate(Pod(0, 0, 1, 500), On(8, {1})).ok());
  EXPECT_EQ(NodeFilterReason(state_, 8, Pod(0, 0, 2, 600)), FilterReason::kInsufficientGpuMilli);
  EXPECT_EQ(NodeFilterReason(state_, 8, Pod(0, 0, 2, 500)), std::nullopt);
}

TEST_F(NodeFilterReasonTest, DiagnoseCountsLiveNodesOnly) {
  Diagnosis d = Diagnose(state_, pod_);
  EXPECT_EQ(d.nodes_total, 8);  // the removed slot is not counted
  EXPECT_EQ(d.nodes_fit, 1);
  EXPECT_EQ(d.count(FilterReason::kNodeRemoved), 0);
  EXPECT_EQ(d.count(FilterReason::kGpuModel), 2);
  EXPECT_EQ(d.count(FilterReason::kCordoned), 1);
  EXPECT_TRUE(d.plugin.empty());
  EXPECT_EQ(FitErrorMessage(d),
            "1/8 nodes fit: 2 GPU model, 1 cordoned, 1 untolerated taint, 1 insufficient CPU, "
            "1 insufficient memory, 1 insufficient GPU milli");
}

TEST(FitErrorMessageTest, ReasonsByCountDescending) {
  Diagnosis d;
  d.nodes_total = 1213;
  d.counts[static_cast<size_t>(FilterReason::kGpuModel)] = 413;
  d.counts[static_cast<size_t>(FilterReason::kInsufficientGpuMilli)] = 800;
  EXPECT_EQ(FitErrorMessage(d), "0/1213 nodes fit: 800 insufficient GPU milli, 413 GPU model");
}

TEST(FitErrorMessageTest, TiesKeepReasonOrderAndPluginIsNamed) {
  Diagnosis d;
  d.nodes_total = 7;
  d.nodes_fit = 1;
  d.counts[static_cast<size_t>(FilterReason::kPlugin)] = 2;
  d.counts[static_cast<size_t>(FilterReason::kInsufficientCpu)] = 2;
  d.counts[static_cast<size_t>(FilterReason::kCordoned)] = 2;
  d.plugin = "gang";
  EXPECT_EQ(FitErrorMessage(d),
            "1/7 nodes fit: 2 cordoned, 2 insufficient CPU, 2 rejected by plugin gang");
}

TEST(FitErrorMessageTest, AllFitAndEmptyCluster) {
  Diagnosis all;
  all.nodes_total = 3;
  all.nodes_fit = 3;
  EXPECT_EQ(FitErrorMessage(all), "3/3 nodes fit");
  EXPECT_EQ(FitErrorMessage(Diagnosis{}), "0/0 nodes fit: the cluster has no nodes");
  ClusterState empty = *ClusterState::Create({});
  EXPECT_EQ(FitErrorMessage(Diagnose(empty, Pod(1, 1))), "0/0 nodes fit: the cluster has no nodes");
}

// On random states, a node has a reason exactly when Fits says no, and the diagnosis adds up to
// the live nodes with FeasibleNodes' count fitting.
TEST(DiagnosePropertyTest, ReasonsAgreeWithFitsAndFeasibleNodes) {
  std::mt19937_64 rng(4242);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int gpu_choices[] = {0, 1, 2, 4, 8};
  int checked = 0, fitting = 0;
  std::set<int> reasons_seen;
  for (int trial = 0; trial < 40; ++trial) {
    ClusterState s = *ClusterState::Create({});
    const int nodes = uniform(1, 30);
    for (int n = 0; n < nodes; ++n) {
      NodeSpec spec = Node("n" + std::to_string(n), 1000 * uniform(1, 32), 1024 * uniform(1, 32),
                           gpu_choices[uniform(0, 4)], uniform(0, 1) ? "A" : "B");
      if (uniform(0, 9) == 0) spec.taints = {{"k", "", "NoExecute"}};
      ASSERT_TRUE(s.AddNode(spec).ok());
      if (uniform(0, 9) == 0) s.SetCordoned(n, true);
    }
    for (int n = 0; n < nodes; ++n) {
      if (uniform(0, 12) == 0) {
        ASSERT_TRUE(s.RemoveNode(n).ok());
        continue;
      }
      // Fill some GPUs partly.
      for (int g = 0; g < s.node(n).num_gpus; ++g) {
        if (uniform(0, 2) != 0) continue;
        ASSERT_TRUE(s.Allocate(Pod(0, 0, 1, 100 * uniform(1, 10)), On(n, {g})).ok());
      }
    }
    for (int k = 0; k < 50; ++k) {
      PodShape pod = Pod(500 * uniform(0, 40), 512 * uniform(0, 40));
      const int kind = uniform(0, 3);
      if (kind == 1) {
        pod.num_gpu = 1;
        pod.gpu_milli = 100 * uniform(1, 9);
      } else if (kind == 2) {
        pod.num_gpu = 1 << uniform(0, 3);
        pod.gpu_milli = 1000;
      } else if (kind == 3) {
        pod.num_gpu = uniform(2, 4);
        pod.gpu_milli = 100 * uniform(1, 9);
      }
      if (uniform(0, 2) == 0) pod.gpu_model_mask = uint64_t{1} << uniform(0, 1);
      std::vector<int> feasible;
      s.FeasibleNodes(pod, &feasible);
      Diagnosis d = Diagnose(s, pod);
      EXPECT_EQ(d.nodes_total, s.num_live_nodes());
      EXPECT_EQ(d.nodes_fit, static_cast<int>(feasible.size()));
      int sum = d.nodes_fit;
      for (int c : d.counts) sum += c;
      EXPECT_EQ(sum, d.nodes_total);
      for (int n = 0; n < s.num_nodes(); ++n) {
        std::optional<FilterReason> r = NodeFilterReason(s, n, pod);
        ASSERT_EQ(r.has_value(), !s.Fits(n, pod)) << "trial " << trial << " node " << n;
        if (r) reasons_seen.insert(static_cast<int>(*r));
        fitting += !r.has_value();
        ++checked;
      }
    }
  }
  EXPECT_GT(fitting, 100);
  // Every reason but kPlugin (not a ClusterState check) came up.
  EXPECT_EQ(reasons_seen.size(), static_cast<size_t>(kNumFilterReasons - 1));
  RecordProperty("checked", checked);
}

TEST(NodeFilterReasonDeathTest, NodeOutOfRangeIsCaught) {
  ClusterState s = *ClusterState::Create({Node("a", 1000, 1000, 0, "")});
  EXPECT_DEATH(NodeFilterReason(s, 1, Pod(1, 1)), "NodeFilterReason: node 1 of 1");
  EXPECT_DEATH(NodeFilterReason(s, -1, Pod(1, 1)), "NodeFilterReason: node -1 of 1");
}

}  // namespace
}  // namespace seedance::sched
