// Kernels of onnxruntime's fused operators ("com.microsoft" domain, version 1), the forms the
// rewriter emits (rewrite.h), with onnxruntime's contrib-operator semantics:
//
//   Gelu(X)                        0.5 x (1 + erf(x / sqrt 2))
//   FastGelu(X, bias?)             0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), v = x + bias
//   SkipLayerNormalization(input, skip, gamma, beta?, bias?)
//                                  LayerNormalization over the last axis of input + skip (+ bias),
//                                  float only, in one pass per row (statistics in double);
//                                  outputs: output, mean and inv_std_var (refused),
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
#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "ops.h"

namespace seedance::model::ops {
namespace {

// Applies `f` to every element of a floating tensor, in place (16-bit floats through float).
template <typename F>
absl::Status ApplyInPlace(Tensor& t, F f) {
  if (t.type() == DataType::kFloat) {  // the common case, in one loop the compiler vectorises
    float* v = t.data<float>();
    const int64_t n = t.size();
    for (int64_t i = 0; i < n; ++i) v[i] = f(v[i]);
    return absl::OkStatus();
  }
  return VisitType(t.type(), [&]<typename T>(T) -> absl::Status {
    if constexpr (std::is_same_v<T, double>) {
      T* v = t.data<T>();
      for (int64_t i = 0; i < t.size(); ++i) v[i] = f(v[i]);
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

// A float tensor through oneDNN's vectorised element-wise primitive `algo`, in place (its GELU
// forms are the formulas above: erf, and tanh with 0.044715 and sqrt(2/pi)).
void EltwiseOneDnn(dnnl::algorithm algo, Tensor& t) {
  static const dnnl::engine* const engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  const dnnl::memory::desc md({t.size()}, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::x);
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, algo, md, 0.0f, 0.0f),
      *engine);
  dnnl::memory mem(md, *engine, t.data<float>());
  dnnl::stream stream(*engine);
  dnnl::eltwise_forward(pd).execute(stream, {{DNNL_ARG_SRC, mem}, {DNNL_ARG_DST, mem}});
  stream.wait();
}

absl::Status Gelu(const OpContext& ctx, std::vector<Tensor>& out) {
  out[0] = ctx.input(0);
  if (out[0].type() == DataType::kFloat && out[0].size() > 0) {
    EltwiseOneDnn(dnnl::algorithm::eltwise_gelu_erf, out[0]);
    return absl::OkStatus();
  }
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
  if (out[0].type() == DataType::kFloat && out[0].size() > 0) {
    EltwiseOneDnn(dnnl::algorithm::eltwise_gelu_tanh, out[0]);
    return absl::OkStatus();
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
    return ApplyInPlace(y, [](auto v) { return std::max(v, decltype(v){0}); });
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

// SkipLayerNormalization of float tensors in one pass per row: the sum (input + skip + bias)
// written where output 3 wants it, its mean and variance accumulated in double, then normalised,
// scaled and shifted. skip and bias: input's shape, or broadcast from the last axis ([cols]).
absl::Status SkipLayerNormFloat(const OpContext& ctx, float epsilon, std::vector<Tensor>& out) {
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  const int64_t cols = x.shape().back(), rows = x.size() / std::max<int64_t>(cols, 1);
  auto per_column = [&](int i) {
    return !ctx.has_input(i) || (ctx.input(i).type() == DataType::kFloat &&
                                 ctx.input(i).size() == cols && ctx.input(i).shape().back() == cols);
  };
  const bool full_skip = skip.shape() == x.shape() && skip.type() == DataType::kFloat;
  if ((!full_skip && !per_column(1)) || !per_column(2) || !per_column(3) || !per_column(4)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "skip must have the input's shape ", ShapeString(x.shape()),
        " or [", cols, "]; gamma, beta and bias must be float [", cols, "]"));
  }
  const float* xv = x.data<float>();
  const float* sv = skip.data<float>();
  const float* gamma = ctx.input(2).data<float>();
  const float* beta = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
  const float* bias = ctx.has_input(4) ? ctx.input(4).data<float>() : nullptr;
  const bool keep_sum = ctx.output_count() > 3 && !ctx.node().outputs[3].empty();
  Tensor sum(DataType::kFloat, x.shape(), Tensor::Uninitialized{});
  Tensor y(DataType::kFloat, x.shape(), Tensor::Uninitialized{});
  for (int64_t r = 0; r < rows; ++r) {
    float* h = sum.data<float>() + r * cols;
    const float* sk = full_skip ? sv + r * cols : sv;
    double total = 0;
    for (int64_t c = 0; c < cols; ++c) {
      h[c] = xv[r * cols + c] + sk[c] + (bias != nullptr ? bias[c] : 0.0f);
      total += h[c];
    }
    const double mean = total / static_cast<double>(cols);
    double squares = 0;
    for (int64_t c = 0; c < cols; ++c) squares += (h[c] - mean) * (h[c] - mean);
    const auto inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(cols) + epsilon));
    const auto m = static_cast<float>(mean);
    float* o = y.data<float>() + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      o[c] = (h[c] - m) * inv * gamma[c] + (beta != nullptr ? beta[c] : 0.0f);
    }
  }
  out[0] = std::move(y);
  if (keep_sum) out[3] = std::move(sum);
  return absl::OkStatus();
}

absl::Status SkipLayerNorm(const OpContext& ctx, std::vector<Tensor>& out) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1 || x.type() != DataType::kFloat) {
    return absl::InvalidArgumentError("input must be a float tensor with an axis");
  }
  for (int i : {1, 2}) {
    if (ctx.output_count() > i && !ctx.node().outputs[static_cast<size_t>(i)].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", i, " (mean, inv_std_var) is not computed by this executor"));
    }
  }
  absl::StatusOr<float> epsilon = ctx.Float("epsilon", 1e-12f);
  if (!epsilon.ok()) return epsilon.status();
  return SkipLayerNormFloat(ctx, *epsilon, out);
}

// The attention of one (batch, head): q [S, d] rows `q_stride` apart, k [L, d], v [L, dv], bias
// [S, L] rows `bias_row` apart (nullptr: none; bias_col 0 broadcasts a row), into out [S, dv].
struct HeadProblem {
  int64_t s = 0, l = 0, d = 0, dv = 0;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, out_stride = 0;
  float scale = 1;
};

// scores = scale Q K^T (+ bias), softmax per row, out = scores V; the two products on oneDNN's
// sgemm (row-major, strided).
void AttendOneHead(const HeadProblem& p, const float* q, const float* k, const float* v,
                   const float* bias, int64_t bias_row, int64_t bias_col, float* out) {
  std::vector<float> scores(static_cast<size_t>(p.s * p.l));
  float* sc = scores.data();
  dnnl_sgemm('N', 'T', p.s, p.l, p.d, p.scale, q, p.q_stride, k, p.k_stride, 0.0f, sc, p.l);
  for (int64_t i = 0; i < p.s; ++i) {
    float* row = sc + i * p.l;
    if (bias != nullptr) {
      for (int64_t j = 0; j < p.l; ++j) row[j] += bias[i * bias_row + j * bias_col];
    }
    const float top = *std::max_element(row, row + p.l);
    if (std::isinf(top) && top < 0) {  // every key masked: no weight anywhere
      std::fill(row, row + p.l, 0.0f);
      continue;
    }
    float sum = 0;
    for (int64_t j = 0; j < p.l; ++j) {
      row[j] = std::exp(row[j] - top);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < p.l; ++j) row[j] *= inv;
  }
  dnnl_sgemm('N', 'N', p.s, p.dv, p.l, 1.0f, sc, p.l, v, p.v_stride, 0.0f, out, p.out_stride);
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
