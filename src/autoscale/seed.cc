// Seed B section 2.1's container autoscaler ("基于实时指标的容器级弹性扩缩容模型"):
//   score_raw = (w_cpu * cpu / cpu_target + w_lat * p95 / latency_target
//                + w_err * error_rate / error_rate_target) / (w_cpu + w_lat + w_err)
//   score     = alpha * score_raw + (1 - alpha) * score_prev     (the first period: score_raw)
//   up   counter: periods in a row with score > threshold * up_factor   (seed: 3 periods, x 1.1)
//   down counter: periods in a row with score < threshold * down_factor (seed: 5 periods)
// When the up counter reaches up_periods the deployment grows to
// min(ceil(current * max_up_ratio), max(current + 1, ceil(current * score / threshold))); when the
// down counter reaches down_periods it shrinks by down_step_replicas; either action restarts both
// counters. The result is clamped to [min_replicas, max_replicas].
//
// Where the seed is silent or ambiguous (docs/autoscale.md, "seed mode"):
//  * it names weights but not the normalisation: each metric is divided by its target and the sum
//    by the weights' sum, so a deployment exactly at its targets scores 1 = the default threshold;
//  * "weightedMovingAverage(metrics, 0.8)" over a 60 s window: read as the EWMA above with the
//    newest period weighted 0.8 (over a 60 s window of 15 s periods the older terms weigh
//    0.2^4 = 0.0016, so the window does not matter); the weighted sum of EWMAs is the EWMA of the
//    weighted sum, so smoothing the score is smoothing each metric;
//  * the lower bound is not given: threshold x 0.9 mirrors the seed's 10% buffer upward;
//  * the step is not given: up proportional to the score (HPA-like, at most doubling, since the
//    latency term grows without bound under overload), down one replica at a time (the score is not
//    proportional to load at low load, where latency stays at its floor).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "common.h"
#include "seedance/autoscale/autoscaler.h"

namespace seedance::autoscale {
namespace {

using internal::ValidateField;

class SeedAutoscaler final : public Autoscaler {
 public:
  explicit SeedAutoscaler(const SeedOptions& options) : options_(options) {}

  Mode mode() const override { return Mode::kSeed; }

  Decision Decide(const Observation& obs) override {
    internal::CheckObservation(obs, &last_now_s_);
    internal::CheckMetric("cpu_utilization", obs.cpu_utilization);
    internal::CheckMetric("p95_latency_s", obs.p95_latency_s);
    internal::CheckMetric("error_rate", obs.error_rate);
    const SeedOptions& o = options_;
    const double raw = (o.cpu_weight * obs.cpu_utilization / o.cpu_target +
                        o.latency_weight * obs.p95_latency_s / o.latency_target_s +
                        o.error_weight * obs.error_rate / o.error_rate_target) /
                       (o.cpu_weight + o.latency_weight + o.error_weight);
    score_ = has_score_ ? o.alpha * raw + (1 - o.alpha) * score_ : raw;
    has_score_ = true;
    up_count_ = score_ > o.threshold * o.up_factor ? up_count_ + 1 : 0;
    down_count_ = score_ < o.threshold * o.down_factor ? down_count_ + 1 : 0;

    Decision d;
    d.score = score_;
    const int current = obs.current_replicas;
    if (current == 0) {
      d.reason = "disabled";
      return d;
    }
    int proposal = current;
    d.reason = up_count_ > 0 || down_count_ > 0 ? "counting" : "steady";
    if (up_count_ >= o.up_periods) {
      const double cap = std::ceil(current * o.max_up_ratio);
      const double want = std::max(current + 1.0, std::ceil(current * score_ / o.threshold));
      proposal = static_cast<int>(std::min({cap, want, std::numeric_limits<int>::max() / 2.0}));
      d.reason = "scale-up";
      up_count_ = down_count_ = 0;
    } else if (down_count_ >= o.down_periods) {
      proposal = current - o.down_step_replicas;
      d.reason = "scale-down";
      up_count_ = down_count_ = 0;
    }
    d.recommendation = proposal;
    d.replicas = internal::Clamp(proposal, o.min_replicas, o.max_replicas);
    if (d.replicas != proposal) d.reason = "clamped";
    return d;
  }

 private:
  SeedOptions options_;
  double last_now_s_ = -std::numeric_limits<double>::infinity();
  bool has_score_ = false;
  double score_ = 0;
  int up_count_ = 0;
  int down_count_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Autoscaler>> NewSeedAutoscaler(const SeedOptions& o) {
  if (absl::Status s = internal::ValidateReplicaBounds("seed", o.min_replicas, o.max_replicas);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ValidateFields(
          "seed",
          {
              {"cpu_weight", o.cpu_weight, o.cpu_weight >= 0, ">= 0"},
              {"latency_weight", o.latency_weight, o.latency_weight >= 0, ">= 0"},
              {"error_weight", o.error_weight, o.error_weight >= 0, ">= 0"},
              {"cpu_weight + latency_weight + error_weight",
               o.cpu_weight + o.latency_weight + o.error_weight,
               o.cpu_weight + o.latency_weight + o.error_weight > 0, "> 0"},
              {"cpu_target", o.cpu_target, o.cpu_target > 0, "> 0"},
              {"latency_target_s", o.latency_target_s, o.latency_target_s > 0, "> 0"},
              {"error_rate_target", o.error_rate_target, o.error_rate_target > 0, "> 0"},
              {"alpha", o.alpha, o.alpha > 0 && o.alpha <= 1, "in (0, 1]"},
              {"threshold", o.threshold, o.threshold > 0, "> 0"},
              {"up_factor", o.up_factor, o.up_factor > 1, "> 1"},
              {"up_periods", static_cast<double>(o.up_periods), o.up_periods >= 1, ">= 1"},
              {"down_factor", o.down_factor, o.down_factor > 0 && o.down_factor < 1, "in (0, 1)"},
              {"down_periods", static_cast<double>(o.down_periods), o.down_periods >= 1, ">= 1"},
              {"max_up_ratio", o.max_up_ratio, o.max_up_ratio > 1, "> 1"},
              {"down_step_replicas", static_cast<double>(o.down_step_replicas),
               o.down_step_replicas >= 1, ">= 1"},
          });
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<Autoscaler>(new SeedAutoscaler(o));
}

}  // namespace seedance::autoscale
