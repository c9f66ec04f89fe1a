#include "seedance/train/compress.h"

#include <cmath>
#include <cstring>

#include "seedance/base/check.h"
#include "seedance/model/float_formats.h"

namespace seedance::train {
namespace {

constexpr size_t kBlock = 1024;  // a multiple of 8: blocks start on a byte

// Sums |v| (or v^2) in FP64 over blocks of FP32 partial sums: a block of 1,024 FP32 terms loses
// nothing that matters at FP32 output precision, and the inner loop vectorises.
double SumAbsOrSquares(std::span<const float> v, bool squares) {
  double total = 0;
  for (size_t start = 0; start < v.size(); start += kBlock) {
    const size_t end = std::min(v.size(), start + kBlock);
    float partial = 0;
    if (squares) {
      for (size_t i = start; i < end; ++i) partial += v[i] * v[i];
    } else {
      for (size_t i = start; i < end; ++i) partial += std::fabs(v[i]);
    }
    total += partial;
  }
  return total;
}

float ScaleFromSum(double sum, size_t d, SignScale scale) {
  if (d == 0) return 0;
  if (scale == SignScale::kL1Mean) return static_cast<float>(sum / static_cast<double>(d));
  return static_cast<float>(std::sqrt(sum / static_cast<double>(d)));
}

// p = v + e for one block into `out` (e empty: a copy).
void AddBlock(std::span<const float> v, std::span<const float> e, size_t start, size_t end,
              float* out) {
  if (e.empty()) {
    std::memcpy(out, v.data() + start, (end - start) * sizeof(float));
    return;
  }
  for (size_t i = start; i < end; ++i) out[i - start] = v[i] + e[i];
}

}  // namespace

float SignScaleOf(std::span<const float> v, SignScale scale) {
  return ScaleFromSum(SumAbsOrSquares(v, scale == SignScale::kL2Rms), v.size(), scale);
}

void PackSigns(std::span<const float> v, std::span<uint8_t> bits) {
  SEEDANCE_CHECK(bits.size() == PackedBytes(v.size()));
  const size_t full = v.size() / 8;
  for (size_t b = 0; b < full; ++b) {
    const float* x = v.data() + 8 * b;
    uint8_t byte = 0;
    for (int k = 0; k < 8; ++k) byte |= static_cast<uint8_t>(!std::signbit(x[k]) || x[k] == 0) << k;
    bits[b] = byte;
  }
  if (full < bits.size()) {
    uint8_t byte = 0;
    for (size_t i = 8 * full; i < v.size(); ++i) {
      byte |= static_cast<uint8_t>(!std::signbit(v[i]) || v[i] == 0) << (i - 8 * full);
    }
    bits[full] = byte;
  }
}

void AddUnpackedSigns(std::span<const uint8_t> bits, float scale, std::span<float> acc) {
  SEEDANCE_CHECK(bits.size() == PackedBytes(acc.size()));
  for (size_t i = 0; i < acc.size(); ++i) {
    const bool positive = (bits[i >> 3] >> (i & 7)) & 1;
    acc[i] += positive ? scale : -scale;
  }
}

void UnpackSigns(std::span<const uint8_t> bits, float scale, std::span<float> out) {
  SEEDANCE_CHECK(bits.size() == PackedBytes(out.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const bool positive = (bits[i >> 3] >> (i & 7)) & 1;
    out[i] = positive ? scale : -scale;
  }
}

float SignScaleOfSum(std::span<const float> v, std::span<const float> error, SignScale scale) {
  SEEDANCE_CHECK(error.empty() || error.size() == v.size());
  if (error.empty()) return SignScaleOf(v, scale);
  float p[kBlock];
  double sum = 0;
  const bool squares = scale == SignScale::kL2Rms;
  for (size_t start = 0; start < v.size(); start += kBlock) {
    const size_t end = std::min(v.size(), start + kBlock);
    AddBlock(v, error, start, end, p);
    sum += SumAbsOrSquares(std::span<const float>(p, end - start), squares);
  }
  return ScaleFromSum(sum, v.size(), scale);
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
  float p[kBlock];
  for (size_t start = 0; start < v.size(); start += kBlock) {
    const size_t end = std::min(v.size(), start + kBlock);
    AddBlock(v, error, start, end, p);
    PackSigns(std::span<const float>(p, end - start),
              bits.subspan(start / 8, PackedBytes(end - start)));
    for (size_t i = start; i < end; ++i) {
      const float x = p[i - start];
      error[i] = x - ((!std::signbit(x) || x == 0) ? scale : -scale);
    }
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

void CastToFloat16(std::span<const float> v, std::span<uint16_t> out) {
  SEEDANCE_CHECK(out.size() == v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = model::ToFloat16(v[i]).bits;
}

void CastFromFloat16(std::span<const uint16_t> v, std::span<float> out) {
  SEEDANCE_CHECK(out.size() == v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = model::FromFloat16(model::Float16{v[i]});
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
