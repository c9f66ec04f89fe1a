// The statistics of an A/B experiment (docs/experiments.md, "Statistics"): per-variant moments,
// the sample-ratio-mismatch test, CUPED, the fixed-horizon Welch t-test and an always-valid
// sequential test (mSPRT with a normal mixture, as Optimizely's Stats Engine; Johari, Pekelis and
// Walsh, "Always valid inference", 2017) with its confidence sequence.
//
// Every test compares a treatment with the control on the difference of means, treatment -
// control, two-sided. Inputs are sufficient statistics, so the server keeps no raw values.
//
// Degenerate data are answers, not errors: a test with fewer than 2 units in an arm, or with
// zero variance in both arms, is not `ready` and answers p = 1, not significant, the
// interval [-kUnbounded, kUnbounded]; no function returns NaN for finite inputs. A broken
// REQUIRES (a non-finite value added, alpha outside (0, 1), mismatched spans) is a caller's bug
// and fails a SEEDANCE_CHECK.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace seedance::experiment {

// The end of an interval that data have not bounded (finite, so that JSON can carry it).
inline constexpr double kUnbounded = 1e308;

// Count, mean and sum of squared deviations of a stream (Welford), mergeable (Chan et al.).
struct Moments {
  int64_t n = 0;
  double mean = 0;
  double m2 = 0;
  void Add(double x);  // REQUIRES: x finite
  void Merge(const Moments& other);
  double variance() const;  // sample variance (n - 1); 0 when n < 2
};

// Joint moments of a metric y and a pre-period covariate x of the same units (CUPED), mergeable.
struct JointMoments {
  int64_t n = 0;
  double mean_y = 0, mean_x = 0;
  double m2_y = 0, m2_x = 0, c_xy = 0;  // sums of squared / cross deviations
  void Add(double y, double x);         // REQUIRES: x and y finite
  void Merge(const JointMoments& other);
  double covariance() const;  // sample covariance; 0 when n < 2
};

// Pearson's chi-square goodness of fit of the observed unit counts per variant to the planned
// weights (normalised by their sum). `mismatch` when p_value < threshold (ExP and GrowthBook
// use 0.001). No units at all: chi2 0, p 1, no mismatch.
// REQUIRES: counts.size() == weights.size() >= 2, counts >= 0, weights > 0 and finite,
// 0 < threshold < 1.
struct SrmResult {
  double chi2 = 0;
  int df = 0;
  double p_value = 1;
  bool mismatch = false;
};
SrmResult SampleRatioTest(std::span<const int64_t> counts, std::span<const double> weights,
                          double threshold = 0.001);

// A test's answer on delta = mean(treatment) - mean(control).
struct TestResult {
  double delta = 0;
  double se = 0;  // standard error of delta
  double p_value = 1;
  double ci_lo = 0, ci_hi = 0;  // (1 - alpha) interval (sequential: confidence sequence)
  bool significant = false;     // p_value < alpha
  // Enough data to read it: each arm n >= 2 and se > 0. When false: p_value 1, not significant,
  // ci [-kUnbounded, kUnbounded] (delta and se as far as the data define them, else 0). Whether
  // the sequential test has decided is SequentialState::significant.
  bool ready = false;
};

// Fixed-horizon Welch t-test (Welch-Satterthwaite degrees of freedom). Valid only when read
// once, at the planned sample size. REQUIRES: 0 < alpha < 1.
TestResult WelchTest(const Moments& control, const Moments& treatment, double alpha);

// mSPRT on the difference of means with a normal mixing distribution N(0, tau2) over the
// effect, the variance plugged in from the data; p-value 1 / Lambda (capped at 1), the
// confidence sequence the set of effects it does not reject. Valid at any stopping time when the
// caller keeps the running minimum of the p-value (SequentialState).
// REQUIRES: 0 < alpha < 1, tau2 > 0 and finite.
TestResult MsprtTest(const Moments& control, const Moments& treatment, double alpha, double tau2);

// The running minimum of an always-valid p-value and the running intersection of the confidence
// sequence across looks: what a report shows after each peek. A look that is not ready changes
// nothing. The intersection is empty (ci_lo > ci_hi) only when every effect was rejected at
// some look, which under the model happens with probability <= alpha (and then significant).
struct SequentialState {
  double p_value = 1;
  double ci_lo = -kUnbounded, ci_hi = kUnbounded;
  bool significant = false;
  void Update(const TestResult& look, double alpha);
};

// The mixture variance that makes the mSPRT most powerful for an effect of size `mde_abs`
// (absolute units) at `n_planned` units per arm with per-unit variance sigma2: the tau2 that
// minimises the rejection threshold on |delta| at n_planned (a normal mixture tuned for a target
// time, as Howard et al., Annals of Statistics 2021, tune theirs), which maximises the power at
// that look for every effect, mde_abs included: tau2 = r * V with V = 2 sigma2 / n_planned and
// r the root of r = 2 log(1/alpha) + log(1 + r) (r = 8.21 for alpha = 0.05). sigma2 = 0 (no
// scale) gives mde_abs^2. Pass the experiment's alpha.
// REQUIRES: mde_abs > 0, sigma2 >= 0, both finite; n_planned >= 1; 0 < alpha < 1.
double MsprtTau2(double mde_abs, double sigma2, int64_t n_planned, double alpha = 0.05);

// Units per arm a fixed-horizon two-sided test needs to detect `mde_abs` with `power`:
// ceil(2 sigma2 (z_{1-alpha/2} + z_power)^2 / mde_abs^2), at least 2, at most kMaxUnitsPerArm.
// REQUIRES: mde_abs > 0, sigma2 >= 0, both finite; 0 < alpha < 1; 0 < power < 1.
int64_t FixedHorizonSampleSize(double sigma2, double mde_abs, double alpha, double power);

// Units per arm at which the mSPRT with tau2 = MsprtTau2(mde_abs, sigma2, n, alpha) rejects an
// effect of exactly mde_abs with probability >= power at that look alone (stopping earlier only
// adds power): the sequential design's planned sample. The smallest such n (a search; the
// normal approximation of delta with known variance), at least 2, at most kMaxUnitsPerArm;
// about 1.9 times the fixed-horizon sample at alpha 0.05, power 0.8.
// REQUIRES: as FixedHorizonSampleSize.
int64_t SequentialSampleSize(double sigma2, double mde_abs, double alpha, double power);

// Where the sample sizes saturate (an MDE far below the noise).
inline constexpr int64_t kMaxUnitsPerArm = int64_t{1} << 60;

// CUPED (Deng et al., WSDM 2013): y - theta (x - mean_x) with theta = cov(y, x) / var(x) pooled
// over both arms (within-arm sums, so a treatment effect does not leak into theta). The adjusted
// moments keep each arm's mean shifted by theta * (mean_x of the arm - pooled mean_x), and
// variances reduced by the fit. No variance in x (or fewer than 2 units): theta 0, the raw
// moments.
struct CupedResult {
  Moments control, treatment;
  double theta = 0;
  double variance_reduction = 0;  // 1 - var(adjusted) / var(raw), pooled: about rho^2
};
CupedResult Cuped(const JointMoments& control, const JointMoments& treatment);

}  // namespace seedance::experiment
