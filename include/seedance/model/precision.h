// Precision binding (seed B §2.3, seed A ch.1): which number format each class of layer runs in on
// a given GPU, and how that choice reacts to measured error and to memory pressure.
//
//  1. Rules, resolved against the GPU's capability table: embedding FP16; FFN INT8; LayerNorm and
//     the residual stream BF16 where the GPU has BF16 (else FP16); attention projections, LM head
//     and KV cache BF16 (else FP16).
//  2. Error feedback: ReportError() records the measured relative error of running a class in a
//     format (an EWMA over reports). A format whose error exceeds its limit (INT8/FP8: the
//     calibration limit, default 2.3%; 16-bit: default 1%) is replaced by the next acceptable one
//     on the downgrade ladder BF16 -> FP16 -> INT8, or, when none is left below, by the most
//     precise acceptable format (an INT8 FFN over its limit goes back to BF16).
//  3. Memory pressure: while weights plus the KV cache the caller needs do not fit the GPU, the
//     least sensitive class (FFN, then attention, KV cache, LM head, embedding) steps one rung down
//     the ladder BF16 -> FP16 -> INT8, skipping formats whose measured error is over the limit.
//     LayerNorm/residual never leave 16 bits.
// The plan is reflected in the cost model: bytes per weight per class and per KV entry
// (MakeCostModel). Thread-safety: PrecisionBinder is not synchronised; the free functions are pure.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/cost_model.h"

namespace seedance::model {

enum class LayerClass { kEmbedding, kAttention, kFfn, kNorm, kLmHead, kKvCache };
inline constexpr int kNumLayerClasses = 6;
std::string_view LayerClassName(LayerClass cls);  // "embedding", "attention", "ffn", ...

// Number formats a GPU executes natively (tensor cores or native loads/stores).
struct DeviceCapabilities {
  std::string gpu;
  bool fp32 = true;
  bool bf16 = false;
  bool fp16 = true;
  bool fp8 = false;
  bool int8 = true;
  bool Supports(DType dtype) const;
};
// From the hardware catalog (hw/catalog.h): T4 (Turing) FP16/INT8, no BF16/FP8; A10 and A100
// (Ampere) BF16/FP16/INT8, no FP8; L40S (Ada), H100 and H200 (Hopper) add FP8.
absl::StatusOr<DeviceCapabilities> LookupCapabilities(std::string_view gpu);

struct PrecisionOptions {
  double int8_max_error = 0.023;    // INT8/FP8 calibration error limit (seed B §2.3: 2.3%)
  double fp16_max_error = 0.01;     // limit for 16-bit formats against an FP32 reference
  double error_ewma_alpha = 0.5;    // weight of a new ReportError() in the running estimate
  double memory_utilization = 0.9;  // fraction of GPU memory the runtime may use
};

// A format per layer *class* of a transformer served on a GPU (not emulation.h's PrecisionPlan,
// which gives a format per node of an ONNX graph).
struct ClassPrecisionPlan {
  std::array<DType, kNumLayerClasses> dtype{};
  bool fits_memory = true;             // weights + requested KV fit after any downgrades
  std::vector<std::string> decisions;  // one line per rule, feedback and downgrade step

  DType of(LayerClass cls) const { return dtype[static_cast<int>(cls)]; }
  WeightDTypes weights() const;  // embedding, attention, ffn -> mlp, norm, lm_head
  DType kv() const { return of(LayerClass::kKvCache); }
};

class PrecisionBinder {
 public:
  explicit PrecisionBinder(DeviceCapabilities caps, PrecisionOptions options = {});

  // Error feedback: the measured relative error of running `cls` in `dtype` (e.g. from a
  // calibration batch against an FP32 reference). REQUIRES: rel_error >= 0.
  void ReportError(LayerClass cls, DType dtype, double rel_error);
  std::optional<double> MeasuredError(LayerClass cls, DType dtype) const;
  // True when `dtype` is supported and its measured error (if any) is within its limit.
  bool Acceptable(LayerClass cls, DType dtype) const;

  // Steps 1 and 2 only (no memory check).
  ClassPrecisionPlan RulePlan() const;
  // Steps 1-3: the plan under which `model` with tensor parallelism `tp` keeps `kv_tokens` tokens
  // of KV cache on each GPU group.
  ClassPrecisionPlan Bind(const ModelConfig& model, const GpuSpec& gpu, int tp,
                          int64_t kv_tokens) const;

  const DeviceCapabilities& capabilities() const { return caps_; }
  const PrecisionOptions& options() const { return options_; }

 private:
  double Limit(DType dtype) const;
  DType Resolve(LayerClass cls, std::vector<std::string>& log) const;

  DeviceCapabilities caps_;
  PrecisionOptions options_;
  // measured_[class][dtype]: EWMA of reported errors, < 0 when none.
  std::array<std::array<double, 5>, kNumLayerClasses> measured_;
};

// `model` with the plan's KV format, as a cost model charging the plan's bytes per weight class.
CostModel MakeCostModel(ModelConfig model, GpuSpec gpu, int tp, const ClassPrecisionPlan& plan);

}  // namespace seedance::model
