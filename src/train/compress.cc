#include "seedance/train/compress.h"

#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "seedance/base/check.h"
#include "seedance/model/float_formats.h"

namespace seedance::train {
namespace {

constexpr size_t kBlock = 1024;  // a multiple of 8: blocks start on a byte

// Sums |p| (or p^2) of p = v + e (e empty: p = v) in FP64 over blocks of kBlock elements, each
// summed in FP32 in 8 lanes (lane k takes elements k, k + 8, ...; then the lanes in order): the
// inner loop vectorises, and a block's FP32 partial loses nothing that matters at FP32 output
// precision.
double SumAbsOrSquares(std::span<const float> v, std::span<const float> e, bool squares) {
  double total = 0;
  const bool add = !e.empty();
  for (size_t start = 0; start < v.size(); start += kBlock) {
    const size_t end = std::min(v.size(), start + kBlock);
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = start;
    for (; i + 8 <= end; i += 8) {
      for (size_t k = 0; k < 8; ++k) {
        const float x = add ? v[i + k] + e[i + k] : v[i + k];
        lane[k] += squares ? x * x : std::fabs(x);
      }
    }
    float partial = 0;
    for (int k = 0; k < 8; ++k) partial += lane[k];
    for (; i < end; ++i) {
      const float x = add ? v[i] + e[i] : v[i];
      partial += squares ? x * x : std::fabs(x);
    }
    total += partial;
  }
  return total;
}

// The sign bits of 8 values (bit k set when x[k] >= 0; -0 counts as +0).
inline uint8_t SignByte(const float* x) {
#if defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps();
  const int lo = _mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(x), zero));
  const int hi = _mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(x + 4), zero));
  return static_cast<uint8_t>(lo | (hi << 4));
#else
  uint8_t byte = 0;
  for (int k = 0; k < 8; ++k) byte |= static_cast<uint8_t>(x[k] >= 0.0f) << k;
  return byte;
#endif
}

// For each byte value, the FP32 sign-bit masks of its 8 elements (0 for a set bit: +scale;
// 0x80000000 for a clear one: -scale).
struct SignMasks {
  alignas(16) uint32_t mask[256][8];
  SignMasks() {
    for (int b = 0; b < 256; ++b) {
      for (int k = 0; k < 8; ++k) mask[b][k] = ((b >> k) & 1) ? 0u : 0x80000000u;
    }
  }
};
const SignMasks kSignMasks;

// out[0..8) = (acc ? out : 0) + (+-scale by the bits of `byte`).
inline void ExpandByte(uint8_t byte, float scale, float* out, bool accumulate) {
#if defined(__SSE2__)
  const __m128 s = _mm_set1_ps(scale);
  const __m128 lo =
      _mm_xor_ps(s, _mm_load_ps(reinterpret_cast<const float*>(kSignMasks.mask[byte])));
  const __m128 hi =
      _mm_xor_ps(s, _mm_load_ps(reinterpret_cast<const float*>(kSignMasks.mask[byte] + 4)));
  if (accumulate) {
    _mm_storeu_ps(out, _mm_add_ps(_mm_loadu_ps(out), lo));
    _mm_storeu_ps(out + 4, _mm_add_ps(_mm_loadu_ps(out + 4), hi));
  } else {
    _mm_storeu_ps(out, lo);
    _mm_storeu_ps(out + 4, hi);
  }
#else
  for (int k = 0; k < 8; ++k) {
    const float value = ((byte >> k) & 1) ? scale : -scale;
    out[k] = accumulate ? out[k] + value : value;
  }
#endif
}

// The sign byte of p = v + e for 8 elements, with e replaced by p - (+-scale).
inline uint8_t CompressByte(const float* v, float* e, float scale) {
#if defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps();
  const __m128 s = _mm_set1_ps(scale);
  const __m128 sign = _mm_set1_ps(-0.0f);
  const __m128 p0 = _mm_add_ps(_mm_loadu_ps(v), _mm_loadu_ps(e));
  const __m128 p1 = _mm_add_ps(_mm_loadu_ps(v + 4), _mm_loadu_ps(e + 4));
  const __m128 m0 = _mm_cmpge_ps(p0, zero);
  const __m128 m1 = _mm_cmpge_ps(p1, zero);
  // +scale where p >= 0, else -scale: the sign bit set where the mask is clear.
  _mm_storeu_ps(e, _mm_sub_ps(p0, _mm_xor_ps(s, _mm_andnot_ps(m0, sign))));
  _mm_storeu_ps(e + 4, _mm_sub_ps(p1, _mm_xor_ps(s, _mm_andnot_ps(m1, sign))));
  return static_cast<uint8_t>(_mm_movemask_ps(m0) | (_mm_movemask_ps(m1) << 4));
#else
  uint8_t byte = 0;
  for (int k = 0; k < 8; ++k) {
    const float x = v[k] + e[k];
    byte |= static_cast<uint8_t>(x >= 0.0f) << k;
    e[k] = x - (x >= 0.0f ? scale : -scale);
  }
  return byte;
#endif
}

void Expand(std::span<const uint8_t> bits, float scale, std::span<float> out, bool accumulate) {
  SEEDANCE_CHECK(bits.size() == PackedBytes(out.size()));
  const size_t full = out.size() / 8;
  for (size_t b = 0; b < full; ++b) ExpandByte(bits[b], scale, out.data() + 8 * b, accumulate);
  for (size_t i = 8 * full; i < out.size(); ++i) {
    const float value = ((bits[i >> 3] >> (i & 7)) & 1) ? scale : -scale;
    out[i] = accumulate ? out[i] + value : value;
  }
}

float ScaleFromSum(double sum, size_t d, SignScale scale) {
  if (d == 0) return 0;
  if (scale == SignScale::kL1Mean) return static_cast<float>(sum / static_cast<double>(d));
  return static_cast<float>(std::sqrt(sum / static_cast<double>(d)));
}

}  // namespace

float SignScaleOf(std::span<const float> v, SignScale scale) {
  return ScaleFromSum(SumAbsOrSquares(v, {}, scale == SignScale::kL2Rms), v.size(), scale);
}

void PackSigns(std::span<const float> v, std::span<uint8_t> bits) {
  SEEDANCE_CHECK(bits.size() == PackedBytes(v.size()));
  const size_t full = v.size() / 8;
  for (size_t b = 0; b < full; ++b) bits[b] = SignByte(v.data() + 8 * b);
  if (full < bits.size()) {
    uint8_t byte = 0;
    for (size_t i = 8 * full; i < v.size(); ++i) {
      byte |= static_cast<uint8_t>(v[i] >= 0.0f) << (i - 8 * full);
    }
    bits[full] = byte;
  }
}

void AddUnpackedSigns(std::span<const uint8_t> bits, float scale, std::span<float> acc) {
  Expand(bits, scale, acc, true);
}

void UnpackSigns(std::span<const uint8_t> bits, float scale, std::span<float> out) {
  Expand(bits, scale, out, false);
}

float SignScaleOfSum(std::span<const float> v, std::span<const float> error, SignScale scale) {
  SEEDANCE_CHECK(error.empty() || error.size() == v.size());
  return ScaleFromSum(SumAbsOrSquares(v, error, scale == SignScale::kL2Rms), v.size(), scale);
}

void CompressSignWithScale(std::span<const float> v, float scale, std::span<float> error,
                           std::span<uint8_t> bits) {
  SEEDANCE_CHECK(error.empty() || error.size() == v.size());
  SEEDANCE_CHECK(bits.size() == PackedBytes(v.size()));
  SEEDANCE_CHECK(std::isfinite(scale));
  if (error.empty()) {
    PackSigns(v, bits);
    return;
  }
  // One pass: p = v + e, its sign bits, e = p - (+-scale), 8 elements (one byte) at a time.
  const size_t full = v.size() / 8;
  for (size_t b = 0; b < full; ++b) {
    bits[b] = CompressByte(v.data() + 8 * b, error.data() + 8 * b, scale);
  }
  if (full < bits.size()) {
    uint8_t byte = 0;
    for (size_t i = 8 * full; i < v.size(); ++i) {
      const float x = v[i] + error[i];
      byte |= static_cast<uint8_t>(x >= 0.0f) << (i - 8 * full);
      error[i] = x - (x >= 0.0f ? scale : -scale);
    }
    bits[full] = byte;
  }
}

SignCode CompressSign(std::span<const float> v, SignScale scale, std::span<float> error,
                      std::span<uint8_t> bits) {
  SignCode code;
  code.scale = SignScaleOfSum(v, error, scale);
  code.finite = std::isfinite(code.scale);
  if (code.finite) CompressSignWithScale(v, code.scale, error, bits);
  return code;
}

namespace {

// FP16 conversions by the F16C instructions where the CPU has them (run-time check): IEEE round
// to nearest even, overflow to infinity, subnormals kept: the same bits as model::ToFloat16.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SEEDANCE_TRAIN_F16C 1
__attribute__((target("avx,f16c"))) void ToHalfF16c(const float* v, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(v + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = model::ToFloat16(v[i]).bits;
}

__attribute__((target("avx,f16c"))) void FromHalfF16c(const uint16_t* v, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = model::FromFloat16(model::Float16{v[i]});
}

__attribute__((target("avx,f16c"))) void AddHalfF16c(const uint16_t* a, uint16_t* b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i),
                     _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) {
    b[i] = model::ToFloat16(model::FromFloat16(model::Float16{a[i]}) +
                            model::FromFloat16(model::Float16{b[i]}))
               .bits;
  }
}

// CPUID leaf 1: ECX bit 29 F16C, bit 28 AVX, bit 27 OSXSAVE; and the OS saves the YMM registers
// (XCR0 bits 1 and 2). (clang 14's __builtin_cpu_supports knows no "f16c".)
bool HasF16c() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
    const bool cpu = (c & (1u << 29)) && (c & (1u << 28)) && (c & (1u << 27));
    if (!cpu) return false;
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
  }();
  return has;
}
#endif

}  // namespace

void CastToFloat16(std::span<const float> v, std::span<uint16_t> out) {
  SEEDANCE_CHECK(out.size() == v.size());
#if defined(SEEDANCE_TRAIN_F16C)
  if (HasF16c()) return ToHalfF16c(v.data(), out.data(), v.size());
#endif
  for (size_t i = 0; i < v.size(); ++i) out[i] = model::ToFloat16(v[i]).bits;
}

void CastFromFloat16(std::span<const uint16_t> v, std::span<float> out) {
  SEEDANCE_CHECK(out.size() == v.size());
#if defined(SEEDANCE_TRAIN_F16C)
  if (HasF16c()) return FromHalfF16c(v.data(), out.data(), v.size());
#endif
  for (size_t i = 0; i < v.size(); ++i) out[i] = model::FromFloat16(model::Float16{v[i]});
}

void AddFloat16(std::span<const uint16_t> a, std::span<uint16_t> b) {
  SEEDANCE_CHECK(a.size() == b.size());
#if defined(SEEDANCE_TRAIN_F16C)
  if (HasF16c()) return AddHalfF16c(a.data(), b.data(), a.size());
#endif
  for (size_t i = 0; i < a.size(); ++i) {
    b[i] = model::ToFloat16(model::FromFloat16(model::Float16{a[i]}) +
                            model::FromFloat16(model::Float16{b[i]}))
               .bits;
  }
}

void CastToBFloat16(std::span<const float> v, std::span<uint16_t> out) {
  SEEDANCE_CHECK(out.size() == v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = model::ToBFloat16(v[i]).bits;
}

void CastFromBFloat16(std::span<const uint16_t> v, std::span<float> out) {
  SEEDANCE_CHECK(out.size() == v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = model::FromBFloat16(model::BFloat16{v[i]});
}

}  // namespace seedance::train
