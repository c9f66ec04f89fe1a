// Internal to seedance_model: a layer's local noise, ||x (W' - W)|| for another weight W' on the
// layer's recorded inputs, and the FP32 runs that record those inputs. Shared by the precision
// planner (planner.cc: W' = the weight rounded to a format) and the 2:4 sparsity report
// (sparsity.cc: W' = the weight pruned); moved here from planner.cc's Setup and LocalNoise.
//
// Thread-safety: thread-safe (pure functions).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/emulation.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"

namespace seedance::model::internal {

// The FP32 runs of `graph` on every sample, keeping each layer's input 0 as it read it.
struct LayerInputs {
  std::vector<TensorMap> outputs;                     // one per sample
  std::map<std::string, std::vector<Tensor>> inputs;  // layer node -> its input, per sample
};
absl::StatusOr<LayerInputs> RunKeepingLayerInputs(const Graph& graph,
                                                  const std::vector<Layer>& layers,
                                                  const std::vector<TensorMap>& samples);

// sum over `inputs` of ||x (w_new - W)||^2: the layer alone (without its bias), in FP64, on each
// input widened to FP64, W the layer's weight in `graph`. REQUIRES: `layer` is one of FindLayers
// (graph) and `w_new` a float tensor of its weight's shape (aborts otherwise).
absl::StatusOr<double> LocalNoiseSquared(const Graph& graph, const Layer& layer,
                                         const Tensor& w_new, const std::vector<Tensor>& inputs);

}  // namespace seedance::model::internal
