// Gangs: pods that are placed all at once or not at all (docs/tenancy.md, "Gangs").
//
// A gang is the pods of one namespace that name the same `gang`. When one of its pending members
// comes off the queue, every pending member is placed in the same cycle; the placement stands
// only if at least gang_min members are then placed (counting those already running), and
// otherwise every placement of the cycle is undone. So a gang never runs partly, and no gang
// ever holds part of the cluster while it waits for the rest: two gangs that each fit alone but
// not together cannot deadlock, one runs and the other waits whole. Members beyond gang_min are
// placed as they fit (an elastic gang). After a failed try, the gang's other members fail at once
// until something changes (an event of the queue).
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/sched/scheduler.h"

namespace seedance::sched {

std::string Scheduler::GangKey(const PodInfo& pod) {
  return pod.gang.empty() ? "" : absl::StrCat(pod.ns, "/", pod.gang);
}

void Scheduler::JoinGang(const PodInfo& pod) {
  if (!pod.gang.empty()) gangs_[GangKey(pod)].insert(pod.uid);
}

void Scheduler::LeaveGang(const PodInfo& pod) {
  if (pod.gang.empty()) return;
  auto it = gangs_.find(GangKey(pod));
  if (it == gangs_.end()) return;
  it->second.erase(pod.uid);
  if (it->second.empty()) {
    gang_failed_at_.erase(it->first);
    gangs_.erase(it);
  }
}

void Scheduler::EvictGang(const PodInfo& pod, double now_s) {
  auto it = gangs_.find(GangKey(pod));
  if (it == gangs_.end()) return;
  const std::vector<std::string> members(it->second.begin(), it->second.end());
  for (const std::string& uid : members) {
    const PodInfo* m = ledger_.Find(uid);
    if (m == nullptr || m->phase == PodPhase::kPending) continue;
    if (Evict(uid, now_s).ok()) {
      last_failure_[uid] = absl::StrCat("gang ", GangKey(pod), " requeued whole");
    }
  }
}

void Scheduler::TryGang(const QueuedPod& q, const PodInfo& pod, double now_s) {
  const std::string key = GangKey(pod);
  const std::string uid = pod.uid;
  const int32_t need = pod.gang_min;
  auto fail = [&](const std::string& why) {
    ++attempts_unschedulable_;
    last_failure_[uid] = why;
    queue_.AddUnschedulable(q, now_s);
  };
  if (auto f = gang_failed_at_.find(key); f != gang_failed_at_.end() && f->second == q.popped_at_event) {
    return fail(last_failure_.count(uid) ? last_failure_[uid]
                                         : absl::StrCat("gang ", key, " does not fit"));
  }
  // The members: the popped one first, then the others in uid order.
  std::vector<std::string> pending;
  int32_t placed_before = 0;
  for (const std::string& m : gangs_[key]) {
    const PodInfo* p = ledger_.Find(m);
    if (p->phase != PodPhase::kPending) {
      ++placed_before;
    } else if (m != uid) {
      pending.push_back(m);
    }
  }
  pending.insert(pending.begin(), uid);
  const int32_t members = placed_before + static_cast<int32_t>(pending.size());
  if (members < need) {
    return fail(absl::StrCat("gang ", key, ": ", members, " of its ", need,
                             " members submitted; waiting for the rest"));
  }
  // Place every pending member; undo them all if the gang stays below its minimum.
  struct Placed {
    std::string uid;
    Outcome out;
    Framework* fw;
    core::PodShape shape;
  };
  std::vector<Placed> placed;
  std::string first_reason;
  for (const std::string& m : pending) {
    const PodInfo* p = ledger_.Find(m);
    if (const std::string over = OverLimit(*p); !over.empty()) {
      if (first_reason.empty()) first_reason = over;
      continue;
    }
    absl::StatusOr<Framework*> fw = FrameworkFor(*p);
    if (!fw.ok()) {
      if (first_reason.empty()) first_reason = std::string(fw.status().message());
      continue;
    }
    const core::PodShape shape = ResolvedShape(*p);
    Outcome out = (*fw)->Schedule(shape, state_);
    if (!out.ok()) {
      if (first_reason.empty()) first_reason = out.reason;
      continue;
    }
    // Counted against the queue at once, so the next member's limit check sees it.
    AccountMove(*p, /*to_placed=*/true);
    placed.push_back({m, std::move(out), *fw, shape});
  }
  if (placed_before + static_cast<int32_t>(placed.size()) < need) {
    for (auto it = placed.rbegin(); it != placed.rend(); ++it) {
      it->fw->Release(it->shape, it->out.placement, state_);
      AccountMove(*ledger_.Find(it->uid), /*to_placed=*/false);
    }
    gang_failed_at_[key] = q.popped_at_event;
    return fail(absl::StrCat("gang ", key, ": only ", placed_before + placed.size(), " of its ",
                             need, " members fit together (", first_reason, ")"));
  }
  gang_failed_at_.erase(key);
  for (const Placed& p : placed) CommitPlacement(p.uid, p.out, now_s, /*accounted=*/true);
  // Members that did not fit wait in the queue for room (an elastic gang's extras).
  if (std::none_of(placed.begin(), placed.end(), [&](const Placed& p) { return p.uid == uid; })) {
    fail(absl::StrCat("gang ", key, " placed without this member (", first_reason, ")"));
  }
}

}  // namespace seedance::sched
