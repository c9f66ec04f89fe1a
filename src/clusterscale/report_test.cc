#include "seedance/clusterscale/report.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace seedance::clusterscale {
namespace {

std::vector<NodeGroup> Groups() {
  core::NodeSpec node{"t4", 32000, 131072, 4, "T4", 2.12};
  return {NodeGroup{"t4", node, 0, 20}};
}

std::vector<core::PodSpec> Pods() {
  std::vector<core::PodSpec> pods(2);
  pods[0].name = "short";
  pods[0].shape = {1000, 1024, 1, 1000};
  pods[0].deletion_s = 100;
  pods[1].name = "long";
  pods[1].shape = {2000, 2048, 1, 500};
  pods[1].deletion_s = 20000;
  return pods;
}

TEST(ReportTest, ExpanderNamesRoundTrip) {
  for (ExpanderKind k : {ExpanderKind::kCaLeastWaste, ExpanderKind::kSeedance}) {
    absl::StatusOr<ExpanderKind> back = ParseExpander(ExpanderName(k));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, k);
  }
  absl::StatusOr<ExpanderKind> bad = ParseExpander("hpa");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "ca-least-waste, seedance"));
}

// Only Seedance's autoscaler keeps headroom on drains and pre-scales; the expander follows the
// kind.
TEST(ReportTest, ForAutoscalerSetsExpanderAndGuard) {
  ChurnOptions base;
  base.drain_below_utilization = 0.5;
  const ChurnOptions ca = ForAutoscaler(base, ExpanderKind::kCaLeastWaste);
  const ChurnOptions sd = ForAutoscaler(base, ExpanderKind::kSeedance);
  EXPECT_EQ(ca.scale_up.expander, ExpanderKind::kCaLeastWaste);
  EXPECT_FALSE(ca.drain_keeps_headroom);
  EXPECT_EQ(sd.scale_up.expander, ExpanderKind::kSeedance);
  EXPECT_TRUE(sd.drain_keeps_headroom);
  EXPECT_EQ(sd.drain_below_utilization, 0.5);
  base.prescale = true;  // Seedance's only: CA has no pre-scaling
  EXPECT_FALSE(ForAutoscaler(base, ExpanderKind::kCaLeastWaste).prescale);
  EXPECT_TRUE(ForAutoscaler(base, ExpanderKind::kSeedance).prescale);
  // The CA-like's own placement (kube-scheduler's beside CA) when one is given.
  base.policy = "cas";
  EXPECT_EQ(ForAutoscaler(base, ExpanderKind::kCaLeastWaste).policy, "cas");
  base.ca_policy = "most-allocated";
  EXPECT_EQ(ForAutoscaler(base, ExpanderKind::kCaLeastWaste).policy, "most-allocated");
  EXPECT_EQ(ForAutoscaler(base, ExpanderKind::kSeedance).policy, "cas");
}

// Seed-major order, each run as RunChurn gives it, the same on one thread as on four.
TEST(ReportTest, RunChurnSetIsOrderedAndThreadIndependent) {
  ChurnOptions o;
  o.load = 0.3;
  o.duration_h = 12;
  o.drain_below_utilization = 0.5;
  const std::vector<ExpanderKind> kinds = {ExpanderKind::kCaLeastWaste, ExpanderKind::kSeedance};
  absl::StatusOr<std::vector<ChurnRun>> one = RunChurnSet(Groups(), Pods(), o, kinds, {7, 8}, 1);
  absl::StatusOr<std::vector<ChurnRun>> four = RunChurnSet(Groups(), Pods(), o, kinds, {7, 8}, 4);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(four.ok()) << four.status();
  ASSERT_EQ(one->size(), 4u);
  for (size_t i = 0; i < one->size(); ++i) {
    EXPECT_EQ((*one)[i].seed, i < 2 ? 7u : 8u);
    EXPECT_EQ((*one)[i].expander, kinds[i % 2]);
    EXPECT_EQ((*one)[i].report.idle_gpu_hours, (*four)[i].report.idle_gpu_hours);
    EXPECT_EQ((*one)[i].report.pods_arrived, (*four)[i].report.pods_arrived);
    ChurnOptions direct = ForAutoscaler(o, kinds[i % 2]);
    direct.seed = (*one)[i].seed;
    absl::StatusOr<ChurnReport> r = RunChurn(Groups(), Pods(), direct);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->gpu_hours_paid, (*one)[i].report.gpu_hours_paid);
  }
  o.load = 0;  // invalid: the set stops with RunChurn's error
  EXPECT_EQ(RunChurnSet(Groups(), Pods(), o, kinds, {7}, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReportTest, RatiosAreToTheFirstExpanderOfTheSeedAndNullOverZero) {
  std::vector<ChurnRun> runs(2);
  runs[0].expander = ExpanderKind::kCaLeastWaste;
  runs[0].seed = 3;
  runs[0].report.idle_gpu_hours = 200;
  runs[0].report.pending_p99_s = 0;
  runs[1].expander = ExpanderKind::kSeedance;
  runs[1].seed = 3;
  runs[1].report.idle_gpu_hours = 150;
  runs[1].report.pending_p99_s = 5;
  const nlohmann::ordered_json doc = ChurnRunsToJson(runs);
  EXPECT_EQ(doc["schema_version"], "simulate-autoscale/v1");
  ASSERT_EQ(doc["runs"].size(), 2u);
  ASSERT_EQ(doc["ratios"].size(), 1u);
  EXPECT_EQ(doc["ratios"][0]["expander"], "seedance");
  EXPECT_EQ(doc["ratios"][0]["to"], "ca-least-waste");
  EXPECT_DOUBLE_EQ(doc["ratios"][0]["idle_gpu_hours"].get<double>(), 0.75);
  EXPECT_TRUE(doc["ratios"][0]["pending_p99"].is_null());
  const std::string table = RenderChurnTable(runs);
  EXPECT_TRUE(absl::StrContains(table, "seedance / ca-least-waste")) << table;
  EXPECT_TRUE(absl::StrContains(table, "0.750")) << table;
  // Every column says what it counts or its unit, under a legend; the inputs come first.
  EXPECT_TRUE(absl::StartsWith(table, std::string(kChurnLegend) + "\n")) << table;
  for (const char* column : {"pods_arrived", "pend_p99_s", "nodes_added", "pods_moved"}) {
    EXPECT_TRUE(absl::StrContains(table, column)) << column;
  }
  const std::string with_inputs = RenderChurnTable(runs, "inputs: load 0.90");
  EXPECT_TRUE(absl::StartsWith(with_inputs, "inputs: load 0.90\n" + std::string(kChurnLegend)))
      << with_inputs;
}

}  // namespace
}  // namespace seedance::clusterscale
