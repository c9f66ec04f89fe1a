// The replies below are trimmed from real slurmrestd 22.05.8 (OpenAPI v0.0.38) output on the
// test cluster of tests/slurm/slurm_cluster.py: the keys Seedance reads, as slurmrestd spells
// them, and a few it ignores.
#include "seedance/slurm/objects.h"

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "seedance/slurm/rest.h"

namespace seedance::slurm {
namespace {

using Json = nlohmann::json;

Json NodeJson(const std::string& name, const std::string& gres, const std::string& state,
              Json flags = Json::array()) {
  return {{"architecture", "x86_64"},
          {"cpus", 32},
          {"real_memory", 256000},
          {"features", ""},
          {"active_features", ""},
          {"gres", gres},
          {"name", name},
          {"state", state},
          {"state_flags", flags},
          {"partitions", {"gpu"}},
          {"reason", ""},
          {"tres", "cpu=32,mem=250G"}};
}

std::string NodesBody(Json nodes) {
  return Json{{"meta", {{"plugin", {{"type", "openapi/v0.0.38"}}}}},
              {"errors", Json::array()},
              {"nodes", nodes}}
      .dump();
}

constexpr char kEightTyped[] =
    "gpu:g0:1,gpu:g1:1,gpu:g2:1,gpu:g3:1,gpu:g4:1,gpu:g5:1,gpu:g6:1,gpu:g7:1,shard:g0:4,"
    "shard:g1:4,shard:g2:4,shard:g3:4,shard:g4:4,shard:g5:4,shard:g6:4,shard:g7:4";

TEST(SlurmNodes, TypedGpusAndShardsAreCounted) {
  absl::StatusOr<std::vector<Node>> nodes =
      ParseNodes(NodesBody(Json::array({NodeJson("node1", kEightTyped, "idle")})));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 1u);
  const Node& n = (*nodes)[0];
  EXPECT_EQ(n.name, "node1");
  EXPECT_EQ(n.cpus, 32);
  EXPECT_EQ(n.memory_mib, 256000);
  EXPECT_EQ(n.num_gpus, 8);
  EXPECT_EQ(n.shards_per_gpu, 4);
  EXPECT_TRUE(n.Available());
  EXPECT_EQ(n.partitions, std::vector<std::string>{"gpu"});
}

TEST(SlurmNodes, SocketAnnotationsAndGapsAndOtherTypes) {
  // "(S:0-1)" is how slurmrestd adds sockets; GPUs past a gap are not addressable as indices.
  absl::StatusOr<std::vector<Node>> nodes =
      ParseNodes(NodesBody({NodeJson("a", "gpu:g0:1(S:0-1),gpu:g1:1(S:0,1),gpu:g3:1", "mixed"),
                            NodeJson("b", "gpu:a100:4", "idle"),
                            NodeJson("c", "gpu:g0:1,shard:g0:2,gpu:g1:1", "idle")}));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ((*nodes)[0].num_gpus, 2);
  EXPECT_EQ((*nodes)[1].num_gpus, 0);  // untyped: Seedance cannot pin its GPUs
  EXPECT_EQ((*nodes)[2].num_gpus, 2);
  EXPECT_EQ((*nodes)[2].shards_per_gpu, 0);  // g1 has none: shards are off for the node
}

TEST(SlurmNodes, DownDrainedAndNotRespondingAreUnavailable) {
  absl::StatusOr<std::vector<Node>> nodes =
      ParseNodes(NodesBody({NodeJson("d", kEightTyped, "down", {"NOT_RESPONDING"}),
                            NodeJson("e", kEightTyped, "idle", {"DRAIN"}),
                            NodeJson("f", kEightTyped, "mixed", Json::array())}));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_FALSE((*nodes)[0].Available());
  EXPECT_EQ((*nodes)[0].Unavailability(), "down+not_responding");
  EXPECT_TRUE((*nodes)[0].Lost());
  EXPECT_FALSE((*nodes)[1].Available());
  EXPECT_FALSE((*nodes)[1].Lost());  // drained: its jobs run on, nothing new starts
  EXPECT_TRUE((*nodes)[2].Available());
}

TEST(SlurmNodes, ABodyThatIsNotSlurmrestdsIsAnErrorWithItsPath) {
  EXPECT_EQ(ParseNodes("not json").status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status st = ParseNodes(R"({"nodes": {}})").status();
  EXPECT_NE(st.message().find("$.nodes"), std::string::npos) << st;
  st = ParseNodes(R"({"nodes": [{"cpus": 4}]})").status();
  EXPECT_NE(st.message().find("$.nodes[0]"), std::string::npos) << st;
  // Figures no machine has are refused with their path, so cpus x 1000 cannot overflow later.
  st = ParseNodes(R"({"nodes": [{"name": "a", "cpus": 9223372036854775807}]})").status();
  EXPECT_NE(st.message().find("$.nodes[0].cpus: 9223372036854775807 is out of range"),
            std::string::npos)
      << st;
  st = ParseNodes(R"({"nodes": [{"name": "a", "cpus": 4, "real_memory": -1}]})").status();
  EXPECT_NE(st.message().find("$.nodes[0].real_memory"), std::string::npos) << st;
  // A field of another type reads as absent rather than throwing out of the parser.
  absl::StatusOr<std::vector<Node>> odd =
      ParseNodes(R"({"nodes": [{"name": "a", "cpus": "4", "state": {"x": 1}}]})");
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ((*odd)[0].cpus, 0);
  EXPECT_EQ((*odd)[0].state, "");
  st = ParseNodes(std::string(1000, '[') + std::string(1000, ']')).status();
  EXPECT_NE(st.message().find("nested deeper"), std::string::npos) << st;
}

TEST(SlurmJobs, StatesMapToPhases) {
  EXPECT_EQ(PhaseOf("PENDING"), JobPhase::kActive);
  EXPECT_EQ(PhaseOf("RUNNING"), JobPhase::kActive);
  EXPECT_EQ(PhaseOf("COMPLETING"), JobPhase::kActive);
  EXPECT_EQ(PhaseOf("COMPLETED"), JobPhase::kSucceeded);
  EXPECT_EQ(PhaseOf("FAILED"), JobPhase::kFailed);
  EXPECT_EQ(PhaseOf("CANCELLED"), JobPhase::kFailed);
  EXPECT_EQ(PhaseOf("TIMEOUT"), JobPhase::kFailed);
  EXPECT_EQ(PhaseOf("NODE_FAIL"), JobPhase::kNodeLost);
  EXPECT_EQ(JobPhaseName(JobPhase::kNodeLost), "NodeLost");
}

TEST(SlurmJobs, ParsesTheListing) {
  const std::string body = Json{{"errors", Json::array()},
                                {"jobs",
                                 {{{"job_id", 7},
                                   {"name", "seedance-abc"},
                                   {"job_state", "RUNNING"},
                                   {"nodes", "node4"},
                                   {"state_reason", "None"},
                                   {"exit_code", 0},
                                   {"gres_detail", {"gpu:g2:1(IDX:2)"}}},
                                  {{"job_id", 8}, {"job_state", "NODE_FAIL"}, {"exit_code", 1}}}}}
                               .dump();
  absl::StatusOr<std::vector<Job>> jobs = ParseJobs(body);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, 7);
  EXPECT_EQ((*jobs)[0].name, "seedance-abc");
  EXPECT_EQ((*jobs)[0].phase, JobPhase::kActive);
  EXPECT_EQ((*jobs)[1].phase, JobPhase::kNodeLost);
  EXPECT_EQ((*jobs)[1].exit_code, 1);
  EXPECT_FALSE(ParseJobs(R"({"jobs": [{"job_id": 0}]})").ok());
}

TEST(SlurmSubmit, TheBodyPinsNodeAndGpus) {
  JobSpec spec;
  spec.name = "seedance-x";
  spec.script = "#!/bin/bash\ntrue\n";
  spec.node = "node4";
  spec.gres = "gpu:g2:1,gpu:g5:1";
  spec.cpus = 0;
  const Json j = Json::parse(SubmitBody(spec));
  EXPECT_EQ(j["script"], spec.script);
  EXPECT_EQ(j["job"]["nodelist"], "node4");
  EXPECT_EQ(j["job"]["gres"], "gpu:g2:1,gpu:g5:1");
  EXPECT_EQ(j["job"]["cpus_per_task"], 1);           // at least one
  EXPECT_TRUE(j["job"]["environment"].is_object());  // slurmrestd requires one
  EXPECT_FALSE(j["job"].contains("partition"));
}

TEST(SlurmSubmit, RepliesAndSlurmsErrors) {
  EXPECT_EQ(*ParseSubmitReply(200, R"({"errors": [], "job_id": 12, "step_id": "BATCH"})"), 12);
  absl::StatusOr<int64_t> bad = ParseSubmitReply(
      500, R"({"errors": [{"error_code": 2000, "error": "Invalid partition name specified"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(bad.status().message(), "slurm: submit: Invalid partition name specified (error 2000)");
  bad = ParseSubmitReply(500, R"({"errors": [{"error_code": 2014,
                           "error": "Requested node configuration is not available"}]})");
  EXPECT_EQ(bad.status().message(),
            "slurm: submit: Requested node configuration is not available (error 2014)");
  bad = ParseSubmitReply(500, "Internal Server Error");
  EXPECT_NE(bad.status().message().find("HTTP 500"), std::string::npos) << bad.status();
  bad = ParseSubmitReply(200, R"({"errors": []})");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ErrorsOf(401, "Authentication failure", "x").code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(SlurmGres, WholeGpusSharesAndNone) {
  const std::vector<int8_t> two = {2, 5}, one = {3};
  EXPECT_EQ(*GresFor(two, 1000, 4), "gpu:g2:1,gpu:g5:1");
  EXPECT_EQ(*GresFor(one, 500, 4), "shard:g3:2");
  EXPECT_EQ(*GresFor(one, 300, 4), "shard:g3:2");  // rounded up: never less than asked
  EXPECT_EQ(*GresFor(one, 250, 4), "shard:g3:1");
  EXPECT_EQ(*GresFor({}, 0, 4), "");
  EXPECT_EQ(GresFor(one, 500, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*GresFor(one, 1000, 0, "gpu"), "gpu:gpu3:1");
}

TEST(SlurmNodes, ToNodeSpecTakesTheModelFromAFeature) {
  Node n;
  n.name = "node1";
  n.cpus = 32;
  n.memory_mib = 1024;
  n.num_gpus = 8;
  EXPECT_EQ(ToNodeSpec(n, "GPU").gpu_model, "GPU");
  n.features = {"nvlink", "gpu-H100"};
  const core::NodeSpec spec = ToNodeSpec(n, "GPU");
  EXPECT_EQ(spec.gpu_model, "H100");
  EXPECT_EQ(spec.cpu_milli, 32000);
  EXPECT_EQ(spec.num_gpus, 8);
  n.num_gpus = 0;
  EXPECT_EQ(ToNodeSpec(n, "GPU").gpu_model, "");
}

// A token as `scontrol token` makes one: base64url header, claims, signature (not checked here).
std::string Jwt(const std::string& claims) {
  return absl::StrCat(absl::WebSafeBase64Escape(R"({"alg":"HS256","typ":"JWT"})"), ".",
                      absl::WebSafeBase64Escape(claims), ".c2lnbmF0dXJl");
}

TEST(DecodeTokenTest, ReadsExpiryAndUserOfASlurmJwt) {
  absl::StatusOr<TokenClaims> c = DecodeToken(Jwt(R"({"exp":1796461893,"iat":1,"sun":"alice"})"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->expires_unix_s, 1796461893);
  EXPECT_EQ(c->user, "alice");
}

TEST(DecodeTokenTest, RefusesWhatIsNotAJwtWithAnExpiry) {
  for (const std::string& bad :
       {std::string("abc"), std::string("a.b"), std::string("a.!!!.c"), Jwt(R"({"sun":"x"})"),
        Jwt(R"({"exp":"soon"})"), Jwt("not json"), std::string("")}) {
    absl::StatusOr<TokenClaims> c = DecodeToken(bad);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace seedance::slurm
