// Numeric formats a layer's weights or activations can be stored in, their exact emulation on FP32
// tensors, and the error metrics of PyTorch's Numeric Suite between a reference and a test tensor.
//
// Emulation rounds each value to the format and back ("fake quantization"): FP16 and BF16 round
// to nearest even (FP16 overflows to infinity); FP8-E4M3 is scaled, as FP8 tensors are in
// practice (NVIDIA Transformer Engine): x / s rounded to E4M3 (nearest even, saturating at 448)
// times s, s = amax / 448; INT8 is symmetric, s = amax / 127, x / s rounded to nearest even and
// clamped to [-127, 127] (so zero is exact and the grid is symmetric). amax is max|x| over the
// tensor or one channel, or a calibrated value given in the options. The scale s is rounded to
// FP32 and the result is the FP32 product code * s, so a QDQ model (DequantizeLinear: FP32 scale,
// FP32 product) computes exactly the emulated values.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/tensor.h"

namespace seedance::model {

enum class NumericFormat { kFp32, kFp16, kBf16, kFp8E4M3, kInt8 };

// "fp32", "fp16", "bf16", "fp8-e4m3", "int8".
std::string FormatName(NumericFormat format);
absl::StatusOr<NumericFormat> ParseFormat(const std::string& name);

struct FakeQuantOptions {
  // INT8 and FP8: one scale per slice along `axis` (per output channel: axis 0 of a Conv weight,
  // axis 1 of a MatMul weight [in, out]) instead of one for the tensor.
  bool per_channel = false;
  int axis = 0;
  // INT8 and FP8, per tensor: the range to scale to (a calibrated activation range); 0 = max|x|.
  double amax = 0;
};

// `x` (float or double) rounded to `format` and back, same type and shape. InvalidArgument for
// another element type or an axis outside the tensor's rank.
absl::StatusOr<Tensor> FakeQuantize(const Tensor& x, NumericFormat format,
                                    const FakeQuantOptions& options = {});

// INT8 and FP8 as a QDQ model stores them: codes and FP32 scales, value = code * scale (the FP32
// product, which is exactly what FakeQuantize gives for the same options). Codes are held as
// floats: integers in [-127, 127] for INT8, E4M3 values for FP8. A slice of zeros has scale 1.
struct ScaledTensor {
  Tensor codes;               // float, the shape of the input
  std::vector<float> scales;  // one per channel along `axis`, or one
  int axis = -1;              // -1: one scale for the tensor
};
// InvalidArgument unless `x` is float and `format` INT8 or FP8, for a bad axis, and for a slice
// holding an infinity or NaN (its scale would be meaningless).
absl::StatusOr<ScaledTensor> QuantizeScaled(const Tensor& x, NumericFormat format,
                                            const FakeQuantOptions& options = {});

// Error of `test` against `ref` (same element count; float or double), accumulated in double:
//   sqnr_db       = 10 log10(sum ref^2 / sum (ref - test)^2)   (+inf when equal)
//   normalized_l2 = ||ref - test||_2 / ||ref||_2
//   cosine        = <ref, test> / (||ref|| ||test||)           (1 when both are zero)
struct ErrorMetrics {
  double sqnr_db = 0;
  double normalized_l2 = 0;
  double cosine = 1;
};
absl::StatusOr<ErrorMetrics> CompareTensors(const Tensor& ref, const Tensor& test);

}  // namespace seedance::model
