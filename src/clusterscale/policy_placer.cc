#include "policy_placer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/registry.h"

namespace seedance::clusterscale::internal {

absl::StatusOr<std::unique_ptr<PolicyPlacer>> PolicyPlacer::Create(
    const std::vector<NodeGroup>& groups, const std::vector<core::PodSpec>& trace,
    const ChurnOptions& options) {
  absl::StatusOr<core::ClusterState> state = core::ClusterState::Create({});
  if (!state.ok()) return state.status();
  // A node of every template, added and removed, puts each model in the model table.
  for (const NodeGroup& g : groups) {
    core::NodeSpec spec = g.node;
    spec.name = absl::StrCat("template-", g.name);
    absl::StatusOr<int> slot = state->AddNode(std::move(spec));
    if (!slot.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("groups: ", slot.status().message()));
    }
    if (absl::Status st = state->RemoveNode(*slot); !st.ok()) return st;
  }
  sched::PolicyContext ctx;
  std::vector<core::PodSpec> resolved = trace;
  for (core::PodSpec& p : resolved) p.shape.gpu_model_mask = state->ModelMask(p.gpu_spec);
  ctx.oracle_workload = sched::TypicalShapes(sched::CountShapes(resolved));
  ctx.params = options.policy_params;
  ctx.elastic = true;  // the node groups grow and shrink
  absl::StatusOr<sched::Profile> profile = sched::Registry::Builtins().Create(options.policy, ctx);
  if (!profile.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("policy: ", profile.status().message()));
  }
  sched::FrameworkOptions fo;
  fo.seed = options.seed;  // ties: index order, nodes in the order they joined
  sched::Framework framework(std::move(*profile), std::move(fo));
  return std::unique_ptr<PolicyPlacer>(new PolicyPlacer(std::move(*state), std::move(framework)));
}

void PolicyPlacer::Join(int node, core::NodeSpec spec) {
  spec.name = absl::StrCat(spec.name, "-", node);
  absl::StatusOr<int> slot = state_.AddNode(std::move(spec));
  SEEDANCE_CHECK(slot.ok()) << "node " << node << " could not join: " << slot.status();
  if (slot_of_.size() <= static_cast<size_t>(node)) slot_of_.resize(node + 1, -1);
  if (node_of_.size() <= static_cast<size_t>(*slot)) node_of_.resize(*slot + 1, -1);
  slot_of_[node] = *slot;
  node_of_[*slot] = node;
}

void PolicyPlacer::Remove(int node) {
  const absl::Status st = state_.RemoveNode(slot_of_.at(node));
  SEEDANCE_CHECK(st.ok()) << "node " << node << " could not leave: " << st;
  slot_of_[node] = -1;
}

absl::StatusOr<int> PolicyPlacer::Place(const core::PodShape& pod, core::Placement* placement) {
  const sched::Outcome out = framework_.Schedule(pod, state_);
  if (out.code == sched::Code::kError) return absl::InternalError("policy: " + out.reason);
  if (!out.ok()) return -1;
  *placement = out.placement;
  return node_of_.at(out.placement.node);
}

absl::StatusOr<bool> PolicyPlacer::PlaceOn(const core::PodShape& pod, int node,
                                           core::Placement* placement) {
  const sched::Outcome out = framework_.PlaceOn(pod, state_, slot_of_.at(node));
  if (out.code == sched::Code::kError) return absl::InternalError("policy: " + out.reason);
  if (!out.ok()) return false;
  *placement = out.placement;
  return true;
}

void PolicyPlacer::Release(const core::PodShape& pod, const core::Placement& placement) {
  framework_.Release(pod, placement, state_);
}

}  // namespace seedance::clusterscale::internal
