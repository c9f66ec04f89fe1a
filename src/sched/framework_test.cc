#include "seedance/sched/framework.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/registry.h"

namespace seedance::sched {
namespace {

using core::ClusterState;
using core::Placement;
using core::PodShape;

// ---- Fake plugins --------------------------------------------------------------------------

// Scores each node from a fixed table and counts the calls per node.
class TableScore : public ScorePlugin {
 public:
  explicit TableScore(std::vector<int64_t> table, bool cacheable = false)
      : table_(std::move(table)), calls_(table_.size(), 0), cacheable_(cacheable) {}
  std::string_view Name() const override { return "TableScore"; }
  void PreScore(CycleState& cycle, const ClusterState&) override {
    seen_feasible_.assign(cycle.feasible.begin(), cycle.feasible.end());
    seen_pod_ = cycle.pod;
  }
  int64_t Score(const CycleState&, const ClusterState&, int n) override {
    ++calls_[n];
    return table_[n];
  }
  bool Cacheable() const override { return cacheable_; }
  uint64_t Epoch() const override { return epoch_; }

  void set_table(std::vector<int64_t> t) { table_ = std::move(t); }
  void bump_epoch() { ++epoch_; }
  int calls(int n) const { return calls_[n]; }
  int total_calls() const {
    int t = 0;
    for (int c : calls_) t += c;
    return t;
  }
  const std::vector<int>& seen_feasible() const { return seen_feasible_; }
  const PodShape* seen_pod() const { return seen_pod_; }

 private:
  std::vector<int64_t> table_;
  std::vector<int> calls_;
  bool cacheable_;
  uint64_t epoch_ = 0;
  std::vector<int> seen_feasible_;
  const PodShape* seen_pod_ = nullptr;
};

// A TableScore with a normalisation that reverses the order (v -> 100 - v) and records what it
// was handed.
class ReversingScore : public TableScore {
 public:
  using TableScore::TableScore;
  bool HasNormalize() const override { return true; }
  void NormalizeScore(std::span<int64_t> scores) const override {
    received_.assign(scores.begin(), scores.end());
    for (int64_t& v : scores) v = kMaxNodeScore - v;
  }
  const std::vector<int64_t>& received() const { return received_; }

 private:
  mutable std::vector<int64_t> received_;
};

class RejectNodes : public FilterPlugin {
 public:
  explicit RejectNodes(std::set<int> rejected) : rejected_(std::move(rejected)) {}
  std::string_view Name() const override { return "RejectNodes"; }
  bool Filter(const CycleState&, const ClusterState&, int n) const override {
    return rejected_.count(n) == 0;
  }

 private:
  std::set<int> rejected_;
};

// Takes the lowest-indexed GPUs with room, or fails when told to; can also be told to pick a
// fixed (possibly bad) GPU list.
class FirstFitReserve : public ReservePlugin {
 public:
  std::string_view Name() const override { return "FirstFitReserve"; }
  bool Reserve(CycleState& cycle, const ClusterState& s, Placement* p) override {
    ++reserves;
    if (fail) return false;
    if (!forced.empty()) {
      p->num_gpus = 0;
      for (int g : forced) p->gpus[p->num_gpus++] = static_cast<int8_t>(g);
      return true;
    }
    auto gl = s.gpu_left(p->node);
    p->num_gpus = 0;
    for (int i = 0; i < static_cast<int>(gl.size()) && p->num_gpus < cycle.pod->num_gpu; ++i) {
      if (gl[i] >= cycle.pod->gpu_milli) p->gpus[p->num_gpus++] = static_cast<int8_t>(i);
    }
    return p->num_gpus == cycle.pod->num_gpu;
  }
  void Unreserve(CycleState&, const Placement&) override { ++unreserves; }

  bool fail = false;
  std::vector<int> forced;
  int reserves = 0;
  int unreserves = 0;
};

class CountingObserver : public ObserverPlugin {
 public:
  std::string_view Name() const override { return "CountingObserver"; }
  void OnArrival(const PodShape&) override { ++arrivals; }
  void OnBound(const PodShape&, const Placement& p, const ClusterState&) override {
    ++bound;
    last_bound = p;
  }
  void OnReleased(const PodShape&, const Placement&, const ClusterState& s) override {
    ++released;
    pods_after_release = s.num_pods(0) + s.num_pods(1) + s.num_pods(2);
  }
  int arrivals = 0, bound = 0, released = 0, pods_after_release = -1;
  Placement last_bound;
};

// ---- Fixture -------------------------------------------------------------------------------

class FrameworkTest : public ::testing::Test {
 protected:
  // Three identical nodes with 2 GPUs each.
  FrameworkTest()
      : state_(*ClusterState::Create({{"n0", 16000, 65536, 2, "A", 0, 0},
                                      {"n1", 16000, 65536, 2, "A", 0, 0},
                                      {"n2", 16000, 65536, 2, "A", 0, 0}})),
        reserve_(std::make_shared<FirstFitReserve>()) {}

  static PodShape Cpu(int64_t cpu_milli) {
    PodShape p;
    p.cpu_milli = cpu_milli;
    return p;
  }
  static PodShape Gpu(int32_t num_gpu, int32_t gpu_milli, int64_t cpu_milli = 1000) {
    PodShape p;
    p.cpu_milli = cpu_milli;
    p.num_gpu = num_gpu;
    p.gpu_milli = gpu_milli;
    return p;
  }

  Profile WithScores(std::vector<Profile::WeightedScore> scores) {
    Profile p;
    p.name = "test";
    p.scores = std::move(scores);
    p.reserve = reserve_;
    return p;
  }
  Framework Make(Profile p, std::vector<int> order = {}) {
    FrameworkOptions o;
    o.node_order = std::move(order);
    return Framework(std::move(p), std::move(o));
  }
  std::vector<uint32_t> Versions() const {
    return {state_.version(0), state_.version(1), state_.version(2)};
  }

  ClusterState state_;
  std::shared_ptr<FirstFitReserve> reserve_;
};

// ---- Invariants (docs/reliability.md#invariants): one death test per check -----------------

using FrameworkDeathTest = FrameworkTest;

// A reserve plugin that (wrongly) moves the pod to the next node before choosing GPUs there.
class MovingReserve : public FirstFitReserve {
 public:
  bool Reserve(CycleState& cycle, const ClusterState& s, Placement* p) override {
    p->node = (p->node + 1) % s.num_nodes();
    return FirstFitReserve::Reserve(cycle, s, p);
  }
};

TEST_F(FrameworkDeathTest, BindOnANodeThatWasNotChosenIsCaught) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{10, 30, 20}), 1}});
  p.reserve = std::make_shared<MovingReserve>();
  Framework fw = Make(std::move(p));
  EXPECT_DEATH(fw.Schedule(Gpu(1, 500), state_),
               "invariant violated.*reserve plugin 'FirstFitReserve' moved the pod from node 1 "
               "\\(filtered and scored\\) to node 2");
}

TEST_F(FrameworkDeathTest, NormalisedScoreOutOfRangeIsCaught) {
  // ReversingScore maps v to 100 - v: a raw 150 comes out as -50.
  Framework fw =
      Make(WithScores({{std::make_shared<ReversingScore>(std::vector<int64_t>{150, 0, 0}), 1}}));
  EXPECT_DEATH(fw.Schedule(Cpu(100), state_),
               "score plugin 'TableScore' normalised a score to -50, outside 0..100");
}

// An uncached scorer that promises scores below 5 (ScoreBound) but returns 7.
class OverBoundScore : public ScorePlugin {
 public:
  std::string_view Name() const override { return "OverBoundScore"; }
  int64_t Score(const CycleState&, const ClusterState&, int) override { return 7; }
  int64_t ScoreBound() const override { return 5; }
};

TEST_F(FrameworkDeathTest, ScoreBeyondItsDeclaredBoundIsCaught) {
  // With a cached scorer beside it, the bounded uncached one is scored only on the nodes that
  // can still win (node 2 here), and its score is checked against the bound there.
  auto cached = std::make_shared<TableScore>(std::vector<int64_t>{10, 20, 30}, true);
  Framework fw = Make(WithScores({{cached, 1}, {std::make_shared<OverBoundScore>(), 1}}));
  EXPECT_DEATH(fw.Schedule(Gpu(1, 500), state_),
               "invariant violated.*score plugin 'OverBoundScore' scored 7, outside its bound "
               "\\[0, 5\\)");
}

TEST_F(FrameworkDeathTest, ReleaseOfAPodClassNotBoundIsCaught) {
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{9, 0, 0}), 1}}));
  const Outcome out = fw.Schedule(Gpu(1, 1000), state_);
  ASSERT_TRUE(out.ok()) << out.reason;
  // Same GPU, same milli in total, but a GPU-sharing pod was never bound there.
  EXPECT_DEATH(fw.Release(Gpu(1, 500), out.placement, state_),
               "release of a pod that is not bound as given: n0: release of a GPU-sharing pod");
}

// Unreserve pairs with a successful Reserve: a CPU-only pod never reserved, so a failed bind
// (here a negative request, which every node "fits") must not unreserve.
TEST_F(FrameworkTest, UnreserveOnlyFollowsASuccessfulReserve) {
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}}));
  const Outcome out = fw.Schedule(Cpu(-5), state_);
  EXPECT_EQ(out.code, Code::kError);
  EXPECT_EQ(reserve_->reserves, 0);
  EXPECT_EQ(reserve_->unreserves, 0);
}

// ---- Selection -----------------------------------------------------------------------------

TEST_F(FrameworkTest, HighestTotalScoreWins) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{10, 30, 20});
  Framework fw = Make(WithScores({{score, 1}}));
  const PodShape pod = Cpu(1000);
  Outcome out = fw.Schedule(pod, state_);
  ASSERT_TRUE(out.ok()) << out.reason;
  EXPECT_EQ(out.placement.node, 1);
  EXPECT_EQ(out.placement.num_gpus, 0);
  EXPECT_EQ(state_.cpu_left(1), 15000);
  EXPECT_EQ(state_.num_pods(1), 1);
  EXPECT_EQ(score->seen_pod(), &pod);
}

TEST_F(FrameworkTest, TiesGoToFirstNodeInNodeOrder) {
  struct Case {
    std::string name;
    std::vector<int> order;
    std::vector<int64_t> table;
    std::set<int> rejected;
    int want;
  };
  const std::vector<Case> cases = {
      {"index order", {}, {5, 5, 5}, {}, 0},
      {"custom order", {2, 0, 1}, {5, 5, 5}, {}, 2},
      {"custom order, first filtered", {2, 0, 1}, {5, 5, 5}, {2}, 0},
      {"tie among the best only", {2, 0, 1}, {7, 7, 5}, {}, 0},
      {"custom order, unique best", {2, 0, 1}, {1, 9, 5}, {}, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Profile p = WithScores({{std::make_shared<TableScore>(c.table), 1}});
    p.filters.push_back(std::make_shared<RejectNodes>(c.rejected));
    Framework fw = Make(std::move(p), c.order);
    ClusterState s = state_;
    Outcome out = fw.Schedule(Cpu(100), s);
    ASSERT_TRUE(out.ok()) << out.reason;
    EXPECT_EQ(out.placement.node, c.want);
  }
}

TEST_F(FrameworkTest, FeasibleNodesReachPreScoreInIndexOrder) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{0, 0, 0});
  Profile p = WithScores({{score, 1}});
  p.filters.push_back(std::make_shared<RejectNodes>(std::set<int>{0}));
  Framework fw = Make(std::move(p), {2, 1, 0});
  ASSERT_TRUE(fw.Schedule(Cpu(100), state_).ok());
  EXPECT_EQ(score->seen_feasible(), (std::vector<int>{1, 2}));
  EXPECT_EQ(score->calls(0), 0);  // filtered nodes are not scored
}

TEST_F(FrameworkTest, WeightsMultiplyScores) {
  struct Case {
    std::string name;
    int64_t weight_b;
    int want;
  };
  // A: {10, 0, 0}, B: {0, 6, 0}. Totals {10, 6w, 0}.
  const std::vector<Case> cases = {
      {"B weight 1", 1, 0}, {"B weight 2", 2, 1}, {"B weight 0", 0, 0}, {"B weight -1", -1, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Framework fw = Make(
        WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{10, 0, 0}), 1},
                    {std::make_shared<TableScore>(std::vector<int64_t>{0, 6, 0}), c.weight_b}}));
    ClusterState s = state_;
    Outcome out = fw.Schedule(Cpu(100), s);
    ASSERT_TRUE(out.ok()) << out.reason;
    EXPECT_EQ(out.placement.node, c.want);
  }
}

TEST_F(FrameworkTest, NormalizeScoreRunsOnRawScoresBeforeWeighting) {
  // Raw {90, 20, 50} would pick n0; reversed {10, 80, 50} picks n1.
  auto reversing = std::make_shared<ReversingScore>(std::vector<int64_t>{90, 20, 50});
  // A second plugin adds {0, 0, 60}: the weighted reversed scores x3 = {30, 240, 150} still
  // pick n1; unweighted ones {10, 80, 50} would lose to n2 (110).
  auto other = std::make_shared<TableScore>(std::vector<int64_t>{0, 0, 60});
  Framework fw = Make(WithScores({{reversing, 3}, {other, 1}}));
  Outcome out = fw.Schedule(Cpu(100), state_);
  ASSERT_TRUE(out.ok()) << out.reason;
  EXPECT_EQ(out.placement.node, 1);
  EXPECT_EQ(reversing->received(), (std::vector<int64_t>{90, 20, 50}));
}

// A TableScore whose near-equal scores tie (ScorePlugin::TieTolerance), and a bounded one.
class TieTableScore : public TableScore {
 public:
  TieTableScore(std::vector<int64_t> table, bool cacheable, int64_t tolerance)
      : TableScore(std::move(table), cacheable), tolerance_(tolerance) {}
  int64_t TieTolerance() const override { return tolerance_; }

 private:
  int64_t tolerance_;
};
class BoundedTableScore : public TableScore {
 public:
  using TableScore::TableScore;
  int64_t ScoreBound() const override { return 10; }
};

// Every selection path raises the scores within the tolerance of the best to the best, before
// weighting: the tied nodes are then told apart by the other scorers, then the node order.
TEST_F(FrameworkTest, ScoresWithinTheTieToleranceOfTheBestTie) {
  enum Second { kNone, kBounded, kUnbounded, kCachedToo, kNormalizing };
  struct Case {
    std::string name;
    bool cached;
    int64_t tolerance;
    int64_t weight;
    Second second;
    std::vector<int> order;
    int want;
  };
  // Tie scorer {100, 98, 90}; the second scorer {0, 1, 9}: bounded below 10, unbounded, cached
  // too, or normalised from {100, 99, 91}. Without ties the totals are {100, 99, 99}.
  const std::vector<Case> cases = {
      {"one scorer, no tolerance", false, 0, 1, kNone, {1, 0, 2}, 0},
      {"one scorer, ties go to node order", false, 2, 1, kNone, {1, 0, 2}, 1},
      {"one cached scorer, ties go to node order", true, 2, 1, kNone, {1, 0, 2}, 1},
      {"outside the tolerance stays behind", true, 1, 1, kNone, {1, 0, 2}, 0},
      {"bounded second scorer, no tolerance", true, 0, 1, kBounded, {}, 0},
      {"bounded second scorer decides the tie", true, 2, 1, kBounded, {}, 1},
      {"weighted tie scorer, the tie still holds", true, 2, 5, kBounded, {}, 1},
      {"a wide tolerance takes in the third node", true, 10, 1, kBounded, {}, 2},
      {"negative weight: raised, then weighted", true, 2, -1, kBounded, {}, 2},
      {"uncached tie scorer, bounded second", false, 2, 1, kBounded, {}, 1},
      {"unbounded second scorer", true, 2, 1, kUnbounded, {}, 1},
      {"two cached scorers", true, 2, 1, kCachedToo, {}, 1},
      {"two cached scorers, no tolerance", true, 0, 1, kCachedToo, {}, 0},
      {"with a normalising scorer", true, 2, 1, kNormalizing, {}, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Profile::WeightedScore> scores = {
        {std::make_shared<TieTableScore>(std::vector<int64_t>{100, 98, 90}, c.cached, c.tolerance),
         c.weight}};
    const std::vector<int64_t> second = {0, 1, 9};
    if (c.second == kBounded) scores.push_back({std::make_shared<BoundedTableScore>(second), 1});
    if (c.second == kUnbounded) scores.push_back({std::make_shared<TableScore>(second), 1});
    if (c.second == kCachedToo) {
      scores.push_back({std::make_shared<TableScore>(second, true), 1});
    }
    if (c.second == kNormalizing) {
      // ReversingScore maps v to 100 - v.
      scores.push_back({std::make_shared<ReversingScore>(std::vector<int64_t>{100, 99, 91}), 1});
    }
    Framework fw = Make(WithScores(std::move(scores)), c.order);
    ClusterState s = state_;
    Outcome out = fw.Schedule(Cpu(100), s);
    ASSERT_TRUE(out.ok()) << out.reason;
    EXPECT_EQ(out.placement.node, c.want);
  }
}

// Rank reports the totals the selection ranked by: the raised scores.
TEST_F(FrameworkTest, RankReportsTheRaisedScores) {
  Framework fw = Make(
      WithScores({{std::make_shared<TieTableScore>(std::vector<int64_t>{100, 98, 90}, true, 2), 1},
                  {std::make_shared<BoundedTableScore>(std::vector<int64_t>{0, 1, 9}), 1}}));
  std::vector<std::pair<int, int64_t>> totals;
  EXPECT_EQ(fw.Rank(Cpu(100), state_, {0, 1, 2}, &totals), 1);
  EXPECT_EQ(totals, (std::vector<std::pair<int, int64_t>>{{0, 100}, {1, 101}, {2, 99}}));
}

// ---- Failures ------------------------------------------------------------------------------

TEST_F(FrameworkTest, AllNodesFilteredIsUnschedulableAndChangesNothing) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3});
  Profile p = WithScores({{score, 1}});
  p.filters.push_back(std::make_shared<RejectNodes>(std::set<int>{0, 1, 2}));
  auto observer = std::make_shared<CountingObserver>();
  p.observers.push_back(observer);
  Framework fw = Make(std::move(p));
  const auto versions = Versions();
  Outcome out = fw.Schedule(Gpu(1, 500), state_);
  EXPECT_EQ(out.code, Code::kUnschedulable);
  EXPECT_FALSE(out.ok());
  EXPECT_FALSE(out.reason.empty());
  EXPECT_EQ(Versions(), versions);
  EXPECT_EQ(state_.cpu_allocated_milli(), 0);
  EXPECT_EQ(state_.gpu_allocated_milli(), 0);
  EXPECT_EQ(score->total_calls(), 0);
  EXPECT_EQ(reserve_->reserves, 0);
  EXPECT_EQ(observer->bound, 0);
}

TEST_F(FrameworkTest, PodThatFitsNowhereIsUnschedulable) {
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}}));
  const auto versions = Versions();
  EXPECT_EQ(fw.Schedule(Gpu(3, 1000), state_).code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(fw.Schedule(Cpu(16001), state_).code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(Versions(), versions);
}

TEST_F(FrameworkTest, PodThatWouldFitAnEmptyNodeIsOnlyUnschedulable) {
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}}));
  // Fill every node's CPU, then ask for a little more CPU than is left anywhere.
  for (int n = 0; n < state_.num_nodes(); ++n) {
    Placement p;
    p.node = n;
    ASSERT_TRUE(state_.Allocate(Cpu(state_.cpu_left(n)), p).ok());
  }
  EXPECT_EQ(fw.Schedule(Cpu(1), state_).code, Code::kUnschedulable);
}

TEST_F(FrameworkTest, ReserveFailureIsErrorAndChangesNothing) {
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}}));
  reserve_->fail = true;
  const auto versions = Versions();
  Outcome out = fw.Schedule(Gpu(1, 500), state_);
  EXPECT_EQ(out.code, Code::kError);
  EXPECT_FALSE(out.reason.empty());
  EXPECT_EQ(reserve_->reserves, 1);
  EXPECT_EQ(Versions(), versions);
  EXPECT_EQ(state_.gpu_allocated_milli(), 0);
}

TEST_F(FrameworkTest, GpuPodWithoutReservePluginIsError) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}});
  p.reserve = nullptr;
  Framework fw = Make(std::move(p));
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  // A CPU-only pod needs no reserve.
  EXPECT_TRUE(fw.Schedule(Cpu(100), state_).ok());
}

TEST_F(FrameworkTest, InvalidReservationIsErrorAndIsUnreserved) {
  Placement full;
  full.node = 0;
  full.num_gpus = 1;
  full.gpus[0] = 0;
  ASSERT_TRUE(state_.Allocate(Gpu(1, 1000), full).ok());
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{9, 0, 0}), 1}}));
  reserve_->forced = {0};  // GPU 0 of n0 is full
  const auto versions = Versions();
  Outcome out = fw.Schedule(Gpu(1, 500), state_);
  EXPECT_EQ(out.code, Code::kError);
  EXPECT_EQ(reserve_->unreserves, 1);
  EXPECT_EQ(Versions(), versions);
}

// ---- Score cache ---------------------------------------------------------------------------

TEST_F(FrameworkTest, CacheableScoreIsReusedUntilNodeChanges) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{30, 20, 10}, true);
  Framework fw = Make(WithScores({{score, 1}}));
  ASSERT_EQ(fw.Schedule(Cpu(100), state_).placement.node, 0);
  EXPECT_EQ(score->total_calls(), 3);
  // Only n0 changed: it alone is scored again.
  ASSERT_EQ(fw.Schedule(Cpu(100), state_).placement.node, 0);
  EXPECT_EQ(score->calls(0), 2);
  EXPECT_EQ(score->calls(1), 1);
  EXPECT_EQ(score->calls(2), 1);
}

TEST_F(FrameworkTest, CacheableScoreIsNotRecomputedWhenNothingChanged) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{30, 20, 10}, true);
  Framework fw = Make(WithScores({{score, 1}}));
  reserve_->fail = true;  // every cycle ends before binding, so no node changes
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 3);
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 3);
  // A different request is a different cache entry.
  EXPECT_EQ(fw.Schedule(Gpu(1, 600), state_).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 6);
  EXPECT_EQ(fw.Schedule(Gpu(1, 500, 2000), state_).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 9);
}

TEST_F(FrameworkTest, CacheableScoreIsRecomputedAfterEpochChanges) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{30, 20, 10}, true);
  Framework fw = Make(WithScores({{score, 1}}));
  reserve_->fail = true;
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 3);
  score->bump_epoch();
  score->set_table({10, 20, 30});
  reserve_->fail = false;
  Outcome out = fw.Schedule(Gpu(1, 500), state_);
  EXPECT_EQ(score->total_calls(), 6);
  ASSERT_TRUE(out.ok()) << out.reason;
  EXPECT_EQ(out.placement.node, 2);
}

TEST_F(FrameworkTest, CacheableScoreIsRecomputedAfterRelease) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{30, 20, 10}, true);
  Framework fw = Make(WithScores({{score, 1}}));
  const PodShape pod = Gpu(1, 500);
  Outcome out = fw.Schedule(pod, state_);
  ASSERT_TRUE(out.ok());
  fw.Release(pod, out.placement, state_);
  reserve_->fail = true;
  EXPECT_EQ(fw.Schedule(pod, state_).code, Code::kError);
  EXPECT_EQ(score->calls(0), 2);
  EXPECT_EQ(score->calls(1), 1);
}

TEST_F(FrameworkTest, NonCacheableScoreIsCalledEveryCycle) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{30, 20, 10}, false);
  Framework fw = Make(WithScores({{score, 1}}));
  reserve_->fail = true;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 9);
}

TEST_F(FrameworkTest, ScoreCacheOffRecomputesCacheableScoresEveryCycle) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{30, 20, 10}, true);
  FrameworkOptions o;
  o.score_cache = false;
  Framework fw(WithScores({{score, 1}}), std::move(o));
  reserve_->fail = true;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 9);
}

// A cached scorer and an uncached one in the same profile: the cached one is scored once per
// node version, the other every cycle, and the weighted sum decides.
TEST_F(FrameworkTest, CachedAndUncachedScorersCombine) {
  auto cached = std::make_shared<TableScore>(std::vector<int64_t>{10, 20, 30}, true);
  auto live = std::make_shared<TableScore>(std::vector<int64_t>{0, 0, 0}, false);
  Framework fw = Make(WithScores({{cached, 1}, {live, 2}}));
  reserve_->fail = true;
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  EXPECT_EQ(live->seen_feasible(), (std::vector<int>{0, 1, 2}));
  live->set_table({11, 0, 0});  // 10 + 2 x 11 = 32 beats 30
  reserve_->fail = false;
  Outcome out = fw.Schedule(Gpu(1, 500), state_);
  ASSERT_TRUE(out.ok()) << out.reason;
  EXPECT_EQ(out.placement.node, 0);
  EXPECT_EQ(cached->total_calls(), 3);
  EXPECT_EQ(live->total_calls(), 6);
}

// Versions belong to one ClusterState object: scores cached for one are not reused for another
// whose nodes happen to carry the same versions.
TEST_F(FrameworkTest, CachedScoresAreDroppedForAnotherClusterStateObject) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{30, 20, 10}, true);
  Framework fw = Make(WithScores({{score, 1}}));
  reserve_->fail = true;
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), state_).code, Code::kError);
  ClusterState other = state_;
  EXPECT_EQ(fw.Schedule(Gpu(1, 500), other).code, Code::kError);
  EXPECT_EQ(score->total_calls(), 6);
}

// ---- Observers and Release -----------------------------------------------------------------

TEST_F(FrameworkTest, ObserversSeeArrivalBindAndRelease) {
  auto observer = std::make_shared<CountingObserver>();
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{0, 5, 0}), 1}});
  p.observers.push_back(observer);
  Framework fw = Make(std::move(p));
  const PodShape pod = Gpu(2, 1000, 4000);
  fw.NotifyArrival(pod);
  EXPECT_EQ(observer->arrivals, 1);
  EXPECT_EQ(observer->bound, 0);

  Outcome out = fw.Schedule(pod, state_);
  ASSERT_TRUE(out.ok()) << out.reason;
  EXPECT_EQ(observer->bound, 1);
  EXPECT_EQ(observer->last_bound.node, 1);
  EXPECT_EQ(out.placement.node, 1);
  ASSERT_EQ(out.placement.num_gpus, 2);
  EXPECT_EQ(out.placement.gpus[0], 0);
  EXPECT_EQ(out.placement.gpus[1], 1);
  EXPECT_EQ(state_.cpu_left(1), 12000);
  EXPECT_EQ(state_.gpu_allocated_milli(), 2000);

  const uint32_t version = state_.version(1);
  fw.Release(pod, out.placement, state_);
  EXPECT_EQ(observer->released, 1);
  EXPECT_EQ(observer->pods_after_release, 0);  // told after the state is updated
  EXPECT_EQ(state_.cpu_left(1), 16000);
  EXPECT_EQ(state_.gpu_left(1)[0], 1000);
  EXPECT_EQ(state_.gpu_left(1)[1], 1000);
  EXPECT_EQ(state_.gpu_allocated_milli(), 0);
  EXPECT_EQ(state_.cpu_allocated_milli(), 0);
  EXPECT_EQ(state_.num_pods(1), 0);
  EXPECT_EQ(state_.gpu_class_counts(1)[2], 0);
  EXPECT_GT(state_.version(1), version);
  EXPECT_EQ(observer->arrivals, 1);
}

TEST_F(FrameworkTest, ReleaseOfUnboundPodAborts) {
  Framework fw = Make(WithScores({}));
  Placement p;
  p.node = 0;
  EXPECT_DEATH(fw.Release(Cpu(100), p, state_), "invariant violated.*not bound");
}

// ---- Node order and codes ------------------------------------------------------------------

TEST(RandomNodeOrderTest, IsADeterministicPermutation) {
  for (int n : {0, 1, 2, 7, 50}) {
    SCOPED_TRACE(n);
    const std::vector<int> a = Framework::RandomNodeOrder(n, 7);
    std::vector<int> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> want(n);
    for (int i = 0; i < n; ++i) want[i] = i;
    EXPECT_EQ(sorted, want);
    EXPECT_EQ(Framework::RandomNodeOrder(n, 7), a);
  }
}

TEST(RandomNodeOrderTest, DifferentSeedsGiveDifferentOrders) {
  EXPECT_NE(Framework::RandomNodeOrder(50, 1), Framework::RandomNodeOrder(50, 2));
  std::vector<int> identity(50);
  for (int i = 0; i < 50; ++i) identity[i] = i;
  EXPECT_NE(Framework::RandomNodeOrder(50, 1), identity);
}

TEST(CodeNameTest, NamesEveryCode) {
  EXPECT_EQ(CodeName(Code::kSuccess), "Success");
  EXPECT_EQ(CodeName(Code::kUnschedulable), "Unschedulable");
  EXPECT_EQ(CodeName(Code::kUnschedulableAndUnresolvable), "UnschedulableAndUnresolvable");
  EXPECT_EQ(CodeName(Code::kError), "Error");
  EXPECT_EQ(CodeName(Code::kWait), "Wait");
}

// ---- Registry ------------------------------------------------------------------------------

absl::StatusOr<Profile> EmptyProfile(const PolicyContext&) {
  Profile p;
  p.name = "empty";
  return p;
}

TEST(RegistryTest, RegisterRefusesDuplicatesEmptyNamesAndNullFactories) {
  Registry r;
  ASSERT_TRUE(r.Register("mine", EmptyProfile).ok());
  EXPECT_TRUE(r.Contains("mine"));
  EXPECT_EQ(r.Register("mine", EmptyProfile).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.Register("", EmptyProfile).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Register("null", PolicyFactory()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(r.Contains(""));
  EXPECT_FALSE(r.Contains("null"));
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"mine"}));
}

TEST(RegistryTest, CreateRunsTheFactory) {
  Registry r;
  ASSERT_TRUE(r.Register("mine", EmptyProfile).ok());
  auto p = r.Create("mine", PolicyContext{});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "empty");
}

TEST(RegistryTest, CreateUnknownNameIsNotFoundAndListsKnownNames) {
  Registry r;
  ASSERT_TRUE(r.Register("alpha", EmptyProfile).ok());
  ASSERT_TRUE(r.Register("beta", EmptyProfile).ok());
  auto p = r.Create("gamma", PolicyContext{});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  const std::string msg(p.status().message());
  EXPECT_NE(msg.find("gamma"), std::string::npos) << msg;
  EXPECT_NE(msg.find("alpha"), std::string::npos) << msg;
  EXPECT_NE(msg.find("beta"), std::string::npos) << msg;

  auto b = Registry::Builtins().Create("nope", PolicyContext{});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(b.status().message()).find("fgd"), std::string::npos) << b.status();
}

TEST(RegistryTest, BuiltinsHoldEveryPolicy) {
  const Registry& r = Registry::Builtins();
  EXPECT_EQ(r.Names(),
            (std::vector<std::string>{"bestfit", "cas", "clustering", "dotprod", "fgd",
                                      "least-allocated", "most-allocated", "packing", "random"}));
  for (const char* name : {"random", "dotprod", "clustering", "packing", "bestfit", "fgd", "cas",
                           "least-allocated", "most-allocated"}) {
    EXPECT_TRUE(r.Contains(name)) << name;
  }
  EXPECT_EQ(&Registry::Builtins(), &r);
}

TEST(RegistryTest, BuiltinProfilesAreNamedAfterTheirPolicy) {
  PolicyContext ctx;
  TargetShape shape;
  shape.num_gpu = 1;
  shape.gpu_milli = 1000;
  shape.freq = 1;
  ctx.oracle_workload = {shape};
  for (const std::string& name : Registry::Builtins().Names()) {
    SCOPED_TRACE(name);
    auto p = Registry::Builtins().Create(name, ctx);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->name, name);
    EXPECT_FALSE(p->scores.empty());
    EXPECT_NE(p->reserve, nullptr);
  }
}

TEST(RegistryTest, ReferencePolicyNamesInPaperOrder) {
  EXPECT_EQ(ReferencePolicyNames(), (std::vector<std::string>{"random", "dotprod", "clustering",
                                                              "packing", "bestfit", "fgd"}));
  for (const std::string& name : ReferencePolicyNames()) {
    EXPECT_TRUE(Registry::Builtins().Contains(name)) << name;
  }
}

// ---- PreFilter, PostFilter, Permit, Explain, dynamic nodes ---------------------------------

class FixedPreFilter : public PreFilterPlugin {
 public:
  explicit FixedPreFilter(absl::Status status) : status_(std::move(status)) {}
  std::string_view Name() const override { return "quota"; }
  absl::Status PreFilter(CycleState& cycle, const ClusterState&) override {
    ++calls;
    EXPECT_TRUE(cycle.feasible.empty());  // before Filter
    return status_;
  }
  int calls = 0;

 private:
  absl::Status status_;
};

class Nominate : public PostFilterPlugin {
 public:
  explicit Nominate(int node) : node_(node) {}
  std::string_view Name() const override { return "preempt"; }
  PostFilterResult PostFilter(CycleState&, const ClusterState&, const Diagnosis& why) override {
    ++calls;
    seen = why;
    PostFilterResult r;
    r.nominated_node = node_;
    if (node_ >= 0) r.victims = {"uid-a", "uid-b"};
    return r;
  }
  int calls = 0;
  Diagnosis seen;

 private:
  int node_;
};

// Keeps the default PostFilter (nominates nothing).
class DefaultPostFilter : public PostFilterPlugin {
 public:
  std::string_view Name() const override { return "default"; }
};

class FixedPermit : public PermitPlugin {
 public:
  FixedPermit(std::string name, PermitResult result)
      : name_(std::move(name)), result_(std::move(result)) {}
  std::string_view Name() const override { return name_; }
  PermitResult Permit(CycleState&, const ClusterState& s, const Placement& p) override {
    ++calls;
    seen = p;
    pods_on_node_at_permit = s.num_pods(p.node);
    return result_;
  }
  int calls = 0;
  int pods_on_node_at_permit = -1;
  Placement seen;

 private:
  std::string name_;
  PermitResult result_;
};

PermitResult Wait(double s) {
  PermitResult r;
  r.kind = PermitResult::kWait;
  r.timeout_s = s;
  return r;
}

PermitResult Reject(std::string why) {
  PermitResult r;
  r.kind = PermitResult::kReject;
  r.message = std::move(why);
  return r;
}

TEST_F(FrameworkTest, PreFilterFailureStopsTheCycleBeforeAnythingElse) {
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3});
  Profile p = WithScores({{score, 1}});
  auto pre = std::make_shared<FixedPreFilter>(absl::ResourceExhaustedError("namespace over quota"));
  p.pre_filters = {pre};
  Framework fw = Make(std::move(p));
  const std::vector<uint32_t> before = Versions();
  Outcome out = fw.Schedule(Gpu(1, 1000), state_);
  EXPECT_EQ(out.code, Code::kUnschedulable);
  EXPECT_EQ(out.reason, "pre-filter plugin 'quota': namespace over quota");
  EXPECT_EQ(pre->calls, 1);
  EXPECT_EQ(score->total_calls(), 0);
  EXPECT_EQ(reserve_->reserves, 0);
  EXPECT_EQ(Versions(), before);
}

TEST_F(FrameworkTest, PreFilterOkLetsTheCycleRun) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 3, 2}), 1}});
  auto pre = std::make_shared<FixedPreFilter>(absl::OkStatus());
  p.pre_filters = {pre};
  Framework fw = Make(std::move(p));
  Outcome out = fw.Schedule(Gpu(1, 1000), state_);
  EXPECT_EQ(out.code, Code::kSuccess);
  EXPECT_EQ(out.placement.node, 1);
  EXPECT_EQ(pre->calls, 1);
}

TEST_F(FrameworkTest, PostFilterRunsOnlyAfterAFailedFilterAndItsNominationIsReturned) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}});
  auto none = std::make_shared<DefaultPostFilter>();
  auto nominate = std::make_shared<Nominate>(2);
  auto later = std::make_shared<Nominate>(0);
  p.post_filters = {none, nominate, later};
  Framework fw = Make(std::move(p));
  Outcome fits = fw.Schedule(Gpu(1, 1000), state_);
  EXPECT_EQ(fits.code, Code::kSuccess);
  EXPECT_EQ(nominate->calls, 0);
  EXPECT_EQ(fits.nominated_node, -1);
  // Three GPUs: no node has them.
  Outcome out = fw.Schedule(Gpu(3, 1000), state_);
  EXPECT_EQ(out.code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(nominate->calls, 1);
  EXPECT_EQ(later->calls, 0);  // the first nomination ends the round
  EXPECT_EQ(out.nominated_node, 2);
  EXPECT_EQ(out.victims, (std::vector<std::string>{"uid-a", "uid-b"}));
  EXPECT_EQ(nominate->seen.nodes_total, 3);
  EXPECT_EQ(nominate->seen.count(FilterReason::kTooFewGpus), 3);
}

TEST_F(FrameworkTest, DefaultPostFilterNominatesNothing) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}});
  p.post_filters = {std::make_shared<DefaultPostFilter>()};
  Framework fw = Make(std::move(p));
  Outcome out = fw.Schedule(Cpu(99000), state_);
  EXPECT_EQ(out.code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(out.nominated_node, -1);
  EXPECT_TRUE(out.victims.empty());
}

TEST_F(FrameworkDeathTest, PostFilterNominatingADeadNodeIsCaught) {
  ASSERT_TRUE(state_.RemoveNode(1).ok());
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}});
  p.post_filters = {std::make_shared<Nominate>(1)};
  Framework fw = Make(std::move(p));
  EXPECT_DEATH(fw.Schedule(Cpu(99000), state_),
               "post-filter plugin 'preempt' nominated node 1, not a live node of 3");
}

TEST_F(FrameworkTest, PermitRejectUnreservesAndChangesNothing) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 3, 2}), 1}});
  auto allow = std::make_shared<FixedPermit>("allow", PermitResult{});
  auto reject = std::make_shared<FixedPermit>("gang", Reject("gang incomplete"));
  p.permits = {allow, reject};
  Framework fw = Make(std::move(p));
  const std::vector<uint32_t> before = Versions();
  Outcome out = fw.Schedule(Gpu(1, 1000), state_);
  EXPECT_EQ(out.code, Code::kUnschedulable);
  EXPECT_EQ(out.reason, "permit plugin 'gang': gang incomplete");
  EXPECT_EQ(reject->seen.node, 1);  // after Reserve: the GPUs are chosen
  EXPECT_EQ(reject->seen.num_gpus, 1);
  EXPECT_EQ(reserve_->unreserves, 1);
  EXPECT_EQ(Versions(), before);
}

TEST_F(FrameworkTest, PermitWaitCommitsThePlacementAndReturnsTheLeastTimeout) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 3, 2}), 1}});
  auto observer = std::make_shared<CountingObserver>();
  p.observers = {observer};
  auto slow = std::make_shared<FixedPermit>("slow", Wait(30));
  auto fast = std::make_shared<FixedPermit>("fast", Wait(5));
  p.permits = {slow, fast, std::make_shared<FixedPermit>("allow", PermitResult{})};
  Framework fw = Make(std::move(p));
  const PodShape pod = Gpu(2, 1000);
  Outcome out = fw.Schedule(pod, state_);
  EXPECT_EQ(out.code, Code::kWait);
  EXPECT_FALSE(out.ok());
  EXPECT_DOUBLE_EQ(out.wait_timeout_s, 5);
  EXPECT_EQ(out.placement.node, 1);
  EXPECT_EQ(slow->pods_on_node_at_permit, 0);  // Permit runs before Bind
  EXPECT_EQ(state_.num_pods(1), 1);            // the resources are held
  EXPECT_EQ(state_.free_gpus(1), 0);
  EXPECT_EQ(observer->bound, 1);
  // Rejected later (timeout): unreserved and released.
  fw.RejectWaiting(pod, out.placement, state_);
  EXPECT_EQ(state_.num_pods(1), 0);
  EXPECT_EQ(state_.free_gpus(1), 2);
  EXPECT_EQ(reserve_->unreserves, 1);
  EXPECT_EQ(observer->released, 1);
  state_.CheckInvariants();
}

TEST_F(FrameworkTest, PermitAllowBindsAsUsual) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 3, 2}), 1}});
  auto allow = std::make_shared<FixedPermit>("allow", PermitResult{});
  p.permits = {allow};
  Framework fw = Make(std::move(p));
  Outcome out = fw.Schedule(Cpu(1000), state_);
  EXPECT_EQ(out.code, Code::kSuccess);
  EXPECT_EQ(allow->calls, 1);
  EXPECT_EQ(state_.num_pods(1), 1);
}

TEST_F(FrameworkDeathTest, PermitWaitWithoutATimeoutIsCaught) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 3, 2}), 1}});
  p.permits = {std::make_shared<FixedPermit>("gang", Wait(0))};
  Framework fw = Make(std::move(p));
  EXPECT_DEATH(fw.Schedule(Cpu(1000), state_), "permit plugin 'gang' asked to wait 0 s");
}

TEST_F(FrameworkTest, ExplainCountsFilterPluginsAsPluginRejections) {
  Profile p = WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{1, 2, 3}), 1}});
  p.filters = {std::make_shared<RejectNodes>(std::set<int>{0})};
  Framework fw = Make(std::move(p));
  ASSERT_TRUE(
      state_.Allocate(Gpu(2, 1000), Placement{.node = 2, .num_gpus = 2, .gpus = {0, 1}}).ok());
  Diagnosis d = fw.Explain(Gpu(1, 1000), state_);
  EXPECT_EQ(d.nodes_total, 3);
  EXPECT_EQ(d.nodes_fit, 1);
  EXPECT_EQ(d.count(FilterReason::kPlugin), 1);
  EXPECT_EQ(d.count(FilterReason::kInsufficientGpu), 1);
  EXPECT_EQ(d.plugin, "RejectNodes");
  EXPECT_EQ(FitErrorMessage(d),
            "1/3 nodes fit: 1 insufficient free GPUs, 1 rejected by plugin RejectNodes");
  // Without filter plugins Explain is Diagnose.
  Framework plain = Make(WithScores({}));
  EXPECT_EQ(plain.Explain(Gpu(1, 1000), state_), Diagnose(state_, Gpu(1, 1000)));
}

TEST_F(FrameworkTest, CordonedTaintedAndRemovedNodesAreNotChosen) {
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{3, 2, 1}), 1}}));
  state_.SetCordoned(0, true);
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).placement.node, 1);
  core::NodeSpec tainted = state_.node(1);
  tainted.taints = {{"gpu", "broken", "NoExecute"}};
  ASSERT_TRUE(state_.UpdateNode(1, tainted).ok());
  ASSERT_TRUE(state_.Allocate(Cpu(1000), Placement{.node = 2}).ok());
  Outcome two = fw.Schedule(Cpu(1000), state_);
  EXPECT_EQ(two.placement.node, 2);
  fw.Release(Cpu(1000), two.placement, state_);
  ASSERT_TRUE(state_.Release(Cpu(1000), Placement{.node = 2}).ok());
  ASSERT_TRUE(state_.RemoveNode(2).ok());
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).code, Code::kUnschedulableAndUnresolvable);
  state_.CheckInvariants();
}

TEST_F(FrameworkTest, OnlyBlockedNodesBigEnoughIsUnresolvable) {
  Framework fw =
      Make(WithScores({{std::make_shared<TableScore>(std::vector<int64_t>{3, 2, 1}), 1}}));
  state_.SetCordoned(0, true);
  state_.SetCordoned(1, true);
  state_.SetCordoned(2, true);
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).code, Code::kUnschedulableAndUnresolvable);
  state_.SetCordoned(2, false);
  ASSERT_TRUE(state_.Allocate(Cpu(16000), Placement{.node = 2}).ok());
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).code, Code::kUnschedulable);
}

TEST_F(FrameworkTest, NodesAddedLaterComeAfterTheConfiguredNodeOrder) {
  // Equal scores everywhere: the node order decides.
  auto score = std::make_shared<TableScore>(std::vector<int64_t>{5, 5, 5, 5});
  Framework fw = Make(WithScores({{score, 1}}), {2, 1, 0});
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).placement.node, 2);
  absl::StatusOr<int> added = state_.AddNode({"n3", 16000, 65536, 2, "A", 0, 0});
  ASSERT_TRUE(added.ok());
  // Still 2 first (the order was kept, not reset to index order), the new node last.
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).placement.node, 2);
  state_.SetCordoned(2, true);
  state_.SetCordoned(1, true);
  state_.SetCordoned(0, true);
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).placement.node, 3);
  state_.SetCordoned(0, false);
  EXPECT_EQ(fw.Schedule(Cpu(1000), state_).placement.node, 0);
}

}  // namespace
}  // namespace seedance::sched
