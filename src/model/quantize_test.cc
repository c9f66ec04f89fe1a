// `model quantize`'s library: the QDQ model it writes passes ONNX's checker at every opset the
// executor reads and computes exactly what the emulation of the same plan computes; plans and
// plan files are refused with reasons. (onnxruntime runs the written models in
// quantize_ort_test.py.)
#include "seedance/model/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "seedance/model/executor.h"

namespace seedance::model {
namespace {

Tensor Random(std::vector<int64_t> shape, uint32_t seed, float scale = 1) {
  Tensor t(DataType::kFloat, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, scale);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

Attribute Int(int64_t v) {
  Attribute a;
  a.i = v;
  return a;
}

// x [2, 4] -> MatMul W1 [4, 3] -> Gemm (W2 [5, 3], transB) + B -> Relu -> Conv-free MLP, and
// a Conv on its own input: the three layer kinds, each weight with its own channel axis.
Graph ThreeLayers(int64_t opset) {
  Graph g;
  g.source = "three";
  g.opset = opset;
  g.initializers["W1"] = Random({4, 3}, 1);
  g.initializers["W2"] = Random({5, 3}, 2, 0.01f);  // small: INT8 scales far from 1
  g.initializers["B"] = Random({5}, 3);
  g.initializers["K"] = Random({3, 2, 3, 3}, 4, 100);  // large: FP16 still finite
  g.inputs.push_back({"x", DataType::kFloat, {2, 4}, {"", ""}, true});
  g.inputs.push_back({"img", DataType::kFloat, {1, 2, 5, 5}, {"", "", "", ""}, true});
  g.outputs.push_back({"y", DataType::kFloat, {2, 5}, {"", ""}, true});
  g.outputs.push_back({"z", DataType::kFloat, {1, 3, 3, 3}, {"", "", "", ""}, true});
  g.nodes.push_back({"mm", "MatMul", {"x", "W1"}, {"h"}, {}});
  g.nodes.push_back({"gemm", "Gemm", {"h", "W2", "B"}, {"g"}, {{"transB", Int(1)}}});
  g.nodes.push_back({"relu", "Relu", {"g"}, {"y"}, {}});
  g.nodes.push_back({"conv", "Conv", {"img", "K"}, {"z"}, {}});
  return g;
}

TensorMap Feeds() { return {{"x", Random({2, 4}, 5)}, {"img", Random({1, 2, 5, 5}, 6)}}; }

PrecisionPlan AllLayers(NumericFormat f) {
  return {{"mm", {f, NumericFormat::kFp32}},
          {"gemm", {f, NumericFormat::kFp32}},
          {"conv", {f, NumericFormat::kFp32}}};
}

constexpr NumericFormat kNarrow[] = {NumericFormat::kFp16, NumericFormat::kBf16,
                                     NumericFormat::kFp8E4M3, NumericFormat::kInt8};

TEST(QuantizeTest, WrittenModelComputesExactlyWhatTheEmulationComputes) {
  for (int64_t opset : {9, 11, 13, 17}) {
    const Graph g = ThreeLayers(opset);
    for (NumericFormat f : kNarrow) {
      SCOPED_TRACE(testing::Message() << "opset " << opset << ", " << FormatName(f));
      absl::StatusOr<QuantizedModel> q = QuantizeWeights(g, AllLayers(f));
      ASSERT_TRUE(q.ok()) << q.status();
      ASSERT_EQ(q->weights.size(), 3u);
      absl::StatusOr<std::string> bytes = SerializeOnnxModel(q->graph);  // ONNX's checker
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      absl::StatusOr<Graph> back = ParseOnnxModel(*bytes, "quantized");
      ASSERT_TRUE(back.ok()) << back.status();
      if (f != NumericFormat::kBf16 || opset >= 13) {
        EXPECT_FALSE(back->initializers.count("W1"));  // the FP32 weights are gone
      }
      absl::StatusOr<Emulation> e = Emulation::Create(g, AllLayers(f), {}, {});
      ASSERT_TRUE(e.ok()) << e.status();
      absl::StatusOr<TensorMap> want = e->Run(Feeds());
      absl::StatusOr<TensorMap> got = model::Run(*back, Feeds());
      absl::StatusOr<TensorMap> fp32 = model::Run(g, Feeds());
      ASSERT_TRUE(want.ok() && got.ok() && fp32.ok());
      for (const char* out : {"y", "z"}) {
        for (int64_t i = 0; i < want->at(out).size(); ++i) {
          ASSERT_EQ(got->at(out).data<float>()[i], want->at(out).data<float>()[i]) << out << i;
        }
        // ... which is not simply the FP32 model.
        absl::StatusOr<ErrorMetrics> m = CompareTensors(fp32->at(out), got->at(out));
        EXPECT_TRUE(std::isfinite(m->sqnr_db)) << out;
      }
    }
  }
}

TEST(QuantizeTest, StoresEachFormatInItsOwnBytes) {
  const Graph g = ThreeLayers(17);
  auto bytes_of = [&](NumericFormat f, const std::string& w) {
    absl::StatusOr<QuantizedModel> q = QuantizeWeights(g, AllLayers(f));
    EXPECT_TRUE(q.ok()) << q.status();
    for (const QuantizedWeight& qw : q->weights) {
      if (qw.weight == w) return std::make_pair(qw.bytes_before, qw.bytes_after);
    }
    return std::make_pair(int64_t{0}, int64_t{0});
  };
  // K [3, 2, 3, 3]: 54 floats. INT8: a byte each, an FP32 scale and an int8 zero point per
  // output channel (3); FP8 codes as float16 plus the scales; 16-bit formats two bytes each.
  EXPECT_EQ(bytes_of(NumericFormat::kInt8, "K"), std::make_pair(int64_t{216}, int64_t{54 + 15}));
  EXPECT_EQ(bytes_of(NumericFormat::kFp8E4M3, "K"), std::make_pair(int64_t{216}, int64_t{120}));
  EXPECT_EQ(bytes_of(NumericFormat::kFp16, "K"), std::make_pair(int64_t{216}, int64_t{108}));
  EXPECT_EQ(bytes_of(NumericFormat::kBf16, "K"), std::make_pair(int64_t{216}, int64_t{108}));
  // Before opset 13 Cast has no bfloat16: the rounded values stay FP32.
  absl::StatusOr<QuantizedModel> old =
      QuantizeWeights(ThreeLayers(12), AllLayers(NumericFormat::kBf16));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->weights[0].bytes_after, old->weights[0].bytes_before);
}

TEST(QuantizeTest, RefusesPlansItCannotWrite) {
  const Graph g = ThreeLayers(17);
  absl::StatusOr<QuantizedModel> q =
      QuantizeWeights(g, {{"relu", {NumericFormat::kInt8, NumericFormat::kFp32}}});
  EXPECT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("\"relu\", which is not a layer"), std::string::npos);
  q = QuantizeWeights(g, {{"mm", {NumericFormat::kFp32, NumericFormat::kInt8}}});
  EXPECT_NE(q.status().message().find("weight-only"), std::string::npos) << q.status();
  // One weight read by two layers planned in two formats.
  Graph shared = g;
  shared.nodes.push_back({"mm2", "MatMul", {"x", "W1"}, {"h2"}, {}});
  shared.outputs.push_back({"h2", DataType::kFloat, {2, 3}, {"", ""}, true});
  q = QuantizeWeights(shared, {{"mm", {NumericFormat::kInt8, NumericFormat::kFp32}},
                               {"mm2", {NumericFormat::kFp16, NumericFormat::kFp32}}});
  EXPECT_NE(q.status().message().find("planned as int8 for layer \"mm\" and as fp16"),
            std::string::npos)
      << q.status();
  Graph nan = g;
  nan.initializers["W1"].data<float>()[4] = std::nanf("");
  q = QuantizeWeights(nan, AllLayers(NumericFormat::kInt8));
  EXPECT_NE(q.status().message().find("weight \"W1\" of layer \"mm\": channel 1"),
            std::string::npos)
      << q.status();
  // FP32 entries change nothing.
  q = QuantizeWeights(g, AllLayers(NumericFormat::kFp32));
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->weights.empty());
  EXPECT_EQ(q->graph.nodes.size(), g.nodes.size());
}

TEST(QuantizeTest, ScaledCodesTimesScalesAreTheFakeQuantizedValues) {
  for (NumericFormat f : {NumericFormat::kInt8, NumericFormat::kFp8E4M3}) {
    for (bool per_channel : {false, true}) {
      Tensor x = Random({6, 7}, 9, 3);
      for (int64_t i = 0; i < 6; ++i) x.data<float>()[i * 7 + 2] = 0;  // an all-zero channel
      FakeQuantOptions o;
      o.per_channel = per_channel;
      o.axis = 1;
      absl::StatusOr<ScaledTensor> q = QuantizeScaled(x, f, o);
      absl::StatusOr<Tensor> fq = FakeQuantize(x, f, o);
      ASSERT_TRUE(q.ok() && fq.ok()) << q.status();
      ASSERT_EQ(q->scales.size(), per_channel ? 7u : 1u);
      if (per_channel) {
        EXPECT_EQ(q->scales[2], 1.0f);
      }
      for (int64_t i = 0; i < x.size(); ++i) {
        const float scale = q->scales[per_channel ? i % 7 : 0];
        EXPECT_EQ(q->codes.data<float>()[i] * scale, fq->data<float>()[i]) << i;
        if (f == NumericFormat::kInt8) {
          EXPECT_EQ(q->codes.data<float>()[i], std::nearbyint(q->codes.data<float>()[i]));
          EXPECT_LE(std::fabs(q->codes.data<float>()[i]), 127.0f);
        }
      }
    }
  }
  EXPECT_FALSE(QuantizeScaled(Random({3}, 1), NumericFormat::kFp16).ok());
  Tensor bad = Random({3, 2}, 1);
  bad.data<float>()[3] = INFINITY;
  FakeQuantOptions o;
  o.per_channel = true;
  o.axis = 1;
  EXPECT_FALSE(QuantizeScaled(bad, NumericFormat::kInt8, o).ok());
  o.axis = 2;
  EXPECT_FALSE(QuantizeScaled(Random({3, 2}, 1), NumericFormat::kInt8, o).ok());
}

TEST(QuantizeTest, ReadsPlanFiles) {
  absl::StatusOr<PrecisionPlan> p = ParsePlanJson(
      R"({"schema_version": "model-plan/v1", "gpu": "T4", "layers": [
           {"node": "mm", "weight": "W1", "format": "int8", "bytes": 15},
           {"node": "gemm", "format": "fp32"}]})",
      "plan.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->at("mm").weights, NumericFormat::kInt8);
  EXPECT_EQ(p->at("gemm").weights, NumericFormat::kFp32);
  const std::pair<const char*, const char*> bad[] = {
      {"[1, 2]", "plan.json: $: must be an object"},
      {"{}", "plan.json: $: missing required key \"layers\""},
      {R"({"layers": {}})", "plan.json: $.layers: must be an array"},
      {R"({"layers": [{"node": "mm"}]})", "$.layers[0].format: missing required key \"format\""},
      {R"({"layers": [{"node": "mm", "format": "int4"}]})",
       "plan.json: $.layers[0].format: unknown numeric format \"int4\""},
      {R"({"layers": [{"node": "mm", "format": "int8", "fromat": 1}]})",
       "$.layers[0].fromat: unknown key"},
      {R"({"layers": [{"node": "mm", "format": "int8"}, {"node": "mm", "format": "fp16"}]})",
       "$.layers[1].node: layer \"mm\" is planned twice"},
      {"{\"layers\": [", "plan.json:1: not JSON"},
  };
  for (const auto& [text, want] : bad) {
    absl::StatusOr<PrecisionPlan> q = ParsePlanJson(text, "plan.json");
    ASSERT_FALSE(q.ok()) << text;
    EXPECT_NE(q.status().message().find(want), std::string::npos) << q.status();
  }
}

TEST(QuantizeTest, SerializedModelsAreCheckedAndReadBack) {
  Graph g = ThreeLayers(17);
  g.nodes[2].attributes["alpha"] = Attribute{};  // Relu has no attribute "alpha"
  absl::StatusOr<std::string> bytes = SerializeOnnxModel(g);
  EXPECT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("invalid model"), std::string::npos) << bytes.status();
  g = ThreeLayers(17);
  g.inputs[0].shape = {-1, 4};
  g.inputs[0].dim_names = {"batch", ""};
  bytes = SerializeOnnxModel(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Graph> back = ParseOnnxModel(*bytes, "back");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->opset, 17);
  EXPECT_EQ(back->inputs[0].dim_names[0], "batch");
  EXPECT_EQ(back->nodes.size(), g.nodes.size());
  EXPECT_EQ(back->nodes[1].attributes.at("transB").i, 1);
  EXPECT_EQ(back->initializers.at("K").values<float>()[7],
            g.initializers.at("K").values<float>()[7]);
  Graph empty_tensor = g;
  Attribute t;
  t.kind = Attribute::Kind::kTensor;
  empty_tensor.nodes.push_back({"c", "Constant", {}, {"c_out"}, {{"value", t}}});
  bytes = SerializeOnnxModel(empty_tensor);
  EXPECT_NE(bytes.status().message().find("holds no tensor"), std::string::npos) << bytes.status();
}

}  // namespace
}  // namespace seedance::model
