// Tests of the report layer: summaries, the JSON layout, the terminal table and the offline
// HTML report, on hand-made results with known values.
#include "seedance/sim/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "seedance/base/text.h"

namespace seedance::sim {
namespace {

using json = nlohmann::ordered_json;

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

TEST_F(ReportTest, SummarizeOfOneValueHasUndefinedSd) {
  const MeanSd m = Summarize({3.25});
  EXPECT_DOUBLE_EQ(m.mean, 3.25);
  EXPECT_TRUE(std::isnan(m.sd));
  EXPECT_EQ(m.n, 1);
}

TEST_F(ReportTest, SummarizeOfNothingIsUndefined) {
  const MeanSd m = Summarize({});
  EXPECT_TRUE(std::isnan(m.mean));
  EXPECT_TRUE(std::isnan(m.sd));
  EXPECT_EQ(m.n, 0);
}

TEST_F(ReportTest, SummarizeSkipsUndefinedValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const MeanSd m = Summarize({nan, 2, nan, 4});
  EXPECT_DOUBLE_EQ(m.mean, 3.0);
  EXPECT_DOUBLE_EQ(m.sd, std::sqrt(2.0));
  EXPECT_EQ(m.n, 2);
  EXPECT_TRUE(std::isnan(Summarize({nan, nan}).mean));
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
    EXPECT_EQ(Keys(value), (std::set<std::string>{"mean", "sd", "runs"})) << key;
    EXPECT_EQ(value["runs"], 4) << key;
  }
  const double sd = std::sqrt(20.0 / 3.0);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_100"]["mean"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_100"]["sd"].get<double>(), sd);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_130"]["mean"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(a["unalloc_gpu_pct_at_130"]["sd"].get<double>(), sd);
  EXPECT_DOUBLE_EQ(a["frag_ratio_pct_at_90"]["mean"].get<double>(), 7.0);
  const json& b = doc["policies"][1]["summary"];
  EXPECT_DOUBLE_EQ(b["unalloc_gpu_pct_at_100"]["mean"].get<double>(), 7.0);
  EXPECT_TRUE(b["unalloc_gpu_pct_at_100"]["sd"].is_null()) << b.dump();  // one run: no sd
}

TEST_F(ReportTest, ChurnSummaryHasExactlyTheThreeChurnKeys) {
  for (Mode mode : {Mode::kChurn, Mode::kReplay}) {
    const json doc = ToJson(ChurnResults(), Meta(mode));
    const json& a = doc["policies"][0]["summary"];
    EXPECT_EQ(Keys(a), (std::set<std::string>{"unalloc_gpu_pct_steady", "queue_delay_p50_s",
                                              "queue_delay_p99_s"}))
        << ModeName(mode);
    for (const auto& [key, value] : a.items()) {
      EXPECT_EQ(Keys(value), (std::set<std::string>{"mean", "sd", "runs"})) << key;
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

TEST_F(ReportTest, JsonStartsWithTheSchemaHeader) {
  const json doc = ToJson(FillResults(), Meta(Mode::kFill));
  std::vector<std::string> keys;
  for (const auto& [k, v] : doc.items()) keys.push_back(k);
  ASSERT_GE(keys.size(), 3u);
  EXPECT_EQ(keys[0], "schema_version");
  EXPECT_EQ(keys[1], "seedance_version");
  EXPECT_EQ(keys[2], "command_line");
  EXPECT_EQ(doc["schema_version"], "simulate/v1");
}

TEST_F(ReportTest, JsonWritesUndefinedValuesAsNull) {
  std::vector<PolicyRuns> results = FillResults();
  for (RunResult& r : results[0].runs) r.unalloc_gpu_pct_at_130 = std::nan("");
  const json doc = ToJson(results, Meta(Mode::kFill));
  EXPECT_TRUE(doc["policies"][0]["runs"][0]["unalloc_gpu_pct_at_130"].is_null());
  EXPECT_TRUE(doc["policies"][0]["summary"]["unalloc_gpu_pct_at_130"]["mean"].is_null());
  EXPECT_EQ(doc["policies"][0]["summary"]["unalloc_gpu_pct_at_130"]["runs"], 0);
  // Options the mode does not use are null, not their defaults.
  EXPECT_TRUE(doc["meta"]["load"].is_null());
  EXPECT_TRUE(doc["meta"]["duration_h"].is_null());
  EXPECT_DOUBLE_EQ(doc["meta"]["tune"].get<double>(), 1.3);
  const json churn = ToJson(ChurnResults(), Meta(Mode::kChurn));
  EXPECT_TRUE(churn["meta"]["tune"].is_null());
  EXPECT_TRUE(churn["meta"]["warmup_h"].is_null());  // the default warm-up
  EXPECT_DOUBLE_EQ(churn["meta"]["duration_h"].get<double>(), 72.0);
}

TEST_F(ReportTest, WritersSurviveInvalidUtf8InNames) {
  std::vector<PolicyRuns> results = FillResults();
  results[0].name = "bad\xff\xfe";
  ReportMeta meta = Meta(Mode::kFill);
  meta.nodes_source = "nodes\xc3(.csv";
  const json doc = ToJson(results, meta);
  const std::string text = base::DumpJson(doc, 1);
  EXPECT_TRUE(base::IsValidUtf8(text));
  EXPECT_NE(text.find("bad\xef\xbf\xbd"), std::string::npos);
  EXPECT_TRUE(base::IsValidUtf8(RenderHtml(results, meta)));
  EXPECT_TRUE(base::IsValidUtf8(RenderCsv(results, meta)));
  EXPECT_TRUE(base::IsValidUtf8(RenderTable(results, meta)));
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
  // Policy "b" has one run: a mean without an sd.
  const std::string row_b = table.substr(table.find("\nb "));
  EXPECT_NE(row_b.find(" 7.00 "), std::string::npos) << table;
  EXPECT_EQ(row_b.find("7.00 ±"), std::string::npos) << table;
}

TEST_F(ReportTest, TableShowsUndefinedFiguresAsNotAvailable) {
  std::vector<PolicyRuns> results = FillResults();
  for (RunResult& r : results[1].runs) r.unalloc_gpu_pct_at_130 = std::nan("");
  const std::string table = RenderTable(results, Meta(Mode::kFill));
  EXPECT_NE(table.find("n/a"), std::string::npos) << table;
  EXPECT_EQ(table.find("nan"), std::string::npos) << table;
}

TEST_F(ReportTest, TableStripsControlCharactersFromNames) {
  std::vector<PolicyRuns> results = FillResults();
  results[0].name = "evil\x1b[31m\r\xff";
  const std::string table = RenderTable(results, Meta(Mode::kFill));
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_EQ(table.find('\r'), std::string::npos) << table;
  EXPECT_NE(table.find("evil\\x1B[31m"), std::string::npos) << table;
}

// ---------------------------------------------------------------- CSV

TEST_F(ReportTest, CsvHasOneRowPerPolicyAndSeedWithUnitNamedColumns) {
  for (Mode mode : {Mode::kFill, Mode::kChurn, Mode::kReplay}) {
    const std::vector<PolicyRuns> results = mode == Mode::kFill ? FillResults() : ChurnResults();
    const std::string csv = RenderCsv(results, Meta(mode));
    std::vector<std::string> lines;
    std::istringstream in(csv);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_EQ(lines.size(), 1u + 4u + 1u) << csv;  // header, a's four seeds, b's one
    const std::string want_header =
        mode == Mode::kFill
            ? "policy,seed,mode,pods_arrived,pods_scheduled,pods_failed,unalloc_gpu_pct_at_100,"
              "unalloc_gpu_pct_at_130,frag_ratio_pct_at_90,wall_s"
            : std::string(
                  "policy,seed,mode,pods_arrived,pods_scheduled,unalloc_gpu_pct_steady,"
                  "queue_delay_p50_s,queue_delay_p99_s,pods_waiting_at_end,"
                  "idle_gpu_hours,idle_cost_usd,measured_hours,") +
                  (mode == Mode::kChurn ? "offered_load_exact," : "") + "wall_s";
    EXPECT_EQ(lines[0], want_header) << ModeName(mode);
    EXPECT_EQ(lines[1].rfind("a,42," + std::string(ModeName(mode)) + ",", 0), 0u) << lines[1];
    EXPECT_EQ(lines[5].rfind("b,42,", 0), 0u) << lines[5];
  }
}

TEST_F(ReportTest, CsvLeavesUndefinedValuesEmptyAndQuotesNames) {
  std::vector<PolicyRuns> results = FillResults();
  results[0].name = "a,\"b\"";
  results[1].runs[0].unalloc_gpu_pct_at_130 = std::nan("");
  const std::string csv = RenderCsv(results, Meta(Mode::kFill));
  EXPECT_NE(csv.find("\n\"a,\"\"b\"\"\",42,fill,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nb,42,fill,100,90,10,7,,9,0.5\n"), std::string::npos) << csv;
}

TEST(CsvFieldTest, QuotesOnlyWhenNeededAndRepairsUtf8) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("bad\xff"), "bad\xef\xbf\xbd");
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

struct HtmlCase {
  std::string name;
  std::string policy, nodes, pods;
};

class HtmlEscapeTest : public testing::TestWithParam<HtmlCase> {};

TEST_P(HtmlEscapeTest, NoNameCanAddMarkup) {
  const HtmlCase& c = GetParam();
  std::vector<PolicyRuns> results = {PolicyRuns{c.policy, {}}};
  for (int i = 0; i < 3; ++i) results[0].runs.push_back(RunResult{});
  ReportMeta meta;
  meta.nodes_source = c.nodes;
  meta.pods_source = c.pods;
  meta.seeds = {1, 2, 3};
  const std::string html = RenderHtml(results, meta);
  std::string lower = html;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  EXPECT_EQ(lower.find("<script"), std::string::npos) << html;
  EXPECT_EQ(lower.find("</script"), std::string::npos) << html;
  EXPECT_EQ(lower.find("<img"), std::string::npos) << html;
  // Every attribute value is single-quoted; no name may close one.
  for (const std::string& name : {c.policy, c.nodes, c.pods}) {
    if (name.find('\'') != std::string::npos) {
      EXPECT_EQ(html.find(name), std::string::npos) << name;
    }
  }
  EXPECT_TRUE(base::IsValidUtf8(html));
}

INSTANTIATE_TEST_SUITE_P(
    Names, HtmlEscapeTest,
    testing::Values(HtmlCase{"ScriptInPolicy", "</script><img src=x onerror=alert(1)>", "n.csv",
                             "p.csv"},
                    HtmlCase{"ScriptInNodesFile", "fgd", "<script>alert(1)</script>.csv", "p.csv"},
                    HtmlCase{"QuotesInPodsFile", "fgd", "n.csv", "p'\" onmouseover='alert(1).csv"},
                    HtmlCase{"AmpersandAndInvalidUtf8", "a&b\xff", "n&amp;.csv", "\xc3(.csv"}),
    [](const testing::TestParamInfo<HtmlCase>& info) { return info.param.name; });

TEST_F(ReportTest, HtmlEscapesPolicyNames) {
  std::vector<PolicyRuns> results = FillResults();
  results[0].name = "<script>alert(1)</script>";
  const std::string html = RenderHtml(results, Meta(Mode::kFill));
  EXPECT_EQ(Lower(html).find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
}

}  // namespace
}  // namespace seedance::sim
