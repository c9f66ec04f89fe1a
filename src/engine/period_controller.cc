// Adaptive control period. See include/seedance/engine/period_controller.h and docs/clock.md.
#include "seedance/engine/period_controller.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace seedance::engine {

PeriodController::PeriodController(const PeriodOptions& options)
    : options_(options),
      period_s_(std::clamp(options.base_period_s, options.min_period_s, options.max_period_s)) {}

void PeriodController::ObserveQps(double t_s, double qps, double count_window_s) {
  history_.emplace_back(t_s, qps);
  count_window_s_ = count_window_s;
  while (!history_.empty() && history_.front().first <= t_s - options_.history_s) {
    history_.pop_front();
  }
}

PeriodDecision PeriodController::Decide(double now_s, double sla_margin) {
  PeriodDecision d;
  const PeriodOptions& o = options_;

  // Volatility over the history, beyond counting noise.
  double n = 0, sum = 0, sq = 0;
  double nb = 0, sumb = 0, sqb = 0;  // baseline: older than recent_s
  double nr = 0, sumr = 0;           // recent
  for (const auto& [t, q] : history_) {
    n += 1;
    sum += q;
    sq += q * q;
    if (t > now_s - o.recent_s) {
      nr += 1;
      sumr += q;
    } else {
      nb += 1;
      sumb += q;
      sqb += q * q;
    }
  }
  if (n >= 2) {
    const double mean = sum / n;
    double var = std::max(0.0, sq / n - mean * mean) * n / (n - 1);
    if (count_window_s_ > 0) var = std::max(0.0, var - mean / count_window_s_);
    d.cv = mean > 0 ? std::sqrt(var) / mean : 0;
  }
  if (nb >= 3 && nr >= 1) {
    const double base = sumb / nb, recent = sumr / nr;
    const double sd = std::sqrt(std::max(0.0, sqb / nb - base * base) * nb / (nb - 1));
    const double diff = std::fabs(recent - base);
    const double rel = base > 0 ? diff / base : (diff > 0 ? 1.0 : 0.0);
    const double z = sd > 0 ? diff / (sd / std::sqrt(nr))
                            : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    if (rel > o.step_threshold && z > o.step_z) d.step = rel;
  }
  d.volatility = std::max(std::max(0.0, d.cv - o.cv_floor), d.step);
  const double pressure = std::max(0.0, -sla_margin);

  double raw = o.base_period_s / (1 + o.volatility_gain * d.volatility + o.sla_gain * pressure);
  d.reason = d.step > 0 ? "step" : d.volatility > 0 ? "volatile" : pressure > 0 ? "sla" : "steady";
  if (d.volatility == 0 && pressure == 0 && sla_margin >= o.calm_margin) {
    raw = o.calm_period_s;
    d.reason = "calm";
  }
  raw = std::clamp(raw, o.min_period_s, o.max_period_s);
  d.raw_period_s = raw;

  if (raw < period_s_ * (1 - o.deadband)) {
    period_s_ = raw;
    d.direction = -1;
    lengthen_pending_ = false;
  } else if (raw > period_s_ * (1 + o.deadband)) {
    if (!lengthen_pending_) {
      lengthen_pending_ = true;
      lengthen_since_s_ = now_s;
      lengthen_min_raw_s_ = raw;
    }
    lengthen_min_raw_s_ = std::min(lengthen_min_raw_s_, raw);
    if (now_s - lengthen_since_s_ >= o.lengthen_hold_s) {
      period_s_ = lengthen_min_raw_s_;
      d.direction = +1;
      lengthen_pending_ = false;
    }
  } else {
    lengthen_pending_ = false;
  }
  d.period_s = period_s_;
  return d;
}

}  // namespace seedance::engine
