#include "seedance/daemon/daemon.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/federation/front.h"
#include "seedance/ha/replica.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/queue.h"
#include "seedance/server/deployments.h"
#include "seedance/server/http.h"
#include "seedance/server/node_groups.h"
#include "seedance/server/service.h"
#include "seedance/trace/csv_reader.h"
#include "seedance/trace/node_file.h"

namespace seedance::daemon {
namespace {

absl::Status ParseListen(const std::string& text, std::string* host, int* port) {
  const size_t colon = text.rfind(':');
  int64_t p = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(text.substr(colon + 1), &p) || p < 0 ||
      p > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen: expected HOST:PORT with PORT in 0..65535 (0 = any free port), got '",
        base::ForTerminal(base::Clip(text, 100)), "'"));
  }
  *host = text.substr(0, colon);
  const bool bracketed = !host->empty() && host->front() == '[';
  if (bracketed) {
    if (host->size() < 3 || host->back() != ']') {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen: an IPv6 address goes in brackets, [::1]:7070; got '",
                       base::ForTerminal(base::Clip(text, 100)), "'"));
    }
    *host = host->substr(1, host->size() - 2);
  }
  // A host name or an IPv4/IPv6 address (with a %zone): letters, digits and . - _ : %.
  const bool host_ok = !host->empty() && std::all_of(host->begin(), host->end(), [&](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
           c == '%' || (bracketed && c == ':');
  });
  if (!host_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen: expected HOST:PORT with HOST a name or an address (0.0.0.0 = every "
                     "interface, [::1] for IPv6), got '",
                     base::ForTerminal(base::Clip(text, 100)), "'"));
  }
  *port = static_cast<int>(p);
  return absl::OkStatus();
}

absl::StatusOr<server::ServiceOptions> ServiceOptionsOf(const DaemonOptions& o,
                                                        const std::string& state_dir) {
  server::ServiceOptions so;
  so.state_dir = state_dir;
  so.policy_path = o.policy;
  so.scheduler.default_profile = {"default", o.placement, {}, {}};
  so.scheduler.seed = o.seed;
  so.scheduler.assume_timeout_s = o.assume_timeout_s;
  // cas packs where an autoscaler can add room (docs/cas.md, "Elastic clusters").
  so.scheduler.elastic = o.elastic || !o.node_groups.empty();
  so.cluster = o.backend.cluster;
  so.backend = std::string(server::BackendKindName(o.backend.kind));
  if (o.aging_s > 0) so.scheduler.queue.less = sched::AgedPriority(o.aging_s);
  // Free room is used at once, not after the backoffs pods ran up while the cluster was full.
  so.scheduler.queue.pop_backoff_when_idle = true;
  if (!o.oracle_pods.empty()) {
    absl::StatusOr<std::vector<core::PodSpec>> pods = trace::ReadPodCsv(o.oracle_pods);
    if (!pods.ok()) return pods.status();
    so.scheduler.oracle_workload = sched::TypicalShapes(sched::CountShapes(*pods), 95.0);
  }
  return so;
}

// --deployments: the file read and checked before anything starts (nullopt without the flag).
absl::StatusOr<std::optional<server::DeploymentsConfig>> ReadDeployments(const DaemonOptions& o) {
  if (o.deployments.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = base::ReadInput(o.deployments, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  absl::StatusOr<server::DeploymentsConfig> c =
      server::ParseDeploymentsConfig(*text, o.deployments);
  if (!c.ok()) return c.status();
  return std::optional<server::DeploymentsConfig>(std::move(*c));
}

// --node-groups: the file read and checked before anything starts (nullopt without the flag).
absl::StatusOr<std::optional<server::NodeGroupsConfig>> ReadNodeGroups(const DaemonOptions& o) {
  if (o.node_groups.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = base::ReadInput(o.node_groups, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  absl::StatusOr<server::NodeGroupsConfig> c = server::ParseNodeGroupsConfig(*text, o.node_groups);
  if (!c.ok()) return c.status();
  return std::optional<server::NodeGroupsConfig>(std::move(*c));
}

// Where the live cluster autoscaler can run: not under the Kubernetes extender (Kubernetes keeps
// the pods it cannot schedule, they never reach Seedance's queue), and under Slurm only with a
// command provisioner (Slurm's own nodes join through the backend; a simulated one would give
// Seedance nodes Slurm does not have).
absl::Status CheckNodeGroupsBackend(const DaemonOptions& o,
                                    const std::optional<server::NodeGroupsConfig>& groups) {
  if (!groups) return absl::OkStatus();
  if (o.backend.kind == server::BackendKind::kKubernetes) {
    return absl::InvalidArgumentError(
        "--node-groups: not with --kube-api / --kube-in-cluster (Kubernetes keeps the pods it "
        "cannot schedule; use its Cluster Autoscaler or Karpenter there)");
  }
  if (o.backend.kind == server::BackendKind::kSlurm &&
      groups->provisioner == server::NodeGroupsConfig::Provisioner::kSimulated) {
    return absl::InvalidArgumentError(
        "--node-groups: with --backend slurm the provisioner must be kind command (e.g. a resume "
        "program that powers up Slurm's cloud nodes GROUP-K); a simulated node would be one "
        "Slurm does not have");
  }
  return absl::OkStatus();
}

// Where the state is kept: --state DIR, --store sqlite://DIR (the same; *state_dir) or --store
// etcd://... (the replica's options in *etcd). Usage errors name the flags.
absl::Status ResolveStore(const DaemonOptions& o, std::string* state_dir,
                          std::optional<ha::ReplicaOptions>* etcd) {
  if (!o.state.empty() && !o.store.empty()) {
    return absl::InvalidArgumentError("server: give --state DIR or --store URL, not both");
  }
  if (o.state.empty() && o.store.empty()) {
    return absl::InvalidArgumentError(
        "server: --state DIR or --store URL is required (where state is kept)");
  }
  *state_dir = o.state;
  if (o.store.empty()) return absl::OkStatus();
  if (o.store.rfind("sqlite://", 0) == 0) {
    *state_dir = o.store.substr(9);
    if (state_dir->empty()) {
      return absl::InvalidArgumentError("--store: sqlite://DIR needs a directory");
    }
    return absl::OkStatus();
  }
  if (o.store.rfind("etcd://", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--store: expected sqlite://DIR or etcd://HOST:PORT[,HOST:PORT...], got '",
                     base::ForTerminal(base::Clip(o.store, 100)), "'"));
  }
  ha::ReplicaOptions r;
  r.store.url = o.store;
  r.store.prefix = o.etcd_prefix;
  r.lease_ttl_s = o.lease_ttl_s;
  etcd->emplace(std::move(r));
  return absl::OkStatus();
}

// The HTTP server's options: --listen, tokens, tenants, TLS and limits.
absl::StatusOr<server::HttpOptions> HttpOptionsOf(const DaemonOptions& o) {
  server::HttpOptions h;
  if (absl::Status st = ParseListen(o.listen, &h.host, &h.port); !st.ok()) return st;
  if (!o.token_file.empty()) {
    absl::StatusOr<std::string> token = base::ReadBearerToken(o.token_file, "--token-file");
    if (!token.ok()) return token.status();
    h.token = *token;
  }
  if (!o.tenant_tokens.empty()) {
    absl::StatusOr<std::string> text = base::ReadInput(o.tenant_tokens, base::InputKind::kConfig);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<server::TenantToken>> tenants =
        server::ParseTenantTokens(*text, o.tenant_tokens);
    if (!tenants.ok()) return tenants.status();
    for (const server::TenantToken& t : *tenants) {
      if (t.token == h.token) {
        return absl::InvalidArgumentError(
            absl::StrCat("--tenant-tokens: tenant '", t.tenant, "' has the administrator's token"));
      }
    }
    h.tenant_tokens = std::move(*tenants);
  }
  h.tls_cert = o.tls_cert;
  h.tls_key = o.tls_key;
  h.max_body_bytes = static_cast<size_t>(o.max_body);
  h.max_connections = o.max_connections;
  h.max_connections_per_client = o.max_connections_per_client;
  h.max_watches = o.max_watches;
  h.max_watches_per_client = o.max_watches_per_client;
  h.rate_limit = o.rate_limit;
  h.experiment_event_rate = o.experiment_event_rate;
  return h;
}

// A federation front has no cluster of its own: the options of one are refused with it.
absl::Status CheckFrontFlags(const DaemonOptions& o, bool etcd) {
  if (o.federation.empty()) return absl::OkStatus();
  const std::pair<bool, const char*> refused[] = {
      {!o.nodes.empty(), "--nodes"},
      {!o.deployments.empty(), "--deployments"},
      {!o.node_groups.empty(), "--node-groups"},
      {o.elastic, "--elastic"},
      {!o.oracle_pods.empty(), "--oracle-pods"},
      {o.backend.kind != server::BackendKind::kLocal, "--backend (other than local)"},
      {etcd, "--store etcd://"},
  };
  for (const auto& [given, flag] : refused) {
    if (given) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--federation: ", flag, " is for a member server; a front has no cluster of its own"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// Everything Start checked and read, before anything starts; then the running components.
struct Daemon::Parts {
  DaemonOptions options;
  std::string state_dir;
  std::optional<ha::ReplicaOptions> etcd;
  server::HttpOptions http_options;
  std::vector<core::NodeSpec> preload;
  std::optional<server::DeploymentsConfig> deployments_config;
  std::optional<server::NodeGroupsConfig> node_groups_config;
  server::ServiceOptions service_options;
  std::unique_ptr<federation::Front> front;  // --federation

  // Started in this order, stopped in the reverse (Stop).
  std::unique_ptr<ha::Replica> replica;
  std::unique_ptr<server::Service> service;
  std::unique_ptr<server::DeploymentController> deployments;
  std::unique_ptr<server::NodeGroupController> node_groups;
  std::unique_ptr<server::HttpServer> http;
  std::unique_ptr<server::Backend> backend;  // made (and its peer reached) by Check
  std::string url;
  bool started = false;
  bool stopped = false;

  absl::Status Check();
  absl::Status CheckFront();
  absl::Status StartAll();
  absl::Status StartFront();
  void StartReplica();
};

absl::Status Daemon::Parts::Check() {
  const DaemonOptions& o = options;
  if (absl::Status st = ResolveStore(o, &state_dir, &etcd); !st.ok()) return st;
  if (absl::Status st = CheckFrontFlags(o, etcd.has_value()); !st.ok()) return st;
  if (absl::Status st = server::CheckBackendConfig(o.backend, etcd.has_value()); !st.ok()) {
    return st;
  }
  absl::StatusOr<server::HttpOptions> h = HttpOptionsOf(o);
  if (!h.ok()) return h.status();
  http_options = std::move(*h);
  if (!o.nodes.empty()) {
    absl::StatusOr<std::vector<core::NodeSpec>> nodes = trace::ReadNodeFile(o.nodes);
    if (!nodes.ok()) return nodes.status();
    preload = std::move(*nodes);
  }
  absl::StatusOr<std::optional<server::DeploymentsConfig>> d = ReadDeployments(o);
  if (!d.ok()) return d.status();
  deployments_config = std::move(*d);
  absl::StatusOr<std::optional<server::NodeGroupsConfig>> g = ReadNodeGroups(o);
  if (!g.ok()) return g.status();
  node_groups_config = std::move(*g);
  if (absl::Status st = CheckNodeGroupsBackend(o, node_groups_config); !st.ok()) return st;
  absl::StatusOr<server::ServiceOptions> so = ServiceOptionsOf(o, state_dir);
  if (!so.ok()) return so.status();
  service_options = std::move(*so);
  if (absl::Status st = server::HttpServer::Check(http_options); !st.ok()) return st;
  // Last: the backend reaches its peer (slurmrestd) once everything local is known good.
  absl::StatusOr<std::unique_ptr<server::Backend>> b =
      server::NewBackend(o.backend, etcd.has_value());
  if (!b.ok()) return b.status();
  backend = std::move(*b);
  backend->Configure(service_options, http_options);
  return o.federation.empty() ? absl::OkStatus() : CheckFront();
}

// --federation: the member file read and its tokens checked (the combinations were refused by
// CheckFrontFlags before the backend reached its peer).
absl::Status Daemon::Parts::CheckFront() {
  const DaemonOptions& o = options;
  federation::FrontOptions fo;
  if (o.federation_policy == "cost") {
    fo.policy = federation::PolicyKind::kCost;
  } else if (o.federation_policy == "first-to-admit") {
    fo.policy = federation::PolicyKind::kFirstToAdmit;
  } else if (o.federation_policy == "static-weights") {
    fo.policy = federation::PolicyKind::kStaticWeights;
  } else {
    return absl::InvalidArgumentError(
        "--federation-policy: must be cost, first-to-admit or static-weights");
  }
  absl::StatusOr<federation::FederationConfig> config =
      federation::LoadFederationConfig(o.federation);
  if (!config.ok()) return config.status();
  fo.config = std::move(*config);
  fo.name = o.backend.cluster;
  fo.refresh_s = o.federation_refresh_s;
  // The records go to this server's store, with the batch of the service's loop (done once
  // durable): the same store and the same promise as a pod's.
  auto persist = [this](std::vector<std::pair<std::string, std::string>> puts,
                        std::vector<std::string> deletes, std::function<void(absl::Status)> done) {
    service->RunAsync(
        [puts = std::move(puts),
         deletes = std::move(deletes)](server::Service::Context& c) -> server::Service::Finisher {
          const std::string kind(federation::kRecordKind);
          for (const auto& [key, json] : puts) c.PutObject(kind, key, json);
          for (const std::string& key : deletes) c.DeleteObject(kind, key);
          return [] { return server::Reply{200, "{}"}; };
        },
        [done = std::move(done)](server::Reply r) {
          done(r.status == 200 ? absl::OkStatus()
                               : absl::UnavailableError(absl::StrCat("commit failed (HTTP ",
                                                                     r.status, "): ", r.body)));
        });
  };
  absl::StatusOr<std::unique_ptr<federation::Front>> f =
      federation::Front::Create(std::move(fo), std::move(persist));
  if (!f.ok()) {
    return absl::Status(
        f.status().code(),
        absl::StrCat("--federation ", base::ForTerminal(o.federation), ": ", f.status().message()));
  }
  front = std::move(*f);
  service_options.backend = "federation";
  http_options.front = front.get();
  http_options.blocking_threads = 64;  // each waits on a member's reply
  return absl::OkStatus();
}

// The front's records back from the store, then its member threads.
absl::Status Daemon::Parts::StartFront() {
  std::vector<std::pair<std::string, std::string>> records;
  const server::Reply r =
      service->Run([&records](server::Service::Context& c) -> server::Service::Finisher {
        for (store::ObjectRecord& o :
             c.service.TakeLoadedObjects(std::string(federation::kRecordKind))) {
          records.emplace_back(std::move(o.key), std::move(o.json));
        }
        return [] { return server::Reply{200, "{}"}; };
      });
  if (r.status != 200) return absl::UnavailableError(absl::StrCat("--federation: ", r.body));
  if (absl::Status st = front->Restore(records); !st.ok()) return st;
  front->Start();
  return absl::OkStatus();
}

absl::Status Daemon::Parts::StartAll() {
  // With etcd: a replica that follows until it wins the election (docs/ha.md); the service
  // starts as a follower on the replica's store.
  std::unique_ptr<store::Store> store;
  if (etcd) {
    absl::StatusOr<std::unique_ptr<ha::Replica>> r = ha::Replica::Open(*etcd);
    if (!r.ok()) return r.status();
    replica = std::move(*r);
    store = replica->TakeStore();
    service_options.follower = true;
  }
  absl::StatusOr<std::unique_ptr<server::Service>> s =
      server::Service::Start(service_options, std::move(store));
  if (!s.ok()) return s.status();
  service = std::move(*s);
  if (!preload.empty() && !replica) {
    if (absl::Status st = service->Preload(preload); !st.ok()) return st;
  }
  // Deployments whose replicas the autoscaler sets (deployments.h); GET /v1/deployments.
  if (deployments_config) {
    auto c = server::DeploymentController::Start(*service, std::move(*deployments_config));
    if (!c.ok()) return c.status();
    deployments = std::move(*c);
    http_options.deployments_status = [c = deployments.get()] { return c->StatusJson(); };
  }
  // Node groups the cluster autoscaler grows and shrinks (node_groups.h); GET /v1/node-groups.
  if (node_groups_config) {
    auto c = server::NodeGroupController::Start(*service, std::move(*node_groups_config));
    if (!c.ok()) return c.status();
    node_groups = std::move(*c);
    http_options.node_groups_status = [c = node_groups.get()] { return c->StatusJson(); };
  }
  if (front) {
    if (absl::Status st = StartFront(); !st.ok()) return st;
  }
  absl::StatusOr<std::unique_ptr<server::HttpServer>> h =
      server::HttpServer::Start(*service, http_options);
  if (!h.ok()) return h.status();
  http = std::move(*h);
  // The cluster: Kubernetes' nodes and pods listed and watched, or Slurm's nodes and jobs.
  if (absl::Status st = backend->Start(*service); !st.ok()) return st;
  const std::string& host = http_options.host;
  url = absl::StrCat(http_options.tls_cert.empty() ? "http://" : "https://",
                     host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host, ":",
                     http->port());
  if (replica) StartReplica();
  return absl::OkStatus();
}

// Joins the election. The preloaded nodes are put by whichever replica leads (again on each
// takeover: a put of an unchanged node changes nothing but its revision).
void Daemon::Parts::StartReplica() {
  server::Service* svc = service.get();
  replica->Start(svc, url, [svc, nodes = preload] {
    if (nodes.empty()) return;
    if (absl::Status st = svc->Preload(nodes); !st.ok()) {
      std::fprintf(stderr, "seedance server: %s\n", std::string(st.message()).c_str());
    }
  });
}

std::vector<base::NamedPath> InputFiles(const DaemonOptions& o) {
  return {{"--federation", o.federation},
          {"--nodes", o.nodes},
          {"--deployments", o.deployments},
          {"--node-groups", o.node_groups},
          {"--policy", o.policy},
          {"--token-file", o.token_file},
          {"--tenant-tokens", o.tenant_tokens},
          {"--tls-cert", o.tls_cert},
          {"--tls-key", o.tls_key},
          {"--oracle-pods", o.oracle_pods}};
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions o) {
  auto parts = std::make_unique<Parts>();
  parts->options = std::move(o);
  if (absl::Status st = parts->Check(); !st.ok()) return st;
  return std::unique_ptr<Daemon>(new Daemon(std::move(parts)));
}

absl::Status Daemon::Start() {
  if (parts_->started) return absl::FailedPreconditionError("the daemon was started already");
  parts_->started = true;
  return parts_->StartAll();
}

Daemon::Daemon(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Daemon::~Daemon() { Stop(); }

const std::string& Daemon::url() const { return parts_->url; }

int64_t Daemon::revision() const { return parts_->service ? parts_->service->revision() : 0; }

std::string Daemon::Describe() const {
  const Parts& p = *parts_;
  const server::HttpOptions& h = p.http_options;
  const std::string auth =
      !h.tenant_tokens.empty()
          ? absl::StrCat(h.tenant_tokens.size(), " tenants: every /v1/ call needs a token")
      : h.token.empty() ? "no auth: give --token-file to require a token"
                        : "bearer token required for changes";
  return absl::StrCat("state ", base::ForTerminal(p.etcd ? p.options.store : p.state_dir),
                      ", revision ", revision(), ", ", auth);
}

void Daemon::Stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  if (p.backend) p.backend->Stop();
  if (p.replica) p.replica->Stop();  // a leader revokes its lease: another takes over at once
  if (p.http) p.http->Stop();
  if (p.front) p.front->Stop();
  p.deployments.reset();
  p.node_groups.reset();
  if (p.service) p.service->Shutdown();
}

}  // namespace seedance::daemon
