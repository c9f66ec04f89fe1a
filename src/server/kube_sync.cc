#include "seedance/server/kube_sync.h"

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "seedance/k8s/extender.h"

namespace seedance::server {

struct KubeSync::State {
  std::set<std::string> nodes;  // learned from the cluster
  std::set<std::string> pods;   // uids seen bound on the cluster
  std::unordered_map<std::string, std::vector<std::string>> gpu_uuids;  // node -> UUIDs
  std::atomic<int64_t> adopted{0}, unaccounted{0};
  std::atomic<bool> stopping{false};
};

namespace {

using Finisher = Service::Finisher;
using Context = Service::Context;

Finisher Done() {
  return [] { return Reply{200, "{}"}; };
}

void ApplyNode(Context& c, KubeSync::State& st, const k8s::ObjectEvent& e) {
  const std::string& name = e.node.spec.name;
  if (e.type == k8s::ObjectEvent::Type::kDeleted) {
    if (st.nodes.erase(name) > 0) (void)c.scheduler.DeleteNode(name, /*drain=*/true);
    return;
  }
  st.nodes.insert(name);
  if (!e.node.gpu_uuids.empty()) st.gpu_uuids[name] = e.node.gpu_uuids;
  (void)k8s::LearnNodes(c.scheduler, {e.node});
}

// The GPU indices a pod's seedance.io/gpus annotation names on its node (empty: none, or one
// that cannot be read, and then the policy chooses).
std::vector<int> GpusOf(const k8s::Pod& p, const std::vector<std::string>& uuids) {
  std::vector<int> out;
  for (const k8s::GpuAssignment& g : p.gpus) {
    int index = g.index;
    for (size_t i = 0; index < 0 && i < uuids.size(); ++i) {
      if (uuids[i] == g.uuid) index = static_cast<int>(i);
    }
    if (index < 0) return {};
    out.push_back(index);
  }
  return out;
}

void ApplyPod(Context& c, KubeSync::State& st, const k8s::ObjectEvent& e) {
  const k8s::Pod& p = e.pod;
  const std::string uid = p.Key();
  const bool gone = e.type == k8s::ObjectEvent::Type::kDeleted || p.Terminal();
  if (gone) {
    st.pods.erase(uid);
    if (c.scheduler.ledger().Find(uid) != nullptr) (void)c.scheduler.DeletePod(uid, c.now_s);
    return;
  }
  if (p.node_name.empty()) return;  // pending: the extender decides
  st.pods.insert(uid);
  if (c.scheduler.ledger().Find(uid) != nullptr) return;  // bound through the extender
  const int n = c.scheduler.state().FindNode(p.node_name);
  if (n < 0) {
    ++st.unaccounted;
    return;
  }
  sched::PodInfo info = k8s::ToPodInfo(p, k8s::GpuMemoryOf(c.scheduler.state().node(n)));
  info.uid = uid;
  auto uuids = st.gpu_uuids.find(p.node_name);
  const std::vector<int> gpus =
      GpusOf(p, uuids == st.gpu_uuids.end() ? std::vector<std::string>{} : uuids->second);
  if (c.scheduler.AdoptPod(std::move(info), p.node_name, gpus, c.now_s).ok()) {
    ++st.adopted;
  } else {
    ++st.unaccounted;
  }
}

// After a relist: what this sync learned that the list lacks is gone.
template <typename Name>
std::set<std::string> Missing(const std::set<std::string>& known,
                              const std::vector<k8s::ObjectEvent>& listed, Name name) {
  std::set<std::string> present;
  for (const k8s::ObjectEvent& e : listed) present.insert(name(e));
  std::set<std::string> missing;
  for (const std::string& k : known) {
    if (!present.contains(k)) missing.insert(k);
  }
  return missing;
}

}  // namespace

std::unique_ptr<KubeSync> KubeSync::Start(Service& service, k8s::ApiServerOptions api) {
  std::unique_ptr<KubeSync> s(new KubeSync);
  s->state_ = std::make_shared<State>();
  std::shared_ptr<State> st = s->state_;
  Service* svc = &service;
  s->nodes_ = std::make_unique<k8s::Informer>(
      api, "nodes", [svc, st](std::vector<k8s::ObjectEvent> events, bool relisted) {
        (void)svc->Run([st, events = std::move(events), relisted](Context& c) -> Finisher {
          if (relisted) {
            for (const std::string& name :
                 Missing(st->nodes, events, [](const auto& e) { return e.node.spec.name; })) {
              st->nodes.erase(name);
              (void)c.scheduler.DeleteNode(name, /*drain=*/true);
            }
          }
          for (const k8s::ObjectEvent& e : events) ApplyNode(c, *st, e);
          return Done();
        });
      });
  s->pods_ = std::make_unique<k8s::Informer>(
      api, "pods", [svc, st](std::vector<k8s::ObjectEvent> events, bool relisted) {
        (void)svc->Run([st, events = std::move(events), relisted](Context& c) -> Finisher {
          if (relisted) {
            for (const std::string& uid :
                 Missing(st->pods, events, [](const auto& e) { return e.pod.Key(); })) {
              st->pods.erase(uid);
              if (c.scheduler.ledger().Find(uid) != nullptr) {
                (void)c.scheduler.DeletePod(uid, c.now_s);
              }
            }
          }
          for (const k8s::ObjectEvent& e : events) ApplyPod(c, *st, e);
          return Done();
        });
      });
  s->nodes_thread_ = std::thread([n = s->nodes_.get()] { n->Run(); });
  // Pods after the first node list, so that a bound pod finds its node.
  s->pods_thread_ = std::thread([n = s->nodes_.get(), p = s->pods_.get(), st] {
    while (n->stats().lists == 0 && !st->stopping) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!st->stopping) p->Run();
  });
  return s;
}

KubeSync::~KubeSync() {
  state_->stopping = true;
  nodes_->Stop();
  pods_->Stop();
  nodes_thread_.join();
  pods_thread_.join();
}

KubeSyncStats KubeSync::stats() const {
  KubeSyncStats s;
  s.nodes = nodes_->stats();
  s.pods = pods_->stats();
  s.adopted = state_->adopted.load();
  s.unaccounted = state_->unaccounted.load();
  return s;
}

}  // namespace seedance::server
