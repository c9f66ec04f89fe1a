#include "seedance/daemon/daemon.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace seedance::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/seedance-daemon-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  DaemonOptions Local() {
    DaemonOptions o;
    o.listen = "127.0.0.1:0";
    o.state = dir_ + "/state";
    return o;
  }
  std::string dir_;
};

TEST_F(DaemonTest, StartsServesAndStops) {
  DaemonOptions o = Local();
  o.backend.cluster = "eu-1";
  o.nodes = Write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,8,A100\n");
  absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->url(), "");  // nothing started yet
  ASSERT_TRUE((*d)->Start().ok());
  EXPECT_THAT((*d)->url(), StartsWith("http://127.0.0.1:"));
  EXPECT_NE((*d)->url(), "http://127.0.0.1:0");
  EXPECT_THAT((*d)->Describe(), HasSubstr("state " + dir_ + "/state, revision "));
  EXPECT_THAT((*d)->Describe(), HasSubstr("no auth"));
  EXPECT_GT((*d)->revision(), 0);  // the preloaded node was committed

  httplib::Client client((*d)->url());
  httplib::Result r = client.Get("/v1/nodes");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("\"n1\""));
  // The cluster's identity and capacity, as a federation front reads them.
  r = client.Get("/v1/cluster");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr(R"("cluster":"eu-1","backend":"local","nodes":1)"));
  EXPECT_THAT(r->body, HasSubstr(R"("gpu_models":[{"gpu_model":"A100","device_type":"gpu",)"
                                 R"("device_memory_mib":40960,"nodes":1)"));

  EXPECT_EQ((*d)->Start().code(), absl::StatusCode::kFailedPrecondition);  // once
  (*d)->Stop();
  (*d)->Stop();  // idempotent
  httplib::Client after((*d)->url());
  after.set_connection_timeout(2);
  EXPECT_FALSE(after.Get("/healthz"));  // the port is closed
}

TEST_F(DaemonTest, RefusedOptionsNameTheFlagAndLeaveNothingBehind) {
  struct Case {
    const char* what;
    void (*set)(DaemonOptions&, const std::string& dir);
    const char* message;
  };
  const Case cases[] = {
      {"state and store", [](DaemonOptions& o, const std::string&) { o.store = "sqlite://x"; },
       "give --state DIR or --store URL, not both"},
      {"neither", [](DaemonOptions& o, const std::string&) { o.state.clear(); },
       "--state DIR or --store URL is required"},
      {"store scheme",
       [](DaemonOptions& o, const std::string&) {
         o.state.clear();
         o.store = "redis://h";
       },
       "--store: expected sqlite://DIR or etcd://"},
      {"listen", [](DaemonOptions& o, const std::string&) { o.listen = "127.0.0.1:70000"; },
       "--listen: expected HOST:PORT with PORT in 0..65535"},
      {"slurm url without the backend",
       [](DaemonOptions& o, const std::string&) {
         o.backend.slurm.rest.url = "http://127.0.0.1:1";
       },
       "--slurm-url: only with --backend slurm"},
      {"slurm without a url",
       [](DaemonOptions& o, const std::string&) { o.backend.kind = server::BackendKind::kSlurm; },
       "--backend slurm: --slurm-url http://HOST:PORT of slurmrestd is required"},
      {"slurm with kubernetes",
       [](DaemonOptions& o, const std::string&) {
         o.backend.kind = server::BackendKind::kSlurm;
         o.backend.kube = k8s::ApiServerOptions{};
       },
       "--backend slurm: Seedance binds to Slurm"},
      {"kubernetes without an API server",
       [](DaemonOptions& o, const std::string&) {
         o.backend.kind = server::BackendKind::kKubernetes;
       },
       "--backend kubernetes: --kube-api URL or --kube-in-cluster is required"},
      {"an API server without the kubernetes backend",
       [](DaemonOptions& o, const std::string&) { o.backend.kube = k8s::ApiServerOptions{}; },
       "--kube-api / --kube-in-cluster: only with --backend kubernetes"},
      {"cluster name",
       [](DaemonOptions& o, const std::string&) { o.backend.cluster = "Not_A_Label"; },
       "--cluster: a cluster name is a DNS label"},
      {"short token",
       [](DaemonOptions& o, const std::string& dir) {
         o.token_file = dir + "/token";
         std::ofstream(o.token_file) << "short\n";
       },
       "--token-file "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    DaemonOptions o = Local();
    c.set(o, dir_);
    absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(o);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr(c.message));
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/state"));
  }
}

TEST_F(DaemonTest, ABadInputFileIsNamedBeforeAnythingStarts) {
  DaemonOptions o = Local();
  o.nodes = Write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,-5,262144,8,A100\n");
  absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(o);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr(o.nodes + ":2: field 'cpu_milli'"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/state"));
}

TEST_F(DaemonTest, InputFilesListsEveryFileFlag) {
  DaemonOptions o;
  o.nodes = "n";
  o.policy = "p";
  o.tls_key = "k";
  o.federation = "f";
  int named = 0;
  for (const base::NamedPath& p : InputFiles(o)) {
    if (!p.path.empty()) ++named;
  }
  EXPECT_EQ(named, 4);
  EXPECT_EQ(InputFiles(o).size(), 10u);
}

}  // namespace
}  // namespace seedance::daemon
