// Clock estimators and the drifting-clock simulator. See include/seedance/engine/clock_sync.h and
// docs/clock.md.
#include "seedance/engine/clock_sync.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace seedance::engine {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  return v[mid];
}

// Weighted least squares over the window, with delay- and residual-based outlier rejection.
class RegressionEstimator : public ClockEstimator {
 public:
  explicit RegressionEstimator(const RegressionOptions& options) : options_(options) {
    if (options_.window < 1) options_.window = 1;
  }
  std::string Name() const override { return "seedance"; }

  void AddSample(const ClockSample& sample) override {
    window_.push_back(sample);
    while (static_cast<int>(window_.size()) > options_.window) window_.pop_front();
    Refit();
  }

  double OffsetAt(double local_time_s) const override {
    return intercept_s_ + slope_ * (local_time_s - ref_time_s_);
  }
  double FrequencyPpm() const override { return slope_ * 1e6; }
  int SamplesUsed() const override { return used_; }

 private:
  struct Point {
    double t, y, w;
  };

  // Weighted line fit; falls back to the weighted mean when the time span or the number of points
  // is too small for a slope.
  void Fit(const std::vector<Point>& pts) {
    double sw = 0, st = 0, sy = 0;
    for (const Point& p : pts) {
      sw += p.w;
      st += p.w * p.t;
      sy += p.w * p.y;
    }
    const double tm = st / sw, ym = sy / sw;
    double stt = 0, sty = 0;
    for (const Point& p : pts) {
      stt += p.w * (p.t - tm) * (p.t - tm);
      sty += p.w * (p.t - tm) * (p.y - ym);
    }
    if (static_cast<int>(pts.size()) < options_.min_samples_for_frequency || stt <= 1e-12 * sw) {
      slope_ = 0;
      intercept_s_ = ym;
    } else {
      slope_ = sty / stt;
      intercept_s_ = ym - slope_ * tm;  // at t = 0, i.e. ref_time_s_
    }
    used_ = static_cast<int>(pts.size());
  }

  void Refit() {
    ref_time_s_ = window_.back().local_time_s;
    double dmin = window_.front().delay_s;
    for (const ClockSample& s : window_) dmin = std::min(dmin, s.delay_s);
    std::vector<double> excess;
    excess.reserve(window_.size());
    for (const ClockSample& s : window_) excess.push_back(s.delay_s - dmin);
    const double floor = options_.delay_floor_s;
    const double delay_limit = options_.outlier_delay_factor * Median(excess) + floor;

    std::vector<Point> pts;
    std::vector<double> scale;  // the error scale each point's weight assumes
    pts.reserve(window_.size());
    for (size_t i = 0; i < window_.size(); ++i) {
      if (excess[i] > delay_limit) continue;
      const double e2 = floor * floor + excess[i] * excess[i];
      pts.push_back({window_[i].local_time_s - ref_time_s_, window_[i].offset_s, 1.0 / e2});
      scale.push_back(std::sqrt(e2));
    }
    Fit(pts);
    if (static_cast<int>(pts.size()) < options_.min_samples_for_frequency) return;

    // Residual pass: a sample whose residual is far beyond what its delay explains (relative to
    // the window's typical ratio) is dropped, then the line is refitted once.
    std::vector<double> z(pts.size());
    for (size_t i = 0; i < pts.size(); ++i) {
      z[i] = std::fabs(pts[i].y - (intercept_s_ + slope_ * pts[i].t)) / scale[i];
    }
    const double z_limit = std::max(options_.outlier_residual_factor * Median(z), 1.0);
    std::vector<Point> kept;
    kept.reserve(pts.size());
    for (size_t i = 0; i < pts.size(); ++i) {
      if (z[i] <= z_limit) kept.push_back(pts[i]);
    }
    if (kept.size() != pts.size() && !kept.empty()) Fit(kept);
  }

  RegressionOptions options_;
  std::deque<ClockSample> window_;
  double ref_time_s_ = 0;
  double intercept_s_ = 0;
  double slope_ = 0;
  int used_ = 0;
};

// The seed's filter: weighted mean of the last `window` offsets with weights decay^age.
class EwmaEstimator : public ClockEstimator {
 public:
  explicit EwmaEstimator(const EwmaOptions& options) : options_(options) {
    if (options_.window < 1) options_.window = 1;
  }
  std::string Name() const override { return "ewma"; }

  void AddSample(const ClockSample& sample) override {
    window_.push_back(sample);
    while (static_cast<int>(window_.size()) > options_.window) window_.pop_front();
    double sw = 0, sy = 0, w = 1;
    for (auto it = window_.rbegin(); it != window_.rend(); ++it) {
      sw += w;
      sy += w * it->offset_s;
      w *= options_.decay;
    }
    estimate_s_ = sy / sw;
    // The filter has no frequency term; its implied frequency is how fast its output moves,
    // measured over one window of outputs.
    history_.push_back({sample.local_time_s, estimate_s_});
    while (static_cast<int>(history_.size()) > options_.window + 1) history_.pop_front();
    if (history_.size() >= 2 && history_.back().first > history_.front().first) {
      freq_ppm_ = (history_.back().second - history_.front().second) /
                  (history_.back().first - history_.front().first) * 1e6;
    }
  }
  double OffsetAt(double) const override { return estimate_s_; }
  double FrequencyPpm() const override { return freq_ppm_; }
  int SamplesUsed() const override { return static_cast<int>(window_.size()); }

 private:
  EwmaOptions options_;
  std::deque<ClockSample> window_;
  std::deque<std::pair<double, double>> history_;
  double estimate_s_ = 0;
  double freq_ppm_ = 0;
};

}  // namespace

std::unique_ptr<ClockEstimator> NewRegressionEstimator(const RegressionOptions& options) {
  return std::make_unique<RegressionEstimator>(options);
}
std::unique_ptr<ClockEstimator> NewEwmaEstimator(const EwmaOptions& options) {
  return std::make_unique<EwmaEstimator>(options);
}

ClockSimulator::ClockSimulator(const ClockSimOptions& options)
    : options_(options), rng_(options.seed), next_true_time_s_(options.poll_interval_s) {}

double ClockSimulator::LocalAt(double true_time_s) const {
  return true_time_s + options_.initial_offset_s + options_.drift_ppm * 1e-6 * true_time_s;
}

SimulatedSample ClockSimulator::Next() {
  std::exponential_distribution<double> queue(options_.jitter_s > 0 ? 1.0 / options_.jitter_s
                                                                    : 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto queueing = [&] { return options_.jitter_s > 0 ? queue(rng_) : 0.0; };
  double up = options_.base_delay_s / 2 + queueing();
  double down = options_.base_delay_s / 2 + queueing();
  if (unit(rng_) < options_.outlier_fraction) {
    const double extra =
        options_.outlier_min_s + (options_.outlier_max_s - options_.outlier_min_s) * unit(rng_);
    (unit(rng_) < 0.5 ? up : down) += extra;
  }
  const double ta = next_true_time_s_;  // client sends
  const double tb = ta + up;            // server receives
  const double tc = tb + options_.server_hold_s;
  const double td = tc + down;  // client receives
  next_true_time_s_ += options_.poll_interval_s;

  // Timestamps as the wire would carry them: client ones on the client clock, server ones on
  // true time. Kept in double seconds: at these magnitudes double resolution is below 1 ns.
  const double t1 = LocalAt(ta), t2 = tb, t3 = tc, t4 = LocalAt(td);
  SimulatedSample out;
  out.sample.local_time_s = t4;
  out.sample.offset_s = ((t2 - t1) + (t3 - t4)) / 2;
  out.sample.delay_s = (t4 - t1) - (t3 - t2);
  out.true_time_s = td;
  out.true_offset_s = td - t4;
  out.true_freq_ppm = -options_.drift_ppm / (1 + options_.drift_ppm * 1e-6);
  return out;
}

std::vector<EstimatorScore> ScoreEstimators(const ClockSimOptions& sim, int samples, int warmup,
                                            const std::vector<ClockEstimator*>& estimators) {
  ClockSimulator simulator(sim);
  std::vector<std::vector<double>> errors(estimators.size());
  double true_freq_ppm = 0;
  for (int k = 0; k < samples; ++k) {
    const SimulatedSample s = simulator.Next();
    true_freq_ppm = s.true_freq_ppm;
    for (size_t e = 0; e < estimators.size(); ++e) {
      estimators[e]->AddSample(s.sample);
      if (k >= warmup) {
        errors[e].push_back(estimators[e]->OffsetAt(s.sample.local_time_s) - s.true_offset_s);
      }
    }
  }
  std::vector<EstimatorScore> scores;
  for (size_t e = 0; e < estimators.size(); ++e) {
    EstimatorScore score;
    score.estimator = estimators[e]->Name();
    const std::vector<double>& err = errors[e];
    if (!err.empty()) {
      double sum = 0, sq = 0;
      std::vector<double> abs_err;
      for (double x : err) {
        sum += x;
        sq += x * x;
        abs_err.push_back(std::fabs(x));
      }
      std::sort(abs_err.begin(), abs_err.end());
      score.bias_us = sum / err.size() * 1e6;
      score.rms_us = std::sqrt(sq / err.size()) * 1e6;
      const size_t idx =
          std::min(abs_err.size() - 1, static_cast<size_t>(std::ceil(0.99 * abs_err.size())) - 1);
      score.p99_abs_error_us = abs_err[idx] * 1e6;
    }
    score.freq_error_ppm = std::fabs(estimators[e]->FrequencyPpm() - true_freq_ppm);
    scores.push_back(score);
  }
  return scores;
}

}  // namespace seedance::engine
