// The rewriter's rules (rewrite.h lists them with their preconditions).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rewrite_internal.h"
#include "seedance/model/executor.h"

namespace seedance::model::rewrite_internal {
namespace {

constexpr int64_t kFoldLimitBytes = int64_t{1} << 20;
constexpr double kSqrt2 = 1.4142135623730951;

bool Near(double value, double want) { return std::abs(value - want) <= 1e-6 * std::abs(want); }

int64_t IntOf(const Node& n, const std::string& name, int64_t fallback) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() || it->second.kind != Attribute::Kind::kInt ? fallback
                                                                              : it->second.i;
}
float FloatOf(const Node& n, const std::string& name, float fallback) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() || it->second.kind != Attribute::Kind::kFloat ? fallback
                                                                                : it->second.f;
}

bool Is(const Node* n, const char* op) {
  return n != nullptr && n->domain.empty() && n->op_type == op;
}

// The input of binary `n` that is not `known` ("" when neither or both are).
std::string OtherInput(const Node& n, const std::string& known) {
  if (n.inputs.size() != 2) return "";
  if (n.inputs[0] == known && n.inputs[1] != known) return n.inputs[1];
  if (n.inputs[1] == known && n.inputs[0] != known) return n.inputs[0];
  return "";
}

std::vector<int64_t> TensorInts(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.AsInt64(i));
  return v;
}

std::string Shape(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

}  // namespace

// --- eliminations and folding ------------------------------------------------------------------

bool Rewriter::Bypass(const Node& n, const char* rule) {
  const std::string& in = n.inputs[0];
  const std::string& out = n.outputs[0];
  if (!IsGraphOutput(out)) {
    Rewire(out, in);
    Remove(&n);
    Applied(rule, n, absl::StrCat("readers of ", out, " read ", in));
    return true;
  }
  const Node* p = Producer(in);
  if (p == nullptr || IsGraphOutput(in) || Consumers(in).size() != 1) {
    return Refuse(rule, n,
                  "its output is a graph output and its input is not a node's output "
                  "read only here");
  }
  for (std::string& o : g_.nodes[IndexOf(p)].outputs) {
    if (o == in) o = out;
  }
  Remove(&n);
  Applied(rule, n, absl::StrCat(p->name, " writes the graph output ", out));
  return true;
}

bool Rewriter::EliminateIdentity(const Node& n) { return Bypass(n, "eliminate-identity"); }

bool Rewriter::EliminateCast(const Node& n) {
  const DataType from = TypeOf(n.inputs[0]);
  if (from == DataType::kUndefined || IntOf(n, "to", -1) != static_cast<int64_t>(from))
    return false;
  return Bypass(n, "eliminate-cast");
}

bool Rewriter::FoldShape(const Node& n) {
  const std::optional<std::vector<int64_t>> shape = StaticShape(n.inputs[0]);
  if (!shape) return false;
  const int64_t rank = static_cast<int64_t>(shape->size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(IntOf(n, "start", 0)), end = clamp(IntOf(n, "end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back((*shape)[static_cast<size_t>(i)]);
  const auto count = static_cast<int64_t>(dims.size());
  g_.initializers[n.outputs[0]] = Tensor::From<int64_t>({count}, dims);
  Remove(&n);
  Applied("fold-constants", n, absl::StrCat("the shape ", Shape(dims)));
  return true;
}

// Gather(Shape(x), constant indices) when the dimensions it picks are fixed, though others of x
// are not (a batch or sequence axis): the exports' slice bounds and reshape targets read x's
// fixed last axis this way.
bool Rewriter::FoldShapeGather(const Node& n) {
  const Node* shape = Producer(n.inputs[0]);
  const Tensor* indices = n.inputs.size() > 1 ? Constant(n.inputs[1]) : nullptr;
  if (!Is(shape, "Shape") || indices == nullptr || IntOf(n, "axis", 0) != 0 ||
      RankOf(shape->inputs[0]) < 0) {
    return false;
  }
  const auto& info = info_.at(shape->inputs[0]);
  const int64_t rank = static_cast<int64_t>(info.shape.size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(IntOf(*shape, "start", 0)), end = clamp(IntOf(*shape, "end", rank));
  const int64_t count = std::max<int64_t>(end - start, 0);
  std::vector<int64_t> picked;
  for (int64_t k = 0; k < indices->size(); ++k) {
    int64_t i = indices->AsInt64(k);
    if (i < 0) i += count;
    if (i < 0 || i >= count) return false;
    const int64_t d = info.shape[static_cast<size_t>(start + i)];
    if (d < 0) return false;
    picked.push_back(d);
  }
  g_.initializers[n.outputs[0]] = indices->rank() == 0
                                      ? Tensor::Scalar<int64_t>(picked[0])
                                      : Tensor::From<int64_t>(indices->shape(), picked);
  Remove(&n);
  Applied("fold-constants", n, absl::StrCat("fixed dimensions ", Shape(picked), " of a shape"));
  return true;
}

bool Rewriter::FoldConstants(const Node& n) {
  if ((n.inputs.empty() && n.op_type != "Constant") || !n.domain.empty() ||
      n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli" || n.op_type == "Multinomial") {
    return false;
  }
  for (const std::string& out : n.outputs) {
    if (IsGraphOutput(out)) return false;
  }
  if (n.op_type == "Shape") return FoldShape(n);
  if (n.op_type == "Gather" && FoldShapeGather(n)) return true;
  for (const std::string& in : n.inputs) {
    if (!in.empty() && Constant(in) == nullptr) return false;
  }
  // The outputs' size from their inferred shapes before anything runs (a ConstantOfShape of
  // [100000, 100000] must not be allocated to find out it is too large).
  for (const std::string& out : n.outputs) {
    if (out.empty()) continue;
    const std::optional<std::vector<int64_t>> shape = StaticShape(out);
    const absl::StatusOr<int64_t> count =
        shape ? ElementCount(*shape) : absl::StatusOr<int64_t>(absl::OutOfRangeError(""));
    const bool typed = TypeOf(out) != DataType::kUndefined && IsSupported(TypeOf(out));
    const int64_t bytes =
        count.ok() && typed ? *count * static_cast<int64_t>(ElementSize(TypeOf(out))) : -1;
    if (bytes < 0 || bytes > kFoldLimitBytes) {
      return Refuse("fold-constants", n,
                    bytes < 0 ? absl::StrCat("output ", out, " has no fixed shape and type")
                              : absl::StrCat("output ", out, " would hold ", bytes,
                                             " bytes, above the 1 MiB folded"));
    }
  }
  Graph mini;
  mini.opset = g_.opset;
  mini.nodes = {n};
  for (const std::string& in : n.inputs) {
    if (!in.empty()) mini.initializers[in] = *Constant(in);
  }
  for (const std::string& out : n.outputs) {
    if (!out.empty()) mini.outputs.push_back(ValueInfo{out, DataType::kUndefined, {}, {}, false});
  }
  absl::StatusOr<TensorMap> values = model::Run(mini, {});
  if (!values.ok()) return Refuse("fold-constants", n, std::string(values.status().message()));
  for (const auto& [name, t] : *values) {
    if (static_cast<int64_t>(t.bytes()) > kFoldLimitBytes) {
      return Refuse("fold-constants", n,
                    absl::StrCat("output ", name, " would hold ", t.bytes(),
                                 " bytes, above the 1 MiB folded"));
    }
  }
  for (auto& [name, t] : *values) g_.initializers[name] = std::move(t);
  Remove(&n);
  Applied("fold-constants", n, "constants");
  return true;
}

// --- LayerNorm ---------------------------------------------------------------------------------

struct Rewriter::LayerNormMatch {
  const Node *sub = nullptr, *pow = nullptr, *var = nullptr, *add_eps = nullptr, *sqrt = nullptr,
             *div = nullptr, *mul = nullptr, *add_bias = nullptr;
  std::string x, gamma, beta;
  double epsilon = 0;
};

bool Rewriter::IsLastAxis(const Node& reduce, const std::string& value) const {
  auto it = reduce.attributes.find("axes");
  const int rank = RankOf(value);
  if (it == reduce.attributes.end() || it->second.ints.size() != 1 || rank < 1) return false;
  const int64_t axis = it->second.ints[0];
  return (axis == -1 || axis == rank - 1) && IntOf(reduce, "keepdims", 1) == 1;
}

// nullopt: matched; "": not a LayerNorm; otherwise why the match is refused.
std::optional<std::string> Rewriter::MatchLayerNorm(const Node& n, LayerNormMatch& m) const {
  m.x = n.inputs[0];
  m.sub = OnlyConsumer(n.outputs[0]);
  if (!Is(m.sub, "Sub") || m.sub->inputs[0] != m.x || m.sub->inputs[1] != n.outputs[0]) return "";
  if (!IsLastAxis(n, m.x)) return "the mean is not taken over the last axis only (keepdims 1)";
  if (TypeOf(m.x) != DataType::kFloat) return "the input is not float";
  const std::string& d = m.sub->outputs[0];
  const std::vector<size_t>& readers = Consumers(d);
  if (readers.size() != 2 || IsGraphOutput(d)) return "the centred value has other readers";
  for (size_t r : readers) {
    const Node& c = g_.nodes[r];
    if (Is(&c, "Pow") && c.inputs[0] == d) m.pow = &c;
    if (Is(&c, "Mul") && c.inputs[0] == d && c.inputs[1] == d) m.pow = &c;
    if (Is(&c, "Div") && c.inputs[0] == d) m.div = &c;
  }
  if (m.pow == nullptr || m.div == nullptr) return "the centred value is not squared and divided";
  if (m.pow->op_type == "Pow") {
    const std::optional<double> p = ScalarConstant(m.pow->inputs[1]);
    if (!p || *p != 2.0) return "the power is not the constant 2";
  }
  m.var = OnlyConsumer(m.pow->outputs[0]);
  if (!Is(m.var, "ReduceMean") || !IsLastAxis(*m.var, m.pow->outputs[0])) {
    return "the variance is not a mean over the last axis";
  }
  m.add_eps = OnlyConsumer(m.var->outputs[0]);
  const std::string eps_name =
      m.add_eps == nullptr ? "" : OtherInput(*m.add_eps, m.var->outputs[0]);
  const std::optional<double> eps = ScalarConstant(eps_name);
  if (!Is(m.add_eps, "Add") || !eps || *eps < 0 || !std::isfinite(*eps)) {
    return "epsilon is not one constant >= 0 added to the variance";
  }
  m.epsilon = *eps;
  m.sqrt = OnlyConsumer(m.add_eps->outputs[0]);
  if (!Is(m.sqrt, "Sqrt") || OnlyConsumer(m.sqrt->outputs[0]) != m.div ||
      m.div->inputs[1] != m.sqrt->outputs[0]) {
    return "the centred value is not divided by sqrt(variance + epsilon)";
  }
  const std::optional<int64_t> last = LastDim(m.x);
  if (!last) return "dynamic shapes: the normalised axis has no fixed size";
  const int64_t cols = *last;
  const int rank = RankOf(m.x);
  auto per_column = [&](const std::string& v) {
    const Tensor* t = Constant(v);
    return t != nullptr && t->type() == DataType::kFloat && t->size() == cols &&
           t->rank() <= rank && t->shape().back() == cols;
  };
  const Node* mul = OnlyConsumer(m.div->outputs[0]);
  if (Is(mul, "Mul") && per_column(OtherInput(*mul, m.div->outputs[0]))) {
    m.mul = mul;
    m.gamma = OtherInput(*mul, m.div->outputs[0]);
    const Node* add = OnlyConsumer(mul->outputs[0]);
    if (Is(add, "Add") && per_column(OtherInput(*add, mul->outputs[0]))) {
      m.add_bias = add;
      m.beta = OtherInput(*add, mul->outputs[0]);
    }
  }
  return std::nullopt;
}

// Converts the graph to opset 17 (once per rewrite); false when the converter refuses.
bool Rewriter::UpgradeOpset(const Node& n) {
  if (upgrade_tried_) return false;
  upgrade_tried_ = true;
  absl::StatusOr<Graph> up = ConvertOpset(g_, 17);
  if (!up.ok()) return Refuse("upgrade-opset", n, std::string(up.status().message()));
  Applied("upgrade-opset", n, absl::StrCat("opset ", g_.opset, " -> 17"));
  g_ = std::move(*up);
  return true;
}

bool Rewriter::FuseLayerNorm(const Node& n) {
  LayerNormMatch m;
  const std::optional<std::string> refused = MatchLayerNorm(n, m);
  if (refused.has_value()) return refused->empty() ? false : Refuse("fuse-layernorm", n, *refused);
  if (g_.opset < 17) {
    if (UpgradeOpset(n)) return true;
    return Refuse("fuse-layernorm", n,
                  absl::StrCat("opset ", g_.opset,
                               " has no "
                               "LayerNormalization and the upgrade to 17 "
                               "was refused"));
  }
  const int64_t cols = *LastDim(m.x);
  Node ln;
  ln.name = absl::StrCat(n.name, "/LayerNormalization");
  ln.op_type = "LayerNormalization";
  const std::string gamma =
      m.gamma.empty() ? AddConstant(absl::StrCat(n.name, "/ones"),
                                    Tensor::From<float>({cols}, std::vector<float>(cols, 1.0f)))
                      : AddConstant(m.gamma + "/1d", Constant(m.gamma)->Reshaped({cols}));
  ln.inputs = {m.x, gamma};
  if (!m.beta.empty())
    ln.inputs.push_back(AddConstant(m.beta + "/1d", Constant(m.beta)->Reshaped({cols})));
  const Node* last = m.add_bias ? m.add_bias : m.mul ? m.mul : m.div;
  ln.outputs = {last->outputs[0]};
  ln.attributes["axis"] = Attribute::Int(-1);
  ln.attributes["epsilon"] = Attribute::Float(static_cast<float>(m.epsilon));
  for (const Node* p : {&n, m.sub, m.pow, m.var, m.add_eps, m.sqrt, m.div, m.mul, m.add_bias}) {
    if (p != nullptr) Remove(p);
  }
  Applied("fuse-layernorm", n, absl::StrCat("LayerNormalization (epsilon ", m.epsilon, ")"));
  Add(std::move(ln));
  return true;
}

bool Rewriter::FuseSkipLayerNorm(const Node& n) {
  const Node* add = Producer(n.inputs[0]);
  if (!Is(add, "Add") || n.inputs.size() < 2) return false;
  const char* rule = "fuse-skip-layernorm";
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    if (!n.outputs[i].empty() &&
        (!Consumers(n.outputs[i]).empty() || IsGraphOutput(n.outputs[i]))) {
      return Refuse(rule, n, "the LayerNormalization's mean or inverse deviation is read");
    }
  }
  const std::string& sum = add->outputs[0];
  if (!SameShape(add->inputs[0], add->inputs[1])) {
    return Refuse(
        rule, n,
        absl::StrCat("the addends' shapes are not provably one (", ShapeText(add->inputs[0]),
                     " and ", ShapeText(add->inputs[1]), "): a broadcast, not a skip"));
  }
  const std::optional<int64_t> hidden = LastDim(add->inputs[0]);
  if (RankOf(add->inputs[0]) != 3 || !hidden) {
    return Refuse(rule, n,
                  "the input is not 3-D (batch, sequence, hidden) with a fixed hidden size");
  }
  if (Constant(add->inputs[0]) || Constant(add->inputs[1])) {
    return Refuse(rule, n, "an addend is a constant");
  }
  const int64_t axis = IntOf(n, "axis", -1);
  if (axis != -1 && axis != 2) return Refuse(rule, n, "the normalised axis is not the last one");
  auto vector_of = [&](const std::string& v) {
    const Tensor* t = Constant(v);
    return t != nullptr && t->rank() == 1 && t->size() == *hidden && t->type() == DataType::kFloat;
  };
  const bool has_beta = n.inputs.size() > 2 && !n.inputs[2].empty();
  if (!vector_of(n.inputs[1]) || (has_beta && !vector_of(n.inputs[2])) ||
      TypeOf(sum) != DataType::kFloat) {
    return Refuse(rule, n, "scale or bias is not a float constant of the hidden size");
  }
  Node skip;
  skip.name = absl::StrCat(n.name, "/SkipLayerNormalization");
  skip.op_type = "SkipLayerNormalization";
  skip.domain = kMicrosoftDomain;
  skip.inputs = {add->inputs[0], add->inputs[1], n.inputs[1]};
  if (has_beta) skip.inputs.push_back(n.inputs[2]);
  skip.outputs = {n.outputs[0]};
  const bool sum_read = Consumers(sum).size() > 1 || IsGraphOutput(sum);
  if (sum_read) skip.outputs.insert(skip.outputs.end(), {"", "", sum});
  skip.attributes["epsilon"] = Attribute::Float(FloatOf(n, "epsilon", 1e-5f));
  Remove(add);
  Remove(&n);
  Applied(rule, n,
          sum_read ? "SkipLayerNormalization (the sum as output 3)" : "SkipLayerNormalization");
  Add(std::move(skip));
  return true;
}

// --- GELU --------------------------------------------------------------------------------------

bool Rewriter::FuseGelu(const Node& n) {
  const Node* pre = Producer(n.inputs[0]);
  std::string x;
  std::optional<double> c;
  if (Is(pre, "Div")) {
    x = pre->inputs[0];
    c = ScalarConstant(pre->inputs[1]);
  } else if (Is(pre, "Mul") && ScalarConstant(pre->inputs[1])) {
    x = pre->inputs[0];
    c = ScalarConstant(pre->inputs[1]);
  } else {
    return false;
  }
  const char* rule = "fuse-gelu";
  if (!c) return Refuse(rule, n, "the input is not scaled by a constant");
  if (pre->op_type == "Div" ? !Near(*c, kSqrt2) : !Near(*c, 1 / kSqrt2)) {
    return Refuse(
        rule, n,
        absl::StrCat("the input is ", pre->op_type == "Div" ? "divided" : "multiplied", " by ", *c,
                     ", not ", pre->op_type == "Div" ? "sqrt(2)" : "1/sqrt(2)"));
  }
  if (OnlyConsumer(pre->outputs[0]) != &n)
    return Refuse(rule, n, "the scaled input has other readers");
  return FinishGelu(n, x, "Gelu", "erf", {pre, &n});
}

// The tail both GELU forms share after f = erf or tanh at `n`: Add 1, then Mul x and Mul 0.5 (or
// Mul by Mul(x, 0.5)); with `nodes` (what comes before) replaced by com.microsoft `op` on x.
bool Rewriter::FinishGelu(const Node& n, const std::string& x, const char* op, const char* f,
                          std::vector<const Node*> nodes) {
  const char* rule = "fuse-gelu";
  const Node* one = OnlyConsumer(n.outputs[0]);
  if (!Is(one, "Add") || ConstantOperand(one, n.outputs[0]) != 1.0) {
    return Refuse(rule, n, absl::StrCat(f, "'s result is not added to 1"));
  }
  const Node* m1 = OnlyConsumer(one->outputs[0]);
  const std::string other = m1 == nullptr ? "" : OtherInput(*m1, one->outputs[0]);
  const Node* half = nullptr;  // the Mul by 0.5
  const Node* last = nullptr;  // the node whose output is the GELU's
  if (Is(m1, "Mul") && other == x) {
    half = OnlyConsumer(m1->outputs[0]);
    last = half;
    if (ConstantOperand(half, m1->outputs[0]) != 0.5) half = nullptr;
  } else if (const Node* h = Producer(other); Is(m1, "Mul") && Is(h, "Mul") &&
                                              OnlyConsumer(other) == m1 &&
                                              ConstantOperand(h, x) == 0.5) {
    half = h;
    last = m1;
  }
  if (!Is(half, "Mul")) {
    return Refuse(rule, n, absl::StrCat("1 + ", f, " is not multiplied by the input and 0.5"));
  }
  if (TypeOf(x) != DataType::kFloat) return Refuse(rule, n, "the input is not float");
  Node gelu;
  gelu.name = absl::StrCat(n.name, "/", op);
  gelu.op_type = op;
  gelu.domain = kMicrosoftDomain;
  gelu.inputs = {x};
  gelu.outputs = {last->outputs[0]};
  nodes.insert(nodes.end(), {one, m1, half});
  for (const Node* p : nodes) Remove(p);
  Applied(rule, n, std::string(op));
  Add(std::move(gelu));
  return true;
}

// The tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the cube as Pow(x, 3) or
// x * (x * x), each constant on either side.
std::optional<double> Rewriter::ConstantOperand(const Node* n, const std::string& value) const {
  if (n == nullptr || n->inputs.size() != 2) return std::nullopt;
  return ScalarConstant(OtherInput(*n, value));
}

bool Rewriter::IsCube(const std::string& value, const std::string& x,
                      std::vector<const Node*>& nodes) const {
  const Node* p = Producer(value);
  if (OnlyConsumer(value) == nullptr) return false;
  if (Is(p, "Pow") && p->inputs[0] == x && ScalarConstant(p->inputs[1]) == 3.0) {
    nodes.push_back(p);
    return true;
  }
  if (!Is(p, "Mul")) return false;
  const std::string square = OtherInput(*p, x);
  const Node* sq = Producer(square);
  if (!Is(sq, "Mul") || sq->inputs[0] != x || sq->inputs[1] != x || OnlyConsumer(square) != p) {
    return false;
  }
  nodes.insert(nodes.end(), {p, sq});
  return true;
}

bool Rewriter::FuseFastGelu(const Node& n) {
  const char* rule = "fuse-gelu";
  const Node* scaled = Producer(n.inputs[0]);
  if (!Is(scaled, "Mul") || OnlyConsumer(n.inputs[0]) != &n) return false;
  const bool k_left = ScalarConstant(scaled->inputs[0]).has_value();
  const std::optional<double> k = ScalarConstant(scaled->inputs[k_left ? 0 : 1]);
  const std::string inner = scaled->inputs[k_left ? 1 : 0];
  const Node* add = Producer(inner);
  if (!k || !Is(add, "Add") || OnlyConsumer(inner) != scaled) return false;
  std::vector<const Node*> nodes = {&n, scaled, add};
  std::string x;
  for (int side = 0; side < 2 && x.empty(); ++side) {
    const std::string cand = add->inputs[static_cast<size_t>(side)];
    const std::string other = add->inputs[static_cast<size_t>(1 - side)];
    const Node* cubic = Producer(other);
    if (!Is(cubic, "Mul") || OnlyConsumer(other) != add) continue;
    const bool left_constant = ScalarConstant(cubic->inputs[0]).has_value();
    const std::optional<double> c3 = ScalarConstant(cubic->inputs[left_constant ? 0 : 1]);
    const std::string cube = cubic->inputs[left_constant ? 1 : 0];
    std::vector<const Node*> cube_nodes;
    if (!c3 || !IsCube(cube, cand, cube_nodes)) continue;
    if (!Near(*c3, 0.044715))
      return Refuse(rule, n, absl::StrCat("the cube is scaled by ", *c3, ", not 0.044715"));
    x = cand;
    nodes.push_back(cubic);
    nodes.insert(nodes.end(), cube_nodes.begin(), cube_nodes.end());
  }
  if (x.empty()) return false;
  if (!Near(*k, 0.7978845608028654)) {
    return Refuse(rule, n, absl::StrCat("tanh's argument is scaled by ", *k, ", not sqrt(2/pi)"));
  }
  return FinishGelu(n, x, "FastGelu", "tanh", std::move(nodes));
}

// --- matrix products ---------------------------------------------------------------------------

bool Rewriter::FuseMatMulAdd(const Node& n) {
  const Tensor* w = Constant(n.inputs[1]);
  if (w == nullptr || w->rank() != 2) return false;
  const std::vector<size_t>& readers = Consumers(n.outputs[0]);
  const char* rule = "fuse-matmul-add";
  const bool add_reads = std::any_of(readers.begin(), readers.end(),
                                     [&](size_t r) { return Is(&g_.nodes[r], "Add"); });
  if (!add_reads) return false;
  const Node* add = OnlyConsumer(n.outputs[0]);
  if (add == nullptr) return Refuse(rule, n, "the product has other readers");
  const int64_t cols = w->dim(1);
  const Tensor* bias = Constant(OtherInput(*add, n.outputs[0]));
  if (bias == nullptr || bias->size() != cols || bias->rank() < 1 || bias->shape().back() != cols) {
    return Refuse(rule, n, absl::StrCat("the added tensor is not a constant bias of ", cols));
  }
  if (w->type() != DataType::kFloat || bias->type() != DataType::kFloat) {
    return Refuse(rule, n, "the weights are not float");
  }
  const int rank = RankOf(n.inputs[0]);
  if (rank < 2 || bias->rank() > rank)
    return Refuse(rule, n, "the input is not a matrix or a batch of them");
  std::optional<std::vector<int64_t>> shape = StaticShape(n.inputs[0]);
  if (rank > 2 && !shape)
    return Refuse(rule, n, "dynamic shapes: a batched input needs a fixed shape");
  Node gemm;
  gemm.name = absl::StrCat(n.name, "/Gemm");
  gemm.op_type = "Gemm";
  const std::string b1 = bias->rank() == 1 ? OtherInput(*add, n.outputs[0])
                                           : AddConstant(n.name + "/bias", bias->Reshaped({cols}));
  gemm.inputs = {n.inputs[0], n.inputs[1], b1};
  gemm.outputs = {add->outputs[0]};
  if (rank > 2) {
    const int64_t rows = shape->empty() ? 0 : [&] {
      int64_t r = 1;
      for (size_t i = 0; i + 1 < shape->size(); ++i) r *= (*shape)[i];
      return r;
    }();
    std::vector<int64_t> back(shape->begin(), shape->end() - 1);
    back.push_back(cols);
    Node flat{absl::StrCat(n.name, "/Reshape2d"),
              "Reshape",
              {n.inputs[0],
               AddConstant(n.name + "/shape2d",
                           Tensor::From<int64_t>({2}, std::vector<int64_t>{rows, w->dim(0)}))},
              {NewName(n.outputs[0] + "/2d")},
              {}};
    gemm.inputs[0] = flat.outputs[0];
    gemm.outputs = {NewName(add->outputs[0] + "/2d")};
    Node unflat{absl::StrCat(n.name, "/ReshapeBack"),
                "Reshape",
                {gemm.outputs[0],
                 AddConstant(n.name + "/shape",
                             Tensor::From<int64_t>({static_cast<int64_t>(back.size())}, back))},
                {add->outputs[0]},
                {}};
    Add(std::move(flat));
    Add(std::move(unflat));
  }
  Remove(&n);
  Remove(add);
  Applied(rule, n, rank > 2 ? "Gemm between Reshapes" : "Gemm");
  Add(std::move(gemm));
  return true;
}

bool Rewriter::FuseReshapes(const Node& n) {
  const char* rule = "fuse-reshapes";
  const Node* first = Producer(n.inputs[0]);
  const Tensor* target = Constant(n.inputs[1]);
  if (Is(first, "Reshape") && OnlyConsumer(first->outputs[0]) == &n && target != nullptr) {
    const std::vector<int64_t> dims = TensorInts(*target);
    if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {
      return Refuse(rule, n, "the second shape copies a dimension (0) from the first's result");
    }
    g_.nodes[IndexOf(&n)].inputs[0] = first->inputs[0];
    Remove(first);
    Applied(rule, n, absl::StrCat("one Reshape instead of two (", first->name, ")"));
    return true;
  }
  const std::optional<std::vector<int64_t>> in = StaticShape(n.inputs[0]);
  const std::optional<std::vector<int64_t>> out = StaticShape(n.outputs[0]);
  if (in && out && *in == *out && !IsGraphOutput(n.outputs[0])) {
    Rewire(n.outputs[0], n.inputs[0]);
    Remove(&n);
    Applied(rule, n, "a Reshape to its input's own shape removed");
    return true;
  }
  return SwapReshapeActivation(n);
}

// Reshape -> Relu/Gelu -> Reshape: the activation moved before the first Reshape, so that the
// two Reshapes meet and merge.
bool Rewriter::SwapReshapeActivation(const Node& n) {
  const Node* act = OnlyConsumer(n.outputs[0]);
  const bool elementwise =
      Is(act, "Relu") ||
      (act != nullptr && act->domain == kMicrosoftDomain &&
       (act->op_type == "Gelu" || act->op_type == "FastGelu") && act->inputs.size() == 1);
  if (!elementwise || !Is(OnlyConsumer(act->outputs[0]), "Reshape")) return false;
  Node moved = *act;
  moved.name = absl::StrCat(act->name, "/moved");
  moved.inputs = {n.inputs[0]};
  moved.outputs = {NewName(act->outputs[0] + "/before")};
  Node reshape = n;
  reshape.inputs[0] = moved.outputs[0];
  reshape.outputs = {act->outputs[0]};
  Remove(&n);
  Remove(act);
  Applied("fuse-reshapes", n, absl::StrCat(act->op_type, " moved before the Reshape"));
  Add(std::move(moved));
  Add(std::move(reshape));
  return true;
}

// --- convolutions and activations --------------------------------------------------------------

bool Rewriter::FuseConvBn(const Node& n) {
  const Node* conv = Producer(n.inputs[0]);
  if (!Is(conv, "Conv") || n.inputs.size() != 5) return false;
  const char* rule = "fuse-conv-bn";
  if (OnlyConsumer(conv->outputs[0]) != &n)
    return Refuse(rule, n, "the convolution has other readers");
  if (n.outputs.size() > 1 || IntOf(n, "training_mode", 0) != 0)
    return Refuse(rule, n, "training mode");
  const Tensor* w = Constant(conv->inputs[1]);
  const Tensor* b =
      conv->inputs.size() > 2 && !conv->inputs[2].empty() ? Constant(conv->inputs[2]) : nullptr;
  const bool has_b = conv->inputs.size() > 2 && !conv->inputs[2].empty();
  if (w == nullptr || w->type() != DataType::kFloat || w->rank() < 3 || (has_b && b == nullptr)) {
    return Refuse(rule, n, "the convolution's weights are not float constants");
  }
  const int64_t cout = w->dim(0);
  std::vector<const Tensor*> p;
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* t = Constant(n.inputs[i]);
    if (t == nullptr || t->size() != cout || t->type() != DataType::kFloat) {
      return Refuse(rule, n, "scale, bias, mean or variance is not a float constant per channel");
    }
    p.push_back(t);
  }
  const double eps = FloatOf(n, "epsilon", 1e-5f);
  Tensor w2 = *w;
  std::vector<float> b2(static_cast<size_t>(cout));
  const int64_t per = w->size() / cout;
  for (int64_t c = 0; c < cout; ++c) {
    const double s = p[0]->AsDouble(c) / std::sqrt(p[3]->AsDouble(c) + eps);
    for (int64_t k = 0; k < per; ++k) {
      w2.data<float>()[c * per + k] = static_cast<float>(w->AsDouble(c * per + k) * s);
    }
    const double bias = has_b ? b->AsDouble(c) : 0.0;
    b2[static_cast<size_t>(c)] =
        static_cast<float>((bias - p[2]->AsDouble(c)) * s + p[1]->AsDouble(c));
  }
  Node fused = *conv;
  fused.name = absl::StrCat(conv->name, "/BatchNormalization");
  fused.inputs = {conv->inputs[0], AddConstant(conv->inputs[1] + "/bn", std::move(w2)),
                  AddConstant(conv->name + "/bn_bias", Tensor::From<float>({cout}, b2))};
  fused.outputs = {n.outputs[0]};
  Remove(conv);
  Remove(&n);
  Applied(rule, n, "the convolution's weights and bias");
  Add(std::move(fused));
  return true;
}

bool Rewriter::FuseActivation(const Node& n) {
  if (!n.domain.empty() || (n.op_type != "Relu" && n.op_type != "LeakyRelu" &&
                            n.op_type != "Sigmoid" && n.op_type != "Tanh")) {
    return false;
  }
  const Node* p = Producer(n.inputs[0]);
  const bool conv = Is(p, "Conv");
  if (!conv && !Is(p, "Gemm")) return false;
  const char* rule = conv ? "fuse-conv-activation" : "fuse-gemm-activation";
  if (OnlyConsumer(p->outputs[0]) != &n) return Refuse(rule, n, "the product has other readers");
  if (TypeOf(p->outputs[0]) != DataType::kFloat) return Refuse(rule, n, "not float");
  if (conv && n.op_type != "Relu" && !target_.conv_other_activations) {
    return Refuse(rule, n,
                  absl::StrCat("the target (", target_.name, ") runs FusedConv with Relu only"));
  }
  if (!conv && !target_.fused_gemm) {
    return Refuse(rule, n,
                  absl::StrCat("the target (", target_.name,
                               ") has no FusedGemm (onnxruntime's CUDA provider)"));
  }
  Node fused = *p;
  fused.name = absl::StrCat(p->name, "/", n.op_type);
  fused.op_type = conv ? "FusedConv" : "FusedGemm";
  fused.domain = kMicrosoftDomain;
  fused.outputs = {n.outputs[0]};
  fused.attributes["activation"] = Attribute::String(n.op_type);
  if (n.op_type == "LeakyRelu")
    fused.attributes["activation_alpha"] = Attribute::Float(FloatOf(n, "alpha", 0.01f));
  Remove(p);
  Remove(&n);
  Applied(rule, n, absl::StrCat(fused.op_type, " with ", n.op_type));
  Add(std::move(fused));
  return true;
}

}  // namespace seedance::model::rewrite_internal
