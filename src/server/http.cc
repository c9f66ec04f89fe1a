#include "seedance/server/http.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "routes.h"
#include "seedance/api/api.h"
#include "seedance/base/text.h"

namespace seedance::server {

namespace {

// A fixed pool of workers; enqueue blocks while every worker is busy and `backlog` connections
// already wait, so that the accept loop stops accepting and further clients wait in the kernel's
// backlog instead of holding descriptors here.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(int workers, int backlog) : backlog_(static_cast<size_t>(backlog)) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~BoundedPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [&] { return stop_ || jobs_.size() < backlog_; });
    if (stop_) return;
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void Work() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      room_.notify_one();
      fn();
    }
  }

  const size_t backlog_;
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

bool IsMutating(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

// Routes only the administrator may call: nodes, the policy and the watch stream (which carries
// every tenant's objects).
bool AdminOnlyPath(const std::string& path) {
  for (std::string_view prefix : {"/v1/nodes", "/v1/policy", "/v1/watch"}) {
    if (path.rfind(prefix, 0) == 0 &&
        (path.size() == prefix.size() || path[prefix.size()] == '/' ||
         path[prefix.size()] == '?')) {
      return true;
    }
  }
  return false;
}

}  // namespace

struct HttpServer::Limiter {
  explicit Limiter(double rate) : rate(rate), tokens(rate) {}
  bool Take() {
    if (rate <= 0) return true;
    std::lock_guard<std::mutex> lock(mu);
    const auto now = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    tokens = std::min(rate, tokens + dt * rate);
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  }
  const double rate;
  double tokens;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  std::mutex mu;
};

HttpServer::HttpServer(Service& service, HttpOptions options)
    : service_(service),
      options_(std::move(options)),
      limiter_(std::make_unique<Limiter>(options_.rate_limit)),
      auth_(options_.token, options_.tenant_tokens) {}

HttpServer::~HttpServer() { Stop(); }

namespace {

// The HTTP or HTTPS server the options ask for; InvalidArgument for a bad TLS pair.
absl::StatusOr<std::unique_ptr<httplib::Server>> MakeServer(const HttpOptions& o) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (o.tls_cert.empty()) return std::make_unique<httplib::Server>();
  auto tls = std::make_unique<httplib::SSLServer>(o.tls_cert.c_str(), o.tls_key.c_str());
  if (!tls->is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-cert ", base::ForTerminal(o.tls_cert),
                                                   " / --tls-key ", base::ForTerminal(o.tls_key),
                                                   ": not a readable PEM certificate and key"));
  }
  return tls;
}

// Binds the listening socket; the port (the chosen one when o.port is 0). httplib (0.11, as a
// shared library) listens with a backlog of 5: 32 clients connecting at once overflowed the
// accept queue (TcpExtListenOverflows) and some saw their first request fail with the connection
// closed. The socket-options hook hands over the descriptor, and listen() again raises the
// backlog to the system's maximum.
absl::StatusOr<int> Bind(httplib::Server& h, const HttpOptions& o, int* fd_out = nullptr) {
  auto fd = std::make_shared<int>(-1);
  h.set_socket_options([fd](socket_t sock) {
    httplib::default_socket_options(sock);
    *fd = sock;
  });
  int port = o.port;
  if (o.port == 0) {
    port = h.bind_to_any_port(o.host);
    if (port < 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", base::ForTerminal(o.host)));
    }
  } else if (!h.bind_to_port(o.host, o.port)) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", base::ForTerminal(o.host), ":",
                                               o.port,
                                               " (in use, or not an address of this host)"));
  }
  if (fd_out) *fd_out = *fd;
  if (*fd >= 0 && ::listen(*fd, SOMAXCONN) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", base::ForTerminal(o.host), ":",
                                               port, ": ", std::strerror(errno)));
  }
  return port;
}

}  // namespace

absl::Status HttpServer::Check(const HttpOptions& options) {
  absl::StatusOr<std::unique_ptr<httplib::Server>> h = MakeServer(options);
  if (!h.ok()) return h.status();
  // httplib closes a listening socket only in stop(), which does nothing when it never served:
  // the probe socket is closed here, or it would stay bound beside the real one (SO_REUSEPORT)
  // and take a share of the connections to a fixed --listen port that nobody accepts.
  int fd = -1;
  absl::StatusOr<int> port = Bind(**h, options, &fd);
  if (fd >= 0) ::close(fd);
  return port.status();
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(Service& service,
                                                              HttpOptions options) {
  std::unique_ptr<HttpServer> s(new HttpServer(service, std::move(options)));
  const HttpOptions& o = s->options_;
  absl::StatusOr<std::unique_ptr<httplib::Server>> made = MakeServer(o);
  if (!made.ok()) return made.status();
  s->http_ = std::move(*made);
  httplib::Server& h = *s->http_;
  const int workers = std::max(4, o.max_connections);
  h.new_task_queue = [workers] { return new BoundedPool(workers, workers); };
  h.set_payload_max_length(o.max_body_bytes);
  h.set_tcp_nodelay(true);  // replies are small: no Nagle delay against the client's delayed ACK
  h.set_keep_alive_max_count(1u << 30);
  h.set_keep_alive_timeout(o.keep_alive_timeout_s);
  h.set_read_timeout(o.read_timeout_s, 0);
  h.set_write_timeout(o.read_timeout_s, 0);
  s->Routes();
  absl::StatusOr<int> port = Bind(h, o);
  if (!port.ok()) return port.status();
  s->port_ = *port;
  s->listener_ = std::thread([p = s.get()] {
    p->http_->listen_after_bind();
    p->listener_done_ = true;
  });
  // httplib's stop() does nothing until the listener thread has marked itself running, so a
  // Stop() right after Start() (a --ready-file that cannot be written) would leave that thread
  // in accept() for ever. Return only once it runs (or has already given up).
  while (!s->http_->is_running() && !s->listener_done_) std::this_thread::yield();
  return s;
}

void HttpServer::Wait() {
  if (listener_.joinable()) listener_.join();
}

void HttpServer::Stop() {
  if (http_) http_->stop();
  if (listener_.joinable()) listener_.join();
}

// A write to a follower (docs/ha.md): 307 to the leader's URL when one is known (the method and
// body are to be repeated there), else 503; the body is the API's error either way.
void HttpServer::SendToLeader(const httplib::Request& req, httplib::Response& res) {
  const LeaderInfo who = service_.leader_info();
  if (!who.leader_url.empty() && who.leader_url != who.self_url) {
    res.status = 307;
    res.set_header("Location", who.leader_url + req.target);
    res.set_content(api::ErrorBody(absl::UnavailableError(
                        absl::StrCat("this replica is a follower: send writes to the leader, ",
                                     who.leader_url, " (", who.leader_id, ")"))),
                    "application/json");
    return;
  }
  res.status = 503;
  res.set_header("Retry-After", "1");
  res.set_content(api::ErrorBody(absl::UnavailableError(
                      "this replica is not the leader and no leader is known yet (an election "
                      "is under way); retry, or ask GET /v1/leader")),
                  "application/json");
}

void HttpServer::Routes() {
  httplib::Server& h = *http_;
  Metrics& metrics = service_.metrics();
  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!limiter_->Take()) {
      Reply r = ErrorReply(absl::ResourceExhaustedError(
          absl::StrCat("request rate over --rate-limit ", options_.rate_limit, "/s; retry")));
      res.status = 429;
      res.set_header("Retry-After", "1");
      // Answered before the body is read: the connection cannot carry another request.
      res.set_header("Connection", "close");
      res.set_content(r.body, "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }
    const Caller caller = auth_.Identify(req.get_header_value("Authorization"));
    const bool api = req.path.rfind("/v1/", 0) == 0;
    if (caller.kind == Caller::kAnonymous && !auth_.open() &&
        (IsMutating(req.method) || (auth_.has_tenants() && api))) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"seedance\"");
      res.set_header("Connection", "close");
      res.set_content(api::ErrorBody(absl::UnauthenticatedError(
                          auth_.has_tenants()
                              ? "this server has tenants: every /v1/ call needs "
                                "\"Authorization: Bearer TOKEN\" (a tenant's or the "
                                "administrator's)"
                              : "this call needs \"Authorization: Bearer TOKEN\" (the server's "
                                "--token-file)")),
                      "application/json");
      service_.metrics().CountRequest("unauthenticated", 401);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (caller.tenant_caller() && AdminOnlyPath(req.path)) {
      res.status = 403;
      res.set_header("Connection", "close");
      res.set_content(api::ErrorBody(absl::PermissionDeniedError(absl::StrCat(
                          "tenant '", caller.tenant,
                          "' may not use ", base::Clip(req.path, 100),
                          ": nodes, the policy and the watch stream are the administrator's"))),
                      "application/json");
      service_.metrics().CountRequest("forbidden", 403);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (IsMutating(req.method) && !service_.leading()) {
      SendToLeader(req, res);
      service_.metrics().CountRequest("not_leader", res.status);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  h.set_error_handler([&metrics](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    absl::Status st =
        res.status == 413 ? absl::ResourceExhaustedError("request body over the --max-body limit")
        : res.status == 404
            ? absl::NotFoundError(
                  absl::StrCat("no route ", req.method, " ", base::Clip(req.path, 200)))
            : absl::InvalidArgumentError(absl::StrCat("HTTP ", res.status, " for ", req.method));
    res.set_content(api::ErrorBody(st), "application/json");
    metrics.CountRequest(res.status == 404 ? "unknown" : "error", res.status);
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content(api::ErrorBody(absl::InternalError("internal error")), "application/json");
  });
  RegisterRoutes(h, service_, options_, auth_);
  RegisterExtenderRoutes(h, service_, options_.kube_api);
}

}  // namespace seedance::server
