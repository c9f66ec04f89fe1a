// Tests of the report layer: summaries, the JSON layout, the terminal table and the offline
// HTML report, on hand-made results with known values.
#include "seedance/sim/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace seedance::sim {
namespace {

using nlohmann::json;

class ReportTest : public testing::Test {
 protected:
  // A fill run whose headline figures are offsets of `base`, with a three-point curve.
  static RunResult FillRun(const std::string& policy, uint64_t seed, double base) {
    RunResult r;
    r.policy = policy;
    r.seed = seed;
    r.mode = Mode::kFill;
    r.pods_arrived = 100;
    r.pods_scheduled = 90;
    r.pods_failed = 10;
    r.wall_s = 0.5;
    r.curve = {{0, 0.0, 0.0}, {50, 50.0, 20.0}, {100, 100.0 - base, 40.0}};
    r.unalloc_gpu_pct_at_100 = base;
    r.unalloc_gpu_pct_at_130 = base + 1;
    r.frag_ratio_pct_at_90 = base + 2;
    return r;
  }
  static RunResult ChurnRun(const std::string& policy, uint64_t seed, double base) {
    RunResult r;
    r.policy = policy;
    r.seed = seed;
    r.mode = Mode::kChurn;
    r.pods_arrived = 100;
    r.pods_scheduled = 95;
    r.pods_waiting_at_end = 5;
    r.unalloc_gpu_pct_steady = base;
    r.queue_delay_p50_s = 10 * base;
    r.queue_delay_p99_s = 100 * base;
    r.measured_hours = 6;
    r.idle_gpu_hours = base;
    r.idle_cost_usd = 2 * base;
    r.unalloc_series = {{0.0, base}, {3.0, base + 1}, {6.0, base - 1}};
    return r;
  }
  // Policy "a" with values {2, 4, 6, 8}: mean 5, sample sd sqrt(20/3); policy "b" one run.
  static std::vector<PolicyRuns> FillResults() {
    PolicyRuns a{"a", {}}, b{"b", {}};
    for (int i = 0; i < 4; ++i) a.runs.push_back(FillRun("a", 42 + i, 2.0 * (i + 1)));
    b.runs.push_back(FillRun("b", 42, 7.0));
    return {a, b};
  }
  static std::vector<PolicyRuns> ChurnResults() {
    PolicyRuns a{"a", {}}, b{"b", {}};
    for (int i = 0; i < 4; ++i) a.runs.push_back(ChurnRun("a", 42 + i, 2.0 * (i + 1)));
    b.runs.push_back(ChurnRun("b", 42, 7.0));
    return {a, b};
  }
  static ReportMeta Meta(Mode mode) {
    ReportMeta m;
    m.nodes_source = "nodes.csv";
    m.pods_source = "pods.csv";
    m.mode = mode;
    m.options.mode = mode;
    m.seeds = {42, 43, 44, 45};
    m.total_wall_s = 1.5;
    return m;
  }
  static std::set<std::string> Keys(const json& object) {
    std::set<std::string> keys;
    for (const auto& [k, v] : object.items()) keys.insert(k);
    return keys;
  }
  static std::string Lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  }
  static size_t Count(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t pos = haystack.find(needle); pos != std::string::npos;
         pos = haystack.find(needle, pos + 1)) {
      ++n;
    }
    return n;
  }
};

// ---------------------------------------------------------------- Summarize

TEST_F(ReportTest, SummarizeGivesMeanAndSampleSd) {
  const MeanSd m = Summarize({2, 4, 6, 8});
  EXPECT_DOUBLE_EQ(m.mean, 5.0);
  EXPECT_DOUBLE_EQ(m.sd, std::sqrt(20.0 / 3.0));  // n - 1 in the denominator
}

TEST_F(ReportTest, SummarizeOfOneValueHasZeroSd) {
  const MeanSd m = Summarize({3.25});
  EXPECT_DOUBLE_EQ(m.mean, 3.25);
  EXPECT_DOUBLE_EQ(m.sd, 0.0);
}

TEST_F(ReportTest, SummarizeOfNothingIsZero) {
  const MeanSd m = Summarize({});
  EXPECT_DOUBLE_EQ(m.mean, 0.0);
  EXPECT_DOUBLE_EQ(m.sd, 0.0);
}

TEST_F(ReportTest, SummarizeOfEqualValuesHasZeroSd) {
  const MeanSd m = Summarize({1.5, 1.5, 1.5});
  EXPECT_DOUBLE_EQ(m.mean, 1.5);
  EXPECT_DOUBLE_EQ(m.sd, 0.0);
}

// ---------------------------------------------------------------- JSON

TEST_F(ReportTest, JsonHasAPoliciesArrayOfNameSummaryRuns) {
  const json doc = ToJson(FillResults(), Meta(Mode::kFill));
  ASSERT_TRUE(doc.contains("policies"));
  ASSERT_TRUE(doc["policies"].is_array());
  ASSERT_EQ(doc["policies"].size(), 2u);
  EXPECT_EQ(doc["policies"][0]["name"], "a");
  EXPECT_EQ(doc["policies"][1]["name"], "b");
  for (const json& p : doc["policies"]) {
    EXPECT_EQ(Keys(p), (std::set<std::string>{"name", "summary", "runs"})) << p.dump();
    EXPECT_TRUE(p["summary"].is_object());
    EXPECT_TRUE(p["runs"].is_array());
  }
  EXPECT_EQ(doc["policies"][0]["runs"].size(), 4u);
  EXPECT_EQ(doc["policies"][1]["runs"].size(), 1u);
  ASSERT_TRUE(doc.contains("meta"));
  EXPECT_EQ(doc["meta"]["mode"], "fill");
}

TEST_F(ReportTest, FillSummaryHasExactlyTheThreeFillKeysWithMeanAndSd) {
  const json doc = ToJson(FillResults(), Meta(Mode::kFill));
  const json& a = doc["policies"][0]["summary"];
  EXPECT_EQ(Keys(a), (std::set<std::string>{"unalloc_gpu_pct_at_100", "unalloc_gpu_pct_at_130",
                                            "frag_ratio_pct_at_90"}));
  for (const auto& [key, value] : a.items()) {
    EXPECT_EQ(Keys(value), (std::set<std::string>{"mean", "sd"})) << key;
  }
  const double sd = std::sqrt(20.0 / 3.0);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_100"]["mean"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_100"]["sd"].get<double>(), sd);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_130"]["mean"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_130"]["sd"].get<double>(), sd);
  EXPECT_DOUBLE_EQ(a["frag_ratio_pct_at_90"]["mean"].get<double>(), 7.0);
  const json& b = doc["policies"][1]["summary"];
  EXPECT_DOUBLE_EQ(b["unalloc_gpu_pct_at_100"]["mean"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(b["unalloc_gpu_pct_at_100"]["sd"].get<double>(), 0.0);
}

TEST_F(ReportTest, ChurnSummaryHasExactlyTheThreeChurnKeys) {
  for (Mode mode : {Mode::kChurn, Mode::kReplay}) {
    const json doc = ToJson(ChurnResults(), Meta(mode));
    const json& a = doc["policies"][0]["summary"];
    EXPECT_EQ(Keys(a), (std::set<std::string>{"unalloc_gpu_pct_steady", "queue_delay_p50_s",
                                              "queue_delay_p99_s"}))
        << ModeName(mode);
    for (const auto& [key, value] : a.items()) {
      EXPECT_EQ(Keys(value), (std::set<std::string>{"mean", "sd"})) << key;
    }
    EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_steady"]["mean"].get<double>(), 5.0);
    EXPECT_DOUBLE_EQ(a["queue_delay_p50_s"]["mean"].get<double>(), 50.0);
    EXPECT_DOUBLE_EQ(a["queue_delay_p99_s"]["mean"].get<double>(), 500.0);
    EXPECT_DOUBLE_EQ(a["queue_delay_p99_s"]["sd"].get<double>(), 100 * std::sqrt(20.0 / 3.0));
  }
}

TEST_F(ReportTest, FillRunsCarryTheirCurves) {
  const std::vector<PolicyRuns> results = FillResults();
  const json doc = ToJson(results, Meta(Mode::kFill));
  const json& runs = doc["policies"][0]["runs"];
  ASSERT_EQ(runs.size(), results[0].runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& want = results[0].runs[i];
    EXPECT_EQ(runs[i]["seed"].get<uint64_t>(), want.seed);
    EXPECT_EQ(runs[i]["pods_arrived"].get<int64_t>(), want.pods_arrived);
    EXPECT_EQ(runs[i]["pods_failed"].get<int64_t>(), want.pods_failed);
    EXPECT_DOUBLE_EQ(runs[i]["unalloc_gpu_pct_at_100"].get<double>(), want.unalloc_gpu_pct_at_100);
    ASSERT_TRUE(runs[i].contains("curve"));
    const json& curve = runs[i]["curve"];
    ASSERT_EQ(curve["arrived_pct"].size(), want.curve.size());
    ASSERT_EQ(curve["alloc_pct"].size(), want.curve.size());
    ASSERT_EQ(curve["frag_ratio_pct"].size(), want.curve.size());
    for (size_t k = 0; k < want.curve.size(); ++k) {
      EXPECT_EQ(curve["arrived_pct"][k].get<int>(), want.curve[k].arrived_pct);
      EXPECT_NEAR(curve["alloc_pct"][k].get<double>(), want.curve[k].alloc_pct, 1e-3);
      EXPECT_NEAR(curve["frag_ratio_pct"][k].get<double>(), want.curve[k].frag_ratio_pct, 1e-3);
    }
  }
}

TEST_F(ReportTest, ChurnRunsCarryTheirSeries) {
  const std::vector<PolicyRuns> results = ChurnResults();
  const json doc = ToJson(results, Meta(Mode::kChurn));
  const json& run = doc["policies"][0]["runs"][1];
  const RunResult& want = results[0].runs[1];
  EXPECT_EQ(run["pods_waiting_at_end"].get<int64_t>(), want.pods_waiting_at_end);
  EXPECT_DOUBLE_EQ(run["idle_gpu_hours"].get<double>(), want.idle_gpu_hours);
  ASSERT_TRUE(run.contains("series"));
  ASSERT_EQ(run["series"]["hours"].size(), want.unalloc_series.size());
  ASSERT_EQ(run["series"]["unalloc_gpu_pct"].size(), want.unalloc_series.size());
  for (size_t k = 0; k < want.unalloc_series.size(); ++k) {
    EXPECT_NEAR(run["series"]["hours"][k].get<double>(), want.unalloc_series[k].first, 1e-3);
    EXPECT_NEAR(run["series"]["unalloc_gpu_pct"][k].get<double>(), want.unalloc_series[k].second,
                1e-3);
  }
}

TEST_F(ReportTest, JsonRoundTripsThroughText) {
  const json doc = ToJson(FillResults(), Meta(Mode::kFill));
  EXPECT_EQ(json::parse(doc.dump()), doc);
}

// ---------------------------------------------------------------- table

TEST_F(ReportTest, TableHasAHeaderAndOneRowPerPolicy) {
  for (Mode mode : {Mode::kFill, Mode::kChurn}) {
    std::vector<PolicyRuns> results = mode == Mode::kFill ? FillResults() : ChurnResults();
    results[0].name = "bestfit";
    results[1].name = "fgd";
    const std::string table = RenderTable(results, Meta(mode));
    std::vector<std::string> lines;
    std::istringstream in(table);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_EQ(lines.size(), 2u + results.size()) << table;  // header, rule, one per policy
    EXPECT_EQ(lines[0].rfind("policy", 0), 0u) << table;
    EXPECT_EQ(lines[1].find_first_not_of('-'), std::string::npos) << table;
    EXPECT_EQ(lines[2].rfind("bestfit", 0), 0u) << table;
    EXPECT_EQ(lines[3].rfind("fgd", 0), 0u) << table;
  }
}

TEST_F(ReportTest, TableShowsMeanAndSd) {
  const std::string table = RenderTable(FillResults(), Meta(Mode::kFill));
  // Policy "a": unalloc @100 mean 5.00, sd sqrt(20/3) = 2.58.
  EXPECT_NE(table.find("5.00 ± 2.58"), std::string::npos) << table;
  EXPECT_NE(table.find("7.00 ± 0.00"), std::string::npos) << table;
}

// ---------------------------------------------------------------- HTML

TEST_F(ReportTest, HtmlHasAnSvgAndATableAndNothingActive) {
  for (Mode mode : {Mode::kFill, Mode::kChurn, Mode::kReplay}) {
    const std::vector<PolicyRuns> results = mode == Mode::kFill ? FillResults() : ChurnResults();
    const std::string html = RenderHtml(results, Meta(mode));
    const std::string lower = Lower(html);
    EXPECT_NE(lower.find("<svg"), std::string::npos) << ModeName(mode);
    EXPECT_NE(lower.find("</svg>"), std::string::npos) << ModeName(mode);
    EXPECT_NE(lower.find("<table"), std::string::npos) << ModeName(mode);
    EXPECT_NE(lower.find("</table>"), std::string::npos) << ModeName(mode);
    EXPECT_EQ(lower.find("<script"), std::string::npos) << ModeName(mode);
    // The only URL is the SVG namespace name, which is never fetched.
    const std::string xmlns = "http://www.w3.org/2000/svg";
    const size_t urls = Count(lower, "http://") + Count(lower, "https://");
    EXPECT_EQ(urls, Count(lower, xmlns)) << ModeName(mode);
    // Fill mode draws the whole curve and a zoom on where policies part; the others one chart.
    const size_t charts = mode == Mode::kFill ? 2u : 1u;
    EXPECT_EQ(Count(lower, "<svg"), charts) << ModeName(mode);
    EXPECT_EQ(urls, charts) << ModeName(mode);
    // One table row per policy plus the header row; one curve per policy in each chart.
    EXPECT_EQ(Count(lower, "<tr>"), 1 + results.size()) << ModeName(mode);
    EXPECT_EQ(Count(lower, "<polyline"), charts * results.size()) << ModeName(mode);
  }
}

TEST_F(ReportTest, HtmlEscapesPolicyNames) {
  std::vector<PolicyRuns> results = FillResults();
  results[0].name = "<script>alert(1)</script>";
  const std::string html = RenderHtml(results, Meta(Mode::kFill));
  EXPECT_EQ(Lower(html).find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
}

}  // namespace
}  // namespace seedance::sim
