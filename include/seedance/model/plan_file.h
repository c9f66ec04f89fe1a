// A `seedance model plan` JSON (schema model-plan/v1, docs/model.md) read without ONNX, and what
// it means for serving: the one reader of the plan format (quantize.h's ParsePlanJson reads
// through it), the mapping of its per-node formats onto the per-layer-class world of the GPU cost
// model (precision.h), and the GPU memory a pod serving the planned model asks for.
//
// Layer classes by node name (lower-cased; the first row with a substring in the name wins):
//   lm_head    lm_head, logits, classifier
//   embedding  embed, wte, tokens
//   attention  attn, attention, q_proj, k_proj, v_proj, o_proj, out_proj, qkv
//   ffn        mlp, ffn, fc1, fc2, up_proj, down_proj, gate_proj, linear1, linear2,
//              dense_h_to_4h, dense_4h_to_h, feed_forward
//   norm       norm
//   lm_head    output_proj (the output projection; after attention, so attn.output_proj is not it)
// A node that matches no row is listed in ServingPlan::unmatched, never given a class silently.
//
// A class's format is the widest the plan gives any of its nodes (planner order, widest first:
// FP32, FP16, BF16, FP8-E4M3, INT8), so no layer of the class runs narrower than planned. Classes
// the plan has no node of (the KV cache always: plans are weight-only) keep the serving model's
// own formats. The plan's measured output error, 10^(-SQNR/20) (normalised L2), is reported to the
// PrecisionBinder for each class the plan narrows below FP32.
//
// Thread-safety: pure functions; ApplyPlanFile mutates only the binder it is given.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/cost_model.h"
#include "seedance/model/precision.h"

namespace seedance::model {

struct PlannedLayer {
  std::string node;
  std::string weight;  // "" when the plan does not name it
  std::string format;  // "fp32", "fp16", "bf16", "fp8-e4m3", "int8"
  int64_t bytes_fp32 = 0;
  int64_t bytes = 0;  // in `format`, scales included
};

struct PlanFile {
  std::string gpu;  // the GPU the plan was made for ("" when absent)
  std::vector<PlannedLayer> layers;
  int64_t bytes_fp32 = 0;                  // "bytes_fp32", else the layers' sum
  int64_t bytes = 0;                       // "bytes", else the layers' sum
  std::optional<double> measured_sqnr_db;  // absent or null: not measured (or exact)
};

// InvalidArgument "SOURCE: PATH: why" for a bad document: not JSON, "layers" missing or not an
// array, a layer without "node" or "format", an unknown format or key in a layer, a node planned
// twice, negative bytes, a measured_sqnr_db that is neither a number nor null.
absl::StatusOr<PlanFile> ParsePlanFile(const std::string& text, const std::string& source);

// The cost model's type of a plan format ("fp8-e4m3" -> kFP8); InvalidArgument "unknown numeric
// format ..." for anything else.
absl::StatusOr<DType> PlanFormatDType(std::string_view format);

// The class of a planned node by the table above; nullopt when no row matches.
std::optional<LayerClass> ClassifyPlanNode(std::string_view node);

struct ServingPlan {
  ClassPrecisionPlan plan;                    // for MakeCostModel
  std::array<int, kNumLayerClasses> nodes{};  // planned nodes per class (0: model default kept)
  std::vector<std::string> unmatched;         // nodes no class pattern matches
  std::optional<double> measured_rel_error;   // 10^(-SQNR/20), when the plan has a finite SQNR
};

// `file` applied to `model` served on the binder's GPU. InvalidArgument when a class's format is
// one that GPU does not run (a plan made for an H100's FP8 served on an A100).
absl::StatusOr<ServingPlan> ApplyPlanFile(const PlanFile& file, const ModelConfig& model,
                                          PrecisionBinder& binder);

// The GPU memory a pod serving the planned model asks for: the plan's weight bytes plus an
// allowance for what is not weights, in MiB rounded up.
struct PodMemoryOptions {
  // CUDA context, cuBLAS/cuDNN workspaces and the runtime's allocator slack: a CUDA 12 context
  // alone takes 300-500 MiB on an A100/H100; the cost model's KvCacheBytes charges the same ~0.5
  // GiB of non-tensor memory.
  int64_t runtime_overhead_mib = 512;
  // Activations and intermediate tensors, as a fraction of the FP32 weight bytes (plans are
  // weight-only: activations stay FP32). An assumed allowance, not measured from a run: at batch
  // 1 a layer's output is small beside its weights; raise it for large batches or long inputs.
  double activation_fraction_of_fp32_weights = 0.25;
};
int64_t PlanGpuMemoryMib(const PlanFile& file, const PodMemoryOptions& options = {});

}  // namespace seedance::model
