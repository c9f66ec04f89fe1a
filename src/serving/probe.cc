// The online precision probe (include/seedance/serving/probe.h).
#include "seedance/serving/probe.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"

namespace seedance::serving {
namespace {

using experiment::Event;
using experiment::ExperimentSpec;
using experiment::MetricValue;

// The probe's metrics, in kProbeMetrics order.
enum class ProbeMetric { kTtft, kTpot, kE2e, kTokensPerS, kError, kRelError };

// "ttft_ms, tpot_ms, ...", for messages.
std::string ProbeMetricList() {
  std::string list;
  for (std::string_view m : kProbeMetrics) {
    absl::StrAppend(&list, list.empty() ? "" : ", ", std::string(m));
  }
  return list;
}

int ProbeMetricIndex(std::string_view name) {
  for (size_t i = 0; i < std::size(kProbeMetrics); ++i) {
    if (kProbeMetrics[i] == name) return static_cast<int>(i);
  }
  return -1;
}

// One request in the order events are emitted.
struct Emission {
  double time_s = 0;  // finish (dropped: arrival), simulation clock
  int variant = 0;
  size_t k = 0;        // its index in the variant's sub-trace
  size_t request = 0;  // its index in the trace
};

// What one request's event needs, from its outcome.
struct Measured {
  bool dropped = false;
  double ttft_s = 0, e2e_s = 0, tpot_s = -1;  // tpot_s < 0: undefined (one output token)
  double tokens_per_s = -1;                   // < 0: undefined
  bool error = false;
};

Measured Measure(const TraceRequest& t, const RequestOutcome& out, double arrival_s,
                 double error_latency_ms) {
  Measured m;
  m.dropped = out.dropped;
  if (!m.dropped) {
    m.ttft_s = out.first_token_s - arrival_s;
    m.e2e_s = out.finish_s - arrival_s;
    if (t.output_tokens > 1) m.tpot_s = (out.finish_s - out.first_token_s) / (t.output_tokens - 1);
    if (m.e2e_s > 0) m.tokens_per_s = t.output_tokens / m.e2e_s;
  }
  m.error = m.dropped || (error_latency_ms > 0 && m.e2e_s * 1e3 > error_latency_ms);
  return m;
}

// The metrics of `spec` that `m` defines, in the spec's order. `rel_error` is the variant's
// (CheckProbeSpec made sure it has one when the spec asks for it).
std::vector<MetricValue> Metrics(const ExperimentSpec& spec, const std::vector<int>& probe_metric,
                                 const Measured& m, double rel_error) {
  std::vector<MetricValue> values;
  for (size_t j = 0; j < spec.metrics.size(); ++j) {
    const int metric = static_cast<int>(j);
    switch (static_cast<ProbeMetric>(probe_metric[j])) {
      case ProbeMetric::kTtft:
        if (!m.dropped) values.push_back({metric, m.ttft_s * 1e3});
        break;
      case ProbeMetric::kTpot:
        if (!m.dropped && m.tpot_s >= 0) values.push_back({metric, m.tpot_s * 1e3});
        break;
      case ProbeMetric::kE2e:
        if (!m.dropped) values.push_back({metric, m.e2e_s * 1e3});
        break;
      case ProbeMetric::kTokensPerS:
        if (!m.dropped && m.tokens_per_s >= 0) values.push_back({metric, m.tokens_per_s});
        break;
      case ProbeMetric::kError:
        values.push_back({metric, m.error ? 1.0 : 0.0});
        break;
      case ProbeMetric::kRelError:
        values.push_back({metric, rel_error});
        break;
    }
  }
  return values;
}

// The first transition at or after `from` that leaves Monitoring for Degraded or Fallback.
const ApdfTransition* Trip(const std::vector<ApdfTransition>& transitions, size_t from) {
  for (size_t i = from; i < transitions.size(); ++i) {
    const ApdfTransition& t = transitions[i];
    if (t.from == ApdfState::kMonitoring &&
        (t.to == ApdfState::kDegraded || t.to == ApdfState::kFallback)) {
      return &t;
    }
  }
  return nullptr;
}

// Each variant's replica: its requests (trace indices) replayed on its hardware.
absl::Status RunReplicas(const RequestTrace& trace, const ExperimentSpec& spec,
                         std::span<const ServingHardware> per_variant, const ProbeOptions& o,
                         const std::vector<std::vector<size_t>>& members, ProbeResult* res) {
  for (size_t v = 0; v < spec.variants.size(); ++v) {
    RequestTrace sub;
    sub.source = trace.source;
    sub.format = trace.format;
    sub.prefix_block_tokens = trace.prefix_block_tokens;
    sub.requests.reserve(members[v].size());
    for (size_t i : members[v]) sub.requests.push_back(trace.requests[i]);
    absl::StatusOr<ServingResult> r = RunServingSim(sub, per_variant[v], o.sim);
    if (!r.ok()) {
      return absl::Status(r.status().code(), absl::StrCat("variant \"", spec.variants[v].name,
                                                          "\": ", r.status().message()));
    }
    ProbeVariant& pv = res->variants[v];
    pv.name = spec.variants[v].name;
    pv.requests = static_cast<int64_t>(members[v].size());
    pv.result = std::move(*r);
    double ttft = 0, e2e = 0;
    for (size_t k = 0; k < members[v].size(); ++k) {
      const RequestOutcome& out = pv.result.outcomes[k];
      if (out.dropped) continue;
      const double arrival = trace.requests[members[v][k]].arrival_s / o.sim.rate_scale;
      ttft += out.first_token_s - arrival;
      e2e += out.finish_s - arrival;
    }
    if (pv.result.completed > 0) {
      pv.mean_ttft_s = ttft / static_cast<double>(pv.result.completed);
      pv.mean_e2e_s = e2e / static_cast<double>(pv.result.completed);
    }
  }
  return absl::OkStatus();
}

// Every request of every variant, in the order a live service emits their events.
std::vector<Emission> EmissionOrder(const RequestTrace& trace, const ProbeOptions& o,
                                    const std::vector<std::vector<size_t>>& members,
                                    const ProbeResult& res) {
  std::vector<Emission> order;
  order.reserve(trace.requests.size());
  for (size_t v = 0; v < members.size(); ++v) {
    for (size_t k = 0; k < members[v].size(); ++k) {
      const RequestOutcome& out = res.variants[v].result.outcomes[k];
      const double arrival = trace.requests[members[v][k]].arrival_s / o.sim.rate_scale;
      order.push_back(
          {out.dropped ? arrival : out.finish_s, static_cast<int>(v), k, members[v][k]});
    }
  }
  std::sort(order.begin(), order.end(), [](const Emission& a, const Emission& b) {
    return std::tie(a.time_s, a.variant, a.request) < std::tie(b.time_s, b.variant, b.request);
  });
  return order;
}

}  // namespace

absl::Status CheckProbeSpec(const ExperimentSpec& spec, const ProbeOptions& o) {
  SEEDANCE_CHECK(o.measured_rel_error.empty() ||
                 o.measured_rel_error.size() == spec.variants.size())
      << "measured_rel_error has " << o.measured_rel_error.size() << " entries for "
      << spec.variants.size() << " variants";
  bool wants_rel_error = false;
  for (size_t j = 0; j < spec.metrics.size(); ++j) {
    const std::string& name = spec.metrics[j].name;
    if (ProbeMetricIndex(name) < 0) {
      return base::JsonError(
          base::JsonPathChild(base::JsonPathIndex("$.metrics", j), "name"),
          absl::StrCat("the probe cannot produce metric ", base::QuoteForMessage(name),
                       " (it produces ", ProbeMetricList(), ")"));
    }
    wants_rel_error |= name == "rel_error";
  }
  if (!wants_rel_error) return absl::OkStatus();
  for (size_t v = 0; v < spec.variants.size(); ++v) {
    if (o.measured_rel_error.empty() || !o.measured_rel_error[v].has_value()) {
      return base::JsonError(
          base::JsonPathIndex("$.variants", v),
          absl::StrCat("metric rel_error needs each variant's measured output error, and variant ",
                       base::QuoteForMessage(spec.variants[v].name),
                       " has none (it serves the model's own formats, or its precision plan has "
                       "no measured_sqnr_db)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ProbeResult> RunProbe(const RequestTrace& trace, const ExperimentSpec& spec,
                                     std::string_view name,
                                     std::span<const ServingHardware> per_variant,
                                     const ProbeOptions& o) {
  SEEDANCE_CHECK(!spec.variants.empty() && per_variant.size() == spec.variants.size())
      << per_variant.size() << " hardware models for " << spec.variants.size() << " variants";
  SEEDANCE_CHECK(o.session_prefix.size() + 20 <= experiment::kMaxSessionBytes)
      << "a session prefix of " << o.session_prefix.size() << " bytes leaves no room for the index";
  if (absl::Status s = CheckProbeSpec(spec, o); !s.ok()) return s;
  std::vector<int> probe_metric;
  for (const experiment::MetricSpec& m : spec.metrics) {
    probe_metric.push_back(ProbeMetricIndex(m.name));
  }

  // The split: each request to its session's variant.
  const size_t n = trace.requests.size();
  std::vector<std::string> sessions(n);
  std::vector<std::vector<size_t>> members(spec.variants.size());
  for (size_t i = 0; i < n; ++i) {
    sessions[i] = absl::StrCat(o.session_prefix, i);
    const int v = experiment::AssignVariant(spec, name, sessions[i]);
    members[static_cast<size_t>(v)].push_back(i);
  }
  ProbeResult res;
  res.variants.resize(spec.variants.size());
  if (absl::Status s = RunReplicas(trace, spec, per_variant, o, members, &res); !s.ok()) return s;

  // The events, in emission order, with each variant's breaker watching its own.
  std::vector<ApdfBreaker> breakers;
  if (o.apdf) breakers.assign(spec.variants.size(), ApdfBreaker(*o.apdf));
  std::vector<bool> stopped(spec.variants.size(), false);
  res.events.reserve(n);
  for (const Emission& e : EmissionOrder(trace, o, members, res)) {
    if (stopped[static_cast<size_t>(e.variant)]) continue;
    ProbeVariant& pv = res.variants[static_cast<size_t>(e.variant)];
    const TraceRequest& t = trace.requests[e.request];
    const Measured m =
        Measure(t, pv.result.outcomes[e.k], t.arrival_s / o.sim.rate_scale, o.error_latency_ms);
    double rel_error = 0;
    if (!o.measured_rel_error.empty()) {
      rel_error = o.measured_rel_error[static_cast<size_t>(e.variant)].value_or(0);
    }
    std::vector<MetricValue> values = Metrics(spec, probe_metric, m, rel_error);
    if (!values.empty()) {
      res.events.push_back({sessions[e.request], e.variant, std::move(values), {}, ""});
      ++pv.events;
    }
    if (breakers.empty()) continue;
    ApdfBreaker& breaker = breakers[static_cast<size_t>(e.variant)];
    const size_t seen = breaker.transitions().size();
    breaker.Record(e.time_s, m.e2e_s, m.error);
    if (const ApdfTransition* trip = Trip(breaker.transitions(), seen)) {
      ProbeStop stop{e.variant, trip->time_s, sessions[e.request], "apdf: " + trip->reason};
      res.events.push_back({stop.session, e.variant, {}, {}, stop.reason});
      pv.stop = stop;
      res.stops.push_back(std::move(stop));
      stopped[static_cast<size_t>(e.variant)] = true;
    }
  }
  return res;
}

absl::Status PublishEvents(ExperimentSink& sink, const ExperimentSpec& spec,
                           std::span<const Event> events, const PublishOptions& o) {
  SEEDANCE_CHECK(o.batch >= 1) << "a batch of no events";
  SEEDANCE_CHECK(o.first_backoff_s > 0 && o.max_backoff_s > 0 && o.max_retries_per_batch >= 0)
      << "backoff " << o.first_backoff_s << " s up to " << o.max_backoff_s << " s, "
      << o.max_retries_per_batch << " retries";
  const int64_t total = static_cast<int64_t>(events.size());
  int64_t posted = 0;
  for (size_t i = 0; i < events.size(); i += o.batch) {
    const size_t end = std::min(events.size(), i + o.batch);
    const std::string body = experiment::EventsToJson(
        std::vector<Event>(events.begin() + static_cast<std::ptrdiff_t>(i),
                           events.begin() + static_cast<std::ptrdiff_t>(end)),
        spec);
    double backoff_s = o.first_backoff_s;
    for (int retries = 0;; ++retries) {
      ExperimentSink::PostResult r = sink.Post(body);
      if (r.status.ok()) break;
      if (!r.rate_limited || retries >= o.max_retries_per_batch) {
        return absl::Status(
            r.status.code(),
            absl::StrCat(
                "after ", posted, " of ", total, " events were accepted",
                r.rate_limited ? absl::StrCat(" (rate-limited ", retries + 1, " times)") : "", ": ",
                r.status.message()));
      }
      sink.Sleep(backoff_s);
      backoff_s = std::min(backoff_s * 2, std::max(o.max_backoff_s, o.first_backoff_s));
    }
    posted += static_cast<int64_t>(end - i);
    if (o.progress) o.progress(posted, total);
  }
  return absl::OkStatus();
}

}  // namespace seedance::serving
