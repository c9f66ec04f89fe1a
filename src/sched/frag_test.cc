// Conformance tests for the FGD fragmentation measure.
//
// The numeric vectors (typical-pod lists, node states and expected fragment amounts) are those of
// the FGD authors' simulator test, hkust-adsl/kubernetes-scheduler-simulator
// pkg/utils/frag_test.go: TestNodeGpuShareFragAmountScore, TestNodeGpuShareFragAmount,
// TestNodeGpuShareFragAmountWithNonGpu and TestGetGpuFragMilliByNodeResAndPodRes.
// The Bellman variant of the measure (NodeGpuFragBellman, TestNodeGpuFragAmountBellman_*) is not
// implemented in Seedance, so its vectors are not ported.
#include "seedance/sched/frag.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "seedance/core/cluster_state.h"

namespace seedance::sched {
namespace {

// Test-local GPU model table: one id (bit) per type name used by the reference vectors.
core::GpuModelId ModelOf(const std::string& type) {
  static const char* const kModels[] = {"1080", "2080", "T4", "P100", "V100M16", "V100M32"};
  if (type.empty()) return core::kNoGpuModel;
  for (int i = 0; i < static_cast<int>(std::size(kModels)); ++i) {
    if (type == kModels[i]) return static_cast<core::GpuModelId>(i);
  }
  ADD_FAILURE() << "unknown GPU type in test vector: " << type;
  return core::kNoGpuModel;
}

// The reference's PodResource{MilliCpu, MilliGpu, GpuNumber, GpuType} with Percentage (in %).
struct PodRow {
  int64_t cpu_milli;
  int32_t gpu_milli;
  int32_t num_gpu;
  std::string type;
  double pct;
};

TargetShape Shape(const PodRow& r) {
  TargetShape s;
  s.cpu_milli = r.cpu_milli;
  s.num_gpu = r.num_gpu;
  s.gpu_milli = r.gpu_milli;
  s.gpu_model_mask = r.type.empty() ? 0 : uint64_t{1} << ModelOf(r.type);
  s.gpu_spec = r.type;
  s.freq = r.pct / 100;
  return s;
}

TargetWorkload Workload(const std::vector<PodRow>& rows) {
  TargetWorkload w;
  for (const PodRow& r : rows) w.push_back(Shape(r));
  return w;
}

NodeResources Node(int64_t cpu_left, std::initializer_list<int32_t> gpu_left,
                   const std::string& type) {
  NodeResources n;
  n.cpu_left = cpu_left;
  n.num_gpus = static_cast<int32_t>(gpu_left.size());
  int i = 0;
  for (int32_t g : gpu_left) n.gpu_left[i++] = g;
  n.model = ModelOf(type);
  return n;
}

double SumExceptQ3(const FragAmount& a) {
  double out = 0;
  for (int i = 0; i < kNumFragClasses; ++i) {
    if (i != static_cast<int>(FragClass::kQ3Satisfied)) out += a[i];
  }
  return out;
}

// Reference: TestingGenerateGetTypicalPods.
TargetWorkload ReferenceTypicalPods() {
  return Workload({
      {6000, 465, 1, "", 9.33},          {8000, 440, 1, "2080", 9.15},
      {8000, 475, 1, "T4", 8.76},        {8000, 440, 1, "P100", 8.72},
      {2000, 465, 1, "", 8.68},          {12000, 900, 1, "", 8.65},
      {4000, 900, 1, "", 8.43},          {16000, 678, 1, "T4", 8.36},
      {8000, 500, 1, "", 8.29},          {6000, 511, 1, "", 8.11},
      {14000, 1000, 2, "2080", 0.54},    {4000, 1000, 1, "2080", 0.43},
      {32000, 1000, 2, "T4", 0.43},      {16000, 1000, 1, "V100M16", 0.40},
      {64000, 1000, 2, "", 0.40},        {10000, 1000, 2, "", 0.40},
      {11400, 1000, 1, "T4", 0.36},      {16000, 1000, 1, "T4", 0.36},
      {4000, 1000, 2, "", 0.36},         {14000, 1000, 2, "V100M16", 0.36},
      {8000, 1000, 4, "", 0.36},         {16000, 1000, 2, "", 0.32},
      {2000, 1000, 1, "T4", 0.32},       {6000, 1000, 1, "", 0.32},
      {4000, 1000, 1, "", 0.32},         {5000, 1000, 1, "", 0.32},
      {32000, 1000, 4, "V100M16", 0.32}, {32000, 1000, 2, "", 0.32},
      {24000, 1000, 8, "2080", 0.32},    {40000, 1000, 4, "", 0.29},
      {32000, 1000, 8, "", 0.29},        {32000, 1000, 1, "T4", 0.29},
      {16000, 1000, 1, "", 0.25},        {7000, 1000, 1, "V100M16", 0.25},
      {24000, 1000, 1, "T4", 0.25},
  });
}

// Reference: TestingGenerateGetTypicalPodsWithNonGpu (includes CPU-only shapes).
TargetWorkload ReferenceTypicalPodsWithNonGpu() {
  return Workload({
      {15700, 1000, 1, "", 28.69}, {11900, 1000, 1, "", 18.93}, {11400, 1000, 1, "", 12.27},
      {1000, 0, 0, "", 7.36},      {18710, 1000, 1, "", 4.85},  {8200, 1000, 1, "", 3.79},
      {16400, 1000, 1, "", 3.31},  {9810, 1000, 1, "", 1.97},   {15200, 1000, 1, "", 1.87},
      {11200, 1000, 1, "", 1.81},  {14200, 1000, 1, "", 1.76},  {12000, 0, 0, "", 1.65},
      {14900, 1000, 1, "", 1.39},  {60200, 1000, 4, "", 1.23},  {64200, 1000, 8, "", 1.07},
      {32200, 1000, 4, "", 1.01},  {17400, 1000, 2, "", 0.91},  {30200, 1000, 2, "", 0.69},
      {16000, 1000, 1, "", 0.64},  {15000, 1000, 1, "", 0.59},  {64000, 1000, 8, "", 0.53},
      {15000, 0, 0, "", 0.53},     {11910, 1000, 1, "", 0.53},  {120200, 1000, 8, "", 0.48},
      {11300, 1000, 1, "", 0.37},  {30000, 1000, 2, "", 0.32},  {9800, 1000, 1, "", 0.32},
      {8000, 1000, 1, "", 0.32},   {2000, 1000, 1, "", 0.27},   {2000, 80, 1, "", 0.27},
      {1000, 1000, 1, "", 0.27},
  });
}

// ---- Reference vectors -------------------------------------------------------------------

struct ScoreCase {
  std::string name;
  NodeResources node;
  double want;
};

// TestNodeGpuShareFragAmountScore and TestNodeGpuShareFragAmount (the same vectors, read once
// through the score and once through the per-class amount).
TEST(NodeFragScoreConformance, MatchesReferenceForTypicalPods) {
  const TargetWorkload pods = ReferenceTypicalPods();
  const std::vector<ScoreCase> cases = {
      {"4x1080_used", Node(1000, {200, 1000, 1000, 500}, "1080"), 2566.62},
      {"4x1080_full", Node(1000, {1000, 1000, 1000, 1000}, "1080"), 3802.40},
      {"8x1080_full", Node(1000, {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, "1080"),
       7604.80},
  };
  for (const ScoreCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_NEAR(NodeFragScore(c.node, pods), c.want, 0.01);
    EXPECT_NEAR(SumExceptQ3(NodeFragAmount(c.node, pods)), c.want, 0.01);
  }
}

TEST(NodeFragScoreConformance, SingleShapeLackingCpuCountsAllIdleGpuAsQ4) {
  const TargetWorkload pods = Workload({{6000, 465, 1, "", 9.33}});
  const NodeResources node = Node(1000, {200, 1000, 1000, 500}, "1080");  // 4x1080_used_lack_CPU
  EXPECT_EQ(ClassifyNode(node, pods[0]), FragClass::kQ4LackCpu);
  EXPECT_EQ(node.GpuLeftTotal(), 2700);
  EXPECT_NEAR(NodeFragScore(node, pods), 251.91, 0.01);
  const FragAmount a = NodeFragAmount(node, pods);
  EXPECT_NEAR(SumExceptQ3(a), 251.91, 0.01);
  EXPECT_NEAR(a[static_cast<int>(FragClass::kQ4LackCpu)], 251.91, 0.01);
}

// TestNodeGpuShareFragAmountWithNonGpu.
TEST(NodeFragScoreConformance, MatchesReferenceWithCpuOnlyShapes) {
  const TargetWorkload pods = ReferenceTypicalPodsWithNonGpu();
  const std::vector<ScoreCase> cases = {
      {"8xP100_empty", Node(64000, {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, "P100"),
       887.20},
      {"8xP100_halved", Node(32000, {1000, 1000, 1000, 1000, 0, 0, 0, 0}, "P100"), 554.4},
      {"8xP100_nocpu", Node(0, {1000, 1000, 1000, 1000, 0, 0, 0, 0}, "P100"), 4000},
  };
  for (const ScoreCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_NEAR(SumExceptQ3(NodeFragAmount(c.node, pods)), c.want, 0.01);
    EXPECT_NEAR(NodeFragScore(c.node, pods), c.want, 0.01);
  }
}

// TestGetGpuFragMilliByNodeResAndPodRes: the "lack GPU" part of a satisfied shape is the idle
// milli-GPU on devices too small for it. With a single shape of frequency 1 that part is
// exactly the Q2 amount and the rest of the idle GPU is Q3.
TEST(NodeFragScoreConformance, SatisfiedShapeCountsTooSmallGpusAsLackGpu) {
  struct Case {
    std::string name;
    NodeResources node;
    PodRow pod;
    double want_frag_milli;
  };
  const std::vector<Case> cases = {
      {"4x1080_used 2x1000",
       Node(1000, {200, 1000, 1000, 500}, "1080"),
       {100, 1000, 2, "1080", 100},
       700},
      {"4x1080_full 2x1000",
       Node(1000, {1000, 1000, 1000, 1000}, "1080"),
       {100, 1000, 2, "1080", 100},
       0},
      {"8x1080_full 2x1000",
       Node(1000, {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, "1080"),
       {100, 1000, 2, "1080", 100},
       0},
      {"4x1080_used 2x200",
       Node(1000, {200, 1000, 1000, 500}, "1080"),
       {100, 200, 2, "1080", 100},
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload w = {Shape(c.pod)};
    ASSERT_EQ(ClassifyNode(c.node, w[0]), FragClass::kQ3Satisfied);
    const FragAmount a = NodeFragAmount(c.node, w);
    EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kQ2LackGpu)], c.want_frag_milli);
    EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kQ3Satisfied)],
                     static_cast<double>(c.node.GpuLeftTotal()) - c.want_frag_milli);
    EXPECT_DOUBLE_EQ(NodeFragScore(c.node, w), c.want_frag_milli);
  }
}

// ---- Classification (reference: GetNodePodFrag) -----------------------------------------

TEST(ClassifyNodeTest, CoversEveryClass) {
  // One 4x1080 node with 1000 milli-CPU and GPUs {200, 600, 350, 100}.
  const NodeResources node = Node(1000, {200, 600, 350, 100}, "1080");
  struct Case {
    std::string name;
    PodRow pod;
    FragClass want;
  };
  const std::vector<Case> cases = {
      {"lack both", {2000, 1000, 4, "", 10}, FragClass::kQ1LackBoth},
      {"lack gpu", {1000, 1000, 4, "", 10}, FragClass::kQ2LackGpu},
      {"satisfied", {1000, 100, 4, "", 10}, FragClass::kQ3Satisfied},
      {"lack cpu", {2000, 100, 1, "", 10}, FragClass::kQ4LackCpu},
      {"cpu-only fits", {1000, 0, 0, "", 10}, FragClass::kXlSatisfied},
      {"cpu-only lacks cpu", {2000, 0, 0, "", 10}, FragClass::kXrLackCpu},
      {"other model", {1000, 200, 2, "V100M32", 10}, FragClass::kNoAccess},
      {"same model", {1000, 200, 2, "1080", 10}, FragClass::kQ3Satisfied},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ClassifyNode(node, Shape(c.pod)), c.want);
  }
}

TEST(ClassifyNodeTest, CpuOnlyNodeIsNoAccessForTypedShapesOnly) {
  const NodeResources cpu_node = Node(4000, {}, "");
  EXPECT_EQ(ClassifyNode(cpu_node, Shape({1000, 500, 1, "T4", 10})), FragClass::kNoAccess);
  // An untyped GPU shape is accessible but finds no GPU.
  EXPECT_EQ(ClassifyNode(cpu_node, Shape({1000, 500, 1, "", 10})), FragClass::kQ2LackGpu);
  EXPECT_EQ(ClassifyNode(cpu_node, Shape({1000, 0, 0, "T4", 10})), FragClass::kXlSatisfied);
}

TEST(NodeFragAmountTest, EachClassGetsItsShareOfIdleGpu) {
  // The reference's commented-out Bellman "direct" vector, read through the one-step measure:
  // 1250 milli-GPU idle, one shape per class.
  const NodeResources node = Node(1000, {200, 600, 350, 100}, "1080");
  const TargetWorkload w = Workload({
      {2000, 1000, 4, "", 10},       // Q1
      {1000, 1000, 4, "", 20},       // Q2
      {1000, 100, 4, "", 30},        // Q3, nothing too small
      {2000, 100, 1, "", 10},        // Q4
      {1000, 0, 0, "", 10},          // XL
      {2000, 0, 0, "", 10},          // XR
      {1000, 200, 2, "V100M32", 10}  // NA
  });
  const FragAmount a = NodeFragAmount(node, w);
  EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kQ1LackBoth)], 125);
  EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kQ2LackGpu)], 250);
  EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kQ3Satisfied)], 375);
  EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kQ4LackCpu)], 125);
  EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kXlSatisfied)], 125);
  EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kXrLackCpu)], 125);
  EXPECT_DOUBLE_EQ(a[static_cast<int>(FragClass::kNoAccess)], 125);
  EXPECT_NEAR(NodeFragScore(node, w), 875, 1e-9);
}

TEST(NodeFragAmountTest, SkipsShapesWithFrequencyOutsideUnitInterval) {
  const NodeResources node = Node(1000, {1000, 500}, "1080");
  const TargetWorkload w = Workload({{0, 1000, 4, "", 150}, {0, 1000, 4, "", -10}});
  EXPECT_DOUBLE_EQ(NodeFragScore(node, w), 0);
}

TEST(NodeFragAmountTest, FullNodeHasNoFragment) {
  const NodeResources node = Node(64000, {0, 0, 0, 0}, "1080");
  EXPECT_DOUBLE_EQ(NodeFragScore(node, ReferenceTypicalPods()), 0);
  EXPECT_DOUBLE_EQ(NodeFragScore(node, ReferenceTypicalPodsWithNonGpu()), 0);
}

TEST(NodeResourcesTest, OfCopiesClusterStateNode) {
  auto s = core::ClusterState::Create(
      {{"cpu", 8000, 1024, 0, "", 0, 0}, {"g", 16000, 2048, 3, "T4", 0, 0}});
  ASSERT_TRUE(s.ok()) << s.status();
  core::PodShape pod{.cpu_milli = 1000, .memory_mib = 0, .num_gpu = 1, .gpu_milli = 300};
  core::Placement p;
  p.node = 1;
  p.num_gpus = 1;
  p.gpus[0] = 2;
  ASSERT_TRUE(s->Allocate(pod, p).ok());
  const NodeResources r = NodeResources::Of(*s, 1);
  EXPECT_EQ(r.cpu_left, 15000);
  EXPECT_EQ(r.num_gpus, 3);
  EXPECT_EQ(r.gpu_left[0], 1000);
  EXPECT_EQ(r.gpu_left[1], 1000);
  EXPECT_EQ(r.gpu_left[2], 700);
  EXPECT_EQ(r.model, 0);
  EXPECT_EQ(r.GpuLeftTotal(), 2700);
  const NodeResources c = NodeResources::Of(*s, 0);
  EXPECT_EQ(c.num_gpus, 0);
  EXPECT_EQ(c.model, core::kNoGpuModel);
  EXPECT_EQ(c.GpuLeftTotal(), 0);
}

// ---- Typical shapes (reference: GetTypicalPods) ------------------------------------------

ShapeCount Count(int64_t cpu, int32_t num_gpu, int32_t gpu_milli, double count) {
  ShapeCount c;
  c.shape.cpu_milli = cpu;
  c.shape.num_gpu = num_gpu;
  c.shape.gpu_milli = gpu_milli;
  c.count = count;
  return c;
}

TEST(TypicalShapesTest, StopsAtCoverageAndRenormalises) {
  const TargetWorkload w = TypicalShapes({Count(1000, 0, 0, 5), Count(2000, 1, 500, 30),
                                          Count(3000, 1, 1000, 50), Count(4000, 2, 1000, 15)},
                                         95.0);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].cpu_milli, 3000);
  EXPECT_EQ(w[1].cpu_milli, 2000);
  EXPECT_EQ(w[2].cpu_milli, 4000);
  EXPECT_DOUBLE_EQ(w[0].freq, 50.0 / 95.0);
  EXPECT_DOUBLE_EQ(w[1].freq, 30.0 / 95.0);
  EXPECT_DOUBLE_EQ(w[2].freq, 15.0 / 95.0);
  EXPECT_NEAR(w[0].freq + w[1].freq + w[2].freq, 1.0, 1e-12);
}

TEST(WorkloadDistanceTest, HalfTheSumOfFrequencyDifferences) {
  const TargetWorkload a = TypicalShapes({Count(1000, 1, 1000, 60), Count(2000, 0, 0, 40)}, 100);
  const TargetWorkload b = TypicalShapes({Count(1000, 1, 1000, 50), Count(2000, 0, 0, 50)}, 100);
  EXPECT_DOUBLE_EQ(WorkloadDistance(a, a), 0.0);
  EXPECT_NEAR(WorkloadDistance(a, b), 0.1, 1e-12);
  EXPECT_NEAR(WorkloadDistance(b, a), 0.1, 1e-12);
  // A shape only one side has counts its whole frequency there.
  const TargetWorkload c = TypicalShapes({Count(1000, 1, 1000, 60), Count(3000, 2, 1000, 40)}, 100);
  EXPECT_NEAR(WorkloadDistance(a, c), 0.4, 1e-12);
  // The model mask is part of a shape's identity.
  TargetWorkload bound = a;
  bound[0].gpu_model_mask = 2;
  EXPECT_NEAR(WorkloadDistance(a, bound), 0.6, 1e-12);
  const TargetWorkload disjoint = TypicalShapes({Count(5000, 8, 1000, 1)}, 100);
  EXPECT_NEAR(WorkloadDistance(a, disjoint), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(WorkloadDistance({}, {}), 0.0);
}

TEST(TypicalShapesTest, CoverageTable) {
  struct Case {
    std::string name;
    double coverage_pct;
    size_t want_size;
  };
  const std::vector<Case> cases = {
      {"half takes the first", 50, 1}, {"just over half takes two", 50.1, 2},
      {"80 takes two", 80, 2},         {"95 takes three", 95, 3},
      {"96 takes all", 96, 4},         {"100 takes all", 100, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload w = TypicalShapes(
        {Count(1, 0, 0, 50), Count(2, 0, 0, 30), Count(3, 0, 0, 15), Count(4, 0, 0, 5)},
        c.coverage_pct);
    ASSERT_EQ(w.size(), c.want_size);
    double sum = 0;
    for (const TargetShape& s : w) sum += s.freq;
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
}

TEST(TypicalShapesTest, FullCoverageKeepsOriginalFrequencies) {
  const TargetWorkload w = TypicalShapes({Count(1000, 0, 0, 1), Count(2000, 1, 500, 3)}, 100.0);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].cpu_milli, 2000);
  EXPECT_DOUBLE_EQ(w[0].freq, 0.75);
  EXPECT_DOUBLE_EQ(w[1].freq, 0.25);
}

TEST(TypicalShapesTest, EqualCountsPutLargerShapeFirst) {
  // Order key: cpu, then gpu_milli, then num_gpu, then gpu_spec; larger first.
  ShapeCount spec_a = Count(1000, 1, 500, 10);
  spec_a.shape.gpu_spec = "A";
  ShapeCount spec_b = Count(1000, 1, 500, 10);
  spec_b.shape.gpu_spec = "B";
  const TargetWorkload w = TypicalShapes({Count(1000, 1, 200, 10), spec_a, Count(1000, 2, 1000, 10),
                                          Count(8000, 0, 0, 10), Count(1000, 1, 1000, 10), spec_b},
                                         100.0);
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0].cpu_milli, 8000);
  EXPECT_EQ(w[1].num_gpu, 2);
  EXPECT_EQ(w[1].gpu_milli, 1000);
  EXPECT_EQ(w[2].num_gpu, 1);
  EXPECT_EQ(w[2].gpu_milli, 1000);
  EXPECT_EQ(w[3].gpu_spec, "B");
  EXPECT_EQ(w[4].gpu_spec, "A");
  EXPECT_EQ(w[5].gpu_milli, 200);
  for (const TargetShape& s : w) EXPECT_DOUBLE_EQ(s.freq, 1.0 / 6.0);
}

TEST(TypicalShapesTest, EmptyOrZeroCountsGiveEmptyWorkload) {
  EXPECT_TRUE(TypicalShapes({}, 95.0).empty());
  EXPECT_TRUE(TypicalShapes({Count(1000, 0, 0, 0)}, 95.0).empty());
}

TEST(CountShapesTest, CountsIdenticalShapesAndKeepsSpecApart) {
  std::vector<core::PodSpec> pods(5);
  pods[0].shape = {.cpu_milli = 1000, .memory_mib = 10, .num_gpu = 1, .gpu_milli = 500};
  pods[1].shape = {.cpu_milli = 1000, .memory_mib = 99, .num_gpu = 1, .gpu_milli = 500};
  pods[2].shape = {.cpu_milli = 1000, .memory_mib = 10, .num_gpu = 1, .gpu_milli = 500};
  pods[2].gpu_spec = "T4";
  pods[3].shape = {.cpu_milli = 2000, .memory_mib = 0, .num_gpu = 0, .gpu_milli = 0};
  pods[4].shape = pods[0].shape;
  const std::vector<ShapeCount> counts = CountShapes(pods);
  ASSERT_EQ(counts.size(), 3u);
  // Memory is not part of the shape.
  EXPECT_EQ(counts[0].shape.cpu_milli, 1000);
  EXPECT_EQ(counts[0].shape.gpu_spec, "");
  EXPECT_DOUBLE_EQ(counts[0].count, 3);
  EXPECT_EQ(counts[1].shape.gpu_spec, "T4");
  EXPECT_DOUBLE_EQ(counts[1].count, 1);
  EXPECT_EQ(counts[2].shape.cpu_milli, 2000);
  EXPECT_DOUBLE_EQ(counts[2].count, 1);
}

}  // namespace
}  // namespace seedance::sched
