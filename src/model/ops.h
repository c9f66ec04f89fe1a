// The executor's operator kernels (internal to seedance_model).
//
// A kernel reads its node's inputs and attributes through an OpContext and fills its outputs, or
// returns InvalidArgument saying what is wrong with them (the executor adds the node's name and
// operator). Kernels are pure functions of their inputs: reentrant and thread-safe.
//
// Each ops_*.cc file registers its family in one Register*Ops function; OpTable() gathers them.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/model/float_formats.h"
#include "seedance/model/graph.h"
#include "seedance/model/tensor.h"

namespace seedance::model::ops {

class OpContext {
 public:
  // `takeable` (empty, or one entry per input) holds, for an input the kernel may move from, the
  // same tensor as `inputs` but mutable; nullptr (or an empty vector) for the others.
  OpContext(const Node& node, int64_t opset, std::vector<const Tensor*> inputs,
            std::vector<Tensor*> takeable = {})
      : node_(node), opset_(opset), inputs_(std::move(inputs)), takeable_(std::move(takeable)) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  // The number of inputs the node names (omitted optional ones included).
  int input_count() const { return static_cast<int>(inputs_.size()); }
  // True when input `i` is given (named and not "").
  bool has_input(int i) const {
    return i < input_count() && inputs_[static_cast<size_t>(i)] != nullptr;
  }
  // REQUIRES: has_input(i).
  const Tensor& input(int i) const;
  // Input i as a tensor the kernel may move from (to reuse its storage for an output), or nullptr.
  // The executor offers one only where this node is the last reader of a value a node made and
  // reads it through no other input; after moving from it the kernel must not read input i again.
  Tensor* takeable_input(int i) const {
    const size_t k = static_cast<size_t>(i);
    return k < takeable_.size() ? takeable_[k] : nullptr;
  }
  int output_count() const { return static_cast<int>(node_.outputs.size()); }

  bool has_attr(const std::string& name) const { return node_.attributes.count(name) > 0; }
  // An attribute's value, or `fallback` when absent. A present attribute of another kind is
  // InvalidArgument.
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t fallback) const;
  absl::StatusOr<float> Float(const std::string& name, float fallback) const;
  absl::StatusOr<std::string> String(const std::string& name, const std::string& fallback) const;
  absl::StatusOr<std::vector<int64_t>> Ints(const std::string& name,
                                            std::vector<int64_t> fallback = {}) const;
  absl::StatusOr<std::vector<float>> Floats(const std::string& name,
                                            std::vector<float> fallback = {}) const;
  // A tensor attribute; NotFound when absent.
  absl::StatusOr<Tensor> TensorAttr(const std::string& name) const;

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> takeable_;
};

// Fills `outputs` (already sized to output_count(), each a default Tensor). An output the node
// omits ("") may be left as is.
using Kernel = std::function<absl::Status(const OpContext&, std::vector<Tensor>& outputs)>;
using Table = std::map<std::string, Kernel>;

void RegisterElementwiseOps(Table& table);  // ops_elementwise.cc: unary, binary, Where, Clip, Cast
void RegisterMathOps(Table& table);         // ops_math.cc: MatMul, Gemm
void RegisterNnOps(Table& table);           // ops_nn.cc: Conv, normalisation, Softmax, pooling
void RegisterShapeOps(Table& table);        // ops_shape.cc: Reshape, Transpose, Concat, Gather...
void RegisterReduceOps(Table& table);       // ops_reduce.cc: Reduce*, ArgMax/ArgMin
void RegisterQuantOps(Table& table);        // ops_quant.cc: Q/DQ, MatMulInteger

// Every kernel, built once.
const Table& OpTable();
// The kernels of onnxruntime's "com.microsoft" operators (ops_fused.cc), built once.
const Table& ContribTable();
// Registers those operators' schemas with libonnx (contrib_schemas.cc), once; thread-safe.
void RegisterContribSchemas();
// The oldest version of `op_type` (its schema's since_version) the kernel implements when that is
// older than the version in force at opset 7 (graph.cc's CheckOperator), else 0.
int64_t OldestVersion(const std::string& op_type);

// ---- helpers shared by the kernel files ----

// ONNX (numpy) multidirectional broadcasting of two shapes; InvalidArgument when they do not.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(std::span<const int64_t> a,
                                                     std::span<const int64_t> b);
// Row-major strides of `shape`.
std::vector<int64_t> Strides(std::span<const int64_t> shape);
// For each element of `out_shape` (row-major), the flat index of the element of `in_shape` it
// broadcasts from. REQUIRES: in_shape broadcasts to out_shape.
std::vector<int64_t> BroadcastIndex(std::span<const int64_t> in_shape,
                                    std::span<const int64_t> out_shape);
// A possibly negative axis made non-negative; InvalidArgument naming `what` when outside
// [-rank, rank) (every axis of a scalar, rank 0).
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank, const char* what = "axis");

// A tensor of `type` and `shape` holding `values` converted by FromDouble (ops_nn.cc).
// REQUIRES: values.size() is the shape's element count.
Tensor WriteDoubles(DataType type, std::vector<int64_t> shape, std::span<const double> values);
// A tensor of `out_shape` holding, in row-major order over `iter_shape`, the elements of `in` at
// offset + sum(pos[d] * strides[d]) (strides in elements, possibly 0 or negative; ops_shape.cc).
// REQUIRES: every addressed element lies inside `in`; iter_shape and out_shape have equal
// counts; one stride per axis of iter_shape.
Tensor StridedCopy(const Tensor& in, std::span<const int64_t> iter_shape, int64_t offset,
                   std::span<const int64_t> strides, std::vector<int64_t> out_shape);

// The lines Softmax, LogSoftmax and Hardmax normalise: `outer` blocks of `n` elements `inner`
// apart. Before opset 13 the input is coerced to 2-D at `axis` (default 1; axis == rank allowed)
// and the flattened trailing block is one line; from 13 on, each line along `axis` (default -1).
// From the node's axis attribute (ops_nn.cc; the executor's kernels and jvp.cc's rules).
struct LineLayout {
  int64_t outer = 1, n = 1, inner = 1;
};
absl::StatusOr<LineLayout> SoftmaxLinesOf(const OpContext& ctx, const Tensor& x);

// Calls f(T{}) with T the C++ type of `type`, for every supported type.
template <typename F>
auto VisitType(DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat:
      return f(float{});
    case DataType::kDouble:
      return f(double{});
    case DataType::kUint8:
      return f(uint8_t{});
    case DataType::kInt8:
      return f(int8_t{});
    case DataType::kUint16:
      return f(uint16_t{});
    case DataType::kInt16:
      return f(int16_t{});
    case DataType::kInt32:
      return f(int32_t{});
    case DataType::kInt64:
      return f(int64_t{});
    case DataType::kUint32:
      return f(uint32_t{});
    case DataType::kUint64:
      return f(uint64_t{});
    case DataType::kBool:
      return f(bool{});
    case DataType::kFloat16:
      return f(Float16{});
    case DataType::kBfloat16:
      return f(BFloat16{});
    default:
      break;
  }
  SEEDANCE_UNREACHABLE();
  return f(float{});
}

// Element <-> double, 16-bit floats through float_formats.h (for kernels that compute in double).
// FromDouble to an integer type saturates at the type's range and maps NaN to 0 (ONNX leaves
// out-of-range casts undefined; this keeps them defined in C++); to bool, non-zero is true.
template <typename T>
inline double ToDouble(T v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return FromFloat16(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return FromBFloat16(v);
  } else {
    return static_cast<double>(v);
  }
}
template <typename T>
inline T FromDouble(double v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return ToFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return ToBFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T{0};
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) {
      return std::numeric_limits<T>::min();
    }
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(v);
  }
}

}  // namespace seedance::model::ops
