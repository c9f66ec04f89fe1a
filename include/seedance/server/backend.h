// Who runs what the Service places: the seam between the one scheduling service and the cluster it
// drives (issue 42). The daemon holds one Backend, chosen by configuration (BackendConfig, from
// `seedance server --backend local|kubernetes|slurm`), and never names a concrete one:
//   local       the ledger is the truth: a placement is Bound at once; nodes come through the API
//               (and --nodes).
//   kubernetes  nodes and pods are listed and watched on the API server (KubeSync); pending pods
//               wait for kube-scheduler's extender calls, whose bind writes the Binding there.
//   slurm       placements wait (Assumed) until slurmrestd took the job pinned to the chosen node
//               and GPUs (SlurmBackend, docs/slurm.md).
// A member of a federation (docs/federation.md) is one more kind of backend behind the same seam.
//
// Life cycle: NewBackend checks the configuration and reaches the peer (slurmrestd answering, the
// API server's client built) before any state is opened; Configure tells the service and the HTTP
// front what the backend needs of them; Start runs once the service and the API are up; Stop (or
// the destructor) ends the backend's threads before the service stops.
//
// Every node a service holds belongs to one cluster, BackendConfig::cluster (`--cluster NAME`):
// GET /v1/cluster reports it with the backend's kind and the capacity by device model, which is
// what a federation front reads of a member.
//
// Thread-safety: one thread calls NewBackend, Configure, Start and Stop; a backend runs its own
// threads against the Service's thread-safe interface.
#ifndef SEEDANCE_SERVER_BACKEND_H_
#define SEEDANCE_SERVER_BACKEND_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"
#include "seedance/server/slurm_backend.h"

namespace seedance::server {

enum class BackendKind { kLocal, kKubernetes, kSlurm };

// "local", "kubernetes", "slurm".
std::string_view BackendKindName(BackendKind kind);
// The inverse; InvalidArgument naming `flag` and the choices otherwise.
absl::StatusOr<BackendKind> ParseBackendKind(std::string_view text, std::string_view flag);

struct BackendConfig {
  BackendKind kind = BackendKind::kLocal;
  // The cluster's name (a DNS label): what a federation front calls this server's nodes.
  std::string cluster = "default";
  std::optional<k8s::ApiServerOptions> kube;  // kKubernetes: the API server (required)
  SlurmBackendOptions slurm;                  // kSlurm
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  // Before the service starts: what the backend needs of the service (Slurm: placements wait
  // Assumed; admission of the batch script) and of the API (Kubernetes: the client the
  // extender's bind writes to). The cluster name is set by the caller.
  virtual void Configure(ServiceOptions& service, HttpOptions& http) const = 0;
  // Once, with the service running and the API serving: learn the cluster and start following it.
  virtual absl::Status Start(Service& service) = 0;
  // Ends the backend's threads; the service keeps running. Idempotent.
  virtual void Stop() = 0;
};

// The combinations `config` refuses, without reaching anything: errors name the flag
// (`--backend slurm: ...`, `--cluster: ...`). `replicated`: the state is in etcd, several replicas
// (Slurm refuses it: each would submit).
absl::Status CheckBackendConfig(const BackendConfig& config, bool replicated);

// CheckBackendConfig, then reaches the peer (slurmrestd answering with the token; the API
// server's client built); starts nothing.
absl::StatusOr<std::unique_ptr<Backend>> NewBackend(BackendConfig config, bool replicated);

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_BACKEND_H_
