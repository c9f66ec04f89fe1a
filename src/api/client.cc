// The client commands' HTTP client (client.h) over cpp-httplib.
#include "seedance/api/client.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client_internal.h"
#include "httplib.h"
#include "json_body.h"
#include "seedance/api/api.h"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/mutex.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::api {
namespace {

using internal::Sv;

constexpr int kMaxReplyDepth = 256;

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : std::move(fallback);
}

bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

absl::Status UrlError(std::string_view url, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--server ", base::Clip(base::RedactUrl(url), 200), ": ", Sv(why)));
}

absl::StatusCode CodeForHttp(int http) {
  switch (http) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return absl::StatusCode::kFailedPrecondition;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 413:
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return http >= 400 && http < 500 ? absl::StatusCode::kInvalidArgument
                                       : absl::StatusCode::kInternal;
  }
}

// The status a non-2xx reply stands for, from its error body when it has one.
absl::Status ReplyError(std::string_view where, int http, const std::string& body) {
  absl::StatusCode code = CodeForHttp(http);
  std::string message;
  std::string field;
  if (base::JsonNestingDepth(body, kMaxReplyDepth) <= kMaxReplyDepth) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("error") && j["error"].is_object()) {
      const nlohmann::json& e = j["error"];
      if (e.contains("code") && e["code"].is_string()) {
        const absl::StatusCode named = StatusCodeFromName(e["code"].get<std::string>());
        if (named != absl::StatusCode::kUnknown && named != absl::StatusCode::kOk) code = named;
      }
      if (e.contains("message") && e["message"].is_string()) message = e["message"];
      if (e.contains("field") && e["field"].is_string()) field = e["field"];
    }
  }
  if (message.empty()) {
    message =
        body.empty() ? absl::StrCat("HTTP ", http, " with no error body") : base::Clip(body, 300);
  }
  // The message travels to a terminal: no control characters beyond newlines.
  absl::Status s(code, absl::StrCat(Sv(where), ": error from server (", Sv(StatusCodeName(code)),
                                    ", HTTP ", http, "): ", base::Clip(message, 4096)));
  if (!field.empty()) s = internal::AttachField(std::move(s), field);
  return WithHttpStatus(std::move(s), http);
}

std::string TransportError(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "could not connect";
    case httplib::Error::Read:
      return "the connection closed before a complete reply";
    case httplib::Error::Write:
      return "the connection closed while sending the request";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "the server's TLS certificate is not trusted (--ca-file)";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace

namespace internal {

absl::StatusOr<ClientSetup> SetUpClient(ClientOptions options) {
  if (options.url.empty()) options.url = EnvOr("SEEDANCE_SERVER", std::string(kDefaultServer));
  options.token_file = Client::TokenFileOf(options.token_file);
  if (!(options.timeout_s > 0) || options.timeout_s > 86400) {
    return absl::InvalidArgumentError("client timeout must be in (0, 86400] seconds");
  }
  absl::StatusOr<ServerUrl> url = ParseServerUrl(options.url);
  if (!url.ok()) return url.status();
  ClientSetup out;
  out.url = *std::move(url);
  if (!options.token_file.empty()) {
    // The server issued the token, so any length it chose is accepted.
    base::BearerTokenOptions read;
    read.min_chars = 1;
    absl::StatusOr<std::string> token =
        base::ReadBearerToken(options.token_file, "--token-file", read);
    if (!token.ok()) return token.status();
    out.token = *std::move(token);
  }
  out.options = std::move(options);
  return out;
}

std::string CallWhere(std::string_view method, const ServerUrl& url, std::string_view path) {
  return absl::StrCat(Sv(method), " ", url.display, base::Clip(path, 200));
}

absl::StatusOr<nlohmann::json> DecodeReply(std::string_view where, int http,
                                           const std::string& body) {
  if (http < 200 || http > 299) return ReplyError(where, http, body);
  if (body.empty()) return nlohmann::json(nullptr);
  if (base::JsonNestingDepth(body, kMaxReplyDepth) > kMaxReplyDepth) {
    return absl::DataLossError(
        absl::StrCat(Sv(where), ": the reply nests deeper than ", kMaxReplyDepth, " levels"));
  }
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::DataLossError(absl::StrCat(
        Sv(where), ": the reply is not JSON: ", base::ForTerminal(base::Clip(body, 120))));
  }
  return j;
}

absl::Status CannotReach(const ServerUrl& url, std::string_view why) {
  return absl::UnavailableError(
      absl::StrCat("cannot reach ", url.display, " (", Sv(why),
                   "); is `seedance server` running there? (--server URL or SEEDANCE_SERVER)"));
}

absl::Status NoReplyInTime(std::string_view where, double timeout_s) {
  return absl::DeadlineExceededError(
      absl::StrCat(Sv(where), ": no complete reply within ", base::FormatNumber(timeout_s), " s"));
}

absl::Status ReplyTooLarge(std::string_view where, size_t cap) {
  return absl::ResourceExhaustedError(
      absl::StrCat(Sv(where), ": the reply is larger than ", cap, " bytes"));
}

}  // namespace internal

absl::StatusOr<ServerUrl> ParseServerUrl(std::string_view url) {
  ServerUrl out;
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) {
    return UrlError(url, "must be http://HOST[:PORT] or https://HOST[:PORT]");
  }
  out.scheme = absl::AsciiStrToLower(Sv(url.substr(0, sep)));
  if (out.scheme != "http" && out.scheme != "https") {
    return UrlError(url, "the scheme must be http or https");
  }
  std::string_view rest = url.substr(sep + 3);
  const size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  if (end != std::string_view::npos && rest.substr(end) != "/") {
    return UrlError(url, "a path, query or fragment is not supported (give the server's root)");
  }
  if (authority.find('@') != std::string_view::npos) {
    return UrlError(url, "credentials in the URL are not supported; use --token-file");
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return UrlError(url, "unterminated IPv6 address");
    out.host = std::string(authority.substr(1, close - 1));
    for (char c : out.host) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') {
        return UrlError(url, "invalid IPv6 address");
      }
    }
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return UrlError(url, "expected :PORT after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) return UrlError(url, "empty port");
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return UrlError(url, "empty port");
    }
    for (char c : out.host) {
      if (!IsHostChar(c)) return UrlError(url, "invalid host name");
    }
  }
  if (out.host.empty()) return UrlError(url, "no host");
  out.port = out.scheme == "https" ? 443 : 80;
  if (!port_text.empty()) {
    int port = 0;
    bool digits = port_text.size() <= 5;
    for (char c : port_text) digits &= absl::ascii_isdigit(static_cast<unsigned char>(c));
    if (!digits || !absl::SimpleAtoi(Sv(port_text), &port) || port < 1 || port > 65535) {
      return UrlError(url, "the port must be an integer in 1..65535");
    }
    out.port = port;
  }
  const std::string host_for_url =
      out.host.find(':') != std::string::npos ? absl::StrCat("[", out.host, "]") : out.host;
  out.display = absl::StrCat(out.scheme, "://", host_for_url, ":", out.port);
  return out;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

// A thread that stops the client's current call once its deadline passes: the per-read timeouts
// alone would let a server that trickles bytes keep a call going for ever. Each call arms it with
// a new generation and disarms it when it returns; a stop is for the generation armed only.
struct Client::Watchdog {
  explicit Watchdog(httplib::Client* h) : http(h) { thread = std::thread([this] { Run(); }); }
  ~Watchdog() {
    {
      base::MutexLock lock(mu);
      quit = true;
    }
    cv.notify_all();
    thread.join();
  }
  uint64_t Arm(std::chrono::steady_clock::time_point until) {
    base::MutexLock lock(mu);
    armed = ++generations;
    deadline = until;
    cv.notify_all();
    return armed;
  }
  // Whether the watchdog stopped the call of generation `gen`.
  bool Disarm(uint64_t gen) {
    base::MutexLock lock(mu);
    armed = 0;
    cv.notify_all();
    return fired == gen;
  }

 private:
  void Run() {
    base::MutexLock lock(mu);
    while (!quit) {
      if (armed == 0) {
        lock.Wait(cv);
        continue;
      }
      const uint64_t gen = armed;
      if (lock.WaitUntil(cv, deadline) == std::cv_status::timeout && armed == gen && !quit) {
        fired = gen;
        armed = 0;
        http->stop();  // under the lock: Disarm waits for it
      }
    }
  }

  httplib::Client* const http;
  base::Mutex mu;
  std::condition_variable cv;
  uint64_t generations ABSL_GUARDED_BY(mu) = 0;
  uint64_t armed ABSL_GUARDED_BY(mu) = 0;  // the generation being watched (0: none)
  uint64_t fired ABSL_GUARDED_BY(mu) = 0;  // the last generation stopped
  std::chrono::steady_clock::time_point deadline ABSL_GUARDED_BY(mu);
  bool quit ABSL_GUARDED_BY(mu) = false;
  std::thread thread;
};

Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

absl::StatusOr<Client> Client::Create(std::string url, std::string token_file) {
  ClientOptions o;
  o.url = std::move(url);
  o.token_file = std::move(token_file);
  return Create(std::move(o));
}

std::string Client::TokenFileOf(const std::string& flag) {
  return flag.empty() ? EnvOr("SEEDANCE_TOKEN_FILE", "") : flag;
}

absl::StatusOr<Client> Client::Create(ClientOptions options) {
  absl::StatusOr<internal::ClientSetup> setup = internal::SetUpClient(std::move(options));
  if (!setup.ok()) return setup.status();
  Client c;
  c.url_ = std::move(setup->url);
  c.token_ = std::move(setup->token);
  options = std::move(setup->options);
  c.http_ = std::make_unique<httplib::Client>(c.url_.display);
  if (!c.http_->is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--server ", c.url_.display, ": cannot set up a client for this URL"));
  }
  if (!options.ca_file.empty()) c.http_->set_ca_cert_path(options.ca_file.c_str());
  // One connection for every call of this client (a federation front calls its members
  // thousands of times a second), reopened when the server closed it; small requests go out
  // at once.
  c.http_->set_keep_alive(true);
  c.http_->set_tcp_nodelay(true);
  c.options_ = std::move(options);
  return c;
}

absl::StatusOr<nlohmann::json> Client::Call(std::string_view method, std::string_view path,
                                            const std::string& body) {
  const auto timeout = std::chrono::microseconds(static_cast<int64_t>(options_.timeout_s * 1e6));
  const time_t sec = static_cast<time_t>(timeout.count() / 1000000);
  const time_t usec = static_cast<time_t>(timeout.count() % 1000000);
  http_->set_connection_timeout(sec, usec);
  http_->set_read_timeout(sec, usec);
  http_->set_write_timeout(sec, usec);

  httplib::Request req;
  req.method = std::string(method);
  req.path = std::string(path);
  req.body = body;
  req.headers.emplace("Accept", "application/json");
  req.headers.emplace("User-Agent", "seedance/" + base::GetBuildInfo().version);
  if (!body.empty()) req.headers.emplace("Content-Type", "application/json");
  if (!token_.empty()) req.headers.emplace("Authorization", "Bearer " + token_);
  std::string reply;
  bool too_large = false;
  const size_t cap = options_.max_reply_bytes;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (n > cap - reply.size()) {
      too_large = true;
      return false;
    }
    reply.append(data, n);
    return true;
  };

  if (!watchdog_) watchdog_ = std::make_unique<Watchdog>(http_.get());
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const auto started = std::chrono::steady_clock::now();
  const uint64_t gen = watchdog_->Arm(started + timeout);
  const bool sent = http_->send(req, res, error);
  // The per-read timeout (set to the whole deadline) may beat the watchdog to it.
  const bool past_deadline = std::chrono::steady_clock::now() - started >= timeout;
  const bool fired = watchdog_->Disarm(gen);

  const std::string where = Where(method, path);
  if (too_large) return internal::ReplyTooLarge(where, cap);
  if (fired || error == httplib::Error::ConnectionTimeout || (!sent && past_deadline)) {
    return internal::NoReplyInTime(where, options_.timeout_s);
  }
  if (!sent) return internal::CannotReach(url_, TransportError(error));
  return internal::DecodeReply(where, res.status, reply);
}

std::string Client::Where(std::string_view method, std::string_view path) const {
  return internal::CallWhere(method, url_, path);
}

absl::StatusOr<nlohmann::json> Client::CallObject(std::string_view method, std::string_view path,
                                                  std::initializer_list<std::string_view> keys,
                                                  const std::string& body) {
  absl::StatusOr<nlohmann::json> j = Call(method, path, body);
  if (!j.ok()) return j;
  const std::string where = Where(method, path);
  if (!j->is_object()) {
    return absl::DataLossError(
        absl::StrCat(where, ": the reply is not a JSON object (is this a seedance server?)"));
  }
  for (std::string_view k : keys) {
    auto it = j->find(std::string(k));
    if (it == j->end() || it->is_null()) {
      return absl::DataLossError(
          absl::StrCat(where, ": the reply has no \"", Sv(k), "\" (is this a seedance server?)"));
    }
  }
  return j;
}

}  // namespace seedance::api
