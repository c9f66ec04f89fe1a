#include "seedance/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "seedance/base/build_info.h"
#include "seedance/base/text.h"

namespace seedance::sim {
namespace {

std::string Fmt(const char* fmt, double a, double b = 0) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, a, b);
  return buf;
}

using base::HtmlEscape;

// A JSON number, or null when the value is undefined (NaN) or not finite.
nlohmann::ordered_json Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}
// Rounded to 3 decimals for curves.
nlohmann::ordered_json Rounded(double v) {
  if (!std::isfinite(v)) return nullptr;
  return std::round(v * 1000) / 1000;
}

// "mean ± sd", "mean" for one run, "n/a" when undefined.
std::string FormatMeanSd(const char* fmt, const MeanSd& m) {
  if (!std::isfinite(m.mean)) return "n/a";
  if (!std::isfinite(m.sd)) return Fmt(fmt, m.mean);
  const std::string f = std::string(fmt) + " ± " + fmt;
  return Fmt(f.c_str(), m.mean, m.sd);
}

struct Column {
  std::string header;
  std::string json_key;  // empty: not a summary key
  double RunResult::*field;
  const char* fmt;
};

// With a topology template, every mode also reports how multi-GPU pods were placed.
void AddTopologyColumns(bool topology, std::vector<Column>* cols) {
  if (!topology) return;
  cols->push_back(
      {"best-bw multi-GPU %", "best_bandwidth_pct", &RunResult::best_bandwidth_pct, "%.1f"});
  cols->push_back(
      {"all-reduce slowdown", "allreduce_slowdown", &RunResult::allreduce_slowdown, "%.3f"});
  cols->push_back({"all-reduce ms", "allreduce_ms", &RunResult::allreduce_ms, "%.1f"});
  cols->push_back({"NUMA-local %", "numa_local_pct", &RunResult::numa_local_pct, "%.1f"});
}

std::vector<Column> BaseColumns(Mode mode) {
  if (mode == Mode::kFill) {
    return {{"unalloc GPU % @100", "unalloc_gpu_pct_at_100", &RunResult::unalloc_gpu_pct_at_100,
             "%.2f"},
            {"unalloc GPU % @130", "unalloc_gpu_pct_at_130", &RunResult::unalloc_gpu_pct_at_130,
             "%.2f"},
            {"frag ratio % @90", "frag_ratio_pct_at_90", &RunResult::frag_ratio_pct_at_90, "%.1f"}};
  }
  return {{"unalloc GPU % steady", "unalloc_gpu_pct_steady", &RunResult::unalloc_gpu_pct_steady,
           "%.2f"},
          {"queue p50 s", "queue_delay_p50_s", &RunResult::queue_delay_p50_s, "%.0f"},
          {"queue p99 s", "queue_delay_p99_s", &RunResult::queue_delay_p99_s, "%.0f"},
          {"idle GPU-h", "", &RunResult::idle_gpu_hours, "%.0f"},
          {"idle USD", "", &RunResult::idle_cost_usd, "%.0f"}};
}

std::vector<Column> Columns(const ReportMeta& meta) {
  std::vector<Column> cols = BaseColumns(meta.mode);
  AddTopologyColumns(meta.options.topology != core::TopologyTemplate::kNone, &cols);
  return cols;
}

std::vector<double> Values(const PolicyRuns& p, double RunResult::*field) {
  std::vector<double> v;
  for (const RunResult& r : p.runs) v.push_back(r.*field);
  return v;
}

const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> pts;
};

// A tick spacing of 1, 2 or 5 times a power of ten giving about `target` ticks.
double NiceStep(double range, int target) {
  const double raw = range / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

// One line chart of all series over [x0, x1] x [y0, y1] as inline SVG.
std::string RenderChart(const std::vector<Series>& series, double x0, double x1, double y0,
                        double y1, bool diagonal, const std::string& xlabel,
                        const std::string& ylabel) {
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  const double W = 720, H = 440, L = 60, R = 20, T = 20, B = 50;
  auto sx = [&](double x) { return L + (W - L - R) * (x - x0) / (x1 - x0); };
  auto sy = [&](double y) { return T + (H - T - B) * (1 - (y - y0) / (y1 - y0)); };
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
      << "' font-family='sans-serif' font-size='12'>";
  svg << "<defs><clipPath id='c" << static_cast<int>(x0) << "'><rect x='" << L << "' y='" << T
      << "' width='" << W - L - R << "' height='" << H - T - B << "'/></clipPath></defs>";
  svg << "<rect x='" << L << "' y='" << T << "' width='" << W - L - R << "' height='" << H - T - B
      << "' fill='none' stroke='#999'/>";
  const double ystep = NiceStep(y1 - y0, 6), xstep = NiceStep(x1 - x0, 8);
  for (double y = std::ceil(y0 / ystep) * ystep; y <= y1 + 1e-9; y += ystep) {
    svg << "<line x1='" << L << "' x2='" << W - R << "' y1='" << sy(y) << "' y2='" << sy(y)
        << "' stroke='#eee'/><text x='" << L - 6 << "' y='" << sy(y) + 4 << "' text-anchor='end'>"
        << Fmt("%g", y) << "</text>";
  }
  for (double x = std::ceil(x0 / xstep) * xstep; x <= x1 + 1e-9; x += xstep) {
    svg << "<line x1='" << sx(x) << "' x2='" << sx(x) << "' y1='" << T << "' y2='" << H - B
        << "' stroke='#f3f3f3'/><text x='" << sx(x) << "' y='" << H - B + 16
        << "' text-anchor='middle'>" << Fmt("%g", x) << "</text>";
  }
  svg << "<g clip-path='url(#c" << static_cast<int>(x0) << ")'>";
  if (diagonal) {  // the ideal: allocation equals arrivals
    const double lo = std::max(x0, y0), hi = std::min(x1, y1);
    svg << "<line x1='" << sx(lo) << "' y1='" << sy(lo) << "' x2='" << sx(hi) << "' y2='" << sy(hi)
        << "' stroke='#bbb' stroke-dasharray='4 4'/>";
  }
  for (size_t i = 0; i < series.size(); ++i) {
    svg << "<polyline fill='none' stroke-width='1.6' stroke='" << kColors[i % 10] << "' points='";
    for (const auto& [x, y] : series[i].pts) {
      if (x >= x0 - 1 && x <= x1 + 1) svg << sx(x) << "," << sy(y) << " ";
    }
    svg << "'><title>" << HtmlEscape(series[i].name) << "</title></polyline>";
  }
  svg << "</g>";
  for (size_t i = 0; i < series.size(); ++i) {
    svg << "<rect x='" << L + 12 << "' y='" << T + 10 + 16 * i << "' width='12' height='3' fill='"
        << kColors[i % 10] << "'/><text x='" << L + 30 << "' y='" << T + 15 + 16 * i << "'>"
        << HtmlEscape(series[i].name) << "</text>";
  }
  svg << "<text x='" << (L + W - R) / 2 << "' y='" << H - 10 << "' text-anchor='middle'>"
      << HtmlEscape(xlabel) << "</text>";
  svg << "<text transform='rotate(-90)' x='" << -(T + H - B) / 2 << "' y='16' text-anchor='middle'>"
      << HtmlEscape(ylabel) << "</text></svg>";
  return svg.str();
}

}  // namespace

MeanSd Summarize(const std::vector<double>& values) {
  MeanSd m;
  std::vector<double> v;
  for (double x : values) {
    if (std::isfinite(x)) v.push_back(x);
  }
  m.n = static_cast<int>(v.size());
  if (v.empty()) return m;
  double s = 0;
  for (double x : v) s += x;
  m.mean = s / static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - m.mean) * (x - m.mean);
    m.sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return m;
}

nlohmann::ordered_json ToJson(const std::vector<PolicyRuns>& results, const ReportMeta& meta) {
  using Json = nlohmann::ordered_json;
  const bool fill = meta.mode == Mode::kFill;
  const bool churn = meta.mode == Mode::kChurn;
  const bool replay = meta.mode == Mode::kReplay;
  const SimOptions& o = meta.options;
  Json doc = base::JsonHeader(kSimulateSchema);
  Json options = Json::object();
  for (const auto& [key, value] : o.policy_params) options[key] = value;
  doc["meta"] = {
      {"mode", std::string(ModeName(meta.mode))},
      {"nodes", meta.nodes_source},
      {"pods", meta.pods_source},
      {"seeds", meta.seeds},
      {"rng", fill ? Json(o.rng == RngKind::kReference ? "reference" : "seedance") : Json()},
      {"tune", fill ? Num(o.tune) : Json()},
      {"load", churn ? Num(o.load) : Json()},
      {"load_basis", churn ? Json(o.load_basis == LoadBasis::kExact ? "exact" : "means") : Json()},
      {"duration_h", churn || (replay && o.duration_h > 0) ? Num(o.duration_h) : Json()},
      {"warmup_h", !fill && o.warmup_h >= 0 ? Num(o.warmup_h) : Json()},
      {"time_scale", replay ? Num(o.time_scale) : Json()},
      {"policy_options", options},
      {"total_wall_s", Num(meta.total_wall_s)}};
  Json policies = Json::array();
  for (const PolicyRuns& p : results) {
    Json summary = Json::object();
    for (const Column& c : Columns(meta)) {
      if (c.json_key.empty()) continue;
      MeanSd m = Summarize(Values(p, c.field));
      summary[c.json_key] = {{"mean", Num(m.mean)}, {"sd", Num(m.sd)}, {"runs", m.n}};
    }
    Json runs = Json::array();
    for (const RunResult& r : p.runs) {
      Json j = {{"seed", r.seed},
                {"pods_arrived", r.pods_arrived},
                {"pods_scheduled", r.pods_scheduled},
                {"wall_s", Num(r.wall_s)}};
      if (meta.options.topology != core::TopologyTemplate::kNone) {
        j["multi_gpu_pods"] = r.topology.multi_gpu_pods;
        j["best_bandwidth_pct"] = Num(r.best_bandwidth_pct);
        j["allreduce_slowdown"] = Num(r.allreduce_slowdown);
        j["allreduce_ms"] = Num(r.allreduce_ms);
        j["numa_local_pct"] = Num(r.numa_local_pct);
      }
      if (fill) {
        j["pods_failed"] = r.pods_failed;
        j["unalloc_gpu_pct_at_100"] = Num(r.unalloc_gpu_pct_at_100);
        j["unalloc_gpu_pct_at_130"] = Num(r.unalloc_gpu_pct_at_130);
        j["frag_ratio_pct_at_90"] = Num(r.frag_ratio_pct_at_90);
        Json arrived = Json::array(), alloc = Json::array(), frag = Json::array();
        for (const CurvePoint& c : r.curve) {
          arrived.push_back(c.arrived_pct);
          alloc.push_back(Rounded(c.alloc_pct));
          frag.push_back(Rounded(c.frag_ratio_pct));
        }
        j["curve"] = {{"arrived_pct", arrived}, {"alloc_pct", alloc}, {"frag_ratio_pct", frag}};
      } else {
        j["unalloc_gpu_pct_steady"] = Num(r.unalloc_gpu_pct_steady);
        j["queue_delay_p50_s"] = Num(r.queue_delay_p50_s);
        j["queue_delay_p99_s"] = Num(r.queue_delay_p99_s);
        j["pods_waiting_at_end"] = r.pods_waiting_at_end;
        j["idle_gpu_hours"] = Num(r.idle_gpu_hours);
        j["idle_cost_usd"] = Num(r.idle_cost_usd);
        j["measured_hours"] = Num(r.measured_hours);
        j["offered_load_exact"] = churn ? Num(r.offered_load_exact) : Json();
        Json hours = Json::array(), unalloc = Json::array();
        for (const auto& [h, u] : r.unalloc_series) {
          hours.push_back(Rounded(h));
          unalloc.push_back(Rounded(u));
        }
        j["series"] = {{"hours", hours}, {"unalloc_gpu_pct", unalloc}};
      }
      runs.push_back(std::move(j));
    }
    policies.push_back({{"name", p.name}, {"summary", summary}, {"runs", runs}});
  }
  doc["policies"] = policies;
  return doc;
}

std::string RenderCsv(const std::vector<PolicyRuns>& results, const ReportMeta& meta) {
  const bool fill = meta.mode == Mode::kFill;
  struct Field {
    const char* header;
    std::function<std::string(const RunResult&)> value;
  };
  auto num = [](double v, const char* fmt) { return std::isfinite(v) ? Fmt(fmt, v) : ""; };
  auto integer = [](int64_t v) { return std::to_string(v); };
  std::vector<Field> fields = {
      {"pods_arrived", [&](const RunResult& r) { return integer(r.pods_arrived); }},
      {"pods_scheduled", [&](const RunResult& r) { return integer(r.pods_scheduled); }}};
  if (fill) {
    fields.push_back({"pods_failed", [&](const RunResult& r) { return integer(r.pods_failed); }});
    fields.push_back({"unalloc_gpu_pct_at_100",
                      [&](const RunResult& r) { return num(r.unalloc_gpu_pct_at_100, "%.6g"); }});
    fields.push_back({"unalloc_gpu_pct_at_130",
                      [&](const RunResult& r) { return num(r.unalloc_gpu_pct_at_130, "%.6g"); }});
    fields.push_back({"frag_ratio_pct_at_90",
                      [&](const RunResult& r) { return num(r.frag_ratio_pct_at_90, "%.6g"); }});
  } else {
    fields.push_back({"unalloc_gpu_pct_steady",
                      [&](const RunResult& r) { return num(r.unalloc_gpu_pct_steady, "%.6g"); }});
    fields.push_back({"queue_delay_p50_s",
                      [&](const RunResult& r) { return num(r.queue_delay_p50_s, "%.6g"); }});
    fields.push_back({"queue_delay_p99_s",
                      [&](const RunResult& r) { return num(r.queue_delay_p99_s, "%.6g"); }});
    fields.push_back({"pods_waiting_at_end",
                      [&](const RunResult& r) { return integer(r.pods_waiting_at_end); }});
    fields.push_back(
        {"idle_gpu_hours", [&](const RunResult& r) { return num(r.idle_gpu_hours, "%.6g"); }});
    fields.push_back(
        {"idle_cost_usd", [&](const RunResult& r) { return num(r.idle_cost_usd, "%.2f"); }});
    fields.push_back(
        {"measured_hours", [&](const RunResult& r) { return num(r.measured_hours, "%.6g"); }});
    if (meta.mode == Mode::kChurn) {
      fields.push_back({"offered_load_exact",
                        [&](const RunResult& r) { return num(r.offered_load_exact, "%.6g"); }});
    }
  }
  if (meta.options.topology != core::TopologyTemplate::kNone) {
    fields.push_back({"best_bandwidth_pct",
                      [&](const RunResult& r) { return num(r.best_bandwidth_pct, "%.6g"); }});
    fields.push_back({"allreduce_slowdown",
                      [&](const RunResult& r) { return num(r.allreduce_slowdown, "%.6g"); }});
    fields.push_back(
        {"allreduce_ms", [&](const RunResult& r) { return num(r.allreduce_ms, "%.6g"); }});
    fields.push_back(
        {"numa_local_pct", [&](const RunResult& r) { return num(r.numa_local_pct, "%.6g"); }});
  }
  fields.push_back({"wall_s", [&](const RunResult& r) { return num(r.wall_s, "%.6g"); }});
  std::string out = "policy,seed,mode";
  for (const Field& f : fields) absl::StrAppend(&out, ",", f.header);
  out += "\n";
  for (const PolicyRuns& p : results) {
    for (const RunResult& r : p.runs) {
      absl::StrAppend(&out, CsvField(p.name), ",", r.seed, ",", std::string(ModeName(meta.mode)));
      for (const Field& f : fields) absl::StrAppend(&out, ",", f.value(r));
      out += "\n";
    }
  }
  return out;
}

std::string CsvField(std::string_view v) {
  const std::string s = base::SanitizeUtf8(v);
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string RenderTable(const std::vector<PolicyRuns>& results, const ReportMeta& meta) {
  std::vector<Column> cols = Columns(meta);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"policy"};
  for (const Column& c : cols) header.push_back(c.header);
  if (meta.mode != Mode::kFill) header.push_back("waiting at end");
  header.push_back("wall s");
  rows.push_back(header);
  for (const PolicyRuns& p : results) {
    std::vector<std::string> row = {base::ForTerminal(base::Clip(p.name, 40))};
    for (const Column& c : cols) row.push_back(FormatMeanSd(c.fmt, Summarize(Values(p, c.field))));
    if (meta.mode != Mode::kFill) {
      std::vector<double> w;
      for (const RunResult& r : p.runs) w.push_back(static_cast<double>(r.pods_waiting_at_end));
      row.push_back(Fmt("%.0f", Summarize(w).mean));
    }
    double wall = 0;
    for (const RunResult& r : p.runs) wall += r.wall_s;
    row.push_back(Fmt("%.2f", wall));
    rows.push_back(row);
  }
  // Column widths by display length (the ± sign is one column wide but two bytes).
  auto width = [](const std::string& s) {
    size_t w = 0;
    for (unsigned char ch : s) w += (ch & 0xC0) != 0x80;
    return w;
  };
  std::vector<size_t> wid(header.size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) wid[i] = std::max(wid[i], width(r[i]));
  }
  std::ostringstream out;
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    for (size_t i = 0; i < rows[ri].size(); ++i) {
      const std::string& cell = rows[ri][i];
      const std::string pad(wid[i] - width(cell), ' ');
      out << (i == 0 ? cell + pad : pad + cell) << (i + 1 < rows[ri].size() ? "  " : "\n");
    }
    if (ri == 0) {
      size_t total = 0;
      for (size_t w : wid) total += w + 2;
      out << std::string(total - 2, '-') << "\n";
    }
  }
  return out.str();
}

std::string RenderHtml(const std::vector<PolicyRuns>& results, const ReportMeta& meta) {
  const bool fill = meta.mode == Mode::kFill;
  // Mean curve per policy over seeds.
  std::vector<Series> series;
  double xmax = 1, ymin = 100, ymax = 0;
  for (const PolicyRuns& p : results) {
    std::map<double, std::pair<double, int>> acc;
    for (const RunResult& r : p.runs) {
      if (fill) {
        for (const CurvePoint& c : r.curve) {
          auto& a = acc[c.arrived_pct];
          a.first += c.alloc_pct;
          a.second += 1;
        }
      } else {
        for (const auto& [h, u] : r.unalloc_series) {
          auto& a = acc[std::round(h * 1000) / 1000];
          a.first += u;
          a.second += 1;
        }
      }
    }
    Series s{p.name, {}};
    for (const auto& [x, a] : acc) {
      const double y = a.first / a.second;
      s.pts.push_back({x, y});
      xmax = std::max(xmax, x);
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
    series.push_back(std::move(s));
  }
  if (fill) {
    ymin = 0;
    ymax = std::max(ymax, 100.0);
  } else {
    ymin = std::max(0.0, std::floor(ymin - 1));
    ymax = std::min(100.0, std::ceil(ymax + 1));
    if (ymax <= ymin) ymax = ymin + 1;
  }
  std::string charts;
  if (fill) {
    charts += RenderChart(series, 0, xmax, 0, ymax, true, "arrived GPU demand (% of capacity)",
                          "allocated GPU (% of capacity)");
    // Zoom on where policies part: from 70% arrived demand, allocation above 75%.
    if (xmax > 70) {
      charts += RenderChart(series, 70, xmax, 75, std::max(100.0, ymax), true,
                            "arrived GPU demand (% of capacity), zoomed",
                            "allocated GPU (% of capacity)");
    }
  } else {
    charts += RenderChart(series, 0, xmax, ymin, ymax, false, "hours into the measured window",
                          "unallocated GPU (% of capacity)");
  }

  std::ostringstream html;
  html << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Seedance simulation report"
          "</title><style>body{font-family:sans-serif;margin:24px;color:#222}"
          "table{border-collapse:collapse;margin-right:24px}td,th{border:1px solid #ccc;"
          "padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
          ".row{display:flex;flex-wrap:wrap;align-items:flex-start}pre{color:#555}</style>"
          "</head><body><h1>Seedance simulation report</h1>";
  html << "<p>Mode <b>" << ModeName(meta.mode) << "</b>; nodes <code>"
       << HtmlEscape(meta.nodes_source) << "</code>; pods <code>" << HtmlEscape(meta.pods_source)
       << "</code>; " << meta.seeds.size() << " seed(s)";
  if (fill) html << "; tune " << meta.options.tune;
  if (fill && meta.options.rng == RngKind::kReference) html << "; reference (Go) random stream";
  if (meta.mode == Mode::kChurn) html << "; load " << meta.options.load;
  html << ".</p><div class='row'><table><tr><th>policy</th>";
  std::vector<Column> cols = Columns(meta);
  for (const Column& c : cols) html << "<th>" << HtmlEscape(c.header) << " (mean ± sd)</th>";
  html << "</tr>";
  for (const PolicyRuns& p : results) {
    html << "<tr><td>" << HtmlEscape(p.name) << "</td>";
    for (const Column& c : cols) {
      html << "<td>" << HtmlEscape(FormatMeanSd(c.fmt, Summarize(Values(p, c.field)))) << "</td>";
    }
    html << "</tr>";
  }
  html << "</table><div>" << charts << "</div></div>";
  html << "<p>"
       << (fill ? "Curves: GPU allocation ratio against arrived GPU demand, mean over "
                  "seeds. The dashed line is a cluster that places everything."
                : "Curves: unallocated GPU share over the measured window, mean over "
                  "seeds.")
       << "</p></body></html>\n";
  return html.str();
}

}  // namespace seedance::sim
