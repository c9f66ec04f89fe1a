#include "seedance/federation/config.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::federation {
namespace {

constexpr char kGood[] = R"(# two members
members:
  - name: cheap
    url: "http://10.0.0.5:7070"
    token_file: t
    region: eu-west
    prices: {gpu_hour: {V100M16: 1.2, default: 2.0}, cpu_hour: 0.02, egress_gb: 0.05}
    labels: {tier: spot}
  - name: premium
    url: https://gpu.example.com:443
    weight: 3
    prices:
      gpu_hour: {A100-80GB: 3.9}
lost_after: 45s
)";

TEST(FederationConfigTest, ReadsTheIssuesExample) {
  absl::StatusOr<FederationConfig> c = ParseFederationConfig(kGood, "/etc/seedance/members.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->members.size(), 2u);
  const MemberConfig& cheap = c->members[0];
  EXPECT_EQ(cheap.name, "cheap");
  EXPECT_EQ(cheap.url, "http://10.0.0.5:7070");
  EXPECT_EQ(cheap.token_file, "/etc/seedance/t");  // beside the member file
  EXPECT_EQ(cheap.region, "eu-west");
  EXPECT_EQ(cheap.weight, 1);
  EXPECT_EQ(cheap.prices.gpu_hour.at("V100M16"), 1.2);
  EXPECT_EQ(cheap.prices.gpu_hour_default, 2.0);
  EXPECT_EQ(cheap.prices.cpu_hour, 0.02);
  EXPECT_EQ(cheap.prices.egress_gb, 0.05);
  EXPECT_EQ(cheap.labels.at("tier"), "spot");
  EXPECT_EQ(cheap.line, 3);
  const MemberConfig& premium = c->members[1];
  EXPECT_EQ(premium.weight, 3);
  EXPECT_EQ(premium.prices.gpu_hour_default, std::nullopt);
  EXPECT_EQ(premium.prices.cpu_hour, 0);
  EXPECT_EQ(premium.line, 9);
  EXPECT_EQ(c->lost_after_s, 45);
}

TEST(FederationConfigTest, LostAfterDefaultsAndTakesBareSeconds) {
  const std::string one =
      "members: [{name: a, url: 'http://h:1', prices: {gpu_hour: {default: 1}}}]";
  absl::StatusOr<FederationConfig> c = ParseFederationConfig(one, "m.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->lost_after_s, kDefaultLostAfterS);
  c = ParseFederationConfig(one + "\nlost_after: 90", "m.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->lost_after_s, 90);
  c = ParseFederationConfig(one + "\nlost_after: 2m", "m.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->lost_after_s, 120);
}

TEST(FederationConfigTest, PricesAModelByItsOwnEntryTheCatalogOrTheDefault) {
  Prices p;
  p.gpu_hour = {{"V100M16", 1.2}, {"T4", 0.3}};
  EXPECT_EQ(p.GpuHour("V100M16"), 1.2);
  EXPECT_EQ(p.GpuHour("T4"), 0.3);
  // V100M32 is the catalog's V100, as V100M16 is.
  EXPECT_EQ(p.GpuHour("V100M32"), 1.2);
  EXPECT_EQ(p.GpuHour("G2"), std::nullopt);
  p.gpu_hour_default = 2.0;
  EXPECT_EQ(p.GpuHour("G2"), 2.0);
}

// Each refusal names the file, the line and column, and the field.
struct BadCase {
  std::string name;
  std::string text;
  std::string want;  // the whole message
};

TEST(FederationConfigTest, RefusalsNameFileLineAndField) {
  const std::string head = "members:\n  - name: a\n    url: http://h:7070\n";
  const std::string prices = "    prices: {gpu_hour: {default: 1}}\n";
  const std::vector<BadCase> cases = {
      {"no members", "lost_after: 30s\n",
       "m.yaml:1:1: $.members: must be a non-empty list of members"},
      {"empty list", "members: []\n",
       "m.yaml:1:10: $.members: must be a non-empty list of members"},
      {"unknown top key", "member: []\n",
       "m.yaml:1:9: $.member: unknown key \"member\"; did you mean \"members\"? (allowed: members, "
       "lost_after, quotas)"},
      {"quota without namespaces", head + prices + "quotas:\n  - {name: q, limit: {gpus: 1}}\n",
       "m.yaml:6:5: $.quotas[0].namespaces: must be a non-empty list of namespaces"},
      {"quota namespace", head + prices + "quotas:\n  - {name: q, namespaces: [ML], limit: {gpus: 1}}\n",
       "m.yaml:6:28: $.quotas[0].namespaces[0]: must be a namespace (a DNS-1123 label; got \"ML\")"},
      {"quota limit empty", head + prices + "quotas:\n  - {name: q, namespaces: [ml], limit: {}}\n",
       "m.yaml:6:40: $.quotas[0].limit: must limit at least one of gpus, gpu_milli, cpu_milli, "
       "memory_mib"},
      {"quota limit negative",
       head + prices + "quotas:\n  - {name: q, namespaces: [ml], limit: {gpus: -1}}\n",
       "m.yaml:6:47: $.quotas[0].limit.gpus: must be an integer in 0..1099511627776 (got -1)"},
      {"quota limit unknown resource",
       head + prices + "quotas:\n  - {name: q, namespaces: [ml], limit: {gpu: 1}}\n",
       "m.yaml:6:46: $.quotas[0].limit.gpu: unknown key \"gpu\"; did you mean \"gpus\"? (allowed: "
       "gpus, gpu_milli, cpu_milli, memory_mib)"},
      {"namespace in two quotas",
       head + prices +
           "quotas:\n  - {name: q, namespaces: [ml], limit: {gpus: 1}}\n"
           "  - {name: r, namespaces: [web, ml], limit: {gpus: 1}}\n",
       "m.yaml:7:33: $.quotas[1].namespaces[1]: namespace 'ml' is already in quota 'q'"},
      {"quota name twice",
       head + prices +
           "quotas:\n  - {name: q, namespaces: [ml], limit: {gpus: 1}}\n"
           "  - {name: q, namespaces: [web], limit: {gpus: 1}}\n",
       "m.yaml:7:12: $.quotas[1].name: 'q' names another quota already"},
      {"name not a DNS label", "members:\n  - name: Cheap_1\n    url: http://h:7070\n" + prices,
       "m.yaml:2:11: $.members[0].name: must be a DNS-1123 label (lower-case letters, digits and "
       "'-', at most 63)"},
      {"name missing", "members:\n  - url: http://h:7070\n" + prices,
       "m.yaml:2:5: $.members[0].name: missing required key \"name\""},
      {"duplicate name", head + prices + head.substr(9) + prices,
       "m.yaml:5:11: $.members[1].name: 'a' names another member already"},
      {"url without port", "members:\n  - name: a\n    url: http://h\n" + prices,
       "m.yaml:3:10: $.members[0].url: must be http://HOST:PORT or https://HOST:PORT (the port "
       "is missing)"},
      {"url scheme", "members:\n  - name: a\n    url: ftp://h:21\n" + prices,
       "m.yaml:3:10: $.members[0].url: must be http://HOST:PORT or https://HOST:PORT (the scheme "
       "must be http or https)"},
      {"url with a path", "members:\n  - name: a\n    url: http://h:1/v1\n" + prices,
       "m.yaml:3:10: $.members[0].url: must be http://HOST:PORT or https://HOST:PORT (a path, "
       "query or fragment is not supported (give the server's root))"},
      {"negative GPU price", head + "    prices: {gpu_hour: {V100M16: -1}}\n",
       "m.yaml:4:34: $.members[0].prices.gpu_hour.V100M16: must be a number in 0..1000000 (got "
       "-1)"},
      {"infinite price", head + "    prices: {gpu_hour: {default: .inf}}\n",
       "m.yaml:4:34: $.members[0].prices.gpu_hour.default: must be a number in 0..1000000 (got "
       "\".inf\")"},
      {"price not a number", head + "    prices:\n      gpu_hour: {T4: 1}\n      cpu_hour: x\n",
       "m.yaml:6:17: $.members[0].prices.cpu_hour: must be a number in 0..1000000 (got \"x\")"},
      {"negative egress", head + "    prices: {gpu_hour: {T4: 1}, egress_gb: -0.5}\n",
       "m.yaml:4:44: $.members[0].prices.egress_gb: must be a number in 0..1000000 (got -0.5)"},
      {"no GPU price at all", head + "    prices: {gpu_hour: {}}\n",
       "m.yaml:4:24: $.members[0].prices.gpu_hour: must price at least one GPU model or give a "
       "default"},
      {"gpu_hour missing", head + "    prices: {cpu_hour: 1}\n",
       "m.yaml:4:13: $.members[0].prices.gpu_hour: missing: USD per GPU-hour by GPU model, or a "
       "default for every model"},
      {"prices missing", head,
       "m.yaml:2:5: $.members[0].prices: missing: gpu_hour (USD per GPU-hour by model), cpu_hour, "
       "egress_gb"},
      {"weight zero", head + prices + "    weight: 0\n",
       "m.yaml:5:13: $.members[0].weight: must be > 0"},
      {"region", head + prices + "    region: EU West\n",
       "m.yaml:5:13: $.members[0].region: must be a DNS-1123 label such as eu-west"},
      {"label key", head + prices + "    labels: {\"bad key\": x}\n",
       "m.yaml:5:25: $.members[0].labels[\"bad key\"]: invalid label key \"bad key\": must be "
       "[PREFIX/]NAME with PREFIX a DNS-1123 subdomain and NAME at most 63 characters of "
       "[A-Za-z0-9_.-], alphanumeric at both ends"},
      {"lost_after", head + prices + "lost_after: soon\n",
       "m.yaml:5:13: $.lost_after: expected a duration such as 300s, 5m, 72h or 1h30m (a bare "
       "number is in seconds), got 'soon'"},
      {"lost_after zero", head + prices + "lost_after: 0s\n",
       "m.yaml:5:13: $.lost_after: must be in (0, 86400] seconds, got '0s'"},
      {"two documents", head + prices + "---\nmembers: []\n",
       "m.yaml:6:1: a configuration file is one YAML document (found another)"},
      {"not YAML", "members: [\n", "m.yaml:2: invalid YAML: end of sequence flow not found"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<FederationConfig> got = ParseFederationConfig(c.text, "m.yaml");
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(std::string(got.status().message()), c.want) << c.name;
  }
}

TEST(FederationConfigTest, ReadsQuotas) {
  absl::StatusOr<FederationConfig> c = ParseFederationConfig(
      "members:\n  - {name: a, url: \"http://h:1\", prices: {gpu_hour: {default: 1}}}\n"
      "quotas:\n"
      "  - name: vision\n"
      "    namespaces: [vision, vision-dev]\n"
      "    limit: {gpus: 24, cpu_milli: 256000}\n"
      "  - {name: web, namespaces: [web], limit: {memory_mib: 0}}\n",
      "m.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->quotas.size(), 2u);
  EXPECT_EQ(c->quotas[0].name, "vision");
  EXPECT_EQ(c->quotas[0].namespaces, (std::vector<std::string>{"vision", "vision-dev"}));
  EXPECT_EQ(c->quotas[0].limit.gpus, 24);
  EXPECT_EQ(c->quotas[0].limit.cpu_milli, 256000);
  EXPECT_FALSE(c->quotas[0].limit.gpu_milli.has_value());
  EXPECT_FALSE(c->quotas[0].limit.memory_mib.has_value());
  EXPECT_EQ(c->quotas[1].limit.memory_mib, 0);  // a zero limit is a limit: nothing may run
}

TEST(FederationConfigTest, LoadNamesAMissingFile) {
  absl::StatusOr<FederationConfig> c = LoadFederationConfig("/nonexistent/members.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/members.yaml"), std::string_view::npos)
      << c.status();
}

// examples/federation/members.yaml, the example docs/federation.md points to, is a valid file.
TEST(FederationConfigTest, TheExampleFileIsValid) {
  const char* src = std::getenv("SEEDANCE_SOURCE_DIR");
  const std::string path =
      std::string(src ? src : SEEDANCE_FEDERATION_SOURCE_DIR) + "/examples/federation/members.yaml";
  absl::StatusOr<FederationConfig> c = LoadFederationConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->members.size(), 3u);
  EXPECT_EQ(c->members[0].name, "onprem-slurm");
  EXPECT_EQ(c->members[1].weight, 2);
  EXPECT_EQ(c->members[2].prices.GpuHour("H100"), 6.98);
  EXPECT_EQ(c->lost_after_s, 30);
  EXPECT_EQ(c->members[1].prices.GpuHour("Ascend910B"), 0.9);
  ASSERT_EQ(c->quotas.size(), 2u);
  EXPECT_EQ(c->quotas[1].limit.gpu_milli, 4000);
}

}  // namespace
}  // namespace seedance::federation
