// The live scheduler's tenancy: queue quotas with borrowing and reclaim, limits, priority
// preemption and a quota change (docs/tenancy.md).
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler_testing.h"
#include "seedance/sched/scheduler.h"

namespace seedance::sched {
namespace {

using testing::GpuNode;

PodInfo Pod(const std::string& ns, int i, int32_t priority = 0, int gpus = 1) {
  PodInfo p;
  p.uid = ns + "-" + std::to_string(i);
  p.name = p.uid;
  p.ns = ns;
  p.priority = priority;
  p.shape.cpu_milli = 1000;
  p.shape.memory_mib = 1024;
  p.shape.num_gpu = gpus;
  p.shape.gpu_milli = 1000;
  return p;
}

QueueSpec Queue(std::string name, double gpus, double limit = kUnlimited) {
  QueueSpec q;
  q.name = std::move(name);
  q.guaranteed[kQueueGpus] = gpus;
  q.limit[kQueueGpus] = limit;
  return q;
}

// Three 8-GPU nodes; queues a, b, c over namespaces a, b, c.
std::unique_ptr<Scheduler> Cluster(std::vector<QueueSpec> queues, bool preemption = false) {
  SchedulerOptions o;
  o.default_profile.policy = "bestfit";
  auto s = Scheduler::Create(o);
  EXPECT_TRUE(s.ok());
  for (int n = 0; n < 3; ++n) EXPECT_TRUE((*s)->PutNode(GpuNode("n" + std::to_string(n), 8)).ok());
  QueueConfig config;
  config.queues = std::move(queues);
  config.preemption = preemption;
  for (const QueueSpec& q : config.queues) config.namespace_queue[q.name] = q.name;
  EXPECT_TRUE((*s)->SetQueues(config, 0).ok());
  return std::move(*s);
}

int Bound(const Scheduler& s, const std::string& ns) {
  int n = 0;
  s.ledger().ForEach([&](const PodInfo& p) { n += p.ns == ns && p.phase == PodPhase::kBound; });
  return n;
}

void Submit(Scheduler& s, const std::string& ns, int count, int32_t priority = 0, int first = 0) {
  for (int i = first; i < first + count; ++i) {
    ASSERT_TRUE(s.SubmitPod(Pod(ns, i, priority), 0).ok());
  }
}

TEST(SchedulerTenancyTest, BorrowingThenReclaimToEachOwnersFairShare) {
  auto s = Cluster({Queue("a", 8), Queue("b", 8), Queue("c", 8)});
  Submit(*s, "a", 24);
  s->RunCycles(0);
  EXPECT_EQ(Bound(*s, "a"), 24);  // b's and c's idle quota is lent to a
  Submit(*s, "b", 8);
  s->RunCycles(0);
  EXPECT_EQ(Bound(*s, "b"), 8);  // b takes its guarantee back at once
  EXPECT_EQ(Bound(*s, "a"), 16);
  Submit(*s, "c", 4);
  s->RunCycles(0);
  EXPECT_EQ(Bound(*s, "c"), 4);
  // a keeps c's unused 4 GPUs: its fair share is 12, not its guarantee of 8.
  EXPECT_EQ(Bound(*s, "a"), 12);
  EXPECT_EQ(s->preemptions(), 12);
  const QueueTree* tree = s->queue_tree();
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(tree->usage(tree->Find("a"))[kQueueGpus], 12);
  EXPECT_EQ(tree->pending(tree->Find("a"))[kQueueGpus], 12);
  // b asks for 4 more: c's idle 4 GPUs are now split between a and b (10 each), so b reclaims
  // two more from a, and no further.
  Submit(*s, "b", 4, 0, 100);
  s->RunCycles(0);
  EXPECT_EQ(Bound(*s, "b"), 10);
  EXPECT_EQ(Bound(*s, "a"), 10);
  EXPECT_EQ(s->preemptions(), 14);
}

TEST(SchedulerTenancyTest, AnEvictedPodKeepsWhoReclaimedItUntilItRunsAgain) {
  auto s = Cluster({Queue("a", 12), Queue("b", 12)});
  Submit(*s, "a", 24);
  s->RunCycles(0);
  ASSERT_EQ(Bound(*s, "a"), 24);
  Submit(*s, "b", 1);
  s->RunCycles(0);
  ASSERT_EQ(Bound(*s, "b"), 1);
  std::vector<std::string> evicted, running;
  s->ledger().ForEach([&](const PodInfo& p) {
    if (p.ns == "a") (p.phase == PodPhase::kPending ? evicted : running).push_back(p.uid);
  });
  ASSERT_EQ(evicted.size(), 1u);
  const std::string victim = evicted[0];
  EXPECT_EQ(s->LastEviction(victim), "preempted for pod b/b-0 (reclaim)");
  EXPECT_EQ(s->LastEviction(running[0]) + s->LastEviction("b-0"), "");  // never evicted
  // Later attempts fail for want of a GPU; the eviction is still what explain shows.
  ASSERT_TRUE(s->PutNode(GpuNode("n3", 0)).ok());
  s->RunCycles(1);
  EXPECT_EQ(s->LastEviction(victim), "preempted for pod b/b-0 (reclaim)");
  // Room again: it runs, and the eviction is history.
  ASSERT_TRUE(s->DeletePod("b-0", 2).ok());
  s->RunCycles(60);  // past any backoff
  ASSERT_EQ(Bound(*s, "a"), 24);
  EXPECT_EQ(s->LastEviction(victim), "");
}

TEST(SchedulerTenancyTest, ALimitCapsBorrowing) {
  auto s = Cluster({Queue("a", 8, 10), Queue("b", 8)});
  Submit(*s, "a", 16);
  s->RunCycles(0);
  EXPECT_EQ(Bound(*s, "a"), 10);
  EXPECT_NE(s->LastFailure("a-15").find("queue 'a' is at its limit"), std::string::npos)
      << s->LastFailure("a-15");
}

TEST(SchedulerTenancyTest, HigherPriorityPreemptsInsideItsQueueOnly) {
  auto s = Cluster({Queue("a", 12), Queue("b", 12)}, /*preemption=*/true);
  Submit(*s, "a", 12, 0);
  Submit(*s, "b", 12, 0);
  s->RunCycles(0);
  ASSERT_EQ(Bound(*s, "a"), 12);
  // A priority-10 pod of b evicts one of b's own priority-0 pods, never one of a's.
  ASSERT_TRUE(s->SubmitPod(Pod("b", 99, 10), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("b-99")->phase, PodPhase::kBound);
  EXPECT_EQ(Bound(*s, "a"), 12);
  EXPECT_EQ(Bound(*s, "b"), 12);
  EXPECT_EQ(s->preemptions(), 1);
}

TEST(SchedulerTenancyTest, WithoutQueuesPriorityPreemptsTheMinimalSet) {
  SchedulerOptions o;
  o.default_profile.policy = "bestfit";
  auto s = *Scheduler::Create(o);
  QueueConfig only_preemption;
  only_preemption.preemption = true;
  ASSERT_TRUE(s->SetQueues(only_preemption, 0).ok());
  ASSERT_TRUE(s->PutNode(GpuNode("n0", 4)).ok());
  ASSERT_TRUE(s->PutNode(GpuNode("n1", 4)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("x", 0, 0, 4), 0).ok());  // fills n0 (or n1) alone
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(s->SubmitPod(Pod("x", i, 0, 1), 0).ok());
  s->RunCycles(0);
  ASSERT_TRUE(s->SubmitPod(Pod("y", 0, 5, 4), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("y-0")->phase, PodPhase::kBound);
  // One victim (the 4-GPU pod) beats four 1-GPU ones.
  EXPECT_EQ(s->preemptions(), 1);
  EXPECT_EQ(s->ledger().Find("x-0")->phase, PodPhase::kPending);
  // A pod of equal priority preempts nothing.
  ASSERT_TRUE(s->SubmitPod(Pod("z", 0, 0, 4), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("z-0")->phase, PodPhase::kPending);
  EXPECT_EQ(s->preemptions(), 1);
}

TEST(SchedulerTenancyTest, LoweringAQuotaLetsTheOthersReclaim) {
  auto s = Cluster({Queue("a", 16), Queue("b", 8)});
  Submit(*s, "a", 16);
  Submit(*s, "b", 12);
  s->RunCycles(0);
  EXPECT_EQ(Bound(*s, "a"), 16);
  EXPECT_EQ(Bound(*s, "b"), 8);
  // The quota moves 4 GPUs from a to b: b reclaims them.
  QueueConfig config;
  config.queues = {Queue("a", 12), Queue("b", 12)};
  config.namespace_queue = {{"a", "a"}, {"b", "b"}};
  ASSERT_TRUE(s->SetQueues(config, 1).ok());
  s->RunCycles(1);
  EXPECT_EQ(Bound(*s, "a"), 12);
  EXPECT_EQ(Bound(*s, "b"), 12);
}

TEST(SchedulerTenancyTest, ADisruptionBudgetLimitsEvictionsPerMinute) {
  QueueSpec a = Queue("a", 8);
  a.disruption_budget = 1;
  auto s = Cluster({a, Queue("b", 16)});
  Submit(*s, "a", 24);
  s->RunCycles(0);
  ASSERT_EQ(Bound(*s, "a"), 24);
  // b reclaims: the budget lets one of a's pods go in this minute, and no more.
  Submit(*s, "b", 3);
  s->RunCycles(10);
  EXPECT_EQ(Bound(*s, "b"), 1);
  EXPECT_EQ(s->preemptions(), 1);
  // A reload wakes the waiting pods, but the budget still counts the eviction at 10 s...
  const QueueConfig same = {{a, Queue("b", 16)}, {{"a", "a"}, {"b", "b"}}};
  ASSERT_TRUE(s->SetQueues(same, 30).ok());
  s->RunCycles(30);
  EXPECT_EQ(Bound(*s, "b"), 1);
  // ...until a minute has passed: then one more.
  ASSERT_TRUE(s->SetQueues(same, 71).ok());
  s->RunCycles(71);
  EXPECT_EQ(Bound(*s, "b"), 2);
  EXPECT_EQ(s->preemptions(), 2);
}

TEST(SchedulerTenancyTest, TheVictimThatLosesTheLeastWorkGoes) {
  SchedulerOptions o;
  o.default_profile.policy = "bestfit";
  auto s = *Scheduler::Create(o);
  QueueConfig c;
  c.preemption = true;
  ASSERT_TRUE(s->SetQueues(c, 0).ok());
  ASSERT_TRUE(s->PutNode(GpuNode("n0", 4)).ok());
  ASSERT_TRUE(s->PutNode(GpuNode("n1", 4)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("old", 0, 0, 4), 0).ok());
  s->RunCycles(0);
  ASSERT_TRUE(s->SubmitPod(Pod("new", 0, 0, 4), 500).ok());
  s->RunCycles(500);
  ASSERT_TRUE(s->SubmitPod(Pod("urgent", 0, 9, 4), 600).ok());
  s->RunCycles(600);
  // Both are one victim of priority 0; the one placed at 500 has run 100 s, the other 600 s.
  EXPECT_EQ(s->ledger().Find("new-0")->phase, PodPhase::kPending);
  EXPECT_EQ(s->ledger().Find("old-0")->phase, PodPhase::kBound);
}

// One GPU, a pod of priority 0 waiting, and a new priority-5 pod every 10 s taking the GPU as
// the last one ends. Without aging the old pod never runs; with aging (60 s a level) it runs
// once it has waited more than 5 levels longer than the newest arrival, and not before.
TEST(SchedulerTenancyTest, AgingKeepsALowPriorityPodFromStarving) {
  for (const bool aging : {false, true}) {
    SchedulerOptions o;
    o.default_profile.policy = "bestfit";
    if (aging) o.queue.less = AgedPriority(60);
    auto s = *Scheduler::Create(o);
    ASSERT_TRUE(s->PutNode(GpuNode("n0", 1)).ok());
    ASSERT_TRUE(s->SubmitPod(Pod("batch", 0, 0), 0).ok());
    ASSERT_TRUE(s->SubmitPod(Pod("urgent", 0, 5), 0).ok());
    s->RunCycles(0);
    double ran_at = -1;
    for (int i = 1; i <= 60 && ran_at < 0; ++i) {
      const double now = 10.0 * i;
      ASSERT_TRUE(s->SubmitPod(Pod("urgent", i, 5), now).ok());
      ASSERT_TRUE(s->DeletePod("urgent-" + std::to_string(i - 1), now).ok());
      s->RunCycles(now);
      if (s->ledger().Find("batch-0")->phase == PodPhase::kBound) ran_at = now;
    }
    if (!aging) {
      EXPECT_LT(ran_at, 0) << "without aging the priority-0 pod never runs";
    } else {
      // At t = 10i the newest urgent pod arrived at 10i: batch (arrived 0) goes first once
      // 0 - 0/60 >= 5 - 10i/60 (equal keys go to the earlier arrival), that is at t = 300.
      EXPECT_EQ(ran_at, 300);
    }
  }
}

TEST(SchedulerTenancyTest, NoPreemptionUnlessAsked) {
  SchedulerOptions o;
  o.default_profile.policy = "bestfit";
  auto s = *Scheduler::Create(o);
  ASSERT_TRUE(s->PutNode(GpuNode("n0", 4)).ok());
  ASSERT_TRUE(s->SubmitPod(Pod("x", 0, 0, 4), 0).ok());
  s->RunCycles(0);
  ASSERT_TRUE(s->SubmitPod(Pod("y", 0, 9, 4), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(s->ledger().Find("x-0")->phase, PodPhase::kBound);
  EXPECT_EQ(s->ledger().Find("y-0")->phase, PodPhase::kPending);
  EXPECT_EQ(s->preemptions(), 0);
}

TEST(SchedulerTenancyTest, BadConfigsAreRefused) {
  auto s = Cluster({});
  QueueConfig config;
  config.queues = {Queue("a", 1)};
  config.namespace_queue = {{"ns", "nope"}};
  EXPECT_FALSE(s->SetQueues(config, 0).ok());
  config.namespace_queue = {{"ns", "a"}};
  EXPECT_TRUE(s->SetQueues(config, 0).ok());
  EXPECT_TRUE(s->SetQueues({}, 0).ok());
  EXPECT_EQ(s->queue_tree(), nullptr);
}

}  // namespace
}  // namespace seedance::sched
