#include "seedance/federation/placement.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::federation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ------------------------------------------------------------------------ the cluster summary

// Shaped as server::ClusterSummaryJson writes it (src/server/codec.cc; docs/api.md).
constexpr char kSummary[] = R"({"cluster": "eu-1", "backend": "slurm", "nodes": 12,
 "capacity": {"cpu_milli": 1152000, "memory_mib": 9437184, "num_gpus": 96},
 "free": {"cpu_milli": 800000, "memory_mib": 7000000, "gpu_milli": 40500, "whole_gpus": 38},
 "largest_free": {"cpu_milli": 96000, "memory_mib": 786432, "whole_gpus": 8},
 "cordoned_nodes": 1,
 "gpu_models": [{"gpu_model": "V100M16", "nodes": 12,
                 "capacity": {"cpu_milli": 1152000, "memory_mib": 9437184, "num_gpus": 96},
                 "free": {"cpu_milli": 800000, "memory_mib": 7000000, "gpu_milli": 40500,
                          "whole_gpus": 38},
                 "largest_free": {"cpu_milli": 96000, "memory_mib": 786432, "whole_gpus": 8}}],
 "pending_pods": 3, "a_newer_field": {"x": 1}})";

TEST(ClusterSummaryTest, ReadsWhatAMemberServes) {
  absl::StatusOr<ClusterSummary> s = ParseClusterSummary(kSummary);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cluster, "eu-1");
  EXPECT_EQ(s->backend, "slurm");
  EXPECT_EQ(s->nodes, 12);
  EXPECT_EQ(s->capacity.num_gpus, 96);
  EXPECT_EQ(s->free.gpu_milli, 40500);
  EXPECT_EQ(s->free.whole_gpus, 38);
  EXPECT_EQ(s->largest_free.memory_mib, 786432);
  EXPECT_EQ(s->cordoned_nodes, 1);
  EXPECT_EQ(s->pending_pods, 3);
  ASSERT_EQ(s->gpu_models.size(), 1u);
  const ModelRoom* v100 = s->Model("V100M16");
  ASSERT_NE(v100, nullptr);
  EXPECT_EQ(v100->largest_free.whole_gpus, 8);
  EXPECT_FALSE(v100->npu);  // a member that does not say (an older one): a GPU
  EXPECT_EQ(v100->device_memory_mib, 0);
  EXPECT_EQ(s->Model("T4"), nullptr);
  absl::StatusOr<ClusterSummary> npus = ParseClusterSummary(
      R"({"cluster": "a", "gpu_models": [{"gpu_model": "Ascend910B", "device_type": "npu",
          "device_memory_mib": 65536}]})");
  ASSERT_TRUE(npus.ok()) << npus.status();
  EXPECT_TRUE(npus->gpu_models[0].npu);
  EXPECT_EQ(npus->gpu_models[0].device_memory_mib, 65536);
}

TEST(ClusterSummaryTest, RefusesWhatIsNotASummary) {
  struct Case {
    std::string json, want;
  };
  const std::vector<Case> cases = {
      {"{", "GET /v1/cluster:1: not JSON"},
      {R"({"backend": "local"})", R"(GET /v1/cluster: $.cluster: missing required key "cluster")"},
      {R"({"cluster": "a", "free": {"cpu_milli": -1}})",
       "GET /v1/cluster: $.free.cpu_milli: must be an integer in 0..9223372036854775807 (got -1)"},
      {R"({"cluster": "a", "gpu_models": {}})",
       "GET /v1/cluster: $.gpu_models: must be an array (got an object)"},
      {R"({"cluster": "a", "gpu_models": [{"gpu_model": "T4"}, {"gpu_model": "T4"}]})",
       "GET /v1/cluster: $.gpu_models[1].gpu_model: model 'T4' is listed twice"},
      {R"({"cluster": "a", "gpu_models": [{"gpu_model": "T4", "device_type": "tpu"}]})",
       R"(GET /v1/cluster: $.gpu_models[0].device_type: must be "gpu" or "npu" (got 'tpu'))"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ClusterSummary> s = ParseClusterSummary(c.json);
    ASSERT_FALSE(s.ok()) << c.json;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.want)) << c.json;
  }
}

// ------------------------------------------------------------------------------- placement

class PlacementTest : public ::testing::Test {
 protected:
  // A model's room: `nodes` nodes of `gpus_per_node` GPUs, `whole_free` whole GPUs free in all
  // and `largest` on the freest node, each node with 64 cores and 256 GiB free.
  static ModelRoom Model(std::string name, int64_t nodes, int64_t gpus_per_node, int64_t whole_free,
                         int64_t largest, int64_t extra_milli = 0) {
    ModelRoom m;
    m.gpu_model = std::move(name);
    m.nodes = nodes;
    m.capacity = {nodes * 64000, nodes * 262144, nodes * gpus_per_node};
    m.free = {nodes * 64000, nodes * 262144, whole_free * 1000 + extra_milli, whole_free};
    m.largest_free = {64000, 262144, largest};
    return m;
  }
  static MemberView Member(std::string name, std::vector<ModelRoom> models, double gpu_hour,
                           std::string region = "") {
    MemberView v;
    v.name = name;
    v.region = std::move(region);
    v.prices.gpu_hour_default = gpu_hour;
    v.summary.cluster = std::move(name);
    v.summary.largest_free = {64000, 262144, 0};
    for (ModelRoom& m : models) {
      v.summary.nodes += m.nodes;
      v.summary.free.cpu_milli += m.free.cpu_milli;
      v.summary.free.memory_mib += m.free.memory_mib;
      v.summary.free.gpu_milli += m.free.gpu_milli;
      v.summary.free.whole_gpus += m.free.whole_gpus;
      v.summary.largest_free.whole_gpus =
          std::max(v.summary.largest_free.whole_gpus, m.largest_free.whole_gpus);
      v.summary.gpu_models.push_back(std::move(m));
    }
    return v;
  }
  static PodAsk Pod(int32_t num_gpu, int32_t gpu_milli = 1000, std::string gpu_spec = "") {
    PodAsk a;
    a.request.name = "p";
    a.request.cpu_milli = 4000;
    a.request.memory_mib = 16384;
    a.request.num_gpu = num_gpu;
    a.request.gpu_milli = num_gpu == 0 ? 0 : gpu_milli;
    a.request.gpu_spec = std::move(gpu_spec);
    a.expected_duration_s = 7200;
    return a;
  }
  static Decision Run(const PodAsk& pod, const std::vector<MemberView>& members,
                      PolicyKind kind = PolicyKind::kCost) {
    return Decide(pod, members, {.kind = kind});
  }
};

TEST_F(PlacementTest, ExplainsAMemberWhereNoNodeHasTheWholeGpus) {
  const std::vector<MemberView> members = {Member("us-east", {Model("V100M16", 4, 8, 12, 4)}, 2.0),
                                           Member("eu-west", {Model("V100M16", 2, 8, 16, 8)}, 3.0)};
  const Decision d = Run(Pod(8), members);
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.reasons, ElementsAre("us-east: no node has 8 free V100M16 GPUs (largest 4)"));
  EXPECT_THAT(d.gpu_models, ElementsAre("V100M16"));
}

TEST_F(PlacementTest, SharingPodNeedsOnlyFreeMilliOnTheModel) {
  // No whole GPU is free, but 300 milli-GPUs are (the approximation: anywhere on the model).
  const std::vector<MemberView> members = {Member("a", {Model("T4", 1, 4, 0, 0, 300)}, 1.0)};
  EXPECT_EQ(Run(Pod(1, 250), members).member, 0);
  const Decision d = Run(Pod(1, 500), members);
  EXPECT_EQ(d.member, -1);
  EXPECT_THAT(d.reasons, ElementsAre("a: T4 has 300 milli-GPUs free in all, the pod asks 500"));
  // A whole GPU is not a share.
  EXPECT_THAT(Run(Pod(1, 1000), members).reasons,
              ElementsAre("a: no node has 1 free T4 GPU (largest 0)"));
}

TEST_F(PlacementTest, ExplainsCpuAndMemory) {
  std::vector<MemberView> members = {Member("a", {Model("T4", 1, 4, 4, 4)}, 1.0)};
  PodAsk pod = Pod(1);
  pod.request.cpu_milli = 96000;
  EXPECT_THAT(Run(pod, members).reasons,
              ElementsAre("a: no T4 node has 96000 free milli-CPU (largest 64000)"));
  pod = Pod(0);
  pod.request.memory_mib = 300000;
  EXPECT_THAT(Run(pod, members).reasons,
              ElementsAre("a: no node has 300000 MiB of memory free (largest 262144)"));
}

TEST_F(PlacementTest, CostPicksTheCheapestMemberAndModelWithRoom) {
  MemberView mixed = Member("mixed", {Model("P100", 1, 4, 4, 4), Model("T4", 1, 4, 4, 4)}, 0);
  mixed.prices.gpu_hour = {{"P100", 1.5}, {"T4", 0.4}};
  mixed.prices.cpu_hour = 0.01;
  std::vector<MemberView> members = {Member("dear", {Model("V100M16", 1, 8, 8, 8)}, 2.5), mixed};
  const Decision d = Run(Pod(2), members);
  ASSERT_EQ(d.member, 1);
  EXPECT_THAT(d.gpu_models, ElementsAre("T4"));
  // 0.4 $/GPU-h x 2 GPUs x 2 h + 0.01 $/core-h x 4 cores x 2 h.
  EXPECT_DOUBLE_EQ(d.expected_cost_usd, 0.4 * 2 * 2 + 0.01 * 4 * 2);
  EXPECT_THAT(d.reasons, ElementsAre("dear: fits at $10 expected; mixed is cheaper ($1.68)"));
  // With T4 full, P100 is the cheapest model with room there.
  members[1].summary.gpu_models[1] = Model("T4", 1, 4, 1, 1);
  const Decision p100 = Run(Pod(2), members);
  EXPECT_EQ(p100.member, 1);
  EXPECT_THAT(p100.gpu_models, ElementsAre("P100"));
}

// What a front pins: the model priced, then every model there the pod accepts that costs no
// more, full or not (the member binds whichever frees first); dearer models are left out.
TEST_F(PlacementTest, ThePinKeepsTheCostAndEveryModelNoDearer) {
  MemberView m = Member("m",
                        {Model("P100", 1, 4, 4, 4), Model("T4", 1, 4, 0, 0),
                         Model("V100M16", 1, 8, 8, 8), Model("V100M32", 1, 8, 0, 0)},
                        0);
  m.prices.gpu_hour = {{"P100", 1.5}, {"T4", 0.4}, {"V100M16", 2.5}, {"V100M32", 1.5}};
  const std::vector<MemberView> members = {m};
  const Decision d = Run(Pod(1), members);
  ASSERT_EQ(d.member, 0);
  EXPECT_THAT(d.gpu_models, ElementsAre("P100"));
  EXPECT_THAT(d.gpu_specs, ElementsAre("P100|T4|V100M32"));
  // A pod that names its models is pinned among them only.
  PodAsk named = Pod(1);
  named.request.gpu_spec = "P100|V100M16";
  EXPECT_THAT(Run(named, members).gpu_specs, ElementsAre("P100"));
  // A CPU-only pod pins nothing.
  EXPECT_THAT(Run(Pod(0), members).gpu_specs, ElementsAre(""));
}

TEST_F(PlacementTest, CostTiesGoToTheMostFreeWholeGpus) {
  const std::vector<MemberView> members = {Member("a", {Model("T4", 2, 4, 4, 4)}, 1.0),
                                           Member("b", {Model("T4", 2, 4, 8, 4)}, 1.0)};
  const Decision d = Run(Pod(1), members);
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.reasons[0], HasSubstr("as b does, which has more free whole GPUs"));
}

TEST_F(PlacementTest, UnknownDurationIsPricedAsAnHour) {
  const std::vector<MemberView> members = {Member("a", {Model("T4", 1, 4, 4, 4)}, 1.5)};
  PodAsk pod = Pod(1);
  pod.expected_duration_s.reset();
  EXPECT_DOUBLE_EQ(Run(pod, members).expected_cost_usd, 1.5);
}

TEST_F(PlacementTest, FirstToAdmitTakesTheFirstMemberInFileOrderWhateverItCosts) {
  const std::vector<MemberView> members = {Member("full", {Model("T4", 1, 4, 0, 0)}, 0.1),
                                           Member("dear", {Model("V100M16", 1, 8, 8, 8)}, 9.0),
                                           Member("cheap", {Model("T4", 1, 4, 4, 4)}, 0.2)};
  const Decision d = Run(Pod(1), members, PolicyKind::kFirstToAdmit);
  EXPECT_EQ(d.member, 1);
  EXPECT_DOUBLE_EQ(d.expected_cost_usd, 9.0 * 2);
  EXPECT_THAT(d.reasons, ElementsAre("full: no node has 1 free T4 GPU (largest 0)",
                                     "cheap: fits, but dear comes first in the member file"));
  EXPECT_EQ(Run(Pod(1), members, PolicyKind::kCost).member, 2);
}

TEST_F(PlacementTest, StaticWeightsRotateByWeightAndSkipMembersWithoutRoom) {
  std::vector<MemberView> members = {Member("a", {Model("T4", 1, 4, 4, 4)}, 1.0),
                                     Member("b", {Model("T4", 1, 4, 4, 4)}, 1.0)};
  WeightedRotation rotation({2, 1});
  const Policy policy{.kind = PolicyKind::kStaticWeights, .rotation = &rotation};
  std::vector<int> chosen;
  for (int i = 0; i < 6; ++i) chosen.push_back(Decide(Pod(1), members, policy).member);
  EXPECT_THAT(chosen, ElementsAre(0, 1, 0, 0, 1, 0));
  // a is full: every pod goes to b, whoever's turn it is.
  members[0].summary.gpu_models[0] = Model("T4", 1, 4, 0, 0);
  chosen.clear();
  for (int i = 0; i < 3; ++i) chosen.push_back(Decide(Pod(1), members, policy).member);
  EXPECT_THAT(chosen, ElementsAre(1, 1, 1));
}

TEST_F(PlacementTest, EqualWeightsAreARoundRobin) {
  WeightedRotation rotation({1, 1, 1});
  std::vector<int> turns;
  for (int i = 0; i < 6; ++i) {
    turns.push_back(rotation.Order()[0]);
    rotation.Charge(turns.back());
  }
  EXPECT_THAT(turns, ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(rotation.Order(), ElementsAre(0, 1, 2));
}

TEST_F(PlacementTest, EgressMakesTheDataRegionCheaper) {
  const std::vector<MemberView> members = {
      Member("far", {Model("T4", 1, 4, 4, 4)}, 1.0, "us-east"),
      Member("near", {Model("T4", 1, 4, 4, 4)}, 1.2, "eu-west")};
  std::vector<MemberView> priced = members;
  for (MemberView& m : priced) m.prices.egress_gb = 0.05;
  PodAsk pod = Pod(1);
  EXPECT_EQ(Run(pod, priced).member, 0);  // no data: the cheaper GPU wins
  pod.data_region = "eu-west";
  pod.data_gb = 100;  // $5 to move it out of eu-west, against $0.40 more for GPU time
  const Decision d = Run(pod, priced);
  EXPECT_EQ(d.member, 1);
  EXPECT_DOUBLE_EQ(d.expected_cost_usd, 1.2 * 2);
  EXPECT_THAT(d.reasons, ElementsAre("far: fits at $7 expected; near is cheaper ($2.4)"));
}

TEST_F(PlacementTest, HonoursClusterRegionAndModelConstraints) {
  const std::vector<MemberView> members = {
      Member("a", {Model("T4", 1, 4, 4, 4)}, 1.0, "us-east"),
      Member("b", {Model("V100M16", 1, 8, 8, 8)}, 2.0, "eu-west")};
  PodAsk pod = Pod(1);
  pod.request.labels[std::string(kClusterLabel)] = "b";
  Decision d = Run(pod, members);
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.reasons,
              ElementsAre("a: the pod asks for cluster 'b' (federation.seedance.io/cluster)"));
  pod = Pod(1);
  pod.request.labels[std::string(kRegionLabel)] = "eu-west";
  d = Run(pod, members);
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.reasons, ElementsAre("a: in region 'us-east', the pod asks for 'eu-west' "
                                     "(federation.seedance.io/region)"));
  d = Run(Pod(1, 1000, "V100M16|A100"), members);
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.reasons, ElementsAre("a: has no GPU of model V100M16|A100 (it has T4)"));
}

class NpuPlacementTest : public PlacementTest {
 protected:
  // Members of the NPU tests: "gpus" has H100s (80 GiB) at $4/h and T4s (16 GiB) at $0.5/h,
  // "ascend" has Ascend 910B NPUs (64 GiB) at $1.5/h; each model 2 nodes of 8 devices, 16 free,
  // 8 on the freest node. `with_memory` false: the members do not report device memory.
  static std::vector<MemberView> NpuMembers(bool with_memory = true) {
    const auto room = [&](std::string name, int64_t memory) {
      ModelRoom m = Model(std::move(name), 2, 8, 16, 8);
      m.device_memory_mib = with_memory ? memory : 0;
      return m;
    };
    MemberView gpus;
    gpus.name = gpus.summary.cluster = "gpus";
    gpus.summary.gpu_models = {room("H100", 80 * 1024), room("T4", 16 * 1024)};
    gpus.prices.gpu_hour = {{"H100", 4.0}, {"T4", 0.5}};
    MemberView ascend;
    ascend.name = ascend.summary.cluster = "ascend";
    ascend.summary.gpu_models = {room("Ascend910B", 64 * 1024)};
    ascend.summary.gpu_models[0].npu = true;
    ascend.prices.gpu_hour = {{"Ascend910B", 1.5}};
    for (MemberView* m : {&gpus, &ascend}) m->summary.largest_free = {64000, 262144, 8};
    return {gpus, ascend};
  }
};

TEST_F(NpuPlacementTest, NpuPodsGoOnlyToNpusAndGpuPodsNeverDo) {
  const std::vector<MemberView> members = NpuMembers();
  PodAsk npu = Pod(2);
  npu.request.device.type = core::DeviceClass::kNpu;
  Decision d = Run(npu, members);
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.gpu_models, ElementsAre("Ascend910B"));
  EXPECT_THAT(d.reasons, ElementsAre("gpus: has no NPU (it has H100, T4)"));
  // Under every policy: the first member in file order has no NPU.
  EXPECT_EQ(Run(npu, members, PolicyKind::kFirstToAdmit).member, 1);
  // A pod that says nothing asks for GPUs: the cheapest GPU, never the NPU.
  d = Run(Pod(2), members);
  EXPECT_EQ(d.member, 0);
  EXPECT_THAT(d.gpu_models, ElementsAre("T4"));
  // With the GPUs' member lost, it waits rather than land on an NPU.
  std::vector<MemberView> gpus_lost = members;
  gpus_lost[0].lost = true;
  d = Run(Pod(2), gpus_lost);
  EXPECT_EQ(d.member, -1);
  EXPECT_THAT(d.reasons, ElementsAre("gpus: lost", "ascend: has no GPU nodes"));
}

TEST_F(NpuPlacementTest, AnyAcceleratorPodsTakeTheCheapestDeviceWithTheMemory) {
  const std::vector<MemberView> members = NpuMembers();
  PodAsk any = Pod(1);
  any.request.device.type = core::DeviceClass::kAny;
  // No floor: the T4 ($0.5/h) is the cheapest accelerator.
  Decision d = Run(any, members);
  EXPECT_EQ(d.member, 0);
  EXPECT_THAT(d.gpu_models, ElementsAre("T4"));
  // ">= 48 GiB" leaves H100 ($4/h) and Ascend 910B ($1.5/h): the NPU is cheaper.
  any.request.device.memory_mib = 48 * 1024;
  d = Run(any, members);
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.gpu_models, ElementsAre("Ascend910B"));
  EXPECT_THAT(d.reasons, ElementsAre(HasSubstr("gpus: fits at $8 expected; ascend is cheaper")));
  // ">= 72 GiB" leaves the H100 only.
  any.request.device.memory_mib = 72 * 1024;
  d = Run(any, members);
  EXPECT_EQ(d.member, 0);
  EXPECT_THAT(d.gpu_models, ElementsAre("H100"));
  EXPECT_THAT(d.reasons,
              ElementsAre("ascend: has no accelerator with >= 73728 MiB (it has Ascend910B)"));
  // A model whose memory the member does not report passes no floor.
  EXPECT_EQ(Run(any, NpuMembers(/*with_memory=*/false)).member, -1);
}

TEST_F(PlacementTest, LostMembersAreNeverChosen) {
  std::vector<MemberView> members = {Member("slurm-a", {Model("T4", 1, 4, 4, 4)}, 0.1),
                                     Member("b", {Model("T4", 1, 4, 4, 4)}, 1.0)};
  members[0].lost = true;
  for (PolicyKind kind : {PolicyKind::kCost, PolicyKind::kFirstToAdmit}) {
    const Decision d = Run(Pod(1), members, kind);
    EXPECT_EQ(d.member, 1) << PolicyName(kind);
    EXPECT_THAT(d.reasons, ElementsAre("slurm-a: lost")) << PolicyName(kind);
  }
  members[1].lost = true;
  const Decision none = Run(Pod(1), members);
  EXPECT_EQ(none.member, -1);
  EXPECT_EQ(none.expected_cost_usd, 0);
  EXPECT_TRUE(none.gpu_models.empty());
  EXPECT_THAT(none.reasons, ElementsAre("slurm-a: lost", "b: lost"));
}

TEST_F(PlacementTest, AModelWithoutAPriceIsNotAPlace) {
  MemberView m = Member("a", {Model("G2", 1, 8, 8, 8)}, 0);
  m.prices.gpu_hour_default.reset();
  m.prices.gpu_hour = {{"T4", 0.3}};
  const Decision d = Run(Pod(1), {m});
  EXPECT_EQ(d.member, -1);
  EXPECT_THAT(d.reasons, ElementsAre("a: no GPU price for G2 (and no default)"));
}

TEST_F(PlacementTest, GangsGoWholeToOneMember) {
  // Each 8-GPU pod fits a node of `small` on its own, but three of them need 24 free GPUs.
  const std::vector<MemberView> members = {Member("small", {Model("V100M16", 2, 8, 16, 8)}, 1.0),
                                           Member("big", {Model("V100M16", 4, 8, 32, 8)}, 2.0)};
  std::vector<PodAsk> gang(3, Pod(8));
  for (size_t i = 0; i < gang.size(); ++i) {
    gang[i].request.name = "w-" + std::to_string(i);
    gang[i].request.gang = "job";
    gang[i].request.gang_min = 3;
  }
  const Decision d = DecideGang(gang, members, {.kind = PolicyKind::kCost});
  EXPECT_EQ(d.member, 1);
  EXPECT_THAT(d.gpu_models, ElementsAre("V100M16", "V100M16", "V100M16"));
  EXPECT_DOUBLE_EQ(d.expected_cost_usd, 3 * (2.0 * 8 * 2));
  EXPECT_THAT(d.reasons, ElementsAre("small: the gang's 3 pods need 24 whole V100M16 GPUs "
                                     "(24000 milli), 12000 milli-CPU and 49152 MiB; 16 (16000), "
                                     "128000 and 524288 are free"));
  // A pod of the gang that fits nowhere on a member keeps the whole gang off it.
  gang[2].request.gpu_spec = "T4";
  const Decision none = DecideGang(gang, members, {.kind = PolicyKind::kFirstToAdmit});
  EXPECT_EQ(none.member, -1);
  EXPECT_THAT(none.reasons[1], HasSubstr("big: pod w-2 of the gang: has no GPU of model T4"));
}

TEST_F(PlacementTest, AGangOfOneDecidesAsAPod) {
  const std::vector<MemberView> members = {Member("a", {Model("T4", 1, 4, 2, 2)}, 0.5),
                                           Member("b", {Model("T4", 1, 4, 4, 4)}, 1.0)};
  for (const PodAsk& pod : {Pod(1), Pod(4), Pod(0)}) {
    const Decision one = Run(pod, members);
    const Decision gang = DecideGang(std::vector<PodAsk>{pod}, members, {});
    EXPECT_EQ(one.member, gang.member);
    EXPECT_EQ(one.expected_cost_usd, gang.expected_cost_usd);
    EXPECT_EQ(one.reasons, gang.reasons);
  }
}

TEST(FederationDeathTest, RotationNeedsPositiveWeights) {
  EXPECT_DEATH(WeightedRotation({}), "a weighted rotation needs at least one member");
  EXPECT_DEATH(WeightedRotation({1, 0}), "a member's weight must be finite and > 0, got 0");
}

TEST(FederationDeathTest, RotationChargesOnlyItsMembers) {
  WeightedRotation r({1, 1});
  EXPECT_DEATH(r.Charge(2), "charged member 2 of a rotation over 2");
}

TEST(FederationDeathTest, StaticWeightsNeedARotationOverEveryMember) {
  const std::vector<MemberView> members(2);
  EXPECT_DEATH(Decide(PodAsk{}, members, {.kind = PolicyKind::kStaticWeights}),
               "static weights need a rotation over the 2 members \\(got 0\\)");
}

TEST(FederationDeathTest, AGangHasAtLeastOneAsk) {
  const std::vector<MemberView> members(1);
  EXPECT_DEATH(DecideGang({}, members, {}), "DecideGang needs at least one ask");
}

}  // namespace
}  // namespace seedance::federation
