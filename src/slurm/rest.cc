#include "seedance/slurm/rest.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/base/io.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"

namespace seedance::slurm {
namespace {

// Largest reply read: GET /jobs of a busy cluster (about 3 KB a job).
constexpr size_t kMaxReplyBytes = size_t{256} << 20;

bool ValidVersion(const std::string& v) {
  if (v.size() < 2 || v[0] != 'v') return false;
  for (char c : v.substr(1)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

// How a reply speaks of the request's token. Later Slurms answer 401 or 403 to a token they turn
// down; Slurm 22.05.8's slurmrestd answers 500 (tests/slurm/README.md, "Authentication
// failures"): a submit gets error_code 5005 "Zero Bytes were transmitted or received" (slurmctld
// down gives 1800 instead), a GET gets "Unspecified error" with errno -1, which is also what it
// answers while slurmctld cannot be reached.
enum class TokenSign { kNone, kRefused, kRefusedOrNoController };

TokenSign TokenSignOf(int status, std::string_view body) {
  if (status == 401 || status == 403) return TokenSign::kRefused;
  if (status != 500) return TokenSign::kNone;
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("errors") || !j["errors"].is_array()) return TokenSign::kNone;
  for (const nlohmann::json& e : j["errors"]) {
    if (!e.is_object()) continue;
    const int64_t code = base::IntField(e, "error_code");
    if (code == 5005) return TokenSign::kRefused;
    const int64_t errno_ =
        e.contains("errno") ? base::IntField(e, "errno") : base::IntField(e, "error_number");
    if (errno_ == -1 && base::StringField(e, "error") == "Unspecified error") {
      return TokenSign::kRefusedOrNoController;
    }
  }
  return TokenSign::kNone;
}

std::string Rfc3339(int64_t unix_s) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(unix_s), absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<TokenClaims> DecodeToken(std::string_view token) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(token.data(), token.size()), '.');
  std::string claims;
  if (parts.size() != 3 || !absl::WebSafeBase64Unescape(parts[1], &claims)) {
    return absl::InvalidArgumentError("not a JWT (three base64url parts joined by '.')");
  }
  const nlohmann::json j = nlohmann::json::parse(claims, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("exp") || !j["exp"].is_number_integer()) {
    return absl::InvalidArgumentError("a JWT without an integer 'exp' claim");
  }
  TokenClaims out;
  out.expires_unix_s = j["exp"].get<int64_t>();
  out.user = base::StringField(j, "sun");
  return out;
}

RestClient::RestClient(RestOptions options)
    : options_(std::move(options)),
      base_(absl::StrCat("/slurm/", options_.api_version)),
      token_(options_.token) {}

RestClient::~RestClient() = default;

absl::StatusOr<std::unique_ptr<RestClient>> RestClient::Create(RestOptions o) {
  if (!absl::StartsWith(o.url, "http://") || o.url.size() <= 7 ||
      o.url.find('/', 7) != std::string::npos || o.url.find(':', 7) == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--slurm-url: expected http://HOST:PORT of slurmrestd, got '",
                     base::ForTerminal(base::Clip(base::RedactUrl(o.url), 100)), "'"));
  }
  if (!ValidVersion(o.api_version)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--slurm-api: expected a version such as v0.0.38, got '",
                     base::ForTerminal(base::Clip(o.api_version, 40)), "'"));
  }
  if (o.connections < 1 || o.timeout_s <= 0) {
    return absl::InvalidArgumentError("slurm client: connections >= 1 and timeout > 0 required");
  }
  std::unique_ptr<RestClient> c(new RestClient(std::move(o)));
  if (c->options_.token.empty()) {
    if (c->options_.token_file.empty()) {
      return absl::InvalidArgumentError(
          "--slurm-token-file: required (slurmrestd authenticates with a JWT: `scontrol token "
          "username=USER lifespan=SECONDS > FILE`)");
    }
    if (absl::Status st = c->ReloadToken(); !st.ok()) return st;
  }
  return c;
}

absl::Status RestClient::ReloadToken() {
  if (options_.token_file.empty()) return absl::OkStatus();
  // What `scontrol token` prints (SLURM_JWT=TOKEN) or the bare token; slurmctld judges it.
  base::BearerTokenOptions read;
  read.min_chars = 1;
  read.prefix = "SLURM_JWT=";
  absl::StatusOr<std::string> t =
      base::ReadBearerToken(options_.token_file, "--slurm-token-file", read);
  if (!t.ok()) return t.status();
  base::MutexLock lock(mu_);
  token_ = std::move(*t);
  return absl::OkStatus();
}

std::string RestClient::Token() {
  base::MutexLock lock(mu_);
  return token_;
}

std::unique_ptr<httplib::Client> RestClient::Take() {
  base::MutexLock lock(mu_);
  lock.Wait(cv_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !idle_.empty() || open_ < options_.connections;
  });
  if (!idle_.empty()) {
    std::unique_ptr<httplib::Client> c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }
  ++open_;
  lock.Unlock();
  auto c = std::make_unique<httplib::Client>(options_.url);
  const auto us = static_cast<int64_t>(options_.timeout_s * 1e6);
  c->set_connection_timeout(static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000));
  c->set_read_timeout(static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000));
  c->set_write_timeout(static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000));
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  return c;
}

void RestClient::Give(std::unique_ptr<httplib::Client> c) {
  {
    base::MutexLock lock(mu_);
    if (c) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
  }
  cv_.notify_one();
}

absl::StatusOr<RestClient::Reply> RestClient::CallOnce(const char* method, const std::string& path,
                                                       const std::string& body,
                                                       std::string_view what) {
  const httplib::Headers headers = {{"X-SLURM-USER-NAME", options_.user},
                                    {"X-SLURM-USER-TOKEN", Token()}};
  std::unique_ptr<httplib::Client> c = Take();
  const std::string full = base_ + path;
  std::string received;
  auto sink = [&received](const char* data, size_t n) {
    if (received.size() + n > kMaxReplyBytes) return false;
    received.append(data, n);
    return true;
  };
  httplib::Result r = std::string_view(method) == "POST"
                          ? c->Post(full, headers, body, "application/json")
                      : std::string_view(method) == "DELETE" ? c->Delete(full, headers)
                                                             : c->Get(full, headers, sink);
  if (!r) {
    Give(nullptr);  // the connection is in an unknown state: a new one next time
    return absl::UnavailableError(absl::StrCat(
        std::string(what), ": cannot reach slurmrestd at ", base::RedactUrl(options_.url), ": ",
        r.error() == httplib::Error::Connection ? "connection failed (is it running?)"
                                                : httplib::to_string(r.error())));
  }
  Reply reply{r->status, std::string_view(method) == "GET" ? std::move(received) : r->body};
  Give(std::move(c));
  return reply;
}

absl::StatusOr<RestClient::Reply> RestClient::Call(const char* method, const std::string& path,
                                                   const std::string& body, std::string_view what) {
  absl::StatusOr<Reply> r = CallOnce(method, path, body, what);
  if (!r.ok() || TokenSignOf(r->status, r->body) == TokenSign::kNone) return r;
  // The token may have been renewed in its file since it was read (a cron job running `scontrol
  // token`): read it again and, if it changed, try once more with the new one.
  if (!options_.token_file.empty()) {
    const std::string before = Token();
    if (ReloadToken().ok() && Token() != before) {
      r = CallOnce(method, path, body, what);
      if (!r.ok() || TokenSignOf(r->status, r->body) == TokenSign::kNone) return r;
    }
  }
  return TokenError(*r, what);
}

absl::Status RestClient::TokenError(const Reply& r, std::string_view what_view) {
  const std::string what(what_view);
  const TokenSign sign = TokenSignOf(r.status, r.body);
  const std::string source =
      options_.token_file.empty()
          ? std::string("the token")
          : absl::StrCat("the token in ", base::ForTerminal(options_.token_file));
  const std::string renew = absl::StrCat(
      "renew it with `scontrol token username=", options_.user, " lifespan=SECONDS`",
      options_.token_file.empty() ? ""
                                  : " into the file (read again on the next call, no restart)");
  const absl::Status slurm = ErrorsOf(r.status, r.body, what);
  // What slurmrestd said: its errors, or "HTTP 401: BODY" when it gave none.
  const absl::string_view errors = absl::StripPrefix(slurm.message(), absl::StrCat(what, ": "));
  const std::string said = absl::StartsWith(errors, "HTTP ")
                               ? std::string(errors)
                               : absl::StrCat("HTTP ", r.status, ", ", errors);
  absl::StatusOr<TokenClaims> claims = DecodeToken(Token());
  if (!claims.ok()) {
    return absl::UnauthenticatedError(absl::StrCat(what, ": slurmrestd refused ", source, " (",
                                                   said, "): it is ", claims.status().message(),
                                                   "; make one with `scontrol token`"));
  }
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  if (claims->expires_unix_s <= now) {
    return absl::UnauthenticatedError(absl::StrCat(
        what, ": slurmrestd refused ", source, " (", said, "): it expired at ",
        Rfc3339(claims->expires_unix_s), ", ", now - claims->expires_unix_s, " s ago; ", renew));
  }
  const std::string valid =
      absl::StrCat("its own expiry, ", Rfc3339(claims->expires_unix_s), ", has not passed");
  if (sign == TokenSign::kRefused) {
    return absl::UnauthenticatedError(absl::StrCat(
        what, ": slurmrestd refused ", source, " (", said, "; ", valid,
        "): it is signed with another key than slurmctld's jwt_key, or is for a user other than ",
        base::ForTerminal(options_.user), " (it names '", base::ForTerminal(claims->user), "'); ",
        renew));
  }
  return absl::UnavailableError(
      absl::StrCat(what, ": ", said,
                   ": slurmrestd 22.05 answers so both when slurmctld cannot be reached and when "
                   "it refuses the token; check that slurmctld runs (`scontrol ping`), then ",
                   source, " (", valid, "; names user '", base::ForTerminal(claims->user), "')"));
}

absl::StatusOr<int64_t> RestClient::Submit(const JobSpec& spec) {
  absl::StatusOr<Reply> r = Call("POST", "/job/submit", SubmitBody(spec), "slurm: submit");
  if (!r.ok()) return r.status();
  return ParseSubmitReply(r->status, r->body);
}

absl::Status RestClient::Cancel(int64_t job_id) {
  absl::StatusOr<Reply> r =
      Call("DELETE", absl::StrCat("/job/", job_id), "", absl::StrCat("slurm: cancel ", job_id));
  if (!r.ok()) return r.status();
  return ErrorsOf(r->status, r->body, absl::StrCat("slurm: cancel ", job_id));
}

absl::StatusOr<std::vector<Job>> RestClient::Jobs() {
  absl::StatusOr<Reply> r = Call("GET", "/jobs", "", "slurm: list jobs");
  if (!r.ok()) return r.status();
  if (absl::Status st = ErrorsOf(r->status, r->body, "slurm: list jobs"); !st.ok()) return st;
  return ParseJobs(r->body);
}

absl::StatusOr<std::vector<Node>> RestClient::Nodes() {
  absl::StatusOr<Reply> r = Call("GET", "/nodes", "", "slurm: list nodes");
  if (!r.ok()) return r.status();
  if (absl::Status st = ErrorsOf(r->status, r->body, "slurm: list nodes"); !st.ok()) return st;
  return ParseNodes(r->body, options_.gpu_type_prefix);
}

absl::StatusOr<std::vector<std::string>> RestClient::Partitions() {
  absl::StatusOr<Reply> r = Call("GET", "/partitions", "", "slurm: list partitions");
  if (!r.ok()) return r.status();
  if (absl::Status st = ErrorsOf(r->status, r->body, "slurm: list partitions"); !st.ok()) {
    return st;
  }
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  std::vector<std::string> out;
  if (j.is_object() && j.contains("partitions") && j["partitions"].is_array()) {
    for (const auto& p : j["partitions"]) {
      if (p.is_object() && p.contains("name") && p["name"].is_string()) {
        out.push_back(p["name"].get<std::string>());
      }
    }
  }
  return out;
}

}  // namespace seedance::slurm
