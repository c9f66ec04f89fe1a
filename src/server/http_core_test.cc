// The route table and the authorization rules against docs/api.md, "Who may call what": every
// route the server registers is in the routes table with the same method, path, label and level,
// and no other; Authorize gives every (level, caller) pair what the levels table says. Also the
// request-target decoding the routes rely on.
#include "http_core.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "routes.h"

namespace seedance::server {
namespace {

namespace fs = std::filesystem;

std::string ReadDoc(const std::string& page) {
  const char* src = std::getenv("SEEDANCE_SOURCE_DIR");
  std::ifstream in(fs::path(src ? src : ".") / "docs" / page);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ApiDoc() { return ReadDoc("api.md"); }

// The cells of the markdown table rows between `from` and `to` (header and rule rows skipped).
std::vector<std::vector<std::string>> TableRows(const std::string& doc, const std::string& from,
                                                const std::string& to) {
  const size_t a = doc.find(from);
  const size_t b = doc.find(to, a);
  std::vector<std::vector<std::string>> rows;
  if (a == std::string::npos || b == std::string::npos) return rows;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(doc.substr(a, b - a), '\n')) {
    if (!absl::StartsWith(line, "|")) continue;
    if (header || absl::StartsWith(line, "|---")) {
      header = false;
      continue;
    }
    std::vector<std::string> cells;
    for (absl::string_view c : absl::StrSplit(line.substr(1, line.size() - 2), '|')) {
      cells.emplace_back(absl::StripAsciiWhitespace(c));
    }
    rows.push_back(cells);
  }
  return rows;
}

class RoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("seedance-routes-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    ServiceOptions o;
    o.state_dir = dir_.string();
    absl::StatusOr<std::unique_ptr<Service>> s = Service::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
    RegisterRoutes(router_, *service_, options_);
    RegisterPolicyRoutes(router_, *service_);
    RegisterExperimentRoutes(router_, *service_, options_);
    RegisterExtenderRoutes(router_, *service_, nullptr);
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
    fs::remove_all(dir_);
  }

  fs::path dir_;
  std::unique_ptr<Service> service_;
  HttpOptions options_;
  Authenticator auth_;
  Router router_;
};

TEST_F(RoutesTest, EveryRouteIsInTheDocsTableWithItsLevelAndNoOther) {
  std::set<std::tuple<std::string, std::string, std::string, std::string>> served, documented;
  for (const Route& r : router_.routes()) {
    served.insert({r.method, r.pattern, r.name, std::string(AccessName(r.access))});
  }
  for (const auto& row : TableRows(ApiDoc(), "<!-- routes:", "<!-- /routes -->")) {
    ASSERT_EQ(row.size(), 4u);
    documented.insert({row[0], row[1], row[2], row[3]});
  }
  EXPECT_GE(served.size(), 25u);
  EXPECT_EQ(served, documented);
}

// A federation front serves its own table (docs/federation.md); Create reaches no member.
TEST_F(RoutesTest, AFrontServesTheRoutesOfItsDocsTableAndNoOther) {
  federation::FrontOptions fo;
  fo.config.members.push_back({.name = "a", .url = "http://127.0.0.1:1", .token_file = "",
                               .region = "", .weight = 1, .prices = {}, .labels = {}, .line = 1});
  absl::StatusOr<std::unique_ptr<federation::Front>> front = federation::Front::Create(
      fo, [](auto, auto, auto done) { done(absl::OkStatus()); });
  ASSERT_TRUE(front.ok()) << front.status();
  Router router;
  RegisterCommonRoutes(router, *service_, nullptr);
  RegisterFederationRoutes(router, **front);
  std::set<std::tuple<std::string, std::string, std::string, std::string>> served, documented;
  for (const Route& r : router.routes()) {
    served.insert({r.method, r.pattern, r.name, std::string(AccessName(r.access))});
  }
  const std::string doc = ReadDoc("federation.md");
  for (const auto& row : TableRows(doc, "<!-- front-routes:", "<!-- /front-routes -->")) {
    ASSERT_EQ(row.size(), 4u);
    documented.insert({row[0], row[1], row[2], row[3]});
  }
  EXPECT_GE(served.size(), 10u);
  EXPECT_EQ(served, documented);
}

TEST_F(RoutesTest, FindMatchesMethodAndPathAndTellsAKnownPath) {
  std::vector<std::string> m;
  std::string allow;
  const Route* r = router_.Find("POST", "/v1/nodes/gpu-1/uncordon", &m, &allow);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->name, "uncordon_node");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1], "gpu-1");
  r = router_.Find("GET", "/v1/pods/0af-3/explain", &m, &allow);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->name, "explain_pod");
  EXPECT_EQ(m.back(), "0af-3");
  EXPECT_EQ(router_.Find("GET", "/v1/pods/XYZ", &m, &allow), nullptr);  // not a UID
  EXPECT_EQ(router_.Find("PATCH", "/v1/nodes/gpu-1", &m, &allow), nullptr);
  EXPECT_EQ(allow, "PUT, GET, HEAD, DELETE");
  EXPECT_EQ(router_.Find("GET", "/v1/nodes/BAD NAME", &m, &allow), nullptr);
  EXPECT_EQ(allow, "");
}

TEST(AuthorizeTest, EveryLevelAndCallerAsTheDocsTableSays) {
  const std::vector<TenantToken> tenants = {{"tenant-token-0123456789", "t1", {"ns1"}}};
  const Authenticator admin_only("admin-token-0123456789", {});
  const Authenticator with_tenants("admin-token-0123456789", tenants);
  const Authenticator open;
  const Caller anonymous;
  const Caller tenant = with_tenants.Identify("Bearer tenant-token-0123456789");
  const Caller admin = with_tenants.Identify("Bearer admin-token-0123456789");
  ASSERT_TRUE(tenant.tenant_caller());
  ASSERT_TRUE(admin.admin());
  EXPECT_TRUE(with_tenants.Identify("Bearer wrong").kind == Caller::kAnonymous);
  const std::map<std::string, Access> levels = {{"anyone", Access::kAnyone},
                                                {"reader", Access::kReader},
                                                {"cluster-read", Access::kClusterRead},
                                                {"tenant", Access::kTenant},
                                                {"admin", Access::kAdmin}};
  auto code = [](const std::string& cell) {
    return absl::StartsWith(cell, "yes") ? 0 : std::stoi(cell);
  };
  const auto rows = TableRows(ApiDoc(), "| level | anonymous |", "A wrong token");
  ASSERT_EQ(rows.size(), levels.size());
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 5u);
    SCOPED_TRACE(row[0]);
    ASSERT_TRUE(levels.count(row[0]));
    const Access a = levels.at(row[0]);
    EXPECT_EQ(AccessName(a), row[0]);
    EXPECT_EQ(Authorize(a, anonymous, admin_only, "/p").status, code(row[1]));
    EXPECT_EQ(Authorize(a, anonymous, with_tenants, "/p").status, code(row[2]));
    EXPECT_EQ(Authorize(a, tenant, with_tenants, "/p").status, code(row[3]));
    EXPECT_EQ(Authorize(a, admin, with_tenants, "/p").status, code(row[4]));
    // Without any token everyone is the administrator.
    EXPECT_EQ(Authorize(a, anonymous, open, "/p").status, 0);
  }
}

TEST(ParseTargetTest, DecodesPathAndQuery) {
  std::string path;
  std::vector<std::pair<std::string, std::string>> params;
  ASSERT_TRUE(ParseTarget("/v1/pods?phase=Pending&namespace=a%2Db&x&y=1+2", &path, &params));
  EXPECT_EQ(path, "/v1/pods");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"phase", "Pending"}, {"namespace", "a-b"}, {"x", ""}, {"y", "1 2"}};
  EXPECT_EQ(params, want);
  ASSERT_TRUE(ParseTarget("/a%20b+c", &path, &params));
  EXPECT_EQ(path, "/a b+c");  // '+' is a space only in the query
  EXPECT_FALSE(ParseTarget("/a%2", &path, &params));
  EXPECT_FALSE(ParseTarget("/a%zz", &path, &params));
  EXPECT_FALSE(ParseTarget("/a?b=%", &path, &params));
  EXPECT_FALSE(ParseTarget("http://host/a", &path, &params));
  EXPECT_FALSE(ParseTarget("", &path, &params));
}

}  // namespace
}  // namespace seedance::server
