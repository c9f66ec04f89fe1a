// Test-only: what the same-decisions tests (fill: same_decisions_test; churn:
// churn_decisions_test) share: fgd's oracle as the server must be handed it, and a server in
// this process on a loopback port, driven over HTTP, with a RAM-backed state directory (when
// there is one: decisions, not durability, are under test, and thousands of sequential fsyncs
// would dominate the run).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/frag.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"

namespace seedance::server::testing {

// fgd's oracle for a server whose nodes are registered in the order `ordered`: the pods' typical
// shapes, their GPU models resolved against that order's model table.
inline absl::StatusOr<sched::TargetWorkload> OracleFor(const std::vector<core::NodeSpec>& ordered,
                                                       std::vector<core::PodSpec> pods,
                                                       double coverage_pct) {
  absl::StatusOr<core::ClusterState> view = core::ClusterState::Create(ordered);
  if (!view.ok()) return view.status();
  for (core::PodSpec& p : pods) p.shape.gpu_model_mask = view->ModelMask(p.gpu_spec);
  return sched::TypicalShapes(sched::CountShapes(pods), coverage_pct);
}

class DecisionServer {
 public:
  // `name` tells state directories of concurrent tests apart.
  static absl::StatusOr<std::unique_ptr<DecisionServer>> Start(const std::string& name,
                                                               sched::SchedulerOptions scheduler) {
    namespace fs = std::filesystem;
    std::unique_ptr<DecisionServer> s(new DecisionServer);
    const fs::path tmp =
        access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path();
    s->o_.state_dir = (tmp / (name + "-" + std::to_string(getpid()))).string();
    fs::remove_all(s->o_.state_dir);
    s->o_.scheduler = std::move(scheduler);
    absl::StatusOr<std::unique_ptr<Service>> service = Service::Start(s->o_);
    if (!service.ok()) return service.status();
    s->service_ = std::move(*service);
    HttpOptions ho;
    ho.port = 0;
    absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(*s->service_, ho);
    if (!http.ok()) return http.status();
    s->http_ = std::move(*http);
    s->client_ = std::make_unique<httplib::Client>("127.0.0.1", s->http_->port());
    s->client_->set_keep_alive(true);
    s->client_->set_tcp_nodelay(true);
    return s;
  }
  ~DecisionServer() {
    client_.reset();  // its keep-alive connection would hold Stop for the keep-alive timeout
    if (http_) http_->Stop();
    if (service_) service_->Shutdown();
    std::filesystem::remove_all(o_.state_dir);
  }

  httplib::Client& client() { return *client_; }

  // PUTs the nodes, in order (the order is the server's tie-break order).
  absl::Status PutNodes(const std::vector<core::NodeSpec>& nodes) {
    for (const core::NodeSpec& n : nodes) {
      nlohmann::json body = {{"cpu_milli", n.cpu_milli},
                             {"memory_mib", n.memory_mib},
                             {"num_gpus", n.num_gpus},
                             {"gpu_model", n.gpu_model}};
      auto r = client_->Put(("/v1/nodes/" + n.name).c_str(), body.dump(), "application/json");
      if (!r) return absl::UnavailableError(absl::StrCat("PUT node ", n.name, ": no reply"));
      if (r->status != 201) {
        return absl::InternalError(absl::StrCat("PUT node ", n.name, ": ", r->status, " ", r->body));
      }
    }
    return absl::OkStatus();
  }

 private:
  DecisionServer() = default;
  ServiceOptions o_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace seedance::server::testing
