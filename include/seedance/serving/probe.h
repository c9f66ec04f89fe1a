// The online precision probe (issue 41, seed A §4.3; docs/serving.md#the-online-precision-probe):
// an A/B experiment on precision plans played through the serving simulator, emitting the tagged
// events a live service would send to the experiment API (docs/experiments.md).
//
// RunProbe splits a request trace between the experiment's variants: request i is session
// ProbeOptions::session_prefix + i, and goes to experiment::AssignVariant(spec, name, session), so
// a server computing the assignment itself agrees with every event. Each variant is its own
// replica taking its share of the traffic: its requests, arrival times kept, replayed by
// RunServingSim on that variant's hardware (the cost model with its precision plan). Every
// request then yields one Event carrying the metrics the spec declares among kProbeMetrics:
//
//   ttft_ms       first token - arrival
//   tpot_ms       (finish - first token) / (output tokens - 1), requests with > 1 output token
//   e2e_ms        finish - arrival
//   tokens_per_s  output tokens / (finish - arrival)
//   error         1 for a dropped request or (error_latency_ms > 0) one slower end to end than
//                 error_latency_ms, else 0
//   rel_error     the variant's plan's measured relative output error (ServingPlan::
//                 measured_rel_error), the same for every request of the variant
//
// A dropped request (longer than its replica's KV pool) has no latencies: its event carries only
// error and rel_error. A request none of whose declared metrics is defined (a dropped one when the
// spec asks for latencies only; a one-token request when it asks for tpot_ms only) has no event,
// since an event must carry a metric. Events are ordered by the request's finish time (dropped:
// arrival time), all variants interleaved, ties by variant and then trace order, as a live service
// would emit them.
//
// APDF (seed A §4.4): with ProbeOptions::apdf set, each variant has an ApdfBreaker fed
// Record(finish, e2e, error) per request in that order (a dropped request: its arrival time, 0 s,
// an error). Record closes the windows that ended before the request, so the first time a
// variant's breaker leaves Monitoring for Degraded or Fallback is noticed at the request whose
// Record closed the deciding window: that request's event is emitted, then a stop Event (no
// metrics, stop_reason "apdf: " + the transition's reason, that request's session), and no later
// event of the variant. The replica keeps serving in the simulation (its ServingResult covers
// every request); only its events stop, as a stopped arm of a live experiment.
//
// PublishEvents sends the events to an ExperimentSink (the server's API in the CLI) in batches,
// retrying a rate-limited batch after a bounded backoff; the sink also sleeps, so tests use a
// fake clock.
//
// Thread-safety: RunProbe and PublishEvents are reentrant; a sink is used from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/experiment/experiment.h"
#include "seedance/serving/apdf.h"
#include "seedance/serving/request_trace.h"
#include "seedance/serving/serving_sim.h"

namespace seedance::serving {

// The metrics a probe produces (the table above), in that order.
inline constexpr std::string_view kProbeMetrics[] = {"ttft_ms",      "tpot_ms", "e2e_ms",
                                                     "tokens_per_s", "error",   "rel_error"};

struct ProbeOptions {
  ServingSimOptions sim;  // every variant's replica runs with these
  // Request i is session session_prefix + i. REQUIRES: at most kMaxSessionBytes - 20 bytes, no
  // control characters (the server refuses those in a session).
  std::string session_prefix = "r";
  // > 0: a request slower than this end to end counts as an error (metric `error`, APDF).
  double error_latency_ms = 0;
  // Set: a breaker per variant stops the variant's events when it trips (seed A §4.4).
  std::optional<ApdfOptions> apdf;
  // Per variant (index of spec.variants): the plan's measured relative output error, nullopt
  // when it has none (no plan, or a plan without a measured SQNR). Empty: none for every variant.
  // REQUIRES: empty or one entry per variant.
  std::vector<std::optional<double>> measured_rel_error;
};

// A variant's APDF stop: when, why and the request that tripped it.
struct ProbeStop {
  int variant = 0;
  double time_s = 0;    // the transition (the end of the deciding window), simulation clock
  std::string session;  // the request whose Record closed that window
  std::string reason;   // the stop event's stop_reason: "apdf: " + the transition's reason
};

struct ProbeVariant {
  std::string name;
  ServingResult result;  // its replica's replay of its share (outcomes: index = its k-th request)
  int64_t requests = 0;  // assigned to it
  int64_t events = 0;    // metric events emitted (the stop event not counted)
  double mean_ttft_s = 0, mean_e2e_s = 0;  // over its completed requests (0 when none)
  std::optional<ProbeStop> stop;
};

struct ProbeResult {
  std::vector<ProbeVariant> variants;  // index of spec.variants
  std::vector<experiment::Event> events;
  std::vector<ProbeStop> stops;  // in the order their events were emitted
};

// OK when every metric `spec` declares is one the probe produces and, when it declares
// rel_error, every variant has a measured error. Otherwise InvalidArgument naming the JSON path
// of the definition ("$.metrics[2].name: ...", "$.variants[0]: ..."). RunProbe checks it first;
// callers may check before expensive work. REQUIRES: o.measured_rel_error empty or one per
// variant.
absl::Status CheckProbeSpec(const experiment::ExperimentSpec& spec, const ProbeOptions& o);

// Runs the probe described above. `name` is the experiment's name (it seeds the assignment).
// Errors: CheckProbeSpec's, and RunServingSim's for a variant's replica (prefixed with the
// variant). REQUIRES: per_variant.size() == spec.variants.size(); the spec as
// ParseExperimentSpec returns it.
absl::StatusOr<ProbeResult> RunProbe(const RequestTrace& trace,
                                     const experiment::ExperimentSpec& spec, std::string_view name,
                                     std::span<const ServingHardware> per_variant,
                                     const ProbeOptions& o);

// Where PublishEvents sends events: the server's experiment API in the CLI, a fake in tests.
class ExperimentSink {
 public:
  virtual ~ExperimentSink() = default;
  // Posts one {"events": [...]} body. `rate_limited` set (the server answered 429) asks for a
  // retry of the same body later.
  struct PostResult {
    absl::Status status;
    bool rate_limited = false;
  };
  virtual PostResult Post(const std::string& events_json) = 0;
  // Waits `seconds` before a retry.
  virtual void Sleep(double seconds) = 0;
};

struct PublishOptions {
  size_t batch = 1000;            // events per POST (the server takes at most 1000)
  double first_backoff_s = 1.0;   // after a 429 (the server asks for a retry in a second) ...
  double max_backoff_s = 8.0;     // ... doubling up to this
  int max_retries_per_batch = 8;  // then the 429 is the answer
  // Called after each accepted batch: events posted so far, all of them.
  std::function<void(int64_t posted, int64_t total)> progress;
};

// Posts `events` in order, in batches of o.batch. Stops at the first failure: the sink's status
// (after o.max_retries_per_batch retries of a rate-limited batch), its message prefixed with how
// many events were accepted before. REQUIRES: 1 <= o.batch; backoffs > 0; retries >= 0.
absl::Status PublishEvents(ExperimentSink& sink, const experiment::ExperimentSpec& spec,
                           std::span<const experiment::Event> events, const PublishOptions& o);

}  // namespace seedance::serving
