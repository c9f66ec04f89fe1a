// The snapshot reader against testdata/nodes.json and testdata/pods.json, written for this test
// in the shape `kubectl get nodes -o json` and `kubectl get pods -A -o json` print (Kubernetes
// 1.29: a List with apiVersion, items, kind, metadata; managedFields, conditions and nodeInfo
// kept): nodes of three GPU models and a CPU node (one cordoned), running and pending pods in
// every GPU request style, and finished pods.
#include "seedance/k8s/snapshot.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::k8s {
namespace {

using ::testing::HasSubstr;

std::string TestData(const std::string& name) {
  const char* root = std::getenv("SEEDANCE_SOURCE_DIR");
  return std::string(root ? root : ".") + "/src/k8s/testdata/" + name;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Snapshot Fixture() {
  absl::StatusOr<Snapshot> s = LoadSnapshot({TestData("nodes.json"), TestData("pods.json")}, {});
  EXPECT_TRUE(s.ok()) << s.status();
  return s.value_or(Snapshot{});
}

const Pod* FindPod(const Snapshot& s, const std::string& name) {
  for (const Pod& p : s.pods) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(SnapshotTest, NodesKeepTheirCapacities) {
  Snapshot s = Fixture();
  std::vector<core::NodeSpec> nodes = ToNodeSpecs(s);
  ASSERT_EQ(nodes.size(), 5u);
  struct Want {
    const char* name;
    int64_t cpu_milli, memory_mib;
    int gpus;
    const char* model;
  };
  const Want want[] = {{"a100-0", 63900, 262144, 8, "NVIDIA-A100-SXM4-80GB"},
                       {"a100-1", 63900, 262144, 8, "NVIDIA-A100-SXM4-80GB"},
                       {"v100-0", 31900, 131072, 4, "Tesla-V100-SXM2-32GB"},
                       {"t4-0", 15900, 65536, 2, "Tesla-T4"},
                       {"cpu-0", 7910, 31744, 0, ""}};
  for (size_t i = 0; i < nodes.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(nodes[i].name, want[i].name);
    EXPECT_EQ(nodes[i].cpu_milli, want[i].cpu_milli);
    EXPECT_EQ(nodes[i].memory_mib, want[i].memory_mib);
    EXPECT_EQ(nodes[i].num_gpus, want[i].gpus);
    EXPECT_EQ(nodes[i].gpu_model, want[i].model);
  }
  // The cordoned node keeps its one unschedulable taint; the T4's PreferNoSchedule stays.
  ASSERT_EQ(nodes[1].taints.size(), 1u);
  EXPECT_EQ(nodes[1].taints[0].key, "node.kubernetes.io/unschedulable");
  ASSERT_EQ(nodes[3].taints.size(), 1u);
  EXPECT_EQ(nodes[3].taints[0].effect, "PreferNoSchedule");
  EXPECT_EQ(s.nodes[0].gpu_uuids.size(), 8u);
  EXPECT_EQ(s.nodes[2].gpu_memory_mib, 32768);
  // The V100 node's RDMA resource is noted, not refused.
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("rdma/hca_shared_devices_a"));
}

TEST(SnapshotTest, PodsKeepTheirRequestsInEveryStyle) {
  Snapshot s = Fixture();
  EXPECT_EQ(s.terminal_pods, 2);
  ASSERT_EQ(s.pods.size(), 9u);
  struct Want {
    const char* name;
    int64_t cpu_milli, memory_mib;
    int num_gpu, gpu_milli;
    GpuStyle style;
    const char* node;
  };
  const Want want[] = {
      {"train-a", 16000, 65536, 4, 1000, GpuStyle::kWhole, "a100-0"},
      {"infer-b", 2000, 8192, 1, 250, GpuStyle::kSeedance, "v100-0"},
      {"hami-c", 4000, 16384, 1, 306, GpuStyle::kHami, "v100-0"},  // 10000 of 32768 MiB
      {"kai-d", 1500, 6144, 1, 500, GpuStyle::kKai, "t4-0"},
      {"web-e", 1000, 512, 0, 0, GpuStyle::kNone, "cpu-0"},  // init container, limits only
      {"train-f", 32000, 131072, 8, 1000, GpuStyle::kWhole, ""},
      {"infer-g", 1000, 4096, 1, 534, GpuStyle::kSeedance, ""},  // 8192 of the T4's 15360
      {"hami-h", 2350, 8384, 2, 500, GpuStyle::kHami, ""},       // sidecar and overhead
      {"kai-i", 3000, 12288, 2, 250, GpuStyle::kKai, ""},
  };
  for (const Want& w : want) {
    SCOPED_TRACE(w.name);
    const Pod* p = FindPod(s, w.name);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->shape.cpu_milli, w.cpu_milli);
    EXPECT_EQ(p->shape.memory_mib, w.memory_mib);
    EXPECT_EQ(p->shape.num_gpu, w.num_gpu);
    EXPECT_EQ(p->shape.gpu_milli, w.gpu_milli);
    EXPECT_EQ(p->style, w.style);
    EXPECT_EQ(p->node_name, w.node);
  }
  EXPECT_EQ(FindPod(s, "train-f")->gpu_spec, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(FindPod(s, "hami-h")->gpu_spec, "Tesla-V100-SXM2-32GB");  // use-gputype V100
  EXPECT_EQ(FindPod(s, "train-a")->priority, 100);
}

TEST(SnapshotTest, WorkloadIsInCreationOrder) {
  std::vector<core::PodSpec> pods = ToPodSpecs(Fixture());
  ASSERT_EQ(pods.size(), 9u);
  EXPECT_EQ(pods[0].name, "ml/train-a");
  EXPECT_EQ(pods[0].creation_s, 0);
  EXPECT_EQ(pods[8].name, "research/kai-i");
  EXPECT_EQ(pods[8].creation_s, 8 * 60);
  EXPECT_EQ(pods[4].qos, "Guaranteed");
}

TEST(SnapshotTest, ProfileKeepsPlacements) {
  telemetry::Profile p = ToProfile(Fixture());
  ASSERT_EQ(p.nodes.size(), 5u);
  EXPECT_EQ(p.pending_pods.size(), 4u);
  ASSERT_EQ(p.timestamps_s.size(), 1u);
  const telemetry::NodeProfile& a100 = p.nodes[0];
  ASSERT_EQ(a100.pods.size(), 1u);
  EXPECT_EQ(a100.pods[0].gpu_ids, (std::vector<int>{0, 1, 2, 3}));  // by UUID
  EXPECT_EQ(a100.gpus[0].uuid, "GPU-a100-0-0000");
  EXPECT_EQ(a100.gpus[3].util_pct, std::vector<double>{100});
  EXPECT_EQ(a100.gpus[4].util_pct, std::vector<double>{0});
  const telemetry::NodeProfile& v100 = p.nodes[2];
  ASSERT_EQ(v100.pods.size(), 2u);
  EXPECT_EQ(v100.pods[0].gpu_ids, std::vector<int>{1});  // by index
  EXPECT_TRUE(v100.pods[1].gpu_ids.empty());             // HAMi's own placement: unknown
  // The HAMi pod joins the fullest GPU with room for the utilisation estimate.
  EXPECT_DOUBLE_EQ(v100.gpus[1].util_pct[0], 55.6);
  EXPECT_EQ(p.nodes[4].cpus, 7);
}

TEST(SnapshotTest, UnknownKindIsRefusedUnlessIgnored) {
  const std::string text = R"({"apiVersion": "v1", "kind": "List", "items": [
      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
      {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
       "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}]})";
  Snapshot s;
  absl::Status st = AddSnapshotText(text, "mixed.json", {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("mixed.json: 1 thing Seedance does not understand: "
                                      "$.items[0] (kind ConfigMap)"));
  EXPECT_THAT(st.message(), HasSubstr("--ignore-unknown"));
  Snapshot ignored;
  ASSERT_TRUE(AddSnapshotText(text, "mixed.json", {.ignore_unknown = true}, &ignored).ok());
  EXPECT_EQ(ignored.nodes.size(), 1u);
  ASSERT_EQ(ignored.warnings.size(), 1u);
  EXPECT_THAT(ignored.warnings[0], HasSubstr("$.items[0]"));
}

TEST(SnapshotTest, PodWithUnknownResourceIsSkippedWhenIgnored) {
  const std::string text = R"({"apiVersion": "v1", "kind": "PodList", "items": [
      {"kind": "Pod", "metadata": {"name": "fpga", "namespace": "x"},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {"xilinx.com/fpga": "1"}}}]},
       "status": {"phase": "Pending"}}]})";
  Snapshot s;
  EXPECT_FALSE(AddSnapshotText(text, "p.json", {}, &s).ok());
  ASSERT_TRUE(AddSnapshotText(text, "p.json", {.ignore_unknown = true}, &s).ok());
  EXPECT_TRUE(s.pods.empty());
}

TEST(SnapshotTest, PodOnMissingNodeOrGpu) {
  Snapshot s = Fixture();
  s.pods[0].node_name = "gone";
  absl::Status st = FinishSnapshot({}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("bound to node gone"));
  Snapshot t = Fixture();
  t.pods[1].gpus[0].index = 9;  // the V100 node has 4
  st = FinishSnapshot({}, &t);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("GPU 9, which node v100-0 does not have"));
  Snapshot u = Fixture();
  u.pods[1].gpus[0].index = 9;
  ASSERT_TRUE(FinishSnapshot({.ignore_unknown = true}, &u).ok());
  EXPECT_EQ(u.pods.size(), 8u);
}

TEST(SnapshotTest, SyntaxErrorsNameTheLine) {
  Snapshot s;
  absl::Status st = AddSnapshotText("{\"apiVersion\": \"v1\",\n\"kind\": \"List\",\n\"items\": [",
                                    "cut.json", {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("cut.json: line 3: invalid JSON"));
  EXPECT_THAT(st.message(), HasSubstr("unexpected end of file"));
  st = AddSnapshotText(std::string(1000, '[') + std::string(1000, ']'), "deep.json", {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("nested deeper"));
  // A number beyond a double: found by the k8s fuzz target (nlohmann throws out_of_range).
  st = AddSnapshotText(R"({"apiVersion": "v1", "kind": "List", "items": [7.7e555553]})",
                       "big.json", {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("big.json: invalid JSON"));
  st = AddSnapshotText(R"({"apiVersion": "v1", "kind": "Service"})", "svc.json", {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("svc.json: $.kind: 'Service' is not List"));
  // A kind of another type: found by the k8s fuzz target (json::value threw type_error).
  st = AddSnapshotText(R"({"apiVersion": "v1", "kind": {"name": "n"}})", "odd.json", {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("odd.json: $.kind: must be a string (got an object)"));
  st = AddSnapshotText(R"({"apiVersion": "v1", "kind": "List", "items": [{"kind": 7}]})",
                       "item.json", {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("$.items[0] (an object without a kind)"));
}

TEST(SnapshotTest, DuplicateNamesAreRefused) {
  Snapshot s;
  const std::string nodes = Read(TestData("nodes.json"));
  ASSERT_TRUE(AddSnapshotText(nodes, "a.json", {}, &s).ok());
  ASSERT_TRUE(AddSnapshotText(nodes, "b.json", {}, &s).ok());
  absl::Status st = FinishSnapshot({}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("node a100-0 appears twice"));
}

TEST(SnapshotTest, RecognisesKubectlOutputOnly) {
  EXPECT_TRUE(LooksLikeSnapshot(Read(TestData("nodes.json"))));
  EXPECT_TRUE(LooksLikeSnapshot(Read(TestData("pods.json"))));
  EXPECT_TRUE(LooksLikeSnapshot(R"({"apiVersion":"v1","kind":"Node","metadata":{}})"));
  EXPECT_FALSE(LooksLikeSnapshot(R"({"name": "c", "gpu_models": {}, "nodes": []})"));
  EXPECT_FALSE(LooksLikeSnapshot(""));
}

}  // namespace
}  // namespace seedance::k8s
