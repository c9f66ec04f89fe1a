#include "seedance/clusterscale/cluster_autoscaler.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "node_room.h"
#include "policy_placer.h"

namespace seedance::clusterscale {
namespace {

core::NodeSpec Node(int64_t cpu, int64_t mem_gib, int32_t gpus, std::string model, double price) {
  return core::NodeSpec{"n", cpu * 1000, mem_gib * 1024, gpus, std::move(model), price};
}

NodeGroup Group(std::string name, core::NodeSpec node, int max_size) {
  node.name = name;
  return NodeGroup{std::move(name), std::move(node), 0, max_size};
}

PendingPod Pod(int64_t cpu, int64_t mem_gib, int32_t gpus, int32_t gpu_milli) {
  return PendingPod{core::PodShape{cpu * 1000, mem_gib * 1024, gpus, gpu_milli}, {}};
}

// A 1-GPU pod of 1 CPU and 1 GiB that lives one second.
core::PodSpec OneSecondPod() {
  core::PodSpec p;
  p.name = "p";
  p.shape = {1000, 1024, 1, 1000};
  p.creation_s = 0;
  p.deletion_s = 1;
  return p;
}

// Two 1-GPU pods: one living 100 s, one 20,000 s.
std::vector<core::PodSpec> ShortAndLongPods() {
  std::vector<core::PodSpec> pods;
  for (int i = 0; i < 2; ++i) {
    core::PodSpec p = OneSecondPod();
    p.name = "p" + std::to_string(i);
    p.deletion_s = i == 0 ? 100 : 20000;
    pods.push_back(p);
  }
  return pods;
}

struct ExpanderCase {
  std::string name;
  std::vector<NodeGroup> groups;
  std::vector<PendingPod> pods;
  std::vector<int> want_ca;        // nodes added per group by ca-least-waste
  std::vector<int> want_seedance;  // ... by the seedance expander
};

// Every row worked by hand in its comment.
TEST(ExpanderTest, ChoicesMatchHandComputedRows) {
  const std::vector<ExpanderCase> cases = {
      // One 8-core 32 GiB 1-GPU pod. "dense" (8c/32G/4xT4): CPU and memory waste 0, 3 of 4 GPUs
      // idle. "single" (16c/64G/1xV100M16): waste 0.5 + 0.5, no GPU idle. CA takes dense.
      {"ca_ignores_idle_gpus",
       {Group("dense", Node(8, 32, 4, "T4", 2.12), 10),
        Group("single", Node(16, 64, 1, "V100M16", 2.48), 10)},
       {Pod(8, 32, 1, 1000)},
       {1, 0},
       {0, 1}},
      // Two 4c/16G 1-GPU pods on equal shapes: every waste is 0 and both help 2 pods; CA keeps
      // the first group, Seedance the cheaper ($1.06 against $4.96 for the node).
      {"price_breaks_ties",
       {Group("v100", Node(8, 32, 2, "V100M16", 4.96), 10),
        Group("t4", Node(8, 32, 2, "T4", 1.06), 10)},
       {Pod(4, 16, 1, 1000), Pod(4, 16, 1, 1000)},
       {1, 0},
       {0, 1}},
      // Four 0.5-GPU pods of 1c/4G. "two" (2 GPUs, 8c/32G) takes all four on one node: GPU waste
      // 0, CPU 0.5, memory 0.5 = 1.0. "eight" (8 GPUs, 4c/16G) takes all four: CPU 0, memory 0,
      // GPU waste 6 of 8. CA picks eight, Seedance two.
      {"gpu_shares_packed",
       {Group("two", Node(8, 32, 2, "V100M16", 4.96), 10),
        Group("eight", Node(4, 16, 8, "V100M16", 19.84), 10)},
       {Pod(1, 4, 1, 500), Pod(1, 4, 1, 500), Pod(1, 4, 1, 500), Pod(1, 4, 1, 500)},
       {0, 1},
       {1, 0}},
      // Similar groups (same model and GPUs, memory within 5%), three 8c/30G 1-GPU pods, one per
      // node. CA: memory waste a 2/32 = 0.0625, b 1/31 = 0.032 -> all three on b. Seedance picks b
      // too (no GPU idle on either, less CPU+memory waste), then balances: each node goes to the
      // similar group with strictly most room left, first on ties: b (10 > 8), b (9 > 8), then
      // a (8 = 8) -> {1, 2}.
      {"balance_similar_groups",
       {Group("a", Node(8, 32, 1, "V100M16", 2.48), 8),
        Group("b", Node(8, 31, 1, "V100M16", 2.48), 10)},
       {Pod(8, 30, 1, 1000), Pod(8, 30, 1, 1000), Pod(8, 30, 1, 1000)},
       {0, 3},
       {1, 2}},
  };
  for (const ExpanderCase& c : cases) {
    std::vector<int> room;
    for (const NodeGroup& g : c.groups) room.push_back(g.max_size);
    ScaleUpOptions ca{.expander = ExpanderKind::kCaLeastWaste};
    ScaleUpOptions seed{.expander = ExpanderKind::kSeedance};
    EXPECT_EQ(DecideScaleUp(c.groups, c.pods, room, ca).add, c.want_ca) << c.name;
    EXPECT_EQ(DecideScaleUp(c.groups, c.pods, room, seed).add, c.want_seedance) << c.name;
  }
}

TEST(ExpanderTest, RespectsRoomAndPerScaleUpCap) {
  std::vector<NodeGroup> groups = {Group("g", Node(8, 32, 1, "T4", 0.53), 5)};
  std::vector<PendingPod> pods(4, Pod(8, 32, 1, 1000));
  EXPECT_EQ(DecideScaleUp(groups, pods, {2}, {}).add, std::vector<int>{2});
  EXPECT_EQ(DecideScaleUp(groups, pods, {0}, {}).add, std::vector<int>{0});
  EXPECT_EQ(DecideScaleUp(groups, pods, {5}, {.max_nodes_per_scale_up = 3}).add,
            std::vector<int>{3});
  // A pod no template can hold gives no option.
  EXPECT_EQ(DecideScaleUp(groups, {Pod(9, 1, 0, 0)}, {5}, {}).add, std::vector<int>{0});
  // A model restriction is honoured.
  PendingPod v100 = Pod(1, 1, 1, 1000);
  v100.gpu_models = {"V100M16"};
  EXPECT_FALSE(FitsEmptyNode(groups[0].node, v100));
}

TEST(GroupsTest, OneGroupPerShapeWithBounds) {
  std::vector<core::NodeSpec> nodes = {Node(8, 32, 1, "T4", 0.53), Node(8, 32, 1, "T4", 0.53),
                                       Node(96, 384, 8, "G2", 19.84), Node(8, 32, 1, "T4", 0.53)};
  absl::StatusOr<std::vector<NodeGroup>> groups =
      GroupsFromNodes(nodes, {.min_fraction = 0.5, .max_factor = 1.5});
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].name, "T4x1-8c-32g");
  EXPECT_EQ((*groups)[0].min_size, 1);  // floor(0.5 x 3)
  EXPECT_EQ((*groups)[0].max_size, 5);  // ceil(1.5 x 3)
  EXPECT_EQ((*groups)[1].min_size, 0);
  EXPECT_EQ((*groups)[1].max_size, 2);
}

TEST(OptionsTest, BadOptionsNameTheField) {
  struct Row {
    absl::Status status;
    std::string field;
  };
  std::vector<core::NodeSpec> nodes = {Node(8, 32, 1, "T4", 0.53)};
  auto churn = [](auto edit) {
    ChurnOptions o;
    edit(o);
    return Validate(o);
  };
  const std::vector<Row> rows = {
      {GroupsFromNodes(nodes, {.min_fraction = 1.5}).status(), "min_fraction"},
      {GroupsFromNodes(nodes, {.max_factor = 0.5}).status(), "max_factor"},
      {GroupsFromNodes({}, {}).status(), "nodes"},
      {Validate(ScaleUpOptions{.max_nodes_per_scale_up = 0}), "max_nodes_per_scale_up"},
      {Validate(ScaleUpOptions{.balance_tolerance = -1}), "balance_tolerance"},
      {churn([](ChurnOptions& o) { o.load = 0; }), "load"},
      {churn([](ChurnOptions& o) { o.duration_h = -1; }), "duration_h"},
      {churn([](ChurnOptions& o) { o.scan_interval_s = 0; }), "scan_interval_s"},
      {churn([](ChurnOptions& o) { o.provision_max_s = 100; }), "provision_max_s"},
      {churn([](ChurnOptions& o) { o.idle_s = -1; }), "idle_s"},
      {churn([](ChurnOptions& o) { o.drain_below_utilization = 1.5; }), "drain_below_utilization"},
      {churn([](ChurnOptions& o) { o.max_drains_per_scan = 0; }), "max_drains_per_scan"},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument) << r.field;
    EXPECT_TRUE(absl::StartsWith(r.status.message(), r.field + ":")) << r.status;
  }
}

// Sparse arrivals of 1-second pods on a group of at most one 1-GPU node, min 0: every pod waits
// for a fresh node (the next scan, within 10 s, plus the fixed 200 s delay), and every node is
// removed once idle for idle_s, so it is paid for delay + 1 s + idle_s up to one scan more.
TEST(ChurnTest, ProvisioningDelayAndIdleScaleDown) {
  std::vector<NodeGroup> groups = {Group("g", Node(8, 32, 1, "T4", 0.53), 1)};
  std::vector<core::PodSpec> pods = {OneSecondPod()};
  ChurnOptions o;
  o.load = 1e-5;  // one arrival every 1e5 s on average
  o.duration_h = 1000;
  o.warmup_h = 0;
  o.provision_min_s = o.provision_max_s = 200;
  o.idle_s = 600;
  absl::StatusOr<ChurnReport> r = RunChurn(groups, pods, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GT(r->pods_arrived, 10);
  EXPECT_GE(r->pending_p50_s, 200);
  EXPECT_LE(r->pending_p99_s, 210);
  EXPECT_EQ(r->nodes_added, r->pods_arrived);
  EXPECT_GE(r->nodes_removed, r->nodes_added - 1);
  const double n = static_cast<double>(r->nodes_added);
  EXPECT_GE(r->gpu_hours_paid, (n - 1) * 801 / 3600);
  EXPECT_LE(r->gpu_hours_paid, n * 821 / 3600);
  // The node idles idle_s (plus up to one scan) after its pod, and not while provisioning.
  EXPECT_GE(r->idle_gpu_hours, (n - 1) * 600 / 3600);
  EXPECT_LE(r->idle_gpu_hours, n * 610 / 3600);
}

TEST(JobReplayTest, AJobLargerThanANodeBecomesPodsOfWholeNodes) {
  const std::vector<core::PodSpec> pods =
      PodsFromJobs({{0, 100, 1}, {10, 50, 20}, {20, 5, 0}}, /*gpus_per_node=*/8);
  ASSERT_EQ(pods.size(), 4u);  // 1 GPU; 8 + 8 + 4; a job without GPUs gives no pod
  const std::vector<int32_t> gpus = {1, 8, 8, 4};
  for (size_t i = 0; i < pods.size(); ++i) {
    EXPECT_EQ(pods[i].shape.num_gpu, gpus[i]);
    EXPECT_EQ(pods[i].shape.gpu_milli, core::kMilliGpu);
    EXPECT_EQ(pods[i].shape.cpu_milli, 0);
  }
  EXPECT_EQ(pods[3].name, "job-1-2");
  EXPECT_EQ(pods[3].creation_s, 10);
  EXPECT_EQ(pods[3].deletion_s, 60);
}

// Two 1-GPU jobs replayed on a group of 1-GPU nodes (min 0): each arrives once, at its own
// time, and waits for a node of its own (the first still runs when the second comes).
TEST(JobReplayTest, PodsArriveOnceAtTheirCreationTimes) {
  std::vector<NodeGroup> groups = {Group("g", Node(8, 32, 1, "T4", 0.53), 2)};
  ChurnOptions o;
  o.replay = true;
  o.duration_h = 2;
  o.warmup_h = 0;
  o.scan_interval_s = 10;
  o.provision_min_s = o.provision_max_s = 100;
  absl::StatusOr<ChurnReport> r =
      RunChurn(groups, PodsFromJobs({{500, 3000, 1}, {100, 3000, 1}}, 1), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pods_arrived, 2);
  EXPECT_EQ(r->nodes_added, 2);
  EXPECT_EQ(r->pods_waited, 2);
  // Each waits for the next scan (10 s at most) and the 100 s delay.
  EXPECT_GE(r->pending_p50_s, 100);
  EXPECT_LE(r->pending_p99_s, 110);
  // The job arriving at 100 s runs to 100 + wait + 3000; nothing is left waiting.
  EXPECT_EQ(r->pods_waiting_at_end, 0);
}

TEST(ClusterscaleDeathTest, NodesWithoutGpusCannotTakeAJobTrace) {
  EXPECT_DEATH(PodsFromJobs({{0, 1, 1}}, 0), "jobs replayed on nodes of 0 GPUs");
}

TEST(ChurnTest, NodesNeverDropBelowMin) {
  std::vector<NodeGroup> groups = {Group("g", Node(8, 32, 1, "T4", 0.53), 3)};
  groups[0].min_size = 2;
  std::vector<core::PodSpec> pods = {OneSecondPod()};
  ChurnOptions o;
  o.load = 1e-4;
  o.duration_h = 10;
  o.warmup_h = 0;
  absl::StatusOr<ChurnReport> r = RunChurn(groups, pods, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->nodes_added, 0);  // two nodes always hold the rare pod
  EXPECT_EQ(r->nodes_removed, 0);
  EXPECT_NEAR(r->gpu_hours_paid, 20, 1e-6);
}

// 1-GPU pods on 4-GPU nodes, half living 100 s and half 20,000 s: departures leave nodes with
// one or two long pods on them. Without draining such a node stays until its last pod ends;
// draining below 0.5 (CA's threshold) moves those pods onto other nodes' free GPUs and removes
// it, so fewer GPUs sit idle for the same arrivals. Nothing is moved when draining is off, and
// every drained node moved at least one pod (an empty node is removed, not drained).
TEST(ChurnTest, DrainingUnderusedNodesMovesPodsAndCutsIdleGpus) {
  std::vector<NodeGroup> groups = {Group("g", Node(32, 128, 4, "T4", 2.12), 40)};
  const std::vector<core::PodSpec> pods = ShortAndLongPods();
  ChurnOptions o;
  o.load = 0.3;
  o.duration_h = 48;
  o.warmup_h = 6;
  absl::StatusOr<ChurnReport> off = RunChurn(groups, pods, o);
  o.drain_below_utilization = 0.5;
  absl::StatusOr<ChurnReport> on = RunChurn(groups, pods, o);
  ASSERT_TRUE(off.ok()) << off.status();
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(off->pods_arrived, on->pods_arrived);  // the same arrivals
  EXPECT_EQ(off->nodes_drained, 0);
  EXPECT_EQ(off->pods_moved, 0);
  EXPECT_GT(on->nodes_drained, 0);
  EXPECT_GE(on->pods_moved, on->nodes_drained);
  EXPECT_LE(on->nodes_drained, on->nodes_removed);
  EXPECT_LT(on->idle_gpu_hours, off->idle_gpu_hours);
}

// The headroom guard drains only while the free GPUs left cover the demand expected before a
// new node could join. With a day-long provisioning delay that demand (a day of arrivals) is
// more than the whole group holds, so no drain passes; with no delay (and 1 s scans) the demand
// to cover is a fraction of a GPU and drains pass.
TEST(ChurnTest, HeadroomGuardKeepsRoomForTheProvisioningDelay) {
  std::vector<NodeGroup> groups = {Group("g", Node(32, 128, 4, "T4", 2.12), 40)};
  const std::vector<core::PodSpec> pods = ShortAndLongPods();
  ChurnOptions o;
  o.load = 0.3;
  o.duration_h = 48;
  o.drain_below_utilization = 0.5;
  o.drain_keeps_headroom = true;
  o.provision_min_s = o.provision_max_s = 86400;
  absl::StatusOr<ChurnReport> slow = RunChurn(groups, pods, o);
  o.provision_min_s = o.provision_max_s = 0;
  o.scan_interval_s = 1;
  absl::StatusOr<ChurnReport> instant = RunChurn(groups, pods, o);
  ASSERT_TRUE(slow.ok()) << slow.status();
  ASSERT_TRUE(instant.ok()) << instant.status();
  EXPECT_EQ(slow->nodes_drained, 0);
  EXPECT_GT(instant->nodes_drained, 0);
}

// Pre-scaling requests nodes before pods wait for them: for the same arrivals fewer pods wait
// (every wait here is a provisioning delay), at the price of more paid GPU-hours; without it no
// node is requested ahead of a pending pod.
TEST(ChurnTest, PrescalingCutsWaitsForProvisioning) {
  std::vector<NodeGroup> groups = {Group("g", Node(32, 128, 4, "T4", 2.12), 40)};
  ChurnOptions o;
  o.load = 0.3;
  o.duration_h = 48;
  absl::StatusOr<ChurnReport> off = RunChurn(groups, ShortAndLongPods(), o);
  o.prescale = true;
  absl::StatusOr<ChurnReport> on = RunChurn(groups, ShortAndLongPods(), o);
  ASSERT_TRUE(off.ok()) << off.status();
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(off->pods_arrived, on->pods_arrived);
  EXPECT_EQ(off->nodes_prescaled, 0);
  EXPECT_GT(on->nodes_prescaled, 0);
  EXPECT_LE(on->nodes_prescaled, on->nodes_added);
  EXPECT_GT(off->pods_waited, 0);
  EXPECT_LT(on->pods_waited, off->pods_waited);
  EXPECT_LE(on->pending_p99_s, off->pending_p99_s);
  EXPECT_GT(on->gpu_hours_paid, off->gpu_hours_paid);
}

// Placement through a sched policy: every policy sees the same arrivals, binds in its own
// ClusterState (checked against churn's rooms on every placement, move and removal: a mismatch
// aborts), and drains move pods through it. An unknown policy or knob is refused by name.
TEST(ChurnTest, PlacesThroughASchedPolicy) {
  std::vector<NodeGroup> groups = {Group("t4", Node(32, 128, 4, "T4", 2.12), 20),
                                   Group("v100", Node(64, 256, 8, "V100M16", 19.84), 10)};
  std::vector<core::PodSpec> pods;
  for (int i = 0; i < 3; ++i) {
    core::PodSpec p = OneSecondPod();
    p.name = "p" + std::to_string(i);
    p.deletion_s = i == 0 ? 100 : 20000;
    if (i == 2) p.shape = {4000, 4096, 1, 500};  // a half-GPU share
    pods.push_back(p);
  }
  pods[1].gpu_spec = "V100M16";  // bound to one model
  ChurnOptions o;
  o.load = 0.3;
  o.duration_h = 48;
  o.drain_below_utilization = 0.5;
  absl::StatusOr<ChurnReport> builtin = RunChurn(groups, pods, o);
  ASSERT_TRUE(builtin.ok()) << builtin.status();
  for (const char* policy : {"bestfit", "fgd", "cas"}) {
    o.policy = policy;
    absl::StatusOr<ChurnReport> r = RunChurn(groups, pods, o);
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status();
    EXPECT_EQ(r->pods_arrived, builtin->pods_arrived) << policy;
    EXPECT_GT(r->gpu_hours_paid, 0) << policy;
    EXPECT_GT(r->nodes_drained, 0) << policy;
  }
  o.policy = "no-such-policy";
  absl::StatusOr<ChurnReport> bad = RunChurn(groups, pods, o);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(bad.status().message(), "policy:")) << bad.status();
  o.policy = "cas";
  o.policy_params = {{"no_such_knob", "1"}};
  bad = RunChurn(groups, pods, o);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(bad.status().message(), "policy:")) << bad.status();
}

// A node whose pods fit nowhere else is not drained: one group of at most one node.
TEST(ChurnTest, ANodeIsDrainedOnlyWhenItsPodsFitElsewhere) {
  std::vector<NodeGroup> groups = {Group("g", Node(32, 128, 4, "T4", 2.12), 1)};
  core::PodSpec p = OneSecondPod();
  p.deletion_s = 5000;
  ChurnOptions o;
  o.load = 0.5;
  o.duration_h = 24;
  o.warmup_h = 0;
  o.drain_below_utilization = 1.0;
  absl::StatusOr<ChurnReport> r = RunChurn(groups, {p}, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->pods_arrived, 10);
  EXPECT_EQ(r->nodes_drained, 0);
  EXPECT_EQ(r->pods_moved, 0);
}

// Pre-scaling's shortfall: pods fitted in order, first fit, each taking its room on a copy.
TEST(NotFittingTest, FitsPodsInOrderOnCopiesOfTheRoomsByShape) {
  const core::NodeSpec t4 = Node(8, 32, 2, "T4", 1.06);
  NodeRoom a(t4), b(t4);
  a.Take({1000, 1, 1, 500});  // a: one GPU half used, one free; b: both free
  const std::vector<const NodeRoom*> rooms = {&a, &b};
  const PendingPod half{{1000, 1, 1, 500}, {}}, two{{1000, 1, 2, 1000}, {}},
      v100{{1000, 1, 1, 1000}, {"V100"}};
  // half: GPU 0 of a; two whole: b; half: a's free GPU; a second 2-GPU pod: nowhere left;
  // a pod only V100s may run: nowhere.
  const std::vector<PendingPod> out = NotFitting({half, two, half, two, v100}, rooms);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape.num_gpu, 2);
  EXPECT_EQ(out[1].gpu_models, std::vector<std::string>{"V100"});
  // The rooms themselves are untouched.
  EXPECT_EQ(a.gpu_free_milli(), 1500);
  EXPECT_EQ(b.gpu_free_milli(), 2000);
  // Eight halves: a holds 1 + 2, b 2 + 2; one is left over.
  EXPECT_EQ(NotFitting(std::vector<PendingPod>(8, half), rooms).size(), 1u);
}

using ClusterscaleDeathTest = ::testing::Test;

TEST(ClusterscaleDeathTest, RoomOfTheWrongSizeIsABug) {
  std::vector<NodeGroup> groups = {Group("g", Node(8, 32, 1, "T4", 0.53), 1)};
  EXPECT_DEATH(ExpansionOptions(groups, {}, {1, 1}, 10), "room has .* entries for .* groups");
  EXPECT_DEATH(ExpansionOptions(groups, {}, {-1}, 10), "group .* has negative room");
}

TEST(ClusterscaleDeathTest, TakingMoreThanTheRoomIsABug) {
  core::NodeSpec node = Node(8, 32, 2, "T4", 1.06);
  NodeRoom room(node);
  EXPECT_DEATH(room.Take({9000, 1, 0, 0}), "pod of .* mCPU taken from a node with .* free");
  EXPECT_DEATH(room.Take({1000, 1, 3, 1000}), "pod of .* GPUs got");
}

TEST(ClusterscaleDeathTest, MirroringAPlacementWithoutRoomIsABug) {
  core::NodeSpec node = Node(8, 32, 2, "T4", 1.06);
  NodeRoom room(node);
  const std::vector<int8_t> one = {0};
  EXPECT_DEATH(room.TakeOn({9000, 1, 1, 1000}, one),
               "pod of .* mCPU and .* GPUs placed on a node with .* free");
  room.TakeOn({1000, 1, 1, 600}, one);
  EXPECT_DEATH(room.TakeOn({1000, 1, 1, 600}, one), "GPU 0 has no room for 600 milli");
}

TEST(ClusterscaleDeathTest, APolicyStateOutOfStepIsABug) {
  std::vector<NodeGroup> groups = {Group("g", Node(8, 32, 2, "T4", 1.06), 4)};
  ChurnOptions o;
  o.policy = "bestfit";
  absl::StatusOr<std::unique_ptr<internal::PolicyPlacer>> placer =
      internal::PolicyPlacer::Create(groups, {OneSecondPod()}, o);
  ASSERT_TRUE(placer.ok()) << placer.status();
  ASSERT_TRUE((*placer)->Join(0, groups[0].node, 0).ok());
  EXPECT_DEATH((void)(*placer)->Join(0, groups[0].node, 0), "node 0 could not join");
  absl::StatusOr<std::vector<internal::PolicyPlacer::Started>> started =
      (*placer)->Arrive(7, OneSecondPod().shape, "", 0, 1);
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ((*started)[0].id, 7);
  EXPECT_EQ((*started)[0].node, 0);
  EXPECT_DEATH((*placer)->Remove(0), "node 0 could not leave");
}

}  // namespace
}  // namespace seedance::clusterscale
