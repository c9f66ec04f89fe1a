// Reports of autoscaled churn runs (`seedance simulate --mode autoscale`): one row per expander
// and seed, and per seed each expander's figures as a ratio to the first expander's.
#ifndef SEEDANCE_CLUSTERSCALE_REPORT_H_
#define SEEDANCE_CLUSTERSCALE_REPORT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/clusterscale/cluster_autoscaler.h"

namespace seedance::clusterscale {

// "ca-least-waste" or "seedance"; InvalidArgument naming the known ones otherwise.
absl::StatusOr<ExpanderKind> ParseExpander(std::string_view name);
std::string_view ExpanderName(ExpanderKind kind);

// The autoscaler `kind` names, on top of `base`: its expander, and for Seedance's the headroom
// guard on drains (the CA-like drains as CA does); base.prescale stays on for Seedance's only
// (CA has no pre-scaling); the CA-like places with base.ca_policy when one is set.
ChurnOptions ForAutoscaler(ChurnOptions base, ExpanderKind kind);

struct ChurnRun {
  ExpanderKind expander = ExpanderKind::kSeedance;
  uint64_t seed = 0;
  ChurnReport report;
};

// Runs churn for every seed and autoscaler (ForAutoscaler(base, kind)), seed-major in that
// order, on up to `jobs` threads (<= 0: one per core). The first error stops the set.
absl::StatusOr<std::vector<ChurnRun>> RunChurnSet(const std::vector<NodeGroup>& groups,
                                                  const std::vector<core::PodSpec>& pods,
                                                  const ChurnOptions& base,
                                                  const std::vector<ExpanderKind>& expanders,
                                                  const std::vector<uint64_t>& seeds, int jobs);

// What the table's columns count and in what unit (its second line).
inline constexpr const char* kChurnLegend =
    "pods_*: pods; nodes_*: nodes; pend_*_s: seconds from arrival to placement over the pods that "
    "arrived in the window, wait_p50_s over those that waited; gpu_h: GPU-hours; cost_usd: "
    "dollars of nodes paid";
// A fixed-width table of `runs` (in the order given), then per seed the ratios of every other
// expander's pending p99, GPU-hours paid, idle GPU-hours and cost to the first expander's.
// `inputs` (the run's load, window, placement...; "" for none) is its first line, then the
// legend.
std::string RenderChurnTable(const std::vector<ChurnRun>& runs, std::string_view inputs = "");
// {"schema_version": "simulate-autoscale/v1", ..., "runs": [{"expander", "seed", figures...}],
//  "ratios": [{"seed", "expander", "to", ratios...}]} (an undefined ratio, x / 0, is null).
nlohmann::ordered_json ChurnRunsToJson(const std::vector<ChurnRun>& runs);

}  // namespace seedance::clusterscale

#endif  // SEEDANCE_CLUSTERSCALE_REPORT_H_
