// A 2:4 structured-sparse matrix product on the GPU through NVIDIA cuSPARSELt, measured against
// cuBLAS's dense product of the same (pruned) weight (kernels_c_api.h).
//
// cuSPARSELt is not part of the CUDA toolkit: it ships as its own package and inside PyTorch's pip
// wheels (nvidia-cusparselt-cu12). It is loaded with dlopen at run time, so that this file builds
// without its headers and a machine without it reports "not available" instead of failing to
// link. The few entry points and enumerations used are declared below from NVIDIA's published
// API reference (docs.nvidia.com/cuda/cusparselt, "cuSPARSELt Data Types" and "Functions");
// versions before 0.6 numbered cusparseComputeType differently and are refused.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <glob.h>
#include <library_types.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_c_api.h"

namespace seedance {
namespace kernels {
namespace cuda {
namespace {

// cuSPARSELt's opaque structures are plain byte arrays of a documented size (1024 bytes in the
// versions read); 4096 leaves room for growth, the library only writes into what it defines.
struct alignas(16) LtOpaque {
  unsigned char data[4096];
};
using LtStatus = int;             // cusparseStatus_t: 0 is CUSPARSE_STATUS_SUCCESS
constexpr int kLtOrderCol = 1;    // cusparseOrder_t CUSPARSE_ORDER_COL
constexpr int kLtOpNone = 0;      // cusparseOperation_t NON_TRANSPOSE
constexpr int kLtSparsity50 = 0;  // CUSPARSELT_SPARSITY_50_PERCENT
constexpr int kLtCompute32F = 2;  // cusparseComputeType CUSPARSE_COMPUTE_32F (>= 0.6)
constexpr int kLtAlgDefault = 0;  // CUSPARSELT_MATMUL_ALG_DEFAULT
constexpr int kLtPruneStrip = 1;  // CUSPARSELT_PRUNE_SPMMA_STRIP

struct LtApi {
  LtStatus (*init)(LtOpaque*);
  LtStatus (*destroy)(const LtOpaque*);
  LtStatus (*get_property)(libraryPropertyType, int*);
  LtStatus (*dense_init)(const LtOpaque*, LtOpaque*, int64_t, int64_t, int64_t, uint32_t,
                         cudaDataType, int);
  LtStatus (*structured_init)(const LtOpaque*, LtOpaque*, int64_t, int64_t, int64_t, uint32_t,
                              cudaDataType, int, int);
  LtStatus (*mat_destroy)(const LtOpaque*);
  LtStatus (*matmul_init)(const LtOpaque*, LtOpaque*, int, int, const LtOpaque*, const LtOpaque*,
                          const LtOpaque*, const LtOpaque*, int);
  LtStatus (*alg_init)(const LtOpaque*, LtOpaque*, const LtOpaque*, int);
  LtStatus (*plan_init)(const LtOpaque*, LtOpaque*, const LtOpaque*, const LtOpaque*);
  LtStatus (*plan_destroy)(const LtOpaque*);
  LtStatus (*workspace)(const LtOpaque*, const LtOpaque*, size_t*);
  LtStatus (*prune)(const LtOpaque*, const LtOpaque*, const void*, void*, int, cudaStream_t);
  LtStatus (*prune_check)(const LtOpaque*, const LtOpaque*, const void*, int*, cudaStream_t);
  LtStatus (*compressed_size)(const LtOpaque*, const LtOpaque*, size_t*, size_t*);
  LtStatus (*compress)(const LtOpaque*, const LtOpaque*, const void*, void*, void*, cudaStream_t);
  LtStatus (*matmul)(const LtOpaque*, const LtOpaque*, const void*, const void*, const void*,
                     const void*, const void*, void*, void*, cudaStream_t*, int32_t);
  LtStatus (*search)(const LtOpaque*, LtOpaque*, const void*, const void*, const void*, const void*,
                     const void*, void*, void*, cudaStream_t*, int32_t);
};

// The places tried, in order, after $SEEDANCE_CUSPARSELT and the loader's own search.
const char* const kLibraryGlobs[] = {
    "/usr/local/cuda/lib64/libcusparseLt.so.0",
    "/usr/lib/x86_64-linux-gnu/libcusparseLt.so.0",
    "/usr/local/lib/python3*/dist-packages/nvidia/cusparselt/lib/libcusparseLt.so.0",
    "/usr/local/lib/python3*/site-packages/nvidia/cusparselt/lib/libcusparseLt.so.0",
    "/usr/lib/python3/dist-packages/nvidia/cusparselt/lib/libcusparseLt.so.0",
    "/opt/conda/lib/python3*/site-packages/nvidia/cusparselt/lib/libcusparseLt.so.0",
    "/usr/local/lib/python3*/dist-packages/torch/lib/libcusparseLt*.so*",
    "/usr/local/lib/python3*/site-packages/torch/lib/libcusparseLt*.so*",
};

void* OpenLibrary(std::string* tried) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SEEDANCE_CUSPARSELT"); env != nullptr && *env != '\0') {
    candidates.push_back(env);
  }
  candidates.push_back("libcusparseLt.so.0");
  for (const char* pattern : kLibraryGlobs) {
    glob_t found;
    if (glob(pattern, 0, nullptr, &found) == 0) {
      for (size_t i = 0; i < found.gl_pathc; ++i) candidates.push_back(found.gl_pathv[i]);
    }
    globfree(&found);
  }
  for (const std::string& path : candidates) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    *tried += path + " (" + dlerror() + "); ";
  }
  return nullptr;
}

template <typename Fn>
bool Bind(void* lib, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*fn == nullptr) *missing += std::string(name) + " ";
  return *fn != nullptr;
}

// Loads cuSPARSELt once per process; empty on success, else why not.
std::string LoadApi(LtApi* api) {
  std::string tried;
  void* lib = OpenLibrary(&tried);
  if (lib == nullptr) return "libcusparseLt.so.0 not found: " + tried;
  std::string missing;
  Bind(lib, "cusparseLtInit", &api->init, &missing);
  Bind(lib, "cusparseLtDestroy", &api->destroy, &missing);
  Bind(lib, "cusparseLtGetProperty", &api->get_property, &missing);
  Bind(lib, "cusparseLtDenseDescriptorInit", &api->dense_init, &missing);
  Bind(lib, "cusparseLtStructuredDescriptorInit", &api->structured_init, &missing);
  Bind(lib, "cusparseLtMatDescriptorDestroy", &api->mat_destroy, &missing);
  Bind(lib, "cusparseLtMatmulDescriptorInit", &api->matmul_init, &missing);
  Bind(lib, "cusparseLtMatmulAlgSelectionInit", &api->alg_init, &missing);
  Bind(lib, "cusparseLtMatmulPlanInit", &api->plan_init, &missing);
  Bind(lib, "cusparseLtMatmulPlanDestroy", &api->plan_destroy, &missing);
  Bind(lib, "cusparseLtMatmulGetWorkspace", &api->workspace, &missing);
  Bind(lib, "cusparseLtSpMMAPrune", &api->prune, &missing);
  Bind(lib, "cusparseLtSpMMAPruneCheck", &api->prune_check, &missing);
  Bind(lib, "cusparseLtSpMMACompressedSize", &api->compressed_size, &missing);
  Bind(lib, "cusparseLtSpMMACompress", &api->compress, &missing);
  Bind(lib, "cusparseLtMatmul", &api->matmul, &missing);
  Bind(lib, "cusparseLtMatmulSearch", &api->search, &missing);
  if (!missing.empty()) return "libcusparseLt lacks " + missing;
  return "";
}

// Fills `n` elements with a hash of their index, uniform in [-1, 1), rounded to T.
template <typename T>
__global__ void FillKernel(T* data, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    const float value = static_cast<float>(x & 0xffffu) / 32768.0f - 1.0f;
    data[i] = static_cast<T>(value);
  }
}

// The device buffers and handles of one measurement, released in the destructor.
struct Session {
  const LtApi* api = nullptr;
  void* a = nullptr;         // m x k, pruned in place
  void* b = nullptr;         // k x n_padded
  void* c_sparse = nullptr;  // m x n_padded
  void* c_dense = nullptr;   // m x n
  void* a_compressed = nullptr;
  void* compress_buffer = nullptr;
  void* workspace = nullptr;
  int* valid = nullptr;
  cublasHandle_t blas = nullptr;
  LtOpaque handle, mat_a, mat_b, mat_c, matmul, alg, plan;
  bool lt_ready = false, descriptors_ready = false, plan_ready = false;

  ~Session() {
    if (plan_ready) api->plan_destroy(&plan);
    if (descriptors_ready) {
      api->mat_destroy(&mat_a);
      api->mat_destroy(&mat_b);
      api->mat_destroy(&mat_c);
    }
    if (lt_ready) api->destroy(&handle);
    if (blas != nullptr) cublasDestroy(blas);
    for (void* p : {a, b, c_sparse, c_dense, a_compressed, compress_buffer, workspace,
                    static_cast<void*>(valid)}) {
      cudaFree(p);
    }
  }
};

int Fail(SeedanceSparse24Result* result, int status, const std::string& message) {
  std::snprintf(result->message, sizeof(result->message), "%s", message.c_str());
  return status;
}

#define SEEDANCE_CUDA_TRY(call)                                                       \
  do {                                                                                \
    const cudaError_t error_ = (call);                                                \
    if (error_ != cudaSuccess) {                                                      \
      return Fail(result, 2, std::string(#call) + ": " + cudaGetErrorString(error_)); \
    }                                                                                 \
  } while (0)
#define SEEDANCE_LT_TRY(call)                                                                     \
  do {                                                                                            \
    const LtStatus status_ = (call);                                                              \
    if (status_ != 0) {                                                                           \
      return Fail(result, 2, std::string(#call) + ": cusparseStatus " + std::to_string(status_)); \
    }                                                                                             \
  } while (0)

struct Problem {
  cudaDataType type;
  int64_t m, n, n_padded, k;
  int iterations;
};

// Times `iterations` calls of `run` after three warm-up calls; ms per call, or negative on error.
template <typename Run>
double TimeMs(int iterations, Run run) {
  for (int i = 0; i < 3; ++i) {
    if (!run()) return -1.0;
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < iterations; ++i) {
    if (!run()) return -1.0;
  }
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iterations;
}

template <typename T>
int Allocate(Session& s, const Problem& p, SeedanceSparse24Result* result) {
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.a, p.m * p.k * sizeof(T)));
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.b, p.k * p.n_padded * sizeof(T)));
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.c_sparse, p.m * p.n_padded * sizeof(T)));
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.c_dense, p.m * p.n * sizeof(T)));
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.valid, sizeof(int)));
  FillKernel<T><<<1024, 256>>>(static_cast<T*>(s.a), p.m * p.k, 17u);
  FillKernel<T><<<1024, 256>>>(static_cast<T*>(s.b), p.k * p.n_padded, 29u);
  SEEDANCE_CUDA_TRY(cudaGetLastError());
  return 0;
}

// Descriptors, plan, pruning (in place) and compression of A.
int PrepareSparse(Session& s, const Problem& p, SeedanceSparse24Result* result) {
  const LtApi& lt = *s.api;
  SEEDANCE_LT_TRY(lt.init(&s.handle));
  s.lt_ready = true;
  SEEDANCE_LT_TRY(lt.structured_init(&s.handle, &s.mat_a, p.m, p.k, p.m, 16, p.type, kLtOrderCol,
                                     kLtSparsity50));
  SEEDANCE_LT_TRY(
      lt.dense_init(&s.handle, &s.mat_b, p.k, p.n_padded, p.k, 16, p.type, kLtOrderCol));
  SEEDANCE_LT_TRY(
      lt.dense_init(&s.handle, &s.mat_c, p.m, p.n_padded, p.m, 16, p.type, kLtOrderCol));
  s.descriptors_ready = true;
  SEEDANCE_LT_TRY(lt.matmul_init(&s.handle, &s.matmul, kLtOpNone, kLtOpNone, &s.mat_a, &s.mat_b,
                                 &s.mat_c, &s.mat_c, kLtCompute32F));
  SEEDANCE_LT_TRY(lt.alg_init(&s.handle, &s.alg, &s.matmul, kLtAlgDefault));
  SEEDANCE_LT_TRY(lt.plan_init(&s.handle, &s.plan, &s.matmul, &s.alg));
  s.plan_ready = true;
  SEEDANCE_LT_TRY(lt.prune(&s.handle, &s.matmul, s.a, s.a, kLtPruneStrip, nullptr));
  SEEDANCE_LT_TRY(lt.prune_check(&s.handle, &s.matmul, s.a, s.valid, nullptr));
  int invalid = 1;
  SEEDANCE_CUDA_TRY(cudaMemcpy(&invalid, s.valid, sizeof(int), cudaMemcpyDeviceToHost));
  if (invalid != 0) return Fail(result, 2, "cusparseLtSpMMAPruneCheck: A is not 2:4 after pruning");
  size_t compressed = 0, buffer = 0, workspace = 0;
  SEEDANCE_LT_TRY(lt.compressed_size(&s.handle, &s.plan, &compressed, &buffer));
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.a_compressed, compressed));
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.compress_buffer, std::max<size_t>(buffer, 16)));
  SEEDANCE_LT_TRY(lt.compress(&s.handle, &s.plan, s.a, s.a_compressed, s.compress_buffer, nullptr));
  SEEDANCE_LT_TRY(lt.workspace(&s.handle, &s.plan, &workspace));
  SEEDANCE_CUDA_TRY(cudaMalloc(&s.workspace, std::max<size_t>(workspace, 16)));
  return 0;
}

// Largest |sparse - dense| over the first n columns (column-major: the first m * n elements).
template <typename T>
int Compare(const Session& s, const Problem& p, SeedanceSparse24Result* result) {
  std::vector<T> sparse(p.m * p.n), dense(p.m * p.n);
  SEEDANCE_CUDA_TRY(
      cudaMemcpy(sparse.data(), s.c_sparse, sparse.size() * sizeof(T), cudaMemcpyDeviceToHost));
  SEEDANCE_CUDA_TRY(
      cudaMemcpy(dense.data(), s.c_dense, dense.size() * sizeof(T), cudaMemcpyDeviceToHost));
  double worst = 0.0;
  for (size_t i = 0; i < sparse.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(static_cast<float>(sparse[i])) -
                                     static_cast<double>(static_cast<float>(dense[i]))));
  }
  result->max_abs_diff = worst;
  return 0;
}

template <typename T>
int Measure(const LtApi& api, const Problem& p, SeedanceSparse24Result* result) {
  Session s;
  s.api = &api;
  if (int status = Allocate<T>(s, p, result); status != 0) return status;
  if (int status = PrepareSparse(s, p, result); status != 0) return status;
  const float alpha = 1.0f, beta = 0.0f;
  cudaStream_t stream = nullptr;
  SEEDANCE_LT_TRY(api.search(&s.handle, &s.plan, &alpha, s.a_compressed, s.b, &beta, s.c_sparse,
                             s.c_sparse, s.workspace, &stream, 1));
  result->sparse_ms = TimeMs(p.iterations, [&] {
    return api.matmul(&s.handle, &s.plan, &alpha, s.a_compressed, s.b, &beta, s.c_sparse,
                      s.c_sparse, s.workspace, &stream, 1) == 0;
  });
  if (cublasCreate(&s.blas) != CUBLAS_STATUS_SUCCESS) return Fail(result, 2, "cublasCreate failed");
  result->dense_ms = TimeMs(p.iterations, [&] {
    return cublasGemmEx(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, p.m, p.n, p.k, &alpha, s.a, p.type, p.m,
                        s.b, p.type, p.k, &beta, s.c_dense, p.type, p.m, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  });
  SEEDANCE_CUDA_TRY(cudaDeviceSynchronize());
  if (result->sparse_ms < 0 || result->dense_ms < 0) {
    return Fail(result, 2,
                result->sparse_ms < 0 ? "cusparseLtMatmul failed" : "cublasGemmEx failed");
  }
  return Compare<T>(s, p, result);
}

}  // namespace
}  // namespace cuda
}  // namespace kernels
}  // namespace seedance

extern "C" int seedance_sparse24_gemm_bench(int element, int64_t m, int64_t n, int64_t k,
                                            int iterations, SeedanceSparse24Result* result) {
  using namespace seedance::kernels::cuda;
  std::memset(result, 0, sizeof(*result));
  if (m <= 0 || n <= 0 || k <= 0 || m % 16 != 0 || k % 16 != 0 || iterations <= 0 ||
      (element != SEEDANCE_ELEMENT_FLOAT16 && element != SEEDANCE_ELEMENT_BFLOAT16)) {
    return Fail(result, 2,
                "bad arguments: m and k must be positive multiples of 16, n and "
                "iterations positive, element 0 (FP16) or 1 (BF16)");
  }
  static LtApi api;
  static const std::string load_error = LoadApi(&api);
  if (!load_error.empty()) return Fail(result, 1, load_error);
  int major = 0, minor = 0, patch = 0;
  api.get_property(MAJOR_VERSION, &major);
  api.get_property(MINOR_VERSION, &minor);
  api.get_property(PATCH_LEVEL, &patch);
  result->cusparselt_version = major * 1000 + minor * 100 + patch;
  if (major == 0 && minor < 6) {
    return Fail(result, 1,
                "cuSPARSELt " + std::to_string(major) + "." + std::to_string(minor) +
                    " is older than 0.6 (another numbering of compute types)");
  }
  const Problem p{element == SEEDANCE_ELEMENT_FLOAT16 ? CUDA_R_16F : CUDA_R_16BF,
                  m,
                  n,
                  (n + 15) / 16 * 16,
                  k,
                  iterations};
  result->n_padded = p.n_padded;
  return element == SEEDANCE_ELEMENT_FLOAT16 ? Measure<__half>(api, p, result)
                                             : Measure<__nv_bfloat16>(api, p, result);
}
