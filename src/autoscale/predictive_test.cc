#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/autoscale/autoscaler.h"

namespace seedance::autoscale {
namespace {

using ::testing::HasSubstr;

struct Step {
  double t_s;
  double rate_rps;
  int want;
};

class PredictiveTest : public ::testing::Test {
 protected:
  static PredictiveOptions Opts() {
    PredictiveOptions o;
    o.max_replicas = 100;
    o.capacity_rps_per_replica = 2;
    o.horizon_s = 60;
    o.trend_window_s = 300;
    o.scale_down_window_s = 120;
    return o;
  }
  static void Run(const PredictiveOptions& options, const std::vector<Step>& steps) {
    auto p = NewPredictiveAutoscaler(options);
    ASSERT_TRUE(p.ok()) << p.status();
    int current = 1;
    for (const Step& s : steps) {
      Observation obs;
      obs.now_s = s.t_s;
      obs.current_replicas = current;
      obs.arrival_rate_rps = s.rate_rps;
      const Decision d = (*p)->Decide(obs);
      EXPECT_EQ(d.replicas, s.want) << "t=" << s.t_s;
      current = d.replicas;
    }
  }
};

TEST_F(PredictiveTest, SteadyRateNeedsRateOverCapacity) {
  // 10 req/s, 2 per replica: 5; no trend, no forecast error, no headroom.
  Run(Opts(), {{0, 10, 5}, {15, 10, 5}, {30, 10, 5}, {90, 10, 5}, {300, 10, 5}});
}

TEST_F(PredictiveTest, RampIsServedAheadByTheTrend) {
  // Rate rises 1 req/s every 15 s: from the second sample on, the Theil-Sen slope is 1/15 per s,
  // so the forecast over the 60 s horizon is rate + 4 (the first forecast is scored at t=60, so
  // no headroom yet): t=0: 1 / 2 -> 1 (one sample, no slope); t=15: (2 + 4) / 2 = 3;
  // t=30: 7 / 2 -> 4; t=45: 8 / 2 = 4.
  Run(Opts(), {{0, 1, 1}, {15, 2, 3}, {30, 3, 4}, {45, 4, 4}});
}

TEST_F(PredictiveTest, ScaleDownWaitsForTheStabilisationWindow) {
  PredictiveOptions o = Opts();
  o.trend_window_s = 1;  // level = newest sample: isolates the hold
  Run(o, {
             {0, 20, 10},
             {15, 2, 10},   // recommendation 1; the highest of (−105, 15] is 10
             {105, 2, 10},  // t=0 is 105 s old: still held
             {120, 2, 1},   // t=0 out of (0, 120]: 1
         });
}

TEST_F(PredictiveTest, UnderForecastsBecomeHeadroom) {
  PredictiveOptions o = Opts();
  o.trend_window_s = 1;
  o.horizon_s = 15;
  o.headroom_quantile = 1;  // the worst recent miss
  o.scale_down_window_s = 0;
  Run(o, {
             {0, 2, 1},    // forecast 2, no error yet: 2 / 2 = 1
             {15, 10, 9},  // t=0's forecast (2) missed this peak (10) by 8: (10 + 8) / 2 = 9
             {30, 2, 5},   // t=15's forecast 10 >= 2 adds a 0; worst miss 8: (2 + 8) / 2 = 5
         });
}

TEST(PredictiveOptionsTest, BadOptionsNameTheField) {
  struct Row {
    std::string name;
    void (*mutate)(PredictiveOptions*);
    std::string want;
  };
  const std::vector<Row> rows = {
      {"max", [](PredictiveOptions* o) { o->max_replicas = 0; }, "field 'max_replicas'"},
      {"capacity", [](PredictiveOptions* o) { o->capacity_rps_per_replica = 0; },
       "predictive: field 'capacity_rps_per_replica': must be > 0 (got 0)"},
      {"horizon", [](PredictiveOptions* o) { o->horizon_s = -1; }, "field 'horizon_s'"},
      {"trend", [](PredictiveOptions* o) { o->trend_window_s = 0; }, "field 'trend_window_s'"},
      {"quantile", [](PredictiveOptions* o) { o->headroom_quantile = 2; },
       "field 'headroom_quantile'"},
      {"errors", [](PredictiveOptions* o) { o->error_window_s = 0; }, "field 'error_window_s'"},
      {"down", [](PredictiveOptions* o) { o->scale_down_window_s = -1; },
       "field 'scale_down_window_s'"},
      {"nan", [](PredictiveOptions* o) { o->horizon_s = 0.0 / 0.0; }, "field 'horizon_s'"},
  };
  for (const Row& r : rows) {
    PredictiveOptions o;
    r.mutate(&o);
    auto p = NewPredictiveAutoscaler(o);
    ASSERT_FALSE(p.ok()) << r.name;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << r.name;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(r.want)) << r.name;
  }
}

}  // namespace
}  // namespace seedance::autoscale
