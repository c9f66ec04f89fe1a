// Forward-mode JVPs (jvp.h): one rule per operator family, in FP64.
#include "seedance/model/jvp.h"

#include <cmath>
#include <functional>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "ops.h"

namespace seedance::model {
namespace {

using Tensors = std::vector<Tensor>;

bool IsFloat(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
         t == DataType::kBfloat16;
}

}  // namespace

Tensor ToFloat64(const Tensor& t) {
  if (t.type() != DataType::kFloat) return t;
  Tensor d(DataType::kDouble, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

namespace {

// Runs operator `op_type` of `node`'s kind (its attributes, or none) on `inputs`.
absl::StatusOr<Tensors> Apply(const Node& node, const std::string& op_type, int64_t opset,
                              std::vector<const Tensor*> inputs, size_t outputs = 1) {
  Node n = node;
  n.op_type = op_type;
  if (op_type != node.op_type) n.attributes.clear();
  n.inputs.assign(inputs.size(), "x");
  n.outputs.assign(outputs, "y");
  auto kernel = ops::OpTable().find(op_type);
  if (kernel == ops::OpTable().end()) {
    return absl::InvalidArgumentError(absl::StrCat("no kernel for ", op_type));
  }
  Tensors out(outputs);
  absl::Status s = kernel->second(ops::OpContext(n, opset, std::move(inputs)), out);
  if (!s.ok()) return s;
  return out;
}

Tensor ZerosLike(const Tensor& t) { return Tensor(DataType::kDouble, t.shape()); }

// What a rule sees: the node, its primal inputs and outputs, and its inputs' tangents (nullptr
// for zero).
struct Step {
  const Node& node;
  int64_t opset;
  std::vector<const Tensor*> x;   // primal inputs (nullptr where omitted)
  std::vector<const Tensor*> y;   // primal outputs
  std::vector<const Tensor*> dx;  // tangents of the inputs
};

using Rule = std::function<absl::StatusOr<Tensors>(const Step&)>;

// Element-wise f'(x) given x and y = f(x), for unary functions.
using Derivative = std::function<double(double x, double y)>;

absl::StatusOr<Tensors> Unary(const Step& s, const Derivative& d) {
  const Tensor& x = *s.x[0];
  const Tensor& y = *s.y[0];
  Tensor dy(DataType::kDouble, y.shape());
  for (int64_t i = 0; i < y.size(); ++i) {
    dy.data<double>()[i] = d(x.AsDouble(i), y.AsDouble(i)) * s.dx[0]->data<double>()[i];
  }
  return Tensors{std::move(dy)};
}

// The same kernel run on the tangents of inputs in `linear` (zeros where a tangent is zero) and
// on the primal values of the others: for operators linear in those inputs.
absl::StatusOr<Tensors> Linear(const Step& s, const std::set<size_t>& linear) {
  std::vector<Tensor> zeros;
  zeros.reserve(s.x.size());
  std::vector<const Tensor*> in(s.x.size());
  for (size_t i = 0; i < s.x.size(); ++i) {
    in[i] = s.x[i];
    if (linear.count(i) && s.x[i] != nullptr) {
      if (s.dx[i] != nullptr) {
        in[i] = s.dx[i];
      } else {
        zeros.push_back(ZerosLike(*s.x[i]));
        in[i] = &zeros.back();
      }
    }
  }
  return Apply(s.node, s.node.op_type, s.opset, in, s.node.outputs.size());
}

// d(op(A, B)) = op(dA, B) + op(A, dB) for an operator bilinear in inputs 0 and 1 (further inputs,
// like a bias, enter the first term with their tangents).
absl::StatusOr<Tensors> Bilinear(const Step& s) {
  std::vector<const Tensor*> first = s.x, second = {s.x[0], s.x[1]};
  std::vector<Tensor> zeros;
  zeros.reserve(s.x.size());
  auto tangent = [&](size_t i) -> const Tensor* {
    if (s.dx[i] != nullptr) return s.dx[i];
    zeros.push_back(ZerosLike(*s.x[i]));
    return &zeros.back();
  };
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (i != 1 && s.x[i] != nullptr) first[i] = tangent(i);
  }
  absl::StatusOr<Tensors> a = Apply(s.node, s.node.op_type, s.opset, first);
  if (!a.ok()) return a;
  if (s.dx[1] == nullptr) return a;
  second[1] = s.dx[1];
  absl::StatusOr<Tensors> b = Apply(s.node, s.node.op_type, s.opset, second);
  if (!b.ok()) return b;
  return Apply(s.node, "Add", s.opset, {&(*a)[0], &(*b)[0]});
}

// d(A / B) = (dA - Y dB) / B.
absl::StatusOr<Tensors> DivRule(const Step& s) {
  Tensor zeros = ZerosLike(*s.x[0]);
  const Tensor* da = s.dx[0] != nullptr ? s.dx[0] : &zeros;
  Tensor num = *da;
  if (s.dx[1] != nullptr) {
    absl::StatusOr<Tensors> ydb = Apply(s.node, "Mul", s.opset, {s.y[0], s.dx[1]});
    if (!ydb.ok()) return ydb;
    absl::StatusOr<Tensors> diff = Apply(s.node, "Sub", s.opset, {da, &(*ydb)[0]});
    if (!diff.ok()) return diff;
    num = std::move((*diff)[0]);
  }
  return Apply(s.node, "Div", s.opset, {&num, s.x[1]});
}

// d(A^B) = B A^(B-1) dA + Y ln(A) dB, element-wise with broadcasting (through the output's index).
absl::StatusOr<Tensors> PowRule(const Step& s) {
  const Tensor& y = *s.y[0];
  const std::vector<int64_t> ia = ops::BroadcastIndex(s.x[0]->shape(), y.shape());
  const std::vector<int64_t> ib = ops::BroadcastIndex(s.x[1]->shape(), y.shape());
  Tensor dy(DataType::kDouble, y.shape());
  for (int64_t i = 0; i < y.size(); ++i) {
    const double a = s.x[0]->AsDouble(ia[i]), b = s.x[1]->AsDouble(ib[i]);
    double d = 0;
    if (s.dx[0] != nullptr) d += b * std::pow(a, b - 1) * s.dx[0]->AsDouble(ia[i]);
    if (s.dx[1] != nullptr && a > 0) d += y.AsDouble(i) * std::log(a) * s.dx[1]->AsDouble(ib[i]);
    dy.data<double>()[i] = d;
  }
  return Tensors{std::move(dy)};
}

// Softmax: dY = Y (dX - sum(Y dX)); LogSoftmax: dY = dX - sum(exp(Y) dX).
absl::StatusOr<Tensors> SoftmaxRule(const Step& s, bool log) {
  absl::StatusOr<ops::LineLayout> l =
      ops::SoftmaxLinesOf(ops::OpContext(s.node, s.opset, {}), *s.x[0]);
  if (!l.ok()) return l.status();
  const Tensor& y = *s.y[0];
  Tensor dy(DataType::kDouble, y.shape());
  for (int64_t o = 0; o < l->outer; ++o) {
    for (int64_t k = 0; k < l->inner; ++k) {
      auto at = [&](int64_t j) { return (o * l->n + j) * l->inner + k; };
      double dot = 0;
      for (int64_t j = 0; j < l->n; ++j) {
        const double p = log ? std::exp(y.AsDouble(at(j))) : y.AsDouble(at(j));
        dot += p * s.dx[0]->AsDouble(at(j));
      }
      for (int64_t j = 0; j < l->n; ++j) {
        const double dx = s.dx[0]->AsDouble(at(j));
        dy.data<double>()[at(j)] = log ? dx - dot : y.AsDouble(at(j)) * (dx - dot);
      }
    }
  }
  return Tensors{std::move(dy)};
}

// LayerNormalization over axes [axis, rank): x^ = (x - mean) / sigma,
// dx^ = (dx - mean(dx) - x^ mean(x^ dx)) / sigma, dY = dx^ gamma + x^ dgamma + dbeta.
absl::StatusOr<Tensors> LayerNormRule(const Step& s) {
  const Tensor& x = *s.x[0];
  ops::OpContext ctx(s.node, s.opset, {});
  absl::StatusOr<int64_t> axis_attr = ctx.Int("axis", -1);
  absl::StatusOr<float> eps = ctx.Float("epsilon", 1e-5f);
  if (!axis_attr.ok() || !eps.ok()) return absl::InvalidArgumentError("bad LayerNormalization");
  absl::StatusOr<int> axis = ops::NormalizeAxis(*axis_attr, x.rank());
  if (!axis.ok()) return axis.status();
  int64_t n = 1;
  for (int d = *axis; d < x.rank(); ++d) n *= x.dim(d);
  const int64_t rows = n == 0 ? 0 : x.size() / n;
  const std::vector<int64_t> tail(x.shape().begin() + *axis, x.shape().end());
  const std::vector<int64_t> ig = ops::BroadcastIndex(s.x[1]->shape(), tail);
  std::vector<int64_t> ib;
  if (s.x.size() > 2 && s.x[2] != nullptr) ib = ops::BroadcastIndex(s.x[2]->shape(), tail);
  Tensor dy(DataType::kDouble, x.shape());
  std::vector<double> xh(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * n;
    double mean = 0, var = 0, mdx = 0, mxdx = 0;
    for (int64_t j = 0; j < n; ++j) mean += x.AsDouble(base + j);
    mean /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) var += std::pow(x.AsDouble(base + j) - mean, 2);
    const double sigma = std::sqrt(var / static_cast<double>(n) + *eps);
    for (int64_t j = 0; j < n; ++j) {
      xh[j] = (x.AsDouble(base + j) - mean) / sigma;
      const double dx = s.dx[0] != nullptr ? s.dx[0]->AsDouble(base + j) : 0;
      mdx += dx;
      mxdx += xh[j] * dx;
    }
    mdx /= static_cast<double>(n);
    mxdx /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      const double dx = s.dx[0] != nullptr ? s.dx[0]->AsDouble(base + j) : 0;
      double d = (dx - mdx - xh[j] * mxdx) / sigma * s.x[1]->AsDouble(ig[j]);
      if (s.dx[1] != nullptr) d += xh[j] * s.dx[1]->AsDouble(ig[j]);
      if (!ib.empty() && s.dx[2] != nullptr) d += s.dx[2]->AsDouble(ib[j]);
      dy.data<double>()[base + j] = d;
    }
  }
  return Tensors{std::move(dy)};
}

// BatchNormalization in inference: dY = dX scale / sqrt(var + eps), per channel (axis 1).
absl::StatusOr<Tensors> BatchNormRule(const Step& s) {
  const Tensor& x = *s.x[0];
  absl::StatusOr<float> eps = ops::OpContext(s.node, s.opset, {}).Float("epsilon", 1e-5f);
  if (!eps.ok()) return eps.status();
  const int64_t channels = x.rank() > 1 ? x.dim(1) : 1;
  int64_t inner = 1;
  for (int d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  Tensor dy(DataType::kDouble, x.shape());
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t c = (i / inner) % channels;
    const double g = s.x[1]->AsDouble(c) / std::sqrt(s.x[4]->AsDouble(c) + *eps);
    dy.data<double>()[i] = g * s.dx[0]->AsDouble(i);
  }
  return Tensors{std::move(dy)};
}

// MaxPool: each output's tangent is its window's argmax's (the kernel's Indices output).
absl::StatusOr<Tensors> MaxPoolRule(const Step& s) {
  absl::StatusOr<Tensors> pooled = Apply(s.node, "MaxPool", s.opset, {s.x[0]}, 2);
  if (!pooled.ok()) return pooled;
  const Tensor& index = (*pooled)[1];
  Tensor dy(DataType::kDouble, (*pooled)[0].shape());
  for (int64_t i = 0; i < dy.size(); ++i) {
    dy.data<double>()[i] = s.dx[0]->AsDouble(index.AsInt64(i));
  }
  return Tensors{std::move(dy)};
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

const std::map<std::string, Derivative>& Derivatives() {
  static const auto* const table = new std::map<std::string, Derivative>{
      {"Relu", [](double x, double) { return x > 0 ? 1.0 : 0.0; }},
      {"Sigmoid", [](double, double y) { return y * (1 - y); }},
      {"Tanh", [](double, double y) { return 1 - y * y; }},
      {"Erf", [](double x, double) { return 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x); }},
      {"Sqrt", [](double, double y) { return 0.5 / y; }},
      {"Exp", [](double, double y) { return y; }},
      {"Log", [](double x, double) { return 1 / x; }},
      {"Reciprocal", [](double, double y) { return -y * y; }},
      {"Abs", [](double x, double) { return x > 0   ? 1.0
                                            : x < 0 ? -1.0
                                                    : 0.0; }},
      {"Softplus", [](double x, double) { return Sigmoid(x); }},
      {"Sin", [](double x, double) { return std::cos(x); }},
      {"Cos", [](double x, double) { return -std::sin(x); }},
      {"Floor", [](double, double) { return 0.0; }},
      {"Ceil", [](double, double) { return 0.0; }},
      {"Round", [](double, double) { return 0.0; }},
      {"Sign", [](double, double) { return 0.0; }},
  };
  return *table;
}

const std::map<std::string, std::set<size_t>>& LinearOps() {
  static const auto* const table =
      new std::map<std::string, std::set<size_t>>{{"Reshape", {0}},
                                                  {"Transpose", {0}},
                                                  {"Flatten", {0}},
                                                  {"Squeeze", {0}},
                                                  {"Unsqueeze", {0}},
                                                  {"Slice", {0}},
                                                  {"Gather", {0}},
                                                  {"GatherElements", {0}},
                                                  {"Split", {0}},
                                                  {"Expand", {0}},
                                                  {"Tile", {0}},
                                                  {"Identity", {0}},
                                                  {"Neg", {0}},
                                                  {"ReduceSum", {0}},
                                                  {"ReduceMean", {0}},
                                                  {"DepthToSpace", {0}},
                                                  {"SpaceToDepth", {0}},
                                                  {"GlobalAveragePool", {0}},
                                                  {"AveragePool", {0}},
                                                  {"Trilu", {0}},
                                                  {"CumSum", {0}},
                                                  {"Cast", {0}},
                                                  {"CastLike", {0}},
                                                  {"Add", {0, 1}},
                                                  {"Sub", {0, 1}},
                                                  {"Concat", {0, 1, 2, 3, 4, 5, 6, 7}},
                                                  {"Sum", {0, 1, 2, 3, 4, 5, 6, 7}},
                                                  {"Mean", {0, 1, 2, 3, 4, 5, 6, 7}},
                                                  {"Where", {1, 2}}};
  return *table;
}

absl::StatusOr<Tensors> Differentiate(const Step& s) {
  const std::string& op = s.node.op_type;
  if (op == "Dropout") {  // inference: the identity (its mask has no tangent)
    return Tensors{*s.dx[0]};
  }
  if (auto l = LinearOps().find(op); l != LinearOps().end()) return Linear(s, l->second);
  if (op == "Mul" || op == "MatMul" || op == "Gemm" || op == "Conv") return Bilinear(s);
  if (op == "Div") return DivRule(s);
  if (op == "Pow") return PowRule(s);
  if (op == "Softmax" || op == "LogSoftmax") return SoftmaxRule(s, op == "LogSoftmax");
  if (op == "LayerNormalization") return LayerNormRule(s);
  if (op == "BatchNormalization" && s.dx[0] != nullptr) return BatchNormRule(s);
  if (op == "MaxPool") return MaxPoolRule(s);
  if (auto d = Derivatives().find(op); d != Derivatives().end()) return Unary(s, d->second);
  return absl::InvalidArgumentError(
      absl::StrCat("no derivative rule for ", op, " on a path from the perturbation"));
}

}  // namespace

absl::StatusOr<Graph> ToFloat64(const Graph& graph) {
  Graph g = graph;
  for (auto& [name, t] : g.initializers) t = ToFloat64(t);
  for (auto* values : {&g.inputs, &g.outputs}) {
    for (ValueInfo& v : *values) {
      if (v.type == DataType::kFloat) v.type = DataType::kDouble;
    }
  }
  for (Node& n : g.nodes) {
    for (auto& [key, attr] : n.attributes) {
      for (Tensor& t : attr.tensor) t = ToFloat64(t);
      if (n.op_type == "Cast" && key == "to" && attr.i == static_cast<int64_t>(DataType::kFloat)) {
        attr.i = static_cast<int64_t>(DataType::kDouble);
      }
    }
  }
  return g;
}

TensorMap FeedsToFloat64(const TensorMap& feeds) {
  TensorMap out;
  for (const auto& [name, t] : feeds) out.emplace(name, ToFloat64(t));
  return out;
}

absl::StatusOr<Jvp> Jvp::Create(const Graph& graph64, const TensorMap& feeds64) {
  Jvp j;
  j.graph_ = graph64;
  RunOptions options;
  options.keep_intermediates = true;
  absl::StatusOr<TensorMap> values = Run(graph64, feeds64, options);
  if (!values.ok()) return values.status();
  j.primal_ = std::move(*values);
  for (const auto& [name, t] : feeds64) j.primal_.emplace(name, t);
  for (const auto& [name, t] : graph64.initializers) j.primal_.emplace(name, t);
  return j;
}

absl::StatusOr<TensorMap> Jvp::Propagate(const TensorMap& seeds,
                                         const std::set<std::string>& record) const {
  TensorMap tangent;
  for (const auto& [name, t] : seeds) {
    if (!primal_.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat("seed \"", name, "\" is not a value"));
    }
    if (primal_.count(name) && graph_.initializers.count(name)) tangent[name] = t;
    for (const ValueInfo& in : graph_.inputs) {
      if (in.name == name) tangent[name] = t;
    }
  }
  for (const Node& node : graph_.nodes) {
    Step s{node, graph_.opset, {}, {}, {}};
    bool any = false;
    for (const std::string& in : node.inputs) {
      s.x.push_back(in.empty() ? nullptr : &primal_.at(in));
      auto t = in.empty() ? tangent.end() : tangent.find(in);
      s.dx.push_back(t == tangent.end() ? nullptr : &t->second);
      any = any || t != tangent.end();
    }
    for (const std::string& out : node.outputs) {
      auto p = out.empty() ? primal_.end() : primal_.find(out);
      s.y.push_back(p == primal_.end() ? nullptr : &p->second);
    }
    Tensors dy;
    const bool float_out = !s.y.empty() && s.y[0] != nullptr && IsFloat(s.y[0]->type());
    if (any && float_out) {
      absl::StatusOr<Tensors> d = Differentiate(s);
      if (!d.ok()) {
        return absl::Status(
            d.status().code(),
            absl::StrCat("node \"", node.name, "\" (", node.op_type, "): ", d.status().message()));
      }
      dy = std::move(*d);
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const std::string& out = node.outputs[k];
      if (out.empty()) continue;
      const bool has = k < dy.size() && s.y[k] != nullptr && IsFloat(s.y[k]->type());
      if (has) tangent[out] = std::move(dy[k]);
      if (auto seed = seeds.find(out); seed != seeds.end()) {
        if (has) {
          absl::StatusOr<Tensors> sum =
              Apply(node, "Add", graph_.opset, {&tangent[out], &seed->second});
          if (!sum.ok()) return sum.status();
          tangent[out] = std::move((*sum)[0]);
        } else {
          tangent[out] = seed->second;
        }
      }
    }
  }
  TensorMap out;
  for (const std::string& name : record) {
    auto t = tangent.find(name);
    if (t != tangent.end()) {
      out.emplace(name, t->second);
    } else if (auto p = primal_.find(name); p != primal_.end()) {
      out.emplace(name, ZerosLike(p->second));
    }
  }
  return out;
}

}  // namespace seedance::model
