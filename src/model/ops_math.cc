// MatMul and Gemm: FP32 on oneDNN's matmul primitive (Debian libdnnl 2.6), other element types
// (double, integers) on a plain triple loop.
#include <array>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "onednn.h"
#include "ops.h"

namespace seedance::model::ops {

dnnl::engine& CpuEngine() {
  static dnnl::engine* const engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

namespace {

// A row-major [batch, rows, cols] operand, or its transpose when `transposed` (stored
// [batch, cols, rows]). A batch stride of 0 shares one matrix across the batch.
struct Operand {
  const float* data;
  int64_t rows, cols;
  bool transposed = false;
  int64_t batch_stride = 0;
};

dnnl::memory::desc DescOf(int64_t batch, const Operand& op) {
  const int64_t b = op.batch_stride == 0 ? 1 : batch;
  const int64_t bs = op.batch_stride == 0 ? op.rows * op.cols : op.batch_stride;
  dnnl::memory::dims strides =
      op.transposed ? dnnl::memory::dims{bs, 1, op.rows} : dnnl::memory::dims{bs, op.cols, 1};
  return dnnl::memory::desc({b, op.rows, op.cols}, dnnl::memory::data_type::f32, strides);
}

// A matmul primitive for one problem shape, with its memories (pointed at each call's operands)
// and the argument map that names them, made once with it.
struct MatMulPrimitive {
  dnnl::memory::desc a_md, b_md, c_md;
  dnnl::matmul primitive;
  dnnl::memory a_mem, b_mem, c_mem;
  std::unordered_map<int, dnnl::memory> args;
};

// The primitive for (batch, a, b), made once per shape and thread: building a primitive
// descriptor costs more than a small product itself (a transformer layer of [2,16,64] runs a
// dozen products of microseconds each). The key holds every field DescOf reads.
MatMulPrimitive& PrimitiveFor(int64_t batch, const Operand& a, const Operand& b) {
  using Key = std::array<int64_t, 9>;
  thread_local std::map<Key, MatMulPrimitive> cache;
  const Key key = {batch,        a.rows,         a.cols, a.transposed, a.batch_stride, b.cols,
                   b.transposed, b.batch_stride, 0};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() > 256) cache.clear();  // a model with many shapes: keep the memory bounded
  dnnl::engine& engine = CpuEngine();
  MatMulPrimitive p;
  p.a_md = DescOf(batch, a);
  p.b_md = DescOf(batch, b);
  p.c_md = dnnl::memory::desc({batch, a.rows, b.cols}, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::abc);
  p.primitive = dnnl::matmul(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a_md, p.b_md, p.c_md), engine));
  p.a_mem = dnnl::memory(p.a_md, engine, DNNL_MEMORY_NONE);
  p.b_mem = dnnl::memory(p.b_md, engine, DNNL_MEMORY_NONE);
  p.c_mem = dnnl::memory(p.c_md, engine, DNNL_MEMORY_NONE);
  p.args = {{DNNL_ARG_SRC, p.a_mem}, {DNNL_ARG_WEIGHTS, p.b_mem}, {DNNL_ARG_DST, p.c_mem}};
  return cache.emplace(key, std::move(p)).first->second;
}

// c[batch, M, N] = a[batch, M, K] x b[batch, K, N] (b shared when its batch_stride is 0).
void MatMulF32(int64_t batch, const Operand& a, const Operand& b, float* c) {
  if (batch == 0 || a.rows == 0 || b.cols == 0) return;
  if (a.cols == 0) {
    std::fill(c, c + batch * a.rows * b.cols, 0.0f);
    return;
  }
  // One stream per thread, like the primitives (a CPU stream is cheap but not free to make).
  thread_local dnnl::stream stream(CpuEngine());
  MatMulPrimitive& p = PrimitiveFor(batch, a, b);
  p.a_mem.set_data_handle(const_cast<float*>(a.data));
  p.b_mem.set_data_handle(const_cast<float*>(b.data));
  p.c_mem.set_data_handle(c);
  p.primitive.execute(stream, p.args);
  stream.wait();
}

// The same product for any element type, accumulated in T (double for float types).
template <typename T>
void MatMulLoop(int64_t m, int64_t k, int64_t n, const T* a, bool ta, const T* b, bool tb, T* c) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Acc sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T x = ta ? a[p * m + i] : a[i * k + p];
        const T y = tb ? b[j * k + p] : b[p * n + j];
        sum += static_cast<Acc>(x) * static_cast<Acc>(y);
      }
      c[i * n + j] = static_cast<T>(sum);
    }
  }
}

// MatMul's numpy semantics: 1-D operands are promoted (and the added axis removed), batch
// dimensions broadcast.
struct MatMulShape {
  int64_t m, k, n;
  std::vector<int64_t> batch, a_batch, b_batch, out;
};

absl::StatusOr<MatMulShape> ShapeOf(const Tensor& a, const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) {
    return absl::InvalidArgumentError("MatMul operands must have rank >= 1 (got a scalar)");
  }
  std::vector<int64_t> sa = a.shape(), sb = b.shape();
  if (a.rank() == 1) sa.insert(sa.begin(), 1);
  if (b.rank() == 1) sb.push_back(1);
  MatMulShape s;
  s.m = sa[sa.size() - 2];
  s.k = sa.back();
  s.n = sb.back();
  if (sb[sb.size() - 2] != s.k) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions differ: ", ShapeString(a.shape()), " x ", ShapeString(b.shape())));
  }
  s.a_batch.assign(sa.begin(), sa.end() - 2);
  s.b_batch.assign(sb.begin(), sb.end() - 2);
  absl::StatusOr<std::vector<int64_t>> batch = BroadcastShapes(s.a_batch, s.b_batch);
  if (!batch.ok()) return batch.status();
  s.batch = *batch;
  s.out = s.batch;
  if (a.rank() > 1) s.out.push_back(s.m);
  if (b.rank() > 1) s.out.push_back(s.n);
  return s;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

template <typename T>
void BatchedMatMul(const MatMulShape& s, const T* a, const T* b, T* c) {
  const int64_t batch = Product(s.batch);
  const bool b_shared = Product(s.b_batch) == 1;
  const bool a_plain = Product(s.a_batch) == batch;
  if constexpr (std::is_same_v<T, float>) {
    if (b_shared && a_plain) {  // x[..., M, K] @ W[K, N]: one product of (batch*M) rows
      MatMulF32(1, {a, batch * s.m, s.k}, {b, s.k, s.n}, c);
      return;
    }
    if (a_plain && Product(s.b_batch) == batch) {
      MatMulF32(batch, {a, s.m, s.k, false, s.m * s.k}, {b, s.k, s.n, false, s.k * s.n}, c);
      return;
    }
  }
  const std::vector<int64_t> ia = BroadcastIndex(s.a_batch, s.batch);
  const std::vector<int64_t> ib = BroadcastIndex(s.b_batch, s.batch);
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = a + ia[static_cast<size_t>(i)] * s.m * s.k;
    const T* bi = b + ib[static_cast<size_t>(i)] * s.k * s.n;
    T* ci = c + i * s.m * s.n;
    if constexpr (std::is_same_v<T, float>) {
      MatMulF32(1, {ai, s.m, s.k}, {bi, s.k, s.n}, ci);
    } else {
      MatMulLoop<T>(s.m, s.k, s.n, ai, false, bi, false, ci);
    }
  }
}

template <typename T>
constexpr bool kMatMulType =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>;

absl::Status MatMul(const OpContext& ctx, std::vector<Tensor>& out) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.type() != b.type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("operands differ in type: ", a.Describe(), " and ", b.Describe()));
  }
  absl::StatusOr<MatMulShape> s = ShapeOf(a, b);
  if (!s.ok()) return s.status();
  return VisitType(a.type(), [&]<typename T>(T) -> absl::Status {
    if constexpr (kMatMulType<T>) {
      Tensor c(a.type(), s->out, Tensor::Uninitialized{});  // the product writes every element
      BatchedMatMul<T>(*s, a.data<T>(), b.data<T>(), c.data<T>());
      out[0] = std::move(c);
      return absl::OkStatus();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("MatMul of ", DataTypeName(a.type()), " is not supported"));
    }
  });
}

// Gemm: Y = alpha * A' B' + beta * C, A' = transA ? A^T : A, C broadcast to [M, N].
template <typename T>
absl::Status GemmTyped(const OpContext& ctx, bool ta, bool tb, float alpha, float beta, Tensor& y) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  if (k != kb) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions differ: A ", ShapeString(a.shape()), " B ", ShapeString(b.shape())));
  }
  y = Tensor(a.type(), {m, n}, Tensor::Uninitialized{});  // the product writes every element
  T* out = y.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    MatMulF32(1, {a.data<float>(), m, k, ta}, {b.data<float>(), k, n, tb}, out);
  } else {
    MatMulLoop<T>(m, k, n, a.data<T>(), ta, b.data<T>(), tb, out);
  }
  if (alpha != 1.0f) {
    for (int64_t i = 0; i < m * n; ++i) out[i] = static_cast<T>(alpha * out[i]);
  }
  if (!ctx.has_input(2) || beta == 0.0f) return absl::OkStatus();
  const Tensor& c = ctx.input(2);
  if (c.type() != a.type()) return absl::InvalidArgumentError("C differs in type from A");
  const std::vector<int64_t> mn = {m, n};
  absl::StatusOr<std::vector<int64_t>> bs = BroadcastShapes(c.shape(), mn);
  if (!bs.ok() || *bs != mn) {
    return absl::InvalidArgumentError(
        absl::StrCat("C ", ShapeString(c.shape()), " does not broadcast to [", m, ",", n, "]"));
  }
  const T* cv = c.data<T>();
  auto add = [&](int64_t i, int64_t from) { out[i] = static_cast<T>(out[i] + beta * cv[from]); };
  if (c.size() == m * n) {  // C of Y's layout
    for (int64_t i = 0; i < m * n; ++i) add(i, i);
  } else if (c.rank() > 0 && c.size() == n && c.shape().back() == n) {  // a row: the usual bias
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < n; ++j) add(r * n + j, j);
    }
  } else {
    const std::vector<int64_t> index = BroadcastIndex(c.shape(), mn);
    for (int64_t i = 0; i < m * n; ++i) add(i, index[static_cast<size_t>(i)]);
  }
  return absl::OkStatus();
}

absl::Status Gemm(const OpContext& ctx, std::vector<Tensor>& out) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2 || a.type() != b.type()) {
    return absl::InvalidArgumentError(absl::StrCat("A and B must be matrices of one type (got ",
                                                   a.Describe(), " and ", b.Describe(), ")"));
  }
  absl::StatusOr<int64_t> ta = ctx.Int("transA", 0), tb = ctx.Int("transB", 0);
  absl::StatusOr<float> alpha = ctx.Float("alpha", 1.0f), beta = ctx.Float("beta", 1.0f);
  for (const absl::Status& s : {ta.status(), tb.status(), alpha.status(), beta.status()}) {
    if (!s.ok()) return s;
  }
  return VisitType(a.type(), [&]<typename T>(T) -> absl::Status {
    if constexpr (kMatMulType<T>) {
      return GemmTyped<T>(ctx, *ta != 0, *tb != 0, *alpha, *beta, out[0]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("Gemm of ", DataTypeName(a.type()), " is not supported"));
    }
  });
}

}  // namespace

void RegisterMathOps(Table& table) {
  table["MatMul"] = MatMul;
  table["Gemm"] = Gemm;
}

}  // namespace seedance::model::ops
