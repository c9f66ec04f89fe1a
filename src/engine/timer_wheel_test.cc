#include "seedance/engine/timer_wheel.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::engine {
namespace {

constexpr int64_t kMs = 1'000'000;

// The tick a deadline belongs to (the wheel's documented rounding: up).
int64_t CeilTick(int64_t deadline_ns, int64_t tick_ns) {
  return deadline_ns <= 0 ? 0 : (deadline_ns + tick_ns - 1) / tick_ns;
}

using Corrupt = TimerWheel::TestCorruption;

// One test per invariant TimerWheel checks in every build (docs/reliability.md#invariants). The
// broken states come from CorruptForTesting: the public API cannot reach them.
TEST(TimerWheelDeathTest, BadOptionsAreCaught) {
  EXPECT_DEATH(TimerWheel w({.tick_ns = 0}), "tick_ns > 0 and 1 <= levels <= 10, got tick_ns 0");
  EXPECT_DEATH(TimerWheel w({.levels = 0}), "got tick_ns 1000000, levels 0");
  EXPECT_DEATH(TimerWheel w({.levels = 11}), "got tick_ns 1000000, levels 11");
}

TEST(TimerWheelDeathTest, NonPositivePeriodIsCaught) {
  TimerWheel wheel;
  EXPECT_DEATH(wheel.SchedulePeriodic(kMs, 0, [] {}), "periodic timer with period 0 ns");
}

TEST(TimerWheelDeathTest, TimerFiringBeforeItsDeadlineIsCaught) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kDeadlineNs, 50 * kMs);
  EXPECT_DEATH(wheel.Advance(5 * kMs), "due at 50000000 ns fires early, at 5000000 ns");
}

TEST(TimerWheelDeathTest, CascadeBehindTheWheelIsCaught) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(100 * kMs, [] {});  // level 1, cascaded at tick 64
  wheel.CorruptForTesting(h, Corrupt::kExpiryTick, 10);
  EXPECT_DEATH(wheel.Advance(64 * kMs),
               "due at tick 10 inserted behind the wheel \\(tick 64\\): it would never fire");
}

TEST(TimerWheelDeathTest, CancelOfATimerWithABrokenPositionIsCaught) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle a = wheel.Schedule(5 * kMs, [] {});
  wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(a, Corrupt::kPosition, 7);
  EXPECT_DEATH(wheel.Cancel(a),
               "pending timer 0 is not where it says it is \\(bucket 5, position 7\\)");
}

TEST(TimerWheelDeathTest, FreeWithNothingPendingIsCaught) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kSize, -1);
  EXPECT_DEATH(wheel.Cancel(h), "timer 0 freed while no timer is pending");
}

TEST(TimerWheelDeathTest, AuditCatchesAnExpiredTimerLeftBehind) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CheckInvariants();
  wheel.CorruptForTesting(h, Corrupt::kExpiryTick, 0);
  EXPECT_DEATH(wheel.CheckInvariants(),
               "expired at tick 0 but is still in bucket 5 at tick 0: it would never fire");
}

TEST(TimerWheelDeathTest, AuditCatchesATimerInTheWrongSlot) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kExpiryTick, 6);
  EXPECT_DEATH(wheel.CheckInvariants(), "due at tick 6 sits in level 0 slot 5, not slot 6");
}

TEST(TimerWheelDeathTest, AuditCatchesATimerAtTooLowALevel) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kExpiryTick, 133);  // slot 5 of a later 64-tick block
  EXPECT_DEATH(wheel.CheckInvariants(),
               "due at tick 133 is at level 0 at tick 0: it would not be cascaded in time");
}

TEST(TimerWheelDeathTest, AuditCatchesAStalePendingBit) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kPendingBit, 0);
  EXPECT_DEATH(wheel.CheckInvariants(), "bucket 5 holds 1 timers but its pending bit is 0");
}

TEST(TimerWheelDeathTest, AuditCatchesASizeMismatch) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kSize, 1);
  EXPECT_DEATH(wheel.CheckInvariants(), "1 timers in buckets, size\\(\\) says 2");
}

TEST(TimerWheelDeathTest, AuditCatchesABucketNamingATimerBeyondTheSlab) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kBucketEntry, 99);  // one timer slot in use
  EXPECT_DEATH(wheel.CheckInvariants(), "bucket 5 holds timer 99, beyond the slab");
}

TEST(TimerWheelDeathTest, AuditCatchesATimerThatDoesNotKnowItsPosition) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kPosition, 7);
  EXPECT_DEATH(wheel.CheckInvariants(),
               "timer 0 in bucket 5 at 0 says state 1, bucket 5, position 7");
}

// The free-list walk: a pending timer on the free list would be handed out again while it
// waits; a slot neither free nor pending is lost for good.
TEST(TimerWheelDeathTest, AuditCatchesAPendingTimerOnTheFreeList) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  wheel.CorruptForTesting(h, Corrupt::kFreeListHead, h.index);
  EXPECT_DEATH(wheel.CheckInvariants(), "timer slot 0 on the free list is not free");
}

TEST(TimerWheelDeathTest, AuditCatchesATimerSlotNeitherFreeNorPending) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle a = wheel.Schedule(5 * kMs, [] {});
  const TimerHandle b = wheel.Schedule(6 * kMs, [] {});
  ASSERT_TRUE(wheel.Cancel(a));                            // slot 0 is now free
  wheel.CorruptForTesting(b, Corrupt::kFreeListHead, -1);  // and now lost
  EXPECT_DEATH(wheel.CheckInvariants(), "0 free \\+ 1 pending timer slots, 2 in use");
}

TEST(TimerWheelDeathTest, CorruptionOfATimerNotPendingIsRefused) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle h = wheel.Schedule(5 * kMs, [] {});
  ASSERT_TRUE(wheel.Cancel(h));
  EXPECT_DEATH(wheel.CorruptForTesting(h, Corrupt::kSize, 1),
               "CorruptForTesting needs a pending timer");
}

TEST(TimerWheelDeathTest, AuditFromInsideACallbackIsCaught) {
  TimerWheel wheel({.tick_ns = kMs});
  wheel.Schedule(kMs, [&wheel] { wheel.CheckInvariants(); });
  EXPECT_DEATH(wheel.Advance(kMs), "CheckInvariants\\(\\) called from inside a timer callback");
}

class TimerWheelTest : public ::testing::Test {
 protected:
  // Schedules a one-shot timer that appends `id` to fired_ and checks it is not early.
  TimerHandle Add(TimerWheel& wheel, int64_t deadline_ns, int id) {
    return wheel.Schedule(deadline_ns, [this, &wheel, deadline_ns, id] {
      EXPECT_GE(wheel.now(), deadline_ns) << "timer " << id << " fired early";
      fired_.push_back(id);
    });
  }
  std::vector<int> fired_;
};

TEST_F(TimerWheelTest, FiresOnceAtOrAfterDeadlineNeverBefore) {
  TimerWheel wheel({.tick_ns = kMs});
  Add(wheel, 5 * kMs + 1, 1);
  wheel.Advance(5 * kMs);
  EXPECT_TRUE(fired_.empty());
  wheel.Advance(5 * kMs + 1);  // inside tick 6: fires at its exact deadline, not at the tick's end
  EXPECT_EQ(fired_, std::vector<int>({1}));
  wheel.Advance(6 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1}));
  wheel.Advance(100 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1}));
  EXPECT_TRUE(wheel.empty());
}

TEST_F(TimerWheelTest, TimerStartingANewBlockFiresAtItsExactDeadlineToo) {
  TimerWheel wheel({.tick_ns = kMs});
  Add(wheel, 63 * kMs + 400'000, 1);  // tick 64: first tick of the next 64-tick block (level 1)
  Add(wheel, 63 * kMs + 600'000, 2);
  Add(wheel, 64 * kMs + 1, 3);  // tick 65, same level-1 bucket: stays
  wheel.Advance(63 * kMs + 500'000);
  EXPECT_EQ(fired_, std::vector<int>({1}));
  EXPECT_EQ(wheel.NextWorkNs(), 63 * kMs + 600'000);
  wheel.Advance(64 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1, 2}));
  wheel.Advance(65 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1, 2, 3}));
}

TEST_F(TimerWheelTest, TimerStartingA4096TickBlockWaitsForItsTickAtMostOneTickLate) {
  TimerWheel wheel({.tick_ns = kMs});
  Add(wheel, 4095 * kMs + 1, 1);  // tick 4096: level 2
  wheel.Advance(4095 * kMs + 500'000);
  EXPECT_TRUE(fired_.empty());
  wheel.Advance(4096 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1}));
}

TEST_F(TimerWheelTest, DeadlineOnTickBoundaryFiresAtThatTick) {
  TimerWheel wheel({.tick_ns = kMs});
  Add(wheel, 3 * kMs, 1);
  wheel.Advance(3 * kMs - 1);
  EXPECT_TRUE(fired_.empty());
  wheel.Advance(3 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1}));
}

TEST_F(TimerWheelTest, WithinOneTickFiresInDeadlineOrderTiesInScheduleOrder) {
  TimerWheel wheel({.tick_ns = kMs});
  // All in tick 10 (deadlines 9 ms + 1 ns .. 10 ms), scheduled out of order.
  Add(wheel, 10 * kMs, 5);
  Add(wheel, 9 * kMs + 700'000, 4);
  Add(wheel, 9 * kMs + 1, 1);
  Add(wheel, 9 * kMs + 300'000, 2);
  Add(wheel, 9 * kMs + 300'000, 3);  // same deadline as 2, scheduled after it
  wheel.Advance(10 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1, 2, 3, 4, 5}));
}

TEST_F(TimerWheelTest, OneAdvanceAcrossManyTicksAndLevelsFiresInDeadlineOrder) {
  TimerWheel wheel({.tick_ns = kMs});
  std::mt19937_64 rng(7);
  std::vector<std::pair<int64_t, int>> want;
  for (int i = 0; i < 3000; ++i) {
    // Up to ~5e5 ticks ahead: exercises levels 0..3 and their cascades.
    const int64_t d = static_cast<int64_t>(rng() % (500'000 * kMs)) + 1;
    Add(wheel, d, i);
    want.push_back({d, i});
  }
  std::stable_sort(want.begin(), want.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  wheel.Advance(600'000 * kMs);
  ASSERT_EQ(fired_.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(fired_[i], want[i].second) << "position " << i;
}

// Property test against an ordered-map oracle: random schedules, cancels and time steps (small
// and large, across cascades); after every Advance the fired sequence must equal exactly the
// oracle's due timers in (deadline, schedule order).
TEST_F(TimerWheelTest, MatchesOracleUnderRandomScheduleCancelAdvance) {
  for (const int levels : {2, 3, 6}) {  // 2 levels: 4096 ticks, so far timers use the overflow list
    SCOPED_TRACE(levels);
    const int64_t tick = 1000;
    TimerWheel wheel({.tick_ns = tick, .levels = levels, .start_ns = 12345});
    std::mt19937_64 rng(42 + levels);
    std::map<std::pair<int64_t, uint64_t>, int> oracle;  // (deadline, seq) -> id
    std::vector<std::tuple<TimerHandle, int64_t, uint64_t>> live;
    std::vector<int> got;
    uint64_t seq = 0;
    int64_t now = 12345;
    for (int round = 0; round < 400; ++round) {
      const int adds = static_cast<int>(rng() % 40);
      for (int i = 0; i < adds; ++i) {
        int64_t span = (rng() % 4 == 0) ? 20'000'000 : 200'000;  // far ones cross levels
        const int64_t d = now - 2000 + static_cast<int64_t>(rng() % span);
        const int id = static_cast<int>(seq);
        const TimerHandle h = wheel.Schedule(d, [&got, &wheel, d, id] {
          EXPECT_GE(wheel.now(), d);
          got.push_back(id);
        });
        oracle[{d, seq}] = id;
        live.push_back({h, d, seq});
        ++seq;
      }
      const int cancels = static_cast<int>(rng() % 10);
      for (int i = 0; i < cancels && !live.empty(); ++i) {
        const size_t k = rng() % live.size();
        const auto [h, d, s] = live[k];
        const bool pending = oracle.count({d, s}) > 0;
        EXPECT_EQ(wheel.Cancel(h), pending);
        oracle.erase({d, s});
        live[k] = live.back();
        live.pop_back();
      }
      now += (rng() % 8 == 0) ? static_cast<int64_t>(rng() % 5'000'000)
                              : static_cast<int64_t>(rng() % 3000);
      got.clear();
      wheel.Advance(now);
      std::vector<int> want;
      const int64_t done_tick = now / tick;
      for (auto it = oracle.begin(); it != oracle.end();) {
        const int64_t t = CeilTick(it->first.first, tick);
        const bool partial = t == done_tick + 1 && t % 4096 != 0 && it->first.first <= now;
        if (t <= done_tick || partial) {
          want.push_back(it->second);
          it = oracle.erase(it);
        } else {
          ++it;
        }
      }
      // Timers already due when scheduled fire first, in deadline order too.
      ASSERT_EQ(got, want) << "round " << round << " now " << now;
      ASSERT_EQ(wheel.size(), oracle.size());
      wheel.CheckInvariants();
    }
  }
}

TEST_F(TimerWheelTest, PastDeadlineFiresOnNextAdvance) {
  TimerWheel wheel({.tick_ns = kMs, .start_ns = 50 * kMs});
  Add(wheel, 10 * kMs, 1);
  EXPECT_TRUE(fired_.empty());
  EXPECT_EQ(wheel.NextWorkNs(), 50 * kMs);
  wheel.Advance(50 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1}));
}

TEST_F(TimerWheelTest, CancelPreventsFiringAndCancelAfterFireIsNoop) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle a = Add(wheel, 5 * kMs, 1);
  const TimerHandle b = Add(wheel, 6 * kMs, 2);
  EXPECT_TRUE(wheel.IsPending(a));
  EXPECT_TRUE(wheel.Cancel(a));
  EXPECT_FALSE(wheel.IsPending(a));
  EXPECT_FALSE(wheel.Cancel(a));  // twice
  wheel.Advance(10 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({2}));
  EXPECT_FALSE(wheel.Cancel(b));  // after it fired
  EXPECT_FALSE(wheel.Cancel(TimerHandle{}));
  EXPECT_FALSE(wheel.Cancel(TimerHandle{12345, 1}));
}

TEST_F(TimerWheelTest, StaleHandleCannotCancelReusedSlot) {
  TimerWheel wheel({.tick_ns = kMs});
  const TimerHandle old_handle = Add(wheel, 5 * kMs, 1);
  ASSERT_TRUE(wheel.Cancel(old_handle));
  const TimerHandle reused = Add(wheel, 7 * kMs, 2);
  ASSERT_EQ(reused.index, old_handle.index);  // the free list hands the slot back
  EXPECT_NE(reused.generation, old_handle.generation);
  EXPECT_FALSE(wheel.Cancel(old_handle));
  EXPECT_TRUE(wheel.IsPending(reused));
  wheel.Advance(7 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({2}));
  // Same after a fire: the fired timer's handle does not reach the next occupant.
  const TimerHandle next = Add(wheel, 9 * kMs, 3);
  ASSERT_EQ(next.index, reused.index);
  EXPECT_FALSE(wheel.Cancel(reused));
  wheel.Advance(9 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({2, 3}));
}

TEST_F(TimerWheelTest, CallbackMayCancelALaterTimerOfTheSameBatch) {
  TimerWheel wheel({.tick_ns = kMs});
  TimerHandle victim;
  wheel.Schedule(5 * kMs - 10, [&] {
    fired_.push_back(1);
    EXPECT_TRUE(wheel.Cancel(victim));
  });
  victim = Add(wheel, 5 * kMs, 2);  // same tick, later deadline
  Add(wheel, 5 * kMs, 3);
  wheel.Advance(5 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1, 3}));
  EXPECT_TRUE(wheel.empty());
}

TEST_F(TimerWheelTest, CallbackMayScheduleAndItsOwnHandleIsStale) {
  TimerWheel wheel({.tick_ns = kMs});
  TimerHandle self;
  self = wheel.Schedule(2 * kMs, [&] {
    EXPECT_FALSE(wheel.Cancel(self));
    fired_.push_back(1);
    Add(wheel, 4 * kMs, 2);
    Add(wheel, kMs, 3);  // already due: next Advance
  });
  wheel.Advance(2 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1}));
  wheel.Advance(3 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1, 3}));
  wheel.Advance(4 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({1, 3, 2}));
}

TEST_F(TimerWheelTest, PeriodicFiresEveryPeriodWithoutDriftUntilCancelled) {
  TimerWheel wheel({.tick_ns = kMs});
  std::vector<int64_t> at;
  const TimerHandle h =
      wheel.SchedulePeriodic(10 * kMs, 25 * kMs, [&] { at.push_back(wheel.now()); });
  for (int64_t t = 0; t <= 100 * kMs; t += kMs) {
    wheel.Advance(t);
    wheel.CheckInvariants();
  }
  EXPECT_EQ(at, std::vector<int64_t>({10 * kMs, 35 * kMs, 60 * kMs, 85 * kMs}));
  EXPECT_TRUE(wheel.IsPending(h));
  EXPECT_TRUE(wheel.Cancel(h));
  wheel.Advance(200 * kMs);
  EXPECT_EQ(at.size(), 4u);
  EXPECT_TRUE(wheel.empty());
}

TEST_F(TimerWheelTest, PeriodicBehindFiresOncePerTickAndMayCancelItself) {
  TimerWheel wheel({.tick_ns = kMs});
  int count = 0;
  TimerHandle h;
  h = wheel.SchedulePeriodic(kMs, kMs / 4, [&] {
    ++count;
    if (count == 6) {
      EXPECT_TRUE(wheel.Cancel(h));
    }
  });
  // Ticks 1, 2, 3 once each, and the partly elapsed tick 4 (deadline 1.75 ms has passed).
  wheel.Advance(3 * kMs);
  EXPECT_EQ(count, 4);
  wheel.CheckInvariants();
  wheel.Advance(100 * kMs);
  EXPECT_EQ(count, 6);
  EXPECT_FALSE(wheel.IsPending(h));
}

TEST_F(TimerWheelTest, NextWorkNsLetsAnIdleLoopSleepInFewSteps) {
  TimerWheel wheel({.tick_ns = kMs});
  EXPECT_EQ(wheel.NextWorkNs(), std::nullopt);
  const int64_t deadline = 3'000'000 * kMs + 17;  // ~50 minutes: level 3
  Add(wheel, deadline, 1);
  int wakeups = 0;
  while (fired_.empty()) {
    const auto next = wheel.NextWorkNs();
    ASSERT_TRUE(next.has_value());
    ASSERT_LE(*next, deadline);  // a lower bound: never sleeps past it
    wheel.Advance(*next);
    ASSERT_LT(++wakeups, 10);  // one wakeup per cascade level, not one per tick
  }
  EXPECT_EQ(wheel.now(), deadline);  // woken at the exact deadline
  EXPECT_EQ(wheel.NextWorkNs(), std::nullopt);
}

TEST_F(TimerWheelTest, NextWorkNsIsTheExactDeadlineOfTheNextBusyTick) {
  TimerWheel wheel({.tick_ns = kMs});
  Add(wheel, 10 * kMs + 300'000, 1);  // tick 11, several ticks ahead of tick 0
  Add(wheel, 10 * kMs + 700'000, 2);
  EXPECT_EQ(wheel.NextWorkNs(), 10 * kMs + 300'000);
  wheel.Advance(10 * kMs + 300'000);
  EXPECT_EQ(fired_, std::vector<int>({1}));
  EXPECT_EQ(wheel.NextWorkNs(), 10 * kMs + 700'000);
}

TEST_F(TimerWheelTest, FarDeadlinesBeyondTheTopLevelStillFireOnTime) {
  TimerWheel wheel({.tick_ns = kMs, .levels = 1});  // 64 ticks, then the overflow list
  Add(wheel, 1000 * kMs + 5, 1);
  Add(wheel, 70 * kMs, 2);
  wheel.Advance(69 * kMs);
  EXPECT_TRUE(fired_.empty());
  wheel.CheckInvariants();
  wheel.Advance(1000 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({2}));
  wheel.CheckInvariants();
  wheel.Advance(1001 * kMs);
  EXPECT_EQ(fired_, std::vector<int>({2, 1}));
}

TEST_F(TimerWheelTest, TimeNeverGoesBack) {
  TimerWheel wheel({.tick_ns = kMs});
  wheel.Advance(10 * kMs);
  Add(wheel, 11 * kMs, 1);
  EXPECT_EQ(wheel.Advance(5 * kMs), 0u);
  EXPECT_EQ(wheel.now(), 10 * kMs);
  EXPECT_EQ(wheel.Advance(11 * kMs), 1u);
}

}  // namespace
}  // namespace seedance::engine
