#include "seedance/slurm/rest.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/base/io.h"
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

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  absl::string_view t = absl::StripAsciiWhitespace(*text);
  if (size_t nl = t.find('\n'); nl != absl::string_view::npos) t = t.substr(0, nl);
  t = absl::StripAsciiWhitespace(t);
  absl::ConsumePrefix(&t, "SLURM_JWT=");
  if (t.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(base::ForTerminal(path),
                     ": no token (expected what `scontrol token` prints, "
                     "SLURM_JWT=..., or the bare token)"));
  }
  return std::string(t);
}

RestClient::RestClient(RestOptions options)
    : options_(std::move(options)), base_(absl::StrCat("/slurm/", options_.api_version)) {}

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
  } else {
    c->token_ = c->options_.token;
  }
  return c;
}

absl::Status RestClient::ReloadToken() {
  if (options_.token_file.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> t = ReadTokenFile(options_.token_file);
  if (!t.ok()) return t.status();
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(*t);
  return absl::OkStatus();
}

std::string RestClient::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  return token_;
}

std::unique_ptr<httplib::Client> RestClient::Take() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !idle_.empty() || open_ < options_.connections; });
  if (!idle_.empty()) {
    std::unique_ptr<httplib::Client> c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }
  ++open_;
  lock.unlock();
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
    std::lock_guard<std::mutex> lock(mu_);
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
    return absl::UnavailableError(
        absl::StrCat(std::string(what), ": cannot reach slurmrestd at ", base::RedactUrl(options_.url), ": ",
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
  if (r.ok() && (r->status == 401 || r->status == 403) && !options_.token_file.empty()) {
    if (ReloadToken().ok()) r = CallOnce(method, path, body, what);
  }
  if (r.ok() && (r->status == 401 || r->status == 403)) {
    return absl::UnauthenticatedError(absl::StrCat(
        std::string(what), ": slurmrestd refused the token (HTTP ", r->status,
        "); renew it with `scontrol token username=", options_.user, " lifespan=SECONDS`"));
  }
  return r;
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
