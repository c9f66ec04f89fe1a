#include "seedance/cost/cost_model.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::cost {
namespace {

TEST(CostPer1kTokensTest, FollowsPriceThroughputAndUtilisation) {
  // One A100-80GB at $3.93/h serving 2,000 tokens/s while busy, busy all the time:
  // 3.93 / 3600 = $0.00109167/s; / 2000 tokens/s * 1000 = $0.000545833 per 1K tokens.
  Deployment d{3.93, 1, 2000, 1.0};
  EXPECT_NEAR(*CostPer1kTokensUsd(d), 3.93 / 3600 / 2000 * 1000, 1e-12);
  // Half as busy: twice the cost per token. Twice the GPUs at the same throughput: twice too.
  Deployment half = d;
  half.utilisation = 0.5;
  EXPECT_NEAR(*CostPer1kTokensUsd(half), 2 * *CostPer1kTokensUsd(d), 1e-12);
  Deployment two = d;
  two.num_gpus = 2;
  EXPECT_NEAR(*CostPer1kTokensUsd(two), 2 * *CostPer1kTokensUsd(d), 1e-12);
}

TEST(CostPer1kTokensTest, RejectsMeaninglessInputs) {
  EXPECT_FALSE(CostPer1kTokensUsd({3.93, 1, 0, 1}).ok());
  EXPECT_FALSE(CostPer1kTokensUsd({3.93, 1, 100, 0}).ok());
  EXPECT_FALSE(CostPer1kTokensUsd({3.93, 1, 100, 1.5}).ok());
  EXPECT_FALSE(CostPer1kTokensUsd({-1, 1, 100, 1}).ok());
  EXPECT_FALSE(CostPer1kTokensUsd({1, 0, 100, 1}).ok());
}

TEST(SliceCostTest, CountsRoundingWasteAndPerSliceOverhead) {
  const std::vector<double> demands = {0.3, 0.5, 1.0};
  SliceCostParams p;
  p.overhead_per_slice = 0.01;
  // s = 1/4: 0.3 -> 2 slices (waste 0.2), 0.5 -> 2 (0), 1.0 -> 4 (0).
  SliceCost c = SliceCostOf(demands, 0.25, p);
  EXPECT_EQ(c.slices, 8);
  EXPECT_NEAR(c.waste_gpus, 0.2, 1e-12);
  EXPECT_NEAR(c.overhead_gpus, 0.08, 1e-12);
  // s = 1: every demand gets one whole GPU: waste 0.7 + 0.5.
  c = SliceCostOf(demands, 1.0, p);
  EXPECT_EQ(c.slices, 3);
  EXPECT_NEAR(c.waste_gpus, 1.2, 1e-12);
}

TEST(SliceCostTest, EighthGpuInferenceDemandsPickEighthSlices) {
  // The seed's real-time inference case: 1/8-GPU requests.
  const std::vector<double> demands(64, 0.125);
  SliceCostParams p;
  p.overhead_per_slice = 0.005;
  auto best = BestSliceSize(demands, PowerOfTwoSlices(16), p);
  ASSERT_TRUE(best.ok());
  EXPECT_DOUBLE_EQ(best->slice, 0.125);
  EXPECT_NEAR(best->waste_gpus, 0, 1e-9);
}

TEST(SliceCostTest, WholeGpuTrainingPicksWholeGpus) {
  const std::vector<double> demands(16, 1.0);
  auto best = BestSliceSize(demands, PowerOfTwoSlices(16), SliceCostParams{});
  ASSERT_TRUE(best.ok());
  EXPECT_DOUBLE_EQ(best->slice, 1.0);
}

TEST(SliceCostTest, HeavyOverheadPushesTowardCoarserSlices) {
  const std::vector<double> demands = {0.1, 0.2, 0.3, 0.15, 0.45, 0.6};
  SliceCostParams light;
  light.overhead_per_slice = 0.001;
  SliceCostParams heavy;
  heavy.overhead_per_slice = 0.2;
  const auto candidates = PowerOfTwoSlices(32);
  auto a = BestSliceSize(demands, candidates, light);
  auto b = BestSliceSize(demands, candidates, heavy);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(a->slice, b->slice);
  // The winner is no worse than any candidate.
  for (double s : candidates)
    EXPECT_LE(a->total_gpus(), SliceCostOf(demands, s, light).total_gpus() + 1e-12);
}

TEST(SliceCostTest, ContinuousOptimumMinimisesTheSmoothModel) {
  // total(s) = n s / 2 + a / s with a = o * sum(d) + m * G.
  std::vector<double> demands(100);
  for (int i = 0; i < 100; ++i) demands[i] = 0.05 + 0.009 * i;
  SliceCostParams p;
  p.overhead_per_slice = 0.01;
  p.metadata_per_gpu_slice = 0.002;
  p.num_gpus = 40;
  const double s_star = ContinuousOptimalSlice(demands, p);
  double sum = 0;
  for (double d : demands) sum += d;
  const double a = 0.01 * sum + 0.002 * 40;
  auto smooth = [&](double s) { return 100 * s / 2 + a / s; };
  EXPECT_NEAR(s_star, std::sqrt(2 * a / 100), 1e-12);
  EXPECT_LT(smooth(s_star), smooth(s_star * 1.1));
  EXPECT_LT(smooth(s_star), smooth(s_star * 0.9));
  // The exact (discrete) cost near s* is within a few percent of the best power-of-two slice.
  auto best = BestSliceSize(demands, PowerOfTwoSlices(64), p);
  ASSERT_TRUE(best.ok());
  EXPECT_LT(std::fabs(std::log2(best->slice) - std::log2(s_star)), 1.0);
}

TEST(SliceCostTest, TheSeedFunctionHasNoInteriorMinimum) {
  // overhead(g) = 100/g + 1e6 * 0.3 * (1 - g) falls all the way to g = 1.
  double prev = SeedOverhead(0.01);
  for (double g = 0.02; g <= 1.0 + 1e-9; g += 0.01) {
    const double v = SeedOverhead(g);
    EXPECT_LT(v, prev) << g;
    prev = v;
  }
}

TEST(SliceCostTest, RejectsBadInputs) {
  const std::vector<double> ok = {0.5};
  EXPECT_FALSE(BestSliceSize({}, PowerOfTwoSlices(4), {}).ok());
  EXPECT_FALSE(BestSliceSize(ok, {}, {}).ok());
  const std::vector<double> bad_slice = {1.5};
  EXPECT_FALSE(BestSliceSize(ok, bad_slice, {}).ok());
  const std::vector<double> bad_demand = {0.0};
  EXPECT_FALSE(BestSliceSize(bad_demand, PowerOfTwoSlices(4), {}).ok());
}

}  // namespace
}  // namespace seedance::cost
