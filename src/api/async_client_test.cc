// api::AsyncClient against a cpp-httplib server on 127.0.0.1, side by side with the blocking
// api::Client where both should say the same.
#include "seedance/api/async_client.h"

#include <atomic>
#include <cstdio>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "seedance/api/api.h"
#include "seedance/api/client.h"
#include "seedance/base/mutex.h"
#include "stub_server_testing.h"

namespace seedance::api {
namespace {

using ::testing::HasSubstr;

ClientOptions Options(const std::string& url, double timeout_s = 10) {
  ClientOptions o;
  o.url = url;
  o.timeout_s = timeout_s;
  return o;
}

// The remote ports the server saw (one per client connection).
class Ports {
 public:
  void Add(int port) {
    base::MutexLock lock(mu_);
    ports_.insert(port);
  }
  size_t Count() {
    base::MutexLock lock(mu_);
    return ports_.size();
  }

 private:
  base::Mutex mu_;
  std::set<int> ports_ ABSL_GUARDED_BY(mu_);
};

TEST(AsyncClientTest, SendsTheRequestAndDecodesTheReply) {
  StubServer stub;
  stub.http().Post("/v1/pods", [](const httplib::Request& req, httplib::Response& res) {
    const bool ok = req.get_header_value("Authorization") == "Bearer t0ken" &&
                    req.get_header_value("Content-Type") == "application/json";
    res.status = ok ? 201 : 400;
    res.set_content(nlohmann::json{{"echo", nlohmann::json::parse(req.body)}}.dump(),
                    "application/json");
  });
  stub.http().Delete("/v1/pods/x", [](const httplib::Request&, httplib::Response& res) {
    res.status = 204;  // an empty 2xx is null
  });
  const std::string token = TempFile("t0ken\n");
  ClientLoop loop;
  ClientOptions o = Options(stub.url());
  o.token_file = token;
  absl::StatusOr<std::unique_ptr<AsyncClient>> client = AsyncClient::Create(o, loop);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<nlohmann::json> reply = (*client)->CallAndWait("POST", "/v1/pods", R"({"a":1})");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ((*reply)["echo"]["a"], 1);
  reply = (*client)->CallAndWait("DELETE", "/v1/pods/x");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(reply->is_null());
  std::remove(token.c_str());
}

// Every failure the blocking client reports, the asynchronous one reports with the same code,
// HTTP status and message.
TEST(AsyncClientTest, FailsAsTheBlockingClientDoes) {
  StubServer stub;
  stub.http().Post("/v1/pods", [](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<PodRequest> pod = ParsePodRequest(req.body);
    res.status = HttpStatusFor(pod.status());
    res.set_content(ErrorBody(pod.status()), "application/json");
  });
  stub.http().Get("/gone",
                  [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
  stub.http().Get("/text", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("not json", "text/plain");
  });
  stub.http().Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(1 << 20, 'x'), "application/json");
  });
  ClientOptions o = Options(stub.url());
  o.max_reply_bytes = 4096;
  absl::StatusOr<Client> blocking = Client::Create(o);
  ASSERT_TRUE(blocking.ok());
  ClientLoop loop;
  absl::StatusOr<std::unique_ptr<AsyncClient>> async = AsyncClient::Create(o, loop);
  ASSERT_TRUE(async.ok());
  struct Case {
    const char *method, *path, *body;
    absl::StatusCode code;
  };
  for (const Case& c :
       {Case{"POST", "/v1/pods", R"({"name": "BAD NAME"})", absl::StatusCode::kInvalidArgument},
        Case{"GET", "/gone", "", absl::StatusCode::kNotFound},
        Case{"GET", "/text", "", absl::StatusCode::kDataLoss},
        Case{"GET", "/big", "", absl::StatusCode::kResourceExhausted}}) {
    const absl::Status want = blocking->Call(c.method, c.path, c.body).status();
    const absl::Status got = (*async)->CallAndWait(c.method, c.path, c.body).status();
    EXPECT_EQ(got.code(), c.code) << c.path << ": " << got;
    EXPECT_EQ(got.message(), want.message()) << c.path;
    EXPECT_EQ(HttpStatusOf(got), HttpStatusOf(want)) << c.path;
    EXPECT_EQ(FieldOf(got), FieldOf(want)) << c.path;
  }
}

TEST(AsyncClientTest, UnreachableServerIsUnavailable) {
  int port = 0;
  {
    StubServer stub;  // a port that was just free, now closed
    port = std::stoi(stub.url().substr(stub.url().rfind(':') + 1));
  }
  const ClientOptions o = Options("http://127.0.0.1:" + std::to_string(port));
  ClientLoop loop;
  absl::StatusOr<std::unique_ptr<AsyncClient>> client = AsyncClient::Create(o, loop);
  ASSERT_TRUE(client.ok());
  const absl::Status s = (*client)->CallAndWait("GET", "/v1/nodes").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(HttpStatusOf(s), 0);
  absl::StatusOr<Client> blocking = Client::Create(o);
  ASSERT_TRUE(blocking.ok());
  EXPECT_EQ(s.message(), blocking->Call("GET", "/v1/nodes").status().message());
}

TEST(AsyncClientTest, AServerThatNeverAnswersHitsTheDeadlineAndOthersGoOn) {
  StubServer stub;
  stub.http().Get("/slow", [&stub](const httplib::Request&, httplib::Response& res) {
    stub.WaitForRelease();
    res.set_content("{}", "application/json");
  });
  stub.http().Get("/ok", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"ok": true})", "application/json");
  });
  ClientLoop loop;
  absl::StatusOr<std::unique_ptr<AsyncClient>> client =
      AsyncClient::Create(Options(stub.url(), 0.3), loop);
  ASSERT_TRUE(client.ok());
  std::promise<absl::Status> slow;
  (*client)->Call("GET", "/slow", "",
                  [&slow](absl::StatusOr<nlohmann::json> r) { slow.set_value(r.status()); });
  // The slow call holds one connection; calls on others are answered meanwhile.
  absl::StatusOr<nlohmann::json> ok = (*client)->CallAndWait("GET", "/ok");
  ASSERT_TRUE(ok.ok()) << ok.status();
  const absl::Status s = slow.get_future().get();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no complete reply within 0.3 s"));
  stub.Release();
  ok = (*client)->CallAndWait("GET", "/ok");
  ASSERT_TRUE(ok.ok()) << ok.status();
}

// Calls beyond the connection cap wait for a connection, and every one is answered once.
TEST(AsyncClientTest, ManyCallsShareAFewConnections) {
  StubServer stub(/*nodelay=*/true);
  Ports ports;
  stub.http().set_keep_alive_max_count(1000);  // httplib closes after 5 calls by default
  stub.http().Get(R"(/n/(\d+))", [&ports](const httplib::Request& req, httplib::Response& res) {
    ports.Add(req.remote_port);
    res.set_content(nlohmann::json{{"n", std::stoi(req.matches[1])}}.dump(), "application/json");
  });
  ClientLoop loop;
  AsyncClient::Limits limits;
  limits.max_connections = 3;
  absl::StatusOr<std::unique_ptr<AsyncClient>> client =
      AsyncClient::Create(Options(stub.url()), loop, limits);
  ASSERT_TRUE(client.ok());
  constexpr int kCalls = 300;
  std::vector<std::promise<int>> answers(kCalls);
  std::atomic<int> answered{0};
  for (int i = 0; i < kCalls; ++i) {
    (*client)->Call("GET", "/n/" + std::to_string(i), "",
                    [&answers, &answered, i](absl::StatusOr<nlohmann::json> r) {
                      answered.fetch_add(1);
                      answers[i].set_value(r.ok() ? (*r)["n"].get<int>() : -1);
                    });
  }
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(answers[i].get_future().get(), i);
  EXPECT_EQ(answered.load(), kCalls);
  EXPECT_LE(ports.Count(), 3u);
  EXPECT_GE(ports.Count(), 1u);
}

// Sequential calls use one connection; one the server closed while idle is noticed and a new
// one opened, so that even a POST (never made twice) goes through.
TEST(AsyncClientTest, KeepsConnectionsAliveAndNoticesClosedOnes) {
  StubServer stub;
  Ports ports;
  stub.http().set_keep_alive_timeout(1);
  stub.http().set_keep_alive_max_count(1000);  // httplib closes after 5 calls by default
  stub.http().Post("/p", [&ports](const httplib::Request& req, httplib::Response& res) {
    ports.Add(req.remote_port);
    res.set_content("{}", "application/json");
  });
  ClientLoop loop;
  AsyncClient::Limits limits;
  limits.idle_s = 3600;  // the client keeps it; only the server's close can end it
  absl::StatusOr<std::unique_ptr<AsyncClient>> client =
      AsyncClient::Create(Options(stub.url()), loop, limits);
  ASSERT_TRUE(client.ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*client)->CallAndWait("POST", "/p", "{}").ok());
  EXPECT_EQ(ports.Count(), 1u);
  // The server closes the connection once it has been idle for its keep-alive wait (1 s):
  // calls spaced wider than that, until one finds it closed (the first, unless the machine
  // stalls the server's timer).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ports.Count() == 1 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    absl::StatusOr<nlohmann::json> r = (*client)->CallAndWait("POST", "/p", "{}");
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_EQ(ports.Count(), 2u);
}

TEST(AsyncClientTest, CloseAnswersWhatWaitsAndRefusesLaterCalls) {
  StubServer stub;
  stub.http().Get("/slow", [&stub](const httplib::Request&, httplib::Response& res) {
    stub.WaitForRelease();
    res.set_content("{}", "application/json");
  });
  ClientLoop loop;
  AsyncClient::Limits limits;
  limits.max_connections = 1;
  absl::StatusOr<std::unique_ptr<AsyncClient>> client =
      AsyncClient::Create(Options(stub.url(), 60), loop, limits);
  ASSERT_TRUE(client.ok());
  std::promise<absl::Status> first, second;
  (*client)->Call("GET", "/slow", "",
                  [&first](absl::StatusOr<nlohmann::json> r) { first.set_value(r.status()); });
  (*client)->Call("GET", "/slow", "",
                  [&second](absl::StatusOr<nlohmann::json> r) { second.set_value(r.status()); });
  (*client)->Close();
  EXPECT_EQ(first.get_future().get().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.get_future().get().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*client)->CallAndWait("GET", "/slow").status().code(), absl::StatusCode::kUnavailable);
  stub.Release();
}

TEST(AsyncClientTest, RefusesWhatClientRefuses) {
  ClientLoop loop;
  EXPECT_EQ(AsyncClient::Create(Options("ftp://h"), loop).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AsyncClient::Create(Options("http://127.0.0.1:1", 0), loop).status().code(),
            absl::StatusCode::kInvalidArgument);
  ClientOptions o = Options("http://127.0.0.1:1");
  o.token_file = "/nonexistent/token";
  EXPECT_EQ(AsyncClient::Create(o, loop).status().code(), absl::StatusCode::kNotFound);
  o = Options("https://127.0.0.1:1");
  o.ca_file = "/nonexistent/ca.pem";
  const absl::Status s = AsyncClient::Create(o, loop).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent/ca.pem"));
}

TEST(AsyncClientDeathTest, WaitingOnTheLoopsOwnThreadIsRefused) {
  EXPECT_DEATH(
      {
        StubServer stub;
        ClientLoop loop;
        std::unique_ptr<AsyncClient> client = *AsyncClient::Create(Options(stub.url()), loop);
        std::promise<void> finished;
        client->Call("GET", "/", "", [&client](absl::StatusOr<nlohmann::json>) {
          (void)client->CallAndWait("GET", "/");
        });
        finished.get_future().wait();
      },
      "CallAndWait on the client loop's thread");
}

}  // namespace
}  // namespace seedance::api
