// `seedance server` (also installed as `seedanced`): the live scheduler as a service (docs/api.md,
// docs/state.md, docs/policy.md). Flags are parsed here; everything else is seedance_server.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "commands.h"
#include "options.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/ha/replica.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/queue.h"
#include "seedance/sched/registry.h"
#include "seedance/server/deployments.h"
#include "seedance/server/http.h"
#include "seedance/server/kube_sync.h"
#include "seedance/server/node_groups.h"
#include "seedance/server/service.h"
#include "seedance/server/slurm_backend.h"
#include "seedance/trace/csv_reader.h"
#include "seedance/trace/node_file.h"

namespace seedance::cli {
namespace {

struct ServerFlags {
  std::string listen = "127.0.0.1:7070";
  std::string state;
  std::string store;  // --store sqlite://DIR | etcd://HOST:PORT[,...]
  std::string etcd_prefix = "/seedance/";
  double lease_ttl_s = 3;
  std::string nodes;
  std::string deployments;  // --deployments FILE (docs/autoscale.md, "Live")
  std::string node_groups;  // --node-groups FILE (docs/cluster-autoscaler.md, "In the service")
  bool elastic = false;     // --elastic: a cluster autoscaler outside Seedance grows the cluster
  std::string policy;
  std::string token_file;
  std::string tenant_tokens;
  std::string tls_cert, tls_key;
  std::string placement = "cas";
  std::string oracle_pods;
  uint64_t seed = 42;
  int64_t max_body = 1 << 20;
  int max_connections = 10000;
  int max_connections_per_client = 2500;
  int max_watches = 4096;
  int max_watches_per_client = 512;
  double rate_limit = 0;
  double assume_timeout_s = 30;
  double aging_s = 0;  // 0: no aging
  std::string ready_file;
  bool quiet = false;
  // The Kubernetes API server the extender's bind writes to.
  KubeFlags kube;
  // --backend slurm (docs/slurm.md).
  std::string backend = "local";
  server::SlurmBackendOptions slurm;
  std::string slurm_requeue = "resubmit";
  bool slurm_probe = false;
};

// --deployments: the file read and checked before anything starts (nullopt without the flag).
absl::StatusOr<std::optional<server::DeploymentsConfig>> ReadDeployments(const ServerFlags& f) {
  if (f.deployments.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = base::ReadInput(f.deployments, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  absl::StatusOr<server::DeploymentsConfig> c =
      server::ParseDeploymentsConfig(*text, f.deployments);
  if (!c.ok()) return c.status();
  return std::optional<server::DeploymentsConfig>(std::move(*c));
}

// The Slurm backend's options, checked before anything starts.
absl::Status CheckBackend(ServerFlags& f, bool replicated) {
  const bool kube = !f.kube.kube_api.empty() || f.kube.kube_in_cluster;
  if (f.backend == "local") {
    if (!f.slurm.rest.url.empty()) {
      return absl::InvalidArgumentError("--slurm-url: only with --backend slurm");
    }
    return absl::OkStatus();
  }
  if (kube) {
    return absl::InvalidArgumentError(
        "--backend slurm: Seedance binds to Slurm; --kube-api / --kube-in-cluster are for the "
        "Kubernetes extender (--backend local)");
  }
  if (f.slurm.rest.url.empty()) {
    return absl::InvalidArgumentError(
        "--backend slurm: --slurm-url http://HOST:PORT of slurmrestd is required");
  }
  if (replicated) {
    return absl::InvalidArgumentError(
        "--backend slurm: not with --store etcd:// yet (replicas would all submit); run one "
        "server with --state");
  }
  f.slurm.resubmit_lost = f.slurm_requeue == "resubmit";
  f.slurm.probe_slurmd = f.slurm_probe;
  return absl::OkStatus();
}

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

absl::StatusOr<server::ServiceOptions> ServiceOptionsOf(const ServerFlags& f) {
  server::ServiceOptions o;
  o.state_dir = f.state;
  o.policy_path = f.policy;
  o.scheduler.default_profile = {"default", f.placement, {}, {}};
  o.scheduler.seed = f.seed;
  o.scheduler.assume_timeout_s = f.assume_timeout_s;
  // cas packs where an autoscaler can add room (docs/cas.md, "Elastic clusters").
  o.scheduler.elastic = f.elastic || !f.node_groups.empty();
  if (f.backend == "slurm") {
    // Placements wait (Assumed) until slurmrestd took the job; the backend binds or forgets.
    o.scheduler.internal_binding = false;
    o.admit = server::SlurmBackend::Admit;
  }
  if (f.aging_s > 0) o.scheduler.queue.less = sched::AgedPriority(f.aging_s);
  // Free room is used at once, not after the backoffs pods ran up while the cluster was full.
  o.scheduler.queue.pop_backoff_when_idle = true;
  if (!f.oracle_pods.empty()) {
    absl::StatusOr<std::vector<core::PodSpec>> pods = trace::ReadPodCsv(f.oracle_pods);
    if (!pods.ok()) return pods.status();
    o.scheduler.oracle_workload = sched::TypicalShapes(sched::CountShapes(*pods), 95.0);
  }
  return o;
}

// --node-groups: the file read and checked before anything starts (nullopt without the flag).
absl::StatusOr<std::optional<server::NodeGroupsConfig>> ReadNodeGroups(const ServerFlags& f) {
  if (f.node_groups.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = base::ReadInput(f.node_groups, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  absl::StatusOr<server::NodeGroupsConfig> c = server::ParseNodeGroupsConfig(*text, f.node_groups);
  if (!c.ok()) return c.status();
  return std::optional<server::NodeGroupsConfig>(std::move(*c));
}

// Where the live cluster autoscaler can run: not under the Kubernetes extender (Kubernetes keeps
// the pods it cannot schedule, they never reach Seedance's queue), and under Slurm only with a
// command provisioner (Slurm's own nodes join through the backend; a simulated one would give
// Seedance nodes Slurm does not have).
absl::Status CheckNodeGroupsBackend(const ServerFlags& f,
                                    const std::optional<server::NodeGroupsConfig>& groups) {
  if (!groups) return absl::OkStatus();
  if (!f.kube.kube_api.empty() || f.kube.kube_in_cluster) {
    return absl::InvalidArgumentError(
        "--node-groups: not with --kube-api / --kube-in-cluster (Kubernetes keeps the pods it "
        "cannot schedule; use its Cluster Autoscaler or Karpenter there)");
  }
  if (f.backend == "slurm" &&
      groups->provisioner == server::NodeGroupsConfig::Provisioner::kSimulated) {
    return absl::InvalidArgumentError(
        "--node-groups: with --backend slurm the provisioner must be kind command (e.g. a resume "
        "program that powers up Slurm's cloud nodes GROUP-K); a simulated node would be one "
        "Slurm does not have");
  }
  return absl::OkStatus();
}

// --ready-file, opened before anything starts (as every output is, docs/cli.md): a FIFO with no
// reader, a device, an input file or an unwritable directory is refused at once.
absl::StatusOr<std::unique_ptr<base::OutputFile>> OpenReadyFile(const ServerFlags& f) {
  if (f.ready_file.empty()) return nullptr;
  if (absl::Status st = base::CheckOutputsDistinct({{"--nodes", f.nodes},
                                                    {"--deployments", f.deployments},
                                                    {"--node-groups", f.node_groups},
                                                    {"--policy", f.policy},
                                                    {"--token-file", f.token_file},
                                                    {"--tenant-tokens", f.tenant_tokens},
                                                    {"--tls-cert", f.tls_cert},
                                                    {"--tls-key", f.tls_key},
                                                    {"--oracle-pods", f.oracle_pods}},
                                                   {{"--ready-file", f.ready_file}});
      !st.ok()) {
    return st;
  }
  return base::OutputFile::Open(f.ready_file);
}

// Where the state is kept: --state DIR, --store sqlite://DIR (the same) or --store etcd://...
// (the replica's options in *etcd). Usage errors name the flags.
absl::Status ResolveStore(ServerFlags& f, std::optional<ha::ReplicaOptions>* etcd) {
  if (!f.state.empty() && !f.store.empty()) {
    return absl::InvalidArgumentError("server: give --state DIR or --store URL, not both");
  }
  if (f.state.empty() && f.store.empty()) {
    return absl::InvalidArgumentError(
        "server: --state DIR or --store URL is required (where state is kept)");
  }
  if (f.store.empty()) return absl::OkStatus();
  if (f.store.rfind("sqlite://", 0) == 0) {
    f.state = f.store.substr(9);
    if (f.state.empty()) {
      return absl::InvalidArgumentError("--store: sqlite://DIR needs a directory");
    }
    return absl::OkStatus();
  }
  if (f.store.rfind("etcd://", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--store: expected sqlite://DIR or etcd://HOST:PORT[,HOST:PORT...], got '",
                     base::ForTerminal(base::Clip(f.store, 100)), "'"));
  }
  ha::ReplicaOptions o;
  o.store.url = f.store;
  o.store.prefix = f.etcd_prefix;
  o.lease_ttl_s = f.lease_ttl_s;
  etcd->emplace(std::move(o));
  return absl::OkStatus();
}

// The replica for --store etcd://... (null without it); the service then starts as a follower
// on the replica's store.
absl::StatusOr<std::unique_ptr<ha::Replica>> OpenReplica(
    const std::optional<ha::ReplicaOptions>& etcd, server::ServiceOptions* so,
    std::unique_ptr<store::Store>* store) {
  if (!etcd) return nullptr;
  absl::StatusOr<std::unique_ptr<ha::Replica>> r = ha::Replica::Open(*etcd);
  if (!r.ok()) return r.status();
  *store = (*r)->TakeStore();
  so->follower = true;
  return r;
}

// Joins the election. --nodes is put by whichever replica leads (again on each takeover: a put
// of an unchanged node changes nothing but its revision).
void StartReplica(ha::Replica& replica, server::Service* svc, const std::string& url,
                  const std::vector<core::NodeSpec>& preload) {
  replica.Start(svc, url, [svc, preload] {
    if (preload.empty()) return;
    if (absl::Status st = svc->Preload(preload); !st.ok()) {
      std::fprintf(stderr, "seedance server: %s\n", std::string(st.message()).c_str());
    }
  });
}

// The HTTP server's options: --listen, tokens, tenants, TLS and limits.
absl::StatusOr<server::HttpOptions> HttpOptionsOf(const ServerFlags& f) {
  server::HttpOptions h;
  if (absl::Status st = ParseListen(f.listen, &h.host, &h.port); !st.ok()) return st;
  if (!f.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadToken(f.token_file);
    if (!token.ok()) return token.status();
    h.token = *token;
  }
  if (!f.tenant_tokens.empty()) {
    absl::StatusOr<std::string> text = base::ReadInput(f.tenant_tokens, base::InputKind::kConfig);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<server::TenantToken>> tenants =
        server::ParseTenantTokens(*text, f.tenant_tokens);
    if (!tenants.ok()) return tenants.status();
    for (const server::TenantToken& t : *tenants) {
      if (t.token == h.token) {
        return absl::InvalidArgumentError(
            absl::StrCat("--tenant-tokens: tenant '", t.tenant, "' has the administrator's token"));
      }
    }
    h.tenant_tokens = std::move(*tenants);
  }
  h.tls_cert = f.tls_cert;
  h.tls_key = f.tls_key;
  h.max_body_bytes = static_cast<size_t>(f.max_body);
  h.max_connections = f.max_connections;
  h.max_connections_per_client = f.max_connections_per_client;
  h.max_watches = f.max_watches;
  h.max_watches_per_client = f.max_watches_per_client;
  h.rate_limit = f.rate_limit;
  return h;
}

int RunServer(ServerFlags f) {
  std::optional<ha::ReplicaOptions> etcd;
  if (absl::Status st = ResolveStore(f, &etcd); !st.ok()) return Fail(st);
  if (absl::Status st = CheckBackend(f, etcd.has_value()); !st.ok()) return Fail(st);
  absl::StatusOr<server::HttpOptions> http_options = HttpOptionsOf(f);
  if (!http_options.ok()) return Fail(http_options.status());
  server::HttpOptions& h = *http_options;
  absl::StatusOr<std::unique_ptr<base::OutputFile>> ready = OpenReadyFile(f);
  if (!ready.ok()) return Fail(ready.status());
  absl::StatusOr<std::optional<k8s::ApiServerOptions>> kube = KubeOptionsOf(f.kube);
  if (!kube.ok()) return Fail(kube.status());
  if (*kube) {
    absl::StatusOr<std::unique_ptr<k8s::ApiServerClient>> c = k8s::NewApiServerClient(**kube);
    if (!c.ok()) return Fail(c.status());
    h.kube_api = std::move(*c);
  }
  std::vector<core::NodeSpec> preload;
  if (!f.nodes.empty()) {
    absl::StatusOr<std::vector<core::NodeSpec>> nodes = trace::ReadNodeFile(f.nodes);
    if (!nodes.ok()) return Fail(nodes.status());
    preload = std::move(*nodes);
  }
  absl::StatusOr<std::optional<server::DeploymentsConfig>> deployments = ReadDeployments(f);
  if (!deployments.ok()) return Fail(deployments.status());
  absl::StatusOr<std::optional<server::NodeGroupsConfig>> node_groups = ReadNodeGroups(f);
  if (!node_groups.ok()) return Fail(node_groups.status());
  if (absl::Status st = CheckNodeGroupsBackend(f, *node_groups); !st.ok()) return Fail(st);
  absl::StatusOr<server::ServiceOptions> so = ServiceOptionsOf(f);
  if (!so.ok()) return Fail(so.status());
  if (absl::Status st = server::HttpServer::Check(h); !st.ok()) return Fail(st);
  if (f.backend == "slurm") {
    if (absl::Status st = server::SlurmBackend::Check(f.slurm); !st.ok()) return Fail(st);
  }

  sigset_t stop_signals = BlockStopSignals();

  // With etcd: a replica that follows until it wins the election (docs/ha.md).
  std::unique_ptr<store::Store> store;
  absl::StatusOr<std::unique_ptr<ha::Replica>> replica = OpenReplica(etcd, &*so, &store);
  if (!replica.ok()) return Fail(replica.status());
  absl::StatusOr<std::unique_ptr<server::Service>> service =
      server::Service::Start(*so, std::move(store));
  if (!service.ok()) return Fail(service.status());
  if (!preload.empty() && !*replica) {
    if (absl::Status st = (*service)->Preload(preload); !st.ok()) return Fail(st);
  }
  // Deployments whose replicas the autoscaler sets (deployments.h); GET /v1/deployments.
  std::unique_ptr<server::DeploymentController> controller;
  if (*deployments) {
    auto c = server::DeploymentController::Start(**service, std::move(**deployments));
    if (!c.ok()) return Fail(c.status());
    controller = std::move(*c);
    h.deployments_status = [c = controller.get()] { return c->StatusJson(); };
  }
  // Node groups the cluster autoscaler grows and shrinks (node_groups.h); GET /v1/node-groups.
  std::unique_ptr<server::NodeGroupController> groups;
  if (*node_groups) {
    auto c = server::NodeGroupController::Start(**service, std::move(**node_groups));
    if (!c.ok()) return Fail(c.status());
    groups = std::move(*c);
    h.node_groups_status = [c = groups.get()] { return c->StatusJson(); };
  }
  absl::StatusOr<std::unique_ptr<server::HttpServer>> http =
      server::HttpServer::Start(**service, h);
  if (!http.ok()) return Fail(http.status());
  // With a Kubernetes API server: its nodes and pods, listed and watched (kube_sync.h).
  std::unique_ptr<server::KubeSync> sync;
  if (*kube) sync = server::KubeSync::Start(**service, **kube);
  std::unique_ptr<server::SlurmBackend> slurm;
  if (f.backend == "slurm") {
    absl::StatusOr<std::unique_ptr<server::SlurmBackend>> b =
        server::SlurmBackend::Start(**service, f.slurm);
    if (!b.ok()) return Fail(b.status());
    slurm = std::move(*b);
  }
  const std::string url =
      absl::StrCat(h.tls_cert.empty() ? "http://" : "https://",
                   h.host.find(':') != std::string::npos ? absl::StrCat("[", h.host, "]") : h.host,
                   ":", (*http)->port());
  if (*replica) StartReplica(**replica, service->get(), url, preload);
  if (*ready) {
    absl::Status st = (*ready)->Write(url + "\n");
    if (st.ok()) st = (*ready)->Commit();
    if (!st.ok()) return Fail(st);
  }
  if (!f.quiet) {
    std::fprintf(stderr, "seedance server: serving %s (state %s, revision %lld, %s)\n", url.c_str(),
                 base::ForTerminal(etcd ? f.store : f.state).c_str(),
                 static_cast<long long>((*service)->revision()),
                 !h.tenant_tokens.empty() ? absl::StrCat(h.tenant_tokens.size(),
                                                         " tenants: every /v1/ call needs a token")
                                                .c_str()
                 : h.token.empty() ? "no auth: give --token-file to require a token"
                                   : "bearer token required for changes");
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  if (!f.quiet) std::fprintf(stderr, "seedance server: signal %d, stopping\n", sig);
  sync.reset();
  slurm.reset();
  if (*replica) (*replica)->Stop();  // a leader revokes its lease: another takes over at once
  (*http)->Stop();
  controller.reset();
  (*service)->Shutdown();
  return kExitOk;
}

void AddSlurmFlags(CLI::App* s, ServerFlags* f) {
  s->add_option("--backend", f->backend,
                "Who runs what Seedance places: local (the ledger; with --kube-api the "
                "extender's binds go to Kubernetes) or slurm (jobs submitted to slurmrestd "
                "pinned to the chosen node and GPUs; docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  const char* group = "Slurm backend (--backend slurm)";
  s->add_option("--slurm-url", f->slurm.rest.url, "slurmrestd, http://HOST:PORT")
      ->type_name("URL")
      ->group(group);
  s->add_option("--slurm-token-file", f->slurm.rest.token_file,
                "File holding the JWT (`scontrol token username=USER lifespan=S > FILE`); read "
                "again when slurmrestd refuses it")
      ->type_name("FILE")
      ->group(group);
  s->add_option("--slurm-user", f->slurm.rest.user, "User the jobs run as (X-SLURM-USER-NAME)")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-api", f->slurm.rest.api_version, "slurmrestd's OpenAPI version")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-partition", f->slurm.partition,
                "Partition the jobs go to; only its nodes are scheduled (default: every node, "
                "the cluster's default partition)")
      ->group(group);
  s->add_option("--slurm-gpu-model", f->slurm.gpu_model,
                "GPU model of nodes without a gpu-<MODEL> feature")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-gpu-type-prefix", f->slurm.rest.gpu_type_prefix,
                "gres.conf's per-GPU Type is PREFIX<index> (g0, g1, ...)")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-workdir", f->slurm.workdir, "Working directory of a job by default")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-output", f->slurm.output,
                "Output file pattern of a job by default (Slurm's %j etc.; default: Slurm's)")
      ->group(group);
  AddDuration(s, "--slurm-node-poll", &f->slurm.node_poll_s, 1, base::Closed(0.05, 3600),
              "How often nodes are listed and each slurmd probed")
      ->group(group);
  AddDuration(s, "--slurm-job-poll", &f->slurm.job_poll_s, 1, base::Closed(0.01, 3600),
              "How often jobs are listed (ended jobs free their GPUs)")
      ->group(group);
  AddInt<int>(s, "--slurm-submitters", &f->slurm.submitters, 1, 256,
              "Submissions to slurmrestd in flight at once")
      ->group(group);
  s->add_option("--slurm-requeue", f->slurm_requeue,
                "A job whose node is lost (NODE_FAIL, slurmd not answering, node down or "
                "drained): resubmit (placed again elsewhere) or fail (the pod ends)")
      ->check(CLI::IsMember({"resubmit", "fail"}))
      ->capture_default_str()
      ->group(group);
  s->add_flag("--slurm-probe-slurmd", f->slurm_probe,
              "Each node poll, connect to every node's slurmd: a lost node shows in ~2 s instead "
              "of after SlurmdTimeout, but slurmd logs two 'Zero Bytes' errors per probe")
      ->group(group);
}

}  // namespace

Command AddServerCommand(CLI::App& app) {
  auto f = std::make_shared<ServerFlags>();
  CLI::App* s = app.add_subcommand(
      "server", "Run the live scheduler: REST API, durable state, metrics, hot-reloaded policy");
  s->footer(
      "The server keeps its state in SQLite under --state (docs/state.md) and answers "
      "only after a\n"
      "change is on disk; after kill -9 it comes back with exactly what it acknowledged. "
      "Nodes and\n"
      "pods are added through the API (docs/api.md) or `seedance apply -f`; --nodes preloads a\n"
      "node file the simulator reads. Metrics for Prometheus are at /metrics.\n\n"
      "Examples:\n"
      "  seedance server --state /var/lib/seedance --nodes openb_node_list_gpu_node.csv\n"
      "  seedance server --listen 0.0.0.0:7070 --state st --token-file /etc/seedance/token "
      "--policy policy.yaml\n"
      "  seedance server --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 --listen "
      "10.0.0.4:7070\n"
      "  (one of several replicas: the leader decides, followers serve reads and redirect "
      "writes; docs/ha.md)\n"
      "  curl -X POST localhost:7070/v1/pods -d '{\"name\":\"p1\",\"cpu_milli\":4000,"
      "\"num_gpu\":1,\"gpu_milli\":500}'\n\n"
      "As a kube-scheduler extender (filter, prioritize, bind, preempt under "
      "/k8s/extender/v1/):\n"
      "  seedance server --state st --kube-in-cluster --placement cas\n"
      "  (deploy/kubernetes/ has the scheduler profile and manifests)\n\n"
      "Exit status: 0 ok (stopped by SIGINT or SIGTERM), 1 I/O or runtime failure, 2 usage or "
      "input error.");
  s->add_option("--listen", f->listen, "HOST:PORT to serve on (0 = any free port)")
      ->capture_default_str();
  s->add_option("--state", f->state, "Directory of the durable state (created if absent)")
      ->type_name("DIR");
  s->add_option("--store", f->store,
                "Where the state is kept instead of --state: sqlite://DIR (= --state DIR) or "
                "etcd://HOST:PORT[,HOST:PORT...] for replicas that elect a leader (docs/ha.md)")
      ->type_name("URL");
  s->add_option("--etcd-prefix", f->etcd_prefix,
                "Key prefix of the state in etcd (starts and ends with '/'); replicas of one "
                "cluster share it")
      ->capture_default_str();
  AddDuration(s, "--lease-ttl", &f->lease_ttl_s, 1, base::Closed(2, 3600),
              "etcd lease of the leader: a follower takes over within about this long after the "
              "leader dies");
  s->add_option("--nodes", f->nodes,
                "Preload nodes from an openb node CSV, a cluster descriptor (.yaml/.json) or "
                "`kubectl get nodes -o json` output")
      ->type_name("FILE");
  s->add_option("--deployments", f->deployments,
                "Deployments whose replica count the container autoscaler (hpa, seed or "
                "predictive) sets from Prometheus queries every period; JSON, schema in "
                "docs/autoscale.md")
      ->type_name("FILE");
  s->add_option("--node-groups", f->node_groups,
                "Node groups the cluster autoscaler grows for unschedulable pods and shrinks by "
                "removing nodes empty for 10 minutes, through a simulated or a command "
                "provisioner; JSON, schema in docs/cluster-autoscaler.md")
      ->type_name("FILE");
  s->add_flag("--elastic", f->elastic,
              "The cluster grows and shrinks under a cluster autoscaler outside Seedance (the "
              "Kubernetes Cluster Autoscaler, Karpenter): cas packs instead of spreading pods "
              "for CPU balance, so nodes empty and can go (implied by --node-groups)");
  s->add_option("--policy", f->policy, "Policy file (docs/policy.md), reloaded when it changes")
      ->type_name("FILE");
  s->add_option("--token-file", f->token_file,
                "File whose first line is the bearer token every mutating call must carry")
      ->type_name("FILE");
  s->add_option("--tenant-tokens", f->tenant_tokens,
                "Tenants' tokens, one 'TOKEN,TENANT,NS[;NS...]' per line: a tenant sees and "
                "changes only its namespaces' pods; every /v1/ call then needs a token "
                "(docs/server.md)")
      ->type_name("FILE");
  s->add_option("--tls-cert", f->tls_cert, "PEM certificate: serve HTTPS")->type_name("FILE");
  s->add_option("--tls-key", f->tls_key, "PEM private key of --tls-cert")->type_name("FILE");
  s->add_option("--placement", f->placement,
                "Placement policy of the default profile when no --policy file says otherwise")
      ->check(CLI::IsMember(sched::Registry::Builtins().Names()))
      ->capture_default_str();
  s->add_option("--oracle-pods", f->oracle_pods,
                "Pod CSV whose typical shapes fgd is given as its target workload")
      ->type_name("FILE");
  AddInt<uint64_t>(s, "--seed", &f->seed, 0, UINT64_MAX, "Seed of the policies' tie-breaks");
  AddInt<int64_t>(s, "--max-body", &f->max_body, 1024, int64_t{64} << 20,
                  "Largest request body in bytes (413 beyond)");
  AddInt<int>(s, "--max-connections", &f->max_connections, 4, 1000000,
              "Open connections in all (an idle one costs a socket, not a thread); one more gets "
              "503 and is closed. Capped by the process's file limit");
  AddInt<int>(s, "--max-connections-per-client", &f->max_connections_per_client, 1, 1000000,
              "Open connections from one client address (503 beyond)");
  AddInt<int>(s, "--max-watches", &f->max_watches, 1, 1000000,
              "Open GET /v1/watch streams and long polls in all (429 beyond)");
  AddInt<int>(s, "--max-watches-per-client", &f->max_watches_per_client, 1, 1000000,
              "Open watch streams from one client address (429 beyond)");
  AddDouble(s, "--rate-limit", &f->rate_limit, base::NonNegative(1e9),
            "Requests per second over all clients (429 beyond); 0 = unlimited");
  AddDuration(s, "--assume-timeout", &f->assume_timeout_s, 1, base::Closed(1, 86400),
              "How long an external binder has to confirm a placement");
  AddDuration(s, "--aging", &f->aging_s, 1, base::Closed(0, 366 * 86400.0),
              "Queue aging: each DURATION a pending pod has waited counts as one priority level "
              "in the queue order (docs/tenancy.md, \"Aging\"); 0 = off");
  s->add_option("--ready-file", f->ready_file,
                "Write the server's URL to FILE once it accepts requests")
      ->type_name("FILE");
  AddKubeFlags(s, &f->kube,
               "Kubernetes API server: its nodes and pods are listed and watched, and the "
               "extender's bind writes to it (annotation, then Binding), e.g. "
               "https://10.0.0.1:6443 (docs/kubernetes.md)");
  AddSlurmFlags(s, f.get());
  s->add_flag("-q,--quiet", f->quiet, "No start-up and shutdown lines on stderr");
  return {s, [f] { return RunServer(*f); }};
}

}  // namespace seedance::cli
