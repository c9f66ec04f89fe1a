// The error-propagation graph (seed A 4.1): how the error a layer's precision adds travels to the
// model's output, predicted from first-order derivatives (jvp.h) instead of trial runs.
//
// Nodes are the layers (emulation.h: FindLayers). For each layer i, its weights' rounding error
// dW = Q(W) - W (Q: the format's fake quantization, INT8 per output channel by default) is seeded
// as a tangent at the weight, in FP64, and propagated forward once per sample: the tangent at i's
// own output is the noise it adds (exactly x dW: the layer is linear in W), the tangent at every
// later layer's output and at the model's output is that noise's first-order effect. From these:
//   - predicted output error of i: || J dW || at the model's first output, over every sample;
//   - edge i -> j (j the next layer on a path from i, no layer between): gain ||t_j|| / ||t_i||;
//     a path's gain is the product of its edges' (an approximation: directions are not
//     multiplied); edges whose gain is below `prune_below` are dropped;
//   - the most sensitive path: the chain of edges, from any layer to the output, of largest gain;
//   - measured output error (when asked): the FP64 model run with i's weights actually rounded,
//     so a prediction can be checked against it.
// Costs one FP64 run per sample plus one forward tangent pass per layer and sample (and, when
// measuring, one FP64 run per layer and sample).
//
// Thread-safety: thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/emulation.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/numerics.h"

namespace seedance::model {

struct ErrorGraphOptions {
  NumericFormat format = NumericFormat::kInt8;  // the weight perturbation studied
  bool per_channel_weights = true;
  double prune_below = 1e-3;
  bool measure = true;  // also run each perturbation for real (FP64) to check the prediction
};

struct LayerError {
  std::string node;
  double noise = 0;              // || x dW || at the layer's output (root of the sum of squares)
  double predicted = 0;          // || J dW || at the model's first output
  double measured = 0;           // || f(Q(W)) - f(W) || there (0 unless measured)
  double output_gain = 0;        // predicted / noise
  double predicted_sqnr_db = 0;  // of the model's output, from `predicted`
  double measured_sqnr_db = 0;
};

struct ErrorEdge {
  std::string from, to;
  double gain = 0;
};

struct ErrorGraph {
  std::vector<LayerError> layers;  // in graph order
  std::vector<ErrorEdge> edges;    // kept edges (gain >= prune_below)
  size_t pruned_edges = 0;
  std::vector<std::string> most_sensitive_path;  // layers, ending at the model's output
  double most_sensitive_path_gain = 0;           // edges' gains times the last layer's output gain
  double output_norm = 0;                        // || f(W) || over every sample
  size_t samples = 0;
};

absl::StatusOr<ErrorGraph> BuildErrorGraph(const Graph& graph,
                                           const std::vector<TensorMap>& samples,
                                           const ErrorGraphOptions& options);

// Spearman's rank correlation of two equally long series (ties get their mean rank); NaN when
// either is constant or shorter than 2.
double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace seedance::model
