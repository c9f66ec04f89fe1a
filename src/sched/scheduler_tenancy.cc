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

bool Scheduler::Preempt(const PodInfo& pod, const core::PodShape& shape, double now_s) {
  // Whole GPUs to free; a pod without GPUs does not preempt.
  const int64_t need = shape.num_gpu;
  if (need <= 0) return false;
  const int leaf = LeafOf(pod);
  std::vector<Resources> shares;
  bool reclaim = false;
  if (queues_) {
    RefreshCapacity();
    shares = queues_->FairShares();
    reclaim = leaf >= 0 && queues_->MayReclaim(leaf, DemandOf(pod), shares);
  }
  if (!reclaim && !preemption_) return false;
  std::vector<VictimCandidate> candidates;
  std::vector<const PodInfo*> by_id;
  std::vector<int8_t> accessible(static_cast<size_t>(state_.num_nodes()), -1);  // per node, once
  ledger_.ForEach([&](const PodInfo& p) {
    if (p.phase == PodPhase::kPending) return;
    int8_t& ok = accessible[p.placement.node];
    if (ok < 0) ok = state_.Accessible(p.placement.node, shape) ? 1 : 0;
    if (ok == 0) return;
    const int other = LeafOf(p);
    bool allowed = preemption_ && p.priority < pod.priority && (!queues_ || other == leaf);
    if (!allowed && reclaim && other != leaf) {
      allowed = other < 0 || queues_->OverFairShare(other, shares);
    }
    if (!allowed) return;
    const int64_t gpus = static_cast<int64_t>(DemandOf(p)[kQueueGpus]);
    // A queue whose disruption budget is spent keeps its pods.
    const bool protect = !MayDisrupt(other, now_s);
    // Lost work: GPU-seconds since it was placed (no checkpoints are known).
    auto at = placed_at_.find(p.uid);
    const double ran_s = at == placed_at_.end() ? 0 : std::max(0.0, now_s - at->second);
    candidates.push_back({by_id.size(), p.placement.node, p.priority, gpus,
                          ran_s * static_cast<double>(std::max<int64_t>(gpus, 1)), protect});
    by_id.push_back(&p);
  });
  if (candidates.empty()) return false;
  std::vector<int64_t> free(static_cast<size_t>(state_.num_nodes()));
  for (int n = 0; n < state_.num_nodes(); ++n) {
    free[n] = state_.schedulable(n) && state_.alive(n) ? state_.free_gpus(n) : -(1 << 20);
  }
  const VictimSet set = MinimalVictims(std::numeric_limits<int32_t>::max(), need, free, candidates);
  if (set.node < 0) return false;
  // The node must also hold the pod's CPU and memory once the victims are gone.
  int64_t cpu = state_.cpu_left(set.node), mem = state_.memory_left(set.node);
  std::vector<std::string> uids;
  for (uint64_t id : set.victims) {
    cpu += by_id[id]->shape.cpu_milli;
    mem += by_id[id]->shape.memory_mib;
    uids.push_back(by_id[id]->uid);
  }
  if (cpu < shape.cpu_milli || mem < shape.memory_mib) return false;
  std::vector<PodInfo> gang_victims;
  for (uint64_t id : set.victims) {
    if (!by_id[id]->gang.empty()) gang_victims.push_back(*by_id[id]);
  }
  const std::string why = absl::StrCat("preempted for pod ", pod.ns, "/", pod.name,
                                       reclaim ? " (reclaim)" : " (higher priority)");
  for (uint64_t id : set.victims) {
    if (const int leaf_v = LeafOf(*by_id[id]); leaf_v >= 0) {
      disruptions_[queues_->spec(leaf_v).name].push_back(now_s);
    }
  }
  for (const std::string& uid : uids) {
    if (!Evict(uid, now_s).ok()) return false;
    last_failure_[uid] = why;
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
        ++preemptions_;
      }
    }
  }
  return true;
}

}  // namespace seedance::sched
