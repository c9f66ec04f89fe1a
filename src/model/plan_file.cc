// A `model plan` JSON read for serving (plan_file.h).
#include "seedance/model/plan_file.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"

namespace seedance::model {
namespace {

constexpr std::pair<const char*, DType> kFormats[] = {{"fp32", DType::kFP32},
                                                      {"fp16", DType::kFP16},
                                                      {"bf16", DType::kBF16},
                                                      {"fp8-e4m3", DType::kFP8},
                                                      {"int8", DType::kINT8}};

// Planner order, widest first (planner.h FormatsFor): a lower rank is wider.
int Rank(DType d) {
  for (int i = 0; i < static_cast<int>(std::size(kFormats)); ++i) {
    if (kFormats[i].second == d) return i;
  }
  return 0;
}

struct Pattern {
  const char* text;
  LayerClass cls;
};
// plan_file.h's table, row by row.
constexpr Pattern kPatterns[] = {
    {"lm_head", LayerClass::kLmHead},
    {"logits", LayerClass::kLmHead},
    {"classifier", LayerClass::kLmHead},
    {"embed", LayerClass::kEmbedding},
    {"wte", LayerClass::kEmbedding},
    {"tokens", LayerClass::kEmbedding},
    {"attn", LayerClass::kAttention},
    {"attention", LayerClass::kAttention},
    {"q_proj", LayerClass::kAttention},
    {"k_proj", LayerClass::kAttention},
    {"v_proj", LayerClass::kAttention},
    {"o_proj", LayerClass::kAttention},
    {"out_proj", LayerClass::kAttention},
    {"qkv", LayerClass::kAttention},
    {"mlp", LayerClass::kFfn},
    {"ffn", LayerClass::kFfn},
    {"fc1", LayerClass::kFfn},
    {"fc2", LayerClass::kFfn},
    {"up_proj", LayerClass::kFfn},
    {"down_proj", LayerClass::kFfn},
    {"gate_proj", LayerClass::kFfn},
    {"linear1", LayerClass::kFfn},
    {"linear2", LayerClass::kFfn},
    {"dense_h_to_4h", LayerClass::kFfn},
    {"dense_4h_to_h", LayerClass::kFfn},
    {"feed_forward", LayerClass::kFfn},
    {"norm", LayerClass::kNorm},
    {"output_proj", LayerClass::kLmHead},
};

// One layer of $.layers[i].
absl::StatusOr<PlannedLayer> ReadLayer(const nlohmann::json& j, const std::string& at,
                                       const std::string& prefix) {
  base::JsonFields<nlohmann::json> f(j, at, prefix);
  PlannedLayer l;
  f.String("node", &l.node, /*required=*/true);
  f.String("format", &l.format, /*required=*/true);
  f.String("weight", &l.weight);
  f.Int<int64_t>("bytes_fp32", &l.bytes_fp32, 0);
  f.Int<int64_t>("bytes", &l.bytes, 0);
  f.Member("predicted_output_error");
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (absl::StatusOr<DType> d = PlanFormatDType(l.format); !d.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix,
        base::JsonError(base::JsonPathChild(at, "format"), std::string(d.status().message()))
            .message()));
  }
  return l;
}

}  // namespace

absl::StatusOr<DType> PlanFormatDType(std::string_view format) {
  for (const auto& [name, dtype] : kFormats) {
    if (format == name) return dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown numeric format \"", std::string(format),
                                                 "\" (want fp32, fp16, bf16, fp8-e4m3 or int8)"));
}

absl::StatusOr<PlanFile> ParsePlanFile(const std::string& text, const std::string& source) {
  absl::StatusOr<nlohmann::json> doc = base::ParseJsonDocument(text, source);
  if (!doc.ok()) return doc.status();
  const std::string prefix = absl::StrCat(source, ": ");
  auto bad = [&](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, s.message()));
  };
  if (absl::Status s = base::CheckJsonKind(*doc, "$", base::JsonKind::kObject); !s.ok()) {
    return bad(s);
  }
  absl::StatusOr<const nlohmann::json*> layers =
      base::JsonMemberOf(*doc, "layers", "$", base::JsonKind::kArray);
  if (!layers.ok()) return bad(layers.status());
  if (*layers == nullptr) return bad(base::JsonError("$", "missing required key \"layers\""));
  PlanFile plan;
  int64_t sum_fp32 = 0, sum = 0;
  std::set<std::string> seen;
  for (size_t i = 0; i < (*layers)->size(); ++i) {
    const std::string at = base::JsonPathIndex("$.layers", i);
    absl::StatusOr<PlannedLayer> l = ReadLayer((**layers)[i], at, prefix);
    if (!l.ok()) return l.status();
    if (!seen.insert(l->node).second) {
      return bad(base::JsonError(base::JsonPathChild(at, "node"),
                                 absl::StrCat("layer \"", l->node, "\" is planned twice")));
    }
    sum_fp32 += l->bytes_fp32;
    sum += l->bytes;
    plan.layers.push_back(std::move(*l));
  }
  // The top level: only what serving reads; the rest of model-plan/v1 is the planner's report.
  base::JsonFields<nlohmann::json> f(*doc, "$", prefix);
  plan.bytes_fp32 = sum_fp32;
  plan.bytes = sum;
  f.String("gpu", &plan.gpu);
  f.Int<int64_t>("bytes_fp32", &plan.bytes_fp32, 0);
  f.Int<int64_t>("bytes", &plan.bytes, 0);
  if (const nlohmann::json* m = f.Member("measured_sqnr_db"); m != nullptr && !m->is_null()) {
    if (!m->is_number()) {
      f.Fail("measured_sqnr_db",
             absl::StrCat("must be a number or null (got ", base::DescribeJson(*m), ")"));
    } else {
      plan.measured_sqnr_db = m->get<double>();
    }
  }
  if (!f.ok()) return f.status();
  return plan;
}

std::optional<LayerClass> ClassifyPlanNode(std::string_view node) {
  const std::string name = absl::AsciiStrToLower(std::string(node));
  for (const Pattern& p : kPatterns) {
    if (name.find(p.text) != std::string::npos) return p.cls;
  }
  return std::nullopt;
}

absl::StatusOr<ServingPlan> ApplyPlanFile(const PlanFile& file, const ModelConfig& model,
                                          PrecisionBinder& binder) {
  ServingPlan out;
  out.plan.dtype.fill(model.weight_dtype);
  out.plan.dtype[static_cast<int>(LayerClass::kKvCache)] = model.kv_dtype;
  std::array<std::optional<DType>, kNumLayerClasses> widest;
  for (const PlannedLayer& l : file.layers) {
    std::optional<LayerClass> cls = ClassifyPlanNode(l.node);
    absl::StatusOr<DType> d = PlanFormatDType(l.format);
    if (!d.ok()) return d.status();
    if (!cls) {
      out.unmatched.push_back(l.node);
      continue;
    }
    std::optional<DType>& w = widest[static_cast<int>(*cls)];
    if (!w || Rank(*d) < Rank(*w)) w = *d;
    ++out.nodes[static_cast<int>(*cls)];
  }
  if (file.measured_sqnr_db && std::isfinite(*file.measured_sqnr_db)) {
    out.measured_rel_error = std::pow(10.0, -*file.measured_sqnr_db / 20.0);
  }
  for (int i = 0; i < kNumLayerClasses; ++i) {
    if (!widest[i]) continue;
    const LayerClass cls = static_cast<LayerClass>(i);
    const DType d = *widest[i];
    if (!binder.capabilities().Supports(d)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the plan runs ", std::string(LayerClassName(cls)), " in ", std::string(DTypeName(d)),
          ", which ", binder.capabilities().gpu, " does not run (plan made for ",
          file.gpu.empty() ? "an unnamed GPU" : file.gpu, ")"));
    }
    out.plan.dtype[i] = d;
    std::string line =
        absl::StrCat(std::string(LayerClassName(cls)), ": ", std::string(DTypeName(d)),
                     " (plan: ", out.nodes[i], " node", out.nodes[i] == 1 ? "" : "s", ")");
    if (d != DType::kFP32 && out.measured_rel_error) {
      binder.ReportError(cls, d, *out.measured_rel_error);
      if (!binder.Acceptable(cls, d)) {
        absl::StrAppend(&line,
                        absl::StrFormat("; measured output error %.3g%% is over the class limit, "
                                        "kept as planned (the plan met its budget)",
                                        100 * *out.measured_rel_error));
      }
    }
    out.plan.decisions.push_back(std::move(line));
  }
  for (const std::string& n : out.unmatched) {
    out.plan.decisions.push_back(absl::StrCat("node \"", n, "\": no layer class matches its name"));
  }
  return out;
}

int64_t PlanGpuMemoryMib(const PlanFile& file, const PodMemoryOptions& options) {
  constexpr int64_t kMib = int64_t{1} << 20;
  const double activations =
      options.activation_fraction_of_fp32_weights * static_cast<double>(file.bytes_fp32);
  const int64_t bytes = file.bytes + static_cast<int64_t>(std::ceil(activations));
  return (bytes + kMib - 1) / kMib + options.runtime_overhead_mib;
}

}  // namespace seedance::model
