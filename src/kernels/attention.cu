// Fused attention for NVIDIA GPUs (sm_80 and later): FlashAttention's tiling (Dao et al. 2022,
// Algorithm 1; the loop order of FlashAttention-2, 2023, section 3.1: one block per 64 query rows
// of one (batch, head), K and V streamed through shared memory in tiles of 64 keys, the division
// by the row sum once at the end). The N x N score matrix never exists in global memory: one
// 64 x 64 tile of scores lives in shared memory at a time.
//
// Inside a block, 4 warps each own 16 query rows end to end:
//   S = Q K^T       tensor-core WMMA 16x16x16, 16-bit inputs, FP32 accumulators, into shared memory
//   online softmax  per row in FP32 (log2 domain, exp2f): running maximum and sum in registers,
//                   P = exp(S - max) rounded to the element type (and summed so), the row's O
//                   rescaled by exp(old max - new max)
//   O += P V        WMMA again, O kept in shared memory in FP32
// so only the loads of K and V tiles need the whole block to synchronise. Masks: causal with the
// bottom-right alignment of attention.h, and per-batch key padding; rows that see no key give 0.
// The host reference that mirrors this computation is TiledAttentionReference (attention.h).
//
// Not done (docs/kernels.md): cp.async double buffering of K/V, register-resident O
// (mma.sync with known fragment layouts), sm_90 TMA/WGMMA; correctness came first.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

#include "kernels_c_api.h"

namespace seedance {
namespace kernels {
namespace cuda {
namespace {

using namespace nvcuda;

constexpr int kBlockQ = 64;           // query rows per block
constexpr int kBlockK = 64;           // keys per tile (attention.h's kAttentionKeyTile)
constexpr int kWarps = kBlockQ / 16;  // one warp per 16 query rows
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 16;

template <typename T>
struct Element;
template <>
struct Element<__half> {
  static __device__ float ToFloat(__half x) { return __half2float(x); }
  static __device__ __half FromFloat(float x) { return __float2half_rn(x); }
};
template <>
struct Element<__nv_bfloat16> {
  static __device__ float ToFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __nv_bfloat16 FromFloat(float x) { return __float2bfloat16_rn(x); }
};

// Byte offsets into the block's dynamic shared memory; each a multiple of 256 (WMMA wants 32).
template <int D>
struct SharedLayout {
  static constexpr size_t kQ = 0;                           // kBlockQ x D elements
  static constexpr size_t kK = kQ + kBlockQ * D * 2;        // kBlockK x D elements
  static constexpr size_t kV = kK + kBlockK * D * 2;        // kBlockK x D elements
  static constexpr size_t kS = kV + kBlockK * D * 2;        // kBlockQ x kBlockK floats
  static constexpr size_t kP = kS + kBlockQ * kBlockK * 4;  // kBlockQ x kBlockK elements
  static constexpr size_t kO = kP + kBlockQ * kBlockK * 2;  // kBlockQ x D floats
  static constexpr size_t kBytes = kO + kBlockQ * D * 4;
  static_assert(kK % 256 == 0 && kV % 256 == 0 && kS % 256 == 0 && kP % 256 == 0 && kO % 256 == 0,
                "every tile starts 256-byte aligned (WMMA needs 32 bytes)");
};

struct Params {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  const int32_t* kv_lengths;
  int heads;
  int q_len;
  int kv_len;
  int causal;
  float scale_log2;  // the softmax scale times log2(e)
};

// Copies rows [row0, row0 + kRows) of a [*, D] matrix into shared memory, 16 bytes at a time;
// rows at or past `limit` become zeros (+0.0 in either format), so that a masked key's
// probability 0 never meets a NaN or an infinity of padding.
template <typename T, int D, int kRows>
__device__ void LoadRows(T* dst, const T* src, int row0, int limit) {
  constexpr int kVectorsPerRow = D * 2 / 16;
  for (int idx = threadIdx.x; idx < kRows * kVectorsPerRow; idx += kThreads) {
    const int r = idx / kVectorsPerRow;
    const int c = (idx % kVectorsPerRow) * 8;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (row0 + r < limit) {
      value = *reinterpret_cast<const uint4*>(src + static_cast<int64_t>(row0 + r) * D + c);
    }
    *reinterpret_cast<uint4*>(dst + r * D + c) = value;
  }
}

// S[rows of this warp] = Q K^T for the current tile.
template <typename T, int D>
__device__ void WarpScores(const T* sq, const T* sk, float* ss, int warp) {
  for (int n = 0; n < kBlockK / 16; ++n) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
      wmma::load_matrix_sync(a, sq + warp * kRowsPerWarp * D + kk * 16, D);
      // K^T as a column-major D x kBlockK matrix is K row-major: element (d, j) at sk[j*D + d].
      wmma::load_matrix_sync(b, sk + n * 16 * D + kk * 16, D);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(ss + warp * kRowsPerWarp * kBlockK + n * 16, acc, kBlockK,
                            wmma::mem_row_major);
  }
}

// O[rows of this warp] += P V for the current tile.
template <typename T, int D>
__device__ void WarpAccumulate(const T* sp, const T* sv, float* so, int warp) {
  for (int n = 0; n < D / 16; ++n) {
    float* out = so + warp * kRowsPerWarp * D + n * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, out, D, wmma::mem_row_major);
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
      wmma::load_matrix_sync(a, sp + warp * kRowsPerWarp * kBlockK + kk * 16, kBlockK);
      wmma::load_matrix_sync(b, sv + kk * 16 * D + n * 16, D);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(out, acc, D, wmma::mem_row_major);
  }
}

__device__ float WarpMax(float x) {
  for (int offset = 16; offset > 0; offset /= 2) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  }
  return x;
}

__device__ float WarpSum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// The online softmax step of one tile for the warp's 16 rows: each lane takes two of the tile's
// 64 columns. row_max and row_sum (log2 domain) are the same in every lane.
template <typename T, int D>
__device__ void WarpSoftmax(const Params& p, const float* ss, T* sp, float* so, int warp, int q0,
                            int k0, int kv_valid, float (&row_max)[kRowsPerWarp],
                            float (&row_sum)[kRowsPerWarp]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    const int i = q0 + row;
    const int last_key = p.causal ? i + (p.kv_len - p.q_len) : p.kv_len - 1;
    float s[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int j = k0 + lane + 32 * half;
      const bool visible = i < p.q_len && j < kv_valid && j <= last_key;
      s[half] = visible ? ss[row * kBlockK + lane + 32 * half] * p.scale_log2 : -INFINITY;
    }
    const float new_max = fmaxf(row_max[r], WarpMax(fmaxf(s[0], s[1])));
    // A row that has seen no key keeps max -inf: its probabilities are 0 and nothing rescales.
    const bool empty = new_max == -INFINITY;
    // The row sum adds the probabilities as stored for the product with V, so that the weights
    // of the weighted mean still sum to one (half the BF16 error of summing them unrounded).
    const T p0 = Element<T>::FromFloat(empty ? 0.0f : exp2f(s[0] - new_max));
    const T p1 = Element<T>::FromFloat(empty ? 0.0f : exp2f(s[1] - new_max));
    const float correction = empty ? 1.0f : exp2f(row_max[r] - new_max);
    sp[row * kBlockK + lane] = p0;
    sp[row * kBlockK + lane + 32] = p1;
    row_sum[r] =
        row_sum[r] * correction + WarpSum(Element<T>::ToFloat(p0) + Element<T>::ToFloat(p1));
    row_max[r] = new_max;
    for (int c = lane; c < D; c += 32) so[row * D + c] *= correction;
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) FlashAttentionKernel(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  using L = SharedLayout<D>;
  T* sq = reinterpret_cast<T*>(smem + L::kQ);
  T* sk = reinterpret_cast<T*>(smem + L::kK);
  T* sv = reinterpret_cast<T*>(smem + L::kV);
  float* ss = reinterpret_cast<float*>(smem + L::kS);
  T* sp = reinterpret_cast<T*>(smem + L::kP);
  float* so = reinterpret_cast<float*>(smem + L::kO);

  const int q0 = blockIdx.x * kBlockQ;
  const int b = blockIdx.z;
  const int64_t head = static_cast<int64_t>(b) * p.heads + blockIdx.y;
  const T* q = static_cast<const T*>(p.q) + head * p.q_len * D;
  const T* k = static_cast<const T*>(p.k) + head * p.kv_len * D;
  const T* v = static_cast<const T*>(p.v) + head * p.kv_len * D;
  T* o = static_cast<T*>(p.o) + head * p.q_len * D;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  // Keys [0, kv_valid) are not padding; the block's last row sees none past kv_end.
  const int kv_valid = p.kv_lengths == nullptr ? p.kv_len : max(0, min(p.kv_lengths[b], p.kv_len));
  int kv_end = kv_valid;
  if (p.causal) {
    const int last_row = min(q0 + kBlockQ, p.q_len) - 1;
    kv_end = min(kv_end, max(0, last_row + (p.kv_len - p.q_len) + 1));
  }

  LoadRows<T, D, kBlockQ>(sq, q, q0, p.q_len);
  for (int idx = threadIdx.x; idx < kBlockQ * D; idx += kThreads) so[idx] = 0.0f;
  float row_max[kRowsPerWarp], row_sum[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
  }

  for (int k0 = 0; k0 < kv_end; k0 += kBlockK) {
    __syncthreads();  // the previous tile's K and V are no longer read; Q and O are written
    LoadRows<T, D, kBlockK>(sk, k, k0, kv_end);
    LoadRows<T, D, kBlockK>(sv, v, k0, kv_end);
    __syncthreads();
    WarpScores<T, D>(sq, sk, ss, warp);
    __syncwarp();
    WarpSoftmax<T, D>(p, ss, sp, so, warp, q0, k0, kv_valid, row_max, row_sum);
    __syncwarp();
    WarpAccumulate<T, D>(sp, sv, so, warp);
  }
  __syncthreads();

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    if (q0 + row >= p.q_len) continue;
    const float inverse = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
    for (int c = lane; c < D; c += 32) {
      o[static_cast<int64_t>(q0 + row) * D + c] = Element<T>::FromFloat(so[row * D + c] * inverse);
    }
  }
}

template <typename T, int D>
cudaError_t Launch(const Params& params, int batch, cudaStream_t stream) {
  constexpr size_t kBytes = SharedLayout<D>::kBytes;
  cudaError_t error =
      cudaFuncSetAttribute(FlashAttentionKernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kBytes));
  if (error != cudaSuccess) return error;
  const dim3 grid((params.q_len + kBlockQ - 1) / kBlockQ, params.heads, batch);
  FlashAttentionKernel<T, D><<<grid, kThreads, kBytes, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace
}  // namespace cuda
}  // namespace kernels
}  // namespace seedance

extern "C" int seedance_attention_forward(int element, int batch, int heads, int q_len, int kv_len,
                                          int head_dim, int causal, float scale, const void* q,
                                          const void* k, const void* v, void* o,
                                          const int32_t* kv_lengths, void* stream) {
  using namespace seedance::kernels::cuda;
  if (batch <= 0 || heads <= 0 || q_len <= 0 || kv_len <= 0 || !(scale > 0.0f) || batch > 65535 ||
      heads > 65535 || q == nullptr || k == nullptr || v == nullptr || o == nullptr) {
    return cudaErrorInvalidValue;
  }
  const Params params{q,     k,     v,      o,           kv_lengths,
                      heads, q_len, kv_len, causal != 0, scale * 1.4426950408889634f};
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const bool fp16 = element == SEEDANCE_ELEMENT_FLOAT16;
  if (element != SEEDANCE_ELEMENT_FLOAT16 && element != SEEDANCE_ELEMENT_BFLOAT16) {
    return cudaErrorInvalidValue;
  }
  if (head_dim == 64) {
    return fp16 ? Launch<__half, 64>(params, batch, s)
                : Launch<__nv_bfloat16, 64>(params, batch, s);
  }
  if (head_dim == 128) {
    return fp16 ? Launch<__half, 128>(params, batch, s)
                : Launch<__nv_bfloat16, 128>(params, batch, s);
  }
  return cudaErrorInvalidValue;
}

extern "C" const char* seedance_cuda_error_string(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}
