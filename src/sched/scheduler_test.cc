#include "seedance/sched/scheduler.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler_testing.h"

namespace seedance::sched {
namespace {

core::NodeSpec Node(std::string name, int gpus) { return testing::GpuNode(std::move(name), gpus); }

PodInfo Pod(std::string uid, int num_gpu, int gpu_milli, int32_t priority = 0) {
  PodInfo p;
  p.uid = uid;
  p.name = "pod-" + uid;
  p.ns = "default";
  p.priority = priority;
  p.shape.cpu_milli = 1000;
  p.shape.memory_mib = 1024;
  p.shape.num_gpu = num_gpu;
  p.shape.gpu_milli = gpu_milli;
  return p;
}

std::unique_ptr<Scheduler> Make(SchedulerOptions o = {}) {
  o.default_profile.policy = "bestfit";
  auto s = Scheduler::Create(std::move(o));
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

std::vector<std::string> Kinds(const std::vector<Change>& changes) {
  std::vector<std::string> out;
  for (const Change& c : changes) out.push_back(std::string(ChangeKindName(c.kind)) + ":" + c.key);
  return out;
}

TEST(SchedulerTest, UnknownPolicyIsRefused) {
  SchedulerOptions o;
  o.default_profile.policy = "nope";
  EXPECT_EQ(Scheduler::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

// SchedulerOptions::elastic reaches the policies: cas balances CPU in a fixed cluster (the GPU
// pod goes where the least CPU is left, n1) and packs in node order in an elastic one (n0).
TEST(SchedulerTest, AnElasticClusterTurnsCasBalanceOff) {
  for (bool elastic : {false, true}) {
    SCOPED_TRACE(elastic ? "elastic" : "fixed");
    SchedulerOptions o;
    o.default_profile.policy = "cas";
    o.elastic = elastic;
    auto s = Scheduler::Create(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    core::NodeSpec lean = Node("n1", 4);
    lean.cpu_milli = 16000;
    bool created = false;
    ASSERT_TRUE((*s)->PutNode(Node("n0", 4), &created).ok());
    ASSERT_TRUE((*s)->PutNode(lean, &created).ok());
    ASSERT_TRUE((*s)->SubmitPod(Pod("a", 1, 1000), 0).ok());
    EXPECT_EQ((*s)->RunCycles(0), 1);
    const PodInfo* a = (*s)->ledger().Find("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ((*s)->state().node(a->placement.node).name, elastic ? "n0" : "n1");
  }
}

// Pods of one shape with different device asks are different requests: a GPU pod never takes
// the NPU node, even when it is the only one with room, and waits; the NPU pod takes it; an NPU
// node added later is not where the waiting GPU pod goes.
TEST(SchedulerTest, DeviceAsksKeepGpuPodsOffNpuNodes) {
  auto s = Make();
  bool created = false;
  core::NodeSpec npu = Node("npu-0", 4);
  npu.gpu_model = "Ascend910B";  // an NPU in the hardware catalog
  ASSERT_TRUE(s->PutNode(npu, &created).ok());
  for (const char* uid : {"gpu-a", "npu-a"}) {
    PodInfo p = Pod(uid, 2, 1000);
    if (std::string(uid) == "npu-a") p.device.type = core::DeviceClass::kNpu;
    ASSERT_TRUE(s->SubmitPod(p, 0).ok());
  }
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("gpu-a")->phase, PodPhase::kPending);
  ASSERT_EQ(s->ledger().Find("npu-a")->phase, PodPhase::kBound);
  EXPECT_EQ(s->state().node(s->ledger().Find("npu-a")->placement.node).name, "npu-0");
  core::NodeSpec npu1 = npu;
  npu1.name = "npu-1";
  ASSERT_TRUE(s->PutNode(npu1, &created).ok());
  s->RunCycles(30);  // past any backoff: it was tried, and refused the NPUs
  EXPECT_EQ(s->ledger().Find("gpu-a")->phase, PodPhase::kPending);
  ASSERT_TRUE(s->PutNode(Node("gpu-0", 4), &created).ok());
  s->RunCycles(90);
  ASSERT_EQ(s->ledger().Find("gpu-a")->phase, PodPhase::kBound);
  EXPECT_EQ(s->state().node(s->ledger().Find("gpu-a")->placement.node).name, "gpu-0");
}

TEST(SchedulerTest, SubmittedPodIsBoundAndEveryChangeIsRecordedInOrder) {
  auto s = Make();
  bool created = false;
  ASSERT_TRUE(s->PutNode(Node("n0", 1), &created).ok());
  EXPECT_TRUE(created);
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 1000), 0).ok());
  EXPECT_EQ(s->RunCycles(0), 1);
  const PodInfo* a = s->ledger().Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->phase, PodPhase::kBound);
  EXPECT_EQ(s->state().node(a->placement.node).name, "n0");
  EXPECT_EQ(Kinds(s->TakeChanges()),
            (std::vector<std::string>{"NodeAdded:n0", "PodAdded:a", "PodBound:a"}));
  EXPECT_TRUE(s->TakeChanges().empty());
  EXPECT_EQ(s->SubmitPod(Pod("a", 0, 0), 0).code(), absl::StatusCode::kAlreadyExists);
}

// An annotation set on its own (a node agent's status) is a change of its own, in any phase:
// the server makes it durable and publishes it as PodUpdated.
TEST(SchedulerTest, UpdateAnnotationsIsRecordedAsAPodUpdateAndAnEmptyValueRemoves) {
  auto s = Make();
  ASSERT_TRUE(s->PutNode(Node("n0", 1)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 1000), 0).ok());
  s->RunCycles(0);
  (void)s->TakeChanges();
  ASSERT_TRUE(s->UpdateAnnotations("a", {{"x.io/status", "Ready"}, {"x.io/bytes", "42"}}).ok());
  EXPECT_EQ(Kinds(s->TakeChanges()), std::vector<std::string>{"PodUpdated:a"});
  EXPECT_EQ(s->ledger().Find("a")->annotations.at("x.io/status"), "Ready");
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kBound);
  ASSERT_TRUE(s->UpdateAnnotations("a", {{"x.io/bytes", ""}}).ok());
  EXPECT_EQ(s->ledger().Find("a")->annotations.count("x.io/bytes"), 0u);
  (void)s->TakeChanges();
  EXPECT_EQ(s->UpdateAnnotations("nope", {{"x.io/status", "Ready"}}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(s->TakeChanges().empty());
}

TEST(SchedulerTest, DeletingABoundPodWakesTheWaitingPodThatFitsTheFreedRoom) {
  auto s = Make();
  ASSERT_TRUE(s->PutNode(Node("n0", 1)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 1000), 0).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("b", 1, 1000), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("b")->phase, PodPhase::kPending);
  EXPECT_EQ(s->attempts_unschedulable(), 1);
  EXPECT_NE(s->LastFailure("b").find("0/1 nodes fit"), std::string::npos) << s->LastFailure("b");
  absl::StatusOr<Diagnosis> d = s->Explain("b");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->nodes_total, 1);
  EXPECT_EQ(d->nodes_fit, 0);
  ASSERT_TRUE(s->DeletePod("a", 1).ok());
  s->RunCycles(1);
  EXPECT_EQ(s->ledger().Find("b")->phase, PodPhase::kBound);
  EXPECT_EQ(s->ledger().Find("a"), nullptr);
  EXPECT_EQ(s->DeletePod("a", 1).code(), absl::StatusCode::kNotFound);
}

TEST(SchedulerTest, ANodeWithBoundPodsIsRemovedOnlyWhenDrained) {
  auto s = Make();
  ASSERT_TRUE(s->PutNode(Node("n0", 2)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 500), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->DeleteNode("n0", false).code(), absl::StatusCode::kFailedPrecondition);
  std::vector<std::string> evicted;
  ASSERT_TRUE(s->DeleteNode("n0", true, &evicted).ok());
  EXPECT_EQ(evicted, std::vector<std::string>{"a"});
  EXPECT_EQ(s->state().FindNode("n0"), -1);
  EXPECT_EQ(s->ledger().size(), 0u);
  EXPECT_EQ(s->DeleteNode("n0", true).code(), absl::StatusCode::kNotFound);
}

TEST(SchedulerTest, ACordonedNodeTakesNoPodUntilUncordoned) {
  auto s = Make();
  ASSERT_TRUE(s->PutNode(Node("n0", 1)).ok());
  ASSERT_TRUE(s->CordonNode("n0", true).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 1000), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kPending);
  ASSERT_TRUE(s->CordonNode("n0", false).ok());
  s->RunCycles(100);  // past any backoff
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kBound);
}

TEST(SchedulerTest, EvictSendsABoundPodBackToTheQueue) {
  auto s = Make();
  ASSERT_TRUE(s->PutNode(Node("n0", 1)).ok());
  ASSERT_TRUE(s->PutNode(Node("n1", 1)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 1000), 0).ok());
  s->RunCycles(0);
  const std::string first = s->state().node(s->ledger().Find("a")->placement.node).name;
  ASSERT_TRUE(s->CordonNode(first, true).ok());
  ASSERT_TRUE(s->Evict("a", 1).ok());
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kPending);
  s->RunCycles(1);
  const PodInfo* a = s->ledger().Find("a");
  EXPECT_EQ(a->phase, PodPhase::kBound);
  EXPECT_NE(s->state().node(a->placement.node).name, first);
  EXPECT_EQ(s->state().gpu_allocated_milli(), 1000);
}

TEST(SchedulerTest, ExternalBindingAssumesThenBindsOrForgetsOnTimeout) {
  SchedulerOptions o;
  o.internal_binding = false;
  o.assume_timeout_s = 30;
  auto s = Make(o);
  ASSERT_TRUE(s->PutNode(Node("n0", 2)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 1000), 0).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("b", 1, 1000), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kAssumed);
  EXPECT_EQ(s->state().gpu_allocated_milli(), 2000);  // an assumption holds its resources
  ASSERT_TRUE(s->Bind("a").ok());
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kBound);
  EXPECT_EQ(s->ExpireAssumptions(10), 0);
  EXPECT_EQ(s->ExpireAssumptions(31), 1);  // b was never confirmed
  EXPECT_EQ(s->ledger().Find("b")->phase, PodPhase::kPending);
  EXPECT_EQ(s->state().gpu_allocated_milli(), 1000);
  EXPECT_EQ(s->Forget("a", 31).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SchedulerTest, AForgetWithAReasonIsTheLastFailureAndBacksOff) {
  SchedulerOptions o;
  o.internal_binding = false;
  auto s = Make(o);
  ASSERT_TRUE(s->PutNode(Node("n0", 1)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("a", 1, 1000), 0).ok());
  s->RunCycles(0);
  ASSERT_EQ(s->ledger().Find("a")->phase, PodPhase::kAssumed);
  ASSERT_TRUE(s->SetAnnotation("a", "x/error", "slurm: refused").ok());
  ASSERT_TRUE(s->Forget("a", 1, "slurm: refused").ok());
  EXPECT_EQ(s->LastFailure("a"), "slurm: refused");
  EXPECT_EQ(s->ledger().Find("a")->annotations.at("x/error"), "slurm: refused");
  EXPECT_EQ(s->state().gpu_allocated_milli(), 0);
  s->RunCycles(1.1);  // within the first backoff (1 s): not tried yet
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kPending);
  s->RunCycles(2.5);
  ASSERT_EQ(s->ledger().Find("a")->phase, PodPhase::kAssumed);
  ASSERT_TRUE(s->Forget("a", 3, "slurm: refused again").ok());
  s->RunCycles(4.5);  // the second backoff is 2 s
  EXPECT_EQ(s->ledger().Find("a")->phase, PodPhase::kPending);
  s->RunCycles(5.5);
  ASSERT_EQ(s->ledger().Find("a")->phase, PodPhase::kAssumed);
  ASSERT_TRUE(s->Bind("a").ok());
  ASSERT_TRUE(s->SetAnnotation("a", "x/error", "").ok());
  EXPECT_TRUE(s->ledger().Find("a")->annotations.empty());
  EXPECT_EQ(s->SetAnnotation("nope", "k", "v").code(), absl::StatusCode::kNotFound);
  // Without a reason (an expired assumption) a pod is tried again at once.
  ASSERT_TRUE(s->SubmitPod(Pod("b", 1, 1000), 6).ok());
  ASSERT_TRUE(s->DeletePod("a", 6).ok());
  s->RunCycles(6);
  ASSERT_EQ(s->ledger().Find("b")->phase, PodPhase::kAssumed);
  ASSERT_TRUE(s->Forget("b", 6).ok());
  s->RunCycles(6);
  EXPECT_EQ(s->ledger().Find("b")->phase, PodPhase::kAssumed);
}

TEST(SchedulerTest, RestoredPodsKeepTheirGpusAndAPlacementThatNoLongerFitsIsDataLoss) {
  auto s = Make();
  ASSERT_TRUE(s->PutNode(Node("n0", 2)).ok());
  PodInfo a = Pod("a", 1, 600);
  a.phase = PodPhase::kBound;
  a.placement.node = 0;
  a.placement.num_gpus = 1;
  a.placement.gpus[0] = 1;
  ASSERT_TRUE(s->RestorePod(a, 0).ok());
  EXPECT_EQ(s->state().gpu_left(0)[1], 400);
  PodInfo b = a;
  b.uid = "b";
  b.name = "pod-b";
  EXPECT_EQ(s->RestorePod(b, 0).code(), absl::StatusCode::kDataLoss);  // 1200 milli on GPU 1
  EXPECT_EQ(s->state().gpu_left(0)[1], 400);
  EXPECT_EQ(s->ledger().size(), 1u);
}

// The set-up of the two tests below: `restored` nodes full-I of 8 GPUs, each holding a restored
// 8-GPU pod, then two empty nodes, "big" (8 GPUs) and "small" (2 GPUs), in that node order.
void RestoreFullNodesThenAddBigAndSmall(Scheduler& s, int restored) {
  for (int i = 0; i < restored; ++i) {
    ASSERT_TRUE(s.PutNode(Node("full-" + std::to_string(i), 8)).ok());
    PodInfo p = Pod("r" + std::to_string(i), 8, 1000);
    p.phase = PodPhase::kBound;
    p.placement.node = i;
    p.placement.num_gpus = 8;
    for (int g = 0; g < 8; ++g) p.placement.gpus[g] = static_cast<int8_t>(g);
    ASSERT_TRUE(s.RestorePod(p, 0).ok());
  }
  ASSERT_TRUE(s.PutNode(Node("big", 8)).ok());
  ASSERT_TRUE(s.PutNode(Node("small", 2)).ok());
}

// Submits and schedules a 1-GPU pod; the name of the node it is bound to.
std::string PlaceOneGpuPod(Scheduler& s) {
  EXPECT_TRUE(s.SubmitPod(Pod("one", 1, 1000), 0).ok());
  EXPECT_EQ(s.RunCycles(0), 1);
  const PodInfo* one = s.ledger().Find("one");
  if (one == nullptr || one->phase != PodPhase::kBound) return "(not bound)";
  return s.state().node(one->placement.node).name;
}

// cas learns the workload from arrivals; after a restart the running pods come back through
// RestorePod and are learnt too. Sixteen restored 8-GPU pods (one relearning's worth) make an
// empty 8-GPU node worth keeping whole, so a 1-GPU pod goes to the 2-GPU node. Knowing no
// workload (nothing restored, or restored pods not learnt) cas places it in node order, on the
// 8-GPU node.
TEST(SchedulerTest, CasLearnsTheWorkloadFromRestoredPods) {
  for (bool restore : {true, false}) {
    SCOPED_TRACE(restore ? "restored" : "no pods restored");
    SchedulerOptions o;
    o.default_profile.policy = "cas";
    o.default_profile.options = {{"balance_gpu_pods", "0"}, {"cpu_pods", "0"}};
    auto made = Scheduler::Create(std::move(o));
    ASSERT_TRUE(made.ok()) << made.status();
    // A pod come and gone first, so that the policy exists before the restore and learns the
    // restored pods as they come (not only when it is built, from the ledger).
    ASSERT_TRUE((*made)->SubmitPod(Pod("gone", 0, 0), 0).ok());
    ASSERT_TRUE((*made)->DeletePod("gone", 0).ok());
    RestoreFullNodesThenAddBigAndSmall(**made, restore ? 16 : 0);
    EXPECT_EQ(PlaceOneGpuPod(**made), restore ? "small" : "big");
  }
}

// A profile whose spec changes (a policy reload) gets a new framework; it learns the pods
// already in the ledger, so cas keeps the workload across the reload (the set-up above).
TEST(SchedulerTest, CasKeepsTheWorkloadAcrossAProfileChange) {
  auto made = Scheduler::Create(SchedulerOptions{});
  ASSERT_TRUE(made.ok()) << made.status();
  Scheduler& s = **made;
  auto profile = [](std::string coverage) {
    return [coverage](const PodInfo&) {
      return ProfileSpec{"default",
                         "cas",
                         {{"balance_gpu_pods", "0"}, {"cpu_pods", "0"}, {"coverage_pct", coverage}},
                         {}};
    };
  };
  s.SetProfileSelector(profile("95"));
  RestoreFullNodesThenAddBigAndSmall(s, 16);
  s.SetProfileSelector(profile("99"));  // the same profile, reloaded with another option
  EXPECT_EQ(PlaceOneGpuPod(s), "small");
}

TEST(SchedulerTest, TheProfileSelectorPicksThePolicyPerPod) {
  auto s = Make();
  ASSERT_TRUE(s->PutNode(Node("n0", 1)).ok());
  s->SetProfileSelector([](const PodInfo& p) {
    return ProfileSpec{
        p.ns == "bad" ? "broken" : "default", p.ns == "bad" ? "no-such-policy" : "bestfit", {}, {}};
  });
  PodInfo bad = Pod("x", 0, 0);
  bad.ns = "bad";
  ASSERT_TRUE(s->SubmitPod(bad, 0).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("y", 0, 0), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("x")->phase, PodPhase::kPending);
  EXPECT_EQ(s->attempts_error(), 1);
  EXPECT_NE(s->LastFailure("x").find("no-such-policy"), std::string::npos) << s->LastFailure("x");
  EXPECT_EQ(s->ledger().Find("y")->phase, PodPhase::kBound);
}

// Death tests for the scheduler's own checks: the ledger and the cluster state must agree. The
// disagreement comes from PodLedger::CorruptForTesting (the public API cannot cause it).
TEST(SchedulerDeathTest, ReleasingAPlacementTheStateDoesNotHoldIsCaught) {
  EXPECT_DEATH(
      {
        auto s = Make();
        (void)s->PutNode(Node("n0", 2));
        PodInfo a = Pod("a", 1, 600);
        a.phase = PodPhase::kBound;
        a.placement.node = 0;
        a.placement.num_gpus = 1;
        a.placement.gpus[0] = 0;
        (void)s->RestorePod(a, 0);
        // The ledger now says GPU 1, which holds nothing.
        s->ledger_for_testing().CorruptForTesting("a", PodLedger::TestCorruption::kPlacementGpus);
        (void)s->DeletePod("a", 1);
      },
      "pod a recorded on node 0 cannot be released");
}

TEST(SchedulerDeathTest, APlacedPodTheLedgerCannotRecordIsCaught) {
  EXPECT_DEATH(
      {
        auto s = Make();
        (void)s->PutNode(Node("n0", 1));
        (void)s->SubmitPod(Pod("a", 1, 500), 0);
        // Queued, but the ledger says Bound: Assume must refuse it.
        s->ledger_for_testing().CorruptForTesting("a", PodLedger::TestCorruption::kPhase);
        s->RunCycles(0);
      },
      "pod a placed but not recorded in the ledger: .*not Pending");
}

}  // namespace
}  // namespace seedance::sched
