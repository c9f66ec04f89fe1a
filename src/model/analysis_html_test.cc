#include "seedance/model/analysis_html.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "seedance/base/text.h"

namespace seedance::model {
namespace {

constexpr char kHostile[] = "<script>alert(1)</script>";

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// h1 = x W1 ("first"); h2 = h1 W2 (a hostile name); y = (h2 + h1) W3 ("last"): three layers, an
// edge that skips one (first -> last through the Add), and a classifier output [4, 5].
Graph ThreeLayers() {
  Graph g;
  g.source = "three";
  g.opset = 17;
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0, 1);
  auto weight = [&](const char* name, int64_t rows, int64_t cols) {
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (float& v : w) v = n(rng);
    g.initializers[name] = Tensor::From<float>({rows, cols}, w);
  };
  weight("W1", 8, 8);
  weight("W2", 8, 8);
  weight("W3", 8, 5);
  g.inputs.push_back({"x", DataType::kFloat, {4, 8}, {"", ""}, true});
  g.outputs.push_back({"y", DataType::kFloat, {4, 5}, {"", ""}, true});
  g.nodes.push_back({"first", "MatMul", {"x", "W1"}, {"h1"}, {}});
  g.nodes.push_back({kHostile, "MatMul", {"h1", "W2"}, {"h2"}, {}});
  g.nodes.push_back({"skip", "Add", {"h2", "h1"}, {"h3"}, {}});
  g.nodes.push_back({"last", "MatMul", {"h3", "W3"}, {"y"}, {}});
  return g;
}

class AnalysisHtmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    for (int s = 0; s < 4; ++s) {
      std::vector<float> x(32);
      for (float& v : x) v = u(rng);
      samples_.push_back({{"x", Tensor::From<float>({4, 8}, x)}});
    }
    AnalyzeOptions ao;
    ao.formats = {NumericFormat::kFp16, NumericFormat::kInt8};
    absl::StatusOr<Analysis> a = Analyze(graph_, samples_, ao);
    ASSERT_TRUE(a.ok()) << a.status();
    analysis_ = *a;
    settings_.model = "three.onnx";
    settings_.error_graph.measure = false;
  }

  std::string Render() {
    absl::StatusOr<ErrorGraph> eg = BuildErrorGraph(graph_, samples_, settings_.error_graph);
    EXPECT_TRUE(eg.ok()) << eg.status();
    error_graph_ = *eg;
    return RenderAnalysisHtml(analysis_, error_graph_, settings_);
  }

  // The opening tag of the arrow from `from` to `to`, as the page writes it.
  static std::string EdgeTag(bool on_path, const std::string& from, const std::string& to) {
    return std::string("<g class=\"edge") + (on_path ? " on-path" : "") + "\" data-from=\"" +
           base::HtmlEscape(from) + "\" data-to=\"" + base::HtmlEscape(to) + "\">";
  }

  Graph graph_ = ThreeLayers();
  std::vector<TensorMap> samples_;
  Analysis analysis_;
  ErrorGraph error_graph_;
  AnalysisPageSettings settings_;
};

TEST_F(AnalysisHtmlTest, IsOneWellFormedPageWithoutScriptsOrExternalFiles) {
  const std::string html = Render();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
  EXPECT_EQ(Count(html, "<svg"), 1u);
  EXPECT_EQ(Count(html, "</svg>"), 1u);
  EXPECT_LT(html.find("<svg"), html.find("</svg>"));
  EXPECT_EQ(Count(html, "<g "), Count(html, "</g>"));
  EXPECT_EQ(Count(html, "<table"), Count(html, "</table>"));
  EXPECT_EQ(Count(html, "<tr"), Count(html, "</tr>"));
  EXPECT_EQ(Count(html, "<script"), 0u);
  EXPECT_EQ(Count(html, "src="), 0u);
  EXPECT_EQ(Count(html, "<link"), 0u);
  EXPECT_EQ(Count(html, "@import"), 0u);
  EXPECT_EQ(Count(html, "url(http"), 0u);
}

TEST_F(AnalysisHtmlTest, HoldsEveryLayerTheSettingsAndTheSampleCount) {
  const std::string html = Render();
  for (const LayerAnalysis& la : analysis_.layers) {
    EXPECT_NE(html.find(base::HtmlEscape(la.layer.node)), std::string::npos) << la.layer.node;
  }
  ASSERT_EQ(analysis_.layers.size(), 3u);
  EXPECT_NE(html.find("<td class=\"name\">first</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>samples</th><td>4 (drawn)</td>"), std::string::npos);
  EXPECT_NE(html.find("three.onnx"), std::string::npos);
  EXPECT_NE(html.find("<th>fp16</th><th>int8</th>"), std::string::npos);
  EXPECT_NE(html.find("all layers: top-1 agreement"), std::string::npos);
  EXPECT_NE(html.find("weights rounded to int8 per output channel"), std::string::npos);
}

TEST_F(AnalysisHtmlTest, HostileNamesAreEscapedEverywhere) {
  settings_.model = std::string("m\x1b[31m<b>.onnx");
  const std::string html = Render();
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(html.find('\x1b'), std::string::npos);
  // In the table, the box's title and text, and the edges' attributes.
  EXPECT_GE(Count(html, "&lt;script&gt;alert(1)&lt;/script&gt;"), 4u);
}

TEST_F(AnalysisHtmlTest, MarksTheMostSensitivePathAndWeightsEdgesByGain) {
  const std::string html = Render();
  const std::vector<std::string>& path = error_graph_.most_sensitive_path;
  ASSERT_GE(path.size(), 2u);
  EXPECT_EQ(path.back(), "output");
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    EXPECT_NE(html.find(EdgeTag(true, path[i], path[i + 1])), std::string::npos)
        << path[i] << " -> " << path[i + 1];
  }
  EXPECT_EQ(Count(html, "<g class=\"edge on-path\""), path.size() - 1);
  // Every kept edge is drawn, labelled with its gain; those off the path are not marked.
  ASSERT_GE(error_graph_.edges.size(), 3u);  // first -> hostile, first -> last, hostile -> last
  for (const ErrorEdge& e : error_graph_.edges) {
    bool on = false;
    for (size_t i = 0; i + 1 < path.size(); ++i)
      on = on || (path[i] == e.from && path[i + 1] == e.to);
    EXPECT_NE(html.find(EdgeTag(on, e.from, e.to)), std::string::npos) << e.from << " -> " << e.to;
  }
  EXPECT_EQ(Count(html, "<g class=\"edge"), error_graph_.edges.size() + 1);
  EXPECT_NE(html.find("<g class=\"layer on-path\">"), std::string::npos);
  EXPECT_NE(html.find("stroke-width=\"6.00\""), std::string::npos);  // the largest gain
}

TEST_F(AnalysisHtmlTest, PrunedEdgesAreNotDrawn) {
  settings_.error_graph.prune_below = 1e9;
  const std::string html = Render();
  EXPECT_TRUE(error_graph_.edges.empty());
  EXPECT_EQ(error_graph_.pruned_edges, 3u);
  // Only the path's hop to the output is left.
  EXPECT_EQ(Count(html, "<g class=\"edge"), 1u);
  EXPECT_NE(html.find("3 edge(s) with gain below 1e+09 are not drawn"), std::string::npos);
}

TEST_F(AnalysisHtmlTest, ColoursCellsBySqnr) {
  settings_.good_sqnr_db = -1e9;
  std::string html = Render();
  EXPECT_EQ(Count(html, "<td class=\"bad\">") + Count(html, "<td class=\"fair\">"), 0u);
  EXPECT_GT(Count(html, "<td class=\"good\">"), 6u);
  settings_.good_sqnr_db = 2e9;
  settings_.poor_sqnr_db = 1e9;
  html = Render();
  EXPECT_EQ(Count(html, "<td class=\"good\">") + Count(html, "<td class=\"fair\">"), 0u);
  EXPECT_GT(Count(html, "<td class=\"bad\">"), 6u);
}

TEST_F(AnalysisHtmlTest, WithoutAnErrorGraphSaysWhyAndStillHoldsTheTable) {
  settings_.error_graph_unavailable = "no derivative rule for <Foo>";
  const std::string html = RenderAnalysisHtml(analysis_, ErrorGraph{}, settings_);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("Not drawn: no derivative rule for &lt;Foo&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"name\">last</td>"), std::string::npos);
}

}  // namespace
}  // namespace seedance::model
