// The executor on models a real exporter made: the fixtures torch exports once per test run
// (tools/model_fixtures/make_fixtures.sh: a transformer encoder layer at opsets 17 and 13, a
// causal decoder at opset 14, a BERT-style layer, a CNN, an MLP trained on scikit-learn's
// digits), each with torch's
// and onnxruntime's outputs, plus the public data folder's hello_deepa.onnx. Checked here:
//   - FP32 outputs within 1e-4 relative (L2) of torch's and of onnxruntime's; the digits MLP's
//     top-1 accuracy is torch's;
//   - JVPs (FP64) within 1e-3 of central differences, seeded at each layer's output;
//   - the error graph's predicted output error of each layer's INT8 weights within 25% of the
//     measured one, and the layers ranked by prediction as by measurement (Spearman >= 0.8 on
//     models of 3 or more layers).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "fd_check.h"
#include "seedance/model/error_graph.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/jvp.h"
#include "seedance/model/planner.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::model {
namespace {

namespace fs = std::filesystem;

double RelL2(const Tensor& want, const Tensor& got) {
  double err = 0, norm = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    err += std::pow(got.AsDouble(i) - want.AsDouble(i), 2);
    norm += want.AsDouble(i) * want.AsDouble(i);
  }
  return std::sqrt(err / norm);
}

struct Fixture {
  std::string name;
  fs::path dir;
  Graph graph;
  TensorMap feeds;
};

std::vector<Fixture> Fixtures() {
  std::vector<Fixture> out;
  const char* env = std::getenv("SEEDANCE_MODEL_FIXTURES");
  if (env != nullptr && fs::is_directory(env)) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(env)) {
      if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) out.push_back({d.filename().string(), d, {}, {}});
  }
  const fs::path deepa = fs::path(trace::DataDir()) / "onnx-models";
  if (fs::exists(deepa / "hello_deepa.onnx")) out.push_back({"hello_deepa", deepa, {}, {}});
  for (Fixture& f : out) {
    const fs::path model =
        f.name == "hello_deepa" ? f.dir / "hello_deepa.onnx" : f.dir / "model.onnx";
    absl::StatusOr<Graph> g = LoadOnnxModel(model.string());
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) continue;
    f.graph = std::move(*g);
    for (size_t i = 0; i < f.graph.inputs.size(); ++i) {
      const fs::path in = f.dir / "test_data_set_0" / absl::StrCat("input_", i, ".pb");
      if (f.name == "hello_deepa") {  // its README's input row 0
        Tensor x(DataType::kFloat, {1, 25, 96});
        for (int64_t k = 0; k < x.size(); ++k) {
          x.data<float>()[k] = static_cast<float>(std::sin(0.11 * (k / 96) + 0.05 * (k % 96)));
        }
        f.feeds[f.graph.inputs[i].name] = std::move(x);
        continue;
      }
      absl::StatusOr<Tensor> t = ReadTensorFile(in.string());
      EXPECT_TRUE(t.ok()) << t.status();
      if (t.ok()) f.feeds[f.graph.inputs[i].name] = std::move(*t);
    }
  }
  return out;
}

class FixturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fixtures_ = Fixtures();
    if (fixtures_.size() < 6) {
      const std::string why =
          "the torch fixtures (SEEDANCE_MODEL_FIXTURES, made by "
          "tools/model_fixtures/make_fixtures.sh) or hello_deepa are missing";
      if (trace::DataRequired()) FAIL() << why;
      GTEST_SKIP() << why;
    }
  }
  std::vector<Fixture> fixtures_;
};

TEST_F(FixturesTest, Fp32OutputsMatchTorchAndOnnxruntime) {
  for (const Fixture& f : fixtures_) {
    if (f.name == "hello_deepa") continue;  // its golden values: model_hello_deepa_test
    absl::StatusOr<TensorMap> out = model::Run(f.graph, f.feeds);
    ASSERT_TRUE(out.ok()) << f.name << ": " << out.status();
    for (size_t i = 0; i < f.graph.outputs.size(); ++i) {
      const Tensor& got = out->at(f.graph.outputs[i].name);
      for (const char* ref : {"test_data_set_0", "ort"}) {
        absl::StatusOr<Tensor> want =
            ReadTensorFile((f.dir / ref / absl::StrCat("output_", i, ".pb")).string());
        ASSERT_TRUE(want.ok()) << want.status();
        EXPECT_LT(RelL2(*want, got), 1e-4) << f.name << " output " << i << " against " << ref;
      }
    }
  }
}

TEST_F(FixturesTest, DigitsMlpKeepsTorchsTopOneAccuracy) {
  for (const Fixture& f : fixtures_) {
    if (f.name != "digits_mlp") continue;
    absl::StatusOr<TensorMap> out = model::Run(f.graph, f.feeds);
    ASSERT_TRUE(out.ok()) << out.status();
    absl::StatusOr<Tensor> labels = ReadTensorFile((f.dir / "labels.pb").string());
    ASSERT_TRUE(labels.ok()) << labels.status();
    const Tensor& logits = out->at(f.graph.outputs[0].name);
    const int64_t classes = logits.shape().back();
    int64_t correct = 0;
    for (int64_t r = 0; r < labels->size(); ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c) {
        if (logits.AsDouble(r * classes + c) > logits.AsDouble(r * classes + best)) best = c;
      }
      correct += best == labels->AsInt64(r);
    }
    std::ifstream in(f.dir / "accuracy.txt");
    double torch_accuracy = 0;
    in >> torch_accuracy;
    EXPECT_NEAR(static_cast<double>(correct) / static_cast<double>(labels->size()), torch_accuracy,
                1e-4);
    EXPECT_GT(torch_accuracy, 0.9);  // the MLP learned something: agreement means something
  }
}

TEST_F(FixturesTest, JvpsAgreeWithCentralDifferencesAtEveryLayer) {
  for (const Fixture& f : fixtures_) {
    absl::StatusOr<Graph> g64 = ToFloat64(f.graph);
    ASSERT_TRUE(g64.ok()) << g64.status();
    const TensorMap feeds64 = FeedsToFloat64(f.feeds);
    std::map<std::string, std::string> output_of;
    for (const Node& n : g64->nodes) output_of[n.name] = n.outputs[0];
    uint64_t seed = 3;
    for (const Layer& l : FindLayers(f.graph)) {
      EXPECT_LT(testing::JvpError(*g64, feeds64, output_of[l.node], ++seed), 1e-3)
          << f.name << " at " << l.node;
    }
  }
}

TEST_F(FixturesTest, ErrorGraphPredictsEachLayersInt8Error) {
  for (const Fixture& f : fixtures_) {
    absl::StatusOr<ErrorGraph> eg = BuildErrorGraph(f.graph, {f.feeds}, {});
    ASSERT_TRUE(eg.ok()) << f.name << ": " << eg.status();
    std::vector<double> predicted, measured;
    for (const LayerError& l : eg->layers) {
      ASSERT_GT(l.measured, 0) << f.name << " " << l.node;
      const double ratio = l.predicted / l.measured;
      EXPECT_TRUE(ratio > 0.75 && ratio < 1.25)
          << f.name << " " << l.node << ": predicted " << l.predicted << " measured " << l.measured;
      predicted.push_back(l.predicted);
      measured.push_back(l.measured);
      std::printf("%s %s predicted %.4g measured %.4g ratio %.3f\n", f.name.c_str(), l.node.c_str(),
                  l.predicted, l.measured, ratio);
    }
    if (predicted.size() >= 3) {
      EXPECT_GE(SpearmanRho(predicted, measured), 0.8) << f.name;
    }
    std::printf("%s: %zu layers, rho %.3f, most sensitive path gain %.3g\n", f.name.c_str(),
                predicted.size(), SpearmanRho(predicted, measured), eg->most_sensitive_path_gain);
  }
}

TEST_F(FixturesTest, PlansMeetTheirBudgetAtTheCostOfTheBestPlan) {
  for (const Fixture& f : fixtures_) {
    for (const char* gpu : {"T4", "A100-80GB", "H100"}) {
      for (double budget : {30.0, 50.0}) {
        PlanOptions o;
        o.gpu = gpu;
        o.budget_sqnr_db = budget;
        absl::StatusOr<Plan> plan = MakePlan(f.graph, {f.feeds}, o);
        ASSERT_TRUE(plan.ok()) << f.name << ": " << plan.status();
        EXPECT_TRUE(plan->meets_budget)
            << f.name << " " << gpu << " " << budget << " dB: measured " << plan->measured_sqnr_db;
        if (FindLayers(f.graph).size() > 6) continue;  // exhaustive search: the benchmark's
        absl::StatusOr<Plan> best = ExhaustiveSearch(f.graph, {f.feeds}, o);
        ASSERT_TRUE(best.ok()) << best.status();
        EXPECT_LE(static_cast<double>(plan->bytes), 1.05 * static_cast<double>(best->bytes))
            << f.name << " " << gpu << " " << budget << " dB";
        for (const LayerChoice& c : plan->layers) {  // only formats the GPU runs
          EXPECT_TRUE(std::find(plan->formats.begin(), plan->formats.end(), c.format) !=
                      plan->formats.end());
          if (std::string(gpu) == "T4") {
            EXPECT_NE(c.format, NumericFormat::kBf16);
            EXPECT_NE(c.format, NumericFormat::kFp8E4M3);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace seedance::model
