#include "seedance/cost/analyze.h"

#include <limits>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "seedance/telemetry/synthetic.h"

namespace seedance::cost {
namespace {

using telemetry::MakeSyntheticProfile;
using telemetry::Profile;
using telemetry::SyntheticOptions;

class AnalyzeTest : public ::testing::Test {
 protected:
  // 16 nodes x 8 A100-80GB, 60 samples of 1 s: nodes 2 and 9 (node-gpu-03, node-gpu-10) idle,
  // nodes 4 and 14 (node-gpu-05, node-gpu-15) light, the rest busy with 2 free GPUs each.
  static Profile Cluster(SyntheticOptions o = {}) { return MakeSyntheticProfile(o); }
  static Report Run(const Profile& p, AnalyzeOptions o = {}) {
    auto r = Analyze(p, PriceTable::Builtin(), o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : Report{};
  }
  static std::set<std::string> IdleNames(const Report& r, const Profile& p) {
    std::set<std::string> out;
    for (const IdleNode& i : r.idle_nodes) out.insert(p.nodes[i.node].name);
    return out;
  }
  static std::set<std::string> Freed(const Report& r, const Profile& p) {
    std::set<std::string> out;
    for (const PlanStep& s : r.plan) out.insert(p.nodes[s.node].name);
    return out;
  }
};

TEST_F(AnalyzeTest, FindsExactlyTheIdleNodes) {
  const Profile p = Cluster();
  const Report r = Run(p);
  EXPECT_EQ(IdleNames(r, p), (std::set<std::string>{"node-gpu-03", "node-gpu-10"}));
  for (const IdleNode& i : r.idle_nodes) {
    EXPECT_DOUBLE_EQ(i.idle_s, 60);
    EXPECT_LE(i.max_util_pct, 5);
  }
}

TEST_F(AnalyzeTest, IdleThresholdsAreOptions) {
  const Profile p = Cluster();
  AnalyzeOptions longer;
  longer.idle_window_s = 61;  // longer than the whole profile
  EXPECT_TRUE(Run(p, longer).idle_nodes.empty());
  AnalyzeOptions low;
  low.idle_gpu_util_pct = 1;  // idle GPUs run at 1-5%
  EXPECT_TRUE(Run(p, low).idle_nodes.empty());
  AnalyzeOptions high;
  high.idle_gpu_util_pct = 30;  // light nodes (GPUs at 18-28%) now count as idle too
  EXPECT_EQ(IdleNames(Run(p, high), p),
            (std::set<std::string>{"node-gpu-03", "node-gpu-05", "node-gpu-10", "node-gpu-15"}));
}

TEST_F(AnalyzeTest, APendingPodThatFitsKeepsNodesFromBeingIdleOrFreed) {
  Profile p = Cluster();
  p.pending_pods.push_back({"waiting", "ml", 1000, 1024, 1, 1000, {}, {}, "A100-80GB"});
  const Report r = Run(p);
  EXPECT_TRUE(r.idle_nodes.empty());
  EXPECT_EQ(Freed(r, p).count("node-gpu-03"), 0u);
  // A pending pod for another GPU model does not.
  Profile q = Cluster();
  q.pending_pods.push_back({"waiting", "ml", 1000, 1024, 1, 1000, {}, {}, "H100"});
  EXPECT_EQ(Run(q).idle_nodes.size(), 2u);
}

TEST_F(AnalyzeTest, PlanFreesIdleAndLightNodesAndSavesTheirPrice) {
  const Profile p = Cluster();
  const Report r = Run(p);
  EXPECT_EQ(Freed(r, p),
            (std::set<std::string>{"node-gpu-03", "node-gpu-05", "node-gpu-10", "node-gpu-15"}));
  // One node: 8 GPUs x $3.93/GPU-hour (built-in A100-80GB) x 730 h = $22,951.20 a month.
  const double node_month = 8 * 3.93 * 730;
  EXPECT_NEAR(r.spend_usd_per_month, 16 * node_month, 1e-6);
  EXPECT_NEAR(r.saving_usd_per_month, 4 * node_month, 1e-6);
  EXPECT_NEAR(r.spend_after_usd_per_month, 12 * node_month, 1e-6);
  EXPECT_EQ(r.gpus_freed, 32);
  for (const PlanStep& s : r.plan) {
    const std::string name = p.nodes[s.node].name;
    if (name == "node-gpu-05" || name == "node-gpu-15") {
      ASSERT_EQ(s.moves.size(), 2u) << name;
      for (const Move& m : s.moves) {
        EXPECT_NE(m.to, s.node);
        EXPECT_TRUE(m.same_numa) << m.pod;
        if (m.gpu_ids.size() == 2) {
          EXPECT_TRUE(m.nvlink) << m.pod;
        }
        // Targets are busy nodes, never a node that is itself freed.
        EXPECT_EQ(Freed(r, p).count(p.nodes[m.to].name), 0u);
      }
    } else {
      EXPECT_TRUE(s.moves.empty()) << name;
      EXPECT_TRUE(s.idle);
    }
  }
}

// Peer lists that are not all-to-all within a part (a ring, like a hybrid cube mesh) give the
// chooser no NVLink group: a pod that had NVLink is then not moved there, so the light nodes,
// whose 2-GPU pods run on NVLink peers, stay; the idle nodes are still freed.
TEST_F(AnalyzeTest, APodKeepsItsNvLinkOrIsNotMoved) {
  Profile p = Cluster();
  for (auto& node : p.nodes) {
    const int gpus = static_cast<int>(node.gpus.size());
    for (int g = 0; g < gpus; ++g)
      node.gpus[g].nvlink_peers = {(g + 1) % gpus, (g + gpus - 1) % gpus};
  }
  const Report r = Run(p);
  EXPECT_EQ(Freed(r, p), (std::set<std::string>{"node-gpu-03", "node-gpu-10"}));
  for (const PlanStep& s : r.plan) EXPECT_TRUE(s.moves.empty()) << p.nodes[s.node].name;
}

TEST_F(AnalyzeTest, ATargetCapThatNoGpuMeetsFreesOnlyEmptyNodes) {
  const Profile p = Cluster();
  AnalyzeOptions o;
  o.target_gpu_util_cap_pct = 1;  // no GPU may take any load
  EXPECT_EQ(Freed(Run(p, o), p), (std::set<std::string>{"node-gpu-03", "node-gpu-10"}));
}

TEST_F(AnalyzeTest, ReportsUnderusedFragmentedAndNumaMismatchedPods) {
  SyntheticOptions so;
  so.numa_mismatch_nodes = {0};
  const Profile p = Cluster(so);
  const Report r = Run(p);
  int fragmented = 0, underused = 0;
  for (const GpuFinding& f : r.gpu_findings) {
    const std::string name = p.nodes[f.node].name;
    EXPECT_TRUE(name == "node-gpu-05" || name == "node-gpu-15") << name;
    if (f.kind == GpuFinding::Kind::kFragmented) {
      ++fragmented;
      EXPECT_EQ(f.gpu, 2);
      EXPECT_EQ(f.allocated_milli, 500);
    } else {
      ++underused;
    }
  }
  EXPECT_EQ(fragmented, 2);
  EXPECT_EQ(underused, 6);  // GPUs 0-2 of both light nodes run at 18-28% < 30%
  ASSERT_EQ(r.numa_mismatches.size(), 1u);
  EXPECT_EQ(r.numa_mismatches[0].pod, "job-node-gpu-01-0");
  EXPECT_EQ(r.numa_mismatches[0].cpu_numa_nodes, std::vector<int>{1});
  EXPECT_EQ(r.numa_mismatches[0].gpu_numa_nodes, std::vector<int>{0});
}

TEST_F(AnalyzeTest, TextLinesFollowTheSeedStyle) {
  const Profile p = Cluster();
  const Report r = Run(p);
  const std::string text = RenderText(r, p);
  EXPECT_NE(text.find("node-gpu-03: idle, no pods to move; frees node-gpu-03, saves $22,951/month"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("node-gpu-05: migrate 2 pods"), std::string::npos) << text;
  EXPECT_NE(text.find("(NVLink, same NUMA node)"), std::string::npos) << text;
  EXPECT_NE(text.find("saving $91,805/month"), std::string::npos) << text;
  const std::string html = RenderHtml(r, p);
  EXPECT_NE(html.find("<canvas id=\"heat\">"), std::string::npos);
  EXPECT_NE(html.find("node-gpu-05: migrate"), std::string::npos);
  EXPECT_NE(RenderJson(r, p).find("\"saving_usd_per_month\": 91804.8"), std::string::npos);
}

TEST_F(AnalyzeTest, UnpricedModelsAreWarnedAboutAndCostNothing) {
  SyntheticOptions so;
  so.gpu_model = "Acme Tensor 9000";
  const Profile p = Cluster(so);
  const Report r = Run(p);
  EXPECT_EQ(r.spend_usd_per_month, 0);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("Acme Tensor 9000"), std::string::npos);
}

TEST_F(AnalyzeTest, OddButValidProfilesGiveWarningsNotCrashes) {
  Profile p = Cluster();
  p.nodes[0].pods.push_back({"too-many", "ml", 0, 0, 20, 1000, {}, {}, ""});
  p.nodes[1].pods.push_back({"same-gpu-twice", "ml", 0, 0, 2, 1000, {7, 7}, {}, ""});
  p.nodes[2].gpus[0].util_pct.assign(p.num_samples(), telemetry::Missing());
  const Report r = Run(p);
  EXPECT_GE(r.warnings.size(), 2u);
  EXPECT_EQ(Freed(r, p).count("node-gpu-01"), 0u);  // pinned: its pods are not all accounted
}

TEST_F(AnalyzeTest, NoSamplesIsAnErrorNotAPlan) {
  // No plan from no data: every node would otherwise look idle and be "freed".
  Profile p = Cluster();
  p.timestamps_s.clear();
  for (auto& n : p.nodes) {
    n.cpu_util_pct.clear();
    n.mem_used_mib.clear();
    for (auto& g : n.gpus) g.util_pct.clear();
  }
  auto r = Analyze(p, PriceTable::Builtin(), {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("no samples"), std::string::npos);
  Profile empty;
  EXPECT_EQ(Analyze(empty, PriceTable::Builtin(), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(AnalyzeTest, NodesWithoutMeasuredUtilisationAreNeverFreed) {
  Profile p = Cluster();
  // node-gpu-03 is idle in the synthetic cluster; with no measurement it must stay.
  for (auto& g : p.nodes[2].gpus) g.util_pct.assign(p.num_samples(), telemetry::Missing());
  const Report r = Run(p);
  EXPECT_EQ(Freed(r, p).count("node-gpu-03"), 0u);
  EXPECT_EQ(IdleNames(r, p).count("node-gpu-03"), 0u);
  bool warned = false;
  for (const auto& w : r.warnings) warned = warned || w.find("node-gpu-03") != std::string::npos;
  EXPECT_TRUE(warned);
  // And a cluster where nothing was measured has an undefined mean (JSON null), no plan.
  for (auto& n : p.nodes) {
    for (auto& g : n.gpus) g.util_pct.assign(p.num_samples(), telemetry::Missing());
  }
  const Report none = Run(p);
  EXPECT_TRUE(none.plan.empty());
  EXPECT_NE(RenderJson(none, p).find("\"mean_gpu_util_pct\": null"), std::string::npos);
  EXPECT_NE(RenderText(none, p).find("utilisation n/a"), std::string::npos);
}

TEST_F(AnalyzeTest, OptionsOutsideTheirRangesAreRefused) {
  const Profile p = Cluster();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    const char* name;
    void (*set)(AnalyzeOptions*, double);
    double value;
  };
  const Case cases[] = {
      {"idle nan", [](AnalyzeOptions* o, double v) { o->idle_gpu_util_pct = v; }, nan},
      {"idle 101", [](AnalyzeOptions* o, double v) { o->idle_gpu_util_pct = v; }, 101},
      {"underused -1", [](AnalyzeOptions* o, double v) { o->underused_gpu_util_pct = v; }, -1},
      {"drain inf", [](AnalyzeOptions* o, double v) { o->drain_max_gpu_util_pct = v; },
       std::numeric_limits<double>::infinity()},
      {"cap nan", [](AnalyzeOptions* o, double v) { o->target_gpu_util_cap_pct = v; }, nan},
      {"window nan", [](AnalyzeOptions* o, double v) { o->idle_window_s = v; }, nan},
      {"window -1", [](AnalyzeOptions* o, double v) { o->idle_window_s = v; }, -1},
  };
  for (const Case& c : cases) {
    AnalyzeOptions o;
    c.set(&o, c.value);
    EXPECT_EQ(Analyze(p, PriceTable::Builtin(), o).status().code(),
              absl::StatusCode::kInvalidArgument)
        << c.name;
  }
}

TEST_F(AnalyzeTest, ReportsEscapeNamesForTheirContext) {
  Profile p = Cluster();
  const std::string evil = "</script><img src=x onerror=alert(1)>\x1b[31m";
  p.nodes[2].name = evil;     // an idle node: it is named in every section
  p.source = "src \xff\xfe";  // invalid UTF-8
  const Report r = Run(p);
  const std::string html = RenderHtml(r, p);
  EXPECT_EQ(html.find("</script><img"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script\\u003e"), std::string::npos);  // in the <script> data
  const std::string text = RenderText(r, p);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  const std::string json = RenderJson(r, p);  // must not throw on the invalid UTF-8
  EXPECT_EQ(json.rfind("{\n  \"schema_version\": \"analyze/v1\"", 0), 0u) << json.substr(0, 80);
}

TEST(FormatUsdTest, SeparatesThousands) {
  EXPECT_EQ(FormatUsd(0), "$0");
  EXPECT_EQ(FormatUsd(1530.4), "$1,530");
  EXPECT_EQ(FormatUsd(1234567.5), "$1,234,568");
  EXPECT_EQ(FormatUsd(-999), "-$999");
}

TEST(PricesTest, CanonicalNamesMatchWhatNvmlAndDcgmReport) {
  EXPECT_EQ(CanonicalGpuModel("NVIDIA A100-SXM4-80GB"), "A100-80GB");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA A100-PCIE-40GB"), "A100-40GB");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(CanonicalGpuModel("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA A10G"), "A10G");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA L4"), "L4");
  EXPECT_EQ(CanonicalGpuModel("NVIDIA L40S"), "L40S");
  EXPECT_EQ(CanonicalGpuModel("Tesla T4"), "T4");
  EXPECT_DOUBLE_EQ(*PriceTable::Builtin().GpuUsdPerHour("NVIDIA A100-SXM4-80GB"), 3.93);
}

TEST(PricesTest, ParsesAPriceTableOverTheBuiltinOne) {
  auto t = ParsePrices("source: ours\nhours_per_month: 720\ngpu_usd_per_hour:\n  L4: 1.5\n",
                       "p.yaml", PriceTable::Builtin());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_DOUBLE_EQ(*t->GpuUsdPerHour("NVIDIA L4"), 1.5);
  EXPECT_DOUBLE_EQ(*t->GpuUsdPerHour("NVIDIA A100-SXM4-80GB"), 3.93);  // from the base
  EXPECT_EQ(t->hours_per_month, 720);
  EXPECT_EQ(t->source, "p.yaml: ours");
}

TEST(PricesTest, MeaninglessPricesAreRefusedWithTheirLine) {
  struct Case {
    const char* name;
    std::string text;
    const char* want;
  };
  const Case cases[] = {
      {"inf", "gpu_usd_per_hour:\n  L4: .inf\n",
       "p.yaml:2: $.gpu_usd_per_hour.L4: expected a non-negative"},
      {"-inf", "gpu_usd_per_hour:\n  L4: -.inf\n", "p.yaml:2: $.gpu_usd_per_hour.L4:"},
      {"nan", "gpu_usd_per_hour:\n  L4: .nan\n", "p.yaml:2: $.gpu_usd_per_hour.L4:"},
      {"negative", "gpu_usd_per_hour:\n  L4: -1\n", "p.yaml:2: $.gpu_usd_per_hour.L4:"},
      {"huge", "gpu_usd_per_hour:\n  L4: 1e300\n", "at most 10000"},
      {"text", "gpu_usd_per_hour:\n  L4: cheap\n", "p.yaml:2: $.gpu_usd_per_hour.L4:"},
      {"list", "gpu_usd_per_hour:\n  L4: [1, 2]\n", "p.yaml:2: $.gpu_usd_per_hour.L4:"},
      {"hours nan", "hours_per_month: .nan\n",
       "p.yaml:1: $.hours_per_month: expected a number in (0, 744]"},
      {"hours 0", "hours_per_month: 0\n", "p.yaml:1: $.hours_per_month:"},
      {"hours inf", "hours_per_month: .inf\n", "p.yaml:1: $.hours_per_month:"},
      {"twice", "gpu_usd_per_hour:\n  L4: 1\n  NVIDIA L4: 2\n",
       "p.yaml:3: $.gpu_usd_per_hour[\"NVIDIA L4\"]: priced twice (model L4, also line 2)"},
      {"key twice", "source: a\nsource: b\n", "p.yaml:2: $.source: given twice"},
      {"unknown", "gpu_prices:\n  L4: 1\n", "p.yaml:1: $.gpu_prices: unknown field"},
      {"not a map", "- 1\n- 2\n", "p.yaml: expected a mapping"},
      {"source map", "source: {a: 1}\n", "p.yaml:1: $.source: expected a string"},
      {"bad yaml", "gpu_usd_per_hour: [\n", "p.yaml:2: invalid YAML"},
      {"deep", std::string(100000, '[') + std::string(100000, ']'),
       "p.yaml:1: nested deeper than 32"},
      {"deep block",
       [] {
         std::string t;
         for (int i = 0; i < 2000; ++i) t += "- ";
         return t + "1\n";
       }(),
       "nested deeper"},
  };
  for (const Case& c : cases) {
    auto t = ParsePrices(c.text, "p.yaml", PriceTable::Builtin());
    ASSERT_FALSE(t.ok()) << c.name;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(std::string(t.status().message()).find(c.want), std::string::npos)
        << c.name << ": " << t.status().message();
  }
}

TEST(PricesTest, ADirectoryOrMissingFileIsAClearError) {
  auto d = LoadPrices("/tmp", PriceTable::Builtin());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(d.status().message()).find("/tmp"), std::string::npos);
  auto m = LoadPrices("/nonexistent/p.yaml", PriceTable::Builtin());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace seedance::cost
