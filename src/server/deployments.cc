#include "seedance/server/deployments.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "config_json.h"
#include "nlohmann/json.hpp"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "seedance/base/clock.h"
#include "seedance/base/json_path.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"
#include "seedance/engine/period_controller.h"
#include "seedance/server/codec.h"
#include "seedance/telemetry/collector.h"

namespace seedance::server {

namespace {

using JsonDoc = nlohmann::json;

// ---- the file ----

absl::Status ParseMetrics(const JsonDoc* list, const std::string& path, std::string_view file,
                          std::vector<DeploymentMetric>* out) {
  if (list == nullptr) return absl::OkStatus();
  if (!list->is_array()) return WithPath(file, path, absl::InvalidArgumentError("expected a list"));
  for (size_t i = 0; i < list->size(); ++i) {
    DeploymentMetric m;
    Fields f((*list)[i], base::JsonPathIndex(path, i), file);
    f.String("name", &m.name, true);
    f.String("query", &m.query, true);
    f.Number("target_per_replica", &m.target_per_replica);
    f.NoOthers();
    if (f.ok() && !(m.target_per_replica > 0)) f.Fail("target_per_replica", "must be > 0");
    if (!f.ok()) return f.status();
    out->push_back(std::move(m));
  }
  return absl::OkStatus();
}

absl::Status ParseAutoscale(const JsonDoc& j, const std::string& path, std::string_view file,
                            DeploymentSpec* d) {
  Fields f(j, path, file);
  std::string mode = "hpa";
  f.String("mode", &mode);
  if (!f.ok()) return f.status();
  absl::StatusOr<autoscale::Mode> m = autoscale::ParseMode(mode);
  if (!m.ok()) return WithPath(file, f.At("mode"), m.status());
  d->mode = *m;
  int min_replicas = 1, max_replicas = 10;
  f.Int("min_replicas", &min_replicas);
  f.Int("max_replicas", &max_replicas, 1, 10000);
  d->hpa.min_replicas = d->seed.min_replicas = d->predictive.min_replicas = min_replicas;
  d->hpa.max_replicas = d->seed.max_replicas = d->predictive.max_replicas = max_replicas;
  f.Number("tolerance", &d->hpa.tolerance);
  f.Number("scale_down_stabilization_s", &d->hpa.scale_down.stabilization_window_s);
  if (absl::Status st = ParseMetrics(f.Member("metrics"), f.At("metrics"), file, &d->metrics);
      !st.ok()) {
    return st;
  }
  f.String("cpu_query", &d->cpu_query);
  f.String("latency_query", &d->latency_query);
  f.String("error_query", &d->error_query);
  f.Number("latency_target_s", &d->seed.latency_target_s);
  f.String("rate_query", &d->rate_query);
  f.Number("capacity_rps_per_replica", &d->predictive.capacity_rps_per_replica);
  f.Number("horizon_s", &d->predictive.horizon_s);
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (d->mode == autoscale::Mode::kHpa && d->metrics.empty()) {
    return WithPath(file, f.At("metrics"), absl::InvalidArgumentError("hpa needs a metric"));
  }
  if (d->mode == autoscale::Mode::kSeed && d->cpu_query.empty()) {
    return WithPath(file, f.At("cpu_query"), absl::InvalidArgumentError("seed needs it"));
  }
  if (d->mode == autoscale::Mode::kPredictive && d->rate_query.empty()) {
    return WithPath(file, f.At("rate_query"), absl::InvalidArgumentError("predictive needs it"));
  }
  return absl::OkStatus();
}

// The pod template, checked as POST /v1/pods checks a pod.
absl::Status ParseTemplate(const JsonDoc* pod, const std::string& path, std::string_view file,
                           DeploymentSpec* d) {
  JsonDoc body = pod == nullptr ? JsonDoc::object() : *pod;
  if (!body.is_object()) return WithPath(file, path, absl::InvalidArgumentError("not an object"));
  for (const char* reserved : {"name", "namespace"}) {
    if (body.contains(reserved)) {
      return WithPath(file, base::JsonPathChild(path, reserved),
                      absl::InvalidArgumentError("set by the deployment"));
    }
  }
  body["name"] = d->name + "-0";
  body["namespace"] = d->ns;
  absl::StatusOr<api::PodRequest> r = api::ParsePodRequest(body.dump());
  if (!r.ok()) return WithPath(file, path, r.status());
  d->pod = std::move(*r);
  return absl::OkStatus();
}

absl::StatusOr<DeploymentSpec> ParseDeployment(const JsonDoc& j, const std::string& path,
                                               std::string_view file) {
  DeploymentSpec d;
  Fields f(j, path, file);
  f.String("name", &d.name, true);
  f.String("namespace", &d.ns);
  f.Int("replicas", &d.replicas, 0);
  f.Number("period_s", &d.period_s, 0.1, 3600);
  std::string period = "fixed";
  f.String("period", &period);
  f.Number("min_period_s", &d.min_period_s);
  f.Number("max_period_s", &d.max_period_s);
  if (f.ok() && period != "fixed" && period != "adaptive") {
    f.Fail("period", "must be fixed or adaptive");
  }
  d.adaptive_period = period == "adaptive";
  if (f.ok() &&
      !(d.min_period_s >= 0.1 && d.min_period_s <= d.max_period_s && d.max_period_s <= 3600)) {
    f.Fail("min_period_s", "need 0.1 <= min_period_s <= max_period_s <= 3600");
  }
  const JsonDoc* pod = f.Member("pod");
  const JsonDoc* scale = f.Member("autoscale");
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (absl::Status st = ParseTemplate(pod, f.At("pod"), file, &d); !st.ok()) return st;
  if (scale == nullptr) {
    return WithPath(file, f.At("autoscale"), absl::InvalidArgumentError("required"));
  }
  if (absl::Status st = ParseAutoscale(*scale, f.At("autoscale"), file, &d); !st.ok()) return st;
  return d;
}

absl::StatusOr<std::unique_ptr<autoscale::Autoscaler>> NewAutoscaler(const DeploymentSpec& d) {
  switch (d.mode) {
    case autoscale::Mode::kHpa:
      return autoscale::NewHpaAutoscaler(d.hpa);
    case autoscale::Mode::kSeed:
      return autoscale::NewSeedAutoscaler(d.seed);
    case autoscale::Mode::kPredictive:
      return autoscale::NewPredictiveAutoscaler(d.predictive);
  }
  return absl::InvalidArgumentError("unknown mode");
}

}  // namespace

absl::StatusOr<DeploymentsConfig> ParseDeploymentsConfig(std::string_view text,
                                                         std::string_view file) {
  absl::StatusOr<JsonDoc> parsed = ParseConfigJson(text, file);
  if (!parsed.ok()) return parsed.status();
  const JsonDoc& j = *parsed;
  DeploymentsConfig c;
  Fields f(j, "$", file);
  f.String("prometheus", &c.prometheus_url, true);
  f.Number("query_timeout_s", &c.query_timeout_s);
  const JsonDoc* list = f.Member("deployments");
  f.NoOthers();
  if (f.ok() && (list == nullptr || !list->is_array() || list->empty())) {
    f.Fail("deployments", "expected a non-empty list");
  }
  if (!f.ok()) return f.status();
  {
    // The URL is checked here, before the server opens its state (nothing is contacted yet).
    telemetry::PrometheusOptions po;
    po.url = c.prometheus_url;
    po.timeout_s = c.query_timeout_s;
    if (auto q = telemetry::NewPrometheusQuerier(po); !q.ok()) {
      return WithPath(file, "$.prometheus", q.status());
    }
  }
  std::set<std::pair<std::string, std::string>> names;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string path = base::JsonPathIndex("$.deployments", i);
    absl::StatusOr<DeploymentSpec> d = ParseDeployment((*list)[i], path, file);
    if (!d.ok()) return d.status();
    if (!names.emplace(d->ns, d->name).second) {
      return WithPath(file, base::JsonPathChild(path, "name"),
                      absl::InvalidArgumentError("appears twice"));
    }
    // The autoscaler's own checks (bounds, targets), named by this path.
    if (auto a = NewAutoscaler(*d); !a.ok()) {
      return WithPath(file, base::JsonPathChild(path, "autoscale"), a.status());
    }
    c.deployments.push_back(std::move(*d));
  }
  return c;
}

// ---- the controller ----

struct Deployment {
  DeploymentSpec spec;
  std::unique_ptr<autoscale::Autoscaler> scaler;
  int replicas = 0;  // what it should have now
  int pods = 0;      // what the last reconcile found
  double next_due_s = 0;
  double period_s = 0;  // the period in force (spec.period_s unless adaptive)
  std::unique_ptr<engine::PeriodController> period;  // adaptive only
  int64_t decisions = 0, scalings = 0, errors = 0;
  std::string last_error;
  JsonDoc last = nullptr;  // the last decision
  prometheus::Gauge* replicas_gauge = nullptr;
  prometheus::Counter* errors_counter = nullptr;
  prometheus::Counter* scale_up = nullptr;
  prometheus::Counter* scale_down = nullptr;
};

struct DeploymentController::State {
  Service& service;
  std::unique_ptr<telemetry::PrometheusQuerier> prometheus;
  mutable base::Mutex mu;
  std::condition_variable cv;
  bool stop ABSL_GUARDED_BY(mu) = false;
  std::vector<Deployment> deployments ABSL_GUARDED_BY(mu);
  std::thread loop;

  explicit State(Service& s) : service(s) {}
  void Loop();
  void Step(Deployment& d, double now_s);
  absl::Status Observe(Deployment& d, double now_s, autoscale::Observation* obs, JsonDoc* inputs);
  int Reconcile(const Deployment& d, int replicas);
  double NextPeriod(Deployment& d, const autoscale::Observation& obs, double margin);
};

absl::Status DeploymentController::State::Observe(Deployment& d, double now_s,
                                                  autoscale::Observation* obs, JsonDoc* inputs) {
  auto sum = [&](const std::string& q, double* out) -> absl::Status {
    if (q.empty()) return absl::OkStatus();
    absl::StatusOr<double> v = prometheus->Sum(q, now_s);
    if (!v.ok()) return v.status();
    if (!std::isfinite(*v) || *v < 0) {
      return absl::OutOfRangeError(absl::StrCat("query '", base::Clip(q, 80), "' gave ", *v));
    }
    *out = *v;
    (*inputs)[q] = *v;
    return absl::OkStatus();
  };
  for (const DeploymentMetric& m : d.spec.metrics) {
    double total = 0;
    if (absl::Status st = sum(m.query, &total); !st.ok()) return st;
    obs->metrics.push_back(
        {m.name, total / std::max(1, obs->current_replicas), m.target_per_replica});
  }
  if (absl::Status st = sum(d.spec.cpu_query, &obs->cpu_utilization); !st.ok()) return st;
  if (absl::Status st = sum(d.spec.latency_query, &obs->p95_latency_s); !st.ok()) return st;
  if (absl::Status st = sum(d.spec.error_query, &obs->error_rate); !st.ok()) return st;
  return sum(d.spec.rate_query, &obs->arrival_rate_rps);
}

// Makes pods 0..replicas-1 of `d` exist and no others; returns how many exist afterwards (-1
// when the service refused the batch: not leading, shutting down).
int DeploymentController::State::Reconcile(const Deployment& d, int replicas) {
  const DeploymentSpec& spec = d.spec;
  std::vector<sched::PodInfo> missing;
  // Built here, off the loop thread; submitted only if the index is missing.
  for (int k = 0; k < replicas; ++k) {
    api::PodRequest r = spec.pod;
    r.name = absl::StrCat(spec.name, "-", k);
    r.ns = spec.ns;
    r.annotations[kDeploymentAnnotation] = spec.name;
    r.annotations[kReplicaAnnotation] = std::to_string(k);
    missing.push_back(PodFromRequest(std::move(r)));
  }
  int found = -1;
  const Reply reply = service.Run([&](Service::Context& c) -> Service::Finisher {
    std::map<int, std::string> have;  // replica index -> uid
    c.scheduler.ledger().ForEach([&](const sched::PodInfo& p) {
      auto dep = p.annotations.find(kDeploymentAnnotation);
      auto rep = p.annotations.find(kReplicaAnnotation);
      int k = -1;
      if (p.ns == spec.ns && dep != p.annotations.end() && dep->second == spec.name &&
          rep != p.annotations.end() && absl::SimpleAtoi(rep->second, &k) && k >= 0) {
        have[k] = p.uid;
      }
    });
    for (auto it = have.rbegin(); it != have.rend(); ++it) {
      if (it->first >= replicas) (void)c.scheduler.DeletePod(it->second, c.now_s);
    }
    for (int k = 0; k < replicas; ++k) {
      if (have.contains(k)) continue;
      const std::string uid = missing[k].uid;
      if (c.scheduler.SubmitPod(std::move(missing[k]), c.now_s).ok()) c.NoteSubmitted(uid);
    }
    found = replicas;
    return [] { return Reply{200, "{}"}; };
  });
  return reply.status == 200 ? found : -1;
}

namespace {

// How much room the deployment has at its target, for the PeriodController: (target - load) /
// target, from the mode's own measure (hpa: the highest metric ratio; seed: its smoothed score
// against 1; predictive: the rate it sized for against what the replicas serve).
double SlaMargin(const DeploymentSpec& spec, const autoscale::Observation& obs,
                 const autoscale::Decision& dec) {
  switch (spec.mode) {
    case autoscale::Mode::kHpa:
    case autoscale::Mode::kSeed:
      return 1 - dec.score;
    case autoscale::Mode::kPredictive: {
      const double serves =
          spec.predictive.capacity_rps_per_replica * std::max(1, obs.current_replicas);
      return 1 - obs.arrival_rate_rps / serves;
    }
  }
  return 0;
}

// The load the PeriodController watches: the first metric's value, the arrival rate or the CPU.
double LoadOf(const DeploymentSpec& spec, const autoscale::Observation& obs) {
  if (!obs.metrics.empty()) return obs.metrics[0].current * std::max(1, obs.current_replicas);
  if (spec.mode == autoscale::Mode::kPredictive) return obs.arrival_rate_rps;
  return obs.cpu_utilization;
}

}  // namespace

double DeploymentController::State::NextPeriod(Deployment& d, const autoscale::Observation& obs,
                                               double margin) {
  const double load = LoadOf(d.spec, obs);
  if (std::isfinite(load) && std::isfinite(margin)) {
    d.period->ObserveQps(obs.now_s, load);
    return d.period->Decide(obs.now_s, margin).period_s;
  }
  return d.period_s;
}

void DeploymentController::State::Step(Deployment& d, double now_s) {
  autoscale::Observation obs;
  obs.now_s = now_s;
  obs.current_replicas = d.replicas;
  JsonDoc inputs = JsonDoc::object();
  const absl::Status st = Observe(d, now_s, &obs, &inputs);
  int replicas = d.replicas;
  JsonDoc last = nullptr;
  double margin = 0;
  if (st.ok()) {
    const autoscale::Decision dec = d.scaler->Decide(obs);
    margin = SlaMargin(d.spec, obs, dec);
    replicas = dec.replicas;
    last = {{"time", now_s},        {"recommendation", dec.recommendation},
            {"replicas", replicas}, {"from", d.replicas},
            {"reason", dec.reason}, {"score", std::isfinite(dec.score) ? dec.score : 0.0},
            {"inputs", inputs}};
  } else {
    d.errors_counter->Increment();
  }
  const int pods = Reconcile(d, replicas);
  base::MutexLock lock(mu);
  if (st.ok()) {
    ++d.decisions;
    if (replicas > d.replicas) d.scale_up->Increment();
    if (replicas < d.replicas) d.scale_down->Increment();
    if (replicas != d.replicas) ++d.scalings;
    d.replicas = replicas;
    d.last = std::move(last);
  } else {
    ++d.errors;
    d.last_error = base::Clip(std::string(st.message()), 300);
  }
  if (pods >= 0) d.pods = pods;
  d.replicas_gauge->Set(d.replicas);
  if (d.period && st.ok()) d.period_s = NextPeriod(d, obs, margin);
}

void DeploymentController::State::Loop() {
  base::MutexLock lock(mu);
  while (!stop) {
    Deployment* next = nullptr;
    for (Deployment& d : deployments) {
      if (next == nullptr || d.next_due_s < next->next_due_s) next = &d;
    }
    if (next == nullptr) {  // nothing to scale: wait for the stop
      lock.Wait(cv, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stop; });
      continue;
    }
    const double wait_s = next->next_due_s - base::UnixNowSeconds();
    if (wait_s > 0) {
      lock.WaitFor(cv, std::chrono::duration<double>(wait_s));
      continue;
    }
    lock.Unlock();
    Step(*next, base::UnixNowSeconds());
    lock.Lock();
    // The period Step left in force (adaptive: just decided). A period missed (a slow query) is
    // not made up: the next one starts from now.
    next->next_due_s = std::max(next->next_due_s + next->period_s, base::UnixNowSeconds());
  }
}

absl::StatusOr<std::unique_ptr<DeploymentController>> DeploymentController::Start(
    Service& service, DeploymentsConfig config) {
  telemetry::PrometheusOptions po;
  po.url = config.prometheus_url;
  po.timeout_s = config.query_timeout_s;
  absl::StatusOr<std::unique_ptr<telemetry::PrometheusQuerier>> prom =
      telemetry::NewPrometheusQuerier(po);
  if (!prom.ok()) return prom.status();
  auto state = std::make_unique<State>(service);
  state->prometheus = std::move(*prom);
  auto& registry = *service.metrics().registry;
  auto& replicas = prometheus::BuildGauge()
                       .Name("seedance_deployment_replicas")
                       .Help("Replicas a deployment should have (the autoscaler's last decision)")
                       .Register(registry);
  auto& scalings = prometheus::BuildCounter()
                       .Name("seedance_autoscaler_scalings_total")
                       .Help("Replica count changes by the autoscaler, by direction")
                       .Register(registry);
  auto& errors = prometheus::BuildCounter()
                     .Name("seedance_autoscaler_errors_total")
                     .Help("Periods without a decision: a metric query failed")
                     .Register(registry);
  const double now = base::UnixNowSeconds();
  for (DeploymentSpec& spec : config.deployments) {
    Deployment d;
    absl::StatusOr<std::unique_ptr<autoscale::Autoscaler>> a = NewAutoscaler(spec);
    if (!a.ok()) return a.status();
    d.scaler = std::move(*a);
    const std::map<std::string, std::string> labels = {{"namespace", spec.ns},
                                                       {"deployment", spec.name}};
    d.replicas_gauge = &replicas.Add(labels);
    d.errors_counter = &errors.Add(labels);
    auto up = labels, down = labels;
    up["direction"] = "up";
    down["direction"] = "down";
    d.scale_up = &scalings.Add(up);
    d.scale_down = &scalings.Add(down);
    d.replicas = std::clamp(spec.replicas, spec.hpa.min_replicas, spec.hpa.max_replicas);
    d.next_due_s = now;
    d.period_s = spec.period_s;
    if (spec.adaptive_period) {
      engine::PeriodOptions po;
      po.base_period_s = spec.period_s;
      po.min_period_s = spec.min_period_s;
      po.max_period_s = spec.max_period_s;
      po.calm_period_s = std::clamp(po.calm_period_s, po.min_period_s, po.max_period_s);
      d.period = std::make_unique<engine::PeriodController>(po);
    }
    d.spec = std::move(spec);
    base::MutexLock lock(state->mu);
    state->deployments.push_back(std::move(d));
  }
  State* s = state.get();
  s->loop = std::thread([s] { s->Loop(); });
  return std::unique_ptr<DeploymentController>(new DeploymentController(std::move(state)));
}

DeploymentController::DeploymentController(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

DeploymentController::~DeploymentController() {
  {
    base::MutexLock lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (state_->loop.joinable()) state_->loop.join();
}

std::string DeploymentController::StatusJson() const {
  base::MutexLock lock(state_->mu);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Deployment& d : state_->deployments) {
    nlohmann::ordered_json j = {{"name", d.spec.name},
                                {"namespace", d.spec.ns},
                                {"mode", std::string(autoscale::ModeName(d.spec.mode))},
                                {"replicas", d.replicas},
                                {"pods", d.pods},
                                {"period", d.period ? "adaptive" : "fixed"},
                                {"period_s", d.period_s},
                                {"decisions", d.decisions},
                                {"scalings", d.scalings},
                                {"errors", d.errors}};
    j["last_decision"] = d.last;
    if (!d.last_error.empty()) j["last_error"] = d.last_error;
    list.push_back(std::move(j));
  }
  return base::DumpJson(nlohmann::ordered_json{{"deployments", std::move(list)}});
}

}  // namespace seedance::server
