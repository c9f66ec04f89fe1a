#include "seedance/train/clip.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"
#include "seedance/model/float_formats.h"

namespace seedance::train {
namespace {

constexpr int kLanes = 8;  // independent partial sums: shorter error chains, and they vectorise

float HalfToFloat(uint16_t bits) { return model::FromFloat16(model::Float16{bits}); }
float BfloatToFloat(uint16_t bits) { return model::FromBFloat16(model::BFloat16{bits}); }

// `x` rounded to the dtype (INT8 counts as FP32), as a tensor of that dtype stores it.
float RoundTo(GradDtype dtype, float x) {
  switch (dtype) {
    case GradDtype::kFloat16:
      return model::RoundToFloat16(x);
    case GradDtype::kBFloat16:
      return model::RoundToBFloat16(x);
    case GradDtype::kFloat32:
    case GradDtype::kInt8:
      return x;
  }
  SEEDANCE_UNREACHABLE();
  return x;
}

// torch's type promotion of the stacked per-tensor norms: one dtype stays, any mix is FP32.
GradDtype PromotedDtype(std::span<const GradTensor> grads) {
  if (grads.empty()) return GradDtype::kFloat32;
  const GradDtype first = grads[0].dtype();
  for (const GradTensor& g : grads) {
    if (g.dtype() != first) return GradDtype::kFloat32;
  }
  return first == GradDtype::kInt8 ? GradDtype::kFloat32 : first;
}

// NaN-propagating max, as torch.max.
template <typename Acc>
Acc MaxNan(Acc a, Acc b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<Acc>::quiet_NaN();
  return std::max(a, b);
}

// The sum of squares (kL2) or the max |value| (kInf) of `data` converted to FP32, in Acc.
// torch 1.13's CPU Half norm: c10::Half arithmetic, so the square and every running sum round
// to FP16, one element after another.
float SumSquaresInFloat16(std::span<const uint16_t> bits) {
  float sum = 0;
  for (uint16_t b : bits) {
    const float v = HalfToFloat(b);
    sum = model::RoundToFloat16(sum + model::RoundToFloat16(v * v));
  }
  return sum;
}

template <typename Acc, typename T, typename ToFloat>
Acc ReduceValues(std::span<const T> data, NormType type, ToFloat to_float) {
  if (type == NormType::kInf) {
    Acc max_abs = 0;
    for (T x : data) max_abs = MaxNan<Acc>(max_abs, std::fabs(static_cast<Acc>(to_float(x))));
    return max_abs;
  }
  Acc lanes[kLanes] = {};
  const size_t full = data.size() - data.size() % kLanes;
  for (size_t start = 0; start < full; start += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const Acc v = static_cast<Acc>(to_float(data[start + k]));
      lanes[k] += v * v;
    }
  }
  for (size_t i = full; i < data.size(); ++i) {
    const Acc v = static_cast<Acc>(to_float(data[i]));
    lanes[i - full] += v * v;
  }
  Acc sum = 0;
  for (Acc lane : lanes) sum += lane;
  return sum;
}

// The sum of squares (kL2) or the max |value| (kInf) of INT8 codes times |scale|: the codes'
// sum is exact in int64, so only the final products round.
template <typename Acc>
Acc ReduceInt8(std::span<const int8_t> codes, float scale, NormType type) {
  int64_t sum = 0;
  int max_abs = 0;
  for (int8_t code : codes) {
    sum += int64_t{code} * code;
    max_abs = std::max(max_abs, std::abs(int{code}));
  }
  const double abs_scale = std::fabs(static_cast<double>(scale));
  if (type == NormType::kInf) return static_cast<Acc>(max_abs * abs_scale);
  const Acc norm = static_cast<Acc>(std::sqrt(static_cast<double>(sum)) * abs_scale);
  return norm * norm;
}

// The sum of squares (kL2) or the max |value| (kInf) of one tensor, in Acc.
template <typename Acc>
Acc Reduce(const GradTensor& g, NormType type, Accumulate accumulate) {
  if (accumulate == Accumulate::kTorchCpuFloat16 && type == NormType::kL2 &&
      g.dtype() == GradDtype::kFloat16) {
    return SumSquaresInFloat16(g.bits());
  }
  switch (g.dtype()) {
    case GradDtype::kFloat32:
      return ReduceValues<Acc>(std::span<const float>(g.float32()), type,
                               [](float v) { return v; });
    case GradDtype::kFloat16:
      return ReduceValues<Acc>(std::span<const uint16_t>(g.bits()), type, HalfToFloat);
    case GradDtype::kBFloat16:
      return ReduceValues<Acc>(std::span<const uint16_t>(g.bits()), type, BfloatToFloat);
    case GradDtype::kInt8:
      return ReduceInt8<Acc>(g.codes(), *g.int8_scale(), type);
  }
  SEEDANCE_UNREACHABLE();
  return 0;
}

template <typename Acc>
Acc NormOf(Acc reduced, NormType type) {
  return type == NormType::kL2 ? std::sqrt(reduced) : reduced;
}

template <typename Acc>
double TensorNormIn(const GradTensor& g, const NormOptions& options) {
  const Acc norm = NormOf(Reduce<Acc>(g, options.norm_type, options.accumulate), options.norm_type);
  if (!options.round_like_torch) return norm;
  return RoundTo(g.dtype(), static_cast<float>(norm));
}

template <typename Acc>
double GlobalNormIn(std::span<const GradTensor> grads, const NormOptions& options) {
  const NormType type = options.norm_type;
  // An all-FP16 stack of norms is an FP16 tensor: torch's CPU kernel sums it in FP16 too.
  const bool float16_sum = options.round_like_torch &&
                           options.accumulate == Accumulate::kTorchCpuFloat16 &&
                           PromotedDtype(grads) == GradDtype::kFloat16;
  Acc total = 0;
  for (const GradTensor& g : grads) {
    Acc part;
    if (options.round_like_torch) {
      // torch stacks the per-tensor norms, each rounded to its tensor's dtype.
      part = static_cast<Acc>(TensorNormIn<Acc>(g, options));
      if (type == NormType::kL2) part *= part;
    } else {
      part = Reduce<Acc>(g, type, options.accumulate);
    }
    if (type == NormType::kInf) {
      total = MaxNan(total, part);
    } else if (float16_sum) {
      total = model::RoundToFloat16(total + model::RoundToFloat16(part));
    } else {
      total += part;
    }
  }
  total = NormOf(total, type);
  if (!options.round_like_torch) return total;
  return RoundTo(PromotedDtype(grads), static_cast<float>(total));
}

// torch's `clamp(max_norm / (total_norm + 1e-6), max=1.0)` with every step rounded to `dtype`
// (Tensor.__rdiv__ is `self.reciprocal() * other`; the Python floats become `dtype` first).
float TorchClipCoef(float total, double max_norm, double eps, GradDtype dtype) {
  const float denom = RoundTo(dtype, total + RoundTo(dtype, static_cast<float>(eps)));
  const float reciprocal = RoundTo(dtype, 1.0f / denom);
  const float coef = RoundTo(dtype, reciprocal * RoundTo(dtype, static_cast<float>(max_norm)));
  return std::isnan(coef) ? coef : std::min(coef, 1.0f);
}

double PlainClipCoef(double total, const ClipOptions& options) {
  const double coef =
      options.accumulate == Accumulate::kFloat32
          ? static_cast<double>(static_cast<float>(options.max_norm) /
                                (static_cast<float>(total) + static_cast<float>(options.eps)))
          : options.max_norm / (total + options.eps);
  return std::isnan(coef) ? coef : std::min(coef, 1.0);
}

// Multiplies every value by `coef` in place, in the tensor's storage type (see clip.h).
void Scale(const GradTensor& g, float coef, bool round_coef_to_dtype) {
  const float c = round_coef_to_dtype ? RoundTo(g.dtype(), coef) : coef;
  switch (g.dtype()) {
    case GradDtype::kFloat32:
      for (float& v : g.float32()) v *= c;
      return;
    case GradDtype::kFloat16:
      for (uint16_t& b : g.bits()) b = model::ToFloat16(HalfToFloat(b) * c).bits;
      return;
    case GradDtype::kBFloat16:
      for (uint16_t& b : g.bits()) b = model::ToBFloat16(BfloatToFloat(b) * c).bits;
      return;
    case GradDtype::kInt8:
      *g.int8_scale() *= c;
      return;
  }
  SEEDANCE_UNREACHABLE();
}

absl::Status Validate(const ClipOptions& options) {
  if (!(options.max_norm > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip: max_norm is ", options.max_norm, "; expected a number > 0"));
  }
  if (!(options.eps >= 0) || !std::isfinite(options.eps)) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip: eps is ", options.eps, "; expected a finite number >= 0"));
  }
  return ParseNormType(options.norm_type).status();
}

NormOptions NormOptionsOf(const ClipOptions& options, NormType type) {
  return NormOptions{type, options.accumulate, options.round_like_torch};
}

// The norm and the coefficient, nothing written. REQUIRES: Validate(options) is OK.
ClipResult ComputeClip(std::span<const GradTensor> grads, const ClipOptions& options) {
  const NormType type = *ParseNormType(options.norm_type);
  ClipResult result;
  result.total_norm = GlobalNorm(grads, NormOptionsOf(options, type));
  result.finite = std::isfinite(result.total_norm);
  result.clip_coef = options.round_like_torch
                         ? TorchClipCoef(static_cast<float>(result.total_norm), options.max_norm,
                                         options.eps, PromotedDtype(grads))
                         : PlainClipCoef(result.total_norm, options);
  return result;
}

absl::Status CheckFinite(const ClipResult& result, const ClipOptions& options) {
  if (result.finite || !options.error_if_nonfinite) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("clip: the total norm of order ", options.norm_type, " of the gradients is ",
                   result.total_norm, "; it cannot be clipped (error_if_nonfinite is set)"));
}

void ApplyClip(std::span<const GradTensor> grads, const ClipResult& result,
               const ClipOptions& options) {
  for (const GradTensor& g : grads) {
    Scale(g, static_cast<float>(result.clip_coef), options.round_like_torch);
  }
}

}  // namespace

GradTensor GradTensor::Float32(std::span<float> values) {
  return GradTensor(GradDtype::kFloat32, values.data(), values.size(), nullptr);
}
GradTensor GradTensor::Float16(std::span<uint16_t> bits) {
  return GradTensor(GradDtype::kFloat16, bits.data(), bits.size(), nullptr);
}
GradTensor GradTensor::BFloat16(std::span<uint16_t> bits) {
  return GradTensor(GradDtype::kBFloat16, bits.data(), bits.size(), nullptr);
}
GradTensor GradTensor::Int8(std::span<int8_t> codes, float* scale) {
  SEEDANCE_CHECK(scale != nullptr) << "an INT8 gradient needs its scale";
  return GradTensor(GradDtype::kInt8, codes.data(), codes.size(), scale);
}

float GradTensor::Value(size_t i) const {
  SEEDANCE_CHECK(i < size_) << "gradient element " << i << " of " << size_;
  switch (dtype_) {
    case GradDtype::kFloat32:
      return static_cast<const float*>(data_)[i];
    case GradDtype::kFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(data_)[i]);
    case GradDtype::kBFloat16:
      return BfloatToFloat(static_cast<const uint16_t*>(data_)[i]);
    case GradDtype::kInt8:
      return static_cast<float>(static_cast<const int8_t*>(data_)[i]) * *scale_;
  }
  SEEDANCE_UNREACHABLE();
  return 0;
}

std::span<float> GradTensor::float32() const {
  SEEDANCE_CHECK(dtype_ == GradDtype::kFloat32) << "float32() of a non-FP32 gradient";
  return {static_cast<float*>(data_), size_};
}
std::span<uint16_t> GradTensor::bits() const {
  SEEDANCE_CHECK(dtype_ == GradDtype::kFloat16 || dtype_ == GradDtype::kBFloat16)
      << "bits() of a gradient that is neither FP16 nor BF16";
  return {static_cast<uint16_t*>(data_), size_};
}
std::span<int8_t> GradTensor::codes() const {
  SEEDANCE_CHECK(dtype_ == GradDtype::kInt8) << "codes() of a non-INT8 gradient";
  return {static_cast<int8_t*>(data_), size_};
}
float* GradTensor::int8_scale() const {
  SEEDANCE_CHECK(dtype_ == GradDtype::kInt8) << "int8_scale() of a non-INT8 gradient";
  return scale_;
}

absl::StatusOr<NormType> ParseNormType(double norm_type) {
  if (norm_type == 2.0) return NormType::kL2;
  if (norm_type == std::numeric_limits<double>::infinity()) return NormType::kInf;
  return absl::InvalidArgumentError(
      absl::StrCat("clip: norm_type is ", norm_type, "; expected 2 or inf"));
}

double TensorNorm(const GradTensor& grad, const NormOptions& options) {
  return options.accumulate == Accumulate::kFloat64 ? TensorNormIn<double>(grad, options)
                                                    : TensorNormIn<float>(grad, options);
}

double GlobalNorm(std::span<const GradTensor> grads, const NormOptions& options) {
  return options.accumulate == Accumulate::kFloat64 ? GlobalNormIn<double>(grads, options)
                                                    : GlobalNormIn<float>(grads, options);
}

absl::StatusOr<ClipResult> ClipGradNorm(std::span<const GradTensor> grads,
                                        const ClipOptions& options) {
  if (absl::Status status = Validate(options); !status.ok()) return status;
  const ClipResult result = ComputeClip(grads, options);
  if (absl::Status status = CheckFinite(result, options); !status.ok()) return status;
  ApplyClip(grads, result, options);
  return result;
}

absl::StatusOr<std::vector<ClipResult>> ClipGradNormGroups(
    std::span<const std::vector<GradTensor>> groups, ClipMode mode, const ClipOptions& options) {
  if (absl::Status status = Validate(options); !status.ok()) return status;
  std::vector<ClipResult> results;
  if (mode == ClipMode::kGlobal) {
    std::vector<GradTensor> all;
    for (const std::vector<GradTensor>& group : groups)
      all.insert(all.end(), group.begin(), group.end());
    const ClipResult result = ComputeClip(all, options);
    if (absl::Status status = CheckFinite(result, options); !status.ok()) return status;
    ApplyClip(all, result, options);
    results.assign(groups.size(), result);
    return results;
  }
  for (const std::vector<GradTensor>& group : groups) {
    results.push_back(ComputeClip(group, options));
    if (absl::Status status = CheckFinite(results.back(), options); !status.ok()) return status;
  }
  for (size_t i = 0; i < groups.size(); ++i) ApplyClip(groups[i], results[i], options);
  return results;
}

bool UnscaleGrads(std::span<const GradTensor> grads, float loss_scale) {
  SEEDANCE_CHECK(std::isfinite(loss_scale) && loss_scale > 0)
      << "loss scale " << loss_scale << " must be finite and > 0";
  // GradScaler: inv_scale = self._scale.double().reciprocal().float().
  const float inv = static_cast<float>(1.0 / static_cast<double>(loss_scale));
  bool found_inf = false;
  for (const GradTensor& g : grads) {
    if (g.dtype() == GradDtype::kInt8) {
      found_inf |= !std::isfinite(*g.int8_scale());
    } else if (g.dtype() == GradDtype::kFloat32) {
      for (float v : g.float32()) found_inf |= !std::isfinite(v);
    } else {
      // FP16 and BF16 are non-finite exactly when their exponent bits are all ones.
      const uint16_t exponent = g.dtype() == GradDtype::kFloat16 ? 0x7c00 : 0x7f80;
      for (uint16_t b : g.bits()) found_inf |= (b & exponent) == exponent;
    }
    Scale(g, inv, /*round_coef_to_dtype=*/false);
  }
  return found_inf;
}

LossScaler::LossScaler() : LossScaler(LossScalerOptions{}) {}

absl::StatusOr<LossScaler> LossScaler::Create(const LossScalerOptions& options) {
  if (!(options.init_scale > 0) || !std::isfinite(options.init_scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss scaler: init_scale is ", options.init_scale, "; expected a finite number > 0"));
  }
  if (!(options.growth_factor > 1) || !std::isfinite(options.growth_factor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss scaler: growth_factor is ", options.growth_factor, "; expected a finite number > 1"));
  }
  if (!(options.backoff_factor > 0 && options.backoff_factor < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss scaler: backoff_factor is ", options.backoff_factor, "; expected one in (0, 1)"));
  }
  if (options.growth_interval < 1) {
    return absl::InvalidArgumentError(absl::StrCat("loss scaler: growth_interval is ",
                                                   options.growth_interval, "; expected >= 1"));
  }
  return LossScaler(options);
}

ScaleUpdate LossScaler::Update(bool found_inf) {
  // torch's _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu): the FP32 scale times
  // a double factor, stored back as FP32.
  if (found_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * options_.backoff_factor);
    growth_tracker_ = 0;
    return ScaleUpdate{true, scale_};
  }
  const int successful = growth_tracker_ + 1;
  if (successful == options_.growth_interval) {
    const float grown = static_cast<float>(static_cast<double>(scale_) * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    growth_tracker_ = successful;
  }
  return ScaleUpdate{false, scale_};
}

}  // namespace seedance::train
