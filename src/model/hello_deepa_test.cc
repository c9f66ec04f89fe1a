// The real model in the public data folder (onnx-models/hello_deepa.onnx: a 3-Gemm MLP with
// decomposed LayerNorms) against the golden values of its README: FP32 logits, and the logit and
// weight SQNR of each Gemm's weights stored as INT8, FP16 and BF16 (README table, within 0.1 dB).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "seedance/model/emulation.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/numerics.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::model {
namespace {

constexpr int kRows = 64;
constexpr char kLogit[] = "/last_layer/Gemm_output_0";

class HelloDeepaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = trace::DataDir() + "/onnx-models/hello_deepa.onnx";
    if (!std::filesystem::exists(path)) {
      if (trace::DataRequired()) FAIL() << path << " is missing";
      GTEST_SKIP() << path << " is missing (the public data folder)";
    }
    absl::StatusOr<Graph> g = LoadOnnxModel(path);
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = std::move(*g);
  }

  // The README's input row n: x[t, f] = sin(0.37 n + 0.11 t + 0.05 f), shape [1, 25, 96].
  static Tensor Row(int n) {
    Tensor x(DataType::kFloat, {1, 25, 96});
    for (int t = 0; t < 25; ++t) {
      for (int f = 0; f < 96; ++f) {
        x.data<float>()[t * 96 + f] = static_cast<float>(std::sin(0.37 * n + 0.11 * t + 0.05 * f));
      }
    }
    return x;
  }

  // The 64 logits (the last Gemm's output, before the Sigmoid) of the model as `e` runs it.
  Tensor Logits(const Emulation& e) const {
    Tensor z(DataType::kFloat, {kRows});
    RunOptions options;
    options.keep_intermediates = true;
    for (int n = 0; n < kRows; ++n) {
      absl::StatusOr<TensorMap> out = e.Run({{graph_.inputs[0].name, Row(n)}}, options);
      if (!out.ok()) {
        ADD_FAILURE() << out.status();
        return z;
      }
      z.data<float>()[n] = out->at(kLogit).data<float>()[0];
    }
    return z;
  }

  // The model in FP32 (an emulation with an empty plan).
  Emulation Fp32() const { return *Emulation::Create(graph_, {}, {}, {}); }

  Graph graph_;
};

TEST_F(HelloDeepaTest, Fp32LogitsMatchTheGoldenValues) {
  const Tensor z = Logits(Fp32());
  const double golden[] = {-6.634584, -4.542397, 5.312373, 6.585991};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(z.data<float>()[i], golden[i], 1e-5) << "row " << i;
  double sum = 0, sum2 = 0;
  for (int n = 0; n < kRows; ++n) sum += z.data<float>()[n];
  const double mean = sum / kRows;
  for (int n = 0; n < kRows; ++n) sum2 += std::pow(z.data<float>()[n] - mean, 2);
  EXPECT_NEAR(mean, 1.404361, 1e-5);
  EXPECT_NEAR(std::sqrt(sum2 / kRows), 5.977240, 1e-5);  // numpy's std (population)
}

struct SqnrRow {
  const char* layer;
  const char* weight;
  NumericFormat format;
  double weight_db, logit_db;
};

TEST_F(HelloDeepaTest, WeightOnlyQuantizationReproducesTheReadmeTable) {
  const Tensor ref = Logits(Fp32());
  const SqnrRow rows[] = {
      {"/layer1/Gemm", "layer1.weight", NumericFormat::kInt8, 35.79, 55.79},
      {"/layer1/Gemm", "layer1.weight", NumericFormat::kFp16, 73.66, 86.83},
      {"/layer1/Gemm", "layer1.weight", NumericFormat::kBf16, 55.61, 65.40},
      {"/blocks.0/fcn_layer/Gemm", "blocks.0.fcn_layer.weight", NumericFormat::kInt8, 43.88, 56.80},
      {"/blocks.0/fcn_layer/Gemm", "blocks.0.fcn_layer.weight", NumericFormat::kFp16, 73.65, 88.33},
      {"/blocks.0/fcn_layer/Gemm", "blocks.0.fcn_layer.weight", NumericFormat::kBf16, 55.42, 69.62},
      {"/last_layer/Gemm", "last_layer.weight", NumericFormat::kInt8, 48.87, 56.63},
      {"/last_layer/Gemm", "last_layer.weight", NumericFormat::kFp16, 73.45, 87.88},
      {"/last_layer/Gemm", "last_layer.weight", NumericFormat::kBf16, 55.84, 64.38},
  };
  EmulationOptions per_tensor;  // the README's INT8 is one scale per tensor
  per_tensor.per_channel_weights = false;
  for (const SqnrRow& row : rows) {
    // The product's emulation path: the layer's weights alone in the format.
    absl::StatusOr<Emulation> e = Emulation::Create(
        graph_, {{row.layer, {row.format, NumericFormat::kFp32}}}, {}, per_tensor);
    ASSERT_TRUE(e.ok()) << e.status();
    const Tensor& w = graph_.initializers.at(row.weight);
    absl::StatusOr<ErrorMetrics> weight = CompareTensors(w, e->Weight(row.weight));
    absl::StatusOr<ErrorMetrics> logit = CompareTensors(ref, Logits(*e));
    ASSERT_TRUE(weight.ok() && logit.ok());
    EXPECT_NEAR(weight->sqnr_db, row.weight_db, 0.1) << row.weight << " " << FormatName(row.format);
    EXPECT_NEAR(logit->sqnr_db, row.logit_db, 0.1) << row.weight << " " << FormatName(row.format);
  }
}

}  // namespace
}  // namespace seedance::model
