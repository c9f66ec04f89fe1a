// The same decisions (issue 12): registering the trace's nodes in the simulator's node order for
// seed 42 and submitting the pods through the API in the simulator's fill order (no departures)
// gives exactly the placements the simulator makes for that seed, for fgd and cas.
//
// The server runs in this process (Service + HttpServer on a loopback port, a real SQLite state
// directory) and is driven over HTTP with cpp-httplib's client, one request at a time.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/sched/frag.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Trace {
  std::vector<core::NodeSpec> nodes;
  std::vector<core::PodSpec> pods;
};

bool LoadTrace(Trace* t) {
  const std::string dir = trace::DataDir() + "/alibaba-gpu-v2023/csv/";
  auto nodes = trace::ReadNodeCsv(dir + "openb_node_list_gpu_node.csv");
  auto pods = trace::ReadPodCsv(dir + "openb_pod_list_default.csv");
  if (!nodes.ok() || !pods.ok()) return false;
  t->nodes = std::move(*nodes);
  t->pods = std::move(*pods);
  return true;
}

class SameDecisionsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SameDecisionsTest, ServerPlacesEveryPodWhereTheSimulatorDoes) {
  Trace t;
  if (!LoadTrace(&t)) {
    if (trace::DataRequired()) FAIL() << "the Alibaba GPU trace is missing";
    GTEST_SKIP() << "the Alibaba GPU trace is missing (SEEDANCE_DATA_DIR)";
  }
  const std::string policy = GetParam();
  sim::Workload w{t.nodes, t.pods, "openb_pod_list_default"};
  sim::SimOptions so;
  so.mode = sim::Mode::kFill;
  so.seed = 42;
  so.record_placements = true;
  absl::StatusOr<sim::FillPlan> plan = sim::PlanFill(w, so);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<sim::RunResult> run = sim::Run(w, policy, so);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->placements.size(), plan->pods.size());
  std::vector<int> node_order = plan->node_order;
  if (node_order.empty()) {
    node_order = sched::Framework::RandomNodeOrder(static_cast<int>(t.nodes.size()), 42);
  }

  // The server's view: nodes in the simulator's tie-break order; fgd gets the same oracle as in
  // the simulator (the replayed pods' typical shapes, models resolved against this node order).
  std::vector<core::NodeSpec> ordered;
  for (int i : node_order) ordered.push_back(t.nodes[i]);
  absl::StatusOr<core::ClusterState> view = core::ClusterState::Create(ordered);
  ASSERT_TRUE(view.ok());
  std::vector<core::PodSpec> replayed = plan->pods;
  for (core::PodSpec& p : replayed) p.shape.gpu_model_mask = view->ModelMask(p.gpu_spec);
  ServiceOptions o;
  // Decisions, not durability, are under test: a RAM-backed state directory (when there is one)
  // keeps 20,000 sequential fsyncs from dominating the run.
  const fs::path tmp =
      access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path();
  o.state_dir = (tmp / ("seedance-same-" + policy + "-" + std::to_string(getpid()))).string();
  fs::remove_all(o.state_dir);
  o.scheduler.default_profile = {"default", policy, {}, {}};
  o.scheduler.seed = 42;
  o.scheduler.queue.max_unschedulable_s = 1e9;  // no retries: the simulator tries each pod once
  o.scheduler.oracle_workload =
      sched::TypicalShapes(sched::CountShapes(replayed), so.typical_coverage_pct);
  absl::StatusOr<std::unique_ptr<Service>> service = Service::Start(o);
  ASSERT_TRUE(service.ok()) << service.status();
  HttpOptions ho;
  ho.port = 0;
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(**service, ho);
  ASSERT_TRUE(http.ok()) << http.status();
  httplib::Client c("127.0.0.1", (*http)->port());
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);

  for (const core::NodeSpec& n : ordered) {
    json body = {{"cpu_milli", n.cpu_milli},
                 {"memory_mib", n.memory_mib},
                 {"num_gpus", n.num_gpus},
                 {"gpu_model", n.gpu_model}};
    auto r = c.Put(("/v1/nodes/" + n.name).c_str(), body.dump(), "application/json");
    ASSERT_TRUE(r) << "PUT node " << n.name;
    ASSERT_EQ(r->status, 201) << r->body;
  }
  int same = 0, placed = 0;
  for (size_t i = 0; i < plan->pods.size(); ++i) {
    const core::PodSpec& p = plan->pods[i];
    json body = {{"name", "pod-" + std::to_string(i)},
                 {"cpu_milli", p.shape.cpu_milli},
                 {"memory_mib", p.shape.memory_mib},
                 {"num_gpu", p.shape.num_gpu},
                 {"gpu_milli", p.shape.num_gpu > 0 ? p.shape.gpu_milli : 0},
                 {"gpu_spec", p.gpu_spec}};
    auto r = c.Post("/v1/pods", body.dump(), "application/json");
    ASSERT_TRUE(r) << "POST pod " << i;
    ASSERT_EQ(r->status, 201) << r->body;
    json got = json::parse(r->body);
    const core::Placement& want = run->placements[i];
    if (want.node < 0) {
      ASSERT_EQ(got["phase"], "Pending") << "pod " << i << ": the simulator could not place it";
      continue;
    }
    ++placed;
    ASSERT_EQ(got["phase"], "Bound") << "pod " << i << " " << r->body;
    ASSERT_EQ(got["node"], t.nodes[want.node].name) << "pod " << i;
    std::vector<int> want_gpus(want.gpu_ids().begin(), want.gpu_ids().end());
    std::vector<int> got_gpus;
    for (const json& g : got["gpus"]) got_gpus.push_back(g["index"].get<int>());
    ASSERT_EQ(got_gpus, want_gpus) << "pod " << i;
    ++same;
  }
  std::printf(
      "%s, seed 42: %zu pods, %d placed by both on the same node and GPUs, %zu left "
      "pending by both\n",
      policy.c_str(), plan->pods.size(), same, plan->pods.size() - placed);
  (*http)->Stop();
  (*service)->Shutdown();
  fs::remove_all(o.state_dir);
}

INSTANTIATE_TEST_SUITE_P(Policies, SameDecisionsTest, ::testing::Values("fgd", "cas"));

}  // namespace
}  // namespace seedance::server
