// Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul.
//
// These kernels are the executor's INT8 reference path, so their rounding is exact: x / scale is
// computed as the ONNX reference computes it (in float for a float x, in double for an integer
// x), rounded half to even with std::nearbyint under the default rounding mode, shifted by the
// zero point and saturated to the output type's range. A NaN quotient quantizes to the zero point
// (the code of real 0) so that the result is defined.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ops.h"

namespace seedance::model::ops {
namespace {

bool IsQuantType(DataType type) { return type == DataType::kUint8 || type == DataType::kInt8; }

bool IsFloatType(DataType type) {
  return type == DataType::kFloat || type == DataType::kDouble || type == DataType::kFloat16 ||
         type == DataType::kBfloat16;
}

// The range of a quantized type (uint8 or int8).
struct QuantRange {
  double lo;
  double hi;
};
QuantRange RangeOf(DataType type) {
  return type == DataType::kInt8 ? QuantRange{-128, 127} : QuantRange{0, 255};
}

// `rounded` (an integer-valued quotient, or NaN) plus the zero point, saturated to `range`.
double Saturate(double rounded, int64_t zero_point, QuantRange range) {
  if (std::isnan(rounded)) return static_cast<double>(zero_point);
  return std::clamp(rounded + static_cast<double>(zero_point), range.lo, range.hi);
}

// round(x / scale), half to even, in the precision the ONNX reference divides in.
template <typename T>
double RoundedQuotient(T x, float scale) {
  if constexpr (std::is_same_v<T, float>) {
    return std::nearbyint(x / scale);
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return std::nearbyint(static_cast<float>(ToDouble(x)) / scale);
  } else {
    return std::nearbyint(ToDouble(x) / static_cast<double>(scale));
  }
}

// Writes a saturated double that holds an integer of the type's range into a uint8/int8 tensor.
void Store(Tensor& t, int64_t i, double v) {
  if (t.type() == DataType::kInt8) {
    t.data<int8_t>()[i] = static_cast<int8_t>(v);
  } else {
    t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
}

std::vector<float> FloatValues(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i)
    out[static_cast<size_t>(i)] = static_cast<float>(t.AsDouble(i));
  return out;
}

// ---- QuantizeLinear / DequantizeLinear ----

// Scale and zero point of a per-tensor or per-axis (de)quantization of `x`.
struct AxisParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;  // same length as scale
  DataType zero_point_type = DataType::kUint8;
  int64_t inner = 1;  // elements of x per step along the axis
  int64_t Index(int64_t i) const {
    const auto n = static_cast<int64_t>(scale.size());
    return n == 1 ? 0 : (i / inner) % n;
  }
};

absl::Status CheckZeroPoint(const Tensor& zp, const Tensor& scale, int zp_index) {
  if (!IsQuantType(zp.type()) && zp.type() != DataType::kInt32) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", zp_index, " (zero point) must be uint8, int8 or int32, got ",
                     DataTypeName(zp.type())));
  }
  if (zp.size() != scale.size() || zp.rank() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", zp_index, " (zero point) has shape ", ShapeString(zp.shape()),
                     " but the scale has shape ", ShapeString(scale.shape())));
  }
  return absl::OkStatus();
}

// Reads inputs 1 (scale) and 2 (zero point, optional) against x. A scale of one element is
// per-tensor; a 1-D scale (opset 13+) runs along attribute `axis` (default 1).
absl::StatusOr<AxisParams> ReadAxisParams(const OpContext& ctx, const Tensor& x) {
  if (!ctx.has_input(1)) return absl::InvalidArgumentError("input 1 (scale) is required");
  const Tensor& scale = ctx.input(1);
  if (!IsFloatType(scale.type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 1 (scale) must be float, got ", DataTypeName(scale.type())));
  }
  AxisParams p;
  if (scale.size() != 1) {
    if (scale.rank() != 1 || ctx.opset() < 13) {
      return absl::InvalidArgumentError(
          absl::StrCat("input 1 (scale) must be a scalar", ctx.opset() < 13 ? "" : " or 1-D",
                       ", got shape ", ShapeString(scale.shape()), " at opset ", ctx.opset()));
    }
    absl::StatusOr<int64_t> axis_attr = ctx.Int("axis", 1);
    if (!axis_attr.ok()) return axis_attr.status();
    absl::StatusOr<int> axis = NormalizeAxis(*axis_attr, x.rank(), "axis");
    if (!axis.ok()) return axis.status();
    if (x.dim(*axis) != scale.size()) {
      return absl::InvalidArgumentError(absl::StrCat("input 1 (scale) has ", scale.size(),
                                                     " elements but axis ", *axis_attr,
                                                     " of input 0 has ", x.dim(*axis)));
    }
    for (int d = *axis + 1; d < x.rank(); ++d) p.inner *= x.dim(d);
  }
  p.scale = FloatValues(scale);
  p.zero_point.assign(p.scale.size(), 0);
  if (ctx.has_input(2)) {
    const Tensor& zp = ctx.input(2);
    if (absl::Status s = CheckZeroPoint(zp, scale, 2); !s.ok()) return s;
    p.zero_point_type = zp.type();
    for (int64_t i = 0; i < zp.size(); ++i) p.zero_point[static_cast<size_t>(i)] = zp.AsInt64(i);
  }
  return p;
}

template <typename T>
void QuantizeInto(const Tensor& x, const AxisParams& p, Tensor& y) {
  const QuantRange range = RangeOf(y.type());
  const T* in = x.data<T>();
  for (int64_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<size_t>(p.Index(i));
    Store(y, i, Saturate(RoundedQuotient(in[i], p.scale[c]), p.zero_point[c], range));
  }
}

absl::Status QuantizeLinearKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatType(x.type()) && x.type() != DataType::kInt32) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 0 (x) must be float or int32, got ", DataTypeName(x.type())));
  }
  absl::StatusOr<AxisParams> p = ReadAxisParams(ctx, x);
  if (!p.ok()) return p.status();
  if (!IsQuantType(p->zero_point_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 2 (y_zero_point) must be uint8 or int8, got ", DataTypeName(p->zero_point_type)));
  }
  Tensor y(p->zero_point_type, x.shape());
  VisitType(x.type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16> ||
                  std::is_same_v<T, int32_t>) {
      QuantizeInto<T>(x, *p, y);
    }
  });
  outputs[0] = std::move(y);
  return absl::OkStatus();
}

absl::Status DequantizeLinearKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  const Tensor& x = ctx.input(0);
  if (!IsQuantType(x.type()) && x.type() != DataType::kInt32) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 0 (x) must be uint8, int8 or int32, got ", DataTypeName(x.type())));
  }
  absl::StatusOr<AxisParams> p = ReadAxisParams(ctx, x);
  if (!p.ok()) return p.status();
  if (ctx.has_input(2) && p->zero_point_type != x.type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 2 (x_zero_point) is ", DataTypeName(p->zero_point_type),
                     " but input 0 (x) is ", DataTypeName(x.type()), "; they must match"));
  }
  Tensor y(DataType::kFloat, x.shape());
  float* out = y.data<float>();
  // (x - zero_point) is exact in double and, for 8-bit x, so is its product with a float scale:
  // one rounding to float, as float arithmetic gives.
  for (int64_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<size_t>(p->Index(i));
    const double centered = static_cast<double>(x.AsInt64(i) - p->zero_point[c]);
    out[i] = static_cast<float>(centered * static_cast<double>(p->scale[c]));
  }
  outputs[0] = std::move(y);
  return absl::OkStatus();
}

// ---- DynamicQuantizeLinear ----

// uint8 quantization with a range that covers min(x, 0)..max(x, 0), computed in float as the
// ONNX reference does. An all-zero (or empty) x has range 0: scale 0, zero point 0, y all 0.
absl::Status DynamicQuantizeLinearKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kFloat) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 0 (x) must be float, got ", DataTypeName(x.type())));
  }
  const std::span<const float> in = x.values<float>();
  float lo = 0;
  float hi = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!std::isfinite(in[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("input 0 (x): element ", i, " is ", in[i], "; the range must be finite"));
    }
    lo = std::min(lo, in[i]);
    hi = std::max(hi, in[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  if (!std::isfinite(scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 0 (x): the range [", lo, ", ", hi, "] overflows float"));
  }
  const QuantRange range{0, 255};
  double zero_point = 0;
  if (scale > 0) zero_point = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  Tensor y(DataType::kUint8, x.shape());
  if (scale > 0) {
    for (size_t i = 0; i < in.size(); ++i) {
      Store(y, static_cast<int64_t>(i),
            Saturate(std::nearbyint(in[i] / scale), static_cast<int64_t>(zero_point), range));
    }
  }
  outputs[0] = std::move(y);
  if (outputs.size() > 1) outputs[1] = Tensor::Scalar<float>(scale);
  if (outputs.size() > 2) outputs[2] = Tensor::Scalar<uint8_t>(static_cast<uint8_t>(zero_point));
  return absl::OkStatus();
}

// ---- MatMulInteger / QLinearMatMul ----

// numpy.matmul's shapes: A [..., M, K] times B [..., K, N], batch dimensions broadcast; a 1-D A
// is a row [1, K] and a 1-D B a column [K, 1], their unit dimension dropped from the output.
struct MatMulPlan {
  int64_t m = 1;
  int64_t k = 1;
  int64_t n = 1;
  std::vector<int64_t> a_batch_shape;
  std::vector<int64_t> b_batch_shape;
  std::vector<int64_t> out_shape;
  std::vector<int64_t> a_batch;  // per output batch, the batch of A it reads
  std::vector<int64_t> b_batch;
};

absl::StatusOr<MatMulPlan> PlanMatMul(const Tensor& a, const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("matmul of ", a.Describe(), " and ",
                                                   b.Describe(), ": inputs must not be scalars"));
  }
  MatMulPlan p;
  const std::vector<int64_t>& as = a.shape();
  const std::vector<int64_t>& bs = b.shape();
  p.k = as.back();
  if (as.size() >= 2) p.m = as[as.size() - 2];
  const int64_t bk = bs.size() >= 2 ? bs[bs.size() - 2] : bs[0];
  if (bs.size() >= 2) p.n = bs.back();
  if (bk != p.k) {
    return absl::InvalidArgumentError(absl::StrCat("matmul of ", a.Describe(), " and ",
                                                   b.Describe(), ": inner dimensions differ"));
  }
  p.a_batch_shape.assign(as.begin(), as.end() - std::min<std::ptrdiff_t>(2, std::ssize(as)));
  p.b_batch_shape.assign(bs.begin(), bs.end() - std::min<std::ptrdiff_t>(2, std::ssize(bs)));
  absl::StatusOr<std::vector<int64_t>> batch = BroadcastShapes(p.a_batch_shape, p.b_batch_shape);
  if (!batch.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("matmul of ", a.Describe(), " and ",
                                                   b.Describe(), ": batch dimensions ",
                                                   batch.status().message()));
  }
  p.a_batch = BroadcastIndex(p.a_batch_shape, *batch);
  p.b_batch = BroadcastIndex(p.b_batch_shape, *batch);
  p.out_shape = *batch;
  if (as.size() >= 2) p.out_shape.push_back(p.m);
  if (bs.size() >= 2) p.out_shape.push_back(p.n);
  return p;
}

// Where the quantization parameter of a matrix element lives: per tensor, per row of A (shape
// [M] or [batch..., M, 1]) or per column of B (shape [N] or [batch..., 1, N]).
struct ParamLayout {
  int64_t batch_stride = 0;
  int64_t stride = 0;
  int64_t Index(int64_t batch, int64_t line) const { return batch * batch_stride + line * stride; }
};

absl::StatusOr<ParamLayout> LayoutOf(const Tensor& param, const MatMulPlan& p, bool of_a,
                                     const std::string& what) {
  if (param.size() == 1) return ParamLayout{};
  const int64_t lines = of_a ? p.m : p.n;
  if (param.rank() == 1 && param.size() == lines) return ParamLayout{0, 1};
  std::vector<int64_t> batched = of_a ? p.a_batch_shape : p.b_batch_shape;
  batched.push_back(of_a ? p.m : 1);
  batched.push_back(of_a ? 1 : p.n);
  if (param.shape() == batched) return ParamLayout{lines, 1};
  return absl::InvalidArgumentError(absl::StrCat(
      what, " has shape ", ShapeString(param.shape()), "; it must have one element, ", lines,
      " (one per ", of_a ? "row of A" : "column of B", ") or shape ", ShapeString(batched)));
}

// A uint8/int8 operand of a quantized matmul and its zero point.
struct QuantOperand {
  const Tensor* matrix = nullptr;
  const Tensor* zero_point = nullptr;  // null: 0
  ParamLayout layout;
};

absl::StatusOr<QuantOperand> ReadOperand(const OpContext& ctx, int index, int zp_index,
                                         const MatMulPlan& plan, bool of_a) {
  QuantOperand op;
  op.matrix = &ctx.input(index);
  if (!IsQuantType(op.matrix->type())) {
    return absl::InvalidArgumentError(absl::StrCat("input ", index, " must be uint8 or int8, got ",
                                                   DataTypeName(op.matrix->type())));
  }
  if (!ctx.has_input(zp_index)) return op;
  op.zero_point = &ctx.input(zp_index);
  if (op.zero_point->type() != op.matrix->type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", zp_index, " (zero point) is ", DataTypeName(op.zero_point->type()),
                     " but input ", index, " is ", DataTypeName(op.matrix->type())));
  }
  absl::StatusOr<ParamLayout> layout =
      LayoutOf(*op.zero_point, plan, of_a, absl::StrCat("input ", zp_index, " (zero point)"));
  if (!layout.ok()) return layout.status();
  op.layout = *layout;
  return op;
}

// The operand's elements, seen as [batches, rows, cols], minus their zero points.
std::vector<int32_t> Centered(const QuantOperand& op, int64_t rows, int64_t cols, bool of_a) {
  const Tensor& t = *op.matrix;
  std::vector<int32_t> out(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) {
    int64_t zp = 0;
    if (op.zero_point != nullptr) {
      const int64_t batch = i / (rows * cols);
      const int64_t line = of_a ? (i / cols) % rows : i % cols;
      zp = op.zero_point->AsInt64(op.layout.Index(batch, line));
    }
    out[static_cast<size_t>(i)] = static_cast<int32_t>(t.AsInt64(i) - zp);
  }
  return out;
}

// The int32 product, accumulated in int64 and wrapped to 32 bits as the spec allows.
std::vector<int32_t> IntegerMatMul(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                   const MatMulPlan& p) {
  const size_t batches = p.a_batch.size();
  std::vector<int32_t> out(batches * static_cast<size_t>(p.m * p.n));
  std::vector<int64_t> row(static_cast<size_t>(p.n));
  for (size_t bi = 0; bi < batches; ++bi) {
    const int32_t* a_mat = a.data() + p.a_batch[bi] * p.m * p.k;
    const int32_t* b_mat = b.data() + p.b_batch[bi] * p.k * p.n;
    int32_t* o_mat = out.data() + static_cast<int64_t>(bi) * p.m * p.n;
    for (int64_t i = 0; i < p.m; ++i) {
      std::fill(row.begin(), row.end(), 0);
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const int64_t av = a_mat[i * p.k + kk];
        if (av == 0) continue;
        const int32_t* b_row = b_mat + kk * p.n;
        for (int64_t j = 0; j < p.n; ++j) row[static_cast<size_t>(j)] += av * b_row[j];
      }
      for (int64_t j = 0; j < p.n; ++j) {
        o_mat[i * p.n + j] = static_cast<int32_t>(row[static_cast<size_t>(j)]);
      }
    }
  }
  return out;
}

// The centred product of inputs a_index and b_index with their zero points.
struct Product {
  MatMulPlan plan;
  std::vector<int32_t> values;
};

absl::StatusOr<Product> QuantizedProduct(const OpContext& ctx, int a_index, int a_zp_index,
                                         int b_index, int b_zp_index) {
  absl::StatusOr<MatMulPlan> plan = PlanMatMul(ctx.input(a_index), ctx.input(b_index));
  if (!plan.ok()) return plan.status();
  absl::StatusOr<QuantOperand> a = ReadOperand(ctx, a_index, a_zp_index, *plan, true);
  if (!a.ok()) return a.status();
  absl::StatusOr<QuantOperand> b = ReadOperand(ctx, b_index, b_zp_index, *plan, false);
  if (!b.ok()) return b.status();
  Product product;
  product.values = IntegerMatMul(Centered(*a, plan->m, plan->k, true),
                                 Centered(*b, plan->k, plan->n, false), *plan);
  product.plan = *std::move(plan);
  return product;
}

absl::Status MatMulIntegerKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  absl::StatusOr<Product> product = QuantizedProduct(ctx, 0, 2, 1, 3);
  if (!product.ok()) return product.status();
  outputs[0] = Tensor::From<int32_t>(product->plan.out_shape, product->values);
  return absl::OkStatus();
}

// A scale input of QLinearMatMul and where its elements apply.
struct ScaleParam {
  std::vector<float> values;
  ParamLayout layout;
};

absl::StatusOr<ScaleParam> ReadScale(const OpContext& ctx, int index, const MatMulPlan& plan,
                                     bool of_a) {
  const Tensor& t = ctx.input(index);
  if (!IsFloatType(t.type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", index, " (scale) must be float, got ", DataTypeName(t.type())));
  }
  absl::StatusOr<ParamLayout> layout =
      LayoutOf(t, plan, of_a, absl::StrCat("input ", index, " (scale)"));
  if (!layout.ok()) return layout.status();
  return ScaleParam{FloatValues(t), *layout};
}

// y = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zero_point): the multiplier in
// float and the product in double, as the ONNX reference computes them.
absl::Status QLinearMatMulKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  for (int i = 0; i < 8; ++i) {
    if (!ctx.has_input(i))
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " is required"));
  }
  absl::StatusOr<Product> product = QuantizedProduct(ctx, 0, 2, 3, 5);
  if (!product.ok()) return product.status();
  const MatMulPlan& plan = product->plan;
  absl::StatusOr<ScaleParam> a_scale = ReadScale(ctx, 1, plan, true);
  if (!a_scale.ok()) return a_scale.status();
  absl::StatusOr<ScaleParam> b_scale = ReadScale(ctx, 4, plan, false);
  if (!b_scale.ok()) return b_scale.status();
  const Tensor& y_scale = ctx.input(6);
  const Tensor& y_zp = ctx.input(7);
  if (!IsFloatType(y_scale.type()) || y_scale.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 6 (y_scale) must be one float, got ", y_scale.Describe()));
  }
  if (!IsQuantType(y_zp.type()) || y_zp.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 7 (y_zero_point) must be one uint8 or int8, got ", y_zp.Describe()));
  }
  const auto ys = static_cast<float>(y_scale.AsDouble(0));
  const int64_t yz = y_zp.AsInt64(0);
  const QuantRange range = RangeOf(y_zp.type());
  Tensor y(y_zp.type(), plan.out_shape);
  int64_t o = 0;
  for (size_t bi = 0; bi < plan.a_batch.size(); ++bi) {
    for (int64_t i = 0; i < plan.m; ++i) {
      const float sa =
          a_scale->values[static_cast<size_t>(a_scale->layout.Index(plan.a_batch[bi], i))];
      for (int64_t j = 0; j < plan.n; ++j, ++o) {
        const float sb =
            b_scale->values[static_cast<size_t>(b_scale->layout.Index(plan.b_batch[bi], j))];
        const float multiplier = sa * sb / ys;
        const double scaled = static_cast<double>(product->values[static_cast<size_t>(o)]) *
                              static_cast<double>(multiplier);
        Store(y, o, Saturate(std::nearbyint(scaled), yz, range));
      }
    }
  }
  outputs[0] = std::move(y);
  return absl::OkStatus();
}

}  // namespace

void RegisterQuantOps(Table& table) {
  table["QuantizeLinear"] = QuantizeLinearKernel;
  table["DequantizeLinear"] = DequantizeLinearKernel;
  table["DynamicQuantizeLinear"] = DynamicQuantizeLinearKernel;
  table["MatMulInteger"] = MatMulIntegerKernel;
  table["QLinearMatMul"] = QLinearMatMulKernel;
}

}  // namespace seedance::model::ops
