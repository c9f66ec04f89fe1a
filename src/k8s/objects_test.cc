#include "seedance/k8s/objects.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace seedance::k8s {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

// A pod as kubectl prints it, with the given container resources and annotations.
json PodJson(json resources, json annotations = json::object()) {
  json j = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1",
                 "creationTimestamp": "2026-11-30T09:00:00Z"},
    "spec": {"containers": [{"name": "c", "image": "i"}], "schedulerName": "default-scheduler"},
    "status": {"phase": "Pending", "qosClass": "Burstable"}})");
  j["spec"]["containers"][0]["resources"] = resources;
  j["metadata"]["annotations"] = annotations;
  return j;
}

struct Decoded {
  absl::Status status;
  Pod pod;
  std::vector<Unknown> unknown;
};

Decoded Decode(const json& j) {
  Decoded d;
  d.status = DecodePod(j, "$.items[0]", &d.pod, &d.unknown);
  return d;
}

TEST(DecodePodTest, WholeGpusFromNvidiaResource) {
  Decoded d = Decode(PodJson(
      {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}, {"limits", {{"nvidia.com/gpu", "2"}}}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.pod.shape.cpu_milli, 4000);
  EXPECT_EQ(d.pod.shape.memory_mib, 16384);
  EXPECT_EQ(d.pod.shape.num_gpu, 2);
  EXPECT_EQ(d.pod.shape.gpu_milli, 1000);
  EXPECT_EQ(d.pod.style, GpuStyle::kWhole);
  EXPECT_EQ(d.pod.uid, "u-1");
  EXPECT_EQ(d.pod.ns, "ns");
  EXPECT_EQ(d.pod.phase, "Pending");
  EXPECT_EQ(d.pod.creation_unix_s, 1796029200);
  EXPECT_TRUE(d.unknown.empty());
}

TEST(DecodePodTest, SeedanceShareAndCount) {
  Decoded d = Decode(
      PodJson({{"limits", {{"seedance.io/gpu-milli", "300"}, {"seedance.io/gpu-count", "2"}}}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.pod.shape.num_gpu, 2);
  EXPECT_EQ(d.pod.shape.gpu_milli, 300);
  EXPECT_EQ(d.pod.style, GpuStyle::kSeedance);
}

TEST(DecodePodTest, HamiCoresAndMemoryTakeTheLargerShare) {
  Decoded d = Decode(PodJson({{"limits",
                               {{"nvidia.com/gpu", "1"},
                                {"nvidia.com/gpucores", "20"},
                                {"nvidia.com/gpumem", "16384"}}}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.pod.style, GpuStyle::kHami);
  EXPECT_EQ(d.pod.shape.gpu_milli, 200);
  EXPECT_EQ(d.pod.gpu_memory_mib, 16384);
  EXPECT_EQ(d.pod.ShareFor(32768), 500);  // half the memory beats a fifth of the cores
  EXPECT_EQ(d.pod.ShareFor(163840), 200);
  EXPECT_EQ(d.pod.ShareFor(8192), 1000);  // capped at a whole GPU
  EXPECT_EQ(d.pod.ShareFor(0), 0);        // unknown GPU memory: unresolved
}

TEST(DecodePodTest, HamiMemoryPercentage) {
  Decoded d = Decode(
      PodJson({{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "40"}}}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.pod.shape.gpu_milli, 400);
}

TEST(DecodePodTest, KaiFractionAnnotation) {
  Decoded d =
      Decode(PodJson(json::object(), {{"gpu-fraction", "0.3"}, {"gpu-fraction-num-devices", "3"}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.pod.style, GpuStyle::kKai);
  EXPECT_EQ(d.pod.shape.num_gpu, 3);
  EXPECT_EQ(d.pod.shape.gpu_milli, 300);
}

TEST(DecodePodTest, KaiFractionOutOfRangeNamesTheAnnotation) {
  Decoded d = Decode(PodJson(json::object(), {{"gpu-fraction", "1.5"}}));
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("$.items[0].metadata.annotations.gpu-fraction"));
}

TEST(DecodePodTest, BadQuantityNamesItsPointer) {
  Decoded d = Decode(PodJson({{"requests", {{"cpu", "two"}}}}));
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(),
              HasSubstr("$.items[0].spec.containers[0].resources.requests.cpu: 'two' is not a "
                        "Kubernetes quantity"));
}

TEST(DecodePodTest, WrongTypeNamesItsPointer) {
  json j = PodJson(json::object());
  j["spec"]["nodeName"] = 7;
  Decoded d = Decode(j);
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("$.items[0].spec.nodeName: must be a string (got 7)"));
}

TEST(DecodePodTest, GpuMilliOutOfRange) {
  Decoded d = Decode(PodJson({{"limits", {{"seedance.io/gpu-milli", "1500"}}}}));
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("limits[\"seedance.io/gpu-milli\"]: 1500 is outside"));
}

TEST(DecodePodTest, UnknownExtendedResourceIsReportedNotFatal) {
  Decoded d = Decode(PodJson({{"limits", {{"amd.com/gpu", "1"}, {"cpu", "1"}}}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  ASSERT_EQ(d.unknown.size(), 1u);
  EXPECT_EQ(d.unknown[0].path, "$.items[0].spec.containers[0].resources.limits[\"amd.com/gpu\"]");
  EXPECT_THAT(d.unknown[0].what, HasSubstr("amd.com/gpu"));
}

TEST(DecodePodTest, NativeResourcesAreSkippedSilently) {
  Decoded d = Decode(PodJson({{"requests",
                               {{"ephemeral-storage", "10Gi"},
                                {"hugepages-2Mi", "1Gi"},
                                {"example.kubernetes.io/x", "1"}}}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_TRUE(d.unknown.empty());
}

TEST(DecodePodTest, ContainersWithDifferentSharesAreUnknown) {
  json j = PodJson(json::object());
  j["spec"]["containers"] = {
      {{"name", "a"}, {"resources", {{"limits", {{"seedance.io/gpu-milli", "200"}}}}}},
      {{"name", "b"}, {"resources", {{"limits", {{"seedance.io/gpu-milli", "300"}}}}}}};
  Decoded d = Decode(j);
  ASSERT_TRUE(d.status.ok()) << d.status;
  ASSERT_EQ(d.unknown.size(), 1u);
  EXPECT_THAT(d.unknown[0].what, HasSubstr("different GPU shares"));
}

TEST(DecodePodTest, ContainersWithTheSameShareAddUp) {
  json j = PodJson(json::object());
  j["spec"]["containers"] = {
      {{"name", "a"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}},
      {{"name", "b"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}};
  Decoded d = Decode(j);
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.pod.shape.num_gpu, 3);
}

TEST(DecodePodTest, InitContainersTakeTheMaxSidecarsAddUp) {
  json j = PodJson({{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}});
  j["spec"]["initContainers"] = {
      {{"name", "side"},
       {"restartPolicy", "Always"},
       {"resources", {{"requests", {{"cpu", "500m"}, {"memory", "100Mi"}}}}}},
      {{"name", "big"}, {"resources", {{"requests", {{"cpu", "3"}, {"memory", "512Mi"}}}}}}};
  j["spec"]["overhead"] = {{"cpu", "250m"}};
  Decoded d = Decode(j);
  ASSERT_TRUE(d.status.ok()) << d.status;
  // cpu: max(1 + 0.5 (sidecar), 0.5 + 3 (init after the sidecar)) + 0.25 overhead
  EXPECT_EQ(d.pod.shape.cpu_milli, 3750);
  EXPECT_EQ(d.pod.shape.memory_mib, 1124);  // max(1024 + 100, 100 + 512)
}

TEST(DecodePodTest, ModelFromNodeSelectorOrAffinity) {
  json j = PodJson({{"limits", {{"nvidia.com/gpu", "1"}}}});
  j["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "Tesla-T4"}};
  EXPECT_EQ(Decode(j).pod.gpu_spec, "Tesla-T4");
  j["spec"].erase("nodeSelector");
  j["spec"]["affinity"] = json::parse(R"({"nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
        "matchExpressions": [{"key": "seedance.io/gpu-model", "operator": "In",
                              "values": ["A100", "H100"]}]}]}}})");
  EXPECT_EQ(Decode(j).pod.gpu_spec, "A100|H100");
  // An operator or key of another type is no match, not a type_error thrown out of the decoder.
  j["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
   ["nodeSelectorTerms"][0]["matchExpressions"][0]["operator"] = json::array();
  const Decoded odd = Decode(j);
  EXPECT_TRUE(odd.status.ok()) << odd.status;
  EXPECT_EQ(odd.pod.gpu_spec, "");
}

TEST(DecodePodTest, GpuAssignmentAnnotation) {
  Decoded d = Decode(PodJson({{"limits", {{"nvidia.com/gpu", "2"}}}},
                             {{"seedance.io/gpus", "0:1000, GPU-abc:1000"}}));
  ASSERT_TRUE(d.status.ok()) << d.status;
  ASSERT_EQ(d.pod.gpus.size(), 2u);
  EXPECT_EQ(d.pod.gpus[0].index, 0);
  EXPECT_EQ(d.pod.gpus[1].uuid, "GPU-abc");
  Decoded bad = Decode(PodJson(json::object(), {{"seedance.io/gpus", "0"}}));
  ASSERT_FALSE(bad.status.ok());
  EXPECT_THAT(bad.status.message(),
              HasSubstr("$.items[0].metadata.annotations[\"seedance.io/gpus\"]: "));
}

TEST(DecodePodTest, MissingNameIsAnError) {
  json j = PodJson(json::object());
  j["metadata"].erase("name");
  Decoded d = Decode(j);
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("$.items[0].metadata.name: missing"));
}

json NodeJson() {
  return json::parse(R"({"apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.product": "Tesla-T4",
                                          "nvidia.com/gpu.memory": "15360"}},
    "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "15900m", "memory": "65821148Ki", "nvidia.com/gpu": "2",
                               "pods": "110"},
               "capacity": {"cpu": "16", "memory": "65923548Ki", "nvidia.com/gpu": "2"}}})");
}

TEST(DecodeNodeTest, AllocatableModelMemoryAndTaints) {
  Node n;
  std::vector<Unknown> unknown;
  ASSERT_TRUE(DecodeNode(NodeJson(), "$.items[1]", &n, &unknown).ok());
  EXPECT_EQ(n.spec.name, "n1");
  EXPECT_EQ(n.spec.cpu_milli, 15900);
  EXPECT_EQ(n.spec.memory_mib, 64278);
  EXPECT_EQ(n.spec.num_gpus, 2);
  EXPECT_EQ(n.spec.gpu_model, "Tesla-T4");
  EXPECT_EQ(n.gpu_memory_mib, 15360);
  ASSERT_EQ(n.spec.taints.size(), 1u);
  EXPECT_EQ(n.spec.taints[0].effect, "NoSchedule");
  EXPECT_FALSE(n.unschedulable);
  EXPECT_TRUE(unknown.empty());
}

TEST(DecodeNodeTest, PhysicalCountLabelBeatsVirtualGpus) {
  json j = NodeJson();
  j["status"]["allocatable"]["nvidia.com/gpu"] = "20";  // HAMi: 10 vGPUs per GPU
  Node n;
  std::vector<Unknown> unknown;
  absl::Status st = DecodeNode(j, "$.items[1]", &n, &unknown);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("nvidia.com/gpu.count"));
  j["metadata"]["labels"]["nvidia.com/gpu.count"] = "2";
  ASSERT_TRUE(DecodeNode(j, "$.items[1]", &n, &unknown).ok());
  EXPECT_EQ(n.spec.num_gpus, 2);
}

TEST(DecodeNodeTest, MissingCpuAndBadEffectAreErrors) {
  json j = NodeJson();
  j["status"]["allocatable"].erase("cpu");
  Node n;
  std::vector<Unknown> unknown;
  absl::Status st = DecodeNode(j, "$.items[1]", &n, &unknown);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("$.items[1].status.allocatable.cpu: missing"));
  j = NodeJson();
  j["spec"]["taints"][0]["effect"] = "Sometimes";
  st = DecodeNode(j, "$.items[1]", &n, &unknown);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("$.items[1].spec.taints[0].effect"));
}

TEST(DecodeNodeTest, UnknownNodeResourceIsANote) {
  json j = NodeJson();
  j["status"]["allocatable"]["xilinx.com/fpga"] = "2";
  Node n;
  std::vector<Unknown> unknown;
  ASSERT_TRUE(DecodeNode(j, "$.items[1]", &n, &unknown).ok());
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_THAT(unknown[0].what, HasSubstr("ignored"));
}

TEST(EncodeGpuPodTest, ReadsBackAsASeedanceGpuMemoryRequest) {
  GpuPodManifest m;
  m.name = "Hello_Deepa.onnx";
  m.image = "example.com/serve:1";
  m.gpu_model = "T4";
  m.gpu_memory_mib = 523;
  m.annotations = {{"seedance.io/precision-plan", "plan.json"}};
  Pod pod;
  std::vector<Unknown> unknown;
  ASSERT_TRUE(DecodePod(json::parse(EncodeGpuPod(m)), "$", &pod, &unknown).ok());
  EXPECT_TRUE(unknown.empty());
  EXPECT_EQ(pod.name, "hello-deepa-onnx");
  EXPECT_EQ(pod.ns, "default");
  EXPECT_EQ(pod.style, GpuStyle::kSeedance);
  EXPECT_EQ(pod.shape.num_gpu, 1);
  EXPECT_EQ(pod.gpu_memory_mib, 523);
  EXPECT_EQ(pod.gpu_spec, "T4");
  EXPECT_EQ(pod.ShareFor(16384), 32);  // ceil(523 * 1000 / 16384)
  m.name = "--";
  EXPECT_EQ(json::parse(EncodeGpuPod(m))["metadata"]["name"], "model");
}

TEST(EncodeGpuPodDeathTest, NoMemoryIsABug) {
  GpuPodManifest m;
  m.name = "a";
  EXPECT_DEATH(EncodeGpuPod(m), "some GPU memory");
}

}  // namespace
}  // namespace seedance::k8s
