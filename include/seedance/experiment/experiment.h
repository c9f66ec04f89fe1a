// An A/B experiment on serving settings (issue 41, docs/experiments.md): its definition, the
// deterministic assignment of sessions to variants, the tagged events clients log, and the
// running analysis a report reads (stats.h).
//
// The unit of assignment is the session: AssignVariant hashes (experiment, session) to a point in
// [0, 1) and picks the variant whose cumulative weight covers it, so a session keeps its variant
// across restarts, replicas and clients that compute it themselves. The unit of analysis is the
// event (one request's metrics): each metric keeps per-variant Moments (and, for events that
// carry a pre-period covariate, JointMoments for CUPED); the sample-ratio check counts distinct
// sessions per variant. An event names the variant the client served (which is what is
// analysed); events whose variant is not the session's assignment are counted as a diagnostic.
//
// The sequential test is checked after every batch of events (Apply), with the mixture variance
// fixed the first time both arms of a metric hold kBurnIn events (from the pooled variance and
// the control's mean then), so replaying the same batches after a restart rebuilds the same
// state, running minimum of the p-value included.
//
// Thread-safety: ExperimentSpec and the functions are pure; an Experiment is not thread-safe (the
// server touches it only on its loop thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/experiment/stats.h"

namespace seedance::experiment {

enum class Direction { kIncrease, kDecrease };
std::string_view DirectionName(Direction d);  // "increase", "decrease"

struct VariantSpec {
  std::string name;            // [a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?
  double weight = 0;           // > 0; weights are normalised by their sum
  std::string precision_plan;  // optional: a label (e.g. the `model plan` file it serves)
};

struct MetricSpec {
  std::string name;  // [A-Za-z_][A-Za-z0-9_.]{0,63}
  Direction direction = Direction::kDecrease;
};

struct ExperimentSpec {
  std::string control;                // one of the variants
  std::vector<VariantSpec> variants;  // 2..16, distinct names
  std::vector<MetricSpec> metrics;    // 1..32, distinct names
  double mde = 0.02;       // minimum detectable effect, relative to the control's mean: (0, 10]
  double alpha = 0.05;     // (0, 0.5]
  double power = 0.8;      // [0.5, 0.999]
  std::string deployment;  // optional label: what the variants serve

  int VariantIndex(std::string_view name) const;  // -1 when absent
  int MetricIndex(std::string_view name) const;   // -1 when absent
  int control_index() const { return VariantIndex(control); }
};

inline constexpr int kMaxVariants = 16;
inline constexpr int kMaxMetrics = 32;
inline constexpr size_t kMaxSessionBytes = 256;
// Metric and covariate values are within +-kMaxMetricValue, so that sums of squares over any
// number of events stay finite.
inline constexpr double kMaxMetricValue = 1e100;
// Events a metric needs in both arms before its mixture variance is fixed.
inline constexpr int64_t kBurnIn = 100;

// The PUT body (docs/experiments.md): InvalidArgument "PATH: why" for anything else (unknown
// keys, a control that is not a variant, weights that are not positive, ...).
absl::StatusOr<ExperimentSpec> ParseExperimentSpec(const nlohmann::json& body);
nlohmann::json SpecToJson(const ExperimentSpec& spec);
// An experiment name: a DNS-1123 label.
absl::Status CheckExperimentName(std::string_view name);

// The 64-bit hash of (experiment name, session) that assignment uses: FNV-1a of
// NAME + "\x1f" + SESSION, then SplitMix64's finaliser. Stable: part of the API.
uint64_t AssignmentHash(std::string_view experiment, std::string_view session);
// The index of the session's variant.
int AssignVariant(const ExperimentSpec& spec, std::string_view experiment,
                  std::string_view session);

struct MetricValue {
  int metric = 0;  // index into spec.metrics
  double value = 0;
};

struct Event {
  std::string session;
  int variant = 0;  // as the client logged it
  std::vector<MetricValue> metrics;
  std::vector<MetricValue> covariates;  // pre-period values of the same metrics (CUPED)
  std::string stop_reason;  // non-empty: a "stop" event (the variant was stopped, e.g. by APDF)
};

// The events body {"events": [...]} decoded against the spec: InvalidArgument "PATH: why" for an
// unknown variant or metric, a non-finite or non-number value, an empty or oversized session, more
// than max_events events, none at all.
absl::StatusOr<std::vector<Event>> ParseEvents(const nlohmann::json& body,
                                               const ExperimentSpec& spec, size_t max_events);
// The canonical body of `events` (what the server stores); ParseEvents reads it back.
std::string EventsToJson(const std::vector<Event>& events, const ExperimentSpec& spec);

// The running analysis of one experiment.
class Experiment {
 public:
  Experiment(std::string name, ExperimentSpec spec);

  const std::string& name() const { return name_; }
  const ExperimentSpec& spec() const { return spec_; }
  // One batch of events (already validated), then one look of the sequential tests.
  void Apply(const std::vector<Event>& events);
  int64_t events() const { return events_; }
  int64_t sessions() const;
  // The report (docs/experiments.md, "Report").
  nlohmann::json Report() const;

 private:
  struct Arm {
    Moments raw;
    JointMoments joint;  // events with a covariate for this metric
  };
  struct MetricState {
    std::vector<Arm> arms;  // per variant
    bool planned = false;   // tau2 and the planned samples are fixed
    double tau2 = 0;
    int64_t fixed_n = 0, sequential_n = 0;    // planned events per arm
    std::vector<SequentialState> sequential;  // per variant (the control's unused)
  };
  // A metric's control and variant `v` as the tests see them: CUPED-adjusted when every event
  // of both arms carried the covariate.
  struct Compared {
    Moments control, treatment;
    bool adjusted = false;
    CupedResult cuped;
  };
  void Look();
  void Plan(MetricState& m) const;
  Compared Compare(const MetricState& m, int v) const;
  nlohmann::json ArmReport(const MetricState& m, int metric, int variant) const;

  std::string name_;
  ExperimentSpec spec_;
  std::vector<MetricState> metrics_;
  std::vector<absl::flat_hash_set<uint64_t>> sessions_;  // per variant: AssignmentHash of sessions
  std::vector<std::string> stopped_;                     // per variant: the stop reason, or ""
  int64_t events_ = 0;
  int64_t mismatched_ = 0;  // events whose variant is not the session's assignment
};

}  // namespace seedance::experiment
