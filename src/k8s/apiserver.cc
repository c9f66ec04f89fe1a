#include "seedance/k8s/apiserver.h"

#include <chrono>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/base/io.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"

namespace seedance::k8s {
namespace {

using json = nlohmann::json;

// Largest reply read (a pod object with its managedFields).
constexpr size_t kMaxReplyBytes = size_t{4} << 20;

absl::Status FromHttpStatus(int status, const std::string& what, const std::string& body) {
  std::string message = base::ForTerminal(base::Clip(body, 300));
  std::string reason;
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (base::StringField(j, "kind") == "Status") {
    message = base::ForTerminal(base::Clip(base::StringField(j, "message"), 300));
    reason = base::StringField(j, "reason");
  }
  const std::string text = absl::StrCat(what, ": HTTP ", status, reason.empty() ? "" : " ", reason,
                                        message.empty() ? "" : ": ", message);
  switch (status) {
    case 400:
    case 422:
      return absl::InvalidArgumentError(text);
    case 401:
      return absl::UnauthenticatedError(text);
    case 403:
      return absl::PermissionDeniedError(text);
    case 404:
      return absl::NotFoundError(text);
    case 409:
      return absl::AlreadyExistsError(text);
    default:
      return absl::UnavailableError(text);
  }
}

// Kubernetes names are DNS subdomains: checked before they go into a request path, so that no
// escaping is needed.
bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

class HttpApiServerClient : public ApiServerClient {
 public:
  explicit HttpApiServerClient(ApiServerOptions o) : options_(std::move(o)), http_(options_.url) {
    const auto timeout = std::chrono::microseconds(static_cast<int64_t>(options_.timeout_s * 1e6));
    const time_t sec = static_cast<time_t>(timeout.count() / 1000000);
    const time_t usec = static_cast<time_t>(timeout.count() % 1000000);
    http_.set_connection_timeout(sec, usec);
    http_.set_read_timeout(sec, usec);
    http_.set_write_timeout(sec, usec);
    http_.set_keep_alive(true);
    http_.set_tcp_nodelay(true);  // else each request waits for the server's delayed ACK
    if (!options_.ca_file.empty()) http_.set_ca_cert_path(options_.ca_file.c_str());
  }

  bool valid() const {
    base::MutexLock lock(mu_);
    return http_.is_valid();
  }

  absl::Status AnnotatePod(const std::string& ns, const std::string& name,
                           const std::map<std::string, std::string>& annotations) override {
    if (!ValidName(ns) || !ValidName(name)) {
      return absl::InvalidArgumentError("pod namespace or name is not a Kubernetes name");
    }
    const json patch = {{"metadata", {{"annotations", annotations}}}};
    return Call("PATCH", absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name), patch.dump(),
                "application/merge-patch+json", absl::StrCat("annotate pod ", ns, "/", name));
  }

  absl::Status BindPod(const std::string& ns, const std::string& name, const std::string& uid,
                       const std::string& node) override {
    if (!ValidName(ns) || !ValidName(name)) {
      return absl::InvalidArgumentError("pod namespace or name is not a Kubernetes name");
    }
    json binding = {{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", name}, {"namespace", ns}}},
                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    if (!uid.empty()) binding["metadata"]["uid"] = uid;
    return Call("POST", absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name, "/binding"),
                binding.dump(), "application/json",
                absl::StrCat("bind pod ", ns, "/", name, " to ", node));
  }

 private:
  absl::Status Call(const std::string& method, const std::string& path, const std::string& body,
                    const std::string& content_type, const std::string& what) {
    base::MutexLock lock(mu_);
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.body = body;
    req.headers.emplace("Accept", "application/json");
    req.headers.emplace("Content-Type", content_type);
    req.headers.emplace("User-Agent", "seedance-extender");
    if (!options_.token.empty()) req.headers.emplace("Authorization", "Bearer " + options_.token);
    std::string reply;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (n > kMaxReplyBytes - reply.size()) return false;
      reply.append(data, n);
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    if (!http_.send(req, res, err)) {
      return absl::UnavailableError(
          absl::StrCat(what, ": ", base::RedactUrl(options_.url), ": ", httplib::to_string(err)));
    }
    if (res.status < 200 || res.status >= 300) return FromHttpStatus(res.status, what, reply);
    return absl::OkStatus();
  }

  ApiServerOptions options_;
  mutable base::Mutex mu_;
  httplib::Client http_ ABSL_GUARDED_BY(mu_);  // one request at a time
};

}  // namespace

absl::StatusOr<ApiServerOptions> InClusterOptions(const std::string& account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return absl::FailedPreconditionError(
        "not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset "
        "(give --kube-api URL and --kube-token-file instead)");
  }
  ApiServerOptions o;
  const std::string h = host;
  o.url = absl::StrCat("https://", h.find(':') != std::string::npos ? "[" + h + "]" : h, ":", port);
  absl::StatusOr<std::string> token =
      base::ReadBearerToken(account_dir + "/token", "--kube-in-cluster");
  if (!token.ok()) return token.status();
  o.token = *std::move(token);
  o.ca_file = account_dir + "/ca.crt";
  return o;
}

absl::StatusOr<std::unique_ptr<ApiServerClient>> NewApiServerClient(ApiServerOptions options) {
  if (!absl::StartsWith(options.url, "http://") && !absl::StartsWith(options.url, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kube-api: '", base::ForTerminal(base::Clip(base::RedactUrl(options.url), 80)),
                     "' is not an http:// or https:// URL of the Kubernetes API server"));
  }
  while (absl::EndsWith(options.url, "/")) options.url.pop_back();
  if (!(options.timeout_s > 0) || options.timeout_s > 600) {
    return absl::InvalidArgumentError("API server timeout must be in (0, 600] seconds");
  }
  auto c = std::make_unique<HttpApiServerClient>(std::move(options));
  if (!c->valid()) return absl::InvalidArgumentError("--kube-api: cannot set up a client for it");
  return c;
}

}  // namespace seedance::k8s
