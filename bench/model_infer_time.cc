// FP32 inference time of the executor on a model fixture (ONNX's conformance layout), for
// bench/model_speed.sh to put beside onnxruntime's: ITERATIONS runs after a warm-up, five times;
// prints the median time per run ("seedance_time: DIR MS").
// Usage: model_infer_time ITERATIONS MODEL_DIR...   (OMP_NUM_THREADS=1 for one thread)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"

namespace md = seedance::model;

int main(int argc, char** argv) {
  const int iterations = argc > 2 ? std::atoi(argv[1]) : 0;
  if (iterations < 1) {
    std::fprintf(stderr, "usage: model_infer_time ITERATIONS MODEL_DIR...\n");
    return 2;
  }
  for (int a = 2; a < argc; ++a) {
    const std::filesystem::path dir = argv[a];
    absl::StatusOr<md::Graph> g = md::LoadOnnxModel((dir / "model.onnx").string());
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", std::string(g.status().message()).c_str());
      return 1;
    }
    md::TensorMap feeds;
    for (size_t i = 0; i < g->inputs.size(); ++i) {
      auto t =
          md::ReadTensorFile((dir / "test_data_set_0" / absl::StrCat("input_", i, ".pb")).string());
      if (!t.ok()) return 1;
      feeds[g->inputs[i].name] = std::move(*t);
    }
    if (!md::Run(*g, feeds).ok()) return 1;  // warm-up
    std::vector<double> per_run;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < iterations; ++k) {
        if (!md::Run(*g, feeds).ok()) return 1;
      }
      const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
      per_run.push_back(ms.count() / iterations);
    }
    std::sort(per_run.begin(), per_run.end());
    std::printf("seedance_time: %s %.4f\n", argv[a], per_run[2]);
  }
  return 0;
}
