// A snapshot of a Kubernetes cluster, as `kubectl get nodes -o json` and
// `kubectl get pods -A -o json` print it, turned into what the simulator and `analyze` read.
//
// Each file holds a List (kind List, NodeList or PodList, items of kind Node or Pod) or a single
// Node or Pod; several files merge. Objects are decoded by objects.h. Anything Seedance does not
// understand (an item of another kind, an extended resource it cannot honour, a GPU placed on a
// node without that GPU) is named with its file and JSON path; it is an error unless
// SnapshotOptions::ignore_unknown, which skips the object (a node keeps everything but the
// ignored resource) and records a warning. Succeeded and Failed pods hold nothing and are
// counted, not kept. A share of a GPU asked by memory (HAMi nvidia.com/gpumem, KAI gpu-memory,
// seedance.io/gpu-memory-mib) is resolved to milli on the pod's node, or, for a pending pod, on
// the smallest GPU memory among the nodes of the models it accepts.
//
// Thread-safety: pure functions over values (LoadSnapshot reads files).
#ifndef SEEDANCE_K8S_SNAPSHOT_H_
#define SEEDANCE_K8S_SNAPSHOT_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"
#include "seedance/k8s/objects.h"
#include "seedance/telemetry/profile.h"

namespace seedance::k8s {

struct SnapshotOptions {
  bool ignore_unknown = false;  // skip what is not understood (with a warning) instead of failing
};

struct Snapshot {
  std::vector<Node> nodes;
  std::vector<Pod> pods;  // Pending and Running (and Unknown) pods, in file order
  int terminal_pods = 0;  // Succeeded and Failed pods read and left out
  std::vector<std::string> warnings;
};

// True when `text` is kubectl JSON: an object whose top-level "kind" is List, NodeList, PodList,
// Node or Pod (and which has apiVersion). Looks only at the top level; cheap on large texts.
bool LooksLikeSnapshot(std::string_view text);

// Adds the objects of one file's text to `snapshot`; `source` (the file name) prefixes errors:
// "nodes.json: $.items[3].status.allocatable.cpu: 'x' is not a Kubernetes quantity ...".
// Call Finish once all files are in.
[[nodiscard]] absl::Status AddSnapshotText(std::string_view text, std::string_view source,
                                           const SnapshotOptions& options, Snapshot* snapshot);
// Checks what needs every file (unique node and pod names, pods on nodes that exist, GPU
// placements within their node) and resolves memory-asked GPU shares.
[[nodiscard]] absl::Status FinishSnapshot(const SnapshotOptions& options, Snapshot* snapshot);
// Reads (base::ReadInput, trace cap; "-" = stdin) every path, then FinishSnapshot.
[[nodiscard]] absl::StatusOr<Snapshot> LoadSnapshot(const std::vector<std::string>& paths,
                                                    const SnapshotOptions& options);

// The nodes as the scheduler sees them (cordoned nodes carry the unschedulable taint).
std::vector<core::NodeSpec> ToNodeSpecs(const Snapshot& snapshot);
// Every pod as a simulator workload, in creation order (then namespace and name): name
// "NAMESPACE/NAME", the resolved request, the accepted models, priority, QoS class and the
// creation time in seconds after the earliest one.
std::vector<core::PodSpec> ToPodSpecs(const Snapshot& snapshot);
// A profile `analyze` reads: the nodes, their GPUs (model, memory, UUIDs), the bound pods with
// their GPUs (from seedance.io/gpus; unknown otherwise) and the pending pods. A snapshot
// measures nothing, so there is one sample at time 0 and each GPU's utilisation is taken to be
// its allocated share (a documented assumption: docs/kubernetes.md).
telemetry::Profile ToProfile(const Snapshot& snapshot);

}  // namespace seedance::k8s

#endif  // SEEDANCE_K8S_SNAPSHOT_H_
