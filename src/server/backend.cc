#include "seedance/server/backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/api/api.h"
#include "seedance/base/text.h"
#include "seedance/server/kube_sync.h"

namespace seedance::server {
namespace {

// The ledger decides and binds; nothing to follow.
class LocalBackend final : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::kLocal; }
  void Configure(ServiceOptions&, HttpOptions&) const override {}
  absl::Status Start(Service&) override { return absl::OkStatus(); }
  void Stop() override {}
};

// Nodes and pods from the API server (KubeSync); the extender's bind goes there.
class KubernetesBackend final : public Backend {
 public:
  KubernetesBackend(k8s::ApiServerOptions api, std::shared_ptr<k8s::ApiServerClient> client)
      : api_(std::move(api)), client_(std::move(client)) {}
  ~KubernetesBackend() override { Stop(); }
  BackendKind kind() const override { return BackendKind::kKubernetes; }
  void Configure(ServiceOptions&, HttpOptions& http) const override { http.kube_api = client_; }
  absl::Status Start(Service& service) override {
    sync_ = KubeSync::Start(service, api_);
    return absl::OkStatus();
  }
  void Stop() override { sync_.reset(); }

 private:
  k8s::ApiServerOptions api_;
  std::shared_ptr<k8s::ApiServerClient> client_;
  std::unique_ptr<KubeSync> sync_;
};

// Jobs submitted to slurmrestd pinned to each placement (slurm_backend.h).
class SlurmRunBackend final : public Backend {
 public:
  explicit SlurmRunBackend(SlurmBackendOptions options) : options_(std::move(options)) {}
  ~SlurmRunBackend() override { Stop(); }
  BackendKind kind() const override { return BackendKind::kSlurm; }
  void Configure(ServiceOptions& service, HttpOptions&) const override {
    // Placements wait (Assumed) until slurmrestd took the job; the backend binds or forgets.
    service.scheduler.internal_binding = false;
    service.admit = SlurmBackend::Admit;
  }
  absl::Status Start(Service& service) override {
    absl::StatusOr<std::unique_ptr<SlurmBackend>> b = SlurmBackend::Start(service, options_);
    if (!b.ok()) return b.status();
    slurm_ = std::move(*b);
    return absl::OkStatus();
  }
  void Stop() override { slurm_.reset(); }

 private:
  SlurmBackendOptions options_;
  std::unique_ptr<SlurmBackend> slurm_;
};

}  // namespace

absl::Status CheckBackendConfig(const BackendConfig& c, bool replicated) {
  if (!api::IsDnsLabel(c.cluster)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cluster: a cluster name is a DNS label (lower-case letters, digits and '-', at most "
        "63), got '",
        base::ForTerminal(base::Clip(c.cluster, 100)), "'"));
  }
  if (c.kind != BackendKind::kSlurm && !c.slurm.rest.url.empty()) {
    return absl::InvalidArgumentError("--slurm-url: only with --backend slurm");
  }
  if (c.kind == BackendKind::kLocal && c.kube) {
    return absl::InvalidArgumentError(
        "--kube-api / --kube-in-cluster: only with --backend kubernetes");
  }
  if (c.kind == BackendKind::kKubernetes && !c.kube) {
    return absl::InvalidArgumentError(
        "--backend kubernetes: --kube-api URL or --kube-in-cluster is required");
  }
  if (c.kind != BackendKind::kSlurm) return absl::OkStatus();
  if (c.kube) {
    return absl::InvalidArgumentError(
        "--backend slurm: Seedance binds to Slurm; --kube-api / --kube-in-cluster are for the "
        "Kubernetes extender (--backend kubernetes)");
  }
  if (c.slurm.rest.url.empty()) {
    return absl::InvalidArgumentError(
        "--backend slurm: --slurm-url http://HOST:PORT of slurmrestd is required");
  }
  if (replicated) {
    return absl::InvalidArgumentError(
        "--backend slurm: not with --store etcd:// yet (replicas would all submit); run one "
        "server with --state");
  }
  return absl::OkStatus();
}

std::string_view BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kLocal:
      return "local";
    case BackendKind::kKubernetes:
      return "kubernetes";
    case BackendKind::kSlurm:
      return "slurm";
  }
  return "local";
}

absl::StatusOr<BackendKind> ParseBackendKind(std::string_view text, std::string_view flag) {
  for (BackendKind k : {BackendKind::kLocal, BackendKind::kKubernetes, BackendKind::kSlurm}) {
    if (text == BackendKindName(k)) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(std::string(flag),
                                                 ": expected local, kubernetes or slurm, got '",
                                                 base::ForTerminal(base::Clip(text, 100)), "'"));
}

absl::StatusOr<std::unique_ptr<Backend>> NewBackend(BackendConfig config, bool replicated) {
  if (absl::Status st = CheckBackendConfig(config, replicated); !st.ok()) return st;
  switch (config.kind) {
    case BackendKind::kLocal:
      return std::unique_ptr<Backend>(new LocalBackend);
    case BackendKind::kKubernetes: {
      absl::StatusOr<std::unique_ptr<k8s::ApiServerClient>> c =
          k8s::NewApiServerClient(*config.kube);
      if (!c.ok()) return c.status();
      return std::unique_ptr<Backend>(new KubernetesBackend(
          *config.kube, std::shared_ptr<k8s::ApiServerClient>(std::move(*c))));
    }
    case BackendKind::kSlurm:
      if (absl::Status st = SlurmBackend::Check(config.slurm); !st.ok()) return st;
      return std::unique_ptr<Backend>(new SlurmRunBackend(std::move(config.slurm)));
  }
  return absl::InternalError("unknown backend kind");
}

}  // namespace seedance::server
