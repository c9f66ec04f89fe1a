// ReadNodeFile / ReadNodesAndPods: what `simulate --nodes --pods` reads, for each kind of file.
#include "seedance/trace/node_file.h"

#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::trace {
namespace {

using ::testing::HasSubstr;

std::string K8sTestData(const std::string& name) {
  const char* root = std::getenv("SEEDANCE_SOURCE_DIR");
  return std::string(root ? root : ".") + "/src/k8s/testdata/" + name;
}

TEST(ReadNodesAndPodsTest, KubectlSnapshotsGiveTheStatedCapacitiesAndRequests) {
  absl::StatusOr<NodesAndPods> in =
      ReadNodesAndPods(K8sTestData("nodes.json"), K8sTestData("pods.json"));
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_EQ(in->nodes.size(), 5u);
  EXPECT_EQ(in->nodes[2].name, "v100-0");
  EXPECT_EQ(in->nodes[2].cpu_milli, 31900);
  EXPECT_EQ(in->nodes[2].memory_mib, 131072);
  EXPECT_EQ(in->nodes[2].num_gpus, 4);
  EXPECT_EQ(in->nodes[2].gpu_model, "Tesla-V100-SXM2-32GB");
  ASSERT_EQ(in->pods.size(), 9u);
  // Creation order; HAMi's cores-and-memory pod resolved on its node's 32 GiB V100.
  EXPECT_EQ(in->pods[2].name, "serving/hami-c");
  EXPECT_EQ(in->pods[2].shape.cpu_milli, 4000);
  EXPECT_EQ(in->pods[2].shape.num_gpu, 1);
  EXPECT_EQ(in->pods[2].shape.gpu_milli, 306);
  EXPECT_TRUE(in->pod_lines.empty());
  // The RDMA note and the finished pods' count.
  ASSERT_EQ(in->warnings.size(), 2u);
  EXPECT_THAT(in->warnings[1], HasSubstr("2 Succeeded or Failed pods left out"));
}

TEST(ReadNodesAndPodsTest, CsvPairsStillReadAsBefore) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/n.csv") << "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n";
  std::ofstream(dir + "/p.csv")
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n";
  absl::StatusOr<NodesAndPods> in = ReadNodesAndPods(dir + "/n.csv", dir + "/p.csv");
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_EQ(in->nodes.size(), 1u);
  ASSERT_EQ(in->pods.size(), 1u);
  EXPECT_EQ(in->pod_lines, std::vector<int64_t>{2});
  // A node snapshot with a pod CSV is fine; a pod snapshot needs a node snapshot.
  EXPECT_TRUE(ReadNodesAndPods(K8sTestData("nodes.json"), dir + "/p.csv").ok());
  absl::StatusOr<NodesAndPods> bad = ReadNodesAndPods(dir + "/n.csv", K8sTestData("pods.json"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("goes with a kubectl node snapshot"));
}

TEST(ReadNodeFileTest, NodeSnapshotWithAnyName) {
  const std::string path = ::testing::TempDir() + "/cluster-nodes.out";
  std::ifstream src(K8sTestData("nodes.json"));
  std::ofstream(path) << src.rdbuf();
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<core::NodeSpec>> nodes = ReadNodeFile(path, {}, &warnings);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->size(), 5u);
  EXPECT_EQ(warnings.size(), 1u);
}

}  // namespace
}  // namespace seedance::trace
