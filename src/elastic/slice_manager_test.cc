#include "seedance/elastic/slice_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace seedance::elastic {
namespace {

constexpr int64_t kPeriodNs = 500'000'000;  // the seed's 500 ms period

std::unique_ptr<SliceManager> Make(const SliceOptions& o, engine::TimerClock* clock) {
  auto m = SliceManager::Create(o, clock);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(SliceManagerTest, OptionsOutOfRangeNameTheirField) {
  engine::FakeTimerClock clock;
  auto bad = [&](SliceOptions o) {
    return std::string(SliceManager::Create(o, &clock).status().message());
  };
  SliceOptions o;
  o.capacity = 0;
  EXPECT_EQ(bad(o), "slice manager: capacity: must be at least 1");
  o = {};
  o.min_slices = 65;
  EXPECT_EQ(bad(o), "slice manager: min_slices: must be in [0, capacity = 64]");
  o = {};
  o.window_periods = 0;
  EXPECT_EQ(bad(o), "slice manager: window_periods: must be in [1, 16]");
  o = {};
  o.target_busy = 0;
  EXPECT_EQ(bad(o), "slice manager: target_busy: must be in (0, 1]");
  o = {};
  o.grow_factor = 0.5;
  EXPECT_EQ(bad(o), "slice manager: grow_factor: must be in [1, 16]");
  o = {};
  o.pool_slices = -1;
  EXPECT_EQ(bad(o), "slice manager: pool_slices: must be 0 (unbounded) or more");
  EXPECT_FALSE(SliceManager::Create({}, nullptr).ok());
}

TEST(SliceManagerTest, AContainerAppearsWithItsFirstRequestAndOneSlice) {
  engine::FakeTimerClock clock;
  auto m = Make({}, &clock);
  EXPECT_EQ(m->Limit("a"), 0);
  EXPECT_EQ(m->stats().containers, 0);
  SliceManager::Lease first = m->TryAcquire("a");
  EXPECT_TRUE(first);
  EXPECT_EQ(m->Limit("a"), 1);
  SliceManager::Lease second = m->TryAcquire("a");
  EXPECT_FALSE(second);  // its one slice is busy
  const SliceStats s = m->stats();
  EXPECT_EQ(s.containers, 1);
  EXPECT_EQ(s.in_use, 1);
  EXPECT_EQ(s.acquired, 1);
  EXPECT_EQ(s.denied, 1);
  first.Release();
  EXPECT_FALSE(first);
  EXPECT_EQ(m->stats().in_use, 0);
  EXPECT_TRUE(m->TryAcquire("a"));  // free again (and given back at once)
}

TEST(SliceManagerTest, ARefusalGrowsTheLimitByTheGrowFactor) {
  engine::FakeTimerClock clock;
  auto m = Make({}, &clock);  // target_busy 0.7, grow_factor 2, window 3
  SliceManager::Lease a = m->TryAcquire("a");
  ASSERT_TRUE(a);
  EXPECT_FALSE(m->TryAcquire("a"));
  clock.Advance(kPeriodNs);
  const RebalanceReport r = m->Rebalance();
  // busy 1 slice x 0.5 s over 0.5 s = 1 -> ceil(1 / 0.7) = 2; refused: at least ceil(1 x 2) = 2.
  EXPECT_EQ(m->Limit("a"), 2);
  EXPECT_EQ(r.grown, 1);
  EXPECT_EQ(r.slices, 2);
  SliceManager::Lease b = m->TryAcquire("a");
  EXPECT_TRUE(b);
  EXPECT_FALSE(m->TryAcquire("a"));
  clock.Advance(kPeriodNs);
  m->Rebalance();
  // window 1 s: busy (0.5 + 2 x 0.5) / 1 = 1.5 -> ceil(1.5 / 0.7) = 3; refused: ceil(2 x 2) = 4.
  EXPECT_EQ(m->Limit("a"), 4);
}

// Keeps `n` slices of `c` busy for one period: n leases taken at its start, ended at its end.
void BusyPeriod(SliceManager* m, engine::FakeTimerClock* clock, const std::string& c, int n) {
  std::vector<SliceManager::Lease> held;
  for (int i = 0; i < n; ++i) {
    held.push_back(m->TryAcquire(c));
    ASSERT_TRUE(held.back()) << "slice " << i << " of " << c;
  }
  clock->Advance(kPeriodNs);
  held.clear();
}

TEST(SliceManagerTest, SteadyLoadSizedWithHeadroomThenShrinksOverTheWindow) {
  engine::FakeTimerClock clock;
  SliceOptions o;
  o.min_slices = 1;
  o.target_busy = 0.75;
  auto m = Make(o, &clock);  // window 3 periods
  // Three periods of more requests than slices, every lease held for the whole period:
  //   1st: 1 slice busy -> window busy 0.5 s / 0.5 s = 1 -> ceil(1 / 0.75) = 2; refused -> 2
  //   2nd: 2 busy -> (0.5 + 1.0) / 1.0 = 1.5 -> 2; refused -> ceil(2 x 2) = 4
  //   3rd: 4 busy -> (0.5 + 1.0 + 2.0) / 1.5 = 2.33 -> 4; refused -> 8
  for (int want : {2, 4, 8}) {
    std::vector<SliceManager::Lease> held;
    for (int i = 0; i < 8; ++i) {
      if (SliceManager::Lease l = m->TryAcquire("a")) held.push_back(std::move(l));
    }
    clock.Advance(kPeriodNs);
    held.clear();
    m->Rebalance();
    ASSERT_EQ(m->Limit("a"), want);
  }
  // 6 slices busy for three periods: window (2.0 + 3.0 + 1.0) / 1.5 = 4 -> 6; (2 + 3 + 3) / 1.5
  // = 5.33 -> 8; (3 + 3 + 3) / 1.5 = 6 -> 8.
  std::vector<int32_t> seen;
  for (int i = 0; i < 3; ++i) {
    BusyPeriod(m.get(), &clock, "a", 6);
    m->Rebalance();
    seen.push_back(m->Limit("a"));
  }
  EXPECT_EQ(seen, (std::vector<int32_t>{6, 8, 8}));
  // The load stops: the window drops one busy period at a time: 6 / 1.5 = 4 -> 6; 3 / 1.5 = 2 ->
  // 3; 0 -> min_slices 1.
  seen.clear();
  for (int i = 0; i < 3; ++i) {
    clock.Advance(kPeriodNs);
    m->Rebalance();
    seen.push_back(m->Limit("a"));
  }
  EXPECT_EQ(seen, (std::vector<int32_t>{6, 3, 1}));
}

TEST(SliceManagerTest, AShrinkBelowWhatIsInUseRevokesNothing) {
  engine::FakeTimerClock clock;
  SliceOptions o;
  o.capacity = 8;
  o.pool_slices = 5;
  o.window_periods = 1;
  o.target_busy = 1;
  auto m = Make(o, &clock);
  std::vector<SliceManager::Lease> a;
  // 1st period: 1 held, refused -> busy 1 -> 1; refused -> 2.
  a.push_back(m->TryAcquire("a"));
  EXPECT_FALSE(m->TryAcquire("a"));
  clock.Advance(kPeriodNs);
  m->Rebalance();
  ASSERT_EQ(m->Limit("a"), 2);
  // 2nd: 2 held, refused -> busy 2 -> 2; refused -> 4.
  a.push_back(m->TryAcquire("a"));
  EXPECT_FALSE(m->TryAcquire("a"));
  clock.Advance(kPeriodNs);
  m->Rebalance();
  ASSERT_EQ(m->Limit("a"), 4);
  // 3rd: "a" holds 4 and is refused (wants 8); "b" appears with 1 and is refused (wants 2). The
  // pool has 5: floors 1 + 1, the other 3 shared over wants of 7 and 1 beyond them (3/8 each):
  // a = 1 + floor(7 x 0.375) = 3, b = 1 + floor(0.375) = 1.
  a.push_back(m->TryAcquire("a"));
  a.push_back(m->TryAcquire("a"));
  EXPECT_FALSE(m->TryAcquire("a"));
  SliceManager::Lease b = m->TryAcquire("b");
  EXPECT_FALSE(m->TryAcquire("b"));
  clock.Advance(kPeriodNs);
  const RebalanceReport r = m->Rebalance();
  EXPECT_TRUE(r.pool_bound);
  EXPECT_EQ(r.demand, 10);
  EXPECT_EQ(m->Limit("a"), 3);
  EXPECT_EQ(m->Limit("b"), 1);
  // "a" is over its new limit with 4 in use: all four stay valid; a new request waits until
  // enough of them end.
  for (const SliceManager::Lease& l : a) EXPECT_TRUE(l);
  EXPECT_EQ(m->stats().in_use, 5);
  EXPECT_FALSE(m->TryAcquire("a"));
  a.pop_back();  // 3 in use = the limit
  EXPECT_FALSE(m->TryAcquire("a"));
  a.pop_back();  // 2 in use
  EXPECT_TRUE(m->TryAcquire("a"));
}

TEST(SliceManagerTest, AnIdleContainerIsForgottenAndFreed) {
  engine::FakeTimerClock clock;
  SliceOptions o;
  o.idle_periods = 2;
  o.window_periods = 1;
  auto m = Make(o, &clock);
  m->TryAcquire("idle");  // taken and given back at once
  SliceManager::Lease held = m->TryAcquire("busy");
  ASSERT_TRUE(held);
  clock.Advance(kPeriodNs);
  EXPECT_EQ(m->Rebalance().forgotten, 0);  // "idle" had a request in this period
  clock.Advance(kPeriodNs);
  EXPECT_EQ(m->Rebalance().forgotten, 0);  // idle 1 period
  clock.Advance(kPeriodNs);
  const RebalanceReport r = m->Rebalance();  // idle 2 periods: forgotten
  EXPECT_EQ(r.forgotten, 1);
  EXPECT_EQ(r.containers, 1);
  EXPECT_EQ(m->Limit("idle"), 0);
  EXPECT_EQ(m->Limit("busy"), 2);  // busy 1 -> ceil(1 / 0.7): held, it is never forgotten
  const SliceStats s = m->stats();
  EXPECT_EQ(s.entries_created, 2);
  EXPECT_EQ(s.entries_freed, 1);
  EXPECT_TRUE(m->TryAcquire("idle"));  // comes back lazily
  EXPECT_EQ(m->stats().entries_created, 3);
}

TEST(SliceManagerTest, ThePoolBoundScalesWhatEachWantsBeyondItsFloor) {
  engine::FakeTimerClock clock;
  SliceOptions o;
  o.pool_slices = 10;
  o.window_periods = 1;
  o.target_busy = 1;
  auto m = Make(o, &clock);
  // Four containers, each holding what it has and refused: busy 1 -> 1, refused -> 2 each (8).
  std::vector<SliceManager::Lease> held;
  for (const char* c : {"a", "b", "c", "d"}) {
    held.push_back(m->TryAcquire(c));
    EXPECT_FALSE(m->TryAcquire(c));
  }
  clock.Advance(kPeriodNs);
  RebalanceReport r = m->Rebalance();
  EXPECT_FALSE(r.pool_bound);
  EXPECT_EQ(r.slices, 8);
  for (const char* c : {"a", "b", "c", "d"}) {
    held.push_back(m->TryAcquire(c));
    EXPECT_FALSE(m->TryAcquire(c));
  }
  clock.Advance(kPeriodNs);
  r = m->Rebalance();
  // Each wants 4 (2 x 2): 16 > 10. Floors 1 each (4); the other 6 shared over wants of 3 each
  // beyond the floor: floor(3 x 6 / 12) = 1 -> 2 each, 8 in all.
  EXPECT_TRUE(r.pool_bound);
  EXPECT_EQ(r.demand, 16);
  EXPECT_EQ(r.slices, 8);
  EXPECT_LE(r.slices, o.pool_slices);
  for (const char* c : {"a", "b", "c", "d"}) EXPECT_EQ(m->Limit(c), 2);
}

// 16 threads take and give back slices of 10,000 containers while another rebalances every
// "period" on the real clock: no container ever has more leases at once than its capacity, and
// every lease is accounted for. Run under ThreadSanitizer by `make tsan`.
TEST(SliceManagerTest, TenThousandContainersFromManyThreads) {
  constexpr int kContainers = 10'000;
  constexpr int kThreads = 16;
  constexpr int kOpsPerThread = 20'000;
  SliceOptions o;
  o.capacity = 8;
  o.pool_slices = 40'000;
  o.idle_periods = 3;
  auto m = Make(o, engine::RealTimerClock());
  std::vector<std::string> names;
  for (int i = 0; i < kContainers; ++i) names.push_back("c" + std::to_string(i));
  std::vector<std::atomic<int>> held_now(kContainers);
  std::atomic<int> over_capacity{0};
  std::atomic<int64_t> taken{0};
  std::atomic<bool> done{false};
  std::thread rebalancer([&] {
    while (!done.load()) {
      const RebalanceReport r = m->Rebalance();
      if (r.slices > o.pool_slices) over_capacity.fetch_add(1);
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::uniform_int_distribution<int> pick(0, kContainers - 1);
      std::vector<std::pair<int, SliceManager::Lease>> mine;
      for (int i = 0; i < kOpsPerThread; ++i) {
        // Hot containers: half the requests go to the first 1%.
        const int c = (rng() & 1) ? pick(rng) % 100 : pick(rng);
        SliceManager::Lease l = m->TryAcquire(names[c]);
        if (l) {
          taken.fetch_add(1);
          if (held_now[c].fetch_add(1) + 1 > o.capacity) over_capacity.fetch_add(1);
          mine.emplace_back(c, std::move(l));
        }
        if (mine.size() > 8 || (!mine.empty() && (rng() & 3) == 0)) {
          held_now[mine.front().first].fetch_sub(1);
          mine.erase(mine.begin());  // the lease ends here
        }
      }
      for (auto& [c, l] : mine) {
        held_now[c].fetch_sub(1);
        l.Release();
      }
    });
  }
  for (std::thread& w : workers) w.join();
  done.store(true);
  rebalancer.join();
  EXPECT_EQ(over_capacity.load(), 0);
  const SliceStats s = m->stats();
  EXPECT_EQ(s.in_use, 0);
  EXPECT_EQ(s.acquired, taken.load());
  EXPECT_EQ(s.acquired + s.denied, int64_t{kThreads} * kOpsPerThread);
  EXPECT_GE(s.entries_created, s.containers);
  EXPECT_EQ(s.entries_created - s.entries_freed, s.containers);
}

}  // namespace
}  // namespace seedance::elastic
