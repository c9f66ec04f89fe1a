// Scaled dot-product attention as Seedance's fused GPU kernel computes it (docs/kernels.md):
//
//   O[b,h,i,:] = sum_j softmax_j(scale * Q[b,h,i,:] . K[b,h,j,:] + mask(b,i,j)) V[b,h,j,:]
//
// Q is [batch, heads, q_len, head_dim], K and V are [batch, heads, kv_len, head_dim], O is like Q,
// all dense row-major ("BHSD"). Elements are stored as FP16 or BF16 (16 bits each, the bits of
// model::Float16 / model::BFloat16); products and sums are FP32 (the kernel) or FP64 (the check).
//
// Masks:
//   - causal: query i sees key j only if j <= i + (kv_len - q_len), the bottom-right alignment of
//     FlashAttention 2.1 and later, so that the last query row sees every key (a decode step with
//     q_len 1 sees the whole cache). When q_len == kv_len this is the usual j <= i.
//   - key padding: batch b has kv_lengths[b] valid keys, the first ones; the rest are ignored.
// A query row that sees no key at all gives zeros (FlashAttention's choice; PyTorch gives NaN).
//
// The host functions here are pure and thread-safe. RunAttentionCuda is the launcher the
// executor's CUDA path calls; it is thread-safe as CUDA launches on distinct streams are.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"

namespace seedance::kernels {

// How Q, K, V and O are stored. Accumulation is FP32 in either case.
enum class ElementType { kFloat16, kBFloat16 };

// The head dimensions the CUDA kernel is instantiated for.
inline constexpr int kSupportedHeadDims[] = {64, 128};

struct AttentionShape {
  int batch = 1;
  int heads = 1;
  int q_len = 1;
  int kv_len = 1;
  int head_dim = 64;  // 64 or 128
  bool causal = false;
  // The softmax scale; unset: 1 / sqrt(head_dim).
  std::optional<float> scale;
  ElementType element = ElementType::kFloat16;
};

// The scale the kernel applies: `shape.scale` or 1 / sqrt(head_dim).
float AttentionScale(const AttentionShape& shape);

// Ok if the kernel can run `shape`: every size positive, head_dim 64 or 128, the scale finite
// and positive. Otherwise InvalidArgument naming the field, its value and what was expected.
[[nodiscard]] absl::Status ValidateAttentionShape(const AttentionShape& shape);

// Ok if `kv_lengths` is empty (no padding) or holds one length in [0, kv_len] per batch entry.
[[nodiscard]] absl::Status ValidateKvLengths(const AttentionShape& shape,
                                             std::span<const int32_t> kv_lengths);

// Element counts of Q (and O) and of K (and V).
int64_t QueryElements(const AttentionShape& shape);
int64_t KeyElements(const AttentionShape& shape);

// Host copies of the inputs: 16-bit elements of `shape.element`, sizes as above.
struct AttentionInputs {
  std::span<const uint16_t> q;
  std::span<const uint16_t> k;
  std::span<const uint16_t> v;
  std::span<const int32_t> kv_lengths;  // empty: no key padding
};

// The key tile width of the CUDA kernel; the reference walks K and V in tiles of this many keys.
inline constexpr int kAttentionKeyTile = 64;

// Attention computed as the CUDA kernel computes it: for each query row, K and V in tiles of
// kAttentionKeyTile keys, an online softmax (running maximum and sum, earlier partial results
// rescaled by exp(old_max - new_max)), FP32 scores and accumulators, the probabilities rounded to
// the element type before they multiply V (the kernel feeds them to 16-bit tensor-core products)
// and summed as rounded, and the output rounded to the element type. Returns O's 16-bit elements.
// REQUIRES: ValidateAttentionShape(shape) and ValidateKvLengths(shape, in.kv_lengths) are ok;
// q has QueryElements(shape) elements, k and v KeyElements(shape).
std::vector<uint16_t> TiledAttentionReference(const AttentionShape& shape,
                                              const AttentionInputs& in);

// Plain softmax attention in FP64 on the same 16-bit inputs (each read exactly), with the same
// masks, no tiling and no rounding of the result: the yardstick of the other two.
// REQUIRES: as TiledAttentionReference.
std::vector<double> Fp64Attention(const AttentionShape& shape, const AttentionInputs& in);

// Device buffers of one attention call, laid out as the host inputs; O is written.
struct AttentionDeviceBuffers {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  const int32_t* kv_lengths = nullptr;  // device array of `batch` lengths, or null: no padding
};

// Launches the fused attention kernel on `cuda_stream` (a cudaStream_t; null: the default
// stream) and returns without waiting for it. Unavailable("built without CUDA") in a build
// without the CUDA toolkit (every build of seedance_kernels by CMake today; docs/kernels.md);
// InvalidArgument for a shape ValidateAttentionShape refuses or a null or misaligned buffer
// (each must be 16-byte aligned); Internal with CUDA's message when the launch fails.
// The kv_lengths on the device are not read by the host, so their range is the caller's duty.
[[nodiscard]] absl::Status RunAttentionCuda(const AttentionShape& shape,
                                            const AttentionDeviceBuffers& buffers,
                                            void* cuda_stream);

}  // namespace seedance::kernels
