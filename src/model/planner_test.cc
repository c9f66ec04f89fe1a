#include "seedance/model/planner.h"

#include <gtest/gtest.h>

#include <random>

namespace seedance::model {
namespace {

// y = x @ W1 @ W2 with x [4, 8], W1 [8, 8], W2 [8, classes]: two layers.
Graph TwoLayers(int64_t classes) {
  Graph g;
  g.source = "two";
  g.opset = 17;
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> w1(64), w2(static_cast<size_t>(8 * classes));
  for (float& v : w1) v = n(rng);
  for (float& v : w2) v = n(rng);
  g.initializers["W1"] = Tensor::From<float>({8, 8}, w1);
  g.initializers["W2"] = Tensor::From<float>({8, classes}, w2);
  g.inputs.push_back({"x", DataType::kFloat, {4, 8}, {"", ""}, true});
  g.outputs.push_back({"y", DataType::kFloat, {4, classes}, {"", ""}, true});
  g.nodes.push_back({"l1", "MatMul", {"x", "W1"}, {"h"}, {}});
  g.nodes.push_back({"l2", "MatMul", {"h", "W2"}, {"y"}, {}});
  return g;
}

std::vector<TensorMap> Samples() {
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0, 1);
  std::vector<TensorMap> out;
  for (int s = 0; s < 4; ++s) {
    std::vector<float> x(32);
    for (float& v : x) v = n(rng);
    out.push_back({{"x", Tensor::From<float>({4, 8}, x)}});
  }
  return out;
}

TEST(PlannerTest, FormatsFollowTheGpu) {
  const std::vector<NumericFormat> t4 = {NumericFormat::kFp32, NumericFormat::kFp16,
                                         NumericFormat::kInt8};
  EXPECT_EQ(*FormatsFor("T4"), t4);
  EXPECT_EQ(FormatsFor("H100")->size(), 5u);  // FP32, FP16, BF16, FP8, INT8
  EXPECT_FALSE(FormatsFor("no-such-gpu").ok());
  EXPECT_EQ(WeightBytes({8, 4}, NumericFormat::kInt8, 4), 32 + 16);  // values and 4 scales
  EXPECT_EQ(WeightBytes({8, 4}, NumericFormat::kFp16, 4), 64);
}

TEST(PlannerTest, TighterBudgetsCostMoreAndAreMet) {
  const Graph g = TwoLayers(10);
  int64_t last = 0;
  for (double budget : {20.0, 45.0, 70.0, 200.0}) {
    PlanOptions o;
    o.gpu = "T4";
    o.budget_sqnr_db = budget;
    absl::StatusOr<Plan> plan = MakePlan(g, Samples(), o);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->meets_budget) << budget << " dB: measured " << plan->measured_sqnr_db;
    EXPECT_GE(plan->bytes, last) << budget;
    last = plan->bytes;
    absl::StatusOr<Plan> best = ExhaustiveSearch(g, Samples(), o);
    ASSERT_TRUE(best.ok());
    EXPECT_LE(plan->bytes, best->bytes * 105 / 100) << budget;
  }
  EXPECT_EQ(last, 8 * 8 * 4 + 8 * 10 * 4);  // 200 dB: only FP32 meets it
}

TEST(PlannerTest, CheapestPlanIsMeasuredFirstWhenThePriorAllowsIt) {
  const Graph g = TwoLayers(10);
  PlanOptions o;
  o.gpu = "T4";
  o.budget_sqnr_db = 20;  // INT8 everywhere is ~40 dB: the prior lets it be measured at once
  absl::StatusOr<Plan> easy = MakePlan(g, Samples(), o);
  ASSERT_TRUE(easy.ok()) << easy.status();
  EXPECT_TRUE(easy->meets_budget);
  EXPECT_EQ(easy->model_evaluations, 2);  // the FP32 reference and the INT8 plan, no gains
  for (const LayerChoice& c : easy->layers) EXPECT_EQ(c.format, NumericFormat::kInt8);
  o.budget_sqnr_db = 70;  // beyond INT8: the gains (an FP64 run, two tangents) and a plan
  absl::StatusOr<Plan> hard = MakePlan(g, Samples(), o);
  ASSERT_TRUE(hard.ok()) << hard.status();
  EXPECT_TRUE(hard->meets_budget);
  EXPECT_EQ(hard->model_evaluations, 1 + 1 + 2 + hard->rounds);
}

TEST(PlannerTest, TopOneBudgetNeedsAClassifier) {
  PlanOptions o;
  o.budget_top1 = 0.99;
  EXPECT_FALSE(MakePlan(TwoLayers(1), Samples(), o).ok());
  absl::StatusOr<Plan> plan = MakePlan(TwoLayers(10), Samples(), o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->meets_budget);
  EXPECT_GE(plan->measured_top1, 0.99);
}

}  // namespace
}  // namespace seedance::model
