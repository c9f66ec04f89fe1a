// The federation front's records without members to reach (front.h): a pod waits at the front
// with a reason per member, its record is persisted before the answer, a restart restores it,
// names are unique, and Start is once; and, with two cpp-httplib members, the room a decision
// holds while its member answers. The front with real member servers is front_test.py.
#include <atomic>
#include <future>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../api/stub_server_testing.h"  // a cpp-httplib server as a member
#include "front_state.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "seedance/api/api.h"
#include "seedance/federation/front.h"

namespace seedance::federation {

class FrontTestPeer {
 public:
  static Front::State& state(Front& f) { return *f.state_; }
};

namespace {

using Json = nlohmann::json;

// A member nobody listens on (port 1 refuses at once).
FrontOptions Unreachable() {
  FrontOptions o;
  MemberConfig m;
  m.name = "far";
  m.url = "http://127.0.0.1:1";
  m.prices.gpu_hour_default = 1.0;
  o.config.members.push_back(m);
  o.call_timeout_s = 1;
  return o;
}

// The store the persist hook writes to, as the daemon's would be.
struct FakeStore {
  std::map<std::string, std::string> records;
  bool fail = false;
  Front::Persist Hook() {
    return [this](std::vector<std::pair<std::string, std::string>> puts,
                  std::vector<std::string> deletes, std::function<void(absl::Status)> done) {
      if (fail) return done(absl::UnavailableError("disk full"));
      for (auto& [k, v] : puts) records[k] = v;
      for (const std::string& k : deletes) records.erase(k);
      done(absl::OkStatus());
    };
  }
};

api::PodRequest Pod(const std::string& name, int gpus) {
  api::PodRequest r;
  r.name = name;
  r.ns = "ml";
  r.cpu_milli = 1000;
  r.num_gpu = gpus;
  r.gpu_milli = gpus > 0 ? 1000 : 0;
  return r;
}

const auto kAll = [](const std::string&) { return true; };

TEST(FrontTest, APodNoMemberCanTakeWaitsWithAReasonPerMemberAndIsPersistedFirst) {
  FakeStore store;
  absl::StatusOr<std::unique_ptr<Front>> f = Front::Create(Unreachable(), store.Hook());
  ASSERT_TRUE(f.ok()) << f.status();
  const FrontReply r = (*f)->Submit("", Pod("train", 2));
  ASSERT_EQ(r.status, 201) << r.body;
  const Json pod = Json::parse(r.body);
  EXPECT_EQ(pod["phase"], "Pending");
  EXPECT_TRUE(pod["cluster"].is_null());
  EXPECT_EQ(pod["name"], "train");
  const std::string uid = pod["uid"];
  ASSERT_EQ(store.records.count(uid), 1u);
  const Json rec = Json::parse(store.records[uid]);
  EXPECT_EQ(rec["member"], "");
  EXPECT_EQ(rec["request"]["num_gpu"], 2);

  const Json why = Json::parse((*f)->Explain(uid, kAll).body);
  ASSERT_EQ(why["reasons"].size(), 1u);
  EXPECT_EQ(why["reasons"][0], "far: no answer to GET /v1/cluster yet");
  EXPECT_EQ(why["message"], "0/1 clusters fit: far: no answer to GET /v1/cluster yet");
}

TEST(FrontTest, ANameIsTakenOncePerNamespaceAndFreedByDelete) {
  FakeStore store;
  std::unique_ptr<Front> f = *Front::Create(Unreachable(), store.Hook());
  const std::string uid = Json::parse(f->Submit("", Pod("a", 0)).body)["uid"];
  const FrontReply again = f->Submit("", Pod("a", 0));
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_NE(again.body.find("pod ml/a already exists"), std::string::npos) << again.body;
  EXPECT_EQ(f->Delete(uid, kAll).status, 200);
  EXPECT_EQ(store.records.count(uid), 0u);
  EXPECT_EQ(f->Get(uid, kAll).status, 404);
  EXPECT_EQ(f->Submit("", Pod("a", 0)).status, 201);
}

TEST(FrontTest, AFailedCommitIsNotAcknowledgedAndTakesNoName) {
  FakeStore store;
  std::unique_ptr<Front> f = *Front::Create(Unreachable(), store.Hook());
  store.fail = true;
  const FrontReply r = f->Submit("", Pod("a", 0));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("disk full"), std::string::npos) << r.body;
  store.fail = false;
  EXPECT_EQ(f->Submit("", Pod("a", 0)).status, 201);
}

TEST(FrontTest, ARestartRestoresEveryRecordAndItsName) {
  FakeStore store;
  std::string uid;
  {
    std::unique_ptr<Front> f = *Front::Create(Unreachable(), store.Hook());
    uid = Json::parse(f->Submit("", Pod("keep", 1)).body)["uid"];
    f->Submit("", Pod("other", 0));
  }
  std::unique_ptr<Front> g = *Front::Create(Unreachable(), store.Hook());
  ASSERT_TRUE(g->Restore({store.records.begin(), store.records.end()}).ok());
  const FrontReply got = g->Get(uid, kAll);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Json::parse(got.body)["name"], "keep");
  EXPECT_EQ(g->Submit("", Pod("keep", 1)).status, 409);
  const Json list = Json::parse(g->List("Pending", "ml", "", 1, kAll).body);
  EXPECT_EQ(list["items"].size(), 1u);
  EXPECT_FALSE(list["continue"].is_null());
}

TEST(FrontTest, ARecordThatDoesNotParseIsDataLossNamingItsKey) {
  FakeStore store;
  std::unique_ptr<Front> f = *Front::Create(Unreachable(), store.Hook());
  const absl::Status st = f->Restore({{"0a-1", "{\"request\": 3}"}});
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("'0a-1'"), std::string_view::npos) << st;
}

TEST(FrontTest, ATenantSeesOnlyItsOwnNamespaces) {
  FakeStore store;
  std::unique_ptr<Front> f = *Front::Create(Unreachable(), store.Hook());
  const std::string uid = Json::parse(f->Submit("", Pod("a", 0)).body)["uid"];
  const auto other = [](const std::string& ns) { return ns == "web"; };
  EXPECT_EQ(f->Get(uid, other).status, 404);
  EXPECT_EQ(f->Delete(uid, other).status, 404);
  EXPECT_EQ(Json::parse(f->List("", "", "", 10, other).body)["items"].size(), 0u);
}

// A record as the front persists it, placed on `member` (RecordJson's shape).
std::pair<std::string, std::string> PlacedRecord(const std::string& uid, const api::PodRequest& r,
                                                 const std::string& member, bool ended = false) {
  Json j = {{"request", api::PodRequestToJson(r)},
            {"member", member},
            {"member_uid", uid + "-m"},
            {"ended", ended}};
  return {uid, j.dump()};
}

// A quota across members counts the restored placed pods of its namespaces (not ended ones, not
// other namespaces); a pod beyond it waits at the front saying which quota and resource, without
// a member being asked; a pod of another namespace is not held back.
TEST(FrontTest, AQuotaAcrossMembersHoldsBackAPodBeyondIt) {
  FrontOptions o = Unreachable();
  o.config.quotas.push_back({"ml-quota", {"ml"}, QuotaLimit{.gpus = 4, .cpu_milli = 100000}});
  FakeStore store;
  std::unique_ptr<Front> f = *Front::Create(o, store.Hook());
  api::PodRequest web = Pod("w", 8);
  web.ns = "web";
  ASSERT_TRUE(
      f->Restore({PlacedRecord("u1", Pod("a", 2), "far"), PlacedRecord("u2", Pod("b", 1), "far"),
                  PlacedRecord("u3", Pod("gone", 4), "far", /*ended=*/true),
                  PlacedRecord("u4", web, "far")})
          .ok());
  const Json members = Json::parse(f->Members().body);
  ASSERT_EQ(members["quotas"].size(), 1u);
  EXPECT_EQ(members["quotas"][0]["used"]["gpus"], 3);
  EXPECT_EQ(members["quotas"][0]["used"]["cpu_milli"], 2000);
  EXPECT_EQ(members["quotas"][0]["limit"], (Json{{"gpus", 4}, {"cpu_milli", 100000}}));

  const std::string over = Json::parse(f->Submit("", Pod("c", 2)).body)["uid"];
  const Json why = Json::parse(f->Explain(over, kAll).body);
  EXPECT_EQ(why["message"],
            "waits at the front: quota 'ml-quota' (across members) is full: gpus 3 in use + 2 > "
            "limit 4");
  // One GPU still fits the quota: it goes on to the members (here none answers).
  const std::string fits = Json::parse(f->Submit("", Pod("d", 1)).body)["uid"];
  EXPECT_EQ(Json::parse(f->Explain(fits, kAll).body)["message"],
            "0/1 clusters fit: far: no answer to GET /v1/cluster yet");
  // Another namespace has no quota.
  api::PodRequest web2 = Pod("w2", 16);
  web2.ns = "web";
  const std::string free = Json::parse(f->Submit("", web2).body)["uid"];
  EXPECT_EQ(Json::parse(f->Explain(free, kAll).body)["message"],
            "0/1 clusters fit: far: no answer to GET /v1/cluster yet");
  EXPECT_NE(f->MetricsText().find(
                "seedance_federation_quota_used{quota=\"ml-quota\",resource=\"gpus\"} 3\n"),
            std::string::npos);
}

// A member that answers POST /v1/pods with a pod in `phase`; `hold_first` keeps its first answer
// until the stub is released. DELETE /v1/pods/... is counted in `deleted`.
void ServePods(api::StubServer& stub, const std::string& name, bool hold_first,
               const std::string& phase = "Bound", std::atomic<int>* deleted = nullptr) {
  stub.http().Delete(R"(/v1/pods/.*)", [deleted](const httplib::Request&, httplib::Response& res) {
    if (deleted != nullptr) deleted->fetch_add(1);
    res.set_content("{}", "application/json");
  });
  auto calls = std::make_shared<std::atomic<int>>(0);
  stub.http().Post("/v1/pods", [&stub, name, hold_first, phase, calls](const httplib::Request&,
                                                                       httplib::Response& res) {
    const int n = calls->fetch_add(1);
    if (hold_first && n == 0) stub.WaitForRelease();
    res.status = 201;
    res.set_content(Json{{"uid", name + "-" + std::to_string(n)}, {"phase", phase}}.dump(),
                    "application/json");
  });
}

// What a member with one free GPU (of 8, one node of V100s) says of itself.
ClusterSummary OneGpuFree(const std::string& cluster) {
  const Json room = {
      {"nodes", 1},
      {"capacity", {{"cpu_milli", 64000}, {"memory_mib", 512000}, {"num_gpus", 8}}},
      {"free",
       {{"cpu_milli", 64000}, {"memory_mib", 512000}, {"gpu_milli", 1000}, {"whole_gpus", 1}}},
      {"largest_free", {{"cpu_milli", 64000}, {"memory_mib", 512000}, {"whole_gpus", 1}}}};
  Json summary = room;
  summary["cluster"] = cluster;
  summary["gpu_models"] = Json::array({room});
  summary["gpu_models"][0]["gpu_model"] = "V100M16";
  return *ParseClusterSummary(summary.dump());
}

// A front over two stub members (name, server, $/GPU-hour), each with one free GPU as its last
// summary (the member threads are not started: nothing polls).
struct StubMember {
  const char* name;
  api::StubServer* stub;
  double price;
};
std::unique_ptr<Front> OverTwo(FakeStore& store, StubMember a, StubMember b) {
  FrontOptions o;
  for (const StubMember& s : {a, b}) {
    MemberConfig m;
    m.name = s.name;
    m.url = s.stub->url();
    m.prices.gpu_hour_default = s.price;
    o.config.members.push_back(m);
  }
  o.call_timeout_s = 30;
  std::unique_ptr<Front> f = *Front::Create(o, store.Hook());
  Front::State& state = FrontTestPeer::state(*f);
  base::MutexLock lock(state.mu);
  for (auto& m : state.members) {
    m->summary = OneGpuFree(m->config.name);
    m->have_summary = true;
  }
  return f;
}

// Two submissions under way at once must not both be sent to the last free GPU of the cheaper
// member: the first holds it from its decision until the member answers.
TEST(FrontTest, ConcurrentSubmissionsDoNotShareAMembersLastRoom) {
  api::StubServer cheap, dear;
  ServePods(cheap, "cheap", /*hold_first=*/true);
  ServePods(dear, "dear", /*hold_first=*/false);
  FakeStore store;
  std::unique_ptr<Front> f = OverTwo(store, {"cheap", &cheap, 1.0}, {"dear", &dear, 2.0});
  std::promise<FrontReply> first;
  f->SubmitAsync(Pod("first", 1), [&first](FrontReply r) { first.set_value(std::move(r)); });
  // The cheap member has not answered the first pod: the second goes to the other member.
  const FrontReply second = f->Submit("", Pod("second", 1));
  cheap.Release();
  const FrontReply one = first.get_future().get();
  ASSERT_EQ(one.status, 201) << one.body;
  ASSERT_EQ(second.status, 201) << second.body;
  EXPECT_EQ(Json::parse(one.body)["cluster"], "cheap") << one.body;
  EXPECT_EQ(Json::parse(second.body)["cluster"], "dear");
  // The answer turned the hold into a debit: the cheap member's last GPU stays taken.
  const FrontReply third = f->Submit("", Pod("third", 1));
  EXPECT_EQ(Json::parse(third.body)["cluster"].is_null(), true) << third.body;
}

// A member whose scheduler leaves the pod pending keeps it only while another may place it:
// the other binds it, the pending copy is withdrawn, and the metric counts it.
TEST(FrontTest, APodLeftPendingGoesToTheNextMemberAndItsCopyIsWithdrawn) {
  api::StubServer cheap, dear;
  std::atomic<int> withdrawn{0};
  ServePods(cheap, "cheap", /*hold_first=*/false, "Pending", &withdrawn);
  ServePods(dear, "dear", /*hold_first=*/false);
  FakeStore store;
  std::unique_ptr<Front> f = OverTwo(store, {"cheap", &cheap, 1.0}, {"dear", &dear, 2.0});
  const FrontReply r = f->Submit("", Pod("p", 1));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Json::parse(r.body)["cluster"], "dear") << r.body;
  EXPECT_EQ(withdrawn.load(), 1);
  EXPECT_NE(f->MetricsText().find("seedance_federation_left_pending_total 1\n"), std::string::npos);
}

// A member's reply or a stored record with fields of other types is read as if those fields
// were not given: a refusal (the next member is asked), never an exception.
TEST(FrontTest, FieldsOfTheWrongTypeAreNotGivenNotACrash) {
  api::StubServer odd, good;
  odd.http().Post("/v1/pods", [](const httplib::Request&, httplib::Response& res) {
    res.status = 201;
    res.set_content(R"({"uid": 5, "phase": ["Bound"], "revision": "x"})", "application/json");
  });
  ServePods(good, "good", /*hold_first=*/false);
  FakeStore store;
  std::unique_ptr<Front> f = OverTwo(store, {"odd", &odd, 1.0}, {"good", &good, 2.0});
  const FrontReply r = f->Submit("", Pod("p", 1));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Json::parse(r.body)["cluster"], "good") << r.body;
  EXPECT_NE(f->MetricsText().find("seedance_federation_refusals_total 1\n"), std::string::npos);

  const std::string pod = api::PodRequestToJson(Pod("q", 1)).dump();
  absl::StatusOr<Record> rec = ParseRecord(
      "u", R"({"request": )" + pod +
               R"(, "member": 5, "ended": "yes", "withdrawn": [{"member": 1, "uid": "c"}]})");
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->member, "");
  EXPECT_FALSE(rec->ended);
  ASSERT_EQ(rec->withdrawn.size(), 1u);
  EXPECT_EQ(rec->withdrawn[0].member, "");
  EXPECT_EQ(rec->withdrawn[0].uid, "c");
}

TEST(FrontTest, AMemberFileWithAMissingTokenFileIsRefusedNamingTheMember) {
  FrontOptions o = Unreachable();
  o.config.members[0].token_file = "/nonexistent/token";
  FakeStore store;
  absl::StatusOr<std::unique_ptr<Front>> f = Front::Create(o, store.Hook());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("member far: token_file /nonexistent/token"),
            std::string_view::npos)
      << f.status();
}

TEST(FrontDeathTest, AQuotaUseBelowZeroIsABug) {
  FrontOptions o = Unreachable();
  o.config.quotas.push_back({"ml-quota", {"ml"}, QuotaLimit{.gpus = 4}});
  FakeStore store;
  std::unique_ptr<Front> f = *Front::Create(o, store.Hook());
  Front::State& s = FrontTestPeer::state(*f);
  Record r;
  r.request = Pod("never-counted", 1);
  r.member = "far";
  base::MutexLock lock(s.mu);
  EXPECT_DEATH(s.Count(r, -1), "quota 'ml-quota' counts a negative use");
}

TEST(FrontDeathTest, StartingTwiceIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the first Start runs the member threads
  FakeStore store;
  std::unique_ptr<Front> f = *Front::Create(Unreachable(), store.Hook());
  f->Start();
  EXPECT_DEATH(f->Start(), "federation front started twice");
  f->Stop();
}

}  // namespace
}  // namespace seedance::federation
