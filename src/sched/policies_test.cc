// The built-in policies against hand-computed values of the reference formulas
// (hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/*.go). Each row's comment
// shows the scores the reference would give, so a failure points at the formula that drifted.
#include "policies.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fgd.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"

namespace seedance::sched {
namespace {

using core::ClusterState;
using core::NodeSpec;
using core::Placement;
using core::PodShape;
using ::testing::HasSubstr;
using ::testing::Not;

PodShape Cpu(int64_t cpu_milli) {
  PodShape p;
  p.cpu_milli = cpu_milli;
  return p;
}
PodShape Share(int32_t gpu_milli, int64_t cpu_milli = 1000, uint64_t mask = 0) {
  PodShape p;
  p.cpu_milli = cpu_milli;
  p.num_gpu = 1;
  p.gpu_milli = gpu_milli;
  p.gpu_model_mask = mask;
  return p;
}
PodShape Whole(int32_t num_gpu, int64_t cpu_milli = 1000) {
  PodShape p;
  p.cpu_milli = cpu_milli;
  p.num_gpu = num_gpu;
  p.gpu_milli = core::kMilliGpu;
  return p;
}

// A pod already running before the decision under test.
struct Alloc {
  int node;
  PodShape pod;
  std::vector<int> gpus;
};

TargetShape Target(int64_t cpu_milli, int32_t num_gpu, int32_t gpu_milli, double freq) {
  TargetShape s;
  s.cpu_milli = cpu_milli;
  s.num_gpu = num_gpu;
  s.gpu_milli = gpu_milli;
  s.freq = freq;
  return s;
}

class PolicyTest : public ::testing::Test {
 protected:
  // n0: 4xA, 32 CPUs; n1: 8xA, 64 CPUs; n2: 2xB, 16 CPUs; n3: CPU only, 32 CPUs.
  static std::vector<NodeSpec> MixedNodes() {
    return {{"n0", 32000, 262144, 4, "A", 0, 0},
            {"n1", 64000, 524288, 8, "A", 0, 0},
            {"n2", 16000, 131072, 2, "B", 0, 0},
            {"n3", 32000, 131072, 0, "", 0, 0}};
  }
  // One 4xA node.
  static std::vector<NodeSpec> OneNode() { return {{"n0", 64000, 262144, 4, "A", 0, 0}}; }

  static ClusterState Cluster(std::vector<NodeSpec> nodes, const std::vector<Alloc>& allocs) {
    auto s = ClusterState::Create(std::move(nodes));
    EXPECT_TRUE(s.ok()) << s.status();
    for (const Alloc& a : allocs) {
      Placement p;
      p.node = a.node;
      for (int g : a.gpus) p.gpus[p.num_gpus++] = static_cast<int8_t>(g);
      EXPECT_TRUE(s->Allocate(a.pod, p).ok()) << "pre-allocation on node " << a.node;
    }
    return *std::move(s);
  }

  static PolicyContext Context(TargetWorkload w = {Target(1000, 1, 1000, 1.0)}) {
    PolicyContext ctx;
    ctx.oracle_workload = std::move(w);
    return ctx;
  }

  static std::unique_ptr<Framework> Policy(const std::string& name,
                                           const PolicyContext& ctx = Context(),
                                           uint64_t seed = 42) {
    auto profile = Registry::Builtins().Create(name, ctx);
    EXPECT_TRUE(profile.ok()) << profile.status();
    if (!profile.ok()) return nullptr;
    FrameworkOptions o;
    o.seed = seed;
    return std::make_unique<Framework>(*std::move(profile), std::move(o));
  }

  static std::vector<int> Gpus(const Placement& p) {
    return {p.gpu_ids().begin(), p.gpu_ids().end()};
  }
};

struct PlacementCase {
  std::string name;
  std::vector<Alloc> before;
  PodShape pod;
  int want_node;
  std::vector<int> want_gpus;
};

void RunPlacementCases(const std::string& policy, const std::vector<NodeSpec>& nodes,
                       const std::vector<PlacementCase>& cases,
                       const PolicyContext& ctx = PolicyContext{
                           .oracle_workload = {Target(1000, 1, 1000, 1.0)}, .params = {}}) {
  for (const PlacementCase& c : cases) {
    SCOPED_TRACE(policy + ": " + c.name);
    auto profile = Registry::Builtins().Create(policy, ctx);
    ASSERT_TRUE(profile.ok()) << profile.status();
    Framework fw(*std::move(profile), FrameworkOptions{});
    auto s = ClusterState::Create(nodes);
    ASSERT_TRUE(s.ok()) << s.status();
    for (const Alloc& a : c.before) {
      Placement p;
      p.node = a.node;
      for (int g : a.gpus) p.gpus[p.num_gpus++] = static_cast<int8_t>(g);
      ASSERT_TRUE(s->Allocate(a.pod, p).ok()) << "pre-allocation on node " << a.node;
    }
    const int64_t gpu_before = s->gpu_allocated_milli();
    Outcome out = fw.Schedule(c.pod, *s);
    ASSERT_TRUE(out.ok()) << CodeName(out.code) << ": " << out.reason;
    EXPECT_EQ(out.placement.node, c.want_node);
    EXPECT_EQ(std::vector<int>(out.placement.gpu_ids().begin(), out.placement.gpu_ids().end()),
              c.want_gpus);
    EXPECT_EQ(s->gpu_allocated_milli(), gpu_before + c.pod.TotalGpuMilli());
  }
}

// ---- bestfit: (1 - 0.5*(cpu_free - cpu_req)/128000 - 0.5*(gpu_free - gpu_req)/8000) * 100 -------

TEST_F(PolicyTest, BestFitPicksNodeWithLeastCpuAndGpuLeft) {
  RunPlacementCases(
      "bestfit", MixedNodes(),
      {
          // n0 62, n1 25, n2 81, n3 87.
          {"cpu pod to the cpu-only node", {}, Cpu(1000), 3, {}},
          // n0 69, n1 31, n2 87; n3 has no GPU.
          {"whole-GPU pod to the smallest GPU node", {}, Whole(1), 2, {0}},
          // n1 left 8 CPUs + 2 GPUs: 91 beats n2's 87.
          {"loaded big node beats empty small node",
           {{1, Whole(6, 56000), {0, 1, 2, 3, 4, 5}}},
           Whole(1),
           1,
           {6}},
          // n2 [1000, 400]: n2 wins, best-fit GPU is the 400 one.
          {"sharing pod to the used GPU that fits", {{2, Share(600), {1}}}, Share(300), 2, {1}},
          {"sharing pod skips a GPU too small", {{2, Share(600), {1}}}, Share(500), 2, {0}},
      });
}

// bestfit's one scorer says its min-max normalisation keeps the top (NormalizeKeepsTop), so the
// framework selects on raw scores. The same profile with a scorer that delegates everything but
// that claim is selected the long way (normalised); both must make the same decision at every
// step of a random stream with departures, ties included.
class NormalisedTheLongWay : public ScorePlugin {
 public:
  explicit NormalisedTheLongWay(std::shared_ptr<ScorePlugin> inner) : inner_(std::move(inner)) {}
  std::string_view Name() const override { return inner_->Name(); }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    return inner_->Score(c, s, n);
  }
  bool HasNormalize() const override { return inner_->HasNormalize(); }
  void NormalizeScore(std::span<int64_t> scores) const override { inner_->NormalizeScore(scores); }
  bool Cacheable() const override { return inner_->Cacheable(); }

 private:
  std::shared_ptr<ScorePlugin> inner_;
};

TEST_F(PolicyTest, BestFitSelectsOnRawScoresAsItWouldNormalised) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 24; ++i) {  // few kinds of node, so that many scores tie
    nodes.push_back(
        {"n" + std::to_string(i), 16000 * (1 + i % 3), 262144, 2 * (1 + i % 4), "A", 0, 0});
  }
  auto fast = Registry::Builtins().Create("bestfit", PolicyContext{});
  auto slow = Registry::Builtins().Create("bestfit", PolicyContext{});
  ASSERT_TRUE(fast.ok() && slow.ok());
  ASSERT_EQ(fast->scores.size(), 1u);
  ASSERT_TRUE(fast->scores[0].plugin->NormalizeKeepsTop());
  slow->scores[0].plugin = std::make_shared<NormalisedTheLongWay>(slow->scores[0].plugin);
  ASSERT_FALSE(slow->scores[0].plugin->NormalizeKeepsTop());
  FrameworkOptions o;
  o.node_order = Framework::RandomNodeOrder(static_cast<int>(nodes.size()), 7);
  Framework fw_fast(*std::move(fast), o), fw_slow(*std::move(slow), o);
  ClusterState s_fast = Cluster(nodes, {}), s_slow = Cluster(nodes, {});
  std::mt19937_64 rng(11);
  const std::vector<PodShape> shapes = {Cpu(4000), Share(250),     Share(500, 2000),
                                        Whole(1),  Whole(2, 8000), Whole(4, 2000)};
  std::vector<std::pair<PodShape, Placement>> bound;
  int placed = 0;
  for (int step = 0; step < 3000; ++step) {
    if (!bound.empty() && rng() % 3 == 0) {
      const size_t i = rng() % bound.size();
      fw_fast.Release(bound[i].first, bound[i].second, s_fast);
      fw_slow.Release(bound[i].first, bound[i].second, s_slow);
      bound[i] = bound.back();
      bound.pop_back();
    }
    const PodShape& pod = shapes[rng() % shapes.size()];
    Outcome a = fw_fast.Schedule(pod, s_fast);
    Outcome b = fw_slow.Schedule(pod, s_slow);
    ASSERT_EQ(a.code, b.code) << "step " << step;
    if (!a.ok()) continue;
    ASSERT_EQ(a.placement.node, b.placement.node) << "step " << step;
    ASSERT_EQ(Gpus(a.placement), Gpus(b.placement)) << "step " << step;
    bound.push_back({pod, a.placement});
    ++placed;
  }
  EXPECT_GT(placed, 1000);
}

// ---- packing: shared GPU (>= 50) > free GPU on used node (33..50) > empty node (<= 33) ---------

TEST_F(PolicyTest, PackingPrefersSharedGpuThenUsedNodeThenEmptyNode) {
  RunPlacementCases(
      "packing", MixedNodes(),
      {
          // Empty nodes: 33 - #GPUs: n0 29, n1 25, n2 31.
          {"empty cluster: smallest empty node", {}, Share(500), 2, {0}},
          // n1 used: 50 - 1 = 49 beats empty n2's 31.
          {"free GPU on a used node", {{1, Whole(1), {0}}}, Share(500), 1, {1}},
          // n0 GPU 3 shared with 600 left: 100 - 60/10 = 94.
          {"shared GPU first", {{1, Whole(1), {0}}, {0, Share(400), {3}}}, Share(500), 0, {3}},
          // Shared GPU too small for 700: n0 must use a free GPU (49), as must n1 (49): node order.
          {"shared GPU too small", {{1, Whole(1), {0}}, {0, Share(400), {3}}}, Share(700), 0, {0}},
          // Two whole GPUs on used n1: 50 - 2 = 48.
          {"whole GPUs on a used node", {{1, Whole(1), {0}}}, Whole(2), 1, {1, 2}},
      });
}

// ---- clustering: 25*(8000 - gpu_left)/8000 + {75 same only, 50 same among others, 25 idle, 0} --

TEST_F(PolicyTest, ClusteringPrefersNodeRunningTheSameGpuClass) {
  const std::vector<Alloc> classes = {{0, Whole(2), {0, 1}}, {1, Share(300), {0}}};
  RunPlacementCases("clustering", MixedNodes(),
                    {
                        // n0 (2-GPU class) 18, n1 (sharing class) 0 + 75, idle n2 18 + 25.
                        {"sharing pod joins sharing pods", classes, Share(200), 1, {0}},
                        // n0 18 + 75 = 93, n1 0, n2 43.
                        {"2-GPU pod joins 2-GPU pods", classes, Whole(2), 0, {2, 3}},
                        // No node runs 1-GPU pods: idle n2 43 beats n0 18 and n1 0.
                        {"new class goes to an idle node", classes, Whole(1), 2, {0}},
                        // n1 mixed (sharing + 1-GPU): 4 + 50; n2 sharing only: 19 + 75.
                        {"single-class node beats mixed node",
                         {{1, Share(300), {0}}, {1, Whole(1), {1}}, {2, Share(300), {0}}},
                         Share(200),
                         2,
                         {0}},
                    });
}

// ---- dotprod: 100 * (1 - (cpu_free*cpu_req/128000^2 + gpu_free*gpu_req/8000^2) / 2) ------------

TEST_F(PolicyTest, DotProdPicksNodeWithSmallestDotProduct) {
  RunPlacementCases("dotprod", MixedNodes(),
                    {
                        // n0 96, n1 92, n2 98.
                        {"whole-GPU pod", {}, Whole(1, 8000), 2, {0}},
                        // n0 98, n1 96, n2 99, n3 98.
                        {"cpu pod", {}, Cpu(16000), 2, {}},
                        // n1 left 8 CPUs + 1 GPU: 99 beats n2's 98.
                        {"nearly full node",
                         {{1, Whole(7, 56000), {0, 1, 2, 3, 4, 5, 6}}},
                         Whole(1, 8000),
                         1,
                         {7}},
                    });
}

// ---- GPU choice of the baselines (Open-Gpu-Share best fit) -------------------------------------

TEST_F(PolicyTest, BaselinesChooseBestFitGpuAndLowestFreeGpus) {
  // GPUs left: [1000, 400, 600, 400].
  const std::vector<Alloc> used = {
      {0, Share(600), {1}}, {0, Share(400), {2}}, {0, Share(600), {3}}};
  const std::vector<PlacementCase> cases = {
      {"least room that fits, lowest index on ties", used, Share(300), 0, {1}},
      {"least room that fits", used, Share(500), 0, {2}},
      {"only the free GPU fits", used, Share(700), 0, {0}},
      {"whole GPU takes the free one", used, Whole(1), 0, {0}},
      {"whole GPUs take the lowest free", {{0, Share(100), {1}}}, Whole(2), 0, {0, 2}},
  };
  for (const char* policy : {"bestfit", "packing", "clustering", "dotprod"}) {
    RunPlacementCases(policy, OneNode(), cases);
  }
}

TEST(BestFitGpuChooserTest, Table) {
  auto s = ClusterState::Create({{"n0", 64000, 1024, 4, "A", 0, 0}});
  ASSERT_TRUE(s.ok());
  Placement setup;
  setup.node = 0;
  setup.num_gpus = 1;
  for (auto [gpu, milli] : {std::pair{1, 600}, std::pair{2, 400}, std::pair{3, 600}}) {
    setup.gpus[0] = static_cast<int8_t>(gpu);
    ASSERT_TRUE(s->Allocate(Share(milli, 0), setup).ok());
  }
  // GPUs left: [1000, 400, 600, 400].
  struct Case {
    std::string name;
    PodShape pod;
    bool want_ok;
    std::vector<int> want_gpus;
  };
  const std::vector<Case> cases = {
      {"tie on 400: lowest index", Share(300), true, {1}},
      {"exact fit", Share(400), true, {1}},
      {"600 is the tightest", Share(401), true, {2}},
      {"only the free GPU", Share(999), true, {0}},
      {"one whole GPU", Whole(1), true, {0}},
      {"two whole GPUs do not exist", Whole(2), false, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Placement p;
    p.node = 0;
    ASSERT_EQ(internal::ChooseBestFitGpus(*s, c.pod, &p), c.want_ok);
    if (c.want_ok) {
      EXPECT_EQ(std::vector<int>(p.gpu_ids().begin(), p.gpu_ids().end()), c.want_gpus);
    }
  }
}

TEST(ExclusiveGpuChooserTest, TakesLowestFullyFreeGpus) {
  auto s = ClusterState::Create({{"n0", 64000, 1024, 8, "A", 0, 0}});
  ASSERT_TRUE(s.ok());
  for (int gpu : {0, 3}) {
    Placement used;
    used.node = 0;
    used.num_gpus = 1;
    used.gpus[0] = static_cast<int8_t>(gpu);
    ASSERT_TRUE(s->Allocate(Share(10, 0), used).ok());
  }
  // A GPU with any load is not free for a whole-GPU pod.
  Placement p;
  p.node = 0;
  ASSERT_TRUE(internal::ChooseExclusiveGpus(*s, Whole(3), &p));
  EXPECT_EQ(std::vector<int>(p.gpu_ids().begin(), p.gpu_ids().end()), (std::vector<int>{1, 2, 4}));
  Placement q;
  q.node = 0;
  EXPECT_FALSE(internal::ChooseExclusiveGpus(*s, Whole(7), &q));
}

// ---- fgd ---------------------------------------------------------------------------------------

TEST(FgdScoreTest, SigmoidOfFragmentDecrease) {
  struct Case {
    double delta;
    int64_t want;
  };
  for (const Case& c :
       std::vector<Case>{{0, 50}, {300, 57}, {-700, 33}, {-400, 40}, {1e9, 100}, {-1e9, 0}}) {
    SCOPED_TRACE(c.delta);
    EXPECT_EQ(internal::FgdScoreFromDelta(c.delta), c.want);
  }
}

TEST(FgdSubtractTest, TakesFullestGpusThatFit) {
  NodeResources r;
  r.cpu_left = 8000;
  r.num_gpus = 4;
  r.gpu_left = {700, 1000, 300, 1000};
  struct Case {
    std::string name;
    PodShape pod;
    std::vector<int32_t> want;
  };
  const std::vector<Case> cases = {
      {"sharing pod on the fullest GPU that fits", Share(250), {700, 1000, 50, 1000}},
      {"sharing pod skips a GPU too small", Share(500), {200, 1000, 300, 1000}},
      {"whole GPUs in index order among equals", Whole(2), {700, 0, 300, 0}},
      {"cpu only", Cpu(3000), {700, 1000, 300, 1000}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NodeResources after = internal::SubtractLikeReference(r, c.pod);
    EXPECT_EQ(after.cpu_left, 8000 - c.pod.cpu_milli);
    EXPECT_EQ(std::vector<int32_t>(after.gpu_left.begin(), after.gpu_left.begin() + 4), c.want);
  }
}

// A random walk over the states of a few node types (so that states repeat), with sharing and
// whole-GPU pods; `step` sees the cluster after every allocation or release.
template <typename Step>
void RandomWalk(ClusterState& s, int steps, uint64_t seed, Step step) {
  std::mt19937_64 rng(seed);
  const PodShape pods[] = {Share(300, 2000), Share(500, 4000), Whole(1, 6000), Whole(2, 1000),
                           Cpu(3000)};
  std::vector<std::pair<PodShape, Placement>> live;
  for (int i = 0; i < steps; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(s.Release(live[k].first, live[k].second).ok());
      live[k] = live.back();
      live.pop_back();
    } else {
      const PodShape& pod = pods[rng() % 5];
      Placement p;
      p.node = static_cast<int>(rng() % static_cast<uint64_t>(s.num_nodes()));
      if (!s.Fits(p.node, pod)) continue;
      auto gl = s.gpu_left(p.node);
      for (int g = 0; g < static_cast<int>(gl.size()) && p.num_gpus < pod.num_gpu; ++g) {
        if (gl[g] >= pod.gpu_milli) p.gpus[p.num_gpus++] = static_cast<int8_t>(g);
      }
      ASSERT_TRUE(s.Allocate(pod, p).ok());
      live.emplace_back(pod, p);
    }
    step(s);
  }
}

std::vector<NodeSpec> RepeatedNodes(int count) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < count; ++i) {
    nodes.push_back({"n" + std::to_string(i), 16000 * (1 + i % 2), 262144, 2 + 2 * (i % 3),
                     i % 4 == 3 ? "B" : "A", 0, 0});
  }
  return nodes;
}

// Skipping the fragment-amount memo must not change a single bit of the amounts.
TEST(FragEvaluatorTest, MemoDoesNotChangeAnyAmount) {
  auto s = ClusterState::Create(RepeatedNodes(12));
  ASSERT_TRUE(s.ok()) << s.status();
  TargetWorkload w = {Target(1000, 1, 300, 0.3), Target(4000, 1, 500, 0.2),
                      Target(6000, 1, 1000, 0.3), Target(2000, 2, 1000, 0.15),
                      Target(3000, 0, 0, 0.05)};
  w[1].gpu_model_mask = s->ModelMask("B");  // B only: some nodes have no access
  internal::FragEvaluator memo, plain;
  memo.SetWorkload(w);
  plain.SetWorkload(w);
  plain.set_memoize(false);
  RandomWalk(*s, 400, 7, [&](const ClusterState& st) {
    for (int n = 0; n < st.num_nodes(); ++n) {
      ASSERT_EQ(memo.Current(st, n), plain.Current(st, n)) << "node " << n;
      EXPECT_NEAR(memo.Current(st, n), NodeFragScore(NodeResources::Of(st, n), w), 1e-6);
      for (const PodShape& pod : {Share(300, 2000), Whole(1, 6000)}) {
        if (st.Fits(n, pod)) {
          ASSERT_EQ(memo.Delta(st, n, pod), plain.Delta(st, n, pod));
        }
      }
    }
  });
}

// The memo gives every node the score of its own state, computes once per distinct state and
// epoch, and stays right across epochs, node changes and renumbering.
TEST(StateScoreMemoTest, EveryNodeGetsItsOwnStatesScoreComputedOncePerState) {
  auto s = ClusterState::Create(RepeatedNodes(8));
  ASSERT_TRUE(s.ok()) << s.status();
  // A score that differs between states and pods and epochs.
  auto direct = [](const ClusterState& st, int n, const PodShape& pod, uint64_t epoch) {
    // Unsigned: the hash wraps by design (signed overflow is undefined, and UBSan stops on it).
    const internal::FragMemoKey k = internal::KeyOf(NodeResources::Of(st, n));
    uint64_t v = static_cast<uint64_t>(k.cpu_left / 1000 + 7 * k.model) + 131 * epoch;
    for (int32_t g : k.sorted_gpu_left) v = v * 31 + static_cast<uint64_t>(g);
    v ^= static_cast<uint64_t>(pod.cpu_milli + pod.gpu_milli * 3);
    return static_cast<int64_t>(v >> 1);
  };
  internal::StateScoreMemo memo(/*extra_states=*/4);  // renumbers often
  uint64_t epoch = 0;
  int steps = 0;
  size_t most_computed = 0;
  RandomWalk(*s, 5000, 11, [&](const ClusterState& st) {
    if (++steps % 50 == 0) ++epoch;
    for (const PodShape& pod : {Share(300, 2000), Whole(2, 1000)}) {
      memo.StartCycle(st, pod, epoch);
      const int renumbered_before = memo.renumberings();
      size_t computed = 0;
      for (int pass = 0; pass < 2; ++pass) {
        for (int n = 0; n < st.num_nodes(); ++n) {
          const int64_t got = memo.Get(st, n, pod, [&] {
            ++computed;
            return direct(st, n, pod, epoch);
          });
          ASSERT_EQ(got, direct(st, n, pod, epoch)) << "node " << n << ", step " << steps;
        }
      }
      // At most one computation per node, and none on the second pass; a renumbering in the
      // cycle (at most one: a cycle adds at most a state per node) voids what came before it.
      const bool renumbered = memo.renumberings() != renumbered_before;
      ASSERT_LE(memo.renumberings() - renumbered_before, 1);
      ASSERT_LE(computed, static_cast<size_t>(st.num_nodes()) * (renumbered ? 2 : 1));
      most_computed = std::max(most_computed, computed);
      // A pod other than the cycle's is computed every time, never served from the memo.
      int other_calls = 0;
      memo.Get(st, 0, Cpu(1), [&] { return static_cast<int64_t>(++other_calls); });
      memo.Get(st, 0, Cpu(1), [&] { return static_cast<int64_t>(++other_calls); });
      ASSERT_EQ(other_calls, 2);
    }
  });
  EXPECT_GT(most_computed, 0u);
  // The walk sees more than the 2 x 8 + 4 distinct states kept at once, so the ids were
  // renumbered along the way (and the checks above held across it).
  EXPECT_GE(memo.renumberings(), 10);
  EXPECT_LE(memo.num_states(), 2u * 8 + 4);
}

// Scores are kept for a bounded number of pod shapes (the service sees whatever its users
// submit), and stay right when older shapes' rows are dropped.
TEST(StateScoreMemoTest, KeepsABoundedNumberOfShapes) {
  auto s = ClusterState::Create(RepeatedNodes(4));
  ASSERT_TRUE(s.ok()) << s.status();
  internal::StateScoreMemo memo;
  const size_t shapes = 3 * internal::StateScoreMemo::kMaxShapes;
  for (size_t i = 0; i < shapes; ++i) {
    const PodShape pod = Cpu(static_cast<int64_t>(i + 1));
    memo.StartCycle(*s, pod, 1);
    for (int n = 0; n < s->num_nodes(); ++n) {
      const int64_t want = pod.cpu_milli * 10 + n % 2;
      ASSERT_EQ(memo.Get(*s, n, pod, [&] { return want; }), want);
    }
    ASSERT_LE(memo.num_shapes(), internal::StateScoreMemo::kMaxShapes);
  }
  // The first shape's row was dropped: its score is computed again, not served stale.
  const PodShape first = Cpu(1);
  memo.StartCycle(*s, first, 1);
  int computed = 0;
  memo.Get(*s, 0, first, [&] { return int64_t{++computed}; });
  EXPECT_EQ(computed, 1);
}

// Nodes in one state share one computation.
TEST(StateScoreMemoTest, NodesInTheSameStateShareOneComputation) {
  auto s = ClusterState::Create({{"a", 32000, 262144, 4, "A", 0, 0},
                                 {"b", 32000, 262144, 4, "A", 0, 0},
                                 {"c", 32000, 262144, 4, "A", 0, 0},
                                 {"d", 16000, 262144, 4, "A", 0, 0}});
  ASSERT_TRUE(s.ok()) << s.status();
  internal::StateScoreMemo memo;
  const PodShape pod = Share(500);
  int computed = 0;
  auto score_all = [&] {
    memo.StartCycle(*s, pod, 1);
    for (int n = 0; n < 4; ++n) memo.Get(*s, n, pod, [&] { return int64_t{++computed}; });
  };
  score_all();
  EXPECT_EQ(computed, 2);  // a, b, c share a state; d has less CPU
  Placement p;
  p.node = 1;
  p.gpus[p.num_gpus++] = 3;
  ASSERT_TRUE(s->Allocate(pod, p).ok());
  score_all();
  EXPECT_EQ(computed, 3);  // b is in a new state; the others are remembered
  Placement q = p;
  q.node = 2;
  q.gpus[0] = 0;  // another GPU, the same multiset of GPU lefts as b
  ASSERT_TRUE(s->Allocate(pod, q).ok());
  score_all();
  EXPECT_EQ(computed, 3);
}

TEST_F(PolicyTest, FgdSharingPodKeepsWholeGpusFree) {
  // Target: whole-GPU tasks only. A GPU with 700 left is already fragment; putting a 300 pod on it
  // cuts the fragment to 400 (dF = +300, score 57); on a free GPU it adds 700 (score 33).
  RunPlacementCases("fgd", OneNode(),
                    {{"used GPU first", {{0, Share(300), {0}}}, Share(300), 0, {0}}},
                    Context({Target(1000, 1, 1000, 1.0)}));
  RunPlacementCases(
      "fgd", MixedNodes(),
      {{"node whose used GPU the pod fills", {{1, Share(300), {0}}}, Share(300), 1, {0}}},
      Context({Target(1000, 1, 1000, 1.0)}));
}

TEST_F(PolicyTest, FgdAvoidsStrandingGpuBelowTypicalSize) {
  // Target: 600-milli tasks. The 700 GPU still serves one; putting a 300 pod on it leaves 400,
  // too small (dF = -400, score 40); a free GPU keeps 700 usable (dF = 0, score 50). Best fit
  // would take the 700 GPU.
  RunPlacementCases("fgd", OneNode(),
                    {{"free GPU instead", {{0, Share(300), {0}}}, Share(300), 0, {1}}},
                    Context({Target(1000, 1, 600, 1.0)}));
  RunPlacementCases("bestfit", OneNode(),
                    {{"best fit differs", {{0, Share(300), {0}}}, Share(300), 0, {0}}});
}

TEST_F(PolicyTest, FgdWholeGpuPodTakesLowestFreeGpus) {
  RunPlacementCases("fgd", OneNode(),
                    {{"two whole GPUs", {{0, Share(300), {0}}}, Whole(2), 0, {1, 2}}});
}

TEST_F(PolicyTest, FgdWithoutOracleWorkloadIsAnError) {
  auto p = Registry::Builtins().Create("fgd", PolicyContext{});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- random ------------------------------------------------------------------------------------

std::vector<std::pair<int, std::vector<int>>> RandomRun(uint64_t seed, int pods) {
  // n0 4xA; n1 2xB full; n2 CPU only; n3 8xA. A-only sharing pods fit on n0 and n3.
  auto s = ClusterState::Create({{"n0", 64000, 1 << 20, 4, "A", 0, 0},
                                 {"n1", 64000, 1 << 20, 2, "B", 0, 0},
                                 {"n2", 64000, 1 << 20, 0, "", 0, 0},
                                 {"n3", 64000, 1 << 20, 8, "A", 0, 0}});
  EXPECT_TRUE(s.ok());
  Placement full;
  full.node = 1;
  full.num_gpus = 2;
  full.gpus[0] = 0;
  full.gpus[1] = 1;
  EXPECT_TRUE(s->Allocate(Whole(2), full).ok());
  auto profile = Registry::Builtins().Create("random", PolicyContext{});
  EXPECT_TRUE(profile.ok());
  FrameworkOptions o;
  o.seed = seed;
  Framework fw(*std::move(profile), std::move(o));
  std::vector<std::pair<int, std::vector<int>>> out;
  const PodShape pod = Share(100, 1000, s->ModelMask("A"));
  for (int i = 0; i < pods; ++i) {
    Outcome r = fw.Schedule(pod, *s);
    EXPECT_TRUE(r.ok()) << r.reason;
    out.emplace_back(r.placement.node,
                     std::vector<int>(r.placement.gpu_ids().begin(), r.placement.gpu_ids().end()));
  }
  return out;
}

TEST_F(PolicyTest, RandomPicksOnlyFeasibleNodes) {
  const auto run = RandomRun(7, 40);
  std::map<int, int> per_node;
  for (const auto& [node, gpus] : run) {
    EXPECT_TRUE(node == 0 || node == 3) << node;
    ASSERT_EQ(gpus.size(), 1u);
    EXPECT_LT(gpus[0], node == 0 ? 4 : 8);
    ++per_node[node];
  }
  // With a pinned seed the draw is fixed; it does spread over both feasible nodes.
  EXPECT_EQ(per_node.size(), 2u);
}

TEST_F(PolicyTest, RandomIsDeterministicPerSeed) {
  EXPECT_EQ(RandomRun(7, 20), RandomRun(7, 20));
  EXPECT_EQ(RandomRun(8, 20), RandomRun(8, 20));
  EXPECT_NE(RandomRun(7, 20), RandomRun(8, 20));
}

TEST_F(PolicyTest, RandomWholeGpuPodTakesLowestFreeGpus) {
  auto fw = Policy("random");
  ASSERT_NE(fw, nullptr);
  ClusterState s = Cluster(OneNode(), {{0, Share(300), {0}}});
  Outcome out = fw->Schedule(Whole(2), s);
  ASSERT_TRUE(out.ok()) << out.reason;
  EXPECT_EQ(Gpus(out.placement), (std::vector<int>{1, 2}));
}

// ---- cas ---------------------------------------------------------------------------------------

TEST_F(PolicyTest, CasRejectsUnknownOrMalformedOptions) {
  struct Case {
    std::string name;
    std::map<std::string, std::string> params;
    absl::StatusCode want;
  };
  const std::vector<Case> cases = {
      {"unknown option", {{"nope", "1"}}, absl::StatusCode::kInvalidArgument},
      {"not a number", {{"coverage_pct", "lots"}}, absl::StatusCode::kInvalidArgument},
      {"known options", {{"coverage_pct", "90"}, {"gpu_choice", "2"}}, absl::StatusCode::kOk},
      {"choice out of range", {{"cpu_pods", "3"}}, absl::StatusCode::kInvalidArgument},
      {"coverage out of range", {{"coverage_pct", "150"}}, absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PolicyContext ctx;
    ctx.params = c.params;
    EXPECT_EQ(Registry::Builtins().Create("cas", ctx).status().code(), c.want);
  }
}

// --policy-opt values are checked strictly: the message names the option, the accepted range and
// the value, and the code is kInvalidArgument (exit 2 in the CLI).
TEST_F(PolicyTest, CasOptionErrorsNameTheOptionTheRangeAndTheValue) {
  struct Case {
    std::string key, value;
    std::vector<std::string> want;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {"sigmoid_scale", "0", {"--policy-opt sigmoid_scale", "> 0", "'0'"}},
      {"sigmoid_scale", "-3", {"sigmoid_scale", "> 0", "'-3'"}},
      {"sigmoid_scale", "nan", {"sigmoid_scale", "finite number", "'nan'"}},
      {"sigmoid_scale", "inf", {"sigmoid_scale", "finite number", "'inf'"}},
      {"sigmoid_scale", "-inf", {"sigmoid_scale", "finite number", "'-inf'"}},
      {"sigmoid_scale", "1e400", {"sigmoid_scale", "finite number", "'1e400'"}},
      {"sigmoid_scale", "3000x", {"sigmoid_scale", "'3000x'"}},
      {"sigmoid_scale", "", {"sigmoid_scale", "''"}},
      {"sigmoid_scale", " 3000", {"sigmoid_scale", "' 3000'"}},
      {"sigmoid_scale", "0x10", {"sigmoid_scale", "'0x10'"}},
      {"delta_quantum", "0", {"delta_quantum", "> 0"}},
      {"min_rebuild_arrivals", "0", {"min_rebuild_arrivals", "> 0"}},
      {"cpu_headroom_ratio", "0", {"cpu_headroom_ratio", "> 0"}},
      {"rebuild_fraction", "-0.1", {"rebuild_fraction", ">= 0", "'-0.1'"}},
      {"coverage_pct", "0", {"coverage_pct", "(0, 100]", "'0'"}},
      {"coverage_pct", "150", {"coverage_pct", "(0, 100]", "'150'"}},
      {"cpu_pods", "3", {"cpu_pods", "[0, 2]", "'3'"}},
      {"cpu_pods", "1.5", {"cpu_pods", "[0, 2]", "'1.5'"}},
      {"raw_delta", "-1", {"raw_delta", "[0, 1]", "'-1'"}},
      {"gpu_choice", "99999999999999999999999", {"gpu_choice", "[0, 2]"}},
      {"balance_gpu_pods", "two", {"balance_gpu_pods", "[0, 2]", "'two'"}},
      {"ties", "2", {"ties", "[0, 1]", "'2'"}},
      {"tie_tolerance", "-0.5", {"tie_tolerance", "[0, 100]", "'-0.5'"}},
      {"tie_tolerance", "101", {"tie_tolerance", "[0, 100]", "'101'"}},
      {"reserve_slots", "yes", {"reserve_slots", "[0, 1]", "'yes'"}},
      {"sigmoid_scal",
       "3000",
       {"unknown cas option 'sigmoid_scal'", "did you mean 'sigmoid_scale'"}},
      {"nope\x1b[2J", "1", {"unknown cas option 'nope\\x1B[2J'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key + "=" + c.value);
    PolicyContext ctx;
    ctx.params = {{c.key, c.value}};
    absl::Status st = Registry::Builtins().Create("cas", ctx).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    for (const std::string& w : c.want) EXPECT_THAT(std::string(st.message()), HasSubstr(w));
    EXPECT_THAT(std::string(st.message()), Not(HasSubstr("\x1b")));
  }
  // Edge values inside the ranges are accepted.
  PolicyContext ok;
  ok.params = {{"coverage_pct", "100"}, {"rebuild_fraction", "0"}, {"sigmoid_scale", "1e-9"},
               {"cpu_pods", "0"},       {"raw_delta", "1"},        {"ties", "0"},
               {"tie_tolerance", "0"},  {"reserve_slots", "0"}};
  EXPECT_TRUE(Registry::Builtins().Create("cas", ok).ok());
}

// The reference policies take no options: cas's are accepted (a multi-policy run hands the same
// options to each) but still checked; anything else is an error naming the key.
TEST_F(PolicyTest, ReferencePoliciesRefuseUnknownOptionsAndCheckCasOnes) {
  for (const std::string& name : ReferencePolicyNames()) {
    SCOPED_TRACE(name);
    PolicyContext ctx = Context();
    ctx.params = {{"nope", "1"}};
    absl::Status st = Registry::Builtins().Create(name, ctx).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), HasSubstr("--policy-opt nope"));
    EXPECT_THAT(std::string(st.message()), HasSubstr(name + " takes no options"));
    ctx.params = {{"sigmoid_scale", "2000"}};
    EXPECT_TRUE(Registry::Builtins().Create(name, ctx).ok());
    ctx.params = {{"sigmoid_scale", "nan"}};
    st = Registry::Builtins().Create(name, ctx).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), HasSubstr("sigmoid_scale"));
  }
}

TEST_F(PolicyTest, CasWithoutHistoryBalancesCpu) {
  // No oracle (cas must not need one) and no arrivals: every gradient is 0, so CPU balance
  // decides. With no GPU pods seen yet the CPU a GPU needs is taken as 0, so a GPU pod goes
  // where the least CPU is left after it (n2: 16 cores), a sharing pod to the GPU with the least
  // room there, and a CPU-only pod to the node with the most CPU to spare (n1: 64 cores).
  PolicyContext no_oracle;
  RunPlacementCases("cas", MixedNodes(),
                    {
                        {"whole-GPU pod to the node with least CPU left", {}, Whole(1), 2, {0}},
                        {"sharing pod to the used GPU", {{2, Share(600), {1}}}, Share(300), 2, {1}},
                        {"cpu pod to the node with most CPU", {}, Cpu(1000), 1, {}},
                    },
                    no_oracle);
  // With CPU balance off, the node order decides (index order here).
  PolicyContext order_only;
  order_only.params = {{"balance_gpu_pods", "0"}};
  RunPlacementCases(
      "cas", MixedNodes(),
      {
          {"whole-GPU pod to the first node", {}, Whole(1), 0, {0}},
          {"sharing pod to the GPU with least room", {{0, Share(600), {2}}}, Share(300), 0, {2}},
      },
      order_only);
}

// Under an autoscaler (PolicyContext::elastic) cas does not spread for CPU balance: the node
// order decides among equal primaries, unless an explicit option asks for the balance.
TEST_F(PolicyTest, CasPacksInNodeOrderInAnElasticCluster) {
  PolicyContext elastic;
  elastic.elastic = true;
  RunPlacementCases("cas", MixedNodes(),
                    {{"whole-GPU pod to the first node", {}, Whole(1), 0, {0}},
                     {"cpu pod to the first node", {}, Cpu(1000), 0, {}}},
                    elastic);
  elastic.params = {{"balance_gpu_pods", "2"}};
  RunPlacementCases("cas", MixedNodes(),
                    {{"balanced again: the node with least CPU left", {}, Whole(1), 2, {0}}},
                    elastic);
}

// ---- kube-scheduler's scoring: NodeResourcesFit (LeastAllocated or MostAllocated, CPU and
// memory weight 1) + NodeResourcesBalancedAllocation, each plugin weight 1; GPUs not scored.

PodShape Sized(int64_t cpu_milli, int64_t memory_mib, int32_t num_gpu = 0) {
  PodShape p = num_gpu > 0 ? Whole(num_gpu, cpu_milli) : Cpu(cpu_milli);
  p.memory_mib = memory_mib;
  return p;
}

TEST_F(PolicyTest, KubeSchedulerScoringSpreadsOrPacksByCpuAndMemoryOnly) {
  // 8 cores and 64 GiB. LeastAllocated (fit + balanced): n0 75+100, n1 87+100, n2 50+100,
  // n3 (75+50)/2=62 + 87 (CPU 0.25 and memory 0.5 used: sd 0.125). MostAllocated: n0 25+100,
  // n1 12+100, n2 50+100, n3 37+87.
  const PodShape pod = Sized(8'000, 65'536);
  RunPlacementCases("least-allocated", MixedNodes(), {{"the emptiest node", {}, pod, 1, {}}});
  RunPlacementCases("most-allocated", MixedNodes(), {{"the fullest node", {}, pod, 2, {}}});
  // GPUs are not scored: of two like nodes, n1 has 3 of its 4 GPUs taken (by a pod asking no
  // CPU or memory); to kube-scheduler's scoring both look alike and the first wins, where
  // bestfit, which scores GPUs, fills n1.
  const std::vector<NodeSpec> twins = {{"n0", 32000, 262144, 4, "A", 0, 0},
                                       {"n1", 32000, 262144, 4, "A", 0, 0}};
  const std::vector<Alloc> busy = {{1, Whole(3, 0), {0, 1, 2}}};
  const PodShape gpu_pod = Sized(8'000, 65'536, 1);
  for (const char* policy : {"least-allocated", "most-allocated"}) {
    RunPlacementCases(policy, twins, {{"GPU pod, GPUs not counted", busy, gpu_pod, 0, {0}}});
  }
  RunPlacementCases("bestfit", twins,
                    {{"GPU pod, the node with fewer GPUs left", busy, gpu_pod, 1, {3}}});
}

TEST_F(PolicyTest, KubeSchedulerScoringBalancesCpuAgainstMemory) {
  // Two nodes alike but for what is used: n0 has 16 cores taken, n1 64 GiB. A pod of 8 cores
  // and no memory (scored as 200 MiB, kube-scheduler's non-zero default) keeps n1 balanced
  // (CPU 0.25, memory 0.25) and unbalances n0 (CPU 0.75, memory 0): both strategies pick n1.
  const std::vector<NodeSpec> nodes = {{"n0", 32000, 262144, 0, "", 0, 0},
                                       {"n1", 32000, 262144, 0, "", 0, 0}};
  const std::vector<Alloc> used = {{0, Sized(16'000, 0), {}}, {1, Sized(0, 65'536), {}}};
  for (const char* policy : {"least-allocated", "most-allocated"}) {
    RunPlacementCases(policy, nodes, {{"the balanced node", used, Sized(8'000, 0), 1, {}}});
  }
}

// Once a GPU pod bound to a model has arrived, GPU pods that accept any model are no longer
// balanced: the node order decides among equal primaries (bound_aware, docs/cas.md); pods bound
// to a model are still balanced, and bound_aware=0 balances every GPU pod as before.
TEST_F(PolicyTest, CasStopsBalancingUnboundGpuPodsOnceBoundOnesArrive) {
  // Before the first rebuild every primary is 0, so the secondary or the node order decides.
  auto place = [&](const std::map<std::string, std::string>& params, bool bound_seen,
                   const std::string& pod_model, int64_t n1_cpu_used) {
    PolicyContext ctx;
    ctx.params = params;
    auto profile = Registry::Builtins().Create("cas", ctx);
    EXPECT_TRUE(profile.ok()) << profile.status();
    Framework fw(*std::move(profile), FrameworkOptions{});
    ClusterState s = Cluster(MixedNodes(), {});
    if (n1_cpu_used > 0) {
      EXPECT_TRUE(s.Allocate(Cpu(n1_cpu_used), Placement{.node = 1}).ok());
    }
    PodShape bound = Whole(1);
    bound.gpu_model_mask = s.ModelMask("B");
    EXPECT_NE(bound.gpu_model_mask, 0u);
    fw.NotifyArrival(bound_seen ? bound : Whole(1));  // CPU per GPU learned: 1 milli per milli
    PodShape pod = Whole(1);
    pod.gpu_model_mask = pod_model.empty() ? 0 : s.ModelMask(pod_model);
    Outcome out = fw.Schedule(pod, s);
    EXPECT_TRUE(out.ok()) << out.reason;
    return out.placement.node;
  };
  // Unbound: balanced (least CPU left after it: n2) until a bound pod is seen, then node order.
  EXPECT_EQ(place({}, false, "", 0), 2);
  EXPECT_EQ(place({}, true, "", 0), 0);
  EXPECT_EQ(place({{"bound_aware", "0"}}, true, "", 0), 2);
  // Bound to A (n0, n1), with 50 of n1's 64 cores in use: the balance prefers n1 (14 - 1 - 7 =
  // 6 cores of surplus) to n0 (32 - 1 - 3 = 28), against the node order; it still applies.
  EXPECT_EQ(place({}, true, "A", 50000), 1);
  EXPECT_EQ(place({{"balance_gpu_pods", "0"}}, true, "A", 50000), 0);
}

// With ties=1 near-equal gradients tie: within tie_tolerance points of the best, the balance,
// then the node order, decide. Among tied nodes, one where the pod would take one of the last
// k-GPU slots that the learned k-GPU pods need is ranked last (reserve_slots=1).
TEST_F(PolicyTest, CasTiesWithinTheToleranceAndKeepsScarceSlots) {
  // n0: 2 GPUs, n1: 8 GPUs, both empty; n1 first in node order. The learned workload is 8-GPU
  // pods only, so n1's one 8-GPU slot is scarce (10 free GPUs x 100% / 8 = 1.25 slots needed).
  const std::vector<NodeSpec> nodes = {{"n0", 64000, 262144, 2, "A", 0, 0},
                                       {"n1", 64000, 262144, 8, "A", 0, 0}};
  auto place = [&](const std::map<std::string, std::string>& params) {
    PolicyContext ctx;
    ctx.params = params;
    ctx.params["min_rebuild_arrivals"] = "1";
    ctx.params["balance_gpu_pods"] = "0";
    auto profile = Registry::Builtins().Create("cas", ctx);
    EXPECT_TRUE(profile.ok()) << profile.status();
    FrameworkOptions o;
    o.node_order = {1, 0};
    Framework fw(*std::move(profile), std::move(o));
    ClusterState s = Cluster(nodes, {});
    for (int i = 0; i < 4; ++i) fw.NotifyArrival(Whole(8));
    Outcome out = fw.Schedule(Whole(1), s);
    EXPECT_TRUE(out.ok()) << out.reason;
    return out.placement.node;
  };
  // One GPU of n1 breaks its 8-GPU slot; n0 can never hold an 8-GPU pod. The gradients are far
  // apart: n0 wins with buckets (the default) and with the tolerance of 0.5 point.
  EXPECT_EQ(place({}), 0);
  EXPECT_EQ(place({{"ties", "1"}}), 0);
  // Everything within 100 points ties: the node order decides, unless the scarce slot is kept.
  EXPECT_EQ(place({{"ties", "1"}, {"tie_tolerance", "100"}}), 1);
  EXPECT_EQ(place({{"ties", "1"}, {"tie_tolerance", "100"}, {"reserve_slots", "1"}}), 0);
}

TEST_F(PolicyTest, CasEpochMovesAfterArrivals) {
  PolicyContext ctx;
  ctx.params = {{"min_rebuild_arrivals", "16"}, {"rebuild_fraction", "0.05"}};
  auto profile = Registry::Builtins().Create("cas", ctx);
  ASSERT_TRUE(profile.ok()) << profile.status();
  std::shared_ptr<ScorePlugin> plugin = profile->scores.at(0).plugin;
  ASSERT_TRUE(plugin->Cacheable());
  Framework fw(*std::move(profile), FrameworkOptions{});
  const uint64_t start = plugin->Epoch();
  for (int i = 0; i < 15; ++i) fw.NotifyArrival(Share(300));
  EXPECT_EQ(plugin->Epoch(), start);  // rebuilds after 16 arrivals
  fw.NotifyArrival(Share(300));
  EXPECT_GT(plugin->Epoch(), start);
}

// Relearning is skipped while the learned workload stays within min_drift of the one in use and
// it was learned from at least half the pods seen; it happens once the workload moves further.
// The same share of 300 milli-GPU 16 times: relearnt only when the pods seen double (1, 2, 4, 8,
// 16). Then 4 shares of 700: the second moves the workload by 2/18 = 0.11, over the 0.06 the
// default derives, not over 0.5.
TEST_F(PolicyTest, CasRelearnsOnlyWhenTheWorkloadHasMoved) {
  for (const std::string drift : {"", "0", "0.5"}) {
    SCOPED_TRACE("min_drift=" + drift);
    PolicyContext ctx;
    ctx.params = {{"min_rebuild_arrivals", "1"}, {"rebuild_fraction", "0"}};
    if (!drift.empty()) ctx.params["min_drift"] = drift;
    auto profile = Registry::Builtins().Create("cas", ctx);
    ASSERT_TRUE(profile.ok()) << profile.status();
    std::shared_ptr<ScorePlugin> plugin = profile->scores.at(0).plugin;
    Framework fw(*std::move(profile), FrameworkOptions{});
    std::vector<int> relearnt_at;
    auto arrive = [&](int n, const PodShape& pod) {
      const uint64_t before = plugin->Epoch();
      fw.NotifyArrival(pod);
      if (plugin->Epoch() != before) relearnt_at.push_back(n);
    };
    for (int n = 1; n <= 16; ++n) arrive(n, Share(300));
    std::vector<int> want = {1, 2, 4, 8, 16};
    if (drift == "0") {
      want.clear();
      for (int n = 1; n <= 16; ++n) want.push_back(n);
    }
    EXPECT_EQ(relearnt_at, want);
    relearnt_at.clear();
    for (int n = 17; n <= 20; ++n) arrive(n, Share(700));
    if (drift == "0") {
      EXPECT_EQ(relearnt_at, (std::vector<int>{17, 18, 19, 20}));
    } else if (drift == "0.5") {
      EXPECT_TRUE(relearnt_at.empty());
    } else {
      ASSERT_FALSE(relearnt_at.empty());
      EXPECT_EQ(relearnt_at.front(), 18);
    }
  }
}

TEST_F(PolicyTest, CasRejectsDriftOutsideZeroToOne) {
  for (const std::string value : {"-0.1", "1.5", "nan"}) {
    SCOPED_TRACE(value);
    PolicyContext ctx;
    ctx.params = {{"min_drift", value}};
    EXPECT_EQ(Registry::Builtins().Create("cas", ctx).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// Scales must be positive finite numbers: a zero or NaN scale would make the score undefined.
TEST_F(PolicyTest, CasRejectsNonPositiveOrNanScales) {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"delta_quantum", "0"},
                                                        {"delta_quantum", "-1"},
                                                        {"delta_quantum", "nan"},
                                                        {"sigmoid_scale", "0"}}) {
    SCOPED_TRACE(key + "=" + value);
    PolicyContext ctx;
    ctx.params = {{key, value}};
    EXPECT_EQ(Registry::Builtins().Create("cas", ctx).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST_F(PolicyTest, CasEpochMovesOnEveryArrivalWhenAskedTo) {
  PolicyContext ctx;
  ctx.params = {{"min_rebuild_arrivals", "1"}, {"min_drift", "0"}};
  auto profile = Registry::Builtins().Create("cas", ctx);
  ASSERT_TRUE(profile.ok()) << profile.status();
  std::shared_ptr<ScorePlugin> plugin = profile->scores.at(0).plugin;
  Framework fw(*std::move(profile), FrameworkOptions{});
  uint64_t last = plugin->Epoch();
  for (int i = 0; i < 5; ++i) {
    fw.NotifyArrival(Whole(1));
    EXPECT_GT(plugin->Epoch(), last);
    last = plugin->Epoch();
  }
}

TEST_F(PolicyTest, CasLearnsTargetWorkloadFromArrivals) {
  // The same decision as the two fgd tests above, with the workload learnt instead of given.
  struct Case {
    std::string name;
    PodShape seen;
    std::vector<int> want_gpus;
  };
  const std::vector<Case> cases = {
      {"whole-GPU history fills the used GPU", Whole(1), {0}},
      {"600-milli history keeps the used GPU usable", Share(600), {1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto profile = Registry::Builtins().Create("cas", PolicyContext{});
    ASSERT_TRUE(profile.ok()) << profile.status();
    Framework fw(*std::move(profile), FrameworkOptions{});
    for (int i = 0; i < 16; ++i) fw.NotifyArrival(c.seen);
    ClusterState s = Cluster(OneNode(), {{0, Share(300), {0}}});
    Outcome out = fw.Schedule(Share(300), s);
    ASSERT_TRUE(out.ok()) << out.reason;
    EXPECT_EQ(Gpus(out.placement), c.want_gpus);
  }
}

// The score cache must not see cas's learned CPU per GPU go stale (issue 11): it moves on every
// GPU-pod arrival without a rebuild. n0 (64 cores) and n1 (16 cores), 8 GPUs each; no workload
// learnt yet, so every gradient ties and CPU balance decides. After one 1-core GPU pod the ratio
// is 1 core per GPU and the pod goes to n1 (least surplus); one 15-core GPU pod later it is 8, so
// the next pod belongs on n0 (surplus 7 cores against n1's -34): a score of n0 cached at ratio 1
// (surplus 56 cores) would send it to n1 again.
TEST_F(PolicyTest, CasDecisionsDoNotDependOnTheScoreCacheWhenTheLearnedCpuPerGpuMoves) {
  const std::vector<NodeSpec> nodes = {{"n0", 64000, 524288, 8, "A", 0, 0},
                                       {"n1", 16000, 524288, 8, "A", 0, 0}};
  for (bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "cache on" : "cache off");
    PolicyContext ctx;
    ctx.params = {{"min_rebuild_arrivals", "1000"}, {"balance_gpu_pods", "2"}};
    auto profile = Registry::Builtins().Create("cas", ctx);
    ASSERT_TRUE(profile.ok()) << profile.status();
    FrameworkOptions o;
    o.score_cache = cache;
    Framework fw(*std::move(profile), std::move(o));
    ClusterState s = Cluster(nodes, {});
    fw.NotifyArrival(Whole(1, 1000));
    Outcome first = fw.Schedule(Whole(1, 1000), s);
    ASSERT_TRUE(first.ok()) << first.reason;
    EXPECT_EQ(first.placement.node, 1);
    fw.NotifyArrival(Whole(1, 15000));
    Outcome second = fw.Schedule(Whole(1, 1000), s);
    ASSERT_TRUE(second.ok()) << second.reason;
    EXPECT_EQ(second.placement.node, 0);
  }
}

// Every built-in policy makes the same decisions with the score cache on and off on a mixed
// stream with departures (the data-driven score_cache_test does this on the public trace).
TEST_F(PolicyTest, EveryPolicyDecidesTheSameWithTheScoreCacheOff) {
  for (const std::string& name : Registry::Builtins().Names()) {
    SCOPED_TRACE(name);
    std::vector<std::vector<int>> decisions[2];
    for (int cache = 0; cache < 2; ++cache) {
      auto profile = Registry::Builtins().Create(name, Context());
      ASSERT_TRUE(profile.ok()) << profile.status();
      FrameworkOptions o;
      o.score_cache = cache == 1;
      Framework fw(*std::move(profile), std::move(o));
      ClusterState s = Cluster(MixedNodes(), {});
      const PodShape shapes[] = {Share(300, 2000), Whole(1, 6000), Share(700),
                                 Whole(2, 500),    Cpu(3000),      Share(450, 9000)};
      std::vector<std::pair<PodShape, Placement>> live;
      for (int i = 0; i < 300; ++i) {
        const PodShape& pod = shapes[(i * 7) % 6];
        fw.NotifyArrival(pod);
        Outcome out = fw.Schedule(pod, s);
        ASSERT_NE(out.code, Code::kError) << out.reason;
        std::vector<int> d = {static_cast<int>(out.code), out.placement.node};
        for (int g : Gpus(out.placement)) d.push_back(g);
        decisions[cache].push_back(std::move(d));
        if (out.ok()) live.emplace_back(pod, out.placement);
        if (i % 3 == 2 && !live.empty()) {  // a departure every third pod, oldest first
          fw.Release(live.front().first, live.front().second, s);
          live.erase(live.begin());
        }
      }
    }
    EXPECT_EQ(decisions[0], decisions[1]);
  }
}

// ---- every policy ------------------------------------------------------------------------------

TEST_F(PolicyTest, EveryPolicyRespectsModelsAndCapacity) {
  // A B-only sharing pod can only go to n2; a pod too big for any node is unschedulable.
  for (const std::string& name : Registry::Builtins().Names()) {
    SCOPED_TRACE(name);
    auto fw = Policy(name);
    ASSERT_NE(fw, nullptr);
    ClusterState s = Cluster(MixedNodes(), {});
    Outcome out = fw->Schedule(Share(500, 1000, s.ModelMask("B")), s);
    ASSERT_TRUE(out.ok()) << out.reason;
    EXPECT_EQ(out.placement.node, 2);
    EXPECT_EQ(fw->Schedule(Whole(9), s).code, Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(fw->Schedule(Share(100, 1000, s.ModelMask("H100")), s).code,
              Code::kUnschedulableAndUnresolvable);
  }
}

TEST_F(PolicyTest, EveryPolicyFillsAndDrainsWithoutOverAllocation) {
  // Place until full, then release everything; the state must return to empty.
  for (const std::string& name : Registry::Builtins().Names()) {
    SCOPED_TRACE(name);
    auto fw = Policy(name);
    ASSERT_NE(fw, nullptr);
    ClusterState s = Cluster(MixedNodes(), {});
    const PodShape shapes[] = {Share(300), Whole(1), Share(700), Whole(2), Cpu(2000)};
    std::vector<std::pair<PodShape, Placement>> live;
    for (int i = 0; i < 200; ++i) {
      const PodShape& pod = shapes[i % 5];
      fw->NotifyArrival(pod);
      Outcome out = fw->Schedule(pod, s);
      ASSERT_NE(out.code, Code::kError) << out.reason;
      if (out.ok()) live.emplace_back(pod, out.placement);
    }
    EXPECT_GT(live.size(), 10u);
    EXPECT_LE(s.gpu_allocated_milli(), s.gpu_capacity_milli());
    for (const auto& [pod, p] : live) fw->Release(pod, p, s);
    EXPECT_EQ(s.gpu_allocated_milli(), 0);
    EXPECT_EQ(s.cpu_allocated_milli(), 0);
  }
}

}  // namespace
}  // namespace seedance::sched
