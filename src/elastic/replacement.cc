#include "seedance/elastic/replacement.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "seedance/sched/topology.h"

namespace seedance::elastic {

namespace {

absl::Status Bad(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("re-placement: ", what));
}

absl::Status CheckJob(const core::ClusterState& s, const TrainingJob& j) {
  const core::Placement& p = j.placement;
  if (j.shape.num_gpu < 2 || j.shape.gpu_milli != core::kMilliGpu) {
    return Bad(absl::StrCat("job ", j.id, ": shape: not 2 or more whole GPUs"));
  }
  if (p.node < 0 || p.node >= s.num_nodes() || p.num_gpus != j.shape.num_gpu) {
    return Bad(absl::StrCat("job ", j.id, ": placement: not its GPUs on a node of the state"));
  }
  if (!(j.remaining_s >= 0) || !(j.to_checkpoint_s >= 0) || j.to_checkpoint_s > j.remaining_s ||
      !std::isfinite(j.remaining_s)) {
    return Bad(absl::StrCat("job ", j.id, ": to_checkpoint_s: not in [0, remaining_s]"));
  }
  return absl::OkStatus();
}

// The best GPU set for `job` anywhere, its own GPUs counted free: the fastest all-reduce, its own
// node on ties. nullopt when no node with topology has room. REQUIRES: job's placement released.
std::optional<core::Placement> BestTarget(const core::ClusterState& s, const TrainingJob& job,
                                          double* allreduce_s) {
  std::optional<core::Placement> best;
  for (int pass = 0; pass < 2; ++pass) {  // its own node first, so it wins ties
    for (int n = 0; n < s.num_nodes(); ++n) {
      if ((n == job.placement.node) != (pass == 0)) continue;
      if (!sched::HasGpuTopology(s.node(n)) || !s.Fits(n, job.shape)) continue;
      core::Placement p;
      p.node = n;
      if (!sched::ChooseGpuSet(s, n, job.shape.num_gpu, &p)) continue;
      const double a = sched::RingAllReduceSeconds(s.node(n), p.gpu_ids(), sched::kAllReduceBytes);
      if (!best || a < *allreduce_s) {
        p.numa = sched::ChooseNuma(s, job.shape, p);
        best = p;
        *allreduce_s = a;
      }
    }
  }
  return best;
}

// The plan for one job against the state as it is (its GPUs counted free); nullopt when no move
// saves time.
std::optional<ReplacementPlan> PlanOne(core::ClusterState& s, const TrainingJob& job,
                                       const ReplacementOptions& o) {
  const core::NodeSpec& node = s.node(job.placement.node);
  ReplacementPlan plan;
  plan.id = job.id;
  plan.from = job.placement;
  plan.allreduce_now_s =
      sched::RingAllReduceSeconds(node, job.placement.gpu_ids(), sched::kAllReduceBytes);
  if (!s.Release(job.shape, job.placement).ok()) return std::nullopt;
  std::optional<core::Placement> to = BestTarget(s, job, &plan.allreduce_new_s);
  (void)s.Allocate(job.shape, job.placement);  // back as it was
  if (!to || !(plan.allreduce_new_s > 0) || plan.allreduce_new_s >= plan.allreduce_now_s) {
    return std::nullopt;
  }
  plan.to = *to;
  plan.speedup =
      (1 - o.comm_fraction) + o.comm_fraction * plan.allreduce_now_s / plan.allreduce_new_s;
  const double after = job.remaining_s - job.to_checkpoint_s;
  plan.saved_s = after * (1 - 1 / plan.speedup) - o.migration_s;
  plan.move_in_s = job.to_checkpoint_s;
  if (!(plan.saved_s > 0)) return std::nullopt;
  return plan;
}

}  // namespace

bool PoorlyPlaced(const core::ClusterState& state, const core::Placement& placement) {
  if (placement.num_gpus < 2 || placement.node < 0) return false;
  const core::NodeSpec& node = state.node(placement.node);
  if (!sched::HasGpuTopology(node)) return false;
  const core::GpuTopology& first = node.topology.gpus[placement.gpus[0]];
  for (int8_t g : placement.gpu_ids()) {
    const core::GpuTopology& t = node.topology.gpus[g];
    if (t.numa_node != first.numa_node || t.numa_node < 0 || t.nvlink_group.empty() ||
        t.nvlink_group != first.nvlink_group) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<ReplacementPlan>> PlanReplacements(core::ClusterState& state,
                                                              const std::vector<TrainingJob>& jobs,
                                                              const ReplacementOptions& options) {
  if (!(options.comm_fraction >= 0 && options.comm_fraction < 1)) {
    return Bad("comm_fraction: must be in [0, 1)");
  }
  if (!(options.migration_s >= 0) || !std::isfinite(options.migration_s)) {
    return Bad("migration_s: must be a finite number >= 0");
  }
  std::vector<std::pair<double, size_t>> order;  // (saved, job) of the poorly placed
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (absl::Status st = CheckJob(state, jobs[i]); !st.ok()) return st;
    if (!PoorlyPlaced(state, jobs[i].placement)) continue;
    if (auto p = PlanOne(state, jobs[i], options)) order.emplace_back(p->saved_s, i);
  }
  std::sort(order.begin(), order.end(), [](auto a, auto b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<ReplacementPlan> plans;
  for (const auto& [saved, i] : order) {
    // Again against the state as earlier plans left it: their targets are taken.
    std::optional<ReplacementPlan> p = PlanOne(state, jobs[i], options);
    if (!p) continue;
    p->cross_numa = false;
    const core::NodeSpec& node = state.node(p->from.node);
    for (int8_t g : p->from.gpu_ids()) {
      p->cross_numa = p->cross_numa || node.topology.gpus[g].numa_node !=
                                           node.topology.gpus[p->from.gpus[0]].numa_node;
    }
    p->nvlink_now =
        sched::RingGbps(node, p->from.gpu_ids()) >=
        sched::LinkGbps(sched::GpuLink::kNvLink, sched::LinkGenerationOf(node.gpu_model));
    if (!state.Release(jobs[i].shape, p->from).ok()) continue;
    if (!state.Allocate(jobs[i].shape, p->to).ok()) {
      (void)state.Allocate(jobs[i].shape, p->from);
      continue;
    }
    plans.push_back(std::move(*p));
  }
  return plans;
}

}  // namespace seedance::elastic
