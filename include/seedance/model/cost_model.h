// GPU cost model of the inference runtime: how long one batched iteration (prefill chunks and
// decode tokens together) takes on a given GPU for a given transformer, without a GPU.
//
//   step time = max(FLOPs / (eta_c * peak), bytes / (eta_m * bandwidth)) + fixed overhead
//
// per operator group (the calibrated model uses the smooth form of the max(), see CostModelParams),
// plus the tensor-parallel all-reduce alpha + 2(N-1)/N * S / B. The constants
// are fitted to measured operator profiles (docs/gpu-cost-model.md). This header is the contract
// between the cost model and the serving simulator (seedance_serving): the simulator only uses
// what is declared here. Thread-safety: the lookups and free functions are pure; a CostModel's
// const methods may run concurrently, set_weight_dtypes() not beside them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::model {

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

// Built-in models: "llama-2-7b", "llama-2-13b", "llama-3-8b", "llama-3-70b", ...
// (case-insensitive).
absl::StatusOr<ModelConfig> LookupModel(std::string_view name);
std::vector<std::string> KnownModels();

struct GpuSpec {
  std::string name;
  double peak_tflops_16 = 0;      // dense BF16/FP16 tensor-core TFLOP/s
  double peak_tflops_8 = 0;       // dense INT8/FP8 TOP/s (0 = not supported)
  double mem_bandwidth_gbps = 0;  // HBM/GDDR GB/s
  double memory_gib = 0;
  double interconnect_gbps = 0;  // per-GPU NVLink (or PCIe) bandwidth for all-reduce, GB/s
  bool hopper = false;           // picks the Hopper calibration (else the A100 one)
  bool bf16 = false, fp8 = false, int8 = true;  // tensor-core data types (FP16 everywhere)
};

// The hardware catalog's GPUs with compute figures (hw/catalog.h): A100-80GB, A100-40GB, H100,
// H200, L40S, A10, T4, by any name the catalog finds ("a100-80g", "h100", "NVIDIA H100 80GB HBM3").
absl::StatusOr<GpuSpec> LookupGpu(std::string_view name);
std::vector<std::string> KnownGpus();

// One sequence's work in an iteration: `new_tokens` tokens are processed (a prefill chunk, or 1 for
// a decode step) on top of `context_tokens` tokens already in the KV cache.
struct SequenceWork {
  int new_tokens = 1;
  int context_tokens = 0;
};

// ---- Additions for calibration and precision (additive to the contract above) ----

// The few physically meaningful constants of the model (docs/gpu-cost-model.md):
//   GEMM / attention: c + (t_c^p + t_m^p)^(1/p), t_c = FLOPs / (eta_compute * peak),
//                     t_m = bytes / (eta_memory * BW); p = roofline_exponent (a fixed structural
//                     choice, not fitted: 2 = compute and memory overlap partially near the ridge;
//                     a huge p is the hard max() roofline)
//   element-wise op:  bytes / (eta_memory_<kind> * BW) + elementwise_overhead_s
//   all-reduce on N:  min over NCCL's two protocol families of
//                     alpha + 2(N-1)/N * S / (efficiency * GpuSpec::interconnect_gbps)
struct CostModelParams {
  double eta_compute = 0.72;       // fraction of dense tensor-core peak reached by GEMMs
  double eta_memory = 0.83;        // fraction of HBM bandwidth reached by GEMM weight reads
  double gemm_overhead_s = 6e-6;   // launch + tail per GEMM
  double roofline_exponent = 2.0;  // p above (fixed, not fitted)
  // Fraction of HBM bandwidth reached by each element-wise kernel kind (they differ a lot: a
  // residual add streams near peak, partly from L2; an RMSNorm reduces in FP32; the vocabulary-
  // parallel embedding gathers and masks).
  double eta_memory_norm = 0.45;
  double eta_memory_rope = 0.50;
  double eta_memory_act = 0.50;
  double eta_memory_add = 1.0;
  double eta_memory_embedding = 0.17;
  double elementwise_overhead_s = 2e-6;  // launch per norm / rope / activation / add kernel
  double attention_overhead_s = 10e-6;   // launch per attention kernel (prefill or decode group)
  // Bulk ("Simple") protocol: dominates large messages.
  double allreduce_latency_s = 40e-6;
  double allreduce_efficiency = 0.70;  // achieved bus bandwidth / interconnect_gbps
  // Low-latency (LL/LL128) protocol: smaller alpha, lower bandwidth; dominates small messages.
  double allreduce_small_latency_s = 20e-6;
  double allreduce_small_efficiency = 0.45;
  double iteration_overhead_s = 1e-3;  // per-iteration CPU work (scheduling, sampling); assumed
};

// Calibrated constants for a built-in GPU and tensor-parallel degree (fitted on the A100 and H100
// profiles; H200 uses the H100 fit, the PCIe GPUs the A100 fit, see docs/gpu-cost-model.md).
// Unknown names get the struct defaults.
CostModelParams DefaultParamsFor(const GpuSpec& gpu, int tensor_parallel = 1);

// Weight precision per layer class, as chosen by precision binding (precision.h). The cost model
// charges bytes per weight (and picks the 8-bit peak for FP8/INT8 GEMMs) per class.
struct WeightDTypes {
  DType embedding = DType::kBF16;
  DType attention = DType::kBF16;  // QKV and output projections
  DType mlp = DType::kBF16;        // gate/up/down projections
  DType norm = DType::kBF16;       // LayerNorm/RMSNorm weights and the residual stream
  DType lm_head = DType::kBF16;
  static WeightDTypes Uniform(DType d) { return {d, d, d, d, d}; }
};

// WeightBytes of `model` with per-class dtypes (ModelConfig::WeightBytes is the uniform case).
int64_t WeightBytes(const ModelConfig& model, const WeightDTypes& dtypes);

// Effective peak TFLOP/s of `gpu` for a GEMM whose weights are `dtype` (8-bit peak for FP8/INT8
// when the GPU has one, FP32 at 1/16 of the 16-bit peak).
double PeakTflops(const GpuSpec& gpu, DType dtype);

// Single-operator roofline terms, exposed for calibration and tests.
// GEMM [m x k] * [k x n] with 16-bit activations and `weight_dtype` weights.
double GemmSeconds(const GpuSpec& gpu, const CostModelParams& p, int64_t m, int64_t k, int64_t n,
                   DType weight_dtype = DType::kBF16);
// A memory-bound element-wise kernel of `kind` moving `bytes`.
enum class ElementwiseKind { kNorm, kRope, kActivation, kAdd, kEmbedding };
double ElementwiseSeconds(const GpuSpec& gpu, const CostModelParams& p, ElementwiseKind kind,
                          double bytes);
// All-reduce of `bytes` over `n_gpus` in one node (0 when n_gpus <= 1).
double AllReduceSeconds(const GpuSpec& gpu, const CostModelParams& p, double bytes, int n_gpus);

class CostModel {
 public:
  // tensor_parallel >= 1 GPUs share the model; the all-reduce term is added when > 1.
  CostModel(ModelConfig model, GpuSpec gpu, int tensor_parallel = 1);
  // Same with explicit constants (calibration, what-if studies).
  CostModel(ModelConfig model, GpuSpec gpu, int tensor_parallel, CostModelParams params);

  const CostModelParams& params() const { return params_; }
  // Per-class weight precision (default: model.weight_dtype everywhere). KV bytes follow
  // model.kv_dtype.
  void set_weight_dtypes(const WeightDTypes& dtypes) { dtypes_ = dtypes; }
  const WeightDTypes& weight_dtypes() const { return dtypes_; }

  // Breakdown of StepSeconds, seconds per operator class (sums to StepSeconds).
  struct Breakdown {
    double linear_s = 0;       // QKV, O, MLP projections over all layers
    double attention_s = 0;    // attention kernels over all layers
    double elementwise_s = 0;  // norms, rope, activation, residual adds
    double allreduce_s = 0;    // tensor-parallel all-reduces
    double lm_head_s = 0;      // embedding lookup + LM head + final norm
    double overhead_s = 0;     // iteration overhead
    double total() const {
      return linear_s + attention_s + elementwise_s + allreduce_s + lm_head_s + overhead_s;
    }
  };
  Breakdown StepBreakdown(std::span<const SequenceWork> batch) const;

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
  CostModelParams params_;
  WeightDTypes dtypes_;
};

}  // namespace seedance::model
