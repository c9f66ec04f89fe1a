// Test-only: the simulator's fill of the default trace for seed 42 as the same-decisions tests
// replay it through the server (issue 12's REST API, issue 15's extender): the pods in fill
// order with the placement the simulator gave each, the nodes in the simulator's tie-break
// order (register them in that order), and fgd's oracle (the replayed pods' typical shapes,
// models resolved against that order).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "decision_server_testing.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/framework.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::server::testing {

struct FillReference {
  std::vector<core::NodeSpec> nodes;    // the trace's order (placements index these)
  std::vector<core::NodeSpec> ordered;  // the simulator's tie-break order
  std::vector<core::PodSpec> pods;      // fill order
  std::vector<core::Placement> placements;
  sched::TargetWorkload oracle;
};

// NotFound when the trace is not under trace::DataDir().
inline absl::StatusOr<FillReference> LoadFillReference(const std::string& policy) {
  const std::string dir = trace::DataDir() + "/alibaba-gpu-v2023/csv/";
  auto nodes = trace::ReadNodeCsv(dir + "openb_node_list_gpu_node.csv");
  auto pods = trace::ReadPodCsv(dir + "openb_pod_list_default.csv");
  if (!nodes.ok() || !pods.ok()) return absl::NotFoundError("the Alibaba GPU trace is missing");
  sim::Workload w{*nodes, *pods, "openb_pod_list_default"};
  sim::SimOptions so;
  so.mode = sim::Mode::kFill;
  so.seed = 42;
  so.record_placements = true;
  absl::StatusOr<sim::FillPlan> plan = sim::PlanFill(w, so);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<sim::RunResult> run = sim::Run(w, policy, so);
  if (!run.ok()) return run.status();
  FillReference f;
  f.nodes = *std::move(nodes);
  f.pods = plan->pods;
  f.placements = run->placements;
  std::vector<int> order = plan->node_order;
  if (order.empty()) {
    order = sched::Framework::RandomNodeOrder(static_cast<int>(f.nodes.size()), 42);
  }
  for (int i : order) f.ordered.push_back(f.nodes[static_cast<size_t>(i)]);
  absl::StatusOr<sched::TargetWorkload> oracle =
      OracleFor(f.ordered, f.pods, so.typical_coverage_pct);
  if (!oracle.ok()) return oracle.status();
  f.oracle = *std::move(oracle);
  return f;
}

}  // namespace seedance::server::testing
