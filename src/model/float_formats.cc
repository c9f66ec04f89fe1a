#include "seedance/model/float_formats.h"

#include <bit>
#include <cmath>

namespace seedance::model {
namespace {

constexpr uint32_t kSignMask = 0x80000000u;
constexpr uint32_t kFloatInfinity = 0xffu << 23;

}  // namespace

// FP32 -> FP16 with round to nearest even. Normal results: rebias the exponent and add the
// rounding bias (0xfff plus the lowest kept bit, so ties go to even) before dropping 13 bits; a
// carry out of the mantissa moves to the next exponent, up to infinity at 65520. Subnormal
// results: adding 0.5, whose FP32 ulp (2^-24) is FP16's smallest subnormal, lets the FPU's own
// round-to-nearest-even place the bits at the bottom of the mantissa.
Float16 ToFloat16(float value) {
  uint32_t u = std::bit_cast<uint32_t>(value);
  const uint32_t sign = u & kSignMask;
  u ^= sign;
  uint32_t out;
  if (u >= (127u + 16u) << 23) {  // |value| >= 65536, infinity or NaN
    out = u > kFloatInfinity ? 0x7e00u : 0x7c00u;
  } else if (u < (113u << 23)) {  // below FP16's smallest normal, 2^-14
    constexpr uint32_t kMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    const float shifted = std::bit_cast<float>(u) + std::bit_cast<float>(kMagic);
    out = std::bit_cast<uint32_t>(shifted) - kMagic;
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    out = u >> 13;
  }
  return Float16{static_cast<uint16_t>(out | (sign >> 16))};
}

float FromFloat16(Float16 value) {
  const uint32_t sign = static_cast<uint32_t>(value.bits & 0x8000u) << 16;
  const uint32_t exponent = (value.bits >> 10) & 0x1fu;
  const uint32_t mantissa = value.bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | kFloatInfinity | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

BFloat16 ToBFloat16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & ~kSignMask) > kFloatInfinity) {  // NaN: keep it a quiet NaN
    return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  }
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>(rounded >> 16)};
}

float FromBFloat16(BFloat16 value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value.bits) << 16);
}

// E4M3FN: bias 7, no infinities, 0x7f/0xff NaN, largest finite 0x7e = 448.
uint8_t ToFloat8E4M3(float value) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return static_cast<uint8_t>(sign | 0x7f);
  const float a = std::fabs(value);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7e);
  if (a < 0.015625f) {  // 2^-6, the smallest normal: multiples of 2^-9
    // Exact scaling, then the default rounding mode (nearest even); 8 becomes 0x08, 2^-6.
    const float q = std::nearbyint(a * 512.0f);
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(q));
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exponent = e - 1;               // a = (2m) * 2^exponent, 2m in [1, 2)
  int q = static_cast<int>(std::nearbyint((2.0f * m - 1.0f) * 8.0f));
  if (q == 8) {
    q = 0;
    ++exponent;
  }
  const int bits = ((exponent + 7) << 3) | q;
  return static_cast<uint8_t>(sign | (bits > 0x7e ? 0x7e : bits));
}

float FromFloat8E4M3(uint8_t bits) {
  const bool negative = (bits & 0x80) != 0;
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  float magnitude;
  if (exponent == 0xf && mantissa == 0x7) {
    magnitude = std::nanf("");
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace seedance::model
