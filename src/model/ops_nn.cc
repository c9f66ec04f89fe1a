// Neural-network kernels: Softmax, LogSoftmax, Hardmax, the normalisations (LayerNormalization,
// BatchNormalization, InstanceNormalization, MeanVarianceNormalization, LRN), pooling (MaxPool,
// AveragePool, GlobalAveragePool, GlobalMaxPool) and Conv.
//
// Every kernel but oneDNN's FP32 2-D convolution widens its input to double, computes in double
// and rounds the result to the input's element type once. Softmax and LayerNormalization widen
// one line or row at a time (no double copy of the tensor), and Softmax of float tensors takes
// float's exp of the (exact) double difference x - max rounded to float.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "onednn.h"
#include "ops.h"

namespace seedance::model::ops {
namespace {

// Local status plumbing: declare `lhs` from a StatusOr or return its error; return a non-OK
// Status. Undefined at the end of the file.
#define SEEDANCE_NN_ASSIGN(lhs, expr)           \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *std::move(lhs##_or)

#define SEEDANCE_NN_RETURN_IF_ERROR(expr) \
  do {                                    \
    absl::Status status_ = (expr);        \
    if (!status_.ok()) return status_;    \
  } while (false)

constexpr double kInf = std::numeric_limits<double>::infinity();
// Kernel sizes, strides, dilations and pads above this are refused, which keeps the window
// arithmetic far from int64 overflow.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 24;
// A window plan (pooling, direct Conv) with more in-bounds taps than this is refused.
constexpr int64_t kMaxPlanTaps = int64_t{1} << 31;

// A non-negative int64 index as a container index.
size_t U(int64_t i) { return static_cast<size_t>(i); }

// The floating-point element types, which the normalisation kernels accept.
template <typename T>
constexpr bool kFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

bool IsFloating(DataType type) {
  return type == DataType::kFloat || type == DataType::kDouble || type == DataType::kFloat16 ||
         type == DataType::kBfloat16;
}

absl::Status RequireFloating(const OpContext& ctx, int i, const char* what) {
  const DataType type = ctx.input(i).type();
  if (IsFloating(type)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input ", i, " (", what, "): element type ",
                                                 DataTypeName(type), " is not supported"));
}

absl::Status RequireInput(const OpContext& ctx, int i, const char* what) {
  if (ctx.has_input(i)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input ", i, " (", what, ") is required"));
}

std::vector<double> ReadDoubles(const Tensor& t) {
  std::vector<double> out(U(t.size()));
  VisitType(t.type(), [&]<typename T>(T) {
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = ToDouble(p[i]);
  });
  return out;
}

}  // namespace

Tensor WriteDoubles(DataType type, std::vector<int64_t> shape, std::span<const double> values) {
  Tensor t(type, std::move(shape));
  SEEDANCE_CHECK(U(t.size()) == values.size()) << values.size() << " values for " << t.Describe();
  VisitType(type, [&]<typename T>(T) {
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = FromDouble<T>(values[i]);
  });
  return t;
}

namespace {

int64_t Product(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// The sum of f(j) for j in [0, n) in double, in four interleaved partial sums added pairwise at
// the end: a sequential sum's chain of dependent additions is what bounds a short row's time.
template <typename F>
double Sum4(int64_t n, F f) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    a0 += f(j);
    a1 += f(j + 1);
    a2 += f(j + 2);
    a3 += f(j + 3);
  }
  for (; j < n; ++j) a0 += f(j);
  return (a0 + a1) + (a2 + a3);
}

// ---------------------------------------------------------------------------------------------
// Softmax, LogSoftmax, Hardmax

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// Normalises each of the `outer` x `inner` lines of `n` elements spaced `inner` apart, reading
// and writing T and computing in double (each line widened into `line`, n elements), so that
// every element type gets the same double arithmetic and one rounding at the end. The sum of
// exponentials is a double sum (Sum4).
template <typename T>
void SoftmaxLines(SoftmaxKind kind, const T* x, T* y, const LineLayout& lines,
                  std::vector<double>& line) {
  const int64_t n = lines.n, inner = lines.inner;
  line.resize(U(n));
  double* v = line.data();
  for (int64_t o = 0; o < lines.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* in = x + o * n * inner + i;
      T* out = y + o * n * inner + i;
      for (int64_t j = 0; j < n; ++j) v[j] = ToDouble(in[j * inner]);
      if (kind == SoftmaxKind::kHardmax) {
        int64_t argmax = 0;  // the first largest; a leading NaN wins
        for (int64_t j = 1; j < n; ++j) argmax = v[j] > v[argmax] ? j : argmax;
        for (int64_t j = 0; j < n; ++j) out[j * inner] = FromDouble<T>(j == argmax ? 1.0 : 0.0);
        continue;
      }
      double max = v[0];  // the value Hardmax's argmax selects
      for (int64_t j = 1; j < n; ++j) max = v[j] > max ? v[j] : max;
      if (kind == SoftmaxKind::kSoftmax) {
        for (int64_t j = 0; j < n; ++j) {
          // float's exp for float tensors, of x - max (exact in double) rounded to float: within
          // float rounding of the double exp, at half the cost.
          if constexpr (std::is_same_v<T, float>) {
            v[j] = std::exp(static_cast<float>(v[j] - max));
          } else {
            v[j] = std::exp(v[j] - max);
          }
        }
        const double inv_sum = 1.0 / Sum4(n, [v](int64_t j) { return v[j]; });
        for (int64_t j = 0; j < n; ++j) out[j * inner] = FromDouble<T>(v[j] * inv_sum);
      } else {
        const double log_sum =
            std::log(Sum4(n, [v, max](int64_t j) { return std::exp(v[j] - max); }));
        for (int64_t j = 0; j < n; ++j) out[j * inner] = FromDouble<T>(v[j] - max - log_sum);
      }
    }
  }
}

// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each row of the flattened
// trailing block is normalised; from 13 on, each line along `axis` (default -1).
absl::Status SoftmaxKernel(SoftmaxKind kind, const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "input"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "input"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_ASSIGN(lines, SoftmaxLinesOf(ctx, x));
  Tensor y(x.type(), x.shape(), Tensor::Uninitialized{});  // every line written (none if n == 0)
  if (lines.n > 0) {
    std::vector<double> line;
    VisitType(x.type(), [&]<typename T>(T) {
      if constexpr (kFloating<T>) SoftmaxLines<T>(kind, x.data<T>(), y.data<T>(), lines, line);
    });
  }
  outputs[0] = std::move(y);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Parameter broadcasting for LayerNormalization

// For each element of `shape`, the index of the element of `param` it uses; an empty vector when
// `param` is exactly the trailing `cols` elements (index = i % cols).
absl::StatusOr<std::vector<int64_t>> ParamIndex(const Tensor& param, const char* what,
                                                std::span<const int64_t> shape, int axis,
                                                int64_t cols) {
  absl::StatusOr<std::vector<int64_t>> joint = BroadcastShapes(param.shape(), shape);
  if (!joint.ok() || *joint != std::vector<int64_t>(shape.begin(), shape.end())) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of shape ", ShapeString(param.shape()),
                                                   " does not broadcast to the input's shape ",
                                                   ShapeString(shape)));
  }
  if (param.size() == cols && param.rank() <= static_cast<int>(shape.size()) - axis) {
    return std::vector<int64_t>{};
  }
  return BroadcastIndex(param.shape(), shape);
}

absl::StatusOr<DataType> StashType(const OpContext& ctx) {
  SEEDANCE_NN_ASSIGN(stash, ctx.Int("stash_type", 1));
  const auto type = static_cast<DataType>(stash);
  if (stash < 0 || stash > 16 || !IsFloating(type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute stash_type: ", stash, " is not a floating-point type"));
  }
  return type;
}

// A LayerNormalization problem: `rows` rows of `cols` elements; scale and bias (empty when not
// given) as doubles with their ParamIndex tables.
struct LayerNormProblem {
  int64_t rows = 0, cols = 0;
  double epsilon = 0;
  std::vector<double> scale, bias;
  std::vector<int64_t> scale_index, bias_index;
};

// Normalises, scales and shifts each row of x into y, in double with one rounding to T at the
// end; stores each row's mean and 1 / sqrt(variance + epsilon).
template <typename T>
void LayerNormRows(const LayerNormProblem& p, const T* x, T* y, double* means, double* inv_stds) {
  const int64_t cols = p.cols;
  const bool plain = p.scale_index.empty() && p.bias_index.empty();
  for (int64_t r = 0; r < p.rows; ++r) {
    const T* in = x + r * cols;
    T* out = y + r * cols;
    const double mean =
        Sum4(cols, [in](int64_t c) { return ToDouble(in[c]); }) / static_cast<double>(cols);
    const double var = Sum4(cols,
                            [in, mean](int64_t c) {
                              const double d = ToDouble(in[c]) - mean;
                              return d * d;
                            }) /
                       static_cast<double>(cols);
    const double inv_std = 1.0 / std::sqrt(var + p.epsilon);
    if (plain && !p.bias.empty()) {  // the common case: per-column scale and bias
      const double* s = p.scale.data();
      const double* b = p.bias.data();
      for (int64_t c = 0; c < cols; ++c) {
        out[c] = FromDouble<T>((ToDouble(in[c]) - mean) * inv_std * s[c] + b[c]);
      }
    } else {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = r * cols + c;
        const double s = p.scale[U(p.scale_index.empty() ? c : p.scale_index[U(i)])];
        const double b =
            p.bias.empty() ? 0.0 : p.bias[U(p.bias_index.empty() ? c : p.bias_index[U(i)])];
        out[c] = FromDouble<T>((ToDouble(in[c]) - mean) * inv_std * s + b);
      }
    }
    means[r] = mean;
    inv_stds[r] = inv_std;
  }
}

// LayerNormalization (opset 17): each row of the trailing block from `axis` on is normalised,
// then scaled and shifted; Mean and InvStdDev have the input's shape with the normalised axes 1,
// in stash_type's element type.
absl::Status LayerNormKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 1, "Scale"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "X"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_ASSIGN(axis_attr, ctx.Int("axis", -1));
  SEEDANCE_NN_ASSIGN(axis, NormalizeAxis(axis_attr, x.rank(), "attribute axis"));
  SEEDANCE_NN_ASSIGN(epsilon, ctx.Float("epsilon", 1e-5f));
  SEEDANCE_NN_ASSIGN(stash_type, StashType(ctx));
  const std::vector<int64_t>& shape = x.shape();
  LayerNormProblem p;
  p.rows = Product(std::span(shape).first(U(axis)));
  p.cols = Product(std::span(shape).subspan(U(axis)));
  p.epsilon = static_cast<double>(epsilon);
  const bool has_bias = ctx.has_input(2);
  for (int i = 1; i <= (has_bias ? 2 : 1); ++i) {
    SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, i, i == 1 ? "Scale" : "B"));
  }
  SEEDANCE_NN_ASSIGN(scale_index, ParamIndex(ctx.input(1), "input 1 (Scale)", shape, axis, p.cols));
  p.scale_index = std::move(scale_index);
  if (has_bias) {
    SEEDANCE_NN_ASSIGN(bias_index, ParamIndex(ctx.input(2), "input 2 (B)", shape, axis, p.cols));
    p.bias_index = std::move(bias_index);
    p.bias = ReadDoubles(ctx.input(2));
  }
  p.scale = ReadDoubles(ctx.input(1));
  Tensor y(x.type(), shape, Tensor::Uninitialized{});  // every row written
  std::vector<double> means(U(p.rows)), inv_stds(U(p.rows));
  VisitType(x.type(), [&]<typename T>(T) {
    if constexpr (kFloating<T>) {
      LayerNormRows<T>(p, x.data<T>(), y.data<T>(), means.data(), inv_stds.data());
    }
  });
  std::vector<int64_t> stat_shape(shape.begin(), shape.end());
  for (size_t d = U(axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
  outputs[0] = std::move(y);
  if (outputs.size() > 1) outputs[1] = WriteDoubles(stash_type, stat_shape, means);
  if (outputs.size() > 2) outputs[2] = WriteDoubles(stash_type, stat_shape, inv_stds);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization, InstanceNormalization

// Input `i` as doubles; it must be given and hold `count` elements.
absl::StatusOr<std::vector<double>> ChannelParam(const OpContext& ctx, int i, const char* what,
                                                 int64_t count) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, i, what));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, i, what));
  const Tensor& t = ctx.input(i);
  if (t.size() != count) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " (", what, ") has shape ",
                                                   ShapeString(t.shape()), "; expected ", count,
                                                   " elements"));
  }
  return ReadDoubles(t);
}

absl::Status RequireChannels(const Tensor& x) {
  if (x.rank() >= 2) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input 0 (X): shape ", ShapeString(x.shape()),
                                                 " has no channel axis (rank must be >= 2)"));
}

// Per-channel batch mean and (biased) variance of an N x C x inner input.
void ChannelMoments(const std::vector<double>& v, int64_t n, int64_t c, int64_t inner,
                    std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(U(c), 0.0);
  var.assign(U(c), 0.0);
  const double count = static_cast<double>(n * inner);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t b = 0; b < n; ++b) {
      const double* p = v.data() + (b * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) sum += p[i];
    }
    const double m = sum / count;
    for (int64_t b = 0; b < n; ++b) {
      const double* p = v.data() + (b * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) sq += (p[i] - m) * (p[i] - m);
    }
    mean[U(ch)] = m;
    var[U(ch)] = sq / count;
  }
}

struct BatchNormParams {
  std::vector<double> scale, bias, mean, var;
  int64_t per_sample = 0;  // elements per parameter index: inner (spatial) or 1 (per-activation)
};

absl::StatusOr<BatchNormParams> ReadBatchNormParams(const OpContext& ctx, const Tensor& x) {
  const int64_t c = x.dim(1);
  const int64_t inner = Product(std::span(x.shape()).subspan(2));
  // Opset 7's spatial=0 gives one parameter per activation (C x D1 x ... x Dn).
  SEEDANCE_NN_ASSIGN(spatial, ctx.opset() < 9 ? ctx.Int("spatial", 1) : absl::StatusOr<int64_t>(1));
  const int64_t count = spatial != 0 ? c : c * inner;
  BatchNormParams p;
  p.per_sample = spatial != 0 ? inner : 1;
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  std::vector<double>* fields[] = {&p.scale, &p.bias, &p.mean, &p.var};
  for (int i = 0; i < 4; ++i) {
    SEEDANCE_NN_ASSIGN(values, ChannelParam(ctx, i + 1, names[i], count));
    *fields[i] = std::move(values);
  }
  return p;
}

// BatchNormalization, opsets 7..15. Inference uses the given mean and variance. Training
// (training_mode=1, opset >= 14) uses the batch's and outputs the running statistics
// `mean * momentum + batch * (1 - momentum)` (ONNX's reference: biased batch variance).
absl::Status BatchNormKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "X"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_RETURN_IF_ERROR(RequireChannels(x));
  SEEDANCE_NN_ASSIGN(epsilon, ctx.Float("epsilon", 1e-5f));
  SEEDANCE_NN_ASSIGN(momentum, ctx.Float("momentum", 0.9f));
  SEEDANCE_NN_ASSIGN(training,
                     ctx.opset() >= 14 ? ctx.Int("training_mode", 0) : absl::StatusOr<int64_t>(0));
  bool extra_outputs = false;
  for (size_t i = 1; i < ctx.node().outputs.size(); ++i) {
    extra_outputs = extra_outputs || !ctx.node().outputs[i].empty();
  }
  if (ctx.opset() < 14 && extra_outputs) {
    return absl::InvalidArgumentError(
        "training-mode outputs (mean, var, saved_mean, saved_var) are not supported before "
        "opset 14");
  }
  SEEDANCE_NN_ASSIGN(p, ReadBatchNormParams(ctx, x));
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t inner = Product(std::span(x.shape()).subspan(2));
  std::vector<double> v = ReadDoubles(x);
  std::vector<double> mean = p.mean, var = p.var;
  if (training != 0) {
    if (p.per_sample != inner) return absl::InvalidArgumentError("training needs spatial=1");
    ChannelMoments(v, n, c, inner, mean, var);
  }
  const int64_t sample = c * inner;
  for (int64_t i = 0; i < n * sample; ++i) {
    const size_t k = U((i % sample) / p.per_sample);
    v[U(i)] = p.scale[k] * (v[U(i)] - mean[k]) / std::sqrt(var[k] + epsilon) + p.bias[k];
  }
  outputs[0] = WriteDoubles(x.type(), x.shape(), v);
  const double m = static_cast<double>(momentum);
  for (size_t k = 0; training != 0 && k < p.mean.size(); ++k) {
    mean[k] = p.mean[k] * m + mean[k] * (1 - m);
    var[k] = p.var[k] * m + var[k] * (1 - m);
  }
  // Outside training the running statistics are the given ones, unchanged.
  if (outputs.size() > 1)
    outputs[1] = WriteDoubles(ctx.input(3).type(), ctx.input(3).shape(), mean);
  if (outputs.size() > 2) outputs[2] = WriteDoubles(ctx.input(4).type(), ctx.input(4).shape(), var);
  return absl::OkStatus();
}

// InstanceNormalization: each (n, c) plane normalised over its spatial elements.
absl::Status InstanceNormKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "input"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "input"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_RETURN_IF_ERROR(RequireChannels(x));
  SEEDANCE_NN_ASSIGN(epsilon, ctx.Float("epsilon", 1e-5f));
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t inner = Product(std::span(x.shape()).subspan(2));
  SEEDANCE_NN_ASSIGN(scale, ChannelParam(ctx, 1, "scale", c));
  SEEDANCE_NN_ASSIGN(bias, ChannelParam(ctx, 2, "B", c));
  std::vector<double> v = ReadDoubles(x);
  std::vector<double> mean, var;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<double> sample(v.begin() + b * c * inner, v.begin() + (b + 1) * c * inner);
    ChannelMoments(sample, 1, c, inner, mean, var);
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t k = U(ch);
      const double inv_std = 1.0 / std::sqrt(var[k] + static_cast<double>(epsilon));
      double* p = v.data() + (b * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) p[i] = (p[i] - mean[k]) * inv_std * scale[k] + bias[k];
    }
  }
  outputs[0] = WriteDoubles(x.type(), x.shape(), v);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// MeanVarianceNormalization, LRN

// For each element of `shape`, the row-major index of its group once the `reduced` axes are
// dropped.
std::vector<int64_t> GroupIndex(std::span<const int64_t> shape, const std::vector<bool>& reduced) {
  std::vector<int64_t> kept_shape(shape.begin(), shape.end());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) kept_shape[d] = 1;
  }
  return BroadcastIndex(kept_shape, shape);
}

// MeanVarianceNormalization (opsets 9, 13): (X - E[X]) / (sqrt(Var[X]) + 1e-9) over `axes`.
absl::Status MvnKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "X"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_ASSIGN(axes, ctx.Ints("axes", {0, 2, 3}));
  std::vector<bool> reduced(U(x.rank()), false);
  for (int64_t a : axes) {
    SEEDANCE_NN_ASSIGN(axis, NormalizeAxis(a, x.rank(), "attribute axes: axis"));
    if (x.rank() > 0) reduced[U(axis)] = true;
  }
  const std::vector<int64_t> group = GroupIndex(x.shape(), reduced);
  const int64_t groups = group.empty() ? 0 : *std::max_element(group.begin(), group.end()) + 1;
  std::vector<double> v = ReadDoubles(x);
  std::vector<double> sum(U(groups), 0.0), sq(U(groups), 0.0), count(U(groups), 0.0);
  for (size_t i = 0; i < v.size(); ++i) {
    sum[U(group[i])] += v[i];
    count[U(group[i])] += 1;
  }
  for (int64_t g = 0; g < groups; ++g) sum[U(g)] /= count[U(g)];
  for (size_t i = 0; i < v.size(); ++i) {
    const double d = v[i] - sum[U(group[i])];
    sq[U(group[i])] += d * d;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t g = U(group[i]);
    v[i] = (v[i] - sum[g]) / (std::sqrt(sq[g] / count[g]) + 1e-9);
  }
  outputs[0] = WriteDoubles(x.type(), x.shape(), v);
  return absl::OkStatus();
}

// LRN: x / (bias + alpha / size * sum of squares over the neighbouring channels)^beta, the
// neighbourhood [c - floor((size-1)/2), c + ceil((size-1)/2)].
absl::Status LrnKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "X"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_RETURN_IF_ERROR(RequireChannels(x));
  if (!ctx.has_attr("size")) return absl::InvalidArgumentError("attribute size is required");
  SEEDANCE_NN_ASSIGN(size, ctx.Int("size", 1));
  SEEDANCE_NN_ASSIGN(alpha, ctx.Float("alpha", 1e-4f));
  SEEDANCE_NN_ASSIGN(beta, ctx.Float("beta", 0.75f));
  SEEDANCE_NN_ASSIGN(bias, ctx.Float("bias", 1.0f));
  if (size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute size: ", size, " is not positive"));
  }
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t inner = Product(std::span(x.shape()).subspan(2));
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const std::vector<double> v = ReadDoubles(x);
  std::vector<double> y(v.size());
  const double coef = static_cast<double>(alpha) / static_cast<double>(size);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t lo = std::max<int64_t>(0, ch - before), hi = std::min(c - 1, ch + after);
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t k = lo; k <= hi; ++k) {
          const double e = v[U((b * c + k) * inner + i)];
          sq += e * e;
        }
        const size_t at = U((b * c + ch) * inner + i);
        y[at] = v[at] / std::pow(static_cast<double>(bias) + coef * sq, static_cast<double>(beta));
      }
    }
  }
  outputs[0] = WriteDoubles(x.type(), x.shape(), y);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Window geometry shared by pooling and Conv

// The spatial geometry of a sliding window over an N x C x D1 x ... x Dk input.
struct Geometry {
  std::vector<int64_t> in, out, kernel, strides, dilations, pad_begin, pad_end;
};

absl::StatusOr<std::vector<int64_t>> PerAxis(const OpContext& ctx, const char* name, size_t k,
                                             int64_t fallback, int64_t min) {
  SEEDANCE_NN_ASSIGN(v, ctx.Ints(name, std::vector<int64_t>(k, fallback)));
  if (v.size() != k) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute ", name, ": ", v.size(), " values for ", k, " spatial axes"));
  }
  for (int64_t e : v) {
    if (e < min || e > kMaxWindowAttr) {
      return absl::InvalidArgumentError(absl::StrCat("attribute ", name, ": ", e, " is outside [",
                                                     min, ", ", kMaxWindowAttr, "]"));
    }
  }
  return v;
}

// Output extent and padding of spatial axis `d` under auto_pad and ceil_mode.
absl::Status ResolveAxis(Geometry& g, size_t d, const std::string& auto_pad, bool ceil_mode) {
  const int64_t eff = (g.kernel[d] - 1) * g.dilations[d] + 1;
  const int64_t in = g.in[d], s = g.strides[d];
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    g.out[d] = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (g.out[d] - 1) * s + eff - in);
    g.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    g.pad_end[d] = total - g.pad_begin[d];
    return absl::OkStatus();
  }
  if (auto_pad == "VALID") g.pad_begin[d] = g.pad_end[d] = 0;
  const int64_t span = in + g.pad_begin[d] + g.pad_end[d] - eff;
  if (span < 0) {
    return absl::InvalidArgumentError(absl::StrCat("spatial axis ", d, ": the window (", eff,
                                                   ") is larger than the padded input (",
                                                   span + eff, ")"));
  }
  g.out[d] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // A last window that would start in the end padding is dropped (as ONNX Runtime does).
  if (ceil_mode && (g.out[d] - 1) * s >= in + g.pad_begin[d]) --g.out[d];
  return absl::OkStatus();
}

// Reads kernel_shape (or `kernel` when not empty), strides, dilations, pads, auto_pad and
// ceil_mode for input shape `x_shape` (rank >= 3).
absl::StatusOr<Geometry> ResolveGeometry(const OpContext& ctx, std::span<const int64_t> x_shape,
                                         std::vector<int64_t> kernel) {
  if (x_shape.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat("input 0 (X): shape ", ShapeString(x_shape),
                                                   " has no spatial axes (rank must be >= 3)"));
  }
  const size_t k = x_shape.size() - 2;
  Geometry g;
  g.in.assign(x_shape.begin() + 2, x_shape.end());
  g.out.assign(k, 0);
  if (kernel.empty()) {
    if (!ctx.has_attr("kernel_shape")) {
      return absl::InvalidArgumentError("attribute kernel_shape is required");
    }
    SEEDANCE_NN_ASSIGN(ks, PerAxis(ctx, "kernel_shape", k, 1, 1));
    kernel = std::move(ks);
  }
  g.kernel = std::move(kernel);
  SEEDANCE_NN_ASSIGN(strides, PerAxis(ctx, "strides", k, 1, 1));
  SEEDANCE_NN_ASSIGN(dilations, PerAxis(ctx, "dilations", k, 1, 1));
  SEEDANCE_NN_ASSIGN(pads, PerAxis(ctx, "pads", 2 * k, 0, 0));
  SEEDANCE_NN_ASSIGN(auto_pad, ctx.String("auto_pad", "NOTSET"));
  SEEDANCE_NN_ASSIGN(ceil_mode, ctx.Int("ceil_mode", 0));
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return absl::InvalidArgumentError(absl::StrCat("attribute auto_pad: unknown mode ", auto_pad));
  }
  g.strides = std::move(strides);
  g.dilations = std::move(dilations);
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<ptrdiff_t>(k));
  g.pad_end.assign(pads.begin() + static_cast<ptrdiff_t>(k), pads.end());
  for (size_t d = 0; d < k; ++d) {
    if (g.kernel[d] > kMaxWindowAttr) {  // W's dimensions, for Conv
      return absl::InvalidArgumentError(
          absl::StrCat("spatial axis ", d, ": kernel ", g.kernel[d], " is above ", kMaxWindowAttr));
    }
    SEEDANCE_NN_RETURN_IF_ERROR(ResolveAxis(g, d, auto_pad, ceil_mode != 0));
  }
  std::vector<int64_t> out_shape = {x_shape[0], x_shape[1]};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  SEEDANCE_NN_RETURN_IF_ERROR(ElementCount(out_shape).status());
  return g;
}

// The taps of every output point, shared by all (batch, channel) planes: for output point p,
// entries starts[p]..starts[p+1] give each in-bounds window element's spatial offset in the input
// (row-major and column-major) and in the kernel.
struct WindowPlan {
  std::vector<int64_t> starts, offsets, col_offsets, kernel_offsets;
  std::vector<int64_t> padded_counts;  // window elements inside the padded input, per point
  int64_t in_points = 1, out_points = 1, kernel_points = 1;
};

// The in-bounds taps of axis `d` for output position `o`: (input index, kernel index) pairs.
std::vector<std::pair<int64_t, int64_t>> AxisTaps(const Geometry& g, size_t d, int64_t o,
                                                  int64_t* padded) {
  std::vector<std::pair<int64_t, int64_t>> taps;
  *padded = 0;
  for (int64_t k = 0; k < g.kernel[d]; ++k) {
    const int64_t i = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
    if (i >= -g.pad_begin[d] && i < g.in[d] + g.pad_end[d]) ++*padded;
    if (i >= 0 && i < g.in[d]) taps.emplace_back(i, k);
  }
  return taps;
}

// The number of in-bounds taps over all output points: the per-axis counts multiply.
int64_t CountTaps(const Geometry& g) {
  double total = 1;
  for (size_t d = 0; d < g.in.size(); ++d) {
    int64_t axis_taps = 0, padded = 0;
    for (int64_t o = 0; o < g.out[d]; ++o) {
      axis_taps += static_cast<int64_t>(AxisTaps(g, d, o, &padded).size());
    }
    total *= static_cast<double>(axis_taps);
  }
  return total > static_cast<double>(kMaxPlanTaps) ? kMaxPlanTaps + 1 : static_cast<int64_t>(total);
}

// Fills col_offsets only when `col` and kernel_offsets only when `kernel`.
absl::StatusOr<WindowPlan> BuildPlan(const Geometry& g, bool col, bool kernel) {
  if (CountTaps(g) > kMaxPlanTaps) {
    return absl::InvalidArgumentError(
        absl::StrCat("the windows (kernel ", ShapeString(g.kernel), " over output ",
                     ShapeString(g.out), ") have more than ", kMaxPlanTaps, " elements in all"));
  }
  const size_t k = g.in.size();
  WindowPlan plan;
  plan.in_points = Product(g.in);
  plan.out_points = Product(g.out);
  plan.kernel_points = Product(g.kernel);
  const std::vector<int64_t> in_strides = Strides(g.in), k_strides = Strides(g.kernel);
  std::vector<int64_t> col_strides(k, 1);
  for (size_t d = 1; d < k; ++d) col_strides[d] = col_strides[d - 1] * g.in[d - 1];
  std::vector<int64_t> pos(k, 0);
  plan.starts.push_back(0);
  for (int64_t p = 0; p < plan.out_points; ++p) {
    // Each partial tap: {row-major offset, column-major offset, kernel offset}.
    std::vector<std::array<int64_t, 3>> taps = {{0, 0, 0}}, next;
    int64_t padded = 1;
    for (size_t d = 0; d < k; ++d) {
      int64_t axis_padded = 0;
      next.clear();
      for (const auto& [i, ki] : AxisTaps(g, d, pos[d], &axis_padded)) {
        for (const auto& t : taps) {
          next.push_back(
              {t[0] + i * in_strides[d], t[1] + i * col_strides[d], t[2] + ki * k_strides[d]});
        }
      }
      taps.swap(next);
      padded *= axis_padded;
    }
    for (const auto& t : taps) {
      plan.offsets.push_back(t[0]);
      if (col) plan.col_offsets.push_back(t[1]);
      if (kernel) plan.kernel_offsets.push_back(t[2]);
    }
    plan.starts.push_back(static_cast<int64_t>(plan.offsets.size()));
    plan.padded_counts.push_back(padded);
    for (size_t d = k; d-- > 0;) {  // odometer step over the output positions
      if (++pos[d] < g.out[d]) break;
      pos[d] = 0;
    }
  }
  return plan;
}

std::vector<int64_t> OutputShape(std::span<const int64_t> x_shape, int64_t channels,
                                 const Geometry& g) {
  std::vector<int64_t> shape = {x_shape[0], channels};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  return shape;
}

// ---------------------------------------------------------------------------------------------
// Pooling

// MaxPool (opsets 7..12; NaN inputs are skipped). The optional Indices output holds each
// maximum's flat index in X, the spatial part column-major when storage_order is 1.
absl::Status MaxPoolKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  const Tensor& x = ctx.input(0);
  const DataType type = x.type();
  if (!IsFloating(type) && type != DataType::kInt8 && type != DataType::kUint8) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 0 (X): element type ", DataTypeName(type), " is not supported"));
  }
  SEEDANCE_NN_ASSIGN(storage_order, ctx.Int("storage_order", 0));
  if (storage_order != 0 && storage_order != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute storage_order: ", storage_order, " is not 0 or 1"));
  }
  SEEDANCE_NN_ASSIGN(g, ResolveGeometry(ctx, x.shape(), {}));
  SEEDANCE_NN_ASSIGN(plan, BuildPlan(g, /*col=*/storage_order == 1, /*kernel=*/false));
  const std::vector<int64_t> out_shape = OutputShape(x.shape(), x.dim(1), g);
  const int64_t planes = x.dim(0) * x.dim(1);
  const std::vector<double> v = ReadDoubles(x);
  std::vector<double> y(U(planes * plan.out_points));
  std::vector<int64_t> indices(y.size(), 0);
  const std::vector<int64_t>& index_offsets = storage_order == 0 ? plan.offsets : plan.col_offsets;
  for (int64_t c = 0; c < planes; ++c) {
    const double* in = v.data() + c * plan.in_points;
    for (int64_t p = 0; p < plan.out_points; ++p) {
      double best = -kInf;
      int64_t best_tap = -1;
      for (int64_t t = plan.starts[U(p)]; t < plan.starts[U(p) + 1]; ++t) {
        const double e = in[plan.offsets[U(t)]];
        if (best_tap < 0 || e > best || (std::isnan(best) && !std::isnan(e))) {
          best = e;
          best_tap = t;
        }
      }
      const size_t at = U(c * plan.out_points + p);
      y[at] = best;
      indices[at] = c * plan.in_points + (best_tap < 0 ? 0 : index_offsets[U(best_tap)]);
    }
  }
  outputs[0] = WriteDoubles(type, out_shape, y);
  if (outputs.size() > 1) {
    outputs[1] = Tensor::From<int64_t>(out_shape, std::span<const int64_t>(indices));
  }
  return absl::OkStatus();
}

// AveragePool: the mean of each window's in-bounds elements, or with count_include_pad=1 the sum
// over the number of window elements inside the padded input.
absl::Status AveragePoolKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "X"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_ASSIGN(count_include_pad, ctx.Int("count_include_pad", 0));
  SEEDANCE_NN_ASSIGN(g, ResolveGeometry(ctx, x.shape(), {}));
  SEEDANCE_NN_ASSIGN(plan, BuildPlan(g, /*col=*/false, /*kernel=*/false));
  const int64_t planes = x.dim(0) * x.dim(1);
  const std::vector<double> v = ReadDoubles(x);
  std::vector<double> y(U(planes * plan.out_points));
  for (int64_t c = 0; c < planes; ++c) {
    const double* in = v.data() + c * plan.in_points;
    for (int64_t p = 0; p < plan.out_points; ++p) {
      double sum = 0;
      const int64_t begin = plan.starts[U(p)], end = plan.starts[U(p) + 1];
      for (int64_t t = begin; t < end; ++t) sum += in[plan.offsets[U(t)]];
      const int64_t count = count_include_pad != 0 ? plan.padded_counts[U(p)] : end - begin;
      y[U(c * plan.out_points + p)] = count > 0 ? sum / static_cast<double>(count) : 0.0;
    }
  }
  outputs[0] = WriteDoubles(x.type(), OutputShape(x.shape(), x.dim(1), g), y);
  return absl::OkStatus();
}

// GlobalAveragePool / GlobalMaxPool: each (n, c) plane reduced to one element; the output keeps
// the rank with every spatial dimension 1.
absl::Status GlobalPoolKernel(bool max, const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "X"));
  const Tensor& x = ctx.input(0);
  SEEDANCE_NN_RETURN_IF_ERROR(RequireChannels(x));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t inner = Product(std::span(x.shape()).subspan(2));
  const std::vector<double> v = ReadDoubles(x);
  std::vector<double> y(U(planes));
  for (int64_t c = 0; c < planes; ++c) {
    const double* p = v.data() + c * inner;
    double acc = max ? -kInf : 0.0;
    for (int64_t i = 0; i < inner; ++i) acc = max ? std::max(acc, p[i]) : acc + p[i];
    y[U(c)] = max ? acc : acc / static_cast<double>(inner);
  }
  std::vector<int64_t> shape(x.shape().size(), 1);
  shape[0] = x.dim(0);
  shape[1] = x.dim(1);
  outputs[0] = WriteDoubles(x.type(), shape, y);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Conv

struct ConvShape {
  int64_t n = 0, c = 0, m = 0, group = 1;
  Geometry g;
};

// Direct N-D convolution in double, for every element type and rank.
absl::StatusOr<Tensor> ConvDirect(const Tensor& x, const Tensor& w, const Tensor* b,
                                  const ConvShape& s) {
  SEEDANCE_NN_ASSIGN(plan, BuildPlan(s.g, /*col=*/false, /*kernel=*/true));
  const std::vector<double> xv = ReadDoubles(x), wv = ReadDoubles(w);
  const std::vector<double> bv = b != nullptr ? ReadDoubles(*b) : std::vector<double>(U(s.m), 0);
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  std::vector<double> y(U(s.n * s.m * plan.out_points));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t m = 0; m < s.m; ++m) {
      const int64_t first_channel = (m / mg) * cg;
      double* out = y.data() + (n * s.m + m) * plan.out_points;
      for (int64_t p = 0; p < plan.out_points; ++p) {
        double acc = bv[U(m)];
        for (int64_t c = 0; c < cg; ++c) {
          const double* in = xv.data() + (n * s.c + first_channel + c) * plan.in_points;
          const double* ker = wv.data() + (m * cg + c) * plan.kernel_points;
          for (int64_t t = plan.starts[U(p)]; t < plan.starts[U(p) + 1]; ++t) {
            acc += in[plan.offsets[U(t)]] * ker[plan.kernel_offsets[U(t)]];
          }
        }
        out[p] = acc;
      }
    }
  }
  return WriteDoubles(x.type(), OutputShape(x.shape(), s.m, s.g), y);
}

// FP32 2-D convolution with Debian's oneDNN 2.6 (v2 API, plain NCHW / OIHW / GOIHW layouts, so
// no reorders). Throws dnnl::error when oneDNN refuses the problem.
Tensor ConvOneDnn2d(const Tensor& x, const Tensor& w, const Tensor* b, const ConvShape& s) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const dnnl::engine* const engine = &CpuEngine();
  const Geometry& g = s.g;
  Tensor y(DataType::kFloat, OutputShape(x.shape(), s.m, g));
  const memory::desc src_md({s.n, s.c, g.in[0], g.in[1]}, memory::data_type::f32, tag::nchw);
  const memory::desc dst_md({s.n, s.m, g.out[0], g.out[1]}, memory::data_type::f32, tag::nchw);
  const memory::desc w_md =
      s.group == 1
          ? memory::desc({s.m, s.c, g.kernel[0], g.kernel[1]}, memory::data_type::f32, tag::oihw)
          : memory::desc({s.group, s.m / s.group, s.c / s.group, g.kernel[0], g.kernel[1]},
                         memory::data_type::f32, tag::goihw);
  const memory::desc b_md({s.m}, memory::data_type::f32, tag::x);
  const memory::dims strides = {g.strides[0], g.strides[1]};
  const memory::dims dilates = {g.dilations[0] - 1, g.dilations[1] - 1};  // oneDNN counts gaps
  const memory::dims pad_l = {g.pad_begin[0], g.pad_begin[1]};
  const memory::dims pad_r = {g.pad_end[0], g.pad_end[1]};
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_direct;
  const auto desc = b != nullptr
                        ? dnnl::convolution_forward::desc(prop, algo, src_md, w_md, b_md, dst_md,
                                                          strides, dilates, pad_l, pad_r)
                        : dnnl::convolution_forward::desc(prop, algo, src_md, w_md, dst_md, strides,
                                                          dilates, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc pd(desc, *engine);
  // oneDNN only reads src, weights and bias; its memory objects take non-const pointers.
  auto mem = [&](const memory::desc& md, const float* p) {
    return memory(md, *engine, const_cast<float*>(p));
  };
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, mem(src_md, x.data<float>())},
                                          {DNNL_ARG_WEIGHTS, mem(w_md, w.data<float>())},
                                          {DNNL_ARG_DST, mem(dst_md, y.data<float>())}};
  if (b != nullptr) args.emplace(DNNL_ARG_BIAS, mem(b_md, b->data<float>()));
  dnnl::stream stream(*engine);
  dnnl::convolution_forward(pd).execute(stream, args);
  stream.wait();
  return y;
}

absl::StatusOr<ConvShape> ResolveConv(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (w.type() != x.type() || (ctx.has_input(2) && ctx.input(2).type() != x.type())) {
    return absl::InvalidArgumentError("inputs X, W and B must have the same element type");
  }
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("input shapes ", ShapeString(x.shape()),
                                                   " (X) and ", ShapeString(w.shape()),
                                                   " (W) must have the same rank, at least 3"));
  }
  ConvShape s;
  s.n = x.dim(0);
  s.c = x.dim(1);
  s.m = w.dim(0);
  SEEDANCE_NN_ASSIGN(group, ctx.Int("group", 1));
  s.group = group;
  if (group <= 0 || (group > 1 && group > s.c) || s.c % group != 0 || s.m % group != 0 ||
      w.dim(1) != s.c / group) {
    return absl::InvalidArgumentError(absl::StrCat(
        "group ", group, " does not fit X's ", s.c, " channels and W of shape ",
        ShapeString(w.shape()), " (W must be M x C/group x kernel, M divisible by group)"));
  }
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  if (ctx.has_attr("kernel_shape")) {
    SEEDANCE_NN_ASSIGN(ks, ctx.Ints("kernel_shape"));
    if (ks != kernel) {
      return absl::InvalidArgumentError(absl::StrCat("attribute kernel_shape ", ShapeString(ks),
                                                     " does not match W's shape ",
                                                     ShapeString(w.shape())));
    }
  }
  for (int64_t k : kernel) {
    if (k <= 0) return absl::InvalidArgumentError("W has an empty kernel");
  }
  SEEDANCE_NN_ASSIGN(g, ResolveGeometry(ctx, x.shape(), std::move(kernel)));
  s.g = std::move(g);
  if (ctx.has_input(2) && ctx.input(2).size() != s.m) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 2 (B) has shape ", ShapeString(ctx.input(2).shape()), "; expected [", s.m, "]"));
  }
  return s;
}

// Conv (opsets 1, 11): N-D, grouped, dilated, strided, padded, with optional bias.
absl::Status ConvKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 0, "X"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireInput(ctx, 1, "W"));
  SEEDANCE_NN_RETURN_IF_ERROR(RequireFloating(ctx, 0, "X"));
  SEEDANCE_NN_ASSIGN(s, ResolveConv(ctx));
  const Tensor& x = ctx.input(0);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const bool empty = x.size() == 0 || Product(s.g.out) == 0 || s.m == 0;
  if (x.type() == DataType::kFloat && s.g.in.size() == 2 && !empty) {
    try {
      outputs[0] = ConvOneDnn2d(x, ctx.input(1), b, s);
      return absl::OkStatus();
    } catch (const dnnl::error&) {
      // oneDNN refuses some problems it has no implementation for; the direct loop has none
      // of its limits.
    }
  }
  SEEDANCE_NN_ASSIGN(y, ConvDirect(x, ctx.input(1), b, s));
  outputs[0] = std::move(y);
  return absl::OkStatus();
}

#undef SEEDANCE_NN_ASSIGN
#undef SEEDANCE_NN_RETURN_IF_ERROR

}  // namespace

absl::StatusOr<LineLayout> SoftmaxLinesOf(const OpContext& ctx, const Tensor& x) {
  const bool coerce_2d = ctx.opset() < 13;
  absl::StatusOr<int64_t> axis_attr = ctx.Int("axis", coerce_2d ? 1 : -1);
  if (!axis_attr.ok()) return axis_attr.status();
  const int rank = x.rank();
  int axis = rank;  // coercing to 2-D also accepts axis == rank
  if (!(coerce_2d && *axis_attr == rank)) {
    absl::StatusOr<int> a = NormalizeAxis(*axis_attr, rank, "attribute axis");
    if (!a.ok()) return a.status();
    axis = *a;
  }
  const std::vector<int64_t>& shape = x.shape();
  LineLayout lines;
  lines.outer = Product(std::span(shape).first(U(axis)));
  if (coerce_2d) {
    lines.n = Product(std::span(shape).subspan(U(axis)));
  } else {
    lines.n = shape[U(axis)];
    lines.inner = Product(std::span(shape).subspan(U(axis) + 1));
  }
  return lines;
}

void RegisterNnOps(Table& table) {
  table["Softmax"] = [](const OpContext& ctx, std::vector<Tensor>& outputs) {
    return SoftmaxKernel(SoftmaxKind::kSoftmax, ctx, outputs);
  };
  table["LogSoftmax"] = [](const OpContext& ctx, std::vector<Tensor>& outputs) {
    return SoftmaxKernel(SoftmaxKind::kLogSoftmax, ctx, outputs);
  };
  table["Hardmax"] = [](const OpContext& ctx, std::vector<Tensor>& outputs) {
    return SoftmaxKernel(SoftmaxKind::kHardmax, ctx, outputs);
  };
  table["LayerNormalization"] = LayerNormKernel;
  table["BatchNormalization"] = BatchNormKernel;
  table["InstanceNormalization"] = InstanceNormKernel;
  table["MeanVarianceNormalization"] = MvnKernel;
  table["LRN"] = LrnKernel;
  table["MaxPool"] = MaxPoolKernel;
  table["AveragePool"] = AveragePoolKernel;
  table["GlobalAveragePool"] = [](const OpContext& ctx, std::vector<Tensor>& outputs) {
    return GlobalPoolKernel(false, ctx, outputs);
  };
  table["GlobalMaxPool"] = [](const OpContext& ctx, std::vector<Tensor>& outputs) {
    return GlobalPoolKernel(true, ctx, outputs);
  };
  table["Conv"] = ConvKernel;
}

}  // namespace seedance::model::ops
