// Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp, ReduceSumSquare; ArgMax, ArgMin; CumSum.
//
// Floating-point inputs (16-bit floats included) accumulate in double and round once to the
// element type. Integer inputs keep their type: sums and products are exact modulo 2^64 (hence
// wrap like the element type), Max/Min compare natively, and only L2, LogSum and LogSumExp go
// through double (saturating back to the type). Reducing over an empty set gives the operation's
// identity: 0 for sums, 1 for products, -inf / +inf (the type's lowest / highest integer) for
// Max / Min, -inf for LogSum and LogSumExp, NaN for a float Mean (0 for an integer one).
#include <algorithm>
#include <cmath>
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

enum class ReduceKind {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSum,
  kLogSumExp,
  kSumSquare,
};

// Calls f(in_index, out_index) for every element of `shape` in row-major order, where out_index
// is the dot product of the element's coordinates with `out_strides` (0 for a reduced axis).
template <typename F>
void ForEachElement(std::span<const int64_t> shape, std::span<const int64_t> out_strides, F&& f) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (count == 0) return;
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> coord(shape.size(), 0);
  int64_t out = 0;
  for (int64_t in = 0; in < count; ++in) {
    f(in, out);
    for (int d = rank - 1; d >= 0; --d) {
      const auto ud = static_cast<size_t>(d);
      if (++coord[ud] < shape[ud]) {
        out += out_strides[ud];
        break;
      }
      out -= out_strides[ud] * (shape[ud] - 1);
      coord[ud] = 0;
    }
  }
}

// The shape of a reduction and where each input element lands.
struct ReducePlan {
  std::vector<int64_t> out_shape;
  std::vector<int64_t> out_strides;  // per input axis; 0 for a reduced axis
  int64_t out_count = 1;
  int64_t group = 1;  // input elements folded into each output element
};

ReducePlan MakePlan(const std::vector<int64_t>& in_shape, const std::vector<bool>& reduced,
                    bool keepdims) {
  ReducePlan plan;
  std::vector<int64_t> kept_shape;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if (reduced[d]) {
      plan.group *= in_shape[d];
      kept_shape.push_back(1);
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      plan.out_count *= in_shape[d];
      kept_shape.push_back(in_shape[d]);
      plan.out_shape.push_back(in_shape[d]);
    }
  }
  plan.out_strides = Strides(kept_shape);
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if (reduced[d]) plan.out_strides[d] = 0;
  }
  return plan;
}

// Which axes to reduce. `identity` is set when the node asks for no reduction at all
// (empty axes with noop_with_empty_axes).
struct AxesChoice {
  std::vector<bool> reduced;
  bool identity = false;
};

absl::StatusOr<std::vector<int64_t>> ReadAxesInput(const OpContext& ctx) {
  if (!ctx.has_input(1)) return std::vector<int64_t>{};
  const Tensor& axes = ctx.input(1);
  if (axes.type() != DataType::kInt64 && axes.type() != DataType::kInt32) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 1 (axes) must be int64, got ", DataTypeName(axes.type())));
  }
  if (axes.rank() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 1 (axes) must be 1-D, got shape ", ShapeString(axes.shape())));
  }
  return axes.ToInt64Vector();
}

absl::StatusOr<AxesChoice> ReadAxes(const OpContext& ctx, bool axes_is_input, int rank) {
  absl::StatusOr<std::vector<int64_t>> axes = axes_is_input ? ReadAxesInput(ctx) : ctx.Ints("axes");
  if (!axes.ok()) return axes.status();
  AxesChoice choice;
  choice.reduced.assign(static_cast<size_t>(rank), axes->empty());
  if (axes->empty()) {
    if (axes_is_input) {
      absl::StatusOr<int64_t> noop = ctx.Int("noop_with_empty_axes", 0);
      if (!noop.ok()) return noop.status();
      choice.identity = *noop != 0;
    }
    return choice;
  }
  for (int64_t axis : *axes) {
    absl::StatusOr<int> d = NormalizeAxis(axis, rank, "axes");
    if (!d.ok()) return d.status();
    const auto ud = static_cast<size_t>(*d);
    if (choice.reduced[ud]) {
      return absl::InvalidArgumentError(absl::StrCat("axes: axis ", axis, " is repeated"));
    }
    choice.reduced[ud] = true;
  }
  return choice;
}

double InitialValue(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kProd:
      return 1.0;
    case ReduceKind::kMax:
      return -std::numeric_limits<double>::infinity();
    case ReduceKind::kMin:
      return std::numeric_limits<double>::infinity();
    default:
      return 0.0;
  }
}

// Per output element, the maximum of its group when finite, else 0: LogSumExp subtracts it
// before exponentiating so that large inputs do not overflow.
template <typename T>
std::vector<double> LogSumExpShift(const Tensor& x, const ReducePlan& plan) {
  std::vector<double> shift(static_cast<size_t>(plan.out_count),
                            -std::numeric_limits<double>::infinity());
  const T* in = x.data<T>();
  ForEachElement(x.shape(), plan.out_strides, [&](int64_t i, int64_t o) {
    shift[static_cast<size_t>(o)] = std::max(shift[static_cast<size_t>(o)], ToDouble(in[i]));
  });
  for (double& s : shift) {
    if (!std::isfinite(s)) s = 0;
  }
  return shift;
}

double Finish(ReduceKind kind, double acc, int64_t group, double shift) {
  switch (kind) {
    case ReduceKind::kMean:
      return acc / static_cast<double>(group);
    case ReduceKind::kL2:
      return std::sqrt(acc);
    case ReduceKind::kLogSum:
      return std::log(acc);
    case ReduceKind::kLogSumExp:
      return shift + std::log(acc);
    default:
      return acc;
  }
}

// Any element type through double (floats; integers for L2, LogSum and LogSumExp).
template <typename T>
Tensor ReduceInDouble(const Tensor& x, const ReducePlan& plan, ReduceKind kind) {
  std::vector<double> acc(static_cast<size_t>(plan.out_count), InitialValue(kind));
  std::vector<double> shift;
  if (kind == ReduceKind::kLogSumExp) shift = LogSumExpShift<T>(x, plan);
  const T* in = x.data<T>();
  ForEachElement(x.shape(), plan.out_strides, [&](int64_t i, int64_t o) {
    const double v = ToDouble(in[i]);
    double& a = acc[static_cast<size_t>(o)];
    switch (kind) {
      case ReduceKind::kSum:
      case ReduceKind::kMean:
      case ReduceKind::kLogSum:
        a += v;
        break;
      case ReduceKind::kMax:
        if (v > a || std::isnan(v)) a = v;
        break;
      case ReduceKind::kMin:
        if (v < a || std::isnan(v)) a = v;
        break;
      case ReduceKind::kProd:
        a *= v;
        break;
      case ReduceKind::kL1:
        a += std::fabs(v);
        break;
      case ReduceKind::kL2:
      case ReduceKind::kSumSquare:
        a += v * v;
        break;
      case ReduceKind::kLogSumExp:
        a += std::exp(v - shift[static_cast<size_t>(o)]);
        break;
    }
  });
  Tensor out(x.type(), plan.out_shape);
  T* dst = out.data<T>();
  for (size_t o = 0; o < acc.size(); ++o) {
    const double s = shift.empty() ? 0.0 : shift[o];
    dst[o] = FromDouble<T>(Finish(kind, acc[o], plan.group, s));
  }
  return out;
}

// Integer Sum, Mean, Prod, L1, SumSquare (exact modulo 2^64) and Max, Min (native).
template <typename T>
Tensor ReduceInteger(const Tensor& x, const ReducePlan& plan, ReduceKind kind) {
  const bool extremum = kind == ReduceKind::kMax || kind == ReduceKind::kMin;
  const T start =
      kind == ReduceKind::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  std::vector<T> best(extremum ? static_cast<size_t>(plan.out_count) : 0, start);
  std::vector<uint64_t> acc(extremum ? 0 : static_cast<size_t>(plan.out_count),
                            kind == ReduceKind::kProd ? 1 : 0);
  const T* in = x.data<T>();
  ForEachElement(x.shape(), plan.out_strides, [&](int64_t i, int64_t o) {
    const auto uo = static_cast<size_t>(o);
    const T v = in[i];
    const auto u = static_cast<uint64_t>(v);  // sign-extends, modulo 2^64
    switch (kind) {
      case ReduceKind::kMax:
        best[uo] = std::max(best[uo], v);
        break;
      case ReduceKind::kMin:
        best[uo] = std::min(best[uo], v);
        break;
      case ReduceKind::kProd:
        acc[uo] *= u;
        break;
      case ReduceKind::kL1:
        acc[uo] += v < T{0} ? uint64_t{0} - u : u;
        break;
      case ReduceKind::kSumSquare:
        acc[uo] += u * u;
        break;
      default:
        acc[uo] += u;
        break;
    }
  });
  if (extremum) return Tensor::From<T>(plan.out_shape, best);
  Tensor out(x.type(), plan.out_shape);
  T* dst = out.data<T>();
  for (size_t o = 0; o < acc.size(); ++o) {
    if (kind != ReduceKind::kMean) {
      dst[o] = static_cast<T>(acc[o]);
    } else if (plan.group == 0) {
      dst[o] = T{0};
    } else if constexpr (std::is_signed_v<T>) {
      dst[o] = static_cast<T>(static_cast<int64_t>(acc[o]) / plan.group);
    } else {
      dst[o] = static_cast<T>(acc[o] / static_cast<uint64_t>(plan.group));
    }
  }
  return out;
}

absl::StatusOr<Tensor> Reduce(const Tensor& x, const ReducePlan& plan, ReduceKind kind) {
  return VisitType(x.type(), [&](auto tag) -> absl::StatusOr<Tensor> {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return absl::InvalidArgumentError("input 0 (data): bool is not a supported type");
    } else if constexpr (std::is_integral_v<T>) {
      if (kind == ReduceKind::kL2 || kind == ReduceKind::kLogSum ||
          kind == ReduceKind::kLogSumExp) {
        return ReduceInDouble<T>(x, plan, kind);
      }
      return ReduceInteger<T>(x, plan, kind);
    } else {
      return ReduceInDouble<T>(x, plan, kind);
    }
  });
}

// `axes_input_since`: the opset from which the operator takes `axes` as input 1 (with
// noop_with_empty_axes) instead of an attribute.
Kernel MakeReduceKernel(ReduceKind kind, int64_t axes_input_since) {
  return
      [kind, axes_input_since](const OpContext& ctx, std::vector<Tensor>& outputs) -> absl::Status {
        const Tensor& x = ctx.input(0);
        absl::StatusOr<int64_t> keepdims = ctx.Int("keepdims", 1);
        if (!keepdims.ok()) return keepdims.status();
        absl::StatusOr<AxesChoice> axes = ReadAxes(ctx, ctx.opset() >= axes_input_since, x.rank());
        if (!axes.ok()) return axes.status();
        if (axes->identity) {
          if (x.type() == DataType::kBool) {
            return absl::InvalidArgumentError("input 0 (data): bool is not a supported type");
          }
          outputs[0] = x;
          return absl::OkStatus();
        }
        absl::StatusOr<Tensor> out =
            Reduce(x, MakePlan(x.shape(), axes->reduced, *keepdims != 0), kind);
        if (!out.ok()) return out.status();
        outputs[0] = *std::move(out);
        return absl::OkStatus();
      };
}

// ---- ArgMax / ArgMin ----

// The value ArgMax/ArgMin compares: the element itself, 16-bit floats widened.
template <typename T>
auto CompareKey(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return ToDouble(v);
  } else {
    return v;
  }
}

template <typename K>
bool IsNan(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(v);
  } else {
    (void)v;
    return false;
  }
}

// Whether `v` (at a later index) replaces `best`. NaN wins over any number, as in numpy.
template <typename K>
bool Replaces(K v, K best, bool is_max, bool select_last) {
  if (IsNan(best)) return select_last && IsNan(v);
  if (IsNan(v)) return true;
  if (select_last && v == best) return true;
  return is_max ? v > best : v < best;
}

template <typename T>
Tensor ArgReduce(const Tensor& x, int axis, bool keepdims, bool is_max, bool select_last) {
  int64_t outer = 1;
  int64_t inner = 1;
  std::vector<int64_t> out_shape;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
    if (d != axis) {
      out_shape.push_back(x.dim(d));
    } else if (keepdims) {
      out_shape.push_back(1);
    }
  }
  const int64_t n = x.dim(axis);
  Tensor out(DataType::kInt64, out_shape);
  int64_t* dst = out.data<int64_t>();
  const T* in = x.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* base = in + o * n * inner + i;
      auto best = CompareKey(base[0]);
      int64_t best_index = 0;
      for (int64_t k = 1; k < n; ++k) {
        const auto v = CompareKey(base[k * inner]);
        if (Replaces(v, best, is_max, select_last)) {
          best = v;
          best_index = k;
        }
      }
      dst[o * inner + i] = best_index;
    }
  }
  return out;
}

Kernel MakeArgKernel(bool is_max) {
  return [is_max](const OpContext& ctx, std::vector<Tensor>& outputs) -> absl::Status {
    const Tensor& x = ctx.input(0);
    absl::StatusOr<int64_t> axis_attr = ctx.Int("axis", 0);
    if (!axis_attr.ok()) return axis_attr.status();
    absl::StatusOr<int64_t> keepdims = ctx.Int("keepdims", 1);
    if (!keepdims.ok()) return keepdims.status();
    absl::StatusOr<int64_t> select_last = ctx.Int("select_last_index", 0);
    if (!select_last.ok()) return select_last.status();
    absl::StatusOr<int> axis = NormalizeAxis(*axis_attr, x.rank(), "axis");
    if (!axis.ok()) return axis.status();
    if (x.dim(*axis) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("input 0 (data): axis ", *axis_attr,
                                                     " of shape ", ShapeString(x.shape()),
                                                     " is empty; there is no index to select"));
    }
    return VisitType(x.type(), [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        return absl::InvalidArgumentError("input 0 (data): bool is not a supported type");
      } else {
        outputs[0] = ArgReduce<T>(x, *axis, *keepdims != 0, is_max, *select_last != 0);
        return absl::OkStatus();
      }
    });
  };
}

// ---- CumSum ----

struct CumSumShape {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
  bool exclusive = false;
  bool reverse = false;
};

// Floats accumulate in double, integers modulo 2^64; each output is rounded from the running sum.
template <typename T>
Tensor CumSumOf(const Tensor& x, const CumSumShape& s) {
  using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
  Tensor out(x.type(), x.shape());
  const T* in = x.data<T>();
  T* dst = out.data<T>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      Acc sum = 0;
      for (int64_t k = 0; k < s.n; ++k) {
        const int64_t pos = (o * s.n + (s.reverse ? s.n - 1 - k : k)) * s.inner + i;
        Acc v;
        if constexpr (std::is_integral_v<T>) {
          v = static_cast<Acc>(in[pos]);
        } else {
          v = ToDouble(in[pos]);
        }
        if (!s.exclusive) sum += v;
        if constexpr (std::is_integral_v<T>) {
          dst[pos] = static_cast<T>(sum);
        } else {
          dst[pos] = FromDouble<T>(sum);
        }
        if (s.exclusive) sum += v;
      }
    }
  }
  return out;
}

absl::Status CumSumKernel(const OpContext& ctx, std::vector<Tensor>& outputs) {
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return absl::InvalidArgumentError("input 1 (axis) is required");
  const Tensor& axis_t = ctx.input(1);
  if ((axis_t.type() != DataType::kInt32 && axis_t.type() != DataType::kInt64) ||
      axis_t.size() != 1 || axis_t.rank() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 1 (axis) must be a 0-D int32 or int64 tensor, got ", axis_t.Describe()));
  }
  absl::StatusOr<int> axis = NormalizeAxis(axis_t.AsInt64(0), x.rank(), "axis");
  if (!axis.ok()) return axis.status();
  absl::StatusOr<int64_t> exclusive = ctx.Int("exclusive", 0);
  if (!exclusive.ok()) return exclusive.status();
  absl::StatusOr<int64_t> reverse = ctx.Int("reverse", 0);
  if (!reverse.ok()) return reverse.status();
  CumSumShape s;
  s.exclusive = *exclusive != 0;
  s.reverse = *reverse != 0;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < *axis) s.outer *= x.dim(d);
    if (d == *axis) s.n = x.dim(d);
    if (d > *axis) s.inner *= x.dim(d);
  }
  return VisitType(x.type(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return absl::InvalidArgumentError("input 0 (x): bool is not a supported type");
    } else {
      outputs[0] = CumSumOf<T>(x, s);
      return absl::OkStatus();
    }
  });
}

}  // namespace

void RegisterReduceOps(Table& table) {
  constexpr int64_t kAxesInputSince13 = 13;
  // The other reductions take `axes` as an input from opset 18 (above what the executor loads).
  constexpr int64_t kAxesInputSince18 = 18;
  table["ReduceSum"] = MakeReduceKernel(ReduceKind::kSum, kAxesInputSince13);
  table["ReduceMean"] = MakeReduceKernel(ReduceKind::kMean, kAxesInputSince18);
  table["ReduceMax"] = MakeReduceKernel(ReduceKind::kMax, kAxesInputSince18);
  table["ReduceMin"] = MakeReduceKernel(ReduceKind::kMin, kAxesInputSince18);
  table["ReduceProd"] = MakeReduceKernel(ReduceKind::kProd, kAxesInputSince18);
  table["ReduceL1"] = MakeReduceKernel(ReduceKind::kL1, kAxesInputSince18);
  table["ReduceL2"] = MakeReduceKernel(ReduceKind::kL2, kAxesInputSince18);
  table["ReduceLogSum"] = MakeReduceKernel(ReduceKind::kLogSum, kAxesInputSince18);
  table["ReduceLogSumExp"] = MakeReduceKernel(ReduceKind::kLogSumExp, kAxesInputSince18);
  table["ReduceSumSquare"] = MakeReduceKernel(ReduceKind::kSumSquare, kAxesInputSince18);
  table["ArgMax"] = MakeArgKernel(/*is_max=*/true);
  table["ArgMin"] = MakeArgKernel(/*is_max=*/false);
  table["CumSum"] = CumSumKernel;
}

}  // namespace seedance::model::ops
