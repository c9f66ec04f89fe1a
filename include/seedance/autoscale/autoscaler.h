// Container (replica) autoscaler of one deployment: at the end of each control period the caller
// hands it what was observed over that period and it answers how many replicas the deployment
// should have (docs/autoscale.md has the exact rules and every choice made).
//
// Three modes behind one interface:
//   hpa         the Kubernetes HorizontalPodAutoscaler algorithm and its default behaviour
//               (kubernetes.io, "Horizontal Pod Autoscaling": algorithm details, configurable
//               scaling behavior): desired = ceil(current x metric / target) per metric, the max
//               over metrics, no change when |ratio - 1| <= tolerance, scale-down stabilisation
//               (the highest recommendation of the last 300 s), rate-limit policies per trailing
//               period (up: max(+100%, +4 pods) per 15 s; down: -100% per 15 s), min/max clamp.
//   seed        seed B section 2.1: a weighted score over CPU utilisation (0.4), P95 latency (0.35)
//               and error rate (0.25), each divided by its target, smoothed by an exponentially
//               weighted moving average (alpha 0.8); scale up after 3 consecutive periods above
//               threshold x 1.1, down after 5 consecutive periods below threshold x 0.9.
//   predictive  forecasts the request arrival rate over the provisioning horizon with a robust
//               (Theil-Sen) trend over a short window, adds a headroom from its own recent forecast
//               errors, sizes replicas = ceil(rate / capacity_rps_per_replica) and holds
//               scale-downs for a stabilisation window.
//
// An autoscaler is a pure value: no clock, no threads, no I/O. Time only enters through
// Observation::now_s, so a test (or a trace replay) drives it step by step, and the period
// between two Decide calls may vary (for instance when engine::PeriodController sets it).
// Thread-safety: a single-threaded value; callers serialise access.
#ifndef SEEDANCE_AUTOSCALE_AUTOSCALER_H_
#define SEEDANCE_AUTOSCALE_AUTOSCALER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::autoscale {

enum class Mode { kHpa, kSeed, kPredictive };
std::string_view ModeName(Mode mode);  // "hpa", "seed", "predictive"
// Parses a ModeName; InvalidArgument naming the accepted values otherwise.
absl::StatusOr<Mode> ParseMode(std::string_view name);

// One metric of an HPA: its current value and its target, both in the metric's own unit
// (utilisation, or an average value per replica such as requests/s per replica). The HPA's ratio
// is current / target.
struct MetricValue {
  std::string name;
  double current = 0;
  double target = 0;
};

// What was observed over the period that ends at now_s. Each mode reads its own fields.
struct Observation {
  double now_s = 0;          // end of the period (any origin; must not decrease)
  int current_replicas = 0;  // the deployment's replica count (spec) now
  // hpa: one proposal per metric, the highest wins.
  std::vector<MetricValue> metrics;
  // seed: mean CPU utilisation of the replicas (0..1), P95 request latency and error rate
  // (failed / all requests) over the period.
  double cpu_utilization = 0;
  double p95_latency_s = 0;
  double error_rate = 0;
  // predictive: mean request arrival rate over the period (or the caller's metric window).
  double arrival_rate_rps = 0;
};

struct Decision {
  int replicas = 0;        // what the deployment should have now
  int recommendation = 0;  // the mode's proposal before stabilisation, rate limits and clamps
  double score = 0;        // hpa: highest metric ratio; seed: smoothed score; predictive: the
                           // rate it sized for (forecast + headroom), requests/s
  std::string reason;      // why: "tolerance", "scale-up", "scale-down", "stabilized",
                           // "rate-limited", "clamped", "counting", "steady", "disabled"
};

class Autoscaler {
 public:
  virtual ~Autoscaler() = default;
  virtual Mode mode() const = 0;
  // The decision for the period that ends at obs.now_s. The caller applies it (or not) and passes
  // the replica count it actually has in the next observation.
  // REQUIRES: obs.now_s not smaller than the previous call's; obs.current_replicas >= 0;
  // metric values finite and >= 0 (an hpa metric's target > 0).
  virtual Decision Decide(const Observation& obs) = 0;
};

// ---- hpa ----

// A scaling policy: at most `value` pods (kPods) or `value` percent of the replica count at the
// start of the trailing period (kPercent) may be added (scale-up) or removed (scale-down) within
// any trailing `period_s`.
struct ScalingPolicy {
  enum class Type { kPods, kPercent };
  Type type = Type::kPercent;
  int value = 100;
  double period_s = 15;
};

// HPA scaling rules for one direction (spec.behavior.scaleUp / scaleDown).
struct ScalingRules {
  enum class Select { kMax, kMin, kDisabled };
  double stabilization_window_s = 0;
  Select select = Select::kMax;  // kMax: the policy allowing the biggest change wins
  std::vector<ScalingPolicy> policies;
};

struct HpaOptions {
  int min_replicas = 1;
  int max_replicas = 10;
  double tolerance = 0.1;  // --horizontal-pod-autoscaler-tolerance
  // Kubernetes' defaults: up: no stabilisation, max(100%, 4 pods) per 15 s; down: 300 s
  // stabilisation, 100% per 15 s.
  ScalingRules scale_up = {
      0,
      ScalingRules::Select::kMax,
      {{ScalingPolicy::Type::kPercent, 100, 15}, {ScalingPolicy::Type::kPods, 4, 15}}};
  ScalingRules scale_down = {
      300, ScalingRules::Select::kMax, {{ScalingPolicy::Type::kPercent, 100, 15}}};
};

// InvalidArgument naming the field when: min_replicas < 1, max_replicas < min_replicas,
// tolerance < 0 or not finite, a stabilisation window < 0, a policy value < 1 (a percent policy
// for scale-down also > 100) or period_s <= 0, or a direction with no policies that is not
// kDisabled.
absl::StatusOr<std::unique_ptr<Autoscaler>> NewHpaAutoscaler(const HpaOptions& options = {});

// ---- seed ----

struct SeedOptions {
  int min_replicas = 1;
  int max_replicas = 10;
  // Weights of the normalised metrics (seed B 2.1's table). Each >= 0, sum > 0.
  double cpu_weight = 0.4;
  double latency_weight = 0.35;
  double error_weight = 0.25;
  // Targets each metric is divided by (the operating point the deployment should run at).
  double cpu_target = 0.7;
  double latency_target_s = 1.0;
  double error_rate_target = 0.01;
  double alpha = 0.8;          // EWMA weight of the newest score, (0, 1]
  double threshold = 1.0;      // score at the targets
  double up_factor = 1.1;      // scale up above threshold x up_factor ...
  int up_periods = 3;          // ... for this many consecutive periods
  double down_factor = 0.9;    // scale down below threshold x down_factor ...
  int down_periods = 5;        // ... for this many consecutive periods
  double max_up_ratio = 2.0;   // one scale-up at most multiplies replicas by this
  int down_step_replicas = 1;  // one scale-down removes this many replicas
};

// InvalidArgument naming the field for: replicas bounds as in HpaOptions, a negative or
// non-finite weight, weights summing to 0, a target <= 0, alpha outside (0, 1], threshold <= 0,
// up_factor <= 1, down_factor outside (0, 1), up_periods or down_periods < 1, max_up_ratio <= 1,
// down_step_replicas < 1.
absl::StatusOr<std::unique_ptr<Autoscaler>> NewSeedAutoscaler(const SeedOptions& options = {});

// ---- predictive ----

struct PredictiveOptions {
  int min_replicas = 1;
  int max_replicas = 10;
  double capacity_rps_per_replica = 1;  // the rate one replica serves within its SLO
  // How far ahead a decision must hold: a replica requested now is ready after the start-up delay
  // and the next decision comes one period later.
  double horizon_s = 75;
  double trend_window_s = 300;  // samples the robust trend is fitted on
  // Headroom = this quantile of the recent under-forecasts (realised - forecast, in requests/s;
  // over-forecasts count as 0) over error_window_s.
  double headroom_quantile = 0.9;
  double error_window_s = 600;
  double scale_down_window_s = 120;  // highest recommendation of this trailing window
};

// InvalidArgument naming the field for: replicas bounds as in HpaOptions,
// capacity_rps_per_replica <= 0, horizon_s < 0, trend_window_s <= 0, headroom_quantile outside
// [0, 1], error_window_s <= 0, scale_down_window_s < 0 (any of them not finite).
absl::StatusOr<std::unique_ptr<Autoscaler>> NewPredictiveAutoscaler(
    const PredictiveOptions& options = {});

}  // namespace seedance::autoscale

#endif  // SEEDANCE_AUTOSCALE_AUTOSCALER_H_
