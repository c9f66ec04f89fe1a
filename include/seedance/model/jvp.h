// Forward-mode derivatives of a model in FP64: Jacobian-vector products (JVPs) through the graph,
// the executor's own kernels doing the linear work.
//
// Jvp propagates tangents: given tangents ("seeds") at some values (an input, a weight, a layer's
// output), it returns J v, the first-order change of every later value. The primal values come
// from one FP64 run of the model (ToFloat64), kept whole. Each operator has a rule:
//   - linear in its float inputs (shape ops, Add, Sub, Concat, ReduceSum/Mean, pooling by
//     average, Where's branches, Cast to a float type): the same kernel run on the tangents;
//   - bilinear (Mul, MatMul, Gemm, Conv): the kernel on (dA, B) plus the kernel on (A, dB);
//   - Div, Pow, Softmax, LogSoftmax, LayerNormalization, BatchNormalization (inference), MaxPool
//     and element-wise functions (Relu, Sigmoid, Tanh, Erf, Sqrt, Exp, Log, ...): their
//     derivative, in closed form, at the primal point;
//   - operators whose outputs are not floats (Shape, comparisons, ArgMax, ...): no tangent.
// An operator on a float path that has no rule is InvalidArgument naming it.
//
// Thread-safety: a Jvp is immutable after Create; Propagate may run from several threads.
#pragma once

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"

namespace seedance::model {

// A copy of `graph` computing in FP64: float initializers, inputs, outputs and constants become
// double, and Cast/ConstantOfShape to float cast to double instead.
absl::StatusOr<Graph> ToFloat64(const Graph& graph);
// `t` widened to double when it is float (other types unchanged).
Tensor ToFloat64(const Tensor& t);
// `feeds` with every float tensor widened to double (for a ToFloat64 graph).
TensorMap FeedsToFloat64(const TensorMap& feeds);

class Jvp {
 public:
  // Runs `graph64` (from ToFloat64) on `feeds64`, keeping every value.
  static absl::StatusOr<Jvp> Create(const Graph& graph64, const TensorMap& feeds64);

  // The tangents of the values named in `record` (absent: zero) given `seeds`: value name ->
  // tangent (double, the value's shape), added where the value is made (a node output) or given
  // (a graph input or an initializer).
  absl::StatusOr<TensorMap> Propagate(const TensorMap& seeds,
                                      const std::set<std::string>& record) const;

  // Every value of the FP64 run.
  const TensorMap& primal() const { return primal_; }
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  TensorMap primal_;
};

}  // namespace seedance::model
