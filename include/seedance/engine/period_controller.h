// PeriodController: the length of the next control period of a control loop (autoscaler,
// rebalancer) from the volatility of its load and its SLA margin (seed A section 3.1).
//
// The rule (docs/clock.md has the reasoning):
//   volatility v = max(cv_excess - cv_floor, step)   where cv_excess is the coefficient of
//     variation of QPS over the last history_s beyond counting noise, and step is the relative
//     jump of the mean of the last recent_s over the history mean when that jump is both larger
//     than step_threshold and statistically clear (z > step_z); otherwise step = 0
//   pressure p = max(0, -sla_margin)                 sla_margin = (target - observed) / target
//   raw = base / (1 + volatility_gain * v + sla_gain * p), or calm_period_s when v = 0 and
//     sla_margin >= calm_margin; clamped to [min_period_s, max_period_s]
// Hysteresis: the period shortens at once when raw is more than `deadband` below it (react fast),
// and lengthens only when raw has stayed more than `deadband` above it for lengthen_hold_s, to the
// smallest raw seen in that time (like the Kubernetes HPA's scale-down stabilisation). Noise well
// inside cv_floor therefore never moves the period, so it cannot reverse.
//
// Note: the seed's formula, base * (1 + 0.8 sigma - 0.5 max(0, -delta)), lengthens the period when
// QPS is volatile, the opposite of what its own text says; this follows the text.
// Thread-safety: a single-threaded value.
#ifndef SEEDANCE_ENGINE_PERIOD_CONTROLLER_H_
#define SEEDANCE_ENGINE_PERIOD_CONTROLLER_H_

#include <deque>
#include <string>

namespace seedance::engine {

struct PeriodOptions {
  double base_period_s = 10;
  double min_period_s = 2;
  double max_period_s = 30;
  double calm_period_s = 15;  // used when load is steady and the SLA margin comfortable
  double calm_margin = 0.2;
  double history_s = 300;        // QPS history for the coefficient of variation
  double recent_s = 3;           // window of the step detector
  double cv_floor = 0.15;        // volatility below this is noise
  double step_threshold = 0.25;  // relative jump of the recent mean that counts as a step
  double step_z = 4;             // and its significance against the history's spread
  double volatility_gain = 4;
  double sla_gain = 5;
  double deadband = 0.2;  // relative change of raw needed to move the period
  double lengthen_hold_s = 60;
};

struct PeriodDecision {
  double period_s = 0;      // the period to wait until the next Decide
  double raw_period_s = 0;  // the rule's value before hysteresis
  double volatility = 0;    // v above
  double cv = 0;            // cv_excess above
  double step = 0;          // relative step (0 when none detected)
  int direction = 0;        // -1 shortened, +1 lengthened, 0 unchanged
  std::string reason;       // "steady", "volatile", "step", "sla", "calm"
};

class PeriodController {
 public:
  explicit PeriodController(const PeriodOptions& options = {});

  // Records the load measured at time t_s. When count_window_s > 0, qps is a count of discrete
  // requests over that window divided by it, and its Poisson noise (variance qps/count_window_s)
  // is not counted as volatility. REQUIRES: t_s not decreasing.
  void ObserveQps(double t_s, double qps, double count_window_s = 0);

  // Called at the end of each period: returns the next period. sla_margin = (target -
  // observed) / target, positive when the SLA is met with room.
  PeriodDecision Decide(double now_s, double sla_margin);

  double period_s() const { return period_s_; }

 private:
  PeriodOptions options_;
  std::deque<std::pair<double, double>> history_;  // (t, qps)
  double count_window_s_ = 0;
  double period_s_;
  bool lengthen_pending_ = false;
  double lengthen_since_s_ = 0;
  double lengthen_min_raw_s_ = 0;
};

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_PERIOD_CONTROLLER_H_
