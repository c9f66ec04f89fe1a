// The asynchronous HTTP client (async_client.h) on Boost.Beast. Every piece of a client's state
// below is touched on its loop's thread only: Call and Close post to it.
#include "seedance/api/async_client.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <deque>
#include <future>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client_internal.h"
#include "seedance/base/build_info.h"
#include "seedance/base/check.h"
#include "seedance/base/thread_name.h"

namespace seedance::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------- loop

struct ClientLoop::Impl {
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
  std::thread thread;
};

ClientLoop::ClientLoop() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([i = impl_.get()] {
    base::NameThisThread("client-loop");
    i->ioc.run();
  });
}

ClientLoop::~ClientLoop() { Stop(); }

void ClientLoop::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->work.reset();
  impl_->thread.join();
}

bool ClientLoop::InLoop() const { return impl_->ioc.get_executor().running_in_this_thread(); }

namespace {

// ---------------------------------------------------------------------------------- connections

// Where a call failed: which step decides the message, and whether it may be made again.
enum class Stage { kConnect, kHandshake, kWrite, kRead };

struct Exchange {
  bhttp::request<bhttp::string_body> req;
  std::string where;  // "METHOD URL/PATH"
  AsyncClient::Done done;
  Clock::time_point deadline;
  bool retried = false;
};

using Reply = bhttp::response<bhttp::string_body>;
using Finished = std::function<void(beast::error_code, Stage, bool got_reply_bytes, Reply)>;

// One connection to the server, plain or TLS.
class Conn {
 public:
  virtual ~Conn() = default;
  // Connects to one of `addrs` (and shakes hands, for TLS) by `deadline`.
  virtual void Open(const tcp::resolver::results_type& addrs, const std::string& host,
                    Clock::time_point deadline,
                    std::function<void(beast::error_code, Stage)> then) = 0;
  // Writes the request and reads its reply (at most `cap` bytes of body) by the deadline.
  virtual void Send(std::shared_ptr<Exchange> ex, size_t cap, Finished then) = 0;
  // An idle connection that can carry another call: open, nothing unread, the peer has not
  // closed it (a peek that would block).
  virtual bool Reusable() = 0;
  // Cancels what is under way (its handlers see operation_aborted) and closes the socket.
  virtual void Close() = 0;

  Clock::time_point idle_since{};
  bool used = false;  // a reply came back on it (a later failure may be a stale keep-alive)
};

template <class Stream>
class ConnT final : public Conn, public std::enable_shared_from_this<ConnT<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  template <class... Args>
  explicit ConnT(Args&&... args) : stream_(std::forward<Args>(args)...) {}

  void Open(const tcp::resolver::results_type& addrs, const std::string& host,
            Clock::time_point deadline,
            std::function<void(beast::error_code, Stage)> then) override {
    Lowest().expires_at(deadline);
    Lowest().async_connect(addrs, [self = this->shared_from_this(), host, then = std::move(then)](
                                      beast::error_code ec, const tcp::endpoint&) mutable {
      if (ec) return then(ec, Stage::kConnect);
      beast::error_code ignored;
      self->Lowest().socket().set_option(tcp::no_delay(true), ignored);
      if constexpr (kTls) {
        self->stream_.set_verify_mode(asio::ssl::verify_peer);
        self->stream_.set_verify_callback(asio::ssl::host_name_verification(host));
        if (SSL_set_tlsext_host_name(self->stream_.native_handle(), host.c_str()) != 1) {
          return then(beast::error_code(asio::error::invalid_argument), Stage::kHandshake);
        }
        self->stream_.async_handshake(asio::ssl::stream_base::client,
                                      [then = std::move(then)](beast::error_code ec) mutable {
                                        then(ec, Stage::kHandshake);
                                      });
      } else {
        then(ec, Stage::kConnect);
      }
    });
  }

  void Send(std::shared_ptr<Exchange> ex, size_t cap, Finished then) override {
    Lowest().expires_at(ex->deadline);
    bhttp::async_write(stream_, ex->req,
                       [self = this->shared_from_this(), ex, cap, then = std::move(then)](
                           beast::error_code ec, size_t) mutable {
                         if (ec) return then(ec, Stage::kWrite, false, Reply{});
                         self->Read(cap, std::move(then));
                       });
  }

  // The reply: its header, then a body of at most `cap` bytes (a Content-Length over it is
  // refused before the body is read; the parser's own limit alone did not always hold).
  void Read(size_t cap, Finished then) {
    parser_.emplace();
    parser_->body_limit(cap);
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this(), cap, then = std::move(then)](beast::error_code ec,
                                                                       size_t) mutable {
          if (!ec && self->parser_->content_length().value_or(0) > cap) {
            ec = bhttp::error::body_limit;
          }
          if (ec) return then(ec, Stage::kRead, self->parser_->got_some(), Reply{});
          bhttp::async_read(self->stream_, self->buffer_, *self->parser_,
                            [self, cap, then = std::move(then)](beast::error_code ec, size_t) {
                              if (!ec && self->parser_->get().body().size() > cap) {
                                ec = bhttp::error::body_limit;
                              }
                              if (ec) return then(ec, Stage::kRead, true, Reply{});
                              then(ec, Stage::kRead, true, self->parser_->release());
                            });
        });
  }

  bool Reusable() override {
    tcp::socket& sock = Lowest().socket();
    if (buffer_.size() != 0 || !sock.is_open()) return false;
    beast::error_code ec, ignored;
    sock.non_blocking(true, ec);
    char byte = 0;
    if (!ec) sock.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
    sock.non_blocking(false, ignored);
    return ec == asio::error::would_block;
  }

  void Close() override { Lowest().close(); }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser_;
};

bool Idempotent(bhttp::verb v) {
  return v == bhttp::verb::get || v == bhttp::verb::head || v == bhttp::verb::put ||
         v == bhttp::verb::delete_;
}

}  // namespace

// ---------------------------------------------------------------------------------- client

struct AsyncClient::Impl : std::enable_shared_from_this<Impl> {
  explicit Impl(asio::io_context& c) : ioc(c), resolver(c) {}

  asio::io_context& ioc;
  internal::ClientSetup setup;
  Limits limits;
  std::optional<asio::ssl::context> tls;
  std::string host_header, user_agent;
  // The loop's thread only.
  tcp::resolver resolver;
  std::vector<std::shared_ptr<Conn>> idle;  // newest last
  std::unordered_set<std::shared_ptr<Conn>> busy;
  std::deque<std::shared_ptr<Exchange>> waiting;  // for a connection, oldest first
  bool closed = false;

  void Start(std::shared_ptr<Exchange> ex, bool fresh);
  void Open(std::shared_ptr<Exchange> ex);
  void Run(std::shared_ptr<Conn> c, std::shared_ptr<Exchange> ex);
  void Finish(const std::shared_ptr<Conn>& c, std::shared_ptr<Exchange> ex, beast::error_code ec,
              Stage stage, bool got, Reply reply);
  // A connection whose call is over: kept for the next call (`keep`) or closed.
  void Release(const std::shared_ptr<Conn>& c, bool keep);
  void Answer(const std::shared_ptr<Exchange>& ex, absl::StatusOr<nlohmann::json> result);
  absl::Status ErrorFor(const Exchange& ex, beast::error_code ec, Stage stage) const;
  void CloseAll();
};

void AsyncClient::Impl::Start(std::shared_ptr<Exchange> ex, bool fresh) {
  if (closed) return Answer(ex, absl::UnavailableError(ex->where + ": the client is closed"));
  if (Clock::now() >= ex->deadline) {
    return Answer(ex, internal::NoReplyInTime(ex->where, setup.options.timeout_s));
  }
  while (!fresh && !idle.empty()) {
    std::shared_ptr<Conn> c = std::move(idle.back());
    idle.pop_back();
    if (std::chrono::duration<double>(Clock::now() - c->idle_since).count() < limits.idle_s &&
        c->Reusable()) {
      busy.insert(c);
      return Run(std::move(c), std::move(ex));
    }
    c->Close();
  }
  if (busy.size() >= limits.max_connections) return waiting.push_back(std::move(ex));
  Open(std::move(ex));
}

void AsyncClient::Impl::Open(std::shared_ptr<Exchange> ex) {
  std::shared_ptr<Conn> c;
  if (tls) {
    c = std::make_shared<ConnT<beast::ssl_stream<beast::tcp_stream>>>(ioc, *tls);
  } else {
    c = std::make_shared<ConnT<beast::tcp_stream>>(ioc);
  }
  busy.insert(c);
  resolver.async_resolve(setup.url.host, std::to_string(setup.url.port),
                         [self = shared_from_this(), c, ex](
                             beast::error_code ec, const tcp::resolver::results_type& addrs) {
                           if (ec || self->closed) {
                             return self->Finish(c, ex, ec ? ec : asio::error::operation_aborted,
                                                 Stage::kConnect, false, {});
                           }
                           c->Open(addrs, self->setup.url.host, ex->deadline,
                                   [self, c, ex](beast::error_code ec, Stage stage) {
                                     if (ec || self->closed) {
                                       return self->Finish(c, ex,
                                                           ec ? ec : asio::error::operation_aborted,
                                                           stage, false, {});
                                     }
                                     self->Run(c, ex);
                                   });
                         });
}

void AsyncClient::Impl::Run(std::shared_ptr<Conn> c, std::shared_ptr<Exchange> ex) {
  Conn& conn = *c;
  conn.Send(ex, setup.options.max_reply_bytes,
            [self = shared_from_this(), c = std::move(c), ex](beast::error_code ec, Stage stage,
                                                              bool got, Reply reply) mutable {
              self->Finish(c, std::move(ex), ec, stage, got, std::move(reply));
            });
}

void AsyncClient::Impl::Finish(const std::shared_ptr<Conn>& c, std::shared_ptr<Exchange> ex,
                               beast::error_code ec, Stage stage, bool got, Reply reply) {
  if (!ec && !closed) {
    c->used = true;
    Release(c, reply.keep_alive());
    return Answer(
        ex, internal::DecodeReply(ex->where, static_cast<int>(reply.result_int()), reply.body()));
  }
  const bool stale_candidate = c->used && !got;
  Release(c, /*keep=*/false);
  if (closed) return Answer(ex, absl::UnavailableError(ex->where + ": the client is closed"));
  // A keep-alive connection the server closed as the call went out: once more on a new one,
  // where that cannot run the call twice.
  if (stale_candidate && !ex->retried && ec != beast::error::timeout &&
      (stage == Stage::kWrite || Idempotent(ex->req.method()))) {
    ex->retried = true;
    return Start(std::move(ex), /*fresh=*/true);
  }
  Answer(ex, ErrorFor(*ex, ec, stage));
}

void AsyncClient::Impl::Release(const std::shared_ptr<Conn>& c, bool keep) {
  busy.erase(c);
  if (keep && !closed) {
    if (!waiting.empty()) {
      std::shared_ptr<Exchange> next = std::move(waiting.front());
      waiting.pop_front();
      busy.insert(c);
      return Run(c, std::move(next));
    }
    if (idle.size() < limits.max_connections) {
      c->idle_since = Clock::now();
      idle.push_back(c);
      return;
    }
  }
  c->Close();
  // A connection slot is free: the oldest waiting call takes it.
  while (!waiting.empty() && busy.size() < limits.max_connections) {
    std::shared_ptr<Exchange> next = std::move(waiting.front());
    waiting.pop_front();
    Start(std::move(next), /*fresh=*/false);
  }
}

void AsyncClient::Impl::Answer(const std::shared_ptr<Exchange>& ex,
                               absl::StatusOr<nlohmann::json> result) {
  // Each exchange ends in exactly one Answer: every handler chain above ends in Finish or here.
  Done done = std::move(ex->done);
  ex->done = nullptr;
  done(std::move(result));
}

absl::Status AsyncClient::Impl::ErrorFor(const Exchange& ex, beast::error_code ec,
                                         Stage stage) const {
  if (ec == beast::error::timeout)
    return internal::NoReplyInTime(ex.where, setup.options.timeout_s);
  if (ec == bhttp::error::body_limit) {
    return internal::ReplyTooLarge(ex.where, setup.options.max_reply_bytes);
  }
  switch (stage) {
    case Stage::kConnect:
      return internal::CannotReach(setup.url, "could not connect");
    case Stage::kHandshake:
      return internal::CannotReach(setup.url, absl::StrCat("TLS handshake failed: ", ec.message()));
    case Stage::kWrite:
      return internal::CannotReach(setup.url, "the connection closed while sending the request");
    case Stage::kRead:
      break;
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category() &&
      ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    return absl::DataLossError(
        absl::StrCat(ex.where, ": the reply is not valid HTTP (", ec.message(), ")"));
  }
  return internal::CannotReach(setup.url, "the connection closed before a complete reply");
}

void AsyncClient::Impl::CloseAll() {
  closed = true;
  resolver.cancel();
  for (const std::shared_ptr<Conn>& c : idle) c->Close();
  idle.clear();
  // Their handlers answer the calls on them (closed).
  for (const std::shared_ptr<Conn>& c :
       std::vector<std::shared_ptr<Conn>>(busy.begin(), busy.end())) {
    c->Close();
  }
  std::deque<std::shared_ptr<Exchange>> left = std::move(waiting);
  waiting.clear();
  for (const std::shared_ptr<Exchange>& ex : left) {
    Answer(ex, absl::UnavailableError(ex->where + ": the client is closed"));
  }
}

// ---------------------------------------------------------------------------------- public

AsyncClient::AsyncClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

AsyncClient::~AsyncClient() { Close(); }

absl::StatusOr<std::unique_ptr<AsyncClient>> AsyncClient::Create(ClientOptions options,
                                                                 ClientLoop& loop, Limits limits) {
  absl::StatusOr<internal::ClientSetup> setup = internal::SetUpClient(std::move(options));
  if (!setup.ok()) return setup.status();
  if (limits.max_connections < 1 || !(limits.idle_s >= 0)) {
    return absl::InvalidArgumentError("a client needs at least one connection and idle_s >= 0");
  }
  auto impl = std::make_shared<Impl>(loop.impl_->ioc);
  impl->setup = *std::move(setup);
  impl->limits = limits;
  const ServerUrl& url = impl->setup.url;
  if (url.scheme == "https") {
    impl->tls.emplace(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    impl->tls->set_verify_mode(asio::ssl::verify_peer, ec);
    const std::string& ca = impl->setup.options.ca_file;
    if (!ec)
      ca.empty() ? impl->tls->set_default_verify_paths(ec) : impl->tls->load_verify_file(ca, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ca-file ", ca.empty() ? "(the system's store)" : ca, ": ", ec.message()));
    }
  }
  impl->host_header = url.display.substr(url.display.find("://") + 3);
  impl->user_agent = "seedance/" + base::GetBuildInfo().version;
  std::unique_ptr<AsyncClient> c(new AsyncClient(std::move(impl)));
  c->loop_ = &loop;
  return c;
}

void AsyncClient::Call(std::string_view method, std::string_view path, std::string body,
                       Done done) {
  Impl& i = *impl_;
  auto ex = std::make_shared<Exchange>();
  bhttp::request<bhttp::string_body>& req = ex->req;
  const bhttp::verb verb = bhttp::string_to_verb(beast::string_view(method.data(), method.size()));
  if (verb == bhttp::verb::unknown) {
    req.method_string(beast::string_view(method.data(), method.size()));
  } else {
    req.method(verb);
  }
  req.target(beast::string_view(path.data(), path.size()));
  req.version(11);
  req.set(bhttp::field::host, i.host_header);
  req.set(bhttp::field::user_agent, i.user_agent);
  req.set(bhttp::field::accept, "application/json");
  if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
  if (!i.setup.token.empty()) req.set(bhttp::field::authorization, "Bearer " + i.setup.token);
  req.body() = std::move(body);
  req.keep_alive(true);
  req.prepare_payload();
  ex->where = internal::CallWhere(method, i.setup.url, path);
  ex->deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(i.setup.options.timeout_s));
  ex->done = std::move(done);
  if (i.ioc.stopped()) {
    return i.Answer(ex, absl::UnavailableError(ex->where + ": the client's loop has stopped"));
  }
  asio::post(i.ioc, [self = impl_, ex = std::move(ex)]() mutable {
    self->Start(std::move(ex), /*fresh=*/false);
  });
}

absl::StatusOr<nlohmann::json> AsyncClient::CallAndWait(std::string_view method,
                                                        std::string_view path, std::string body) {
  SEEDANCE_CHECK(!loop_->InLoop()) << "CallAndWait on the client loop's thread would wait forever";
  std::promise<absl::StatusOr<nlohmann::json>> replied;
  std::future<absl::StatusOr<nlohmann::json>> reply = replied.get_future();
  Call(method, path, std::move(body),
       [&replied](absl::StatusOr<nlohmann::json> r) { replied.set_value(std::move(r)); });
  return reply.get();
}

void AsyncClient::Close() {
  if (impl_->ioc.stopped()) return;
  asio::post(impl_->ioc, [self = impl_] { self->CloseAll(); });
}

const std::string& AsyncClient::server() const { return impl_->setup.url.display; }

}  // namespace seedance::api
