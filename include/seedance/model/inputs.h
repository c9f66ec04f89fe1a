// Inputs for running a model: samples read from a folder of TensorProto files, or a seeded random
// sample drawn from the model's declared input shapes, and the conformance suite's folder layout
// for writing inputs and outputs back.
//
// A sample folder holds one `.pb` TensorProto per graph input, named either by the input
// (`NAME.pb`, with '/' and other characters that cannot be in a file name replaced by '_') or by
// position (`input_N.pb`, ONNX's conformance layout). An --inputs folder is one sample when it
// holds .pb files itself, else every sub-folder is one sample, in name order.
//
// Thread-safety: the functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"

namespace seedance::model {

struct Sample {
  std::string name;  // the sub-folder's name, or "" for a folder that is itself one sample
  TensorMap feeds;
};

// Every sample below `dir`; InvalidArgument naming the folder and the input for a missing,
// unreadable or mistyped tensor, or a folder with no sample.
absl::StatusOr<std::vector<Sample>> ReadSamples(const Graph& graph, const std::string& dir);

// "name=1x3x48x192" flags -> input name -> shape. InvalidArgument naming the flag text.
absl::StatusOr<std::map<std::string, std::vector<int64_t>>> ParseShapes(
    const std::vector<std::string>& flags);

// One sample drawn with `seed`: floats uniform in [-1, 1), integers uniform in [0, 10), booleans
// fair. Each input's shape is `shapes[name]` when given (it must agree with the fixed dimensions),
// else its declared shape, which must then be fully fixed: InvalidArgument names the input and the
// dimension to give with --shape otherwise, or a name in `shapes` that is not an input.
absl::StatusOr<TensorMap> RandomSample(const Graph& graph,
                                       const std::map<std::string, std::vector<int64_t>>& shapes,
                                       uint64_t seed);

// Writes input_N.pb (when `inputs` is not null) and output_N.pb into `dir` (created if missing),
// in the graph's input and output order, each file atomically.
absl::Status WriteSampleFolder(const std::string& dir, const Graph& graph, const TensorMap* inputs,
                               const TensorMap& outputs);

// The file-name form of a value name (NAME.pb).
std::string FileNameOf(const std::string& value_name);

}  // namespace seedance::model
