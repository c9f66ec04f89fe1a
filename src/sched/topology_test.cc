// The GPU interconnect model and the GPU-set chooser (topology.h) on the documented templates
// (core/topology_template.h): link classes, ring bandwidth, all-reduce time, and the chooser's
// rules (best bandwidth, best fit, islands kept whole, index order without topology).
#include "seedance/sched/topology.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <vector>

#include "seedance/core/cluster_state.h"
#include "seedance/core/topology_template.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"

namespace seedance::sched {
namespace {

using core::ClusterState;
using core::NodeSpec;
using core::Placement;
using core::PodShape;
using core::TopologyTemplate;

NodeSpec Node(int gpus, TopologyTemplate t, const char* model = "A100") {
  NodeSpec n{
      .name = "n0", .cpu_milli = 64000, .memory_mib = 262144, .num_gpus = gpus, .gpu_model = model};
  n.topology = core::TemplateTopology(n, t);
  return n;
}

ClusterState One(const NodeSpec& n) {
  absl::StatusOr<ClusterState> s = ClusterState::Create({n});
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// Takes whole GPUs `gpus` on node 0 (a pod already running).
void Take(ClusterState& s, std::initializer_list<int> gpus) {
  Placement p;
  p.node = 0;
  for (int g : gpus) p.gpus[static_cast<size_t>(p.num_gpus++)] = static_cast<int8_t>(g);
  PodShape pod{
      .cpu_milli = 0, .memory_mib = 0, .num_gpu = p.num_gpus, .gpu_milli = core::kMilliGpu};
  ASSERT_TRUE(s.Allocate(pod, p).ok());
}

std::vector<int> Chosen(const ClusterState& s, int k) {
  Placement p;
  p.node = 0;
  if (!ChooseGpuSet(s, 0, k, &p)) return {};
  return std::vector<int>(p.gpus.begin(), p.gpus.begin() + p.num_gpus);
}

TEST(TopologyTest, TemplatesGiveTheDocumentedLinks) {
  const NodeSpec dgx = Node(8, TopologyTemplate::kDgx);
  for (int b = 1; b < 8; ++b) EXPECT_EQ(LinkBetween(dgx.topology, 0, b), GpuLink::kNvLink);
  const NodeSpec tree = Node(8, TopologyTemplate::kPcieTree);
  EXPECT_EQ(LinkBetween(tree.topology, 0, 3), GpuLink::kPcieSwitch);
  EXPECT_EQ(LinkBetween(tree.topology, 4, 7), GpuLink::kPcieSwitch);
  EXPECT_EQ(LinkBetween(tree.topology, 3, 4), GpuLink::kCrossSocket);
  // Two switches on one NUMA node talk through its host bridge.
  NodeSpec bridge = tree;
  bridge.topology.gpus[4].numa_node = 0;
  EXPECT_EQ(LinkBetween(bridge.topology, 0, 4), GpuLink::kHostBridge);
}

TEST(TopologyTest, RingBandwidthIsTheSlowestHop) {
  const NodeSpec tree = Node(8, TopologyTemplate::kPcieTree);
  const std::vector<int8_t> local = {0, 1, 2, 3}, across = {2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(RingGbps(tree, local), 31.5);                             // PCIe Gen4 x16 (A100)
  EXPECT_DOUBLE_EQ(RingGbps(tree, across), kUpiLinkGbps);                    // one UPI link
  EXPECT_DOUBLE_EQ(RingGbps(Node(8, TopologyTemplate::kDgx), across), 300);  // NVLink 3
  EXPECT_DOUBLE_EQ(RingGbps(Node(8, TopologyTemplate::kDgx, "H100"), across), 450);
  EXPECT_TRUE(std::isinf(RingGbps(tree, std::vector<int8_t>{3})));
  // 2(k-1)/k * S / B: 4 GPUs, 1 GiB, 31.5 GB/s.
  const double want = 1.5 * kAllReduceBytes / 31.5e9;
  EXPECT_NEAR(RingAllReduceSeconds(tree, local, kAllReduceBytes), want, 1e-12);
  EXPECT_EQ(RingAllReduceSeconds(tree, std::vector<int8_t>{3}, kAllReduceBytes), 0);
}

TEST(TopologyTest, WithoutTopologyTheLowestFreeIndices) {
  ClusterState s = One(Node(8, TopologyTemplate::kNone));
  Take(s, {0, 2});
  EXPECT_EQ(Chosen(s, 3), (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(Chosen(s, 1), (std::vector<int>{1}));
  EXPECT_TRUE(Chosen(s, 7).empty());
}

TEST(TopologyTest, MultiGpuPodStaysUnderOneSwitchWhenOneHasRoom) {
  ClusterState s = One(Node(8, TopologyTemplate::kPcieTree));
  Take(s, {0, 1});
  // Lowest indices would be 2, 3, 4 (across sockets); switch 1 has four free.
  EXPECT_EQ(Chosen(s, 3), (std::vector<int>{4, 5, 6}));
  // Two GPUs: switch 0 holds exactly two free (best fit), so switch 1 stays whole.
  EXPECT_EQ(Chosen(s, 2), (std::vector<int>{2, 3}));
}

TEST(TopologyTest, SpreadTakesWholeNumaNodesFirst) {
  ClusterState s = One(Node(8, TopologyTemplate::kPcieTree));
  Take(s, {0});
  // Six GPUs cannot stay on one socket: all four of switch 1, then two of switch 0.
  EXPECT_EQ(Chosen(s, 6), (std::vector<int>{1, 2, 4, 5, 6, 7}));
}

TEST(TopologyTest, OneGpuPodTakesALoneGpuBeforeBreakingAnIsland) {
  // GPUs 0-1 and 2-3 are NVLink pairs; 4-7 have no NVLink.
  NodeSpec n = Node(8, TopologyTemplate::kPcieTree);
  n.topology.gpus[0].nvlink_group = n.topology.gpus[1].nvlink_group = "a";
  n.topology.gpus[2].nvlink_group = n.topology.gpus[3].nvlink_group = "b";
  ClusterState s = One(n);
  EXPECT_EQ(Chosen(s, 1), (std::vector<int>{4}));
  EXPECT_EQ(Chosen(s, 2), (std::vector<int>{0, 1}));  // an NVLink pair beats a switch pair
  Take(s, {0});
  // GPU 1's island is already broken: the next 1-GPU pod goes there.
  EXPECT_EQ(Chosen(s, 1), (std::vector<int>{1}));
}

TEST(TopologyTest, OnAnNvSwitchNodeSmallPodsKeepSwitchPairsAndSocketsWhole) {
  ClusterState s = One(Node(8, TopologyTemplate::kDgx));
  Take(s, {0});
  EXPECT_EQ(Chosen(s, 1), (std::vector<int>{1}));        // GPU 0's switch partner
  EXPECT_EQ(Chosen(s, 2), (std::vector<int>{2, 3}));     // a whole switch pair
  EXPECT_EQ(Chosen(s, 3), (std::vector<int>{1, 2, 3}));  // NUMA node 0's three free GPUs
}

// 8 GPUs: NVLink groups a = {0, 1} and b = {2, 3, 4, 5}, none for 6 and 7; NUMA 0 holds 0-3,
// NUMA 1 holds 4-7; no PCIe switches.
NodeSpec Islands() {
  NodeSpec n{
      .name = "n0", .cpu_milli = 64000, .memory_mib = 262144, .num_gpus = 8, .gpu_model = "A100"};
  n.topology.numa = {{0, 32000, 131072}, {1, 32000, 131072}};
  for (int g = 0; g < 8; ++g) {
    core::GpuTopology t;
    t.numa_node = g < 4 ? 0 : 1;
    t.nvlink_group = g < 2 ? "a" : (g < 6 ? "b" : "");
    n.topology.gpus.push_back(t);
  }
  return n;
}

std::vector<int> ChosenWith(const ClusterState& s, int k, const GpuSetNeeds& needs) {
  Placement p;
  p.node = 0;
  if (!ChooseGpuSet(s, 0, k, needs, &p)) return {};
  return std::vector<int>(p.gpus.begin(), p.gpus.begin() + p.num_gpus);
}

TEST(TopologyTest, NeedsKeepTheSetInOneNvLinkGroupOrNumaNode) {
  const ClusterState s = One(Islands());
  struct Case {
    const char* name;
    int k;
    GpuSetNeeds needs;
    std::vector<int> want;  // empty: no set meets the needs
  };
  const std::vector<Case> cases = {
      {"NVLink: the group that fits best", 2, {.nvlink = true}, {0, 1}},
      {"NVLink without GPU 0: inside the big group, one NUMA node",
       2,
       {.usable = 0xFEu, .nvlink = true},
       {2, 3}},
      {"NVLink, 3 GPUs: only the big group holds them", 3, {.nvlink = true}, {2, 3, 4}},
      {"NVLink on one NUMA node, 3 GPUs: none", 3, {.nvlink = true, .one_numa = true}, {}},
      {"one NUMA node without GPU 1: the other socket",
       4,
       {.usable = 0xFDu, .one_numa = true},
       {4, 5, 6, 7}},
      {"no needs but the usable GPUs: the rules above on those", 2, {.usable = 0xC0u}, {6, 7}},
      {"too few usable", 3, {.usable = 0xC0u}, {}},
  };
  for (const Case& c : cases) EXPECT_EQ(ChosenWith(s, c.k, c.needs), c.want) << c.name;
  // Without needs the two overloads agree.
  for (int k = 1; k <= 8; ++k) EXPECT_EQ(ChosenWith(s, k, {}), Chosen(s, k)) << k;
}

TEST(TopologyTest, WithoutTopologyLinkNeedsAreNeverMet) {
  const ClusterState s = One(Node(8, TopologyTemplate::kNone));
  EXPECT_TRUE(ChosenWith(s, 2, {.nvlink = true}).empty());
  EXPECT_TRUE(ChosenWith(s, 2, {.one_numa = true}).empty());
  EXPECT_EQ(ChosenWith(s, 2, {.usable = 0x30u}), (std::vector<int>{4, 5}));
}

TEST(TopologyTest, MeasureComparesWithTheBestSetOnTheNode) {
  ClusterState s = One(Node(8, TopologyTemplate::kPcieTree));
  Take(s, {0, 1});
  Placement bad;  // lowest indices: across sockets
  bad.node = 0;
  bad.num_gpus = 3;
  bad.gpus[0] = 2;
  bad.gpus[1] = 3;
  bad.gpus[2] = 4;
  PodShape pod{.cpu_milli = 0, .memory_mib = 0, .num_gpu = 3, .gpu_milli = core::kMilliGpu};
  ASSERT_TRUE(s.Allocate(pod, bad).ok());
  GpuSetQuality q = MeasureGpuSet(s, bad);
  ASSERT_TRUE(q.measured);
  EXPECT_FALSE(q.best);
  EXPECT_DOUBLE_EQ(q.slowdown, 31.5 / kUpiLinkGbps);
  EXPECT_GT(q.allreduce_s, 0);
  ASSERT_TRUE(s.Release(pod, bad).ok());

  Placement good = bad;
  good.gpus[0] = 4;
  good.gpus[1] = 5;
  good.gpus[2] = 6;
  ASSERT_TRUE(s.Allocate(pod, good).ok());
  q = MeasureGpuSet(s, good);
  EXPECT_TRUE(q.best);
  EXPECT_DOUBLE_EQ(q.slowdown, 1.0);
  // One GPU, or a node without topology: nothing to measure.
  Placement single = good;
  single.num_gpus = 1;
  EXPECT_FALSE(MeasureGpuSet(s, single).measured);
  ClusterState plain = One(Node(8, TopologyTemplate::kNone));
  EXPECT_FALSE(MeasureGpuSet(plain, good).measured);
}

// The framework hands whole-GPU pods, and sharing pods that landed on a whole free GPU, to the
// chooser; with topology_gpus off it keeps the Reserve plugin's lowest index.
TEST(TopologyTest, FrameworkGivesASharingPodALoneGpuBeforeAnIslandsGpu) {
  NodeSpec n = Node(8, TopologyTemplate::kPcieTree);
  n.topology.gpus[0].nvlink_group = n.topology.gpus[1].nvlink_group = "a";
  for (bool topology : {true, false}) {
    ClusterState s = One(n);
    absl::StatusOr<Profile> bestfit = Registry::Builtins().Create("bestfit", PolicyContext{});
    ASSERT_TRUE(bestfit.ok()) << bestfit.status();
    FrameworkOptions o;
    o.topology_gpus = topology;
    Framework fw(std::move(*bestfit), o);
    const PodShape half{.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = 500};
    const Outcome first = fw.Schedule(half, s);
    ASSERT_TRUE(first.ok()) << first.reason;
    EXPECT_EQ(first.placement.gpus[0], topology ? 2 : 0);  // GPU 2: no NVLink partner
    // The next one shares the partly used GPU (bestfit's choice: the least room that fits).
    const Outcome second = fw.Schedule(half, s);
    ASSERT_TRUE(second.ok()) << second.reason;
    EXPECT_EQ(second.placement.gpus[0], first.placement.gpus[0]);
  }
}

TEST(TopologyTest, CpuGoesToTheGpusNumaNodeWhenItFits) {
  ClusterState s = One(Node(8, TopologyTemplate::kPcieTree));  // 32 cores per NUMA node
  Placement p;
  p.node = 0;
  p.num_gpus = 2;
  p.gpus[0] = 4;
  p.gpus[1] = 5;  // both on NUMA node 1
  const PodShape fits{
      .cpu_milli = 32000, .memory_mib = 1024, .num_gpu = 2, .gpu_milli = core::kMilliGpu};
  EXPECT_EQ(HomeNuma(s.node(0), p), 1);
  EXPECT_EQ(ChooseNuma(s, fits, p), 1);
  // More CPU than its home has: not pinned (remote cores would not help it).
  PodShape big = fits;
  big.cpu_milli = 32001;
  EXPECT_EQ(ChooseNuma(s, big, p), -1);
  // GPUs split 1 + 2 across the sockets: the home holds most of them.
  p.num_gpus = 3;
  p.gpus[2] = 3;  // {4, 5, 3}
  EXPECT_EQ(HomeNuma(s.node(0), p), 1);
  p.gpus[1] = 2;  // {4, 2, 3}
  EXPECT_EQ(HomeNuma(s.node(0), p), 0);
  // A CPU-only pod goes where most CPU is left, the lowest id on ties.
  Placement cpu;
  cpu.node = 0;
  const PodShape cpu_pod{.cpu_milli = 4000, .memory_mib = 1024};
  EXPECT_EQ(ChooseNuma(s, cpu_pod, cpu), 0);
  cpu.numa = 0;
  ASSERT_TRUE(s.Allocate(cpu_pod, cpu).ok());
  EXPECT_EQ(ChooseNuma(s, cpu_pod, cpu), 1);
  // No NUMA topology: never pinned.
  ClusterState plain = One(Node(8, TopologyTemplate::kNone));
  EXPECT_EQ(ChooseNuma(plain, cpu_pod, cpu), -1);
  EXPECT_EQ(HomeNuma(plain.node(0), p), -1);
}

TEST(TopologyTest, LinkGenerationFollowsTheModelName) {
  EXPECT_DOUBLE_EQ(LinkGenerationOf("V100M32").nvlink_gbps, 150);
  EXPECT_DOUBLE_EQ(LinkGenerationOf("a800").nvlink_gbps, 300);
  EXPECT_DOUBLE_EQ(LinkGenerationOf("NVIDIA H200").pcie_gbps, 63);
  EXPECT_DOUBLE_EQ(LinkGenerationOf("T4").pcie_gbps, 31.5);  // the default
}

}  // namespace
}  // namespace seedance::sched
