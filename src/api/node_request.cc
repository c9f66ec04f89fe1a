// PUT /v1/nodes/{name} bodies (api.h): the descriptor form goes through the cluster descriptor's
// own reader (core::ParseNodeDescriptorJson + ToNodeSpec); the short form, taints and cordoned
// are read here.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "json_body.h"
#include "seedance/api/api.h"
#include "seedance/core/resource_descriptor.h"

namespace seedance::api {
namespace {

using internal::Json;
using internal::Member;

const std::vector<std::string>& CommonKeys() {
  static const auto* keys =
      new std::vector<std::string>{"name", "labels", "taints", "cordoned", "gpu_models"};
  return *keys;
}
const std::vector<std::string>& DescriptorKeys() {
  static const auto* keys = new std::vector<std::string>{"numa_nodes", "devices"};
  return *keys;
}
const std::vector<std::string>& ShortKeys() {
  static const auto* keys = new std::vector<std::string>{
      "cpu_milli",         "memory_mib", "num_gpus",          "gpu_model",
      "cost_usd_per_hour", "power_w",    "device_memory_mib", "device_type"};
  return *keys;
}

std::vector<std::string> Join(const std::vector<std::string>& a,
                              const std::vector<std::string>& b) {
  std::vector<std::string> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

bool HasAny(const Json& root, const std::vector<std::string>& keys) {
  for (const std::string& k : keys) {
    if (Member(root, k) != nullptr) return true;
  }
  return false;
}

absl::Status ReadTaints(const Json* v, std::vector<core::Taint>* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_array()) {
    return FieldError("$.taints", absl::StrCat("must be an array of {key, value, effect} (got ",
                                               internal::Describe(*v), ")"));
  }
  if (v->size() > kMaxTaints) {
    return FieldError("$.taints", absl::StrCat("must have at most ", kMaxTaints, " taints (got ",
                                               v->size(), ")"));
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& t = (*v)[i];
    const std::string path = internal::IndexPath("$.taints", i);
    if (!t.is_object()) {
      return FieldError(path, absl::StrCat("must be an object {key, value, effect} (got ",
                                           internal::Describe(t), ")"));
    }
    if (absl::Status s = internal::CheckKeys(t, path, {"key", "value", "effect"}); !s.ok()) {
      return s;
    }
    core::Taint taint;
    for (const char* required : {"key", "effect"}) {
      if (Member(t, required) == nullptr) {
        return FieldError(internal::ChildPath(path, required),
                          absl::StrCat("missing required key \"", required, "\""));
      }
    }
    if (absl::Status s = internal::ReadString(Member(t, "key"), path + ".key", 317, &taint.key);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            internal::ReadString(Member(t, "value"), path + ".value", 63, &taint.value);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            internal::ReadString(Member(t, "effect"), path + ".effect", 64, &taint.effect);
        !s.ok()) {
      return s;
    }
    // Same syntax as a label's key and value.
    if (!ValidateLabels({{taint.key, ""}}, path).ok()) {
      return FieldError(path + ".key", absl::StrCat("must be [PREFIX/]NAME like a label key (got ",
                                                    internal::QuoteForMessage(taint.key), ")"));
    }
    if (!ValidateLabels({{"k", taint.value}}, path).ok()) {
      return FieldError(path + ".value",
                        absl::StrCat("must be empty or like a label value: at most 63 characters "
                                     "of [A-Za-z0-9_.-], alphanumeric at both ends (got ",
                                     internal::QuoteForMessage(taint.value), ")"));
    }
    if (taint.effect != core::kTaintNoSchedule && taint.effect != core::kTaintPreferNoSchedule &&
        taint.effect != core::kTaintNoExecute) {
      return FieldError(path + ".effect",
                        absl::StrCat("must be NoSchedule, PreferNoSchedule or NoExecute (got ",
                                     internal::QuoteForMessage(taint.effect), ")"));
    }
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j].key == taint.key && (*out)[j].effect == taint.effect) {
        return FieldError(path,
                          absl::StrCat("duplicate taint ",
                                       internal::QuoteForMessage(taint.key + ":" + taint.effect),
                                       " (first at $.taints[", j, "])"));
      }
    }
    out->push_back(std::move(taint));
  }
  return absl::OkStatus();
}

// The short form's "device_type" ("gpu", the default, or "npu") and "device_memory_mib" (one
// device's memory; 0 or absent: the hardware catalog's figure for gpu_model).
absl::Status DecodeShortDevices(const Json& root, core::NodeSpec* spec) {
  const Json* type = Member(root, "device_type");
  const Json* memory = Member(root, "device_memory_mib");
  if (spec->num_gpus == 0 && (type != nullptr || memory != nullptr)) {
    return FieldError(type != nullptr ? "$.device_type" : "$.device_memory_mib",
                      "only with num_gpus > 0 (it describes the node's devices)");
  }
  std::string name = "gpu";
  if (absl::Status s = internal::ReadString(type, "$.device_type", 16, &name); !s.ok()) return s;
  if (name != "gpu" && name != "npu") {
    return FieldError("$.device_type", absl::StrCat("must be \"gpu\" or \"npu\" (got ",
                                                    internal::QuoteForMessage(name), ")"));
  }
  spec->npu = name == "npu";
  return internal::ReadInt(memory, "$.device_memory_mib", 0, kMaxQuantity,
                           &spec->device_memory_mib);
}

absl::Status DecodeShortForm(const Json& root, core::NodeSpec* spec) {
  if (absl::Status s = internal::CheckKeys(root, "$", Join(CommonKeys(), ShortKeys())); !s.ok()) {
    return s;
  }
  if (Member(root, "gpu_models") != nullptr) {
    return FieldError("$.gpu_models",
                      "only the descriptor form (numa_nodes, devices) takes gpu_models; the short "
                      "form gives cost_usd_per_hour and power_w for the whole node");
  }
  for (const char* required : {"cpu_milli", "memory_mib"}) {
    if (Member(root, required) == nullptr) {
      return FieldError(absl::StrCat("$.", required),
                        absl::StrCat("missing required key \"", required, "\""));
    }
  }
  if (absl::Status s = internal::ReadInt(Member(root, "cpu_milli"), "$.cpu_milli", 0, kMaxQuantity,
                                         &spec->cpu_milli);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ReadInt(Member(root, "memory_mib"), "$.memory_mib", 0,
                                         kMaxQuantity, &spec->memory_mib);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ReadInt32(Member(root, "num_gpus"), "$.num_gpus", 0,
                                           core::kMaxGpusPerNode, &spec->num_gpus);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          internal::ReadString(Member(root, "gpu_model"), "$.gpu_model", 64, &spec->gpu_model);
      !s.ok()) {
    return s;
  }
  if (spec->num_gpus > 0 && spec->gpu_model.empty()) {
    return FieldError("$.gpu_model", "required when num_gpus > 0 (the node's GPU model name)");
  }
  if (spec->num_gpus == 0 && !spec->gpu_model.empty()) {
    return FieldError("$.gpu_model", "must be absent or empty when num_gpus is 0");
  }
  for (char c : spec->gpu_model) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) {
      return FieldError("$.gpu_model",
                        absl::StrCat("must be 1-64 characters of [A-Za-z0-9._-] "
                                     "(got ",
                                     internal::QuoteForMessage(spec->gpu_model), ")"));
    }
  }
  if (absl::Status s = DecodeShortDevices(root, spec); !s.ok()) return s;
  if (absl::Status s =
          internal::ReadNumber(Member(root, "cost_usd_per_hour"), "$.cost_usd_per_hour", 0, 1e9,
                               &spec->cost_usd_per_hour);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          internal::ReadNumber(Member(root, "power_w"), "$.power_w", 0, 1e9, &spec->power_w);
      !s.ok()) {
    return s;
  }
  return internal::ReadStringMap(Member(root, "labels"), "$.labels", kMaxLabels, &spec->labels);
}

absl::Status DecodeDescriptorForm(const Json& root, core::NodeSpec* spec) {
  if (absl::Status s = internal::CheckKeys(root, "$", Join(CommonKeys(), DescriptorKeys()));
      !s.ok()) {
    return s;
  }
  // The descriptor reader sees only the node's own keys.
  Json node = Json::object();
  for (const auto& item : root.items()) {
    if (item.key() == "taints" || item.key() == "cordoned" || item.key() == "gpu_models") continue;
    node[item.key()] = item.value();
  }
  absl::StatusOr<core::ClusterDescriptor> cluster =
      core::ParseNodeDescriptorJson(node, Member(root, "gpu_models"), "$");
  if (!cluster.ok()) {
    const std::string message(cluster.status().message());
    // Keep the field of the first problem for the reply's "field".
    absl::Status s = absl::InvalidArgumentError(message);
    const std::string field = FieldOf(s);
    return field.empty() ? s : FieldError(field, message.substr(field.size() + 2));
  }
  absl::StatusOr<core::NodeSpec> converted = cluster->nodes[0].ToNodeSpec(*cluster);
  if (!converted.ok()) {
    if (converted.status().code() == absl::StatusCode::kInvalidArgument) {
      return FieldError("$.devices", std::string(converted.status().message()));
    }
    return converted.status();
  }
  *spec = *std::move(converted);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NodeRequest> DecodeNodeRequest(std::string_view name_in_path,
                                              std::string_view body) {
  if (!IsDnsSubdomain(name_in_path)) {
    return FieldError("name", absl::StrCat("must be a DNS-1123 name (the node's name, from the "
                                           "request path): lower-case letters, digits, '-' and "
                                           "'.', starting and ending alphanumeric, at most 253 "
                                           "(got ",
                                           internal::QuoteForMessage(name_in_path), ")"));
  }
  absl::StatusOr<Json> parsed = ParseJsonBody(body);
  if (!parsed.ok()) return parsed.status();
  const Json& root = *parsed;
  if (!root.is_object()) {
    return FieldError("$", absl::StrCat("must be an object (got ", internal::Describe(root), ")"));
  }
  NodeRequest request;
  if (const Json* name = Member(root, "name"); name != nullptr) {
    std::string body_name;
    if (absl::Status s = internal::ReadString(name, "$.name", 253, &body_name); !s.ok()) return s;
    if (body_name != name_in_path) {
      return FieldError("$.name", absl::StrCat("must equal the name in the path ",
                                               internal::QuoteForMessage(name_in_path), " (got ",
                                               internal::QuoteForMessage(body_name), ")"));
    }
  }
  const bool descriptor = HasAny(root, DescriptorKeys());
  const bool short_form = HasAny(root, ShortKeys());
  if (descriptor && short_form) {
    return FieldError("$",
                      "mixes the descriptor form (numa_nodes, devices) and the short form "
                      "(cpu_milli, memory_mib, num_gpus, gpu_model, ...); use one");
  }
  if (!descriptor && !short_form) {
    return FieldError("$",
                      "must give the node's capacity: numa_nodes (descriptor form) or "
                      "cpu_milli and memory_mib (short form)");
  }
  request.descriptor_form = descriptor;
  core::NodeSpec& spec = request.spec;
  if (descriptor) {
    // The descriptor requires a name; the path supplies it when the body has none.
    if (Member(root, "name") == nullptr) {
      Json named = root;
      named["name"] = std::string(name_in_path);
      if (absl::Status s = DecodeDescriptorForm(named, &spec); !s.ok()) return s;
    } else if (absl::Status s = DecodeDescriptorForm(root, &spec); !s.ok()) {
      return s;
    }
  } else if (absl::Status s = DecodeShortForm(root, &spec); !s.ok()) {
    return s;
  }
  spec.name = std::string(name_in_path);
  if (absl::Status s = ValidateLabels(spec.labels, "$.labels"); !s.ok()) return s;
  if (absl::Status s = ReadTaints(Member(root, "taints"), &spec.taints); !s.ok()) return s;
  if (absl::Status s =
          internal::ReadBool(Member(root, "cordoned"), "$.cordoned", &request.cordoned);
      !s.ok()) {
    return s;
  }
  return request;
}

absl::Status ValidateNodeSpec(const core::NodeSpec& spec, std::string_view path) {
  auto bad = [&](std::string_view field, std::string message) {
    return FieldError(std::string(path) + std::string(field), message);
  };
  if (!IsDnsSubdomain(spec.name)) {
    return bad(".name", absl::StrCat("must be a DNS-1123 name (got ",
                                     internal::QuoteForMessage(spec.name), ")"));
  }
  for (auto [field, v] :
       {std::pair{".cpu_milli", spec.cpu_milli}, {".memory_mib", spec.memory_mib}}) {
    if (v < 0 || v > kMaxQuantity) {
      return bad(field, absl::StrCat("must be in 0..", kMaxQuantity, " (got ", v, ")"));
    }
  }
  if (spec.num_gpus < 0 || spec.num_gpus > core::kMaxGpusPerNode) {
    return bad(".num_gpus",
               absl::StrCat("must be in 0..", core::kMaxGpusPerNode, " (got ", spec.num_gpus, ")"));
  }
  const bool model_ok = spec.gpu_model.size() <= 64 &&
                        std::all_of(spec.gpu_model.begin(), spec.gpu_model.end(), [](char c) {
                          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                 (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
                        });
  if (!model_ok) {
    return bad(".gpu_model", absl::StrCat("must be at most 64 characters of [A-Za-z0-9._-] (got ",
                                          internal::QuoteForMessage(spec.gpu_model), ")"));
  }
  return ValidateLabels(spec.labels, std::string(path) + ".labels");
}

absl::StatusOr<core::NodeSpec> ParseNodeRequest(std::string_view name_in_path,
                                                std::string_view body) {
  absl::StatusOr<NodeRequest> request = DecodeNodeRequest(name_in_path, body);
  if (!request.ok()) return request.status();
  return std::move(request->spec);
}

}  // namespace seedance::api
