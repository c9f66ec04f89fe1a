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
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "onednn.h"
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
  dnnl::engine* const engine = &CpuEngine();
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

// The sum of f(v[i]) over n floats in eight float lanes (which the compiler vectorises), the
// lanes added in double: a row's statistics without a chain of dependent additions.
template <typename F>
double LaneSum(const float* v, int64_t n, F f) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) lanes[k] += f(v[i + k]);
  }
  double total = 0;
  for (; i < n; ++i) total += f(v[i]);
  for (float lane : lanes) total += lane;
  return total;
}

// SkipLayerNormalization of float tensors in one pass per row: the sum (input + skip + bias)
// written where output 3 wants it, its mean and variance summed in eight float lanes, then
// normalised, scaled and shifted. skip and bias: input's shape, or broadcast from the last axis
// ([cols]).
absl::Status SkipLayerNormFloat(const OpContext& ctx, float epsilon, std::vector<Tensor>& out) {
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  const int64_t cols = x.shape().back(), rows = x.size() / std::max<int64_t>(cols, 1);
  auto per_column = [&](int i) {
    return !ctx.has_input(i) ||
           (ctx.input(i).type() == DataType::kFloat && ctx.input(i).size() == cols &&
            ctx.input(i).shape().back() == cols);
  };
  const bool full_skip = skip.shape() == x.shape() && skip.type() == DataType::kFloat;
  if ((!full_skip && !per_column(1)) || !per_column(2) || !per_column(3) || !per_column(4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("skip must have the input's shape ", ShapeString(x.shape()), " or [", cols,
                     "]; gamma, beta and bias must be float [", cols, "]"));
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
    // Loops without branches over pointers that do not alias, which the compiler vectorises.
    float* __restrict h = sum.data<float>() + r * cols;
    const float* __restrict sk = full_skip ? sv + r * cols : sv;
    const float* __restrict in = xv + r * cols;
    for (int64_t c = 0; c < cols; ++c) h[c] = in[c] + sk[c];
    if (bias != nullptr) {
      for (int64_t c = 0; c < cols; ++c) h[c] += bias[c];
    }
    const double mean = LaneSum(h, cols, [](float v) { return v; }) / static_cast<double>(cols);
    const auto m = static_cast<float>(mean);
    const double var =
        LaneSum(h, cols, [m](float v) { return (v - m) * (v - m); }) / static_cast<double>(cols);
    const auto inv = static_cast<float>(1.0 / std::sqrt(var + epsilon));
    float* __restrict o = y.data<float>() + r * cols;
    for (int64_t c = 0; c < cols; ++c) o[c] = (h[c] - m) * inv * gamma[c];
    if (beta != nullptr) {
      for (int64_t c = 0; c < cols; ++c) o[c] += beta[c];
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

// Softmax of each of `rows` rows of `cols` scores in place, one row at a time (a row with every
// score -inf gets no weight anywhere).
void SoftmaxRowsLoop(float* scores, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = scores + i * cols;
    const float top = *std::max_element(row, row + cols);
    if (std::isinf(top) && top < 0) {
      std::fill(row, row + cols, 0.0f);
      continue;
    }
    float sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = std::exp(row[j] - top);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

// The same on oneDNN's softmax primitive (vectorised, one call for every row; made once per
// shape and thread) when no row is entirely -inf (oneDNN would make it NaN, not zero).
void SoftmaxRows(float* scores, int64_t rows, int64_t cols) {
  const float* end = scores + rows * cols;
  for (const float* row = scores; row < end; row += cols) {
    if (std::all_of(row, row + cols, [](float v) { return std::isinf(v) && v < 0; })) {
      SoftmaxRowsLoop(scores, rows, cols);
      return;
    }
  }
  struct Primitive {
    dnnl::softmax_forward softmax;
    dnnl::memory data;
  };
  thread_local std::map<std::pair<int64_t, int64_t>, Primitive> cache;
  dnnl::engine* const engine = &CpuEngine();
  thread_local dnnl::stream stream(*engine);
  auto it = cache.find({rows, cols});
  if (it == cache.end()) {
    if (cache.size() > 64) cache.clear();
    const dnnl::memory::desc md({rows, cols}, dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::ab);
    Primitive p{
        dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
            dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, 1), *engine)),
        dnnl::memory(md, *engine, DNNL_MEMORY_NONE)};
    it = cache.emplace(std::make_pair(rows, cols), std::move(p)).first;
  }
  it->second.data.set_data_handle(scores);
  it->second.softmax.execute(stream,
                             {{DNNL_ARG_SRC, it->second.data}, {DNNL_ARG_DST, it->second.data}});
  stream.wait();
}

// scores = scale Q K^T (+ bias), softmax per row, out = scores V; the two products on oneDNN's
// sgemm (row-major, strided).
void AttendOneHead(const HeadProblem& p, const float* q, const float* k, const float* v,
                   const float* bias, int64_t bias_row, int64_t bias_col, float* out) {
  std::vector<float> scores(static_cast<size_t>(p.s * p.l));
  float* sc = scores.data();
  dnnl_sgemm('N', 'T', p.s, p.l, p.d, p.scale, q, p.q_stride, k, p.k_stride, 0.0f, sc, p.l);
  if (bias != nullptr) {
    for (int64_t i = 0; i < p.s; ++i) {
      for (int64_t j = 0; j < p.l; ++j) sc[i * p.l + j] += bias[i * bias_row + j * bias_col];
    }
  }
  SoftmaxRows(sc, p.s, p.l);
  dnnl_sgemm('N', 'N', p.s, p.dv, p.l, 1.0f, sc, p.l, v, p.v_stride, 0.0f, out, p.out_stride);
}

// The two batched products of every head at once on oneDNN's matmul primitive, Q, K, V and the
// output read and written in place through strides ([B, S, N*d] as [B, N, S, d]); made once per
// shape and thread (building a primitive costs more than a small layer's products).
struct AttentionPrimitives {
  bool made = false;  // false: oneDNN has no implementation for these strides (remembered)
  dnnl::matmul scores, context;
  dnnl::memory q, k, s, p, v, y;
};

AttentionPrimitives& AttentionPrimitivesFor(int64_t b, int64_t n, const HeadProblem& hp) {
  using Key = std::array<int64_t, 10>;
  thread_local std::map<Key, AttentionPrimitives> cache;
  int32_t scale_bits = 0;
  std::memcpy(&scale_bits, &hp.scale, sizeof scale_bits);
  const Key key = {b,     n,           hp.s,        hp.l,        hp.d,
                   hp.dv, hp.q_stride, hp.k_stride, hp.v_stride, scale_bits};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() > 64) cache.clear();
  dnnl::engine* const engine = &CpuEngine();
  using md = dnnl::memory::desc;
  const auto f32 = dnnl::memory::data_type::f32;
  const md q({b, n, hp.s, hp.d}, f32, {hp.s * hp.q_stride, hp.d, hp.q_stride, 1});
  const md kt({b, n, hp.d, hp.l}, f32, {hp.l * hp.k_stride, hp.d, 1, hp.k_stride});
  const md sc({b, n, hp.s, hp.l}, f32, dnnl::memory::format_tag::abcd);
  const md v({b, n, hp.l, hp.dv}, f32, {hp.l * hp.v_stride, hp.dv, hp.v_stride, 1});
  const md y({b, n, hp.s, hp.dv}, f32, {hp.s * hp.out_stride, hp.dv, hp.out_stride, 1});
  dnnl::primitive_attr scaled;
  scaled.set_output_scales(0, {hp.scale});
  AttentionPrimitives a;
  try {
    a.scores =
        dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(q, kt, sc), scaled, *engine));
    a.context = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(sc, v, y), *engine));
    a.made = true;
  } catch (const dnnl::error&) {
    return cache.emplace(key, std::move(a)).first->second;
  }
  a.q = dnnl::memory(q, *engine, DNNL_MEMORY_NONE);
  a.k = dnnl::memory(kt, *engine, DNNL_MEMORY_NONE);
  a.s = dnnl::memory(sc, *engine, DNNL_MEMORY_NONE);
  a.p = dnnl::memory(sc, *engine, DNNL_MEMORY_NONE);
  a.v = dnnl::memory(v, *engine, DNNL_MEMORY_NONE);
  a.y = dnnl::memory(y, *engine, DNNL_MEMORY_NONE);
  return cache.emplace(key, std::move(a)).first->second;
}

// Every head at once: scores = scale Q K^T for all heads, + bias, softmax per row, Y = P V.
// False (nothing written) when oneDNN has no implementation for the strides.
bool AttendAllHeads(int64_t b, int64_t n, const HeadProblem& hp, const float* q, const float* k,
                    const float* v, const Tensor* bias, const std::vector<int64_t>& bias_strides,
                    float* y) {
  AttentionPrimitives& a = AttentionPrimitivesFor(b, n, hp);
  if (!a.made) return false;
  thread_local dnnl::stream stream(CpuEngine());
  thread_local std::vector<float> scores;
  scores.resize(static_cast<size_t>(b * n * hp.s * hp.l));
  a.q.set_data_handle(const_cast<float*>(q));
  a.k.set_data_handle(const_cast<float*>(k));
  a.s.set_data_handle(scores.data());
  a.scores.execute(stream, {{DNNL_ARG_SRC, a.q}, {DNNL_ARG_WEIGHTS, a.k}, {DNNL_ARG_DST, a.s}});
  stream.wait();
  if (bias != nullptr) {
    const float* bv = bias->data<float>();
    float* sc = scores.data();
    for (int64_t bi = 0; bi < b; ++bi) {
      for (int64_t h = 0; h < n; ++h) {
        const float* bp = bv + bi * bias_strides[0] + h * bias_strides[1];
        float* row = sc + (bi * n + h) * hp.s * hp.l;
        for (int64_t i = 0; i < hp.s; ++i) {
          for (int64_t j = 0; j < hp.l; ++j) {
            row[i * hp.l + j] += bp[i * bias_strides[2] + j * bias_strides[3]];
          }
        }
      }
    }
  }
  SoftmaxRows(scores.data(), b * n * hp.s, hp.l);
  a.p.set_data_handle(scores.data());
  a.v.set_data_handle(const_cast<float*>(v));
  a.y.set_data_handle(y);
  a.context.execute(stream, {{DNNL_ARG_SRC, a.p}, {DNNL_ARG_WEIGHTS, a.v}, {DNNL_ARG_DST, a.y}});
  stream.wait();
  return true;
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
  if (AttendAllHeads(b, n, p, q.data<float>(), k.data<float>(), v.data<float>(), bias, bias_strides,
                     y.data<float>())) {
    out[0] = std::move(y);
    return absl::OkStatus();
  }
  // oneDNN without an implementation for these strides: one head at a time.
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
