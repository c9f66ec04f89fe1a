// Conversions between FP32 and the narrow floating-point formats the executor emulates, with
// IEEE rounding: round to nearest, ties to even; FP16 overflows to infinity; NaN stays NaN.
//
//   FP16 (IEEE binary16): 1 sign, 5 exponent, 10 mantissa bits, subnormals, max 65504.
//   BF16 (bfloat16): the top 16 bits of an FP32 (1, 8, 7), max ~3.39e38.
//   FP8 E4M3 (OCP FP8 "E4M3FN"): 1, 4, 3, no infinities, max 448; overflow saturates to +-448
//     (the OCP spec's "saturate" mode, which NVIDIA's Transformer Engine uses), NaN stays NaN.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "seedance/model/tensor.h"

namespace seedance::model {

Float16 ToFloat16(float value);
float FromFloat16(Float16 value);
BFloat16 ToBFloat16(float value);
float FromBFloat16(BFloat16 value);
uint8_t ToFloat8E4M3(float value);
float FromFloat8E4M3(uint8_t bits);

// `value` rounded to the format and back (what storing it in that format keeps).
inline float RoundToFloat16(float value) { return FromFloat16(ToFloat16(value)); }
inline float RoundToBFloat16(float value) { return FromBFloat16(ToBFloat16(value)); }
inline float RoundToFloat8E4M3(float value) { return FromFloat8E4M3(ToFloat8E4M3(value)); }

}  // namespace seedance::model
