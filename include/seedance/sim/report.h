// Results of many simulator runs: summaries (mean and sample standard deviation over seeds),
// the JSON document, the terminal table and the offline HTML report.
//
// JSON layout: {"policies": [{"name": "fgd", "summary": {KEY: {"mean": x, "sd": y}, ...},
// "runs": [...]}, ...], "meta": {...}} where the summary keys are unalloc_gpu_pct_at_100,
// unalloc_gpu_pct_at_130, frag_ratio_pct_at_90 (fill) or unalloc_gpu_pct_steady,
// queue_delay_p50_s, queue_delay_p99_s (churn, replay).
// Thread-safety: pure functions.
#ifndef SEEDANCE_SIM_REPORT_H_
#define SEEDANCE_SIM_REPORT_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "seedance/sim/simulator.h"

namespace seedance::sim {

struct PolicyRuns {
  std::string name;
  std::vector<RunResult> runs;  // one per seed
};

struct MeanSd {
  double mean = 0;
  double sd = 0;  // sample standard deviation; 0 for one run
};
MeanSd Summarize(const std::vector<double>& values);

struct ReportMeta {
  std::string nodes_source;
  std::string pods_source;
  Mode mode = Mode::kFill;
  SimOptions options;
  std::vector<uint64_t> seeds;
  double total_wall_s = 0;
};

nlohmann::json ToJson(const std::vector<PolicyRuns>& results, const ReportMeta& meta);
// Fixed-width table for a terminal.
std::string RenderTable(const std::vector<PolicyRuns>& results, const ReportMeta& meta);
// Self-contained HTML (inline SVG, no scripts or network) with the table and the curves.
std::string RenderHtml(const std::vector<PolicyRuns>& results, const ReportMeta& meta);

}  // namespace seedance::sim

#endif  // SEEDANCE_SIM_REPORT_H_
