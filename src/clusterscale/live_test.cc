#include "seedance/clusterscale/live.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::clusterscale {
namespace {

// Two groups: 8 x A100 at $20/h (0..3 nodes) and 1 x T4 at $1/h (1..4 nodes).
std::vector<NodeGroup> Groups() {
  NodeGroup big{"a100x8", core::NodeSpec{"a100x8", 96'000, 1'024 * 1024, 8, "A100", 20.0}, 0, 3};
  NodeGroup small{"t4x1", core::NodeSpec{"t4x1", 8'000, 32 * 1024, 1, "T4", 1.0}, 1, 4};
  return {big, small};
}

PendingPod Gpus(int32_t gpus, std::vector<std::string> models = {}) {
  return PendingPod{core::PodShape{1'000, 1'024, gpus, 1'000}, std::move(models)};
}

LiveOptions Options() {
  LiveOptions o;
  o.scale_down_unneeded_s = 600;
  o.provision_timeout_s = 900;
  o.backoff_s = 300;
  return o;
}

TEST(LiveAutoscalerTest, AnUnschedulablePodGetsANodeOfTheGroupThatWastesLeast) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.now_s = 0;
  v.nodes = {{"t4x1-0", 1, false}};
  v.unschedulable = {Gpus(1)};
  const LiveActions first = a.Scan(v);
  ASSERT_EQ(first.add.size(), 1u);
  EXPECT_EQ(first.add[0], std::make_pair(1, std::string("t4x1-1")));  // one T4 wastes nothing
  EXPECT_EQ(first.pods_helped, 1);
  EXPECT_EQ(a.status()[1].provisioning, 1);
  EXPECT_EQ(a.status()[1].ready, 1);

  // The next scan, the node not joined yet: the pod waits for it, nothing more is asked for.
  v.now_s = 10;
  const LiveActions second = a.Scan(v);
  EXPECT_TRUE(second.add.empty());
  EXPECT_EQ(second.pods_waiting_for_upcoming, 1);

  // An 8-GPU pod only the A100 group can hold.
  v.unschedulable = {Gpus(1), Gpus(8)};
  const LiveActions third = a.Scan(v);
  ASSERT_EQ(third.add.size(), 1u);
  EXPECT_EQ(third.add[0], std::make_pair(0, std::string("a100x8-0")));
}

TEST(LiveAutoscalerTest, PodsNoNodeCanBeAskedForAreCountedByWhy) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.nodes = {{"a100x8-0", 0, false}, {"a100x8-1", 0, false}, {"a100x8-2", 0, false}};
  // 16 GPUs: no template holds it; 8 GPUs: only the A100 group, at its max of 3; 1 GPU: the
  // T4 group has room.
  v.unschedulable = {Gpus(16), Gpus(8), Gpus(1)};
  const LiveActions act = a.Scan(v);
  EXPECT_EQ(act.pods_no_group_fits, 1);
  EXPECT_EQ(act.pods_groups_full, 1);
  ASSERT_EQ(act.add.size(), 1u);
  EXPECT_EQ(act.add[0].first, 1);
}

TEST(LiveAutoscalerTest, PodsAreBinPackedOntoAsFewNodesAsTheyNeed) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.unschedulable = {Gpus(4, {"A100"}), Gpus(4, {"A100"}), Gpus(4, {"A100"})};
  const LiveActions act = a.Scan(v);
  ASSERT_EQ(act.add.size(), 2u);  // 4 + 4 on one node, 4 on a second
  EXPECT_EQ(act.add[0].second, "a100x8-0");
  EXPECT_EQ(act.add[1].second, "a100x8-1");
  EXPECT_EQ(act.pods_helped, 3);
}

TEST(LiveAutoscalerTest, AGroupNeverGrowsPastItsMaxSize) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.nodes = {{"a100x8-0", 0, false}, {"a100x8-1", 0, false}};
  v.unschedulable = {Gpus(8), Gpus(8), Gpus(8)};
  const LiveActions act = a.Scan(v);
  ASSERT_EQ(act.add.size(), 1u);  // max 3, two exist
  EXPECT_EQ(act.add[0].second, "a100x8-2");
  EXPECT_EQ(act.pods_helped, 1);
  v.now_s = 10;
  EXPECT_TRUE(a.Scan(v).add.empty());  // the third is requested: no room left
}

TEST(LiveAutoscalerTest, AnEmptyNodeIsRemovedAfterTheUnneededTimeButNotBelowMinSize) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.nodes = {{"t4x1-0", 1, true}, {"t4x1-1", 1, true}, {"a100x8-0", 0, false}, {"other", -1, true}};
  v.now_s = 100;
  EXPECT_TRUE(a.Scan(v).remove.empty());
  EXPECT_EQ(a.status()[1].unneeded, 2);
  v.now_s = 699;  // 599 s empty
  EXPECT_TRUE(a.Scan(v).remove.empty());
  v.now_s = 700;
  const LiveActions act = a.Scan(v);
  ASSERT_EQ(act.remove.size(), 1u);  // min_size 1 keeps the other T4; "other" is no group's
  EXPECT_EQ(act.remove[0], "t4x1-0");
  EXPECT_EQ(a.status()[1].ready, 1);
  v.nodes.erase(v.nodes.begin());
  v.now_s = 2000;
  EXPECT_TRUE(a.Scan(v).remove.empty());
}

TEST(LiveAutoscalerTest, ANodeThatGetsAPodStartsItsUnneededTimeOver) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.nodes = {{"a100x8-0", 0, true}};
  v.now_s = 0;
  a.Scan(v);
  v.now_s = 500;
  v.nodes[0].empty = false;
  a.Scan(v);
  v.now_s = 600;
  v.nodes[0].empty = true;
  EXPECT_TRUE(a.Scan(v).remove.empty());  // empty since 600, not since 0
  v.now_s = 1199;
  EXPECT_TRUE(a.Scan(v).remove.empty());
  v.now_s = 1200;
  EXPECT_EQ(a.Scan(v).remove, std::vector<std::string>{"a100x8-0"});
}

TEST(LiveAutoscalerTest, ANodeThatNeverJoinsTimesOutAndBacksItsGroupOff) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.unschedulable = {Gpus(8)};
  ASSERT_EQ(a.Scan(v).add.size(), 1u);
  v.now_s = 899;
  EXPECT_TRUE(a.Scan(v).timed_out.empty());
  v.now_s = 900;
  const LiveActions late = a.Scan(v);
  ASSERT_EQ(late.timed_out.size(), 1u);
  EXPECT_EQ(late.timed_out[0], std::make_pair(0, std::string("a100x8-0")));
  EXPECT_TRUE(late.add.empty());  // backed off: not asked again at once
  EXPECT_TRUE(a.status()[0].backed_off);
  v.now_s = 1200;
  const LiveActions again = a.Scan(v);
  ASSERT_EQ(again.add.size(), 1u);
  EXPECT_EQ(again.add[0].second, "a100x8-0");  // the lowest free name again
}

TEST(LiveAutoscalerTest, ANodeTheProvisionerFailsIsForgottenAtOnce) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.unschedulable = {Gpus(8)};
  ASSERT_EQ(a.Scan(v).add.size(), 1u);
  a.Failed("a100x8-0", 5);
  a.Failed("never-asked", 5);  // changes nothing
  v.now_s = 10;
  const LiveActions act = a.Scan(v);
  EXPECT_TRUE(act.add.empty());
  EXPECT_TRUE(act.timed_out.empty());
  EXPECT_EQ(a.status()[0].provisioning, 0);
  EXPECT_TRUE(a.status()[0].backed_off);
  v.now_s = 305;
  EXPECT_EQ(a.Scan(v).add.size(), 1u);
}

TEST(LiveAutoscalerTest, NewNamesTakeTheLowestFreeIndex) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.nodes = {{"a100x8-0", 0, false}, {"a100x8-x", -1, false}, {"a100x8-07", -1, false}};
  v.unschedulable = {Gpus(8)};
  const LiveActions act = a.Scan(v);
  ASSERT_EQ(act.add.size(), 1u);
  EXPECT_EQ(act.add[0].second, "a100x8-1");
  v.nodes = {{"a100x8-1", 0, false}, {"a100x8-2", 0, false}};
  v.now_s = 10;
  v.unschedulable = {};
  a.Scan(v);  // a100x8-1 has joined; its request is done
  v.nodes = {{"a100x8-1", 0, false}};
  v.unschedulable = {Gpus(8)};
  const LiveActions next = a.Scan(v);
  ASSERT_EQ(next.add.size(), 1u);
  EXPECT_EQ(next.add[0].second, "a100x8-0");
}

// An 8 x A100 node of group 0 whose GPUs 0..used-1 each run a 1-GPU pod.
LiveNode A100Node(std::string name, int used, bool schedulable = true) {
  LiveNode n{std::move(name), 0, used == 0};
  n.schedulable = schedulable;
  n.utilization = used / 8.0;
  n.gpu_model = "A100";
  n.cpu_free_milli = 96'000 - used * 1'000;
  n.memory_free_mib = 1'024 * 1'024 - used * 1'024;
  for (int g = 0; g < 8; ++g) n.gpu_free_milli.push_back(g < used ? 0 : 1'000);
  for (int i = 0; i < used; ++i) n.pods.push_back(Gpus(1));
  return n;
}

LiveOptions Draining(int per_scan = 1) {
  LiveOptions o = Options();
  o.scale_down_utilization_threshold = 0.5;
  o.max_drains_per_scan = per_scan;
  return o;
}

TEST(LiveAutoscalerTest, AnUnderusedNodeIsDrainedWhenItsPodsFitElsewhere) {
  LiveAutoscaler a(Groups(), Draining());
  LiveView v;
  v.nodes = {A100Node("a100x8-0", 1), A100Node("a100x8-1", 4)};  // 1/8 and 4/8 used
  EXPECT_TRUE(a.Scan(v).drain.empty());
  EXPECT_EQ(a.status()[0].unneeded, 1);  // 0.5 is not below the threshold
  v.now_s = 600;
  const LiveActions act = a.Scan(v);
  ASSERT_EQ(act.drain.size(), 1u);
  EXPECT_EQ(act.drain[0], std::make_pair(std::string("a100x8-0"), 1));
  EXPECT_TRUE(act.remove.empty());
  EXPECT_EQ(a.status()[0].ready, 1);
  EXPECT_EQ(a.status()[0].unneeded, 0);
}

TEST(LiveAutoscalerTest, ANodeWhosePodsFitNowhereElseIsNotDrained) {
  LiveAutoscaler a(Groups(), Draining());
  LiveView v;
  // 3/8 used, and the other node has only 2 GPUs free; the third cannot take pods (cordoned).
  v.nodes = {A100Node("a100x8-0", 3), A100Node("a100x8-1", 6), A100Node("a100x8-2", 0, false)};
  v.nodes[2].empty = false;  // keep it out of the empty-node path: a pod is on it
  v.nodes[2].utilization = 0.9;
  a.Scan(v);
  v.now_s = 600;
  EXPECT_TRUE(a.Scan(v).drain.empty());
  EXPECT_EQ(a.status()[0].unneeded, 1);
  // Without a threshold nothing but empty nodes is ever removed.
  LiveAutoscaler off(Groups(), Options());
  v.nodes = {A100Node("a100x8-0", 1), A100Node("a100x8-1", 4)};
  v.now_s = 0;
  off.Scan(v);
  v.now_s = 6000;
  EXPECT_TRUE(off.Scan(v).drain.empty());
}

TEST(LiveAutoscalerTest, DrainsGoOneAtATimeAndAReceivingNodeIsNotDrainedWithThem) {
  LiveAutoscaler a(Groups(), Draining(/*per_scan=*/1));
  LiveView v;
  v.nodes = {A100Node("a100x8-0", 2), A100Node("a100x8-1", 1), A100Node("a100x8-2", 3)};
  a.Scan(v);
  v.now_s = 600;
  const LiveActions one = a.Scan(v);
  ASSERT_EQ(one.drain.size(), 1u);
  EXPECT_EQ(one.drain[0].first, "a100x8-1");  // the least used first
  LiveAutoscaler b(Groups(), Draining(/*per_scan=*/3));
  v.now_s = 0;
  b.Scan(v);
  v.now_s = 600;
  const LiveActions more = b.Scan(v);
  // a100x8-1's pod goes to a100x8-2 (best fit: least free GPU after), which then takes no
  // part; a100x8-0's two pods fit on a100x8-2 too: drained in the same scan.
  ASSERT_EQ(more.drain.size(), 2u);
  EXPECT_EQ(more.drain[0].first, "a100x8-1");
  EXPECT_EQ(more.drain[1].first, "a100x8-0");
}

TEST(LiveAutoscalerTest, OnlyTheLeastUsedCandidatesAreTriedInOneScan) {
  LiveView v;
  // The least used node's one pod wants 95 CPUs, more than any other node has free; the next
  // least used node's three 1-GPU pods fit on the first. a100x8-1 is busy.
  v.nodes = {A100Node("a100x8-0", 1), A100Node("a100x8-1", 7), A100Node("a100x8-2", 3)};
  v.nodes[0].pods[0].shape.cpu_milli = 95'000;
  v.nodes[1].utilization = 0.9;
  for (int candidates : {1, 2}) {
    LiveOptions o = Draining(/*per_scan=*/5);
    o.max_drain_candidates = candidates;
    LiveAutoscaler a(Groups(), o);
    v.now_s = 0;
    a.Scan(v);
    v.now_s = 600;
    const LiveActions act = a.Scan(v);
    if (candidates == 1) {
      EXPECT_TRUE(act.drain.empty());  // only a100x8-0 was tried
    } else {
      ASSERT_EQ(act.drain.size(), 1u);
      EXPECT_EQ(act.drain[0].first, "a100x8-2");
    }
  }
}

TEST(LiveAutoscalerTest, PrescalingAsksForTheExpectedDemandAheadOfPendingPods) {
  for (bool prescale : {false, true}) {
    LiveOptions o = Options();
    o.prescale = prescale;
    o.demand_horizon_s = 3600;  // the whole last hour's arrivals again within the horizon
    LiveAutoscaler a(Groups(), o);
    LiveView v;
    v.nodes = {A100Node("a100x8-0", 8), {"t4x1-0", 1, false}};
    a.Scan(v);  // the window starts here
    v.now_s = 3600;
    v.arrivals = {Gpus(2), Gpus(2), Gpus(2), Gpus(2)};  // 8 GPUs arrived, all running now
    const LiveActions act = a.Scan(v);
    EXPECT_DOUBLE_EQ(act.expected_demand_milli, 8'000);
    if (!prescale) {
      EXPECT_TRUE(act.add.empty());
      continue;
    }
    // No free GPU anywhere: one 8 x A100 node holds four 2-GPU pods with nothing wasted.
    ASSERT_EQ(act.add.size(), 1u);
    EXPECT_EQ(act.add[0].second, "a100x8-1");
    EXPECT_EQ(act.prescaled, 1);
    // The node asked for covers the same demand at the next scan: nothing more.
    v.now_s = 3610;
    v.arrivals.clear();
    EXPECT_TRUE(a.Scan(v).add.empty());
  }
}

// Pre-scaling counts room by shape: GPU shares left on busy GPUs hold the sharing pods
// expected, not the whole-GPU ones, however many milli-GPUs they add up to.
TEST(LiveAutoscalerTest, PrescalingFitsTheExpectedPodsOnTheFreeRoomByShape) {
  for (bool whole : {true, false}) {
    SCOPED_TRACE(whole ? "whole-GPU pods expected" : "sharing pods expected");
    LiveOptions o = Options();
    o.prescale = true;
    o.demand_horizon_s = 3600;
    LiveAutoscaler a(Groups(), o);
    LiveView v;
    LiveNode half = A100Node("a100x8-0", 0);
    half.empty = false;
    half.gpu_free_milli.assign(8, 500);  // every GPU half used: 4,000 milli-GPU free
    v.nodes = {half, {"t4x1-0", 1, false}};
    a.Scan(v);
    v.now_s = 3600;
    PendingPod share{core::PodShape{1'000, 1'024, 1, 500}, {}};
    v.arrivals =
        whole ? std::vector<PendingPod>{Gpus(2), Gpus(2)}
              : std::vector<PendingPod>{share, share, share, share, share, share, share, share};
    const LiveActions act = a.Scan(v);
    EXPECT_DOUBLE_EQ(act.expected_demand_milli, 4'000);
    if (!whole) {
      EXPECT_TRUE(act.add.empty());  // eight halves fit on the eight half-free GPUs
      continue;
    }
    ASSERT_EQ(act.add.size(), 1u);  // no GPU is whole: a node for the two 2-GPU pods
    EXPECT_EQ(act.add[0].second, "a100x8-1");
    EXPECT_EQ(act.prescaled, 1);
  }
}

TEST(LiveAutoscalerTest, ABurstRightAfterTheStartIsNotTakenForARate) {
  LiveOptions o = Options();
  o.demand_horizon_s = 250;
  LiveAutoscaler a(Groups(), o);
  LiveView v;
  v.arrivals = {Gpus(8)};
  // 8 GPUs in the first scan: over at least the horizon, at most what arrived is expected.
  EXPECT_DOUBLE_EQ(a.Scan(v).expected_demand_milli, 8'000);
  v.arrivals.clear();
  v.now_s = 1'000;  // then the rate over the time since the start: 8000 / 1000 x 250
  EXPECT_DOUBLE_EQ(a.Scan(v).expected_demand_milli, 2'000);
  v.now_s = 1'000 + 3'601;  // older than the hour: forgotten
  EXPECT_DOUBLE_EQ(a.Scan(v).expected_demand_milli, 0);
}

TEST(LiveAutoscalerTest, TheHeadroomGuardKeepsANodeTheExpectedDemandNeeds) {
  for (double horizon : {250.0, 3600.0}) {
    LiveOptions o = Draining();
    o.drain_keeps_headroom = true;
    o.demand_horizon_s = horizon;
    LiveAutoscaler a(Groups(), o);
    LiveView v;
    // 7 + 4 GPUs free; draining a100x8-0 leaves 3 free. 4 GPUs arrived in the first 600 s:
    // 4000 / 600 x 250 = 1,667 milli expected (drain), x 3600 = 24,000 (keep).
    v.nodes = {A100Node("a100x8-0", 1), A100Node("a100x8-1", 4)};
    v.arrivals = {Gpus(4)};
    a.Scan(v);
    v.now_s = 600;
    v.arrivals.clear();
    const LiveActions act = a.Scan(v);
    EXPECT_EQ(act.drain.size(), horizon == 250.0 ? 1u : 0u) << "horizon " << horizon;
  }
}

TEST(LiveAutoscalerTest, AGangNeedsNewNodesOnlyForTheMembersTheFreeRoomCannotTake) {
  // 4 + 3 GPUs free on two nodes, and a cordoned node with 8.
  std::vector<LiveNode> nodes = {A100Node("a100x8-0", 4), A100Node("a100x8-1", 5),
                                 A100Node("a100x8-2", 0, /*schedulable=*/false)};
  EXPECT_TRUE(LeftOver({Gpus(4), Gpus(3)}, nodes).empty());
  EXPECT_TRUE(LeftOver({Gpus(3), Gpus(4)}, nodes).empty());  // the larger request goes first
  const std::vector<PendingPod> one = LeftOver({Gpus(4), Gpus(4)}, nodes);  // each alone fits
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].shape.num_gpu, 4);
  EXPECT_EQ(LeftOver({Gpus(8)}, nodes).size(), 1u);  // only the cordoned node has 8
  EXPECT_TRUE(LeftOver({}, nodes).empty());
}

TEST(LiveAutoscalerTest, OptionsAreCheckedByName) {
  LiveOptions o = Options();
  o.provision_timeout_s = 0;
  EXPECT_NE(Validate(o).message().find("provision_timeout_s"), std::string::npos);
  o = Options();
  o.scale_down_unneeded_s = -1;
  EXPECT_NE(Validate(o).message().find("scale_down_unneeded_s"), std::string::npos);
  o = Options();
  o.backoff_s = std::nan("");
  EXPECT_NE(Validate(o).message().find("backoff_s"), std::string::npos);
  o = Options();
  o.scale_down_utilization_threshold = 1.5;
  EXPECT_NE(Validate(o).message().find("scale_down_utilization_threshold"), std::string::npos);
  o = Options();
  o.max_drains_per_scan = 0;
  EXPECT_NE(Validate(o).message().find("max_drains_per_scan"), std::string::npos);
  o = Options();
  o.max_drain_candidates = 0;
  EXPECT_NE(Validate(o).message().find("max_drain_candidates"), std::string::npos);
  o = Options();
  o.demand_horizon_s = -1;
  EXPECT_NE(Validate(o).message().find("demand_horizon_s"), std::string::npos);
  EXPECT_TRUE(Validate(Options()).ok());
}

TEST(LiveAutoscalerDeathTest, AGroupWithMinAboveMaxIsABug) {
  std::vector<NodeGroup> g = Groups();
  g[0].min_size = 5;
  EXPECT_DEATH(LiveAutoscaler(g, Options()), "min_size 5 max_size 3");
}

TEST(LiveAutoscalerDeathTest, OptionsThatDoNotValidateAreABug) {
  LiveOptions o = Options();
  o.backoff_s = -1;
  EXPECT_DEATH(LiveAutoscaler(Groups(), o), "live autoscaler options refused: backoff_s");
}

TEST(LiveAutoscalerDeathTest, ANodeInAGroupThatDoesNotExistIsABug) {
  LiveAutoscaler a(Groups(), Options());
  LiveView v;
  v.nodes = {{"x", 7, false}};
  EXPECT_DEATH(a.Scan(v), "node x in group 7 of 2");
}

}  // namespace
}  // namespace seedance::clusterscale
