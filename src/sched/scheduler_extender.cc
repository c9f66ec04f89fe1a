// Scheduler's decisions for an external scheduler that owns the queue (scheduler.h): the
// Kubernetes extender's filter, prioritize and bind.
#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "seedance/sched/scheduler.h"

namespace seedance::sched {
namespace {

constexpr size_t kMaxNoted = 1 << 16;

}  // namespace

void Scheduler::NoteArrival(const PodInfo& pod) {
  if (noted_.contains(pod.uid)) return;
  noted_.insert(pod.uid);
  noted_order_.push_back(pod.uid);
  if (noted_order_.size() > kMaxNoted) {
    noted_.erase(noted_order_.front());
    noted_order_.pop_front();
  }
  LearnArrival(pod);
}

std::vector<std::optional<FilterReason>> Scheduler::FilterNodes(
    const PodInfo& pod, const std::vector<std::string>& names) const {
  const core::PodShape shape = ResolvedShape(pod);
  std::vector<std::optional<FilterReason>> out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    const int n = state_.FindNode(name);
    out.push_back(n < 0 ? std::optional<FilterReason>(FilterReason::kNodeRemoved)
                        : NodeFilterReason(state_, n, shape));
  }
  return out;
}

absl::StatusOr<int> Scheduler::RankNodes(const PodInfo& pod, const std::vector<std::string>& names,
                                         std::vector<std::optional<int64_t>>* totals) {
  totals->assign(names.size(), std::nullopt);
  absl::StatusOr<Framework*> fw = FrameworkFor(pod);
  if (!fw.ok()) return fw.status();
  std::vector<int> candidates;
  std::vector<int> at;  // node index -> position in names (last one wins on duplicates)
  at.assign(static_cast<size_t>(state_.num_nodes()), -1);
  for (size_t i = 0; i < names.size(); ++i) {
    const int n = state_.FindNode(names[i]);
    if (n < 0) continue;
    if (at[static_cast<size_t>(n)] < 0) candidates.push_back(n);
    at[static_cast<size_t>(n)] = static_cast<int>(i);
  }
  std::sort(candidates.begin(), candidates.end());
  std::vector<std::pair<int, int64_t>> ranked;
  const int best = (*fw)->Rank(ResolvedShape(pod), state_, candidates, &ranked);
  for (const auto& [n, total] : ranked) {
    (*totals)[static_cast<size_t>(at[static_cast<size_t>(n)])] = total;
  }
  return best < 0 ? -1 : at[static_cast<size_t>(best)];
}

absl::Status Scheduler::PlaceOn(PodInfo pod, std::string_view node, double now_s) {
  const int n = state_.FindNode(node);
  if (n < 0) return absl::NotFoundError(absl::StrCat("node '", std::string(node), "' not found"));
  pod.phase = PodPhase::kPending;
  pod.placement = core::Placement{};
  const std::string uid = pod.uid;
  NoteArrival(pod);
  if (absl::Status st = ledger_.Add(std::move(pod)); !st.ok()) return st;
  Record(Change::kPodAdded, uid);
  const PodInfo* added = ledger_.Find(uid);
  Account(*added, false, +1);
  auto refuse = [&](absl::Status why) {
    (void)DeletePod(uid, now_s);
    return why;
  };
  absl::StatusOr<Framework*> fw = FrameworkFor(*added);
  if (!fw.ok()) return refuse(fw.status());
  if (const std::string over = OverLimit(*added); !over.empty()) {
    return refuse(absl::FailedPreconditionError(over));
  }
  const Outcome out = (*fw)->PlaceOn(ResolvedShape(*added), state_, n);
  if (out.code == Code::kWait) {
    // A Permit plugin asked to wait (gangs): the extender has no later call to finish it.
    (*fw)->RejectWaiting(ResolvedShape(*added), out.placement, state_);
    return refuse(absl::FailedPreconditionError("a permit plugin asked the pod to wait"));
  }
  if (!out.ok()) return refuse(absl::FailedPreconditionError(out.reason));
  CommitPlacement(uid, out, now_s);
  return absl::OkStatus();
}

absl::Status Scheduler::AdoptPod(PodInfo pod, std::string_view node, const std::vector<int>& gpus,
                                 double now_s) {
  if (gpus.empty()) return PlaceOn(std::move(pod), node, now_s);
  const int n = state_.FindNode(node);
  if (n < 0) return absl::NotFoundError(absl::StrCat("node '", std::string(node), "' not found"));
  if (static_cast<int>(gpus.size()) != pod.shape.num_gpu) {
    return absl::InvalidArgumentError(absl::StrCat("pod ", pod.uid, " asks for ", pod.shape.num_gpu,
                                                   " GPUs but is placed on ", gpus.size()));
  }
  core::Placement placement;
  placement.node = n;
  placement.num_gpus = static_cast<int32_t>(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] < 0 || gpus[i] >= state_.node(n).num_gpus) {
      return absl::InvalidArgumentError(absl::StrCat("pod ", pod.uid, " is placed on GPU ", gpus[i],
                                                     " of node ", state_.node(n).name,
                                                     ", which has ", state_.node(n).num_gpus));
    }
    placement.gpus[i] = static_cast<int8_t>(gpus[i]);
  }
  const core::PodShape shape = ResolvedShape(pod);
  if (absl::Status st = state_.Allocate(shape, placement); !st.ok()) {
    return absl::FailedPreconditionError(st.message());
  }
  pod.phase = PodPhase::kPending;
  pod.placement = core::Placement{};
  const std::string uid = pod.uid;
  NoteArrival(pod);
  if (absl::Status st = ledger_.Add(std::move(pod)); !st.ok()) {
    (void)state_.Release(shape, placement);
    return st;
  }
  Record(Change::kPodAdded, uid);
  Account(*ledger_.Find(uid), false, +1);
  Outcome out;
  out.code = Code::kSuccess;
  out.placement = placement;
  CommitPlacement(uid, out, now_s);
  // Bound by the other scheduler already: nothing to confirm.
  if (!options_.internal_binding) return Bind(uid);
  return absl::OkStatus();
}

bool Scheduler::FitsWithout(const PodInfo& pod, std::string_view node,
                            const std::vector<std::string>& victims) {
  const int n = state_.FindNode(node);
  if (n < 0) return false;
  const core::PodShape shape = ResolvedShape(pod);
  const std::optional<FilterReason> why = NodeFilterReason(state_, n, shape);
  if (!why) return true;
  if (*why != FilterReason::kInsufficientCpu && *why != FilterReason::kInsufficientMemory &&
      *why != FilterReason::kInsufficientGpu && *why != FilterReason::kInsufficientGpuMilli) {
    return false;  // no eviction changes the node's model, taints, cordon or GPU count
  }
  // The node's room with the victims' requests given back, by the same arithmetic as Fits.
  int64_t cpu = state_.cpu_left(n), memory = state_.memory_left(n);
  std::vector<int64_t> gpu(state_.gpu_left(n).begin(), state_.gpu_left(n).end());
  std::set<const PodInfo*> seen;
  for (const std::string& uid : victims) {
    const PodInfo* v = ledger_.Find(uid);
    if (v == nullptr || v->phase == PodPhase::kPending || v->placement.node != n) continue;
    if (!seen.insert(v).second) continue;
    const core::PodShape vs = ResolvedShape(*v);
    cpu += vs.cpu_milli;
    memory += vs.memory_mib;
    for (int8_t g : v->placement.gpu_ids()) gpu[static_cast<size_t>(g)] += vs.gpu_milli;
  }
  if (cpu < shape.cpu_milli || memory < shape.memory_mib) return false;
  int room = 0;
  for (int64_t left : gpu) room += left >= shape.gpu_milli ? 1 : 0;
  return room >= shape.num_gpu;
}

}  // namespace seedance::sched
