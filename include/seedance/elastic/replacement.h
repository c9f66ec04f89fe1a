// Training-job re-placement (seed B ch. 1): running multi-GPU jobs whose GPUs talk over a slow
// path (across NUMA nodes, or without NVLink) are moved at their next checkpoint to a better GPU
// set when the simulated speed-up pays for the migration (docs/elastic.md, "Re-placement").
//
// Speed model: a training step is compute plus a ring all-reduce (sched::RingAllReduceSeconds
// over the job's GPU set). On the better set the all-reduce takes `comm_fraction` of the step;
// on the current set it takes (current all-reduce / better all-reduce) times as long, so
//   speed-up s = (1 - f) + f * allreduce_now / allreduce_new.
// The job keeps its current speed until its next checkpoint (the move is a restart from it),
// then loses `migration_s` and runs the rest of its work s times faster:
//   saved = work_after_checkpoint * (1 - 1/s) - migration_s.
// A move is planned when saved > 0. Targets are any node's free whole GPUs (its own node's
// included, its own GPUs counted free), chosen with sched::ChooseGpuSet; the best ring wins,
// its own node on ties (no data to copy across nodes). Plans are made one job at a time, the
// largest saving first, each reserving its target, so two plans never take the same GPUs.
//
// Thread-safety: a pure function over its arguments.
#ifndef SEEDANCE_ELASTIC_REPLACEMENT_H_
#define SEEDANCE_ELASTIC_REPLACEMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::elastic {

struct TrainingJob {
  std::string id;
  core::PodShape shape;        // whole GPUs, num_gpu >= 2
  core::Placement placement;   // where it runs now (allocated in the state)
  double remaining_s = 0;      // of work at its current speed
  double to_checkpoint_s = 0;  // until its next checkpoint, in [0, remaining_s]
};

struct ReplacementOptions {
  double comm_fraction = 0.3;  // all-reduce share of a step on the better set, in [0, 1)
  double migration_s = 180;    // restart from the checkpoint on the new GPUs
};

struct ReplacementPlan {
  std::string id;
  core::Placement from, to;
  bool cross_numa = false;                          // the current set spans NUMA nodes
  bool nvlink_now = false;                          // the current set is within one NVLink group
  double allreduce_now_s = 0, allreduce_new_s = 0;  // of sched::kAllReduceBytes
  double speedup = 1;
  double saved_s = 0;
  double move_in_s = 0;  // = to_checkpoint_s
};

// True when a job's set is a re-placement candidate: 2+ GPUs on a node with topology, spanning
// NUMA nodes or not all in one NVLink group.
bool PoorlyPlaced(const core::ClusterState& state, const core::Placement& placement);

// The plans above. `state` holds the jobs' current placements; each plan moves its job in it
// (Release then Allocate), so the state afterwards is the cluster after every move.
// InvalidArgument naming the field for bad options or a job that is not as documented.
absl::StatusOr<std::vector<ReplacementPlan>> PlanReplacements(core::ClusterState& state,
                                                              const std::vector<TrainingJob>& jobs,
                                                              const ReplacementOptions& options);

}  // namespace seedance::elastic

#endif  // SEEDANCE_ELASTIC_REPLACEMENT_H_
