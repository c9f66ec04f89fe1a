#include "seedance/train/clip.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "seedance/model/float_formats.h"

namespace seedance::train {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<uint16_t> Half(std::initializer_list<float> values) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(model::ToFloat16(v).bits);
  return bits;
}
std::vector<uint16_t> Bfloat(std::initializer_list<float> values) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(model::ToBFloat16(v).bits);
  return bits;
}
float HalfValue(uint16_t bits) { return model::FromFloat16(model::Float16{bits}); }

// torch 1.13's FP32 clip coefficient: clamp(reciprocal(total + 1e-6) * max_norm, max=1).
float TorchCoef32(float total, float max_norm) {
  return std::min(1.0f, (1.0f / (total + 1e-6f)) * max_norm);
}

ClipOptions MaxNorm(double max_norm, double norm_type = 2.0) {
  ClipOptions options;
  options.max_norm = max_norm;
  options.norm_type = norm_type;
  return options;
}

TEST(GradNormTest, L2AndInfOfHandComputableTensors) {
  std::vector<float> a = {3, 4};
  std::vector<float> b = {-12, 0};
  const std::vector<GradTensor> grads = {GradTensor::Float32(a), GradTensor::Float32(b)};
  EXPECT_EQ(TensorNorm(grads[0], {}), 5.0);
  EXPECT_EQ(GlobalNorm(grads, {}), 13.0);  // sqrt(5^2 + 12^2)
  EXPECT_EQ(GlobalNorm(grads, {.norm_type = NormType::kInf}), 12.0);
  EXPECT_EQ(GlobalNorm(grads, {.accumulate = Accumulate::kFloat64}), 13.0);
  EXPECT_EQ(GlobalNorm({}, {}), 0.0);
}

TEST(GradNormTest, NanAndInfPropagate) {
  std::vector<float> finite = {1, 2};
  std::vector<float> with_inf = {1, -kInf};
  std::vector<float> with_nan = {kNan, 1};
  EXPECT_EQ(GlobalNorm(std::vector{GradTensor::Float32(finite), GradTensor::Float32(with_inf)}, {}),
            kInf);
  EXPECT_TRUE(std::isnan(
      GlobalNorm(std::vector{GradTensor::Float32(with_inf), GradTensor::Float32(with_nan)}, {})));
  for (NormType type : {NormType::kL2, NormType::kInf}) {
    EXPECT_TRUE(std::isnan(GlobalNorm(
        std::vector{GradTensor::Float32(with_nan), GradTensor::Float32(finite)}, {type})));
    EXPECT_TRUE(std::isnan(GlobalNorm(
        std::vector{GradTensor::Float32(finite), GradTensor::Float32(with_nan)}, {type})));
  }
}

TEST(GradNormTest, Fp16NormsRoundToFp16LikeTorch) {
  std::vector<uint16_t> ones = Half({1, 1, 1});
  const GradTensor g = GradTensor::Float16(ones);
  // sqrt(3) = 1.7320508 is 1.732421875 in FP16.
  EXPECT_EQ(TensorNorm(g, {}), 1.732421875);
  EXPECT_EQ(TensorNorm(g, {.round_like_torch = false}), std::sqrt(3.0f));
}

TEST(GradNormTest, Fp16NormOverflowsToInfinityLikeTorchUnlessAsked) {
  std::vector<uint16_t> big = Half({60000, 60000});
  const std::vector<GradTensor> grads = {GradTensor::Float16(big)};
  EXPECT_EQ(GlobalNorm(grads, {}), kInf);  // 84852.8 > 65504: torch's FP16 norm is inf
  EXPECT_FLOAT_EQ(GlobalNorm(grads, {.round_like_torch = false}), 60000 * std::sqrt(2.0f));
}

TEST(GradNormTest, TorchCpuModeSumsFp16InFp16) {
  std::vector<uint16_t> ones(5000, model::ToFloat16(1).bits);
  const GradTensor g = GradTensor::Float16(ones);
  // Past 2048 adding 1 rounds back to 2048 in FP16: torch 1.13's CPU norm is sqrt(2048).
  EXPECT_EQ(TensorNorm(g, {.accumulate = Accumulate::kTorchCpuFloat16}), 45.25);
  EXPECT_EQ(TensorNorm(g, {}), model::RoundToFloat16(std::sqrt(5000.0f)));
  std::vector<uint16_t> thirties(100, model::ToFloat16(30).bits);  // squares sum to 90000
  EXPECT_EQ(GlobalNorm(std::vector{GradTensor::Float16(thirties)},
                       {.accumulate = Accumulate::kTorchCpuFloat16}),
            kInf);
  EXPECT_EQ(GlobalNorm(std::vector{GradTensor::Float16(thirties)}, {}), 300.0);
}

TEST(GradNormTest, MixedDtypesPromoteToFp32) {
  std::vector<uint16_t> h = Half({1, 1, 1});
  std::vector<uint16_t> b = Bfloat({1, 1, 1});
  const std::vector<GradTensor> grads = {GradTensor::Float16(h), GradTensor::BFloat16(b)};
  // FP16 norm 1.732421875, BF16 norm 1.734375 (sqrt(3) in BF16), total kept in FP32.
  const float want = std::sqrt(1.732421875f * 1.732421875f + 1.734375f * 1.734375f);
  EXPECT_EQ(GlobalNorm(grads, {}), want);
}

TEST(GradNormTest, Int8NormIsExactCodesTimesScale) {
  std::vector<int8_t> codes = {3, -4, 0};
  float scale = 0.5f;
  const GradTensor g = GradTensor::Int8(codes, &scale);
  EXPECT_EQ(TensorNorm(g, {}), 2.5);
  EXPECT_EQ(TensorNorm(g, {.norm_type = NormType::kInf}), 2.0);
  EXPECT_EQ(g.Value(1), -2.0f);
}

TEST(ClipTest, ClipsFp32ToMaxNormLikeTorch) {
  std::vector<float> a = {3, 4};
  absl::StatusOr<ClipResult> r = ClipGradNorm(std::vector{GradTensor::Float32(a)}, MaxNorm(1));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->total_norm, 5.0);
  EXPECT_TRUE(r->finite);
  const float coef = TorchCoef32(5, 1);
  EXPECT_EQ(r->clip_coef, coef);
  EXPECT_EQ(a[0], 3 * coef);
  EXPECT_EQ(a[1], 4 * coef);
  EXPECT_NEAR(a[0], 0.6, 1e-6);
}

TEST(ClipTest, LeavesGradientsBelowMaxNormBitwiseUnchanged) {
  std::vector<float> a = {0.1f, -0.2f};
  std::vector<uint16_t> h = Half({0.1f, 0.3f});
  const std::vector<uint16_t> h_before = h;
  absl::StatusOr<ClipResult> r =
      ClipGradNorm(std::vector{GradTensor::Float32(a), GradTensor::Float16(h)}, MaxNorm(10));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->clip_coef, 1.0);
  EXPECT_EQ(a, (std::vector<float>{0.1f, -0.2f}));
  EXPECT_EQ(h, h_before);
}

TEST(ClipTest, InfNormUsesMaxAbs) {
  std::vector<float> a = {1, -8, 2};
  absl::StatusOr<ClipResult> r =
      ClipGradNorm(std::vector{GradTensor::Float32(a)}, MaxNorm(2, kInf));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->total_norm, 8.0);
  EXPECT_EQ(a[1], -8 * TorchCoef32(8, 2));
}

TEST(ClipTest, Fp16ClipRoundsCoefficientThenProductToFp16) {
  std::vector<uint16_t> h = Half({3, 4});
  absl::StatusOr<ClipResult> r = ClipGradNorm(std::vector{GradTensor::Float16(h)}, MaxNorm(0.1));
  ASSERT_TRUE(r.ok());
  // All in FP16: 5 + 1e-6 rounds to 5, 1/5 to 0.199951171875, 0.1 to 0.0999755859375, and their
  // product to 0.0199890137 (FP16's nearest to 0.019990...).
  const float coef =
      model::RoundToFloat16(model::RoundToFloat16(1.0f / 5.0f) * model::RoundToFloat16(0.1f));
  EXPECT_EQ(r->total_norm, 5.0);
  EXPECT_EQ(r->clip_coef, coef);
  EXPECT_EQ(HalfValue(h[0]), model::RoundToFloat16(3 * coef));
  EXPECT_EQ(HalfValue(h[1]), model::RoundToFloat16(4 * coef));
}

TEST(ClipTest, Fp16ClipWithFp32CoefficientRoundsItToFp16First) {
  std::vector<float> a = {30, 40};
  std::vector<uint16_t> h = Half({1});
  absl::StatusOr<ClipResult> r =
      ClipGradNorm(std::vector{GradTensor::Float32(a), GradTensor::Float16(h)}, MaxNorm(1));
  ASSERT_TRUE(r.ok());
  const float total = std::sqrt(2501.0f);
  EXPECT_EQ(r->total_norm, total);
  const float coef = TorchCoef32(total, 1);
  EXPECT_NE(model::RoundToFloat16(coef), coef);
  EXPECT_EQ(HalfValue(h[0]), model::RoundToFloat16(coef));
  EXPECT_EQ(a[0], 30 * coef);
}

TEST(ClipTest, InfGradientZeroesFiniteOnesAndNanTheInfinity) {
  std::vector<float> a = {1, kInf};
  std::vector<float> b = {2, 3};
  absl::StatusOr<ClipResult> r =
      ClipGradNorm(std::vector{GradTensor::Float32(a), GradTensor::Float32(b)}, MaxNorm(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->total_norm, kInf);
  EXPECT_FALSE(r->finite);
  EXPECT_EQ(r->clip_coef, 0.0);
  EXPECT_EQ(a[0], 0.0f);
  EXPECT_TRUE(std::isnan(a[1]));  // inf * 0
  EXPECT_EQ(b, (std::vector<float>{0, 0}));
}

TEST(ClipTest, NanGradientMakesEveryGradientNan) {
  std::vector<float> a = {1, kNan};
  std::vector<uint16_t> h = Half({2});
  absl::StatusOr<ClipResult> r =
      ClipGradNorm(std::vector{GradTensor::Float32(a), GradTensor::Float16(h)}, MaxNorm(1));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan(r->total_norm));
  EXPECT_TRUE(std::isnan(r->clip_coef));
  EXPECT_TRUE(std::isnan(a[0]));
  EXPECT_TRUE(std::isnan(HalfValue(h[0])));
}

TEST(ClipTest, ErrorIfNonfiniteFailsWithoutWriting) {
  std::vector<float> a = {1, kInf};
  ClipOptions options = MaxNorm(1);
  options.error_if_nonfinite = true;
  absl::StatusOr<ClipResult> r = ClipGradNorm(std::vector{GradTensor::Float32(a)}, options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a[0], 1.0f);
}

TEST(ClipTest, Fp16OverflowNormWithoutTorchRoundingClipsToFiniteValues) {
  std::vector<uint16_t> h = Half({60000, 60000});
  ClipOptions options = MaxNorm(1);
  options.round_like_torch = false;
  absl::StatusOr<ClipResult> r = ClipGradNorm(std::vector{GradTensor::Float16(h)}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->finite);
  EXPECT_NEAR(HalfValue(h[0]), std::sqrt(0.5), 1e-3);

  std::vector<uint16_t> torch_like = Half({60000, 60000});
  r = ClipGradNorm(std::vector{GradTensor::Float16(torch_like)}, MaxNorm(1));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->finite);
  EXPECT_EQ(HalfValue(torch_like[0]), 0.0f);  // torch zeroes them
}

TEST(ClipTest, Int8ClipScalesTheScaleAndKeepsTheCodes) {
  std::vector<int8_t> codes = {6, -8};
  float scale = 0.5f;
  absl::StatusOr<ClipResult> r =
      ClipGradNorm(std::vector{GradTensor::Int8(codes, &scale)}, MaxNorm(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->total_norm, 5.0);
  EXPECT_EQ(codes, (std::vector<int8_t>{6, -8}));
  EXPECT_EQ(scale, 0.5f * TorchCoef32(5, 1));
}

TEST(ClipTest, PerGroupClipsEachGroupByItsOwnNorm) {
  std::vector<float> big = {3, 4};
  std::vector<float> small = {0.3f, 0.4f};
  const std::vector<std::vector<GradTensor>> groups = {{GradTensor::Float32(big)},
                                                       {GradTensor::Float32(small)}};
  absl::StatusOr<std::vector<ClipResult>> r =
      ClipGradNormGroups(groups, ClipMode::kPerGroup, MaxNorm(1));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].total_norm, 5.0);
  EXPECT_EQ((*r)[1].total_norm, static_cast<double>(std::sqrt(0.3f * 0.3f + 0.4f * 0.4f)));
  EXPECT_EQ(big[0], 3 * TorchCoef32(5, 1));
  EXPECT_EQ(small, (std::vector<float>{0.3f, 0.4f}));  // its norm 0.5 is under max_norm
}

TEST(ClipTest, GlobalModeClipsEveryGroupByTheCombinedNorm) {
  std::vector<float> big = {3, 4};
  std::vector<float> small = {12, 0};
  const std::vector<std::vector<GradTensor>> groups = {{GradTensor::Float32(big)},
                                                       {GradTensor::Float32(small)}};
  absl::StatusOr<std::vector<ClipResult>> r =
      ClipGradNormGroups(groups, ClipMode::kGlobal, MaxNorm(1));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  const float coef = TorchCoef32(13, 1);
  for (const ClipResult& result : *r) EXPECT_EQ(result.total_norm, 13.0);
  EXPECT_EQ(big[1], 4 * coef);
  EXPECT_EQ(small[0], 12 * coef);
}

TEST(ClipTest, PerGroupErrorIfNonfiniteWritesNoGroup) {
  std::vector<float> big = {3, 4};
  std::vector<float> bad = {kNan};
  const std::vector<std::vector<GradTensor>> groups = {{GradTensor::Float32(big)},
                                                       {GradTensor::Float32(bad)}};
  ClipOptions options = MaxNorm(1);
  options.error_if_nonfinite = true;
  EXPECT_FALSE(ClipGradNormGroups(groups, ClipMode::kPerGroup, options).ok());
  EXPECT_EQ(big[0], 3.0f);
}

TEST(ClipTest, RejectsBadOptions) {
  std::vector<float> a = {3, 4};
  const std::vector<GradTensor> grads = {GradTensor::Float32(a)};
  for (double norm_type : {1.0, 3.0, 0.0, -static_cast<double>(kInf), static_cast<double>(kNan)}) {
    EXPECT_EQ(ClipGradNorm(grads, MaxNorm(1, norm_type)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << norm_type;
  }
  for (double max_norm : {0.0, -1.0, static_cast<double>(kNan)}) {
    EXPECT_EQ(ClipGradNorm(grads, MaxNorm(max_norm)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << max_norm;
  }
  ClipOptions options = MaxNorm(1);
  options.eps = -1;
  EXPECT_FALSE(ClipGradNorm(grads, options).ok());
  EXPECT_EQ(a, (std::vector<float>{3, 4}));
  EXPECT_FALSE(
      ClipGradNormGroups(std::vector<std::vector<GradTensor>>{grads}, ClipMode::kGlobal, MaxNorm(0))
          .ok());
}

TEST(UnscaleTest, DividesByTheScaleInEachStorageType) {
  std::vector<float> a = {65536, -3};
  std::vector<uint16_t> h = Half({1024, 0.5f});
  std::vector<uint16_t> b = Bfloat({4096});
  std::vector<int8_t> codes = {5};
  float scale = 2.0f;
  const std::vector<GradTensor> grads = {GradTensor::Float32(a), GradTensor::Float16(h),
                                         GradTensor::BFloat16(b), GradTensor::Int8(codes, &scale)};
  EXPECT_FALSE(UnscaleGrads(grads, 1024));
  EXPECT_EQ(a, (std::vector<float>{64, -3.0f / 1024}));
  EXPECT_EQ(HalfValue(h[0]), 1.0f);
  EXPECT_EQ(HalfValue(h[1]), model::RoundToFloat16(0.5f / 1024));  // an FP16 subnormal
  EXPECT_EQ(model::FromBFloat16(model::BFloat16{b[0]}), 4.0f);
  EXPECT_EQ(scale, 2.0f / 1024);
  EXPECT_EQ(codes[0], 5);
}

TEST(UnscaleTest, FlagsInfAndNanInEveryStorageType) {
  std::vector<float> a = {1, kNan};
  std::vector<uint16_t> h = Half({kInf});
  std::vector<uint16_t> b = Bfloat({-kInf});
  std::vector<int8_t> codes = {1};
  float scale = kNan;
  std::vector<float> fine = {1};
  EXPECT_TRUE(UnscaleGrads(std::vector{GradTensor::Float32(a)}, 2));
  EXPECT_EQ(a[0], 0.5f);  // unscaled all the same
  EXPECT_TRUE(UnscaleGrads(std::vector{GradTensor::Float16(h)}, 2));
  EXPECT_TRUE(UnscaleGrads(std::vector{GradTensor::BFloat16(b)}, 2));
  EXPECT_TRUE(UnscaleGrads(std::vector{GradTensor::Int8(codes, &scale)}, 2));
  EXPECT_FALSE(UnscaleGrads(std::vector{GradTensor::Float32(fine)}, 2));
}

TEST(LossScalerTest, HasGradScalerDefaults) {
  LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.options().growth_factor, 2.0);
  EXPECT_EQ(scaler.options().backoff_factor, 0.5);
  EXPECT_EQ(scaler.options().growth_interval, 2000);
  EXPECT_EQ(scaler.ScaleLoss(1.5f), 98304.0f);
}

TEST(LossScalerTest, GrowsAfterGrowthIntervalCleanSteps) {
  LossScaler scaler;
  for (int step = 1; step < 2000; ++step) {
    const ScaleUpdate u = scaler.Update(false);
    ASSERT_FALSE(u.step_skipped);
    ASSERT_EQ(u.scale, 65536.0f) << step;
  }
  EXPECT_EQ(scaler.growth_tracker(), 1999);
  const ScaleUpdate u = scaler.Update(false);
  EXPECT_FALSE(u.step_skipped);
  EXPECT_EQ(u.scale, 131072.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(LossScalerTest, BacksOffAndSkipsOnInfAndRestartsTheCount) {
  LossScaler scaler;
  for (int step = 0; step < 1500; ++step) scaler.Update(false);
  const ScaleUpdate u = scaler.Update(true);
  EXPECT_TRUE(u.step_skipped);
  EXPECT_EQ(u.scale, 32768.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  for (int step = 1; step < 2000; ++step) ASSERT_EQ(scaler.Update(false).scale, 32768.0f);
  EXPECT_EQ(scaler.Update(false).scale, 65536.0f);
}

TEST(LossScalerTest, ScriptedSequenceWithCustomOptions) {
  absl::StatusOr<LossScaler> scaler = LossScaler::Create(
      {.init_scale = 8, .growth_factor = 4, .backoff_factor = 0.25, .growth_interval = 2});
  ASSERT_TRUE(scaler.ok());
  struct Step {
    bool found_inf;
    bool skipped;
    float scale;
  };
  const std::vector<Step> script = {{false, false, 8}, {false, false, 32}, {true, true, 8},
                                    {false, false, 8}, {true, true, 2},    {false, false, 2},
                                    {false, false, 8}, {false, false, 8},  {false, false, 32}};
  for (size_t i = 0; i < script.size(); ++i) {
    const ScaleUpdate u = scaler->Update(script[i].found_inf);
    EXPECT_EQ(u.step_skipped, script[i].skipped) << "step " << i;
    EXPECT_EQ(u.scale, script[i].scale) << "step " << i;
  }
}

TEST(LossScalerTest, DoesNotGrowToInfinity) {
  absl::StatusOr<LossScaler> scaler =
      LossScaler::Create({.init_scale = 3e38f, .growth_factor = 2, .growth_interval = 1});
  ASSERT_TRUE(scaler.ok());
  EXPECT_EQ(scaler->Update(false).scale, 3e38f);
  EXPECT_EQ(scaler->growth_tracker(), 0);
}

TEST(LossScalerTest, RejectsBadOptions) {
  const std::vector<LossScalerOptions> bad = {
      {.init_scale = 0},     {.init_scale = kInf},   {.growth_factor = 1},    {.backoff_factor = 1},
      {.backoff_factor = 0}, {.growth_interval = 0}, {.growth_factor = kNan}, {.init_scale = -1}};
  for (const LossScalerOptions& options : bad) {
    EXPECT_EQ(LossScaler::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(GradTensorDeathTest, Int8NeedsAScale) {
  std::vector<int8_t> codes = {1};
  EXPECT_DEATH(GradTensor::Int8(codes, nullptr), "an INT8 gradient needs its scale");
}

TEST(GradTensorDeathTest, ValueOutOfRange) {
  std::vector<float> a = {1};
  EXPECT_DEATH(GradTensor::Float32(a).Value(1), "i < size_.*gradient element .* of ");
}

TEST(GradTensorDeathTest, StorageOfTheWrongDtype) {
  std::vector<float> a = {1};
  std::vector<uint16_t> h = {0};
  EXPECT_DEATH(GradTensor::Float16(h).float32(), "float32\\(\\) of a non-FP32 gradient");
  EXPECT_DEATH(GradTensor::Float32(a).bits(),
               "bits\\(\\) of a gradient that is neither FP16 nor BF16");
  EXPECT_DEATH(GradTensor::Float32(a).codes(), "codes\\(\\) of a non-INT8 gradient");
  EXPECT_DEATH(GradTensor::Float32(a).int8_scale(), "int8_scale\\(\\) of a non-INT8 gradient");
}

TEST(UnscaleDeathTest, NeedsAFinitePositiveScale) {
  std::vector<float> a = {1};
  EXPECT_DEATH(UnscaleGrads(std::vector{GradTensor::Float32(a)}, 0),
               "loss_scale > 0.*must be finite and > 0");
}

}  // namespace
}  // namespace seedance::train
