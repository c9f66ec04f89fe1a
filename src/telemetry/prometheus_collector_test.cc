// The Prometheus collector against an in-process fake of the HTTP API (no Prometheus needed):
// URL validation, bounded failures, and the mapping of exporter series onto a profile.
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "seedance/base/text.h"
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

// A raw TCP server on 127.0.0.1 for replies httplib::Server will not send: it accepts
// connections, reads the request head and hands the socket to `behave`, until destroyed.
class RawServer {
 public:
  explicit RawServer(std::function<void(int fd, const std::atomic<bool>& stop)> behave)
      : behave_(std::move(behave)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);  // connections queue from here on: ready
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~RawServer() {
    stop_.store(true);
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void Loop() {
    while (!stop_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      // The request head (ends with an empty line).
      std::string head;
      char buf[1024];
      while (head.find("\r\n\r\n") == std::string::npos && !stop_.load()) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 20) <= 0) continue;
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      behave_(c, stop_);
      ::close(c);
    }
  }
  std::function<void(int, const std::atomic<bool>&)> behave_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  int fd_ = -1;
  int port_ = -1;
};

// Writes all of `s`; false once the client has gone.
bool Send(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    s.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Waits (without a fixed sleep) up to `seconds` for the stop flag; true when it was set.
bool WaitForStop(const std::atomic<bool>& stop, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!stop.load() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return stop.load();
}

absl::Status DescribeAgainst(const std::string& url, double timeout_s = 1,
                             size_t max_bytes = size_t{256} << 20) {
  PrometheusOptions o;
  o.url = url;
  o.timeout_s = timeout_s;
  o.max_response_bytes = max_bytes;
  auto c = NewPrometheusCollector(o);
  if (!c.ok()) return c.status();
  Profile p;
  return (*c)->Describe(&p);
}

TEST(PrometheusHostileServerTest, ADripFeedingServerFailsAtTheTotalDeadline) {
  // One byte of the status line every 0.3 s, forever: every read succeeds, so only a total
  // deadline can end the request.
  RawServer drip_head([](int fd, const std::atomic<bool>& stop) {
    const std::string line = "HTTP/1.1 200 OK\r\nX-Padding: ";
    for (size_t i = 0; !stop.load(); ++i) {
      if (!Send(fd, std::string(1, i < line.size() ? line[i] : 'a'))) return;
      if (WaitForStop(stop, 0.3)) return;
    }
  });
  const absl::Status head = DescribeAgainst(drip_head.url());
  EXPECT_EQ(head.code(), absl::StatusCode::kDeadlineExceeded) << head;
  EXPECT_NE(std::string(head.message()).find("/api/v1/query"), std::string::npos) << head;
  // Headers at once, then the body one byte every 0.3 s.
  RawServer drip_body([](int fd, const std::atomic<bool>& stop) {
    if (!Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")) return;
    while (!stop.load()) {
      if (!Send(fd, " ")) return;
      if (WaitForStop(stop, 0.3)) return;
    }
  });
  const absl::Status body = DescribeAgainst(drip_body.url());
  EXPECT_EQ(body.code(), absl::StatusCode::kDeadlineExceeded) << body;
}

TEST(PrometheusHostileServerTest, AHugeContentLengthOrEndlessChunksFailCleanly) {
  // Content-Length far beyond any memory, and then silence: no allocation of that size, the
  // deadline ends it.
  RawServer liar([](int fd, const std::atomic<bool>& stop) {
    if (!Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n{\"status\"")) return;
    WaitForStop(stop, 60);
  });
  const absl::Status lie = DescribeAgainst(liar.url());
  EXPECT_EQ(lie.code(), absl::StatusCode::kDeadlineExceeded) << lie;
  // A big declared body that does arrive is cut off at the size cap.
  RawServer big([](int fd, const std::atomic<bool>& stop) {
    if (!Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n")) return;
    const std::string chunk(64 << 10, ' ');
    while (!stop.load() && Send(fd, chunk)) {
    }
  });
  const absl::Status b = DescribeAgainst(big.url(), 30, 1 << 20);
  EXPECT_EQ(b.code(), absl::StatusCode::kResourceExhausted) << b;
  // Endless chunked encoding: the same cap.
  RawServer chunks([](int fd, const std::atomic<bool>& stop) {
    if (!Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) return;
    const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
    while (!stop.load() && Send(fd, chunk)) {
    }
  });
  const absl::Status c = DescribeAgainst(chunks.url(), 30, 1 << 20);
  EXPECT_EQ(c.code(), absl::StatusCode::kResourceExhausted) << c;
  EXPECT_NE(std::string(c.message()).find("larger than 1048576 bytes"), std::string::npos) << c;
}

// A Prometheus that answers every instant query with `body` (HTTP `status`).
class FixedReply {
 public:
  FixedReply(std::string body, int status = 200) {
    port_ = server_.bind_to_any_port("127.0.0.1");
    server_.Get("/api/v1/query",
                [body, status](const httplib::Request& req, httplib::Response& res) {
                  if (req.has_header("Authorization"))
                    last_auth() = req.get_header_value("Authorization");
                  res.status = status;
                  res.set_content(body, "application/json");
                });
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~FixedReply() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& userinfo = "") const {
    return "http://" + userinfo + "127.0.0.1:" + std::to_string(port_);
  }
  static std::string& last_auth() {
    static std::string a;
    return a;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
};

TEST(PrometheusHostileServerTest, WrongTypesAnywhereAreDataLossNamingTheJsonPath) {
  struct Case {
    const char* body;
    const char* path;  // expected in the message
  };
  const Case cases[] = {
      {R"({"status": 5})", "$.status: must be a string (got 5)"},
      {R"([1, 2])", "$: must be an object"},
      {R"(not json)", "$: not JSON"},
      {R"({"status": "error", "error": "bad query"})", "$.status: expected \"success\""},
      {R"({"status": "success"})", "$.data: missing"},
      {R"({"status": "success", "data": []})", "$.data: must be an object (got an array)"},
      {R"({"status": "success", "data": {"resultType": 7, "result": []}})",
       "$.data.resultType: must be a string"},
      {R"({"status": "success", "data": {"resultType": "matrix", "result": []}})",
       "$.data.resultType: expected \"vector\""},
      {R"({"status": "success", "data": {"resultType": "vector", "result": {}}})",
       "$.data.result: must be an array"},
      {R"({"status": "success", "data": {"resultType": "vector", "result": [5]}})",
       "$.data.result[0]: must be an object"},
      {R"({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {"gpu": 0},
          "value": [1, "2"]}]}})",
       "$.data.result[0].metric.gpu: must be a string"},
      {R"({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}})",
       "$.data.result[0].value: missing"},
      {R"({"status": "success", "data": {"resultType": "vector",
          "result": [{"value": [1, 2]}]}})",
       "$.data.result[0].value[1]: expected a string holding a number"},
      {R"({"status": "success", "data": {"resultType": "vector",
          "result": [{"value": ["x", "2"]}]}})",
       "$.data.result[0].value[0]: expected a number"},
      {R"({"status": "success", "data": {"resultType": "vector",
          "result": [{"value": [1, "abc"]}]}})",
       "$.data.result[0].value[1]: expected a number"},
      {R"({"status": "success", "data": {"resultType": "vector", "result": [{"value": [1]}]}})",
       "$.data.result[0].value: expected [time"},
  };
  for (const Case& c : cases) {
    FixedReply server(c.body);
    const absl::Status s = DescribeAgainst(server.url());
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << c.body << " -> " << s;
    EXPECT_NE(std::string(s.message()).find(c.path), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find("/api/v1/query"), std::string::npos) << s;
  }
  // Deep nesting is refused before it is parsed.
  FixedReply deep(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(DescribeAgainst(deep.url()).code(), absl::StatusCode::kDataLoss);
  // An HTTP error status is Unavailable and carries the server's error text.
  FixedReply err(R"({"status": "error", "error": "overloaded"})", 503);
  const absl::Status e = DescribeAgainst(err.url());
  EXPECT_EQ(e.code(), absl::StatusCode::kUnavailable) << e;
  EXPECT_NE(std::string(e.message()).find("HTTP 503: overloaded"), std::string::npos) << e;
}

TEST(PrometheusHostileServerTest, CredentialsAreSentButNeverShown) {
  FixedReply server(R"({"status": 5})");
  const absl::Status s = DescribeAgainst(server.url("alice:s3cret@"));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(std::string(s.message()).find("s3cret"), std::string::npos) << s;
  EXPECT_EQ(std::string(s.message()).find("alice"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("<redacted>@127.0.0.1"), std::string::npos) << s;
  EXPECT_EQ(FixedReply::last_auth(), "Basic YWxpY2U6czNjcmV0");  // base64("alice:s3cret")
  // Refused URLs are redacted too.
  PrometheusOptions o;
  o.url = "http://bob:hunter2@h:99999";
  const absl::Status bad = NewPrometheusCollector(o).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(bad.message()).find("hunter2"), std::string::npos) << bad;
  EXPECT_EQ(seedance::base::RedactUrl("http://u:p@h:1/x"), "http://<redacted>@h:1/x");
  EXPECT_EQ(seedance::base::RedactUrl("http://h:1/x"), "http://h:1/x");
}

TEST(PrometheusHostileServerTest, MeaninglessValuesBecomeMissingNotGarbage) {
  // A utilisation of 1e308 and -50, a memory size of NaN: the profile records them as missing
  // and stays readable.
  FixedReply server(R"({"status": "success", "data": {"resultType": "vector", "result": [
      {"metric": {"gpu": "0", "Hostname": "n1", "modelName": "NVIDIA L4"}, "value": [1, "1e308"]},
      {"metric": {"gpu": "1", "Hostname": "n1", "modelName": "NVIDIA L4"}, "value": [1, "-50"]},
      {"metric": {"node": "n1"}, "value": [1, "NaN"]}]}})");
  PrometheusOptions o;
  o.url = server.url();
  auto c = NewPrometheusCollector(o);
  ASSERT_TRUE(c.ok()) << c.status();
  Profile p;
  ASSERT_TRUE((*c)->Describe(&p).ok());
  ASSERT_TRUE((*c)->Sample(1700000000, &p).ok());
  p.timestamps_s.push_back(0);
  ASSERT_EQ(p.nodes.size(), 1u);
  ASSERT_EQ(p.nodes[0].gpus.size(), 2u);
  EXPECT_TRUE(IsMissing(p.nodes[0].gpus[0].util_pct[0]));
  EXPECT_TRUE(IsMissing(p.nodes[0].gpus[1].util_pct[0]));
  auto back = ParseProfileJson(ToJson(p), "p.json");
  EXPECT_TRUE(back.ok()) << back.status();
}

}  // namespace
}  // namespace seedance::telemetry
