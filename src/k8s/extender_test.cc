// The extender protocol (extender.h) against the shapes kube-scheduler sends and decodes
// (k8s.io/kube-scheduler/extender/v1 types.go; pkg/scheduler/extender.go): real-shaped v1.Pod and
// v1.Node JSON for whole-GPU, fractional, HAMi-style and KAI-style pods, in both
// nodeCacheCapable modes.
#include "seedance/k8s/extender.h"

#include <memory>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::k8s {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

json NodeJson(const std::string& name, int gpus, const std::string& model, int64_t gpu_mem_mib) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels",
             {{"nvidia.com/gpu.product", model},
              {"nvidia.com/gpu.count", std::to_string(gpus)},
              {"nvidia.com/gpu.memory", std::to_string(gpu_mem_mib)}}},
            {"annotations", {{"seedance.io/gpu-uuids", "GPU-" + name + "-0,GPU-" + name + "-1"}}}}},
          {"spec", json::object()},
          {"status",
           {{"allocatable",
             {{"cpu", "31900m"},
              {"memory", "125Gi"},
              {"nvidia.com/gpu", std::to_string(gpus)},
              {"pods", "110"}}}}}};
}

json PodJson(const std::string& name, json limits, json annotations = json::object()) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"annotations", annotations}}},
      {"spec",
       {{"containers",
         {{{"name", "c"},
           {"resources", {{"requests", {{"cpu", "2"}, {"memory", "4Gi"}}}, {"limits", limits}}}}}},
        {"schedulerName", "default-scheduler"}}},
      {"status", {{"phase", "Pending"}}}};
}

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sched::SchedulerOptions o;
    o.default_profile.policy = "bestfit";
    scheduler_ = std::move(*sched::Scheduler::Create(o));
    nodes_.clear();
    for (const json& n : {NodeJson("t4-a", 2, "Tesla-T4", 15360),
                          NodeJson("a100-a", 8, "NVIDIA-A100-SXM4-80GB", 81920),
                          NodeJson("a100-b", 8, "NVIDIA-A100-SXM4-80GB", 81920)}) {
      nodes_.push_back(n);
    }
  }

  // The request kube-scheduler sends: names (nodeCacheCapable) or the NodeList.
  ExtenderArgs Args(const json& pod, bool names) {
    json body = {{"Pod", pod}};
    if (names) {
      json list = json::array();
      for (const json& n : nodes_) list.push_back(n["metadata"]["name"]);
      body["NodeNames"] = list;
      body["Nodes"] = nullptr;
    } else {
      body["Nodes"] = {{"metadata", json::object()}, {"items", nodes_}};
      body["NodeNames"] = nullptr;
    }
    absl::StatusOr<ExtenderArgs> a = ParseExtenderArgs(body.dump());
    EXPECT_TRUE(a.ok()) << a.status();
    if (!a->has_nodes) return *a;
    EXPECT_TRUE(LearnNodes(*scheduler_, a->nodes).ok());
    return *a;
  }

  // Filter + prioritize + bind as kube-scheduler would; the chosen node's name.
  std::string Place(const json& pod, bool names) {
    ExtenderArgs a = Args(pod, names);
    const sched::PodInfo p = ResolvePod(*scheduler_, a.pod, a.node_names);
    FilterResult f = Filter(*scheduler_, a, p);
    EXPECT_EQ(f.error, "");
    auto scores = Prioritize(*scheduler_, a, p);
    EXPECT_TRUE(scores.ok());
    std::string best;
    for (const auto& [host, score] : *scores) {
      if (score == kMaxExtenderPriority) best = host;
    }
    EXPECT_TRUE(scheduler_->PlaceOn(p, best, 0).ok()) << best;
    return best;
  }

  std::unique_ptr<sched::Scheduler> scheduler_;
  std::vector<json> nodes_;
};

TEST_F(ExtenderTest, FilterReplyHasTheGoKeysAndOnlyNamesThatWereSent) {
  for (bool names : {true, false}) {
    SCOPED_TRACE(names ? "NodeNames" : "Nodes");
    SetUp();
    if (names) (void)Args(PodJson("learn", json::object()), false);  // the scheduler knows them
    const json pod = PodJson("whole", {{"nvidia.com/gpu", "4"}}, json::object());
    json p = pod;
    p["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
    ExtenderArgs a = Args(p, names);
    const json reply = json::parse(
        FilterResultJson(a, Filter(*scheduler_, a, ResolvePod(*scheduler_, a.pod, a.node_names))));
    std::set<std::string> keys;
    for (const auto& [k, v] : reply.items()) keys.insert(k);
    EXPECT_EQ(keys, (std::set<std::string>{"Nodes", "NodeNames", "FailedNodes",
                                           "FailedAndUnresolvableNodes", "Error"}));
    EXPECT_EQ(reply["Error"], "");
    // The T4 node can never hold it (model): unresolvable, so preemption skips it.
    EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json({{"t4-a", "seedance: GPU model"}}));
    EXPECT_EQ(reply["FailedNodes"], json::object());
    if (names) {
      EXPECT_TRUE(reply["Nodes"].is_null());
      EXPECT_EQ(reply["NodeNames"], json({"a100-a", "a100-b"}));
    } else {
      EXPECT_TRUE(reply["NodeNames"].is_null());
      ASSERT_EQ(reply["Nodes"]["items"].size(), 2u);
      EXPECT_EQ(reply["Nodes"]["items"][0], nodes_[1]);  // the objects as sent
    }
  }
}

TEST_F(ExtenderTest, KeysAreMatchedIgnoringCaseAsGoDoes) {
  (void)Args(PodJson("learn", json::object()), false);
  const json body = {{"pod", PodJson("p", {{"seedance.io/gpu-milli", "300"}})},
                     {"nodenames", {"t4-a"}}};
  absl::StatusOr<ExtenderArgs> a = ParseExtenderArgs(body.dump());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->node_names, std::vector<std::string>{"t4-a"});
  EXPECT_EQ(a->pod.shape.gpu_milli, 300);
}

TEST_F(ExtenderTest, EveryRequestStyleIsPlacedWithItsShare) {
  (void)Args(PodJson("learn", json::object()), false);
  struct Case {
    const char* name;
    json limits, annotations;
    int num_gpu, gpu_milli;
  };
  const Case cases[] = {
      {"whole", {{"nvidia.com/gpu", "2"}}, json::object(), 2, 1000},
      {"fraction", {{"seedance.io/gpu-milli", "250"}}, json::object(), 1, 250},
      {"hami", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "30"}}, json::object(), 1, 300},
      {"kai", json::object(), {{"gpu-fraction", "0.5"}}, 1, 500},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string node = Place(PodJson(c.name, c.limits, c.annotations), true);
    const sched::PodInfo* p = scheduler_->ledger().Find(std::string("uid-") + c.name);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->shape.num_gpu, c.num_gpu);
    EXPECT_EQ(p->shape.gpu_milli, c.gpu_milli);
    EXPECT_EQ(p->placement.num_gpus, c.num_gpu);
    EXPECT_EQ(scheduler_->state().node(p->placement.node).name, node);
  }
}

TEST_F(ExtenderTest, PrioritizeGivesTenToSeedancesChoiceOnly) {
  (void)Args(PodJson("learn", json::object()), false);
  ASSERT_FALSE(Place(PodJson("first", {{"seedance.io/gpu-milli", "500"}}), true).empty());
  ExtenderArgs a = Args(PodJson("second", {{"seedance.io/gpu-milli", "500"}}), true);
  const sched::PodInfo p = ResolvePod(*scheduler_, a.pod, a.node_names);
  auto scores = Prioritize(*scheduler_, a, p);
  ASSERT_TRUE(scores.ok());
  const json reply = json::parse(PriorityListJson(*scores));
  ASSERT_EQ(reply.size(), 3u);
  int tens = 0;
  for (const json& h : reply) {
    EXPECT_EQ(h.size(), 2u);  // {Host, Score}
    EXPECT_GE(h["Score"].get<int>(), 0);
    EXPECT_LE(h["Score"].get<int>(), 10);
    tens += h["Score"] == 10;
  }
  EXPECT_EQ(tens, 1);
}

TEST_F(ExtenderTest, MemoryAskedShareIsResolvedOnTheSmallestCandidate) {
  (void)Args(PodJson("learn", json::object()), false);
  ExtenderArgs a =
      Args(PodJson("mem", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "7680"}}), true);
  const sched::PodInfo p = ResolvePod(*scheduler_, a.pod, a.node_names);
  EXPECT_EQ(p.shape.gpu_milli, 500);  // 7680 of the T4's 15360 MiB
}

TEST_F(ExtenderTest, PreemptKeepsNodesWhereTheVictimsMakeRoom) {
  (void)Args(PodJson("learn", json::object()), false);
  for (int i = 0; i < 2; ++i) {
    const std::string n = "fill-" + std::to_string(i);
    json pod = PodJson(n, {{"nvidia.com/gpu", "1"}});
    pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "Tesla-T4"}};
    ASSERT_EQ(Place(pod, true), "t4-a");
  }
  json big = PodJson("big", {{"nvidia.com/gpu", "2"}});
  big["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "Tesla-T4"}};
  const json body = {{"Pod", big},
                     {"NodeNameToMetaVictims",
                      {{"t4-a", {{"Pods", {{{"UID", "uid-fill-0"}}}}, {"NumPDBViolations", 0}}},
                       {"a100-a", {{"Pods", json::array()}, {"NumPDBViolations", 0}}}}}};
  absl::StatusOr<PreemptionArgs> args = ParsePreemptionArgs(body.dump());
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->meta);
  // One victim frees one T4: not enough for two. Both victims: enough. The A100 node has the
  // wrong model whatever is evicted.
  EXPECT_EQ(json::parse(PreemptionResultJson(Preempt(*scheduler_, *args))),
            json({{"NodeNameToMetaVictims", json::object()}}));
  args->victims["t4-a"].first.push_back("uid-fill-1");
  EXPECT_EQ(json::parse(PreemptionResultJson(Preempt(*scheduler_, *args))),
            json({{"NodeNameToMetaVictims",
                   {{"t4-a",
                     {{"Pods", {{{"UID", "uid-fill-0"}}, {{"UID", "uid-fill-1"}}}},
                      {"NumPDBViolations", 0}}}}}}));
}

TEST_F(ExtenderTest, FullVictimsAreReadByTheirUid) {
  const json body = {
      {"Pod", PodJson("p", json::object())},
      {"NodeNameToVictims",
       {{"n1", {{"Pods", {PodJson("v", json::object())}}, {"NumPDBViolations", 1}}}}}};
  absl::StatusOr<PreemptionArgs> a = ParsePreemptionArgs(body.dump());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->meta);
  EXPECT_EQ(a->victims["n1"].first, std::vector<std::string>{"uid-v"});
  EXPECT_EQ(a->victims["n1"].second, 1);
}

TEST(ExtenderParseTest, ErrorsNameTheJsonPath) {
  const json pod = PodJson("p", json::object());
  auto bad = [](const json& body) {
    absl::StatusOr<ExtenderArgs> a = ParseExtenderArgs(body.dump());
    return a.ok() ? std::string("ok") : std::string(a.status().message());
  };
  EXPECT_THAT(bad({{"NodeNames", {"a"}}}), HasSubstr("$.Pod: missing"));
  EXPECT_THAT(bad({{"Pod", pod}}), HasSubstr("neither Nodes nor NodeNames"));
  EXPECT_THAT(bad({{"Pod", pod}, {"NodeNames", {"a", 1}}}), HasSubstr("$.NodeNames[1]: "));
  EXPECT_THAT(bad({{"Pod", pod}, {"Nodes", {{"items", {{{"kind", "Node"}}}}}}}),
              HasSubstr("$.Nodes.items[0].metadata.name: missing"));
  json amd = PodJson("p", {{"amd.com/gpu", "1"}});
  EXPECT_THAT(bad({{"Pod", amd}, {"NodeNames", {"a"}}}),
              HasSubstr("$.Pod.spec.containers[0].resources.limits[\"amd.com/gpu\"]"));
  EXPECT_FALSE(ParseExtenderArgs("[1]").ok());
  EXPECT_FALSE(ParseExtenderArgs(std::string(500, '[')).ok());
  absl::StatusOr<BindingArgs> b = ParseBindingArgs(R"({"PodName": "p", "PodNamespace": "ml"})");
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("$.PodUID: missing"));
}

TEST(ExtenderParseTest, GpusAnnotationUsesUuidsWhenKnown) {
  core::Placement p;
  p.num_gpus = 2;
  p.gpus[0] = 0;
  p.gpus[1] = 1;
  EXPECT_EQ(GpusAnnotation(p, 1000, {}), "0:1000,1:1000");
  EXPECT_EQ(GpusAnnotation(p, 500, {"GPU-a", "GPU-b"}), "GPU-a:500,GPU-b:500");
}

}  // namespace
}  // namespace seedance::k8s
