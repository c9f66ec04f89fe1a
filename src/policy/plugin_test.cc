#include "seedance/policy/plugin.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/policy/manager.h"

namespace seedance::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

TEST(LoadedPluginTest, LoadsTheSamplePluginAndCallsIt) {
  absl::StatusOr<std::shared_ptr<LoadedPlugin>> p = LoadedPlugin::Load(SAMPLE_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->name(), "sample");
  EXPECT_EQ((*p)->version(), "1.0.0");
  EXPECT_EQ((*p)->path(), SAMPLE_PLUGIN);
  absl::StatusOr<std::string> reply = (*p)->Call("my-rule", R"({"n":1})");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(*reply, StartsWith(R"(sample: my-rule {"n":1} (call )"));
  absl::StatusOr<std::string> failed = (*p)->Call("r2", R"("fail")");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(failed.status().message(), "plugin 'sample' failed (1): asked to fail by rule r2");
}

TEST(LoadedPluginTest, ALongReplyIsTruncated) {
  absl::StatusOr<std::shared_ptr<LoadedPlugin>> p = LoadedPlugin::Load(SAMPLE_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string big(3 * kPluginReplyBytes, 'x');
  absl::StatusOr<std::string> reply = (*p)->Call("r", absl::StrCat("\"", big, "\""));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->size(), kPluginReplyBytes - 1);  // snprintf keeps room for the NUL
}

TEST(LoadedPluginTest, ErrorsNameTheFile) {
  struct Case {
    std::string path;
    std::string error;
    absl::StatusCode code;
  };
  const std::string missing = "/nonexistent/dir/plugin.so";
  const Case cases[] = {
      {missing, absl::StrCat("plugin '", missing, "': no such file"), absl::StatusCode::kNotFound},
      {"libsample.so", "plugin 'libsample.so': give a path", absl::StatusCode::kInvalidArgument},
      {"/tmp", "plugin '/tmp': not a regular file", absl::StatusCode::kInvalidArgument},
      {"/etc/hostname",
       "plugin '/etc/hostname': cannot load: ", absl::StatusCode::kInvalidArgument},
      {NO_ENTRY_PLUGIN,
       absl::StrCat("plugin '", NO_ENTRY_PLUGIN, "': no symbol seedance_plugin_entry"),
       absl::StatusCode::kInvalidArgument},
      {BAD_VERSION_PLUGIN,
       absl::StrCat("plugin '", BAD_VERSION_PLUGIN, "': does not speak plugin ABI version 1"),
       absl::StatusCode::kInvalidArgument},
      {BAD_TABLE_PLUGIN,
       absl::StrCat("plugin '", BAD_TABLE_PLUGIN,
                    "': built for plugin ABI version 2, this Seedance speaks version 1"),
       absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::shared_ptr<LoadedPlugin>> p = LoadedPlugin::Load(c.path);
    ASSERT_FALSE(p.ok()) << c.path;
    EXPECT_EQ(p.status().code(), c.code) << p.status();
    EXPECT_THAT(std::string(p.status().message()), StartsWith(c.error));
  }
}

class PolicyPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/policy_plugin_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = (fs::path(dir_) / "policy.yaml").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Write(const std::string& text) {
    std::ofstream out(path_, std::ios::trunc);
    out << text;
  }
  static std::string PolicyWith(const std::string& plugin_path) {
    return absl::StrCat(
        "profiles: [{name: a, policy: cas}]\n"
        "plugins:\n  - name: notify\n    path: ",
        plugin_path,
        "\nrules:\n  - name: page\n    condition: pending_pods > 100\n"
        "    action: {type: plugin, plugin: notify, argument: {team: infra, n: 2}}\n");
  }
  std::string dir_, path_;
};

TEST_F(PolicyPluginTest, ARuleCallsTheLoadedPlugin) {
  Write(PolicyWith(SAMPLE_PLUGIN));
  ManagerOptions o;
  o.watch = false;
  absl::StatusOr<std::unique_ptr<PolicyManager>> m =
      PolicyManager::Start(path_, ServerMetricNames(), o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->Current()->loaded_plugins.count("notify"), 1u);
  EXPECT_EQ((*m)->Current()->loaded_plugins.at("notify")->name(), "sample");
  std::vector<Action> a = (*m)->Evaluate({{"pending_pods", 500}}, 0);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Action::kPlugin);
  EXPECT_TRUE(a[0].ok) << a[0].result;
  EXPECT_THAT(a[0].result, StartsWith(R"(sample: page {"n":2,"team":"infra"} (call )"));
}

TEST_F(PolicyPluginTest, RelativePathsResolveAgainstThePolicyDirectory) {
  fs::copy_file(SAMPLE_PLUGIN, fs::path(dir_) / "sample.so");
  Write(PolicyWith("./sample.so"));
  ManagerOptions o;
  o.watch = false;
  absl::StatusOr<std::unique_ptr<PolicyManager>> m =
      PolicyManager::Start(path_, ServerMetricNames(), o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->Current()->loaded_plugins.at("notify")->path(),
            (fs::path(dir_) / "./sample.so").string());
}

TEST_F(PolicyPluginTest, ABadPluginIsRefusedWithThePolicyLocationAndTheFile) {
  Write(PolicyWith(BAD_VERSION_PLUGIN));
  absl::StatusOr<std::unique_ptr<PolicyManager>> m =
      PolicyManager::Start(path_, ServerMetricNames());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            absl::StrCat(path_, ":4:11: $.plugins[0].path: plugin '", BAD_VERSION_PLUGIN,
                         "': does not speak plugin ABI version 1"));
  // On reload, the previous policy stays.
  Write(PolicyWith(SAMPLE_PLUGIN));
  ManagerOptions o;
  o.watch = false;
  m = PolicyManager::Start(path_, ServerMetricNames(), o);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::Status st = (*m)->Reload(PolicyWith("/nonexistent/x.so"), "api");
  EXPECT_THAT(std::string(st.message()), HasSubstr("plugin '/nonexistent/x.so': no such file"));
  EXPECT_EQ((*m)->state(), PolicyState::kFailed);
  EXPECT_EQ((*m)->Current()->loaded_plugins.count("notify"), 1u);
}

TEST_F(PolicyPluginTest, PluginsCanBeRefused) {
  Write(PolicyWith(SAMPLE_PLUGIN));
  ManagerOptions o;
  o.watch = false;
  o.allow_plugins = false;
  absl::StatusOr<std::unique_ptr<PolicyManager>> m =
      PolicyManager::Start(path_, ServerMetricNames(), o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), path_ + ":4:11: $.plugins[0].path: plugins are not allowed here");
}

}  // namespace
}  // namespace seedance::policy
