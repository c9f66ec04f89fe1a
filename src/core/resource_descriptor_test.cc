#include "seedance/core/resource_descriptor.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/core/cluster_state.h"

namespace seedance::core {
namespace {

// --- helpers -----------------------------------------------------------------------------------

std::filesystem::path SourceDir() {
  if (const char* dir = std::getenv("SEEDANCE_SOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  // src/core/resource_descriptor_test.cc -> repository root.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

void WriteFile(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// `text` with its only occurrence of `from` replaced by `to`.
std::string ReplaceOnce(std::string text, std::string_view from, std::string_view to) {
  size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "not found: " << from;
  if (pos == std::string::npos) return text;
  EXPECT_EQ(text.find(from, pos + 1), std::string::npos) << "found twice: " << from;
  return text.replace(pos, from.size(), to);
}

std::string StatusMessage(const absl::Status& status) { return std::string(status.message()); }

GpuModelInfo Model(std::string name, int64_t memory_mib, double price, double power) {
  return GpuModelInfo{.name = std::move(name),
                      .memory_mib = memory_mib,
                      .price_usd_per_hour = price,
                      .power_w = power};
}

NumaNode Numa(int id, int64_t cpu_milli, int64_t memory_mib, std::vector<int> distances = {}) {
  return NumaNode{
      .id = id, .cpu_milli = cpu_milli, .memory_mib = memory_mib, .distances = distances};
}

NodeDescriptor Node(std::string name, std::vector<NumaNode> numa_nodes) {
  NodeDescriptor n;
  n.name = std::move(name);
  n.numa_nodes = std::move(numa_nodes);
  return n;
}

Device Gpu(std::string id, std::string model, int numa_node = -1, std::string nvlink_group = "") {
  Device d;
  d.id = std::move(id);
  d.type = DeviceType::kGpu;
  d.model = std::move(model);
  d.capacity = {{"gpu_milli", 1000}, {"memory_mib", 81920}};
  d.binding.numa_node = numa_node;
  d.nvlink_group = std::move(nvlink_group);
  return d;
}

Device Other(std::string id, DeviceType type, std::map<std::string, int64_t> capacity) {
  Device d;
  d.id = std::move(id);
  d.type = type;
  d.capacity = std::move(capacity);
  return d;
}

// One A100 model; node "n0": two NUMA nodes, two GPUs, one FPGA.
ClusterDescriptor SmallCluster() {
  ClusterDescriptor c;
  c.name = "small";
  c.gpu_models["A100"] = Model("A100", 81920, 3.5, 400);
  NodeDescriptor n;
  n.name = "n0";
  n.numa_nodes = {Numa(0, 64000, 1024, {10, 21}), Numa(1, 32000, 2048, {21, 10})};
  n.devices = {Gpu("gpu0", "A100", 0, "nv0"), Gpu("gpu1", "A100", 1, "nv0"),
               Other("fpga0", DeviceType::kFpga, {{"lut_count", 1728000}})};
  c.nodes.push_back(n);
  return c;
}

absl::StatusOr<ClusterDescriptor> ParseExampleYaml() {
  return LoadClusterDescriptor((SourceDir() / "examples" / "cluster.yaml").string());
}

// --- device type names -------------------------------------------------------------------------

TEST(DeviceTypeTest, NamesRoundTrip) {
  for (DeviceType t : {DeviceType::kCpu, DeviceType::kGpu, DeviceType::kNpu, DeviceType::kFpga}) {
    EXPECT_EQ(DeviceTypeFromName(DeviceTypeName(t)), t) << DeviceTypeName(t);
  }
  EXPECT_EQ(DeviceTypeName(DeviceType::kFpga), "fpga");
}

TEST(DeviceTypeTest, RejectsUnknownAndUpperCaseNames) {
  EXPECT_EQ(DeviceTypeFromName("tpu"), std::nullopt);
  EXPECT_EQ(DeviceTypeFromName("GPU"), std::nullopt);
  EXPECT_EQ(DeviceTypeFromName(""), std::nullopt);
}

// --- example files -----------------------------------------------------------------------------

TEST(ExampleFilesTest, YamlExampleDescribesTwoEightGpuNodesWithNpuAndFpga) {
  absl::StatusOr<ClusterDescriptor> c = ParseExampleYaml();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->nodes.size(), 2u);
  int npus = 0;
  int fpgas = 0;
  for (const NodeDescriptor& node : c->nodes) {
    EXPECT_EQ(node.numa_nodes.size(), 2u) << node.name;
    EXPECT_EQ(node.NumGpus(), 8) << node.name;
    std::map<std::string, int> groups;
    std::map<int, int> gpus_per_numa;
    for (const Device& d : node.devices) {
      npus += d.type == DeviceType::kNpu ? 1 : 0;
      fpgas += d.type == DeviceType::kFpga ? 1 : 0;
      if (d.type != DeviceType::kGpu) continue;
      ++groups[d.nvlink_group];
      ++gpus_per_numa[d.binding.numa_node];
    }
    EXPECT_EQ(groups.size(), 2u) << node.name;
    EXPECT_EQ(gpus_per_numa, (std::map<int, int>{{0, 4}, {1, 4}})) << node.name;
  }
  EXPECT_EQ(npus, 1);
  EXPECT_EQ(fpgas, 1);
}

TEST(ExampleFilesTest, JsonExampleDescribesTheSameClusterAsYamlExample) {
  absl::StatusOr<ClusterDescriptor> yaml = ParseExampleYaml();
  absl::StatusOr<ClusterDescriptor> json =
      LoadClusterDescriptor((SourceDir() / "examples" / "cluster.json").string());
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, *yaml);
}

TEST(ExampleFilesTest, JsonExampleIsToJsonOfYamlExample) {
  absl::StatusOr<ClusterDescriptor> c = ParseExampleYaml();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ReadFile(SourceDir() / "examples" / "cluster.json"), ToJson(*c));
}

TEST(ExampleFilesTest, YamlExampleAfterItsCommentsIsToYamlOutput) {
  absl::StatusOr<ClusterDescriptor> c = ParseExampleYaml();
  ASSERT_TRUE(c.ok()) << c.status();
  std::string text = ReadFile(SourceDir() / "examples" / "cluster.yaml");
  while (text.starts_with("#")) text.erase(0, text.find('\n') + 1);
  EXPECT_EQ(text, ToYaml(*c));
}

TEST(ExampleFilesTest, ExampleConvertsToNodeSpecs) {
  absl::StatusOr<ClusterDescriptor> c = ParseExampleYaml();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::vector<NodeSpec>> specs = ToNodeSpecs(*c);
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].gpu_model, "A100-80G");
  EXPECT_EQ((*specs)[1].gpu_model, "H100-80G");
  EXPECT_EQ((*specs)[0].cpu_milli, 2 * 80000);
  EXPECT_EQ((*specs)[1].cpu_milli, 2 * 112000);
  for (const NodeSpec& spec : *specs) {
    EXPECT_EQ(spec.num_gpus, 8) << spec.name;
    EXPECT_EQ(spec.memory_mib, 2 * 524288) << spec.name;
  }
  EXPECT_DOUBLE_EQ((*specs)[0].cost_usd_per_hour, 8 * 3.67);
  EXPECT_DOUBLE_EQ((*specs)[1].power_w, 8 * 700.0);
  for (size_t i = 0; i < specs->size(); ++i) {
    const NodeDescriptor& node = c->nodes[i];
    EXPECT_EQ((*specs)[i].labels, node.labels);
    EXPECT_EQ((*specs)[i].topology.numa.size(), node.numa_nodes.size());
    EXPECT_EQ((*specs)[i].topology.gpus.size(), 8u);
  }
  // The example's topology is one ClusterState accepts.
  absl::StatusOr<ClusterState> state = ClusterState::Create(*specs);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->num_live_nodes(), 2);
}

// The first fenced block of `language` in `markdown`.
std::string FencedBlock(const std::string& markdown, std::string_view language) {
  const std::string open = "```" + std::string(language) + "\n";
  size_t begin = markdown.find(open);
  if (begin == std::string::npos) return "";
  begin += open.size();
  return markdown.substr(begin, markdown.find("```", begin) - begin);
}

TEST(ExampleFilesTest, FormatsDocExamplesParse) {
  const std::string doc = ReadFile(SourceDir() / "docs" / "formats.md");
  const std::string yaml = FencedBlock(doc, "yaml");
  const std::string json = FencedBlock(doc, "json");
  ASSERT_FALSE(yaml.empty());
  ASSERT_FALSE(json.empty());
  absl::StatusOr<ClusterDescriptor> from_yaml = ParseClusterYaml(yaml, "formats.md");
  absl::StatusOr<ClusterDescriptor> from_json = ParseClusterJson(json, "formats.md");
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  EXPECT_EQ(from_yaml->nodes[0].numa_nodes, from_json->nodes[0].numa_nodes);
  EXPECT_EQ(from_yaml->gpu_models, from_json->gpu_models);
}

// --- round trips -------------------------------------------------------------------------------

struct RoundTripCase {
  std::string name;
  ClusterDescriptor cluster;
};

std::vector<RoundTripCase> RoundTripCases() {
  std::vector<RoundTripCase> cases;
  absl::StatusOr<ClusterDescriptor> example = ParseExampleYaml();
  EXPECT_TRUE(example.ok()) << example.status();
  if (example.ok()) cases.push_back({"Example", *example});

  cases.push_back({"Small", SmallCluster()});
  cases.push_back({"Empty", ClusterDescriptor{}});

  ClusterDescriptor minimal;
  minimal.nodes.push_back(Node("cpu-only", {Numa(0, 1000, 512)}));
  cases.push_back({"CpuOnlyNodeWithoutName", minimal});

  // Strings that YAML would misread if written plain, and odd numbers.
  ClusterDescriptor awkward = SmallCluster();
  awkward.name = "true";
  awkward.gpu_models["1080Ti"] = Model("1080Ti", 11264, 0.1, 1e-7);
  awkward.gpu_models["A100"].price_usd_per_hour = 123456.789;
  awkward.gpu_models["A100"].power_w = 1e300;
  NodeDescriptor& n = awkward.nodes[0];
  n.labels = {{"bool", "yes"},
              {"null", "~"},
              {"number", "123"},
              {"colon", "a: b"},
              {"newline", "a\nb"},
              {"quote", "say \"hi\""},
              {"hash", "#x"},
              {"lead", " x"},
              {"empty", ""},
              {"utf8", "zürich"},
              {"flow", "[x], {y}"},
              {"alias", "*a"},
              {"kubernetes.io/zone", "eu-1"},
              {"sexagesimal", "1:30"},
              {"float", "1.5"}};
  n.devices.push_back(Gpu("0", "1080Ti", -1));
  n.devices.back().capacity = {{"memory_mib", 11264}};  // gpu_milli absent is not round-tripped
  n.devices.back().capacity["gpu_milli"] = 250;
  n.devices.push_back(Other("npu0", DeviceType::kNpu,
                            {{"huge", std::numeric_limits<int64_t>::max()}, {"zero", 0}}));
  n.devices.back().binding.pci_address = "0000:AB:1f.7";
  n.devices.back().binding.pcie_switch = "sw: 0, \"x\"";
  n.devices.back().latency_us = 17;
  n.devices.back().model = "null";
  cases.push_back({"AwkwardStringsAndNumbers", awkward});
  return cases;
}

class RoundTripTest : public testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTripTest, CaseIsValid) {
  EXPECT_TRUE(Validate(GetParam().cluster).ok()) << Validate(GetParam().cluster);
}

TEST_P(RoundTripTest, JsonRoundTripPreservesDescriptor) {
  const ClusterDescriptor& c = GetParam().cluster;
  absl::StatusOr<ClusterDescriptor> back = ParseClusterJson(ToJson(c), "rt.json");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << ToJson(c);
  EXPECT_EQ(*back, c) << ToJson(c);
}

TEST_P(RoundTripTest, YamlRoundTripPreservesDescriptor) {
  const ClusterDescriptor& c = GetParam().cluster;
  absl::StatusOr<ClusterDescriptor> back = ParseClusterYaml(ToYaml(c), "rt.yaml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << ToYaml(c);
  EXPECT_EQ(*back, c) << ToYaml(c);
}

INSTANTIATE_TEST_SUITE_P(Descriptors, RoundTripTest, testing::ValuesIn(RoundTripCases()),
                         [](const testing::TestParamInfo<RoundTripCase>& info) {
                           return info.param.name;
                         });

// --- parsing defaults --------------------------------------------------------------------------

TEST(ParseTest, FillsDefaultsForOmittedFields) {
  absl::StatusOr<ClusterDescriptor> c = ParseClusterYaml(R"(gpu_models:
  A100: {memory_mib: 81920, price_usd_per_hour: 3.5, power_w: 400}
nodes:
  - name: n0
    numa_nodes: [{id: 0, cpu_milli: 1000, memory_mib: 512}]
    devices:
      - {id: gpu0, type: gpu, model: A100, capacity: {memory_mib: 40960}}
      - {id: nic0, type: cpu}
)",
                                                         "d.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "");
  EXPECT_EQ(c->gpu_models.at("A100").name, "A100");
  const Device& gpu = c->nodes[0].devices[0];
  EXPECT_EQ(gpu.capacity,
            (std::map<std::string, int64_t>{{"gpu_milli", 1000}, {"memory_mib", 40960}}));
  EXPECT_EQ(gpu.binding, Binding{});
  EXPECT_EQ(gpu.binding.numa_node, -1);
  EXPECT_EQ(gpu.latency_us, 0);
  EXPECT_EQ(gpu.nvlink_group, "");
  EXPECT_TRUE(c->nodes[0].devices[1].capacity.empty());
  EXPECT_EQ(gpu.CapacityOr("gpu_milli", 0), 1000);
  EXPECT_EQ(gpu.CapacityOr("lut_count", -1), -1);
}

// --- validation messages: YAML (with lines) ----------------------------------------------------

// Lines are numbered for the expected messages below.
constexpr std::string_view kBaseYaml =
    R"(name: t
gpu_models:
  A100: {memory_mib: 81920, price_usd_per_hour: 3.5, power_w: 400}
nodes:
  - name: n0
    numa_nodes:
      - {id: 0, cpu_milli: 64000, memory_mib: 1024, distances: [10, 21]}
      - {id: 1, cpu_milli: 64000, memory_mib: 1024, distances: [21, 10]}
    devices:
      - {id: gpu0, type: gpu, model: A100, capacity: {gpu_milli: 1000, memory_mib: 81920}, binding: {numa_node: 0, pci_address: "0000:07:00.0"}, nvlink_group: nv0}
      - {id: gpu1, type: gpu, model: A100, capacity: {memory_mib: 81920}, binding: {numa_node: 1}, nvlink_group: nv0}
      - {id: fpga0, type: fpga, model: U250, capacity: {lut_count: 1728000}, binding: {numa_node: 1}}
  - name: n1
    numa_nodes:
      - {id: 0, cpu_milli: 32000, memory_mib: 2048}
)";

struct MutationCase {
  std::string name;
  std::string from;  // replaced once in the base document
  std::string to;
  std::string want;  // the whole error message
};

std::ostream& operator<<(std::ostream& os, const MutationCase& c) { return os << c.name; }

class YamlValidationTest : public testing::TestWithParam<MutationCase> {};

TEST(YamlValidationBaseTest, BaseDocumentIsValid) {
  absl::StatusOr<ClusterDescriptor> c = ParseClusterYaml(kBaseYaml, "cluster.yaml");
  EXPECT_TRUE(c.ok()) << c.status();
}

TEST_P(YamlValidationTest, ReportsSourceLineFieldPathAndExpectation) {
  const MutationCase& c = GetParam();
  std::string text = ReplaceOnce(std::string(kBaseYaml), c.from, c.to);
  absl::StatusOr<ClusterDescriptor> got = ParseClusterYaml(text, "cluster.yaml");
  ASSERT_FALSE(got.ok()) << text;
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusMessage(got.status()), c.want);
}

const MutationCase kYamlCases[] = {
    {"NegativeCapacity", "capacity: {memory_mib: 81920}",
     "capacity: {gpu_milli: -5, memory_mib: 81920}",
     "cluster.yaml:11: $.nodes[0].devices[1].capacity.gpu_milli: must be >= 0 (got -5)"},
    {"NegativeNonGpuCapacity", "lut_count: 1728000", "lut_count: -1",
     "cluster.yaml:12: $.nodes[0].devices[2].capacity.lut_count: must be >= 0 (got -1)"},
    // A key that is not a plain name is quoted (base/json_path.h).
    {"NegativeCapacityWithDottedName", "lut_count: 1728000", "lut_count: 1, vendor.com/luts: -1",
     "cluster.yaml:12: $.nodes[0].devices[2].capacity[\"vendor.com/luts\"]: must be >= 0 (got -1)"},
    {"GpuMilliAboveOneGpu", "capacity: {memory_mib: 81920}",
     "capacity: {gpu_milli: 1500, memory_mib: 81920}",
     "cluster.yaml:11: $.nodes[0].devices[1].capacity.gpu_milli: must be between 1 and 1000 "
     "(got 1500)"},
    {"GpuWithoutMemory", "capacity: {memory_mib: 81920}", "capacity: {gpu_milli: 500}",
     "cluster.yaml:11: $.nodes[0].devices[1].capacity.memory_mib: required for GPU devices"},
    {"GpuMemoryAboveModelMemory", "capacity: {memory_mib: 81920}", "capacity: {memory_mib: 90000}",
     "cluster.yaml:11: $.nodes[0].devices[1].capacity.memory_mib: must be <= 81920, the memory of "
     "model A100 (got 90000)"},
    {"NegativeNumaCpu", "cpu_milli: 32000", "cpu_milli: -1",
     "cluster.yaml:15: $.nodes[1].numa_nodes[0].cpu_milli: must be >= 0 (got -1)"},
    {"DuplicateNodeName", "name: n1", "name: n0",
     "cluster.yaml:13: $.nodes[1].name: duplicate node name \"n0\" (first at $.nodes[0])"},
    {"DuplicateDeviceId", "id: fpga0", "id: gpu0",
     "cluster.yaml:12: $.nodes[0].devices[2].id: duplicate device id \"gpu0\" (first at "
     "$.nodes[0].devices[0])"},
    {"BindingToMissingNumaNode", "{lut_count: 1728000}, binding: {numa_node: 1}",
     "{lut_count: 1728000}, binding: {numa_node: 5}",
     "cluster.yaml:12: $.nodes[0].devices[2].binding.numa_node: NUMA node 5 does not exist on node "
     "\"n0\" (ids: 0, 1)"},
    {"BindingBelowMinusOne", "{lut_count: 1728000}, binding: {numa_node: 1}",
     "{lut_count: 1728000}, binding: {numa_node: -2}",
     "cluster.yaml:12: $.nodes[0].devices[2].binding.numa_node: must be -1 (unknown) or a NUMA "
     "node id (got -2)"},
    {"BadPciAddress", "\"0000:07:00.0\"", "\"07:00.0\"",
     "cluster.yaml:10: $.nodes[0].devices[0].binding.pci_address: must be a PCI address like "
     "0000:3b:00.0 (domain:bus:device.function, hex) (got \"07:00.0\")"},
    {"DuplicatePciAddress", "binding: {numa_node: 1}, nvlink_group",
     "binding: {numa_node: 1, pci_address: \"0000:07:00.0\"}, nvlink_group",
     "cluster.yaml:11: $.nodes[0].devices[1].binding.pci_address: duplicate PCI address "
     "\"0000:07:00.0\" (first at $.nodes[0].devices[0])"},
    {"UnknownGpuModel", "id: gpu1, type: gpu, model: A100", "id: gpu1, type: gpu, model: V100",
     "cluster.yaml:11: $.nodes[0].devices[1].model: unknown GPU model \"V100\" (gpu_models has: "
     "A100)"},
    {"GpuWithoutModel", "id: gpu1, type: gpu, model: A100,", "id: gpu1, type: gpu,",
     "cluster.yaml:11: $.nodes[0].devices[1].model: required for GPU devices (a key of "
     "gpu_models)"},
    {"NvlinkGroupOnNonGpu", "binding: {numa_node: 1}}",
     "binding: {numa_node: 1}, nvlink_group: nv0}",
     "cluster.yaml:12: $.nodes[0].devices[2].nvlink_group: only GPU devices can join an NVLink "
     "group (device type is fpga)"},
    {"NvlinkGroupSpanningNodes", "memory_mib: 2048}",
     "memory_mib: 2048}\n    devices:\n      - {id: g0, type: gpu, model: A100, capacity: "
     "{memory_mib: 1}, nvlink_group: nv0}",
     "cluster.yaml:17: $.nodes[1].devices[0].nvlink_group: NVLink group \"nv0\" is already used on "
     "node \"n0\" ($.nodes[0]); an NVLink group cannot span nodes"},
    {"NegativeLatency", "binding: {numa_node: 1}}", "binding: {numa_node: 1}, latency_us: -3}",
     "cluster.yaml:12: $.nodes[0].devices[2].latency_us: must be >= 0 (got -3)"},
    {"UnknownDeviceType", "type: fpga", "type: tpu",
     "cluster.yaml:12: $.nodes[0].devices[2].type: unknown device type \"tpu\" (allowed: cpu, gpu, "
     "npu, fpga)"},
    {"UnknownTopLevelKey", "\nnodes:", "\nnodez:",
     "cluster.yaml:4: $: unknown key \"nodez\" (allowed: name, gpu_models, nodes)"},
    {"UnknownDeviceKey", "binding: {numa_node: 1}}", "binding: {numa_node: 1}, latency: 3}",
     "cluster.yaml:12: $.nodes[0].devices[2]: unknown key \"latency\" (allowed: id, type, model, "
     "capacity, binding, latency_us, nvlink_group)"},
    {"DuplicateKey", "name: t\n", "name: t\nname: u\n",
     "cluster.yaml:2: $: duplicate key \"name\""},
    {"DuplicateCapacityKey", "capacity: {lut_count: 1728000}",
     "capacity: {lut_count: 1728000, lut_count: 1}",
     "cluster.yaml:12: $.nodes[0].devices[2].capacity: duplicate key \"lut_count\""},
    {"MissingRequiredKey", "cpu_milli: 32000, memory_mib: 2048", "cpu_milli: 32000",
     "cluster.yaml:15: $.nodes[1].numa_nodes[0]: missing required key \"memory_mib\""},
    {"TextWhereIntegerExpected", "cpu_milli: 32000", "cpu_milli: lots",
     "cluster.yaml:15: $.nodes[1].numa_nodes[0].cpu_milli: must be an integer (got lots)"},
    {"QuotedNumberIsText", "cpu_milli: 32000", "cpu_milli: \"32000\"",
     "cluster.yaml:15: $.nodes[1].numa_nodes[0].cpu_milli: must be an integer (got \"32000\")"},
    {"FractionWhereIntegerExpected", "cpu_milli: 32000", "cpu_milli: 1.5",
     "cluster.yaml:15: $.nodes[1].numa_nodes[0].cpu_milli: must be an integer (got 1.5)"},
    {"SequenceWhereMappingExpected", "binding: {numa_node: 1}}", "binding: [1]}",
     "cluster.yaml:12: $.nodes[0].devices[2].binding: must be a mapping (got a sequence)"},
    {"NoNumaNodes", "numa_nodes:\n      - {id: 0, cpu_milli: 32000, memory_mib: 2048}",
     "numa_nodes: []", "cluster.yaml:14: $.nodes[1].numa_nodes: must list at least one NUMA node"},
    {"DistancesOfWrongLength", "distances: [10, 21]", "distances: [10]",
     "cluster.yaml:7: $.nodes[0].numa_nodes[0].distances: must have one entry per NUMA node of the "
     "node (got 1 for 2)"},
    {"NegativeGpuModelPrice", "price_usd_per_hour: 3.5", "price_usd_per_hour: -3.5",
     "cluster.yaml:3: $.gpu_models.A100.price_usd_per_hour: must be a finite number >= 0 (got "
     "-3.5)"},
    {"GpuModelWithUnknownField", "power_w: 400}", "power_w: 400, tdp: 1}",
     "cluster.yaml:3: $.gpu_models.A100: unknown key \"tdp\" (allowed: memory_mib, "
     "price_usd_per_hour, power_w)"},
    {"ReportsEveryProblem", "{id: 1, cpu_milli: 64000", "{id: 0, cpu_milli: 64000",
     "cluster.yaml:8: $.nodes[0].numa_nodes[1].id: duplicate NUMA node id 0 (first at "
     "$.nodes[0].numa_nodes[0])\n"
     "cluster.yaml:11: $.nodes[0].devices[1].binding.numa_node: NUMA node 1 does not exist on node "
     "\"n0\" (ids: 0, 0)\n"
     "cluster.yaml:12: $.nodes[0].devices[2].binding.numa_node: NUMA node 1 does not exist on node "
     "\"n0\" (ids: 0, 0)"},
};

INSTANTIATE_TEST_SUITE_P(Mutations, YamlValidationTest, testing::ValuesIn(kYamlCases),
                         [](const testing::TestParamInfo<MutationCase>& info) {
                           return info.param.name;
                         });

struct DocumentCase {
  std::string name;
  std::string text;
  std::string want;  // the whole error message, or a prefix of it when want_prefix
  bool want_prefix = false;
};

std::ostream& operator<<(std::ostream& os, const DocumentCase& c) { return os << c.name; }

class YamlDocumentTest : public testing::TestWithParam<DocumentCase> {};

TEST_P(YamlDocumentTest, RejectsMalformedDocument) {
  const DocumentCase& c = GetParam();
  absl::StatusOr<ClusterDescriptor> got = ParseClusterYaml(c.text, "c.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  if (c.want_prefix) {
    EXPECT_TRUE(StatusMessage(got.status()).starts_with(c.want)) << got.status();
  } else {
    EXPECT_EQ(StatusMessage(got.status()), c.want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Documents, YamlDocumentTest,
    testing::Values(
        DocumentCase{"Empty", "", "c.yaml: must hold exactly one YAML document (got 0)"},
        DocumentCase{"TwoDocuments", "name: a\n---\nname: b\n",
                     "c.yaml: must hold exactly one YAML document (got 2)"},
        DocumentCase{"TopLevelSequence", "- a\n- b\n",
                     "c.yaml:1: $: must be a mapping (got a sequence)"},
        DocumentCase{"SyntaxError", "name: a\nnodes: [\n", "c.yaml:3: invalid YAML: ", true},
        DocumentCase{"NodeNotAMapping", "nodes:\n  - 7\n",
                     "c.yaml:2: $.nodes[0]: must be a mapping (got 7)"}),
    [](const testing::TestParamInfo<DocumentCase>& info) { return info.param.name; });

TEST(YamlValidationLimitTest, CountsProblemsBeyondTheReportedOnes) {
  std::string text = "nodes:\n";
  for (int i = 0; i < 25; ++i)
    text += "  - {name: same, numa_nodes: [{id: 0, cpu_milli: 1, memory_mib: 1}]}\n";
  absl::StatusOr<ClusterDescriptor> got = ParseClusterYaml(text, "c.yaml");
  ASSERT_FALSE(got.ok());
  const std::string message = StatusMessage(got.status());
  EXPECT_TRUE(message.starts_with(
      "c.yaml:3: $.nodes[1].name: duplicate node name \"same\" (first at $.nodes[0])\n"))
      << message;
  EXPECT_TRUE(message.ends_with("\n... and 4 more errors")) << message;
}

// --- validation messages: JSON -----------------------------------------------------------------

constexpr std::string_view kBaseJson = R"({
  "name": "t",
  "gpu_models": {"A100": {"memory_mib": 81920, "price_usd_per_hour": 3.5, "power_w": 400}},
  "nodes": [
    {
      "name": "n0",
      "numa_nodes": [{"id": 0, "cpu_milli": 64000, "memory_mib": 1024}],
      "devices": [
        {"id": "gpu0", "type": "gpu", "model": "A100", "capacity": {"memory_mib": 81920}}
      ]
    }
  ]
})";

class JsonValidationTest : public testing::TestWithParam<MutationCase> {};

TEST(JsonValidationBaseTest, BaseDocumentIsValid) {
  absl::StatusOr<ClusterDescriptor> c = ParseClusterJson(kBaseJson, "cluster.json");
  EXPECT_TRUE(c.ok()) << c.status();
}

TEST_P(JsonValidationTest, ReportsSourceFieldPathAndExpectation) {
  const MutationCase& c = GetParam();
  std::string text = ReplaceOnce(std::string(kBaseJson), c.from, c.to);
  absl::StatusOr<ClusterDescriptor> got = ParseClusterJson(text, "cluster.json");
  ASSERT_FALSE(got.ok()) << text;
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  if (c.want.ends_with("...")) {
    std::string prefix = c.want.substr(0, c.want.size() - 3);
    EXPECT_TRUE(StatusMessage(got.status()).starts_with(prefix)) << got.status();
  } else {
    EXPECT_EQ(StatusMessage(got.status()), c.want);
  }
}

const MutationCase kJsonCases[] = {
    {"NegativeCapacity", "{\"memory_mib\": 81920}", "{\"memory_mib\": 81920, \"gpu_milli\": -5}",
     "cluster.json: $.nodes[0].devices[0].capacity.gpu_milli: must be >= 0 (got -5)"},
    {"UnknownTopLevelKey", "\"nodes\":", "\"nodez\":",
     "cluster.json: $: unknown key \"nodez\" (allowed: name, gpu_models, nodes)"},
    {"UnknownDeviceType", "\"type\": \"gpu\"", "\"type\": \"tpu\"",
     "cluster.json: $.nodes[0].devices[0].type: unknown device type \"tpu\" (allowed: cpu, gpu, "
     "npu, fpga)"},
    {"DuplicateKey", "{\"id\": \"gpu0\",", "{\"id\": \"gpu0\", \"id\": \"gpu1\",",
     "cluster.json: $.nodes[0].devices[0]: duplicate key \"id\""},
    {"FractionWhereIntegerExpected", "\"cpu_milli\": 64000", "\"cpu_milli\": 1.5",
     "cluster.json: $.nodes[0].numa_nodes[0].cpu_milli: must be an integer (got 1.5)"},
    {"StringWhereIntegerExpected", "\"cpu_milli\": 64000", "\"cpu_milli\": \"64000\"",
     "cluster.json: $.nodes[0].numa_nodes[0].cpu_milli: must be an integer (got \"64000\")"},
    {"IntegerBeyondInt64", "\"cpu_milli\": 64000", "\"cpu_milli\": 9223372036854775808",
     "cluster.json: $.nodes[0].numa_nodes[0].cpu_milli: must be an integer (got "
     "9223372036854775808)"},
    {"NumberWhereStringExpected", "\"name\": \"n0\"", "\"name\": 7",
     "cluster.json: $.nodes[0].name: must be a string (got 7)"},
    {"ArrayWhereObjectExpected", "\"capacity\": {\"memory_mib\": 81920}", "\"capacity\": []",
     "cluster.json: $.nodes[0].devices[0].capacity: must be an object (got an array)"},
    {"SyntaxError", "\"nodes\": [", "\"nodes\": [[,",
     "cluster.json: invalid JSON: parse error at line 4, column ..."},
};

INSTANTIATE_TEST_SUITE_P(Mutations, JsonValidationTest, testing::ValuesIn(kJsonCases),
                         [](const testing::TestParamInfo<MutationCase>& info) {
                           return info.param.name;
                         });

// --- Validate on descriptors built in code ---------------------------------------------------

struct StructCase {
  std::string name;
  ClusterDescriptor cluster;
  std::string want;
};

std::ostream& operator<<(std::ostream& os, const StructCase& c) { return os << c.name; }

std::vector<StructCase> StructCases() {
  std::vector<StructCase> cases;
  ClusterDescriptor c = SmallCluster();
  c.gpu_models["A100"].name = "";
  cases.push_back({"GpuModelNameDiffersFromKey", c,
                   "$.gpu_models.A100.name: must be the key \"A100\" (got \"\")"});

  c = SmallCluster();
  c.gpu_models["A100"].power_w = std::numeric_limits<double>::quiet_NaN();
  cases.push_back(
      {"NonFinitePower", c, "$.gpu_models.A100.power_w: must be a finite number >= 0 (got nan)"});

  c = SmallCluster();
  c.nodes[0].name = "";
  cases.push_back({"EmptyNodeName", c, "$.nodes[0].name: must not be empty"});

  c = SmallCluster();
  c.nodes[0].devices[2].id = "";
  cases.push_back({"EmptyDeviceId", c, "$.nodes[0].devices[2].id: must not be empty"});

  c = SmallCluster();
  c.nodes[0].devices[2].type = static_cast<DeviceType>(7);
  cases.push_back({"InvalidDeviceTypeValue", c,
                   "$.nodes[0].devices[2].type: invalid device type value 7 (allowed: cpu, gpu, "
                   "npu, fpga)"});

  c = SmallCluster();
  c.nodes[0].labels[""] = "x";
  cases.push_back({"EmptyLabelKey", c, "$.nodes[0].labels: label keys must not be empty"});

  c = SmallCluster();
  c.nodes[0].numa_nodes[0].memory_mib = std::numeric_limits<int64_t>::max();
  cases.push_back({"NumaTotalsOverflow", c,
                   "$.nodes[0].numa_nodes: total cpu_milli or memory_mib overflows a 64-bit "
                   "integer"});

  c = SmallCluster();
  c.nodes[0].numa_nodes[1].id = -1;
  c.nodes[0].devices[1].binding.numa_node = 0;
  c.nodes[0].devices[2].binding.numa_node = 0;
  cases.push_back({"NegativeNumaId", c, "$.nodes[0].numa_nodes[1].id: must be >= 0 (got -1)"});
  return cases;
}

class StructValidationTest : public testing::TestWithParam<StructCase> {};

TEST_P(StructValidationTest, ReportsFieldPathWithoutSource) {
  absl::Status status = Validate(GetParam().cluster);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusMessage(status), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(Structs, StructValidationTest, testing::ValuesIn(StructCases()),
                         [](const testing::TestParamInfo<StructCase>& info) {
                           return info.param.name;
                         });

TEST(StructValidationBaseTest, SmallClusterIsValid) {
  EXPECT_TRUE(Validate(SmallCluster()).ok()) << Validate(SmallCluster());
}

// --- ToNodeSpec --------------------------------------------------------------------------------

struct NodeSpecCase {
  std::string name;
  NodeDescriptor node;
  NodeSpec want;
};

std::ostream& operator<<(std::ostream& os, const NodeSpecCase& c) { return os << c.name; }

ClusterDescriptor PricedCluster() {
  ClusterDescriptor c;
  c.gpu_models["A100"] = Model("A100", 81920, 3.67, 400);
  c.gpu_models["H100"] = Model("H100", 81920, 6.98, 700);
  return c;
}

std::vector<NodeSpecCase> NodeSpecCases() {
  std::vector<NodeSpecCase> cases;
  NodeDescriptor n = Node("gpu8", {Numa(0, 64000, 524288), Numa(1, 32000, 1024)});
  for (int i = 0; i < 8; ++i) n.devices.push_back(Gpu("gpu" + std::to_string(i), "A100", i / 4));
  n.devices.push_back(Other("fpga0", DeviceType::kFpga, {{"lut_count", 1}}));
  cases.push_back({"EightGpusSumPriceAndPowerPerGpu", n,
                   NodeSpec{.name = "gpu8",
                            .cpu_milli = 96000,
                            .memory_mib = 525312,
                            .num_gpus = 8,
                            .gpu_model = "A100",
                            .cost_usd_per_hour = 8 * 3.67,
                            .power_w = 8 * 400.0}});

  NodeDescriptor one = Node("h1", {Numa(0, 8000, 4096)});
  one.devices = {Gpu("g", "H100")};
  cases.push_back({"SingleGpu", one,
                   NodeSpec{.name = "h1",
                            .cpu_milli = 8000,
                            .memory_mib = 4096,
                            .num_gpus = 1,
                            .gpu_model = "H100",
                            .cost_usd_per_hour = 6.98,
                            .power_w = 700}});

  NodeDescriptor cpu = Node("cpu", {Numa(0, 16000, 8192), Numa(1, 16000, 8192)});
  cpu.devices = {Other("fpga0", DeviceType::kFpga, {{"lut_count", 1000}}),
                 Other("cpu0", DeviceType::kCpu, {{"cores", 16}})};
  cases.push_back({"NoGpusCostNothing", cpu,
                   NodeSpec{.name = "cpu",
                            .cpu_milli = 32000,
                            .memory_mib = 16384,
                            .num_gpus = 0,
                            .gpu_model = "",
                            .cost_usd_per_hour = 0,
                            .power_w = 0}});
  return cases;
}

class ToNodeSpecTest : public testing::TestWithParam<NodeSpecCase> {};

TEST_P(ToNodeSpecTest, ConvertsCapacityGpusModelAndPrice) {
  const NodeSpecCase& c = GetParam();
  absl::StatusOr<NodeSpec> got = c.node.ToNodeSpec(PricedCluster());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name, c.want.name);
  EXPECT_EQ(got->cpu_milli, c.want.cpu_milli);
  EXPECT_EQ(got->memory_mib, c.want.memory_mib);
  EXPECT_EQ(got->num_gpus, c.want.num_gpus);
  EXPECT_EQ(got->gpu_model, c.want.gpu_model);
  EXPECT_DOUBLE_EQ(got->cost_usd_per_hour, c.want.cost_usd_per_hour);
  EXPECT_DOUBLE_EQ(got->power_w, c.want.power_w);
}

INSTANTIATE_TEST_SUITE_P(Nodes, ToNodeSpecTest, testing::ValuesIn(NodeSpecCases()),
                         [](const testing::TestParamInfo<NodeSpecCase>& info) {
                           return info.param.name;
                         });

TEST(ToNodeSpecTopologyTest, CarriesNumaGpuAttachmentNvlinkAndLabelsInDeviceOrder) {
  NodeDescriptor n = Node("topo", {Numa(0, 64000, 524288), Numa(3, 32000, 1024)});
  n.labels = {{"zone", "a"}, {"rack", "r7"}};
  // GPUs interleaved with other devices: GPU i of the NodeSpec is the i-th GPU device.
  n.devices.push_back(Other("cpu0", DeviceType::kCpu, {{"cores", 16}}));
  n.devices.push_back(Gpu("gpu-a", "A100", 3, "nvl-1"));
  n.devices.push_back(Other("fpga0", DeviceType::kFpga, {{"lut_count", 1}}));
  n.devices.push_back(Gpu("gpu-b", "A100", 0, ""));
  n.devices.push_back(Gpu("gpu-c", "A100", -1, "nvl-1"));
  n.devices[1].binding.pci_address = "0000:3b:00.0";
  n.devices[3].binding.pci_address = "0000:5e:00.0";
  n.devices[3].binding.pcie_switch = "plx-1";
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->labels, n.labels);
  EXPECT_TRUE(got->taints.empty());
  const std::vector<NumaInfo> want_numa = {{0, 64000, 524288}, {3, 32000, 1024}};
  EXPECT_EQ(got->topology.numa, want_numa);
  const std::vector<GpuTopology> want_gpus = {
      {3, "nvl-1", "0000:3b:00.0"}, {0, "", "0000:5e:00.0", "plx-1"}, {-1, "nvl-1", ""}};
  EXPECT_EQ(got->topology.gpus, want_gpus);
  // The scheduler's state accepts what the descriptor yields.
  absl::StatusOr<ClusterState> state = ClusterState::Create({*got});
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->node(0), *got);
}

TEST(ToNodeSpecTopologyTest, NodeWithoutGpusHasNumaButNoGpuTopology) {
  NodeDescriptor n = Node("cpu", {Numa(0, 16000, 8192)});
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->topology.numa.size(), 1u);
  EXPECT_TRUE(got->topology.gpus.empty());
  EXPECT_TRUE(got->labels.empty());
}

Device Npu(std::string id, std::string model) {
  Device d = Other(std::move(id), DeviceType::kNpu, {{"memory_mib", 65536}, {"ai_cores", 24}});
  d.model = std::move(model);
  return d;
}

TEST(ToNodeSpecNpuTest, ANodeOfNpusIsAnNpuNodePricedFromItsModel) {
  NodeDescriptor n = Node("ascend", {Numa(0, 32000, 65536)});
  n.devices = {Other("cpu0", DeviceType::kCpu, {{"cores", 16}}), Npu("npu0", "Ascend910B"),
               Npu("npu1", "Ascend910B")};
  n.devices[2].binding.numa_node = 0;
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->npu);
  EXPECT_EQ(got->num_gpus, 2);
  EXPECT_EQ(got->gpu_model, "Ascend910B");
  EXPECT_EQ(got->device_memory_mib, 65536);
  EXPECT_EQ(got->cost_usd_per_hour, 0);  // the model is not in gpu_models: unpriced
  ASSERT_EQ(got->topology.gpus.size(), 2u);
  EXPECT_EQ(got->topology.gpus[1].numa_node, 0);
  ClusterDescriptor priced = PricedCluster();
  priced.gpu_models["Ascend910B"] = Model("Ascend910B", 65536, 1.5, 310);
  got = n.ToNodeSpec(priced);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_DOUBLE_EQ(got->cost_usd_per_hour, 3.0);
  absl::StatusOr<ClusterState> state = ClusterState::Create({*got});
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_TRUE(state->model_npu(0));
}

TEST(ToNodeSpecNpuTest, GpusWinOverNpusOnOneNode) {
  NodeDescriptor n = Node("both", {Numa(0, 32000, 65536)});
  n.devices = {Npu("npu0", "Ascend910B"), Gpu("g0", "A100")};
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->npu);
  EXPECT_EQ(got->num_gpus, 1);
  EXPECT_EQ(got->gpu_model, "A100");
}

TEST(ToNodeSpecNpuTest, RefusesNpusWithoutOrOfMixedModels) {
  NodeDescriptor n = Node("npus", {Numa(0, 32000, 65536)});
  n.devices = {Npu("npu0", "Ascend910B"), Npu("npu1", "Ascend910")};
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), testing::HasSubstr("mixes NPU models"));
  n.devices = {Npu("npu0", "")};
  got = n.ToNodeSpec(PricedCluster());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), testing::HasSubstr("no model"));
}

TEST(ToNodeSpecErrorTest, RejectsMixedGpuModels) {
  NodeDescriptor n = Node("mixed", {Numa(0, 1000, 1024)});
  n.devices = {Gpu("g0", "A100"), Gpu("g1", "H100")};
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusMessage(got.status()),
            "node \"mixed\" mixes GPU models \"A100\" (g0) and \"H100\" (g1); a NodeSpec has one "
            "GPU model");
  EXPECT_FALSE(n.GpuModel().ok());
}

TEST(ToNodeSpecErrorTest, RejectsModelMissingFromCluster) {
  NodeDescriptor n = Node("n", {Numa(0, 1000, 1024)});
  n.devices = {Gpu("g0", "V100")};
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(StatusMessage(got.status()),
            "node \"n\": GPU model \"V100\" is not in the cluster's gpu_models");
}

TEST(ToNodeSpecErrorTest, RejectsMoreGpusThanANodeSpecHolds) {
  NodeDescriptor n = Node("big", {Numa(0, 1000, 1024)});
  for (int i = 0; i <= kMaxGpusPerNode; ++i) n.devices.push_back(Gpu(std::to_string(i), "A100"));
  absl::StatusOr<NodeSpec> got = n.ToNodeSpec(PricedCluster());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(StatusMessage(got.status()), "node \"big\" has 17 GPUs; a NodeSpec allows at most 16");
}

TEST(ToNodeSpecErrorTest, ToNodeSpecsStopsAtFirstBadNode) {
  ClusterDescriptor c = PricedCluster();
  c.nodes.push_back(Node("ok", {Numa(0, 1, 1)}));
  c.nodes.push_back(Node("mixed", {Numa(0, 1, 1)}));
  c.nodes.back().devices = {Gpu("g0", "A100"), Gpu("g1", "H100")};
  EXPECT_EQ(ToNodeSpecs(c).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- LoadClusterDescriptor ---------------------------------------------------------------------

TEST(LoadClusterDescriptorTest, ChoosesFormatByExtension) {
  const ClusterDescriptor want = SmallCluster();
  const std::filesystem::path dir = testing::TempDir();
  WriteFile(dir / "urd_load.yml", ToYaml(want));
  WriteFile(dir / "urd_load.JSON", ToJson(want));
  for (const char* name : {"urd_load.yml", "urd_load.JSON"}) {
    absl::StatusOr<ClusterDescriptor> got = LoadClusterDescriptor((dir / name).string());
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, want) << name;
  }
}

TEST(LoadClusterDescriptorTest, NamesTheFileInErrors) {
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) / "urd_bad.yaml";
  WriteFile(path, "nodez: []\n");
  absl::StatusOr<ClusterDescriptor> got = LoadClusterDescriptor(path.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(StatusMessage(got.status()),
            path.string() + ":1: $: unknown key \"nodez\" (allowed: name, gpu_models, nodes)");
}

TEST(LoadClusterDescriptorTest, RejectsUnknownExtension) {
  absl::StatusOr<ClusterDescriptor> got = LoadClusterDescriptor("cluster.toml");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusMessage(got.status()),
            "cluster.toml: unsupported file extension \".toml\" (expected .json, .yaml or .yml)");
  EXPECT_EQ(LoadClusterDescriptor("dir.d/cluster").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LoadClusterDescriptorTest, MissingFileIsNotFound) {
  absl::StatusOr<ClusterDescriptor> got = LoadClusterDescriptor(
      (std::filesystem::path(testing::TempDir()) / "urd_absent.json").string());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
}

// --- limits: alias expansion, nesting depth, clipped messages ---------------------------------

// A YAML "billion laughs": each level is ten aliases of the one before, 10^9 nodes expanded.
std::string AliasBomb() {
  std::string text = "name: t\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *l" : "*l") + std::to_string(i - 1);
    text += "]\n";
  }
  return text;
}

std::string Nested(int depth, std::string_view open, std::string_view close) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += open;
  for (int i = 0; i < depth; ++i) text += close;
  return text;
}

struct LimitCase {
  std::string name;
  bool json;
  std::string text;
  std::string want;  // a substring of the error message
};

std::ostream& operator<<(std::ostream& os, const LimitCase& c) { return os << c.name; }

class LimitTest : public testing::TestWithParam<LimitCase> {};

TEST_P(LimitTest, RefusesWithSourceAndLocation) {
  const LimitCase& c = GetParam();
  absl::StatusOr<ClusterDescriptor> got =
      c.json ? ParseClusterJson(c.text, "c.json") : ParseClusterYaml(c.text, "c.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message = StatusMessage(got.status());
  EXPECT_NE(message.find(c.want), std::string::npos) << message.substr(0, 1000);
  EXPECT_LT(message.size(), 2000u) << message.substr(0, 1000);
}

INSTANTIATE_TEST_SUITE_P(
    Limits, LimitTest,
    testing::Values(LimitCase{"YamlAliasBomb", false, AliasBomb(),
                              "c.yaml:7: the document expands to more than 1000000 nodes"},
                    LimitCase{"YamlDeepFlowSequences", false,
                              "nodes: " + Nested(100, "[", "]") + "\n",
                              "c.yaml:1: nested deeper than 64 levels"},
                    LimitCase{"YamlDeepBlockMappings", false,
                              [] {
                                std::string t;
                                for (int i = 0; i < 80; ++i) t += std::string(2 * i, ' ') + "k:\n";
                                return t;
                              }(),
                              "c.yaml:65: nested deeper than 64 levels"},
                    LimitCase{"YamlLongUnknownKeyIsClipped", false,
                              std::string(1000, 'k') + ": 1\n", "c.yaml:1: $: unknown key \"kkkk"},
                    LimitCase{"JsonDeepArrays", true, "{\"nodes\": " + Nested(100, "[", "]") + "}",
                              "c.json: $.nodes[0][0][0]"},
                    LimitCase{"JsonDeepObjects", true, Nested(100, "{\"a\": ", "}"),
                              "nested deeper than 64 levels"},
                    LimitCase{"JsonHugeBadTokenIsClipped", true,
                              "{\"name\": \"" + std::string(1 << 20, 'x') + "\x01\"}",
                              "c.json: invalid JSON: "},
                    LimitCase{"JsonHugeUnknownKeyIsClipped", true,
                              "{\"" + std::string(1 << 20, 'k') + "\": 1}",
                              "c.json: $: unknown key \"kkkk"}),
    [](const testing::TestParamInfo<LimitCase>& info) { return info.param.name; });

TEST(LimitTest, DepthAtTheLimitIsNotRefusedForDepth) {
  // 64 levels in all: the schema rejects it, the depth limit does not.
  absl::StatusOr<ClusterDescriptor> got =
      ParseClusterJson("{\"nodes\": " + Nested(63, "[", "]") + "}", "c.json");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(StatusMessage(got.status()).find("nested deeper"), std::string::npos) << got.status();
}

TEST(LimitTest, ModestAliasesAreExpanded) {
  const std::string text =
      "name: t\n"
      "gpu_models: {T4: {memory_mib: 16384, price_usd_per_hour: 0.5, power_w: 70}}\n"
      "nodes:\n"
      "  - name: n0\n"
      "    numa_nodes: &numa [{id: 0, cpu_milli: 1000, memory_mib: 1024}]\n"
      "    devices: &gpus [{id: g0, type: gpu, model: T4, capacity: {memory_mib: 16384}}]\n"
      "  - {name: n1, numa_nodes: *numa, devices: *gpus}\n";
  absl::StatusOr<ClusterDescriptor> got = ParseClusterYaml(text, "c.yaml");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->nodes.size(), 2u);
  EXPECT_EQ(got->nodes[1].numa_nodes, got->nodes[0].numa_nodes);
  EXPECT_EQ(got->nodes[1].devices, got->nodes[0].devices);
}

TEST(LimitTest, AStrayCommaIsRefusedAtItsLineAndColumn) {
  // yaml-cpp 0.7 never returns from these (it grows without bound); each is invalid YAML.
  for (const char* text : {",\n", "name: t\n[a]\n,\n", "- [a]\n  ,\n", "'x' ,\n", "--- ,\n"}) {
    SCOPED_TRACE(text);
    const absl::Status limits = CheckYamlLimits(text, "c.yaml");
    EXPECT_EQ(limits.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(StatusMessage(limits),
                testing::HasSubstr("invalid YAML: ',' outside [...] or {...}"));
    EXPECT_THAT(StatusMessage(limits), testing::HasSubstr("c.yaml:"));
    const absl::StatusOr<ClusterDescriptor> parsed = ParseClusterYaml(text, "c.yaml");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(StatusMessage(parsed.status()), testing::HasSubstr("',' outside"));
  }
  const absl::Status at = CheckYamlLimits("name: t\nnodes: []\n  ,x\n", "c.yaml");
  EXPECT_THAT(StatusMessage(at), testing::HasSubstr("c.yaml:3"));
  EXPECT_THAT(StatusMessage(at), testing::HasSubstr("(column 3)"));
  // Commas inside flow collections, quotes, comments and plain scalars are YAML.
  EXPECT_TRUE(CheckYamlLimits("a: [1, 2]\nb: 'x, y'\nc: x, y # d, e\n", "c.yaml").ok());
}

TEST(LimitTest, TheNodeCapGrowsWithTheFileSize) {
  // About 1.1 million nodes once expanded: refused in a small file, accepted (as far as the limit
  // goes; the keys are unknown) in a file with more bytes than that.
  std::string text = AliasBomb();
  text.resize(text.find("l6:"));
  absl::StatusOr<ClusterDescriptor> small = ParseClusterYaml(text, "c.yaml");
  ASSERT_FALSE(small.ok());
  EXPECT_NE(StatusMessage(small.status()).find("expands to more than"), std::string::npos)
      << small.status();
  text += "# " + std::string(2'000'000, '.') + "\n";
  absl::StatusOr<ClusterDescriptor> large = ParseClusterYaml(text, "c.yaml");
  ASSERT_FALSE(large.ok());
  EXPECT_EQ(StatusMessage(large.status()).find("expands to more than"), std::string::npos)
      << large.status();
  EXPECT_NE(StatusMessage(large.status()).find("unknown key \"l0\""), std::string::npos)
      << large.status();
}

TEST(LoadClusterDescriptorTest, DirectoryIsAnErrorNamingThePath) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "urd_dir.yaml";
  std::filesystem::create_directories(dir);
  absl::StatusOr<ClusterDescriptor> got = LoadClusterDescriptor(dir.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(StatusMessage(got.status()).find(dir.string() + ": is a directory"), std::string::npos)
      << got.status();
}

}  // namespace
}  // namespace seedance::core
