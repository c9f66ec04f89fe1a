// ParseDeploymentsConfig: the deployments file of `seedance server --deployments` (the live
// controller itself runs against a real Prometheus in deployments_test.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "seedance/server/deployments.h"

namespace seedance::server {
namespace {

using ::testing::HasSubstr;

constexpr char kGood[] = R"json({
  "prometheus": "http://127.0.0.1:9090",
  "deployments": [{
    "name": "web", "namespace": "serve", "replicas": 2, "period_s": 5,
    "pod": {"cpu_milli": 1000, "memory_mib": 2048, "num_gpu": 1, "gpu_milli": 250},
    "autoscale": {"mode": "hpa", "min_replicas": 1, "max_replicas": 6, "tolerance": 0.2,
                  "metrics": [{"name": "rps", "query": "sum(rate(requests_total[1m]))",
                               "target_per_replica": 20}]}
  }, {
    "name": "chat",
    "autoscale": {"mode": "predictive", "rate_query": "sum(rate(chat_total[1m]))",
                  "capacity_rps_per_replica": 3, "max_replicas": 20}
  }]
})json";

std::string Error(const std::string& text) {
  absl::StatusOr<DeploymentsConfig> c = ParseDeploymentsConfig(text, "d.json");
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : std::string(c.status().message());
}

// kGood with `from` replaced by `to` (once).
std::string With(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

TEST(DeploymentsConfigTest, ReadsEveryField) {
  absl::StatusOr<DeploymentsConfig> c = ParseDeploymentsConfig(kGood, "d.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->prometheus_url, "http://127.0.0.1:9090");
  ASSERT_EQ(c->deployments.size(), 2u);
  const DeploymentSpec& web = c->deployments[0];
  EXPECT_EQ(web.name, "web");
  EXPECT_EQ(web.ns, "serve");
  EXPECT_EQ(web.replicas, 2);
  EXPECT_EQ(web.period_s, 5);
  EXPECT_EQ(web.pod.cpu_milli, 1000);
  EXPECT_EQ(web.pod.gpu_milli, 250);
  EXPECT_EQ(web.mode, autoscale::Mode::kHpa);
  EXPECT_EQ(web.hpa.max_replicas, 6);
  EXPECT_EQ(web.hpa.tolerance, 0.2);
  ASSERT_EQ(web.metrics.size(), 1u);
  EXPECT_EQ(web.metrics[0].target_per_replica, 20);
  const DeploymentSpec& chat = c->deployments[1];
  EXPECT_EQ(chat.ns, "default");
  EXPECT_EQ(chat.period_s, 15);
  EXPECT_EQ(chat.mode, autoscale::Mode::kPredictive);
  EXPECT_EQ(chat.predictive.capacity_rps_per_replica, 3);
  EXPECT_EQ(chat.predictive.max_replicas, 20);
  EXPECT_FALSE(chat.adaptive_period);
  c = ParseDeploymentsConfig(With(R"("period_s": 5)", R"("period_s": 5, "period": "adaptive",
                                  "min_period_s": 1, "max_period_s": 20)"),
                             "d.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->deployments[0].adaptive_period);
  EXPECT_EQ(c->deployments[0].min_period_s, 1);
  EXPECT_EQ(c->deployments[0].max_period_s, 20);
}

TEST(DeploymentsConfigTest, ErrorsNameTheFileAndTheJsonPath) {
  EXPECT_EQ(Error("{\n"), "d.json:2: not JSON (byte 3)");
  EXPECT_THAT(Error(With(R"("period_s": 5)", R"("period_s": 1e999)")),
              HasSubstr("d.json: not JSON: "));
  EXPECT_THAT(Error(With("http://127.0.0.1:9090", "http://h:99999")),
              HasSubstr("d.json: $.prometheus: "));
  EXPECT_THAT(Error(With(R"("mode": "hpa")", R"("mode": "fast")")),
              HasSubstr("d.json: $.deployments[0].autoscale.mode: "));
  EXPECT_THAT(
      Error(With(R"("period_s": 5)", R"("period_s": 0)")),
      HasSubstr("d.json: $.deployments[0].period_s: must be a number in 0.1..3600 (got 0)"));
  EXPECT_THAT(Error(With(R"("period_s": 5)", R"("period": "fast")")),
              HasSubstr("d.json: $.deployments[0].period: must be fixed or adaptive"));
  EXPECT_THAT(Error(With(R"("period_s": 5)", R"("min_period_s": 40)")),
              HasSubstr("$.deployments[0].min_period_s: need 0.1 <= min_period_s"));
  EXPECT_THAT(Error(With(R"("replicas": 2)", R"("replica": 2)")),
              HasSubstr("d.json: $.deployments[0].replica: unknown key \"replica\"; did you mean "
                        "\"replicas\"?"));
  // A key that is not a plain name is quoted (base/json_path.h), control bytes escaped.
  EXPECT_THAT(Error(With(R"("replicas": 2)", R"("replicas": 2, "a.b\u001b": 1)")),
              HasSubstr("d.json: $.deployments[0][\"a.b\\u001b\"]: unknown key"));
  EXPECT_THAT(Error(With(R"("target_per_replica": 20)", R"("target_per_replica": 0)")),
              HasSubstr("$.deployments[0].autoscale.metrics[0].target_per_replica: must be > 0"));
  EXPECT_THAT(Error(With(R"("gpu_milli": 250)", R"("gpu_milli": 5000)")),
              HasSubstr("d.json: $.deployments[0].pod: "));
  EXPECT_THAT(Error(With(R"("cpu_milli": 1000,)", R"("name": "x",)")),
              HasSubstr("$.deployments[0].pod.name: set by the deployment"));
  EXPECT_THAT(Error(With(R"("max_replicas": 6)", R"("max_replicas": 100000)")),
              HasSubstr("$.deployments[0].autoscale.max_replicas: must be an integer in 1..10000 "
                        "(got 100000)"));
  // The autoscaler's own checks, under the deployment's path.
  EXPECT_THAT(Error(With(R"("min_replicas": 1)", R"("min_replicas": 7)")),
              HasSubstr("d.json: $.deployments[0].autoscale: "));
  EXPECT_THAT(Error(With(R"x("rate_query": "sum(rate(chat_total[1m]))",)x", "")),
              HasSubstr("$.deployments[1].autoscale.rate_query: predictive needs it"));
  EXPECT_THAT(Error(With(R"("name": "chat")", R"("name": "web", "namespace": "serve")")),
              HasSubstr("$.deployments[1].name: appears twice"));
  EXPECT_THAT(Error(R"({"prometheus": "http://p:9090", "deployments": []})"),
              HasSubstr("$.deployments: expected a non-empty list"));
  EXPECT_THAT(Error(R"({"deployments": [{}]})"),
              HasSubstr("$.prometheus: missing required key \"prometheus\""));
  EXPECT_THAT(Error(std::string(100, '[')), HasSubstr("nested deeper"));
}

}  // namespace
}  // namespace seedance::server
