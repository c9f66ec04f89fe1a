#include "seedance/model/cost_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace seedance::model {
namespace {

class CostModelTest : public ::testing::Test {
 protected:
  static ModelConfig Model(const char* name) { return *LookupModel(name); }
  static GpuSpec Gpu(const char* name) { return *LookupGpu(name); }
  static std::vector<SequenceWork> Decode(int seqs, int context) {
    return std::vector<SequenceWork>(seqs, SequenceWork{1, context});
  }
  static std::vector<SequenceWork> Prefill(int tokens) { return {SequenceWork{tokens, 0}}; }
};

TEST_F(CostModelTest, LooksUpModelsAndGpusCaseInsensitively) {
  EXPECT_EQ(Model("Llama-2-7B").num_layers, 32);
  EXPECT_EQ(Model("llama-3-8b").num_kv_heads, 8);
  EXPECT_EQ(Gpu("H100").mem_bandwidth_gbps, 3350);
  for (const char* g : {"a100-80g", "h100", "h200", "l40s", "a10", "t4"}) {
    EXPECT_TRUE(LookupGpu(g).ok()) << g;
  }
  EXPECT_FALSE(LookupModel("gpt-5").ok());
  // A driver's name finds the catalog's model; the canonical name is what is reported.
  EXPECT_EQ(Gpu("NVIDIA H100 80GB HBM3").name, "H100");
  EXPECT_EQ(Gpu("a100-80g").name, "A100-80GB");
  EXPECT_EQ(Gpu("NVIDIA A100-SXM4-40GB").mem_bandwidth_gbps, 1555);
  // The catalog knows the V100 but has no compute figures for it: refused, saying so.
  absl::StatusOr<GpuSpec> bad = LookupGpu("v100");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no compute figures for V100"), std::string::npos);
  EXPECT_NE(bad.status().message().find("H100"), std::string::npos);  // lists the known ones
  absl::StatusOr<GpuSpec> unknown = LookupGpu("mi300x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message().find("compute figures"), std::string::npos);
}

TEST_F(CostModelTest, KvBytesPerTokenFollowsKvHeadsAndDtype) {
  EXPECT_EQ(Model("llama-2-7b").KvBytesPerToken(), 2 * 32 * 32 * 128 * 2);  // 512 KiB
  EXPECT_EQ(Model("llama-3-8b").KvBytesPerToken(), 2 * 32 * 8 * 128 * 2);   // GQA: 128 KiB
  ModelConfig m = Model("llama-3-8b");
  m.kv_dtype = DType::kFP8;
  EXPECT_EQ(m.KvBytesPerToken(), 2 * 32 * 8 * 128);
}

TEST_F(CostModelTest, WeightBytesMatchPublishedParameterCounts) {
  EXPECT_NEAR(Model("llama-2-7b").WeightBytes() / 2.0, 6.74e9, 0.02e9);
  EXPECT_NEAR(Model("llama-3-8b").WeightBytes() / 2.0, 8.03e9, 0.02e9);
  EXPECT_NEAR(Model("llama-2-70b").WeightBytes() / 2.0, 68.98e9, 0.2e9);
  // Per-class dtypes: INT8 MLP halves the MLP bytes only.
  const ModelConfig m = Model("llama-2-7b");
  WeightDTypes d = WeightDTypes::Uniform(DType::kBF16);
  d.mlp = DType::kINT8;
  const double mlp_params = 32.0 * 3 * 4096 * 11008;
  EXPECT_NEAR(static_cast<double>(m.WeightBytes() - WeightBytes(m, d)), mlp_params, 1e3);
}

TEST_F(CostModelTest, EmptyBatchCostsNothing) {
  const CostModel cm(Model("llama-2-7b"), Gpu("a100-80g"));
  EXPECT_EQ(cm.StepSeconds({}), 0);
  const std::vector<SequenceWork> none = {SequenceWork{0, 100}};
  EXPECT_EQ(cm.StepSeconds(none), 0);
}

TEST_F(CostModelTest, DecodeIsBoundByReadingTheWeights) {
  const ModelConfig m = Model("llama-2-7b");
  const GpuSpec g = Gpu("a100-80g");
  const CostModel cm(m, g);
  const double t = cm.StepSeconds(Decode(1, 128));
  const double weights_read = m.WeightBytes() / (g.mem_bandwidth_gbps * 1e9);
  EXPECT_GT(t, weights_read);
  EXPECT_LT(t, 2.0 * weights_read + cm.params().iteration_overhead_s);
}

TEST_F(CostModelTest, PrefillIsBoundByCompute) {
  const ModelConfig m = Model("llama-2-7b");
  const GpuSpec g = Gpu("a100-80g");
  const CostModel cm(m, g);
  const double t = cm.StepSeconds(Prefill(4096));
  const double flops = 2.0 * (m.WeightBytes() / 2.0) * 4096;
  EXPECT_GT(t, flops / (g.peak_tflops_16 * 1e12));
  EXPECT_LT(t, 2.0 * flops / (g.peak_tflops_16 * 1e12));
}

TEST_F(CostModelTest, StepTimeGrowsWithWorkAndFasterGpusAreFaster) {
  const ModelConfig m = Model("llama-3-8b");
  double prev = 0;
  for (int seqs : {1, 8, 64, 256}) {
    const double t = CostModel(m, Gpu("a100-80g")).StepSeconds(Decode(seqs, 1024));
    EXPECT_GT(t, prev) << seqs;
    prev = t;
  }
  const auto batch = Decode(32, 2048);
  const double t4 = CostModel(m, Gpu("t4")).StepSeconds(batch);
  const double a10 = CostModel(m, Gpu("a10")).StepSeconds(batch);
  const double a100 = CostModel(m, Gpu("a100-80g")).StepSeconds(batch);
  const double h100 = CostModel(m, Gpu("h100")).StepSeconds(batch);
  const double h200 = CostModel(m, Gpu("h200")).StepSeconds(batch);
  EXPECT_GT(t4, a10);
  EXPECT_GT(a10, a100);
  EXPECT_GT(a100, h100);
  EXPECT_GT(h100, h200);  // same compute, more bandwidth
}

TEST_F(CostModelTest, TensorParallelSplitsWorkAndPaysAllReduce) {
  const ModelConfig m = Model("llama-2-70b");
  const GpuSpec g = Gpu("h100");
  const auto batch = Prefill(2048);
  const CostModel tp1(m, g, 1), tp4(m, g, 4);
  EXPECT_EQ(tp1.StepBreakdown(batch).allreduce_s, 0);
  EXPECT_GT(tp4.StepBreakdown(batch).allreduce_s, 0);
  EXPECT_LT(tp4.StepSeconds(batch), tp1.StepSeconds(batch) / 2);
  EXPECT_GT(tp4.KvCacheBytes(), 0);
  EXPECT_EQ(tp1.KvCacheBytes(), 0);  // 138 GB of weights do not fit one 80 GB GPU
}

TEST_F(CostModelTest, BreakdownSumsToStepTime) {
  const CostModel cm(Model("llama-3-8b"), Gpu("h100"), 2);
  const std::vector<SequenceWork> mixed = {{512, 0}, {1, 100}, {1, 3000}, {256, 1024}};
  const CostModel::Breakdown b = cm.StepBreakdown(mixed);
  EXPECT_DOUBLE_EQ(b.total(), cm.StepSeconds(mixed));
  EXPECT_GT(b.attention_s, 0);
  EXPECT_GT(b.linear_s, b.elementwise_s);
}

TEST_F(CostModelTest, KvCacheIsWhatIsLeftAfterWeights) {
  const CostModel cm(Model("llama-2-7b"), Gpu("a100-80g"));
  const double total = 80.0 * (1 << 30) * 0.9;
  const double kv = static_cast<double>(cm.KvCacheBytes(0.9));
  EXPECT_LT(kv, total - Model("llama-2-7b").WeightBytes());
  EXPECT_GT(kv, total - Model("llama-2-7b").WeightBytes() - 3.0 * (1 << 30));
  EXPECT_LT(cm.KvCacheBytes(0.5), cm.KvCacheBytes(0.9));
  EXPECT_EQ(CostModel(Model("llama-3-70b"), Gpu("t4")).KvCacheBytes(), 0);
}

TEST_F(CostModelTest, LowerPrecisionWeightsSpeedDecodeAndFreeMemory) {
  const ModelConfig m = Model("llama-3-8b");
  CostModel bf16(m, Gpu("h100"));
  CostModel int8(m, Gpu("h100"));
  int8.set_weight_dtypes(WeightDTypes::Uniform(DType::kINT8));
  EXPECT_LT(int8.StepSeconds(Decode(4, 512)), bf16.StepSeconds(Decode(4, 512)));
  EXPECT_GT(int8.KvCacheBytes(), bf16.KvCacheBytes());
  EXPECT_LT(int8.StepSeconds(Prefill(4096)), bf16.StepSeconds(Prefill(4096)));  // 8-bit peak
}

TEST_F(CostModelTest, Fp8OnAGpuWithoutFp8UsesThe16BitPeak) {
  GpuSpec no8 = Gpu("a100-80g");
  no8.peak_tflops_8 = 0;
  EXPECT_EQ(PeakTflops(no8, DType::kFP8), no8.peak_tflops_16);
  EXPECT_EQ(PeakTflops(Gpu("h100"), DType::kFP8), 1979);
  EXPECT_LT(PeakTflops(Gpu("h100"), DType::kFP32), PeakTflops(Gpu("h100"), DType::kBF16));
}

TEST_F(CostModelTest, AllReduceIsLatencyPlusBandwidth) {
  const GpuSpec g = Gpu("h100");
  CostModelParams p;
  p.allreduce_small_efficiency = 0;  // bulk protocol only
  EXPECT_EQ(AllReduceSeconds(g, p, 1e6, 1), 0);
  const double s = 64e6;
  const double want = p.allreduce_latency_s +
                      2.0 * 7 / 8 * s / (p.allreduce_efficiency * g.interconnect_gbps * 1e9);
  EXPECT_DOUBLE_EQ(AllReduceSeconds(g, p, s, 8), want);
  // With the low-latency protocol, small messages get cheaper, large ones do not.
  CostModelParams both = p;
  both.allreduce_small_latency_s = 5e-6;
  both.allreduce_small_efficiency = 0.1;
  EXPECT_LT(AllReduceSeconds(g, both, 1e3, 8), AllReduceSeconds(g, p, 1e3, 8));
  EXPECT_DOUBLE_EQ(AllReduceSeconds(g, both, s, 8), want);
}

TEST_F(CostModelTest, SmoothRooflineApproachesTheHardMax) {
  const GpuSpec g = Gpu("a100-80g");
  CostModelParams hard, smooth;
  hard.roofline_exponent = 1000;
  smooth.roofline_exponent = 2;
  // Far from the ridge the two agree; at the ridge the smooth one is up to sqrt(2) slower.
  EXPECT_NEAR(GemmSeconds(g, smooth, 1, 4096, 4096), GemmSeconds(g, hard, 1, 4096, 4096), 1e-6);
  EXPECT_GT(GemmSeconds(g, smooth, 256, 4096, 4096), GemmSeconds(g, hard, 256, 4096, 4096));
}

}  // namespace
}  // namespace seedance::model
