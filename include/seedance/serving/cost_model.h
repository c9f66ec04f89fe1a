// GPU cost model of the inference runtime: how long one batched iteration (prefill chunks and
// decode tokens together) takes on a given GPU for a given transformer, without a GPU.
//
//   step time = max(FLOPs / (eta_c * peak), bytes / (eta_m * bandwidth)) + fixed overhead
//
// per operator group, plus the tensor-parallel all-reduce alpha + 2(N-1)/N * S / B. The constants
// are fitted to measured operator profiles (docs/serving.md). This header is the contract between
// the cost model and the serving simulator: the simulator only uses what is declared here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::serving {

enum class DType { kFP32, kBF16, kFP16, kFP8, kINT8 };

// Bytes per element: 4, 2, 2, 1, 1.
double BytesPerElement(DType dtype);
std::string_view DTypeName(DType dtype);  // "fp32", "bf16", "fp16", "fp8", "int8"

// A decoder-only transformer (Llama family shapes).
struct ModelConfig {
  std::string name;
  int num_layers = 0;
  int hidden_size = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int intermediate_size = 0;  // MLP width
  int vocab_size = 0;
  DType weight_dtype = DType::kBF16;
  DType kv_dtype = DType::kBF16;

  int head_dim() const { return hidden_size / num_heads; }
  // K and V for one token over all layers: 2 * layers * kv_heads * head_dim * bytes(kv_dtype).
  int64_t KvBytesPerToken() const;
  // All weights (embeddings, attention, MLP, norms, LM head) at weight_dtype.
  int64_t WeightBytes() const;
};

// Built-in models: "llama-2-7b", "llama-2-13b", "llama-3-8b", "llama-3-70b", ... (case-insensitive).
absl::StatusOr<ModelConfig> LookupModel(std::string_view name);
std::vector<std::string> KnownModels();

struct GpuSpec {
  std::string name;
  double peak_tflops_16 = 0;     // dense BF16/FP16 tensor-core TFLOP/s
  double peak_tflops_8 = 0;      // dense INT8/FP8 TOP/s (0 = not supported)
  double mem_bandwidth_gbps = 0; // HBM/GDDR GB/s
  double memory_gib = 0;
  double interconnect_gbps = 0;  // per-GPU NVLink (or PCIe) bandwidth for all-reduce, GB/s
};

// Built-in GPUs: "a100-80g", "h100", "h200", "l40s", "a10", "t4" (case-insensitive).
absl::StatusOr<GpuSpec> LookupGpu(std::string_view name);
std::vector<std::string> KnownGpus();

// One sequence's work in an iteration: `new_tokens` tokens are processed (a prefill chunk, or 1 for
// a decode step) on top of `context_tokens` tokens already in the KV cache.
struct SequenceWork {
  int new_tokens = 1;
  int context_tokens = 0;
};

class CostModel {
 public:
  // tensor_parallel >= 1 GPUs share the model; the all-reduce term is added when > 1.
  CostModel(ModelConfig model, GpuSpec gpu, int tensor_parallel = 1);

  // Seconds for one forward iteration over the whole batch (empty batch: 0).
  double StepSeconds(std::span<const SequenceWork> batch) const;

  // Bytes of GPU memory left for the KV cache on each GPU after weights and activations, given the
  // fraction of memory the runtime may use (vLLM's gpu_memory_utilization, default 0.9).
  int64_t KvCacheBytes(double memory_utilization = 0.9) const;

  const ModelConfig& model() const { return model_; }
  const GpuSpec& gpu() const { return gpu_; }
  int tensor_parallel() const { return tp_; }

 private:
  ModelConfig model_;
  GpuSpec gpu_;
  int tp_;
};

}  // namespace seedance::serving
