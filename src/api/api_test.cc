#include "seedance/api/api.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace seedance::api {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

absl::Status PodError(const std::string& body) { return ParsePodRequest(body).status(); }
absl::Status NodeError(const std::string& name, const std::string& body) {
  return DecodeNodeRequest(name, body).status();
}

TEST(ParsePodRequestTest, ReadsEveryField) {
  absl::StatusOr<PodRequest> pod = ParsePodRequest(R"({
    "name": "train-1", "namespace": "ml", "cpu_milli": 4000, "memory_mib": 16384,
    "num_gpu": 1, "gpu_milli": 500, "gpu_spec": "A100|H100", "priority": -3,
    "labels": {"app.kubernetes.io/name": "trainer", "tier": ""}, "gang": "job-7"})");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->name, "train-1");
  EXPECT_EQ(pod->ns, "ml");
  EXPECT_EQ(pod->cpu_milli, 4000);
  EXPECT_EQ(pod->memory_mib, 16384);
  EXPECT_EQ(pod->num_gpu, 1);
  EXPECT_EQ(pod->gpu_milli, 500);
  EXPECT_EQ(pod->gpu_spec, "A100|H100");
  EXPECT_EQ(pod->priority, -3);
  EXPECT_EQ(pod->labels.at("app.kubernetes.io/name"), "trainer");
  EXPECT_EQ(pod->labels.at("tier"), "");
  EXPECT_EQ(pod->gang, "job-7");
  EXPECT_TRUE(pod->Shape().IsGpuSharing());
}

TEST(ParsePodRequestTest, DefaultsForOptionalFields) {
  absl::StatusOr<PodRequest> pod = ParsePodRequest(R"({"name": "a", "num_gpu": 2})");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->ns, "default");
  EXPECT_EQ(pod->gpu_milli, 1000);  // whole GPUs unless told otherwise
  EXPECT_EQ(pod->cpu_milli, 0);
  absl::StatusOr<PodRequest> cpu = ParsePodRequest(R"({"name": "b"})");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->gpu_milli, 0);
}

TEST(ParsePodRequestTest, RoundTripsThroughJson) {
  PodRequest pod;
  pod.name = "x.y-z";
  pod.ns = "team-a";
  pod.cpu_milli = 1;
  pod.memory_mib = int64_t{1} << 40;
  pod.num_gpu = 1;
  pod.gpu_milli = 1;
  pod.priority = INT32_MIN;
  pod.labels = {{"a/b", "c"}};
  pod.annotations = {{"slurm.seedance.io/script", "#!/bin/bash\necho \"hi\"\n"}, {"k", ""}};
  absl::StatusOr<PodRequest> back = ParsePodRequest(PodRequestToJson(pod).dump());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, pod);
}

TEST(ParsePodRequestTest, DeviceAskRoundTripsAndIsWrittenOnlyWhenSet) {
  absl::StatusOr<PodRequest> pod = ParsePodRequest(
      R"({"name": "a", "num_gpu": 2, "device_type": "any", "device_memory_mib": 49152})");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->device.type, core::DeviceClass::kAny);
  EXPECT_EQ(pod->device.memory_mib, 49152);
  absl::StatusOr<PodRequest> back = ParsePodRequest(PodRequestToJson(*pod).dump());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *pod);
  for (const char* type : {"gpu", "npu"}) {
    absl::StatusOr<PodRequest> typed = ParsePodRequest(
        absl::StrCat(R"({"name": "a", "num_gpu": 1, "device_type": ")", type, R"("})"));
    ASSERT_TRUE(typed.ok()) << typed.status();
    EXPECT_EQ(core::DeviceClassName(typed->device.type), type);
  }
  // Unset: the body a member of an older version reads carries neither key.
  absl::StatusOr<PodRequest> plain = ParsePodRequest(R"({"name": "a", "num_gpu": 1})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->device, core::DeviceAsk{});
  EXPECT_FALSE(PodRequestToJson(*plain).contains("device_type"));
  EXPECT_FALSE(PodRequestToJson(*plain).contains("device_memory_mib"));
}

TEST(ParsePodRequestTest, AnnotationsAreLimitedInAllTo256KiB) {
  PodRequest pod;
  pod.name = "a";
  pod.annotations = {{"x", std::string(kMaxAnnotationBytes - 1, 'v')}};
  EXPECT_TRUE(ParsePodRequest(PodRequestToJson(pod).dump()).ok());
  pod.annotations["y"] = "v";
  const absl::Status st = ParsePodRequest(PodRequestToJson(pod).dump()).status();
  EXPECT_EQ(FieldOf(st), "$.annotations") << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("at most 262144 bytes"));
}

TEST(ParsePodRequestTest, ErrorsNameTheJsonPath) {
  const absl::Status s = PodError(R"({"name": "a", "num_gpu": 1, "gpu_milli": 1500})");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "$.gpu_milli: must be an integer in 1..1000 (got 1500)");
  EXPECT_EQ(FieldOf(s), "$.gpu_milli");
}

struct BadPod {
  const char* body;
  const char* field;
  const char* says;
};

class BadPodTest : public ::testing::TestWithParam<BadPod> {};

TEST_P(BadPodTest, IsRefusedNamingTheField) {
  const absl::Status s = PodError(GetParam().body);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << GetParam().body;
  EXPECT_EQ(FieldOf(s), GetParam().field) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(GetParam().says));
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, BadPodTest,
    ::testing::Values(
        BadPod{R"({})", "$.name", "missing required key"},
        BadPod{R"([1])", "$", "must be an object"},
        BadPod{R"({"name": "A"})", "$.name", "DNS-1123"},
        BadPod{R"({"name": "-a"})", "$.name", "DNS-1123"},
        BadPod{R"({"name": 5})", "$.name", "must be a string"},
        BadPod{R"({"name": "a", "namespace": "a.b"})", "$.namespace", "DNS-1123 label"},
        BadPod{R"({"name": "a", "nmae": "b"})", "$.nmae", "did you mean \"name\""},
        BadPod{R"({"name": "a", "cpu_milli": -1})", "$.cpu_milli", "0..1099511627776"},
        BadPod{R"({"name": "a", "cpu_milli": 1.5})", "$.cpu_milli", "must be an integer"},
        BadPod{R"({"name": "a", "cpu_milli": "5"})", "$.cpu_milli", "(got \"5\")"},
        BadPod{R"({"name": "a", "memory_mib": null})", "$.memory_mib", "must be an integer"},
        BadPod{R"({"name": "a", "memory_mib": 1e300})", "$.memory_mib", "must be an integer"},
        BadPod{R"({"name": "a", "memory_mib": 18446744073709551615})", "$.memory_mib",
               "must be an integer"},
        BadPod{R"({"name": "a", "num_gpu": 17})", "$.num_gpu", "0..16"},
        BadPod{R"({"name": "a", "gpu_milli": 500})", "$.gpu_milli", "must be 0 when num_gpu is 0"},
        BadPod{R"({"name": "a", "num_gpu": 1, "gpu_milli": 0})", "$.gpu_milli", "1..1000"},
        BadPod{R"({"name": "a", "num_gpu": 2, "gpu_milli": 500})", "$.gpu_milli",
               "must be 1000 when num_gpu > 1"},
        BadPod{R"({"name": "a", "gpu_spec": "A100||H100"})", "$.gpu_spec", "separated by '|'"},
        BadPod{R"({"name": "a", "priority": 2147483648})", "$.priority", "must be an integer"},
        BadPod{R"({"name": "a", "labels": {"a": 1}})", "$.labels.a", "must be a string"},
        BadPod{R"({"name": "a", "labels": {"-bad": "x"}})", "$.labels[\"-bad\"]",
               "invalid label key"},
        BadPod{R"({"name": "a", "labels": {"ok": "bad value"}})", "$.labels.ok",
               "invalid label value"},
        BadPod{R"({"name": "a", "labels": {"Bad_Prefix/x": "y"}})", "$.labels[\"Bad_Prefix/x\"]",
               "invalid label key"},
        BadPod{R"({"name": "a", "labels": []})", "$.labels", "an object of strings"},
        BadPod{R"({"name": "a", "annotations": {"a": 1}})", "$.annotations.a", "must be a string"},
        BadPod{R"({"name": "a", "annotations": {"bad key": "x"}})", "$.annotations[\"bad key\"]",
               "invalid annotation key"},
        BadPod{R"({"name": "a", "annotations": "x"})", "$.annotations", "an object of strings"},
        BadPod{R"({"name": "a", "gang": "G"})", "$.gang", "DNS-1123"},
        BadPod{R"({"name": "a", "gang_min": 2})", "$.gang_min", "only with"},
        BadPod{R"({"name": "a", "num_gpu": 1, "device_type": "tpu"})", "$.device_type",
               "\"gpu\", \"npu\" or \"any\""},
        BadPod{R"({"name": "a", "num_gpu": 1, "device_type": 1})", "$.device_type", "string"},
        BadPod{R"({"name": "a", "device_type": "npu"})", "$.device_type", "only with num_gpu > 0"},
        BadPod{R"({"name": "a", "device_memory_mib": 1})", "$.device_memory_mib",
               "only with num_gpu > 0"},
        BadPod{R"({"name": "a", "num_gpu": 1, "device_memory_mib": -1})", "$.device_memory_mib",
               "0.."},
        BadPod{R"({"name": "a", "gang": "g", "gang_min": 0})", "$.gang_min", ""},
        BadPod{R"({"name": "a", "gang": "g", "gang_min": 10001})", "$.gang_min", ""},
        BadPod{R"({"name": "a", "name": "b"})", "$", "duplicate key \"name\""},
        BadPod{R"({"name": "a", "labels": {"x": "1", "x": "2"}})", "$.labels",
               "duplicate key \"x\""},
        BadPod{R"({"name": "a",)", "$", "invalid JSON"},
        BadPod{"{\"name\": \"\xff\"}", "$", "invalid JSON"}, BadPod{"", "$", "invalid JSON"}));

TEST(ParsePodRequestTest, RefusesDeepNestingAndHugeBodies) {
  std::string deep =
      R"({"name": "a", "labels": )" + std::string(100, '[') + std::string(100, ']') + "}";
  absl::Status s = PodError(deep);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nested deeper than 32 levels"));

  std::string huge = R"({"name": ")" + std::string(kMaxBodyBytes, 'a') + R"("})";
  s = PodError(huge);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(HttpStatusFor(s), 413);
}

TEST(ParsePodRequestTest, LongNamesAndKeysAreClippedInMessages) {
  const std::string key(100000, 'k');
  const absl::Status s = PodError(R"({"name": "a", ")" + key + R"(": 1})");
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(s.message().size(), 1000u);
}

TEST(ErrorBodyTest, CarriesCodeMessageAndField) {
  const absl::Status s = PodError(R"({"name": "a", "num_gpu": 99})");
  const nlohmann::json body = nlohmann::json::parse(ErrorBody(s));
  EXPECT_EQ(body["error"]["code"], "InvalidArgument");
  EXPECT_EQ(body["error"]["field"], "$.num_gpu");
  EXPECT_THAT(body["error"]["message"].get<std::string>(), StartsWith("$.num_gpu: "));

  const nlohmann::json none = nlohmann::json::parse(ErrorBody(absl::NotFoundError("no pod")));
  EXPECT_EQ(none["error"]["code"], "NotFound");
  EXPECT_TRUE(none["error"]["field"].is_null());
}

TEST(ErrorBodyTest, InvalidUtf8InTheMessageStillGivesJson) {
  const std::string body = ErrorBody(absl::NotFoundError("pod \xff\xfe"));
  EXPECT_TRUE(nlohmann::json::accept(body));
}

TEST(HttpStatusForTest, MapsEveryCodeOfTheContract) {
  EXPECT_EQ(HttpStatusFor(absl::OkStatus()), 200);
  EXPECT_EQ(HttpStatusFor(absl::InvalidArgumentError("")), 400);
  EXPECT_EQ(HttpStatusFor(absl::UnauthenticatedError("")), 401);
  EXPECT_EQ(HttpStatusFor(absl::PermissionDeniedError("")), 403);
  EXPECT_EQ(HttpStatusFor(absl::NotFoundError("")), 404);
  EXPECT_EQ(HttpStatusFor(absl::AlreadyExistsError("")), 409);
  EXPECT_EQ(HttpStatusFor(absl::FailedPreconditionError("")), 409);
  EXPECT_EQ(HttpStatusFor(absl::ResourceExhaustedError("")), 429);
  EXPECT_EQ(HttpStatusFor(BodyTooLargeError(2, 1)), 413);
  EXPECT_EQ(HttpStatusFor(absl::UnavailableError("")), 503);
  EXPECT_EQ(HttpStatusFor(absl::InternalError("")), 500);
  EXPECT_EQ(HttpStatusFor(absl::DataLossError("")), 500);
  EXPECT_EQ(HttpStatusFor(WithHttpStatus(absl::OutOfRangeError("too old"), 410)), 410);
}

TEST(StatusCodeNameTest, RoundTrips) {
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    EXPECT_EQ(StatusCodeFromName(StatusCodeName(code)), code);
  }
  EXPECT_EQ(StatusCodeFromName("Nonsense"), absl::StatusCode::kUnknown);
}

TEST(NamesTest, DnsRules) {
  EXPECT_TRUE(IsDnsSubdomain("a"));
  EXPECT_TRUE(IsDnsSubdomain("a.b-c.0"));
  EXPECT_FALSE(IsDnsSubdomain(""));
  EXPECT_FALSE(IsDnsSubdomain("a_b"));
  EXPECT_FALSE(IsDnsSubdomain("a."));
  EXPECT_FALSE(IsDnsSubdomain("a..b"));  // an empty part
  EXPECT_FALSE(IsDnsSubdomain("a.-b"));  // a part starting with '-'
  EXPECT_FALSE(IsDnsSubdomain("a-.b"));
  EXPECT_FALSE(IsDnsSubdomain(".a"));
  EXPECT_FALSE(IsDnsSubdomain(std::string(254, 'a')));
  EXPECT_TRUE(IsDnsSubdomain(std::string(253, 'a')));
  EXPECT_TRUE(IsDnsLabel(std::string(63, 'a')));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
  EXPECT_FALSE(IsDnsLabel("a.b"));
}

// --- nodes ---------------------------------------------------------------------------------

constexpr char kDescriptorNode[] = R"({
  "name": "gpu-1",
  "labels": {"zone": "a"},
  "gpu_models": {"A100": {"memory_mib": 81920, "price_usd_per_hour": 2.5, "power_w": 400}},
  "numa_nodes": [{"id": 0, "cpu_milli": 32000, "memory_mib": 262144},
                 {"id": 1, "cpu_milli": 32000, "memory_mib": 262144}],
  "devices": [
    {"id": "gpu0", "type": "gpu", "model": "A100", "capacity": {"memory_mib": 81920},
     "binding": {"numa_node": 0, "pci_address": "0000:3b:00.0", "pcie_switch": "sw0"},
     "nvlink_group": "nv0"},
    {"id": "gpu1", "type": "gpu", "model": "A100", "capacity": {"memory_mib": 81920},
     "binding": {"numa_node": 1}, "nvlink_group": "nv0"}],
  "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
  "cordoned": true
})";

TEST(ParseNodeRequestTest, DescriptorForm) {
  absl::StatusOr<NodeRequest> node = DecodeNodeRequest("gpu-1", kDescriptorNode);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE(node->descriptor_form);
  EXPECT_TRUE(node->cordoned);
  const core::NodeSpec& spec = node->spec;
  EXPECT_EQ(spec.name, "gpu-1");
  EXPECT_EQ(spec.cpu_milli, 64000);
  EXPECT_EQ(spec.memory_mib, 524288);
  EXPECT_EQ(spec.num_gpus, 2);
  EXPECT_EQ(spec.gpu_model, "A100");
  EXPECT_DOUBLE_EQ(spec.cost_usd_per_hour, 5.0);
  EXPECT_DOUBLE_EQ(spec.power_w, 800.0);
  ASSERT_EQ(spec.taints.size(), 1u);
  EXPECT_EQ(spec.taints[0].effect, "NoSchedule");
  EXPECT_EQ(spec.taints[0].value, "ml");
  ASSERT_EQ(spec.topology.gpus.size(), 2u);
  EXPECT_EQ(spec.topology.gpus[0].pcie_switch, "sw0");
  EXPECT_EQ(spec.topology.gpus[0].nvlink_group, "nv0");
  EXPECT_EQ(spec.topology.gpus[1].pcie_switch, "");
}

TEST(ParseNodeRequestTest, DescriptorFormTakesTheNameFromThePath) {
  absl::StatusOr<core::NodeSpec> spec = ParseNodeRequest(
      "cpu-7", R"({"numa_nodes": [{"id": 0, "cpu_milli": 8000, "memory_mib": 1024}]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "cpu-7");
  EXPECT_EQ(spec->num_gpus, 0);
}

TEST(ParseNodeRequestTest, ShortForm) {
  absl::StatusOr<NodeRequest> node = DecodeNodeRequest(
      "n1", R"({"cpu_milli": 96000, "memory_mib": 786432, "num_gpus": 8, "gpu_model": "V100M32",
               "cost_usd_per_hour": 24, "labels": {"pool": "train"}})");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_FALSE(node->descriptor_form);
  EXPECT_FALSE(node->cordoned);
  EXPECT_EQ(node->spec.name, "n1");
  EXPECT_EQ(node->spec.num_gpus, 8);
  EXPECT_EQ(node->spec.gpu_model, "V100M32");
  EXPECT_DOUBLE_EQ(node->spec.cost_usd_per_hour, 24.0);
  EXPECT_EQ(node->spec.labels.at("pool"), "train");
}

TEST(ParseNodeRequestTest, ShortFormNpus) {
  absl::StatusOr<NodeRequest> node = DecodeNodeRequest(
      "n1", R"({"cpu_milli": 1, "memory_mib": 1, "num_gpus": 8, "gpu_model": "MLU370",
               "device_type": "npu", "device_memory_mib": 49152})");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE(node->spec.npu);
  EXPECT_EQ(node->spec.device_memory_mib, 49152);
  node = DecodeNodeRequest("n1", R"({"cpu_milli": 1, "memory_mib": 1, "num_gpus": 1,
                                     "gpu_model": "T4"})");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_FALSE(node->spec.npu);
  EXPECT_EQ(node->spec.device_memory_mib, 0);
}

struct BadNode {
  const char* name;
  const char* body;
  const char* field;
  const char* says;
};

class BadNodeTest : public ::testing::TestWithParam<BadNode> {};

TEST_P(BadNodeTest, IsRefusedNamingTheField) {
  const absl::Status s = NodeError(GetParam().name, GetParam().body);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << GetParam().body;
  EXPECT_EQ(FieldOf(s), GetParam().field) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(GetParam().says));
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, BadNodeTest,
    ::testing::Values(
        BadNode{"Bad Name", R"({"cpu_milli": 1, "memory_mib": 1})", "name", "DNS-1123"},
        BadNode{"n", R"({"name": "m", "cpu_milli": 1, "memory_mib": 1})", "$.name",
                "must equal the name in the path"},
        BadNode{"n", R"({})", "$", "must give the node's capacity"},
        BadNode{"n", R"({"cpu_milli": 1, "numa_nodes": []})", "$", "mixes"},
        BadNode{"n", R"({"cpu_milli": 1})", "$.memory_mib", "missing required key"},
        BadNode{"n", R"({"cpu_milli": -1, "memory_mib": 1})", "$.cpu_milli", "0.."},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "num_gpus": 2})", "$.gpu_model",
                "required when num_gpus > 0"},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "num_gpus": 17, "gpu_model": "A"})",
                "$.num_gpus", "0..16"},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "cpus": 2})", "$.cpus", "unknown key"},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "device_type": "npu"})", "$.device_type",
                "only with num_gpus > 0"},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "num_gpus": 1, "gpu_model": "A",
                         "device_type": "fpga"})",
                "$.device_type", "\"gpu\" or \"npu\""},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "num_gpus": 1, "gpu_model": "A",
                         "device_memory_mib": -2})",
                "$.device_memory_mib", "0.."},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "cordoned": "yes"})", "$.cordoned",
                "true or false"},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "taints": [{"key": "k"}]})",
                "$.taints[0].effect", "missing required key"},
        BadNode{"n",
                R"({"cpu_milli": 1, "memory_mib": 1, "taints": [{"key": "k", "effect": "Never"}]})",
                "$.taints[0].effect", "NoSchedule, PreferNoSchedule or NoExecute"},
        BadNode{
            "n",
            R"({"cpu_milli": 1, "memory_mib": 1, "taints": [{"key": "k", "effect": "NoSchedule"},
                    {"key": "k", "effect": "NoSchedule"}]})",
            "$.taints[1]", "duplicate taint"},
        BadNode{"n", R"({"cpu_milli": 1, "memory_mib": 1, "labels": {"a b": "c"}})",
                "$.labels[\"a b\"]", "invalid label key"},
        BadNode{"n", R"({"numa_nodes": [{"id": 0, "cpu_milli": -5, "memory_mib": 1}]})",
                "$.numa_nodes[0].cpu_milli", "must be >= 0"},
        BadNode{"n", R"({"numa_nodes": [{"id": 0, "cpu_milli": 1, "memory_mib": 1}],
                         "devices": [{"id": "g", "type": "gpu", "model": "X",
                                      "capacity": {"memory_mib": 1}}]})",
                "$.devices[0].model", "unknown GPU model"},
        BadNode{"n", R"({"numa_nodes": [{"id": 0, "cpu_milli": 1, "memory_mib": 1}],
                         "gpu_models": {"X": {"memory_mib": -1, "price_usd_per_hour": 1,
                                              "power_w": 1}}})",
                "$.gpu_models.X.memory_mib", "must be >= 0"},
        BadNode{"n", R"({"numa_nodes": [{"id": 0, "cpu_milli": 1, "memory_mib": 1, "x": 1}]})",
                "$.numa_nodes[0]", "unknown key"}));

}  // namespace
}  // namespace seedance::api
