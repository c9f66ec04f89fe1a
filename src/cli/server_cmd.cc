// `seedance server` (also installed as `seedanced`): the live scheduler as a service (docs/api.md,
// docs/state.md, docs/policy.md). Flags are parsed here into daemon::DaemonOptions; the daemon
// library checks them and assembles the components (seedance/daemon/daemon.h).
#include <signal.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "options.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/daemon/daemon.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/sched/registry.h"

namespace seedance::cli {
namespace {

// The flags: the daemon's options, and what only the command line has.
struct ServerFlags {
  daemon::DaemonOptions o;
  KubeFlags kube;                 // the Kubernetes API server the extender's bind writes to
  std::string backend = "local";  // --backend local|kubernetes|slurm (server/backend.h)
  std::string slurm_requeue = "resubmit";
  std::string ready_file;
  bool quiet = false;
};

// --ready-file, opened before anything starts (as every output is, docs/cli.md): a FIFO with no
// reader, a device, an input file or an unwritable directory is refused at once.
absl::StatusOr<std::unique_ptr<base::OutputFile>> OpenReadyFile(const ServerFlags& f) {
  if (f.ready_file.empty()) return nullptr;
  if (absl::Status st =
          base::CheckOutputsDistinct(daemon::InputFiles(f.o), {{"--ready-file", f.ready_file}});
      !st.ok()) {
    return st;
  }
  return base::OutputFile::Open(f.ready_file);
}

int RunServer(ServerFlags f) {
  absl::StatusOr<std::optional<k8s::ApiServerOptions>> kube = KubeOptionsOf(f.kube);
  if (!kube.ok()) return Fail(kube.status());
  absl::StatusOr<server::BackendKind> kind = server::ParseBackendKind(f.backend, "--backend");
  if (!kind.ok()) return Fail(kind.status());
  f.o.backend.kind = *kind;
  // --kube-api (or --kube-in-cluster) alone means the Kubernetes backend, as before --backend
  // kubernetes existed.
  if (*kube && f.o.backend.kind == server::BackendKind::kLocal) {
    f.o.backend.kind = server::BackendKind::kKubernetes;
  }
  f.o.backend.kube = std::move(*kube);
  f.o.backend.slurm.resubmit_lost = f.slurm_requeue == "resubmit";
  absl::StatusOr<std::unique_ptr<base::OutputFile>> ready = OpenReadyFile(f);
  if (!ready.ok()) return Fail(ready.status());
  absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Create(std::move(f.o));
  if (!d.ok()) return Fail(d.status());
  sigset_t stop_signals = BlockStopSignals();
  if (absl::Status st = (*d)->Start(); !st.ok()) return Fail(st);
  if (*ready) {
    absl::Status st = (*ready)->Write((*d)->url() + "\n");
    if (st.ok()) st = (*ready)->Commit();
    if (!st.ok()) return Fail(st);
  }
  if (!f.quiet) {
    std::fprintf(stderr, "seedance server: serving %s (%s)\n", (*d)->url().c_str(),
                 (*d)->Describe().c_str());
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  if (!f.quiet) std::fprintf(stderr, "seedance server: signal %d, stopping\n", sig);
  (*d)->Stop();
  return kExitOk;
}

void AddSlurmFlags(CLI::App* s, ServerFlags* f) {
  s->add_option("--backend", f->backend,
                "Who runs what Seedance places: local (the ledger binds), kubernetes (nodes and "
                "pods watched on --kube-api, the extender's binds go there; implied by "
                "--kube-api) or slurm (jobs submitted to slurmrestd pinned to the chosen node "
                "and GPUs; docs/slurm.md)")
      ->check(CLI::IsMember({"local", "kubernetes", "slurm"}))
      ->capture_default_str();
  s->add_option("--cluster", f->o.backend.cluster,
                "This cluster's name (a DNS label): GET /v1/cluster reports it, and a federation "
                "front names its member by it (docs/federation.md)")
      ->capture_default_str();
  const char* group = "Slurm backend (--backend slurm)";
  s->add_option("--slurm-url", f->o.backend.slurm.rest.url, "slurmrestd, http://HOST:PORT")
      ->type_name("URL")
      ->group(group);
  s->add_option("--slurm-token-file", f->o.backend.slurm.rest.token_file,
                "File holding the JWT (`scontrol token username=USER lifespan=S > FILE`); read "
                "again when slurmrestd refuses it")
      ->type_name("FILE")
      ->group(group);
  s->add_option("--slurm-user", f->o.backend.slurm.rest.user,
                "User the jobs run as (X-SLURM-USER-NAME)")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-api", f->o.backend.slurm.rest.api_version, "slurmrestd's OpenAPI version")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-partition", f->o.backend.slurm.partition,
                "Partition the jobs go to; only its nodes are scheduled (default: every node, "
                "the cluster's default partition)")
      ->group(group);
  s->add_option("--slurm-gpu-model", f->o.backend.slurm.gpu_model,
                "GPU model of nodes without a gpu-<MODEL> feature")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-gpu-type-prefix", f->o.backend.slurm.rest.gpu_type_prefix,
                "gres.conf's per-GPU Type is PREFIX<index> (g0, g1, ...)")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-workdir", f->o.backend.slurm.workdir,
                "Working directory of a job by default")
      ->capture_default_str()
      ->group(group);
  s->add_option("--slurm-output", f->o.backend.slurm.output,
                "Output file pattern of a job by default (Slurm's %j etc.; default: Slurm's)")
      ->group(group);
  AddDuration(s, "--slurm-node-poll", &f->o.backend.slurm.node_poll_s, 1, base::Closed(0.05, 3600),
              "How often nodes are listed and each slurmd probed")
      ->group(group);
  AddDuration(s, "--slurm-job-poll", &f->o.backend.slurm.job_poll_s, 1, base::Closed(0.01, 3600),
              "How often jobs are listed (ended jobs free their GPUs)")
      ->group(group);
  AddInt<int>(s, "--slurm-submitters", &f->o.backend.slurm.submitters, 1, 256,
              "Submissions to slurmrestd in flight at once")
      ->group(group);
  s->add_option("--slurm-requeue", f->slurm_requeue,
                "A job whose node is lost (NODE_FAIL, slurmd not answering, node down or "
                "drained): resubmit (placed again elsewhere) or fail (the pod ends)")
      ->check(CLI::IsMember({"resubmit", "fail"}))
      ->capture_default_str()
      ->group(group);
  s->add_flag("--slurm-probe-slurmd", f->o.backend.slurm.probe_slurmd,
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
  s->add_option("--listen", f->o.listen, "HOST:PORT to serve on (0 = any free port)")
      ->capture_default_str();
  s->add_option("--state", f->o.state, "Directory of the durable state (created if absent)")
      ->type_name("DIR");
  s->add_option("--store", f->o.store,
                "Where the state is kept instead of --state: sqlite://DIR (= --state DIR) or "
                "etcd://HOST:PORT[,HOST:PORT...] for replicas that elect a leader (docs/ha.md)")
      ->type_name("URL");
  s->add_option("--etcd-prefix", f->o.etcd_prefix,
                "Key prefix of the state in etcd (starts and ends with '/'); replicas of one "
                "cluster share it")
      ->capture_default_str();
  AddDuration(s, "--lease-ttl", &f->o.lease_ttl_s, 1, base::Closed(2, 3600),
              "etcd lease of the leader: a follower takes over within about this long after the "
              "leader dies");
  s->add_option("--nodes", f->o.nodes,
                "Preload nodes from an openb node CSV, a cluster descriptor (.yaml/.json) or "
                "`kubectl get nodes -o json` output")
      ->type_name("FILE");
  s->add_option("--deployments", f->o.deployments,
                "Deployments whose replica count the container autoscaler (hpa, seed or "
                "predictive) sets from Prometheus queries every period; JSON, schema in "
                "docs/autoscale.md")
      ->type_name("FILE");
  s->add_option("--node-groups", f->o.node_groups,
                "Node groups the cluster autoscaler grows for unschedulable pods and shrinks by "
                "removing nodes empty for 10 minutes, through a simulated or a command "
                "provisioner; JSON, schema in docs/cluster-autoscaler.md")
      ->type_name("FILE");
  s->add_flag("--elastic", f->o.elastic,
              "The cluster grows and shrinks under a cluster autoscaler outside Seedance (the "
              "Kubernetes Cluster Autoscaler, Karpenter): cas packs instead of spreading pods "
              "for CPU balance, so nodes empty and can go (implied by --node-groups)");
  s->add_option("--federation", f->o.federation,
                "Serve as a federation front over the member servers of this YAML file "
                "(docs/federation.md): pods go to the member where they cost least; the replies "
                "name the member (\"cluster\")")
      ->type_name("FILE");
  s->add_option("--federation-policy", f->o.federation_policy,
                "How a front picks a member: cost (the lowest expected cost), first-to-admit "
                "(the first in file order that fits, like MultiKueue) or static-weights (the "
                "members' weights, like Karmada)")
      ->check(CLI::IsMember({"cost", "first-to-admit", "static-weights"}))
      ->capture_default_str();
  AddDuration(s, "--federation-refresh", &f->o.federation_refresh_s, 1, base::Closed(0.01, 3600),
              "How often a front asks each member for its free capacity (GET /v1/cluster; "
              "also its health check)");
  s->add_option("--policy", f->o.policy, "Policy file (docs/policy.md), reloaded when it changes")
      ->type_name("FILE");
  s->add_option("--token-file", f->o.token_file,
                "File whose first line is the bearer token every mutating call must carry")
      ->type_name("FILE");
  s->add_option("--tenant-tokens", f->o.tenant_tokens,
                "Tenants' tokens, one 'TOKEN,TENANT,NS[;NS...]' per line: a tenant sees and "
                "changes only its namespaces' pods; every /v1/ call then needs a token "
                "(docs/server.md)")
      ->type_name("FILE");
  s->add_option("--tls-cert", f->o.tls_cert, "PEM certificate: serve HTTPS")->type_name("FILE");
  s->add_option("--tls-key", f->o.tls_key, "PEM private key of --tls-cert")->type_name("FILE");
  s->add_option("--placement", f->o.placement,
                "Placement policy of the default profile when no --policy file says otherwise")
      ->check(CLI::IsMember(sched::Registry::Builtins().Names()))
      ->capture_default_str();
  s->add_option("--oracle-pods", f->o.oracle_pods,
                "Pod CSV whose typical shapes fgd is given as its target workload")
      ->type_name("FILE");
  AddInt<uint64_t>(s, "--seed", &f->o.seed, 0, UINT64_MAX, "Seed of the policies' tie-breaks");
  AddInt<int64_t>(s, "--max-body", &f->o.max_body, 1024, int64_t{64} << 20,
                  "Largest request body in bytes (413 beyond)");
  AddInt<int>(s, "--max-connections", &f->o.max_connections, 4, 1000000,
              "Open connections in all (an idle one costs a socket, not a thread); one more gets "
              "503 and is closed. Capped by the process's file limit");
  AddInt<int>(s, "--max-connections-per-client", &f->o.max_connections_per_client, 1, 1000000,
              "Open connections from one client address (503 beyond)");
  AddInt<int>(s, "--max-watches", &f->o.max_watches, 1, 1000000,
              "Open GET /v1/watch streams and long polls in all (429 beyond)");
  AddInt<int>(s, "--max-watches-per-client", &f->o.max_watches_per_client, 1, 1000000,
              "Open watch streams from one client address (429 beyond)");
  AddDouble(s, "--rate-limit", &f->o.rate_limit, base::NonNegative(1e9),
            "Requests per second over all clients (429 beyond); 0 = unlimited");
  AddDouble(s, "--experiment-event-rate", &f->o.experiment_event_rate, base::NonNegative(1e9),
            "Events per second one experiment takes (burst 2 s; 429 beyond); 0 = unlimited");
  AddDuration(s, "--assume-timeout", &f->o.assume_timeout_s, 1, base::Closed(1, 86400),
              "How long an external binder has to confirm a placement");
  AddDuration(s, "--aging", &f->o.aging_s, 1, base::Closed(0, 366 * 86400.0),
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
