#include "seedance/engine/nano_scheduler.h"

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "seedance/base/mutex.h"

namespace seedance::engine {
namespace {

constexpr int64_t kMs = 1'000'000;
// A hang guard for tests that rely on preemption, not a speed threshold: a broken scheduler
// makes the CPU-bound loop run forever; this turns that into a failure.
constexpr int64_t kHangGuardNs = 60'000'000'000;

Task Record(std::vector<std::string>* log, std::string name) {
  log->push_back(std::move(name));
  co_return;
}

// --- Death tests: one per invariant NanoScheduler checks in every build
// (docs/reliability.md#invariants). Each scenario runs whole inside the dying child.

using nano_internal::TaskControl;

// Hands the awaiting task its own control block without suspending (a test-only peek).
struct ControlOf {
  TaskControl** out;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<Task::promise_type> h) const noexcept {
    *out = &h.promise().control;
    return false;  // resume at once: the scheduler never sees this awaitable
  }
  void await_resume() const noexcept {}
};

Task ParkOn(Event* go, TaskControl** self) {
  co_await ControlOf{self};
  co_await go->Wait();
}

Task AwaitForeign() { co_await std::suspend_always{}; }

Task MakeSelfReady(NanoScheduler* sched) {
  TaskControl* self = nullptr;
  co_await ControlOf{&self};
  sched->MakeReady(self);
}

Task ChangeOwnPriorityThenYield(int priority) {
  TaskControl* self = nullptr;
  co_await ControlOf{&self};
  self->priority = priority;
  co_await Yield();
}

Task JoinIt(const JoinHandle* target) { co_await target->Join(); }

TEST(NanoSchedulerDeathTest, ForeignAwaitableIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        JoinHandle h = sched.Spawn(AwaitForeign());
        sched.RunUntilIdle();
      },
      "invariant violated.*a task suspended on an awaitable that is not the scheduler's");
}

TEST(NanoSchedulerDeathTest, AwaitOutsideATaskIsCaught) {
  EXPECT_DEATH(Yield().await_suspend(std::noop_coroutine()),
               "a NanoScheduler awaitable was awaited outside a task");
}

TEST(NanoSchedulerDeathTest, RunUntilIdleWithWorkerThreadsIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the scheduler runs threads
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 1});
        sched.RunUntilIdle();
      },
      "RunUntilIdle\\(\\) is for manual mode \\(workers = 0\\), this scheduler has 1 workers");
}

TEST(NanoSchedulerDeathTest, TaskMadeReadyWhileItRunsIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        JoinHandle h = sched.Spawn(MakeSelfReady(&sched), 4);
        sched.RunUntilIdle();
      },
      "task of priority 4 made ready while it runs");
}

TEST(NanoSchedulerDeathTest, TaskMadeReadyTwiceIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        Event go;
        TaskControl* t = nullptr;
        JoinHandle h = sched.Spawn(ParkOn(&go, &t), 2);
        sched.RunUntilIdle();  // parked on `go`
        sched.MakeReady(t);
        sched.MakeReady(t);
      },
      "task of priority 2 made ready while already in the ready queue");
}

TEST(NanoSchedulerDeathTest, TaskResumedTwiceAtOnceIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        Event go;
        TaskControl* t = nullptr;
        JoinHandle h = sched.Spawn(ParkOn(&go, &t), 2);
        sched.RunUntilIdle();
        sched.MakeReady(t);
        t->running.store(true);  // as if another worker were running it
        sched.RunUntilIdle();
      },
      "task of priority 2 resumed while it already runs");
}

TEST(NanoSchedulerDeathTest, PriorityOutOfRangeIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        Event go;
        TaskControl* t = nullptr;
        JoinHandle h = sched.Spawn(ParkOn(&go, &t), 2);
        sched.RunUntilIdle();
        t->priority = kMaxPriority + 1;
        sched.MakeReady(t);
      },
      "task of priority 64 made ready, outside 0..63");
}

TEST(NanoSchedulerDeathTest, TaskInAnotherPrioritysQueueIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        Event go;
        TaskControl* t = nullptr;
        JoinHandle h = sched.Spawn(ParkOn(&go, &t), 2);
        sched.RunUntilIdle();
        sched.MakeReady(t);  // queued at priority 2 ...
        t->priority = 9;     // ... then relabelled
        sched.RunUntilIdle();
      },
      "task of priority 9 in the ready queue of priority 2");
}

// Push sets a queue's ready bit when it gives the queue a head, Pop clears it when it takes the
// last one, whatever the tasks' own fields say; so no corrupted task reaches this state and it
// comes from the test-only SetReadyBitForTesting: a dispatch must not follow a bit to an empty
// queue.
TEST(NanoSchedulerDeathTest, ReadyBitOfAnEmptyQueueIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        std::vector<std::string> log;
        JoinHandle h = sched.Spawn(Record(&log, "a"), 3);
        sched.SetReadyBitForTesting(9);
        sched.RunUntilIdle();
      },
      "invariant violated.*ready bit 9 set on an empty queue");
}

TEST(NanoSchedulerDeathTest, WorkerPriorityOutOfStepWithItsTaskIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        JoinHandle h = sched.Spawn(ChangeOwnPriorityThenYield(7), 3);
        sched.RunUntilIdle();
      },
      "worker advertises priority 3 while its task has priority 7");
}

TEST(NanoSchedulerDeathTest, SecondJoinerIsCaught) {
  EXPECT_DEATH(
      {
        NanoScheduler sched({.workers = 0});
        Event go;
        TaskControl* t = nullptr;
        JoinHandle target = sched.Spawn(ParkOn(&go, &t), 5);
        JoinHandle a = sched.Spawn(JoinIt(&target), 1);
        JoinHandle b = sched.Spawn(JoinIt(&target), 1);
        sched.RunUntilIdle();
      },
      "a second task joins the same task \\(one joiner at most\\)");
}

TEST(NanoSchedulerTest, StrictPriorityOrderThenFifoWithinAPriority) {
  NanoScheduler sched({.workers = 0});
  std::vector<std::string> log;
  std::vector<std::pair<int, std::string>> spawned;
  std::mt19937 rng(3);
  std::vector<JoinHandle> handles;
  for (int i = 0; i < 200; ++i) {
    const int p = static_cast<int>(rng() % 8);
    const std::string name = std::to_string(p) + ":" + std::to_string(i);
    spawned.push_back({p, name});
    handles.push_back(sched.Spawn(Record(&log, name), p));
  }
  sched.RunUntilIdle();
  std::stable_sort(spawned.begin(), spawned.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  ASSERT_EQ(log.size(), spawned.size());
  for (size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i], spawned[i].second) << i;
  for (auto& h : handles) EXPECT_TRUE(h.done());
}

TEST(NanoSchedulerTest, StrictPriorityOrderUnderContentionOnAWorkerThread) {
  NanoScheduler sched({.workers = 1});
  std::atomic<bool> release{false};
  std::atomic<bool> blocker_running{false};
  struct {
    base::Mutex mu;
    std::vector<int> order ABSL_GUARDED_BY(mu);
  } ran;
  auto blocker = [&]() -> Task {
    blocker_running = true;
    while (!release.load()) std::this_thread::yield();  // holds the only worker
    co_return;
  };
  auto rec = [&](int p) -> Task {
    base::MutexLock lock(ran.mu);
    ran.order.push_back(p);
    co_return;
  };
  JoinHandle b = sched.Spawn(blocker(), kMaxPriority);
  while (!blocker_running.load()) std::this_thread::yield();
  std::vector<JoinHandle> hs;
  for (int i = 0; i < 100; ++i) hs.push_back(sched.Spawn(rec((i * 37) % 10), (i * 37) % 10));
  release = true;
  for (auto& h : hs) h.Wait();
  base::MutexLock lock(ran.mu);
  ASSERT_EQ(ran.order.size(), 100u);
  EXPECT_TRUE(std::is_sorted(ran.order.begin(), ran.order.end(), std::greater<int>()));
}

// Deterministic (manual mode): a low-priority CPU-bound loop spawns a high-priority task, which
// raises the worker's preemption flag; at its next checkpoint the low task is suspended, the high
// task runs to completion, and the low task resumes where it was.
TEST(NanoSchedulerTest, HigherPriorityTaskPreemptsCpuBoundLowerPriorityTask) {
  NanoScheduler sched({.workers = 0});
  std::vector<std::string> log;
  JoinHandle high;
  auto low = [&]() -> Task {
    for (int i = 0; i < 6; ++i) {
      log.push_back("low" + std::to_string(i));
      if (i == 2) {
        high = sched.Spawn(Record(&log, "high"), 10);
        EXPECT_TRUE(ShouldYield());
      }
      co_await Checkpoint();
    }
  };
  JoinHandle l = sched.Spawn(low(), 1);
  sched.RunUntilIdle();
  EXPECT_EQ(log,
            std::vector<std::string>({"low0", "low1", "low2", "high", "low3", "low4", "low5"}));
  EXPECT_TRUE(l.done());
  EXPECT_TRUE(high.done());
  EXPECT_GE(sched.stats().preempt_requests, 1u);
}

TEST(NanoSchedulerTest, CheckpointDoesNotSuspendWhenNothingOutranksTheTask) {
  NanoScheduler sched({.workers = 0});
  std::vector<std::string> log;
  auto a = [&]() -> Task {
    log.push_back("a0");
    co_await Checkpoint();  // b (same priority) waits, but no slice has expired: keep running
    log.push_back("a1");
  };
  JoinHandle ha = sched.Spawn(a(), 3);
  JoinHandle hb = sched.Spawn(Record(&log, "b"), 3);
  sched.RunUntilIdle();
  EXPECT_EQ(log, std::vector<std::string>({"a0", "a1", "b"}));
}

// On a real worker thread: the low task spins with checkpoints until the high task has run; it
// can only finish if the high task preempts it on the single worker.
TEST(NanoSchedulerTest, HighPriorityPreemptsBusyLowPriorityOnAWorkerThread) {
  NanoScheduler sched({.workers = 1, .time_slice_ns = 0});
  std::atomic<bool> low_started{false}, high_ran{false}, low_finished{false};
  std::atomic<bool> high_saw_low_unfinished{false};
  auto low = [&]() -> Task {
    low_started = true;
    const int64_t start = SteadyNowNs();
    uint64_t x = 1;
    while (!high_ran.load() && SteadyNowNs() - start < kHangGuardNs) {
      for (int i = 0; i < 200; ++i) x = x * 6364136223846793005ULL + 1;  // CPU-bound work
      co_await Checkpoint();
    }
    EXPECT_NE(x, 0u);
    low_finished = true;
  };
  auto high = [&]() -> Task {
    high_saw_low_unfinished = !low_finished.load();
    high_ran = true;
    co_return;
  };
  JoinHandle l = sched.Spawn(low(), 1);
  while (!low_started.load()) std::this_thread::yield();
  JoinHandle h = sched.Spawn(high(), 9);
  l.Wait();
  h.Wait();
  EXPECT_TRUE(high_ran.load());
  EXPECT_TRUE(high_saw_low_unfinished.load());
}

// Time slices: two CPU-bound tasks of one priority on one worker. A keeps running until B has
// run, which only happens if A's slice expires and A is moved behind B.
TEST(NanoSchedulerTest, TimeSliceLetsAnEqualPriorityTaskRun) {
  NanoScheduler sched({.workers = 1, .time_slice_ns = kMs});
  std::atomic<bool> a_started{false}, b_ran{false};
  auto a = [&]() -> Task {
    a_started = true;
    const int64_t start = SteadyNowNs();
    while (!b_ran.load() && SteadyNowNs() - start < kHangGuardNs) co_await Checkpoint();
  };
  auto b = [&]() -> Task {
    b_ran = true;
    co_return;
  };
  JoinHandle ha = sched.Spawn(a(), 4);
  while (!a_started.load()) std::this_thread::yield();
  JoinHandle hb = sched.Spawn(b(), 4);
  ha.Wait();
  hb.Wait();
  EXPECT_TRUE(b_ran.load());
  EXPECT_GE(sched.stats().preempt_requests, 1u);
}

TEST(NanoSchedulerTest, YieldRoundRobinsEqualPriorities) {
  NanoScheduler sched({.workers = 0});
  std::vector<std::string> log;
  auto t = [&](std::string name) -> Task {
    for (int i = 0; i < 3; ++i) {
      log.push_back(name + std::to_string(i));
      co_await Yield();
    }
  };
  JoinHandle a = sched.Spawn(t("a"), 2);
  JoinHandle b = sched.Spawn(t("b"), 2);
  sched.RunUntilIdle();
  EXPECT_EQ(log, std::vector<std::string>({"a0", "b0", "a1", "b1", "a2", "b2"}));
}

TEST(NanoSchedulerTest, BlocksOnEventUntilSetAndWakesWaitersInOrder) {
  NanoScheduler sched({.workers = 0});
  Event ev;
  std::vector<std::string> log;
  auto waiter = [&](std::string name) -> Task {
    co_await ev.Wait();
    log.push_back(name);
  };
  JoinHandle a = sched.Spawn(waiter("a"), 1);
  JoinHandle b = sched.Spawn(waiter("b"), 1);
  sched.RunUntilIdle();
  EXPECT_TRUE(log.empty());
  EXPECT_FALSE(a.done());
  ev.Set();
  sched.RunUntilIdle();
  EXPECT_EQ(log, std::vector<std::string>({"a", "b"}));
  JoinHandle c = sched.Spawn(waiter("c"), 1);  // already set: does not block
  sched.RunUntilIdle();
  EXPECT_TRUE(c.done());
}

TEST(NanoSchedulerTest, EventSetFromAnotherThreadWakesATaskOnAWorker) {
  NanoScheduler sched({.workers = 2});
  Event ev;
  std::atomic<int> woke{0};
  auto waiter = [&]() -> Task {
    co_await ev.Wait();
    woke.fetch_add(1);
  };
  std::vector<JoinHandle> hs;
  for (int i = 0; i < 20; ++i) hs.push_back(sched.Spawn(waiter(), i % 3));
  std::thread([&] { ev.Set(); }).join();
  for (auto& h : hs) h.Wait();
  EXPECT_EQ(woke.load(), 20);
}

TEST(NanoSchedulerTest, SleepsOnTheTimerWheelAndNeverWakesEarly) {
  FakeTimerClock clock(1000 * kMs);
  NanoScheduler sched({.workers = 0, .timer_tick_ns = kMs, .clock = &clock});
  std::vector<std::string> log;
  auto sleeper = [&](std::string name, int64_t ms) -> Task {
    const int64_t start = sched.NowNs();
    co_await SleepFor(ms * kMs);
    EXPECT_GE(sched.NowNs(), start + ms * kMs);
    log.push_back(name);
  };
  JoinHandle a = sched.Spawn(sleeper("a", 5), 1);
  JoinHandle b = sched.Spawn(sleeper("b", 2), 1);
  sched.RunUntilIdle();
  EXPECT_TRUE(log.empty());
  clock.Advance(2 * kMs - 1);
  sched.RunUntilIdle();
  EXPECT_TRUE(log.empty());
  clock.Advance(1);
  sched.RunUntilIdle();
  EXPECT_EQ(log, std::vector<std::string>({"b"}));
  clock.Advance(3 * kMs);
  sched.RunUntilIdle();
  EXPECT_EQ(log, std::vector<std::string>({"b", "a"}));
  EXPECT_TRUE(a.done() && b.done());
}

TEST(NanoSchedulerTest, SleepOnWorkerThreadsCompletes) {
  NanoScheduler sched({.workers = 1});
  std::atomic<bool> early{false};
  auto sleeper = [&]() -> Task {
    const int64_t start = SteadyNowNs();
    co_await SleepFor(200'000);
    if (SteadyNowNs() < start + 200'000) early = true;
  };
  JoinHandle h = sched.Spawn(sleeper(), 0);
  h.Wait();
  EXPECT_FALSE(early.load());
}

TEST(NanoSchedulerTest, JoinInsideATaskResumesAfterTheChildFinished) {
  NanoScheduler sched({.workers = 0});
  std::vector<std::string> log;
  auto parent = [&]() -> Task {
    for (int i = 0; i < 3; ++i) {
      JoinHandle child = sched.Spawn(Record(&log, "child" + std::to_string(i)), 0);
      co_await child.Join();
      EXPECT_TRUE(child.done());
      log.push_back("joined" + std::to_string(i));
    }
    JoinHandle done_child = sched.Spawn(Record(&log, "early"), 5);  // runs before we join
    co_await Yield();
    co_await done_child.Join();
    log.push_back("joined-early");
  };
  JoinHandle p = sched.Spawn(parent(), 5);
  sched.RunUntilIdle();
  EXPECT_EQ(log, std::vector<std::string>({"child0", "joined0", "child1", "joined1", "child2",
                                           "joined2", "early", "joined-early"}));
}

TEST(NanoSchedulerTest, ManyTasksAcrossWorkersAllFinish) {
  NanoScheduler sched({.workers = 2});
  std::atomic<int> sum{0};
  auto t = [&](int i) -> Task {
    for (int k = 0; k < 3; ++k) co_await Yield();
    sum.fetch_add(i);
  };
  std::vector<JoinHandle> hs;
  for (int i = 0; i < 500; ++i) hs.push_back(sched.Spawn(t(i), i % 7));
  for (auto& h : hs) h.Wait();
  EXPECT_EQ(sum.load(), 499 * 500 / 2);
}

TEST(NanoSchedulerTest, UnspawnedTaskAndDetachedTasksAreReclaimed) {
  std::vector<std::string> log;
  { Task never = Record(&log, "never"); }
  NanoScheduler sched({.workers = 0});
  sched.Spawn(Record(&log, "detached"), 0);  // JoinHandle dropped at once
  sched.RunUntilIdle();
  EXPECT_EQ(log, std::vector<std::string>({"detached"}));
}

}  // namespace
}  // namespace seedance::engine
