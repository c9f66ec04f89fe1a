#include "seedance/model/emulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace seedance::model {
namespace {

// y = relu(x @ W) with x [1, 4] and W [4, 3]; one layer, "mm".
Graph TinyMlp() {
  Graph g;
  g.source = "tiny";
  g.opset = 17;
  const std::vector<float> w = {0.5f,  -1.0f, 0.25f, 0.1f, 0.2f,    0.3f,
                                -0.7f, 0.01f, 1.5f,  2.0f, -0.003f, 0.9f};
  g.initializers["W"] = Tensor::From<float>({4, 3}, w);
  g.inputs.push_back({"x", DataType::kFloat, {1, 4}, {"", ""}, true});
  g.outputs.push_back({"y", DataType::kFloat, {1, 3}, {"", ""}, true});
  g.nodes.push_back({"mm", "MatMul", {"x", "W"}, {"h"}, {}});
  g.nodes.push_back({"relu", "Relu", {"h"}, {"y"}, {}});
  return g;
}

TensorMap Feed(std::vector<float> x) { return {{"x", Tensor::From<float>({1, 4}, x)}}; }

TEST(EmulationTest, FindsLayersWithWeightInitializers) {
  const std::vector<Layer> layers = FindLayers(TinyMlp());
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].node, "mm");
  EXPECT_EQ(layers[0].weight, "W");
  EXPECT_EQ(layers[0].activation, "x");
  EXPECT_EQ(layers[0].channel_axis, 1);  // MatMul's W is [in, out]
}

TEST(EmulationTest, RoundsPlannedWeightsPerOutputChannel) {
  const Graph g = TinyMlp();
  absl::StatusOr<Emulation> e =
      Emulation::Create(g, {{"mm", {NumericFormat::kInt8, NumericFormat::kFp32}}}, {}, {});
  ASSERT_TRUE(e.ok()) << e.status();
  const Tensor& w = e->Weight("W");
  // Column 1 holds -1.0, 0.2, 0.01, -0.003: scale 1/127, so 0.01 -> 1/127, -0.003 -> 0.
  EXPECT_FLOAT_EQ(w.data<float>()[1], -1.0f);
  EXPECT_FLOAT_EQ(w.data<float>()[7], static_cast<float>(1.0 / 127));
  EXPECT_EQ(w.data<float>()[10], 0.0f);
  // Column 2's own scale (1.5 / 127) keeps 1.5 exact.
  EXPECT_FLOAT_EQ(w.data<float>()[8], 1.5f);
  EXPECT_EQ(g.initializers.at("W").data<float>()[10], -0.003f);  // the input graph is unchanged
}

TEST(EmulationTest, RoundsActivationsToTheCalibratedRange) {
  const Graph g = TinyMlp();
  absl::StatusOr<ActivationRanges> ranges = Calibrate(g, {Feed({1, 2, 3, 4})}, {});
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  EXPECT_EQ(ranges->at("mm"), 4.0);
  absl::StatusOr<Emulation> e =
      Emulation::Create(g, {{"mm", {NumericFormat::kFp32, NumericFormat::kInt8}}}, *ranges, {});
  ASSERT_TRUE(e.ok()) << e.status();
  // x = 0.01 is below half a step of 4/127: it reads as 0, so y is relu(0 @ W) = 0.
  absl::StatusOr<TensorMap> out = e->Run(Feed({0.01f, 0, 0, 0}));
  ASSERT_TRUE(out.ok()) << out.status();
  for (float v : out->at("y").values<float>()) EXPECT_EQ(v, 0.0f);
  absl::StatusOr<TensorMap> exact = model::Run(g, Feed({0.01f, 0, 0, 0}));
  EXPECT_GT(exact->at("y").data<float>()[0], 0.0f);
}

TEST(EmulationTest, RefusesPlansItCannotHonour) {
  const Graph g = TinyMlp();
  EXPECT_FALSE(
      Emulation::Create(g, {{"relu", {NumericFormat::kFp16, NumericFormat::kFp32}}}, {}, {}).ok());
  EXPECT_FALSE(
      Emulation::Create(g, {{"mm", {NumericFormat::kFp32, NumericFormat::kInt8}}}, {}, {}).ok());
}

// Samples of x [1, 4] drawn from a normal distribution, one value in 2,000 replaced by an outlier.
std::vector<TensorMap> GaussianWithOutliers(double outlier) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0, 1);
  std::vector<TensorMap> samples;
  for (int i = 0; i < 2500; ++i) {
    std::vector<float> x(4);
    for (float& v : x) v = normal(rng);
    if (i % 500 == 3) x[1] = static_cast<float>(outlier);
    samples.push_back(Feed(x));
  }
  return samples;
}

TEST(EmulationTest, EntropyCalibrationClipsWhatCarriesLittleInformation) {
  const Graph g = TinyMlp();
  EmulationOptions entropy;
  entropy.entropy = true;
  // Outliers at 60 sigma: the maximum follows them, the entropy threshold stays near the body of
  // the distribution (TensorRT's calibrator lands a few sigma out on a normal distribution).
  absl::StatusOr<ActivationRanges> by_max = Calibrate(g, GaussianWithOutliers(60), {});
  absl::StatusOr<ActivationRanges> by_kl = Calibrate(g, GaussianWithOutliers(60), entropy);
  ASSERT_TRUE(by_max.ok() && by_kl.ok());
  EXPECT_EQ(by_max->at("mm"), 60.0);
  EXPECT_GT(by_kl->at("mm"), 2.0);
  EXPECT_LT(by_kl->at("mm"), 10.0);
  // ... which is what INT8 activations need: the clipped range rounds the body more finely.
  const TensorMap probe = Feed({0.3f, -1.2f, 0.7f, 0.05f});
  absl::StatusOr<TensorMap> exact = model::Run(g, probe);
  double err[2];
  const ActivationRanges* ranges[2] = {&*by_max, &*by_kl};
  for (int k = 0; k < 2; ++k) {
    absl::StatusOr<Emulation> e = Emulation::Create(
        g, {{"mm", {NumericFormat::kFp32, NumericFormat::kInt8}}}, *ranges[k], {});
    ASSERT_TRUE(e.ok()) << e.status();
    absl::StatusOr<TensorMap> out = e->Run(probe);
    ASSERT_TRUE(out.ok());
    err[k] = CompareTensors(exact->at("y"), out->at("y"))->normalized_l2;
  }
  EXPECT_LT(err[1], err[0] / 4);
  // A uniform distribution carries information up to its edge: the threshold keeps nearly all.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<TensorMap> flat;
  for (int i = 0; i < 2500; ++i) flat.push_back(Feed({u(rng), u(rng), u(rng), u(rng)}));
  absl::StatusOr<ActivationRanges> uniform = Calibrate(g, flat, entropy);
  ASSERT_TRUE(uniform.ok());
  EXPECT_GT(uniform->at("mm"), 0.9);
}

TEST(EmulationTest, PercentileCalibrationClipsOutliers) {
  const Graph g = TinyMlp();
  std::vector<TensorMap> samples;
  for (int i = 0; i < 250; ++i) samples.push_back(Feed({0.5f, -0.5f, 0.25f, i == 7 ? 100.0f : 1}));
  EmulationOptions options;
  options.percentile = 99.0;
  absl::StatusOr<ActivationRanges> ranges = Calibrate(g, samples, options);
  ASSERT_TRUE(ranges.ok());
  EXPECT_EQ(ranges->at("mm"), 1.0);  // 1 of 1,000 values is the outlier
}

TEST(EmulationTest, ComparesOutputsAndTopOneAgreement) {
  Graph g = TinyMlp();
  const std::vector<float> a = {1, 2, 3}, b = {1, 3, 2};
  std::vector<TensorMap> ref = {{{"y", Tensor::From<float>({1, 3}, a)}}};
  std::vector<TensorMap> same = ref, other = {{{"y", Tensor::From<float>({1, 3}, b)}}};
  absl::StatusOr<OutputError> e = CompareOutputs(g, ref, same);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(std::isinf(e->metrics.sqnr_db));
  EXPECT_EQ(e->top1_agreement, 1.0);
  e = CompareOutputs(g, ref, other);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->top1_agreement, 0.0);
  EXPECT_NEAR(e->metrics.sqnr_db, 10 * std::log10(14.0 / 2.0), 1e-9);
}

TEST(EmulationTest, AnalyzesEveryLayerInEveryFormat) {
  const Graph g = TinyMlp();
  AnalyzeOptions options;
  absl::StatusOr<Analysis> a =
      Analyze(g, {Feed({1, -2, 3, 0.5f}), Feed({0.1f, 0.2f, 0.3f, 4})}, options);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->layers.size(), 1u);
  EXPECT_EQ(a->layers[0].by_format.size(), 4u);
  // Narrower formats lose more: FP16 keeps more of the signal than FP8.
  EXPECT_GT(a->layers[0].by_format.at(NumericFormat::kFp16).layer.sqnr_db,
            a->layers[0].by_format.at(NumericFormat::kFp8E4M3).layer.sqnr_db);
  EXPECT_EQ(a->all_layers.size(), 4u);
  EXPECT_EQ(a->samples, 2u);
}

}  // namespace
}  // namespace seedance::model
