#include "seedance/serving/apdf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace seedance::serving {
namespace {

using S = ApdfState;

// Feeds whole windows of statistics; time advances one window per call.
class ApdfWindowTest : public ::testing::Test {
 protected:
  void Feed(ApdfBreaker& b, int windows, double error_rate, double p99_s, double qps = 100) {
    for (int i = 0; i < windows; ++i) {
      b.EvaluateWindow({t_, static_cast<int64_t>(qps), qps, error_rate, p99_s});
      t_ += b.options().window_s;
    }
  }
  double t_ = 0;
};

TEST_F(ApdfWindowTest, StartsIdleAndMonitorsOnceTrafficArrives) {
  ApdfBreaker b;
  EXPECT_EQ(b.state(), S::kIdle);
  Feed(b, 3, 0.0, 0.05, /*qps=*/1);  // below min_qps (2): still idle
  EXPECT_EQ(b.state(), S::kIdle);
  Feed(b, 1, 0.0, 0.05);
  EXPECT_EQ(b.state(), S::kMonitoring);
}

TEST_F(ApdfWindowTest, ErrorRateThresholdIsEightAndAHalfPercent) {
  ApdfBreaker below;
  Feed(below, 60, 0.084, 0.05);
  EXPECT_EQ(below.state(), S::kMonitoring);
  ApdfBreaker above;
  Feed(above, 10, 0.01, 0.05);
  Feed(above, 3, 0.086, 0.05);
  EXPECT_EQ(above.state(), S::kDegraded);
  EXPECT_NE(above.transitions().back().reason.find("error rate 8.6% > 8.5%"), std::string::npos);
}

TEST_F(ApdfWindowTest, LatencyThresholdIsOnePointEightTimesTheP99Baseline) {
  ApdfBreaker below;
  below.set_p99_baseline(0.100);
  Feed(below, 60, 0.0, 0.179);
  EXPECT_EQ(below.state(), S::kMonitoring);
  ApdfBreaker above;
  above.set_p99_baseline(0.100);
  Feed(above, 10, 0.0, 0.100);
  Feed(above, 3, 0.0, 0.181);
  EXPECT_EQ(above.state(), S::kDegraded);
}

TEST_F(ApdfWindowTest, QpsOverloadDegradesAndRecoversWithTheLoad) {
  ApdfOptions o;
  o.max_qps = 200;
  ApdfBreaker b(o);
  Feed(b, 10, 0.01, 0.05, /*qps=*/150);
  EXPECT_EQ(b.state(), S::kMonitoring);
  Feed(b, 3, 0.01, 0.05, /*qps=*/260);
  EXPECT_EQ(b.state(), S::kDegraded);
  EXPECT_NE(b.transitions().back().reason.find("overload: 260 QPS > 200"), std::string::npos);
  Feed(b, 20, 0.01, 0.05, /*qps=*/150);  // under the limit but not under 0.7 x 200: hold
  EXPECT_EQ(b.state(), S::kDegraded);
  Feed(b, 10, 0.01, 0.05, /*qps=*/100);
  EXPECT_EQ(b.state(), S::kMonitoring);
}

TEST_F(ApdfWindowTest, LearnsTheBaselineFromHealthyMonitoringWindows) {
  ApdfBreaker b;
  Feed(b, 4, 0.0, 0.080);
  Feed(b, 3, 0.0, 1.0);  // latency trigger is not armed before baseline_windows windows
  EXPECT_EQ(b.state(), S::kMonitoring);
  ApdfBreaker c;
  Feed(c, 30, 0.0, 0.080);
  EXPECT_NEAR(c.p99_baseline_s(), 0.080, 1e-9);
}

TEST_F(ApdfWindowTest, AlternatingBreachesDoNotTrip) {
  ApdfBreaker b;
  Feed(b, 10, 0.01, 0.05);
  for (int i = 0; i < 50; ++i) {
    Feed(b, 2, 0.12, 0.05);  // two bad windows, one good: never trip_windows in a row
    Feed(b, 1, 0.01, 0.05);
  }
  EXPECT_EQ(b.state(), S::kMonitoring);
  EXPECT_EQ(b.transitions().size(), 1u);  // Idle -> Monitoring only
}

TEST_F(ApdfWindowTest, HysteresisBandHoldsTheDegradedState) {
  ApdfBreaker b;
  Feed(b, 10, 0.01, 0.05);
  Feed(b, 5, 0.12, 0.05);
  ASSERT_EQ(b.state(), S::kDegraded);
  Feed(b, 100, 0.07, 0.05);  // below 8.5% but above 0.7 * 8.5%: not healthy
  EXPECT_EQ(b.state(), S::kDegraded);
  Feed(b, 5, 0.02, 0.05);  // recover_windows healthy windows
  EXPECT_EQ(b.state(), S::kRecovering);
  Feed(b, 5, 0.02, 0.05);  // recovering_windows more
  EXPECT_EQ(b.state(), S::kMonitoring);
}

TEST_F(ApdfWindowTest, RelapseDuringRecoveryDegradesAgain) {
  ApdfBreaker b;
  Feed(b, 10, 0.01, 0.05);
  Feed(b, 6, 0.12, 0.05);
  Feed(b, 6, 0.01, 0.05);
  ASSERT_EQ(b.state(), S::kRecovering);
  Feed(b, 6, 0.12, 0.05);
  EXPECT_EQ(b.state(), S::kDegraded);
  EXPECT_NE(b.transitions().back().reason.find("relapse"), std::string::npos);
}

TEST_F(ApdfWindowTest, QuietTrafficReturnsToIdle) {
  ApdfBreaker b;
  Feed(b, 10, 0.01, 0.05);
  Feed(b, 9, 0, 0, /*qps=*/0);  // idle_windows = 10
  EXPECT_EQ(b.state(), S::kMonitoring);
  Feed(b, 1, 0, 0, 0);
  EXPECT_EQ(b.state(), S::kIdle);
}

// Chaos test: request-level traffic at 100 QPS with Gaussian noise (sigma 2 points) on the
// error rate and random 50-300 ms latency spikes, through a scripted sequence of faults. For many
// seeds the breaker must take exactly the expected path: no flapping, correct final state.
struct Phase {
  double seconds;
  double qps;
  double error_rate;           // mean; each window draws mean + N(0, 0.02)
  double spike_prob;           // probability that a request gets a 50-300 ms spike
  double latency_scale = 1.0;  // a slower GPU / longer batches: all latencies scaled
};

std::vector<ApdfState> RunChaos(uint64_t seed, const std::vector<Phase>& phases, ApdfBreaker& b) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.02);
  std::lognormal_distribution<double> base(std::log(0.040), 0.25);  // 40 ms median
  std::uniform_real_distribution<double> spike(0.050, 0.300);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double t = 0;
  for (const Phase& p : phases) {
    const double end = t + p.seconds;
    const double w = b.options().window_s;
    double window_end = (std::floor(t / w) + 1.0) * w;
    double err = std::clamp(p.error_rate + noise(rng), 0.0, 1.0);
    if (p.qps <= 0) {
      t = end;
      b.Advance(t);
      continue;
    }
    while (t < end) {
      t += 1.0 / p.qps;
      if (t >= window_end) {  // a new sampling window: a new draw of the noisy error signal
        err = std::clamp(p.error_rate + noise(rng), 0.0, 1.0);
        window_end += w;
      }
      double latency = p.latency_scale * base(rng);
      if (u(rng) < p.spike_prob) latency += spike(rng);
      b.Record(t, latency, u(rng) < err);
    }
  }
  b.Advance(t + b.options().window_s);
  std::vector<ApdfState> path = {ApdfState::kIdle};
  for (const ApdfTransition& tr : b.transitions()) path.push_back(tr.to);
  return path;
}

std::string Path(const std::vector<ApdfState>& path) {
  std::string s;
  for (ApdfState st : path) s += std::string(ApdfStateName(st)) + " ";
  return s;
}

TEST(ApdfChaosTest, FaultScriptTakesTheExpectedPathForEverySeed) {
  const std::vector<Phase> script = {
      {120, 100, 0.01, 0.002},      // healthy (rare spikes stay under the P99)
      {60, 100, 0.16, 0.002},       // error fault          -> Degraded
      {60, 100, 0.35, 0.002},       // severe error fault   -> Fallback
      {120, 100, 0.01, 0.002},      // healthy              -> Recovering -> Monitoring
      {60, 100, 0.01, 0.002, 2.4},  // latency x2.4: P99 ~170 ms > 1.8 x 71 ms -> Degraded
      {120, 100, 0.01, 0.002},      // healthy              -> Recovering -> Monitoring
      {60, 100, 0.01, 0.20},        // 20% of requests spike 50-300 ms: P99 > 3.5x -> Fallback
      {120, 100, 0.01, 0.002},      // healthy              -> Recovering -> Monitoring
      {60, 0, 0, 0},                // no traffic           -> Idle
  };
  const std::vector<ApdfState> want = {S::kIdle,       S::kMonitoring, S::kDegraded, S::kFallback,
                                       S::kRecovering, S::kMonitoring, S::kDegraded, S::kRecovering,
                                       S::kMonitoring, S::kDegraded,   S::kFallback, S::kRecovering,
                                       S::kMonitoring, S::kIdle};
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    ApdfBreaker b;
    const std::vector<ApdfState> path = RunChaos(seed, script, b);
    EXPECT_EQ(path, want) << "seed " << seed << ": " << Path(path);
    EXPECT_EQ(b.state(), S::kIdle) << "seed " << seed;
    // The learnt baseline is the healthy P99 (about 40 ms * e^(2.33 * 0.25) = 71 ms).
    EXPECT_GT(b.p99_baseline_s(), 0.055) << "seed " << seed;
    EXPECT_LT(b.p99_baseline_s(), 0.095) << "seed " << seed;
    // Reaction times: each fault is caught within a few windows of its start.
    ASSERT_EQ(b.transitions().size(), want.size() - 1);
    // trip_windows (3) windows of 5 s, plus the window in progress and up to two noisy windows.
    EXPECT_LE(b.transitions()[1].time_s, 120 + 31) << "seed " << seed;  // Degraded
    EXPECT_LE(b.transitions()[2].time_s, 180 + 31) << "seed " << seed;  // Fallback
    EXPECT_LE(b.transitions()[5].time_s, 360 + 31) << "seed " << seed;  // Degraded (latency)
    EXPECT_LE(b.transitions()[8].time_s, 540 + 31) << "seed " << seed;  // Degraded (spikes)
  }
}

TEST(ApdfChaosTest, NoiseAndSpikesAloneNeverTrip) {
  for (uint64_t seed = 100; seed < 106; ++seed) {
    ApdfBreaker b;
    const std::vector<ApdfState> path =
        RunChaos(seed, {{600, 100, 0.03, 0.002}}, b);  // 3% errors +- 2 points, 0.2% spikes
    EXPECT_EQ(path, (std::vector<ApdfState>{S::kIdle, S::kMonitoring}))
        << "seed " << seed << ": " << Path(path);
  }
}

TEST(ApdfChaosTest, FaultNearTheThresholdDoesNotFlap) {
  // Mean error exactly at the threshold: the noisy signal crosses it every few windows. The
  // breaker may degrade, but dwell time, streaks and hysteresis bound the transitions.
  for (uint64_t seed = 200; seed < 206; ++seed) {
    ApdfBreaker b;
    RunChaos(seed, {{30, 100, 0.01, 0.003}, {600, 100, 0.085, 0.003}}, b);
    EXPECT_LE(b.transitions().size(), 1u + 4u) << "seed " << seed;
    for (size_t i = 1; i < b.transitions().size(); ++i) {
      EXPECT_GE(b.transitions()[i].time_s - b.transitions()[i - 1].time_s, b.options().min_dwell_s);
    }
  }
}

}  // namespace
}  // namespace seedance::serving
