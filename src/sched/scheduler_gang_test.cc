// Gangs in the live scheduler (docs/tenancy.md, "Gangs").
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler_testing.h"
#include "seedance/sched/scheduler.h"

namespace seedance::sched {
namespace {

using testing::GpuNode;

PodInfo Member(const std::string& gang, int i, int gpus, int min, int32_t priority = 0) {
  PodInfo p;
  p.uid = gang + "-" + std::to_string(i);
  p.name = p.uid;
  p.ns = "team";
  p.gang = gang;
  p.gang_min = min;
  p.priority = priority;
  p.shape.cpu_milli = 1000;
  p.shape.memory_mib = 1024;
  p.shape.num_gpu = gpus;
  p.shape.gpu_milli = 1000;
  return p;
}

std::unique_ptr<Scheduler> Cluster(int nodes, int gpus) {
  SchedulerOptions o;
  o.default_profile.policy = "bestfit";
  auto s = *Scheduler::Create(o);
  for (int n = 0; n < nodes; ++n) EXPECT_TRUE(s->PutNode(GpuNode("n" + std::to_string(n), gpus)).ok());
  return s;
}

int Placed(const Scheduler& s, const std::string& gang) {
  int n = 0;
  s.ledger().ForEach([&](const PodInfo& p) {
    n += p.gang == gang && p.phase != PodPhase::kPending ? 1 : 0;
  });
  return n;
}

TEST(SchedulerGangTest, AGangNeverRunsPartly) {
  struct Case {
    std::string name;
    int members, gpus_each, min;
    int want_placed;
  };
  // Two nodes of 4 GPUs.
  const std::vector<Case> cases = {
      {"three of 3 GPUs where two fit: none", 3, 3, 3, 0},
      {"two of 3 GPUs: both", 2, 3, 2, 2},
      {"elastic: min 2 of 3, two fit: two", 3, 3, 2, 2},
      {"eight of 1 GPU: all", 8, 1, 8, 8},
      {"nine of 1 GPU: none", 9, 1, 9, 0},
  };
  for (const Case& c : cases) {
    auto s = Cluster(2, 4);
    for (int i = 0; i < c.members; ++i) {
      ASSERT_TRUE(s->SubmitPod(Member("g", i, c.gpus_each, c.min), 0).ok());
    }
    s->RunCycles(0);
    EXPECT_EQ(Placed(*s, "g"), c.want_placed) << c.name;
    if (c.want_placed == 0) {
      EXPECT_NE(s->LastFailure("g-0").find("members fit together"), std::string::npos)
          << c.name << ": " << s->LastFailure("g-0");
      EXPECT_EQ(s->state().gpu_allocated_milli(), 0) << c.name;  // nothing held
    }
  }
}

TEST(SchedulerGangTest, AGangWaitsForItsMinimumMembers) {
  auto s = Cluster(2, 4);
  ASSERT_TRUE(s->SubmitPod(Member("g", 0, 1, 3), 0).ok());
  ASSERT_TRUE(s->SubmitPod(Member("g", 1, 1, 3), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(Placed(*s, "g"), 0);
  EXPECT_NE(s->LastFailure("g-0").find("2 of its 3 members submitted"), std::string::npos)
      << s->LastFailure("g-0");
  ASSERT_TRUE(s->SubmitPod(Member("g", 2, 1, 3), 0).ok());
  s->RunCycles(0);
  EXPECT_EQ(Placed(*s, "g"), 3);
}

TEST(SchedulerGangTest, TwoGangsThatFitAloneButNotTogetherNeverDeadlock) {
  // 8 GPUs; each gang needs 6. Their members arrive interleaved.
  auto s = Cluster(2, 4);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(s->SubmitPod(Member("a", i, 1, 6), 0).ok());
    ASSERT_TRUE(s->SubmitPod(Member("b", i, 1, 6), 0).ok());
  }
  s->RunCycles(0);
  const int a = Placed(*s, "a"), b = Placed(*s, "b");
  EXPECT_TRUE((a == 6 && b == 0) || (a == 0 && b == 6)) << "a " << a << ", b " << b;
  // When the running gang ends, the other runs whole.
  const std::string done = a == 6 ? "a" : "b";
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(s->DeletePod(done + "-" + std::to_string(i), 1).ok());
  s->RunCycles(1);
  EXPECT_EQ(Placed(*s, done == "a" ? "b" : "a"), 6);
}

TEST(SchedulerGangTest, AGangBelowItsMinimumAfterANodeLossIsRequeuedWhole) {
  auto s = Cluster(3, 4);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(s->SubmitPod(Member("g", i, 4, 2), 0).ok());
  s->RunCycles(0);
  ASSERT_EQ(Placed(*s, "g"), 2);
  const std::string lost = s->state().node(s->ledger().Find("g-0")->placement.node).name;
  std::vector<std::string> evicted;
  ASSERT_TRUE(s->DeleteNode(lost, /*drain=*/true, &evicted).ok());
  EXPECT_EQ(evicted, std::vector<std::string>{"g-0"});
  // Both members were requeued (neither ended) and are placed again, together.
  EXPECT_NE(s->ledger().Find("g-0"), nullptr);
  EXPECT_EQ(Placed(*s, "g"), 0);
  s->RunCycles(1);
  EXPECT_EQ(Placed(*s, "g"), 2);
}

TEST(SchedulerGangTest, AGangIsPreemptedAsAUnit) {
  auto s = Cluster(2, 4);
  QueueConfig config;
  config.preemption = true;
  ASSERT_TRUE(s->SetQueues(config, 0).ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(s->SubmitPod(Member("low", i, 4, 2, 0), 0).ok());
  s->RunCycles(0);
  ASSERT_EQ(Placed(*s, "low"), 2);
  PodInfo urgent = Member("x", 0, 4, 1, 100);
  urgent.gang.clear();
  ASSERT_TRUE(s->SubmitPod(urgent, 1).ok());
  s->RunCycles(1);
  EXPECT_EQ(s->ledger().Find("x-0")->phase, PodPhase::kBound);
  // One member was in the way; the other went with it, and the gang waits whole.
  EXPECT_EQ(Placed(*s, "low"), 0);
  EXPECT_EQ(s->preemptions(), 2);
}

}  // namespace
}  // namespace seedance::sched
