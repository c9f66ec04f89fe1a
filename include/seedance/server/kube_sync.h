// Keeps the live scheduler's nodes and pods in step with a Kubernetes cluster: two informers
// (k8s/informer.h) list and watch nodes and pods on the API server, and each change is applied
// in one Service operation (so it is durable, like any API call):
//   nodes  added or updated (capacity, labels, taints, cordon) as the cluster says; a node gone
//          from the cluster is deleted with its pods (drain);
//   pods   a pod bound by anyone (spec.nodeName set) that the ledger lacks is adopted on that
//          node, on the GPUs its seedance.io/gpus annotation names, or, without one, on those
//          the pod's policy would choose there; a pod that ends (Succeeded, Failed, deleted,
//          or being deleted) leaves the ledger; pending pods wait for the extender.
// After a relist, a node or pod this sync learned from the cluster that the list lacks is gone.
// Nodes and pods added through the REST API are not touched.
//
// Thread-safety: Start and the destructor from one thread; the informers run on their own.
#ifndef SEEDANCE_SERVER_KUBE_SYNC_H_
#define SEEDANCE_SERVER_KUBE_SYNC_H_

#include <memory>
#include <thread>

#include "seedance/k8s/apiserver.h"
#include "seedance/k8s/informer.h"
#include "seedance/server/service.h"

namespace seedance::server {

struct KubeSyncStats {
  k8s::InformerStats nodes, pods;
  int64_t adopted = 0, unaccounted = 0;  // unaccounted: bound elsewhere, no room by our count
};

class KubeSync {
 public:
  static std::unique_ptr<KubeSync> Start(Service& service, k8s::ApiServerOptions api);
  ~KubeSync();
  KubeSyncStats stats() const;

  struct State;  // loop-thread state (what was learned from the cluster)

 private:
  KubeSync() = default;
  std::shared_ptr<State> state_;
  std::unique_ptr<k8s::Informer> nodes_, pods_;
  std::thread nodes_thread_, pods_thread_;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_KUBE_SYNC_H_
