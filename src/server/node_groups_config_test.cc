// ParseNodeGroupsConfig: the node-groups file of `seedance server --node-groups`, on the example
// files shipped in deploy/node-groups (the controller itself runs against the real binary in
// node_groups_test.py; bad files are the hostile suite's node_group_cases).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "seedance/base/io.h"
#include "seedance/server/node_groups.h"

namespace seedance::server {
namespace {

using ::testing::HasSubstr;

std::string Example(const std::string& name) {
  const char* dir = std::getenv("SEEDANCE_SOURCE_DIR");
  const std::string root = dir != nullptr && *dir != '\0' ? dir : SEEDANCE_NODE_GROUPS_SOURCE_DIR;
  absl::StatusOr<std::string> text =
      base::ReadInput(root + "/deploy/node-groups/" + name, base::InputKind::kConfig);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

TEST(NodeGroupsConfigTest, TheSimulatedExampleReadsAsDocumented) {
  absl::StatusOr<NodeGroupsConfig> c = ParseNodeGroupsConfig(Example("simulated.json"), "s.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->provisioner, NodeGroupsConfig::Provisioner::kSimulated);
  ASSERT_EQ(c->groups.size(), 3u);
  EXPECT_EQ(c->groups[0].name, "a100x8");
  EXPECT_EQ(c->groups[0].node.num_gpus, 8);
  EXPECT_EQ(c->groups[1].min_size, 1);
  EXPECT_EQ(c->groups[2].node.num_gpus, 0);
  // Every template carries its group's label, so the nodes it makes are found again.
  for (const auto& g : c->groups) EXPECT_EQ(g.node.labels.at(kNodeGroupLabel), g.name);
  EXPECT_TRUE(c->autoscaler.prescale);
  // The demand horizon: the provisioning delay plus a scan.
  EXPECT_DOUBLE_EQ(c->autoscaler.demand_horizon_s, 180 + 10);
}

TEST(NodeGroupsConfigTest, TheSlurmExampleUsesItsPrograms) {
  absl::StatusOr<NodeGroupsConfig> c =
      ParseNodeGroupsConfig(Example("slurm-cloud.json"), "slurm-cloud.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->provisioner, NodeGroupsConfig::Provisioner::kCommand);
  EXPECT_EQ(c->resume_program, "/usr/local/libexec/seedance/resume-slurm.sh");
  EXPECT_DOUBLE_EQ(c->autoscaler.demand_horizon_s, 300 + 10);
  EXPECT_DOUBLE_EQ(c->autoscaler.scale_down_unneeded_s, 900);
}

TEST(NodeGroupsConfigTest, DefaultsAreTheClusterAutoscalers) {
  absl::StatusOr<NodeGroupsConfig> c = ParseNodeGroupsConfig(
      R"({"groups": [{"name": "g", "max_size": 2, "node": {"cpu_milli": 1000,
          "memory_mib": 1024}}]})",
      "d.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->scan_interval_s, 10);                             // CA's --scan-interval
  EXPECT_DOUBLE_EQ(c->autoscaler.scale_down_unneeded_s, 600);           // CA's 10 minutes
  EXPECT_DOUBLE_EQ(c->autoscaler.provision_timeout_s, 900);             // CA's 15 minutes
  EXPECT_DOUBLE_EQ(c->autoscaler.scale_down_utilization_threshold, 0);  // off (see the docs)
  EXPECT_EQ(c->autoscaler.max_drain_candidates, 30);
  EXPECT_FALSE(c->autoscaler.prescale);
  EXPECT_EQ(c->groups[0].min_size, 0);
}

TEST(NodeGroupsConfigTest, ErrorsNameTheFileAndThePath) {
  absl::StatusOr<NodeGroupsConfig> c = ParseNodeGroupsConfig(
      R"({"groups": [{"name": "g", "max_size": 2, "node": {"cpu_milli": 1000,
          "memory_mib": 1024, "bogus": 1}}]})",
      "bad.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("bad.json: $.groups[0].node"));
}

}  // namespace
}  // namespace seedance::server
