#include "seedance/clusterscale/report.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/base/build_info.h"
#include "seedance/base/parallel.h"

namespace seedance::clusterscale {

absl::StatusOr<ExpanderKind> ParseExpander(std::string_view name) {
  if (name == "ca-least-waste") return ExpanderKind::kCaLeastWaste;
  if (name == "seedance") return ExpanderKind::kSeedance;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown expander '", std::string(name), "' (known: ca-least-waste, seedance)"));
}

std::string_view ExpanderName(ExpanderKind kind) {
  return kind == ExpanderKind::kCaLeastWaste ? "ca-least-waste" : "seedance";
}

ChurnOptions ForAutoscaler(ChurnOptions base, ExpanderKind kind) {
  base.scale_up.expander = kind;
  base.drain_keeps_headroom = kind == ExpanderKind::kSeedance;
  base.prescale = base.prescale && kind == ExpanderKind::kSeedance;
  if (kind == ExpanderKind::kCaLeastWaste && !base.ca_policy.empty()) base.policy = base.ca_policy;
  return base;
}

absl::StatusOr<std::vector<ChurnRun>> RunChurnSet(const std::vector<NodeGroup>& groups,
                                                  const std::vector<core::PodSpec>& pods,
                                                  const ChurnOptions& base,
                                                  const std::vector<ExpanderKind>& expanders,
                                                  const std::vector<uint64_t>& seeds, int jobs) {
  std::vector<ChurnRun> runs;
  for (uint64_t seed : seeds) {
    for (ExpanderKind kind : expanders) runs.push_back({kind, seed, {}});
  }
  const absl::Status failed = base::ParallelFor(runs.size(), jobs, [&](size_t i) {
    ChurnOptions o = ForAutoscaler(base, runs[i].expander);
    o.seed = runs[i].seed;
    absl::StatusOr<ChurnReport> r = RunChurn(groups, pods, o);
    if (!r.ok()) return r.status();
    runs[i].report = *r;
    return absl::OkStatus();
  });
  if (!failed.ok()) return failed;
  return runs;
}

namespace {

// a / b, or NaN when b is 0 (a ratio to nothing is undefined, not infinite).
double Ratio(double a, double b) { return b != 0 ? a / b : std::nan(""); }

struct RatioRow {
  uint64_t seed;
  const ChurnRun* run;
  const ChurnRun* base;
};

// For each seed, every run after the first expander's of that seed, with that first run.
std::vector<RatioRow> RatioRows(const std::vector<ChurnRun>& runs) {
  std::vector<RatioRow> rows;
  for (const ChurnRun& r : runs) {
    auto base =
        std::find_if(runs.begin(), runs.end(), [&](const ChurnRun& b) { return b.seed == r.seed; });
    if (&*base != &r) rows.push_back({r.seed, &r, &*base});
  }
  return rows;
}

std::string Cell(double v, const absl::FormatSpec<double>& fmt) {
  return std::isnan(v) ? std::string("-") : absl::StrFormat(fmt, v);
}

}  // namespace

std::string RenderChurnTable(const std::vector<ChurnRun>& runs, std::string_view inputs) {
  std::string out;
  if (!inputs.empty()) absl::StrAppend(&out, std::string(inputs), "\n");
  // Each column names what it counts (pods_, nodes_) or its unit (_s seconds, _h hours, _usd).
  absl::StrAppend(&out, kChurnLegend, "\n\n");
  absl::StrAppendFormat(
      &out, "%-15s %6s %12s %10s %10s %11s %10s %11s %11s %10s %11s %13s %13s %10s %16s\n",
      "expander", "seed", "pods_arrived", "pend_p50_s", "pend_p99_s", "pods_waited", "wait_p50_s",
      "gpu_h_paid", "idle_gpu_h", "cost_usd", "nodes_added", "nodes_removed", "nodes_drained",
      "pods_moved", "pods_waiting_end");
  for (const ChurnRun& run : runs) {
    const ChurnReport& r = run.report;
    absl::StrAppendFormat(
        &out,
        "%-15s %6d %12d %10.1f %10.1f %11d %10.1f %11.1f %11.1f %10.0f %11d %13d %13d %10d %16d\n",
        ExpanderName(run.expander), run.seed, r.pods_arrived, r.pending_p50_s, r.pending_p99_s,
        r.pods_waited, r.waited_p50_s, r.gpu_hours_paid, r.idle_gpu_hours, r.cost_usd,
        r.nodes_added, r.nodes_removed, r.nodes_drained, r.pods_moved, r.pods_waiting_at_end);
  }
  const std::vector<RatioRow> rows = RatioRows(runs);
  if (rows.empty()) return out;
  absl::StrAppendFormat(&out, "\n%-32s %6s %10s %11s %11s %10s\n", "ratio", "seed", "pend_p99",
                        "gpu_h_paid", "idle_gpu_h", "cost");
  for (const RatioRow& row : rows) {
    const ChurnReport& a = row.run->report;
    const ChurnReport& b = row.base->report;
    absl::StrAppendFormat(&out, "%-32s %6d %10s %11s %11s %10s\n",
                          absl::StrCat(std::string(ExpanderName(row.run->expander)), " / ",
                                       std::string(ExpanderName(row.base->expander))),
                          row.seed, Cell(Ratio(a.pending_p99_s, b.pending_p99_s), "%.3f"),
                          Cell(Ratio(a.gpu_hours_paid, b.gpu_hours_paid), "%.3f"),
                          Cell(Ratio(a.idle_gpu_hours, b.idle_gpu_hours), "%.3f"),
                          Cell(Ratio(a.cost_usd, b.cost_usd), "%.3f"));
  }
  return out;
}

nlohmann::ordered_json ChurnRunsToJson(const std::vector<ChurnRun>& runs) {
  // NaN has no JSON form: an undefined ratio is null.
  auto number = [](double v) {
    return std::isnan(v) ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
  };
  nlohmann::ordered_json doc = base::JsonHeader("simulate-autoscale/v1");
  doc["runs"] = nlohmann::ordered_json::array();
  for (const ChurnRun& run : runs) {
    const ChurnReport& r = run.report;
    doc["runs"].push_back({{"expander", ExpanderName(run.expander)},
                           {"seed", run.seed},
                           {"pods_arrived", r.pods_arrived},
                           {"pods_never_fit", r.pods_never_fit},
                           {"pending_p50_s", r.pending_p50_s},
                           {"pending_p99_s", r.pending_p99_s},
                           {"gpu_hours_paid", r.gpu_hours_paid},
                           {"idle_gpu_hours", r.idle_gpu_hours},
                           {"cost_usd", r.cost_usd},
                           {"nodes_added", r.nodes_added},
                           {"nodes_removed", r.nodes_removed},
                           {"nodes_drained", r.nodes_drained},
                           {"pods_moved", r.pods_moved},
                           {"nodes_prescaled", r.nodes_prescaled},
                           {"pods_waited", r.pods_waited},
                           {"waited_p50_s", r.waited_p50_s},
                           {"pods_waiting_at_end", r.pods_waiting_at_end}});
  }
  doc["ratios"] = nlohmann::ordered_json::array();
  for (const RatioRow& row : RatioRows(runs)) {
    const ChurnReport& a = row.run->report;
    const ChurnReport& b = row.base->report;
    doc["ratios"].push_back({{"seed", row.seed},
                             {"expander", ExpanderName(row.run->expander)},
                             {"to", ExpanderName(row.base->expander)},
                             {"pending_p99", number(Ratio(a.pending_p99_s, b.pending_p99_s))},
                             {"gpu_hours_paid", number(Ratio(a.gpu_hours_paid, b.gpu_hours_paid))},
                             {"idle_gpu_hours", number(Ratio(a.idle_gpu_hours, b.idle_gpu_hours))},
                             {"cost_usd", number(Ratio(a.cost_usd, b.cost_usd))}});
  }
  return doc;
}

}  // namespace seedance::clusterscale
