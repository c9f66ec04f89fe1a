// Helpers shared by the subcommands (commands.h).
#include "commands.h"

#include <pthread.h>
#include <signal.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::cli {

bool ParseSeedList(const std::string& text, std::vector<uint64_t>* out) {
  auto seeds = base::ParseSeedList(text, "--seeds");
  if (!seeds.ok()) return false;
  out->insert(out->end(), seeds->begin(), seeds->end());
  return true;
}

sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

void AddKubeFlags(CLI::App* app, KubeFlags* f, const std::string& api_help) {
  app->add_option("--kube-api", f->kube_api, api_help)->type_name("URL");
  app->add_option("--kube-token-file", f->kube_token_file,
                  "With --kube-api: file whose first line is the bearer token for it")
      ->type_name("FILE");
  app->add_option("--kube-ca-file", f->kube_ca_file,
                  "With --kube-api: PEM bundle the API server's certificate must chain to")
      ->type_name("FILE");
  app->add_flag("--kube-in-cluster", f->kube_in_cluster,
                "Reach the API server as the pod's service account (KUBERNETES_SERVICE_HOST, "
                "/var/run/secrets/kubernetes.io/serviceaccount)");
}

void AddConnectionFlags(CLI::App* app, ConnectionFlags* f) {
  app->add_option("--server", f->server,
                  "Server URL, http://HOST:PORT or https://HOST:PORT (default: $SEEDANCE_SERVER, "
                  "else http://127.0.0.1:7070)")
      ->type_name("URL");
  app->add_option("--token-file", f->token_file,
                  "File holding the bearer token (default: $SEEDANCE_TOKEN_FILE; none if unset)")
      ->type_name("FILE");
  app->add_option("--ca-file", f->ca_file, "https: CA certificates to trust (PEM)")
      ->type_name("FILE");
}

api::ClientOptions ClientOptionsOf(const ConnectionFlags& f) {
  api::ClientOptions o;
  o.url = f.server;
  o.token_file = f.token_file;
  o.ca_file = f.ca_file;
  return o;
}

// --kube-api (with --kube-token-file, --kube-ca-file) or --kube-in-cluster; nullopt without.
absl::StatusOr<std::optional<k8s::ApiServerOptions>> KubeOptionsOf(const KubeFlags& f) {
  if (f.kube_in_cluster && !f.kube_api.empty()) {
    return absl::InvalidArgumentError("--kube-api and --kube-in-cluster: give one of them");
  }
  if (f.kube_api.empty() && !f.kube_in_cluster) {
    if (!f.kube_token_file.empty() || !f.kube_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--kube-token-file and --kube-ca-file go with --kube-api URL");
    }
    return std::optional<k8s::ApiServerOptions>();
  }
  k8s::ApiServerOptions o;
  if (f.kube_in_cluster) {
    absl::StatusOr<k8s::ApiServerOptions> in = k8s::InClusterOptions();
    if (!in.ok()) return in.status();
    o = *std::move(in);
  } else {
    o.url = f.kube_api;
    o.ca_file = f.kube_ca_file;
    if (!f.kube_token_file.empty()) {
      absl::StatusOr<std::string> token =
          base::ReadBearerToken(f.kube_token_file, "--kube-token-file");
      if (!token.ok()) return token.status();
      o.token = *std::move(token);
    }
  }
  return std::optional<k8s::ApiServerOptions>(std::move(o));
}

}  // namespace seedance::cli
