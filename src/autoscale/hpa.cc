// The Kubernetes HorizontalPodAutoscaler's replica calculation and its scaling behaviour, from the
// published contract (kubernetes.io, "Horizontal Pod Autoscaling": "Algorithm details" and
// "Configurable scaling behavior"; the autoscaling/v2 HPAScalingRules API reference):
//   1. per metric: ratio = current / target; proposal = current replicas when |1 - ratio| <=
//      tolerance, else ceil(current replicas x ratio); the highest proposal over metrics wins;
//   2. the proposal is recorded; stabilisation: the recommendation is the current replica count
//      clamped to [lowest proposal of the scale-up window, highest proposal of the scale-down
//      window] (both windows count the proposals of the last window seconds, this one included);
//   3. rate limits: each policy allows a change relative to the replica count at the start of its
//      trailing period (the replicas now minus what was added plus what was removed within it);
//      selectPolicy Max takes the policy allowing the biggest change, Min the smallest;
//   4. the result is clamped to [min_replicas, max_replicas].
// Assumptions: the caller applies every decision (scale events are recorded as decided); a
// deployment at 0 replicas is not scaled (the HPA disables itself there); readiness and missing
// metrics are the caller's business (it passes the metric values the HPA would use).
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>

#include "common.h"
#include "seedance/autoscale/autoscaler.h"
#include "seedance/base/check.h"

namespace seedance::autoscale {
namespace {

using internal::ValidateField;

absl::Status ValidateRules(const ScalingRules& rules, std::string_view direction, bool down) {
  const std::string prefix = std::string(direction);
  if (absl::Status s =
          ValidateField("hpa", prefix + ".stabilization_window_s", rules.stabilization_window_s,
                        rules.stabilization_window_s >= 0, ">= 0");
      !s.ok()) {
    return s;
  }
  if (rules.policies.empty() && rules.select != ScalingRules::Select::kDisabled) {
    return absl::InvalidArgumentError("hpa: field '" + prefix +
                                      ".policies': empty (set select kDisabled to turn the "
                                      "direction off)");
  }
  for (size_t i = 0; i < rules.policies.size(); ++i) {
    const ScalingPolicy& p = rules.policies[i];
    const std::string field = prefix + ".policies[" + std::to_string(i) + "]";
    const bool percent_down = down && p.type == ScalingPolicy::Type::kPercent;
    if (absl::Status s = ValidateField("hpa", field + ".value", p.value,
                                       p.value >= 1 && (!percent_down || p.value <= 100),
                                       percent_down ? "in [1, 100]" : ">= 1");
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            ValidateField("hpa", field + ".period_s", p.period_s, p.period_s > 0, "> 0");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

class HpaAutoscaler final : public Autoscaler {
 public:
  explicit HpaAutoscaler(const HpaOptions& options) : options_(options) {
    for (const auto* rules : {&options_.scale_up, &options_.scale_down}) {
      keep_s_ = std::max(keep_s_, rules->stabilization_window_s);
      for (const ScalingPolicy& p : rules->policies) keep_s_ = std::max(keep_s_, p.period_s);
    }
  }

  Mode mode() const override { return Mode::kHpa; }

  Decision Decide(const Observation& obs) override {
    internal::CheckObservation(obs, &last_now_s_);
    const double now = obs.now_s;
    Prune(now);
    const int current = obs.current_replicas;
    Decision d;
    if (current == 0) {
      d.reason = "disabled";
      return d;
    }
    // 1. Proposal: the highest over metrics; no metrics keeps the replica count.
    int proposal = obs.metrics.empty() ? current : 0;
    double top_ratio = 0;
    bool in_tolerance = !obs.metrics.empty();
    for (const MetricValue& m : obs.metrics) {
      internal::CheckMetric(m.name, m.current);
      SEEDANCE_CHECK(std::isfinite(m.target) && m.target > 0)
          << "metric " << m.name << ": target " << m.target << " is not > 0";
      const double ratio = m.current / m.target;
      top_ratio = std::max(top_ratio, ratio);
      int p = current;
      if (std::fabs(1.0 - ratio) > options_.tolerance) {
        p = static_cast<int>(
            std::min<double>(std::ceil(current * ratio), std::numeric_limits<int>::max() / 2));
        in_tolerance = false;
      }
      proposal = std::max(proposal, p);
    }
    d.recommendation = proposal;
    d.score = top_ratio;
    proposals_.push_back({now, proposal});

    // 2. Stabilisation.
    int up_floor = proposal, down_ceiling = proposal;
    for (const auto& [t, p] : proposals_) {
      if (now - t < options_.scale_up.stabilization_window_s) up_floor = std::min(up_floor, p);
      if (now - t < options_.scale_down.stabilization_window_s) {
        down_ceiling = std::max(down_ceiling, p);
      }
    }
    const int stabilized = std::clamp(current, up_floor, down_ceiling);

    // 3. Rate limits, 4. min/max.
    int low = options_.min_replicas, high = options_.max_replicas;
    if (stabilized > current) {
      high = std::min(high, std::max(current, UpLimit(now, current)));
    } else if (stabilized < current) {
      low = std::max(low, std::min(current, DownLimit(now, current)));
    }
    const int desired = std::clamp(stabilized, low, high);
    d.replicas = desired;
    if (desired != stabilized) {
      const bool by_bounds =
          desired == std::clamp(stabilized, options_.min_replicas, options_.max_replicas);
      d.reason = by_bounds ? "clamped" : "rate-limited";
    } else if (stabilized != proposal) {
      d.reason = "stabilized";
    } else if (desired > current) {
      d.reason = "scale-up";
    } else if (desired < current) {
      d.reason = "scale-down";
    } else {
      d.reason = in_tolerance ? "tolerance" : "steady";
    }
    if (desired != current) events_.push_back({now, desired - current});
    return d;
  }

 private:
  struct Proposal {
    double t_s;
    int replicas;
  };
  struct Event {
    double t_s;
    int delta;  // replicas added (> 0) or removed (< 0)
  };

  void Prune(double now) {
    while (!proposals_.empty() && now - proposals_.front().t_s >= keep_s_) proposals_.pop_front();
    while (!events_.empty() && now - events_.front().t_s >= keep_s_) events_.pop_front();
  }

  // Replicas added and removed within the trailing period_s.
  void ChangesWithin(double now, double period_s, int* added, int* removed) const {
    *added = *removed = 0;
    for (const Event& e : events_) {
      if (now - e.t_s >= period_s) continue;
      if (e.delta > 0) *added += e.delta;
      if (e.delta < 0) *removed -= e.delta;
    }
  }

  int UpLimit(double now, int current) const {
    const ScalingRules& rules = options_.scale_up;
    if (rules.select == ScalingRules::Select::kDisabled) return current;
    int best = rules.select == ScalingRules::Select::kMax ? std::numeric_limits<int>::min()
                                                          : std::numeric_limits<int>::max();
    for (const ScalingPolicy& p : rules.policies) {
      int added, removed;
      ChangesWithin(now, p.period_s, &added, &removed);
      const int start = current - added + removed;
      const double limit = p.type == ScalingPolicy::Type::kPods
                               ? start + static_cast<double>(p.value)
                               : std::ceil(start * (1 + p.value / 100.0));
      const int l = static_cast<int>(std::min<double>(limit, std::numeric_limits<int>::max() / 2));
      best = rules.select == ScalingRules::Select::kMax ? std::max(best, l) : std::min(best, l);
    }
    return best;
  }

  int DownLimit(double now, int current) const {
    const ScalingRules& rules = options_.scale_down;
    if (rules.select == ScalingRules::Select::kDisabled) return current;
    int best = rules.select == ScalingRules::Select::kMax ? std::numeric_limits<int>::max()
                                                          : std::numeric_limits<int>::min();
    for (const ScalingPolicy& p : rules.policies) {
      int added, removed;
      ChangesWithin(now, p.period_s, &added, &removed);
      const int start = current + removed - added;
      // At most value% of the period's starting count removed: ceil keeps the rest whole.
      const int l = p.type == ScalingPolicy::Type::kPods
                        ? start - p.value
                        : static_cast<int>(std::ceil(start * (1 - p.value / 100.0)));
      // Max: the policy allowing the biggest change, i.e. the lowest floor.
      best = rules.select == ScalingRules::Select::kMax ? std::min(best, l) : std::max(best, l);
    }
    return best;
  }

  HpaOptions options_;
  double keep_s_ = 0;
  double last_now_s_ = -std::numeric_limits<double>::infinity();
  std::deque<Proposal> proposals_;
  std::deque<Event> events_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Autoscaler>> NewHpaAutoscaler(const HpaOptions& options) {
  if (absl::Status s =
          internal::ValidateReplicaBounds("hpa", options.min_replicas, options.max_replicas);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateField("hpa", "tolerance", options.tolerance, options.tolerance >= 0, ">= 0");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateRules(options.scale_up, "scale_up", false); !s.ok()) return s;
  if (absl::Status s = ValidateRules(options.scale_down, "scale_down", true); !s.ok()) return s;
  return std::unique_ptr<Autoscaler>(new HpaAutoscaler(options));
}

}  // namespace seedance::autoscale
