#include "seedance/sched/queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace seedance::sched {
namespace {

QueuedPod P(uint64_t id, int32_t priority = 0, uint64_t group = 0) {
  QueuedPod q;
  q.id = id;
  q.priority = priority;
  q.seq = id;
  q.group = group;
  return q;
}

std::vector<uint64_t> Drain(SchedulingQueue& q, double now_s) {
  std::vector<uint64_t> out;
  while (std::optional<QueuedPod> p = q.Pop(now_s)) out.push_back(p->id);
  return out;
}

// Pops the pod with this id (it must be the best active one).
QueuedPod PopId(SchedulingQueue& q, uint64_t id, double now_s) {
  std::optional<QueuedPod> p = q.Pop(now_s);
  EXPECT_TRUE(p.has_value());
  EXPECT_EQ(p ? p->id : 0, id);
  return p.value_or(QueuedPod{});
}

TEST(SchedulingQueue, DefaultOrderIsPriorityThenArrival) {
  SchedulingQueue q;
  q.Add(P(1, 0), 0);
  q.Add(P(2, 5), 0);
  q.Add(P(3, 0), 0);
  q.Add(P(4, 5), 0);
  q.Add(P(5, -1), 0);
  EXPECT_EQ(q.active_size(), 5u);
  EXPECT_EQ(Drain(q, 0), (std::vector<uint64_t>{2, 4, 1, 3, 5}));
  EXPECT_EQ(q.size(), 0u);
  q.CheckInvariants();
}

TEST(SchedulingQueue, QueueSortExtensionPoint) {
  // A custom order: arrival only, priority ignored (FIFO).
  QueueOptions o;
  o.less = [](const QueuedPod& a, const QueuedPod& b) { return a.seq < b.seq; };
  SchedulingQueue q(o);
  q.Add(P(3, 9), 0);
  q.Add(P(1, 0), 0);
  q.Add(P(2, 5), 0);
  EXPECT_EQ(Drain(q, 0), (std::vector<uint64_t>{1, 2, 3}));
  // Pods the order leaves equal are tried by id.
  QueueOptions eq;
  eq.less = [](const QueuedPod&, const QueuedPod&) { return false; };
  SchedulingQueue q2(eq);
  for (uint64_t id : {7, 3, 5}) q2.Add(P(id), 0);
  EXPECT_EQ(Drain(q2, 0), (std::vector<uint64_t>{3, 5, 7}));
}

// Aging, 10 s a level: A (priority 0, arrived at 0) is behind B (priority 1, arrived at 5: 0.5
// levels of aging are not enough) but ahead of C (priority 1, arrived at 15) and of D (priority
// 2, arrived at 30). Without aging both priority-1 pods and D come first.
TEST(SchedulingQueue, AgingCountsWaitingAsPriority) {
  auto pod = [](uint64_t id, int32_t priority, double arrived_s) {
    QueuedPod q = P(id, priority);
    q.arrived_s = arrived_s;
    return q;
  };
  QueueOptions o;
  o.less = AgedPriority(10);
  SchedulingQueue aged(o), plain;
  for (SchedulingQueue* q : {&aged, &plain}) {
    q->Add(pod(1, 0, 0), 30);   // A
    q->Add(pod(2, 1, 5), 30);   // B
    q->Add(pod(3, 1, 15), 30);  // C
    q->Add(pod(4, 2, 30), 30);  // D: 2 - 3.0 = -1
  }
  EXPECT_EQ(Drain(aged, 30), (std::vector<uint64_t>{2, 1, 3, 4}));
  EXPECT_EQ(Drain(plain, 30), (std::vector<uint64_t>{4, 2, 3, 1}));
  // Equal keys go by arrival order (seq).
  SchedulingQueue ties(o);
  ties.Add(pod(6, 1, 10), 10);
  ties.Add(pod(5, 0, 0), 10);
  EXPECT_EQ(Drain(ties, 10), (std::vector<uint64_t>{5, 6}));
}

TEST(SchedulingQueueDeathTest, AgingNeedsAPositiveInterval) {
  EXPECT_DEATH((void)AgedPriority(0), "the aging interval must be > 0, not 0");
}

TEST(SchedulingQueue, BackoffDoublesUpToTheCap) {
  SchedulingQueue q;  // 1 s .. 10 s
  EXPECT_EQ(q.BackoffFor(0), 0);
  EXPECT_EQ(q.BackoffFor(1), 1);
  EXPECT_EQ(q.BackoffFor(2), 2);
  EXPECT_EQ(q.BackoffFor(3), 4);
  EXPECT_EQ(q.BackoffFor(4), 8);
  EXPECT_EQ(q.BackoffFor(5), 10);
  EXPECT_EQ(q.BackoffFor(1000000), 10);
  QueueOptions o;
  o.initial_backoff_s = 0.5;
  o.max_backoff_s = 3;
  SchedulingQueue q2(o);
  EXPECT_EQ(q2.BackoffFor(3), 2);
  EXPECT_EQ(q2.BackoffFor(4), 3);
  o.initial_backoff_s = 0;
  SchedulingQueue off(o);
  EXPECT_EQ(off.BackoffFor(7), 0);
}

TEST(SchedulingQueue, AnIdleQueueTakesBackoffPodsExceptHeldOnes) {
  for (bool idle_pop : {false, true}) {
    QueueOptions o;
    o.pop_backoff_when_idle = idle_pop;
    SchedulingQueue q(o);
    q.Add(P(1), 0);
    q.Add(P(2), 0);
    QueuedPod a = PopId(q, 1, 0);
    QueuedPod b = PopId(q, 2, 0);
    a.attempts = b.attempts = 4;  // 16 s of backoff each (capped at 10)
    b.hold_backoff = true;
    q.OnEvent(QueueEvent::kPodDeleted, 0);  // something changed while they were tried
    q.AddUnschedulable(a, 0);
    q.AddUnschedulable(b, 0);
    EXPECT_EQ(q.backoff_size(), 2u);
    std::optional<QueuedPod> next = q.Pop(1);
    if (!idle_pop) {
      EXPECT_FALSE(next.has_value());
      continue;
    }
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(next->id, 1u);
    EXPECT_FALSE(q.Pop(1).has_value()) << "a held backoff runs out first";
    EXPECT_EQ(PopId(q, 2, 10).hold_backoff, false);  // cleared once popped
    // Failing again with nothing changed: unschedulable, not tried again in the same pass.
    q.AddUnschedulable(*next, 1);
    EXPECT_FALSE(q.Pop(1).has_value());
  }
}

TEST(SchedulingQueue, FailureAfterAnEventBacksOffExponentially) {
  SchedulingQueue q;
  q.Add(P(1), 0);
  double now = 0;
  for (int attempt = 1; attempt <= 6; ++attempt) {
    QueuedPod p = PopId(q, 1, now);
    EXPECT_EQ(p.attempts, attempt - 1);
    q.OnEvent(QueueEvent::kNodeAdded, now);  // while it was being tried
    q.AddUnschedulable(p, now);
    EXPECT_EQ(q.backoff_size(), 1u);
    const double expected = std::min(10.0, static_cast<double>(1 << (attempt - 1)));
    ASSERT_TRUE(q.NextWakeup().has_value());
    EXPECT_EQ(*q.NextWakeup(), now + expected);
    EXPECT_FALSE(q.Pop(now + expected - 0.001).has_value()) << "attempt " << attempt;
    now += expected;
  }
  EXPECT_EQ(PopId(q, 1, now).attempts, 6);
  EXPECT_FALSE(q.NextWakeup().has_value());
}

TEST(SchedulingQueue, FailureWithNothingChangedWaitsForAnEvent) {
  SchedulingQueue q;
  q.Add(P(1), 0);
  q.AddUnschedulable(PopId(q, 1, 0), 0);
  EXPECT_EQ(q.unschedulable_size(), 1u);
  EXPECT_FALSE(q.Pop(1000).has_value());  // no backoff expiry frees it
  EXPECT_FALSE(q.NextWakeup().has_value());
  // An event before its backoff (1 s) has passed: to backoff.
  q.OnEvent(QueueEvent::kPodDeleted, 0.5);
  EXPECT_EQ(q.backoff_size(), 1u);
  EXPECT_EQ(*q.NextWakeup(), 1.0);
  EXPECT_FALSE(q.Pop(0.9).has_value());
  QueuedPod p = PopId(q, 1, 1.0);
  // Again, but the event comes after the backoff: straight to active.
  q.AddUnschedulable(p, 10);  // attempts 2: backoff 2 s
  q.OnEvent(QueueEvent::kNodeUpdated, 12);
  EXPECT_EQ(q.active_size(), 1u);
  EXPECT_EQ(PopId(q, 1, 12).attempts, 2);
  q.CheckInvariants();
}

TEST(SchedulingQueue, HintSelectsThePodsAnEventMoves) {
  SchedulingQueue q;
  for (uint64_t id = 1; id <= 6; ++id) q.Add(P(id), 0);
  for (uint64_t id = 1; id <= 6; ++id) q.AddUnschedulable(PopId(q, id, 0), 0);
  EXPECT_EQ(q.unschedulable_size(), 6u);
  std::vector<uint64_t> asked;
  q.OnEvent(QueueEvent::kPodDeleted, 100, [&](const QueuedPod& p) {
    asked.push_back(p.id);
    return p.id % 2 == 0;
  });
  EXPECT_EQ(asked.size(), 6u);  // ungrouped pods: asked one by one
  EXPECT_EQ(q.unschedulable_size(), 3u);
  EXPECT_EQ(Drain(q, 100), (std::vector<uint64_t>{2, 4, 6}));
  q.OnEvent(QueueEvent::kNodeAdded, 100);  // no hint: every pod
  EXPECT_EQ(Drain(q, 100), (std::vector<uint64_t>{1, 3, 5}));
  q.CheckInvariants();
}

TEST(SchedulingQueue, GroupsAreAskedOnceAndMoveTogether) {
  QueueOptions o;
  o.initial_backoff_s = 0;  // the simulator's setting
  SchedulingQueue q(o);
  // Group 10: pods 1, 3, 5; group 20: pods 2, 4; pod 6 alone.
  for (uint64_t id : {1, 3, 5}) q.Add(P(id, 0, 10), 0);
  for (uint64_t id : {2, 4}) q.Add(P(id, 0, 20), 0);
  q.Add(P(6), 0);
  // Pod 1 fails with nothing changed: its group-mates 3 and 5 go back with it.
  q.AddUnschedulable(PopId(q, 1, 0), 0);
  EXPECT_EQ(q.unschedulable_size(), 3u);
  EXPECT_EQ(q.active_size(), 3u);
  q.AddUnschedulable(PopId(q, 2, 0), 0);  // and group 20
  EXPECT_EQ(q.unschedulable_size(), 5u);
  EXPECT_EQ(PopId(q, 6, 0).id, 6u);
  std::map<uint64_t, int> asked;
  q.OnEvent(QueueEvent::kPodDeleted, 1, [&](const QueuedPod& p) {
    ++asked[p.group];
    EXPECT_TRUE(p.id == 1 || p.id == 2) << "asked with the group's best pod, got " << p.id;
    return p.group == 10;
  });
  EXPECT_EQ(asked, (std::map<uint64_t, int>{{10, 1}, {20, 1}}));
  EXPECT_EQ(q.active_size(), 3u);
  EXPECT_EQ(q.unschedulable_size(), 2u);
  EXPECT_EQ(Drain(q, 1), (std::vector<uint64_t>{1, 3, 5}));
  q.CheckInvariants();
}

TEST(SchedulingQueue, OnEventAsksBestFirstAndWakesAtMostMaxGroups) {
  QueueOptions o;
  o.initial_backoff_s = 0;
  SchedulingQueue q(o);
  // Groups by their best pod: 30 (priority 5), then 10 (pod 1), pod 4 alone, 20 (pod 6).
  q.Add(P(1, 0, 10), 0);
  q.Add(P(2, 5, 30), 0);
  q.Add(P(3, 0, 10), 0);
  q.Add(P(4, 0), 0);
  q.Add(P(6, 0, 20), 0);
  for (uint64_t id : {2, 1, 4, 6}) q.AddUnschedulable(PopId(q, id, 0), 0);
  EXPECT_EQ(q.unschedulable_size(), 5u);
  std::vector<uint64_t> asked;
  auto record_all_but_30 = [&](const QueuedPod& p) {
    asked.push_back(p.id);
    return p.group != 30;
  };
  q.OnEvent(QueueEvent::kPodDeleted, 0, record_all_but_30, 1);
  // Group 30 is asked first and declines; group 10 is woken; the scan stops there.
  EXPECT_EQ(asked, (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(q.active_size(), 2u);
  EXPECT_EQ(Drain(q, 0), (std::vector<uint64_t>{1, 3}));
  asked.clear();
  q.OnEvent(QueueEvent::kPodDeleted, 0, record_all_but_30, 2);
  EXPECT_EQ(asked, (std::vector<uint64_t>{2, 4, 6}));
  EXPECT_EQ(Drain(q, 0), (std::vector<uint64_t>{4, 6}));
  EXPECT_EQ(q.unschedulable_size(), 1u);
  q.CheckInvariants();
}

TEST(SchedulingQueue, GroupMatesStayActiveWhenAnEventCameDuringTheAttempt) {
  QueueOptions o;
  o.initial_backoff_s = 0;
  SchedulingQueue q(o);
  for (uint64_t id : {1, 2, 3}) q.Add(P(id, 0, 7), 0);
  QueuedPod p = PopId(q, 1, 0);
  q.OnEvent(QueueEvent::kNodeAdded, 0);
  q.AddUnschedulable(p, 0);  // backoff 0: straight back to active
  EXPECT_EQ(q.active_size(), 3u);
  EXPECT_EQ(q.unschedulable_size(), 0u);
  EXPECT_EQ(Drain(q, 0), (std::vector<uint64_t>{1, 2, 3}));
}

TEST(SchedulingQueue, GroupedPodsWithDifferentBackoffsSplit) {
  SchedulingQueue q;  // 1 s .. 10 s
  q.Add(P(1, 0, 5), 0);
  q.Add(P(2, 0, 5), 0);
  QueuedPod a = PopId(q, 1, 0);
  a.attempts = 3;            // next failure: 8 s
  q.AddUnschedulable(a, 0);  // pod 2 follows it to unschedulable
  EXPECT_EQ(q.unschedulable_size(), 2u);
  q.OnEvent(QueueEvent::kNodeAdded, 2);
  // Pod 2 was never tried (no backoff): active; pod 1 waits until 8 s.
  EXPECT_EQ(q.active_size(), 1u);
  EXPECT_EQ(q.backoff_size(), 1u);
  EXPECT_EQ(*q.NextWakeup(), 8.0);
  EXPECT_EQ(Drain(q, 2), std::vector<uint64_t>{2});
  EXPECT_EQ(Drain(q, 8), std::vector<uint64_t>{1});
  q.CheckInvariants();
}

TEST(SchedulingQueue, RemoveFromEachSubQueue) {
  SchedulingQueue q;
  q.Add(P(1), 0);
  q.Add(P(2), 0);
  q.Add(P(3, 0, 9), 0);
  q.Add(P(4, 0, 9), 0);
  q.AddUnschedulable(PopId(q, 1, 0), 0);  // unschedulable
  QueuedPod b = PopId(q, 2, 0);
  q.OnEvent(QueueEvent::kNodeAdded, 0, [](const QueuedPod&) { return false; });
  q.AddUnschedulable(b, 0);  // an event since its pop: backoff
  EXPECT_EQ(q.active_size(), 2u);
  EXPECT_EQ(q.backoff_size(), 1u);
  EXPECT_EQ(q.unschedulable_size(), 1u);
  EXPECT_TRUE(q.Remove(2));
  EXPECT_EQ(q.backoff_size(), 0u);
  EXPECT_FALSE(q.NextWakeup().has_value());
  EXPECT_TRUE(q.Remove(1));
  EXPECT_EQ(q.unschedulable_size(), 0u);
  EXPECT_TRUE(q.Remove(4));
  EXPECT_EQ(q.active_size(), 1u);
  EXPECT_FALSE(q.Remove(4));
  EXPECT_FALSE(q.Remove(99));
  EXPECT_FALSE(q.Contains(4));
  EXPECT_TRUE(q.Contains(3));
  q.CheckInvariants();
  EXPECT_EQ(Drain(q, 100), std::vector<uint64_t>{3});
}

TEST(SchedulingQueue, FlushMovesDueBackoffAndStaleUnschedulable) {
  QueueOptions o;
  o.max_unschedulable_s = 60;
  SchedulingQueue q(o);
  q.Add(P(1), 0);
  q.Add(P(2), 0);
  q.AddUnschedulable(PopId(q, 1, 0), 0);
  q.AddUnschedulable(PopId(q, 2, 0), 30);
  q.Flush(60);  // 60 s is not longer than 60 s
  EXPECT_EQ(q.unschedulable_size(), 2u);
  q.Flush(61);
  EXPECT_EQ(q.active_size(), 1u);
  EXPECT_EQ(q.unschedulable_size(), 1u);
  EXPECT_EQ(Drain(q, 61), std::vector<uint64_t>{1});
  q.Flush(91);
  EXPECT_EQ(Drain(q, 91), std::vector<uint64_t>{2});
}

TEST(SchedulingQueue, AddReplacesAQueuedId) {
  SchedulingQueue q;
  q.Add(P(1, 0), 0);
  q.Add(P(1, 9), 0);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(PopId(q, 1, 0).priority, 9);
  EXPECT_EQ(QueueEventName(QueueEvent::kPodDeleted), "PodDeleted");
}

TEST(SchedulingQueue, MovedQueueKeepsWorking) {
  SchedulingQueue q;
  for (uint64_t id : {3, 1, 2}) q.Add(P(id, 0, id == 2 ? 0 : 4), 0);
  SchedulingQueue moved = std::move(q);
  moved.CheckInvariants();
  EXPECT_EQ(Drain(moved, 0), (std::vector<uint64_t>{1, 2, 3}));
}

// Random operations against a plain model of the documented rules.
TEST(SchedulingQueue, RandomOperationsMatchAModel) {
  for (double initial : {0.0, 1.0}) {
    QueueOptions o;
    o.initial_backoff_s = initial;
    o.max_backoff_s = 4;
    o.max_unschedulable_s = 50;
    SchedulingQueue q(o);
    enum Where { kActive, kBackoff, kUnsched };
    struct M {
      QueuedPod pod;
      Where where;
      double until = 0;
      double changed = 0;
    };
    std::map<uint64_t, M> m;
    std::map<uint64_t, QueuedPod> popped;
    uint64_t events = 0;
    std::mt19937 rng(11);
    double now = 0;
    auto model_due = [&] {
      for (auto& [id, e] : m) {
        if (e.where == kBackoff && e.until <= now) e.where = kActive;
      }
    };
    auto less = PriorityThenArrival();
    auto hint_of = [](uint64_t group, uint64_t id, int salt) {
      return group != 0 ? (group + salt) % 3 != 0 : (id + salt) % 2 == 0;
    };
    for (int step = 0; step < 20000; ++step) {
      now += (rng() % 4) * 0.25;
      const uint64_t id = 1 + rng() % 60;
      switch (rng() % 7) {
        case 0:
        case 1: {
          if (popped.contains(id)) break;
          QueuedPod p = P(id, static_cast<int32_t>(rng() % 3), rng() % 3 == 0 ? 0 : 1 + id % 4);
          p.seq = static_cast<uint64_t>(step);
          q.Add(p, now);
          m[id] = {p, kActive, now, now};
          break;
        }
        case 2: {
          std::optional<QueuedPod> got = q.Pop(now);
          model_due();
          const M* best = nullptr;
          for (const auto& [k, e] : m) {
            if (e.where != kActive) continue;
            if (!best || less(e.pod, best->pod) || (!less(best->pod, e.pod) && k < best->pod.id)) {
              best = &e;
            }
          }
          ASSERT_EQ(got.has_value(), best != nullptr) << "step " << step;
          if (!got) break;
          ASSERT_EQ(got->id, best->pod.id) << "step " << step;
          EXPECT_EQ(got->popped_at_event, events);
          popped[got->id] = *got;
          m.erase(got->id);
          break;
        }
        case 3: {
          if (popped.empty()) break;
          auto it = popped.begin();
          std::advance(it, rng() % popped.size());
          QueuedPod p = it->second;
          popped.erase(it);
          q.AddUnschedulable(p, now);
          ++p.attempts;
          M e{p, kUnsched, now + q.BackoffFor(p.attempts), now};
          if (events > p.popped_at_event) {
            e.where = e.until <= now ? kActive : kBackoff;
          } else if (p.group != 0) {
            for (auto& [k, other] : m) {
              if (other.where == kActive && other.pod.group == p.group) other.where = kUnsched;
            }
          }
          m[p.id] = e;
          break;
        }
        case 4: {
          const int salt = static_cast<int>(rng() % 3);
          q.OnEvent(QueueEvent::kNodeUpdated, now,
                    [&](const QueuedPod& p) { return hint_of(p.group, p.id, salt); });
          ++events;
          for (auto& [k, e] : m) {
            if (e.where == kUnsched && hint_of(e.pod.group, k, salt)) {
              e.where = e.until <= now ? kActive : kBackoff;
            }
          }
          break;
        }
        case 5: {
          EXPECT_EQ(q.Remove(id), m.contains(id));
          m.erase(id);
          break;
        }
        default: {
          q.Flush(now);
          model_due();
          for (auto& [k, e] : m) {
            if (e.where == kUnsched && now - e.changed > 50) {
              e.where = e.until <= now ? kActive : kBackoff;
            }
          }
          break;
        }
      }
      size_t n[3] = {0, 0, 0};
      for (const auto& [k, e] : m) ++n[e.where];
      // Backoff pods that are due count as backoff until a Pop or Flush moves them.
      ASSERT_EQ(q.unschedulable_size(), n[kUnsched]) << "step " << step;
      ASSERT_EQ(q.active_size() + q.backoff_size(), n[kActive] + n[kBackoff]) << "step " << step;
    }
    q.CheckInvariants();
  }
}

// Death tests: one per invariant the queue checks. The broken states come from
// CorruptForTesting (the public API cannot reach them); each test breaks one record, then makes
// the operation (or the audit) that relies on it run, in the death test's child.
using Corrupt = SchedulingQueue::TestCorruption;

QueueOptions NoBackoff() {
  QueueOptions o;
  o.initial_backoff_s = 0;
  return o;
}

// Pod 1 active alone.
SchedulingQueue OneActive() {
  SchedulingQueue q;
  q.Add(P(1), 0);
  return q;
}

// Pod 1 unschedulable (failed with nothing changed), no backoff.
SchedulingQueue OneUnschedulable() {
  SchedulingQueue q(NoBackoff());
  q.Add(P(1), 0);
  q.AddUnschedulable(*q.Pop(0), 0);
  return q;
}

// Pod 1 in backoff until t = 1 (failed after an event).
SchedulingQueue OneInBackoff() {
  SchedulingQueue q;
  q.Add(P(1), 0);
  QueuedPod p = *q.Pop(0);
  q.OnEvent(QueueEvent::kPodDeleted, 0);
  q.AddUnschedulable(p, 0);
  return q;
}

// Breaks pod `id`'s record in `q`, then audits (in the death test's child).
void CorruptThenAudit(SchedulingQueue q, uint64_t id, Corrupt what) {
  q.CorruptForTesting(P(id), what);
  q.CheckInvariants();
}

// Two pods of group 7, both active.
SchedulingQueue OneGroupOfTwo() {
  SchedulingQueue q;
  q.Add(P(1, 0, 7), 0);
  q.Add(P(2, 0, 7), 0);
  return q;
}

TEST(SchedulingQueueDeathTest, NegativeBackoffIsRefused) {
  QueueOptions o;
  o.max_backoff_s = -1;
  EXPECT_DEATH(SchedulingQueue{o}, "negative backoff");
}

TEST(SchedulingQueueDeathTest, RemovingAGroupMissingFromItsOrderIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneActive();
        q.CorruptForTesting(P(1), Corrupt::kDropOrder);
        q.Remove(1);
      },
      "group missing from its order");
}

TEST(SchedulingQueueDeathTest, OrderingAGroupTwiceIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneActive();
        q.CorruptForTesting(P(2), Corrupt::kPhantomOrder);
        q.Add(P(2), 0);
      },
      "group ordered twice");
}

TEST(SchedulingQueueDeathTest, ErasingAGroupMissingFromItsMapIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneActive();
        q.CorruptForTesting(P(1), Corrupt::kDropGroupMap);
        q.Remove(1);
      },
      "m.end\\(\\) && it->second.get\\(\\) == g: group missing from its map");
}

TEST(SchedulingQueueDeathTest, MovingAGroupMissingFromItsMapIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneUnschedulable();
        q.CorruptForTesting(P(1), Corrupt::kDropGroupMap);
        q.OnEvent(QueueEvent::kPodDeleted, 1);
      },
      "sit->second.get\\(\\) == g: group missing from its map");
}

TEST(SchedulingQueueDeathTest, RemovingAPodMissingFromBackoffIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneInBackoff();
        q.CorruptForTesting(P(1), Corrupt::kDropBackoff);
        q.Remove(1);
      },
      "pod 1 missing from backoff");
}

TEST(SchedulingQueueDeathTest, RemovingAPodMissingFromItsGroupIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneGroupOfTwo();
        q.CorruptForTesting(P(2), Corrupt::kDropFromGroup);
        q.Remove(2);
      },
      "pod 2 missing from its group");
}

TEST(SchedulingQueueDeathTest, MovingAGroupToWhereItAlreadyIsIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneUnschedulable();
        q.CorruptForTesting(P(1), Corrupt::kWrongSubQueue);
        q.OnEvent(QueueEvent::kPodDeleted, 1);
      },
      "bad group move");
}

TEST(SchedulingQueueDeathTest, MergingGroupsThatShareAPodIsCaught) {
  EXPECT_DEATH(
      {
        // Pods 1 and 2 of group 7 go unschedulable together; pod 3 of group 7 arrives active,
        // and a copy of pod 1 is slipped into its group. The event merges the two groups.
        SchedulingQueue q(NoBackoff());
        q.Add(P(1, 0, 7), 0);
        q.Add(P(2, 0, 7), 0);
        q.AddUnschedulable(*q.Pop(0), 0);
        q.Add(P(3, 0, 7), 0);
        q.CorruptForTesting(P(1), Corrupt::kCopyToActive);
        q.OnEvent(QueueEvent::kPodDeleted, 1);
      },
      "a pod queued twice");
}

TEST(SchedulingQueueDeathTest, PoppingAnUnindexedPodIsCaught) {
  EXPECT_DEATH(
      {
        SchedulingQueue q = OneActive();
        q.CorruptForTesting(P(1), Corrupt::kDropIndex);
        q.Pop(0);
      },
      "active pod 1 not indexed");
}

TEST(SchedulingQueueDeathTest, AuditCatchesAnIndexEntryUnderTheWrongKey) {
  EXPECT_DEATH(CorruptThenAudit(OneActive(), 1, Corrupt::kIndexKey), "index key 1 holds pod 2");
}

TEST(SchedulingQueueDeathTest, AuditCatchesABackoffPodLost) {
  EXPECT_DEATH(CorruptThenAudit(OneInBackoff(), 1, Corrupt::kDropBackoff),
               "e.backoff_until, id.*pod 1 lost");
}

TEST(SchedulingQueueDeathTest, AuditCatchesAPodMissingFromItsGroup) {
  EXPECT_DEATH(CorruptThenAudit(OneGroupOfTwo(), 2, Corrupt::kDropFromGroup),
               "pod 2 not in its group");
}

TEST(SchedulingQueueDeathTest, AuditCatchesAGroupInTheWrongSubQueue) {
  EXPECT_DEATH(CorruptThenAudit(OneActive(), 1, Corrupt::kWrongSubQueue),
               "g->where == s && g->key == key: bad group");
}

TEST(SchedulingQueueDeathTest, AuditCatchesAGroupMissingFromItsOrder) {
  EXPECT_DEATH(CorruptThenAudit(OneUnschedulable(), 1, Corrupt::kDropOrder), "unordered group");
}

TEST(SchedulingQueueDeathTest, AuditCatchesASizeOutOfStep) {
  EXPECT_DEATH(CorruptThenAudit(OneActive(), 1, Corrupt::kActiveSize),
               "sub-queue 0 size out of step");
}

TEST(SchedulingQueueDeathTest, AuditCatchesAnOrderEntryWithoutAGroup) {
  EXPECT_DEATH(CorruptThenAudit(OneActive(), 2, Corrupt::kPhantomOrder), "order sizes");
}

TEST(SchedulingQueueDeathTest, CorruptForTestingRefusesWhatItCannotBreak) {
  EXPECT_DEATH(OneActive().CorruptForTesting(P(9), Corrupt::kDropIndex),
               "CorruptForTesting needs a queued pod");
  EXPECT_DEATH(OneInBackoff().CorruptForTesting(P(1), Corrupt::kDropOrder),
               "CorruptForTesting: pod 1 is in backoff");
  EXPECT_DEATH(OneUnschedulable().CorruptForTesting(P(1), Corrupt::kCopyToActive),
               "CorruptForTesting: no active group of that key");
}

}  // namespace
}  // namespace seedance::sched
