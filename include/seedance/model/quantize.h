// `seedance model quantize`: a precision plan written as a standard ONNX model that real runtimes
// run (onnxruntime, TensorRT's ONNX parser): each planned weight is stored in its format and
// turned back into FP32 by standard nodes in front of the layers that read it, so the model's
// interface and the rest of its graph are unchanged.
//
//   INT8      the weight as int8 codes, DequantizeLinear with its FP32 scales (per output
//             channel: `axis`, opset 13 and later; before 13, a per-tensor DequantizeLinear of
//             scale 1 and a Mul by the channel scales; before 10, Cast and Mul)
//   FP16      the weight as float16, Cast to float
//   BF16      the weight as bfloat16, Cast to float (opset 13 and later; before 13 Cast has no
//             bfloat16, and the weight is stored as its BF16-rounded values in FP32)
//   FP8-E4M3  the opsets this build reads (up to 17) have no FP8 type (it arrives with opset 19):
//             the E4M3 codes, every one exactly a float16, are stored as float16, Cast to float
//             and multiplied by the FP32 scales (2 bytes a weight instead of 1)
//
// The values the nodes produce are exactly those Emulation (emulation.h) runs with for the same
// plan and options: code * scale is one FP32 product both ways (numerics.h), and 16-bit values
// widen exactly. The nodes take the initializer's name as their output, so every node that read
// the FP32 weight reads the restored one. Activations are not quantized (plans are weight-only).
//
// Thread-safety: thread-safe (pure).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/emulation.h"
#include "seedance/model/graph.h"
#include "seedance/model/numerics.h"

namespace seedance::model {

struct QuantizeOptions {
  bool per_channel_weights = true;  // as EmulationOptions::per_channel_weights
};

struct QuantizedWeight {
  std::string weight;  // the initializer
  NumericFormat format = NumericFormat::kFp32;
  std::string storage;       // how it is written, e.g. "int8, DequantizeLinear axis 1"
  int64_t bytes_before = 0;  // the FP32 initializer
  int64_t bytes_after = 0;   // the initializers that replace it (codes and scales)
};

struct QuantizedModel {
  Graph graph;
  std::vector<QuantizedWeight> weights;
};

// InvalidArgument when the plan names a node that is not a layer (FindLayers), quantizes an
// activation, gives one weight two formats, or a weight holds an infinity or NaN (INT8, FP8).
absl::StatusOr<QuantizedModel> QuantizeWeights(const Graph& graph, const PrecisionPlan& plan,
                                               const QuantizeOptions& options = {});

// The plan of a `seedance model plan` JSON (schema model-plan/v1): each entry of "layers" names
// its "node" and "format". Read by plan_file.h's ParsePlanFile (the one reader of the format):
// InvalidArgument naming `source` and the JSON path for a bad document.
absl::StatusOr<PrecisionPlan> ParsePlanJson(const std::string& text, const std::string& source);

}  // namespace seedance::model
