// Results of many simulator runs: summaries (mean and sample standard deviation over seeds),
// the JSON document, the CSV table of runs, the terminal table and the offline HTML report.
//
// JSON layout (schema "simulate/v1", docs/simulator.md): {"schema_version", "seedance_version",
// "command_line" (base::JsonHeader), "meta": {...}, "policies": [{"name": "fgd", "summary":
// {KEY: {"mean": x, "sd": y, "runs": n}, ...}, "runs": [...]}, ...]} where the summary keys are
// unalloc_gpu_pct_at_100, unalloc_gpu_pct_at_130, frag_ratio_pct_at_90 (fill) or
// unalloc_gpu_pct_steady, queue_delay_p50_s, queue_delay_p99_s (churn, replay). A value the data
// leaves undefined (NaN in RunResult: a point the fill curve never reached, a delay percentile
// with no delays, the sd of one run, a meta option the mode does not use) is null, never 0.
// Names (policies, files) may hold any bytes: every writer repairs invalid UTF-8, the table
// strips control characters and the HTML escapes them.
// Thread-safety: pure functions.
#ifndef SEEDANCE_SIM_REPORT_H_
#define SEEDANCE_SIM_REPORT_H_

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "seedance/sim/simulator.h"

namespace seedance::sim {

struct PolicyRuns {
  std::string name;
  std::vector<RunResult> runs;  // one per seed
};

// Over the finite values only; NaN = undefined.
struct MeanSd {
  double mean = std::numeric_limits<double>::quiet_NaN();  // NaN when no value is finite
  double sd = std::numeric_limits<double>::quiet_NaN();    // sample sd; NaN below two values
  int n = 0;                                               // finite values summarised
};
MeanSd Summarize(const std::vector<double>& values);

inline constexpr char kSimulateSchema[] = "simulate/v1";

struct ReportMeta {
  std::string nodes_source;
  std::string pods_source;
  Mode mode = Mode::kFill;
  SimOptions options;
  std::vector<uint64_t> seeds;
  double total_wall_s = 0;
};

nlohmann::ordered_json ToJson(const std::vector<PolicyRuns>& results, const ReportMeta& meta);
// One row per policy x seed: policy,seed,mode, then the mode's per-run figures with their units
// in the column names (unalloc_gpu_pct_at_100, queue_delay_p50_s, ..., wall_s); an undefined
// value is an empty field.
std::string RenderCsv(const std::vector<PolicyRuns>& results, const ReportMeta& meta);
// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break; invalid UTF-8
// repaired.
std::string CsvField(std::string_view value);
// Fixed-width table for a terminal ("n/a" for undefined figures, "mean" alone for one run).
std::string RenderTable(const std::vector<PolicyRuns>& results, const ReportMeta& meta);
// Self-contained HTML (inline SVG, no scripts or network) with the table and the curves.
std::string RenderHtml(const std::vector<PolicyRuns>& results, const ReportMeta& meta);

}  // namespace seedance::sim

#endif  // SEEDANCE_SIM_REPORT_H_
