// The same decisions in churn (issue 36): the server, fed over HTTP the simulator's arrivals and
// departures in the simulator's order, places every pod when and where the simulator does, for
// bestfit, fgd and cas.
//
// The run: the first 200 GPU nodes of the Alibaba trace, the default pod list, `--mode churn
// --load 1.2 --duration 8h --warmup 0 --seed 42` (a warm start: the cluster begins full, with a
// backlog, so departures wake waiting pods). The simulator runs sched::Scheduler with its own
// options (equivalence groups, RoomFreedWake::kBestFirst); the server runs its defaults (waking
// every pod that fits a freed node) with the queue's backoff off, as the simulator's queue has
// none. The nodes are registered in the simulator's tie-break order for seed 42, as the fill
// test does. The server's event log (GET /v1/watch, long poll) must list the simulator's events
// exactly: PodAdded for an arrival, PodBound on the same node and GPUs for each start, in the
// same places between arrivals and departures, PodDeleted for a departure.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "decision_server_testing.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/sched/frag.h"
#include "seedance/sched/framework.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::server {
namespace {

using nlohmann::json;

constexpr size_t kNodes = 200;

struct ChurnReference {
  sim::Workload workload;
  std::vector<core::NodeSpec> ordered;  // the simulator's tie-break order
  std::vector<sim::SimEvent> events;
  sched::TargetWorkload oracle;  // fgd's, models resolved against `ordered`
};

absl::StatusOr<ChurnReference> RunChurn(const std::string& policy) {
  const std::string dir = trace::DataDir() + "/alibaba-gpu-v2023/csv/";
  auto nodes = trace::ReadNodeCsv(dir + "openb_node_list_gpu_node.csv");
  auto pods = trace::ReadPodCsv(dir + "openb_pod_list_default.csv");
  if (!nodes.ok() || !pods.ok()) return absl::NotFoundError("the Alibaba GPU trace is missing");
  nodes->resize(std::min(nodes->size(), kNodes));
  ChurnReference ref{{*nodes, *pods, "openb_pod_list_default"}, {}, {}, {}};
  sim::SimOptions so;
  so.mode = sim::Mode::kChurn;
  so.seed = 42;
  so.load = 1.2;
  so.duration_h = 8;
  so.warmup_h = 0;
  so.record_placements = true;
  absl::StatusOr<sim::RunResult> run = sim::Run(ref.workload, policy, so);
  if (!run.ok()) return run.status();
  ref.events = std::move(run->events);
  for (int i : sched::Framework::RandomNodeOrder(static_cast<int>(nodes->size()), so.seed)) {
    ref.ordered.push_back((*nodes)[static_cast<size_t>(i)]);
  }
  absl::StatusOr<sched::TargetWorkload> oracle =
      testing::OracleFor(ref.ordered, *pods, so.typical_coverage_pct);
  if (!oracle.ok()) return oracle.status();
  ref.oracle = *std::move(oracle);
  return ref;
}

// One event as both sides write it: "Added p7", "Bound p7 node-12 [0,1]", "Deleted p7".
std::string Line(const std::string& kind, const std::string& pod, const std::string& node = "",
                 const std::vector<int>& gpus = {}) {
  std::string out = kind + " " + pod;
  if (kind != "Bound") return out;
  out += " " + node + " [";
  for (size_t i = 0; i < gpus.size(); ++i) out += (i ? "," : "") + std::to_string(gpus[i]);
  return out + "]";
}

std::vector<std::string> SimulatorLines(const ChurnReference& ref, int* woken) {
  std::vector<std::string> out;
  bool after_departure = false;
  for (const sim::SimEvent& e : ref.events) {
    const std::string pod = "p" + std::to_string(e.pod);
    if (e.kind == sim::SimEvent::kArrive) out.push_back(Line("Added", pod));
    if (e.kind == sim::SimEvent::kDepart) out.push_back(Line("Deleted", pod));
    if (e.kind == sim::SimEvent::kStart) {
      const std::span<const int8_t> ids = e.placement.gpu_ids();
      out.push_back(Line("Bound", pod, ref.workload.nodes[e.placement.node].name,
                         std::vector<int>(ids.begin(), ids.end())));
      *woken += after_departure ? 1 : 0;
    } else {
      after_departure = e.kind == sim::SimEvent::kDepart;
    }
  }
  return out;
}

// The server's pod events after revision `since`, read by long polls until `last`. A PodDeleted
// event names the pod by uid only: `names` maps uids to names.
std::vector<std::string> ServerLines(httplib::Client& c, int64_t since, int64_t last,
                                     const std::map<std::string, std::string>& names) {
  std::vector<std::string> out;
  while (since < last) {
    auto r = c.Get(("/v1/watch?format=json&timeout=5s&since=" + std::to_string(since)).c_str());
    if (!r || r->status != 200) {
      ADD_FAILURE() << "watch since " << since << ": " << (r ? r->body : "no reply");
      return out;
    }
    const json reply = json::parse(r->body);
    if (reply.at("events").empty()) {
      ADD_FAILURE() << "watch since " << since << " returned no event before " << last;
      return out;
    }
    for (const json& e : reply.at("events")) {
      since = e.at("revision").get<int64_t>();
      const std::string type = e.at("type").get<std::string>();
      if (type != "PodAdded" && type != "PodBound" && type != "PodDeleted") continue;
      const json& pod = e.at("object");
      if (type == "PodDeleted") {
        auto name = names.find(pod.at("uid").get<std::string>());
        out.push_back(Line("Deleted", name == names.end() ? "(unknown uid)" : name->second));
        continue;
      }
      std::vector<int> gpus;
      for (const json& g : pod.at("gpus")) gpus.push_back(g.at("index").get<int>());
      const json& node = pod.at("node");
      out.push_back(Line(type.substr(3), pod.at("name").get<std::string>(),
                         node.is_string() ? node.get<std::string>() : "", gpus));
    }
  }
  return out;
}

class ChurnDecisionsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ChurnDecisionsTest, ServerFedTheSimulatorsEventsPlacesAsItDoes) {
  const std::string policy = GetParam();
  absl::StatusOr<ChurnReference> ref = RunChurn(policy);
  if (absl::IsNotFound(ref.status())) {
    if (trace::DataRequired()) FAIL() << "the Alibaba GPU trace is missing";
    GTEST_SKIP() << "the Alibaba GPU trace is missing (SEEDANCE_DATA_DIR)";
  }
  ASSERT_TRUE(ref.ok()) << ref.status();
  sched::SchedulerOptions so;
  so.default_profile = {"default", policy, {}, {}};
  so.seed = 42;
  so.queue.initial_backoff_s = 0;  // the simulator's queue has no backoff
  so.queue.max_backoff_s = 0;
  so.queue.max_unschedulable_s = 1e9;
  so.oracle_workload = ref->oracle;
  absl::StatusOr<std::unique_ptr<testing::DecisionServer>> server =
      testing::DecisionServer::Start("seedance-churn-" + policy, so);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->PutNodes(ref->ordered).ok());
  httplib::Client& c = (*server)->client();
  auto listed = c.Get("/v1/pods?limit=1");
  ASSERT_TRUE(listed && listed->status == 200);
  const int64_t start = json::parse(listed->body).at("revision").get<int64_t>();

  std::map<int64_t, std::string> uid;        // the run's pod number -> the server's uid
  std::map<std::string, std::string> names;  // the server's uid -> the pod's name
  for (const sim::SimEvent& e : ref->events) {
    if (e.kind == sim::SimEvent::kArrive) {
      const core::PodSpec& p = ref->workload.pods[static_cast<size_t>(e.trace_index)];
      json body = {{"name", "p" + std::to_string(e.pod)},
                   {"cpu_milli", p.shape.cpu_milli},
                   {"memory_mib", p.shape.memory_mib},
                   {"num_gpu", p.shape.num_gpu},
                   {"gpu_milli", p.shape.num_gpu > 0 ? p.shape.gpu_milli : 0},
                   {"gpu_spec", p.gpu_spec},
                   {"priority", p.priority}};
      auto r = c.Post("/v1/pods", body.dump(), "application/json");
      ASSERT_TRUE(r) << "POST pod " << e.pod;
      ASSERT_EQ(r->status, 201) << r->body;
      uid[e.pod] = json::parse(r->body).at("uid").get<std::string>();
      names[uid[e.pod]] = body.at("name").get<std::string>();
    } else if (e.kind == sim::SimEvent::kDepart) {
      auto r = c.Delete(("/v1/pods/" + uid.at(e.pod)).c_str());
      ASSERT_TRUE(r) << "DELETE pod " << e.pod;
      ASSERT_EQ(r->status, 200) << r->body;
    }
  }
  listed = c.Get("/v1/pods?limit=1");
  ASSERT_TRUE(listed && listed->status == 200);
  const int64_t last = json::parse(listed->body).at("revision").get<int64_t>();

  int woken = 0;
  const std::vector<std::string> want = SimulatorLines(*ref, &woken);
  const std::vector<std::string> got = ServerLines(c, start, last, names);
  size_t same = 0;
  while (same < want.size() && same < got.size() && want[same] == got[same]) ++same;
  EXPECT_EQ(same, want.size()) << "first difference at event " << same << ": simulator '"
                               << (same < want.size() ? want[same] : "(end)") << "', server '"
                               << (same < got.size() ? got[same] : "(end)") << "'";
  EXPECT_EQ(got.size(), want.size());
  // Not vacuous: the run must place waiting pods on room that departures freed.
  EXPECT_GT(woken, 100);
  std::printf(
      "%s, seed 42: %zu events (%zu pods), %d pods placed on room a departure freed; "
      "the first %zu events the same on both\n",
      policy.c_str(), want.size(), uid.size(), woken, same);
}

INSTANTIATE_TEST_SUITE_P(Policies, ChurnDecisionsTest, ::testing::Values("bestfit", "fgd", "cas"));

}  // namespace
}  // namespace seedance::server
