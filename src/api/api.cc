// Error format, status mapping, the JSON body reader and the pod decoder (api.h).
#include "seedance/api/api.h"

#include <array>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "json_body.h"
#include "seedance/base/text.h"

namespace seedance::api {
namespace {

using internal::ChildPath;
using internal::IndexPath;
using internal::Json;
using internal::Member;
using internal::Sv;

constexpr std::string_view kFieldPayload = "seedance.dev/api/field";
constexpr std::string_view kHttpPayload = "seedance.dev/api/http_status";

constexpr std::array<std::pair<absl::StatusCode, std::string_view>, 17> kCodeNames = {{
    {absl::StatusCode::kOk, "OK"},
    {absl::StatusCode::kCancelled, "Cancelled"},
    {absl::StatusCode::kUnknown, "Unknown"},
    {absl::StatusCode::kInvalidArgument, "InvalidArgument"},
    {absl::StatusCode::kDeadlineExceeded, "DeadlineExceeded"},
    {absl::StatusCode::kNotFound, "NotFound"},
    {absl::StatusCode::kAlreadyExists, "AlreadyExists"},
    {absl::StatusCode::kPermissionDenied, "PermissionDenied"},
    {absl::StatusCode::kResourceExhausted, "ResourceExhausted"},
    {absl::StatusCode::kFailedPrecondition, "FailedPrecondition"},
    {absl::StatusCode::kAborted, "Aborted"},
    {absl::StatusCode::kOutOfRange, "OutOfRange"},
    {absl::StatusCode::kUnimplemented, "Unimplemented"},
    {absl::StatusCode::kInternal, "Internal"},
    {absl::StatusCode::kUnavailable, "Unavailable"},
    {absl::StatusCode::kDataLoss, "DataLoss"},
    {absl::StatusCode::kUnauthenticated, "Unauthenticated"},
}};

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// A label name or value: <= 63 of [A-Za-z0-9_.-], alphanumeric at both ends.
bool IsLabelName(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// A label or annotation key: [PREFIX/]NAME.
bool IsLabelKey(std::string_view key) {
  if (size_t slash = key.find('/'); slash != std::string_view::npos) {
    if (!IsDnsSubdomain(key.substr(0, slash))) return false;
    key.remove_prefix(slash + 1);
  }
  return IsLabelName(key);
}

constexpr std::string_view kLabelRule =
    "[PREFIX/]NAME with PREFIX a DNS-1123 subdomain and NAME at most 63 characters of "
    "[A-Za-z0-9_.-], alphanumeric at both ends";

// A GPU model name in gpu_spec: [A-Za-z0-9._-]{1,64}.
bool IsModelName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

absl::Status CheckGpuSpec(std::string_view spec, std::string_view path) {
  if (spec.empty()) return absl::OkStatus();
  const std::vector<absl::string_view> parts = absl::StrSplit(Sv(spec), '|');
  if (parts.size() > static_cast<size_t>(core::kMaxGpuModels)) {
    return FieldError(path, absl::StrCat("must name at most ", core::kMaxGpuModels,
                                         " GPU models (got ", parts.size(), ")"));
  }
  for (absl::string_view p : parts) {
    if (!IsModelName(std::string_view(p.data(), p.size()))) {
      return FieldError(path, absl::StrCat("must be GPU model names separated by '|', each 1-64 "
                                           "characters of [A-Za-z0-9._-] (got ",
                                           internal::QuoteForMessage(spec), ")"));
    }
  }
  return absl::OkStatus();
}

const std::vector<std::string>& PodKeys() {
  static const auto* keys = new std::vector<std::string>{
      "name",      "namespace",   "cpu_milli",   "memory_mib",       "num_gpu",
      "gpu_milli", "gpu_spec",    "priority",    "labels",           "gang",
      "gang_min",  "annotations", "device_type", "device_memory_mib"};
  return *keys;
}

// device_type and device_memory_mib: what the pod's devices must be (only with num_gpu > 0).
absl::Status DecodeDeviceAsk(const Json& root, PodRequest* pod) {
  std::string type;
  const Json* type_json = Member(root, "device_type");
  if (absl::Status s = internal::ReadString(type_json, "$.device_type", 16, &type); !s.ok()) {
    return s;
  }
  const Json* memory = Member(root, "device_memory_mib");
  if (pod->num_gpu == 0 && (type_json != nullptr || memory != nullptr)) {
    return FieldError(type_json != nullptr ? "$.device_type" : "$.device_memory_mib",
                      "only with num_gpu > 0 (it describes the pod's devices)");
  }
  if (type_json != nullptr) {
    pod->device.type = core::DeviceClassFromName(type);
    if (pod->device.type == core::DeviceClass::kUnset) {
      return FieldError("$.device_type", absl::StrCat("must be \"gpu\", \"npu\" or \"any\" (got ",
                                                      internal::QuoteForMessage(type), ")"));
    }
  }
  return internal::ReadInt(memory, "$.device_memory_mib", 0, kMaxQuantity, &pod->device.memory_mib);
}

absl::Status DecodePod(const Json& root, PodRequest* pod) {
  if (!root.is_object()) {
    return FieldError("$", absl::StrCat("must be an object (got ", internal::Describe(root), ")"));
  }
  if (absl::Status s = internal::CheckKeys(root, "$", PodKeys()); !s.ok()) return s;
  const Json* name = Member(root, "name");
  if (name == nullptr) return FieldError("$.name", "missing required key \"name\"");
  if (absl::Status s = internal::ReadString(name, "$.name", 253, &pod->name); !s.ok()) return s;
  if (!IsDnsSubdomain(pod->name)) {
    return FieldError("$.name", absl::StrCat("must be a DNS-1123 name: lower-case letters, digits, "
                                             "'-' and '.', starting and ending alphanumeric (got ",
                                             internal::QuoteForMessage(pod->name), ")"));
  }
  if (absl::Status s = internal::ReadString(Member(root, "namespace"), "$.namespace", 63, &pod->ns);
      !s.ok()) {
    return s;
  }
  if (!IsDnsLabel(pod->ns)) {
    return FieldError("$.namespace",
                      absl::StrCat("must be a DNS-1123 label: at most 63 lower-case letters, "
                                   "digits and '-', starting and ending alphanumeric (got ",
                                   internal::QuoteForMessage(pod->ns), ")"));
  }
  for (auto [key, out] :
       {std::pair{"cpu_milli", &pod->cpu_milli}, std::pair{"memory_mib", &pod->memory_mib}}) {
    if (absl::Status s =
            internal::ReadInt(Member(root, key), absl::StrCat("$.", key), 0, kMaxQuantity, out);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          internal::ReadInt32(Member(root, "num_gpu"), "$.num_gpu", 0, kMaxPodGpus, &pod->num_gpu);
      !s.ok()) {
    return s;
  }
  const Json* milli = Member(root, "gpu_milli");
  if (pod->num_gpu == 0) {
    pod->gpu_milli = 0;
    if (absl::Status s = internal::ReadInt32(milli, "$.gpu_milli", 0, 0, &pod->gpu_milli);
        !s.ok()) {
      return FieldError("$.gpu_milli", absl::StrCat("must be 0 when num_gpu is 0 (got ",
                                                    internal::Describe(*milli), ")"));
    }
  } else {
    pod->gpu_milli = core::kMilliGpu;
    if (absl::Status s =
            internal::ReadInt32(milli, "$.gpu_milli", 1, core::kMilliGpu, &pod->gpu_milli);
        !s.ok()) {
      return s;
    }
    if (pod->num_gpu > 1 && pod->gpu_milli < core::kMilliGpu) {
      return FieldError("$.gpu_milli",
                        absl::StrCat("must be 1000 when num_gpu > 1 (got ", pod->gpu_milli,
                                     "): only a pod with num_gpu 1 may share a GPU"));
    }
  }
  if (absl::Status s =
          internal::ReadString(Member(root, "gpu_spec"), "$.gpu_spec", 4096, &pod->gpu_spec);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckGpuSpec(pod->gpu_spec, "$.gpu_spec"); !s.ok()) return s;
  if (absl::Status s = DecodeDeviceAsk(root, pod); !s.ok()) return s;
  if (absl::Status s = internal::ReadInt32(Member(root, "priority"), "$.priority", INT32_MIN,
                                           INT32_MAX, &pod->priority);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          internal::ReadStringMap(Member(root, "labels"), "$.labels", kMaxLabels, &pod->labels);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateLabels(pod->labels, "$.labels"); !s.ok()) return s;
  if (absl::Status s = internal::ReadString(Member(root, "gang"), "$.gang", 253, &pod->gang);
      !s.ok()) {
    return s;
  }
  if (!pod->gang.empty() && !IsDnsSubdomain(pod->gang)) {
    return FieldError("$.gang", absl::StrCat("must be empty or a DNS-1123 name (got ",
                                             internal::QuoteForMessage(pod->gang), ")"));
  }
  const Json* gang_min = Member(root, "gang_min");
  if (gang_min != nullptr && pod->gang.empty()) {
    return FieldError("$.gang_min", "only with \"gang\" (the gang's minimum members)");
  }
  if (absl::Status s = internal::ReadInt32(gang_min, "$.gang_min", 1, kMaxGangMin, &pod->gang_min);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ReadStringMap(Member(root, "annotations"), "$.annotations",
                                               kMaxAnnotationBytes, &pod->annotations);
      !s.ok()) {
    return s;
  }
  return ValidateAnnotations(pod->annotations, "$.annotations");
}

// The path of the innermost open value while nlohmann parses.
struct Frame {
  bool is_array = false;
  size_t index = 0;
  std::string key;
  std::set<std::string> keys;
};

std::string PathOf(const std::vector<Frame>& stack, size_t levels) {
  std::string path = "$";
  for (size_t i = 0; i < levels; ++i) {
    path = stack[i].is_array ? IndexPath(path, stack[i].index) : ChildPath(path, stack[i].key);
  }
  return path;
}

}  // namespace

core::PodShape PodRequest::Shape() const {
  core::PodShape shape;
  shape.cpu_milli = cpu_milli;
  shape.memory_mib = memory_mib;
  shape.num_gpu = num_gpu;
  shape.gpu_milli = gpu_milli;
  return shape;
}

// Kubernetes' rule (IsDNS1123Subdomain): dot-separated parts of lower-case alphanumerics and
// '-', each non-empty and starting and ending alphanumeric, 253 in all: "a..b", "a.-b" refused.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view label =
        s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) {
      return false;
    }
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsDnsLabel(std::string_view s) {
  return s.size() <= 63 && IsDnsSubdomain(s) && s.find('.') == std::string_view::npos;
}

absl::Status ValidateAnnotations(const std::map<std::string, std::string>& annotations,
                                 std::string_view path) {
  size_t bytes = 0;
  for (const auto& [key, value] : annotations) {
    if (!IsLabelKey(key)) {
      return FieldError(ChildPath(path, key),
                        absl::StrCat("invalid annotation key ", internal::QuoteForMessage(key),
                                     ": must be ", Sv(kLabelRule)));
    }
    bytes += key.size() + value.size();
  }
  if (bytes > kMaxAnnotationBytes) {
    return FieldError(path, absl::StrCat("must be at most ", kMaxAnnotationBytes,
                                         " bytes in all, keys and values (got ", bytes, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLabels(const std::map<std::string, std::string>& labels,
                            std::string_view path) {
  if (labels.size() > kMaxLabels) {
    return FieldError(
        path, absl::StrCat("must have at most ", kMaxLabels, " labels (got ", labels.size(), ")"));
  }
  for (const auto& [key, value] : labels) {
    const std::string p = ChildPath(path, key);
    if (!IsLabelKey(key)) {
      return FieldError(p, absl::StrCat("invalid label key ", internal::QuoteForMessage(key),
                                        ": must be ", Sv(kLabelRule)));
    }
    if (!value.empty() && !IsLabelName(value)) {
      return FieldError(p, absl::StrCat("invalid label value ", internal::QuoteForMessage(value),
                                        ": must be empty or at most 63 characters of "
                                        "[A-Za-z0-9_.-], alphanumeric at both ends"));
    }
  }
  return absl::OkStatus();
}

absl::Status FieldError(std::string_view field, std::string_view message) {
  absl::Status s = absl::InvalidArgumentError(absl::StrCat(Sv(field), ": ", Sv(message)));
  s.SetPayload(Sv(kFieldPayload), absl::Cord(Sv(field)));
  return s;
}

absl::Status internal::AttachField(absl::Status s, std::string_view field) {
  if (!s.ok()) s.SetPayload(Sv(kFieldPayload), absl::Cord(Sv(field)));
  return s;
}

std::string FieldOf(const absl::Status& s) {
  if (s.ok()) return "";
  if (auto field = s.GetPayload(Sv(kFieldPayload))) {
    return std::string(*field);
  }
  // A message from another reader that starts with a JSON path ("$.devices[0].model: ...").
  std::string_view message(s.message().data(), s.message().size());
  message = message.substr(0, message.find('\n'));
  if (message.empty() || message.front() != '$') return "";
  const size_t colon = message.find(": ");
  if (colon == std::string_view::npos) return "";
  return std::string(message.substr(0, colon));
}

absl::Status WithHttpStatus(absl::Status s, int http_status) {
  if (!s.ok()) s.SetPayload(Sv(kHttpPayload), absl::Cord(absl::StrCat(http_status)));
  return s;
}

int HttpStatusOf(const absl::Status& s) {
  if (auto code = s.GetPayload(Sv(kHttpPayload))) {
    int value = 0;
    if (absl::SimpleAtoi(std::string(*code), &value)) return value;
  }
  return 0;
}

absl::Status BodyTooLargeError(size_t size, size_t limit) {
  return WithHttpStatus(absl::ResourceExhaustedError(absl::StrCat("request body too large: ", size,
                                                                  " bytes (limit ", limit, ")")),
                        413);
}

std::string_view StatusCodeName(absl::StatusCode code) {
  for (const auto& [c, name] : kCodeNames) {
    if (c == code) return name;
  }
  return "Unknown";
}

absl::StatusCode StatusCodeFromName(std::string_view name) {
  for (const auto& [c, n] : kCodeNames) {
    if (n == name) return c;
  }
  return absl::StatusCode::kUnknown;
}

int HttpStatusFor(const absl::Status& s) {
  if (s.ok()) return 200;
  if (int http = HttpStatusOf(s); http >= 100 && http <= 599) return http;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string ErrorBody(const absl::Status& s) {
  Json error = Json::object();
  error["code"] = std::string(StatusCodeName(s.code()));
  error["message"] = std::string(s.message());
  const std::string field = FieldOf(s);
  error["field"] = field.empty() ? Json(nullptr) : Json(field);
  Json body = Json::object();
  body["error"] = std::move(error);
  return base::DumpJson(body) + "\n";
}

absl::StatusOr<Json> ParseJsonBody(std::string_view body) {
  if (body.size() > kMaxBodyBytes) return BodyTooLargeError(body.size(), kMaxBodyBytes);
  return internal::ParseJsonText(body);
}

absl::StatusOr<Json> internal::ParseJsonText(std::string_view body) {
  if (base::JsonNestingDepth(body, kMaxBodyDepth) > kMaxBodyDepth) {
    return FieldError("$", absl::StrCat("nested deeper than ", kMaxBodyDepth, " levels"));
  }
  std::vector<Frame> stack;
  std::optional<absl::Status> duplicate;
  auto on_event = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        stack.push_back(Frame{});
        break;
      case Json::parse_event_t::array_start:
        stack.push_back(Frame{.is_array = true, .index = 0, .key = {}, .keys = {}});
        break;
      case Json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (!stack.back().keys.insert(key).second && !duplicate.has_value()) {
          duplicate = FieldError(PathOf(stack, stack.size() - 1),
                                 absl::StrCat("duplicate key ", internal::QuoteForMessage(key)));
        }
        stack.back().key = std::move(key);
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        if (!stack.empty() && stack.back().is_array) ++stack.back().index;
        break;
      case Json::parse_event_t::value:
        if (!stack.empty() && stack.back().is_array) ++stack.back().index;
        break;
    }
    return true;
  };
  Json root;
  try {
    root = Json::parse(body.begin(), body.end(), on_event);
  } catch (const Json::exception& e) {
    std::string_view what = e.what();
    if (size_t pos = what.find("] "); pos != std::string_view::npos) what.remove_prefix(pos + 2);
    return FieldError("$", absl::StrCat("invalid JSON: ", base::Clip(what, 300)));
  }
  if (duplicate.has_value()) return *duplicate;
  return root;
}

absl::StatusOr<PodRequest> ParsePodRequest(std::string_view body) {
  absl::StatusOr<Json> root = ParseJsonBody(body);
  if (!root.ok()) return root.status();
  PodRequest pod;
  if (absl::Status s = DecodePod(*root, &pod); !s.ok()) return s;
  return pod;
}

Json PodRequestToJson(const PodRequest& pod) {
  Json j = Json::object();
  j["name"] = pod.name;
  j["namespace"] = pod.ns;
  j["cpu_milli"] = pod.cpu_milli;
  j["memory_mib"] = pod.memory_mib;
  j["num_gpu"] = pod.num_gpu;
  j["gpu_milli"] = pod.gpu_milli;
  j["gpu_spec"] = pod.gpu_spec;
  // Written only when set, so that a member running an older version still reads the body.
  if (pod.device.type != core::DeviceClass::kUnset) {
    j["device_type"] = std::string(core::DeviceClassName(pod.device.type));
  }
  if (pod.device.memory_mib > 0) j["device_memory_mib"] = pod.device.memory_mib;
  j["priority"] = pod.priority;
  j["labels"] = Json::object();
  for (const auto& [k, v] : pod.labels) j["labels"][k] = v;
  j["gang"] = pod.gang;
  if (!pod.gang.empty()) j["gang_min"] = pod.gang_min;
  if (!pod.annotations.empty()) {
    j["annotations"] = Json::object();
    for (const auto& [k, v] : pod.annotations) j["annotations"][k] = v;
  }
  return j;
}

}  // namespace seedance::api
