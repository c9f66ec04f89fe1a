#include "seedance/engine/timer_service.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "seedance/base/mutex.h"

namespace seedance::engine {
namespace {

constexpr int64_t kMs = 1'000'000;

// Start() owns a thread on the real clock; a manual clock, or a second Start(), is a bug.
TEST(TimerServiceDeathTest, StartWithAManualClockIsCaught) {
  FakeTimerClock clock(0);
  TimerService service({.tick_ns = kMs, .clock = &clock});
  EXPECT_DEATH(service.Start(), "invariant violated.*Start\\(\\) needs the real clock");
}

TEST(TimerServiceDeathTest, SecondStartIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the service runs a thread
  TimerService service({.tick_ns = kMs});
  service.Start();
  EXPECT_DEATH(service.Start(), "TimerService::Start\\(\\) called twice");
  service.Stop();
}

TEST(TimerServiceTest, BatchesSchedulesFromManyThreadsAndFiresInDeadlineOrder) {
  FakeTimerClock clock(0);
  TimerService service({.tick_ns = kMs, .clock = &clock});
  struct {
    base::Mutex mu;
    std::vector<int64_t> deadlines ABSL_GUARDED_BY(mu);  // in firing order
  } fired;
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const int64_t d = (i * 7919 + t * 104729) % (300 * kMs) + 1;
        service.Schedule(d, [&, d] {
          EXPECT_GE(clock.NowNs(), d);
          base::MutexLock lock(fired.mu);
          fired.deadlines.push_back(d);
        });
      }
    });
  }
  for (auto& p : producers) p.join();
  EXPECT_EQ(service.Poll(), 0u);  // nothing due at t=0
  EXPECT_EQ(service.size(), 2000u);
  clock.Set(150 * kMs);
  service.Poll();
  {
    base::MutexLock lock(fired.mu);
    for (int64_t d : fired.deadlines) EXPECT_LE(d, 150 * kMs);
  }
  clock.Set(400 * kMs);
  service.Poll();
  {
    base::MutexLock lock(fired.mu);
    ASSERT_EQ(fired.deadlines.size(), 2000u);
    EXPECT_TRUE(std::is_sorted(fired.deadlines.begin(), fired.deadlines.end()));
  }
  EXPECT_EQ(service.size(), 0u);
}

TEST(TimerServiceTest, CancelFromAnotherThreadAndAfterFireIsNoop) {
  FakeTimerClock clock(0);
  TimerService service({.tick_ns = kMs, .clock = &clock});
  int a = 0, b = 0;
  const TimerService::Id ida = service.Schedule(5 * kMs, [&] { ++a; });
  const TimerService::Id idb = service.Schedule(5 * kMs, [&] { ++b; });
  EXPECT_NE(ida, idb);
  service.Poll();
  std::thread([&] { service.Cancel(ida); }).join();
  clock.Set(10 * kMs);
  service.Poll();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  service.Cancel(idb);  // already fired
  service.Cancel(12345);
  EXPECT_EQ(service.Poll(), 0u);
}

TEST(TimerServiceTest, PeriodicAndSchedulingFromACallback) {
  FakeTimerClock clock(0);
  TimerService service({.tick_ns = kMs, .clock = &clock});
  int ticks = 0, chained = 0;
  TimerService::Id periodic = 0;
  periodic = service.SchedulePeriodic(10 * kMs, 10 * kMs, [&] {
    if (++ticks == 3) {
      service.Cancel(periodic);
      service.Schedule(clock.NowNs() + kMs, [&] { ++chained; });
    }
  });
  for (int i = 0; i <= 100; ++i) {
    clock.Set(i * kMs);
    service.Poll();
  }
  EXPECT_EQ(ticks, 3);
  EXPECT_EQ(chained, 1);
  EXPECT_EQ(service.NextWorkNs(), std::nullopt);
}

TEST(TimerServiceTest, BackgroundThreadNeverFiresEarly) {
  TimerService service({.tick_ns = 100'000});
  service.Start();
  struct {
    base::Mutex mu;
    int done ABSL_GUARDED_BY(mu) = 0;
  } fired;
  std::condition_variable cv;
  std::atomic<int> early{0};
  const int kTimers = 200;
  const int64_t base = SteadyNowNs();
  for (int i = 0; i < kTimers; ++i) {
    const int64_t d = base + (i % 20) * 250'000 + i * 1000;
    service.Schedule(d, [&, d] {
      if (SteadyNowNs() < d) early.fetch_add(1);
      base::MutexLock lock(fired.mu);
      ++fired.done;
      cv.notify_one();
    });
  }
  base::MutexLock lock(fired.mu);
  lock.Wait(cv, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(fired.mu) { return fired.done == kTimers; });
  lock.Unlock();
  EXPECT_EQ(early.load(), 0);
  service.Stop();
}

}  // namespace
}  // namespace seedance::engine
