// Text, JSON and HTML renderings of a cost-savings report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "seedance/base/build_info.h"
#include "seedance/base/text.h"
#include "seedance/cost/analyze.h"

namespace seedance::cost {
namespace {

using telemetry::Profile;

std::string Pct(double v) {
  return std::isfinite(v) ? absl::StrCat(std::llround(v), "%") : std::string("n/a");
}

// How a name from the input is shown: as it is (JSON, HTML escapes it later) or stripped of
// control characters (terminal text).
using NameFn = std::string (*)(const std::string&);
std::string Raw(const std::string& s) { return s; }
std::string Term(const std::string& s) { return base::ForTerminal(s); }

// A number for JSON: null when the data leaves it undefined (NaN).
nlohmann::ordered_json Num(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

std::string Plural(size_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// "(NVLink, same NUMA node)" or "" when nothing is known about the target GPUs' topology.
std::string Affinity(const std::vector<const Move*>& moves) {
  bool nvlink = true, numa = true, multi = false;
  for (const Move* m : moves) {
    if (m->gpu_ids.size() > 1) {
      multi = true;
      nvlink = nvlink && m->nvlink;
    }
    if (m->gpu_ids.empty()) continue;
    numa = numa && m->same_numa;
  }
  std::vector<std::string> parts;
  if (multi && nvlink) parts.push_back("NVLink");
  if (numa &&
      std::any_of(moves.begin(), moves.end(), [](const Move* m) { return !m->gpu_ids.empty(); })) {
    parts.push_back("same NUMA node");
  }
  return parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")");
}

std::string StepLine(const PlanStep& s, const Profile& p, NameFn show) {
  const std::string name = show(p.nodes[s.node].name);
  std::string what;
  if (s.moves.empty()) {
    what = s.idle ? "idle, no pods to move" : "no pods to move";
  } else {
    std::map<int, std::vector<const Move*>> by_target;
    for (const Move& m : s.moves) by_target[m.to].push_back(&m);
    std::vector<std::string> parts;
    for (const auto& [to, ms] : by_target) {
      std::vector<std::string> names;
      for (const Move* m : ms) names.push_back(show(m->pod));
      parts.push_back(absl::StrCat(by_target.size() > 1 ? absl::StrCat(ms.size(), " ") : "", "(",
                                   absl::StrJoin(names, ", "), ") to ", show(p.nodes[to].name),
                                   Affinity(ms)));
    }
    what = absl::StrCat("migrate ", Plural(s.moves.size(), "pod", "pods"),
                        by_target.size() > 1 ? ": " : " ", absl::StrJoin(parts, "; "));
  }
  return absl::StrCat(name, ": ", what, "; frees ", name, ", saves ", FormatUsd(s.usd_per_month),
                      "/month");
}

std::string ModelOf(const Profile& p, int n) {
  const auto& node = p.nodes[n];
  return node.gpus.empty()
             ? "no GPU"
             : absl::StrCat(node.gpus.size(), " x ", CanonicalGpuModel(node.GpuModel()));
}

std::string Join(const std::vector<int>& v) { return absl::StrJoin(v, ","); }

}  // namespace

std::string RenderText(const Report& r, const Profile& p) {
  std::string out;
  const double span = p.timestamps_s.empty() ? 0 : p.timestamps_s.back() + p.interval_s;
  absl::StrAppend(&out, "Cost savings: ", p.nodes.size(), " nodes, ", r.gpus, " GPUs, ",
                  p.num_samples(), " samples over ", std::llround(span), " s (", Term(p.source),
                  p.interrupted ? ", interrupted" : "", ")\n");
  absl::StrAppend(&out, "Mean GPU utilisation ", Pct(r.mean_gpu_util_pct),
                  ". Prices: ", Term(r.price_source), ", ", r.hours_per_month, " h/month\n");
  absl::StrAppend(&out, "Spend now ", FormatUsd(r.spend_usd_per_month), "/month; after the plan ",
                  FormatUsd(r.spend_after_usd_per_month), "/month; saving ",
                  FormatUsd(r.saving_usd_per_month), "/month (",
                  Plural(r.plan.size(), "node", "nodes"), ", ", r.gpus_freed, " GPUs freed)\n");
  for (const std::string& w : r.warnings) absl::StrAppend(&out, "warning: ", Term(w), "\n");

  absl::StrAppend(&out, "\nIdle nodes (every GPU < ", r.options.idle_gpu_util_pct,
                  "% for >= ", r.options.idle_window_s,
                  " s, no pending pod that fits): ", r.idle_nodes.size(), "\n");
  for (const IdleNode& i : r.idle_nodes) {
    absl::StrAppend(&out, "  ", Term(p.nodes[i.node].name), ": idle ", std::llround(i.idle_s),
                    " s (GPU max ", Pct(i.max_util_pct), "), ", Term(ModelOf(p, i.node)), ", ",
                    Plural(i.pods, "pod", "pods"), ", costs ", FormatUsd(i.usd_per_month),
                    "/month\n");
  }
  absl::StrAppend(&out, "\nConsolidation plan (", Term(r.options.policy),
                  " placement; GPU model, NUMA "
                  "and NVLink kept; target GPUs <= ",
                  r.options.target_gpu_util_cap_pct,
                  "% projected): ", Plural(r.plan.size(), "node", "nodes"), " freed\n");
  for (const PlanStep& s : r.plan) absl::StrAppend(&out, "  ", StepLine(s, p, Term), "\n");

  constexpr size_t kMaxListed = 20;
  for (auto kind : {GpuFinding::Kind::kUnderused, GpuFinding::Kind::kFragmented}) {
    std::vector<const GpuFinding*> f;
    for (const GpuFinding& g : r.gpu_findings) {
      if (g.kind == kind) f.push_back(&g);
    }
    const bool under = kind == GpuFinding::Kind::kUnderused;
    absl::StrAppend(&out, "\n",
                    under ? "Under-used GPUs (allocated, mean utilisation < "
                          : "Fragmented GPUs (partly allocated to GPU-sharing pods",
                    under ? absl::StrCat(r.options.underused_gpu_util_pct, "%)") : ")", ": ",
                    f.size(), "\n");
    for (size_t i = 0; i < f.size() && i < kMaxListed; ++i) {
      absl::StrAppend(
          &out, "  ", Term(p.nodes[f[i]->node].name), " GPU ", f[i]->gpu, ": mean ",
          Pct(f[i]->mean_util_pct), ", ", f[i]->allocated_milli, "/1000 allocated",
          under ? "" : absl::StrCat(", ", 1000 - f[i]->allocated_milli, " milli-GPU left over"),
          "\n");
    }
    if (f.size() > kMaxListed)
      absl::StrAppend(&out, "  ... and ", f.size() - kMaxListed, " more\n");
  }
  absl::StrAppend(
      &out, "\nPods with CPUs and GPUs on different NUMA nodes: ", r.numa_mismatches.size(), "\n");
  for (size_t i = 0; i < r.numa_mismatches.size() && i < kMaxListed; ++i) {
    const NumaMismatch& m = r.numa_mismatches[i];
    absl::StrAppend(&out, "  ", Term(p.nodes[m.node].name), ": pod ", Term(m.pod),
                    " has CPUs on NUMA ", Join(m.cpu_numa_nodes), " and GPUs on NUMA ",
                    Join(m.gpu_numa_nodes), "; pin its CPUs to NUMA ", Join(m.gpu_numa_nodes),
                    "\n");
  }
  if (r.numa_mismatches.size() > kMaxListed) {
    absl::StrAppend(&out, "  ... and ", r.numa_mismatches.size() - kMaxListed, " more\n");
  }
  return out;
}

std::string RenderJson(const Report& r, const Profile& p) {
  using json = nlohmann::ordered_json;
  json j = base::JsonHeader(kAnalyzeSchemaVersion);
  j["report"] = "cost-savings";
  j["nodes"] = p.nodes.size();
  j["gpus"] = r.gpus;
  j["samples"] = p.num_samples();
  j["source"] = p.source;
  j["price_source"] = r.price_source;
  j["hours_per_month"] = r.hours_per_month;
  j["mean_gpu_util_pct"] = Num(r.mean_gpu_util_pct);
  j["spend_usd_per_month"] = Num(r.spend_usd_per_month);
  j["spend_after_usd_per_month"] = Num(r.spend_after_usd_per_month);
  j["saving_usd_per_month"] = Num(r.saving_usd_per_month);
  j["gpus_freed"] = r.gpus_freed;
  j["options"] = {{"idle_gpu_util_pct", r.options.idle_gpu_util_pct},
                  {"idle_window_s", r.options.idle_window_s},
                  {"underused_gpu_util_pct", r.options.underused_gpu_util_pct},
                  {"drain_max_gpu_util_pct", r.options.drain_max_gpu_util_pct},
                  {"target_gpu_util_cap_pct", r.options.target_gpu_util_cap_pct},
                  {"policy", r.options.policy}};
  j["warnings"] = r.warnings;
  json idle = json::array();
  for (const IdleNode& i : r.idle_nodes) {
    idle.push_back({{"node", p.nodes[i.node].name},
                    {"idle_s", Num(i.idle_s)},
                    {"max_util_pct", Num(i.max_util_pct)},
                    {"pods", i.pods},
                    {"usd_per_month", Num(i.usd_per_month)}});
  }
  j["idle_nodes"] = std::move(idle);
  json plan = json::array();
  for (const PlanStep& s : r.plan) {
    json moves = json::array();
    for (const Move& m : s.moves) {
      moves.push_back({{"pod", m.pod},
                       {"from", p.nodes[m.from].name},
                       {"to", p.nodes[m.to].name},
                       {"gpu_ids", m.gpu_ids},
                       {"nvlink", m.nvlink},
                       {"same_numa", m.same_numa}});
    }
    plan.push_back({{"frees", p.nodes[s.node].name},
                    {"idle", s.idle},
                    {"usd_per_month", Num(s.usd_per_month)},
                    {"moves", std::move(moves)},
                    {"line", StepLine(s, p, Raw)}});
  }
  j["plan"] = std::move(plan);
  json gpus = json::array();
  for (const GpuFinding& g : r.gpu_findings) {
    gpus.push_back({{"node", p.nodes[g.node].name},
                    {"gpu", g.gpu},
                    {"kind", g.kind == GpuFinding::Kind::kUnderused ? "underused" : "fragmented"},
                    {"mean_util_pct", Num(g.mean_util_pct)},
                    {"allocated_milli", g.allocated_milli}});
  }
  j["gpu_findings"] = std::move(gpus);
  json numa = json::array();
  for (const NumaMismatch& m : r.numa_mismatches) {
    numa.push_back({{"node", p.nodes[m.node].name},
                    {"pod", m.pod},
                    {"cpu_numa_nodes", m.cpu_numa_nodes},
                    {"gpu_numa_nodes", m.gpu_numa_nodes}});
  }
  j["numa_mismatches"] = std::move(numa);
  return base::DumpJson(j, 2) + "\n";
}

std::string RenderHtml(const Report& r, const Profile& p) {
  using nlohmann::json;
  // Heat map data: one row per node (mean over its GPUs, or CPU utilisation for nodes without
  // GPUs), time bucketed into at most 120 columns so that the page stays small at 1,000 nodes.
  const size_t samples = p.num_samples();
  const size_t cols = std::min<size_t>(samples, 120);
  json rows = json::array();
  for (const auto& node : p.nodes) {
    json vals = json::array();
    for (size_t c = 0; c < cols; ++c) {
      const size_t a = c * samples / cols, b = std::max(a + 1, (c + 1) * samples / cols);
      double sum = 0;
      int n = 0;
      for (size_t i = a; i < b; ++i) {
        if (!node.gpus.empty()) {
          for (const auto& g : node.gpus) {
            if (i < g.util_pct.size() && !telemetry::IsMissing(g.util_pct[i])) {
              sum += g.util_pct[i];
              ++n;
            }
          }
        } else if (i < node.cpu_util_pct.size() && !telemetry::IsMissing(node.cpu_util_pct[i])) {
          sum += node.cpu_util_pct[i];
          ++n;
        }
      }
      vals.push_back(n ? std::llround(sum / n) : -1);
    }
    rows.push_back({{"name", node.name}, {"gpu", !node.gpus.empty()}, {"v", std::move(vals)}});
  }
  std::set<int> freed;
  for (const PlanStep& s : r.plan) freed.insert(s.node);
  std::set<int> idle;
  for (const IdleNode& i : r.idle_nodes) idle.insert(i.node);
  for (size_t n = 0; n < p.nodes.size(); ++n) {
    rows[n]["freed"] = freed.count(static_cast<int>(n)) > 0;
    rows[n]["idle"] = idle.count(static_cast<int>(n)) > 0;
  }
  auto esc = [](const std::string& s) { return base::HtmlEscape(s); };
  std::string plan_rows;
  for (const PlanStep& s : r.plan) plan_rows += "<li>" + esc(StepLine(s, p, Raw)) + "</li>\n";
  const double span = p.timestamps_s.empty() ? 0 : p.timestamps_s.back() + p.interval_s;
  std::string html = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>Seedance cost savings</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
.kpi{display:inline-block;margin:0 24px 12px 0}.kpi b{display:block;font-size:24px}
#heat{border:1px solid #ccc}li{margin:3px 0;font-family:monospace}
.legend span{display:inline-block;width:28px;height:12px}
</style></head><body>
<h1>Cost savings</h1>
<p>)" +
                     esc(absl::StrCat(p.nodes.size(), " nodes, ", r.gpus, " GPUs, ",
                                      p.num_samples(), " samples over ", std::llround(span),
                                      " s; source ", p.source, "; prices: ", r.price_source)) +
                     R"(</p>
<div class="kpi">spend now<b>)" +
                     FormatUsd(r.spend_usd_per_month) + R"(/mo</b></div>
<div class="kpi">after the plan<b>)" +
                     FormatUsd(r.spend_after_usd_per_month) + R"(/mo</b></div>
<div class="kpi">saving<b>)" +
                     FormatUsd(r.saving_usd_per_month) + R"(/mo</b></div>
<div class="kpi">idle nodes<b>)" +
                     std::to_string(r.idle_nodes.size()) + R"(</b></div>
<div class="kpi">nodes freed<b>)" +
                     std::to_string(r.plan.size()) + R"(</b></div>
<div class="kpi">mean GPU utilisation<b>)" +
                     Pct(r.mean_gpu_util_pct) + R"(</b></div>
<h2>Utilisation per node over time</h2>
<p>One row per node (mean of its GPUs; CPU for nodes without GPUs), time left to right.
Names in <span style="color:#c00">red</span> are idle, <s>struck</s> are freed by the plan.</p>
<div class="legend">0% <span style="background:#f7fbff"></span><span style="background:#9ecae1"></span><span style="background:#3182bd"></span><span style="background:#08306b"></span> 100% &nbsp; <span style="background:#eee"></span> no data</div>
<canvas id="heat"></canvas>
<h2>Consolidation plan</h2><ol>
)" + plan_rows + R"(</ol>
<script>
const rows = )" + base::JsonForScript(rows) +
                     R"(;
const cell = rows.length > 200 ? 2 : 8, label = 150, cw = Math.max(2, Math.floor(720 / Math.max(1, rows[0] ? rows[0].v.length : 1)));
const cv = document.getElementById('heat');
cv.width = label + cw * (rows[0] ? rows[0].v.length : 0) + 4; cv.height = cell * rows.length + 4;
const g = cv.getContext('2d');
function color(v) { if (v < 0) return '#eee'; const t = Math.min(1, v / 100);
  const a = [247, 251, 255], b = [8, 48, 107];
  return 'rgb(' + a.map((x, i) => Math.round(x + (b[i] - x) * t)).join(',') + ')'; }
g.font = (cell >= 8 ? 8 : 0) + 'px monospace';
rows.forEach((r, y) => {
  if (cell >= 8) { g.fillStyle = r.idle ? '#c00' : '#222'; g.fillText(r.name, 2, y * cell + cell - 1);
    if (r.freed) { g.fillRect(2, y * cell + cell / 2, g.measureText(r.name).width, 1); } }
  r.v.forEach((v, x) => { g.fillStyle = color(v); g.fillRect(label + x * cw, y * cell, cw, cell); });
});
</script></body></html>
)";
  return html;
}

}  // namespace seedance::cost
