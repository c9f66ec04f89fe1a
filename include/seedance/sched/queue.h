// The scheduling queue: pending pods in three sub-queues, like kube-scheduler's PriorityQueue.
//
//   active         pods to try now, best first by the QueueSort order (QueueOptions::less;
//                  default: higher priority first, then earlier arrival).
//   backoff        pods that failed and wait out an exponential backoff before they are tried
//                  again: initial_backoff_s x 2^(attempts-1), capped at max_backoff_s (1 s .. 10 s
//                  by default, as kube-scheduler's). A backoff of 0 disables it.
//   unschedulable  pods that failed with nothing changed since; only an event that may make
//                  them fit (OnEvent) or Flush after max_unschedulable_s moves them on.
//
// Equivalence groups. Pods with the same non-zero QueuedPod::group are declared equivalent for
// scheduling (same requirements): OnEvent asks its hint once per group (with the group's best
// pod) and moves the whole group, and a failed attempt with no event since the pop sends the
// group's other active pods back to unschedulable with it (they would fail the same way). With
// backoff disabled these moves cost O(log n) per group, whatever its size, which is what lets the
// simulator keep 100,000 waiting pods. group 0 = no group: hints are asked per pod.
//
// Times are seconds on the caller's clock (wall time in the server, simulated time in the
// simulator). Ids must be unique among the pods in the queue.
//
// Thread-safety: none. One loop owns a queue.
#ifndef SEEDANCE_SCHED_QUEUE_H_
#define SEEDANCE_SCHED_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace seedance::sched {

struct QueuedPod {
  uint64_t id = 0;
  int32_t priority = 0;
  uint64_t seq = 0;    // arrival order
  int attempts = 0;    // failed attempts so far (AddUnschedulable counts them)
  uint64_t group = 0;  // equivalence group; 0 = none (see above)
  // When the pod first entered the queue (AgedPriority reads it; a failed attempt keeps it).
  double arrived_s = 0;
  // Set by Pop: the queue's event count when the pod was popped (AddUnschedulable compares it).
  uint64_t popped_at_event = 0;
  // Its backoff is a penalty that must run out (a binder refused it), never cut short by
  // pop_backoff_when_idle. Cleared when it is popped.
  bool hold_backoff = false;
};

// The QueueSort extension point: true if a should be tried before b. Must be a strict weak
// order; pods it leaves equal are tried by id.
using QueueLess = std::function<bool(const QueuedPod&, const QueuedPod&)>;
QueueLess PriorityThenArrival();  // default: higher priority first, then lower seq
// Aging: every `aging_s` seconds a pod has waited since it arrived is worth one priority level,
// so that a pod of low priority is not overtaken forever by newer pods of higher priority (a
// pod of priority p that arrived at t is tried before one of priority p + 1 that arrived after
// t + aging_s). Its order, (priority - arrived_s / aging_s) higher first, then lower seq, does
// not change with time, so the queue needs no re-sorting. REQUIRES: aging_s > 0.
QueueLess AgedPriority(double aging_s);

struct QueueOptions {
  double initial_backoff_s = 1;
  double max_backoff_s = 10;
  double max_unschedulable_s = 300;
  QueueLess less;  // empty: PriorityThenArrival()
  // When no pod is active, Pop takes the backoff pod whose backoff ends first (not one with
  // hold_backoff) instead of leaving the scheduler idle, as kube-scheduler does since 1.33
  // (KEP-5142, SchedulerPopFromBackoffQ). A backoff pod is one something changed for since it
  // last failed, so each is tried at most once more per change. Without it a live scheduler
  // whose pods failed many times while the cluster was full waits out backoffs of up to
  // max_backoff_s with GPUs free. Off by default (the simulator's replay order).
  bool pop_backoff_when_idle = false;
};

enum class QueueEvent { kNodeAdded, kNodeUpdated, kPodDeleted };
std::string_view QueueEventName(QueueEvent e);  // "NodeAdded", "NodeUpdated", "PodDeleted"

class SchedulingQueue {
 public:
  explicit SchedulingQueue(QueueOptions o = {});
  ~SchedulingQueue();
  SchedulingQueue(SchedulingQueue&&) noexcept;
  SchedulingQueue& operator=(SchedulingQueue&&) noexcept;

  // A new pod: active. An id already queued is replaced.
  void Add(QueuedPod pod, double now_s);
  // The best active pod, after moving the backoff pods that are due to active. nullopt when
  // none is active.
  std::optional<QueuedPod> Pop(double now_s);
  // After a failed attempt (attempts + 1): to backoff (or active, once its backoff has passed)
  // if an event arrived since the pod was popped, else to unschedulable - and then, for a pod
  // in a group, the group's pods still active go to unschedulable too. A pod tried without
  // going through the queue (a caller's fast path for a new arrival) may come here directly
  // with popped_at_event = events().
  void AddUnschedulable(QueuedPod pod, double now_s);
  // An event that may make pods fit: moves the unschedulable pods for which hint(pod) is true
  // (all if no hint; asked once per group) to backoff, or to active if their backoff has passed.
  // The hint is asked best group first (QueueSort order of their best pods), and at most
  // max_groups groups (an ungrouped pod is a group of one) are moved: the simulator wakes one
  // request at a time, so that each is chosen after the previous one was placed.
  void OnEvent(QueueEvent e, double now_s, const std::function<bool(const QueuedPod&)>& hint = {},
               size_t max_groups = SIZE_MAX);
  // Removes the pod from whichever sub-queue holds it; false if none does.
  bool Remove(uint64_t id);
  // Backoff pods that are due -> active; unschedulable pods whose arrival or last failed
  // attempt is more than max_unschedulable_s ago -> active (or backoff if theirs has not
  // passed). O(queued pods): call it now and then (kube-scheduler: every 30 s).
  void Flush(double now_s);

  size_t active_size() const { return sizes_[kActive]; }
  size_t backoff_size() const { return sizes_[kBackoff]; }
  size_t unschedulable_size() const { return sizes_[kUnschedulable]; }
  size_t size() const { return index_.size(); }
  bool Contains(uint64_t id) const { return index_.contains(id); }
  // Earliest backoff expiry; nullopt when nothing is in backoff.
  std::optional<double> NextWakeup() const;
  // How long a pod waits after its n-th failed attempt (0 when backoff is disabled).
  double BackoffFor(int attempts) const;
  // Events seen so far.
  uint64_t events() const { return events_; }

  // Calls f(const QueuedPod&) for every queued pod, any order.
  template <class F>
  void ForEach(F&& f) const {
    for (const auto& [id, e] : index_) f(e.pod);
  }

  // Audits every index against the sub-queues; aborts on a broken invariant.
  void CheckInvariants() const;

  // Test-only, for the death tests of those checks: breaks one internal record the way a bug
  // would (the public API cannot reach these states). `pod` names a queued pod by its id, except
  // for kPhantomOrder.
  //   kDropIndex      its index entry is erased (it stays in its sub-queue)
  //   kIndexKey       its index entry says it is pod id + 1
  //   kDropBackoff    (in backoff) it is erased from the backoff set
  //   kDropFromGroup  (active or unschedulable) it is erased from its group's set only
  //   kDropOrder      (active or unschedulable) its group is erased from its sub-queue's order
  //   kDropGroupMap   (active or unschedulable) its group is taken out of its sub-queue's map
  //                   (and leaked: only a death test's child process should do this)
  //   kWrongSubQueue  (active or unschedulable) its group claims the other sub-queue
  //   kCopyToActive   (unschedulable) a copy of it joins the active group of its key
  //   kPhantomOrder   the active order gets an entry headed by `pod`, which is not queued
  //   kActiveSize     the active size is one too high
  enum class TestCorruption {
    kDropIndex,
    kIndexKey,
    kDropBackoff,
    kDropFromGroup,
    kDropOrder,
    kDropGroupMap,
    kWrongSubQueue,
    kCopyToActive,
    kPhantomOrder,
    kActiveSize
  };
  void CorruptForTesting(const QueuedPod& pod, TestCorruption what);

 private:
  enum Sub { kActive = 0, kBackoff = 1, kUnschedulable = 2 };
  struct PodLess {
    const QueueLess* less;  // nullptr: PriorityThenArrival, inlined
    bool operator()(const QueuedPod& a, const QueuedPod& b) const;
  };
  // Key of a group: (group, 0) for grouped pods, (0, id) for a pod without a group.
  using GroupKey = std::pair<uint64_t, uint64_t>;
  struct Group {
    GroupKey key;
    std::set<QueuedPod, PodLess> pods;
    Sub where;
    double max_backoff_until = 0;  // an upper bound of its pods' backoff expiry
  };
  struct Entry {
    QueuedPod pod;           // the same copy as in its group
    Group* group = nullptr;  // null: in backoff; else the sub-queue is group->where
    double backoff_until = 0;
    double last_change_s = 0;  // when it was added or last failed (Flush)
  };
  // A group in its sub-queue's order, keyed by a copy of its best pod (so that scanning the
  // order touches one node per group).
  struct Ranked {
    QueuedPod head;
    Group* group;
  };
  struct RankedLess {
    const QueueLess* less;
    bool operator()(const Ranked& a, const Ranked& b) const {
      return PodLess{less}(a.head, b.head);  // heads are distinct pods: no ties
    }
  };
  using GroupMap = absl::flat_hash_map<GroupKey, std::unique_ptr<Group>>;

  static GroupKey KeyOf(const QueuedPod& p) {
    return p.group != 0 ? GroupKey{p.group, 0} : GroupKey{0, p.id};
  }
  GroupMap& MapOf(Sub s) { return s == kActive ? active_ : unschedulable_; }
  // Puts an indexed, detached pod into sub-queue s (kActive or kUnschedulable).
  void InsertGrouped(Entry& e, Sub s);
  void InsertBackoff(Entry& e);
  // The index entry for id, new, or detached from its sub-queue if the id was queued.
  Entry& Fresh(uint64_t id);
  // Adds the pod to g's set (no order or size bookkeeping).
  void InsertPod(Group* g, Entry& e);
  // Takes the pod out of its sub-queue (the index entry stays).
  void Detach(Entry& e);
  // Moves a whole group to sub-queue `to` (kActive or kUnschedulable), merging with a group of
  // the same key there (the smaller into the larger).
  void MoveGroup(Group* g, Sub to, double now_s);
  // Moves an unschedulable group out after an event: whole to active when every pod's backoff
  // has passed, else pod by pod.
  void Release(Group* g, double now_s);
  void EraseGroup(Group* g);
  // Groups in active and unschedulable are ordered by their best pod; these keep the order.
  void OrderErase(Group* g);
  void OrderInsert(Group* g);
  std::set<Ranked, RankedLess>& OrderOf(Sub s) {
    return s == kActive ? active_order_ : unsched_order_;
  }
  void MoveDueBackoff(double now_s);

  QueueOptions options_;
  std::unique_ptr<QueueLess> less_;  // stable address for the comparators; null: the default
  absl::flat_hash_map<uint64_t, Entry> index_;
  GroupMap active_, unschedulable_;
  std::set<Ranked, RankedLess> active_order_;      // active groups by their best pod
  std::set<Ranked, RankedLess> unsched_order_;     // unschedulable groups by their best pod
  std::set<std::pair<double, uint64_t>> backoff_;  // (expiry, id)
  size_t sizes_[3] = {0, 0, 0};
  uint64_t events_ = 0;
};

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_QUEUE_H_
