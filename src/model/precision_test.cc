#include "seedance/model/precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace seedance::model {
namespace {

class PrecisionTest : public ::testing::Test {
 protected:
  static PrecisionBinder Binder(const char* gpu, PrecisionOptions o = {}) {
    return PrecisionBinder(*LookupCapabilities(gpu), o);
  }
  static bool Logged(const ClassPrecisionPlan& p, const std::string& needle) {
    for (const std::string& d : p.decisions) {
      if (d.find(needle) != std::string::npos) return true;
    }
    return false;
  }
};

TEST(PrecisionDeathTest, NegativeOrNanErrorIsCaught) {
  PrecisionBinder binder(*LookupCapabilities("h100"), PrecisionOptions{});
  EXPECT_DEATH(binder.ReportError(LayerClass::kFfn, DType::kINT8, -0.5),
               "measured relative error -0.5, need >= 0");
  EXPECT_DEATH(binder.ReportError(LayerClass::kFfn, DType::kINT8, std::nan("")),
               "measured relative error nan, need >= 0");
}

TEST_F(PrecisionTest, CapabilityTablePerGpu) {
  struct Row {
    const char* gpu;
    bool bf16, fp16, fp8, int8;
  };
  const Row rows[] = {
      {"t4", false, true, false, true},      {"a10", true, true, false, true},
      {"a100-80g", true, true, false, true}, {"l40s", true, true, true, true},
      {"h100", true, true, true, true},      {"h200", true, true, true, true},
  };
  for (const Row& r : rows) {
    const DeviceCapabilities c = *LookupCapabilities(r.gpu);
    EXPECT_EQ(c.Supports(DType::kBF16), r.bf16) << r.gpu;
    EXPECT_EQ(c.Supports(DType::kFP16), r.fp16) << r.gpu;
    EXPECT_EQ(c.Supports(DType::kFP8), r.fp8) << r.gpu;
    EXPECT_EQ(c.Supports(DType::kINT8), r.int8) << r.gpu;
    EXPECT_TRUE(c.Supports(DType::kFP32)) << r.gpu;
  }
  EXPECT_FALSE(LookupCapabilities("v100").ok());
}

TEST_F(PrecisionTest, PerLayerRulesOnHopper) {
  const ClassPrecisionPlan p = Binder("h100").RulePlan();
  EXPECT_EQ(p.of(LayerClass::kEmbedding), DType::kFP16);
  EXPECT_EQ(p.of(LayerClass::kFfn), DType::kINT8);
  EXPECT_EQ(p.of(LayerClass::kNorm), DType::kBF16);
  EXPECT_EQ(p.of(LayerClass::kAttention), DType::kBF16);
  EXPECT_EQ(p.of(LayerClass::kLmHead), DType::kBF16);
  EXPECT_EQ(p.kv(), DType::kBF16);
}

TEST_F(PrecisionTest, RulesFallBackToFp16WithoutBf16) {
  const ClassPrecisionPlan p = Binder("t4").RulePlan();
  EXPECT_EQ(p.of(LayerClass::kNorm), DType::kFP16);
  EXPECT_EQ(p.of(LayerClass::kAttention), DType::kFP16);
  EXPECT_EQ(p.kv(), DType::kFP16);
  EXPECT_EQ(p.of(LayerClass::kFfn), DType::kINT8);
  EXPECT_EQ(p.of(LayerClass::kEmbedding), DType::kFP16);
}

TEST_F(PrecisionTest, Int8OverTheCalibrationLimitGoesBackTo16Bit) {
  PrecisionBinder h100 = Binder("h100");
  h100.ReportError(LayerClass::kFfn, DType::kINT8, 0.010);
  EXPECT_EQ(h100.RulePlan().of(LayerClass::kFfn), DType::kINT8);  // 1.0% < 2.3%
  PrecisionBinder bad = Binder("h100");
  bad.ReportError(LayerClass::kFfn, DType::kINT8, 0.031);
  const ClassPrecisionPlan p = bad.RulePlan();
  EXPECT_EQ(p.of(LayerClass::kFfn), DType::kBF16);
  EXPECT_TRUE(Logged(p, "ffn: int8 -> bf16 (measured error 3.10% > limit 2.30%)"));
  PrecisionBinder t4 = Binder("t4");
  t4.ReportError(LayerClass::kFfn, DType::kINT8, 0.031);
  EXPECT_EQ(t4.RulePlan().of(LayerClass::kFfn), DType::kFP16);  // no BF16 on T4
}

TEST_F(PrecisionTest, ErrorFeedbackIsSmoothedAndCanRecover) {
  PrecisionBinder b = Binder("a100-80g");
  b.ReportError(LayerClass::kFfn, DType::kINT8, 0.040);  // one bad batch
  EXPECT_EQ(b.RulePlan().of(LayerClass::kFfn), DType::kBF16);
  for (int i = 0; i < 6; ++i) b.ReportError(LayerClass::kFfn, DType::kINT8, 0.005);
  EXPECT_LT(*b.MeasuredError(LayerClass::kFfn, DType::kINT8), 0.023);
  EXPECT_EQ(b.RulePlan().of(LayerClass::kFfn), DType::kINT8);
}

TEST_F(PrecisionTest, Bf16CalibrationErrorDowngradesToFp16ThenInt8) {
  PrecisionBinder b = Binder("a100-80g");
  b.ReportError(LayerClass::kAttention, DType::kBF16, 0.02);  // BF16 mantissa too coarse
  EXPECT_EQ(b.RulePlan().of(LayerClass::kAttention), DType::kFP16);
  b.ReportError(LayerClass::kAttention, DType::kFP16, 0.05);  // FP16 overflows
  b.ReportError(LayerClass::kAttention, DType::kFP16, 0.05);
  b.ReportError(LayerClass::kAttention, DType::kINT8, 0.01);  // calibrated INT8 is fine
  EXPECT_EQ(b.RulePlan().of(LayerClass::kAttention), DType::kINT8);
  b.ReportError(LayerClass::kAttention, DType::kINT8, 0.2);
  b.ReportError(LayerClass::kAttention, DType::kINT8, 0.2);
  EXPECT_EQ(b.RulePlan().of(LayerClass::kAttention), DType::kFP32);  // nothing else is good
}

TEST_F(PrecisionTest, MemoryPressureWalksTheLadderLeastSensitiveFirst) {
  const ModelConfig m = *LookupModel("llama-3-8b");
  const GpuSpec a10 = *LookupGpu("a10");  // 24 GB
  const PrecisionBinder b = Binder("a10");
  const ClassPrecisionPlan roomy = b.Bind(m, a10, 1, 1000);
  EXPECT_TRUE(roomy.fits_memory);
  EXPECT_EQ(roomy.of(LayerClass::kAttention), DType::kBF16);  // no pressure, rules stand
  // 92k tokens of BF16 KV (11.2 GiB) plus the rule plan's 9.7 GiB of weights exceed 0.9 * 24 GiB:
  // attention goes BF16 -> FP16 -> INT8 before the KV cache is touched.
  const ClassPrecisionPlan tight = b.Bind(m, a10, 1, 92000);
  EXPECT_TRUE(tight.fits_memory);
  EXPECT_TRUE(Logged(tight, "attention: bf16 -> fp16 (memory pressure"));
  EXPECT_TRUE(Logged(tight, "attention: fp16 -> int8 (memory pressure"));
  EXPECT_EQ(tight.of(LayerClass::kAttention), DType::kINT8);
  EXPECT_EQ(tight.kv(), DType::kBF16);
  EXPECT_EQ(tight.of(LayerClass::kNorm), DType::kBF16);  // norms never leave 16 bits
  // Even more KV: the KV cache itself goes to INT8.
  const ClassPrecisionPlan tighter = b.Bind(m, a10, 1, 150000);
  EXPECT_TRUE(tighter.fits_memory);
  EXPECT_EQ(tighter.kv(), DType::kINT8);
  // Impossible: reported, not hidden.
  const ClassPrecisionPlan impossible = b.Bind(*LookupModel("llama-3-70b"), a10, 1, 1000);
  EXPECT_FALSE(impossible.fits_memory);
  EXPECT_TRUE(Logged(impossible, "does not fit"));
}

TEST_F(PrecisionTest, MemoryDowngradeSkipsFormatsWithBadMeasuredError) {
  const ModelConfig m = *LookupModel("llama-3-8b");
  const GpuSpec a10 = *LookupGpu("a10");
  PrecisionBinder b = Binder("a10");
  b.ReportError(LayerClass::kAttention, DType::kINT8, 0.08);
  const ClassPrecisionPlan p = b.Bind(m, a10, 1, 92000);
  EXPECT_NE(p.of(LayerClass::kAttention), DType::kINT8);
  EXPECT_TRUE(p.fits_memory);
  EXPECT_EQ(p.kv(), DType::kINT8);  // the pressure went to the next class instead
}

TEST_F(PrecisionTest, PlanIsReflectedInTheCostModel) {
  const ModelConfig m = *LookupModel("llama-3-8b");
  const GpuSpec a10 = *LookupGpu("a10");
  const PrecisionBinder b = Binder("a10");
  const ClassPrecisionPlan rules = b.Bind(m, a10, 1, 1000);
  const ClassPrecisionPlan tight = b.Bind(m, a10, 1, 150000);
  const CostModel base = MakeCostModel(m, a10, 1, rules);
  const CostModel small = MakeCostModel(m, a10, 1, tight);
  EXPECT_EQ(small.model().KvBytesPerToken() * 2, base.model().KvBytesPerToken());  // INT8 KV
  EXPECT_LT(WeightBytes(m, tight.weights()), WeightBytes(m, rules.weights()));
  EXPECT_GT(small.KvCacheBytes(), base.KvCacheBytes());
  const std::vector<SequenceWork> decode(16, SequenceWork{1, 2048});
  EXPECT_LT(small.StepSeconds(decode), base.StepSeconds(decode));
  // The rule plan itself already differs from all-BF16: FFN INT8, embedding FP16.
  EXPECT_LT(WeightBytes(m, rules.weights()), m.WeightBytes());
}

}  // namespace
}  // namespace seedance::model
