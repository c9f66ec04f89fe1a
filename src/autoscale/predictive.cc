// Predictive mode: replicas for the request rate expected over the provisioning horizon.
//   trend     Theil-Sen over the samples of the last trend_window_s: slope = median of the pairwise
//             slopes, level at now = median of (x_i - slope * (t_i - now)); one sample: slope 0.
//             The median makes one burst (or one quiet period) move neither the level nor the
//             slope, which a least-squares or Holt fit would follow.
//   forecast  F = max(level, level + slope * horizon_s, newest sample): the peak over
//             [now, now + horizon] of the trend, never below what was just observed (a step up is
//             served at once, as the HPA would; a falling trend only shrinks after it happened).
//   headroom  H = the headroom_quantile of the recent under-forecasts: each forecast is compared
//             with the highest sample of the horizon it covered, max(0, peak - F), kept for
//             error_window_s. No constant is tuned to a trace: the headroom is what would have
//             covered that share of the recent horizons.
//   size      recommendation = ceil((F + H) / capacity_rps_per_replica), clamped to
//             [min_replicas, max_replicas]; scale-down to the highest recommendation of the last
//             scale_down_window_s (this one included), scale-up at once.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include "common.h"
#include "seedance/autoscale/autoscaler.h"

namespace seedance::autoscale {
namespace {

using internal::ValidateField;

double Median(std::vector<double>* v) {
  const size_t n = v->size();
  std::nth_element(v->begin(), v->begin() + n / 2, v->end());
  const double hi = (*v)[n / 2];
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v->begin(), v->begin() + n / 2);
  return (lo + hi) / 2;
}

// Nearest-rank quantile q of unsorted values (0 when empty).
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(v.size()));
  const size_t k = std::min(v.size() - 1, rank <= 1 ? 0 : static_cast<size_t>(rank) - 1);
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

class PredictiveAutoscaler final : public Autoscaler {
 public:
  explicit PredictiveAutoscaler(const PredictiveOptions& options) : options_(options) {}

  Mode mode() const override { return Mode::kPredictive; }

  Decision Decide(const Observation& obs) override {
    internal::CheckObservation(obs, &last_now_s_);
    internal::CheckMetric("arrival_rate_rps", obs.arrival_rate_rps);
    const PredictiveOptions& o = options_;
    const double now = obs.now_s, x = obs.arrival_rate_rps;

    // Score the forecasts whose horizon this sample falls in; finish those it ends.
    for (Pending& p : pending_) {
      if (now > p.t_s) p.peak = std::max(p.peak, x);
    }
    while (!pending_.empty() && now >= pending_.front().t_s + o.horizon_s) {
      const Pending& p = pending_.front();
      errors_.push_back({now, std::max(0.0, p.peak - p.forecast)});
      pending_.pop_front();
    }
    while (!errors_.empty() && now - errors_.front().t_s >= o.error_window_s) errors_.pop_front();

    samples_.push_back({now, x});
    while (now - samples_.front().t_s >= o.trend_window_s) samples_.pop_front();

    const Trend trend = FitTrend(now);
    const double forecast =
        std::max({0.0, trend.level, trend.level + trend.slope * o.horizon_s, x});
    std::vector<double> errs;
    errs.reserve(errors_.size());
    for (const auto& e : errors_) errs.push_back(e.value);
    const double headroom = Quantile(std::move(errs), o.headroom_quantile);
    if (o.horizon_s > 0) pending_.push_back({now, forecast, 0.0});

    const double want = (forecast + headroom) / o.capacity_rps_per_replica;
    const int rec = internal::Clamp(
        static_cast<int>(std::min(std::ceil(want), std::numeric_limits<int>::max() / 2.0)),
        o.min_replicas, o.max_replicas);
    recommendations_.push_back({now, static_cast<double>(rec)});
    while (recommendations_.size() > 1 &&
           now - recommendations_.front().t_s >= o.scale_down_window_s) {
      recommendations_.pop_front();
    }
    int held = rec;
    for (const auto& r : recommendations_) held = std::max(held, static_cast<int>(r.value));

    Decision d;
    d.score = forecast + headroom;
    d.recommendation = rec;
    const int current = obs.current_replicas;
    d.replicas = rec >= current ? rec : std::min(current, held);
    d.reason = d.replicas > current   ? "scale-up"
               : d.replicas < current ? "scale-down"
               : rec < current        ? "stabilized"
                                      : "steady";
    return d;
  }

 private:
  struct Sample {
    double t_s;
    double value;
  };
  struct Pending {
    double t_s;  // when the forecast was made
    double forecast;
    double peak;  // highest sample seen in (t_s, t_s + horizon]
  };
  struct Trend {
    double level = 0;
    double slope = 0;  // requests/s per second
  };

  Trend FitTrend(double now) const {
    Trend tr;
    std::vector<double> slopes;
    for (size_t i = 0; i < samples_.size(); ++i) {
      for (size_t j = i + 1; j < samples_.size(); ++j) {
        const double dt = samples_[j].t_s - samples_[i].t_s;
        if (dt > 0) slopes.push_back((samples_[j].value - samples_[i].value) / dt);
      }
    }
    if (!slopes.empty()) tr.slope = Median(&slopes);
    std::vector<double> levels;
    levels.reserve(samples_.size());
    for (const Sample& s : samples_) levels.push_back(s.value - tr.slope * (s.t_s - now));
    tr.level = Median(&levels);
    return tr;
  }

  PredictiveOptions options_;
  double last_now_s_ = -std::numeric_limits<double>::infinity();
  std::deque<Sample> samples_;
  std::deque<Pending> pending_;
  std::deque<Sample> errors_;           // (when scored, under-forecast in requests/s)
  std::deque<Sample> recommendations_;  // (when, replicas)
};

}  // namespace

absl::StatusOr<std::unique_ptr<Autoscaler>> NewPredictiveAutoscaler(const PredictiveOptions& o) {
  if (absl::Status s =
          internal::ValidateReplicaBounds("predictive", o.min_replicas, o.max_replicas);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ValidateFields(
          "predictive",
          {
              {"capacity_rps_per_replica", o.capacity_rps_per_replica,
               o.capacity_rps_per_replica > 0, "> 0"},
              {"horizon_s", o.horizon_s, o.horizon_s >= 0, ">= 0"},
              {"trend_window_s", o.trend_window_s, o.trend_window_s > 0, "> 0"},
              {"headroom_quantile", o.headroom_quantile,
               o.headroom_quantile >= 0 && o.headroom_quantile <= 1, "in [0, 1]"},
              {"error_window_s", o.error_window_s, o.error_window_s > 0, "> 0"},
              {"scale_down_window_s", o.scale_down_window_s, o.scale_down_window_s >= 0, ">= 0"},
          });
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<Autoscaler>(new PredictiveAutoscaler(o));
}

}  // namespace seedance::autoscale
