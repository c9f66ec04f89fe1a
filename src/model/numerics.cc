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

// One value on the scaled grid of `format` (INT8 or FP8), scale = amax / the format's largest.
double OnGrid(NumericFormat format, double v, double scale) {
  if (format == NumericFormat::kInt8) {
    return std::clamp(std::nearbyint(v / scale), -127.0, 127.0) * scale;
  }
  return RoundToFloat8E4M3(static_cast<float>(v / scale)) * scale;
}

// The values [0, n) of `data` (one channel or the tensor) on the scaled grid of `format`.
template <typename T>
void ScaledSlice(NumericFormat format, T* data, int64_t n, double amax) {
  if (amax <= 0) {
    for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(static_cast<double>(data[i])));
  }
  if (amax == 0 || !std::isfinite(amax)) return;  // all zero stays; inf/NaN left as is
  const double scale = amax / (format == NumericFormat::kInt8 ? 127.0 : 448.0);
  for (int64_t i = 0; i < n; ++i) {
    data[i] = static_cast<T>(OnGrid(format, static_cast<double>(data[i]), scale));
  }
}

template <typename T>
void Scaled(NumericFormat format, Tensor& t, const FakeQuantOptions& options) {
  T* data = t.data<T>();
  if (!options.per_channel || t.rank() == 0) {
    ScaledSlice(format, data, t.size(), options.amax);
    return;
  }
  // Channel c of axis a: outer blocks of (dim(a) * inner) values, channel c at offset c * inner.
  int64_t inner = 1;
  for (int d = options.axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const int64_t channels = t.dim(options.axis);
  const int64_t outer = channels * inner == 0 ? 0 : t.size() / (channels * inner);
  for (int64_t c = 0; c < channels; ++c) {
    // Gather the channel's values into one strided walk per outer block.
    std::vector<T> values;
    for (int64_t o = 0; o < outer; ++o) {
      const T* base = data + (o * channels + c) * inner;
      values.insert(values.end(), base, base + inner);
    }
    ScaledSlice(format, values.data(), static_cast<int64_t>(values.size()), 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      std::copy(values.begin() + o * inner, values.begin() + (o + 1) * inner,
                data + (o * channels + c) * inner);
    }
  }
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
