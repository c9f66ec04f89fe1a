// The REST API's request bodies, decoded and validated, and its error format (docs/api.md).
//
// Every decoder takes the raw body (untrusted bytes from the network) and either returns a fully
// validated value or an InvalidArgument status whose message starts with the JSON path of the
// first problem: "$.gpu_milli: must be an integer in 0..1000 (got 1500)". FieldOf(status) gives
// the path ("$.gpu_milli"), which ErrorBody puts in the reply's "field". Bodies are limited in
// size (kMaxBodyBytes: ResourceExhausted, HTTP 413) and nesting depth (kMaxBodyDepth); duplicate
// keys, unknown keys (with a did-you-mean), invalid UTF-8, non-integer numbers where integers
// are expected and null values are refused.
//
// Thread-safety: all functions are pure and may be called concurrently.
#ifndef SEEDANCE_API_API_H_
#define SEEDANCE_API_API_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/core/cluster_state.h"

namespace seedance::api {

// Largest request body the decoders accept (the server's --max-body default).
inline constexpr size_t kMaxBodyBytes = size_t{1} << 20;
// Deepest nesting of objects and arrays in a body.
inline constexpr int kMaxBodyDepth = 32;
// Most labels on one pod or node, and most taints on one node.
inline constexpr size_t kMaxLabels = 64;
inline constexpr size_t kMaxTaints = 64;
// Most bytes of a pod's annotations, keys and values together (as Kubernetes, 256 KiB).
inline constexpr size_t kMaxAnnotationBytes = size_t{256} << 10;
// Largest cpu_milli / memory_mib a request may carry (2^40).
inline constexpr int64_t kMaxQuantity = int64_t{1} << 40;
// Largest gang_min.
inline constexpr int32_t kMaxGangMin = 10000;
// Most GPUs one pod may ask for (as many as a node can have).
inline constexpr int32_t kMaxPodGpus = core::kMaxGpusPerNode;

// POST /v1/pods.
struct PodRequest {
  std::string name;            // DNS-1123 subdomain, <= 253 characters (required)
  std::string ns = "default";  // "namespace" in JSON: DNS-1123 label, <= 63 characters
  int64_t cpu_milli = 0;       // 0..2^40
  int64_t memory_mib = 0;      // 0..2^40
  int32_t num_gpu = 0;         // 0..16
  int32_t gpu_milli = 0;       // per GPU: 1..1000 when num_gpu > 0 (default 1000), else 0;
                               // below 1000 only with num_gpu == 1 (a GPU-sharing pod)
  std::string gpu_spec;        // "A100|H100": GPU models accepted; empty = any
  // What the pod's devices must be (only with num_gpu > 0): "device_type" "gpu", "npu" or "any"
  // (absent: the models gpu_spec names, whatever their kind, or GPUs only when it names none) and
  // "device_memory_mib", the least memory each device must have (0..2^40; 0 = any).
  core::DeviceAsk device;
  int32_t priority = 0;                       // any 32-bit integer; higher is served first
  std::map<std::string, std::string> labels;  // Kubernetes-style keys and values
  std::string gang;                           // empty = none; else a DNS-1123 subdomain
  // Gang members that must be placed together (minMember); the gang is placed all at once or
  // not at all, and more members than this are placed as they fit (an elastic gang). 1..10000,
  // default 1; only with `gang`.
  int32_t gang_min = 1;
  // Kubernetes-style annotations: keys as label keys, any string values, at most
  // kMaxAnnotationBytes in all. Seedance keeps them with the pod; a backend may read its own
  // (the Slurm backend's slurm.seedance.io/script, docs/slurm.md).
  std::map<std::string, std::string> annotations;

  core::PodShape Shape() const;  // cpu, memory, GPUs (gpu_model_mask left 0)
  bool operator==(const PodRequest&) const = default;
};

// Decodes and validates a POST /v1/pods body.
absl::StatusOr<PodRequest> ParsePodRequest(std::string_view body);
// The request as the JSON object ParsePodRequest reads (every field, "namespace" for ns):
// ParsePodRequest(PodRequestToJson(r).dump()) == r for every valid r.
nlohmann::ordered_json PodRequestToJson(const PodRequest& pod);

// PUT /v1/nodes/{name}. Two forms:
//   descriptor form: one node as in the cluster descriptor (docs/formats.md: name, numa_nodes,
//     devices, labels) plus optional "gpu_models" {MODEL: {memory_mib, price_usd_per_hour,
//     power_w}} for the models its GPUs name; parsed and validated by the descriptor's own reader
//     (core::ParseNodeDescriptorJson), converted with NodeDescriptor::ToNodeSpec;
//   short form: {"cpu_milli", "memory_mib", "num_gpus", "gpu_model", "cost_usd_per_hour",
//     "power_w", "labels"} (cpu_milli and memory_mib required; gpu_model required when
//     num_gpus > 0 and refused when it is 0).
// Both forms take "name" (optional; must equal the name in the path when given), "taints"
// [{"key", "value", "effect": NoSchedule|PreferNoSchedule|NoExecute}] and "cordoned" (bool).
struct NodeRequest {
  core::NodeSpec spec;  // name = the name in the path; labels and taints filled in
  bool cordoned = false;
  bool descriptor_form = false;
};
absl::StatusOr<NodeRequest> DecodeNodeRequest(std::string_view name_in_path, std::string_view body);
// DecodeNodeRequest(...).spec.
absl::StatusOr<core::NodeSpec> ParseNodeRequest(std::string_view name_in_path,
                                                std::string_view body);

// The checks DecodeNodeRequest makes, on a node that came another way (the kube-scheduler
// extender's node list): a DNS-1123 name, quantities within kMaxQuantity, at most
// core::kMaxGpusPerNode GPUs with a model name of [A-Za-z0-9._-], Kubernetes labels. `path`
// names the node in the error ("$.Nodes.items[3]").
absl::Status ValidateNodeSpec(const core::NodeSpec& spec, std::string_view path);

// True for a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.', starting and ending
// alphanumeric, <= 253) - pod and node names; and for a DNS-1123 label (no '.', <= 63) -
// namespaces.
bool IsDnsSubdomain(std::string_view s);
bool IsDnsLabel(std::string_view s);
// Kubernetes label syntax: key = [PREFIX/]NAME, PREFIX a DNS subdomain, NAME <= 63 characters
// of [A-Za-z0-9_.-] starting and ending alphanumeric; value empty or like NAME. On failure the
// status names `path` + the key.
absl::Status ValidateLabels(const std::map<std::string, std::string>& labels,
                            std::string_view path);
// Annotations: keys as label keys, values any string, kMaxAnnotationBytes in all.
absl::Status ValidateAnnotations(const std::map<std::string, std::string>& annotations,
                                 std::string_view path);

// An InvalidArgument status "FIELD: MESSAGE" that remembers FIELD (a JSON path such as
// "$.labels").
absl::Status FieldError(std::string_view field, std::string_view message);
// The JSON path a decoder's error names: "$.gpu_milli", or "" when the status names none.
std::string FieldOf(const absl::Status& s);

// A status that carries the HTTP status it must be answered with, overriding HttpStatusFor's
// table (e.g. 410 for a watch whose revision is too old, 413 for an oversized body).
absl::Status WithHttpStatus(absl::Status s, int http_status);
// The HTTP status attached by WithHttpStatus (or by Client::Call: the reply's status), or 0.
int HttpStatusOf(const absl::Status& s);
// ResourceExhausted "request body too large ..." answered with 413.
absl::Status BodyTooLargeError(size_t size, size_t limit);

// The reply for a failure: {"error": {"code": "InvalidArgument", "message": ..., "field": ...}}
// ("field" is null when FieldOf is empty) plus a trailing newline.
std::string ErrorBody(const absl::Status& s);
// HttpStatusOf when set; else InvalidArgument/OutOfRange 400, Unauthenticated 401,
// PermissionDenied 403, NotFound 404, AlreadyExists/FailedPrecondition/Aborted 409,
// ResourceExhausted 429, Unimplemented 501, Unavailable 503, DeadlineExceeded 504, else 500.
int HttpStatusFor(const absl::Status& s);
// "InvalidArgument", "NotFound", ... (absl's names in CamelCase); the inverse maps an unknown
// name to kUnknown.
std::string_view StatusCodeName(absl::StatusCode code);
absl::StatusCode StatusCodeFromName(std::string_view name);

// Parses a JSON request body with the limits above (size, depth, duplicate keys, UTF-8); errors
// are InvalidArgument naming the path ("$" for the document). Used by every decoder.
absl::StatusOr<nlohmann::ordered_json> ParseJsonBody(std::string_view body);

// `seedance apply -f`: YAML (one or more documents) or JSON (one object or an array of objects).
// Each object has "kind": Node|Pod and either a "spec" holding the body of PUT /v1/nodes/{name}
// or POST /v1/pods, or the body's fields inline beside "kind" (not both). A Node's name comes
// from "name" (inline or in spec). `line` is the object's first line in the file (1-based).
// Errors are InvalidArgument "SOURCE:LINE: PATH: MESSAGE" (PATH like "[2].spec.gpu_milli").
// Each body is fully validated with ParsePodRequest / DecodeNodeRequest before return.
struct ApplyObject {
  enum Kind { kNode, kPod } kind = kPod;
  std::string name;
  std::string body_json;  // the body to send (compact JSON)
  int line = 0;
};
inline constexpr size_t kMaxApplyObjects = 100000;
absl::StatusOr<std::vector<ApplyObject>> ParseApplyFile(std::string_view text,
                                                        std::string_view source);

}  // namespace seedance::api

#endif  // SEEDANCE_API_API_H_
