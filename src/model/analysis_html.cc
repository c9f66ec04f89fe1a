// The HTML page of `seedance model analyze` (analysis_html.h).
#include "seedance/model/analysis_html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "seedance/base/text.h"
#include "seedance/model/tensor.h"

namespace seedance::model {
namespace {

// The SVG's geometry, in pixels: boxes of kBoxW x kBoxH, kStep apart vertically.
constexpr double kLeft = 20, kTop = 20, kBoxW = 340, kBoxH = 40, kStep = 76;
// Edges' stroke widths span kMinWidth (the smallest gain drawn) to kMaxWidth (the largest).
constexpr double kMinWidth = 1, kMaxWidth = 6;
constexpr size_t kBoxNameBytes = 46;  // a longer name is clipped in its box (full in its title)

// A string from the model or the command line, made safe for HTML text and attribute values.
std::string Esc(const std::string& s) { return base::HtmlEscape(base::ForTerminal(s)); }

std::string Db(double v) {
  return std::isfinite(v) ? absl::StrFormat("%.2f", v) : std::string(v > 0 ? "exact" : "-inf");
}

std::string Gain(double g) { return absl::StrFormat("%.3g", g); }

const char* SqnrClass(double db, const AnalysisPageSettings& s) {
  if (std::isnan(db)) return "bad";
  if (db >= s.good_sqnr_db) return "good";
  return db < s.poor_sqnr_db ? "bad" : "fair";
}

std::string Settings(const Analysis& a, const ErrorGraph& g, const AnalysisPageSettings& s) {
  std::vector<std::string> formats;
  for (NumericFormat f : a.formats) formats.push_back(FormatName(f));
  std::string html = "<table class=\"settings\">\n";
  auto row = [&html](const std::string& k, const std::string& v) {
    absl::StrAppend(&html, "<tr><th>", k, "</th><td>", v, "</td></tr>\n");
  };
  row("model", Esc(s.model));
  row("samples", absl::StrCat(a.samples, " (", Esc(s.samples_from), ")"));
  row("formats", Esc(absl::StrJoin(formats, ", ")));
  row("activations", s.weights_only ? "FP32" : "in the same format as the weights");
  row("calibration", s.entropy          ? std::string("entropy (KL) threshold")
                     : s.percentile > 0 ? absl::StrCat("percentile ", s.percentile, " of |x|")
                                        : std::string("max |x|"));
  row("layers", absl::StrCat(a.layers.size()));
  if (!s.error_graph_unavailable.empty()) {
    row("error graph", "not built");
    return html + "</table>\n";
  }
  row("error graph",
      absl::StrCat("weights rounded to ", Esc(FormatName(s.error_graph.format)),
                   s.error_graph.per_channel_weights ? " per output channel" : " per tensor",
                   "; first-order prediction (FP64 tangents) over ", g.samples,
                   " samples; edges with gain below ", Gain(s.error_graph.prune_below), " pruned (",
                   g.pruned_edges, ")"));
  return html + "</table>\n";
}

std::string LayerTable(const Analysis& a, const ErrorGraph& g, const AnalysisPageSettings& s) {
  std::map<std::string, const LayerError*> predicted;
  for (const LayerError& e : g.layers) predicted[e.node] = &e;
  std::string html = "<table class=\"layers\">\n<tr><th>layer</th><th>op</th><th>weight</th>";
  for (NumericFormat f : a.formats) absl::StrAppend(&html, "<th>", Esc(FormatName(f)), "</th>");
  absl::StrAppend(&html, "<th>predicted (", Esc(FormatName(s.error_graph.format)),
                  ")</th><th>gain to output</th></tr>\n");
  for (const LayerAnalysis& la : a.layers) {
    absl::StrAppend(&html, "<tr><td class=\"name\">", Esc(la.layer.node), "</td><td>",
                    Esc(la.layer.op_type), "</td><td>", Esc(ShapeString(la.layer.weight_shape)),
                    "</td>");
    for (NumericFormat f : a.formats) {
      const FormatError& e = la.by_format.at(f);
      absl::StrAppend(&html, "<td class=\"", SqnrClass(e.output.metrics.sqnr_db, s), "\">",
                      Db(e.output.metrics.sqnr_db), " <small>(", Db(e.layer.sqnr_db),
                      ")</small></td>");
    }
    auto p = predicted.find(la.layer.node);
    if (p == predicted.end()) {
      absl::StrAppend(&html, "<td></td><td></td></tr>\n");
    } else {
      absl::StrAppend(&html, "<td class=\"", SqnrClass(p->second->predicted_sqnr_db, s), "\">",
                      Db(p->second->predicted_sqnr_db), "</td><td>", Gain(p->second->output_gain),
                      "</td></tr>\n");
    }
  }
  absl::StrAppend(&html, "<tr class=\"all\"><td colspan=\"3\">all layers</td>");
  for (NumericFormat f : a.formats) {
    const double db = a.all_layers.at(f).metrics.sqnr_db;
    absl::StrAppend(&html, "<td class=\"", SqnrClass(db, s), "\">", Db(db), "</td>");
  }
  absl::StrAppend(&html, "<td></td><td></td></tr>\n");
  if (!a.all_layers.empty() && !std::isnan(a.all_layers.begin()->second.top1_agreement)) {
    absl::StrAppend(&html, "<tr class=\"all\"><td colspan=\"3\">all layers: top-1 agreement</td>");
    for (NumericFormat f : a.formats) {
      absl::StrAppend(&html, "<td>",
                      absl::StrFormat("%.2f%%", 100 * a.all_layers.at(f).top1_agreement), "</td>");
    }
    absl::StrAppend(&html, "<td></td><td></td></tr>\n");
  }
  return html + "</table>\n";
}

// One edge of the drawing: box `from` to box `to` (indices; the output is the last box).
struct Arrow {
  size_t from, to;
  double gain;
  bool on_path;
  std::string from_name, to_name;
};

// The arrows: every kept edge, then the most sensitive path's last hop to the output.
std::vector<Arrow> Arrows(const ErrorGraph& g) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < g.layers.size(); ++i) index.emplace(g.layers[i].node, i);
  std::set<std::pair<std::string, std::string>> path;
  const std::vector<std::string>& p = g.most_sensitive_path;
  for (size_t i = 0; i + 1 < p.size(); ++i) path.insert({p[i], p[i + 1]});
  std::vector<Arrow> arrows;
  for (const ErrorEdge& e : g.edges) {
    auto f = index.find(e.from), t = index.find(e.to);
    if (f == index.end() || t == index.end()) continue;
    arrows.push_back({f->second, t->second, e.gain, path.count({e.from, e.to}) > 0, e.from, e.to});
  }
  if (p.size() >= 2 && p.back() == "output") {
    auto last = index.find(p[p.size() - 2]);
    if (last != index.end()) {
      arrows.push_back({last->second, g.layers.size(), g.layers[last->second].output_gain, true,
                        last->first, "output"});
    }
  }
  return arrows;
}

double BoxTop(size_t i) { return kTop + static_cast<double>(i) * kStep; }

std::string DrawArrow(const Arrow& a, double lo, double hi) {
  double width = (kMinWidth + kMaxWidth) / 2;
  if (hi > lo && a.gain > 0) {
    width = kMinWidth + (kMaxWidth - kMinWidth) *
                            std::clamp(std::log(a.gain / lo) / std::log(hi / lo), 0.0, 1.0);
  }
  std::string d, label;
  const double y1 = BoxTop(a.from) + kBoxH / 2, y2 = BoxTop(a.to) + kBoxH / 2;
  if (a.to == a.from + 1) {
    const double x = kLeft + kBoxW / 2;
    d = absl::StrFormat("M%.1f %.1f L%.1f %.1f", x, BoxTop(a.from) + kBoxH, x, BoxTop(a.to));
    label = absl::StrFormat("<text class=\"gain\" x=\"%.1f\" y=\"%.1f\">&#215;%s</text>", x + 8,
                            (BoxTop(a.from) + kBoxH + BoxTop(a.to)) / 2 + 4, Gain(a.gain));
  } else {  // a curve on the right of the boxes, wider the more boxes it passes
    const double x = kLeft + kBoxW, bulge = 40 + 30 * static_cast<double>(a.to - a.from);
    d = absl::StrFormat("M%.1f %.1f C%.1f %.1f %.1f %.1f %.1f %.1f", x, y1, x + bulge, y1,
                        x + bulge, y2, x, y2);
    label = absl::StrFormat("<text class=\"gain\" x=\"%.1f\" y=\"%.1f\">&#215;%s</text>",
                            x + 0.75 * bulge + 4, (y1 + y2) / 2 + 4, Gain(a.gain));
  }
  return absl::StrFormat(
      "<g class=\"edge%s\" data-from=\"%s\" data-to=\"%s\"><title>%s &#8594; %s: gain %s</title>"
      "<path d=\"%s\" stroke-width=\"%.2f\" marker-end=\"url(#%s)\"/>%s</g>\n",
      a.on_path ? " on-path" : "", Esc(a.from_name), Esc(a.to_name), Esc(a.from_name),
      Esc(a.to_name), Gain(a.gain), d, width, a.on_path ? "arrow-path" : "arrow", label);
}

std::string DrawBox(size_t i, const std::string& name, const std::string& sub, bool on_path,
                    const char* cls) {
  return absl::StrFormat(
      "<g class=\"%s%s\"><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
      "height=\"%.1f\" rx=\"4\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>"
      "<text class=\"sub\" x=\"%.1f\" y=\"%.1f\">%s</text></g>\n",
      cls, on_path ? " on-path" : "", Esc(name), kLeft, BoxTop(i), kBoxW, kBoxH, kLeft + 8,
      BoxTop(i) + 16, Esc(base::Clip(name, kBoxNameBytes)), kLeft + 8, BoxTop(i) + 32, sub);
}

std::string ErrorGraphSvg(const Analysis& a, const ErrorGraph& g) {
  std::map<std::string, const Layer*> layer;
  for (const LayerAnalysis& la : a.layers) layer[la.layer.node] = &la.layer;
  const std::vector<Arrow> arrows = Arrows(g);
  double lo = 0, hi = 0, right = kLeft + kBoxW + 20;
  for (const Arrow& ar : arrows) {
    if (ar.gain > 0) {
      lo = lo > 0 ? std::min(lo, ar.gain) : ar.gain;
      hi = std::max(hi, ar.gain);
    }
    if (ar.to != ar.from + 1) {
      right = std::max(right, kLeft + kBoxW + 70 + 30 * static_cast<double>(ar.to - ar.from));
    }
  }
  const std::set<std::string> on_path(g.most_sensitive_path.begin(), g.most_sensitive_path.end());
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "role=\"img\" aria-label=\"error-propagation graph\">\n<defs>"
      "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" "
      "markerHeight=\"6\" orient=\"auto\"><path d=\"M0 0 L10 5 L0 10 z\" fill=\"#888\"/></marker>"
      "<marker id=\"arrow-path\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" "
      "markerHeight=\"6\" orient=\"auto\"><path d=\"M0 0 L10 5 L0 10 z\" fill=\"#d62728\"/>"
      "</marker></defs>\n",
      right + 60, BoxTop(g.layers.size()) + kBoxH + kTop);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const LayerError& e = g.layers[i];
    auto l = layer.find(e.node);
    const std::string op = l == layer.end() ? "" : Esc(l->second->op_type);
    svg += DrawBox(i, e.node,
                   absl::StrCat(op, " &#183; predicted ", Db(e.predicted_sqnr_db),
                                " dB &#183; to output &#215;", Gain(e.output_gain)),
                   on_path.count(e.node) > 0, "layer");
  }
  svg += DrawBox(g.layers.size(), "model output", "the first graph output", true, "output");
  for (const Arrow& ar : arrows) svg += DrawArrow(ar, lo, hi);
  return svg + "</svg>\n";
}

// The error graph's heading, what it shows, and its drawing (or why there is none).
std::string GraphSection(const Analysis& a, const ErrorGraph& g, const AnalysisPageSettings& s) {
  std::string html = "<h2>Error-propagation graph</h2>\n";
  if (!s.error_graph_unavailable.empty()) {
    return absl::StrCat(html, "<p>Not drawn: ", Esc(s.error_graph_unavailable), "</p>\n");
  }
  std::string path;
  for (const std::string& n : g.most_sensitive_path) {
    absl::StrAppend(&path, path.empty() ? "" : " &#8594; ", Esc(n));
  }
  return absl::StrCat(
      html,
      "<p>Layers top to bottom in graph order. An arrow from layer i to layer j (the next layer "
      "on a path) is labelled with its gain, ||t_j|| / ||t_i||, the first-order growth of i's "
      "weight noise from i's output to j's; its width grows with the gain. ",
      g.pruned_edges, " edge(s) with gain below ", Gain(s.error_graph.prune_below),
      " are not drawn. In red, the most sensitive path (gain ", Gain(g.most_sensitive_path_gain),
      "): ", path, ".</p>\n", ErrorGraphSvg(a, g));
}

}  // namespace

std::string RenderAnalysisHtml(const Analysis& analysis, const ErrorGraph& graph,
                               const AnalysisPageSettings& settings) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Seedance model "
      "analyze: ",
      Esc(settings.model), "</title>\n", R"(<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 16px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}.settings th,.settings td,td.name{text-align:left}
td.name{font-family:monospace}small{color:#555}
td.good{background:#d9f2d0}td.fair{background:#fff1c2}td.bad{background:#f8d0d0}
tr.all td{font-weight:bold}
svg{border:1px solid #ddd;background:#fff}
svg text{font-family:monospace;font-size:12px;fill:#222}svg text.sub{font-size:10px;fill:#555}
svg text.gain{font-size:10px;fill:#444}
.layer rect,.output rect{fill:#eef3fb;stroke:#7a8ca8;stroke-width:1}
.layer.on-path rect,.output rect{fill:#fde8e8;stroke:#d62728;stroke-width:2}
.edge path{fill:none;stroke:#888}.edge.on-path path{stroke:#d62728}
.edge.on-path text.gain{fill:#d62728;font-weight:bold}
.legend span{display:inline-block;width:28px;height:12px;vertical-align:middle}
</style></head><body>
)",
      "<h1>Precision analysis: ", Esc(settings.model), "</h1>\n",
      Settings(analysis, graph, settings),
      "<h2>Per-layer SQNR</h2>\n<p>dB of the model's first output against FP32 over every "
      "sample, with that layer alone in the format (in brackets: of the layer's own output); "
      "then every layer at once. The predicted column is the error graph's first-order "
      "prediction for the layer's weights alone.</p>\n<p class=\"legend\"><span "
      "style=\"background:#d9f2d0\"></span> &#8805; ",
      Db(settings.good_sqnr_db), " dB <span style=\"background:#fff1c2\"></span> ",
      Db(settings.poor_sqnr_db), "&#8211;", Db(settings.good_sqnr_db),
      " dB <span style=\"background:#f8d0d0\"></span> &lt; ", Db(settings.poor_sqnr_db),
      " dB</p>\n", LayerTable(analysis, graph, settings), GraphSection(analysis, graph, settings),
      "</body></html>\n");
}

}  // namespace seedance::model
