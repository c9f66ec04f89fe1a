// An ONNX model read into Seedance's own graph: nodes in an order that runs (every input is made
// before it is used), initializers as tensors, and the graph's inputs and outputs.
//
// LoadOnnxModel reads a .onnx file with Debian's libonnx (onnx::ModelProto), runs ONNX's checker
// and shape inference, reads external data beside the file, turns Constant nodes into
// initializers and refuses what the executor cannot run, each refusal InvalidArgument naming the
// file, the node (name and operator) and the reason:
//   - not a model (truncated or not protobuf), a checker failure, a cycle, an input nobody makes;
//   - an opset of the default domain above 17, an operator the executor does not claim or a
//     version of it older than the executor runs (CheckOperator);
//   - an operator of a domain other than the default and "com.microsoft" (onnxruntime's fused
//     operators, version 1: those the rewriter emits, rewrite.h), or one of that domain the
//     executor does not run (CheckContribOperator);
//   - a tensor above the limits (LoadOptions), an external-data file outside the model's folder.
// NotFound / Internal for a file that cannot be read.
//
// Thread-safety: the functions are thread-safe; a Graph is a value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/tensor.h"

namespace seedance::model {

// One attribute of a node (the kinds the executor reads; graphs and sparse tensors are refused).
struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensor;  // one element when kind == kTensor

  // An attribute of one kind holding `v`.
  static Attribute Int(int64_t v) {
    Attribute a;
    a.kind = Kind::kInt;
    a.i = v;
    return a;
  }
  static Attribute Float(float v) {
    Attribute a;
    a.kind = Kind::kFloat;
    a.f = v;
    return a;
  }
  static Attribute String(std::string v) {
    Attribute a;
    a.kind = Kind::kString;
    a.s = std::move(v);
    return a;
  }
  static Attribute Ints(std::vector<int64_t> v) {
    Attribute a;
    a.kind = Kind::kInts;
    a.ints = std::move(v);
    return a;
  }
};

// onnxruntime's domain of fused operators ("com.microsoft"), the one other domain read.
inline constexpr char kMicrosoftDomain[] = "com.microsoft";

struct Node {
  std::string name;                  // the node's name, or "OpType#index" when the file gives none
  std::string op_type;               // "MatMul"
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attributes;
  std::string domain = "";  // "" (ONNX's default domain) or kMicrosoftDomain
};

// A graph input or output: its declared element type and shape (-1 for a dimension that is not a
// fixed number; `dim_names` holds its symbolic name, or "").
struct ValueInfo {
  std::string name;
  DataType type = DataType::kUndefined;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
  bool has_shape = false;
};

struct Graph {
  std::string source;       // the file it was read from, for messages
  int64_t opset = 0;        // the default domain's opset version
  // kMicrosoftDomain's opset version (1) when the model imports it, else 0. Written when set or
  // when a node of that domain exists.
  int64_t microsoft_opset = 0;
  int64_t ir_version = 0;   // the file's IR version (0: not read from a file)
  std::vector<Node> nodes;  // in an order that runs
  std::map<std::string, Tensor> initializers;
  std::vector<ValueInfo> inputs;  // the inputs a caller feeds (initializers excluded)
  std::vector<ValueInfo> outputs;
};

struct LoadOptions {
  // A tensor (initializer, Constant, external data) larger than this is refused before it is read
  // (a CPU executor for models of this size; the CLI's --max-tensor-size raises it).
  int64_t max_tensor_bytes = int64_t{1} << 30;
  // The .onnx file itself (protobuf cannot parse more than 2 GiB).
  int64_t max_file_bytes = int64_t{2} << 30;
  // Run onnx::checker::check_model (full check) and onnx::shape_inference.
  bool check = true;
};

absl::StatusOr<Graph> LoadOnnxModel(const std::string& path, const LoadOptions& options = {});
// The same from bytes in memory; `source` names it in messages and external data is refused.
absl::StatusOr<Graph> ParseOnnxModel(const std::string& bytes, const std::string& source,
                                     const LoadOptions& options = {});

// `graph` as an ONNX model (ModelProto bytes): the default domain at `graph.opset`, the IR version
// it was read with (else libonnx's own, 8), producer "seedance"; initializers as raw data. The
// model is checked as LoadOnnxModel checks one (libonnx's checker, strict shape inference) before
// it is returned: InvalidArgument with the checker's reason when `graph` is not a valid model,
// and when it would not fit a protobuf (2 GiB).
absl::StatusOr<std::string> SerializeOnnxModel(const Graph& graph);
// The same, written to `path` atomically (base::WriteOutput: a device, FIFO or folder is refused).
absl::Status SaveOnnxModel(const Graph& graph, const std::string& path);

// OK when the executor runs `op_type` of the default domain at `opset`: the operator is claimed
// (executor.h: ClaimedOps) and the version the opset resolves it to is one its kernel implements
// (the version in force at opset 7 and later ones: older versions broadcast differently; a few
// operators whose semantics never changed run from their first version). InvalidArgument says
// which.
absl::Status CheckOperator(const std::string& op_type, int64_t opset);

// The element type and shape of every value of `graph`: its inputs, initializers and what ONNX's
// shape inference derives for each node output (has_shape false, or -1 dimensions, where it
// cannot). InvalidArgument when inference fails.
absl::StatusOr<std::map<std::string, ValueInfo>> InferValueInfo(const Graph& graph);

// `graph` converted to opset `version` of the default domain by libonnx's version converter
// (ONNX's adapters per operator), then checked as a loaded model is. InvalidArgument when the
// converter cannot convert an operator or the result is not one the executor runs.
absl::StatusOr<Graph> ConvertOpset(const Graph& graph, int64_t version);

// OK when the executor runs `op_type` of kMicrosoftDomain (executor.h: ClaimedContribOps) at
// that domain's version 1; InvalidArgument says which otherwise.
absl::Status CheckContribOperator(const std::string& op_type, int64_t version);

// A TensorProto file (the conformance suite's input_N.pb / output_N.pb). `name` receives the
// tensor's name when not null. InvalidArgument naming the file for a bad tensor.
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name = nullptr);
// Writes `tensor` as a TensorProto named `name` (raw_data little-endian), atomically.
absl::Status WriteTensorFile(const std::string& path, const std::string& name,
                             const Tensor& tensor);
// A TensorProto's bytes, and back (the same checks as ReadTensorFile; `source` for messages).
std::string SerializeTensor(const std::string& name, const Tensor& tensor);
absl::StatusOr<Tensor> ParseTensor(const std::string& bytes, const std::string& source,
                                   std::string* name = nullptr);

}  // namespace seedance::model
