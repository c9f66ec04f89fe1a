#include "seedance/engine/clock_sync.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::engine {
namespace {

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

ClockSimOptions Quiet() {
  ClockSimOptions o;
  o.jitter_s = 0;
  o.outlier_fraction = 0;
  return o;
}

TEST(ClockSimulatorTest, NoiselessSampleMeasuresTheTrueOffset) {
  ClockSimulator sim(Quiet());
  for (int i = 0; i < 5; ++i) {
    const SimulatedSample s = sim.Next();
    EXPECT_NEAR(s.sample.offset_s, s.true_offset_s, 1e-8);
    EXPECT_NEAR(s.sample.delay_s, 200e-6, 1e-8);
  }
}

TEST(ClockSimulatorTest, TrueOffsetFollowsTheDrift) {
  ClockSimOptions o = Quiet();
  o.drift_ppm = 10;
  o.initial_offset_s = 0;
  ClockSimulator sim(o);
  SimulatedSample s;
  for (int i = 0; i < 100; ++i) s = sim.Next();
  // Client 10 ppm fast for ~100 s: 1 ms ahead, so the server is 1 ms behind it.
  EXPECT_NEAR(s.true_offset_s, -1e-3, 1e-5);
}

TEST(ClockSimulatorTest, AsymmetricOutlierBiasesTheMeasuredOffsetByHalfTheExtraDelay) {
  ClockSimOptions o = Quiet();
  o.outlier_fraction = 1;
  o.outlier_min_s = o.outlier_max_s = 4e-3;
  ClockSimulator sim(o);
  const SimulatedSample s = sim.Next();
  EXPECT_NEAR(std::fabs(s.sample.offset_s - s.true_offset_s), 2e-3, 1e-7);
  EXPECT_NEAR(s.sample.delay_s, 4.2e-3, 1e-7);
}

TEST(RegressionEstimatorTest, TracksANoiselessDriftingClockExactly) {
  auto est = NewRegressionEstimator();
  ClockSimulator sim(Quiet());
  for (int i = 0; i < 20; ++i) {
    const SimulatedSample s = sim.Next();
    est->AddSample(s.sample);
    if (i >= 3) {  // from min_samples_for_frequency samples on, the line is fitted
      EXPECT_NEAR(est->OffsetAt(s.sample.local_time_s), s.true_offset_s, 1e-8);
      EXPECT_NEAR(est->FrequencyPpm(), s.true_freq_ppm, 1e-3);
    }
  }
}

TEST(RegressionEstimatorTest, RejectsDelayOutliers) {
  ClockSimOptions o = Quiet();
  o.jitter_s = 10e-6;
  auto est = NewRegressionEstimator();
  ClockSimulator sim(o);
  for (int i = 0; i < 32; ++i) est->AddSample(sim.Next().sample);
  const int used_before = est->SamplesUsed();
  // A sample that queued 10 ms on the way out: its offset is 5 ms off.
  SimulatedSample next = sim.Next();
  ClockSample bad = next.sample;
  bad.delay_s += 10e-3;
  bad.offset_s += 5e-3;
  est->AddSample(bad);
  EXPECT_EQ(est->SamplesUsed(), used_before);  // window grew by one, the outlier was dropped
  EXPECT_NEAR(est->OffsetAt(bad.local_time_s), next.true_offset_s, 20e-6);
}

TEST(RegressionEstimatorTest, RejectsAResidualOutlierWithNormalDelay) {
  ClockSimOptions o = Quiet();
  o.jitter_s = 10e-6;
  auto est = NewRegressionEstimator();
  ClockSimulator sim(o);
  for (int i = 0; i < 32; ++i) est->AddSample(sim.Next().sample);
  SimulatedSample next = sim.Next();
  ClockSample bad = next.sample;
  bad.offset_s += 1e-3;  // a server that lied by 1 ms, with an ordinary delay
  est->AddSample(bad);
  EXPECT_NEAR(est->OffsetAt(bad.local_time_s), next.true_offset_s, 20e-6);
}

TEST(EwmaEstimatorTest, WeightsTheLastEightByPowersOfDecay) {
  auto est = NewEwmaEstimator();
  double sw = 0, sy = 0, w = 1;
  for (int i = 0; i < 10; ++i) est->AddSample({double(i), double(i), 0});
  for (int age = 0; age < 8; ++age) {
    sw += w;
    sy += w * (9 - age);
    w *= 0.85;
  }
  EXPECT_NEAR(est->OffsetAt(9), sy / sw, 1e-12);
}

TEST(EwmaEstimatorTest, LagsADriftingClockByDriftTimesMeanAge) {
  auto est = NewEwmaEstimator();
  ClockSimulator sim(Quiet());
  SimulatedSample s;
  for (int i = 0; i < 20; ++i) {
    s = sim.Next();
    est->AddSample(s.sample);
  }
  // Mean age of weights 0.85^k, k = 0..7, is 2.67 polls: 26.7 us behind at 10 ppm and 1 s polls.
  const double lag_us = (est->OffsetAt(s.sample.local_time_s) - s.true_offset_s) * 1e6;
  EXPECT_NEAR(lag_us, 26.7, 0.5);
}

// The acceptance condition: 10 ppm drift, 1 s polls, 50 us jitter, 10% delay outliers,
// 64 samples; medians over seeds. The EWMA's lag shows in the same run.
TEST(ScoreEstimatorsTest, RegressionMeetsTargetsWhereEwmaLags) {
  std::vector<double> bias, rms, freq, ewma_bias;
  for (uint64_t seed = 1; seed <= 15; ++seed) {
    ClockSimOptions o;
    o.seed = seed;
    auto reg = NewRegressionEstimator();
    auto ewma = NewEwmaEstimator();
    const auto scores = ScoreEstimators(o, 64, 8, {reg.get(), ewma.get()});
    ASSERT_EQ(scores.size(), 2u);
    EXPECT_EQ(scores[0].estimator, "seedance");
    EXPECT_EQ(scores[1].estimator, "ewma");
    bias.push_back(std::fabs(scores[0].bias_us));
    rms.push_back(scores[0].rms_us);
    freq.push_back(scores[0].freq_error_ppm);
    ewma_bias.push_back(std::fabs(scores[1].bias_us));
  }
  EXPECT_LE(MedianOf(bias), 5.0);
  EXPECT_LE(MedianOf(rms), 20.0);
  EXPECT_LE(MedianOf(freq), 0.5);
  EXPECT_GT(MedianOf(ewma_bias), 20.0);
}

// The same runs with rejection off (delay weights alone already make a 1-20 ms outlier count
// thousands of times less), and with weights and rejection both off (a plain least-squares line):
// the second misses the targets, so the delay information is what meets them.
TEST(ScoreEstimatorsTest, DelayWeightsCarryTheResult) {
  std::vector<double> rms_weights_only, rms_plain;
  for (uint64_t seed = 1; seed <= 15; ++seed) {
    ClockSimOptions o;
    o.seed = seed;
    RegressionOptions no_rejection;
    no_rejection.outlier_delay_factor = 1e12;
    no_rejection.outlier_residual_factor = 1e12;
    RegressionOptions plain = no_rejection;
    plain.delay_floor_s = 1e3;  // every weight ~1e-6: equal weights
    auto a = NewRegressionEstimator(no_rejection);
    auto b = NewRegressionEstimator(plain);
    const auto scores = ScoreEstimators(o, 64, 8, {a.get(), b.get()});
    rms_weights_only.push_back(scores[0].rms_us);
    rms_plain.push_back(scores[1].rms_us);
  }
  EXPECT_LE(MedianOf(rms_weights_only), 20.0);
  EXPECT_GT(MedianOf(rms_plain), 100.0);
}

TEST(ScoreEstimatorsTest, SameSeedSameScores) {
  ClockSimOptions o;
  o.seed = 7;
  auto a = NewRegressionEstimator();
  auto b = NewRegressionEstimator();
  const auto s1 = ScoreEstimators(o, 64, 8, {a.get()});
  const auto s2 = ScoreEstimators(o, 64, 8, {b.get()});
  EXPECT_EQ(s1[0].rms_us, s2[0].rms_us);
  EXPECT_EQ(s1[0].bias_us, s2[0].bias_us);
}

}  // namespace
}  // namespace seedance::engine
