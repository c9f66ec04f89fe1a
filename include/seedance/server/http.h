// `seedance server`'s REST API v1 on an event loop (Boost.Beast over Asio, docs/api.md and
// docs/server.md): routes to Service operations, one authorization level declared per route,
// limits on body and header size, per-phase deadlines, connections and watch streams capped per
// client and in total, a request rate limit, and /metrics, /healthz, /readyz on the same port.
// An idle or slow client holds a socket, never a thread: the I/O threads only parse, check and
// write; Service's loop thread decides.
//
// Thread-safety: Start/Stop/Wait from any thread (Stop once the server is no longer needed;
// Wait returns once Stop has run).
#ifndef SEEDANCE_SERVER_HTTP_H_
#define SEEDANCE_SERVER_HTTP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <condition_variable>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/server/auth.h"
#include "seedance/server/service.h"

namespace seedance::federation {
class Front;
}

namespace seedance::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 7070;  // 0: any free port (port() tells which)
  // Required on every mutating call when non-empty ("Authorization: Bearer TOKEN").
  std::string token;
  // Tenants' tokens (--tenant-tokens, seedance/server/auth.h). When any are given, every /v1/
  // call needs a token, reads included.
  std::vector<TenantToken> tenant_tokens;
  std::string tls_cert, tls_key;  // both or neither
  size_t max_body_bytes = 1 << 20;
  // Open connections, in all and from one client address; one over either gets a 503 and is
  // closed. Capped at the process's file limit (raised to its hard maximum at Start).
  int max_connections = 10000;
  int max_connections_per_client = 2500;
  // Open watch streams (and long polls), in all and from one client address; beyond: 429.
  int max_watches = 4096;
  int max_watches_per_client = 512;
  // Threads that parse and write (the scheduling runs on Service's own loop thread).
  int io_threads = 2;
  // Requests per second accepted over all clients (token bucket, burst = one second's worth);
  // beyond it 429. 0: unlimited.
  double rate_limit = 0;
  // An idle keep-alive connection is closed after keep_alive_timeout_s; a request's header and
  // then its body must each arrive within read_timeout_s, and each write complete within it.
  int keep_alive_timeout_s = 5;
  int read_timeout_s = 10;
  // Longest a watch request is held open (server-sent events stream, or a long poll).
  double max_watch_s = 300;
  // The Kubernetes API server the extender's bind writes to (null: bind is refused).
  std::shared_ptr<k8s::ApiServerClient> kube_api;
  // GET /v1/deployments' body (DeploymentController::StatusJson); unset: an empty list.
  std::function<std::string()> deployments_status;
  // GET /v1/node-groups' body (NodeGroupController::StatusJson); unset: no groups.
  std::function<std::string()> node_groups_status;
  // Experiments (docs/experiments.md): events accepted per second per experiment (token
  // bucket, burst two seconds' worth; beyond it 429; 0: unlimited) and per request.
  double experiment_event_rate = 20000;
  size_t max_experiment_events = 1000;
  // A federation front (federation/front.h, docs/federation.md): set, the pod routes, GET
  // /v1/cluster and GET /v1/federation/members are the front's, and the routes of one cluster
  // (nodes, queues, watch, policy, experiments, the extender) are not served.
  federation::Front* front = nullptr;
  // Threads of the routes that wait on other servers (the extender's bind, a front's calls to
  // its members).
  int blocking_threads = 4;
};

class HttpServer {
 public:
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(Service& service, HttpOptions options);
  // What Start would refuse (the TLS pair, the listen address), checked without a service: the
  // CLI calls it before opening the state, so that a refused start leaves nothing behind.
  static absl::Status Check(const HttpOptions& options);
  ~HttpServer();
  int port() const { return port_; }
  // Blocks until Stop (from another thread or a signal handler's thread).
  void Wait();
  // Stops accepting, lets the requests already handed to the service finish (at most 30 s),
  // then closes every connection. Idempotent.
  void Stop();

  struct Core;  // shared by the connections (http.cc)

 private:
  HttpServer();

  std::shared_ptr<Core> core_;
  std::vector<std::thread> threads_;
  int port_ = 0;
  base::Mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_HTTP_H_
