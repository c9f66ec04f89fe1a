// PodJsonText against the tree it stands in for: DumpJson(PodToJson(...), -1), byte for byte,
// over pods that exercise every branch (pending, bound with GPUs and a NUMA node, gangs, labels
// and annotations with quotes, control characters, DEL, UTF-8 and invalid UTF-8).
#include "seedance/server/codec.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "seedance/base/text.h"

namespace seedance::server {
namespace {

core::ClusterState TwoNodes() {
  core::NodeSpec a{.name = "gpu-\"a\"",
                   .cpu_milli = 64000,
                   .memory_mib = 1 << 20,
                   .num_gpus = 4,
                   .gpu_model = "A100"};
  core::NodeSpec b{
      .name = "cpu-b", .cpu_milli = 32000, .memory_mib = 1 << 18, .num_gpus = 0, .gpu_model = ""};
  absl::StatusOr<core::ClusterState> st = core::ClusterState::Create({a, b});
  EXPECT_TRUE(st.ok()) << st.status();
  return *std::move(st);
}

std::vector<sched::PodInfo> Pods() {
  std::vector<sched::PodInfo> out;
  sched::PodInfo p;
  p.uid = "0af3c2d1-1111-4222-8333-444455556666";
  p.name = "train-0";
  p.ns = "ml";
  p.shape = {.cpu_milli = 4000, .memory_mib = 8192, .num_gpu = 2, .gpu_milli = 1000};
  p.revision = 42;
  p.created_unix_ns = 1796478422857406500;
  out.push_back(p);  // pending, no labels
  p.phase = sched::PodPhase::kBound;
  p.placement.node = 0;
  p.placement.num_gpus = 2;
  p.placement.gpus[0] = 1;
  p.placement.gpus[1] = 3;
  p.placement.numa = 1;
  p.labels = {{"app", "train"}, {"quote\"key", "back\\slash"}, {"tab", "a\tb"}};
  p.annotations = {{"del", "x\x7fy"}, {"utf8", "caf\xc3\xa9 \xe2\x9c\x93"}, {"bad", "\xff\xfe"}};
  p.gang = "g1";
  p.gang_min = 3;
  p.priority = -7;
  p.gpu_spec = "A100|H100";
  p.device = {core::DeviceClass::kAny, 40960};
  out.push_back(p);  // bound, GPUs, NUMA, a device ask, every kind of string
  p.device = {};
  p.phase = sched::PodPhase::kAssumed;
  p.placement.node = 1;
  p.placement.num_gpus = 0;
  p.placement.numa = -1;
  p.shape.num_gpu = 0;
  p.gang.clear();
  p.name = "ctl\x01\x1f";
  out.push_back(p);  // assumed on a CPU node, no NUMA, no gang, control characters
  return out;
}

// GET /v1/cluster's summary: cordoned and deleted nodes are not capacity; a shared GPU is free
// milli but not a whole GPU; per model, the largest free node tells whether a pod can fit at all.
TEST(CodecTest, ClusterSummaryCountsWhatIsSchedulable) {
  core::ClusterState st = TwoNodes();
  core::NodeSpec c{
      .name = "gpu-c", .cpu_milli = 8000, .memory_mib = 1024, .num_gpus = 2, .gpu_model = "T4"};
  ASSERT_TRUE(st.AddNode(c).ok());
  core::Placement half;
  half.node = 0;
  half.num_gpus = 1;
  half.gpus[0] = 2;
  ASSERT_TRUE(
      st.Allocate({.cpu_milli = 1000, .memory_mib = 10, .num_gpu = 1, .gpu_milli = 500}, half)
          .ok());
  st.SetCordoned(1, true);  // cpu-b
  const Json j = ClusterSummaryJson("eu-1", "slurm", st, 7);
  EXPECT_EQ(j["cluster"], "eu-1");
  EXPECT_EQ(j["backend"], "slurm");
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["cordoned_nodes"], 1);
  EXPECT_EQ(j["pending_pods"], 7);
  EXPECT_EQ(j["capacity"]["cpu_milli"], 72000);
  EXPECT_EQ(j["capacity"]["num_gpus"], 6);
  EXPECT_EQ(j["free"]["cpu_milli"], 71000);
  EXPECT_EQ(j["free"]["gpu_milli"], 5500);
  EXPECT_EQ(j["free"]["whole_gpus"], 5);
  EXPECT_EQ(j["largest_free"]["whole_gpus"], 3);
  ASSERT_EQ(j["gpu_models"].size(), 2u);
  EXPECT_EQ(j["gpu_models"][0]["gpu_model"], "A100");
  EXPECT_EQ(j["gpu_models"][0]["free"]["whole_gpus"], 3);
  EXPECT_EQ(j["gpu_models"][0]["largest_free"]["cpu_milli"], 63000);
  EXPECT_EQ(j["gpu_models"][1]["gpu_model"], "T4");
  EXPECT_EQ(j["gpu_models"][1]["free"]["whole_gpus"], 2);
  EXPECT_EQ(j["gpu_models"][1]["largest_free"]["memory_mib"], 1024);
  // Each model says its kind and one device's memory (the catalog's, for A100 and T4).
  EXPECT_EQ(j["gpu_models"][0]["device_type"], "gpu");
  EXPECT_EQ(j["gpu_models"][0]["device_memory_mib"], 40960);
  EXPECT_EQ(j["gpu_models"][1]["device_memory_mib"], 16384);
  core::NodeSpec npu{.name = "npu-d",
                     .cpu_milli = 8000,
                     .memory_mib = 1024,
                     .num_gpus = 8,
                     .gpu_model = "Ascend910B"};
  ASSERT_TRUE(st.AddNode(npu).ok());
  const Json with_npu = ClusterSummaryJson("eu-1", "local", st, 0);
  ASSERT_EQ(with_npu["gpu_models"].size(), 3u);  // by name: A100, Ascend910B, T4
  EXPECT_EQ(with_npu["gpu_models"][1]["gpu_model"], "Ascend910B");
  EXPECT_EQ(with_npu["gpu_models"][1]["device_type"], "npu");
  EXPECT_EQ(with_npu["gpu_models"][1]["device_memory_mib"], 65536);
}

TEST(CodecTest, PodJsonTextIsTheTreeDumpedByteForByte) {
  const core::ClusterState state = TwoNodes();
  for (const sched::PodInfo& pod : Pods()) {
    EXPECT_EQ(PodJsonText(pod, state), base::DumpJson(PodToJson(pod, state), -1)) << pod.name;
  }
}

TEST(CodecTest, PodJsonTextAsSubmittedAndWithARevision) {
  const core::ClusterState state = TwoNodes();
  for (const sched::PodInfo& pod : Pods()) {
    Json want = PodToJson(pod, state);
    want["phase"] = "Pending";
    want["node"] = nullptr;
    want["gpus"] = Json::array();
    want["numa_node"] = nullptr;
    want["revision"] = 7;
    EXPECT_EQ(PodJsonText(pod, state, /*as_pending=*/true, /*revision=*/7),
              base::DumpJson(want, -1))
        << pod.name;
  }
}

TEST(CodecTest, PodJsonTextParsesBackToThePod) {
  const core::ClusterState state = TwoNodes();
  const sched::PodInfo pod = Pods()[1];
  absl::StatusOr<sched::PodInfo> back = PodFromJson(Json::parse(PodJsonText(pod, state)), state);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->uid, pod.uid);
  EXPECT_EQ(back->labels, pod.labels);
  EXPECT_EQ(back->placement.gpu_ids()[1], 3);
  EXPECT_EQ(back->created_unix_ns, pod.created_unix_ns);
  EXPECT_EQ(back->device, pod.device);
  // A pod without an ask writes neither key and reads back unset.
  const std::string plain = PodJsonText(Pods()[0], state);
  EXPECT_EQ(plain.find("device_"), std::string::npos) << plain;
  back = PodFromJson(Json::parse(plain), state);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->device, core::DeviceAsk{});
}

TEST(CodecTest, NpuNodesRoundTripAndGpuNodesReadAsBefore) {
  core::NodeSpec npu{.name = "ascend-0",
                     .cpu_milli = 1,
                     .memory_mib = 1,
                     .num_gpus = 8,
                     .gpu_model = "MLU370",
                     .npu = true,
                     .device_memory_mib = 49152};
  const Json j = NodeToJson(npu);
  EXPECT_EQ(j["device_type"], "npu");
  absl::StatusOr<core::NodeSpec> back = NodeFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, npu);
  const core::NodeSpec gpu{
      .name = "g", .cpu_milli = 1, .memory_mib = 1, .num_gpus = 1, .gpu_model = "T4"};
  EXPECT_FALSE(NodeToJson(gpu).contains("device_type"));
  EXPECT_FALSE(NodeToJson(gpu).contains("device_memory_mib"));
  back = NodeFromJson(NodeToJson(gpu));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, gpu);
}

}  // namespace
}  // namespace seedance::server
