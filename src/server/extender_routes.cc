// The kube-scheduler extender under /k8s/extender/v1/ (k8s/extender.h, docs/kubernetes.md):
// each verb decodes its body on the HTTP thread (400 with the JSON path when it is not what the
// scheduler sends), decides in one Service operation on the loop thread, and replies in the
// protocol's own shapes. Bind talks to the Kubernetes API server after the placement is
// durable, and forgets the pod (durably) when the API server refuses.
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "routes.h"
#include "seedance/api/api.h"
#include "seedance/base/json_path.h"
#include "seedance/k8s/extender.h"

namespace seedance::server {
namespace {

using Finisher = Service::Finisher;
using Context = Service::Context;

// What filter and prioritize saw, for bind (whose arguments name the pod only). Loop thread.
class ExtenderMemory {
 public:
  void Remember(const sched::PodInfo& pod) {
    if (pods_.insert_or_assign(pod.uid, pod).second) order_.push_back(pod.uid);
    while (order_.size() > kMaxPods) {
      pods_.erase(order_.front());
      order_.pop_front();
    }
  }
  const sched::PodInfo* Find(const std::string& uid) const {
    auto it = pods_.find(uid);
    return it == pods_.end() ? nullptr : &it->second;
  }
  void LearnUuids(const k8s::ExtenderArgs& args) {
    for (const k8s::Node& n : args.nodes) {
      if (!n.gpu_uuids.empty()) uuids_[n.spec.name] = n.gpu_uuids;
    }
  }
  std::vector<std::string> Uuids(const std::string& node) const {
    auto it = uuids_.find(node);
    return it == uuids_.end() ? std::vector<std::string>{} : it->second;
  }

 private:
  static constexpr size_t kMaxPods = 1 << 16;
  std::unordered_map<std::string, sched::PodInfo> pods_;
  std::deque<std::string> order_;
  std::unordered_map<std::string, std::vector<std::string>> uuids_;
};

Finisher Json200(std::string body) {
  return [body = std::move(body)] { return Reply{200, body}; };
}

// filter and prioritize: the same arguments, the same resolved pod.
template <typename Verb>
void ArgsRoute(Service& s, ExtenderMemory& memory, const Request& req, Done done, Verb verb) {
  absl::StatusOr<k8s::ExtenderArgs> args = k8s::ParseExtenderArgs(req.body);
  if (!args.ok()) return done(ErrorReply(args.status()));
  // Nodes are learnt through the checks PUT /v1/nodes makes: a name or a capacity the API
  // refuses is never written to the durable state.
  for (size_t i = 0; i < args->nodes.size(); ++i) {
    const absl::Status st =
        api::ValidateNodeSpec(args->nodes[i].spec, base::JsonPathIndex("$.Nodes.items", i));
    if (!st.ok()) return done(Reply{200, verb.Failed(*args, absl::StrCat("seedance: ", st.message()))});
  }
  auto shared = std::make_shared<const k8s::ExtenderArgs>(std::move(*args));
  s.RunAsync([shared, &memory, verb](Context& c) -> Finisher {
    if (shared->has_nodes) {
      memory.LearnUuids(*shared);
      if (absl::Status st = k8s::LearnNodes(c.scheduler, shared->nodes); !st.ok()) {
        return Json200(verb.Failed(*shared, absl::StrCat("seedance: ", st.message())));
      }
    }
    if (!shared->unplaceable.empty()) return Json200(verb.Unplaceable(*shared));
    const sched::PodInfo pod = k8s::ResolvePod(c.scheduler, shared->pod, shared->node_names);
    memory.Remember(pod);
    return Json200(verb(c.scheduler, *shared, pod));
  }, std::move(done));
}

struct FilterVerb {
  std::string operator()(sched::Scheduler& s, const k8s::ExtenderArgs& a,
                         const sched::PodInfo& pod) const {
    return k8s::FilterResultJson(a, k8s::Filter(s, a, pod));
  }
  std::string Failed(const k8s::ExtenderArgs& a, std::string error) const {
    k8s::FilterResult r;
    r.error = std::move(error);
    return k8s::FilterResultJson(a, r);
  }
  // Every candidate fails, and preemption cannot help (kube-scheduler reports the reason).
  std::string Unplaceable(const k8s::ExtenderArgs& a) const {
    k8s::FilterResult r;
    for (const std::string& n : a.node_names) r.unresolvable[n] = a.unplaceable;
    return k8s::FilterResultJson(a, r);
  }
};

struct PrioritizeVerb {
  std::string operator()(sched::Scheduler& s, const k8s::ExtenderArgs& a,
                         const sched::PodInfo& pod) const {
    absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> scores =
        k8s::Prioritize(s, a, pod);
    // The protocol has no error field here: a pod whose profile cannot be built scores 0.
    if (!scores.ok()) return Failed(a, "");
    return k8s::PriorityListJson(*scores);
  }
  std::string Failed(const k8s::ExtenderArgs& a, const std::string&) const {
    std::vector<std::pair<std::string, int64_t>> zero;
    for (const std::string& n : a.node_names) zero.push_back({n, 0});
    return k8s::PriorityListJson(zero);
  }
  std::string Unplaceable(const k8s::ExtenderArgs& a) const { return Failed(a, ""); }
};

// What the loop decided for a bind: the GPUs to write on the pod, or why not.
struct BindPlan {
  std::string error;
  std::string annotation;
  bool retry = false;  // the pod was placed on that node by an earlier bind
};

void BindRoute(Service& s, ExtenderMemory& memory, k8s::ApiServerClient* api,
               const Request& req, Done done) {
  absl::StatusOr<k8s::BindingArgs> args = k8s::ParseBindingArgs(req.body);
  if (!args.ok()) return done(ErrorReply(args.status()));
  const k8s::BindingArgs b = *std::move(args);
  auto plan = std::make_shared<BindPlan>();
  const Reply placed = s.Run([b, plan, &memory, api](Context& c) -> Finisher {
    const std::string who = absl::StrCat(b.pod_namespace, "/", b.pod_name, " (", b.pod_uid, ")");
    const sched::PodInfo* pod = memory.Find(b.pod_uid);
    const sched::PodInfo* placed_before = c.scheduler.ledger().Find(b.pod_uid);
    const int node = c.scheduler.state().FindNode(b.node);
    if (api == nullptr) {
      plan->error =
          "seedance: no Kubernetes API server configured (--kube-api or "
          "--kube-in-cluster), so the Binding cannot be created";
    } else if (placed_before != nullptr && placed_before->phase != sched::PodPhase::kPending &&
               placed_before->placement.node == node && node >= 0) {
      // kube-scheduler retried a bind whose reply it did not get: the same decision again.
      plan->retry = true;
    } else if (pod == nullptr) {
      plan->error =
          absl::StrCat("seedance: pod ", who, " was not filtered or prioritized by this extender");
    } else if (absl::Status st = c.scheduler.PlaceOn(*pod, b.node, c.now_s); !st.ok()) {
      plan->error =
          absl::StrCat("seedance: cannot bind pod ", who, " to ", b.node, ": ", st.message());
    }
    if (plan->error.empty()) {
      const sched::PodInfo* p = c.scheduler.ledger().Find(b.pod_uid);
      plan->annotation =
          k8s::GpusAnnotation(p->placement, p->shape.gpu_milli, memory.Uuids(b.node));
    }
    return Json200("");
  });
  if (placed.status != 200) return done(placed);
  if (!plan->error.empty()) return done(Reply{200, k8s::BindingResultJson(plan->error)});
  // Durable now: tell the API server, annotation first (the device plugin reads it at Allocate,
  // which the kubelet calls only once the pod is bound).
  absl::Status st =
      api->AnnotatePod(b.pod_namespace, b.pod_name, {{k8s::kGpusAnnotation, plan->annotation}});
  if (st.ok()) st = api->BindPod(b.pod_namespace, b.pod_name, b.pod_uid, b.node);
  // A retried bind finds its Binding made by the first attempt: the API server says Conflict.
  if (plan->retry && absl::IsAlreadyExists(st)) st = absl::OkStatus();
  if (!st.ok()) {
    // Forget the placement: the pod is not running there.
    (void)s.Run([uid = b.pod_uid](Context& c) -> Finisher {
      (void)c.scheduler.DeletePod(uid, c.now_s);
      return Json200("");
    });
    return done(Reply{200, k8s::BindingResultJson(absl::StrCat("seedance: ", st.message()))});
  }
  done(Reply{200, k8s::BindingResultJson("")});
}

void PreemptRoute(Service& s, const Request& req, Done done) {
  absl::StatusOr<k8s::PreemptionArgs> args = k8s::ParsePreemptionArgs(req.body);
  if (!args.ok()) return done(ErrorReply(args.status()));
  auto shared = std::make_shared<const k8s::PreemptionArgs>(std::move(*args));
  s.RunAsync([shared](Context& c) -> Finisher {
    return Json200(k8s::PreemptionResultJson(k8s::Preempt(c.scheduler, *shared)));
  }, std::move(done));
}

}  // namespace

void RegisterExtenderRoutes(Router& r, Service& s, std::shared_ptr<k8s::ApiServerClient> api) {
  // Lives as long as the routes (the server's lifetime).
  auto memory = std::make_shared<ExtenderMemory>();
  // kube-scheduler calls with the administrator's credential: the extender learns nodes.
  r.Add("POST", "/k8s/extender/v1/filter", "extender_filter", Access::kAdmin,
        [&s, memory](Request& req, Done done) {
          ArgsRoute(s, *memory, req, std::move(done), FilterVerb{});
        });
  r.Add("POST", "/k8s/extender/v1/prioritize", "extender_prioritize", Access::kAdmin,
        [&s, memory](Request& req, Done done) {
          ArgsRoute(s, *memory, req, std::move(done), PrioritizeVerb{});
        });
  // Bind waits on the Kubernetes API server: it runs on the blocking pool.
  r.Add(
      "POST", "/k8s/extender/v1/bind", "extender_bind", Access::kAdmin,
      [&s, memory, api](Request& req, Done done) {
        BindRoute(s, *memory, api.get(), req, std::move(done));
      },
      /*blocking=*/true);
  r.Add("POST", "/k8s/extender/v1/preempt", "extender_preempt", Access::kAdmin,
        [&s](Request& req, Done done) { PreemptRoute(s, req, std::move(done)); });
}

}  // namespace seedance::server
