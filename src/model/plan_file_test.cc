#include "seedance/model/plan_file.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace seedance::model {
namespace {

// A plan as `seedance model plan` writes it (model-plan/v1), for a small decoder.
const char kPlan[] = R"({"schema_version": "model-plan/v1", "model": "tiny.onnx", "gpu": "H100",
  "budget": {"sqnr_db": 30}, "formats": ["fp32", "fp16", "bf16", "fp8-e4m3", "int8"],
  "layers": [
    {"node": "/model/layers.0/self_attn/q_proj/MatMul", "weight": "Wq", "format": "int8",
     "bytes_fp32": 4096, "bytes": 1056, "predicted_output_error": 0.001},
    {"node": "/model/layers.0/self_attn/o_proj/MatMul", "weight": "Wo", "format": "bf16",
     "bytes_fp32": 4096, "bytes": 2048, "predicted_output_error": 0.001},
    {"node": "/model/layers.0/mlp/up_proj/MatMul", "weight": "Wu", "format": "int8",
     "bytes_fp32": 8192, "bytes": 2112, "predicted_output_error": 0.002},
    {"node": "/lm_head/MatMul", "weight": "Wl", "format": "fp32",
     "bytes_fp32": 2048, "bytes": 2048, "predicted_output_error": 0},
    {"node": "Gemm_7", "weight": "W7", "format": "fp16", "bytes_fp32": 1024, "bytes": 512}],
  "bytes_fp32": 19456, "bytes": 7776, "predicted_sqnr_db": 41.0, "measured_sqnr_db": 40.0,
  "measured_top1_agreement": null, "meets_budget": true, "model_evaluations": 12, "rounds": 1})";

class PlanFileTest : public ::testing::Test {
 protected:
  static PlanFile Parse(const std::string& text) {
    absl::StatusOr<PlanFile> p = ParsePlanFile(text, "plan.json");
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : PlanFile{};
  }
  static PrecisionBinder Binder(const std::string& gpu) {
    absl::StatusOr<DeviceCapabilities> caps = LookupCapabilities(gpu);
    EXPECT_TRUE(caps.ok()) << caps.status();
    return PrecisionBinder(*caps);
  }
  static ModelConfig Llama() { return *LookupModel("llama-3-8b"); }
};

TEST_F(PlanFileTest, ReadsLayersBytesAndMeasuredError) {
  PlanFile p = Parse(kPlan);
  ASSERT_EQ(p.layers.size(), 5u);
  EXPECT_EQ(p.gpu, "H100");
  EXPECT_EQ(p.layers[0].weight, "Wq");
  EXPECT_EQ(p.layers[0].format, "int8");
  EXPECT_EQ(p.layers[0].bytes, 1056);
  EXPECT_EQ(p.bytes, 7776);
  EXPECT_EQ(p.bytes_fp32, 19456);
  ASSERT_TRUE(p.measured_sqnr_db.has_value());
  EXPECT_DOUBLE_EQ(*p.measured_sqnr_db, 40.0);
  // Without the totals, the layers' sums; a null SQNR is "not measured".
  PlanFile q = Parse(R"({"layers": [{"node": "a", "format": "int8", "bytes": 5, "bytes_fp32": 8},
                                    {"node": "b", "format": "fp16", "bytes": 2, "bytes_fp32": 4}],
                        "measured_sqnr_db": null})");
  EXPECT_EQ(q.bytes, 7);
  EXPECT_EQ(q.bytes_fp32, 12);
  EXPECT_FALSE(q.measured_sqnr_db.has_value());
}

TEST_F(PlanFileTest, BadDocumentsNameFileAndPath) {
  const std::pair<const char*, const char*> bad[] = {
      {"[1]", "plan.json: $: must be an object"},
      {"{}", "plan.json: $: missing required key \"layers\""},
      {R"({"layers": [{"node": "a", "format": "int4"}]})",
       "plan.json: $.layers[0].format: unknown numeric format \"int4\""},
      {R"({"layers": [{"node": "a", "format": "int8", "bytes": -1}]})",
       "plan.json: $.layers[0].bytes: must be an integer"},
      {R"({"layers": [{"node": "a", "format": "int8"}, {"node": "a", "format": "fp16"}]})",
       "plan.json: $.layers[1].node: layer \"a\" is planned twice"},
      {R"({"layers": [], "bytes": "12"})", "plan.json: $.bytes: must be an integer"},
      {R"({"layers": [], "measured_sqnr_db": "40"})",
       "plan.json: $.measured_sqnr_db: must be a number or null"},
      {"{\"layers\": [", "plan.json:1: not JSON"},
  };
  for (const auto& [text, want] : bad) {
    absl::StatusOr<PlanFile> p = ParsePlanFile(text, "plan.json");
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find(want), std::string::npos) << p.status();
  }
}

TEST_F(PlanFileTest, ClassifiesNodesByName) {
  EXPECT_EQ(ClassifyPlanNode("model.layers.3.self_attn.k_proj"), LayerClass::kAttention);
  EXPECT_EQ(ClassifyPlanNode("h.0.attn.c_attn"), LayerClass::kAttention);
  EXPECT_EQ(ClassifyPlanNode("encoder.layer.1.attention.output.dense"), LayerClass::kAttention);
  EXPECT_EQ(ClassifyPlanNode("/Decoder/FC1/MatMul"), LayerClass::kFfn);
  EXPECT_EQ(ClassifyPlanNode("transformer.h.2.mlp.dense_4h_to_h"), LayerClass::kFfn);
  EXPECT_EQ(ClassifyPlanNode("model.embed_tokens"), LayerClass::kEmbedding);
  EXPECT_EQ(ClassifyPlanNode("transformer.wte"), LayerClass::kEmbedding);
  EXPECT_EQ(ClassifyPlanNode("lm_head"), LayerClass::kLmHead);
  EXPECT_EQ(ClassifyPlanNode("classifier.weight"), LayerClass::kLmHead);
  EXPECT_EQ(ClassifyPlanNode("final_output_proj"), LayerClass::kLmHead);
  EXPECT_EQ(ClassifyPlanNode("attn.output_proj"), LayerClass::kAttention);
  EXPECT_EQ(ClassifyPlanNode("model.norm"), LayerClass::kNorm);
  EXPECT_EQ(ClassifyPlanNode("Gemm_7"), std::nullopt);
  EXPECT_EQ(ClassifyPlanNode("conv1"), std::nullopt);
}

TEST_F(PlanFileTest, EachClassTakesItsWidestFormatAndErrorsAreReported) {
  PrecisionBinder binder = Binder("H100");
  absl::StatusOr<ServingPlan> s = ApplyPlanFile(Parse(kPlan), Llama(), binder);
  ASSERT_TRUE(s.ok()) << s.status();
  // Attention: int8 and bf16 planned -> bf16, so nothing runs narrower than planned.
  EXPECT_EQ(s->plan.of(LayerClass::kAttention), DType::kBF16);
  EXPECT_EQ(s->plan.of(LayerClass::kFfn), DType::kINT8);
  EXPECT_EQ(s->plan.of(LayerClass::kLmHead), DType::kFP32);
  // Not planned: the serving model's own formats.
  EXPECT_EQ(s->plan.of(LayerClass::kEmbedding), Llama().weight_dtype);
  EXPECT_EQ(s->plan.of(LayerClass::kNorm), Llama().weight_dtype);
  EXPECT_EQ(s->plan.kv(), Llama().kv_dtype);
  EXPECT_EQ(s->nodes[static_cast<int>(LayerClass::kAttention)], 2);
  EXPECT_EQ(s->nodes[static_cast<int>(LayerClass::kEmbedding)], 0);
  ASSERT_EQ(s->unmatched.size(), 1u);
  EXPECT_EQ(s->unmatched[0], "Gemm_7");
  ASSERT_TRUE(s->measured_rel_error.has_value());
  EXPECT_NEAR(*s->measured_rel_error, 0.01, 1e-12);  // 40 dB
  // Reported for the narrowed classes only (FP32 lm_head is not narrowed).
  EXPECT_NEAR(*binder.MeasuredError(LayerClass::kFfn, DType::kINT8), 0.01, 1e-12);
  EXPECT_NEAR(*binder.MeasuredError(LayerClass::kAttention, DType::kBF16), 0.01, 1e-12);
  EXPECT_FALSE(binder.MeasuredError(LayerClass::kLmHead, DType::kFP32).has_value());
  EXPECT_FALSE(binder.MeasuredError(LayerClass::kAttention, DType::kINT8).has_value());
  // The cost model charges the plan's bytes per class.
  const CostModel cm = MakeCostModel(Llama(), *LookupGpu("H100"), 1, s->plan);
  EXPECT_EQ(cm.weight_dtypes().mlp, DType::kINT8);
  EXPECT_LT(WeightBytes(cm.model(), cm.weight_dtypes()), Llama().WeightBytes());
}

TEST_F(PlanFileTest, ErrorOverTheClassLimitIsSaidAndKept) {
  PrecisionBinder binder = Binder("H100");
  const std::string text = R"({"layers": [{"node": "mlp.fc1", "format": "int8"}],
                               "measured_sqnr_db": 30})";  // 3.2% > INT8's 2.3%
  absl::StatusOr<ServingPlan> s = ApplyPlanFile(Parse(text), Llama(), binder);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->plan.of(LayerClass::kFfn), DType::kINT8);
  ASSERT_EQ(s->plan.decisions.size(), 1u);
  EXPECT_NE(s->plan.decisions[0].find("over the class limit"), std::string::npos);
  EXPECT_FALSE(binder.Acceptable(LayerClass::kFfn, DType::kINT8));
}

TEST_F(PlanFileTest, FormatTheServingGpuDoesNotRunIsRefused) {
  PrecisionBinder binder = Binder("A100-80GB");
  const std::string text = R"({"gpu": "H100", "layers": [{"node": "mlp", "format": "fp8-e4m3"}]})";
  absl::StatusOr<ServingPlan> s = ApplyPlanFile(Parse(text), Llama(), binder);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("ffn in fp8"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("plan made for H100"), std::string::npos) << s.status();
}

TEST_F(PlanFileTest, PodMemoryIsWeightsPlusAllowanceInMibRoundedUp) {
  PlanFile p;
  p.bytes = 3 * (int64_t{1} << 20) + 1;  // 3 MiB and a byte
  p.bytes_fp32 = 8 * (int64_t{1} << 20);
  PodMemoryOptions o;
  o.runtime_overhead_mib = 512;
  o.activation_fraction_of_fp32_weights = 0.25;  // 2 MiB
  EXPECT_EQ(PlanGpuMemoryMib(p, o), 6 + 512);
  o.activation_fraction_of_fp32_weights = 0;
  EXPECT_EQ(PlanGpuMemoryMib(p, o), 4 + 512);
}

}  // namespace
}  // namespace seedance::model
