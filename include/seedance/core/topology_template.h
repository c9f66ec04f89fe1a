// Node topologies for node lists that carry none (the Alibaba trace): documented templates that
// `simulate --topology` applies to every node (docs/topology.md).
//   dgx        a DGX-like node: two NUMA nodes (CPU and memory split evenly), every GPU on one
//              NVSwitch (one NVLink group), GPUs in PCIe-switch pairs (0-1, 2-3, ...), the
//              first half on NUMA node 0, the rest on NUMA node 1;
//   pcie-tree  two PCIe switches, the first half of the GPUs under switch 0 on NUMA node 0, the
//              rest under switch 1 on NUMA node 1; no NVLink;
//   mixed      dgx on the nodes at even positions of the list, pcie-tree on the odd ones.
// A node's existing topology is replaced. Group names are prefixed with the node's name, so
// no two nodes share one.
#ifndef SEEDANCE_CORE_TOPOLOGY_TEMPLATE_H_
#define SEEDANCE_CORE_TOPOLOGY_TEMPLATE_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::core {

enum class TopologyTemplate { kNone, kDgx, kPcieTree, kMixed };

// "none", "dgx", "pcie-tree", "mixed"; InvalidArgument naming the accepted values otherwise.
absl::StatusOr<TopologyTemplate> ParseTopologyTemplate(std::string_view name);
std::string_view TopologyTemplateName(TopologyTemplate t);

// The template's topology for `node`: empty for kNone; kMixed, which depends on the node's
// position, gives dgx here (ApplyTopologyTemplate resolves it).
NodeTopology TemplateTopology(const NodeSpec& node, TopologyTemplate t);
// Applies `t` to every node (kNone: no change).
void ApplyTopologyTemplate(TopologyTemplate t, std::vector<NodeSpec>* nodes);

}  // namespace seedance::core

#endif  // SEEDANCE_CORE_TOPOLOGY_TEMPLATE_H_
