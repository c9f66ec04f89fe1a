// api::Client against a cpp-httplib stub server on 127.0.0.1 (a port the kernel picks).
#include "seedance/api/client.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "seedance/api/api.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"
#include "stub_server_testing.h"

namespace seedance::api {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseServerUrlTest, AcceptsHostPortForms) {
  absl::StatusOr<ServerUrl> u = ParseServerUrl("http://127.0.0.1:7070");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 7070);
  u = ParseServerUrl("HTTPS://sched.example/");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->display, "https://sched.example:443");
  u = ParseServerUrl("http://[::1]:8080");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->display, "http://[::1]:8080");
}

TEST(ParseServerUrlTest, RefusesOtherFormsAndNeverShowsCredentials) {
  for (const char* bad :
       {"127.0.0.1:7070", "ftp://h", "http://", "http://h:0", "http://h:65536", "http://h:x",
        "http://h/v1", "http://h?x=1", "http://h:", "http://[::1"}) {
    const absl::Status s = ParseServerUrl(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  const absl::Status s = ParseServerUrl("http://alice:s3cret@h:1").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("s3cret")));
  EXPECT_THAT(std::string(s.message()), HasSubstr("<redacted>@h:1"));
  EXPECT_EQ(seedance::base::RedactUrl("https://u:p@host:1/x@y"), "https://<redacted>@host:1/x@y");
  EXPECT_EQ(seedance::base::RedactUrl("http://host:1"), "http://host:1");
  EXPECT_EQ(seedance::base::RedactUrl("http://host:1/p?token=s3cr3t"), "http://host:1/p?<redacted>");
}

TEST(UrlEncodeTest, EscapesReservedBytes) {
  EXPECT_EQ(UrlEncode("a-b_c.d~"), "a-b_c.d~");
  EXPECT_EQ(UrlEncode("a/b c?&"), "a%2Fb%20c%3F%26");
}

TEST(ClientTest, SendsTheTokenAndDecodesTheReply) {
  StubServer stub;
  stub.http().Get("/v1/nodes", [](const httplib::Request& req, httplib::Response& res) {
    const bool authorized = req.get_header_value("Authorization") == "Bearer t0ken";
    res.status = authorized ? 200 : 401;
    res.set_content(
        authorized ? R"({"items": []})" : ErrorBody(absl::UnauthenticatedError("bad token")),
        "application/json");
  });
  const std::string token = TempFile("t0ken\n");
  absl::StatusOr<Client> client = Client::Create(stub.url(), token);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<nlohmann::json> reply = client->Call("GET", "/v1/nodes");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE((*reply)["items"].is_array());

  absl::StatusOr<Client> anonymous = Client::Create(stub.url(), "");
  ASSERT_TRUE(anonymous.ok());
  const absl::Status s = anonymous->Call("GET", "/v1/nodes").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(HttpStatusOf(s), 401);
  std::remove(token.c_str());
}

TEST(ClientTest, ErrorBodiesBecomeStatusesWithTheirField) {
  StubServer stub;
  stub.http().Post("/v1/pods", [](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<PodRequest> pod = ParsePodRequest(req.body);
    res.status = HttpStatusFor(pod.status());
    res.set_content(ErrorBody(pod.status()), "application/json");
  });
  stub.http().Get("/v1/pods/gone", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;  // no body: a route the server does not have
  });
  stub.http().Get("/v1/boom", [](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_content("not json", "text/plain");
  });
  absl::StatusOr<Client> client = Client::Create(stub.url(), "");
  ASSERT_TRUE(client.ok());
  absl::Status s = client->Call("POST", "/v1/pods", R"({"name": "a", "num_gpu": 99})").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldOf(s), "$.num_gpu");
  EXPECT_EQ(HttpStatusOf(s), 400);
  EXPECT_THAT(std::string(s.message()), HasSubstr("$.num_gpu: must be an integer in 0..16"));

  s = client->Call("GET", "/v1/pods/gone").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(HttpStatusOf(s), 404);

  s = client->Call("GET", "/v1/boom").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(HttpStatusOf(s), 500);
}

TEST(ClientTest, UnreachableServerIsUnavailable) {
  int port = 0;
  {
    StubServer stub;  // a port that was just free, now closed
    port = std::stoi(stub.url().substr(stub.url().rfind(':') + 1));
  }
  absl::StatusOr<Client> client = Client::Create("http://127.0.0.1:" + std::to_string(port), "");
  ASSERT_TRUE(client.ok());
  const absl::Status s = client->Call("GET", "/v1/nodes").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(HttpStatusOf(s), 0);
}

TEST(ClientTest, ReplySizeIsCapped) {
  StubServer stub;
  stub.http().Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(1 << 20, 'x'), "application/json");
  });
  ClientOptions o;
  o.url = stub.url();
  o.max_reply_bytes = 4096;
  absl::StatusOr<Client> client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(client->Call("GET", "/big").status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ClientTest, AServerThatNeverAnswersHitsTheDeadline) {
  StubServer stub;
  stub.http().Get("/slow", [&stub](const httplib::Request&, httplib::Response& res) {
    stub.WaitForRelease();
    res.set_content("{}", "application/json");
  });
  stub.http().Get("/ok", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"ok": true})", "application/json");
  });
  ClientOptions o;
  o.url = stub.url();
  o.timeout_s = 0.2;
  absl::StatusOr<Client> client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(client->Call("GET", "/slow").status().code(), absl::StatusCode::kDeadlineExceeded);
  stub.Release();
  // The same client's next calls are not stopped by the deadline of the one before (one
  // watchdog per client, armed per call).
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<nlohmann::json> ok = client->Call("GET", "/ok");
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ((*ok)["ok"], true);
  }
}

TEST(ClientTest, TokenFileProblemsNameTheFileNotTheToken) {
  EXPECT_EQ(Client::Create("http://127.0.0.1:1", "/nonexistent/token").status().code(),
            absl::StatusCode::kNotFound);
  const std::string empty = TempFile("\n\n");
  absl::Status s = Client::Create("http://127.0.0.1:1", empty).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(empty));
  const std::string two = TempFile("secret-one secret-two\n");
  s = Client::Create("http://127.0.0.1:1", two).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("secret")));
  std::remove(empty.c_str());
  std::remove(two.c_str());
}

TEST(ClientTest, EnvironmentGivesTheDefaults) {
  StubServer stub;
  stub.http().Get("/healthz", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.get_header_value("Authorization") == "Bearer env-token" ? "true" : "false",
                    "application/json");
  });
  const std::string token = TempFile("env-token");
  setenv("SEEDANCE_SERVER", stub.url().c_str(), 1);
  setenv("SEEDANCE_TOKEN_FILE", token.c_str(), 1);
  absl::StatusOr<Client> client = Client::Create("", "");
  unsetenv("SEEDANCE_SERVER");
  unsetenv("SEEDANCE_TOKEN_FILE");
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<nlohmann::json> reply = client->Call("GET", "/healthz");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, true);
  std::remove(token.c_str());
}

}  // namespace
}  // namespace seedance::api
