// The Scheduler's tenancy: queue accounting, limits and preemption (docs/tenancy.md).
//
// Preemption (the PostFilter step) runs when a pod fits no node. The pods it may evict:
//   * with QueueConfig::preemption, without queues: pods of strictly lower priority anywhere;
//   * with queues: (with QueueConfig::preemption) pods of its own leaf queue of strictly lower
//     priority, and, when
//     its queue and every ancestor stay within their fair share with the pod placed (reclaim),
//     pods of other queues that hold more than their fair share, or that are in no queue.
// Among those, MinimalVictims picks the cheapest set on one node (fewest pods, lowest priority,
// then the lowest node); the node must then hold the pod's CPU, memory and whole GPUs once the
// victims are gone. Victims go back to Pending and are queued again.
#include <algorithm>
#include <limits>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/sched/scheduler.h"

namespace seedance::sched {
namespace {

Resources DemandOf(const PodInfo& pod) {
  const core::PodShape& s = pod.shape;
  Resources r{};
  r[kQueueGpus] = s.gpu_milli >= core::kMilliGpu ? s.num_gpu : 0;
  r[kQueueGpuMilli] = static_cast<double>(s.TotalGpuMilli());
  r[kQueueCpuMilli] = static_cast<double>(s.cpu_milli);
  r[kQueueMemoryMib] = static_cast<double>(s.memory_mib);
  return r;
}

Resources Scaled(const Resources& r, double k) {
  Resources out{};
  for (size_t i = 0; i < kQueueResources; ++i) out[i] = r[i] * k;
  return out;
}

}  // namespace

int Scheduler::LeafOf(const PodInfo& pod) const {
  if (!queues_) return -1;
  auto it = ns_leaf_.find(pod.ns);
  return it == ns_leaf_.end() ? -1 : it->second;
}

void Scheduler::Account(const PodInfo& pod, bool placed, double sign) {
  const int leaf = LeafOf(pod);
  if (leaf >= 0) queues_->Add(leaf, Scaled(DemandOf(pod), sign), !placed);
}

void Scheduler::RefreshCapacity() {
  if (!queues_) return;
  Resources cap{};
  for (int n = 0; n < state_.num_nodes(); ++n) {
    if (!state_.alive(n)) continue;
    const core::NodeSpec& spec = state_.node(n);
    cap[kQueueGpus] += spec.num_gpus;
    cap[kQueueGpuMilli] += static_cast<double>(spec.num_gpus) * core::kMilliGpu;
    cap[kQueueCpuMilli] += static_cast<double>(spec.cpu_milli);
    cap[kQueueMemoryMib] += static_cast<double>(spec.memory_mib);
  }
  queues_->SetCapacity(cap);
}

absl::Status Scheduler::SetQueues(QueueConfig config, double now_s) {
  queues_.reset();
  ns_leaf_.clear();
  preemption_ = config.preemption;
  if (!config.queues.empty()) {
    absl::StatusOr<QueueTree> tree = QueueTree::Build(config.queues, Resources{});
    if (!tree.ok()) return tree.status();
    for (const auto& [ns, name] : config.namespace_queue) {
      const int q = tree->Find(name);
      if (q < 0 || !tree->is_leaf(q)) {
        return absl::InvalidArgumentError(
            absl::StrCat("namespace '", ns, "': '", name, "' is not a leaf queue"));
      }
      ns_leaf_[ns] = q;
    }
    queues_ = std::move(*tree);
    ledger_.ForEach(
        [this](const PodInfo& p) { Account(p, p.phase != PodPhase::kPending, +1); });
  }
  // Quotas changed: every waiting pod gets another try.
  queue_.OnEvent(QueueEvent::kNodeUpdated, now_s);
  return absl::OkStatus();
}

const QueueTree* Scheduler::queue_tree() {
  RefreshCapacity();
  return queues_ ? &*queues_ : nullptr;
}

std::string Scheduler::OverLimit(const PodInfo& pod) const {
  const int leaf = LeafOf(pod);
  if (leaf < 0) return "";
  const Resources want = DemandOf(pod);
  for (int q = leaf; q >= 0; q = queues_->parent(q)) {
    const QueueSpec& spec = queues_->spec(q);
    for (size_t r = 0; r < kQueueResources; ++r) {
      if (queues_->usage(q)[r] + want[r] > spec.limit[r]) {
        return absl::StrCat("queue '", spec.name, "' is at its limit: ", QueueResourceNames()[r],
                            " ", queues_->usage(q)[r], " in use + ", want[r], " > limit ",
                            spec.limit[r]);
      }
    }
  }
  return "";
}

bool Scheduler::MayDisrupt(int leaf, double now_s) {
  if (leaf < 0 || !queues_) return true;
  const int64_t budget = queues_->spec(leaf).disruption_budget;
  if (budget < 0) return true;
  std::deque<double>& times = disruptions_[queues_->spec(leaf).name];
  while (!times.empty() && times.front() <= now_s - 60) times.pop_front();
  return static_cast<int64_t>(times.size()) < budget;
}

std::vector<Scheduler::VictimRule> Scheduler::VictimRules(const PodInfo& pod, bool reclaim,
                                                          const std::vector<Resources>& shares,
                                                          double now_s) {
  // Index 0: pods in no queue; q + 1: leaf queue q.
  const int leaf = LeafOf(pod);
  const int num_queues = queues_ ? static_cast<int>(queues_->size()) : 0;
  std::vector<VictimRule> rules(static_cast<size_t>(num_queues) + 1);
  for (int other = -1; other < num_queues; ++other) {
    if (other >= 0 && !queues_->is_leaf(other)) continue;
    VictimRule& r = rules[static_cast<size_t>(other + 1)];
    r.lower_priority = preemption_ && (!queues_ || other == leaf);
    r.any_priority =
        reclaim && other != leaf && (other < 0 || queues_->OverFairShare(other, shares));
    // A queue whose disruption budget is spent keeps its pods.
    r.protect = !MayDisrupt(other, now_s);
  }
  return rules;
}

VictimSet Scheduler::SearchVictims(const PodInfo& pod, const core::PodShape& shape,
                                   const std::vector<VictimRule>& rules, double now_s) {
  // Node by node over the ledger's compact per-node records: no PodInfo is read, and a node
  // whose summary already rules it out is not read at all.
  std::vector<const VictimRule*> rule_of_ns(ledger_.num_namespace_ids());
  for (uint32_t id = 0; id < rule_of_ns.size(); ++id) {
    auto it = queues_ ? ns_leaf_.find(ledger_.NamespaceName(id)) : ns_leaf_.end();
    rule_of_ns[id] = &rules[it == ns_leaf_.end() ? 0 : static_cast<size_t>(it->second) + 1];
  }
  const int64_t need = shape.num_gpu;
  VictimSearch search(need);
  std::vector<VictimCandidate> eligible;
  for (int n = 0; n < state_.num_nodes(); ++n) {
    if (!state_.schedulable(n)) continue;
    const int64_t free = state_.free_gpus(n);
    if (free >= need || ledger_.num_pods_on_node(n) == 0) continue;
    const PodLedger::PlacedSummary sum = ledger_.SummaryOfNode(n);
    // Every pod here loses at least (now - the latest placement) GPU-seconds.
    if (search.RulesOut(free, sum.max_whole_gpus, sum.min_priority,
                        std::max(0.0, now_s - sum.last_placed_at_s)) ||
        !state_.Accessible(n, shape)) {
      continue;
    }
    eligible.clear();
    for (const PlacedRef& r : ledger_.PlacedOnNode(n)) {
      const VictimRule& rule = *rule_of_ns[r.ns_id];
      if (rule.protect ||
          !(rule.any_priority || (rule.lower_priority && r.priority < pod.priority))) {
        continue;
      }
      // Lost work: GPU-seconds since it was placed (no checkpoints are known).
      const double ran_s = std::max(0.0, now_s - r.placed_at_s);
      eligible.push_back({r.slot, n, r.priority, r.whole_gpus,
                          ran_s * static_cast<double>(std::max(r.whole_gpus, 1)), false});
    }
    search.Node(n, free, eligible);
  }
  return search.TakeBest();
}

bool Scheduler::Preempt(const PodInfo& pod, const core::PodShape& shape, double now_s) {
  // Whole GPUs to free; a pod without GPUs does not preempt.
  if (shape.num_gpu <= 0) return false;
  const int leaf = LeafOf(pod);
  std::vector<Resources> shares;
  bool reclaim = false;
  if (queues_) {
    RefreshCapacity();
    shares = queues_->FairShares();
    reclaim = leaf >= 0 && queues_->MayReclaim(leaf, DemandOf(pod), shares);
  }
  if (!reclaim && !preemption_) return false;
  const VictimSet set = SearchVictims(pod, shape, VictimRules(pod, reclaim, shares, now_s), now_s);
  if (set.node < 0) return false;
  // Copies: evicting re-adds pods to the ledger, which may reuse slots.
  std::vector<PodInfo> victims;
  for (uint64_t slot : set.victims) victims.push_back(ledger_.PodAt(static_cast<uint32_t>(slot)));
  // The node must also hold the pod's CPU and memory once the victims are gone.
  int64_t cpu = state_.cpu_left(set.node), mem = state_.memory_left(set.node);
  std::vector<std::string> uids;
  for (const PodInfo& v : victims) {
    cpu += v.shape.cpu_milli;
    mem += v.shape.memory_mib;
    uids.push_back(v.uid);
  }
  if (cpu < shape.cpu_milli || mem < shape.memory_mib) return false;
  std::vector<PodInfo> gang_victims;
  for (const PodInfo& v : victims) {
    if (!v.gang.empty()) gang_victims.push_back(v);
  }
  const std::string why = absl::StrCat("preempted for pod ", pod.ns, "/", pod.name,
                                       reclaim ? " (reclaim)" : " (higher priority)");
  for (const PodInfo& v : victims) {
    if (const int leaf_v = LeafOf(v); leaf_v >= 0) {
      disruptions_[queues_->spec(leaf_v).name].push_back(now_s);
    }
  }
  for (const std::string& uid : uids) {
    if (!Evict(uid, now_s).ok()) return false;
    last_failure_[uid] = why;
    last_eviction_[uid] = why;
    ++preemptions_;
  }
  // A gang is preempted as a unit: its other members go too.
  for (const PodInfo& g : gang_victims) {
    auto it = gangs_.find(GangKey(g));
    if (it == gangs_.end()) continue;
    for (const std::string& m : std::vector<std::string>(it->second.begin(), it->second.end())) {
      const PodInfo* p = ledger_.Find(m);
      if (p == nullptr || p->phase == PodPhase::kPending) continue;
      if (Evict(m, now_s).ok()) {
        last_failure_[m] = why + ", with its gang";
        last_eviction_[m] = last_failure_[m];
        ++preemptions_;
      }
    }
  }
  return true;
}

}  // namespace seedance::sched
