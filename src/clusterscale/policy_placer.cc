#include "policy_placer.h"

#include <utility>

#include "absl/strings/numbers.h"
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
  if (!sched::Registry::Builtins().Contains(options.policy)) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy: ", sched::Registry::Builtins()
                                     .Create(options.policy, sched::PolicyContext{})
                                     .status()
                                     .message()));
  }
  std::vector<core::PodSpec> resolved = trace;
  for (core::PodSpec& p : resolved) p.shape.gpu_model_mask = state->ModelMask(p.gpu_spec);
  // The simulator's scheduler options; ties go to the nodes in the order they joined.
  sched::SchedulerOptions so = sched::SimulationOptions();
  so.default_profile = {"default", options.policy, options.policy_params, {}};
  so.seed = options.seed;
  so.oracle_workload = sched::TypicalShapes(sched::CountShapes(resolved));
  so.elastic = true;  // the node groups grow and shrink
  absl::StatusOr<std::unique_ptr<sched::Scheduler>> scheduler =
      sched::Scheduler::Create(std::move(so), *std::move(state));
  if (!scheduler.ok()) return scheduler.status();
  if (absl::Status st = (*scheduler)->BuildDefaultProfile(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("policy: ", st.message()));
  }
  return std::unique_ptr<PolicyPlacer>(new PolicyPlacer(*std::move(scheduler)));
}

std::string PolicyPlacer::NodeName(int node) const {
  return static_cast<size_t>(node) < name_of_.size() ? name_of_[static_cast<size_t>(node)] : "";
}

absl::StatusOr<std::vector<PolicyPlacer::Started>> PolicyPlacer::Join(int node, core::NodeSpec spec,
                                                                      double t) {
  spec.name = absl::StrCat(spec.name, "-", node);
  const std::string name = spec.name;
  bool created = false;
  const absl::Status st = scheduler_->PutNode(std::move(spec), &created);
  SEEDANCE_CHECK(st.ok() && created)
      << "node " << node
      << " could not join: " << (st.ok() ? "a node of its name is there" : st.message());
  const int slot = scheduler_->state().FindNode(name);
  if (name_of_.size() <= static_cast<size_t>(node)) name_of_.resize(node + 1);
  if (node_of_.size() <= static_cast<size_t>(slot)) node_of_.resize(slot + 1, -1);
  name_of_[static_cast<size_t>(node)] = name;
  node_of_[static_cast<size_t>(slot)] = node;
  return Cycle(t);
}

void PolicyPlacer::Remove(int node) {
  const std::string name = NodeName(node);
  const absl::Status st =
      name.empty() ? absl::NotFoundError("not joined") : scheduler_->DeleteNode(name, false);
  SEEDANCE_CHECK(st.ok()) << "node " << node << " could not leave: " << st;
  name_of_[static_cast<size_t>(node)].clear();
  (void)scheduler_->TakeChanges();
}

absl::StatusOr<std::vector<PolicyPlacer::Started>> PolicyPlacer::Arrive(int64_t id,
                                                                        const core::PodShape& shape,
                                                                        const std::string& gpu_spec,
                                                                        int32_t priority,
                                                                        double t) {
  sched::PodInfo pod;
  pod.uid = absl::StrCat(id);
  pod.priority = priority;
  pod.gpu_spec = gpu_spec;
  pod.shape = shape;
  if (absl::Status st = scheduler_->SubmitPod(std::move(pod), t); !st.ok()) {
    return absl::InternalError(absl::StrCat("policy: pod ", id, ": ", st.message()));
  }
  return Cycle(t);
}

absl::StatusOr<std::vector<PolicyPlacer::Started>> PolicyPlacer::Depart(int64_t id, double t) {
  if (absl::Status st = scheduler_->DeletePod(absl::StrCat(id), t); !st.ok()) {
    return absl::InternalError(absl::StrCat("policy: pod ", id, ": ", st.message()));
  }
  return Cycle(t);
}

absl::StatusOr<bool> PolicyPlacer::MoveTo(int64_t id, int node, double t,
                                          core::Placement* placement) {
  const std::string uid = absl::StrCat(id);
  const absl::Status st = scheduler_->MoveTo(uid, NodeName(node), t);
  (void)scheduler_->TakeChanges();
  if (absl::IsFailedPrecondition(st)) return false;
  if (!st.ok()) return absl::InternalError(absl::StrCat("policy: pod ", id, ": ", st.message()));
  *placement = scheduler_->ledger().Find(uid)->placement;
  return true;
}

absl::StatusOr<std::vector<PolicyPlacer::Started>> PolicyPlacer::Cycle(double t) {
  scheduler_->RunCycles(t);
  if (scheduler_->attempts_error() != 0) {
    return absl::InternalError("policy: a scheduling attempt failed with an error");
  }
  std::vector<Started> started;
  for (const sched::Change& c : scheduler_->TakeChanges()) {
    if (c.kind != sched::Change::kPodBound) continue;
    const sched::PodInfo* pod = scheduler_->ledger().Find(c.key);
    int64_t id = 0;
    if (pod == nullptr || !absl::SimpleAtoi(c.key, &id)) {
      return absl::InternalError(absl::StrCat("policy: bound pod ", c.key, " is not churn's"));
    }
    started.push_back({id, node_of_.at(static_cast<size_t>(pod->placement.node)), pod->placement});
  }
  return started;
}

}  // namespace seedance::clusterscale::internal
