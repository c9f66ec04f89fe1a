// End to end: a real Prometheus server (Debian's /usr/bin/prometheus) scrapes a test exporter that
// serves dcgm-exporter and kube-state-metrics series for a 16-node GPU cluster with known idle
// nodes; `seedance profile --prometheus` then `seedance analyze` must name exactly those idle nodes
// and free nodes worth a hand-computed saving. The test starts and always stops Prometheus.
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prometheus_names.h"
#include "seedance/trace/csv_reader.h"

extern char** environ;

namespace seedance::cost {
namespace {

namespace names = seedance::telemetry::names;
constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr int kNodes = 16;
constexpr int kGpus = 8;
// node-gpu-04 and node-gpu-11 are idle (GPUs at 2%, no pods). node-gpu-07 is light: one 1-GPU
// pod at 20% (not idle: 20% >= 15%). Every other node runs three 2-GPU pods on GPUs 0-5 at 70%
// and has GPUs 6 and 7 free.
bool Idle(int n) { return n == 4 || n == 11; }
bool Light(int n) { return n == 7; }
std::string Node(int n) {
  char b[32];
  std::snprintf(b, sizeof b, "node-gpu-%02d", n);
  return b;
}

// Serves the cluster's metrics in the Prometheus text format.
std::string Metrics() {
  std::ostringstream m;
  const char* model = "NVIDIA A100-SXM4-80GB";
  for (int n = 1; n <= kNodes; ++n) {
    for (int g = 0; g < kGpus; ++g) {
      double util = 0;
      std::string pod;
      if (Idle(n)) {
        util = 2;
      } else if (Light(n)) {
        util = g == 0 ? 20 : 0;
        if (g == 0) pod = "llama-7b-infer-a";
      } else if (g < 6) {
        util = 70;
        pod = "train-" + Node(n) + "-" + std::to_string(g / 2);
      }
      std::string labels = "gpu=\"" + std::to_string(g) + "\",UUID=\"GPU-" + std::to_string(n) +
                           "-" + std::to_string(g) + "\",device=\"nvidia" + std::to_string(g) +
                           "\",modelName=\"" + model + "\",Hostname=\"" + Node(n) + "\"";
      if (!pod.empty()) labels += ",namespace=\"ml\",pod=\"" + pod + "\",container=\"main\"";
      m << names::kGpuUtil << "{" << labels << "} " << util << "\n";
      m << names::kFbUsed << "{" << labels << "} " << (util > 0 ? 40000 : 0) << "\n";
      m << names::kFbFree << "{" << labels << "} " << (util > 0 ? 41920 : 81920) << "\n";
      m << names::kPowerUsage << "{" << labels << "} " << 60 + 3 * util << "\n";
    }
  }
  auto pod = [&](const std::string& name, const std::string& node, int gpus) {
    m << names::kPodInfo << "{namespace=\"ml\",pod=\"" << name << "\",node=\"" << node << "\"} 1\n";
    const std::string l =
        "namespace=\"ml\",pod=\"" + name + "\",container=\"main\",node=\"" + node + "\"";
    m << names::kPodRequests << "{" << l << ",resource=\"cpu\",unit=\"core\"} 4\n";
    m << names::kPodRequests << "{" << l << ",resource=\"memory\",unit=\"byte\"} 34359738368\n";
    m << names::kPodRequests << "{" << l << ",resource=\"" << names::kGpuResource
      << "\",unit=\"integer\"} " << gpus << "\n";
    m << names::kPodPhase << "{namespace=\"ml\",pod=\"" << name << "\",phase=\"Running\"} 1\n";
    m << names::kPodPhase << "{namespace=\"ml\",pod=\"" << name << "\",phase=\"Pending\"} 0\n";
  };
  for (int n = 1; n <= kNodes; ++n) {
    if (Light(n)) pod("llama-7b-infer-a", Node(n), 1);
    if (Idle(n) || Light(n)) continue;
    for (int j = 0; j < 3; ++j) pod("train-" + Node(n) + "-" + std::to_string(j), Node(n), 2);
  }
  return m.str();
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

class PrometheusIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPrometheus, X_OK) != 0) {
      if (seedance::trace::DataRequired()) FAIL() << kPrometheus << " is not installed";
      GTEST_SKIP() << kPrometheus << " is not installed (apt-get install prometheus)";
    }
    dir_ = std::filesystem::temp_directory_path() / ("seedance_prom_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "data");
    exporter_port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(exporter_port_, 0);
    server_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(Metrics(), "text/plain; version=0.0.4");
    });
    server_thread_ = std::thread([this] { server_.listen_after_bind(); });
    prom_port_ = FreePort();
    ASSERT_GT(prom_port_, 0);
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: exporter\n    honor_labels: true\n"
        << "    static_configs:\n      - targets: ['127.0.0.1:" << exporter_port_ << "']\n";
    const std::string config = "--config.file=" + (dir_ / "prometheus.yml").string();
    const std::string storage = "--storage.tsdb.path=" + (dir_ / "data").string();
    const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_);
    const std::string log = (dir_ / "prometheus.log").string();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<std::string> args = {kPrometheus, config, storage, listen, "--log.level=warn"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&prom_pid_, kPrometheus, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ASSERT_EQ(rc, 0) << "cannot start " << kPrometheus;
  }

  void TearDown() override {
    if (prom_pid_ > 0) {
      ::kill(prom_pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 100 && ::waitpid(prom_pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (::waitpid(prom_pid_, &status, WNOHANG) == 0) {
        ::kill(prom_pid_, SIGKILL);
        ::waitpid(prom_pid_, &status, 0);
      }
    }
    server_.stop();
    if (server_thread_.joinable()) server_thread_.join();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  // Polls until Prometheus holds at least `scrapes` samples of every GPU series (bounded wait).
  bool WaitForScrapes(int scrapes, double max_wait_s) {
    httplib::Client c("127.0.0.1", prom_port_);
    c.set_connection_timeout(1);
    c.set_read_timeout(2);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(max_wait_s);
    const std::string q = std::string("min(count_over_time(") + names::kGpuUtil + "[1m]))";
    while (std::chrono::steady_clock::now() < deadline) {
      auto res = c.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
      if (res && res->status == 200) {
        auto doc = nlohmann::json::parse(res->body, nullptr, false);
        const auto& r = doc["data"]["result"];
        if (r.is_array() && r.size() == 1 &&
            std::atof(r[0]["value"][1].get<std::string>().c_str()) >= scrapes) {
          return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(prom_port_); }

  std::filesystem::path dir_;
  httplib::Server server_;
  std::thread server_thread_;
  int exporter_port_ = -1;
  int prom_port_ = -1;
  pid_t prom_pid_ = -1;
};

TEST_F(PrometheusIntegrationTest, ProfileThenAnalyzeNamesTheIdleNodesAndTheSaving) {
  ASSERT_TRUE(WaitForScrapes(6, 40))
      << "Prometheus did not scrape the exporter in 40 s; log in " << (dir_ / "prometheus.log");
  const std::string profile = (dir_ / "p.json").string();
  const std::string report = (dir_ / "r.json").string();
  const std::string bin = SEEDANCE_BINARY;
  ASSERT_EQ(std::system((bin + " profile -q --prometheus " + Url() +
                         " --duration 5 --interval 1 --output " + profile)
                            .c_str()),
            0);
  ASSERT_EQ(std::system((bin + " analyze --input " + profile +
                         " --report cost-savings --idle-window 5 --format json --output " + report)
                            .c_str()),
            0);
  std::ifstream in(report);
  const nlohmann::json r = nlohmann::json::parse(in);

  std::set<std::string> idle;
  for (const auto& i : r["idle_nodes"]) idle.insert(i["node"].get<std::string>());
  EXPECT_EQ(idle, (std::set<std::string>{"node-gpu-04", "node-gpu-11"}));
  EXPECT_EQ(r["nodes"].get<int>(), kNodes);
  EXPECT_EQ(r["gpus"].get<int>(), kNodes * kGpus);

  // The plan frees the two idle nodes and the light node-gpu-07, whose one pod moves to a free
  // GPU of a busy node (GPU 6 or 7; 0% there + 20% moved <= the 80% cap).
  std::set<std::string> freed;
  for (const auto& s : r["plan"]) freed.insert(s["frees"].get<std::string>());
  EXPECT_EQ(freed, (std::set<std::string>{"node-gpu-04", "node-gpu-07", "node-gpu-11"}));
  for (const auto& s : r["plan"]) {
    if (s["frees"] == "node-gpu-07") {
      ASSERT_EQ(s["moves"].size(), 1u);
      EXPECT_EQ(s["moves"][0]["pod"], "llama-7b-infer-a");
      EXPECT_GE(s["moves"][0]["gpu_ids"][0].get<int>(), 6);
    }
  }
  // By hand: built-in price of an A100-80GB is $3.93 per GPU-hour (GCP us-central1), 730 h a
  // month. One 8-GPU node: 8 * 3.93 * 730 = $22,951.20/month. Three nodes freed:
  // 3 * 22,951.20 = $68,853.60/month. Spend now: 16 nodes * 22,951.20 = $367,219.20/month.
  EXPECT_NEAR(r["saving_usd_per_month"].get<double>(), 68853.60, 0.01);
  EXPECT_NEAR(r["spend_usd_per_month"].get<double>(), 367219.20, 0.01);
  EXPECT_NEAR(r["spend_after_usd_per_month"].get<double>(), 367219.20 - 68853.60, 0.01);
}

}  // namespace
}  // namespace seedance::cost
