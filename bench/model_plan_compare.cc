// The precision planner against its two baselines, side by side in one run (issue 37):
// Seedance's planner (prediction from the error-propagation graph, then measured), a
// one-layer-at-a-time fallback search like Intel Neural Compressor's (every candidate measured),
// and an exhaustive search (every combination, cheapest first, measured until one meets the
// budget; only where there are at most 12 layers and 4 million combinations).
//
// Usage: model_plan_compare FIXTURES_DIR [HELLO_DEEPA.onnx]
//   FIXTURES_DIR: tools/model_fixtures/make_fixtures.sh's output (conformance-layout folders);
//   each fixture is one sample (its test_data_set_0, a batch); hello_deepa runs its README's 64
//   rows.
// Prints one row per model, GPU and budget: the plan's weight bytes against the exhaustive
// search's (ratio), its model evaluations against the fallback search's (ratio), and the
// measured SQNR of each; then the medians.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/planner.h"

namespace md = seedance::model;
namespace fs = std::filesystem;

namespace {

struct Model {
  std::string name;
  md::Graph graph;
  std::vector<md::TensorMap> samples;
};

std::vector<Model> Load(int argc, char** argv) {
  std::vector<Model> models;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(argv[1])) {
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) {
    absl::StatusOr<md::Graph> g = md::LoadOnnxModel((d / "model.onnx").string());
    if (!g.ok()) continue;
    md::TensorMap feeds;
    for (size_t i = 0; i < g->inputs.size(); ++i) {
      auto t =
          md::ReadTensorFile((d / "test_data_set_0" / absl::StrCat("input_", i, ".pb")).string());
      if (t.ok()) feeds[g->inputs[i].name] = std::move(*t);
    }
    models.push_back({d.filename().string(), std::move(*g), {feeds}});
  }
  if (argc > 2) {
    absl::StatusOr<md::Graph> g = md::LoadOnnxModel(argv[2]);
    if (g.ok()) {  // its README's 64 input rows (one output value each: one row would let
                   // errors of opposite sign cancel by luck)
      std::vector<md::TensorMap> rows;
      for (int n = 0; n < 64; ++n) {
        md::Tensor x(md::DataType::kFloat, {1, 25, 96});
        for (int64_t k = 0; k < x.size(); ++k) {
          x.data<float>()[k] =
              static_cast<float>(std::sin(0.37 * n + 0.11 * (k / 96) + 0.05 * (k % 96)));
        }
        rows.push_back({{g->inputs[0].name, x}});
      }
      models.push_back({"hello_deepa", std::move(*g), rows});
    }
  }
  return models;
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: model_plan_compare FIXTURES_DIR [HELLO_DEEPA.onnx]\n");
    return 2;
  }
  const std::vector<Model> models = Load(argc, argv);
  std::printf("%-13s %-10s %6s | %12s %12s %6s | %6s %6s %6s | %8s %8s %8s\n", "model", "gpu",
              "budget", "plan_bytes", "best_bytes", "ratio", "evals", "inc", "ratio", "plan_dB",
              "inc_dB", "best_dB");
  std::vector<double> bytes_ratio, eval_ratio, eval_ratio_working;
  for (const Model& m : models) {
    for (const char* gpu : {"T4", "A100-80GB", "H100"}) {
      for (double budget : {30.0, 45.0, 60.0}) {
        md::PlanOptions o;
        o.gpu = gpu;
        o.budget_sqnr_db = budget;
        auto plan = md::MakePlan(m.graph, m.samples, o);
        auto inc = md::FallbackSearch(m.graph, m.samples, o);
        auto best = md::ExhaustiveSearch(m.graph, m.samples, o);
        if (!plan.ok() || !inc.ok()) {
          std::fprintf(stderr, "%s: %s\n", m.name.c_str(),
                       std::string((plan.ok() ? inc.status() : plan.status()).message()).c_str());
          return 1;
        }
        const double br = best.ok() ? static_cast<double>(plan->bytes) / best->bytes : NAN;
        const double er = static_cast<double>(plan->model_evaluations) / inc->model_evaluations;
        if (best.ok()) bytes_ratio.push_back(br);
        eval_ratio.push_back(er);
        // Budgets where the cheapest format everywhere misses: the fallback search has to work.
        if (inc->model_evaluations > 2) eval_ratio_working.push_back(er);
        std::printf(
            "%-13s %-10s %6.0f | %12lld %12s %6.3f | %6lld %6lld %6.3f | %8.2f %8.2f %8s\n",
            m.name.c_str(), gpu, budget, static_cast<long long>(plan->bytes),
            best.ok() ? std::to_string(best->bytes).c_str() : "-", br,
            static_cast<long long>(plan->model_evaluations),
            static_cast<long long>(inc->model_evaluations), er, plan->measured_sqnr_db,
            inc->measured_sqnr_db,
            best.ok() ? absl::StrCat(std::round(best->measured_sqnr_db * 100) / 100).c_str() : "-");
        if (!plan->meets_budget) std::printf("  ^ the plan misses its budget\n");
      }
    }
  }
  std::printf("\nbytes, plan / exhaustive: median %.3f, max %.3f over %zu rows\n",
              Median(bytes_ratio),
              bytes_ratio.empty() ? NAN : *std::max_element(bytes_ratio.begin(), bytes_ratio.end()),
              bytes_ratio.size());
  std::printf(
      "model evaluations, plan / fallback: median %.3f over %zu rows; where the fallback "
      "search has to move layers (> 2 evaluations): median %.3f, max %.3f over %zu rows\n",
      Median(eval_ratio), eval_ratio.size(), Median(eval_ratio_working),
      eval_ratio_working.empty()
          ? NAN
          : *std::max_element(eval_ratio_working.begin(), eval_ratio_working.end()),
      eval_ratio_working.size());
  return 0;
}
