// The live scheduler assembled (`seedance server`, docs/api.md, docs/state.md, docs/ha.md): the
// service on its store, the deployment and node-group controllers, the HTTP front end, the
// backend (local, Kubernetes or Slurm: server/backend.h) and the etcd replica, started from one
// typed configuration.
// The command line only fills DaemonOptions from its flags, calls Daemon::Start, prints and waits
// for a stop signal (issue 36: a thin command line).
//
// Create checks and reads everything it can before anything starts (the listen address, the TLS
// pair, the token and tenant files, the node, deployment and node-group files, the backend's
// combinations, slurmrestd's reachability), so that a refused start leaves no state behind; Start
// then opens the state and starts the components. Errors name the flag (`--listen: ...`, `--backend
// slurm: ...`): InvalidArgument for a bad option or input (exit 2), other codes for I/O and runtime
// failures (exit 1).
//
// Thread-safety: Create, Start and Stop from one thread; url(), revision() and Describe() from
// any thread once Start returned. A caller that waits for SIGINT/SIGTERM blocks them between
// Create and Start (every thread the daemon starts inherits the mask; the checks stay
// interruptible).
#ifndef SEEDANCE_DAEMON_DAEMON_H_
#define SEEDANCE_DAEMON_DAEMON_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/base/io.h"
#include "seedance/server/backend.h"

namespace seedance::daemon {

// One field per flag of `seedance server` (docs/cli.md has the meaning and default of each).
// File fields hold paths; Start reads them.
struct DaemonOptions {
  std::string listen = "127.0.0.1:7070";  // HOST:PORT, [V6]:PORT; port 0 = any free port
  std::string state;                      // --state DIR
  std::string store;                      // --store sqlite://DIR | etcd://HOST:PORT[,...]
  std::string etcd_prefix = "/seedance/";
  double lease_ttl_s = 3;
  std::string nodes;        // preloaded (by the leader, with etcd)
  std::string deployments;  // docs/autoscale.md, "Live"
  std::string node_groups;  // docs/cluster-autoscaler.md, "In the service"
  bool elastic = false;     // a cluster autoscaler outside Seedance grows the cluster
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
  double experiment_event_rate = 20000;  // events/s per experiment (docs/experiments.md)
  double assume_timeout_s = 30;
  double aging_s = 0;  // 0: no aging
  // Who runs what Seedance places (--backend, --cluster, the Kubernetes API server of
  // --kube-api / --kube-in-cluster, the Slurm flags): server/backend.h.
  server::BackendConfig backend;
  // A federation front (docs/federation.md) over the member servers of this file instead of a
  // cluster of its own; the policy that places pods across them.
  std::string federation;
  std::string federation_policy = "cost";  // cost | first-to-admit | static-weights
  double federation_refresh_s = 1;         // GET /v1/cluster period per member
};

// The input files `o` names, for base::CheckOutputsDistinct: an output of the caller's
// (--ready-file) must be none of them.
std::vector<base::NamedPath> InputFiles(const DaemonOptions& o);

class Daemon {
 public:
  // Checks `o` and reads the files it names; starts nothing.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(DaemonOptions o);
  // Opens the state and starts every component the options ask for (once). On a failure, what
  // started is stopped by Stop or the destructor.
  absl::Status Start();
  // Stop().
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // The URL it serves, http(s)://HOST:PORT with the port bound (an IPv6 host in brackets); empty
  // before Start.
  const std::string& url() const;
  // The state's revision now.
  int64_t revision() const;
  // One line for the start-up banner: where the state is, its revision and how calls are
  // authorised ("state st, revision 4, bearer token required for changes").
  std::string Describe() const;
  // Stops the backend, leaves the election (a leader revokes its
  // lease: another replica takes over at once), stops the HTTP server (requests in flight
  // finish), the controllers and the service. Idempotent.
  void Stop();

  struct Parts;  // daemon.cc

 private:
  explicit Daemon(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace seedance::daemon

#endif  // SEEDANCE_DAEMON_DAEMON_H_
