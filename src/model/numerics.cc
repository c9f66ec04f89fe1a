#include "seedance/model/numerics.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/model/float_formats.h"

namespace seedance::model {
namespace {

bool IsFloat(const Tensor& t) {
  return t.type() == DataType::kFloat || t.type() == DataType::kDouble;
}

double RoundTo(NumericFormat format, double v) {
  const float f = static_cast<float>(v);
  switch (format) {
    case NumericFormat::kFp32:
      return f;
    case NumericFormat::kFp16:
      return RoundToFloat16(f);
    case NumericFormat::kBf16:
      return RoundToBFloat16(f);
    case NumericFormat::kFp8E4M3:
      return RoundToFloat8E4M3(f);
    case NumericFormat::kInt8:
      break;
  }
  return v;
}

// The FP32 scale of a slice whose largest |x| is `amax` (> 0, finite): amax / the format's largest
// code, rounded to FP32 as a QDQ model stores it. 0 when that underflows FP32.
double SliceScale(NumericFormat format, double amax) {
  return static_cast<float>(amax / (format == NumericFormat::kInt8 ? 127.0 : 448.0));
}

// The code of `v` on the scaled grid of `format`: an integer in [-127, 127] (INT8), an E4M3
// value (FP8).
double Code(NumericFormat format, double v, double scale) {
  if (format == NumericFormat::kInt8) return std::clamp(std::nearbyint(v / scale), -127.0, 127.0);
  return RoundToFloat8E4M3(static_cast<float>(v / scale));
}

template <typename T>
double AmaxOf(const T* data, int64_t n) {
  double amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(static_cast<double>(data[i])));
  return amax;
}

// The values [0, n) of `data` (one channel or the tensor) on the scaled grid of `format`: code *
// scale, rounded to FP32 (the product is exact in double, so this is the FP32 product a runtime's
// DequantizeLinear computes).
template <typename T>
void ScaledSlice(NumericFormat format, T* data, int64_t n, double amax) {
  if (amax <= 0) amax = AmaxOf(data, n);
  if (amax == 0 || !std::isfinite(amax)) return;  // all zero stays; inf/NaN left as is
  const double scale = SliceScale(format, amax);
  for (int64_t i = 0; i < n; ++i) {
    const double v = scale == 0 ? 0.0 : Code(format, static_cast<double>(data[i]), scale) * scale;
    data[i] = static_cast<T>(static_cast<float>(v));
  }
}

// Calls fn(channel, offset of each of its values) for the slices of `t` along `axis` (or the
// whole tensor as channel 0 when axis < 0).
template <typename Fn>
void ForEachChannel(const Tensor& t, int axis, Fn fn) {
  if (axis < 0 || t.rank() == 0) {
    std::vector<int64_t> all(t.size());
    for (int64_t i = 0; i < t.size(); ++i) all[i] = i;
    fn(0, all);
    return;
  }
  int64_t inner = 1;
  for (int d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const int64_t channels = t.dim(axis);
  const int64_t outer = channels * inner == 0 ? 0 : t.size() / (channels * inner);
  std::vector<int64_t> offsets;
  for (int64_t c = 0; c < channels; ++c) {
    offsets.clear();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) offsets.push_back((o * channels + c) * inner + i);
    }
    fn(c, offsets);
  }
}

template <typename T>
void Scaled(NumericFormat format, Tensor& t, const FakeQuantOptions& options) {
  T* data = t.data<T>();
  if (!options.per_channel || t.rank() == 0) {
    ScaledSlice(format, data, t.size(), options.amax);
    return;
  }
  std::vector<T> values;
  ForEachChannel(t, options.axis, [&](int64_t, const std::vector<int64_t>& at) {
    values.clear();
    for (int64_t i : at) values.push_back(data[i]);
    ScaledSlice(format, values.data(), static_cast<int64_t>(values.size()), 0.0);
    for (size_t k = 0; k < at.size(); ++k) data[at[k]] = values[k];
  });
}

}  // namespace

std::string FormatName(NumericFormat format) {
  switch (format) {
    case NumericFormat::kFp32:
      return "fp32";
    case NumericFormat::kFp16:
      return "fp16";
    case NumericFormat::kBf16:
      return "bf16";
    case NumericFormat::kFp8E4M3:
      return "fp8-e4m3";
    case NumericFormat::kInt8:
      return "int8";
  }
  return "?";
}

absl::StatusOr<NumericFormat> ParseFormat(const std::string& name) {
  for (NumericFormat f : {NumericFormat::kFp32, NumericFormat::kFp16, NumericFormat::kBf16,
                          NumericFormat::kFp8E4M3, NumericFormat::kInt8}) {
    if (name == FormatName(f)) return f;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown numeric format \"", name,
                                                 "\" (want fp32, fp16, bf16, fp8-e4m3 or int8)"));
}

absl::StatusOr<Tensor> FakeQuantize(const Tensor& x, NumericFormat format,
                                    const FakeQuantOptions& options) {
  if (!IsFloat(x)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake quantization needs a float or double tensor (got ", x.Describe(), ")"));
  }
  const bool scaled = format == NumericFormat::kInt8 || format == NumericFormat::kFp8E4M3;
  if (scaled && options.per_channel && (options.axis < 0 || options.axis >= x.rank())) {
    return absl::InvalidArgumentError(
        absl::StrCat("per-channel axis ", options.axis, " is outside ", x.Describe()));
  }
  Tensor out = x;
  if (scaled) {
    if (out.type() == DataType::kFloat) {
      Scaled<float>(format, out, options);
    } else {
      Scaled<double>(format, out, options);
    }
    return out;
  }
  for (int64_t i = 0; i < out.size(); ++i) {
    if (out.type() == DataType::kFloat) {
      out.data<float>()[i] = static_cast<float>(RoundTo(format, out.data<float>()[i]));
    } else {
      out.data<double>()[i] = RoundTo(format, out.data<double>()[i]);
    }
  }
  return out;
}

absl::StatusOr<ScaledTensor> QuantizeScaled(const Tensor& x, NumericFormat format,
                                            const FakeQuantOptions& options) {
  if (x.type() != DataType::kFloat ||
      (format != NumericFormat::kInt8 && format != NumericFormat::kFp8E4M3)) {
    return absl::InvalidArgumentError(absl::StrCat("scaled quantization to ", FormatName(format),
                                                   " of ", x.Describe(),
                                                   ": want a float tensor "
                                                   "and int8 or fp8-e4m3"));
  }
  const bool per_channel = options.per_channel && x.rank() > 0;
  if (per_channel && (options.axis < 0 || options.axis >= x.rank())) {
    return absl::InvalidArgumentError(
        absl::StrCat("per-channel axis ", options.axis, " is outside ", x.Describe()));
  }
  ScaledTensor out{Tensor(DataType::kFloat, x.shape()), {}, per_channel ? options.axis : -1};
  const float* in = x.data<float>();
  float* codes = out.codes.data<float>();
  absl::Status status;
  ForEachChannel(x, out.axis, [&](int64_t c, const std::vector<int64_t>& at) {
    double amax = 0;
    bool finite = true;
    for (int64_t i : at) {
      finite = finite && std::isfinite(in[i]);
      amax = std::max(amax, std::fabs(static_cast<double>(in[i])));
    }
    if (!per_channel && options.amax > 0) amax = options.amax;
    if (!finite) {
      status = absl::InvalidArgumentError(
          absl::StrCat("channel ", c, " of ", x.Describe(), " holds an infinity or NaN"));
    }
    const double scale = finite && amax > 0 ? SliceScale(format, amax) : 0.0;
    for (int64_t i : at)
      codes[i] = scale == 0 ? 0.0f : static_cast<float>(Code(format, in[i], scale));
    // A slice of zeros (or one whose scale underflows) keeps scale 1 and codes 0.
    out.scales.push_back(scale == 0 ? 1.0f : static_cast<float>(scale));
  });
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<ErrorMetrics> CompareTensors(const Tensor& ref, const Tensor& test) {
  if (!IsFloat(ref) || !IsFloat(test) || ref.size() != test.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot compare ", ref.Describe(), " with ", test.Describe()));
  }
  double ref2 = 0, test2 = 0, err2 = 0, dot = 0;
  for (int64_t i = 0; i < ref.size(); ++i) {
    const double r = ref.AsDouble(i), t = test.AsDouble(i);
    ref2 += r * r;
    test2 += t * t;
    err2 += (r - t) * (r - t);
    dot += r * t;
  }
  ErrorMetrics m;
  m.sqnr_db = err2 == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(ref2 / err2);
  m.normalized_l2 = ref2 == 0 ? (err2 == 0 ? 0 : std::numeric_limits<double>::infinity())
                              : std::sqrt(err2 / ref2);
  m.cosine = ref2 == 0 && test2 == 0 ? 1 : dot / std::sqrt(ref2 * test2);
  return m;
}

}  // namespace seedance::model
