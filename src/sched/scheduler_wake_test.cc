// The Scheduler's options for a simulator (scheduler.h): a cluster handed over whole, the
// default profile built up front, equivalence groups, and RoomFreedWake::kBestFirst, which must
// place exactly as kAllThatFit does when each event is followed by its cycles.
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler_testing.h"
#include "seedance/sched/scheduler.h"

namespace seedance::sched {
namespace {

PodInfo Pod(std::string uid, int num_gpu, int gpu_milli, int32_t priority = 0,
            std::string ns = "default") {
  PodInfo p;
  p.uid = uid;
  p.name = "pod-" + uid;
  p.ns = std::move(ns);
  p.priority = priority;
  p.shape.cpu_milli = 4000;
  p.shape.memory_mib = 8192;
  p.shape.num_gpu = num_gpu;
  p.shape.gpu_milli = gpu_milli;
  return p;
}

// The simulator's options, or (best_first false) the server's defaults with the same queue.
SchedulerOptions SimulatorLike(const std::string& policy, bool best_first) {
  SchedulerOptions o = SimulationOptions();
  if (!best_first) {
    o.equivalence_groups = false;
    o.room_freed = RoomFreedWake::kAllThatFit;
    o.record_failures = true;
  }
  o.default_profile.policy = policy;
  return o;
}

TEST(SchedulerWakeTest, ACreatedSchedulerKeepsTheClusterAndRefusesOneWithPods) {
  absl::StatusOr<core::ClusterState> cluster =
      core::ClusterState::Create({testing::GpuNode("a", 2), testing::GpuNode("b", 4)});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<Scheduler>> s =
      Scheduler::Create(SimulatorLike("bestfit", true), *cluster);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ((*s)->state().num_nodes(), 2);
  EXPECT_EQ((*s)->state().node(1).name, "b");

  core::Placement p;
  p.node = 0;
  p.num_gpus = 1;
  p.gpus[0] = 0;
  ASSERT_TRUE(cluster->Allocate(Pod("x", 1, 1000).shape, p).ok());
  absl::StatusOr<std::unique_ptr<Scheduler>> busy =
      Scheduler::Create(SimulatorLike("bestfit", true), *cluster);
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SchedulerWakeTest, ABadPolicyOptionIsAnErrorBeforeAnyPod) {
  SchedulerOptions o = SimulatorLike("cas", true);
  o.default_profile.options["no_such_option"] = "1";
  absl::StatusOr<std::unique_ptr<Scheduler>> s = Scheduler::Create(o);
  ASSERT_TRUE(s.ok()) << s.status();
  const absl::Status built = (*s)->BuildDefaultProfile();
  EXPECT_EQ(built.code(), absl::StatusCode::kInvalidArgument) << built;
  EXPECT_NE(built.message().find("no_such_option"), std::string_view::npos) << built;
  o.default_profile.options.clear();
  s = Scheduler::Create(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE((*s)->BuildDefaultProfile().ok());
}

// Two pods with the same request fail as one: the second is not tried while nothing changed.
// A pod of another namespace (another queue, perhaps) is a request of its own.
TEST(SchedulerWakeTest, AnEquivalenceGroupFailsAsOne) {
  auto s = Scheduler::Create(SimulatorLike("bestfit", true));
  ASSERT_TRUE(s.ok()) << s.status();
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.PutNode(testing::GpuNode("n0", 1)).ok());
  ASSERT_TRUE(sc.SubmitPod(Pod("a", 1, 1000), 0).ok());
  ASSERT_EQ(sc.RunCycles(0), 1);
  ASSERT_TRUE(sc.SubmitPod(Pod("b", 1, 1000), 1).ok());
  ASSERT_TRUE(sc.SubmitPod(Pod("c", 1, 1000), 1).ok());
  ASSERT_TRUE(sc.SubmitPod(Pod("d", 1, 1000, 0, "other"), 1).ok());
  EXPECT_EQ(sc.RunCycles(1), 2);  // b, then d; c went back with b
  EXPECT_EQ(sc.attempts_unschedulable(), 2);
  EXPECT_EQ(sc.queue().unschedulable_size(), 3u);
  // The freed GPU wakes the best waiting request that fits it, b's group: b is placed, c (woken
  // with it) is tried and fails, and d, which no longer fits the freed node, is not woken.
  ASSERT_TRUE(sc.DeletePod("a", 2).ok());
  EXPECT_EQ(sc.RunCycles(2), 2);
  EXPECT_EQ(sc.ledger().Find("b")->phase, PodPhase::kBound);
  EXPECT_EQ(sc.ledger().Find("c")->phase, PodPhase::kPending);
  EXPECT_EQ(sc.ledger().Find("d")->phase, PodPhase::kPending);
  EXPECT_EQ(sc.attempts_unschedulable(), 3);
}

// What each pod of a run is at the end of each step: its phase and where.
std::string Describe(const Scheduler& s, const std::vector<std::string>& uids) {
  std::string out;
  for (const std::string& uid : uids) {
    const PodInfo* p = s.ledger().Find(uid);
    if (p == nullptr) {
      out += uid + ":gone ";
      continue;
    }
    out += uid + ":" + std::string(PodPhaseName(p->phase));
    if (p->phase != PodPhase::kPending) {
      out += "@" + std::to_string(p->placement.node) + "/";
      for (int g : p->placement.gpu_ids()) out += std::to_string(g) + ",";
    }
    out += " ";
  }
  return out;
}

// A random churn (arrivals of mixed shapes and priorities, departures of running pods) played
// on two schedulers, one waking every pod that fits a freed node (the server), one waking the
// best fitting request at a time with equivalence groups (the simulator): every pod is in the
// same phase on the same node and GPUs after every step, and the second tries fewer pods.
TEST(SchedulerWakeTest, BestFirstPlacesAsWakingAllThatFit) {
  for (const std::string policy : {"bestfit", "cas", "fgd"}) {
    SCOPED_TRACE(policy);
    const int shapes[][2] = {{1, 1000}, {1, 500}, {1, 250}, {2, 1000}, {4, 1000}, {8, 1000}};
    SchedulerOptions options[] = {SimulatorLike(policy, false), SimulatorLike(policy, true)};
    for (SchedulerOptions& o : options) {
      for (const auto& shape : shapes) {  // fgd's oracle: the shapes, equally likely
        o.oracle_workload.push_back({.cpu_milli = 4000,
                                     .num_gpu = shape[0],
                                     .gpu_milli = shape[1],
                                     .gpu_model_mask = 0,
                                     .gpu_spec = "",
                                     .freq = 1.0 / 6});
      }
    }
    auto all = Scheduler::Create(options[0]);
    auto best = Scheduler::Create(options[1]);
    ASSERT_TRUE(all.ok() && best.ok());
    Scheduler* both[] = {all->get(), best->get()};
    for (int n = 0; n < 12; ++n) {
      const core::NodeSpec node = testing::GpuNode("n" + std::to_string(n), n % 3 == 0 ? 8 : 4);
      for (Scheduler* s : both) ASSERT_TRUE(s->PutNode(node).ok());
    }
    std::mt19937_64 rng(7);
    std::vector<std::string> uids, running;
    int64_t placed_after_departures = 0;
    for (int step = 0; step < 1500; ++step) {
      const double t = step;
      const bool depart = !running.empty() && rng() % 100 < 45;
      if (depart) {
        const size_t i = rng() % running.size();
        for (Scheduler* s : both) ASSERT_TRUE(s->DeletePod(running[i], t).ok());
      } else {
        const auto& shape = shapes[rng() % 6];
        const auto priority = static_cast<int32_t>(rng() % 3);
        uids.push_back("p" + std::to_string(step));
        for (Scheduler* s : both) {
          ASSERT_TRUE(s->SubmitPod(Pod(uids.back(), shape[0], shape[1], priority), t).ok());
        }
      }
      const int64_t bound_before =
          static_cast<int64_t>(all->get()->ledger().count(PodPhase::kBound));
      for (Scheduler* s : both) s->RunCycles(t);
      ASSERT_EQ(Describe(**all, uids), Describe(**best, uids)) << "step " << step;
      if (depart) {
        placed_after_departures +=
            static_cast<int64_t>(all->get()->ledger().count(PodPhase::kBound)) - bound_before;
      }
      running.clear();
      for (const std::string& uid : uids) {
        const PodInfo* p = all->get()->ledger().Find(uid);
        if (p != nullptr && p->phase == PodPhase::kBound) running.push_back(uid);
      }
    }
    std::printf(
        "%s: %zu pods, %lld placed after a departure; pods tried and failed: %lld waking "
        "all that fit, %lld best first\n",
        policy.c_str(), uids.size(), static_cast<long long>(placed_after_departures),
        static_cast<long long>(all->get()->attempts_unschedulable()),
        static_cast<long long>(best->get()->attempts_unschedulable()));
    EXPECT_GT(placed_after_departures, 100);
    EXPECT_LT(best->get()->attempts_unschedulable(), all->get()->attempts_unschedulable());
  }
}

// A drain's move: the pod leaves its node for the one named, keeps its uid and phase, and the
// room it left is free; a move that cannot be made changes nothing.
TEST(SchedulerWakeTest, MoveToPlacesABoundPodOnAnotherNode) {
  auto s = Scheduler::Create(SimulatorLike("bestfit", true));
  ASSERT_TRUE(s.ok()) << s.status();
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.PutNode(testing::GpuNode("small", 2)).ok());
  ASSERT_TRUE(sc.PutNode(testing::GpuNode("big", 8)).ok());
  ASSERT_TRUE(sc.SubmitPod(Pod("a", 2, 1000), 0).ok());
  ASSERT_EQ(sc.RunCycles(0), 1);
  const int small = sc.state().FindNode("small"), big = sc.state().FindNode("big");
  ASSERT_EQ(sc.ledger().Find("a")->placement.node, small);  // best fit: the tighter node
  (void)sc.TakeChanges();
  ASSERT_TRUE(sc.MoveTo("a", "big", 5).ok());
  const PodInfo* a = sc.ledger().Find("a");
  EXPECT_EQ(a->phase, PodPhase::kBound);
  EXPECT_EQ(a->placement.node, big);
  EXPECT_EQ(a->placement.num_gpus, 2);
  EXPECT_EQ(sc.state().gpu_allocated_milli(), 2000);
  EXPECT_EQ(sc.state().free_gpus(small), 2);
  EXPECT_EQ(Describe(sc, {"a"}), "a:Bound@" + std::to_string(big) + "/" +
                                     std::to_string(a->placement.gpus[0]) + "," +
                                     std::to_string(a->placement.gpus[1]) + ", ");
  std::vector<Change> changes = sc.TakeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::kPodBound);
  EXPECT_EQ(sc.attempts_scheduled(), 1);  // a move is not a scheduling attempt

  // Refused, nothing changed: the node it is on, a node without room, a pending pod, unknowns.
  EXPECT_EQ(sc.MoveTo("a", "big", 6).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(sc.SubmitPod(Pod("b", 8, 1000), 6).ok());
  sc.RunCycles(6);
  EXPECT_EQ(sc.ledger().Find("b")->phase, PodPhase::kPending);
  EXPECT_EQ(sc.MoveTo("a", "small", 7).code(), absl::StatusCode::kOk);
  EXPECT_EQ(sc.MoveTo("b", "big", 7).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(sc.PutNode(testing::GpuNode("one", 1)).ok());
  EXPECT_EQ(sc.MoveTo("a", "one", 8).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(sc.ledger().Find("a")->placement.node, small);
  EXPECT_EQ(sc.MoveTo("nope", "big", 8).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sc.MoveTo("a", "nope", 8).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sc.state().gpu_allocated_milli(), 2000);
}

}  // namespace
}  // namespace seedance::sched
