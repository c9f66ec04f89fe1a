// The statistics of an A/B experiment (stats.h; docs/experiments.md, "Statistics").
//
// The mSPRT, derived. With V = s_c^2/n_c + s_t^2/n_t taken as known, the estimate is
// delta_hat ~ N(delta, V). Against H0: delta = delta0, mix the alternatives over
// delta ~ N(delta0, tau2): the likelihood of delta_hat under the mixture is the N(delta0, V + tau2)
// density, under H0 the N(delta0, V) density, so with x = delta_hat - delta0
//   Lambda = sqrt(V / (V + tau2)) exp(x^2 / (2V) - x^2 / (2(V + tau2)))
//          = sqrt(V / (V + tau2)) exp(tau2 x^2 / (2 V (V + tau2))).
// (src/experiment/stats_test.cc checks this against a numerical integral of the mixture.)
// Under H0 and a fixed tau2, Lambda over a growing sample is a nonnegative martingale with mean
// 1 (Robbins' normal mixture), so by Ville's inequality P(sup Lambda >= 1/alpha) <= alpha: the
// running minimum of p = min(1, 1/Lambda) is an always-valid p-value (Johari et al. 2017, with V
// = 2 sigma^2 / n for n units per arm). The confidence sequence is every delta0 with
// Lambda < 1/alpha: taking logs,
//   x^2 < (V (V + tau2) / tau2) (2 log(1/alpha) + log((V + tau2) / V)),
// i.e. delta_hat +- that square root; it excludes 0 exactly when p < alpha.
//
// The mixture scale (MsprtTau2). With r = tau2 / V the rejection threshold on |delta_hat| is
// sqrt(V g(r)), g(r) = (1 + 1/r)(2 log(1/alpha) + log(1 + r)). Whatever the true effect, the
// power at a look is largest where the threshold is smallest: g'(r) = 0 gives
// r = 2 log(1/alpha) + log(1 + r), and then g(r) = 1 + r (alpha 0.05: r = 8.21, a threshold of
// 3.035 standard errors against the fixed-horizon test's 1.96). Tuning r at the planned sample
// makes the planned look as powerful as the mixture can be; earlier looks reject larger effects.
//
// The variance is plugged in from the data, so the guarantees hold as the samples grow (the
// normal approximation of the mean): bench/experiment_calibration.cc measures them.
#include "seedance/experiment/stats.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "seedance/base/check.h"

namespace seedance::experiment {

namespace {

// Boost.Math in double (no promotion to long double), reporting a domain error as NaN instead
// of throwing; every call below passes arguments inside the domain.
namespace bmp = boost::math::policies;
using Policy = bmp::policy<bmp::promote_double<false>, bmp::domain_error<bmp::errno_on_error>,
                           bmp::overflow_error<bmp::errno_on_error>,
                           bmp::evaluation_error<bmp::errno_on_error>>;
using Normal = boost::math::normal_distribution<double, Policy>;
using StudentT = boost::math::students_t_distribution<double, Policy>;
using ChiSquared = boost::math::chi_squared_distribution<double, Policy>;

bool InUnitInterval(double a) { return a > 0 && a < 1; }  // false for NaN

double Clamp01(double p) { return std::isnan(p) ? 1.0 : std::clamp(p, 0.0, 1.0); }

double ClampUnbounded(double x) {
  return std::isnan(x) ? 0.0 : std::clamp(x, -kUnbounded, kUnbounded);
}

// Standard normal CDF.
double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// The difference of two arms' means and its variance, as far as the data define them.
struct Difference {
  double delta = 0;
  double var_c = 0, var_t = 0;  // s^2 / n of each arm
  double se = 0;
  bool ready = false;  // each arm n >= 2, se > 0, everything finite
};

Difference Diff(const Moments& control, const Moments& treatment) {
  Difference d;
  if (control.n >= 1 && treatment.n >= 1) d.delta = treatment.mean - control.mean;
  if (control.n >= 2 && treatment.n >= 2) {
    d.var_c = control.variance() / static_cast<double>(control.n);
    d.var_t = treatment.variance() / static_cast<double>(treatment.n);
    d.se = std::sqrt(d.var_c + d.var_t);
    d.ready = d.se > 0 && std::isfinite(d.se) && std::isfinite(d.delta);
  }
  return d;
}

// The answer of a test that cannot be read (stats.h, TestResult::ready).
TestResult Unready(const Difference& d) {
  TestResult r;
  r.delta = ClampUnbounded(d.delta);
  r.se = std::isfinite(d.se) ? d.se : kUnbounded;
  r.p_value = 1;
  r.ci_lo = -kUnbounded;
  r.ci_hi = kUnbounded;
  return r;
}

// The root r of r = 2 log(1/alpha) + log(1 + r) (see the top of the file): h(r) = r - log1p(r)
// - 2 log(1/alpha) increases on r > 0 from h(0) < 0, and h(2 L2 + 2) > 0, so bisection finds it.
double OptimalMixtureRatio(double alpha) {
  const double l2 = -2 * std::log(alpha);
  double lo = 0, hi = 2 * l2 + 2;
  for (int i = 0; i < 200 && hi - lo > 1e-14 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid - std::log1p(mid) - l2 < 0) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

// The mSPRT's rejection threshold on |delta_hat| (the confidence sequence's half-width) for an
// estimate of variance v.
double MsprtHalfWidth(double v, double tau2, double alpha) {
  const double r = tau2 / v;
  const double log_ratio = std::isfinite(r) ? std::log1p(r) : std::log(tau2) - std::log(v);
  return std::sqrt(v * (1 + v / tau2) * (2 * std::log(1 / alpha) + log_ratio));
}

void CheckPlanInputs(const char* fn, double sigma2, double mde_abs, double alpha, double power) {
  SEEDANCE_CHECK(mde_abs > 0 && std::isfinite(mde_abs))
      << fn << ": mde_abs " << mde_abs << " is not positive and finite";
  SEEDANCE_CHECK(sigma2 >= 0 && std::isfinite(sigma2))
      << fn << ": sigma2 " << sigma2 << " is not a finite variance";
  SEEDANCE_CHECK(InUnitInterval(alpha) && InUnitInterval(power))
      << fn << ": alpha " << alpha << " or power " << power << " outside (0, 1)";
}

}  // namespace

void Moments::Add(double x) {
  SEEDANCE_CHECK(std::isfinite(x)) << "Moments::Add: value " << x << " is not finite";
  ++n;
  const double d = x - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (x - mean);
}

// Chan, Golub and LeVeque's pairwise update: the mean moves by the weighted difference of
// means, and m2 gains the between-part d^2 n_a n_b / n.
void Moments::Merge(const Moments& other) {
  if (other.n == 0) return;
  if (n == 0) {
    *this = other;
    return;
  }
  const double na = static_cast<double>(n), nb = static_cast<double>(other.n);
  const double total = na + nb;
  const double d = other.mean - mean;
  mean += d * (nb / total);
  m2 += other.m2 + d * d * (na * nb / total);
  n += other.n;
}

double Moments::variance() const { return n < 2 ? 0.0 : m2 / static_cast<double>(n - 1); }

void JointMoments::Add(double y, double x) {
  SEEDANCE_CHECK(std::isfinite(y) && std::isfinite(x))
      << "JointMoments::Add: value (" << y << ", " << x << ") is not finite";
  ++n;
  const double inv_n = 1.0 / static_cast<double>(n);
  const double dx = x - mean_x, dy = y - mean_y;
  mean_x += dx * inv_n;
  mean_y += dy * inv_n;
  m2_x += dx * (x - mean_x);
  m2_y += dy * (y - mean_y);
  c_xy += dx * (y - mean_y);  // the old x deviation times the new y deviation: exact (Welford)
}

void JointMoments::Merge(const JointMoments& other) {
  if (other.n == 0) return;
  if (n == 0) {
    *this = other;
    return;
  }
  const double na = static_cast<double>(n), nb = static_cast<double>(other.n);
  const double total = na + nb, w = na * nb / total;
  const double dx = other.mean_x - mean_x, dy = other.mean_y - mean_y;
  mean_x += dx * (nb / total);
  mean_y += dy * (nb / total);
  m2_x += other.m2_x + dx * dx * w;
  m2_y += other.m2_y + dy * dy * w;
  c_xy += other.c_xy + dx * dy * w;
  n += other.n;
}

double JointMoments::covariance() const { return n < 2 ? 0.0 : c_xy / static_cast<double>(n - 1); }

SrmResult SampleRatioTest(std::span<const int64_t> counts, std::span<const double> weights,
                          double threshold) {
  SEEDANCE_CHECK(counts.size() == weights.size() && counts.size() >= 2)
      << "SampleRatioTest: " << counts.size() << " counts for " << weights.size()
      << " weights; needs one weight per count and at least 2 variants";
  SEEDANCE_CHECK(InUnitInterval(threshold))
      << "SampleRatioTest: threshold " << threshold << " outside (0, 1)";
  double max_weight = 0, total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    SEEDANCE_CHECK(counts[i] >= 0)
        << "SampleRatioTest: count " << counts[i] << " of variant " << i << " is negative";
    SEEDANCE_CHECK(weights[i] > 0 && std::isfinite(weights[i]))
        << "SampleRatioTest: weight " << weights[i] << " of variant " << i
        << " is not positive and finite";
    max_weight = std::max(max_weight, weights[i]);
    total += static_cast<double>(counts[i]);
  }
  double weight_sum = 0;  // of weights scaled by the largest, so that the sum cannot overflow
  for (double w : weights) weight_sum += w / max_weight;
  SrmResult r;
  r.df = static_cast<int>(counts.size()) - 1;
  if (total == 0) return r;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = total * (weights[i] / max_weight) / weight_sum;
    const double d = static_cast<double>(counts[i]) - expected;
    r.chi2 += d * d / expected;
  }
  r.p_value = Clamp01(cdf(complement(ChiSquared(r.df), r.chi2)));
  r.mismatch = r.p_value < threshold;
  return r;
}

TestResult WelchTest(const Moments& control, const Moments& treatment, double alpha) {
  SEEDANCE_CHECK(InUnitInterval(alpha)) << "WelchTest: alpha " << alpha << " outside (0, 1)";
  const Difference d = Diff(control, treatment);
  TestResult r = Unready(d);
  if (!d.ready) return r;
  // Welch-Satterthwaite: (a + b)^2 / (a^2 / (n_c - 1) + b^2 / (n_t - 1)), with a and b scaled by
  // their sum so that tiny variances do not underflow.
  const double sum = d.var_c + d.var_t;
  const double a = d.var_c / sum, b = d.var_t / sum;
  const double df = 1 / (a * a / static_cast<double>(control.n - 1) +
                         b * b / static_cast<double>(treatment.n - 1));
  const StudentT t_dist(df);
  const double t = d.delta / d.se;
  r.p_value = Clamp01(2 * cdf(complement(t_dist, std::fabs(t))));
  const double half = quantile(complement(t_dist, alpha / 2)) * d.se;
  r.ci_lo = ClampUnbounded(d.delta - half);
  r.ci_hi = ClampUnbounded(d.delta + half);
  r.significant = r.p_value < alpha;
  r.ready = true;
  return r;
}

TestResult MsprtTest(const Moments& control, const Moments& treatment, double alpha, double tau2) {
  SEEDANCE_CHECK(InUnitInterval(alpha)) << "MsprtTest: alpha " << alpha << " outside (0, 1)";
  SEEDANCE_CHECK(tau2 > 0 && std::isfinite(tau2))
      << "MsprtTest: mixture variance tau2 " << tau2 << " is not positive and finite";
  const Difference d = Diff(control, treatment);
  TestResult r = Unready(d);
  if (!d.ready) return r;
  const double v = d.se * d.se;
  const double ratio = tau2 / v;
  const double log_ratio = std::isfinite(ratio) ? std::log1p(ratio) : std::log(tau2) - std::log(v);
  const double z = d.delta / d.se;
  // log Lambda = -log(1 + tau2/V) / 2 + (z^2 / 2) tau2 / (V + tau2); the first term is finite, so
  // an infinite z gives +inf (p = 0), never NaN.
  const double log_lambda = -0.5 * log_ratio + 0.5 * z * z * (tau2 / (v + tau2));
  r.p_value = log_lambda > 0 ? Clamp01(std::exp(-log_lambda)) : 1.0;
  const double half = MsprtHalfWidth(v, tau2, alpha);
  r.ci_lo = ClampUnbounded(d.delta - half);
  r.ci_hi = ClampUnbounded(d.delta + half);
  r.significant = r.p_value < alpha;
  r.ready = true;
  return r;
}

void SequentialState::Update(const TestResult& look, double alpha) {
  SEEDANCE_CHECK(InUnitInterval(alpha))
      << "SequentialState::Update: alpha " << alpha << " outside (0, 1)";
  if (!look.ready) return;
  p_value = std::min(p_value, look.p_value);
  ci_lo = std::max(ci_lo, look.ci_lo);
  ci_hi = std::min(ci_hi, look.ci_hi);
  significant = p_value < alpha;
}

double MsprtTau2(double mde_abs, double sigma2, int64_t n_planned, double alpha) {
  CheckPlanInputs("MsprtTau2", sigma2, mde_abs, alpha, 0.5);
  SEEDANCE_CHECK(n_planned >= 1) << "MsprtTau2: n_planned " << n_planned << " is below 1";
  const double tau2 = OptimalMixtureRatio(alpha) * 2 * (sigma2 / static_cast<double>(n_planned));
  // No variance (or one so small the product underflows) gives no scale: use the effect's.
  return tau2 > 0 && std::isfinite(tau2) ? tau2 : mde_abs * mde_abs;
}

int64_t FixedHorizonSampleSize(double sigma2, double mde_abs, double alpha, double power) {
  CheckPlanInputs("FixedHorizonSampleSize", sigma2, mde_abs, alpha, power);
  const Normal unit;
  const double z = quantile(complement(unit, alpha / 2)) + quantile(unit, power);
  if (!(z > 0)) return 2;
  const double ratio = sigma2 / mde_abs;  // divided in two steps against overflow
  const double n = 2 * (ratio / mde_abs) * z * z;
  if (!(n < static_cast<double>(kMaxUnitsPerArm))) return kMaxUnitsPerArm;
  return std::max<int64_t>(2, static_cast<int64_t>(std::ceil(n)));
}

int64_t SequentialSampleSize(double sigma2, double mde_abs, double alpha, double power) {
  CheckPlanInputs("SequentialSampleSize", sigma2, mde_abs, alpha, power);
  if (sigma2 == 0) return 2;
  // The power at look n alone, delta_hat ~ N(mde_abs, V) with V = 2 sigma2 / n: both tails
  // beyond the threshold. It increases with n (the threshold is a fixed multiple of sqrt(V)
  // under MsprtTau2's rule), so the smallest n is found by doubling, then bisection.
  auto power_at = [&](int64_t n) {
    const double v = 2 * (sigma2 / static_cast<double>(n));
    const double half = MsprtHalfWidth(v, MsprtTau2(mde_abs, sigma2, n, alpha), alpha);
    const double se = std::sqrt(v);
    return Phi((mde_abs - half) / se) + Phi((-mde_abs - half) / se);
  };
  int64_t lo = 2, hi = 2;
  while (power_at(hi) < power) {
    if (hi == kMaxUnitsPerArm) return kMaxUnitsPerArm;
    lo = hi;
    hi = hi > kMaxUnitsPerArm / 2 ? kMaxUnitsPerArm : 2 * hi;
  }
  if (hi == 2) return 2;
  while (hi - lo > 1) {  // power_at(lo) < power <= power_at(hi)
    const int64_t mid = lo + (hi - lo) / 2;
    if (power_at(mid) >= power) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

CupedResult Cuped(const JointMoments& control, const JointMoments& treatment) {
  CupedResult r;
  auto raw = [](const JointMoments& j) { return Moments{j.n, j.mean_y, j.m2_y}; };
  r.control = raw(control);
  r.treatment = raw(treatment);
  // Within-arm sums: a difference of the arms' means (the treatment effect) stays out of theta.
  const double sxx = control.m2_x + treatment.m2_x;
  const double sxy = control.c_xy + treatment.c_xy;
  const double syy = control.m2_y + treatment.m2_y;
  if (!(sxx > 0) || !(syy > 0) || !std::isfinite(sxx) || !std::isfinite(syy)) return r;
  r.theta = sxy / sxx;
  const double n = static_cast<double>(control.n + treatment.n);
  const double pooled_mean_x =
      control.mean_x + (treatment.mean_x - control.mean_x) * (treatment.n / n);
  auto adjust = [&](const JointMoments& j) {
    if (j.n == 0) return Moments{};
    const double m2 = j.m2_y - 2 * r.theta * j.c_xy + r.theta * r.theta * j.m2_x;
    return Moments{j.n, j.mean_y - r.theta * (j.mean_x - pooled_mean_x), std::max(0.0, m2)};
  };
  r.control = adjust(control);
  r.treatment = adjust(treatment);
  // 1 - (syy - sxy^2 / sxx) / syy = sxy^2 / (sxx syy): the squared pooled correlation.
  r.variance_reduction = std::clamp(r.theta * (sxy / syy), 0.0, 1.0);
  return r;
}

}  // namespace seedance::experiment
