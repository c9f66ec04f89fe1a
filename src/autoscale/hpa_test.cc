#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/autoscale/autoscaler.h"

namespace seedance::autoscale {
namespace {

using ::testing::HasSubstr;

// One control period: the metric values the HPA sees at t_s (target 10 each) and the replica
// count it must answer. The replica count fed in is the previous row's answer (or `start`).
struct Step {
  double t_s;
  std::vector<double> metric;  // one value per metric, all with target 10
  int want;
  std::string want_reason;
};

class HpaTest : public ::testing::Test {
 protected:
  // Runs `steps` from `start` replicas; every row is checked.
  static void Run(const HpaOptions& options, int start, const std::vector<Step>& steps) {
    auto hpa = NewHpaAutoscaler(options);
    ASSERT_TRUE(hpa.ok()) << hpa.status();
    int current = start;
    for (const Step& s : steps) {
      Observation obs;
      obs.now_s = s.t_s;
      obs.current_replicas = current;
      for (size_t i = 0; i < s.metric.size(); ++i) {
        obs.metrics.push_back({"m" + std::to_string(i), s.metric[i], 10});
      }
      const Decision d = (*hpa)->Decide(obs);
      EXPECT_EQ(d.replicas, s.want) << "t=" << s.t_s;
      if (!s.want_reason.empty()) {
        EXPECT_EQ(d.reason, s.want_reason) << "t=" << s.t_s;
      }
      current = d.replicas;
    }
  }
  static HpaOptions Max(int max_replicas) {
    HpaOptions o;
    o.max_replicas = max_replicas;
    return o;
  }
};

TEST_F(HpaTest, NoChangeInsideTheToleranceBand) {
  Run(Max(100), 4,
      {
          {0, {10.9}, 4, "tolerance"},   // ratio 1.09: |1 - 1.09| <= 0.1
          {15, {9.1}, 4, "tolerance"},   // ratio 0.91
          {30, {11.5}, 5, "scale-up"},   // ratio 1.15 > 1.1: ceil(4 * 1.15) = ceil(4.6) = 5
          {45, {10.5}, 5, "tolerance"},  // ratio 1.05 at 5 replicas
      });
}

TEST_F(HpaTest, DefaultBehaviourRateLimitsUpAndHoldsDownFor300s) {
  Run(Max(100), 2,
      {
          {0, {10}, 2, "tolerance"},  // ratio 1: proposal 2
          // ratio 5: ceil(2 * 5) = 10; up limit max(2 * 2 = 4 (100%), 2 + 4 = 6 (4 pods)) = 6.
          {15, {50}, 6, "rate-limited"},
          // ratio 1.5: ceil(6 * 1.5) = 9; the +4 at t=15 is 15 s old, outside (15, 30]: limit
          // max(12, 10) = 12, so 9 is allowed.
          {30, {15}, 9, "scale-up"},
          {45, {10}, 9, "tolerance"},  // proposal 9
          // ratio 0.5: ceil(9 * 0.5) = ceil(4.5) = 5; highest proposal in (-240, 60] is 10 (t=15):
          // recommendation = clamp(9, 5, 10) = 9.
          {60, {5}, 9, "stabilized"},
          // Proposals in (0, 300]: 10 (t=15), 9, 9, 5, and ceil(9 * 0.5) = 5: still 9.
          {300, {5}, 9, "stabilized"},
          // (15, 315]: t=15 (300 s old) has left the window; 9 (t=30) is the highest: 9.
          {315, {5}, 9, "stabilized"},
          // (30, 330]: t=45's 9 is still in the window.
          {330, {5}, 9, "stabilized"},
          // (45, 345]: only 5s left; scale-down policy 100% per 15 s allows 0, so 5.
          {345, {5}, 5, "scale-down"},
      });
}

TEST_F(HpaTest, ScaleUpLimitCountsChangesWithinTheTrailingPeriod) {
  HpaOptions o = Max(100);
  o.scale_down.stabilization_window_s = 0;
  Run(o, 5,
      {
          // ratio 4: ceil(5 * 4) = 20; limit max(10, 9) = 10.
          {0, {40}, 10, "rate-limited"},
          // ratio 2: ceil(10 * 2) = 20; +5 at t=0 is inside (-10, 5]: period start 10 - 5 = 5,
          // limit max(ceil(5 * 2) = 10, 5 + 4 = 9) = 10: no growth.
          {5, {20}, 10, "rate-limited"},
          // +5 at t=0 still inside (-5, 10].
          {10, {20}, 10, "rate-limited"},
          // t=0 is 15 s old, out of (0, 15]: limit max(20, 14) = 20.
          {15, {20}, 20, "scale-up"},
      });
}

TEST_F(HpaTest, HighestProposalOverMetricsWins) {
  Run(Max(100), 4,
      {
          // m0 ratio 1.05 (tolerance: 4), m1 ratio 0.5 (ceil(2) = 2): max 4.
          {0, {10.5, 5}, 4, "steady"},
          // m0 ratio 1.5 (ceil(6) = 6), m1 ratio 2 (8): max 8 <= limit max(8, 8).
          {15, {15, 20}, 8, "scale-up"},
      });
}

TEST_F(HpaTest, MinAndMaxReplicasClamp) {
  HpaOptions o;
  o.min_replicas = 2;
  o.max_replicas = 8;
  o.scale_down.stabilization_window_s = 0;
  Run(o, 3,
      {
          // ratio 0.1: ceil(3 * 0.1) = 1, below min 2.
          {0, {1}, 2, "clamped"},
          // ratio 10: 20; limit max(4, 6) = 6 (below max 8): rate-limited.
          {15, {100}, 6, "rate-limited"},
          // ratio 10: 60; limit max(12, 10) = 12, max 8.
          {30, {100}, 8, "clamped"},
      });
}

TEST_F(HpaTest, ReplicasAboveMaxAreBroughtDown) {
  Run(Max(5), 7, {{0, {10}, 5, "clamped"}});  // tolerance keeps 7, max 5 clamps
}

TEST_F(HpaTest, ScaleDownPodsPolicyLimitsRemovalsPerPeriod) {
  HpaOptions o = Max(100);
  o.scale_down = {0, ScalingRules::Select::kMax, {{ScalingPolicy::Type::kPods, 1, 60}}};
  Run(o, 5,
      {
          {0, {2}, 4, "rate-limited"},   // ceil(5 * 0.2) = 1; at most 1 pod per 60 s: 4
          {15, {2}, 4, "rate-limited"},  // -1 at t=0 inside (-45, 15]: period start 5, floor 4
          {60, {2}, 3, "rate-limited"},  // t=0 is out of (0, 60]: floor 3
      });
}

TEST_F(HpaTest, SelectMinTakesTheSmallestAllowedChange) {
  HpaOptions o = Max(100);
  o.scale_up.select = ScalingRules::Select::kMin;
  Run(o, 10, {{0, {100}, 14, "rate-limited"}});  // min(20 (100%), 14 (+4 pods))
}

TEST_F(HpaTest, DisabledDirectionNeverMoves) {
  HpaOptions o = Max(100);
  o.scale_down.select = ScalingRules::Select::kDisabled;
  o.scale_down.stabilization_window_s = 0;
  // ceil(6 * 0.1) = 1 but scale-down is off: 6. Then ratio 2: 12 = limit max(12, 10).
  Run(o, 6, {{0, {1}, 6, "rate-limited"}, {15, {20}, 12, "scale-up"}});
}

TEST_F(HpaTest, ZeroReplicasDisablesScaling) { Run(Max(100), 0, {{0, {50}, 0, "disabled"}}); }

TEST_F(HpaTest, NoMetricsKeepsTheReplicaCount) { Run(Max(100), 3, {{0, {}, 3, "steady"}}); }

TEST(HpaOptionsTest, BadOptionsNameTheField) {
  struct Row {
    std::string name;
    void (*mutate)(HpaOptions*);
    std::string want;
  };
  const std::vector<Row> rows = {
      {"min0", [](HpaOptions* o) { o->min_replicas = 0; }, "field 'min_replicas'"},
      {"max<min", [](HpaOptions* o) { o->max_replicas = 0; }, "field 'max_replicas'"},
      {"tolerance", [](HpaOptions* o) { o->tolerance = -0.1; }, "field 'tolerance'"},
      {"window", [](HpaOptions* o) { o->scale_down.stabilization_window_s = -1; },
       "field 'scale_down.stabilization_window_s'"},
      {"no policies", [](HpaOptions* o) { o->scale_up.policies.clear(); },
       "field 'scale_up.policies'"},
      {"value", [](HpaOptions* o) { o->scale_up.policies[1].value = 0; },
       "field 'scale_up.policies[1].value'"},
      {"percent down > 100", [](HpaOptions* o) { o->scale_down.policies[0].value = 150; },
       "field 'scale_down.policies[0].value': must be in [1, 100]"},
      {"period", [](HpaOptions* o) { o->scale_up.policies[0].period_s = 0; },
       "field 'scale_up.policies[0].period_s'"},
  };
  for (const Row& r : rows) {
    HpaOptions o;
    r.mutate(&o);
    auto hpa = NewHpaAutoscaler(o);
    ASSERT_FALSE(hpa.ok()) << r.name;
    EXPECT_EQ(hpa.status().code(), absl::StatusCode::kInvalidArgument) << r.name;
    EXPECT_THAT(std::string(hpa.status().message()), HasSubstr(r.want)) << r.name;
  }
}

TEST(AutoscalerModeTest, NamesRoundTrip) {
  for (Mode m : {Mode::kHpa, Mode::kSeed, Mode::kPredictive}) {
    auto parsed = ParseMode(ModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_THAT(std::string(ParseMode("keda").status().message()), HasSubstr("got 'keda'"));
}

using HpaDeathTest = HpaTest;

TEST_F(HpaDeathTest, TimeGoingBackwardsIsABug) {
  auto hpa = *NewHpaAutoscaler();
  Observation obs;
  obs.now_s = 10;
  obs.current_replicas = 1;
  hpa->Decide(obs);
  obs.now_s = 5;
  EXPECT_DEATH(hpa->Decide(obs), "invariant violated.*comes before the previous one at");
}

TEST_F(HpaDeathTest, NegativeReplicasIsABug) {
  auto hpa = *NewHpaAutoscaler();
  Observation obs;
  obs.current_replicas = -1;
  EXPECT_DEATH(hpa->Decide(obs), "invariant violated.*current_replicas -1 is negative");
}

TEST_F(HpaDeathTest, NegativeMetricIsABug) {
  auto hpa = *NewHpaAutoscaler();
  Observation obs;
  obs.current_replicas = 1;
  obs.metrics.push_back({"rps", -1, 10});
  EXPECT_DEATH(hpa->Decide(obs), "invariant violated.*metric rps = -1 is not a finite value >= 0");
}

TEST_F(HpaDeathTest, ZeroTargetIsABug) {
  auto hpa = *NewHpaAutoscaler();
  Observation obs;
  obs.current_replicas = 1;
  obs.metrics.push_back({"rps", 1, 0});
  EXPECT_DEATH(hpa->Decide(obs), "invariant violated.*metric rps: target 0 is not > 0");
}

}  // namespace
}  // namespace seedance::autoscale
