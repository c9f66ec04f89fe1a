// The kube-scheduler extender protocol (k8s.io/kube-scheduler/extender/v1) over the live
// scheduler: filter, prioritize, bind and preempt, as `seedance server` serves them under
// /k8s/extender/v1/ (docs/kubernetes.md).
//
// Wire format. The Go structs have no json tags, so the keys are the Go field names; Go's
// decoder matches keys case-insensitively, and so do these parsers. Requests:
//   ExtenderArgs           {Pod: v1.Pod, Nodes: v1.NodeList | null, NodeNames: [string] | null}
//   ExtenderBindingArgs    {PodName, PodNamespace, PodUID, Node}
//   ExtenderPreemptionArgs {Pod, NodeNameToVictims: {node: {Pods: [v1.Pod], NumPDBViolations}},
//                           NodeNameToMetaVictims: {node: {Pods: [{UID}], NumPDBViolations}}}
// Replies (keys exactly as written):
//   ExtenderFilterResult     {Nodes, NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error}
//   HostPriorityList         [{Host, Score}], Score in 0..10 (MaxExtenderPriority)
//   ExtenderBindingResult    {Error}
//   ExtenderPreemptionResult {NodeNameToMetaVictims}
// Nodes come back in the mode they were sent in (the whole objects, or names only:
// nodeCacheCapable), and every name returned is one that was sent.
//
// Decisions. Filter says, per node, why the pod does not fit by Seedance's accounting (GPU
// slices included, which kube-scheduler cannot see); reasons preemption cannot fix (cordoned,
// taint, GPU model, too few GPUs) go to FailedAndUnresolvableNodes. Prioritize gives 10 to the
// node Seedance's policy would choose (the same choice the simulator makes) and 0..9 to the
// others by their policy score. Bind places the pod on the node kube-scheduler chose (Reserve,
// the topology GPU chooser, NUMA) and returns the GPUs; the caller then writes them on the pod
// (annotation seedance.io/gpus) and creates the Binding, and forgets the pod if that fails.
//
// Thread-safety: the parsers are pure; the verbs need exclusive use of the Scheduler (the
// server's loop thread).
#ifndef SEEDANCE_K8S_EXTENDER_H_
#define SEEDANCE_K8S_EXTENDER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/k8s/objects.h"
#include "seedance/sched/scheduler.h"

namespace seedance::k8s {

inline constexpr int64_t kMaxExtenderPriority = 10;

struct ExtenderArgs {
  Pod pod;
  // Nodes mode (nodeCacheCapable false): the objects as sent, and decoded.
  bool has_nodes = false;
  std::vector<nlohmann::json> node_objects;
  std::vector<Node> nodes;
  // The candidates' names (NodeNames, or the Nodes' names), in the order sent.
  std::vector<std::string> node_names;
  // Set when the pod is well formed but asks for more than any node can hold (more GPUs than a
  // node has): `pod` is then empty and every candidate fails with this reason.
  std::string unplaceable;
};

struct BindingArgs {
  std::string pod_name, pod_namespace, pod_uid, node;
};

struct PreemptionArgs {
  Pod pod;
  bool meta = false;  // NodeNameToMetaVictims was sent (nodeCacheCapable)
  // node -> the victims' UIDs, and the PDB violations kube-scheduler counted.
  std::map<std::string, std::pair<std::vector<std::string>, int64_t>> victims;
};

// InvalidArgument naming the JSON path, in the syntax of base/json_path.h
// ("$.Pod.spec.containers[0].resources.requests.cpu: ..."; "$.NodeNames[3]: expected a string"),
// for a body that is not what the scheduler sends.
[[nodiscard]] absl::StatusOr<ExtenderArgs> ParseExtenderArgs(std::string_view body);
[[nodiscard]] absl::StatusOr<BindingArgs> ParseBindingArgs(std::string_view body);
[[nodiscard]] absl::StatusOr<PreemptionArgs> ParsePreemptionArgs(std::string_view body);

// The pod as the scheduler's ledger holds it (uid, name, namespace, request, accepted models,
// priority, labels). A share asked by GPU memory is resolved on `gpu_memory_mib`; 0 leaves it
// unresolved (gpu_milli 0).
sched::PodInfo ToPodInfo(const Pod& pod, int64_t gpu_memory_mib);
// ToPodInfo on the smallest GPU memory among the candidates the scheduler knows (so that the
// share fits wherever the pod may go). Filter, Prioritize and bind use the same resolved pod.
sched::PodInfo ResolvePod(const sched::Scheduler& scheduler, const Pod& pod,
                          const std::vector<std::string>& candidates);
// A node's GPU memory (MiB per GPU) from its labels (kGpuMemoryLabel, kGfdMemoryLabel); 0 if
// neither says.
int64_t GpuMemoryOf(const core::NodeSpec& node);

struct FilterResult {
  std::vector<std::string> passed;
  std::map<std::string, std::string> failed;
  std::map<std::string, std::string> unresolvable;
  std::string error;
};

// The verbs. `scheduler` must already know the nodes (nodes mode: Learn them first).
// Learn: nodes (a nodes-mode request's, or the cluster's as watched) added or updated in the
// scheduler where they differ, cordon included. FailedPrecondition when an update would strand
// a node's bound pods (the nodes before it are learned).
absl::Status LearnNodes(sched::Scheduler& scheduler, const std::vector<Node>& nodes);
// `pod` is ResolvePod's. Filter notes the pod's arrival (once per uid) for learning policies.
FilterResult Filter(sched::Scheduler& scheduler, const ExtenderArgs& args,
                    const sched::PodInfo& pod);
// [{Host, Score}] for every node sent, in the order sent.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> Prioritize(sched::Scheduler& scheduler,
                                                                        const ExtenderArgs& args,
                                                                        const sched::PodInfo& pod);
// For each node sent, the victims kept (those Seedance knows, all of them) where evicting them
// makes room by Seedance's accounting; nodes where it would not are left out.
std::map<std::string, std::pair<std::vector<std::string>, int64_t>> Preempt(
    sched::Scheduler& scheduler, const PreemptionArgs& args);

// The annotation value of a placement: "IDX:MILLI,..." or, where the node's GPU UUIDs are
// known (annotation seedance.io/gpu-uuids kept as label-like metadata), "UUID:MILLI,...".
std::string GpusAnnotation(const core::Placement& placement, int32_t milli,
                           const std::vector<std::string>& gpu_uuids);

// Replies, keys exactly as kube-scheduler's decoder reads them.
std::string FilterResultJson(const ExtenderArgs& args, const FilterResult& result);
std::string PriorityListJson(const std::vector<std::pair<std::string, int64_t>>& scores);
std::string BindingResultJson(std::string_view error);
std::string PreemptionResultJson(
    const std::map<std::string, std::pair<std::vector<std::string>, int64_t>>& victims);

}  // namespace seedance::k8s

#endif  // SEEDANCE_K8S_EXTENDER_H_
