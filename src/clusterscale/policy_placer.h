// Internal: churn's placement through a registered sched policy (ChurnOptions::policy), made by
// the live scheduler itself: a sched::Scheduler (the server's) over a cluster that mirrors the
// ready nodes, driven by churn's simulated clock. A node joins as a new slot and leaves as a dead
// one; a pod is submitted when it arrives and deleted when it ends, and waits in the scheduler's
// queue meanwhile; after every event the scheduler runs its cycles, and what they started is
// handed back for churn to mirror onto its NodeRooms. Churn keeps its own list of the waiting
// pods (for the autoscaler's scans) in step with the scheduler's. Not thread-safe.
#ifndef SEEDANCE_SRC_CLUSTERSCALE_POLICY_PLACER_H_
#define SEEDANCE_SRC_CLUSTERSCALE_POLICY_PLACER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/scheduler.h"

namespace seedance::clusterscale::internal {

class PolicyPlacer {
 public:
  // A pod the scheduler started: churn's pod id, churn's node index and the placement.
  struct Started {
    int64_t id;
    int node;
    core::Placement placement;
  };

  // The policy options.policy with options.policy_params; `trace` gives fgd its typical shapes.
  // Every group's GPU model is registered up front, so ModelMask knows them before any node of
  // the model has joined. InvalidArgument for an unknown policy or knob.
  static absl::StatusOr<std::unique_ptr<PolicyPlacer>> Create(
      const std::vector<NodeGroup>& groups, const std::vector<core::PodSpec>& trace,
      const ChurnOptions& options);

  // The model mask of a gpu_spec ("A|B"; empty = any) in this state's model ids.
  uint64_t ModelMask(const std::string& gpu_spec) const {
    return scheduler_->state().ModelMask(gpu_spec);
  }

  // Churn's node `node` (its index) joins with `spec`: the waiting pods it lets start. It leaves
  // (REQUIRES: empty).
  absl::StatusOr<std::vector<Started>> Join(int node, core::NodeSpec spec, double t);
  void Remove(int node);

  // Pod `id` arrives and is tried at once: it, if it started (else it waits).
  absl::StatusOr<std::vector<Started>> Arrive(int64_t id, const core::PodShape& shape,
                                              const std::string& gpu_spec, int32_t priority,
                                              double t);
  // Pod `id` ended: the waiting pods its room lets start.
  absl::StatusOr<std::vector<Started>> Depart(int64_t id, double t);
  // A drain's move of running pod `id` to churn's node `node`: false when it does not fit there
  // (nothing changed).
  absl::StatusOr<bool> MoveTo(int64_t id, int node, double t, core::Placement* placement);

 private:
  explicit PolicyPlacer(std::unique_ptr<sched::Scheduler> scheduler)
      : scheduler_(std::move(scheduler)) {}
  // Runs the scheduler's cycles and returns what they started (Internal on a policy error).
  absl::StatusOr<std::vector<Started>> Cycle(double t);
  std::string NodeName(int node) const;

  std::unique_ptr<sched::Scheduler> scheduler_;
  std::vector<std::string> name_of_;  // by churn's node index ("" = not in the state)
  std::vector<int> node_of_;          // by slot
};

}  // namespace seedance::clusterscale::internal

#endif  // SEEDANCE_SRC_CLUSTERSCALE_POLICY_PLACER_H_
