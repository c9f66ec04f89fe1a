// Mixed-precision gradient clipping (MPGC) and loss scaling for seedance_train
// (docs/training.md): the global norm of gradients stored as FP32, FP16, BF16 or INT8 with a
// per-tensor scale, clipping in place in each tensor's own storage type, and the dynamic loss
// scaler of PyTorch's torch.cuda.amp.GradScaler.
//
// Reference semantics: torch 1.13's torch.nn.utils.clip_grad_norm_(grads, max_norm, norm_type,
// error_if_nonfinite), with its dtypes. With `round_like_torch` (the default) the results equal
// torch's on the same gradients up to the order of FP32 summation inside one tensor's norm:
//   per-tensor norm  n_i = norm(g_i), accumulated in FP32 (torch on CUDA; see Accumulate for
//                    torch's CPU FP16 kernel), rounded to g_i's dtype
//                    (norm_type inf: max |g_i|, exact);
//   total norm       T = norm(n_1..n_k), rounded to the promoted dtype D of all tensors (all FP16:
//                    FP16; all BF16: BF16; any mix, or any FP32 or INT8 tensor: FP32);
//   coefficient      c = min(1, D(D(1 / D(T + D(1e-6))) * D(max_norm))), torch's
//                    `max_norm / (total_norm + 1e-6)` (Tensor.__rdiv__ is reciprocal() * other)
//                    and clamp(max=1), every operation rounded to D; NaN stays NaN;
//   every gradient   g = d(g * d(c)) for a tensor of dtype d: torch's `g.mul_(coef)` rounds the
//                    coefficient to the gradient's dtype, then rounds the product once.
// The multiplication happens even when c == 1 (torch 1.13 multiplies by the clamped coefficient
// unconditionally), so a non-finite total norm (an inf or NaN gradient) gives c = 0 or NaN and
// turns every gradient into 0 or NaN, as torch does with error_if_nonfinite=False.
// Note torch's rounding of norms to FP16 means finite FP16 gradients whose norm exceeds 65504 get
// an infinite norm and are zeroed; `round_like_torch = false` keeps every norm in the
// accumulation type (FP32 or FP64) and applies c with a single rounding into storage instead.
//
// INT8 gradients: value = code * scale. Their norm is computed exactly from the integer codes
// (sum of code^2 in int64) times |scale|, and counts as FP32 in the promotion. Clipping and
// unscaling multiply the per-tensor scale (scale = float(scale * c)) and leave the codes alone:
// no requantisation error; each value changes by one FP32 rounding, as an FP32 gradient would.
// PyTorch has no INT8 gradients, so this part has no torch reference.
//
// Loss scaling follows GradScaler: Unscale multiplies by inv = float(1 / double(scale)) (FP16 and
// BF16 values in FP32, rounded once) and reports whether any input value was inf or NaN; the
// LossScaler state machine is torch's `_amp_update_scale_`.
//
// Thread-safety: the functions are pure functions of their arguments and of the memory the views
// point at; concurrent calls on disjoint gradients are safe. A LossScaler is a value one thread
// uses at a time. GradTensor is a shallow view: a const GradTensor still allows writing its data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::train {

enum class GradDtype { kFloat32, kFloat16, kBFloat16, kInt8 };

// A non-owning view of one gradient tensor in its storage type.
class GradTensor {
 public:
  static GradTensor Float32(std::span<float> values);
  static GradTensor Float16(std::span<uint16_t> bits);   // IEEE binary16 bits
  static GradTensor BFloat16(std::span<uint16_t> bits);  // bfloat16 bits
  // value i = codes[i] * *scale. REQUIRES: scale != nullptr.
  static GradTensor Int8(std::span<int8_t> codes, float* scale);

  GradDtype dtype() const { return dtype_; }
  size_t size() const { return size_; }
  // Element i as FP32 (exact for every storage type but INT8, which is code * scale rounded).
  // REQUIRES: i < size().
  float Value(size_t i) const;

  // The storage. Each REQUIRES the matching dtype().
  std::span<float> float32() const;
  std::span<uint16_t> bits() const;  // kFloat16 or kBFloat16
  std::span<int8_t> codes() const;
  float* int8_scale() const;

 private:
  GradTensor(GradDtype dtype, void* data, size_t size, float* scale)
      : dtype_(dtype), data_(data), size_(size), scale_(scale) {}
  GradDtype dtype_;
  void* data_;
  size_t size_;
  float* scale_;  // kInt8 only
};

enum class NormType { kL2, kInf };
// How sums of squares accumulate (max-abs, kInf, is exact in every mode).
enum class Accumulate {
  kFloat32,  // FP32 for every dtype: torch's CUDA kernels (and its CPU kernels but for FP16)
  kFloat64,  // FP64
  // torch 1.13's CPU kernels, for comparisons with a CPU torch: FP16 tensors (and an all-FP16
  // stack of norms) accumulate in FP16, one element at a time, each square and each running sum
  // rounded to FP16 (so their norm overflows past sqrt(65504) ~ 256); other dtypes in FP32.
  kTorchCpuFloat16,
};

// PyTorch's `norm_type` argument: 2 or +inf; anything else is InvalidArgument.
[[nodiscard]] absl::StatusOr<NormType> ParseNormType(double norm_type);

struct NormOptions {
  NormType norm_type = NormType::kL2;
  Accumulate accumulate = Accumulate::kFloat32;
  // Round per-tensor norms to their tensor's dtype and the total to the promoted dtype (above).
  bool round_like_torch = true;
};

// The norm of one tensor (NaN if it holds a NaN; inf if it holds an inf and no NaN).
double TensorNorm(const GradTensor& grad, const NormOptions& options);
// The norm of all tensors as one vector (0 for none), as clip_grad_norm_ computes it.
double GlobalNorm(std::span<const GradTensor> grads, const NormOptions& options);

struct ClipOptions {
  double max_norm = 1.0;   // > 0, not NaN (infinity allowed)
  double norm_type = 2.0;  // 2 or +inf (torch's other p-norms are not supported)
  Accumulate accumulate = Accumulate::kFloat32;
  bool round_like_torch = true;
  // As torch: a non-finite total norm is an error (FailedPrecondition) and nothing is written.
  bool error_if_nonfinite = false;
  double eps = 1e-6;  // torch's `total_norm + 1e-6`
};

struct ClipResult {
  double total_norm = 0;  // in the promoted dtype (round_like_torch) or the accumulation type
  double clip_coef = 1;   // min(1, max_norm / (total_norm + eps)) as applied before the
                          // per-tensor rounding; NaN when total_norm is NaN
  bool finite = true;     // total_norm is finite
};

// clip_grad_norm_: scales every gradient in place by the clamped coefficient. InvalidArgument for
// a bad max_norm or norm_type; FailedPrecondition for a non-finite norm with error_if_nonfinite.
[[nodiscard]] absl::StatusOr<ClipResult> ClipGradNorm(std::span<const GradTensor> grads,
                                                      const ClipOptions& options);

enum class ClipMode {
  kGlobal,    // one norm over every group's tensors; every group gets the same result
  kPerGroup,  // each group clipped by its own norm (torch: one clip_grad_norm_ call per group)
};

// One result per group. Options are validated before anything is written.
[[nodiscard]] absl::StatusOr<std::vector<ClipResult>> ClipGradNormGroups(
    std::span<const std::vector<GradTensor>> groups, ClipMode mode, const ClipOptions& options);

// GradScaler.unscale_: every value *= float(1 / double(loss_scale)), in the tensor's storage type
// (INT8: its scale). Returns true when an input value (or an INT8 scale) was inf or NaN; the
// gradients are unscaled either way. REQUIRES: loss_scale finite and > 0.
bool UnscaleGrads(std::span<const GradTensor> grads, float loss_scale);

// torch.cuda.amp.GradScaler's defaults.
struct LossScalerOptions {
  float init_scale = 65536.0f;  // 2^16
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  int growth_interval = 2000;   // steps without inf/NaN before the scale grows; >= 1
};

// What one LossScaler::Update decided.
struct ScaleUpdate {
  bool step_skipped = false;  // inf/NaN was found: the optimizer step must not run
  float scale = 0;            // the scale for the next step
};

// GradScaler's dynamic loss scale (torch's `_amp_update_scale_`). On a step with inf/NaN:
// scale *= backoff_factor, growth tracker = 0, the step is skipped. Otherwise the tracker counts
// up and on reaching growth_interval the scale grows by growth_factor (only if the result is
// finite) and the tracker returns to 0. The scale is FP32; factors multiply in FP64, rounded.
class LossScaler {
 public:
  // InvalidArgument for options outside the ranges above.
  [[nodiscard]] static absl::StatusOr<LossScaler> Create(const LossScalerOptions& options);
  LossScaler();  // the defaults

  float scale() const { return scale_; }
  int growth_tracker() const { return growth_tracker_; }
  const LossScalerOptions& options() const { return options_; }

  // The loss to backpropagate: loss * scale.
  float ScaleLoss(float loss) const { return loss * scale_; }
  // UnscaleGrads with the current scale.
  bool Unscale(std::span<const GradTensor> grads) const { return UnscaleGrads(grads, scale_); }
  // Ends a step whose gradients had (found_inf) or had not inf/NaN.
  ScaleUpdate Update(bool found_inf);

 private:
  explicit LossScaler(const LossScalerOptions& options)
      : options_(options), scale_(options.init_scale) {}
  LossScalerOptions options_;
  float scale_;
  int growth_tracker_ = 0;
};

}  // namespace seedance::train
