/* The C entry points of the CUDA sources (attention.cu, sparse24_gemm.cu), for the C++ launchers
 * of a CUDA build (launchers_cuda.cc) and for Python's ctypes (tools/gpu/kernels_bench.py loads
 * the shared library tools/gpu/kernels_check.sh builds). C only, so that the CUDA sources need
 * no Abseil and Python needs no headers. Every function is thread-safe as CUDA calls are; none
 * waits for the GPU unless it says so. */
#ifndef SEEDANCE_SRC_KERNELS_KERNELS_C_API_H_
#define SEEDANCE_SRC_KERNELS_KERNELS_C_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types: the values of seedance::kernels::ElementType. */
#define SEEDANCE_ELEMENT_FLOAT16 0
#define SEEDANCE_ELEMENT_BFLOAT16 1

/* Launches fused attention (seedance/kernels/attention.h) on `stream` (a cudaStream_t; null: the
 * default stream): q, o [batch, heads, q_len, head_dim]; k, v [batch, heads, kv_len, head_dim];
 * kv_lengths a device array of `batch` valid-key counts or null; scale the softmax scale. Every
 * pointer 16-byte aligned. Returns a cudaError_t: 0 when launched, cudaErrorInvalidValue (1) for
 * arguments the kernel cannot take (head_dim not 64 or 128, a size not positive). */
int seedance_attention_forward(int element, int batch, int heads, int q_len, int kv_len,
                               int head_dim, int causal, float scale, const void* q, const void* k,
                               const void* v, void* o, const int32_t* kv_lengths, void* stream);

/* CUDA's text for a code that seedance_attention_forward returned. */
const char* seedance_cuda_error_string(int code);

/* One measurement of C[m x n] = A[m x k] B[k x n] (column-major, A the 2:4-pruned weight) through
 * cuSPARSELt against cuBLAS's dense product of the same pruned A. */
typedef struct {
  double sparse_ms;       /* cuSPARSELt, mean per product, at n rounded up to n_padded */
  double dense_ms;        /* cublasGemmEx at n, compute FP32 */
  double max_abs_diff;    /* between the two results, over the first n columns */
  int64_t n_padded;       /* n rounded up to a multiple of 16, what cuSPARSELt accepts */
  int cusparselt_version; /* major * 1000 + minor * 100 + patch, 0 when not loaded */
  char message[512];      /* why, when the status is not 0 */
} SeedanceSparse24Result;

/* Status: 0 measured; 1 cuSPARSELt not available (the message says why: not found, too old, the
 * GPU refused); 2 a CUDA, cuBLAS or cuSPARSELt error (the message names the call). The library is
 * found through $SEEDANCE_CUSPARSELT (a file), then libcusparseLt.so.0 on the loader's path, then
 * the places pip's nvidia-cusparselt-cu12 and PyTorch put it. Waits for the GPU. */
int seedance_sparse24_gemm_bench(int element, int64_t m, int64_t n, int64_t k, int iterations,
                                 SeedanceSparse24Result* result);

#ifdef __cplusplus
}
#endif

#endif /* SEEDANCE_SRC_KERNELS_KERNELS_C_API_H_ */
