// The prewarm agent's decisions on the API's pod objects and the status it records
// (prewarm_agent.h). The loop itself, with a real server, nginx and the cache, is
// src/nodeagent/prewarm_e2e_test.py.
#include "seedance/nodeagent/prewarm_agent.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "seedance/base/mutex.h"

namespace seedance::nodeagent {
namespace {

using Json = nlohmann::json;

Json Pod(const std::string& node, const std::string& phase, Json annotations) {
  return {{"uid", "u1"},
          {"name", "p"},
          {"namespace", "default"},
          {"node", node.empty() ? Json(nullptr) : Json(node)},
          {"phase", phase},
          {"annotations", std::move(annotations)}};
}

TEST(PrewarmAgentTest, OnlyABoundPodOfThisNodeWithAListIsPrewarmed) {
  const Json list = {{kPrewarmAnnotation, "[]"}};
  struct Row {
    const char* name;
    Json pod;
    bool want;
  };
  const std::vector<Row> rows = {
      {"bound here with a list", Pod("n1", "Bound", list), true},
      {"bound elsewhere", Pod("n2", "Bound", list), false},
      {"assumed here", Pod("n1", "Assumed", list), false},
      {"pending", Pod("", "Pending", list), false},
      {"no list", Pod("n1", "Bound", {{"team", "x"}}), false},
      {"no annotations at all", Pod("n1", "Bound", nullptr), false},
  };
  for (const Row& r : rows) {
    absl::StatusOr<PodView> v = ViewOfPod(r.pod);
    ASSERT_TRUE(v.ok()) << r.name << ": " << v.status();
    EXPECT_EQ(WantsPrewarm(*v, "n1"), r.want) << r.name;
  }
}

TEST(PrewarmAgentTest, TheViewKeepsTheListAndTheAgentsOwnKeysOnly) {
  absl::StatusOr<PodView> v = ViewOfPod(
      Pod("n1", "Bound", {{kPrewarmAnnotation, "[1]"}, {kPrewarmStatus, "Ready"}, {"team", "x"}}));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->uid, "u1");
  EXPECT_EQ(v->prewarm, "[1]");
  EXPECT_EQ(v->status_annotations, (std::map<std::string, std::string>{{kPrewarmStatus, "Ready"}}));
  EXPECT_EQ(ViewOfPod(Json::array()).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ViewOfPod(Json{{"uid", 5}}).status().code(), absl::StatusCode::kDataLoss);
}

FetchResult Result(const std::string& url, absl::Status st, bool hit, int64_t bytes) {
  FetchResult r;
  r.url = url;
  r.path = st.ok() ? "/cache/objects/x" : "";
  r.hit = hit;
  r.bytes_fetched = bytes;
  r.status = std::move(st);
  return r;
}

TEST(PrewarmAgentTest, EveryObjectLocalIsReadyWithCountsAndLeadTime) {
  const Json p = StatusPatch({Result("http://s/a", absl::OkStatus(), true, 0),
                              Result("http://s/b", absl::OkStatus(), false, 1000)},
                             absl::OkStatus(), 1.25, "n1");
  EXPECT_EQ(p[kPrewarmStatus], "Ready");
  EXPECT_TRUE(p[kPrewarmError].is_null());  // a merge patch: removes an earlier error
  EXPECT_EQ(p[kPrewarmObjects], "2");
  EXPECT_EQ(p[kPrewarmHits], "1");
  EXPECT_EQ(p[kPrewarmBytes], "1000");
  EXPECT_EQ(p[kPrewarmLeadTime], "1.250");
  EXPECT_EQ(p[kPrewarmNode], "n1");
}

TEST(PrewarmAgentTest, AFailedObjectMakesItFailedNamingEachReason) {
  const Json p =
      StatusPatch({Result("http://s/a", absl::OkStatus(), false, 10),
                   Result("http://s/b", absl::NotFoundError("GET http://s/b: HTTP 404"), false, 0),
                   Result("http://s/c",
                          absl::DataLossError("http://s/c: sha256 expected 00, got 11"), false, 5)},
                  absl::OkStatus(), 3, "n1");
  EXPECT_EQ(p[kPrewarmStatus], "Failed");
  EXPECT_EQ(p[kPrewarmError],
            "2 of 3 object(s) failed; NotFound: GET http://s/b: HTTP 404; DataLoss: http://s/c: "
            "sha256 expected 00, got 11");
  EXPECT_TRUE(p[kPrewarmLeadTime].is_null());
  EXPECT_EQ(p[kPrewarmBytes], "15");
}

TEST(PrewarmAgentTest, ABadListIsFailedWithTheParsersMessageAndALongErrorIsClipped) {
  const Json bad =
      StatusPatch({}, absl::InvalidArgumentError("$[0]: missing required key \"url\""), 0, "n1");
  EXPECT_EQ(bad[kPrewarmStatus], "Failed");
  EXPECT_EQ(bad[kPrewarmError], "seedance.io/prewarm: $[0]: missing required key \"url\"");
  std::vector<FetchResult> many;
  for (int i = 0; i < 200; ++i) {
    many.push_back(Result("u", absl::UnavailableError(std::string(100, 'x')), false, 0));
  }
  const Json clipped = StatusPatch(many, absl::OkStatus(), 0, "n1");
  EXPECT_LE(clipped[kPrewarmError].get<std::string>().size(), kMaxPrewarmErrorBytes + 3);
  EXPECT_TRUE(clipped[kPrewarmError].get<std::string>().starts_with("200 of 200 object(s)"));
}

// A NodeCache that records what the agent asks of it; every object is fetched at once.
class FakeCache : public NodeCache {
 public:
  std::vector<FetchResult> Prewarm(const std::vector<RemoteObject>& objs,
                                   std::string_view owner) override {
    base::MutexLock lock(mu);
    prewarmed.push_back(std::string(owner));
    std::vector<FetchResult> out;
    for (const RemoteObject& o : objs) out.push_back(Result(o.url, absl::OkStatus(), false, 7));
    return out;
  }
  void Unpin(std::string_view owner) override {
    base::MutexLock lock(mu);
    unpinned.push_back(std::string(owner));
    cv.notify_all();
  }
  absl::StatusOr<std::string> Get(const RemoteObject&) override { return std::string(); }
  absl::StatusOr<std::string> LocalPath(const RemoteObject&) const override {
    return absl::NotFoundError("fake");
  }
  absl::Status Demote(const RemoteObject&, std::string_view) override { return absl::OkStatus(); }
  void Cancel() override { cancelled.store(true); }
  std::atomic<bool> cancelled{false};
  NodeCacheStats stats() const override { return {}; }
  const std::string& dir() const override { return dir_; }

  base::Mutex mu;
  std::condition_variable cv;
  std::vector<std::string> prewarmed ABSL_GUARDED_BY(mu), unpinned ABSL_GUARDED_BY(mu);

 private:
  std::string dir_ = "/nonexistent";
};

// The server's side of the agent's calls: one pod bound to n1 in the list; once the agent has
// written its status, the watch reports the pod deleted.
class FakeServer {
 public:
  FakeServer() {
    const std::string list =
        R"([{"url": "http://store/a", "sha256": ")" + std::string(64, 'a') + R"("}])";
    server_.Get("/v1/pods", [list](const httplib::Request&, httplib::Response& res) {
      const Json page = {{"items", {Pod("n1", "Bound", {{kPrewarmAnnotation, list}})}},
                         {"revision", 5},
                         {"continue", nullptr}};
      res.set_content(page.dump(), "application/json");
    });
    server_.Get("/v1/watch", [this](const httplib::Request&, httplib::Response& res) {
      base::MutexLock lock(mu_);
      lock.WaitFor(cv_, std::chrono::milliseconds(200),
                   [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !patch_.empty(); });
      Json events = Json::array();
      if (!patch_.empty()) {
        events.push_back({{"revision", 7}, {"type", "PodDeleted"}, {"object", {{"uid", "u1"}}}});
      }
      res.set_content(Json{{"events", events}, {"revision", patch_.empty() ? 5 : 7}}.dump(),
                      "application/json");
    });
    server_.Patch("/v1/pods/u1/annotations",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    base::MutexLock lock(mu_);
                    patch_ = req.body;
                    cv_.notify_all();
                    res.set_content(R"({"uid": "u1"})", "application/json");
                  });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string patch() {
    base::MutexLock lock(mu_);
    return patch_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  base::Mutex mu_;
  std::condition_variable cv_;
  std::string patch_ ABSL_GUARDED_BY(mu_);
};

TEST(PrewarmAgentTest, PrewarmsABoundPodWritesReadyAndUnpinsItWhenDeleted) {
  FakeServer server;
  FakeCache cache;
  PrewarmAgentOptions o;
  o.node = "n1";
  o.client.url = server.url();
  o.watch_timeout_s = 1;
  absl::StatusOr<std::unique_ptr<PrewarmAgent>> agent = PrewarmAgent::Create(o, &cache);
  ASSERT_TRUE(agent.ok()) << agent.status();
  std::thread run([&agent] { EXPECT_TRUE((*agent)->Run().ok()); });
  {
    base::MutexLock lock(cache.mu);
    lock.WaitFor(cache.cv, std::chrono::seconds(60),
                 [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(cache.mu) { return !cache.unpinned.empty(); });
  }
  (*agent)->Stop();
  run.join();
  EXPECT_TRUE(cache.cancelled.load()) << "a stop cancels the downloads in flight";
  {
    base::MutexLock lock(cache.mu);
    EXPECT_EQ(cache.prewarmed, std::vector<std::string>{"u1"});
    EXPECT_EQ(cache.unpinned, std::vector<std::string>{"u1"});
  }
  const Json patch = Json::parse(server.patch());
  EXPECT_EQ(patch[kPrewarmStatus], "Ready");
  EXPECT_EQ(patch[kPrewarmObjects], "1");
  EXPECT_EQ(patch[kPrewarmBytes], "7");
  EXPECT_EQ(patch[kPrewarmNode], "n1");
  const PrewarmAgentMetrics m = (*agent)->metrics();
  EXPECT_EQ(m.pods_ready, 1);
  EXPECT_EQ(m.lead_time_count, 1);
  EXPECT_EQ(m.unpinned, 1);
  EXPECT_EQ(m.pods_in_flight, 0);
  EXPECT_NE((*agent)->PrometheusText().find("seedance_prewarm_pods_total{result=\"ready\"} 1"),
            std::string::npos);
}

TEST(PrewarmAgentTest, BadOptionsAreRefusedBeforeAnythingRuns) {
  FakeCache cache;
  PrewarmAgentOptions o;
  EXPECT_EQ(PrewarmAgent::Create(o, &cache).status().code(), absl::StatusCode::kInvalidArgument);
  o.node = "Not_A_Node";
  EXPECT_EQ(PrewarmAgent::CheckOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o.node = "n1";
  o.client.url = "ftp://x";
  EXPECT_EQ(PrewarmAgent::CheckOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o.client.url = "http://127.0.0.1:1";
  EXPECT_EQ(PrewarmAgent::Create(o, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace seedance::nodeagent
