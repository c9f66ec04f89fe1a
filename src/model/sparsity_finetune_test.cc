// Issue 37's check of 2:4 sparsity: "the digits MLP pruned 2:4 and fine-tuned (the same epochs as
// its dense training) stays within 1 point of dense top-1". The fixtures' digits MLP
// (tools/model_fixtures/make_fixtures.sh) is pruned here by the library and saved as ONNX;
// tools/model_fixtures/finetune_24.py fine-tunes it in torch by the dense model's recipe with
// the pruned weights held at zero; the fine-tuned model is then read back and run by the
// executor: every layer still 2:4 sparse, and its top-1 accuracy on the 450 test digits within
// 1 point of the dense model's. Takes a few seconds (torch's import and 20 small epochs).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/sparsity.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::model {
namespace {

namespace fs = std::filesystem;

// Top-1 accuracy of `graph` on the digits fixture's test split.
double Top1(const Graph& graph, const fs::path& dir) {
  absl::StatusOr<Tensor> x = ReadTensorFile((dir / "test_data_set_0" / "input_0.pb").string());
  absl::StatusOr<Tensor> labels = ReadTensorFile((dir / "labels.pb").string());
  EXPECT_TRUE(x.ok() && labels.ok()) << x.status() << labels.status();
  if (!x.ok() || !labels.ok()) return 0;
  absl::StatusOr<TensorMap> out = Run(graph, {{graph.inputs[0].name, *x}});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return 0;
  const Tensor& logits = out->at(graph.outputs[0].name);
  const int64_t classes = logits.dim(1);
  int64_t correct = 0;
  for (int64_t r = 0; r < labels->size(); ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (logits.AsDouble(r * classes + c) > logits.AsDouble(r * classes + best)) best = c;
    }
    correct += best == labels->AsInt64(r);
  }
  return static_cast<double>(correct) / static_cast<double>(labels->size());
}

TEST(SparsityFinetuneTest, DigitsMlpPruned24AndFineTunedStaysWithinOnePointOfDense) {
  const char* fixtures = std::getenv("SEEDANCE_MODEL_FIXTURES");
  const char* source = std::getenv("SEEDANCE_SOURCE_DIR");
  const fs::path dir = fs::path(fixtures != nullptr ? fixtures : "") / "digits_mlp";
  if (fixtures == nullptr || source == nullptr || !fs::exists(dir / "model.onnx")) {
    const std::string why =
        "the torch fixtures (SEEDANCE_MODEL_FIXTURES, made by "
        "tools/model_fixtures/make_fixtures.sh) or SEEDANCE_SOURCE_DIR are missing";
    if (trace::DataRequired()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  absl::StatusOr<Graph> dense = LoadOnnxModel((dir / "model.onnx").string());
  ASSERT_TRUE(dense.ok()) << dense.status();
  absl::StatusOr<Graph> pruned = Sparsify(*dense, {});
  ASSERT_TRUE(pruned.ok()) << pruned.status();

  const fs::path work = fs::path(::testing::TempDir()) / "sparsity_finetune";
  fs::remove_all(work);
  fs::create_directories(work);
  const fs::path pruned_path = work / "pruned.onnx";
  ASSERT_TRUE(SaveOnnxModel(*pruned, pruned_path.string()).ok());
  const std::string command = absl::StrCat(
      "/usr/bin/python3 ", (fs::path(source) / "tools/model_fixtures/finetune_24.py").string(),
      " --dense ", (dir / "model.onnx").string(), " --pruned ", pruned_path.string(), " -o ",
      (work / "finetuned").string(), " > ", (work / "log.txt").string(), " 2>&1");
  const int rc = std::system(command.c_str());
  std::ifstream log(work / "log.txt");
  std::stringstream text;
  text << log.rdbuf();
  ASSERT_EQ(rc, 0) << command << "\n" << text.str();

  absl::StatusOr<Graph> tuned = LoadOnnxModel((work / "finetuned" / "model.onnx").string());
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  const std::vector<Layer> layers = FindLayers(*tuned);
  ASSERT_EQ(layers.size(), 2u);
  for (const Layer& l : layers) {
    absl::StatusOr<int64_t> bad =
        Count24Violations(tuned->initializers.at(l.weight), ReductionAxis(l));
    ASSERT_TRUE(bad.ok()) << bad.status();
    EXPECT_EQ(*bad, 0) << l.node << ": groups of 4 with fewer than 2 zeros after fine-tuning";
  }
  const double dense_top1 = Top1(*dense, dir), pruned_top1 = Top1(*pruned, dir);
  const double tuned_top1 = Top1(*tuned, dir);
  EXPECT_GT(dense_top1, 0.9);
  EXPECT_GE(tuned_top1, dense_top1 - 0.01)
      << "dense " << dense_top1 << ", pruned " << pruned_top1 << ", fine-tuned " << tuned_top1;
  std::cout << "digits_mlp top-1: dense " << dense_top1 << ", pruned 2:4 " << pruned_top1
            << ", fine-tuned " << tuned_top1 << "\n"
            << text.str();
}

}  // namespace
}  // namespace seedance::model
