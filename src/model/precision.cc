// Precision binding: rules, error feedback and memory-pressure downgrades (precision.h).
#include "seedance/model/precision.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

namespace seedance::model {
namespace {

int Index(DType d) { return static_cast<int>(d); }
int Index(LayerClass c) { return static_cast<int>(c); }

std::string Name(DType d) { return std::string(DTypeName(d)); }
std::string Name(LayerClass c) { return std::string(LayerClassName(c)); }

std::string Pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * v);
  return buf;
}

// Next rung below `d` (FP32 steps to BF16; INT8/FP8 are the bottom).
std::optional<DType> NextRung(DType d) {
  switch (d) {
    case DType::kFP32:
      return DType::kBF16;
    case DType::kBF16:
      return DType::kFP16;
    case DType::kFP16:
      return DType::kINT8;
    case DType::kFP8:
    case DType::kINT8:
      return std::nullopt;
  }
  return std::nullopt;
}

// Rule preference per class, best first; the first supported format wins.
std::vector<DType> RulePreference(LayerClass cls) {
  switch (cls) {
    case LayerClass::kEmbedding:
      return {DType::kFP16, DType::kFP32};
    case LayerClass::kFfn:
      return {DType::kINT8, DType::kBF16, DType::kFP16};
    case LayerClass::kNorm:
      return {DType::kBF16, DType::kFP16, DType::kFP32};
    case LayerClass::kAttention:
    case LayerClass::kLmHead:
    case LayerClass::kKvCache:
      return {DType::kBF16, DType::kFP16, DType::kFP32};
  }
  return {DType::kFP32};
}

bool Fits(const ModelConfig& model, const GpuSpec& gpu, int tp, int64_t kv_tokens,
          double utilization, const ClassPrecisionPlan& plan) {
  const CostModel cm = MakeCostModel(model, gpu, tp, plan);
  const double need = static_cast<double>(kv_tokens) *
                      static_cast<double>(cm.model().KvBytesPerToken()) / std::max(1, tp);
  const double have = static_cast<double>(cm.KvCacheBytes(utilization));
  return have > 0 && have >= need;
}

}  // namespace

std::string_view LayerClassName(LayerClass cls) {
  switch (cls) {
    case LayerClass::kEmbedding:
      return "embedding";
    case LayerClass::kAttention:
      return "attention";
    case LayerClass::kFfn:
      return "ffn";
    case LayerClass::kNorm:
      return "norm";
    case LayerClass::kLmHead:
      return "lm_head";
    case LayerClass::kKvCache:
      return "kv_cache";
  }
  return "?";
}

bool DeviceCapabilities::Supports(DType d) const {
  switch (d) {
    case DType::kFP32:
      return fp32;
    case DType::kBF16:
      return bf16;
    case DType::kFP16:
      return fp16;
    case DType::kFP8:
      return fp8;
    case DType::kINT8:
      return int8;
  }
  return false;
}

absl::StatusOr<DeviceCapabilities> LookupCapabilities(std::string_view gpu) {
  absl::StatusOr<GpuSpec> spec = LookupGpu(gpu);
  if (!spec.ok()) return spec.status();
  DeviceCapabilities c;
  c.gpu = spec->name;
  c.bf16 = spec->bf16;
  c.fp8 = spec->fp8;
  c.int8 = spec->int8;
  return c;
}

WeightDTypes ClassPrecisionPlan::weights() const {
  WeightDTypes w;
  w.embedding = of(LayerClass::kEmbedding);
  w.attention = of(LayerClass::kAttention);
  w.mlp = of(LayerClass::kFfn);
  w.norm = of(LayerClass::kNorm);
  w.lm_head = of(LayerClass::kLmHead);
  return w;
}

PrecisionBinder::PrecisionBinder(DeviceCapabilities caps, PrecisionOptions options)
    : caps_(std::move(caps)), options_(options) {
  for (auto& row : measured_) row.fill(-1.0);
}

void PrecisionBinder::ReportError(LayerClass cls, DType dtype, double rel_error) {
  SEEDANCE_CHECK(rel_error >= 0) << "measured relative error " << rel_error << ", need >= 0";
  double& m = measured_[Index(cls)][Index(dtype)];
  m = m < 0 ? rel_error
            : (1 - options_.error_ewma_alpha) * m + options_.error_ewma_alpha * rel_error;
}

std::optional<double> PrecisionBinder::MeasuredError(LayerClass cls, DType dtype) const {
  const double m = measured_[Index(cls)][Index(dtype)];
  if (m < 0) return std::nullopt;
  return m;
}

double PrecisionBinder::Limit(DType dtype) const {
  switch (dtype) {
    case DType::kINT8:
    case DType::kFP8:
      return options_.int8_max_error;
    case DType::kBF16:
    case DType::kFP16:
      return options_.fp16_max_error;
    case DType::kFP32:
      break;
  }
  return 1e300;  // the reference format is always acceptable
}

bool PrecisionBinder::Acceptable(LayerClass cls, DType dtype) const {
  if (!caps_.Supports(dtype)) return false;
  const std::optional<double> m = MeasuredError(cls, dtype);
  return !m || *m <= Limit(dtype);
}

DType PrecisionBinder::Resolve(LayerClass cls, std::vector<std::string>& log) const {
  DType rule = DType::kFP32;
  for (DType d : RulePreference(cls)) {
    if (caps_.Supports(d)) {
      rule = d;
      break;
    }
  }
  log.push_back(absl::StrCat(Name(cls), ": ", Name(rule), " by rule on ", caps_.gpu));
  if (Acceptable(cls, rule)) return rule;
  // Error feedback: down the ladder first (BF16 -> FP16 -> INT8), then the most precise.
  std::vector<DType> candidates;
  for (std::optional<DType> d = NextRung(rule); d; d = NextRung(*d)) candidates.push_back(*d);
  for (DType d : {DType::kBF16, DType::kFP16, DType::kFP32}) {
    if (std::find(candidates.begin(), candidates.end(), d) == candidates.end() && d != rule) {
      candidates.push_back(d);
    }
  }
  for (DType d : candidates) {
    if (Acceptable(cls, d)) {
      log.push_back(absl::StrCat(Name(cls), ": ", Name(rule), " -> ", Name(d), " (measured error ",
                                 Pct(*MeasuredError(cls, rule)), " > limit ", Pct(Limit(rule)),
                                 ")"));
      return d;
    }
  }
  return DType::kFP32;
}

ClassPrecisionPlan PrecisionBinder::RulePlan() const {
  ClassPrecisionPlan plan;
  for (int i = 0; i < kNumLayerClasses; ++i) {
    plan.dtype[i] = Resolve(static_cast<LayerClass>(i), plan.decisions);
  }
  return plan;
}

ClassPrecisionPlan PrecisionBinder::Bind(const ModelConfig& model, const GpuSpec& gpu, int tp,
                                         int64_t kv_tokens) const {
  ClassPrecisionPlan plan = RulePlan();
  const double util = options_.memory_utilization;
  plan.fits_memory = Fits(model, gpu, tp, kv_tokens, util, plan);
  static constexpr LayerClass kOrder[] = {LayerClass::kFfn, LayerClass::kAttention,
                                          LayerClass::kKvCache, LayerClass::kLmHead,
                                          LayerClass::kEmbedding};
  for (LayerClass cls : kOrder) {
    while (!plan.fits_memory) {
      // The next acceptable rung below the current format of this class.
      std::optional<DType> next = NextRung(plan.of(cls));
      while (next && !Acceptable(cls, *next)) next = NextRung(*next);
      if (!next) break;
      plan.decisions.push_back(absl::StrCat(Name(cls), ": ", Name(plan.of(cls)), " -> ",
                                            Name(*next), " (memory pressure: ", kv_tokens,
                                            " KV tokens do not fit)"));
      plan.dtype[Index(cls)] = *next;
      plan.fits_memory = Fits(model, gpu, tp, kv_tokens, util, plan);
    }
  }
  if (!plan.fits_memory) {
    plan.decisions.push_back(absl::StrCat("does not fit ", gpu.name, " x", tp,
                                          " even at the lowest acceptable formats"));
  }
  return plan;
}

CostModel MakeCostModel(ModelConfig model, GpuSpec gpu, int tp, const ClassPrecisionPlan& plan) {
  model.kv_dtype = plan.kv();
  model.weight_dtype = plan.of(LayerClass::kAttention);
  CostModel cm(std::move(model), std::move(gpu), tp);
  cm.set_weight_dtypes(plan.weights());
  return cm;
}

}  // namespace seedance::model
