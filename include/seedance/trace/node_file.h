// Reads any node file the simulator reads: an openb node CSV, a cluster descriptor (YAML or
// JSON, docs/formats.md) or a kubectl node snapshot (`kubectl get nodes -o json`,
// docs/kubernetes.md). YAML is told by its .yaml/.yml extension; JSON by its content (kubectl
// output has apiVersion and a kind of List, NodeList or Node), so a snapshot may have any name;
// anything else is a node CSV.
#ifndef SEEDANCE_TRACE_NODE_FILE_H_
#define SEEDANCE_TRACE_NODE_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::trace {

struct InputOptions {
  // Kubernetes snapshots: skip objects Seedance does not understand (with a warning) instead of
  // refusing the file (k8s::SnapshotOptions).
  bool ignore_unknown = false;
};

bool IsDescriptorPath(const std::string& path);
// InvalidArgument naming the file (and line, or JSON path) for bad content, or an empty node
// list. Warnings (a snapshot's skipped objects) go to `warnings` when given.
absl::StatusOr<std::vector<core::NodeSpec>> ReadNodeFile(
    const std::string& path, const InputOptions& options = {},
    std::vector<std::string>* warnings = nullptr);

// The simulator's --nodes and --pods: ReadNodeFile's node files with an openb pod CSV, or a
// kubectl node snapshot with a kubectl pod snapshot (`kubectl get pods -A -o json`), read
// together so that GPU shares asked by memory are resolved against the nodes' GPUs. Every
// Pending and Running pod of a snapshot is in the workload, in creation order; where it runs
// now does not matter to the simulator, which places it again.
struct NodesAndPods {
  std::vector<core::NodeSpec> nodes;
  std::vector<core::PodSpec> pods;
  std::vector<int64_t> pod_lines;  // CSV line of each pod; empty for a snapshot
  std::vector<std::string> warnings;
};
absl::StatusOr<NodesAndPods> ReadNodesAndPods(const std::string& nodes_path,
                                              const std::string& pods_path,
                                              const InputOptions& options = {});

}  // namespace seedance::trace

#endif  // SEEDANCE_TRACE_NODE_FILE_H_
