// `seedance server`'s REST API v1 over cpp-httplib (docs/api.md): routes to Service operations,
// bearer-token auth for mutating calls, limits on body size, header size, connections and request
// rate, and /metrics, /healthz, /readyz on the same port.
//
// Thread-safety: Start/Stop from one thread; requests are served on the server's thread pool.
#ifndef SEEDANCE_SERVER_HTTP_H_
#define SEEDANCE_SERVER_HTTP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/server/auth.h"
#include "seedance/server/service.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

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
  // Connections served at once (each holds one worker thread while open); more wait in the
  // kernel's accept backlog.
  int max_connections = 128;
  // Requests per second accepted over all clients (token bucket, burst = one second's worth);
  // beyond it 429. 0: unlimited.
  double rate_limit = 0;
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
  void Stop();

 private:
  HttpServer(Service& service, HttpOptions options);
  void Routes();
  void SendToLeader(const httplib::Request& req, httplib::Response& res);

  Service& service_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  std::atomic<bool> listener_done_{false};  // listen_after_bind returned
  int port_ = 0;
  struct Limiter;
  std::unique_ptr<Limiter> limiter_;
  Authenticator auth_;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_HTTP_H_
