#include "seedance/sched/queue.h"

#include <algorithm>
#include <cmath>

#include "seedance/base/check.h"

namespace seedance::sched {

QueueLess PriorityThenArrival() {
  return [](const QueuedPod& a, const QueuedPod& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.seq < b.seq;
  };
}

QueueLess AgedPriority(double aging_s) {
  SEEDANCE_CHECK(aging_s > 0) << "AgedPriority: the aging interval must be > 0, not " << aging_s;
  return [aging_s](const QueuedPod& a, const QueuedPod& b) {
    const double ka = static_cast<double>(a.priority) - a.arrived_s / aging_s;
    const double kb = static_cast<double>(b.priority) - b.arrived_s / aging_s;
    if (ka != kb) return ka > kb;
    return a.seq < b.seq;
  };
}

std::string_view QueueEventName(QueueEvent e) {
  switch (e) {
    case QueueEvent::kNodeAdded:
      return "NodeAdded";
    case QueueEvent::kNodeUpdated:
      return "NodeUpdated";
    case QueueEvent::kPodDeleted:
      return "PodDeleted";
  }
  SEEDANCE_UNREACHABLE();
  return "";
}

bool SchedulingQueue::PodLess::operator()(const QueuedPod& a, const QueuedPod& b) const {
  if (less == nullptr) {  // the default order, without the indirect call
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.seq != b.seq) return a.seq < b.seq;
    return a.id < b.id;
  }
  if ((*less)(a, b)) return true;
  if ((*less)(b, a)) return false;
  return a.id < b.id;
}

SchedulingQueue::SchedulingQueue(QueueOptions o)
    : options_(std::move(o)),
      less_(options_.less ? std::make_unique<QueueLess>(options_.less) : nullptr),
      active_order_(RankedLess{less_.get()}),
      unsched_order_(RankedLess{less_.get()}) {
  SEEDANCE_CHECK(!(options_.initial_backoff_s < 0) && !(options_.max_backoff_s < 0))
      << "negative backoff";
}

SchedulingQueue::~SchedulingQueue() = default;
SchedulingQueue::SchedulingQueue(SchedulingQueue&&) noexcept = default;
SchedulingQueue& SchedulingQueue::operator=(SchedulingQueue&&) noexcept = default;

double SchedulingQueue::BackoffFor(int attempts) const {
  if (attempts <= 0 || !(options_.initial_backoff_s > 0)) return 0;
  double d = options_.initial_backoff_s;
  for (int i = 1; i < attempts && d < options_.max_backoff_s; ++i) d *= 2;
  return std::min(d, options_.max_backoff_s);
}

void SchedulingQueue::OrderErase(Group* g) {
  const size_t erased = OrderOf(g->where).erase(Ranked{*g->pods.begin(), g});
  SEEDANCE_CHECK(erased == 1) << "group missing from its order";
}

void SchedulingQueue::OrderInsert(Group* g) {
  const bool inserted = OrderOf(g->where).insert(Ranked{*g->pods.begin(), g}).second;
  SEEDANCE_CHECK(inserted) << "group ordered twice";
}

void SchedulingQueue::EraseGroup(Group* g) {
  GroupMap& m = MapOf(g->where);
  auto it = m.find(g->key);
  SEEDANCE_CHECK(it != m.end() && it->second.get() == g) << "group missing from its map";
  m.erase(it);
}

void SchedulingQueue::InsertGrouped(Entry& e, Sub s) {
  GroupMap& m = MapOf(s);
  const GroupKey key = KeyOf(e.pod);
  auto it = m.find(key);
  if (it == m.end()) {
    auto fresh = std::make_unique<Group>(
        Group{key, std::set<QueuedPod, PodLess>(PodLess{less_.get()}), s, 0});
    Group* g = fresh.get();
    m.emplace(key, std::move(fresh));
    InsertPod(g, e);
    OrderInsert(g);
  } else {
    Group* g = it->second.get();
    // The order only moves when the pod becomes the group's best.
    if (g->pods.key_comp()(e.pod, *g->pods.begin())) {
      OrderErase(g);
      InsertPod(g, e);
      OrderInsert(g);
    } else {
      InsertPod(g, e);
    }
  }
  ++sizes_[s];
}

void SchedulingQueue::InsertPod(Group* g, Entry& e) {
  // The common cases - a pod going back to the head (a failed attempt) or joining at the tail
  // (a new arrival) - cost O(1) with a position hint.
  std::set<QueuedPod, PodLess>& pods = g->pods;
  const PodLess& less = pods.key_comp();
  if (pods.empty() || less(e.pod, *pods.begin())) {
    pods.insert(pods.begin(), e.pod);
  } else if (less(*pods.rbegin(), e.pod)) {
    pods.insert(pods.end(), e.pod);
  } else {
    pods.insert(e.pod);
  }
  g->max_backoff_until = std::max(g->max_backoff_until, e.backoff_until);
  e.group = g;
}

void SchedulingQueue::InsertBackoff(Entry& e) {
  backoff_.emplace(e.backoff_until, e.pod.id);
  e.group = nullptr;
  ++sizes_[kBackoff];
}

void SchedulingQueue::Detach(Entry& e) {
  if (e.group == nullptr) {
    const size_t erased = backoff_.erase({e.backoff_until, e.pod.id});
    SEEDANCE_CHECK(erased == 1) << "pod " << e.pod.id << " missing from backoff";
    --sizes_[kBackoff];
    return;
  }
  Group* g = e.group;
  const Sub s = g->where;
  e.group = nullptr;
  --sizes_[s];
  auto it = g->pods.find(e.pod);
  SEEDANCE_CHECK(it != g->pods.end()) << "pod " << e.pod.id << " missing from its group";
  if (it != g->pods.begin()) {  // not the best: the order stays
    g->pods.erase(it);
    return;
  }
  OrderErase(g);
  g->pods.erase(it);
  if (g->pods.empty()) {
    EraseGroup(g);
  } else {
    OrderInsert(g);
  }
}

void SchedulingQueue::MoveGroup(Group* g, Sub to, double /*now_s*/) {
  const Sub from = g->where;
  SEEDANCE_CHECK(from != to && to != kBackoff) << "bad group move";
  GroupMap& src = MapOf(from);
  auto sit = src.find(g->key);
  SEEDANCE_CHECK(sit != src.end() && sit->second.get() == g) << "group missing from its map";
  std::unique_ptr<Group> owned = std::move(sit->second);
  src.erase(sit);
  OrderErase(g);
  const size_t n = g->pods.size();
  sizes_[from] -= n;
  sizes_[to] += n;
  GroupMap& dst = MapOf(to);
  auto dit = dst.find(g->key);
  if (dit == dst.end()) {
    g->where = to;
    dst.emplace(g->key, std::move(owned));
    OrderInsert(g);
    return;
  }
  Group* t = dit->second.get();
  OrderErase(t);
  // Merge the smaller into the larger; only the moved pods' index entries change.
  Group* big = g->pods.size() > t->pods.size() ? g : t;
  Group* small = big == g ? t : g;
  for (const QueuedPod& p : small->pods) index_.find(p.id)->second.group = big;
  big->pods.merge(small->pods);
  SEEDANCE_CHECK(small->pods.empty()) << "a pod queued twice";
  big->max_backoff_until = std::max(big->max_backoff_until, small->max_backoff_until);
  big->where = to;
  if (big == g) dit->second = std::move(owned);  // destroys t
  OrderInsert(big);
}

void SchedulingQueue::Release(Group* g, double now_s) {
  if (g->max_backoff_until <= now_s) {
    MoveGroup(g, kActive, now_s);
    return;
  }
  std::vector<uint64_t> ids;
  ids.reserve(g->pods.size());
  for (const QueuedPod& p : g->pods) ids.push_back(p.id);
  for (uint64_t id : ids) {
    Entry& e = index_.find(id)->second;
    Detach(e);
    if (e.backoff_until <= now_s) {
      InsertGrouped(e, kActive);
    } else {
      InsertBackoff(e);
    }
  }
}

void SchedulingQueue::MoveDueBackoff(double now_s) {
  while (!backoff_.empty() && backoff_.begin()->first <= now_s) {
    Entry& e = index_.find(backoff_.begin()->second)->second;
    Detach(e);
    InsertGrouped(e, kActive);
  }
}

void SchedulingQueue::Add(QueuedPod pod, double now_s) {
  Entry& e = Fresh(pod.id);
  e.pod = pod;
  e.backoff_until = now_s;
  e.last_change_s = now_s;
  InsertGrouped(e, kActive);
}

std::optional<QueuedPod> SchedulingQueue::Pop(double now_s) {
  MoveDueBackoff(now_s);
  if (active_order_.empty() && options_.pop_backoff_when_idle) {
    for (const auto& [until, id] : backoff_) {
      Entry& e = index_.find(id)->second;
      if (e.pod.hold_backoff) continue;
      Detach(e);
      InsertGrouped(e, kActive);
      break;
    }
  }
  if (active_order_.empty()) return std::nullopt;
  Group* g = active_order_.begin()->group;
  active_order_.erase(active_order_.begin());
  QueuedPod pod = *g->pods.begin();
  g->pods.erase(g->pods.begin());
  --sizes_[kActive];
  if (g->pods.empty()) {
    EraseGroup(g);
  } else {
    OrderInsert(g);
  }
  const size_t erased = index_.erase(pod.id);
  SEEDANCE_CHECK(erased == 1) << "active pod " << pod.id << " not indexed";
  pod.popped_at_event = events_;
  pod.hold_backoff = false;
  return pod;
}

void SchedulingQueue::AddUnschedulable(QueuedPod pod, double now_s) {
  ++pod.attempts;
  Entry& e = Fresh(pod.id);
  e.pod = pod;
  e.backoff_until = now_s + BackoffFor(pod.attempts);
  e.last_change_s = now_s;
  if (events_ > pod.popped_at_event) {
    // Something changed while it was being tried: it may fit now.
    if (e.backoff_until <= now_s) {
      InsertGrouped(e, kActive);
    } else {
      InsertBackoff(e);
    }
    return;
  }
  if (pod.group != 0) {
    if (auto it = active_.find(KeyOf(pod)); it != active_.end()) {
      // Back into its active group (at the head, O(1)), and the group to unschedulable.
      Group* g = it->second.get();
      if (!unschedulable_.contains(g->key)) {  // the usual case: a plain move
        OrderErase(g);
        InsertPod(g, e);
        sizes_[kActive] -= g->pods.size() - 1;
        sizes_[kUnschedulable] += g->pods.size();
        g->where = kUnschedulable;
        unschedulable_.emplace(g->key, std::move(it->second));
        active_.erase(it);
        OrderInsert(g);
        return;
      }
      InsertGrouped(e, kActive);
      MoveGroup(g, kUnschedulable, now_s);
      return;
    }
  }
  InsertGrouped(e, kUnschedulable);
}

void SchedulingQueue::OnEvent(QueueEvent /*e*/, double now_s,
                              const std::function<bool(const QueuedPod&)>& hint,
                              size_t max_groups) {
  ++events_;
  std::vector<Group*> wake;
  for (const Ranked& r : unsched_order_) {
    if (wake.size() >= max_groups) break;
    if (!hint || hint(r.head)) wake.push_back(r.group);
  }
  for (Group* g : wake) Release(g, now_s);
}

SchedulingQueue::Entry& SchedulingQueue::Fresh(uint64_t id) {
  auto [it, inserted] = index_.try_emplace(id);
  if (!inserted) Detach(it->second);  // an id already queued is replaced
  return it->second;
}

bool SchedulingQueue::Remove(uint64_t id) {
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  Detach(it->second);
  index_.erase(it);
  return true;
}

void SchedulingQueue::Flush(double now_s) {
  MoveDueBackoff(now_s);
  std::vector<uint64_t> stale;
  for (const auto& [id, e] : index_) {
    if (e.group != nullptr && e.group->where == kUnschedulable &&
        now_s - e.last_change_s > options_.max_unschedulable_s) {
      stale.push_back(id);
    }
  }
  std::sort(stale.begin(), stale.end());
  for (uint64_t id : stale) {
    Entry& e = index_.find(id)->second;
    Detach(e);
    if (e.backoff_until <= now_s) {
      InsertGrouped(e, kActive);
    } else {
      InsertBackoff(e);
    }
  }
}

std::optional<double> SchedulingQueue::NextWakeup() const {
  if (backoff_.empty()) return std::nullopt;
  return backoff_.begin()->first;
}

void SchedulingQueue::CheckInvariants() const {
  size_t counted[3] = {0, 0, 0};
  for (const auto& [id, e] : index_) {
    SEEDANCE_CHECK(e.pod.id == id) << "index key " << id << " holds pod " << e.pod.id;
    if (e.group == nullptr) {
      ++counted[kBackoff];
      SEEDANCE_CHECK(backoff_.contains({e.backoff_until, id})) << "pod " << id << " lost";
      continue;
    }
    ++counted[e.group->where];
    SEEDANCE_CHECK(e.group->pods.contains(e.pod) && e.group->key == KeyOf(e.pod))
        << "pod " << id << " not in its group";
  }
  size_t in_groups[3] = {0, 0, 0};
  for (Sub s : {kActive, kUnschedulable}) {
    const GroupMap& m = s == kActive ? active_ : unschedulable_;
    for (const auto& [key, g] : m) {
      SEEDANCE_CHECK(!g->pods.empty() && g->where == s && g->key == key) << "bad group";
      in_groups[s] += g->pods.size();
      auto ranked =
          (s == kActive ? active_order_ : unsched_order_).find(Ranked{*g->pods.begin(), g.get()});
      SEEDANCE_CHECK(ranked != (s == kActive ? active_order_ : unsched_order_).end() &&
                     ranked->group == g.get())
          << "unordered group";
    }
  }
  in_groups[kBackoff] = backoff_.size();
  for (int s = 0; s < 3; ++s) {
    SEEDANCE_CHECK(counted[s] == sizes_[s] && in_groups[s] == sizes_[s])
        << "sub-queue " << s << " size out of step";
  }
  SEEDANCE_CHECK(active_order_.size() == active_.size() &&
                 unsched_order_.size() == unschedulable_.size())
      << "order sizes";
}

void SchedulingQueue::CorruptForTesting(const QueuedPod& pod, TestCorruption what) {
  if (what == TestCorruption::kPhantomOrder) {
    active_order_.insert(Ranked{pod, nullptr});
    return;
  }
  if (what == TestCorruption::kActiveSize) {
    ++sizes_[kActive];
    return;
  }
  auto it = index_.find(pod.id);
  SEEDANCE_CHECK(it != index_.end()) << "CorruptForTesting needs a queued pod";
  Entry& e = it->second;
  Group* g = e.group;
  SEEDANCE_CHECK(g != nullptr || what == TestCorruption::kDropIndex ||
                 what == TestCorruption::kIndexKey || what == TestCorruption::kDropBackoff)
      << "CorruptForTesting: pod " << pod.id << " is in backoff";
  switch (what) {
    case TestCorruption::kDropIndex:
      index_.erase(it);
      return;
    case TestCorruption::kIndexKey:
      ++e.pod.id;
      return;
    case TestCorruption::kDropBackoff:
      backoff_.erase({e.backoff_until, e.pod.id});
      return;
    case TestCorruption::kDropFromGroup:
      g->pods.erase(e.pod);
      return;
    case TestCorruption::kDropOrder:
      OrderOf(g->where).erase(Ranked{*g->pods.begin(), g});
      return;
    case TestCorruption::kDropGroupMap: {
      auto m = MapOf(g->where).find(g->key);
      (void)m->second.release();
      MapOf(g->where).erase(m);
      return;
    }
    case TestCorruption::kWrongSubQueue:
      g->where = g->where == kActive ? kUnschedulable : kActive;
      return;
    case TestCorruption::kCopyToActive: {
      auto a = active_.find(g->key);
      SEEDANCE_CHECK(a != active_.end()) << "CorruptForTesting: no active group of that key";
      OrderErase(a->second.get());  // keeps the order right, so only the duplicate is wrong
      a->second->pods.insert(e.pod);
      OrderInsert(a->second.get());
      return;
    }
    case TestCorruption::kPhantomOrder:
    case TestCorruption::kActiveSize:
      return;
  }
}

}  // namespace seedance::sched
