// Gradient compressors of seedance_train (docs/training.md): scaled sign with bit packing and
// error feedback (EF-SGD, Karimireddy et al., ICML'19; DeepSpeed's 1-bit Adam), and the FP16 /
// BF16 casts that are the simple baselines.
//
// Scaled sign. A vector v of d elements is sent as one scale s and d sign bits; the receiver reads
// s * sign(v). Two scales:
//   kL1Mean   s = ||v||_1 / d         (the l1 mean: EF-SGD's scaled sign)
//   kL2Rms    s = ||v||_2 / sqrt(d)   (DeepSpeed's compressed_allreduce)
// sign(0) is +1, as DeepSpeed's `sign_().add_(1).bool()` makes it.
//
// Bit packing: bit i of the packed vector is bit (i % 8) of byte i / 8 (least significant bit
// first); 1 means non-negative. Bits past d in the last byte are 0.
//
// Error feedback. A compressor with an error buffer e (zeros at first) compresses p = v + e and
// keeps e' = p - C(p). Summed over steps, what was applied differs from what was given by exactly
// the current buffer: sum_t C(p_t) = sum_t v_t - e_T (the telescoping identity; tested).
//
// Non-finite input: a vector with an infinity or NaN has a non-finite scale; CompressSign then
// leaves the error buffer as it was (the step can be skipped and retried) and reports it.
//
// Thread-safety: pure functions of their arguments; an ErrorBuffer is a value one thread uses at
// a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace seedance::train {

enum class SignScale { kL1Mean, kL2Rms };

// Bytes that hold d packed sign bits: ceil(d / 8).
inline size_t PackedBytes(size_t d) { return (d + 7) / 8; }

// The scale of `v` (0 for an empty vector; NaN or infinity when v holds one). Accumulated in FP64.
float SignScaleOf(std::span<const float> v, SignScale scale);

// Writes sign bits of `v` into `bits` (PackedBytes(v.size()) bytes; checked).
void PackSigns(std::span<const float> v, std::span<uint8_t> bits);

// out[i] = scale * (bit i ? +1 : -1) for i < out.size() (bits holds PackedBytes(out.size())).
void UnpackSigns(std::span<const uint8_t> bits, float scale, std::span<float> out);

// acc[i] += scale * (bit i ? +1 : -1): many ranks' chunks summed without a temporary.
void AddUnpackedSigns(std::span<const uint8_t> bits, float scale, std::span<float> acc);

// The result of compressing one vector with error feedback.
struct SignCode {
  float scale = 0;     // non-finite when the input (plus the buffer) was
  bool finite = true;  // false: nothing was written and the buffer is unchanged
};

// Error-feedback scaled-sign compression of `v` with buffer `error` (same length; checked):
// p = v + error; bits = sign(p); scale = SignScaleOf(p); error = p - scale * sign(p). With
// `error` empty, plain scaled sign without feedback (nothing kept). Two passes over the data.
SignCode CompressSign(std::span<const float> v, SignScale scale, std::span<float> error,
                      std::span<uint8_t> bits);

// CompressSign's two passes apart, for a caller that must agree on the scales with its peers
// before any buffer changes (the 1-bit all-reduce): the scale of v + error (error empty: of v),
// then the bits and the new error for a given finite scale.
float SignScaleOfSum(std::span<const float> v, std::span<const float> error, SignScale scale);
void CompressSignWithScale(std::span<const float> v, float scale, std::span<float> error,
                           std::span<uint8_t> bits);

// FP16 / BF16 casts (IEEE round to nearest even; FP16 overflows to infinity), the baselines. FP16
// runs on the F16C instructions where the CPU has them (checked at run time), with the same bits.
void CastToFloat16(std::span<const float> v, std::span<uint16_t> out);
void CastFromFloat16(std::span<const uint16_t> v, std::span<float> out);
// b[i] = FP16(FP32(a[i]) + FP32(b[i])): one step of an FP16 sum, rounded as FP16 hardware does.
void AddFloat16(std::span<const uint16_t> a, std::span<uint16_t> b);
void CastToBFloat16(std::span<const float> v, std::span<uint16_t> out);
void CastFromBFloat16(std::span<const uint16_t> v, std::span<float> out);

}  // namespace seedance::train
