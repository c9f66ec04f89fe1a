#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/autoscale/autoscaler.h"

namespace seedance::autoscale {
namespace {

using ::testing::HasSubstr;

// One period of the seed policy. `k` sets every metric to k times its target (CPU 0.7 k, P95
// k seconds, error rate 0.01 k), so the raw score is exactly k; the row's comment has the EWMA
// (alpha 0.8: s = 0.8 k + 0.2 s_prev), the counters and the step.
struct Step {
  double k;
  double want_score;
  int want;
  std::string want_reason;
};

class SeedTest : public ::testing::Test {
 protected:
  static void Run(const SeedOptions& options, int start, const std::vector<Step>& steps) {
    auto seed = NewSeedAutoscaler(options);
    ASSERT_TRUE(seed.ok()) << seed.status();
    int current = start;
    double t = 0;
    for (const Step& s : steps) {
      Observation obs;
      obs.now_s = t;
      obs.current_replicas = current;
      obs.cpu_utilization = 0.7 * s.k;
      obs.p95_latency_s = 1.0 * s.k;
      obs.error_rate = 0.01 * s.k;
      const Decision d = (*seed)->Decide(obs);
      EXPECT_NEAR(d.score, s.want_score, 1e-9) << "t=" << t;
      EXPECT_EQ(d.replicas, s.want) << "t=" << t;
      EXPECT_EQ(d.reason, s.want_reason) << "t=" << t;
      current = d.replicas;
      t += 15;
    }
  }
  static SeedOptions Max(int max_replicas) {
    SeedOptions o;
    o.max_replicas = max_replicas;
    return o;
  }
};

TEST_F(SeedTest, ScalesUpAfterThreeSmoothedPeriodsAboveThresholdTimes1_1) {
  Run(Max(20), 4,
      {
          {1.0, 1.0, 4, "steady"},     // first period: s = 1.0; 0.9 <= s <= 1.1
          {2.0, 1.8, 4, "counting"},   // 1.6 + 0.2 * 1.0 = 1.8 > 1.1: up 1
          {2.0, 1.96, 4, "counting"},  // 1.6 + 0.36 = 1.96: up 2
          // 0.8 + 0.392 = 1.192 > 1.1: up 3 -> max(4 + 1, ceil(4 * 1.192 = 4.768)) = 5
          // (cap ceil(4 * 2) = 8); both counters restart.
          {1.0, 1.192, 5, "scale-up"},
          {1.0, 1.0384, 5, "steady"},  // 0.8 + 0.2384 = 1.0384: inside [0.9, 1.1]
      });
}

TEST_F(SeedTest, ScalesDownAfterFiveConsecutivePeriodsBelowAndABreakRestartsTheCount) {
  Run(Max(20), 5,
      {
          {1.0, 1.0, 5, "steady"},             // s = 1.0
          {0.5, 0.6, 5, "counting"},           // 0.4 + 0.2 = 0.6 < 0.9: down 1
          {0.5, 0.52, 5, "counting"},          // 0.4 + 0.12 = 0.52: down 2
          {1.5, 1.304, 5, "counting"},         // 1.2 + 0.104 = 1.304: down 0, up 1
          {0.5, 0.6608, 5, "counting"},        // 0.4 + 0.2608: up 0, down 1
          {0.5, 0.53216, 5, "counting"},       // 0.4 + 0.13216: down 2
          {0.5, 0.506432, 5, "counting"},      // 0.4 + 0.106432: down 3
          {0.5, 0.5012864, 5, "counting"},     // 0.4 + 0.1012864: down 4
          {0.5, 0.50025728, 4, "scale-down"},  // 0.4 + 0.10025728: down 5 -> 5 - 1 = 4
          {0.5, 0.500051456, 4, "counting"},   // 0.4 + 0.100051456: down 1 again
      });
}

TEST_F(SeedTest, ScaleUpIsProportionalButAtMostDoubles) {
  Run(Max(100), 3,
      {
          {10, 10, 3, "counting"},  // s = 10 (first): up 1
          {10, 10, 3, "counting"},  // up 2
          {10, 10, 6, "scale-up"},  // up 3: min(ceil(3 * 2) = 6, ceil(3 * 10) = 30) = 6
          {10, 10, 6, "counting"},  // counters restarted: up 1
      });
}

TEST_F(SeedTest, ClampsToMinAndMaxReplicas) {
  SeedOptions o = Max(5);
  Run(o, 4,
      {
          {2, 2, 4, "counting"},
          {2, 2, 4, "counting"},
          {2, 2, 5, "clamped"},  // min(8, max(5, ceil(8))) = 8, max_replicas 5
      });
  o.min_replicas = 1;
  Run(o, 1,
      {
          {0.1, 0.1, 1, "counting"},
          {0.1, 0.1, 1, "counting"},
          {0.1, 0.1, 1, "counting"},
          {0.1, 0.1, 1, "counting"},
          {0.1, 0.1, 1, "clamped"},  // down 5: 1 - 1 = 0, min_replicas 1
      });
}

TEST(SeedScoreTest, WeightsAreTheSeedsTable) {
  auto seed = *NewSeedAutoscaler();
  Observation obs;
  obs.current_replicas = 2;
  obs.cpu_utilization = 0.35;  // 0.5 of target 0.7, weight 0.4:  0.2
  obs.p95_latency_s = 0.5;     // 0.5 of target 1 s, weight 0.35: 0.175
  obs.error_rate = 0.03;       // 3 x target 0.01, weight 0.25:  0.75
  EXPECT_NEAR(seed->Decide(obs).score, 1.125, 1e-12);
}

TEST(SeedOptionsTest, BadOptionsNameTheField) {
  struct Row {
    std::string name;
    void (*mutate)(SeedOptions*);
    std::string want;
  };
  const std::vector<Row> rows = {
      {"min", [](SeedOptions* o) { o->min_replicas = 0; }, "field 'min_replicas'"},
      {"weight", [](SeedOptions* o) { o->latency_weight = -1; }, "field 'latency_weight'"},
      {"weights 0", [](SeedOptions* o) { o->cpu_weight = o->latency_weight = o->error_weight = 0; },
       "field 'cpu_weight + latency_weight + error_weight'"},
      {"target", [](SeedOptions* o) { o->error_rate_target = 0; }, "field 'error_rate_target'"},
      {"alpha", [](SeedOptions* o) { o->alpha = 1.5; }, "field 'alpha': must be in (0, 1]"},
      {"up_factor", [](SeedOptions* o) { o->up_factor = 1; }, "field 'up_factor'"},
      {"down_factor", [](SeedOptions* o) { o->down_factor = 1; }, "field 'down_factor'"},
      {"up_periods", [](SeedOptions* o) { o->up_periods = 0; }, "field 'up_periods'"},
      {"down_periods", [](SeedOptions* o) { o->down_periods = 0; }, "field 'down_periods'"},
      {"max_up_ratio", [](SeedOptions* o) { o->max_up_ratio = 1; }, "field 'max_up_ratio'"},
      {"down_step", [](SeedOptions* o) { o->down_step_replicas = 0; },
       "field 'down_step_replicas'"},
  };
  for (const Row& r : rows) {
    SeedOptions o;
    r.mutate(&o);
    auto seed = NewSeedAutoscaler(o);
    ASSERT_FALSE(seed.ok()) << r.name;
    EXPECT_EQ(seed.status().code(), absl::StatusCode::kInvalidArgument) << r.name;
    EXPECT_THAT(std::string(seed.status().message()), HasSubstr(r.want)) << r.name;
  }
}

}  // namespace
}  // namespace seedance::autoscale
