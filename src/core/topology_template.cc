#include "seedance/core/topology_template.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace seedance::core {

absl::StatusOr<TopologyTemplate> ParseTopologyTemplate(std::string_view name) {
  for (TopologyTemplate t : {TopologyTemplate::kNone, TopologyTemplate::kDgx,
                             TopologyTemplate::kPcieTree, TopologyTemplate::kMixed}) {
    if (name == TopologyTemplateName(t)) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown topology template; expected none, dgx, pcie-tree or mixed"));
}

std::string_view TopologyTemplateName(TopologyTemplate t) {
  switch (t) {
    case TopologyTemplate::kNone:
      return "none";
    case TopologyTemplate::kDgx:
      return "dgx";
    case TopologyTemplate::kPcieTree:
      return "pcie-tree";
    case TopologyTemplate::kMixed:
      return "mixed";
  }
  return "none";
}

NodeTopology TemplateTopology(const NodeSpec& node, TopologyTemplate t) {
  NodeTopology topo;
  if (t == TopologyTemplate::kNone) return topo;
  topo.numa = {{0, node.cpu_milli / 2, node.memory_mib / 2},
               {1, node.cpu_milli - node.cpu_milli / 2, node.memory_mib - node.memory_mib / 2}};
  const int gpus = node.num_gpus;
  const int half = (gpus + 1) / 2;  // GPUs 0..half-1 on NUMA node 0
  for (int g = 0; g < gpus; ++g) {
    GpuTopology gt;
    gt.numa_node = g < half ? 0 : 1;
    if (t != TopologyTemplate::kPcieTree) {  // dgx (and mixed, see the header)
      gt.nvlink_group = absl::StrCat(node.name, "/nvswitch");
      gt.pcie_switch = absl::StrCat(node.name, "/pcie", g / 2);
    } else {
      gt.pcie_switch = absl::StrCat(node.name, "/pcie", g < half ? 0 : 1);
    }
    topo.gpus.push_back(std::move(gt));
  }
  return topo;
}

void ApplyTopologyTemplate(TopologyTemplate t, std::vector<NodeSpec>* nodes) {
  if (t == TopologyTemplate::kNone) return;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const TopologyTemplate each =
        t != TopologyTemplate::kMixed
            ? t
            : (i % 2 == 0 ? TopologyTemplate::kDgx : TopologyTemplate::kPcieTree);
    (*nodes)[i].topology = TemplateTopology((*nodes)[i], each);
  }
}

}  // namespace seedance::core
