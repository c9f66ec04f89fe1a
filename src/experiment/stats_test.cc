// The statistics of an A/B experiment against answers known without this code: closed forms
// of Student's t for 1 and 2 degrees of freedom (Cauchy: F(t) = 1/2 + atan(t)/pi; nu = 2:
// F(t) = 1/2 + t / (2 sqrt(2 + t^2)); e.g. Johnson, Kotz and Balakrishnan, "Continuous
// Univariate Distributions", vol. 2, ch. 28), the chi-square survival function for 1 and 2
// degrees of freedom (erfc(sqrt(x/2)) and exp(-x/2)), printed t-table quantiles, two-pass
// moments in long double, a numerical integral of the mSPRT's mixture, and seeded simulations
// whose tolerances follow from their sample sizes.
#include "seedance/experiment/stats.h"

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::experiment {
namespace {

// Moments with a given count, mean and sample variance.
Moments Arm(int64_t n, double mean, double variance) {
  return Moments{n, mean, variance * static_cast<double>(n - 1)};
}

Moments FromValues(const std::vector<double>& xs) {
  Moments m;
  for (double x : xs) m.Add(x);
  return m;
}

// Two-pass mean and sum of squared deviations in long double: the reference.
void TwoPass(const std::vector<double>& xs, long double* mean, long double* m2) {
  long double sum = 0;
  for (double x : xs) sum += x;
  *mean = sum / static_cast<long double>(xs.size());
  *m2 = 0;
  for (double x : xs) *m2 += (x - *mean) * (x - *mean);
}

std::vector<double> Normals(uint64_t seed, size_t n, double mean, double sd) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(mean, sd);
  std::vector<double> xs(n);
  for (double& x : xs) x = dist(rng);
  return xs;
}

TEST(MomentsTest, KnownSmallSample) {
  const Moments m = FromValues({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(m.n, 8);
  EXPECT_DOUBLE_EQ(m.mean, 5);
  EXPECT_DOUBLE_EQ(m.m2, 32);
  EXPECT_DOUBLE_EQ(m.variance(), 32.0 / 7);
}

TEST(MomentsTest, VarianceIsZeroBelowTwoUnits) {
  EXPECT_EQ(Moments{}.variance(), 0);
  EXPECT_EQ(FromValues({3.5}).variance(), 0);
}

// Values near 1e9 with unit spread: the textbook sum-of-squares formula loses every digit here
// (1e18 - 1e18); Welford keeps the relative error of m2 near the rounding of the inputs
// themselves (ulp(1e9) = 1.2e-7 against deviations of 1).
TEST(MomentsTest, WelfordMatchesTwoPassOnOffsetData) {
  const std::vector<double> xs = Normals(7, 10000, 1e9, 1.0);
  long double mean = 0, m2 = 0;
  TwoPass(xs, &mean, &m2);
  const Moments m = FromValues(xs);
  EXPECT_EQ(m.n, 10000);
  EXPECT_NEAR(m.mean, static_cast<double>(mean), 1e-6);
  EXPECT_NEAR(m.m2 / static_cast<double>(m2), 1.0, 1e-7);  // measured: 1.2e-9
}

TEST(MomentsTest, MergeEqualsAddingAll) {
  const std::vector<double> xs = Normals(11, 1000, 50, 7);
  const Moments all = FromValues(xs);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{2}, size_t{500}, size_t{999}, size_t{1000}}) {
    Moments a = FromValues(std::vector<double>(xs.begin(), xs.begin() + cut));
    const Moments b = FromValues(std::vector<double>(xs.begin() + cut, xs.end()));
    a.Merge(b);
    EXPECT_EQ(a.n, all.n) << "cut " << cut;
    EXPECT_NEAR(a.mean, all.mean, 1e-12 * std::fabs(all.mean)) << "cut " << cut;
    EXPECT_NEAR(a.m2, all.m2, 1e-10 * all.m2) << "cut " << cut;
  }
}

TEST(JointMomentsTest, MatchesTwoPassAndMergesLikeAddingAll) {
  const std::vector<double> xs = Normals(3, 2000, 10, 2);
  const std::vector<double> es = Normals(4, 2000, 0, 1);
  std::vector<double> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = 3 * xs[i] + es[i];
  JointMoments all, a, b;
  for (size_t i = 0; i < xs.size(); ++i) {
    all.Add(ys[i], xs[i]);
    (i < 700 ? a : b).Add(ys[i], xs[i]);
  }
  long double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
  TwoPass(xs, &mx, &sxx);
  TwoPass(ys, &my, &syy);
  for (size_t i = 0; i < xs.size(); ++i) sxy += (xs[i] - mx) * (ys[i] - my);
  EXPECT_NEAR(all.mean_x, static_cast<double>(mx), 1e-12);
  EXPECT_NEAR(all.mean_y, static_cast<double>(my), 1e-11);
  EXPECT_NEAR(all.m2_x / static_cast<double>(sxx), 1.0, 1e-12);
  EXPECT_NEAR(all.m2_y / static_cast<double>(syy), 1.0, 1e-12);
  EXPECT_NEAR(all.c_xy / static_cast<double>(sxy), 1.0, 1e-12);
  EXPECT_NEAR(all.covariance(), static_cast<double>(sxy) / 1999, 1e-10);
  a.Merge(b);
  EXPECT_EQ(a.n, all.n);
  EXPECT_NEAR(a.c_xy / all.c_xy, 1.0, 1e-12);
  EXPECT_NEAR(a.m2_y / all.m2_y, 1.0, 1e-12);
  EXPECT_NEAR(a.mean_x, all.mean_x, 1e-12);
  EXPECT_EQ(JointMoments{}.covariance(), 0);
}

TEST(SampleRatioTest, FlagsFiftyTwoFortyEightAtTenThousand) {
  const std::vector<int64_t> counts = {5200, 4800};
  const std::vector<double> weights = {0.5, 0.5};
  const SrmResult r = SampleRatioTest(counts, weights);
  // chi2 = 2 * 200^2 / 5000 = 16; with 1 df the survival is erfc(sqrt(16 / 2)) = 6.33e-5.
  EXPECT_DOUBLE_EQ(r.chi2, 16);
  EXPECT_EQ(r.df, 1);
  EXPECT_NEAR(r.p_value, std::erfc(std::sqrt(8.0)), 1e-12);
  EXPECT_LT(r.p_value, 0.001);
  EXPECT_TRUE(r.mismatch);
}

TEST(SampleRatioTest, BalancedSplitIsNoMismatch) {
  const std::vector<int64_t> counts = {5000, 5000};
  const std::vector<double> weights = {0.5, 0.5};
  const SrmResult r = SampleRatioTest(counts, weights);
  EXPECT_EQ(r.chi2, 0);
  EXPECT_DOUBLE_EQ(r.p_value, 1);
  EXPECT_FALSE(r.mismatch);
}

TEST(SampleRatioTest, ThreeVariantsUseTwoDegreesOfFreedom) {
  // Expected 10000/3 each: deviations 200/3, -100/3, -100/3, so chi2 = 2 exactly; with 2 df the
  // survival is exp(-chi2 / 2) = exp(-1).
  const std::vector<int64_t> counts = {3400, 3300, 3300};
  const std::vector<double> weights = {1, 1, 1};
  const SrmResult r = SampleRatioTest(counts, weights);
  EXPECT_NEAR(r.chi2, 2, 1e-12);
  EXPECT_EQ(r.df, 2);
  EXPECT_NEAR(r.p_value, std::exp(-1.0), 1e-12);
  EXPECT_FALSE(r.mismatch);
}

TEST(SampleRatioTest, WeightsAreNormalisedAndUnequalPlansWork) {
  const std::vector<int64_t> counts = {5000, 2500, 2500};
  const std::vector<double> weights = {2, 1, 1};
  EXPECT_NEAR(SampleRatioTest(counts, weights).chi2, 0, 1e-12);
  // A 90/10 plan fed 9000/1000 fits; fed 8800/1200 it does not: chi2 = 200^2/9000 +
  // 200^2/1000 = 44.4.
  const std::vector<double> plan = {0.9, 0.1};
  EXPECT_FALSE(SampleRatioTest(std::vector<int64_t>{9000, 1000}, plan).mismatch);
  const SrmResult off = SampleRatioTest(std::vector<int64_t>{8800, 1200}, plan);
  EXPECT_NEAR(off.chi2, 40000.0 / 9000 + 40000.0 / 1000, 1e-9);
  EXPECT_TRUE(off.mismatch);
}

TEST(SampleRatioTest, NoUnitsIsNoMismatch) {
  const std::vector<int64_t> counts = {0, 0};
  const std::vector<double> weights = {0.5, 0.5};
  const SrmResult r = SampleRatioTest(counts, weights);
  EXPECT_EQ(r.p_value, 1);
  EXPECT_FALSE(r.mismatch);
}

// With 2 units per arm and equal variances the Welch-Satterthwaite df is exactly 2.
TEST(WelchTest, TwoDegreesOfFreedomMatchClosedForm) {
  const Moments c = Arm(2, 10, 4), t = Arm(2, 14, 4);  // se = sqrt(4/2 + 4/2) = 2, t = 2
  const TestResult r = WelchTest(c, t, 0.05);
  ASSERT_TRUE(r.ready);
  EXPECT_DOUBLE_EQ(r.delta, 4);
  EXPECT_DOUBLE_EQ(r.se, 2);
  EXPECT_NEAR(r.p_value, 1 - 2 / std::sqrt(6.0), 1e-12);  // 0.18350
  // The 0.975 quantile for nu = 2: (2q - 1) / sqrt(2 q (1 - q)) = 4.30265.
  const double q = (2 * 0.975 - 1) / std::sqrt(2 * 0.975 * 0.025);
  EXPECT_NEAR(r.ci_lo, 4 - q * 2, 1e-9);
  EXPECT_NEAR(r.ci_hi, 4 + q * 2, 1e-9);
  EXPECT_FALSE(r.significant);
}

// Unequal variances and sizes chosen so that the Welch-Satterthwaite df is exactly 2:
// a = s_c^2/n_c, b = s_t^2/n_t with n_c = 2, n_t = 5 need (a + b)^2 = 2 (a^2 + b^2 / 4), i.e.
// a = b (1 + sqrt(1.5)).
TEST(WelchTest, SatterthwaiteDegreesOfFreedomWithUnequalVariances) {
  const double b = 1, a = b * (1 + std::sqrt(1.5));
  const Moments c = Arm(2, 0, a * 2), t = Arm(5, 3, b * 5);
  const double se = std::sqrt(a + b), tt = 3 / se;
  const TestResult r = WelchTest(c, t, 0.05);
  EXPECT_NEAR(r.se, se, 1e-12);
  EXPECT_NEAR(r.p_value, 1 - tt / std::sqrt(2 + tt * tt), 1e-12);
}

// One arm without variance and 2 units in the other: df = 1, the Cauchy distribution.
TEST(WelchTest, OneDegreeOfFreedomIsCauchy) {
  const Moments c = Arm(2, 1, 8), t = Arm(2, 3, 0);  // se = sqrt(8/2) = 2, t = 1
  const TestResult r = WelchTest(c, t, 0.05);
  ASSERT_TRUE(r.ready);
  EXPECT_NEAR(r.p_value, 1 - 2 / std::numbers::pi * std::atan(1.0), 1e-12);  // 0.5
  const double q = std::tan(std::numbers::pi * (0.975 - 0.5));               // 12.7062
  EXPECT_NEAR(r.ci_hi - r.delta, q * 2, 1e-9);
}

// Printed t tables (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2): t(0.975, 10) = 2.228,
// t(0.995, 10) = 3.169. Six units per arm with equal variances give df = 10.
TEST(WelchTest, MatchesPrintedTableAtTenDegreesOfFreedom) {
  const Moments c = Arm(6, 0, 3), t = Arm(6, 2.228, 3);  // se = sqrt(3/6 + 3/6) = 1
  const TestResult r = WelchTest(c, t, 0.05);
  EXPECT_NEAR(r.p_value, 0.05, 1e-4);  // the table's 3 decimals move p by < 2e-5
  EXPECT_NEAR(r.ci_hi - r.delta, 2.228, 5e-4);
  EXPECT_NEAR(WelchTest(c, t, 0.01).ci_hi - r.delta, 3.169, 5e-4);
}

// With 5000 units per arm (df ~ 10^4) t is normal to within (t^3 + t) phi(t) / (4 df) < 1e-4.
TEST(WelchTest, LargeSamplesApproachTheNormal) {
  const Moments c = Arm(5000, 0, 1), t = Arm(5000, 2 * std::sqrt(2.0 / 5000), 1);  // t = 2
  const TestResult r = WelchTest(c, t, 0.05);
  EXPECT_NEAR(r.p_value, std::erfc(2 / std::sqrt(2.0)), 1e-4);  // 0.0455
  EXPECT_TRUE(r.significant);
  const TestResult swapped = WelchTest(t, c, 0.05);
  EXPECT_DOUBLE_EQ(swapped.delta, -r.delta);
  EXPECT_DOUBLE_EQ(swapped.p_value, r.p_value);
}

void ExpectUnready(const TestResult& r) {
  EXPECT_FALSE(r.ready);
  EXPECT_FALSE(r.significant);
  EXPECT_EQ(r.p_value, 1);
  EXPECT_EQ(r.ci_lo, -kUnbounded);
  EXPECT_EQ(r.ci_hi, kUnbounded);
  EXPECT_FALSE(std::isnan(r.delta) || std::isnan(r.se));
}

TEST(WelchTest, DegenerateInputsAreNotReadyAndNeverNaN) {
  ExpectUnready(WelchTest(Moments{}, Moments{}, 0.05));
  ExpectUnready(WelchTest(Arm(1, 3, 0), Arm(100, 1, 1), 0.05));
  // Zero variance in both arms: nothing estimates the noise, whatever the means.
  const TestResult flat = WelchTest(Arm(50, 1, 0), Arm(50, 2, 0), 0.05);
  ExpectUnready(flat);
  EXPECT_EQ(flat.delta, 1);
  ExpectUnready(MsprtTest(Arm(50, 1, 0), Arm(50, 2, 0), 0.05, 1));
  ExpectUnready(MsprtTest(Moments{}, Moments{}, 0.05, 1));
}

// The mSPRT's closed form against the integral it comes from: the likelihood ratio of
// delta_hat = x, N(delta, V) over delta ~ N(0, tau2), to N(0, V), by the trapezoid rule over
// +-12 standard deviations of the integrand's Gaussian shape (error far below 1e-9).
double MixtureLikelihoodRatio(double x, double v, double tau2) {
  const double centre = x * tau2 / (v + tau2), sd = std::sqrt(v * tau2 / (v + tau2));
  const int steps = 20000;
  const double lo = centre - 12 * sd, h = 24 * sd / steps;
  double sum = 0;
  for (int i = 0; i <= steps; ++i) {
    const double d = lo + i * h;
    const double f = std::exp((2 * x * d - d * d) / (2 * v) - d * d / (2 * tau2)) /
                     std::sqrt(2 * std::numbers::pi * tau2);
    sum += (i == 0 || i == steps) ? f / 2 : f;
  }
  return sum * h;
}

TEST(MsprtTest, PValueIsTheInverseOfTheMixtureLikelihoodRatio) {
  const Moments c = Arm(400, 10, 4), t = Arm(300, 10.6, 9);  // V = 4/400 + 9/300 = 0.04
  for (double tau2 : {0.01, 0.1, 1.0}) {
    const TestResult r = MsprtTest(c, t, 0.05, tau2);
    ASSERT_TRUE(r.ready);
    EXPECT_NEAR(r.se, 0.2, 1e-12);
    const double lambda = MixtureLikelihoodRatio(0.6, 0.04, tau2);
    EXPECT_NEAR(r.p_value, std::min(1.0, 1 / lambda), 1e-9 / lambda) << "tau2 " << tau2;
  }
}

// The confidence sequence is the set of effects the test does not reject: moving the treatment
// so that delta_hat - delta0 sits on the boundary gives p = alpha exactly.
TEST(MsprtTest, ConfidenceSequenceBoundaryRejectsAtExactlyAlpha) {
  const Moments c = Arm(1000, 5, 2), t = Arm(1000, 5.3, 3);
  const TestResult r = MsprtTest(c, t, 0.05, 0.02);
  for (double edge : {r.ci_lo, r.ci_hi}) {
    const Moments shifted = Arm(1000, 5.3 - edge, 3);
    EXPECT_NEAR(MsprtTest(c, shifted, 0.05, 0.02).p_value, 0.05, 1e-9);
  }
  EXPECT_EQ(r.significant, r.ci_lo > 0 || r.ci_hi < 0);
  EXPECT_LT(r.ci_lo, r.delta);
  EXPECT_GT(r.ci_hi, r.delta);
}

TEST(MsprtTest, SignificantExactlyWhenTheSequenceExcludesZero) {
  const Moments c = Arm(500, 0, 1);
  for (double mean = -0.5; mean <= 0.5; mean += 0.01) {
    const TestResult r = MsprtTest(c, Arm(500, mean, 1), 0.05, 0.005);
    EXPECT_EQ(r.significant, r.ci_lo > 0 || r.ci_hi < 0) << "mean " << mean;
    EXPECT_EQ(r.significant, r.p_value < 0.05) << "mean " << mean;
  }
}

// The rule: tau2 = r V at the planned n, r the root of r = 2 log(1/alpha) + log(1 + r), which
// minimises the rejection threshold there (so no other tau2 has more power at that look).
TEST(MsprtTau2Test, MinimisesTheThresholdAtThePlannedSample) {
  const double sigma2 = 4, mde = 0.1;
  const int64_t n = 3000;
  const double tau2 = MsprtTau2(mde, sigma2, n, 0.05);
  const double v = 2 * sigma2 / n, r = tau2 / v;
  EXPECT_NEAR(r, 2 * std::log(20.0) + std::log1p(r), 1e-9);
  EXPECT_NEAR(r, 8.21, 0.01);
  const Moments c = Arm(n, 0, sigma2), t = Arm(n, 0, sigma2);
  auto width = [&](double t2) { return MsprtTest(c, t, 0.05, t2).ci_hi; };
  EXPECT_NEAR(width(tau2) / std::sqrt(v), std::sqrt(1 + r), 1e-9);  // threshold^2 = (1 + r) V
  EXPECT_LT(width(tau2), width(0.8 * tau2));
  EXPECT_LT(width(tau2), width(1.25 * tau2));
  EXPECT_DOUBLE_EQ(MsprtTau2(mde, 0, n, 0.05), mde * mde);  // no variance: the effect's scale
  EXPECT_DOUBLE_EQ(MsprtTau2(mde, sigma2, n), tau2);        // alpha defaults to 0.05
}

TEST(SampleSizeTest, FixedHorizonMatchesTheTextbookFormula) {
  // 2 sigma2 (z_0.975 + z_0.8)^2 / mde^2 = 2 (1.959964 + 0.841621)^2 / 0.01 = 1569.8.
  EXPECT_EQ(FixedHorizonSampleSize(1, 0.1, 0.05, 0.8), 1570);
  EXPECT_EQ(FixedHorizonSampleSize(400, 2, 0.05, 0.8), 1570);
  EXPECT_EQ(FixedHorizonSampleSize(0, 1, 0.05, 0.8), 2);
  EXPECT_EQ(FixedHorizonSampleSize(1, 1e-30, 0.05, 0.8), kMaxUnitsPerArm);
}

// The planned sequential sample is the smallest n whose look alone has the power: computed here
// from the test's own threshold (the half-width MsprtTest reports) and the normal CDF.
TEST(SampleSizeTest, SequentialSampleIsTheSmallestWithThePower) {
  const double sigma2 = 400, mde = 2, alpha = 0.05, power = 0.8;
  const int64_t n = SequentialSampleSize(sigma2, mde, alpha, power);
  auto power_at = [&](int64_t k) {
    const double tau2 = MsprtTau2(mde, sigma2, k, alpha);
    const double half = MsprtTest(Arm(k, 0, sigma2), Arm(k, 0, sigma2), alpha, tau2).ci_hi;
    const double se = std::sqrt(2 * sigma2 / k);
    auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
    return phi((mde - half) / se) + phi((-mde - half) / se);
  };
  EXPECT_GE(power_at(n), power);
  EXPECT_LT(power_at(n - 1), power);
  // The threshold is sqrt(1 + r) = 3.035 standard errors instead of 1.96: the ratio to the
  // fixed horizon is about ((3.035 + 0.842) / (1.960 + 0.842))^2 = 1.915.
  const double ratio = double(n) / FixedHorizonSampleSize(sigma2, mde, alpha, power);
  EXPECT_NEAR(ratio, 1.915, 0.01);
  EXPECT_EQ(SequentialSampleSize(0, 1, alpha, power), 2);
  EXPECT_EQ(SequentialSampleSize(1, 1e-30, alpha, power), kMaxUnitsPerArm);
}

TEST(SequentialStateTest, NoDataMeansPOneAndAnUnboundedInterval) {
  SequentialState s;
  s.Update(MsprtTest(Moments{}, Moments{}, 0.05, 1), 0.05);
  EXPECT_EQ(s.p_value, 1);
  EXPECT_FALSE(s.significant);
  EXPECT_EQ(s.ci_lo, -kUnbounded);
  EXPECT_EQ(s.ci_hi, kUnbounded);
}

// One simulated A/B experiment: `looks` looks of `batch` units per arm, N(0, 1) control and
// N(delta, 1) treatment; returns the state after every look.
std::vector<SequentialState> RunExperiment(uint64_t seed, double delta, int looks, int batch) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  Moments c, t;
  SequentialState s;
  std::vector<SequentialState> states;
  const double tau2 = MsprtTau2(0.2, 1, int64_t{looks} * batch, 0.05);
  for (int k = 0; k < looks; ++k) {
    for (int i = 0; i < batch; ++i) {
      c.Add(noise(rng));
      t.Add(delta + noise(rng));
    }
    s.Update(MsprtTest(c, t, 0.05, tau2), 0.05);
    states.push_back(s);
  }
  return states;
}

TEST(SequentialStateTest, RunningStateIsMonotone) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<SequentialState> states = RunExperiment(seed, seed % 2 ? 0.0 : 0.15, 40, 25);
    for (size_t k = 1; k < states.size(); ++k) {
      EXPECT_LE(states[k].p_value, states[k - 1].p_value);
      EXPECT_GE(states[k].ci_lo, states[k - 1].ci_lo);
      EXPECT_LE(states[k].ci_hi, states[k - 1].ci_hi);
      EXPECT_GE(states[k].significant, states[k - 1].significant);  // once decided, decided
    }
  }
}

TEST(SequentialStateTest, ALookThatIsNotReadyChangesNothing) {
  SequentialState s;
  s.Update(MsprtTest(Arm(100, 0, 1), Arm(100, 1, 1), 0.05, 0.01), 0.05);
  const SequentialState before = s;
  s.Update(MsprtTest(Arm(1, 0, 0), Arm(1, 5, 0), 0.05, 0.01), 0.05);
  EXPECT_EQ(s.p_value, before.p_value);
  EXPECT_EQ(s.ci_lo, before.ci_lo);
  EXPECT_EQ(s.ci_hi, before.ci_hi);
  EXPECT_TRUE(s.significant);
}

// The running intersection holds the true effect in at least 1 - alpha of the experiments
// (Ville's inequality). 200 experiments of 40 looks: were the miss rate the nominal 5% (the
// test is more conservative), 18 or more misses would have probability below 1%.
TEST(SequentialStateTest, ConfidenceSequenceCoversTheTrueEffect) {
  const double delta = 0.3;
  int misses = 0, decided = 0;
  for (uint64_t seed = 100; seed < 300; ++seed) {
    const SequentialState last = RunExperiment(seed, delta, 40, 25).back();
    if (!(last.ci_lo <= delta && delta <= last.ci_hi)) ++misses;
    if (last.significant) ++decided;
  }
  EXPECT_LE(misses, 17);
  // At 1,000 units per arm the effect is 6.7 standard errors: every experiment has decided.
  EXPECT_EQ(decided, 200);
}

// Deng et al.: with x and y of unit variance and correlation rho, theta = rho and the variance
// of the adjusted metric is 1 - rho^2 of the raw one. 20,000 units per arm: the sampling sd of
// theta is sqrt((1 - rho^2) / 40,000) <= 0.005 and of the squared sample correlation
// 2 rho (1 - rho^2) / 200 <= 0.004; the tolerance is 5 of them.
TEST(CupedTest, ReducesVarianceBySquaredCorrelation) {
  for (double rho : {0.3, 0.5, 0.7, 0.9}) {
    std::mt19937_64 rng(static_cast<uint64_t>(rho * 1000));
    std::normal_distribution<double> unit(0, 1);
    JointMoments c, t;
    for (int i = 0; i < 20000; ++i) {
      for (JointMoments* arm : {&c, &t}) {
        const double x = unit(rng);
        const double y =
            10 + (arm == &t ? 0.5 : 0) + rho * x + std::sqrt(1 - rho * rho) * unit(rng);
        arm->Add(y, x);
      }
    }
    const CupedResult r = Cuped(c, t);
    EXPECT_NEAR(r.theta, rho, 0.025) << "rho " << rho;
    EXPECT_NEAR(r.variance_reduction, rho * rho, 0.02) << "rho " << rho;
    // The reduction is what the adjusted moments say.
    EXPECT_NEAR(1 - (r.control.m2 + r.treatment.m2) / (c.m2_y + t.m2_y), r.variance_reduction,
                1e-9);
    // Each arm's mean moves by theta times its covariate's offset from the pooled mean.
    const double pooled_x = (c.mean_x + t.mean_x) / 2;
    EXPECT_NEAR(r.control.mean, c.mean_y - r.theta * (c.mean_x - pooled_x), 1e-12);
    EXPECT_NEAR(r.treatment.mean, t.mean_y - r.theta * (t.mean_x - pooled_x), 1e-12);
    EXPECT_EQ(r.control.n, c.n);
    // The adjusted difference still estimates the effect: 5 of its sd sqrt(2 (1 - rho^2) / n).
    EXPECT_NEAR(r.treatment.mean - r.control.mean, 0.5, 5 * std::sqrt(2 / 20000.0));
  }
}

TEST(CupedTest, TreatmentEffectDoesNotLeakIntoTheta) {
  JointMoments c, t, t_shifted;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> unit(0, 1);
  for (int i = 0; i < 500; ++i) {
    c.Add(unit(rng), unit(rng));
    const double x = unit(rng), y = 0.5 * x + unit(rng);
    t.Add(y, x);
    t_shifted.Add(y + 100, x);
  }
  EXPECT_NEAR(Cuped(c, t).theta, Cuped(c, t_shifted).theta, 1e-12);
}

TEST(CupedTest, NoCovariateVarianceKeepsTheRawMoments) {
  JointMoments c, t;
  for (double y : {1.0, 2.0, 4.0}) {
    c.Add(y, 7);
    t.Add(y + 1, 7);
  }
  const CupedResult r = Cuped(c, t);
  EXPECT_EQ(r.theta, 0);
  EXPECT_EQ(r.variance_reduction, 0);
  EXPECT_EQ(r.control.mean, c.mean_y);
  EXPECT_EQ(r.treatment.m2, t.m2_y);
  const CupedResult empty = Cuped(JointMoments{}, JointMoments{});
  EXPECT_EQ(empty.control.n, 0);
  EXPECT_EQ(empty.variance_reduction, 0);
}

// Each REQUIRES is a SEEDANCE_CHECK; a caller that breaks one has a bug.
TEST(StatsDeathTest, NonFiniteValues) {
  Moments m;
  EXPECT_DEATH(m.Add(std::nan("")), "Moments::Add: value .* is not finite");
  JointMoments j;
  EXPECT_DEATH(j.Add(1, INFINITY), "JointMoments::Add: value \\(1, inf\\) is not finite");
}

TEST(StatsDeathTest, SampleRatioTestArguments) {
  const std::vector<int64_t> two = {1, 2}, negative = {-1, 2};
  const std::vector<double> one = {1}, even = {1, 1}, zero = {1, 0};
  EXPECT_DEATH(SampleRatioTest(two, one),
               "2 counts for 1 weights; needs one weight per count and at least 2 variants");
  EXPECT_DEATH(SampleRatioTest(two, even, 0), "SampleRatioTest: threshold 0 outside \\(0, 1\\)");
  EXPECT_DEATH(SampleRatioTest(negative, even),
               "SampleRatioTest: count -1 of variant 0 is negative");
  EXPECT_DEATH(SampleRatioTest(two, zero),
               "SampleRatioTest: weight 0 of variant 1 is not positive and finite");
}

TEST(StatsDeathTest, AlphaOutsideTheUnitInterval) {
  const Moments c = Arm(10, 0, 1);
  EXPECT_DEATH(WelchTest(c, c, 0), "WelchTest: alpha 0 outside \\(0, 1\\)");
  EXPECT_DEATH(MsprtTest(c, c, 1.5, 1), "MsprtTest: alpha 1.5 outside \\(0, 1\\)");
  SequentialState s;
  EXPECT_DEATH(s.Update(TestResult{}, 0), "SequentialState::Update: alpha 0 outside \\(0, 1\\)");
}

TEST(StatsDeathTest, MixtureVarianceMustBePositive) {
  const Moments c = Arm(10, 0, 1);
  EXPECT_DEATH(MsprtTest(c, c, 0.05, 0), "MsprtTest: mixture variance tau2 0 is not positive");
  EXPECT_DEATH(MsprtTau2(0.1, 1, 0), "MsprtTau2: n_planned 0 is below 1");
}

TEST(StatsDeathTest, PlanningInputs) {
  EXPECT_DEATH(FixedHorizonSampleSize(1, 0, 0.05, 0.8),
               "FixedHorizonSampleSize: mde_abs 0 is not positive and finite");
  EXPECT_DEATH(SequentialSampleSize(-1, 0.1, 0.05, 0.8),
               "SequentialSampleSize: sigma2 -1 is not a finite variance");
  EXPECT_DEATH(SequentialSampleSize(1, 0.1, 0.05, 1),
               "SequentialSampleSize: alpha 0.05 or power 1 outside \\(0, 1\\)");
  EXPECT_DEATH(MsprtTau2(0.1, 1, 100, 0), "MsprtTau2: alpha 0 or power 0.5 outside \\(0, 1\\)");
}

}  // namespace
}  // namespace seedance::experiment
