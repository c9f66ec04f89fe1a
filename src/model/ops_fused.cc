// Kernels of onnxruntime's fused operators ("com.microsoft" domain, version 1), the forms the
// rewriter emits (rewrite.h), with onnxruntime's contrib-operator semantics:
//
//   Gelu(X)                        0.5 x (1 + erf(x / sqrt 2))
//   FastGelu(X, bias?)             0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), v = x + bias
//   SkipLayerNormalization(input, skip, gamma, beta?, bias?)
//                                  LayerNormalization over the last axis of input + skip (+ bias);
//                                  outputs: output, mean (unset), inv_std_var (unset),
//                                  input_skip_bias_sum
//   FusedGemm(A, B, C?)            Gemm, then `activation` (Relu, LeakyRelu, Sigmoid, Tanh)
//   FusedConv(X, W, B?)            Conv, then `activation` (the same four)
//   MultiHeadAttention(query [B,S,D], key [B,L,D], value [B,L,Dv], -, -, attention_bias?)
//                                  per head h of num_heads (columns h*D/N.. of each): softmax(
//                                  scale * Q K^T + attention_bias) V, scale default 1/sqrt(D/N);
//                                  attention_bias broadcast to [B, N, S, L]; output [B, S, Dv]
//
// Each runs the default domain's kernel of the operation it fuses (so the arithmetic of a
// rewritten model is that of the original's kernels) and applies the rest in place on its output,
// without the intermediate tensors the decomposed graph makes. Floating-point tensors only.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ops.h"

namespace seedance::model::ops {
namespace {

// Applies `f` to every element of a floating tensor, in place (16-bit floats through float).
template <typename F>
absl::Status ApplyInPlace(Tensor& t, F f) {
  return VisitType(t.type(), [&]<typename T>(T) -> absl::Status {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* v = t.data<T>();
      for (int64_t i = 0; i < t.size(); ++i) v[i] = static_cast<T>(f(v[i]));
      return absl::OkStatus();
    } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      T* v = t.data<T>();
      for (int64_t i = 0; i < t.size(); ++i) {
        v[i] = FromDouble<T>(static_cast<double>(f(static_cast<float>(ToDouble(v[i])))));
      }
      return absl::OkStatus();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("a tensor of ", DataTypeName(t.type()), " is not a floating-point one"));
    }
  });
}

template <typename V>
V GeluOf(V x) {
  return static_cast<V>(0.5) * x * (static_cast<V>(1) + std::erf(x * static_cast<V>(M_SQRT1_2)));
}

template <typename V>
V FastGeluOf(V x) {
  const V k = static_cast<V>(0.7978845608028654);  // sqrt(2 / pi)
  return static_cast<V>(0.5) * x *
         (static_cast<V>(1) + std::tanh(k * (x + static_cast<V>(0.044715) * x * x * x)));
}

absl::Status Gelu(const OpContext& ctx, std::vector<Tensor>& out) {
  out[0] = ctx.input(0);
  return ApplyInPlace(out[0], [](auto v) { return GeluOf(v); });
}

// Runs the default domain's `op` on `inputs` with `node`'s attributes.
absl::Status RunDefault(const char* op, const OpContext& ctx, std::vector<const Tensor*> inputs,
                        std::vector<Tensor>& out) {
  const OpContext inner(ctx.node(), ctx.opset(), std::move(inputs));
  return OpTable().at(op)(inner, out);
}

absl::Status FastGelu(const OpContext& ctx, std::vector<Tensor>& out) {
  if (ctx.has_input(1)) {
    if (absl::Status s = RunDefault("Add", ctx, {&ctx.input(0), &ctx.input(1)}, out); !s.ok()) {
      return s;
    }
    if (out[0].shape() != ctx.input(0).shape()) {
      return absl::InvalidArgumentError("bias does not broadcast to the input's shape");
    }
  } else {
    out[0] = ctx.input(0);
  }
  return ApplyInPlace(out[0], [](auto v) { return FastGeluOf(v); });
}

// The activation a FusedGemm or FusedConv names, applied in place.
absl::Status Activate(const OpContext& ctx, Tensor& y) {
  absl::StatusOr<std::string> activation = ctx.String("activation", "");
  if (!activation.ok()) return activation.status();
  absl::StatusOr<float> alpha = ctx.Float("activation_alpha", 0.01f);
  if (!alpha.ok()) return alpha.status();
  const float a = *alpha;
  if (*activation == "Relu") {
    return ApplyInPlace(y, [](auto v) { return v > 0 ? v : decltype(v){0}; });
  }
  if (*activation == "LeakyRelu") {
    return ApplyInPlace(y, [a](auto v) { return v >= 0 ? v : static_cast<decltype(v)>(a) * v; });
  }
  if (*activation == "Sigmoid") {
    return ApplyInPlace(y, [](auto v) { return decltype(v){1} / (decltype(v){1} + std::exp(-v)); });
  }
  if (*activation == "Tanh") {
    return ApplyInPlace(y, [](auto v) { return std::tanh(v); });
  }
  return absl::InvalidArgumentError(
      absl::StrCat("attribute activation: \"", *activation,
                   "\" is not one the executor runs fused (Relu, LeakyRelu, Sigmoid, Tanh)"));
}

absl::Status FusedGemm(const OpContext& ctx, std::vector<Tensor>& out) {
  std::vector<const Tensor*> in;
  for (int i = 0; i < ctx.input_count(); ++i)
    in.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  if (absl::Status s = RunDefault("Gemm", ctx, std::move(in), out); !s.ok()) return s;
  return Activate(ctx, out[0]);
}

absl::Status FusedConv(const OpContext& ctx, std::vector<Tensor>& out) {
  if (ctx.has_input(3)) {
    return absl::InvalidArgumentError("input 3 (Z, the residual sum) is not supported");
  }
  std::vector<const Tensor*> in;
  for (int i = 0; i < std::min(ctx.input_count(), 3); ++i) {
    in.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  }
  if (absl::Status s = RunDefault("Conv", ctx, std::move(in), out); !s.ok()) return s;
  return Activate(ctx, out[0]);
}

// input + skip (+ bias), each of input's shape or broadcast from the last axis.
absl::StatusOr<Tensor> SkipSum(const OpContext& ctx) {
  std::vector<Tensor> sum(1);
  if (absl::Status s = RunDefault("Add", ctx, {&ctx.input(0), &ctx.input(1)}, sum); !s.ok()) {
    return s;
  }
  if (ctx.has_input(4)) {
    std::vector<Tensor> with_bias(1);
    if (absl::Status s = RunDefault("Add", ctx, {&sum[0], &ctx.input(4)}, with_bias); !s.ok()) {
      return s;
    }
    sum[0] = std::move(with_bias[0]);
  }
  if (sum[0].shape() != ctx.input(0).shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("skip or bias does not broadcast to the input's shape ",
                     ShapeString(ctx.input(0).shape())));
  }
  return std::move(sum[0]);
}

absl::Status SkipLayerNorm(const OpContext& ctx, std::vector<Tensor>& out) {
  if (ctx.input(0).rank() < 1) return absl::InvalidArgumentError("input must have an axis");
  for (int i : {1, 2}) {
    if (ctx.output_count() > i && !ctx.node().outputs[static_cast<size_t>(i)].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", i, " (mean, inv_std_var) is not computed by this executor"));
    }
  }
  absl::StatusOr<Tensor> sum = SkipSum(ctx);
  if (!sum.ok()) return sum.status();
  absl::StatusOr<float> epsilon = ctx.Float("epsilon", 1e-12f);
  if (!epsilon.ok()) return epsilon.status();
  // LayerNormalization over the last axis, as opset 17 defines it.
  Node ln;
  ln.name = ctx.node().name;
  ln.op_type = "LayerNormalization";
  ln.attributes["axis"].i = -1;
  ln.attributes["epsilon"].kind = Attribute::Kind::kFloat;
  ln.attributes["epsilon"].f = *epsilon;
  std::vector<const Tensor*> in = {&*sum, &ctx.input(2)};
  if (ctx.has_input(3)) in.push_back(&ctx.input(3));
  const OpContext inner(ln, 17, std::move(in));
  std::vector<Tensor> y(1);
  if (absl::Status s = OpTable().at("LayerNormalization")(inner, y); !s.ok()) return s;
  out[0] = std::move(y[0]);
  if (ctx.output_count() > 3) out[3] = std::move(*sum);
  return absl::OkStatus();
}

// The attention of one (batch, head): q [S, d] rows `q_stride` apart, k [L, d], v [L, dv], bias
// [S, L] rows `bias_row` apart (nullptr: none; bias_col 0 broadcasts a row), into out [S, dv].
struct HeadProblem {
  int64_t s = 0, l = 0, d = 0, dv = 0;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, out_stride = 0;
  float scale = 1;
};

void AttendOneHead(const HeadProblem& p, const float* q, const float* k, const float* v,
                   const float* bias, int64_t bias_row, int64_t bias_col, float* out) {
  std::vector<float> scores(static_cast<size_t>(p.l));
  for (int64_t i = 0; i < p.s; ++i) {
    const float* qi = q + i * p.q_stride;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < p.l; ++j) {
      const float* kj = k + j * p.k_stride;
      float dot = 0;
      for (int64_t c = 0; c < p.d; ++c) dot += qi[c] * kj[c];
      float sc = dot * p.scale;
      if (bias != nullptr) sc += bias[i * bias_row + j * bias_col];
      scores[static_cast<size_t>(j)] = sc;
      top = std::max(top, sc);
    }
    float sum = 0;
    for (float& sc : scores) {
      sc = std::isinf(top) ? 0.0f : std::exp(sc - top);
      sum += sc;
    }
    float* oi = out + i * p.out_stride;
    std::fill(oi, oi + p.dv, 0.0f);
    for (int64_t j = 0; j < p.l; ++j) {
      const float w = sum > 0 ? scores[static_cast<size_t>(j)] / sum : 0.0f;
      const float* vj = v + j * p.v_stride;
      for (int64_t c = 0; c < p.dv; ++c) oi[c] += w * vj[c];
    }
  }
}

absl::Status MultiHeadAttention(const OpContext& ctx, std::vector<Tensor>& out) {
  for (int i : {3, 4, 6, 7}) {
    if (ctx.has_input(i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " is not supported (bias, key_padding_mask and past states are not run)"));
    }
  }
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  absl::StatusOr<int64_t> heads = ctx.Int("num_heads", 0);
  if (!heads.ok()) return heads.status();
  if (q.type() != DataType::kFloat || k.type() != q.type() || v.type() != q.type() ||
      q.rank() != 3 || k.rank() != 3 || v.rank() != 3 || k.dim(0) != q.dim(0) ||
      v.dim(0) != q.dim(0) || k.dim(1) != v.dim(1) || k.dim(2) != q.dim(2) || *heads < 1 ||
      q.dim(2) % *heads != 0 || v.dim(2) % *heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query, key and value must be float [B,S,D], [B,L,D], [B,L,Dv] with D and Dv divisible "
        "by num_heads (got ",
        q.Describe(), ", ", k.Describe(), ", ", v.Describe(), ", ", *heads, " heads)"));
  }
  const int64_t b = q.dim(0), n = *heads;
  HeadProblem p{q.dim(1), k.dim(1), q.dim(2) / n, v.dim(2) / n, q.dim(2),
                k.dim(2), v.dim(2), v.dim(2),     1.0f};
  absl::StatusOr<float> scale = ctx.Float("scale", 1.0f / std::sqrt(static_cast<float>(p.d)));
  if (!scale.ok()) return scale.status();
  p.scale = *scale;
  const Tensor* bias = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  std::vector<int64_t> bias_strides(4, 0);
  if (bias != nullptr) {
    const std::vector<int64_t> want = {b, n, p.s, p.l};
    if (bias->type() != DataType::kFloat || bias->rank() != 4) {
      return absl::InvalidArgumentError("attention_bias must be a float tensor of rank 4");
    }
    const std::vector<int64_t> strides = Strides(bias->shape());
    for (size_t d = 0; d < 4; ++d) {
      if (bias->dim(static_cast<int>(d)) != want[d] && bias->dim(static_cast<int>(d)) != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "attention_bias ", bias->Describe(), " does not broadcast to ", ShapeString(want)));
      }
      bias_strides[d] = bias->dim(static_cast<int>(d)) == 1 ? 0 : strides[d];
    }
  }
  Tensor y(DataType::kFloat, {b, p.s, v.dim(2)});
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t h = 0; h < n; ++h) {
      const float* bp = bias == nullptr
                            ? nullptr
                            : bias->data<float>() + bi * bias_strides[0] + h * bias_strides[1];
      AttendOneHead(p, q.data<float>() + bi * p.s * q.dim(2) + h * p.d,
                    k.data<float>() + bi * p.l * k.dim(2) + h * p.d,
                    v.data<float>() + bi * p.l * v.dim(2) + h * p.dv, bp, bias_strides[2],
                    bias_strides[3], y.data<float>() + bi * p.s * v.dim(2) + h * p.dv);
    }
  }
  out[0] = std::move(y);
  return absl::OkStatus();
}

}  // namespace

const Table& ContribTable() {
  static const Table* const table = [] {
    auto* t = new Table;
    (*t)["Gelu"] = Gelu;
    (*t)["FastGelu"] = FastGelu;
    (*t)["FusedGemm"] = FusedGemm;
    (*t)["FusedConv"] = FusedConv;
    (*t)["SkipLayerNormalization"] = SkipLayerNorm;
    (*t)["MultiHeadAttention"] = MultiHeadAttention;
    return t;
  }();
  return *table;
}

}  // namespace seedance::model::ops
