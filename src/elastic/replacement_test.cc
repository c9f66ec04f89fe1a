#include "seedance/elastic/replacement.h"

#include <gtest/gtest.h>

#include "seedance/core/topology_template.h"

namespace seedance::elastic {
namespace {

core::NodeSpec Node(const std::string& name, core::TopologyTemplate t) {
  core::NodeSpec n;
  n.name = name;
  n.cpu_milli = 96000;
  n.memory_mib = 1 << 20;
  n.num_gpus = 8;
  n.gpu_model = "A100";
  n.topology = core::TemplateTopology(n, t);
  return n;
}

core::ClusterState State(std::vector<core::NodeSpec> nodes) {
  auto s = core::ClusterState::Create(std::move(nodes));
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

core::PodShape Gpus(int k) {
  core::PodShape p;
  p.cpu_milli = 8000;
  p.memory_mib = 65536;
  p.num_gpu = k;
  p.gpu_milli = core::kMilliGpu;
  return p;
}

// A job on `gpus` of node `n`, allocated in `s`.
TrainingJob Job(core::ClusterState& s, const std::string& id, int n, std::vector<int8_t> gpus,
                double remaining_s, double to_checkpoint_s) {
  TrainingJob j;
  j.id = id;
  j.shape = Gpus(static_cast<int>(gpus.size()));
  j.placement.node = n;
  j.placement.num_gpus = static_cast<int32_t>(gpus.size());
  std::copy(gpus.begin(), gpus.end(), j.placement.gpus.begin());
  EXPECT_TRUE(s.Allocate(j.shape, j.placement).ok());
  j.remaining_s = remaining_s;
  j.to_checkpoint_s = to_checkpoint_s;
  return j;
}

// pcie-tree (docs/topology.md): GPUs 0-3 under switch 0 on NUMA 0, 4-7 under switch 1 on NUMA 1;
// A100: PCIe Gen4 x16 31.5 GB/s within a switch, one UPI link 20.8 GB/s across sockets.
constexpr double kSwitch = 31.5, kUpi = 20.8, kNvLink3 = 300;

TEST(ReplacementTest, PoorlyPlacedMeansAcrossNumaOrWithoutNvLink) {
  core::ClusterState s = State(
      {Node("p", core::TopologyTemplate::kPcieTree), Node("d", core::TopologyTemplate::kDgx)});
  core::Placement p;
  p.node = 1;
  p.num_gpus = 2;
  p.gpus[0] = 0, p.gpus[1] = 1;
  EXPECT_FALSE(PoorlyPlaced(s, p));  // dgx: one NVLink group, one NUMA node
  p.gpus[1] = 4;
  EXPECT_TRUE(PoorlyPlaced(s, p));  // NVLink, but across NUMA nodes
  p.node = 0;
  p.gpus[1] = 1;
  EXPECT_TRUE(PoorlyPlaced(s, p));  // one switch, but no NVLink
  p.num_gpus = 1;
  EXPECT_FALSE(PoorlyPlaced(s, p));  // one GPU talks to nobody
}

TEST(ReplacementTest, ACrossSocketJobMovesWithinItsNodeWhenThatIsTheBest) {
  core::ClusterState s = State({Node("p", core::TopologyTemplate::kPcieTree)});
  std::vector<TrainingJob> jobs = {Job(s, "j", 0, {3, 4}, 10000, 1000)};
  absl::StatusOr<std::vector<ReplacementPlan>> plans = PlanReplacements(s, jobs, {});
  ASSERT_TRUE(plans.ok()) << plans.status();
  ASSERT_EQ(plans->size(), 1u);
  const ReplacementPlan& p = (*plans)[0];
  // All 8 free once its own are: the chooser takes one switch, the lowest (0, 1).
  EXPECT_EQ(p.to.node, 0);
  EXPECT_EQ(p.to.gpus[0], 0);
  EXPECT_EQ(p.to.gpus[1], 1);
  EXPECT_TRUE(p.cross_numa);
  EXPECT_FALSE(p.nvlink_now);
  // s = 0.7 + 0.3 x 31.5 / 20.8 = 1.1543; saved = 9000 x (1 - 1 / s) - 180 = 1022.7 s.
  const double speedup = 0.7 + 0.3 * kSwitch / kUpi;
  EXPECT_NEAR(p.speedup, speedup, 1e-3);
  EXPECT_NEAR(p.saved_s, 9000 * (1 - 1 / speedup) - 180, 0.5);
  EXPECT_EQ(p.move_in_s, 1000);
  // The state now holds the job at its new GPUs.
  EXPECT_EQ(s.gpu_left(0)[0], 0);
  EXPECT_EQ(s.gpu_left(0)[3], core::kMilliGpu);
  EXPECT_EQ(s.gpu_left(0)[4], core::kMilliGpu);
}

TEST(ReplacementTest, AnNvLinkNodeElsewhereBeatsTheBestSetAtHome) {
  core::ClusterState s = State(
      {Node("p", core::TopologyTemplate::kPcieTree), Node("d", core::TopologyTemplate::kDgx)});
  std::vector<TrainingJob> jobs = {Job(s, "j", 0, {3, 4}, 10000, 0)};
  auto plans = PlanReplacements(s, jobs, {});
  ASSERT_TRUE(plans.ok());
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_EQ((*plans)[0].to.node, 1);
  EXPECT_NEAR((*plans)[0].speedup, 0.7 + 0.3 * kNvLink3 / kUpi, 1e-2);
}

TEST(ReplacementTest, NoMoveWhenTheMigrationCostsMoreThanItSaves) {
  core::ClusterState s = State({Node("p", core::TopologyTemplate::kPcieTree)});
  // 1,200 s after the checkpoint: 1200 x (1 - 1 / 1.154) = 160 s < 180 s.
  std::vector<TrainingJob> jobs = {Job(s, "j", 0, {3, 4}, 1500, 300)};
  auto plans = PlanReplacements(s, jobs, {});
  ASSERT_TRUE(plans.ok());
  EXPECT_TRUE(plans->empty());
  ReplacementOptions cheap;
  cheap.migration_s = 60;
  plans = PlanReplacements(s, jobs, cheap);
  ASSERT_TRUE(plans.ok());
  EXPECT_EQ(plans->size(), 1u);
}

TEST(ReplacementTest, TwoJobsNeverGetTheSameGpusAndTheBiggerSavingWins) {
  core::ClusterState s = State(
      {Node("p", core::TopologyTemplate::kPcieTree), Node("d", core::TopologyTemplate::kDgx)});
  // Only two GPUs of the DGX node are free.
  core::Placement filler;
  filler.node = 1;
  filler.num_gpus = 6;
  for (int g = 0; g < 6; ++g) filler.gpus[g] = static_cast<int8_t>(g);
  ASSERT_TRUE(s.Allocate(Gpus(6), filler).ok());
  std::vector<TrainingJob> jobs = {Job(s, "short", 0, {2, 4}, 5000, 0),
                                   Job(s, "long", 0, {3, 5}, 50000, 0)};
  auto plans = PlanReplacements(s, jobs, {});
  ASSERT_TRUE(plans.ok());
  ASSERT_EQ(plans->size(), 2u);
  EXPECT_EQ((*plans)[0].id, "long");  // the larger saving is planned first: the NVLink pair
  EXPECT_EQ((*plans)[0].to.node, 1);
  EXPECT_EQ((*plans)[1].id, "short");  // then the best left: one switch at home
  EXPECT_EQ((*plans)[1].to.node, 0);
  EXPECT_EQ(s.gpu_left(1)[6], 0);
  EXPECT_EQ(s.gpu_left(1)[7], 0);
}

TEST(ReplacementTest, BadOptionsAndJobsNameTheirField) {
  core::ClusterState s = State({Node("p", core::TopologyTemplate::kPcieTree)});
  std::vector<TrainingJob> jobs = {Job(s, "j", 0, {3, 4}, 100, 200)};
  EXPECT_EQ(PlanReplacements(s, jobs, {}).status().message(),
            "re-placement: job j: to_checkpoint_s: not in [0, remaining_s]");
  ReplacementOptions o;
  o.comm_fraction = 1;
  EXPECT_EQ(PlanReplacements(s, {}, o).status().message(),
            "re-placement: comm_fraction: must be in [0, 1)");
  TrainingJob one = jobs[0];
  one.shape.num_gpu = 1;
  EXPECT_FALSE(PlanReplacements(s, {one}, {}).ok());
}

}  // namespace
}  // namespace seedance::elastic
