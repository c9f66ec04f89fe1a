// The experiments' routes (docs/experiments.md): definitions, assignment, events and reports of
// A/B experiments, kept on the Service's loop thread and durable as store objects.
//
// Stored objects: kind "experiment", key "NS/NAME": {"namespace", "name", "spec", "state",
// "stop_reason", "created_revision"}; kind "experiment-events", key "NS/NAME/SEQ" (SEQ 12 digits,
// from 0): one accepted events body in canonical form. After a load (start, a follower's reload)
// the registry replays every experiment's batches in order (experiment.h: the replay rebuilds the
// same state), so an acknowledged event is never lost and the report is the same as before.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "routes.h"
#include "seedance/api/api.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/text.h"
#include "seedance/experiment/experiment.h"

namespace seedance::server {

namespace {

using Context = Service::Context;
using Finisher = Service::Finisher;
namespace ex = experiment;

constexpr char kExperimentKind[] = "experiment";
constexpr char kEventsKind[] = "experiment-events";

struct Entry {
  std::string ns, name;
  std::unique_ptr<ex::Experiment> x;
  bool stopped = false;
  std::string stop_reason;
  int64_t created_revision = 0;
  int64_t next_batch = 0;
  std::string damaged;  // a stored batch that could not be read back (then every route is 500)
  // Token bucket of events (Registry::rate per second, burst two seconds' worth).
  double tokens = 0;
  double refilled_s = -1;
};

// Every experiment of the server; loop thread only.
class Registry {
 public:
  Registry(double rate, size_t max_events) : rate_(rate), max_events_(max_events) {}
  double rate() const { return rate_; }
  size_t max_events() const { return max_events_; }

  // Rebuilds from the store's objects when the service loaded them anew.
  void Sync(Service& s) {
    if (generation_ == s.load_generation()) return;
    generation_ = s.load_generation();
    entries_.clear();
    for (const store::ObjectRecord& rec : s.TakeLoadedObjects(kExperimentKind)) Restore(rec);
    for (const store::ObjectRecord& rec : s.TakeLoadedObjects(kEventsKind)) Replay(rec);
  }

  Entry* Find(const std::string& key) {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::map<std::string, Entry>& entries() { return entries_; }

  // The object a definition is stored as.
  static std::string DefinitionJson(const Entry& e) {
    return base::DumpJson(Json{{"namespace", e.ns},
                               {"name", e.name},
                               {"spec", ex::SpecToJson(e.x->spec())},
                               {"state", e.stopped ? "stopped" : "running"},
                               {"stop_reason", e.stop_reason},
                               {"created_revision", e.created_revision}},
                          -1);
  }

  // Takes `n` events from the bucket at `now_s`; false when it holds too few.
  bool Admit(Entry& e, size_t n, double now_s) const {
    if (rate_ <= 0) return true;
    const double burst = 2 * rate_;
    if (e.refilled_s < 0)
      e.tokens = burst;
    else
      e.tokens = std::min(burst, e.tokens + (now_s - e.refilled_s) * rate_);
    e.refilled_s = now_s;
    if (e.tokens < static_cast<double>(n)) return false;
    e.tokens -= static_cast<double>(n);
    return true;
  }

 private:
  void Restore(const store::ObjectRecord& rec) {
    const Json j = Json::parse(rec.json, nullptr, false);
    absl::StatusOr<ex::ExperimentSpec> spec = j.is_object() && j.contains("spec")
                                                  ? ex::ParseExperimentSpec(j["spec"])
                                                  : absl::InvalidArgumentError("not a definition");
    if (!spec.ok()) {
      std::fprintf(stderr, "seedance server: stored experiment %s cannot be read back: %s\n",
                   base::ForTerminal(rec.key).c_str(),
                   base::ForTerminal(std::string(spec.status().message())).c_str());
      return;
    }
    Entry e;
    e.ns = base::StringField(j, "namespace");
    e.name = base::StringField(j, "name");
    e.stopped = base::StringField(j, "state") == "stopped";
    e.stop_reason = base::StringField(j, "stop_reason");
    e.created_revision = base::IntField(j, "created_revision");
    e.x = std::make_unique<ex::Experiment>(e.name, std::move(*spec));
    entries_[rec.key] = std::move(e);
  }

  // Batches come in key order: per experiment, in the order they were accepted.
  void Replay(const store::ObjectRecord& rec) {
    const size_t slash = rec.key.rfind('/');
    if (slash == std::string::npos) return;
    Entry* e = Find(rec.key.substr(0, slash));
    if (e == nullptr) return;  // its experiment was deleted in the same commit
    absl::StatusOr<std::vector<ex::Event>> events = ex::ParseEvents(
        Json::parse(rec.json, nullptr, false), e->x->spec(), std::numeric_limits<size_t>::max());
    if (!events.ok()) {
      e->damaged = absl::StrCat("stored events ", rec.key,
                                " cannot be read back: ", events.status().message());
      return;
    }
    e->x->Apply(*events);
    int64_t seq = 0;
    if (absl::SimpleAtoi(rec.key.substr(slash + 1), &seq)) e->next_batch = seq + 1;
  }

  const double rate_;
  const size_t max_events_;
  uint64_t generation_ = ~uint64_t{0};
  std::map<std::string, Entry> entries_;  // by "NS/NAME"
};

// The namespace a request means: ?namespace=, else the tenant's first namespace, else
// "default"; 403 for a tenant naming another's.
absl::StatusOr<std::string> NamespaceOf(const Caller& caller, const Request& req) {
  std::string ns = req.get_param_value("namespace");
  if (ns.empty()) {
    ns = caller.tenant_caller() && !caller.namespaces->empty() ? caller.namespaces->front()
                                                               : "default";
  }
  if (!api::IsDnsLabel(ns)) {
    return absl::InvalidArgumentError(
        absl::StrCat("namespace: ", base::QuoteForMessage(ns), " is not a DNS-1123 label"));
  }
  if (!caller.Sees(ns)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "namespace '", ns, "' is not one of the namespaces of tenant '", caller.tenant, "'"));
  }
  return ns;
}

// What every route needs: the experiment's key (namespace checked, name checked).
struct Target {
  std::string ns, name, key;
};
absl::StatusOr<Target> TargetOf(const Caller& caller, const Request& req) {
  absl::StatusOr<std::string> ns = NamespaceOf(caller, req);
  if (!ns.ok()) return ns.status();
  const std::string& name = req.matches[1];
  if (absl::Status st = ex::CheckExperimentName(name); !st.ok()) return st;
  return Target{*ns, name, absl::StrCat(*ns, "/", name)};
}

absl::Status NotFound(const Target& t) {
  return absl::NotFoundError(
      absl::StrCat("experiment '", t.name, "' not found in namespace '", t.ns, "'"));
}

Json Summary(const Entry& e) {
  return {{"namespace", e.ns},
          {"name", e.name},
          {"state", e.stopped ? "stopped" : "running"},
          {"stop_reason", e.stop_reason.empty() ? Json(nullptr) : Json(e.stop_reason)},
          {"created_revision", e.created_revision},
          {"events", e.x->events()},
          {"sessions", e.x->sessions()},
          {"spec", ex::SpecToJson(e.x->spec())}};
}

using RegistryPtr = std::shared_ptr<Registry>;

// Runs `body` on the loop thread with the registry in sync and the experiment found (or not:
// `entry` null), for a validated target.
template <class F>
void WithExperiment(Service& s, const RegistryPtr& reg, const Caller& caller, const Request& req,
                    Done done, F body) {
  absl::StatusOr<Target> t = TargetOf(caller, req);
  if (!t.ok()) return done(ErrorReply(t.status()));
  s.RunAsync(
      [&s, reg, t = *t, body = std::move(body)](Context& c) mutable -> Finisher {
        reg->Sync(s);
        Entry* e = reg->Find(t.key);
        if (e != nullptr && !e->damaged.empty()) {
          return Fail(absl::DataLossError(e->damaged));
        }
        return body(c, t, e);
      },
      std::move(done));
}

void PutExperiment(Service& s, const RegistryPtr& reg, const Request& req, Done done) {
  absl::StatusOr<nlohmann::ordered_json> body = api::ParseJsonBody(req.body);
  if (!body.ok()) return done(ErrorReply(body.status()));
  absl::StatusOr<ex::ExperimentSpec> spec = ex::ParseExperimentSpec(Json(*body));
  if (!spec.ok()) return done(ErrorReply(spec.status()));
  WithExperiment(
      s, reg, req.caller, req, std::move(done),
      [&s, reg, spec = std::move(*spec)](Context& c, const Target& t, Entry* e) -> Finisher {
        const nlohmann::json wanted = ex::SpecToJson(spec);
        if (e != nullptr) {
          if (ex::SpecToJson(e->x->spec()) == wanted) return Ok(200, Summary(*e));  // idempotent
          if (e->x->events() > 0) {
            return Fail(absl::FailedPreconditionError(absl::StrCat(
                "experiment '", t.name, "' has ", e->x->events(),
                " events: its definition cannot change (stop it and create another)")));
          }
        }
        Entry fresh;
        fresh.ns = t.ns;
        fresh.name = t.name;
        fresh.created_revision = s.revision();
        fresh.x = std::make_unique<ex::Experiment>(t.name, spec);
        const bool created = e == nullptr;
        Entry& stored = reg->entries()[t.key] = std::move(fresh);
        c.PutObject(kExperimentKind, t.key, Registry::DefinitionJson(stored));
        return Ok(created ? 201 : 200, Summary(stored));
      });
}

void PostEvents(Service& s, const RegistryPtr& reg, const Request& req, Done done) {
  absl::StatusOr<nlohmann::ordered_json> body = api::ParseJsonBody(req.body);
  if (!body.ok()) return done(ErrorReply(body.status()));
  WithExperiment(
      s, reg, req.caller, req, std::move(done),
      [reg, body = Json(std::move(*body))](Context& c, const Target& t, Entry* e) -> Finisher {
        if (e == nullptr) return Fail(NotFound(t));
        if (e->stopped) {
          return Fail(absl::FailedPreconditionError(
              absl::StrCat("experiment '", t.name, "' is stopped: it takes no more events")));
        }
        absl::StatusOr<std::vector<ex::Event>> events =
            ex::ParseEvents(body, e->x->spec(), reg->max_events());
        if (!events.ok()) return Fail(events.status());
        if (!reg->Admit(*e, events->size(), c.now_s)) {
          // A batch over the whole burst would never be taken: say so rather than "retry".
          const double burst = 2 * reg->rate();
          return Fail(absl::ResourceExhaustedError(
              static_cast<double>(events->size()) > burst
                  ? absl::StrFormat("experiment '%s': %d events in one request is over the "
                                    "burst of %g (2 s of --experiment-event-rate %g): send "
                                    "smaller batches",
                                    t.name, events->size(), burst, reg->rate())
                  : absl::StrFormat("experiment '%s': over %g events per second; retry in a "
                                    "second",
                                    t.name, reg->rate())));
        }
        e->x->Apply(*events);
        c.PutObject(kEventsKind, absl::StrFormat("%s/%012d", t.key, e->next_batch++),
                    ex::EventsToJson(*events, e->x->spec()));
        return Ok(202, {{"accepted", events->size()}, {"events", e->x->events()}});
      });
}

void StopExperiment(Service&, Context& c, Entry& e, const std::string& key,
                    const std::string& reason) {
  e.stopped = true;
  e.stop_reason = reason.empty() ? "stopped through the API" : reason;
  c.PutObject(kExperimentKind, key, Registry::DefinitionJson(e));
}

}  // namespace

void RegisterExperimentRoutes(Router& r, Service& s, const HttpOptions& o) {
  auto reg = std::make_shared<Registry>(o.experiment_event_rate, o.max_experiment_events);
  using A = Access;
  const std::string one = "/v1/experiments/{name}";
  r.Add("PUT", one, "put_experiment", A::kTenant,
        [&s, reg](Request& req, Done done) { PutExperiment(s, reg, req, std::move(done)); });
  r.Add("GET", one, "get_experiment", A::kReader, [&s, reg](Request& req, Done done) {
    WithExperiment(s, reg, req.caller, req, std::move(done),
                   [](Context&, const Target& t, Entry* e) -> Finisher {
                     return e ? Ok(200, Summary(*e)) : Fail(NotFound(t));
                   });
  });
  r.Add("DELETE", one, "delete_experiment", A::kTenant, [&s, reg](Request& req, Done done) {
    WithExperiment(s, reg, req.caller, req, std::move(done),
                   [reg](Context& c, const Target& t, Entry* e) -> Finisher {
                     if (!e) return Fail(NotFound(t));
                     reg->entries().erase(t.key);
                     c.DeleteObjects(kEventsKind, t.key + "/");
                     c.DeleteObject(kExperimentKind, t.key);
                     return Ok(200, {{"namespace", t.ns}, {"name", t.name}, {"deleted", true}});
                   });
  });
  r.Add("POST", one + "/stop", "stop_experiment", A::kTenant, [&s, reg](Request& req, Done done) {
    const std::string reason = req.get_param_value("reason");
    WithExperiment(s, reg, req.caller, req, std::move(done),
                   [&s, reason](Context& c, const Target& t, Entry* e) -> Finisher {
                     if (!e) return Fail(NotFound(t));
                     if (!e->stopped) StopExperiment(s, c, *e, t.key, base::Clip(reason, 1024));
                     return Ok(200, Summary(*e));
                   });
  });
  r.Add("POST", one + "/events", "post_experiment_events", A::kTenant,
        [&s, reg](Request& req, Done done) { PostEvents(s, reg, req, std::move(done)); });
  r.Add(
      "GET", one + "/assign", "assign_experiment", A::kReader, [&s, reg](Request& req, Done done) {
        const std::string session = req.get_param_value("session");
        if (session.empty() || session.size() > ex::kMaxSessionBytes) {
          return done(ErrorReply(absl::InvalidArgumentError(
              absl::StrCat("session: must be 1..", ex::kMaxSessionBytes, " bytes (?session=ID)"))));
        }
        WithExperiment(s, reg, req.caller, req, std::move(done),
                       [session](Context&, const Target& t, Entry* e) -> Finisher {
                         if (!e) return Fail(NotFound(t));
                         const ex::ExperimentSpec& spec = e->x->spec();
                         const int v = ex::AssignVariant(spec, t.name, session);
                         Json j = {{"experiment", t.name},
                                   {"session", session},
                                   {"variant", spec.variants[v].name}};
                         if (!spec.variants[v].precision_plan.empty()) {
                           j["precision_plan"] = spec.variants[v].precision_plan;
                         }
                         return Ok(200, j);
                       });
      });
  r.Add("GET", one + "/report", "experiment_report", A::kReader,
        [&s, reg](Request& req, Done done) {
          WithExperiment(s, reg, req.caller, req, std::move(done),
                         [](Context&, const Target& t, Entry* e) -> Finisher {
                           if (!e) return Fail(NotFound(t));
                           Json j = e->x->Report();
                           j["namespace"] = t.ns;
                           j["name"] = t.name;
                           j["state"] = e->stopped ? "stopped" : "running";
                           return Ok(200, j);
                         });
        });
  r.Add("GET", "/v1/experiments", "list_experiments", A::kReader,
        [&s, reg](Request& req, Done done) {
          const Caller caller = req.caller;
          const std::string ns = req.get_param_value("namespace");
          s.RunAsync(
              [&s, reg, caller, ns](Context&) -> Finisher {
                reg->Sync(s);
                Json items = Json::array();
                for (const auto& [key, e] : reg->entries()) {
                  if (!caller.Sees(e.ns) || (!ns.empty() && e.ns != ns)) continue;
                  items.push_back(Summary(e));
                }
                return Ok(200, {{"items", items}, {"revision", s.revision()}});
              },
              std::move(done));
        });
}

}  // namespace seedance::server
