// Cost-savings analysis of a resource profile (`seedance analyze --report cost-savings`).
//
// From a telemetry::Profile and a price table, Analyze finds:
//   - idle nodes: every GPU of the node below idle_gpu_util_pct for at least idle_window_s
//     continuously, and no pending pod that could run there (its GPU model matches);
//   - under-used GPUs (allocated, mean utilisation below underused_gpu_util_pct) and fragmented
//     GPUs (partly allocated to GPU-sharing pods, leaving a remainder);
//   - pods whose CPUs and GPUs sit on different NUMA nodes;
//   - a consolidation plan computed with the `sched` library: pods are re-placed with a
//     registered placement policy (default bestfit) on a core::ClusterState built from the
//     profile, with extra Filter/Reserve plugins that respect the GPU model, keep multi-GPU pods
//     on one NUMA node and NVLink clique when they had that, and cap each target GPU's projected
//     utilisation. Each node whose pods all fit elsewhere is freed; nodes that received pods are
//     never freed afterwards (no chains of moves);
//   - money: spend now, spend after the plan and the monthly saving from the price table.
// Deterministic: same profile and options, same report.
//
// Thread-safety: pure function over values.
#ifndef SEEDANCE_COST_ANALYZE_H_
#define SEEDANCE_COST_ANALYZE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/cost/prices.h"
#include "seedance/telemetry/profile.h"

namespace seedance::cost {

struct AnalyzeOptions {
  // Idle node: all GPUs below this utilisation ...
  double idle_gpu_util_pct = 15;
  // ... for at least this long, continuously.
  double idle_window_s = 60;
  // An allocated GPU whose mean utilisation is below this is under-used.
  double underused_gpu_util_pct = 30;
  // Only nodes whose mean GPU utilisation is below this are considered for draining.
  double drain_max_gpu_util_pct = 40;
  // A move may not raise a target GPU's projected mean utilisation above this.
  double target_gpu_util_cap_pct = 80;
  // Placement policy of the sched registry used for re-placement.
  std::string policy = "bestfit";
};

struct IdleNode {
  int node = -1;
  double idle_s = 0;        // longest continuous stretch below the threshold
  double max_util_pct = 0;  // highest GPU utilisation within that stretch
  int pods = 0;
  double usd_per_month = 0;  // what the node costs
};

struct GpuFinding {
  int node = -1;
  int gpu = -1;
  enum class Kind { kUnderused, kFragmented } kind = Kind::kUnderused;
  double mean_util_pct = 0;
  int32_t allocated_milli = 0;  // of 1000
};

struct NumaMismatch {
  int node = -1;
  std::string pod;
  std::vector<int> cpu_numa_nodes;
  std::vector<int> gpu_numa_nodes;
};

struct Move {
  std::string pod;
  int from = -1;
  int to = -1;
  std::vector<int> gpu_ids;  // on the target
  bool nvlink = false;       // the pod's GPUs on the target are NVLink peers (multi-GPU pods)
  bool same_numa = false;    // the pod's GPUs on the target share one NUMA node
};

// One node freed by the plan and the moves that free it.
struct PlanStep {
  int node = -1;
  std::vector<Move> moves;
  double usd_per_month = 0;  // saving of freeing the node
  bool idle = false;         // the node was idle (see IdleNode)
};

struct Report {
  std::vector<IdleNode> idle_nodes;
  std::vector<GpuFinding> gpu_findings;
  std::vector<NumaMismatch> numa_mismatches;
  std::vector<PlanStep> plan;
  std::vector<std::string> warnings;  // e.g. GPU models without a price
  double spend_usd_per_month = 0;
  double spend_after_usd_per_month = 0;
  double saving_usd_per_month = 0;
  double mean_gpu_util_pct = 0;  // over all GPUs and samples; NaN when nothing was measured
  int gpus = 0;
  int gpus_freed = 0;
  double hours_per_month = 730;
  std::string price_source;
  AnalyzeOptions options;
};

// schema_version of RenderJson's document.
inline constexpr char kAnalyzeSchemaVersion[] = "analyze/v1";

// InvalidArgument for a profile without samples (no plan from no data) and for options outside
// their ranges (percentages 0..100, idle_window_s >= 0, NaN anywhere). A node whose GPUs have no
// measured utilisation is never idle nor drained (a warning says so); undefined means are NaN.
[[nodiscard]] absl::StatusOr<Report> Analyze(const telemetry::Profile& profile,
                                             const PriceTable& prices,
                                             const AnalyzeOptions& options);

// "$1,530" (whole dollars, thousands separated).
std::string FormatUsd(double usd);

// Renderings of a report. Text lines follow the seed's style, e.g.
//   node-gpu-07: migrate 2 pods (llama-7b-infer-a, llama-7b-infer-b) to node-gpu-12 (NVLink,
//   same NUMA node); frees node-gpu-07, saves $1,530/month
// Names from the profile are stripped of control characters (base::ForTerminal).
std::string RenderText(const Report& report, const telemetry::Profile& profile);
// Starts with base::JsonHeader(kAnalyzeSchemaVersion); undefined values (a mean over no data)
// are null; invalid UTF-8 is written as U+FFFD.
std::string RenderJson(const Report& report, const telemetry::Profile& profile);
// Self-contained HTML: summary, per-node GPU utilisation heat map over time, the plan. Every
// string is escaped for its context (base::HtmlEscape in text, base::JsonForScript in <script>).
std::string RenderHtml(const Report& report, const telemetry::Profile& profile);

}  // namespace seedance::cost

#endif  // SEEDANCE_COST_ANALYZE_H_
