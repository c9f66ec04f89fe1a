#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "seedance/api/api.h"

namespace seedance::api {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseApplyFileTest, YamlDocumentsInlineAndSpec) {
  const std::string text = R"(# two nodes and a pod
kind: Node
name: gpu-1
cpu_milli: 64000
memory_mib: 262144
num_gpus: 8
gpu_model: A100
---
kind: Pod
spec:
  name: train-1
  namespace: ml
  num_gpu: 1
  gpu_milli: 250
  labels: {app: trainer}
---
kind: Node
name: cpu-1
spec:
  numa_nodes:
    - {id: 0, cpu_milli: 8000, memory_mib: 1024}
---
)";
  absl::StatusOr<std::vector<ApplyObject>> objs = ParseApplyFile(text, "f.yaml");
  ASSERT_TRUE(objs.ok()) << objs.status();
  ASSERT_EQ(objs->size(), 3u);
  EXPECT_EQ((*objs)[0].kind, ApplyObject::kNode);
  EXPECT_EQ((*objs)[0].name, "gpu-1");
  EXPECT_EQ((*objs)[0].line, 2);
  EXPECT_EQ((*objs)[1].kind, ApplyObject::kPod);
  EXPECT_EQ((*objs)[1].name, "train-1");
  EXPECT_EQ((*objs)[1].line, 9);
  EXPECT_EQ((*objs)[2].name, "cpu-1");
  // The bodies are what the API's decoders accept.
  absl::StatusOr<PodRequest> pod = ParsePodRequest((*objs)[1].body_json);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->gpu_milli, 250);
  EXPECT_EQ(pod->labels.at("app"), "trainer");
  absl::StatusOr<NodeRequest> node = DecodeNodeRequest("gpu-1", (*objs)[0].body_json);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->spec.num_gpus, 8);
  EXPECT_TRUE(DecodeNodeRequest("cpu-1", (*objs)[2].body_json).ok());
}

TEST(ParseApplyFileTest, QuotedNumbersStayStrings) {
  absl::Status s = ParseApplyFile("kind: Pod\nname: a\ncpu_milli: \"5\"\n", "f.yaml").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("must be an integer"));
}

TEST(ParseApplyFileTest, JsonListAndObject) {
  const std::string text = R"([
  {"kind": "Pod", "name": "a", "cpu_milli": 100},
  {"kind": "Pod", "spec": {"name": "b", "num_gpu": 2}}
])";
  absl::StatusOr<std::vector<ApplyObject>> objs = ParseApplyFile(text, "f.json");
  ASSERT_TRUE(objs.ok()) << objs.status();
  ASSERT_EQ(objs->size(), 2u);
  EXPECT_EQ((*objs)[0].line, 2);
  EXPECT_EQ((*objs)[1].line, 3);
  EXPECT_EQ((*objs)[1].name, "b");

  objs = ParseApplyFile(R"({"kind": "Node", "name": "n", "cpu_milli": 1, "memory_mib": 2})", "-");
  ASSERT_TRUE(objs.ok()) << objs.status();
  EXPECT_EQ((*objs)[0].kind, ApplyObject::kNode);
}

struct BadFile {
  const char* text;
  const char* says;  // the message starts with this
};

class BadApplyFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadApplyFileTest, NamesFileLineAndPath) {
  const absl::Status s = ParseApplyFile(GetParam().text, "f.yaml").status();
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << GetParam().text;
  EXPECT_THAT(std::string(s.message()), StartsWith(GetParam().says));
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadApplyFileTest,
    ::testing::Values(
        BadFile{"kind: Pod\nname: a\nnum_gpu: 1\ngpu_milli: 1500\n",
                "f.yaml:4: $[0].gpu_milli: must be an integer in 1..1000 (got 1500)"},
        BadFile{"kind: Pod\nname: a\n---\nkind: Pod\nspec:\n  name: b\n  nmae: c\n",
                "f.yaml:7: $[1].spec.nmae: unknown key \"nmae\"; did you mean \"name\"?"},
        BadFile{"kind: pod\nname: a\n",
                "f.yaml:1: $[0].kind: must be Node or Pod (got \"pod\"); "
                "did you mean Pod?"},
        BadFile{"name: a\n", "f.yaml:1: $[0]: missing required key \"kind\""},
        BadFile{"kind: Node\ncpu_milli: 1\nmemory_mib: 1\n",
                "f.yaml:1: $[0]: missing required key \"name\""},
        BadFile{"kind: Node\nname: n\nspec: {cpu_milli: -1, memory_mib: 1}\n",
                "f.yaml:3: $[0].spec.cpu_milli: must be an integer"},
        BadFile{"kind: Node\nname: N\ncpu_milli: 1\nmemory_mib: 1\n",
                "f.yaml:2: $[0].name: must be a DNS-1123 name"},
        BadFile{"kind: Pod\nspec: {name: a}\nextra: 1\n",
                "f.yaml:3: $[0].extra: unknown key beside \"spec\""},
        BadFile{"kind: Pod\nname: a\nname: b\n", "f.yaml:3: $: duplicate key \"name\""},
        BadFile{"- 1\n- 2\n", "f.yaml:1: $[0]: must be an object"},
        BadFile{"[{\"kind\": \"Pod\", \"name\": \"a\"},\n 7]", "f.yaml:2: $[1]: must be an object"},
        BadFile{"kind: [\n", "f.yaml:"}, BadFile{"", "f.yaml: no objects"},
        BadFile{"---\n---\n", "f.yaml: no objects"},
        BadFile{"[{\"kind\": \"Pod\", \"name\": \"a\", \"name\": \"b\"}]",
                "f.yaml: $[0]: duplicate key"},
        BadFile{"{\"kind\": \"Pod\"", "f.yaml: $: invalid JSON"},
        BadFile{"a: &a [1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
                "f.yaml:"}));

TEST(ParseApplyFileTest, AnAliasInsideItsOwnAnchorIsRefused) {
  const absl::Status s = ParseApplyFile("a: &a [:& Sta, *a]\nkind: Pod\n", "f.yaml").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("f.yaml:"));
}

TEST(ParseApplyFileTest, DeepNestingIsRefusedWithoutCrashing) {
  const std::string deep = "kind: Pod\nname: a\nlabels: " + std::string(100000, '[') + "\n";
  const absl::Status s = ParseApplyFile(deep, "f.yaml").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string json = std::string(100000, '[');
  EXPECT_EQ(ParseApplyFile(json, "f.json").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace seedance::api
