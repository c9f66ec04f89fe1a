// The precision planner (`seedance model plan`): the cheapest per-layer weight format whose
// model output stays within an error budget, chosen from what the error-propagation graph
// predicts instead of trial and error, then checked by measurement.
//
// First a prior that costs no model run: each layer's relative local noise ||x_i (Q_f(W_i) - W_i)||
// / ||x_i W_i|| taken to reach the output at unit relative gain. When it puts the cheapest plan
// (the narrowest format everywhere) within the budget, that plan is measured first and returned
// if it holds (two evaluations with the FP32 reference, as a fallback search spends on it).
// Otherwise, or when it misses (its measurement then calibrates the prediction below):
//
// For each layer i (emulation.h) the planner measures, once, the gain g_i from noise at the
// layer's output to the model's output (error_graph.h: one FP64 tangent pass per layer and
// sample), and computes each format's local noise n_i(f) = || x_i (Q_f(W_i) - W_i) || on the
// layer alone (no model run). The predicted output error of a plan is
// sqrt(sum_i (g_i n_i(f_i))^2) (layers' errors taken as uncorrelated), and the cheapest plan
// meeting the budget is found exactly on that prediction (every combination when there are at
// most 4^12, else greedily by error saved per byte). The plan is then run for real in FP32; if
// it misses the budget, the prediction's shortfall tightens the budget and the plan is remade
// (at most `max_rounds` times). Formats are those the target GPU runs (hw catalog: FP16 always,
// BF16, FP8 and INT8 where its tensor cores have them; FP32 to keep a layer).
//
// Two baselines for the benchmark, each measuring every candidate in FP32: FallbackSearch (Intel
// Neural Compressor's accuracy-aware tuning: everything in the cheapest format, then one layer
// at a time moved to its next wider format, keeping the move that helps most, until the budget
// holds) and ExhaustiveSearch (every combination, cheapest first, measured until one meets the
// budget; refused above 12 layers or 20,000 combinations).
//
// Thread-safety: thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/emulation.h"
#include "seedance/model/graph.h"
#include "seedance/model/numerics.h"

namespace seedance::model {

struct PlanOptions {
  std::string gpu = "A100-80GB";  // a name the hardware catalog knows
  double budget_sqnr_db = 30;     // of the model's first output against FP32 (PyTorch's threshold)
  double budget_top1 = 0;         // > 0: top-1 agreement with FP32 instead (classifiers)
  bool per_channel_weights = true;
  int max_rounds = 4;
};

struct LayerChoice {
  std::string node;
  std::string weight;
  NumericFormat format = NumericFormat::kFp32;
  int64_t bytes_fp32 = 0;      // the weight in FP32
  int64_t bytes = 0;           // in the chosen format (scales included)
  double predicted_error = 0;  // g_i n_i(f): this layer's share of the output error
};

struct Plan {
  std::string gpu;
  std::vector<NumericFormat> formats;  // what the GPU runs, narrowest last
  std::vector<LayerChoice> layers;
  int64_t bytes_fp32 = 0, bytes = 0;  // every layer's weights
  double predicted_sqnr_db = 0;
  double measured_sqnr_db = 0;
  double measured_top1 = 0;  // NaN unless the output is a classifier's
  bool meets_budget = false;
  int64_t model_evaluations = 0;  // FP32/FP64 model runs and tangent passes, per sample
  int rounds = 0;
};

// The formats `gpu` runs, widest first (FP32, FP16, BF16, FP8-E4M3, INT8, as it has them);
// InvalidArgument naming the GPU when the catalog does not know it.
absl::StatusOr<std::vector<NumericFormat>> FormatsFor(const std::string& gpu);
// Bytes of a weight of `shape` stored in `format` (INT8/FP8: plus one FP32 scale per channel).
int64_t WeightBytes(const std::vector<int64_t>& shape, NumericFormat format, int64_t channels);

absl::StatusOr<Plan> MakePlan(const Graph& graph, const std::vector<TensorMap>& samples,
                              const PlanOptions& options);
absl::StatusOr<Plan> FallbackSearch(const Graph& graph, const std::vector<TensorMap>& samples,
                                    const PlanOptions& options);
absl::StatusOr<Plan> ExhaustiveSearch(const Graph& graph, const std::vector<TensorMap>& samples,
                                      const PlanOptions& options);

// The emulation plan of `plan` (weights only).
PrecisionPlan ToPrecisionPlan(const Plan& plan);

}  // namespace seedance::model
