// Unit tests of the simulator on the built-in workload (milliseconds each): determinism, the
// invariants of fill, churn and replay runs, and the errors for bad inputs.
#include "seedance/sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"

namespace seedance::sim {
namespace {

class SimulatorTest : public testing::Test {
 protected:
  static const Workload& Builtin() {
    static const Workload* w = new Workload(BuiltinWorkload());
    return *w;
  }
  static double CapacityGpus(const Workload& w) {
    double gpus = 0;
    for (const core::NodeSpec& n : w.nodes) gpus += n.num_gpus;
    return gpus;
  }
  static SimOptions Fill(uint64_t seed) {
    SimOptions o;
    o.mode = Mode::kFill;
    o.seed = seed;
    o.tune = 1.3;
    return o;
  }
  static SimOptions Churn(uint64_t seed) {
    SimOptions o;
    o.mode = Mode::kChurn;
    o.seed = seed;
    o.duration_h = 6;
    o.warmup_h = 1;
    return o;
  }
  static SimOptions Replay(double time_scale) {
    SimOptions o;
    o.mode = Mode::kReplay;
    o.time_scale = time_scale;
    return o;
  }
  static RunResult MustRun(const Workload& w, const std::string& policy, const SimOptions& o) {
    absl::StatusOr<RunResult> r = sim::Run(w, policy, o);
    EXPECT_TRUE(r.ok()) << policy << " " << ModeName(o.mode) << ": " << r.status();
    return r.ok() ? *r : RunResult{};
  }
  static bool SameCurve(const std::vector<CurvePoint>& a, const std::vector<CurvePoint>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].arrived_pct != b[i].arrived_pct || a[i].alloc_pct != b[i].alloc_pct ||
          a[i].frag_ratio_pct != b[i].frag_ratio_pct) {
        return false;
      }
    }
    return true;
  }
};

// ---------------------------------------------------------------- fill

TEST_F(SimulatorTest, FillIsDeterministicForASeed) {
  for (const std::string policy : {"random", "bestfit", "fgd"}) {
    const RunResult a = MustRun(Builtin(), policy, Fill(7));
    const RunResult b = MustRun(Builtin(), policy, Fill(7));
    ASSERT_FALSE(a.curve.empty()) << policy;
    EXPECT_TRUE(SameCurve(a.curve, b.curve)) << policy;
    EXPECT_EQ(a.pods_arrived, b.pods_arrived) << policy;
    EXPECT_EQ(a.pods_scheduled, b.pods_scheduled) << policy;
    EXPECT_EQ(a.unalloc_gpu_pct_at_100, b.unalloc_gpu_pct_at_100) << policy;
    EXPECT_EQ(a.unalloc_gpu_pct_at_130, b.unalloc_gpu_pct_at_130) << policy;
    EXPECT_EQ(a.frag_ratio_pct_at_90, b.frag_ratio_pct_at_90) << policy;
  }
}

TEST_F(SimulatorTest, FillDiffersBetweenSeeds) {
  for (const std::string policy : {"random", "fgd"}) {
    const RunResult a = MustRun(Builtin(), policy, Fill(42));
    const RunResult b = MustRun(Builtin(), policy, Fill(43));
    EXPECT_FALSE(SameCurve(a.curve, b.curve)) << policy;
  }
}

TEST_F(SimulatorTest, FillRecordsTheRunsIdentity) {
  const RunResult r = MustRun(Builtin(), "bestfit", Fill(11));
  EXPECT_EQ(r.policy, "bestfit");
  EXPECT_EQ(r.seed, 11u);
  EXPECT_EQ(r.mode, Mode::kFill);
  EXPECT_GE(r.wall_s, 0);
}

TEST_F(SimulatorTest, FillCurveIsIncreasingAndNeverAllocatesMoreThanArrived) {
  for (const char* policy :
       {"random", "dotprod", "clustering", "packing", "bestfit", "fgd", "cas"}) {
    const RunResult r = MustRun(Builtin(), policy, Fill(42));
    ASSERT_FALSE(r.curve.empty()) << policy;
    for (size_t i = 0; i < r.curve.size(); ++i) {
      const CurvePoint& c = r.curve[i];
      if (i > 0) {
        EXPECT_GT(c.arrived_pct, r.curve[i - 1].arrived_pct) << policy << " at " << i;
      }
      EXPECT_GE(c.alloc_pct, 0) << policy;
      EXPECT_LE(c.alloc_pct, 100.0 + 1e-9) << policy << " over-allocated at " << c.arrived_pct;
      // A point averages events whose arrived demand rounds to arrived_pct, i.e. lies below
      // arrived_pct + 0.5; at each event allocation <= arrived demand.
      EXPECT_LE(c.alloc_pct, c.arrived_pct + 0.5 + 1e-9) << policy << " at " << c.arrived_pct;
      EXPECT_GE(c.frag_ratio_pct, 0) << policy;
      EXPECT_LE(c.frag_ratio_pct, 100.0 + 1e-9) << policy;
    }
    // The workload is tuned to 130% of capacity.
    EXPECT_GE(r.curve.back().arrived_pct, 129) << policy;
    EXPECT_LE(r.curve.back().arrived_pct, 132) << policy;
    EXPECT_GE(r.unalloc_gpu_pct_at_100, 0) << policy;
    EXPECT_LE(r.unalloc_gpu_pct_at_100, 100) << policy;
    EXPECT_GE(r.unalloc_gpu_pct_at_130, 0) << policy;
    EXPECT_LE(r.unalloc_gpu_pct_at_130, 100) << policy;
  }
}

TEST_F(SimulatorTest, FillAccountsForEveryPod) {
  const Workload& w = Builtin();
  for (const std::string policy : {"random", "fgd"}) {
    const RunResult r = MustRun(w, policy, Fill(42));
    EXPECT_EQ(r.pods_scheduled + r.pods_failed, r.pods_arrived) << policy;
    // Every trace pod is replayed once, plus resampled ones up to 1.3 x capacity.
    EXPECT_GE(r.pods_arrived, static_cast<int64_t>(w.pods.size())) << policy;
    EXPECT_GT(r.pods_failed, 0) << policy << ": 130% demand cannot all fit";
    EXPECT_GT(r.pods_scheduled, 0) << policy;
  }
}

TEST_F(SimulatorTest, FillSummaryPointsComeFromTheCurve) {
  const RunResult r = MustRun(Builtin(), "fgd", Fill(42));
  auto point_at_or_below = [&](int k) {
    const CurvePoint* best = nullptr;
    for (const CurvePoint& c : r.curve) {
      if (c.arrived_pct <= k) best = &c;
    }
    return best;
  };
  const CurvePoint* p100 = point_at_or_below(100);
  const CurvePoint* p130 = point_at_or_below(130);
  const CurvePoint* p90 = point_at_or_below(90);
  ASSERT_NE(p100, nullptr);
  ASSERT_NE(p130, nullptr);
  ASSERT_NE(p90, nullptr);
  EXPECT_DOUBLE_EQ(r.unalloc_gpu_pct_at_100, 100.0 - p100->alloc_pct);
  EXPECT_DOUBLE_EQ(r.unalloc_gpu_pct_at_130, 100.0 - p130->alloc_pct);
  EXPECT_DOUBLE_EQ(r.frag_ratio_pct_at_90, p90->frag_ratio_pct);
}

TEST_F(SimulatorTest, FillResamplesUpToTheTunedDemand) {
  // The first 100 built-in pods ask for well under the cluster's capacity, so fill mode
  // resamples pods until the demand reaches tune x capacity.
  Workload w = Builtin();
  w.pods.resize(100);
  double demand_gpus = 0;
  for (const core::PodSpec& p : w.pods) demand_gpus += p.shape.TotalGpuMilli() / 1000.0;
  ASSERT_LT(demand_gpus, 0.5 * CapacityGpus(w));
  SimOptions low = Fill(42), high = Fill(42);
  low.tune = 0.8;
  high.tune = 1.3;
  const RunResult a = MustRun(w, "bestfit", low);
  const RunResult b = MustRun(w, "bestfit", high);
  EXPECT_GT(a.pods_arrived, 100);
  EXPECT_LT(a.pods_arrived, b.pods_arrived);
  ASSERT_FALSE(a.curve.empty());
  ASSERT_FALSE(b.curve.empty());
  EXPECT_GE(a.curve.back().arrived_pct, 79);
  EXPECT_LE(a.curve.back().arrived_pct, 82);
  EXPECT_GE(b.curve.back().arrived_pct, 129);
  // Below capacity and with small pods nearly everything fits.
  EXPECT_GT(a.curve.back().alloc_pct, 70);
}

TEST_F(SimulatorTest, ReferenceStreamIsDeterministicAndTunesLikeTheReference) {
  Workload w = Builtin();
  w.pods.resize(100);
  SimOptions o = Fill(42);
  o.rng = RngKind::kReference;
  const RunResult a = MustRun(w, "bestfit", o);
  const RunResult b = MustRun(w, "bestfit", o);
  EXPECT_TRUE(SameCurve(a.curve, b.curve));
  EXPECT_EQ(a.pods_arrived, b.pods_arrived);
  // The reference's tuneUpPods stops at the first draw that would overshoot, so the demand
  // ends just below tune x capacity (never above it).
  ASSERT_FALSE(a.curve.empty());
  EXPECT_GE(a.curve.back().arrived_pct, 129);
  EXPECT_LE(a.curve.back().arrived_pct, 130);
  // A different stream from the Seedance one with the same seed.
  const RunResult c = MustRun(w, "bestfit", Fill(42));
  EXPECT_FALSE(SameCurve(a.curve, c.curve));
  SimOptions other = o;
  other.seed = 43;
  EXPECT_FALSE(SameCurve(a.curve, MustRun(w, "bestfit", other).curve));
}

TEST_F(SimulatorTest, PlanFillIsTheOrderFillReplays) {
  Workload w = Builtin();
  w.pods.resize(100);
  for (RngKind rng : {RngKind::kSeedance, RngKind::kReference}) {
    SCOPED_TRACE(rng == RngKind::kSeedance ? "seedance" : "reference");
    SimOptions o = Fill(7);
    o.rng = rng;
    absl::StatusOr<FillPlan> plan = PlanFill(w, o);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const RunResult r = MustRun(w, "bestfit", o);
    ASSERT_EQ(static_cast<int64_t>(plan->pods.size()), r.pods_arrived);
    // The trace's own pods come first, each exactly once, then resampled ones.
    std::vector<std::string> trace_names, first_names;
    for (const core::PodSpec& p : w.pods) trace_names.push_back(p.name);
    for (size_t i = 0; i < w.pods.size(); ++i) first_names.push_back(plan->pods[i].name);
    std::sort(trace_names.begin(), trace_names.end());
    std::sort(first_names.begin(), first_names.end());
    EXPECT_EQ(first_names, trace_names);
    // The run's curve has a point at exactly the percentages the plan's arrivals round to
    // (tune 1.3: up to 131%).
    std::vector<int> pcts;
    int64_t arrived = 0;
    for (const core::PodSpec& p : plan->pods) {
      arrived += p.shape.TotalGpuMilli();
      const int k = static_cast<int>(
          std::lround(100.0 * static_cast<double>(arrived) / (1000.0 * CapacityGpus(w))));
      // The curve stops one point past tune x 100%; the last resampled pod may overshoot it.
      if (k > 131) continue;
      if (pcts.empty() || pcts.back() != k) pcts.push_back(k);
    }
    std::vector<int> curve_pcts;
    for (const CurvePoint& c : r.curve) curve_pcts.push_back(c.arrived_pct);
    EXPECT_EQ(curve_pcts, pcts);
    // The tie-break order is a permutation of the nodes.
    std::vector<int> order = plan->node_order;
    std::sort(order.begin(), order.end());
    ASSERT_EQ(order.size(), w.nodes.size());
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], static_cast<int>(i));
    // Deterministic for a seed.
    absl::StatusOr<FillPlan> again = PlanFill(w, o);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->node_order, plan->node_order);
    ASSERT_EQ(again->pods.size(), plan->pods.size());
    for (size_t i = 0; i < plan->pods.size(); ++i) {
      EXPECT_EQ(again->pods[i].name, plan->pods[i].name);
    }
  }
}

TEST_F(SimulatorTest, PlanFillRejectsWhatFillRejects) {
  Workload w = Builtin();
  w.pods.clear();
  absl::StatusOr<FillPlan> plan = PlanFill(w, Fill(42));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SimulatorTest, ReferenceStreamIsOnlyForFill) {
  SimOptions o = Churn(42);
  o.rng = RngKind::kReference;
  absl::StatusOr<RunResult> r = sim::Run(Builtin(), "bestfit", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("fill"), std::string::npos) << r.status();
}

// ---------------------------------------------------------------- churn

TEST_F(SimulatorTest, ChurnReportsConsistentSteadyStateFigures) {
  const Workload& w = Builtin();
  const double capacity_gpus = CapacityGpus(w);
  for (const std::string policy : {"bestfit", "fgd"}) {
    const RunResult r = MustRun(w, policy, Churn(42));
    EXPECT_EQ(r.mode, Mode::kChurn);
    EXPECT_GE(r.unalloc_gpu_pct_steady, 0) << policy;
    EXPECT_LE(r.unalloc_gpu_pct_steady, 100) << policy;
    EXPECT_GE(r.queue_delay_p50_s, 0) << policy;
    EXPECT_LE(r.queue_delay_p50_s, r.queue_delay_p99_s) << policy;
    EXPECT_NEAR(r.measured_hours, 6.0, 1e-9) << policy;
    const double want_idle = r.unalloc_gpu_pct_steady / 100.0 * capacity_gpus * r.measured_hours;
    EXPECT_NEAR(r.idle_gpu_hours, want_idle, 1e-6 * std::max(1.0, want_idle)) << policy;
    EXPECT_GE(r.idle_cost_usd, 0) << policy;
    // Idle cost is bounded by every GPU idle at the dearest default price.
    EXPECT_LE(r.idle_cost_usd, capacity_gpus * r.measured_hours * 10.0) << policy;
  }
}

TEST_F(SimulatorTest, ChurnLosesNoPod) {
  for (const std::string policy : {"random", "packing", "fgd", "cas"}) {
    const RunResult r = MustRun(Builtin(), policy, Churn(42));
    EXPECT_GT(r.pods_arrived, 0) << policy;
    EXPECT_LE(r.pods_scheduled, r.pods_arrived) << policy;
    EXPECT_LE(r.pods_waiting_at_end, r.pods_arrived) << policy;
    // Each arrival either started (at once or from the queue) or is still waiting.
    EXPECT_EQ(r.pods_scheduled + r.pods_waiting_at_end, r.pods_arrived) << policy;
  }
}

TEST_F(SimulatorTest, ChurnSeriesCoversTheWindowWithinBounds) {
  const RunResult r = MustRun(Builtin(), "bestfit", Churn(42));
  ASSERT_GE(r.unalloc_series.size(), 2u);
  EXPECT_NEAR(r.unalloc_series.front().first, 0.0, 1e-9);
  EXPECT_LE(r.unalloc_series.back().first, r.measured_hours + 1e-9);
  for (size_t i = 0; i < r.unalloc_series.size(); ++i) {
    const auto& [h, u] = r.unalloc_series[i];
    if (i > 0) {
      EXPECT_GT(h, r.unalloc_series[i - 1].first);
    }
    EXPECT_GE(u, 0);
    EXPECT_LE(u, 100);
  }
}

TEST_F(SimulatorTest, ChurnIsDeterministicForASeedAndDiffersBetweenSeeds) {
  const RunResult a = MustRun(Builtin(), "fgd", Churn(5));
  const RunResult b = MustRun(Builtin(), "fgd", Churn(5));
  const RunResult c = MustRun(Builtin(), "fgd", Churn(6));
  EXPECT_EQ(a.pods_arrived, b.pods_arrived);
  EXPECT_EQ(a.unalloc_gpu_pct_steady, b.unalloc_gpu_pct_steady);
  EXPECT_EQ(a.queue_delay_p99_s, b.queue_delay_p99_s);
  EXPECT_EQ(a.unalloc_series, b.unalloc_series);
  EXPECT_NE(a.unalloc_gpu_pct_steady, c.unalloc_gpu_pct_steady);
}

TEST_F(SimulatorTest, ChurnHigherLoadLeavesLessIdle) {
  SimOptions light = Churn(42), heavy = Churn(42);
  light.load = 0.3;
  heavy.load = 1.5;
  const RunResult a = MustRun(Builtin(), "bestfit", light);
  const RunResult b = MustRun(Builtin(), "bestfit", heavy);
  EXPECT_LT(a.pods_arrived, b.pods_arrived);
  EXPECT_GT(a.unalloc_gpu_pct_steady, b.unalloc_gpu_pct_steady);
}

// ---------------------------------------------------------------- replay

TEST_F(SimulatorTest, ReplayRunsCompressedAndLosesNoPod) {
  const Workload& w = Builtin();
  const RunResult fast = MustRun(w, "fgd", Replay(10));
  const RunResult slow = MustRun(w, "fgd", Replay(1));
  EXPECT_EQ(fast.mode, Mode::kReplay);
  EXPECT_GT(fast.pods_arrived, 0);
  EXPECT_LE(fast.pods_arrived, static_cast<int64_t>(w.pods.size()));
  EXPECT_EQ(fast.pods_scheduled + fast.pods_waiting_at_end, fast.pods_arrived);
  EXPECT_GE(fast.unalloc_gpu_pct_steady, 0);
  EXPECT_LE(fast.unalloc_gpu_pct_steady, 100);
  EXPECT_LE(fast.queue_delay_p50_s, fast.queue_delay_p99_s);
  // The built-in trace spans about a day, under the default 72 h window, so the whole trace
  // is measured and compressing time by 10 shrinks the window by 10.
  EXPECT_GT(slow.measured_hours, 1.0);
  EXPECT_NEAR(fast.measured_hours * 10, slow.measured_hours, 1e-9 * slow.measured_hours);
}

// The retry rule on a one-GPU node: when room frees, the best waiting pod (priority, then
// arrival) that fits the freed node starts, then the next that still fits; a request that no
// longer fits waits for the next departure.
TEST_F(SimulatorTest, ReplayRetriesBestWaitingPodThatFitsTheFreedNode) {
  Workload w;
  w.nodes.push_back(
      {.name = "n0", .cpu_milli = 64000, .memory_mib = 262144, .num_gpus = 1, .gpu_model = "A100"});
  auto pod = [](std::string name, int32_t gpu_milli, int32_t priority, int64_t created,
                int64_t deleted) {
    core::PodSpec p;
    p.name = std::move(name);
    p.shape = {.cpu_milli = 1000,
               .memory_mib = 1024,
               .num_gpu = gpu_milli > 0 ? 1 : 0,
               .gpu_milli = gpu_milli};
    p.priority = priority;
    p.creation_s = created;
    p.deletion_s = deleted;
    return p;
  };
  w.pods = {pod("a", 1000, 0, 0, 100),  // holds the GPU until t = 100
            pod("b", 600, 0, 10, 60),   // waits; starts at 150 when c leaves (delay 140)
            pod("c", 600, 5, 20, 70),   // higher priority: first at t = 100 (delay 80)
            pod("d", 400, 0, 30, 80),   // still fits next to c at t = 100 (delay 70)
            pod("f", 400, 0, 40, 90),   // same request as d, later: waits until d leaves at
                                        // 150 (delay 110)
            pod("e", 0, 0, 1000, -1)};  // a late CPU pod that keeps the window open
  for (const std::string policy : {"bestfit", "fgd", "cas"}) {
    const RunResult r = MustRun(w, policy, Replay(1));
    EXPECT_EQ(r.pods_arrived, 6) << policy;
    EXPECT_EQ(r.pods_scheduled, 6) << policy;
    EXPECT_EQ(r.pods_waiting_at_end, 0) << policy;
    // Delays {0, 0, 70, 80, 110, 140}: interpolated median 75, p99 110 + 0.95 x 30.
    EXPECT_DOUBLE_EQ(r.queue_delay_p50_s, 75) << policy;
    EXPECT_DOUBLE_EQ(r.queue_delay_p99_s, 138.5) << policy;
  }
}

TEST_F(SimulatorTest, ReplayArrivesEveryPodOfTheWholeTrace) {
  const Workload& w = Builtin();
  const RunResult r = MustRun(w, "bestfit", Replay(10));
  EXPECT_EQ(r.pods_arrived, static_cast<int64_t>(w.pods.size()));
}

// ---------------------------------------------------------------- errors

TEST_F(SimulatorTest, UnknownPolicyIsNotFound) {
  for (const SimOptions& o : {Fill(42), Churn(42), Replay(10)}) {
    absl::StatusOr<RunResult> r = sim::Run(Builtin(), "no-such-policy", o);
    ASSERT_FALSE(r.ok()) << ModeName(o.mode);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
    EXPECT_NE(r.status().message().find("no-such-policy"), std::string_view::npos) << r.status();
  }
}

TEST_F(SimulatorTest, ClusterWithoutGpusIsAnError) {
  Workload w = Builtin();
  for (core::NodeSpec& n : w.nodes) {
    n.num_gpus = 0;
    n.gpu_model.clear();
  }
  for (const SimOptions& o : {Fill(42), Churn(42), Replay(10)}) {
    absl::StatusOr<RunResult> r = sim::Run(w, "fgd", o);
    ASSERT_FALSE(r.ok()) << ModeName(o.mode);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
}

TEST_F(SimulatorTest, EmptyPodListIsAnError) {
  Workload w = Builtin();
  w.pods.clear();
  for (const SimOptions& o : {Fill(42), Churn(42), Replay(10)}) {
    absl::StatusOr<RunResult> r = sim::Run(w, "fgd", o);
    ASSERT_FALSE(r.ok()) << ModeName(o.mode);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
}

TEST_F(SimulatorTest, EmptyNodeListIsAnError) {
  Workload w = Builtin();
  w.nodes.clear();
  absl::StatusOr<RunResult> r = sim::Run(w, "fgd", Fill(42));
  EXPECT_FALSE(r.ok());
}

TEST_F(SimulatorTest, FillWithoutGpuDemandIsAnError) {
  Workload w = Builtin();
  std::erase_if(w.pods, [](const core::PodSpec& p) { return p.shape.num_gpu > 0; });
  ASSERT_FALSE(w.pods.empty());
  absl::StatusOr<RunResult> r = sim::Run(w, "bestfit", Fill(42));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
}

// ---------------------------------------------------------------- refused up front

struct RefusedCase {
  std::string name;
  std::function<void(Workload*, SimOptions*)> change;
  std::string want;  // substring of the message
};

std::ostream& operator<<(std::ostream& os, const RefusedCase& c) { return os << c.name; }

class RefusedTest : public testing::TestWithParam<RefusedCase> {};

// Every case is refused by CheckRun, and by Run and (fill) PlanFill with the same status, before
// any work: none of them may loop or allocate without bound.
TEST_P(RefusedTest, CheckRunAndRunRefuseWithInvalidArgument) {
  const RefusedCase& c = GetParam();
  Workload w = BuiltinWorkload();
  SimOptions o;
  c.change(&w, &o);
  const absl::Status check = CheckRun(w, o);
  ASSERT_FALSE(check.ok());
  EXPECT_EQ(check.code(), absl::StatusCode::kInvalidArgument) << check;
  EXPECT_NE(check.message().find(c.want), std::string_view::npos) << check;
  absl::StatusOr<RunResult> run = sim::Run(w, "bestfit", o);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status(), check);
  if (o.mode == Mode::kFill) {
    EXPECT_EQ(PlanFill(w, o).status(), check);
  }
}

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// All pods created at `t`.
void SameCreationTime(Workload* w, int64_t t) {
  for (core::PodSpec& p : w->pods) {
    p.deletion_s = t + (p.deletion_s - p.creation_s);
    p.creation_s = t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Options, RefusedTest,
    testing::Values(
        RefusedCase{"TuneNan", [](Workload*, SimOptions* o) { o->tune = kNan; }, "tune"},
        RefusedCase{"TuneZero", [](Workload*, SimOptions* o) { o->tune = 0; }, "tune"},
        RefusedCase{"TuneInf", [](Workload*, SimOptions* o) { o->tune = kInf; }, "tune"},
        RefusedCase{"ChurnDurationZero",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kChurn;
                      o->duration_h = 0;
                    },
                    "churn duration"},
        RefusedCase{"ChurnDurationInf",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kChurn;
                      o->duration_h = kInf;
                    },
                    "churn duration"},
        RefusedCase{"ChurnLoadNan",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kChurn;
                      o->load = kNan;
                    },
                    "load"},
        RefusedCase{"WarmupHuge",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kChurn;
                      o->warmup_h = 1e300;
                    },
                    "warm-up"},
        RefusedCase{"ReplayTimeScaleTiny",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kReplay;
                      o->time_scale = 1e-300;
                    },
                    "time_scale"},
        RefusedCase{"ReplayTimeScaleNan",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kReplay;
                      o->time_scale = kNan;
                    },
                    "time_scale"},
        RefusedCase{"ReferenceStreamOutsideFill",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kChurn;
                      o->rng = RngKind::kReference;
                    },
                    "only for fill"},
        RefusedCase{"ChurnTooManyArrivals",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kChurn;
                      o->load = 100;
                      o->duration_h = 87600;
                    },
                    "more than the limit of 5000000 per run"},
        RefusedCase{"FillTooManyPods",
                    [](Workload* w, SimOptions* o) {
                      for (core::PodSpec& p : w->pods) {
                        p.shape.num_gpu = 1;
                        p.shape.gpu_milli = 1;
                      }
                      o->tune = 100;
                    },
                    "more than the limit of 5000000 per run"},
        RefusedCase{"ReplayAllPodsCreatedAtOnce",
                    [](Workload* w, SimOptions* o) {
                      SameCreationTime(w, 1000);
                      o->mode = Mode::kReplay;
                      o->duration_h = -1;
                    },
                    "are created at 1000 s, so the replayed window is empty"},
        RefusedCase{"ReplayOnePod",
                    [](Workload* w, SimOptions* o) {
                      w->pods.resize(1);
                      o->mode = Mode::kReplay;
                    },
                    "replayed window is empty"},
        RefusedCase{"ReplayWarmupPastTheLastArrival",
                    [](Workload*, SimOptions* o) {
                      o->mode = Mode::kReplay;
                      o->warmup_h = 1000;
                    },
                    "leaves nothing to measure"},
        RefusedCase{"ReplayWindowShorterThanOneGap",
                    [](Workload* w, SimOptions* o) {
                      w->pods.resize(2);
                      w->pods[0].creation_s = 0;
                      w->pods[1].creation_s = 7200;
                      o->mode = Mode::kReplay;
                      o->warmup_h = 0.5;
                      o->duration_h = 0.5;
                    },
                    "no pod arrives in the measured window"},
        RefusedCase{"ClusterWithoutGpus",
                    [](Workload* w, SimOptions*) {
                      for (core::NodeSpec& n : w->nodes) {
                        n.num_gpus = 0;
                        n.gpu_model.clear();
                      }
                    },
                    "no GPUs"},
        RefusedCase{"TooManyGpuModels",
                    [](Workload* w, SimOptions*) {
                      for (size_t i = 0; i < w->nodes.size(); ++i) {
                        w->nodes[i].gpu_model = "M" + std::to_string(i);
                      }
                    },
                    "distinct GPU models"}),
    [](const testing::TestParamInfo<RefusedCase>& info) { return info.param.name; });

TEST_F(SimulatorTest, CheckRunAcceptsTheDefaults) {
  for (const SimOptions& o : {Fill(42), Churn(42), Replay(10)}) {
    EXPECT_TRUE(CheckRun(Builtin(), o).ok()) << ModeName(o.mode) << ": " << CheckRun(Builtin(), o);
  }
}

// A window far shorter than the warm-up used to add sample intervals too small to move the
// sample time, looping for ever; the series now always has a bounded number of points.
TEST_F(SimulatorTest, ChurnWithATinyWindowTerminatesWithABoundedSeries) {
  SimOptions o = Churn(42);
  o.warmup_h = 20;
  o.duration_h = 1e-12;
  const RunResult r = MustRun(Builtin(), "bestfit", o);
  EXPECT_LE(r.unalloc_series.size(), 241u);
  EXPECT_GE(r.unalloc_gpu_pct_steady, 0);
  EXPECT_LE(r.unalloc_gpu_pct_steady, 100);
}

TEST_F(SimulatorTest, ChurnSeriesHasTheDocumentedSamples) {
  const RunResult r = MustRun(Builtin(), "bestfit", Churn(42));
  EXPECT_EQ(r.unalloc_series.size(), 241u);
  EXPECT_DOUBLE_EQ(r.unalloc_series.back().first, r.measured_hours);
}

TEST_F(SimulatorTest, FillFiguresBeyondTheArrivedDemandAreUndefined) {
  // A trace smaller than the cluster, resampled up to 100% of capacity: never 130%.
  Workload w = Builtin();
  w.pods.resize(200);
  SimOptions o = Fill(42);
  o.tune = 1.0;
  const RunResult r = MustRun(w, "bestfit", o);
  EXPECT_FALSE(std::isnan(r.unalloc_gpu_pct_at_100));
  EXPECT_FALSE(std::isnan(r.frag_ratio_pct_at_90));
  EXPECT_TRUE(std::isnan(r.unalloc_gpu_pct_at_130)) << r.unalloc_gpu_pct_at_130;
}

// ---------------------------------------------------------------- topology

// Whole free GPUs are interchangeable for every score: the topology chooser changes which GPUs
// a multi-GPU pod gets, never a node choice or a fill figure.
TEST_F(SimulatorTest, TopologyChooserChangesNoNodeChoiceAndPicksBestSets) {
  int64_t index_best = 0, index_pods = 0;
  for (const std::string policy : {"bestfit", "fgd", "cas"}) {
    for (uint64_t seed : {42, 43, 44}) {
      SimOptions o = Fill(seed);
      o.topology = core::TopologyTemplate::kPcieTree;
      o.record_placements = true;
      o.topology_gpus = false;
      const RunResult index = MustRun(Builtin(), policy, o);
      o.topology_gpus = true;
      const RunResult topo = MustRun(Builtin(), policy, o);
      EXPECT_TRUE(SameCurve(index.curve, topo.curve)) << policy << " " << seed;
      ASSERT_EQ(index.placements.size(), topo.placements.size());
      for (size_t i = 0; i < topo.placements.size(); ++i) {
        ASSERT_EQ(index.placements[i].node, topo.placements[i].node) << policy << " pod " << i;
        ASSERT_EQ(index.placements[i].num_gpus, topo.placements[i].num_gpus);
      }
      ASSERT_GT(topo.topology.multi_gpu_pods, 0) << policy;
      EXPECT_EQ(topo.topology.best_bandwidth, topo.topology.multi_gpu_pods) << policy;
      EXPECT_DOUBLE_EQ(topo.allreduce_slowdown, 1.0) << policy;
      EXPECT_LE(topo.allreduce_ms, index.allreduce_ms) << policy << " " << seed;
      index_best += index.topology.best_bandwidth;
      index_pods += index.topology.multi_gpu_pods;
    }
  }
  // The lowest free indices cross the sockets now and then: the measure tells them apart.
  EXPECT_LT(index_best, index_pods);
}

TEST_F(SimulatorTest, WithoutATemplateTheBuiltinNodesHaveNoTopologyToMeasure) {
  const RunResult r = MustRun(Builtin(), "fgd", Fill(42));
  EXPECT_EQ(r.topology.multi_gpu_pods, 0);
  EXPECT_TRUE(std::isnan(r.best_bandwidth_pct));
}

TEST_F(SimulatorTest, ChurnMeasuresMultiGpuPlacementsToo) {
  SimOptions o = Churn(42);
  o.topology = core::TopologyTemplate::kMixed;
  const RunResult r = MustRun(Builtin(), "cas", o);
  EXPECT_GT(r.topology.multi_gpu_pods, 0);
  EXPECT_DOUBLE_EQ(r.best_bandwidth_pct, 100.0);
}

// The NUMA line of issue 14: every placement whose CPU request fits on its GPUs' NUMA node gets
// its cores there, and the placement says which. Checked decision by decision over a whole
// fill of the built-in workload on both templates.
TEST_F(SimulatorTest, EveryGpuPodWhoseCpuFitsItsGpusNumaNodeIsPinnedThere) {
  std::vector<core::NodeSpec> nodes = Builtin().nodes;
  core::ApplyTopologyTemplate(core::TopologyTemplate::kMixed, &nodes);
  absl::StatusOr<core::ClusterState> state = core::ClusterState::Create(nodes);
  ASSERT_TRUE(state.ok()) << state.status();
  sched::PolicyContext ctx;
  absl::StatusOr<sched::Profile> profile = sched::Registry::Builtins().Create("cas", ctx);
  ASSERT_TRUE(profile.ok()) << profile.status();
  sched::Framework fw(std::move(*profile), sched::FrameworkOptions{});
  int pinned = 0, too_big = 0;
  for (int round = 0; round < 3; ++round) {  // the workload three times: nodes fill up
    for (const core::PodSpec& spec : Builtin().pods) {
      core::PodShape pod = spec.shape;
      pod.gpu_model_mask = state->ModelMask(spec.gpu_spec);
      fw.NotifyArrival(pod);
      const sched::Outcome out = fw.Schedule(pod, *state);
      if (!out.ok() || pod.num_gpu == 0) continue;
      const int n = out.placement.node;
      const int home = sched::HomeNuma(state->node(n), out.placement);
      ASSERT_GE(home, 0);
      if (out.placement.numa == home) {
        ++pinned;
        continue;
      }
      // Not pinned: its home could not hold it (unchanged by this pod, which is not there).
      ASSERT_EQ(out.placement.numa, -1);
      EXPECT_TRUE(state->numa_cpu_left(n, home) < pod.cpu_milli ||
                  state->numa_memory_left(n, home) < pod.memory_mib)
          << spec.name << " on " << state->node(n).name;
      ++too_big;
    }
  }
  state->CheckInvariants();
  EXPECT_GT(pinned, 0);
  EXPECT_GT(too_big, 0);  // the fill reaches NUMA nodes without room: both branches ran
}

TEST(ModeNameTest, NamesEveryMode) {
  EXPECT_EQ(ModeName(Mode::kFill), "fill");
  EXPECT_EQ(ModeName(Mode::kChurn), "churn");
  EXPECT_EQ(ModeName(Mode::kReplay), "replay");
}

TEST(BuiltinWorkloadTest, HasTheDocumentedCluster) {
  const Workload w = BuiltinWorkload();
  EXPECT_EQ(w.nodes.size(), 96u);
  int gpus = 0;
  for (const core::NodeSpec& n : w.nodes) gpus += n.num_gpus;
  EXPECT_EQ(gpus, 48 * 8 + 32 * 2 + 16 * 4);
  EXPECT_FALSE(w.pods.empty());
  // Deterministic.
  const Workload again = BuiltinWorkload();
  ASSERT_EQ(again.pods.size(), w.pods.size());
  for (size_t i = 0; i < w.pods.size(); ++i) {
    EXPECT_EQ(again.pods[i].shape, w.pods[i].shape);
    EXPECT_EQ(again.pods[i].creation_s, w.pods[i].creation_s);
  }
}

}  // namespace
}  // namespace seedance::sim
