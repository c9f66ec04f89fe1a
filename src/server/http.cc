// The API's HTTP/1.1 front end on Boost.Beast and Asio (docs/server.md, "The HTTP front end").
//
// Why Beast: it is Debian's Boost (already a dependency of the engine library), its parser is
// strict where RFC 9112 asks (conflicting Content-Length values, Content-Length with chunked,
// bad line endings and chunk sizes are errors) and it leaves every buffer and deadline to the
// caller, so that an idle or dripping client costs a socket and a few kilobytes, never a thread.
//
// A connection reads one request at a time (pipelined requests wait in its buffer, so they are
// answered in order), checks who calls before the body is read, hands the request to its route
// and writes the reply the route hands back from whatever thread finished it. Deadlines: the
// keep-alive wait, the header and the body each have their own; a slow reader has a write
// deadline. Watch streams are written by the connection when Service publishes.
#include "seedance/server/http.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "http_core.h"
#include "routes.h"
#include "seedance/api/api.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"
#include "seedance/base/thread_name.h"

namespace seedance::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// The part of a connection the server reaches without knowing its stream type.
class ConnectionBase {
 public:
  virtual ~ConnectionBase() = default;
  virtual void Wake() = 0;   // new watch events: any thread
  virtual void Close() = 0;  // the server stops: any thread
};

namespace {

inline std::string_view SV(beast::string_view v) { return {v.data(), v.size()}; }

constexpr size_t kMaxHeaderBytes = 16 << 10;
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr auto kStreamCoalesce = std::chrono::milliseconds(50);
constexpr int kStreamSendBuffer = 64 << 10;

class RateLimiter {
 public:
  explicit RateLimiter(double rate) : rate_(rate), tokens_(rate) {}
  bool Take() {
    if (rate_ <= 0) return true;
    base::MutexLock lock(mu_);
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    tokens_ = std::min(rate_, tokens_ + dt * rate_);
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

 private:
  const double rate_;
  base::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  Clock::time_point last_ ABSL_GUARDED_BY(mu_) = Clock::now();
};

// Per-client and total counts of something capped (connections, watch streams).
class Slots {
 public:
  Slots(int total, int per_client) : total_(total), per_client_(per_client) {}
  bool Take(const std::string& client) {
    base::MutexLock lock(mu_);
    int& mine = by_client_[client];
    if (used_ >= total_ || mine >= per_client_) {
      if (mine == 0) by_client_.erase(client);
      return false;
    }
    ++mine;
    ++used_;
    return true;
  }
  void Give(const std::string& client) {
    base::MutexLock lock(mu_);
    auto it = by_client_.find(client);
    if (it == by_client_.end()) return;
    if (--it->second == 0) by_client_.erase(it);
    --used_;
  }
  int used() const {
    base::MutexLock lock(mu_);
    return used_;
  }
  int total() const { return total_; }
  int per_client() const { return per_client_; }

 private:
  const int total_, per_client_;
  mutable base::Mutex mu_;
  std::map<std::string, int> by_client_ ABSL_GUARDED_BY(mu_);
  int used_ ABSL_GUARDED_BY(mu_) = 0;
};

// The file-descriptor limit raised to its hard maximum; returns the soft limit now in force.
rlim_t RaiseFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &r);
    (void)getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur;
}

absl::StatusOr<tcp::endpoint> Endpoint(const HttpOptions& o) {
  boost::system::error_code ec;
  const asio::ip::address addr = asio::ip::make_address(o.host == "localhost" ? "127.0.0.1" : o.host,
                                                        ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", base::ForTerminal(o.host), ": not an IP address"));
  }
  return tcp::endpoint(addr, static_cast<uint16_t>(o.port));
}

// Opens, binds and listens; UnavailableError naming the address when it cannot.
absl::Status Listen(tcp::acceptor& acceptor, const HttpOptions& o) {
  absl::StatusOr<tcp::endpoint> ep = Endpoint(o);
  if (!ep.ok()) return ep.status();
  boost::system::error_code ec;
  acceptor.open(ep->protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(*ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", base::ForTerminal(o.host), ":", o.port, ": ", ec.message(),
        o.port != 0 ? " (in use, or not an address of this host)" : ""));
  }
  return absl::OkStatus();
}

absl::Status LoadTls(asio::ssl::context& ctx, const HttpOptions& o) {
  boost::system::error_code ec;
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                      asio::ssl::context::no_tlsv1_1,
                  ec);
  if (!ec) ctx.use_certificate_chain_file(o.tls_cert, ec);
  if (!ec) ctx.use_private_key_file(o.tls_key, asio::ssl::context::pem, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-cert ", base::ForTerminal(o.tls_cert),
                                                   " / --tls-key ", base::ForTerminal(o.tls_key),
                                                   ": not a readable PEM certificate and key"));
  }
  return absl::OkStatus();
}

std::string ErrorJson(const absl::Status& st) { return api::ErrorBody(st); }

// The reply to a request the parser refused, and the metric's route label.
Response ParseErrorReply(const boost::system::error_code& ec) {
  int status = 400;
  std::string what = ec.message();
  if (ec == bhttp::error::body_limit) {
    status = 413;
    what = "request body over the --max-body limit";
  } else if (ec == bhttp::error::header_limit) {
    status = 431;
    what = absl::StrCat("request header over ", kMaxHeaderBytes, " bytes");
  }
  Response r(status, ErrorJson(status == 413 ? absl::ResourceExhaustedError(what)
                                             : absl::InvalidArgumentError(
                                                   absl::StrCat("malformed request: ", what))));
  r.close = true;
  return r;
}

// asio::async_read_until's match condition: just past "\r\n\r\n", or just past the first LF
// that has no CR before it.
struct HeaderEnd {
  template <typename It>
  std::pair<It, bool> operator()(It begin, It end) const {
    char p1 = 0, p2 = 0, p3 = 0;
    for (It i = begin; i != end; ++i) {
      const char c = *i;
      if (c == '\n' && (p1 != '\r' || (p2 == '\n' && p3 == '\r'))) return {std::next(i), true};
      p3 = p2;
      p2 = p1;
      p1 = c;
    }
    return {end, false};
  }
};

}  // namespace

}  // namespace seedance::server

template <>
struct boost::asio::is_match_condition<seedance::server::HeaderEnd> : std::true_type {};

namespace seedance::server {

// What every connection shares. Lives until the last connection and the last handler are gone;
// the io_context is declared last so that it is destroyed first, with the handlers it holds.
struct HttpServer::Core {
  Core(Service& s, HttpOptions o)
      : service(s),
        options(std::move(o)),
        auth(options.token, options.tenant_tokens),
        limiter(options.rate_limit),
        connections(options.max_connections, options.max_connections_per_client),
        watches(options.max_watches, options.max_watches_per_client),
        blocking(static_cast<size_t>(std::max(1, options.blocking_threads))) {}

  Service& service;
  const HttpOptions options;
  const Authenticator auth;
  Router router;
  RateLimiter limiter;
  Slots connections, watches;
  std::optional<asio::ssl::context> tls;
  std::atomic<int64_t> in_flight{0};  // requests handed to a route and not yet answered
  std::atomic<bool> wake_pending{false};
  base::Mutex streams_mu;
  std::vector<std::weak_ptr<ConnectionBase>> streams ABSL_GUARDED_BY(streams_mu);
  base::Mutex open_mu;
  std::unordered_map<const ConnectionBase*, std::weak_ptr<ConnectionBase>> open
      ABSL_GUARDED_BY(open_mu);
  asio::thread_pool blocking;  // routes that wait on other servers (the extender's bind)
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;  // used on accept_strand only
  std::optional<asio::strand<asio::io_context::executor_type>> accept_strand;
};

namespace {

template <class Stream>
class Connection : public ConnectionBase,
                   public std::enable_shared_from_this<Connection<Stream>> {
 public:
  Connection(HttpServer::Core& core, Stream stream, std::string client)
      : core_(core),
        stream_(std::move(stream)),
        client_(std::move(client)),
        timer_(stream_.get_executor()) {}
  ~Connection() override {
    if (watch_slot_) core_.watches.Give(client_);
    {
      base::MutexLock lock(core_.open_mu);
      core_.open.erase(this);
    }
    core_.connections.Give(client_);
  }

  void Start() {
    {
      base::MutexLock lock(core_.open_mu);
      core_.open.emplace(this, this->weak_from_this());
    }
    if constexpr (kTls) {
      Lowest().expires_after(ReadTimeout());
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](boost::system::error_code ec) {
                                if (!ec) self->WaitForRequest();
                              });
    } else {
      WaitForRequest();
    }
  }

  void Close() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      boost::system::error_code ec;
      self->timer_.cancel();
      self->Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
      self->Lowest().socket().close(ec);
    });
  }

  // Posts to the strand only when the stream is between checks for events, once per check.
  void Wake() override {
    if (!waiting_.exchange(false)) return;
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      self->timer_.cancel();
    });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }
  std::chrono::seconds ReadTimeout() const {
    return std::chrono::seconds(core_.options.read_timeout_s);
  }

  // Waits (keep-alive deadline) for the first byte of the next request, then reads its header.
  void WaitForRequest() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes + 4096);
    parser_->body_limit(core_.options.max_body_bytes);
    if (buffer_.size() > 0) return ReadHeader();
    Lowest().expires_after(std::chrono::seconds(core_.options.keep_alive_timeout_s));
    stream_.async_read_some(
        buffer_.prepare(4096),
        [self = this->shared_from_this()](boost::system::error_code ec, size_t n) {
          if (ec) return;  // idle past keep-alive, or the client left: drop the connection
          self->buffer_.commit(n);
          self->ReadHeader();
        });
  }

  // Reads up to the blank line that ends the header (or the first bare LF, refused below), at
  // most kMaxHeaderBytes, within the read deadline however the bytes drip; then parses it.
  void ReadHeader() {
    Lowest().expires_after(ReadTimeout());
    asio::async_read_until(
        stream_, buffer_, HeaderEnd(),
        [self = this->shared_from_this()](boost::system::error_code ec, size_t n) {
          if (ec == asio::error::not_found) ec = bhttp::error::header_limit;
          if (ec) return self->OnReadError(ec);
          self->ParseHeader(n);
        });
  }

  // RFC 9112 2.2 and 5.2: bare LF line ends and obs-fold are refused (400), never guessed at.
  void ParseHeader(size_t n) {
    const std::string_view head(static_cast<const char*>(buffer_.data().data()), n);
    for (size_t i = 0; i < head.size(); ++i) {
      if (head[i] != '\n') continue;
      if (i == 0 || head[i - 1] != '\r') return OnReadError(bhttp::error::bad_line_ending);
      if (i + 1 < head.size() && (head[i + 1] == ' ' || head[i + 1] == '\t')) {
        return OnReadError(bhttp::error::bad_value);
      }
    }
    boost::system::error_code ec;
    const size_t used = parser_->put(asio::buffer(buffer_.data().data(), n), ec);
    buffer_.consume(used);
    if (!ec && !parser_->is_header_done()) ec = bhttp::error::partial_message;
    if (ec) return OnReadError(ec);
    OnHeader();
  }

  void OnReadError(const boost::system::error_code& ec) {
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        (ec == bhttp::error::partial_message && buffer_.size() == 0) ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return;
    }
    if (ec == beast::error::timeout) {
      // The socket was closed by the deadline: nothing can be written any more.
      core_.service.metrics().CountRequest("timeout", 408);
      return;
    }
    core_.service.metrics().CountRequest("malformed", ParseErrorReply(ec).status);
    Write(ParseErrorReply(ec));
  }

  // The header is in: framing checks, the rate limit, the route and who calls, all before the
  // body is read.
  void OnHeader() {
    const auto& h = parser_->get();
    keep_alive_ = h.keep_alive();
    head_ = h.method() == bhttp::verb::head;
    version_ = h.version();
    if (std::optional<Response> refused = CheckFraming(h)) return Refuse("malformed", *refused);
    if (!core_.limiter.Take()) {
      Response r(429, ErrorJson(absl::ResourceExhaustedError(absl::StrCat(
                          "request rate over --rate-limit ", core_.options.rate_limit,
                          "/s; retry"))));
      r.headers.emplace_back("Retry-After", "1");
      return Refuse("rate_limited", std::move(r));
    }
    request_ = Request{};
    request_.method = head_ ? "GET" : std::string(SV(h.method_string()));
    if (!ParseTarget(SV(h.target()), &request_.path, &request_.params)) {
      return Refuse("malformed", Response(400, ErrorJson(absl::InvalidArgumentError(
                                                   "malformed request target"))));
    }
    std::string allow;
    route_ = core_.router.Find(request_.method, request_.path, &request_.matches, &allow);
    if (route_ == nullptr && allow.empty()) {
      return Refuse("unknown", Response(404, ErrorJson(absl::NotFoundError(absl::StrCat(
                                                 "no route ", request_.method, " ",
                                                 base::Clip(request_.path, 200))))));
    }
    if (route_ == nullptr) {  // RFC 9110 15.5.6: a 405 lists the methods the path has
      Response r(405, ErrorJson(absl::UnimplementedError(
                          absl::StrCat("method ", request_.method, " not allowed on ",
                                       base::Clip(request_.path, 200), "; allowed: ", allow))));
      r.headers.emplace_back("Allow", allow);
      return Refuse("unknown", std::move(r));
    }
    request_.caller = core_.auth.Identify(SV(h[bhttp::field::authorization]));
    const AccessCheck check =
        Authorize(route_->access, request_.caller, core_.auth, request_.path);
    if (check.status != 0) {
      Response r(check.status, ErrorJson(check.status == 401
                                             ? absl::UnauthenticatedError(check.message)
                                             : absl::PermissionDeniedError(check.message)));
      if (check.status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"seedance\"");
      return Refuse(check.status == 401 ? "unauthenticated" : "forbidden", std::move(r));
    }
    if (std::optional<Response> elsewhere = ToLeader(SV(h.target()))) {
      return Refuse("not_leader", std::move(*elsewhere));
    }
    if (parser_->is_done()) return Dispatch();
    if (beast::iequals(h[bhttp::field::expect], "100-continue")) return Continue();
    ReadBody();
  }

  // RFC 9112: a request with a transfer coding other than a final chunked, or one on HTTP/1.0,
  // or an HTTP/1.1 request without exactly one Host, is refused (400) and the connection closed.
  std::optional<Response> CheckFraming(const bhttp::request<bhttp::string_body>& h) const {
    auto bad = [](std::string what) {
      return Response(400, ErrorJson(absl::InvalidArgumentError(
                               absl::StrCat("malformed request: ", what))));
    };
    const auto te = h.count(bhttp::field::transfer_encoding);
    if (te > 0 && (!parser_->chunked() || version_ < 11)) {
      return bad("Transfer-Encoding other than a final \"chunked\" on HTTP/1.1");
    }
    if (version_ >= 11 && h.count(bhttp::field::host) != 1) return bad("HTTP/1.1 needs one Host");
    if (h.count(bhttp::field::authorization) > 1) return bad("more than one Authorization");
    return std::nullopt;
  }

  // A write to a follower replica (docs/ha.md): 307 to the leader with the same target, or 503
  // while no leader is known. Reads are served here.
  std::optional<Response> ToLeader(std::string_view target) const {
    if (request_.method == "GET" || route_->access == Access::kAnyone ||
        core_.service.leading()) {
      return std::nullopt;
    }
    const LeaderInfo leader = core_.service.leader_info();
    if (leader.leader_url.empty() || leader.leader_id == leader.self_id) {
      Response r(503, ErrorJson(absl::UnavailableError(
                          "this replica is not the leader and no leader is known; retry")));
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    Response r(307, ErrorJson(absl::UnavailableError(absl::StrCat(
                        "this replica is not the leader; repeat the call at ",
                        leader.leader_url))));
    r.headers.emplace_back("Location", leader.leader_url + std::string(target));
    return r;
  }

  // Answers without reading the body: the connection cannot carry another request after it
  // unless there is no body at all.
  void Refuse(const char* label, Response r) {
    core_.service.metrics().CountRequest(label, r.status);
    if (!parser_->is_done()) r.close = true;
    Write(std::move(r));
  }

  void Continue() {
    auto interim = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
    Lowest().expires_after(ReadTimeout());
    asio::async_write(stream_, asio::buffer(*interim),
                      [self = this->shared_from_this(), interim](boost::system::error_code ec,
                                                                 size_t) {
                        if (!ec) self->ReadBody();
                      });
  }

  void ReadBody() {
    Lowest().expires_after(ReadTimeout());
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](boost::system::error_code ec, size_t) {
                        if (ec) return self->OnReadError(ec);
                        self->Dispatch();
                      });
  }

  void Dispatch() {
    request_.body = std::move(parser_->get().body());
    if (route_->name == "watch") {
      if (!watch_slot_ && !core_.watches.Take(client_)) {
        return Refuse("watch", Response(429, ErrorJson(absl::ResourceExhaustedError(absl::StrCat(
                                                 "too many open watch streams (at most ",
                                                 core_.watches.per_client(), " a client, ",
                                                 core_.watches.total(), " in all); retry")))));
      }
      watch_slot_ = true;
    }
    Lowest().expires_never();
    core_.in_flight.fetch_add(1);
    Metrics* metrics = &core_.service.metrics();
    Done done = [self = this->shared_from_this(), metrics, route = route_->name](Response r) {
      metrics->CountRequest(route, r.status);
      asio::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable {
        self->core_.in_flight.fetch_sub(1);
        self->Write(std::move(r));
      });
    };
    if (route_->blocking) {
      asio::post(core_.blocking, [route = route_, req = std::move(request_),
                                  done = std::move(done)]() mutable {
        route->handler(req, std::move(done));
      });
    } else {
      route_->handler(request_, std::move(done));
    }
  }

  void Write(Response r) {
    if (r.stream) return StartStream(std::move(r));
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version_);
    res->set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    const bool keep = keep_alive_ && !r.close;
    res->keep_alive(keep);
    res->body() = std::move(r.body);
    res->prepare_payload();
    if (head_) {
      const size_t n = res->body().size();
      res->body().clear();
      res->content_length(n);
    }
    Lowest().expires_after(ReadTimeout());
    bhttp::async_write(stream_, *res,
                       [self = this->shared_from_this(), res, keep](boost::system::error_code ec,
                                                                    size_t) {
                         if (ec) return;
                         self->ReleaseWatch();
                         if (keep) return self->WaitForRequest();
                         self->Linger();
                       });
  }

  // Closes our side, then reads (and drops) what the client still sends for a moment, so that
  // the reply is not lost to a reset.
  void Linger() {
    boost::system::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    Lowest().expires_after(kLingerTime);
    auto sink = std::make_shared<std::array<char, 4096>>();
    LingerRead(sink);
  }
  void LingerRead(std::shared_ptr<std::array<char, 4096>> sink) {
    Lowest().async_read_some(asio::buffer(*sink), [self = this->shared_from_this(), sink](
                                                      boost::system::error_code ec, size_t) {
      if (!ec) self->LingerRead(sink);
    });
  }

  void ReleaseWatch() {
    if (!watch_slot_) return;
    watch_slot_ = false;
    core_.watches.Give(client_);
  }

  // ------------------------------------------------------------------ streamed replies

  void StartStream(Response r) {
    stream_body_ = std::move(r.stream);
    chunked_ = version_ >= 11;
    keep_after_stream_ = keep_alive_ && chunked_;
    std::string head = absl::StrCat("HTTP/1.", version_ >= 11 ? 1 : 0, " ", r.status, " ",
                                    std::string(SV(bhttp::obsolete_reason(static_cast<bhttp::status>(r.status)))),
                                    "\r\nContent-Type: ", r.content_type, "\r\n");
    for (const auto& [k, v] : r.headers) absl::StrAppend(&head, k, ": ", v, "\r\n");
    absl::StrAppend(&head, chunked_ ? "Transfer-Encoding: chunked\r\n" : "Connection: close\r\n",
                    "\r\n");
    // A small send buffer: a watcher that stops reading stalls after a little data (and is cut
    // at the write deadline) instead of having megabytes of events queued in the kernel for it.
    boost::system::error_code ec;
    Lowest().socket().set_option(asio::socket_base::send_buffer_size(kStreamSendBuffer), ec);
    {
      base::MutexLock lock(core_.streams_mu);
      std::erase_if(core_.streams, [](const std::weak_ptr<ConnectionBase>& w) {
        return w.expired();
      });
      core_.streams.push_back(this->weak_from_this());
    }
    StreamWrite({std::move(head), {}, {}}, false);
  }

  void StreamStep() {
    if (head_) return StreamWrite({}, true);
    Clock::time_point wake_at = Clock::now() + std::chrono::seconds(15);
    waiting_ = true;  // before the check: events published after it wake the timer below
    BodyStream::Piece p = stream_body_->Next(&wake_at);
    size_t size = p.data.size();
    for (const auto& part : p.parts) size += part->size();
    if (size > 0 || p.done) {
      StreamOut out;
      if (size > 0 && chunked_) out.head = absl::StrCat(absl::Hex(size), "\r\n");
      out.head += p.data;
      out.parts = std::move(p.parts);
      if (size > 0 && chunked_) out.tail = "\r\n";
      if (p.done && chunked_) out.tail += "0\r\n\r\n";
      return StreamWrite(std::move(out), p.done);
    }
    Lowest().expires_never();
    timer_.expires_at(wake_at);
    timer_.async_wait([self = this->shared_from_this()](boost::system::error_code) {
      if (self->Lowest().socket().is_open()) self->StreamStep();
    });
  }

  // After a write, the next one waits kStreamCoalesce: events published meanwhile go out
  // together, so that a thousand watchers cost a thousand writes per interval, not per batch.
  void StreamPause() {
    Lowest().expires_never();
    timer_.expires_after(kStreamCoalesce);
    timer_.async_wait([self = this->shared_from_this()](boost::system::error_code) {
      if (self->Lowest().socket().is_open()) self->StreamStep();
    });
  }

  // One write of a stream: head, the shared parts, tail (a chunk's framing around events).
  struct StreamOut {
    std::string head;
    std::vector<std::shared_ptr<const std::string>> parts;
    std::string tail;
  };

  void StreamWrite(StreamOut data, bool last) {
    if (kTls && !data.parts.empty()) {
      // TLS encrypts a buffer at a time: one buffer, so that the records stay large.
      for (const auto& part : data.parts) data.head += *part;
      data.parts.clear();
    }
    auto out = std::make_shared<StreamOut>(std::move(data));
    std::vector<asio::const_buffer> buf;
    buf.reserve(out->parts.size() + 2);
    buf.push_back(asio::buffer(out->head));
    for (const auto& part : out->parts) buf.push_back(asio::buffer(*part));
    buf.push_back(asio::buffer(out->tail));
    Lowest().expires_after(ReadTimeout());
    asio::async_write(stream_, buf,
                      [self = this->shared_from_this(), out, last](boost::system::error_code ec,
                                                                   size_t) {
                        if (ec) return;
                        if (!last) return self->StreamPause();
                        self->stream_body_.reset();
                        self->ReleaseWatch();
                        if (self->keep_after_stream_) return self->WaitForRequest();
                        self->Linger();
                      });
  }

  HttpServer::Core& core_;
  Stream stream_;
  const std::string client_;
  asio::steady_timer timer_;
  // Bounded: the header must fit (431 beyond); a body streams through it into the parser.
  beast::flat_buffer buffer_{kMaxHeaderBytes + 4096};
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  Request request_;
  const Route* route_ = nullptr;
  unsigned version_ = 11;
  bool keep_alive_ = true, head_ = false;
  bool watch_slot_ = false;
  std::shared_ptr<BodyStream> stream_body_;
  bool chunked_ = true, keep_after_stream_ = false;
  std::atomic<bool> waiting_{false};  // a stream between checks for events (see Wake)
};

// A connection over the cap: one short 503, written without waiting, then closed.
void RefuseConnection(tcp::socket& socket, const HttpServer::Core& core) {
  const std::string body = ErrorJson(absl::UnavailableError(absl::StrCat(
      "too many connections (at most ", core.connections.per_client(), " a client, ",
      core.connections.total(), " in all); retry later")));
  const std::string reply =
      absl::StrCat("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n",
                   "Retry-After: 1\r\nConnection: close\r\nContent-Length: ", body.size(),
                   "\r\n\r\n", body);
  (void)::send(socket.native_handle(), reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  boost::system::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

void OnAccept(HttpServer::Core& core, tcp::socket socket) {
  boost::system::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;
  std::string client = peer.address().to_string();
  if (!core.connections.Take(client)) {
    core.service.metrics().CountRequest("connection_refused", 503);
    return RefuseConnection(socket, core);
  }
  socket.set_option(tcp::no_delay(true), ec);  // small replies: no Nagle delay
  beast::tcp_stream stream(std::move(socket));
  if (core.tls) {
    std::make_shared<Connection<beast::ssl_stream<beast::tcp_stream>>>(
        core, beast::ssl_stream<beast::tcp_stream>(std::move(stream), *core.tls),
        std::move(client))
        ->Start();
  } else {
    std::make_shared<Connection<beast::tcp_stream>>(core, std::move(stream), std::move(client))
        ->Start();
  }
}

// Accepts on the acceptor's strand, each connection on a strand of its own. The Core outlives
// the accept loop: Stop closes the acceptor and runs the io_context down before releasing it.
void Accept(HttpServer::Core* c) {
  c->acceptor->async_accept(
      asio::make_strand(c->ioc),
      asio::bind_executor(*c->accept_strand, [c](boost::system::error_code ec,
                                                 tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !c->acceptor->is_open()) return;
        if (!ec) OnAccept(*c, std::move(socket));
        Accept(c);
      }));
}

}  // namespace

HttpServer::HttpServer() = default;
HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Check(const HttpOptions& options) {
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!options.tls_cert.empty()) {
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    if (absl::Status st = LoadTls(ctx, options); !st.ok()) return st;
  }
  asio::io_context ioc;
  tcp::acceptor probe(ioc);
  return Listen(probe, options);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(Service& service,
                                                              HttpOptions options) {
  if (absl::Status st = Check(options); !st.ok()) return st;
  const rlim_t files = RaiseFileLimit();
  // Keep room for the state, the store and the other servers' descriptors.
  const int room = static_cast<int>(std::max<rlim_t>(files, 256) - 128);
  options.max_connections = std::min(options.max_connections, room);
  options.max_connections_per_client =
      std::min(options.max_connections_per_client, options.max_connections);
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->core_ = std::make_shared<Core>(service, std::move(options));
  Core& core = *s->core_;
  if (!core.options.tls_cert.empty()) {
    core.tls.emplace(asio::ssl::context::tls_server);
    if (absl::Status st = LoadTls(*core.tls, core.options); !st.ok()) return st;
  }
  if (federation::Front* front = core.options.front) {
    RegisterCommonRoutes(core.router, service, [front] { return front->MetricsText(); });
    RegisterFederationRoutes(core.router, *front);
  } else {
    RegisterRoutes(core.router, service, core.options);
    RegisterPolicyRoutes(core.router, service);
    RegisterExperimentRoutes(core.router, service, core.options);
    RegisterExtenderRoutes(core.router, service, core.options.kube_api);
  }
  core.accept_strand.emplace(asio::make_strand(core.ioc));
  core.acceptor.emplace(*core.accept_strand);
  if (absl::Status st = Listen(*core.acceptor, core.options); !st.ok()) return st;
  s->port_ = core.acceptor->local_endpoint().port();
  service.SetPublishHook([weak = std::weak_ptr<Core>(s->core_)] {
    std::shared_ptr<Core> c = weak.lock();
    if (!c || c->wake_pending.exchange(true)) return;
    asio::post(c->ioc, [c = c.get()] {  // the Core outlives its io_context's handlers
      c->wake_pending = false;
      base::MutexLock lock(c->streams_mu);
      for (const std::weak_ptr<ConnectionBase>& w : c->streams) {
        if (std::shared_ptr<ConnectionBase> conn = w.lock()) conn->Wake();
      }
    });
  });
  Accept(&core);
  const int threads = std::max(1, core.options.io_threads);
  for (int i = 0; i < threads; ++i) {
    s->threads_.emplace_back([c = s->core_] {
      base::NameThisThread("http-io");
      c->ioc.run();
    });
  }
  return s;
}

void HttpServer::Wait() {
  base::MutexLock lock(stop_mu_);
  lock.Wait(stop_cv_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(stop_mu_) { return stopped_; });
}

void HttpServer::Stop() {
  if (!core_) return;
  {
    base::MutexLock lock(stop_mu_);
    if (stopped_) return;
  }
  // No new connections; requests already handed to the service finish (a stopping service
  // answers 503), so that no handler outlives the server.
  asio::post(*core_->accept_strand, [c = core_.get()] {
    boost::system::error_code ec;
    c->acceptor->close(ec);
  });
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (core_->in_flight.load() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  core_->service.SetPublishHook(nullptr);
  core_->blocking.join();
  // Close every connection (idle ones, watch streams) on its own strand, and let the loop run
  // their handlers down before it stops.
  std::vector<std::shared_ptr<ConnectionBase>> open;
  {
    base::MutexLock lock(core_->open_mu);
    for (const auto& [raw, weak] : core_->open) {
      if (std::shared_ptr<ConnectionBase> c = weak.lock()) open.push_back(std::move(c));
    }
  }
  // Outside the lock: the last reference may go here, and a connection's destructor takes it.
  for (const std::shared_ptr<ConnectionBase>& c : open) c->Close();
  open.clear();
  const auto closing = Clock::now() + std::chrono::seconds(5);
  while (core_->connections.used() > 0 && Clock::now() < closing) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  core_->ioc.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  {
    base::MutexLock lock(stop_mu_);
    stopped_ = true;
  }
  stop_cv_.notify_all();
}

}  // namespace seedance::server
