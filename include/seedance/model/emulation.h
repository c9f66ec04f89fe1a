// Precision emulation per layer: run a model with chosen layers' weights and input activations
// stored in narrower formats (numerics.h), everything else in FP32, and measure what it does to
// each layer's output and to the model's output (PyTorch Numeric Suite's metrics, top-1 agreement).
//
// A layer is a MatMul, Gemm or Conv node whose weight (input 1) is an initializer. Its weights
// are rounded once, before the run (INT8 and FP8 per output channel by default); its activation
// input is rounded as the node reads it, with INT8 and FP8 scaled to a range calibrated on the
// samples in FP32 (the largest |x| seen, a percentile of |x|, or the entropy threshold;
// Calibrate). Nothing else in the
// graph changes, so a layer's error reaches the output through the FP32 rest of the model.
//
// Thread-safety: the functions are thread-safe; an Emulation is immutable after Create and may
// run from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/numerics.h"

namespace seedance::model {

struct Layer {
  std::string node;        // the node's name
  std::string op_type;     // MatMul, Gemm, Conv
  std::string weight;      // the initializer it multiplies by
  std::string activation;  // the value of its input 0
  std::vector<int64_t> weight_shape;
  int channel_axis = 0;  // the weight's output-channel axis (Conv 0, MatMul 1, Gemm by transB)
};
std::vector<Layer> FindLayers(const Graph& graph);

struct LayerPrecision {
  NumericFormat weights = NumericFormat::kFp32;
  NumericFormat activations = NumericFormat::kFp32;
};
// node name -> precision; layers not named stay FP32.
using PrecisionPlan = std::map<std::string, LayerPrecision>;

struct EmulationOptions {
  bool per_channel_weights = true;  // INT8 and FP8 weights: a scale per output channel
  // Activation ranges: the largest |x| over the calibration samples (percentile <= 0), or this
  // percentile of |x| (e.g. 99.99), values above it clipped.
  double percentile = 0;
  // Or TensorRT's entropy calibration: the clipping threshold whose 128-level histogram of |x|
  // loses the least information (KL divergence from the 2,048-bin histogram; emulation.cc).
  bool entropy = false;
};

// Each layer's calibrated activation range (by node name), from FP32 runs of `samples`.
using ActivationRanges = std::map<std::string, double>;
absl::StatusOr<ActivationRanges> Calibrate(const Graph& graph,
                                           const std::vector<TensorMap>& samples,
                                           const EmulationOptions& options);

class Emulation {
 public:
  // InvalidArgument for a plan naming a node that is not a layer. `ranges` must hold every
  // layer whose activations are INT8 or FP8. REQUIRES: `graph` outlives the Emulation (it keeps
  // only the weights it rounded, not a copy of the model).
  static absl::StatusOr<Emulation> Create(const Graph& graph, const PrecisionPlan& plan,
                                          const ActivationRanges& ranges,
                                          const EmulationOptions& options);
  // Runs the emulated model; `options.before_node` is the emulation's own (replaced).
  absl::StatusOr<TensorMap> Run(const TensorMap& feeds, RunOptions options = {}) const;
  // The initializer `name` as this emulation's nodes read it: rounded when a planned layer
  // multiplies by it, else the graph's own. REQUIRES: an initializer of the graph.
  const Tensor& Weight(const std::string& name) const;

 private:
  const Graph* graph_ = nullptr;
  std::map<std::string, Tensor> weights_;  // initializer -> rounded, read in its place
  std::map<std::string, std::pair<NumericFormat, double>> activations_;  // node -> format, amax
};

// What a format did: the model's first output against FP32 over every sample, and the top-1
// agreement with FP32 (NaN unless that output is [..., classes] with classes > 1).
struct OutputError {
  ErrorMetrics metrics;
  double top1_agreement = 0;
};

// Output error of `test` against `ref` (the first graph output of each sample's run).
absl::StatusOr<OutputError> CompareOutputs(const Graph& graph, const std::vector<TensorMap>& ref,
                                           const std::vector<TensorMap>& test);

// The per-layer analysis of `seedance model analyze`: for each layer and format, that layer alone
// in the format (weights, and activations when asked) and the rest FP32: the layer's own output
// and the model's output against FP32 over every sample; and every layer at once in each format.
struct FormatError {
  OutputError output;
  ErrorMetrics layer;  // the layer's own output (its node's output 0) against FP32
};
struct LayerAnalysis {
  Layer layer;
  std::map<NumericFormat, FormatError> by_format;
};
struct Analysis {
  std::vector<NumericFormat> formats;
  std::vector<LayerAnalysis> layers;
  std::map<NumericFormat, OutputError> all_layers;
  size_t samples = 0;
};
struct AnalyzeOptions {
  std::vector<NumericFormat> formats = {NumericFormat::kFp16, NumericFormat::kBf16,
                                        NumericFormat::kFp8E4M3, NumericFormat::kInt8};
  bool activations = true;  // round the layers' activation inputs too, not only their weights
  EmulationOptions emulation;
  // Called after each emulated configuration with (done, total), for progress on long runs.
  std::function<void(size_t, size_t)> progress;
};
absl::StatusOr<Analysis> Analyze(const Graph& graph, const std::vector<TensorMap>& samples,
                                 const AnalyzeOptions& options);

}  // namespace seedance::model
