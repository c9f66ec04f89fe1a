// The device plugin's decisions without gRPC: slice IDs, which slices it prefers, and what a
// container gets for its slices (allocator.h).
#include "seedance/deviceplugin/allocator.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::deviceplugin {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<Gpu> Gpus(int n, int numa, bool nvlink = false) {
  auto g = FakeGpus(
      {.count = n, .memory_mib = 81920, .numa_nodes = numa, .node_name = "n1", .nvlink = nvlink});
  EXPECT_TRUE(g.ok()) << g.status();
  return *g;
}

k8s::Pod PendingPod(const std::string& name, std::vector<k8s::GpuAssignment> gpus,
                    int64_t created) {
  k8s::Pod p;
  p.uid = "uid-" + name;
  p.name = name;
  p.ns = "default";
  p.phase = "Pending";
  p.node_name = "n1";
  p.gpus = std::move(gpus);
  p.creation_unix_s = created;
  return p;
}

void Add(PodCache* cache, const k8s::Pod& pod,
         k8s::ObjectEvent::Type type = k8s::ObjectEvent::Type::kAdded) {
  k8s::ObjectEvent e;
  e.type = type;
  e.pod = pod;
  cache->Apply({e}, false);
}

std::unique_ptr<Allocator> Make(std::vector<Gpu> gpus, PodCache* cache, int slices = 10) {
  auto a = Allocator::Create(std::move(gpus),
                             {.node_name = "n1",
                              .slices_per_gpu = slices,
                              .device_nodes = DeviceNodes::kAlways,
                              .cdi_kind = "nvidia.com/gpu",
                              .match_wait_s = 0.05},
                             cache);
  EXPECT_TRUE(a.ok()) << a.status();
  return std::move(*a);
}

TEST(GpusTest, SliceIdsNameTheirGpuAndAreCheckedOnTheWayBack) {
  const std::vector<Gpu> gpus = Gpus(4, 2);
  EXPECT_EQ(SliceId(gpus[2], 7), "GPU-fake-n1-2::7");
  EXPECT_EQ(*GpuOfDevice(gpus, 10, "GPU-fake-n1-2::7"), 2);
  EXPECT_EQ(gpus[1].numa_node, 0);
  EXPECT_EQ(gpus[2].numa_node, 1);
  for (const char* bad : {"GPU-fake-n1-2::10", "GPU-fake-n1-2::-1", "GPU-fake-n1-2", "GPU-x::1",
                          "GPU-fake-n1-2::1x", "::", ""}) {
    auto g = GpuOfDevice(gpus, 10, bad);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(GpuOfDevice(gpus, 10, "GPU-x::1").status().message(), HasSubstr("does not have"));
}

TEST(GpusTest, RefusesGpusThatCannotBeAdvertised) {
  EXPECT_FALSE(FakeGpus({.count = 0}).ok());
  EXPECT_FALSE(FakeGpus({.count = 2, .numa_nodes = 3}).ok());
  EXPECT_FALSE(FakeGpus({.count = 2, .memory_mib = 0}).ok());
  std::vector<Gpu> gpus = Gpus(2, 1);
  gpus[1].uuid = gpus[0].uuid;
  EXPECT_THAT(ValidateGpus(gpus, 10).message(), HasSubstr("appears twice"));
  gpus[1].uuid = std::string(70, 'u');
  EXPECT_THAT(ValidateGpus(gpus, 10).message(), HasSubstr("too long"));
  EXPECT_FALSE(Allocator::Create(Gpus(2, 1), {.slices_per_gpu = 0}, nullptr).ok());
  EXPECT_FALSE(Allocator::Create(Gpus(2, 1), {.slices_per_gpu = 101}, nullptr).ok());
}

TEST(AllocatorTest, AllocateFollowsThePodsDecisionWithItsShares) {
  PodCache cache;
  auto alloc = Make(Gpus(8, 2), &cache);
  Add(&cache,
      PendingPod("infer",
                 {{.index = -1, .uuid = "GPU-fake-n1-5", .milli = 250}, {.index = 6, .milli = 250}},
                 100));
  // The kubelet gave slices on GPUs 5 and 6, as GetPreferredAllocation advised.
  auto a = alloc->Allocate({"GPU-fake-n1-6::0", "GPU-fake-n1-5::3"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pod, "default/infer");
  EXPECT_THAT(a->gpus, ElementsAre(5, 6));
  EXPECT_EQ(a->envs.at("CUDA_VISIBLE_DEVICES"), "GPU-fake-n1-5,GPU-fake-n1-6");
  EXPECT_EQ(a->envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-fake-n1-5,GPU-fake-n1-6");
  EXPECT_EQ(a->envs.at("SEEDANCE_GPU_MILLI"), "250,250");
  EXPECT_EQ(a->envs.at("SEEDANCE_GPU_MEMORY_LIMIT_MIB"), "20480,20480");
  EXPECT_EQ(a->envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "20480m");
  EXPECT_EQ(a->envs.at("CUDA_DEVICE_MEMORY_LIMIT_1"), "20480m");
  EXPECT_EQ(a->envs.at("CUDA_DEVICE_SM_LIMIT"), "25");
  EXPECT_EQ(a->envs.at("SEEDANCE_POD"), "default/infer");
  EXPECT_EQ(a->annotations.at("seedance.io/gpus"), "GPU-fake-n1-5:250,GPU-fake-n1-6:250");
  ASSERT_EQ(a->devices.size(), 5u);
  EXPECT_EQ(a->devices[0].container_path, "/dev/nvidia5");
  EXPECT_EQ(a->devices[0].host_path, "/dev/nvidia5");
  EXPECT_EQ(a->devices[0].permissions, "rw");
  EXPECT_EQ(a->devices[1].container_path, "/dev/nvidia6");
  EXPECT_EQ(a->devices[2].container_path, "/dev/nvidiactl");
  EXPECT_THAT(a->cdi_devices,
              ElementsAre("nvidia.com/gpu=GPU-fake-n1-5", "nvidia.com/gpu=GPU-fake-n1-6"));
  // The pod is allocated now: the same request again finds no pod and fails, naming the node.
  auto again = alloc->Allocate({"GPU-fake-n1-6::1", "GPU-fake-n1-5::4"});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("node n1"));
}

TEST(AllocatorTest, OldestPodFirstAndExactGpusBeforeCountOnly) {
  PodCache cache;
  auto alloc = Make(Gpus(4, 1), &cache);
  Add(&cache, PendingPod("young", {{.index = 1, .milli = 500}}, 200));
  Add(&cache, PendingPod("old", {{.index = 2, .milli = 300}}, 100));
  Add(&cache, PendingPod("exact", {{.index = 3, .milli = 700}}, 300));
  // Slices on GPU 3: the pod decided for GPU 3, although younger.
  EXPECT_EQ(alloc->Allocate({"GPU-fake-n1-3::0"})->pod, "default/exact");
  // Slices on GPU 0, which no decision names: the oldest one-GPU pod, on its own GPU.
  auto a = alloc->Allocate({"GPU-fake-n1-0::0"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->pod, "default/old");
  EXPECT_EQ(a->envs.at("CUDA_VISIBLE_DEVICES"), "GPU-fake-n1-2");
  EXPECT_EQ(alloc->Allocate({"GPU-fake-n1-0::1"})->pod, "default/young");
}

TEST(AllocatorTest, PodsLeaveTheCacheWhenTheyStartOrGoAway) {
  PodCache cache;
  auto alloc = Make(Gpus(2, 1), &cache);
  k8s::Pod p = PendingPod("p", {{.index = 0, .milli = 500}}, 1);
  k8s::Pod other = PendingPod("other-node", {{.index = 0, .milli = 500}}, 1);
  other.node_name = "n2";
  Add(&cache, p);
  Add(&cache, other);
  p.phase = "Running";
  Add(&cache, p, k8s::ObjectEvent::Type::kModified);
  EXPECT_EQ(cache.size(), 1u);  // other-node stays in the cache; the allocator skips it
  EXPECT_EQ(alloc->Allocate({"GPU-fake-n1-0::0"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A relist that no longer holds a pod forgets it.
  cache.Apply({}, true);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(AllocatorTest, WholeGpusWithoutADecisionAreHandedOutWhole) {
  PodCache cache;
  auto alloc = Make(Gpus(4, 1), &cache, /*slices=*/1);
  auto a = alloc->Allocate({"GPU-fake-n1-3::0", "GPU-fake-n1-1::0"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pod, "");
  EXPECT_EQ(a->envs.at("CUDA_VISIBLE_DEVICES"), "GPU-fake-n1-3,GPU-fake-n1-1");
  EXPECT_EQ(a->envs.at("SEEDANCE_GPU_MEMORY_LIMIT_MIB"), "81920,81920");
  // A decision for other GPUs is not followed: these devices are this container's alone.
  Add(&cache, PendingPod("p", {{.index = 0, .milli = 1000}}, 1));
  EXPECT_EQ(alloc->Allocate({"GPU-fake-n1-2::0"})->pod, "");
  EXPECT_EQ(alloc->Allocate({"GPU-fake-n1-0::0"})->pod, "default/p");
}

TEST(AllocatorTest, RefusesDevicesThatAreNotThePlugins) {
  auto alloc = Make(Gpus(2, 1), nullptr);
  EXPECT_EQ(alloc->Allocate({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(alloc->Allocate({"GPU-other::0"}).status().message(), HasSubstr("GPU-other::0"));
  // No API server: shared slices cannot be matched to a pod, and the error says so.
  EXPECT_THAT(alloc->Allocate({"GPU-fake-n1-0::0"}).status().message(), HasSubstr("no API server"));
}

TEST(AllocatorTest, DeviceNodesAreListedOnlyWhenPresentInAutoMode) {
  const std::filesystem::path dev =
      std::filesystem::temp_directory_path() / ("seedance-dev-" + std::to_string(getpid()));
  std::filesystem::create_directories(dev);
  std::ofstream(dev / "nvidia1").put('x');
  std::ofstream(dev / "nvidiactl").put('x');
  auto alloc = *Allocator::Create(
      Gpus(2, 1),
      {.slices_per_gpu = 1, .device_nodes = DeviceNodes::kAuto, .dev_root = dev.string()}, nullptr);
  auto a = alloc->Allocate({"GPU-fake-n1-0::0", "GPU-fake-n1-1::0"});
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->devices.size(), 2u);
  EXPECT_EQ(a->devices[0].container_path, "/dev/nvidia1");
  EXPECT_EQ(a->devices[0].host_path, (dev / "nvidia1").string());
  EXPECT_EQ(a->devices[1].container_path, "/dev/nvidiactl");
  EXPECT_THAT(a->cdi_devices, IsEmpty());
  std::filesystem::remove_all(dev);
}

TEST(AllocatorTest, PreferredTakesTheDecisionsGpus) {
  PodCache cache;
  auto alloc = Make(Gpus(8, 2), &cache);
  Add(&cache, PendingPod("p", {{.index = 6, .milli = 400}, {.index = 1, .milli = 400}}, 1));
  std::vector<std::string> available;
  for (int g = 0; g < 8; ++g) {
    for (int k = 0; k < 10; ++k)
      available.push_back("GPU-fake-n1-" + std::to_string(g) + "::" + std::to_string(k));
  }
  EXPECT_THAT(alloc->Preferred(available, {}, 2),
              ElementsAre("GPU-fake-n1-6::0", "GPU-fake-n1-1::0"));
  // must_include comes first and stays.
  EXPECT_THAT(alloc->Preferred(available, {"GPU-fake-n1-1::4"}, 2),
              ElementsAre("GPU-fake-n1-1::4", "GPU-fake-n1-6::0"));
}

TEST(AllocatorTest, PreferredWithoutADecisionKeepsGpusOnOneNumaNode) {
  auto alloc = Make(Gpus(8, 2), nullptr, /*slices=*/1);
  // Free: GPU 0 and 3 on NUMA node 0, GPUs 4 and 5 on node 1. Two GPUs: one node's pair, the
  // best fit (node 0 has the same count, the lower index wins).
  EXPECT_THAT(
      alloc->Preferred(
          {"GPU-fake-n1-0::0", "GPU-fake-n1-4::0", "GPU-fake-n1-5::0", "GPU-fake-n1-3::0"}, {}, 2),
      ElementsAre("GPU-fake-n1-0::0", "GPU-fake-n1-3::0"));
  // Free: GPU 0 on node 0, GPUs 4 and 5 on node 1: the pair on node 1, not one across.
  EXPECT_THAT(alloc->Preferred({"GPU-fake-n1-0::0", "GPU-fake-n1-4::0", "GPU-fake-n1-5::0"}, {}, 2),
              ElementsAre("GPU-fake-n1-4::0", "GPU-fake-n1-5::0"));
  // One GPU: the lone one on node 0, keeping node 1's pair whole.
  EXPECT_THAT(alloc->Preferred({"GPU-fake-n1-4::0", "GPU-fake-n1-0::0", "GPU-fake-n1-5::0"}, {}, 1),
              ElementsAre("GPU-fake-n1-0::0"));
  // Never more than asked, never an ID that was not offered.
  EXPECT_THAT(alloc->Preferred({"GPU-fake-n1-4::0", "junk"}, {}, 3),
              ElementsAre("GPU-fake-n1-4::0"));
}

}  // namespace
}  // namespace seedance::deviceplugin
