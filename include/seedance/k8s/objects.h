// Kubernetes v1.Node and v1.Pod objects, as `kubectl get -o json` prints them and as the
// scheduler extender receives them, decoded into what Seedance schedules with.
//
// Node: allocatable CPU and memory (rounded down), the GPU count and model, the per-GPU memory,
// labels, taints (a cordoned node carries node.kubernetes.io/unschedulable:NoSchedule, as the
// API server adds it) and the GPU UUIDs Seedance's device plugin publishes. GPU count, in order
// of precedence: label seedance.io/gpu-count, label nvidia.com/gpu.count (NVIDIA GPU feature
// discovery: physical GPUs even where HAMi advertises more virtual ones), allocatable
// nvidia.com/gpu. Model: label seedance.io/gpu-model, then nvidia.com/gpu.product. GPU memory
// (MiB): label seedance.io/gpu-memory-mib, then nvidia.com/gpu.memory.
//
// Pod: the effective request (the larger of the containers' sum, restartable init containers
// included, and each init container's need, as the kubelet computes it, plus spec.overhead),
// CPU and memory rounded up; a container's missing request defaults to its limit. GPU requests
// are understood in four styles (docs/kubernetes.md has the table):
//   seedance  seedance.io/gpu-milli (share of one GPU, 1000 = whole), seedance.io/gpu-count
//             (default 1), seedance.io/gpu-memory-mib (per GPU)
//   whole     nvidia.com/gpu: N, nothing else
//   hami      nvidia.com/gpu: N with nvidia.com/gpucores (percent of a GPU),
//             nvidia.com/gpumem (MiB) or nvidia.com/gpumem-percentage; annotations
//             nvidia.com/use-gputype / nouse-gputype select models by substring
//   kai       annotations gpu-fraction (0 < f <= 1), gpu-fraction-num-devices, gpu-memory (MiB)
// A share given by memory is turned into milli against a node's GPU memory by the caller
// (Pod::ShareFor). The GPU model a pod accepts comes from its nodeSelector or required node
// affinity on seedance.io/gpu-model or nvidia.com/gpu.product.
//
// What Seedance does not understand (an extended resource it does not know, containers asking
// for different GPU shares) is not an error of the JSON: it is reported as an Unknown with its
// JSON path, and the caller decides whether to refuse or skip the object. Malformed JSON (wrong
// types, bad quantities) is InvalidArgument naming the JSON path. Paths are those of
// base/json_path.h: "$.items[0].spec.containers[1].resources.limits[\"amd.com/gpu\"]".
//
// Thread-safety: pure functions over values.
#ifndef SEEDANCE_K8S_OBJECTS_H_
#define SEEDANCE_K8S_OBJECTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json_fwd.hpp"
#include "seedance/core/cluster_state.h"

namespace seedance::k8s {

// Names Seedance reads and writes.
inline constexpr char kGpuMilliResource[] = "seedance.io/gpu-milli";
inline constexpr char kGpuCountResource[] = "seedance.io/gpu-count";
inline constexpr char kGpuMemoryResource[] = "seedance.io/gpu-memory-mib";
inline constexpr char kNvidiaGpuResource[] = "nvidia.com/gpu";
inline constexpr char kHamiGpuMemResource[] = "nvidia.com/gpumem";
inline constexpr char kHamiGpuCoresResource[] = "nvidia.com/gpucores";
inline constexpr char kHamiGpuMemPctResource[] = "nvidia.com/gpumem-percentage";
inline constexpr char kKaiFractionAnnotation[] = "gpu-fraction";
inline constexpr char kKaiNumDevicesAnnotation[] = "gpu-fraction-num-devices";
inline constexpr char kKaiMemoryAnnotation[] = "gpu-memory";
inline constexpr char kHamiUseTypeAnnotation[] = "nvidia.com/use-gputype";
inline constexpr char kHamiNoUseTypeAnnotation[] = "nvidia.com/nouse-gputype";
// The decision the extender writes and the device plugin reads: "IDX:MILLI,..." or
// "UUID:MILLI,..." (docs/kubernetes.md).
inline constexpr char kGpusAnnotation[] = "seedance.io/gpus";
// Node annotation: the node's GPU UUIDs in index order, comma-separated.
inline constexpr char kGpuUuidsAnnotation[] = "seedance.io/gpu-uuids";
inline constexpr char kGpuModelLabel[] = "seedance.io/gpu-model";
inline constexpr char kGpuCountLabel[] = "seedance.io/gpu-count";
inline constexpr char kGpuMemoryLabel[] = "seedance.io/gpu-memory-mib";
inline constexpr char kGfdProductLabel[] = "nvidia.com/gpu.product";
inline constexpr char kGfdCountLabel[] = "nvidia.com/gpu.count";
inline constexpr char kGfdMemoryLabel[] = "nvidia.com/gpu.memory";

// Something well-formed that Seedance cannot honour.
struct Unknown {
  std::string path = {};  // JSON path of the field or object (base/json_path.h)
  std::string what;       // e.g. "extended resource amd.com/gpu"
};

struct Node {
  core::NodeSpec spec;
  bool unschedulable = false;          // spec.unschedulable (cordoned)
  int64_t gpu_memory_mib = 0;          // per GPU; 0 = unknown
  std::vector<std::string> gpu_uuids;  // kGpuUuidsAnnotation; empty = unknown
};

enum class GpuStyle { kNone, kSeedance, kWhole, kHami, kKai };
std::string_view GpuStyleName(GpuStyle style);  // "none", "seedance", "whole", "hami", "kai"

// One GPU of a placement decision (kGpusAnnotation).
struct GpuAssignment {
  int index = -1;    // -1 when given by UUID
  std::string uuid = {};  // empty when given by index
  int32_t milli = 0;
};

struct Pod {
  std::string uid;
  std::string name;
  std::string ns;
  std::string phase;      // status.phase: Pending, Running, Succeeded, Failed, Unknown
  std::string node_name;  // spec.nodeName; empty = not bound
  std::string qos;        // status.qosClass
  // The request. gpu_milli is the share asked by compute (or 1000 for whole GPUs); a share asked
  // by memory only is in gpu_memory_mib and turned into milli by ShareFor.
  core::PodShape shape;
  int64_t gpu_memory_mib = 0;  // per GPU; 0 = not asked by memory
  GpuStyle style = GpuStyle::kNone;
  // Accepted GPU models ("A|B"; empty = any), and HAMi's substrings when it used them.
  std::string gpu_spec;
  std::vector<std::string> gpu_type_substrings;
  std::vector<std::string> gpu_type_excluded;
  int32_t priority = 0;
  std::map<std::string, std::string> labels;
  std::vector<GpuAssignment> gpus;  // kGpusAnnotation; empty = none written
  int64_t creation_unix_s = -1;     // metadata.creationTimestamp; -1 = absent

  bool Terminal() const { return phase == "Succeeded" || phase == "Failed"; }
  // The pod's identity in Seedance's ledgers: its UID, or "namespace/name" when it has none.
  std::string Key() const { return uid.empty() ? ns + "/" + name : uid; }
  // The per-GPU share in milli on GPUs of `gpu_memory_mib` MiB: the larger of the compute share
  // and the memory share (rounded up, at most 1000). 0 when the share is asked by memory and the
  // GPU memory is unknown (0).
  int32_t ShareFor(int64_t node_gpu_memory_mib) const;
};

// Decode `j` (a v1.Node / v1.Pod object), `path` its JSON path for messages ("$" for a whole
// document, "$.items[3]" for an element of a list). Malformed fields are InvalidArgument
// "PATH.field: ..."; well-formed things Seedance cannot honour go to `unknown` (and the object is
// still filled as far as it goes).
[[nodiscard]] absl::Status DecodeNode(const nlohmann::json& j, const std::string& path, Node* out,
                                      std::vector<Unknown>* unknown);
[[nodiscard]] absl::Status DecodePod(const nlohmann::json& j, const std::string& path, Pod* out,
                                     std::vector<Unknown>* unknown);

// A pod that asks, in the seedance style, for `gpu_memory_mib` MiB of one GPU (kGpuCountResource
// 1 and kGpuMemoryResource as limits), scheduled by the `seedance` scheduler
// (deploy/kubernetes/scheduler-config.yaml), on nodes labelled kGpuModelLabel = `gpu_model` when
// that is not empty. DecodePod reads it back as that request (`seedance model plan --emit-pod`).
struct GpuPodManifest {
  std::string name;  // made a DNS-1123 label: lower case, other characters '-', at most 63
  std::string image;
  std::string gpu_model;
  int64_t gpu_memory_mib = 0;  // REQUIRES: > 0
  std::map<std::string, std::string> annotations = {};
};
// The v1.Pod as JSON text, which is also YAML: `kubectl apply -f` takes it.
std::string EncodeGpuPod(const GpuPodManifest& manifest);

}  // namespace seedance::k8s

#endif  // SEEDANCE_K8S_OBJECTS_H_
