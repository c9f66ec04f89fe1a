// Internal: churn's placement through a registered sched policy (ChurnOptions::policy). The
// policy decides on a ClusterState that mirrors the ready nodes: a node joins as a new slot and
// leaves as a dead one, pods are bound and released through the policy's Framework. Churn keeps
// its own NodeRooms and mirrors every placement made here onto them. Not thread-safe.
#ifndef SEEDANCE_SRC_CLUSTERSCALE_POLICY_PLACER_H_
#define SEEDANCE_SRC_CLUSTERSCALE_POLICY_PLACER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/framework.h"

namespace seedance::clusterscale::internal {

class PolicyPlacer {
 public:
  // The policy options.policy with options.policy_params; `trace` gives fgd its typical shapes.
  // Every group's GPU model is registered up front, so ModelMask knows them before any node of
  // the model has joined. InvalidArgument for an unknown policy or knob.
  static absl::StatusOr<std::unique_ptr<PolicyPlacer>> Create(
      const std::vector<NodeGroup>& groups, const std::vector<core::PodSpec>& trace,
      const ChurnOptions& options);

  // The model mask of a gpu_spec ("A|B"; empty = any) in this state's model ids.
  uint64_t ModelMask(const std::string& gpu_spec) const { return state_.ModelMask(gpu_spec); }

  // Churn's node `node` (its index) joins with `spec`; it leaves (REQUIRES: empty).
  void Join(int node, core::NodeSpec spec);
  void Remove(int node);

  void Arrived(const core::PodShape& pod) { framework_.NotifyArrival(pod); }
  // Binds `pod` where the policy chooses: churn's node index and the placement (its node field
  // is the state's slot, for Release), or -1 when no ready node takes it. Internal when the
  // policy fails (sched::Code::kError).
  absl::StatusOr<int> Place(const core::PodShape& pod, core::Placement* placement);
  // Binds `pod` on churn's node `node` (a drain's move): false when it does not fit there.
  absl::StatusOr<bool> PlaceOn(const core::PodShape& pod, int node, core::Placement* placement);
  void Release(const core::PodShape& pod, const core::Placement& placement);

 private:
  PolicyPlacer(core::ClusterState state, sched::Framework framework)
      : state_(std::move(state)), framework_(std::move(framework)) {}

  core::ClusterState state_;
  sched::Framework framework_;
  std::vector<int> slot_of_;  // by churn's node index; -1 = not in the state
  std::vector<int> node_of_;  // by slot
};

}  // namespace seedance::clusterscale::internal

#endif  // SEEDANCE_SRC_CLUSTERSCALE_POLICY_PLACER_H_
