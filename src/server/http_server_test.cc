// The event-loop front end's life cycle in one process (under ASan in `make test`): clients on
// several threads submitting and reading, server-sent watch streams and a long poll open, then
// Stop while watchers are still connected and requests are still arriving. Every reply that came
// is a whole one, the watchers saw the submitted pods, Stop returns, and the process tears down
// cleanly (a connection outliving the server, or a reply posted to a dead loop, shows up here as
// a sanitizer report).
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"

namespace seedance::server {
namespace {

namespace fs = std::filesystem;

class Live {
 public:
  Live() {
    dir_ = fs::temp_directory_path() / ("seedance-http-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    ServiceOptions o;
    o.state_dir = dir_.string();
    o.scheduler.default_profile.policy = "bestfit";
    service_ = std::move(*Service::Start(o));
    HttpOptions ho;
    ho.port = 0;
    http_ = std::move(*HttpServer::Start(*service_, ho));
  }
  ~Live() {
    http_->Stop();
    service_->Shutdown();
    fs::remove_all(dir_);
  }
  int port() const { return http_->port(); }
  HttpServer& http() { return *http_; }

 private:
  fs::path dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> http_;
};

TEST(HttpServerTest, ConcurrentClientsAndWatchersThenStopWhileTheyAreConnected) {
  Live s;
  httplib::Client admin("127.0.0.1", s.port());
  ASSERT_EQ(admin.Put("/v1/nodes/n1", R"({"cpu_milli": 1000000, "memory_mib": 1000000})",
                      "application/json")
                ->status,
            201);
  // Watchers: each counts the events it reads until the server ends its stream.
  std::atomic<int> events{0};
  std::vector<std::thread> watchers;
  for (int w = 0; w < 8; ++w) {
    watchers.emplace_back([&, w] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(60, 0);
      const std::string path = w % 2 ? "/v1/watch?since=0" : "/v1/watch?since=0&format=json";
      (void)c.Get(path.c_str(), [&](const char* data, size_t n) {
        for (size_t i = 0; i + 3 < n; ++i) {
          if (std::string_view(data + i, 4) == "\"uid") events.fetch_add(1);
        }
        return true;
      });
    });
  }
  std::atomic<int> created{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", s.port());
      for (int i = 0; i < 100; ++i) {
        const std::string body =
            R"({"name": "p-)" + std::to_string(t) + "-" + std::to_string(i) + R"(", "cpu_milli": 10})";
        auto r = c.Post("/v1/pods", body, "application/json");
        (r && r->status == 201 ? created : other).fetch_add(1);
        if (i % 10 == 0) (void)c.Get("/v1/pods?limit=5");
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(created.load(), 400);
  EXPECT_EQ(other.load(), 0);
  // Every watcher saw pods (a long poll its first batch, a stream all of them so far).
  for (int i = 0; i < 6000 && events.load() < 400; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(events.load(), 400);
  // Stop with the streams open and a client still submitting.
  std::atomic<bool> stop_submitting{false};
  std::thread late([&] {
    httplib::Client c("127.0.0.1", s.port());
    while (!stop_submitting.load()) (void)c.Post("/v1/pods", R"({"cpu_milli": 1})", "application/json");
  });
  s.http().Stop();
  stop_submitting = true;
  late.join();
  for (std::thread& t : watchers) t.join();  // their streams were closed by Stop
  s.http().Stop();                           // idempotent
}

}  // namespace
}  // namespace seedance::server
