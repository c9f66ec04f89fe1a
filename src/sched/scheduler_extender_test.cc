// The decisions an external scheduler drives (Scheduler::FilterNodes, RankNodes, PlaceOn): the
// Kubernetes extender's filter, prioritize and bind must place every pod exactly where the
// scheduler's own cycle would.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler_testing.h"
#include "seedance/sched/scheduler.h"

namespace seedance::sched {
namespace {

std::vector<PodInfo> Pods(int count);

std::unique_ptr<Scheduler> Make(const std::string& policy) {
  SchedulerOptions o;
  o.default_profile.policy = policy;
  if (policy == "fgd") {  // fgd's oracle: the test workload's shapes
    std::vector<core::PodSpec> specs;
    for (const PodInfo& p : Pods(400)) {
      core::PodSpec spec;
      spec.shape = p.shape;
      specs.push_back(spec);
    }
    o.oracle_workload = TypicalShapes(CountShapes(specs));
  }
  auto s = Scheduler::Create(std::move(o));
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// A mixed cluster: 2-, 4- and 8-GPU nodes of two models, some CPU-poor.
std::vector<core::NodeSpec> Nodes() {
  std::vector<core::NodeSpec> nodes;
  for (int i = 0; i < 24; ++i) {
    core::NodeSpec n = testing::GpuNode("n" + std::to_string(i), i % 3 == 0   ? 8
                                                                 : i % 3 == 1 ? 4
                                                                              : 2);
    n.gpu_model = i % 2 ? "A100" : "V100";
    if (i % 5 == 0) n.cpu_milli = 16000;
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// Seeded pods: shares, whole GPUs, multi-GPU, CPU-only.
std::vector<PodInfo> Pods(int count) {
  std::mt19937_64 rng(7);
  std::vector<PodInfo> pods;
  for (int i = 0; i < count; ++i) {
    PodInfo p;
    p.uid = "u" + std::to_string(i);
    p.name = "p" + std::to_string(i);
    p.ns = "ns";
    p.shape.cpu_milli = 1000 * static_cast<int64_t>(1 + rng() % 8);
    p.shape.memory_mib = 1024;
    const int kind = static_cast<int>(rng() % 4);
    p.shape.num_gpu = kind == 3 ? 0 : kind == 2 ? 1 + static_cast<int>(rng() % 4) : 1;
    p.shape.gpu_milli = kind == 0 ? 100 * static_cast<int>(1 + rng() % 9) : kind == 3 ? 0 : 1000;
    pods.push_back(std::move(p));
  }
  return pods;
}

class ExtenderDecisionsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExtenderDecisionsTest, RankThenPlaceOnEqualsTheSchedulersOwnCycle) {
  auto own = Make(GetParam());
  auto ext = Make(GetParam());
  std::vector<std::string> names;
  for (const core::NodeSpec& n : Nodes()) {
    ASSERT_TRUE(own->PutNode(n).ok());
    ASSERT_TRUE(ext->PutNode(n).ok());
    names.push_back(n.name);
  }
  int placed = 0;
  for (const PodInfo& p : Pods(400)) {
    ASSERT_TRUE(own->SubmitPod(p, 0).ok());
    own->RunCycles(0);
    const PodInfo* mine = own->ledger().Find(p.uid);
    ext->NoteArrival(p);
    ext->NoteArrival(p);  // a second filter call for the same pod counts once
    std::vector<std::optional<int64_t>> totals;
    absl::StatusOr<int> best = ext->RankNodes(p, names, &totals);
    ASSERT_TRUE(best.ok()) << best.status();
    if (mine->phase == PodPhase::kPending) {
      EXPECT_EQ(*best, -1) << p.uid;
      (void)own->DeletePod(p.uid, 0);  // both drop it, as kube-scheduler would retry later
      continue;
    }
    ASSERT_GE(*best, 0) << p.uid;
    ASSERT_TRUE(totals[static_cast<size_t>(*best)].has_value());
    ASSERT_TRUE(ext->PlaceOn(p, names[static_cast<size_t>(*best)], 0).ok()) << p.uid;
    const PodInfo* theirs = ext->ledger().Find(p.uid);
    ASSERT_NE(theirs, nullptr);
    EXPECT_EQ(theirs->placement.node, mine->placement.node) << p.uid;
    EXPECT_EQ(
        std::vector<int8_t>(theirs->placement.gpu_ids().begin(), theirs->placement.gpu_ids().end()),
        std::vector<int8_t>(mine->placement.gpu_ids().begin(), mine->placement.gpu_ids().end()))
        << p.uid;
    ++placed;
    // Churn: every third pod ends in both.
    if (placed % 3 == 0) {
      ASSERT_TRUE(own->DeletePod(p.uid, 0).ok());
      ASSERT_TRUE(ext->DeletePod(p.uid, 0).ok());
    }
  }
  EXPECT_GT(placed, 100);
}

INSTANTIATE_TEST_SUITE_P(Policies, ExtenderDecisionsTest,
                         ::testing::Values("bestfit", "fgd", "cas", "packing", "dotprod"));

TEST(SchedulerExtenderTest, FilterNamesTheReasonPerNode) {
  auto s = Make("bestfit");
  ASSERT_TRUE(s->PutNode(testing::GpuNode("small", 1)).ok());
  ASSERT_TRUE(s->PutNode(testing::GpuNode("big", 4)).ok());
  ASSERT_TRUE(s->PutNode(testing::GpuNode("off", 4)).ok());
  ASSERT_TRUE(s->CordonNode("off", true).ok());
  PodInfo p = Pods(1)[0];
  p.shape.num_gpu = 2;
  p.shape.gpu_milli = 1000;
  const auto r = s->FilterNodes(p, {"small", "big", "off", "gone"});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], FilterReason::kTooFewGpus);
  EXPECT_FALSE(r[1].has_value());
  EXPECT_EQ(r[2], FilterReason::kCordoned);
  EXPECT_EQ(r[3], FilterReason::kNodeRemoved);
}

TEST(SchedulerExtenderTest, PlaceOnANodeWithoutRoomChangesNothing) {
  auto s = Make("bestfit");
  ASSERT_TRUE(s->PutNode(testing::GpuNode("one", 1)).ok());
  PodInfo p = Pods(1)[0];
  p.shape.num_gpu = 2;
  p.shape.gpu_milli = 1000;
  absl::Status st = s->PlaceOn(p, "one", 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_EQ(s->ledger().Find(p.uid), nullptr);
  EXPECT_EQ(s->PlaceOn(p, "nowhere", 0).code(), absl::StatusCode::kNotFound);
  p.shape.num_gpu = 1;
  ASSERT_TRUE(s->PlaceOn(p, "one", 0).ok());
  EXPECT_EQ(s->ledger().Find(p.uid)->phase, PodPhase::kBound);
  EXPECT_EQ(s->PlaceOn(p, "one", 0).code(), absl::StatusCode::kAlreadyExists);
}

TEST(SchedulerExtenderTest, ExternalBindingLeavesThePodAssumed) {
  SchedulerOptions o;
  o.default_profile.policy = "bestfit";
  o.internal_binding = false;
  auto s = std::move(*Scheduler::Create(o));
  ASSERT_TRUE(s->PutNode(testing::GpuNode("one", 2)).ok());
  PodInfo p = Pods(1)[0];
  p.shape.num_gpu = 1;
  p.shape.gpu_milli = 500;
  ASSERT_TRUE(s->PlaceOn(p, "one", 0).ok());
  EXPECT_EQ(s->ledger().Find(p.uid)->phase, PodPhase::kAssumed);
  ASSERT_TRUE(s->Forget(p.uid, 1).ok());
  EXPECT_EQ(s->state().gpu_allocated_milli(), 0);
}

}  // namespace
}  // namespace seedance::sched
