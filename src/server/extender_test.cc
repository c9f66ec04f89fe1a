// The kube-scheduler extender served by the server (/k8s/extender/v1/), driven over HTTP the way
// kube-scheduler drives it (pkg/scheduler/extender.go: filter, then prioritize on the nodes that
// passed, then bind on the chosen node), with the Kubernetes API server played by a fake.
//
// No kube-apiserver can run here, so the API server is played by k8s::testing::FakeApiServer
// (src/k8s/fake_apiserver_testing.h, where each shape it serves is documented with the upstream
// source it was read from). It records every call so the test can check what bind sent and in
// which order.
//
// The same decisions (issue 15): the default trace's first 2,000 pods sent through filter ->
// prioritize -> bind against its 1,213 nodes (nodeCacheCapable: node names) are placed exactly
// as `seedance simulate` places them in that order.
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../k8s/fake_apiserver_testing.h"
#include "fill_reference_testing.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/k8s/apiserver.h"
#include "seedance/sched/frag.h"
#include "seedance/server/http.h"
#include "seedance/server/kube_sync.h"
#include "seedance/server/service.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::server {
namespace {

namespace fs = std::filesystem;
using k8s::testing::FakeApiServer;
using nlohmann::json;

// A server in this process with the fake API server behind its extender.
class ExtenderServer {
 public:
  ExtenderServer(const std::string& policy, const std::string& api_url,
                 sched::TargetWorkload oracle = {}) {
    const fs::path tmp =
        access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path();
    o_.state_dir = (tmp / ("seedance-ext-" + policy + "-" + std::to_string(getpid()))).string();
    fs::remove_all(o_.state_dir);
    o_.scheduler.default_profile = {"default", policy, {}, {}};
    o_.scheduler.seed = 42;
    o_.scheduler.oracle_workload = std::move(oracle);
    service_ = std::move(*Service::Start(o_));
    HttpOptions ho;
    ho.port = 0;
    ho.max_body_bytes = 8 << 20;
    k8s::ApiServerOptions ao;
    ao.url = api_url;
    ho.kube_api = std::move(*k8s::NewApiServerClient(ao));
    http_ = std::move(*HttpServer::Start(*service_, ho));
    client_ = std::make_unique<httplib::Client>("127.0.0.1", http_->port());
    client_->set_keep_alive(true);
    client_->set_tcp_nodelay(true);
  }
  ~ExtenderServer() {
    client_.reset();  // its keep-alive connection would hold Stop for the keep-alive timeout
    http_->Stop();
    service_->Shutdown();
    fs::remove_all(o_.state_dir);
  }
  httplib::Client& client() { return *client_; }
  Service& service() { return *service_; }
  // POSTs `body` to the verb; the reply's status and JSON.
  std::pair<int, json> Verb(const std::string& verb, const json& body) {
    auto r = client_->Post(("/k8s/extender/v1/" + verb).c_str(), body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }

 private:
  ServiceOptions o_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<httplib::Client> client_;
};

std::string Uid(size_t i) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012zx", i);
  return buf;
}

// A v1.Pod as the scheduler sends it, requesting `shape` the way a user would write it.
json PodJson(size_t i, const core::PodShape& shape, const std::string& gpu_spec) {
  json limits = json::object();
  if (shape.num_gpu > 0 && shape.gpu_milli >= 1000) {
    limits["nvidia.com/gpu"] = std::to_string(shape.num_gpu);
  } else if (shape.num_gpu > 0) {
    limits["seedance.io/gpu-milli"] = std::to_string(shape.gpu_milli);
  }
  json spec = {{"containers",
                {{{"name", "main"},
                  {"image", "trainer:1"},
                  {"resources",
                   {{"requests",
                     {{"cpu", std::to_string(shape.cpu_milli) + "m"},
                      {"memory", std::to_string(shape.memory_mib) + "Mi"}}},
                    {"limits", limits}}}}}},
               {"schedulerName", "seedance"}};
  if (!gpu_spec.empty()) {
    std::vector<std::string> models;
    for (size_t s = 0, bar; s <= gpu_spec.size(); s = bar + 1) {
      bar = std::min(gpu_spec.find('|', s), gpu_spec.size());
      models.push_back(gpu_spec.substr(s, bar - s));
    }
    spec["affinity"] = {{"nodeAffinity",
                         {{"requiredDuringSchedulingIgnoredDuringExecution",
                           {{"nodeSelectorTerms",
                             {{{"matchExpressions",
                                {{{"key", "seedance.io/gpu-model"},
                                  {"operator", "In"},
                                  {"values", models}}}}}}}}}}}};
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "pod-" + std::to_string(i)}, {"namespace", "default"}, {"uid", Uid(i)}}},
          {"spec", spec},
          {"status", {{"phase", "Pending"}}}};
}

void PutNode(ExtenderServer& s, const std::string& name, int gpus, const std::string& model) {
  json body = {
      {"cpu_milli", 64000}, {"memory_mib", 262144}, {"num_gpus", gpus}, {"gpu_model", model}};
  auto r = s.client().Put(("/v1/nodes/" + name).c_str(), body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
}

TEST(ExtenderServerTest, BindAnnotatesThenCreatesTheBinding) {
  FakeApiServer api;
  ExtenderServer s("bestfit", api.url());
  PutNode(s, "gpu-a", 2, "A100");
  PutNode(s, "gpu-b", 4, "A100");
  const json pod =
      PodJson(1, {.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = 250}, "");
  auto [fs, filtered] = s.Verb("filter", {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}});
  ASSERT_EQ(fs, 200);
  ASSERT_EQ(filtered["NodeNames"], json({"gpu-a", "gpu-b"}));
  auto [ps, scores] = s.Verb("prioritize", {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}});
  ASSERT_EQ(ps, 200);
  std::string best;
  for (const json& h : scores) {
    if (h["Score"] == 10) best = h["Host"];
  }
  ASSERT_FALSE(best.empty()) << scores.dump();
  auto [bs, bound] = s.Verb(
      "bind",
      {{"PodName", "pod-1"}, {"PodNamespace", "default"}, {"PodUID", Uid(1)}, {"Node", best}});
  ASSERT_EQ(bs, 200);
  EXPECT_EQ(bound, json({{"Error", ""}}));
  const std::vector<FakeApiServer::Call> calls = api.TakeCalls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].method, "PATCH");
  EXPECT_EQ(calls[0].path, "/api/v1/namespaces/default/pods/pod-1");
  EXPECT_EQ(calls[0].content_type, "application/merge-patch+json");
  const std::string gpus = calls[0].body["metadata"]["annotations"]["seedance.io/gpus"];
  EXPECT_EQ(gpus.substr(gpus.find(':')), ":250");
  EXPECT_EQ(calls[1].method, "POST");
  EXPECT_EQ(calls[1].path, "/api/v1/namespaces/default/pods/pod-1/binding");
  EXPECT_EQ(calls[1].body["kind"], "Binding");
  EXPECT_EQ(calls[1].body["target"],
            json({{"apiVersion", "v1"}, {"kind", "Node"}, {"name", best}}));
  EXPECT_EQ(calls[1].body["metadata"]["uid"], Uid(1));
  // The ledger holds it on that node and GPU.
  auto r = s.client().Get(("/v1/pods/" + Uid(1)).c_str());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json got = json::parse(r->body);
  EXPECT_EQ(got["node"], best);
  EXPECT_EQ(got["gpus"][0]["milli"], 250);
  EXPECT_EQ(std::to_string(got["gpus"][0]["index"].get<int>()), gpus.substr(0, gpus.find(':')));
}

TEST(ExtenderServerTest, RetriedBindIsTheSameDecision) {
  FakeApiServer api;
  ExtenderServer s("bestfit", api.url());
  PutNode(s, "gpu-a", 2, "A100");
  const json pod =
      PodJson(4, {.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = 1000}, "");
  ASSERT_EQ(s.Verb("filter", {{"Pod", pod}, {"NodeNames", {"gpu-a"}}}).first, 200);
  const json bind = {
      {"PodName", "pod-4"}, {"PodNamespace", "default"}, {"PodUID", Uid(4)}, {"Node", "gpu-a"}};
  EXPECT_EQ(s.Verb("bind", bind).second, json({{"Error", ""}}));
  // kube-scheduler did not see the reply and binds again: the same answer, nothing doubled.
  EXPECT_EQ(s.Verb("bind", bind).second, json({{"Error", ""}}));
  auto r = s.client().Get("/v1/nodes/gpu-a");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body)["allocated"]["gpu_milli"], 1000);
  // Binding it elsewhere is refused.
  PutNode(s, "gpu-b", 2, "A100");
  json elsewhere = bind;
  elsewhere["Node"] = "gpu-b";
  EXPECT_NE(s.Verb("bind", elsewhere).second["Error"], "");
}

TEST(ExtenderServerTest, RefusedBindingIsForgotten) {
  FakeApiServer api;
  ExtenderServer s("bestfit", api.url());
  PutNode(s, "gpu-a", 1, "A100");
  const json pod =
      PodJson(2, {.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = 1000}, "");
  ASSERT_EQ(s.Verb("filter", {{"Pod", pod}, {"NodeNames", {"gpu-a"}}}).first, 200);
  api.RefuseBinding("pod-2");
  auto [bs, bound] = s.Verb(
      "bind",
      {{"PodName", "pod-2"}, {"PodNamespace", "default"}, {"PodUID", Uid(2)}, {"Node", "gpu-a"}});
  ASSERT_EQ(bs, 200);
  EXPECT_NE(bound["Error"].get<std::string>().find("Conflict"), std::string::npos) << bound;
  auto r = s.client().Get(("/v1/pods/" + Uid(2)).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;  // forgotten: the GPU is free again
  const json again =
      PodJson(3, {.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = 1000}, "");
  auto [fs, filtered] = s.Verb("filter", {{"Pod", again}, {"NodeNames", {"gpu-a"}}});
  ASSERT_EQ(fs, 200);
  EXPECT_EQ(filtered["NodeNames"], json({"gpu-a"}));
}

TEST(ExtenderServerTest, BindOfAPodNeverFilteredIsAnError) {
  FakeApiServer api;
  ExtenderServer s("bestfit", api.url());
  PutNode(s, "gpu-a", 1, "A100");
  auto [bs, bound] = s.Verb(
      "bind",
      {{"PodName", "ghost"}, {"PodNamespace", "default"}, {"PodUID", Uid(9)}, {"Node", "gpu-a"}});
  ASSERT_EQ(bs, 200);
  EXPECT_NE(bound["Error"].get<std::string>().find("not filtered"), std::string::npos);
  EXPECT_TRUE(api.TakeCalls().empty());
}

// A valid pod asking more GPUs than any node has is not a malformed request: 200, every node
// failed as unresolvable with the reason (kube-scheduler then reports the pod unschedulable), and
// prioritize scores every node 0.
TEST(ExtenderServerTest, APodAskingMoreGpusThanAnyNodeFailsEveryNodeWithTheReason) {
  FakeApiServer api;
  ExtenderServer s("bestfit", api.url());
  PutNode(s, "gpu-a", 8, "A100");
  const json pod = PodJson(1, {.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 64,
                               .gpu_milli = 1000}, "");
  auto [fs, filtered] = s.Verb("filter", {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}});
  ASSERT_EQ(fs, 200) << filtered;
  EXPECT_EQ(filtered["Error"], "");
  for (const char* n : {"gpu-a", "gpu-b"}) {
    EXPECT_NE(filtered["FailedAndUnresolvableNodes"][n].get<std::string>().find(
                  "asks for 64 GPUs; a node has at most 16"),
              std::string::npos)
        << filtered;
  }
  auto [ps, scores] = s.Verb("prioritize", {{"Pod", pod}, {"NodeNames", {"gpu-a"}}});
  ASSERT_EQ(ps, 200) << scores;
  EXPECT_EQ(scores[0]["Score"], 0) << scores;
}

TEST(ExtenderServerTest, MalformedBodiesAre400WithTheJsonPath) {
  FakeApiServer api;
  ExtenderServer s("bestfit", api.url());
  auto [st, err] =
      s.Verb("filter", {{"Pod", PodJson(1, {.cpu_milli = 1}, "")}, {"NodeNames", {"a", 7}}});
  EXPECT_EQ(st, 400);
  EXPECT_EQ(err["error"]["message"].get<std::string>().rfind("$.NodeNames[1]: ", 0), 0u) << err;
  auto r = s.client().Post("/k8s/extender/v1/prioritize", "{\"Pod\": ", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  json bad = PodJson(1, {.cpu_milli = 1}, "");
  bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  auto [st2, err2] = s.Verb("filter", {{"Pod", bad}, {"NodeNames", json::array()}});
  EXPECT_EQ(st2, 400);
  EXPECT_NE(err2["error"]["message"].get<std::string>().find(
                "$.Pod.spec.containers[0].resources.requests.cpu"),
            std::string::npos)
      << err2;
}

json KubeNode(const std::string& name, int gpus) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"nvidia.com/gpu.product", "A100"}, {"nvidia.com/gpu.count", std::to_string(gpus)}}}}},
      {"spec", json::object()},
      {"status", {{"allocatable", {{"cpu", "64"}, {"memory", "256Gi"}}}}}};
}

json BoundPod(size_t i, const std::string& node, const std::string& gpus_annotation) {
  json p = PodJson(i, {.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = 1000}, "");
  p["spec"]["nodeName"] = node;
  p["status"]["phase"] = "Running";
  if (!gpus_annotation.empty()) p["metadata"]["annotations"]["seedance.io/gpus"] = gpus_annotation;
  return p;
}

// Polls GET path on the server until `ok` holds for its (status, body), up to 20 s.
template <typename Ok>
bool Eventually(ExtenderServer& s, const std::string& path, Ok ok) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = s.client().Get(path.c_str());
    if (r && ok(r->status, json::parse(r->body, nullptr, false))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(KubeSyncTest, NodesAndPodsFollowTheClusterByListAndWatch) {
  FakeApiServer api;
  api.SetList("nodes", {KubeNode("n1", 2), KubeNode("n2", 2)});
  api.SetList("pods", {BoundPod(11, "n1", "1:1000"), PodJson(12, {.cpu_milli = 1000}, "")});
  ExtenderServer s("bestfit", api.url());
  k8s::ApiServerOptions o;
  o.url = api.url();
  std::unique_ptr<KubeSync> sync = KubeSync::Start(s.service(), o);
  // The list: both nodes, the pod another scheduler bound on n1's GPU 1; the pending one waits.
  EXPECT_TRUE(Eventually(
      s, "/v1/nodes", [](int st, const json& j) { return st == 200 && j["items"].size() == 2; }));
  EXPECT_TRUE(Eventually(s, "/v1/pods/" + Uid(11), [](int st, const json& j) {
    return st == 200 && j["node"] == "n1" && j["gpus"] == json({{{"index", 1}, {"milli", 1000}}});
  }));
  EXPECT_TRUE(Eventually(s, "/v1/pods/" + Uid(12), [](int st, const json&) { return st == 404; }));
  // The watch: a pod bound without a decision on it gets the policy's GPUs; ended pods leave.
  api.Push("pods", "ADDED", BoundPod(13, "n2", ""));
  EXPECT_TRUE(Eventually(s, "/v1/pods/" + Uid(13), [](int st, const json& j) {
    return st == 200 && j["node"] == "n2" && j["gpus"].size() == 1;
  }));
  api.Push("pods", "DELETED", BoundPod(11, "n1", "1:1000"));
  EXPECT_TRUE(Eventually(s, "/v1/pods/" + Uid(11), [](int st, const json&) { return st == 404; }));
  json done = BoundPod(13, "n2", "");
  done["status"]["phase"] = "Succeeded";
  api.Push("pods", "MODIFIED", done);
  EXPECT_TRUE(Eventually(s, "/v1/pods/" + Uid(13), [](int st, const json&) { return st == 404; }));
  // A cordon and a 410 Gone: the informer lists again, and n2, gone from the list, is deleted.
  json cordoned = KubeNode("n1", 2);
  cordoned["spec"]["unschedulable"] = true;
  api.Push("nodes", "MODIFIED", cordoned);
  EXPECT_TRUE(Eventually(s, "/v1/nodes/n1",
                         [](int st, const json& j) { return st == 200 && j["cordoned"] == true; }));
  api.SetList("nodes", json::array({cordoned}));
  api.Push("nodes", "ERROR",
           {{"kind", "Status"},
            {"code", 410},
            {"reason", "Expired"},
            {"message", "too old resource version"}});
  EXPECT_TRUE(Eventually(s, "/v1/nodes/n2", [](int st, const json&) { return st == 404; }));
  const KubeSyncStats stats = sync->stats();
  EXPECT_GE(stats.nodes.lists, 2);
  EXPECT_EQ(stats.adopted, 2);
  EXPECT_EQ(stats.unaccounted, 0);
}

class ExtenderSameDecisionsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExtenderSameDecisionsTest, FilterPrioritizeBindPlacesAsTheSimulatorDoes) {
  const std::string policy = GetParam();
  absl::StatusOr<testing::FillReference> ref = testing::LoadFillReference(policy);
  if (absl::IsNotFound(ref.status())) {
    if (trace::DataRequired()) FAIL() << "the Alibaba GPU trace is missing";
    GTEST_SKIP() << "the Alibaba GPU trace is missing (SEEDANCE_DATA_DIR)";
  }
  ASSERT_TRUE(ref.ok()) << ref.status();
  // 500 pods through filter, prioritize and bind, each filter carrying every node's name (6,212
  // GPUs' nodes): under ASan each policy took about 240 s for 2,000 pods and 200 s for 1,000, the
  // suite's longest gtests; the server-side equality on every pod of the trace is
  // same_decisions_test's, and this test's subject is the extender's verbs, not the trace's tail.
  constexpr size_t kPods = 500;
  const std::vector<core::NodeSpec>& ordered = ref->ordered;

  FakeApiServer api;
  ExtenderServer s(policy, api.url(), ref->oracle);
  json names = json::array();
  for (const core::NodeSpec& n : ordered) {
    json body = {{"cpu_milli", n.cpu_milli},
                 {"memory_mib", n.memory_mib},
                 {"num_gpus", n.num_gpus},
                 {"gpu_model", n.gpu_model}};
    auto r = s.client().Put(("/v1/nodes/" + n.name).c_str(), body.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 201);
    names.push_back(n.name);
  }
  int same = 0, pending = 0;
  for (size_t i = 0; i < kPods && i < ref->pods.size(); ++i) {
    const json pod = PodJson(i, ref->pods[i].shape, ref->pods[i].gpu_spec);
    auto [fs, filtered] = s.Verb("filter", {{"Pod", pod}, {"NodeNames", names}});
    ASSERT_EQ(fs, 200) << filtered;
    ASSERT_EQ(filtered["Error"], "") << i;
    const core::Placement& want = ref->placements[i];
    if (filtered["NodeNames"].empty()) {
      ASSERT_LT(want.node, 0) << "pod " << i << ": the simulator placed it";
      ++pending;
      continue;
    }
    auto [ps, scores] = s.Verb("prioritize", {{"Pod", pod}, {"NodeNames", filtered["NodeNames"]}});
    ASSERT_EQ(ps, 200);
    // kube-scheduler's selectHost: the highest score (only Seedance scores here).
    std::string host;
    int64_t top = -1;
    for (const json& h : scores) {
      ASSERT_GE(h["Score"].get<int64_t>(), 0);
      ASSERT_LE(h["Score"].get<int64_t>(), 10);
      if (h["Score"].get<int64_t>() > top) {
        top = h["Score"].get<int64_t>();
        host = h["Host"];
      }
    }
    ASSERT_EQ(top, 10);
    auto [bs, bound] = s.Verb("bind", {{"PodName", "pod-" + std::to_string(i)},
                                       {"PodNamespace", "default"},
                                       {"PodUID", Uid(i)},
                                       {"Node", host}});
    ASSERT_EQ(bs, 200);
    ASSERT_EQ(bound["Error"], "") << i;
    ASSERT_GE(want.node, 0) << "pod " << i << ": the simulator left it pending";
    ASSERT_EQ(host, ref->nodes[want.node].name) << "pod " << i;
    auto r = s.client().Get(("/v1/pods/" + Uid(i)).c_str());
    ASSERT_TRUE(r && r->status == 200);
    const json reply = json::parse(r->body);
    std::vector<int> got;
    for (const json& g : reply["gpus"]) got.push_back(g["index"].get<int>());
    ASSERT_EQ(got, std::vector<int>(want.gpu_ids().begin(), want.gpu_ids().end())) << "pod " << i;
    ++same;
  }
  EXPECT_EQ(api.TakeCalls().size(), 2u * static_cast<size_t>(same));
  std::printf(
      "%s: %d of the first %zu pods bound through the extender on the simulator's node "
      "and GPUs, %d pending in both\n",
      policy.c_str(), same, kPods, pending);
}

INSTANTIATE_TEST_SUITE_P(Policies, ExtenderSameDecisionsTest, ::testing::Values("fgd", "cas"));

}  // namespace
}  // namespace seedance::server
