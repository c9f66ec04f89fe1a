// The Prometheus collector against an in-process fake of the HTTP API (no Prometheus needed):
// URL validation, bounded failures, and the mapping of exporter series onto a profile.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace {

using nlohmann::json;

// A fake Prometheus answering /api/v1/query with a fixed vector per query name.
class FakePrometheus {
 public:
  FakePrometheus() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    server_.Get("/api/v1/query", [](const httplib::Request& req, httplib::Response& res) {
      const std::string q = req.get_param_value("query");
      json result = json::array();
      auto add = [&](json metric, double v) {
        result.push_back({{"metric", metric}, {"value", {1700000000.0, std::to_string(v)}}});
      };
      const json gpu0 = {{"gpu", "0"},
                         {"Hostname", "n1"},
                         {"modelName", "NVIDIA L4"},
                         {"namespace", "ml"},
                         {"pod", "p1"}};
      const json gpu1 = {{"gpu", "1"}, {"Hostname", "n1"}, {"modelName", "NVIDIA L4"}};
      if (q == "DCGM_FI_DEV_GPU_UTIL") {
        add(gpu0, 55);
        add(gpu1, 3);
      } else if (q == "DCGM_FI_DEV_FB_USED") {
        add(gpu0, 1000);
        add(gpu1, 0);
      } else if (q == "DCGM_FI_DEV_FB_FREE") {
        add(gpu0, 21000);
        add(gpu1, 22000);
      } else if (q == "DCGM_FI_PROF_PCIE_RX_BYTES") {
        add(gpu0, 2 * 1048576.0);
      } else if (q.rfind("node_cpu_seconds_total", 0) == 0) {
        add({{"cpu", "0"}, {"mode", "idle"}, {"node", "n1"}}, 10);
        add({{"cpu", "1"}, {"mode", "idle"}, {"node", "n1"}}, 10);
      } else if (q.find("rate(node_cpu_seconds_total") != std::string::npos) {
        add({{"node", "n1"}}, 0.25);
      } else if (q == "kube_pod_info") {
        add({{"namespace", "ml"}, {"pod", "p1"}, {"node", "n1"}}, 1);
        add({{"namespace", "ml"}, {"pod", "p2"}, {"node", ""}}, 1);
      } else if (q == "kube_pod_container_resource_requests") {
        add({{"namespace", "ml"}, {"pod", "p1"}, {"resource", "cpu"}}, 1.5);
        add({{"namespace", "ml"}, {"pod", "p1"}, {"resource", "nvidia_com_gpu"}}, 1);
        add({{"namespace", "ml"}, {"pod", "p2"}, {"resource", "nvidia_com_gpu"}}, 2);
      } else if (q.rfind("kube_pod_status_phase", 0) == 0) {
        add({{"namespace", "ml"}, {"pod", "p2"}, {"phase", "Pending"}}, 1);
      }
      res.set_content(
          json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}
              .dump(),
          "application/json");
    });
    // Range queries: GPU 0 of n1 at 10 + (t - start) percent, every step; nothing else.
    server_.Get("/api/v1/query_range", [](const httplib::Request& req, httplib::Response& res) {
      const std::string q = req.get_param_value("query");
      const double start = std::stod(req.get_param_value("start"));
      const double end = std::stod(req.get_param_value("end"));
      const double step = std::stod(req.get_param_value("step"));
      json result = json::array();
      if (q == "DCGM_FI_DEV_GPU_UTIL") {
        json values = json::array();
        for (double t = start; t <= end + 1e-9; t += step) {
          values.push_back({t, std::to_string(10 + (t - start))});
        }
        result.push_back({{"metric", {{"gpu", "0"}, {"Hostname", "n1"}}}, {"values", values}});
      }
      res.set_content(
          json{{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}}
              .dump(),
          "application/json");
    });
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakePrometheus() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
};

TEST(PrometheusCollectorTest, MapsExporterSeriesOntoTheProfile) {
  FakePrometheus fake;
  PrometheusOptions o;
  o.url = fake.url();
  auto c = NewPrometheusCollector(o);
  ASSERT_TRUE(c.ok()) << c.status();
  Profile p;
  ASSERT_TRUE((*c)->Describe(&p).ok());
  ASSERT_TRUE((*c)->Sample(1700000000, &p).ok());
  p.timestamps_s.push_back(0);
  ASSERT_EQ(p.nodes.size(), 1u);
  const NodeProfile& n = p.nodes[0];
  EXPECT_EQ(n.name, "n1");
  EXPECT_EQ(n.cpus, 2);
  ASSERT_EQ(n.gpus.size(), 2u);
  EXPECT_EQ(n.gpus[0].model, "NVIDIA L4");
  EXPECT_EQ(n.gpus[0].memory_mib, 22000);
  EXPECT_EQ(n.gpus[0].util_pct, std::vector<double>{55});
  EXPECT_EQ(n.gpus[0].pcie_rx_mib_s, std::vector<double>{2});
  EXPECT_TRUE(IsMissing(n.gpus[1].pcie_rx_mib_s[0]));
  EXPECT_DOUBLE_EQ(n.cpu_util_pct[0], 75);
  ASSERT_EQ(n.pods.size(), 1u);
  EXPECT_EQ(n.pods[0].name, "p1");
  EXPECT_EQ(n.pods[0].cpu_milli, 1500);
  EXPECT_EQ(n.pods[0].num_gpus, 1);
  EXPECT_EQ(n.pods[0].gpu_ids, std::vector<int>{0});
  ASSERT_EQ(p.pending_pods.size(), 1u);
  EXPECT_EQ(p.pending_pods[0].name, "p2");
  EXPECT_EQ(p.pending_pods[0].num_gpus, 2);
}

TEST(PrometheusCollectorTest, HistoryRunReadsTheLastDurationAtOnce) {
  FakePrometheus fake;
  PrometheusOptions o;
  o.url = fake.url();
  auto c = NewPrometheusCollector(o);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::move(*c));
  ProfilerOptions po;
  po.duration_s = 4;
  po.interval_s = 1;
  po.history = true;
  Profiler profiler(std::move(cs), po);
  auto p = profiler.Run();
  ASSERT_TRUE(p.ok()) << p.status();
  // The values come from the server's history (range queries), one per step.
  EXPECT_EQ(p->timestamps_s, (std::vector<double>{0, 1, 2, 3}));
  ASSERT_EQ(p->nodes.size(), 1u);
  EXPECT_EQ(p->nodes[0].gpus[0].util_pct, (std::vector<double>{10, 11, 12, 13}));
  EXPECT_TRUE(IsMissing(p->nodes[0].gpus[1].util_pct[0]));
  EXPECT_EQ(p->source, "prometheus " + fake.url());
  auto back = ParseProfileJson(ToJson(*p), "p.json");
  EXPECT_TRUE(back.ok()) << back.status();
}

TEST(PrometheusCollectorTest, RejectsMalformedAndHttpsUrls) {
  for (const char* url : {"prom:9090", "https://prom:9090", "http://", "http://h:99999"}) {
    PrometheusOptions o;
    o.url = url;
    auto c = NewPrometheusCollector(o);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << url;
  }
}

TEST(PrometheusCollectorTest, AServerThatNeverAnswersFailsWithinTheTimeout) {
  // A listening socket nobody accepts from: the connection succeeds, no response ever comes.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  PrometheusOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  o.timeout_s = 0.5;
  auto c = NewPrometheusCollector(o);
  ASSERT_TRUE(c.ok());
  Profile p;
  const absl::Status s = (*c)->Describe(&p);
  ::close(fd);
  // The total deadline ends the request (exit 1 in the CLI).
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(s.message()).find("timeout 0.5 s"), std::string::npos) << s;
}

}  // namespace
}  // namespace seedance::telemetry
