#include "seedance/telemetry/profile.h"

#include <string>

#include "gtest/gtest.h"
#include "seedance/telemetry/synthetic.h"

namespace seedance::telemetry {
namespace {

const char kGood[] = R"({"version": 1, "source": "test", "interval_s": 1,
 "timestamps_s": [0, 1, 2],
 "nodes": [
  {"name": "n0", "cpus": 8, "memory_mib": 1000, "cpu_util_pct": [1, 2, null],
   "gpus": [{"index": 0, "model": "NVIDIA A100-SXM4-80GB", "numa_node": 0, "nvlink_peers": [1],
             "util_pct": [10, 20, 30]},
            {"index": 1, "model": "NVIDIA A100-SXM4-80GB", "numa_node": 1, "nvlink_peers": [0],
             "util_pct": [1, 2, 3]}],
   "pods": [{"name": "p", "cpu_milli": 1000, "num_gpus": 1, "gpu_milli": 500, "gpu_ids": [1]}]}],
 "pending_pods": [{"name": "q", "num_gpus": 2}]})";

TEST(ProfileJsonTest, ParsesAValidProfile) {
  auto p = ParseProfileJson(kGood, "p.json");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->nodes.size(), 1u);
  EXPECT_EQ(p->nodes[0].gpus[1].util_pct[2], 3);
  EXPECT_TRUE(IsMissing(p->nodes[0].cpu_util_pct[2]));
  EXPECT_EQ(p->nodes[0].pods[0].gpu_ids, std::vector<int>{1});
  EXPECT_EQ(p->pending_pods[0].gpu_milli, 1000);  // whole GPUs when absent
}

TEST(ProfileJsonTest, RoundTripsThroughToJson) {
  SyntheticOptions o;
  o.nodes = 3;
  o.samples = 5;
  Profile a = MakeSyntheticProfile(o);
  a.pending_pods.push_back({"pend", "ns", 100, 10, 1, 1000, {}, {}, "A100"});
  auto b = ParseProfileJson(ToJson(a), "x");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(ToJson(*b), ToJson(a));
  ASSERT_EQ(b->nodes.size(), 3u);
  EXPECT_EQ(b->nodes[1].gpus[3].util_pct, a.nodes[1].gpus[3].util_pct);
  EXPECT_EQ(b->nodes[1].pods.size(), a.nodes[1].pods.size());
  EXPECT_EQ(b->pending_pods[0].gpu_model, "A100");
}

struct BadCase {
  const char* name;
  std::string from, to;  // replace `from` in kGood with `to`
  std::string want;      // expected substring of the message
};

TEST(ProfileJsonTest, NamesTheJsonPathOfEachProblem) {
  const BadCase cases[] = {
      {"string util", "\"util_pct\": [10, 20, 30]", "\"util_pct\": [10, \"x\", 30]",
       "p.json: $.nodes[0].gpus[0].util_pct[1]: expected number or null"},
      {"short series", "\"util_pct\": [1, 2, 3]", "\"util_pct\": [1, 2]",
       "p.json: $.nodes[0].gpus[1].util_pct: expected 3 values (one per timestamp), got 2"},
      {"missing name", "\"name\": \"n0\", ", "", "p.json: $.nodes[0].name: missing required field"},
      {"version", "\"version\": 1", "\"version\": 7",
       "p.json: $.version: unsupported profile version 7"},
      {"bad gpu id", "\"gpu_ids\": [1]", "\"gpu_ids\": [5]",
       "p.json: $.nodes[0].pods[0].gpu_ids[0]: no such GPU"},
      {"bad peer", "\"nvlink_peers\": [0]", "\"nvlink_peers\": [9]",
       "p.json: $.nodes[0].gpus[1].nvlink_peers[0]: no such GPU"},
      {"nodes not array", "\"nodes\": [", "\"nodes\": 5, \"x\": [",
       "p.json: $.nodes: expected array"},
      {"negative cpus", "\"cpus\": 8", "\"cpus\": -8", "p.json: $.nodes[0].cpus: out of range"},
      {"timestamps order", "[0, 1, 2]", "[0, 2, 1]",
       "p.json: $.timestamps_s[2]: timestamps must increase"},
      // Meaning, not just syntax.
      {"util huge", "[10, 20, 30]", "[10, 1e308, 30]",
       "p.json: $.nodes[0].gpus[0].util_pct[1]: 1e+308 is outside 0..100 (percent)"},
      {"util negative", "[10, 20, 30]", "[10, 20, -50]",
       "p.json: $.nodes[0].gpus[0].util_pct[2]: -50 is outside 0..100 (percent)"},
      {"cpu util over 100", "\"cpu_util_pct\": [1, 2, null]", "\"cpu_util_pct\": [1, 200, null]",
       "p.json: $.nodes[0].cpu_util_pct[1]: 200 is outside 0..100"},
      {"negative memory series", "\"cpu_util_pct\": [1, 2, null]",
       "\"cpu_util_pct\": [1, 2, null], \"mem_used_mib\": [1, -2, 3]",
       "p.json: $.nodes[0].mem_used_mib[1]: -2 is outside"},
      {"negative timestamp", "[0, 1, 2]", "[-5, 1, 2]", "p.json: $.timestamps_s[0]: -5 is outside"},
      {"negative start", "\"interval_s\": 1", "\"interval_s\": 1, \"start_unix_s\": -1",
       "p.json: $.start_unix_s: -1 is outside 0..100000000000 (Unix seconds)"},
      {"zero interval", "\"interval_s\": 1", "\"interval_s\": 0",
       "p.json: $.interval_s: must be > 0"},
      {"schema version", "\"version\": 1", "\"version\": 1, \"schema_version\": \"trace/v9\"",
       "p.json: $.schema_version: expected \"profile/v1\""},
      {"empty node name", "\"name\": \"n0\"", "\"name\": \"\"",
       "p.json: $.nodes[0].name: empty node name"},
      {"duplicate pod", "\"pending_pods\": [{\"name\": \"q\"",
       "\"pending_pods\": [{\"name\": \"p\"",
       "p.json: $.pending_pods[0].name: duplicate pod 'p' (also at $.nodes[0].pods[0])"},
  };
  for (const BadCase& c : cases) {
    std::string text = kGood;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, c.from.size(), c.to);
    auto p = ParseProfileJson(text, "p.json");
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(std::string(p.status().message()).find(c.want), std::string::npos)
        << c.name << ": " << p.status().message();
  }
}

TEST(ProfileJsonTest, TruncatedFileNamesWhereItBrokeOff) {
  const std::string text = kGood;
  const size_t cut = text.find("20, 30]") + 3;  // inside nodes[0].gpus[0].util_pct
  auto p = ParseProfileJson(text.substr(0, cut), "p.json");
  ASSERT_FALSE(p.ok());
  const std::string msg(p.status().message());
  EXPECT_NE(msg.find("p.json: $.nodes[0].gpus[0].util_pct[2]: unexpected end of file"),
            std::string::npos)
      << msg;
  auto q = ParseProfileJson("{\"version\": 1, \"nodes\": [}", "q.json");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(std::string(q.status().message()).find("q.json: $.nodes[0]: invalid JSON"),
            std::string::npos)
      << q.status().message();
  EXPECT_FALSE(ParseProfileJson("", "e.json").ok());
}

TEST(ProfileJsonTest, DuplicateNodeNamesAreRefusedWithBothLocations) {
  const std::string node = R"({"name": "n0", "gpus": [{"index": 0, "util_pct": [1]}]})";
  const std::string text = R"({"version": 1, "timestamps_s": [0], "nodes": [)" + node + ", " +
                           R"({"name": "n1"}, )" + node + "]}";
  auto p = ParseProfileJson(text, "d.json");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(
      std::string(p.status().message())
          .find("d.json: $.nodes[2].name: duplicate node name 'n0' (also at $.nodes[0].name)"),
      std::string::npos)
      << p.status().message();
}

TEST(ProfileJsonTest, WrittenProfilesStartWithTheJsonHeaderAndReadBack) {
  Profile a;
  a.source = "local";
  a.timestamps_s = {0, 1};
  NodeProfile n;
  n.name = "bad\xff\xfe utf8";  // e.g. from --node-name: must not abort the writer
  n.cpu_util_pct = {1, 2};
  a.nodes.push_back(n);
  const std::string json = ToJson(a);
  EXPECT_EQ(json.rfind("{\"schema_version\":\"profile/v1\",\"seedance_version\":", 0), 0u)
      << json.substr(0, 80);
  auto b = ParseProfileJson(json, "x");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->nodes[0].name, "bad\xef\xbf\xbd\xef\xbf\xbd utf8");  // U+FFFD each
}

TEST(ProfileJsonTest, ADirectoryIsAClearError) {
  auto p = LoadProfile("/tmp");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(p.status().message()).find("/tmp"), std::string::npos);
}

TEST(ProfileJsonTest, MissingFileIsNotFound) {
  auto p = LoadProfile("/nonexistent/p.json");
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace seedance::telemetry
