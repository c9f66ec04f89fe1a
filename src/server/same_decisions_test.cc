// The same decisions (issue 12): registering the trace's nodes in the simulator's node order for
// seed 42 and submitting the pods through the API in the simulator's fill order (no departures)
// gives exactly the placements the simulator makes for that seed, for fgd and cas.
//
// The server runs in this process (Service + HttpServer on a loopback port, a real SQLite state
// directory) and is driven over HTTP with cpp-httplib's client, one request at a time.

#include <cstdlib>
#include <string>
#include <vector>

#include "fill_reference_testing.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/server/http.h"
#include "seedance/server/service.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::server {
namespace {

using nlohmann::json;

class SameDecisionsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SameDecisionsTest, ServerPlacesEveryPodWhereTheSimulatorDoes) {
  const std::string policy = GetParam();
  absl::StatusOr<testing::FillReference> ref = testing::LoadFillReference(policy);
  if (absl::IsNotFound(ref.status())) {
    if (trace::DataRequired()) FAIL() << "the Alibaba GPU trace is missing";
    GTEST_SKIP() << "the Alibaba GPU trace is missing (SEEDANCE_DATA_DIR)";
  }
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_EQ(ref->placements.size(), ref->pods.size());
  sched::SchedulerOptions so;
  so.default_profile = {"default", policy, {}, {}};
  so.seed = 42;
  so.queue.max_unschedulable_s = 1e9;  // no retries: the simulator tries each pod once
  so.oracle_workload = ref->oracle;
  absl::StatusOr<std::unique_ptr<testing::DecisionServer>> server =
      testing::DecisionServer::Start("seedance-same-" + policy, so);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->PutNodes(ref->ordered).ok());
  httplib::Client& c = (*server)->client();
  int same = 0, placed = 0;
  for (size_t i = 0; i < ref->pods.size(); ++i) {
    const core::PodSpec& p = ref->pods[i];
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
    const core::Placement& want = ref->placements[i];
    if (want.node < 0) {
      ASSERT_EQ(got["phase"], "Pending") << "pod " << i << ": the simulator could not place it";
      continue;
    }
    ++placed;
    ASSERT_EQ(got["phase"], "Bound") << "pod " << i << " " << r->body;
    ASSERT_EQ(got["node"], ref->nodes[want.node].name) << "pod " << i;
    std::vector<int> want_gpus(want.gpu_ids().begin(), want.gpu_ids().end());
    std::vector<int> got_gpus;
    for (const json& g : got["gpus"]) got_gpus.push_back(g["index"].get<int>());
    ASSERT_EQ(got_gpus, want_gpus) << "pod " << i;
    ++same;
  }
  std::printf(
      "%s, seed 42: %zu pods, %d placed by both on the same node and GPUs, %zu left "
      "pending by both\n",
      policy.c_str(), ref->pods.size(), same, ref->pods.size() - placed);
}

INSTANTIATE_TEST_SUITE_P(Policies, SameDecisionsTest, ::testing::Values("fgd", "cas"));

}  // namespace
}  // namespace seedance::server
