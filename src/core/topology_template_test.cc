// The documented topology templates (topology_template.h): valid nodes, the stated layout.
#include "seedance/core/topology_template.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace seedance::core {
namespace {

std::vector<NodeSpec> Nodes() {
  std::vector<NodeSpec> nodes;
  for (int gpus : {8, 4, 1, 0, 8}) {
    nodes.push_back({.name = "node-" + std::to_string(nodes.size()),
                     .cpu_milli = 96001,
                     .memory_mib = 786433,
                     .num_gpus = gpus,
                     .gpu_model = gpus ? "A100" : ""});
  }
  return nodes;
}

TEST(TopologyTemplateTest, ParsesTheFourNames) {
  for (const char* name : {"none", "dgx", "pcie-tree", "mixed"}) {
    absl::StatusOr<TopologyTemplate> t = ParseTopologyTemplate(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(TopologyTemplateName(*t), name);
  }
  absl::StatusOr<TopologyTemplate> bad = ParseTopologyTemplate("dgx2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("none, dgx, pcie-tree or mixed"), std::string::npos);
}

TEST(TopologyTemplateTest, EveryTemplateGivesNodesTheClusterAccepts) {
  for (TopologyTemplate t :
       {TopologyTemplate::kDgx, TopologyTemplate::kPcieTree, TopologyTemplate::kMixed}) {
    std::vector<NodeSpec> nodes = Nodes();
    ApplyTopologyTemplate(t, &nodes);
    for (const NodeSpec& n : nodes) {
      ASSERT_EQ(n.topology.numa.size(), 2u);
      EXPECT_EQ(n.topology.numa[0].cpu_milli + n.topology.numa[1].cpu_milli, n.cpu_milli);
      EXPECT_EQ(n.topology.numa[0].memory_mib + n.topology.numa[1].memory_mib, n.memory_mib);
      EXPECT_EQ(n.topology.gpus.size(), static_cast<size_t>(n.num_gpus));
    }
    EXPECT_TRUE(ClusterState::Create(nodes).ok()) << TopologyTemplateName(t);
  }
}

TEST(TopologyTemplateTest, DgxAndPcieTreeLayouts) {
  std::vector<NodeSpec> nodes = Nodes();
  ApplyTopologyTemplate(TopologyTemplate::kMixed, &nodes);
  const NodeTopology& dgx = nodes[0].topology;  // even position: dgx
  std::set<std::string> nvlink, switches;
  for (int g = 0; g < 8; ++g) {
    nvlink.insert(dgx.gpus[g].nvlink_group);
    switches.insert(dgx.gpus[g].pcie_switch);
    EXPECT_EQ(dgx.gpus[g].numa_node, g < 4 ? 0 : 1);
  }
  EXPECT_EQ(nvlink, (std::set<std::string>{"node-0/nvswitch"}));
  EXPECT_EQ(switches.size(), 4u);                // PCIe-switch pairs
  const NodeTopology& tree = nodes[1].topology;  // odd position: pcie-tree, 4 GPUs
  for (int g = 0; g < 4; ++g) {
    EXPECT_TRUE(tree.gpus[g].nvlink_group.empty());
    EXPECT_EQ(tree.gpus[g].pcie_switch, g < 2 ? "node-1/pcie0" : "node-1/pcie1");
    EXPECT_EQ(tree.gpus[g].numa_node, g < 2 ? 0 : 1);
  }
  // Group names carry the node's name: no two nodes share a group.
  EXPECT_NE(nodes[0].topology.gpus[0].nvlink_group, nodes[4].topology.gpus[0].nvlink_group);
}

TEST(TopologyTemplateTest, NoneChangesNothing) {
  std::vector<NodeSpec> nodes = Nodes();
  nodes[0].topology.numa = {{0, 96001, 786433}};
  const std::vector<NodeSpec> before = nodes;
  ApplyTopologyTemplate(TopologyTemplate::kNone, &nodes);
  EXPECT_EQ(nodes, before);
}

}  // namespace
}  // namespace seedance::core
