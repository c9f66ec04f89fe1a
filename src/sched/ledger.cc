#include "seedance/sched/ledger.h"

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

namespace seedance::sched {
namespace {

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string Quoted(std::string_view uid) { return absl::StrCat("pod '", Sv(uid), "'"); }

bool Placed(PodPhase phase) { return phase != PodPhase::kPending; }

}  // namespace

std::string_view PodPhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kAssumed:
      return "Assumed";
    case PodPhase::kBound:
      return "Bound";
  }
  SEEDANCE_UNREACHABLE();
  return "";
}

std::string PodLedger::NameKey(std::string_view ns, std::string_view name) {
  // Length-prefixed, so no namespace or name can make two pairs collide.
  return absl::StrCat(ns.size(), ":", Sv(ns), Sv(name));
}

absl::Status PodLedger::CheckPlacement(std::string_view uid, const core::Placement& p) {
  if (p.node < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Quoted(uid), ": placement has no node"));
  }
  if (p.num_gpus < 0 || p.num_gpus > core::kMaxGpusPerNode) {
    return absl::InvalidArgumentError(absl::StrCat(Quoted(uid), ": placement lists ", p.num_gpus,
                                                   " GPUs (at most ", core::kMaxGpusPerNode, ")"));
  }
  return absl::OkStatus();
}

PodLedger::Slot* PodLedger::FindSlot(std::string_view uid, uint32_t* slot) {
  auto it = by_uid_.find(Sv(uid));
  if (it == by_uid_.end()) return nullptr;
  if (slot) *slot = it->second;
  return &slots_[it->second];
}

const PodInfo* PodLedger::Find(std::string_view uid) const {
  auto it = by_uid_.find(Sv(uid));
  return it == by_uid_.end() ? nullptr : &slots_[it->second].pod;
}

const PodInfo* PodLedger::FindByName(std::string_view ns, std::string_view name) const {
  if (name.empty()) return nullptr;
  auto it = by_name_.find(NameKey(ns, name));
  return it == by_name_.end() ? nullptr : &slots_[it->second].pod;
}

void PodLedger::SetPhase(Slot& s, PodPhase phase) {
  --counts_[static_cast<int>(s.pod.phase)];
  ++counts_[static_cast<int>(phase)];
  s.pod.phase = phase;
}

void PodLedger::Widen(PlacedSummary& s, const PlacedRef& r) {
  s.min_priority = std::min(s.min_priority, r.priority);
  s.max_whole_gpus = std::max(s.max_whole_gpus, r.whole_gpus);
  s.last_placed_at_s = std::max(s.last_placed_at_s, r.placed_at_s);
}

PodLedger::PlacedSummary PodLedger::SummaryOfNode(int node) const {
  if (node < 0 || static_cast<size_t>(node) >= summaries_.size()) return {};
  return summaries_[static_cast<size_t>(node)];
}

void PodLedger::AttachToNode(uint32_t slot) {
  Slot& s = slots_[slot];
  const size_t node = static_cast<size_t>(s.pod.placement.node);
  if (nodes_.size() <= node) {
    nodes_.resize(node + 1);
    summaries_.resize(node + 1);
  }
  s.pos_on_node = static_cast<uint32_t>(nodes_[node].size());
  const core::PodShape& shape = s.pod.shape;
  nodes_[node].push_back({.slot = slot,
                          .priority = s.pod.priority,
                          .whole_gpus = shape.gpu_milli >= core::kMilliGpu ? shape.num_gpu : 0,
                          .ns_id = s.ns_id,
                          .placed_at_s = s.pod.placed_at_s});
  Widen(summaries_[node], nodes_[node].back());
}

void PodLedger::DetachFromNode(uint32_t slot) {
  Slot& s = slots_[slot];
  std::vector<PlacedRef>& list = nodes_[static_cast<size_t>(s.pod.placement.node)];
  SEEDANCE_CHECK(s.pos_on_node < list.size() && list[s.pos_on_node].slot == slot)
      << "ledger node index out of step for pod " << s.pod.uid;
  const PlacedRef gone = list[s.pos_on_node];
  const PlacedRef last = list.back();
  list[s.pos_on_node] = last;
  slots_[last.slot].pos_on_node = s.pos_on_node;
  list.pop_back();
  // Removing can only narrow the bounds, and only those the removed pod held: recompute them
  // from what is left then, and leave them otherwise (most releases).
  PlacedSummary& sum = summaries_[static_cast<size_t>(s.pod.placement.node)];
  if (gone.priority == sum.min_priority || gone.whole_gpus == sum.max_whole_gpus ||
      gone.placed_at_s == sum.last_placed_at_s) {
    sum = PlacedSummary{};
    for (const PlacedRef& r : list) Widen(sum, r);
  }
}

absl::Status PodLedger::Add(PodInfo pod) {
  if (pod.uid.empty()) return absl::InvalidArgumentError("pod has an empty uid");
  // One hash of the uid on the way in: its index entry is made first, and unmade on a refusal.
  auto [uid_entry, fresh_uid] = by_uid_.try_emplace(pod.uid, 0);
  if (!fresh_uid) {
    return absl::AlreadyExistsError(absl::StrCat(Quoted(pod.uid), " already exists"));
  }
  std::string name_key;
  if (!pod.name.empty()) {
    name_key = NameKey(pod.ns, pod.name);
    if (by_name_.contains(name_key)) {
      by_uid_.erase(uid_entry);
      return absl::AlreadyExistsError(
          absl::StrCat("a pod named '", pod.ns, "/", pod.name, "' already exists"));
    }
  }
  if (Placed(pod.phase)) {
    if (absl::Status st = CheckPlacement(pod.uid, pod.placement); !st.ok()) {
      by_uid_.erase(uid_entry);
      return st;
    }
  } else {
    pod.placement = core::Placement{};
    pod.assume_deadline_ns = 0;
    pod.placed_at_s = 0;
  }
  auto [ns, fresh] = ns_ids_.try_emplace(pod.ns, static_cast<uint32_t>(ns_names_.size()));
  if (fresh) ns_names_.push_back(pod.ns);
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.pod = std::move(pod);
  s.live = true;
  s.ns_id = ns->second;
  if (++s.fills == 0) s.fills = 1;  // no handle is 0
  uid_entry->second = slot;
  if (!name_key.empty()) by_name_.emplace(std::move(name_key), slot);
  ++counts_[static_cast<int>(s.pod.phase)];
  ++size_;
  if (Placed(s.pod.phase)) AttachToNode(slot);
  if (s.pod.phase == PodPhase::kAssumed) assumed_.emplace(s.pod.assume_deadline_ns, slot);
  return absl::OkStatus();
}

absl::Status PodLedger::Assume(std::string_view uid, const core::Placement& placement,
                               int64_t deadline_ns, double placed_at_s) {
  uint32_t slot = 0;
  Slot* s = FindSlot(uid, &slot);
  if (!s) return absl::NotFoundError(absl::StrCat(Quoted(uid), " not found"));
  if (s->pod.phase != PodPhase::kPending) {
    return absl::FailedPreconditionError(absl::StrCat(Quoted(uid), " is ",
                                                      Sv(PodPhaseName(s->pod.phase)),
                                                      ", not Pending: it cannot be assumed"));
  }
  if (absl::Status st = CheckPlacement(uid, placement); !st.ok()) return st;
  s->pod.placement = placement;
  s->pod.assume_deadline_ns = deadline_ns;
  s->pod.placed_at_s = placed_at_s;
  SetPhase(*s, PodPhase::kAssumed);
  AttachToNode(slot);
  assumed_.emplace(deadline_ns, slot);
  return absl::OkStatus();
}

absl::Status PodLedger::Bind(std::string_view uid) {
  uint32_t slot = 0;
  Slot* s = FindSlot(uid, &slot);
  if (!s) return absl::NotFoundError(absl::StrCat(Quoted(uid), " not found"));
  if (s->pod.phase != PodPhase::kAssumed) {
    return absl::FailedPreconditionError(absl::StrCat(
        Quoted(uid), " is ", Sv(PodPhaseName(s->pod.phase)), ", not Assumed: it cannot be bound"));
  }
  assumed_.erase({s->pod.assume_deadline_ns, slot});
  s->pod.assume_deadline_ns = 0;
  SetPhase(*s, PodPhase::kBound);
  return absl::OkStatus();
}

absl::Status PodLedger::Forget(std::string_view uid) {
  uint32_t slot = 0;
  Slot* s = FindSlot(uid, &slot);
  if (!s) return absl::NotFoundError(absl::StrCat(Quoted(uid), " not found"));
  if (s->pod.phase != PodPhase::kAssumed) {
    return absl::FailedPreconditionError(absl::StrCat(Quoted(uid), " is ",
                                                      Sv(PodPhaseName(s->pod.phase)),
                                                      ", not Assumed: it cannot be forgotten"));
  }
  assumed_.erase({s->pod.assume_deadline_ns, slot});
  DetachFromNode(slot);
  s->pod.placement = core::Placement{};
  s->pod.assume_deadline_ns = 0;
  s->pod.placed_at_s = 0;
  SetPhase(*s, PodPhase::kPending);
  return absl::OkStatus();
}

absl::Status PodLedger::SetRevision(std::string_view uid, int64_t revision) {
  Slot* s = FindSlot(uid);
  if (!s) return absl::NotFoundError(absl::StrCat(Quoted(uid), " not found"));
  s->pod.revision = revision;
  return absl::OkStatus();
}

absl::Status PodLedger::SetAnnotation(std::string_view uid, const std::string& key,
                                      std::string value) {
  Slot* s = FindSlot(uid);
  if (!s) return absl::NotFoundError(absl::StrCat(Quoted(uid), " not found"));
  if (value.empty()) {
    s->pod.annotations.erase(key);
  } else {
    s->pod.annotations[key] = std::move(value);
  }
  return absl::OkStatus();
}

absl::StatusOr<PodInfo> PodLedger::Remove(std::string_view uid) {
  auto it = by_uid_.find(Sv(uid));
  if (it == by_uid_.end()) return absl::NotFoundError(absl::StrCat(Quoted(uid), " not found"));
  const uint32_t slot = it->second;
  Slot& s = slots_[slot];
  if (s.pod.phase == PodPhase::kAssumed) assumed_.erase({s.pod.assume_deadline_ns, slot});
  if (Placed(s.pod.phase)) DetachFromNode(slot);
  if (!s.pod.name.empty()) by_name_.erase(NameKey(s.pod.ns, s.pod.name));
  by_uid_.erase(it);
  --counts_[static_cast<int>(s.pod.phase)];
  --size_;
  PodInfo out = std::move(s.pod);  // the slot keeps a moved-from pod until reused
  s.live = false;
  free_.push_back(slot);
  return out;
}

std::vector<const PodInfo*> PodLedger::PodsOnNode(int node) const {
  std::vector<const PodInfo*> out;
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return out;
  const std::vector<PlacedRef>& list = nodes_[static_cast<size_t>(node)];
  out.reserve(list.size());
  for (const PlacedRef& r : list) out.push_back(&slots_[r.slot].pod);
  return out;
}

std::vector<const PodInfo*> PodLedger::PodsOnGpu(int node, int gpu) const {
  std::vector<const PodInfo*> out;
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return out;
  for (const PlacedRef& r : nodes_[static_cast<size_t>(node)]) {
    const core::Placement& p = slots_[r.slot].pod.placement;
    for (int8_t g : p.gpu_ids()) {
      if (g == gpu) {
        out.push_back(&slots_[r.slot].pod);
        break;
      }
    }
  }
  return out;
}

size_t PodLedger::num_pods_on_node(int node) const {
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return 0;
  return nodes_[static_cast<size_t>(node)].size();
}

std::span<const PlacedRef> PodLedger::PlacedOnNode(int node) const {
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return {};
  return nodes_[static_cast<size_t>(node)];
}

const PodInfo& PodLedger::PodAt(uint32_t slot) const {
  SEEDANCE_CHECK(slot < slots_.size() && slots_[slot].live)
      << "ledger slot " << slot << " holds no pod";
  return slots_[slot].pod;
}

uint64_t PodLedger::HandleOf(std::string_view uid) const {
  auto it = by_uid_.find(Sv(uid));
  if (it == by_uid_.end()) return 0;
  return (static_cast<uint64_t>(slots_[it->second].fills) << 32) | it->second;
}

const PodInfo* PodLedger::FindByHandle(uint64_t handle) const {
  const uint64_t slot = handle & 0xFFFFFFFFu;
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  return s.live && s.fills == (handle >> 32) ? &s.pod : nullptr;
}

uint32_t PodLedger::NamespaceId(std::string_view ns) const {
  auto it = ns_ids_.find(Sv(ns));
  return it == ns_ids_.end() ? kNoNamespaceId : it->second;
}

const std::string& PodLedger::NamespaceName(uint32_t id) const {
  SEEDANCE_CHECK(id < ns_names_.size()) << "namespace id " << id << " was never given";
  return ns_names_[id];
}

std::vector<std::string> PodLedger::ExpiredAssumptions(int64_t now_ns) const {
  std::vector<std::string> out;
  for (const auto& [deadline, slot] : assumed_) {
    if (deadline > now_ns) break;
    out.push_back(slots_[slot].pod.uid);
  }
  return out;
}

void PodLedger::CheckInvariants() const {
  std::array<size_t, kNumPodPhases> counts{};
  size_t live = 0, placed = 0, assumed = 0, named = 0;
  for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
    const Slot& s = slots_[slot];
    if (!s.live) continue;
    ++live;
    ++counts[static_cast<int>(s.pod.phase)];
    auto it = by_uid_.find(s.pod.uid);
    SEEDANCE_CHECK(it != by_uid_.end() && it->second == slot)
        << "uid index out of step for pod " << s.pod.uid;
    if (!s.pod.name.empty()) {
      ++named;
      auto n = by_name_.find(NameKey(s.pod.ns, s.pod.name));
      SEEDANCE_CHECK(n != by_name_.end() && n->second == slot)
          << "name index out of step for pod " << s.pod.uid;
    }
    if (Placed(s.pod.phase)) {
      ++placed;
      const size_t node = static_cast<size_t>(s.pod.placement.node);
      SEEDANCE_CHECK(node < nodes_.size() && s.pos_on_node < nodes_[node].size() &&
                     nodes_[node][s.pos_on_node].slot == slot)
          << "node index out of step for pod " << s.pod.uid;
      const PlacedRef& r = nodes_[node][s.pos_on_node];
      SEEDANCE_CHECK(r.priority == s.pod.priority && r.ns_id == s.ns_id &&
                     r.placed_at_s == s.pod.placed_at_s && ns_names_[s.ns_id] == s.pod.ns)
          << "node index record out of step for pod " << s.pod.uid;
    } else {
      SEEDANCE_CHECK(s.pod.placement.node == -1) << "pending pod " << s.pod.uid << " has a node";
    }
    if (s.pod.phase == PodPhase::kAssumed) {
      ++assumed;
      SEEDANCE_CHECK(assumed_.contains({s.pod.assume_deadline_ns, slot}))
          << "assumed pod " << s.pod.uid << " missing from the deadline index";
    }
  }
  size_t on_nodes = 0;
  SEEDANCE_CHECK(summaries_.size() == nodes_.size()) << "node summaries out of step";
  for (size_t node = 0; node < nodes_.size(); ++node) {
    on_nodes += nodes_[node].size();
    PlacedSummary want;
    for (const PlacedRef& r : nodes_[node]) Widen(want, r);
    const PlacedSummary& have = summaries_[node];
    SEEDANCE_CHECK(have.min_priority == want.min_priority &&
                   have.max_whole_gpus == want.max_whole_gpus &&
                   have.last_placed_at_s == want.last_placed_at_s)
        << "summary of node " << node << " out of step with its pods";
  }
  SEEDANCE_CHECK(live == size_ && counts == counts_) << "pod counts out of step";
  SEEDANCE_CHECK(by_uid_.size() == live && by_name_.size() == named) << "index sizes";
  SEEDANCE_CHECK(on_nodes == placed && assumed_.size() == assumed) << "node/deadline index sizes";
  SEEDANCE_CHECK(free_.size() + live == slots_.size()) << "free list out of step";
}

void PodLedger::CorruptForTesting(std::string_view uid, TestCorruption what) {
  uint32_t slot = 0;
  Slot* s = FindSlot(uid, &slot);
  SEEDANCE_CHECK(s != nullptr) << "CorruptForTesting needs a pod in the ledger";
  PodInfo& pod = s->pod;
  switch (what) {
    case TestCorruption::kDropUid:
      by_uid_.erase(pod.uid);
      return;
    case TestCorruption::kDropName:
      by_name_.erase(NameKey(pod.ns, pod.name));
      return;
    case TestCorruption::kNodePosition:
      ++s->pos_on_node;
      return;
    case TestCorruption::kPendingNode:
      pod.placement.node = 0;
      return;
    case TestCorruption::kDropDeadline:
      assumed_.erase({pod.assume_deadline_ns, slot});
      return;
    case TestCorruption::kPhaseCount:
      ++counts_[static_cast<int>(PodPhase::kPending)];
      return;
    case TestCorruption::kGhostUid:
      by_uid_.emplace(absl::StrCat(Sv(uid), "~ghost"), slot);
      return;
    case TestCorruption::kDuplicateOnNode:
      nodes_[static_cast<size_t>(pod.placement.node)].push_back(
          nodes_[static_cast<size_t>(pod.placement.node)][s->pos_on_node]);
      return;
    case TestCorruption::kFreeList:
      free_.push_back(slot);
      return;
    case TestCorruption::kPhase:
      pod.phase = PodPhase::kBound;
      return;
    case TestCorruption::kNodeSummary:
      --summaries_[static_cast<size_t>(pod.placement.node)].min_priority;
      return;
    case TestCorruption::kSummaryCount:
      summaries_.pop_back();
      return;
    case TestCorruption::kNodeRecord:
      ++nodes_[static_cast<size_t>(pod.placement.node)][s->pos_on_node].priority;
      return;
    case TestCorruption::kPlacementGpus:
      for (int i = 0; i < pod.placement.num_gpus; ++i) ++pod.placement.gpus[static_cast<size_t>(i)];
      return;
  }
}

}  // namespace seedance::sched
