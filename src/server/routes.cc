#include "routes.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/api/api.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/policy/manager.h"
#include "seedance/policy/policy.h"
#include "seedance/server/codec.h"

namespace seedance::server {

Service::Finisher Fail(absl::Status st) {
  return [st = std::move(st)] { return ErrorReply(st); };
}

Service::Finisher Ok(int status, Json body) {
  return [status, body = std::move(body)] { return Reply{status, base::DumpJson(body, -1)}; };
}

absl::StatusOr<int> PageSize(const Request& req) {
  if (!req.has_param("limit")) return kDefaultPageSize;
  int64_t v = 0;
  if (!absl::SimpleAtoi(req.get_param_value("limit"), &v) || v < 1 || v > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: must be an integer in 1..", kMaxPageSize));
  }
  return static_cast<int>(v);
}

// 403 for a tenant naming a namespace that is not its own.
absl::Status CheckNamespace(const Caller& caller, const std::string& ns) {
  if (caller.Sees(ns)) return absl::OkStatus();
  std::string own;
  for (const std::string& n : *caller.namespaces) absl::StrAppend(&own, own.empty() ? "" : ", ", n);
  return absl::PermissionDeniedError(absl::StrCat("namespace '", base::Clip(ns, 63),
                                                  "' is not one of the namespaces of tenant '",
                                                  caller.tenant, "' (", own, ")"));
}

void RegisterCommonRoutes(Router& r, Service& s, std::function<std::string()> more_metrics) {
  using A = Access;
  r.Add("GET", "/healthz", "healthz", A::kAnyone,
        [](Request&, Done done) { done(Response(200, "ok\n", "text/plain")); });
  r.Add("GET", "/readyz", "readyz", A::kAnyone, [&s](Request&, Done done) {
    done(Response(s.ready() ? 200 : 503,
                  !s.ready()    ? "not ready\n"
                  : s.leading() ? "ready\n"
                                : "ready (follower)\n",
                  "text/plain"));
  });
  r.Add("GET", "/metrics", "metrics", A::kAnyone, [&s, more_metrics](Request&, Done done) {
    std::string text = s.metrics().Expose();
    if (more_metrics) text += more_metrics();
    done(Response(200, std::move(text), "text/plain; version=0.0.4"));
  });
}

namespace {

using Finisher = Service::Finisher;
using Context = Service::Context;

// GET /v1/leader (docs/ha.md).
Json LeaderJson(const Service& s) {
  const LeaderInfo i = s.leader_info();
  if (!i.replicated) return {{"replicated", false}, {"role", "leader"}, {"leader", nullptr}};
  Json leader = nullptr;
  if (!i.leader_url.empty()) leader = {{"id", i.leader_id}, {"url", i.leader_url}};
  return {{"replicated", true},
          {"role", s.leading() ? "leader" : "follower"},
          {"self", {{"id", i.self_id}, {"url", i.self_url}}},
          {"leader", leader},
          {"term", i.term},
          {"revision", s.revision()}};
}

// ----------------------------------------------------------------------------------- nodes

void PutNode(Service& s, const Request& req, Done done) {
  const std::string name = req.matches[1];
  absl::StatusOr<api::NodeRequest> node = api::DecodeNodeRequest(name, req.body);
  if (!node.ok()) return done(ErrorReply(node.status()));
  s.RunAsync([node = std::move(*node)](Context& c) mutable -> Finisher {
    bool created = false;
    const std::string name = node.spec.name;
    if (absl::Status st = c.scheduler.PutNode(std::move(node.spec), &created); !st.ok()) {
      return Fail(st);
    }
    if (absl::Status st = c.scheduler.CordonNode(name, node.cordoned); !st.ok()) return Fail(st);
    const int n = c.scheduler.state().FindNode(name);
    return Ok(created ? 201 : 200,
              NodeStatusJson(c.scheduler.state(), n, c.scheduler.ledger(), false));
  }, std::move(done));
}

void GetNodes(Service& s, const Request&, Done done) {
  s.RunAsync([](Context& c) -> Finisher {
    const core::ClusterState& st = c.scheduler.state();
    Json items = Json::array();
    for (int n = 0; n < st.num_nodes(); ++n) {
      if (st.alive(n)) items.push_back(NodeStatusJson(st, n, c.scheduler.ledger(), false));
    }
    return Ok(200, {{"items", items}, {"revision", c.service.revision()}});
  }, std::move(done));
}

void GetNode(Service& s, const Request& req, Done done) {
  const std::string name = req.matches[1];
  s.RunAsync([name](Context& c) -> Finisher {
    const int n = c.scheduler.state().FindNode(name);
    if (n < 0) return Fail(absl::NotFoundError(absl::StrCat("node '", name, "' not found")));
    return Ok(200, NodeStatusJson(c.scheduler.state(), n, c.scheduler.ledger(), true));
  }, std::move(done));
}

void CordonNode(Service& s, const Request& req, Done done) {
  const std::string name = req.matches[1];
  const bool cordon = req.path.ends_with("/cordon");
  s.RunAsync([name, cordon](Context& c) -> Finisher {
    if (absl::Status st = c.scheduler.CordonNode(name, cordon); !st.ok()) return Fail(st);
    const int n = c.scheduler.state().FindNode(name);
    return Ok(200, NodeStatusJson(c.scheduler.state(), n, c.scheduler.ledger(), false));
  }, std::move(done));
}

void DeleteNode(Service& s, const Request& req, Done done) {
  const std::string name = req.matches[1];
  const std::string drain_param = req.get_param_value("drain");
  if (!drain_param.empty() && drain_param != "true" && drain_param != "false") {
    return done(ErrorReply(absl::InvalidArgumentError("drain: must be true or false")));
  }
  const bool drain = drain_param == "true";
  s.RunAsync([name, drain](Context& c) -> Finisher {
    std::vector<std::string> evicted;
    if (absl::Status st = c.scheduler.DeleteNode(name, drain, &evicted, /*requeue=*/true); !st.ok()) {
      return Fail(st);
    }
    return Ok(200, {{"name", name}, {"deleted", true}, {"evicted_pods", evicted}});
  }, std::move(done));
}

// ------------------------------------------------------------------------------------ pods

// A pod of another tenant is, to a tenant, as absent as a pod that does not exist.
const sched::PodInfo* FindVisible(const Context& c, const Caller& caller, const std::string& uid) {
  const sched::PodInfo* p = c.scheduler.ledger().Find(uid);
  return p != nullptr && caller.Sees(p->ns) ? p : nullptr;
}

void PostPod(Service& s, const Caller& caller, const Request& req, Done done) {
  absl::StatusOr<api::PodRequest> pr = api::ParsePodRequest(req.body);
  if (!pr.ok()) return done(ErrorReply(pr.status()));
  if (absl::Status st = CheckNamespace(caller, pr->ns); !st.ok()) {
    return done(ErrorReply(st));
  }
  sched::PodInfo pod = PodFromRequest(std::move(*pr));
  if (absl::Status st = s.Admit(pod); !st.ok()) return done(ErrorReply(st));
  s.RunAsync([pod = std::move(pod)](Context& c) mutable -> Finisher {
    const std::string uid = pod.uid;
    if (absl::Status st = c.scheduler.SubmitPod(std::move(pod), c.now_s); !st.ok()) {
      return Fail(st);
    }
    c.NoteSubmitted(uid);
    // Built after this batch's scheduling cycles: the reply says whether the pod was bound.
    return [&c = c.scheduler, &svc = c.service, uid]() -> Reply {
      if (const std::string* text = svc.BatchPodJson(uid)) return Reply{201, *text};
      const sched::PodInfo* p = c.ledger().Find(uid);
      if (!p) return ErrorReply(absl::NotFoundError(absl::StrCat("pod ", uid, " ended")));
      return Reply{201, PodJsonText(*p, c.state())};
    };
  }, std::move(done));
}

void GetPod(Service& s, const Caller& caller, const Request& req, Done done) {
  const std::string uid = req.matches[1];
  s.RunAsync([uid, caller](Context& c) -> Finisher {
    const sched::PodInfo* p = FindVisible(c, caller, uid);
    if (!p) return Fail(absl::NotFoundError(absl::StrCat("pod '", uid, "' not found")));
    return Ok(200, PodToJson(*p, c.scheduler.state()));
  }, std::move(done));
}

struct PodFilter {
  std::string phase, ns, node, after;
  int limit = kDefaultPageSize;
};

void ListPods(Service& s, const Caller& caller, const Request& req, Done done) {
  PodFilter f;
  f.phase = req.get_param_value("phase");
  f.ns = req.get_param_value("namespace");
  f.node = req.get_param_value("node");
  f.after = req.get_param_value("continue");
  if (!f.phase.empty() && f.phase != "Pending" && f.phase != "Assumed" && f.phase != "Bound") {
    return done(ErrorReply(absl::InvalidArgumentError("phase: must be Pending, Assumed or Bound")));
  }
  absl::StatusOr<int> limit = PageSize(req);
  if (!limit.ok()) return done(ErrorReply(limit.status()));
  f.limit = *limit;
  if (!f.ns.empty()) {
    if (absl::Status st = CheckNamespace(caller, f.ns); !st.ok()) return done(ErrorReply(st));
  }
  s.RunAsync([f, caller](Context& c) -> Finisher {
    const core::ClusterState& st = c.scheduler.state();
    const sched::PodLedger& ledger = c.scheduler.ledger();
    std::vector<const sched::PodInfo*> pods;
    if (!f.node.empty()) {
      const int n = st.FindNode(f.node);
      if (n >= 0) pods = ledger.PodsOnNode(n);
    } else {
      ledger.ForEach([&pods](const sched::PodInfo& p) { pods.push_back(&p); });
    }
    std::erase_if(pods, [&](const sched::PodInfo* p) {
      return (!f.phase.empty() && sched::PodPhaseName(p->phase) != f.phase) ||
             (!f.ns.empty() && p->ns != f.ns) || (!f.after.empty() && p->uid <= f.after) ||
             !caller.Sees(p->ns);
    });
    std::sort(pods.begin(), pods.end(),
              [](const sched::PodInfo* a, const sched::PodInfo* b) { return a->uid < b->uid; });
    Json items = Json::array();
    const size_t n = std::min(pods.size(), static_cast<size_t>(f.limit));
    for (size_t i = 0; i < n; ++i) items.push_back(PodToJson(*pods[i], st));
    Json page = {{"items", items}, {"revision", c.service.revision()}};
    page["continue"] = n < pods.size() ? Json(pods[n - 1]->uid) : Json(nullptr);
    return Ok(200, page);
  }, std::move(done));
}

void DeletePod(Service& s, const Caller& caller, const Request& req, Done done) {
  const std::string uid = req.matches[1];
  s.RunAsync([uid, caller](Context& c) -> Finisher {
    if (FindVisible(c, caller, uid) == nullptr) {
      return Fail(absl::NotFoundError(absl::StrCat("pod '", uid, "' not found")));
    }
    if (absl::Status st = c.scheduler.DeletePod(uid, c.now_s); !st.ok()) return Fail(st);
    return Ok(200, {{"uid", uid}, {"deleted", true}});
  }, std::move(done));
}

// A node agent's annotations: the keys PATCH /v1/pods/{uid}/annotations may set (docs/api.md).
// Every other key is the pod author's, set when the pod is created.
constexpr std::string_view kAgentAnnotationPrefixes[] = {"prewarm.seedance.io/"};

// The body of PATCH /v1/pods/{uid}/annotations: a JSON merge patch (RFC 7386) of the pod's
// annotations, {KEY: "value" | null}; null (or "") removes the key. Keys must carry one of
// kAgentAnnotationPrefixes.
absl::StatusOr<std::map<std::string, std::string>> ParseAnnotationPatch(std::string_view body) {
  absl::StatusOr<Json> j = api::ParseJsonBody(body);
  if (!j.ok()) return j.status();
  if (!j->is_object()) {
    return api::FieldError("$", "must be an object {KEY: \"value\" | null} (a JSON merge patch)");
  }
  std::map<std::string, std::string> patch;
  for (auto item = j->begin(); item != j->end(); ++item) {
    const std::string& key = item.key();
    const Json& value = item.value();
    const std::string field = base::JsonPathChild("$", key);
    if (std::none_of(std::begin(kAgentAnnotationPrefixes), std::end(kAgentAnnotationPrefixes),
                     [&key](std::string_view p) { return key.starts_with(p); })) {
      return api::FieldError(field, absl::StrCat("only keys under ",
                                                 std::string(kAgentAnnotationPrefixes[0]),
                                                 " may be set on an existing pod"));
    }
    if (!value.is_null() && !value.is_string()) {
      return api::FieldError(field, "must be a string, or null to remove the annotation");
    }
    patch[key] = value.is_null() ? std::string() : value.get<std::string>();
  }
  if (absl::Status st = api::ValidateAnnotations(patch, "$"); !st.ok()) return st;
  return patch;
}

// PATCH /v1/pods/{uid}/annotations: a node agent's record on a pod (the prewarm agent's status),
// durable and published as a PodUpdated event.
void PatchPodAnnotations(Service& s, const Request& req, Done done) {
  const std::string uid = req.matches[1];
  absl::StatusOr<std::map<std::string, std::string>> patch = ParseAnnotationPatch(req.body);
  if (!patch.ok()) return done(ErrorReply(patch.status()));
  s.RunAsync([uid, patch = std::move(*patch)](Context& c) -> Finisher {
    const sched::PodInfo* p = c.scheduler.ledger().Find(uid);
    if (!p) return Fail(absl::NotFoundError(absl::StrCat("pod '", uid, "' not found")));
    std::map<std::string, std::string> merged = p->annotations;
    for (const auto& [k, v] : patch) {
      if (v.empty()) {
        merged.erase(k);
      } else {
        merged[k] = v;
      }
    }
    if (absl::Status st = api::ValidateAnnotations(merged, "$"); !st.ok()) return Fail(st);
    if (absl::Status st = c.scheduler.UpdateAnnotations(uid, patch); !st.ok()) return Fail(st);
    return [&c = c.scheduler, &svc = c.service, uid]() -> Reply {
      if (const std::string* text = svc.BatchPodJson(uid)) return Reply{200, *text};
      const sched::PodInfo* p = c.ledger().Find(uid);
      if (!p) return ErrorReply(absl::NotFoundError(absl::StrCat("pod ", uid, " ended")));
      return Reply{200, PodJsonText(*p, c.state())};
    };
  }, std::move(done));
}

void ExplainPod(Service& s, const Caller& caller, const Request& req, Done done) {
  const std::string uid = req.matches[1];
  s.RunAsync([uid, caller](Context& c) -> Finisher {
    const sched::PodInfo* p = FindVisible(c, caller, uid);
    if (!p) return Fail(absl::NotFoundError(absl::StrCat("pod '", uid, "' not found")));
    Json j = {{"uid", uid}, {"phase", std::string(sched::PodPhaseName(p->phase))}};
    if (p->phase != sched::PodPhase::kPending) {
      j["node"] = c.scheduler.state().node(p->placement.node).name;
      j["message"] = "bound";
      return Ok(200, j);
    }
    absl::StatusOr<sched::Diagnosis> d = c.scheduler.Explain(uid);
    if (!d.ok()) return Fail(d.status());
    Json reasons = Json::object();
    for (int r = 0; r < sched::kNumFilterReasons; ++r) {
      if (d->counts[r] > 0) {
        reasons[std::string(sched::FilterReasonName(static_cast<sched::FilterReason>(r)))] =
            d->counts[r];
      }
    }
    j["nodes_total"] = d->nodes_total;
    j["nodes_fit"] = d->nodes_fit;
    j["reasons"] = reasons;
    j["message"] = sched::FitErrorMessage(*d);
    const std::string last = c.scheduler.LastFailure(uid);
    j["last_attempt"] = last.empty() ? Json(nullptr) : Json(last);
    const std::string evicted = c.scheduler.LastEviction(uid);
    j["evicted"] = evicted.empty() ? Json(nullptr) : Json(evicted);
    return Ok(200, j);
  }, std::move(done));
}

// ---------------------------------------------------------------------------------- queues

// null in the JSON: an unlimited limit, or borrowing of a resource no queue manages.
constexpr double kUnmanaged = sched::kUnlimited;

Json ResourcesJson(const sched::Resources& r) {
  Json j = Json::object();
  for (size_t i = 0; i < sched::kQueueResources; ++i) {
    j[sched::QueueResourceNames()[i]] = std::isinf(r[i]) ? Json(nullptr) : Json(r[i]);
  }
  return j;
}

// GET /v1/queues: every queue's quota, usage, pending demand, fair share and what it borrows.
// A tenant sees the leaf queues of its namespaces only.
void GetQueues(Service& s, const Caller& caller, const Request&, Done done) {
  s.RunAsync([caller](Context& c) -> Finisher {
    const sched::QueueTree* tree = c.scheduler.queue_tree();
    Json items = Json::array();
    if (tree == nullptr) return Ok(200, {{"items", items}, {"tenancy", false}});
    std::map<std::string, std::vector<std::string>> namespaces;
    if (auto p = c.service.policies()->Current()) {
      for (const policy::QueueBinding& q : p->queues) namespaces[q.spec.name] = q.namespaces;
    }
    const std::vector<sched::Resources> shares = tree->FairShares();
    for (int q = 0; q < static_cast<int>(tree->size()); ++q) {
      const sched::QueueSpec& spec = tree->spec(q);
      const std::vector<std::string>& nss = namespaces[spec.name];
      if (caller.tenant_caller() &&
          std::none_of(nss.begin(), nss.end(), [&](const std::string& n) {
            return caller.Sees(n);
          })) {
        continue;
      }
      // Borrowing is only defined for the resources the queues manage.
      sched::Resources borrowed{};
      for (size_t r = 0; r < sched::kQueueResources; ++r) {
        borrowed[r] = tree->managed(r) ? std::max(0.0, tree->usage(q)[r] - spec.guaranteed[r])
                                       : kUnmanaged;
      }
      items.push_back({{"name", spec.name},
                       {"parent", spec.parent.empty() ? Json(nullptr) : Json(spec.parent)},
                       {"namespaces", nss},
                       {"weight", spec.weight},
                       {"guaranteed", ResourcesJson(spec.guaranteed)},
                       {"limit", ResourcesJson(spec.limit)},
                       {"usage", ResourcesJson(tree->usage(q))},
                       {"pending", ResourcesJson(tree->pending(q))},
                       {"fair_share", ResourcesJson(shares[q])},
                       {"borrowed", ResourcesJson(borrowed)},
                       {"dominant_share", tree->DominantShare(q)}});
    }
    return Ok(200, {{"items", items},
                    {"tenancy", true},
                    {"capacity", ResourcesJson(tree->capacity())},
                    {"preemptions", c.scheduler.preemptions()}});
  }, std::move(done));
}

// ----------------------------------------------------------------------------------- watch

// A watch's events after `cursor`, written as server-sent events (a `: keep-alive` comment every
// 15 s without events) until `end`, or as one long-poll reply once the first events are there.
class WatchStream : public BodyStream {
 public:
  WatchStream(Service& s, int64_t since, std::chrono::steady_clock::time_point end, bool poll)
      : s_(s), cursor_(since), since_(since), end_(end), poll_(poll) {}

  Piece Next(std::chrono::steady_clock::time_point* wake_at) override {
    const auto now = std::chrono::steady_clock::now();
    const bool over = now >= end_ || !s_.ready();
    if (poll_) return Poll(s_.Watch(cursor_, 1000, 0), over, wake_at);
    absl::StatusOr<std::vector<std::shared_ptr<const std::string>>> ev =
        s_.WatchSse(cursor_, kMaxPiece, &cursor_);
    if (!ev.ok()) {
      return {absl::StrCat("event: error\ndata: ", api::ErrorBody(ev.status()), "\n\n"), true};
    }
    if (!ev->empty()) {
      last_write_ = now;
      return {"", false, *std::move(ev)};
    }
    if (over) return {"", true};
    if (now - last_write_ >= kKeepAlive) {
      last_write_ = now;
      return {": keep-alive\n\n", false};
    }
    *wake_at = std::min(end_, last_write_ + kKeepAlive);
    return {};
  }

 private:
  static constexpr auto kKeepAlive = std::chrono::seconds(15);
  // Events per write, in bytes: about what a socket's buffers take before a slow reader stalls.
  static constexpr size_t kMaxPiece = 256 << 10;

  Piece Poll(const absl::StatusOr<std::vector<WatchEvent>>& ev, bool over,
             std::chrono::steady_clock::time_point* wake_at) {
    if (!ev.ok()) return {api::ErrorBody(ev.status()), true};
    if (ev->empty() && !over) {
      *wake_at = end_;
      return {};
    }
    std::string body = "{\"events\":[";
    for (size_t i = 0; i < ev->size(); ++i) absl::StrAppend(&body, i ? "," : "", (*ev)[i].json);
    absl::StrAppend(&body, "],\"revision\":", ev->empty() ? since_ : ev->back().revision, "}");
    return {std::move(body), true};
  }

  Service& s_;
  int64_t cursor_;
  const int64_t since_;
  const std::chrono::steady_clock::time_point end_;
  const bool poll_;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

void WatchRoute(Service& s, const HttpOptions& o, const Request& req, Done done) {
  int64_t since = s.revision();
  if (req.has_param("since") &&
      (!absl::SimpleAtoi(req.get_param_value("since"), &since) || since < 0)) {
    return done(ErrorReply(absl::InvalidArgumentError(
        "since: must be a revision, a non-negative integer")));
  }
  if (since > s.revision()) {
    return done(ErrorReply(absl::InvalidArgumentError(absl::StrCat(
        "since: revision ", since, " is ahead of the server's (", s.revision(), ")"))));
  }
  double timeout_s = o.max_watch_s;
  if (req.has_param("timeout")) {
    absl::StatusOr<double> t = base::ParseDuration(req.get_param_value("timeout"), "timeout", 1,
                                                   base::Closed(0, o.max_watch_s));
    if (!t.ok()) return done(ErrorReply(t.status()));
    timeout_s = *t;
  }
  // 410 Gone before anything is written, when `since` is older than what is retained.
  if (absl::StatusOr<std::vector<WatchEvent>> probe = s.Watch(since, 1, 0);
      !probe.ok() && absl::IsFailedPrecondition(probe.status())) {
    Reply r = ErrorReply(probe.status());
    r.status = 410;
    return done(r);
  }
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  const bool poll = req.get_param_value("format") == "json";
  Response r(200, "", poll ? "application/json" : "text/event-stream");
  if (!poll) r.headers.emplace_back("Cache-Control", "no-cache");
  r.stream = std::make_shared<WatchStream>(s, since, end, poll);
  done(std::move(r));
}

}  // namespace

void RegisterRoutes(Router& r, Service& s, const HttpOptions& o) {
  RegisterCommonRoutes(r, s, nullptr);
  auto bind = [&s](void (*f)(Service&, const Request&, Done)) {
    return [&s, f](Request& req, Done done) { f(s, req, std::move(done)); };
  };
  // Pod routes see who calls: a tenant's view is its own namespaces.
  auto scoped = [&s](void (*f)(Service&, const Caller&, const Request&, Done)) {
    return [&s, f](Request& req, Done done) { f(s, req.caller, req, std::move(done)); };
  };
  using A = Access;
  const std::string node = "/v1/nodes/{name}";
  const std::string pod = "/v1/pods/{uid}";
  r.Add("PUT", node, "put_node", A::kAdmin, bind(PutNode));
  r.Add("GET", "/v1/nodes", "list_nodes", A::kClusterRead, bind(GetNodes));
  r.Add("GET", node, "get_node", A::kClusterRead, bind(GetNode));
  r.Add("POST", node + "/cordon", "cordon_node", A::kAdmin, bind(CordonNode));
  r.Add("POST", node + "/uncordon", "uncordon_node", A::kAdmin, bind(CordonNode));
  r.Add("DELETE", node, "delete_node", A::kAdmin, bind(DeleteNode));
  r.Add("POST", "/v1/pods", "create_pod", A::kTenant, scoped(PostPod));
  r.Add("GET", "/v1/pods", "list_pods", A::kReader, scoped(ListPods));
  r.Add("GET", pod, "get_pod", A::kReader, scoped(GetPod));
  r.Add("DELETE", pod, "delete_pod", A::kTenant, scoped(DeletePod));
  r.Add("GET", pod + "/explain", "explain_pod", A::kReader, scoped(ExplainPod));
  r.Add("PATCH", pod + "/annotations", "patch_pod_annotations", A::kAdmin,
        bind(PatchPodAnnotations));
  r.Add("GET", "/v1/queues", "list_queues", A::kReader, scoped(GetQueues));
  r.Add("GET", "/v1/watch", "watch", A::kClusterRead,
        [&s, &o](Request& req, Done done) { WatchRoute(s, o, req, std::move(done)); });
  r.Add("GET", "/v1/deployments", "list_deployments", A::kClusterRead, [&o](Request&, Done done) {
    done(o.deployments_status ? Reply{200, o.deployments_status()}
                              : Reply{200, R"({"deployments":[]})"});
  });
  r.Add("GET", "/v1/node-groups", "list_node_groups", A::kClusterRead, [&o](Request&, Done done) {
    done(o.node_groups_status ? Reply{200, o.node_groups_status()} : Reply{200, R"({"groups":[]})"});
  });
  r.Add("GET", "/v1/cluster", "get_cluster", A::kClusterRead, [&s](Request&, Done done) {
    s.RunAsync(
        [](Context& c) -> Finisher {
          return Ok(200, ClusterSummaryJson(c.service.cluster(), c.service.backend(),
                                            c.scheduler.state(), c.scheduler.queue().size()));
        },
        std::move(done));
  });
  r.Add("GET", "/v1/leader", "leader", A::kReader, [&s](Request&, Done done) {
    done(Reply{200, base::DumpJson(LeaderJson(s), -1)});
  });
}

}  // namespace seedance::server
