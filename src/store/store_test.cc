#include "seedance/store/store.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::store {
namespace {

using ::testing::HasSubstr;

// A fresh directory under the test's temporary area, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string templ = std::string(base != nullptr ? base : "/tmp") + "/store_test.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    char* made = ::mkdtemp(buf.data());
    EXPECT_NE(made, nullptr);
    path_ = made != nullptr ? made : "/nonexistent";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string state() const { return path_ + "/state"; }
  std::string db() const { return state() + "/state.db"; }

 private:
  std::string path_;
};

std::unique_ptr<Store> MustOpen(const std::string& dir, StoreOptions o = {}) {
  auto s = Store::Open(dir, o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

int Mode(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_mode & 0777;
}

PodRecord Pod(const std::string& uid, int64_t rev) {
  PodRecord p;
  p.uid = uid;
  p.ns = "team-" + uid;
  p.name = "name-" + uid;
  p.spec_json = R"({"cpu_milli":8000,"labels":{"app":"ünïcødé \"quoted\""}})";
  p.phase = "Pending";
  p.gpus_json = "[]";
  p.revision = rev;
  return p;
}

NodeRecord Node(const std::string& name, int64_t rev, bool cordoned = false) {
  NodeRecord n;
  n.name = name;
  n.spec_json = R"({"name":")" + name + R"(","num_gpus":8})";
  n.cordoned = cordoned;
  n.revision = rev;
  return n;
}

EventRecord Event(int64_t rev, const std::string& type = "PodAdded") {
  return EventRecord{rev, type, "{\"revision\":" + std::to_string(rev) + "}"};
}

void ExpectNode(const NodeRecord& a, const NodeRecord& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.spec_json, b.spec_json);
  EXPECT_EQ(a.cordoned, b.cordoned);
  EXPECT_EQ(a.revision, b.revision);
}

void ExpectPod(const PodRecord& a, const PodRecord& b) {
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.ns, b.ns);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.spec_json, b.spec_json);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.node, b.node);
  EXPECT_EQ(a.gpus_json, b.gpus_json);
  EXPECT_EQ(a.revision, b.revision);
}

std::vector<std::string> PodUids(const Snapshot& s) {
  std::vector<std::string> out;
  for (const PodRecord& p : s.pods) out.push_back(p.uid);
  return out;
}

std::vector<int64_t> Revisions(const std::vector<EventRecord>& events) {
  std::vector<int64_t> out;
  for (const EventRecord& e : events) out.push_back(e.revision);
  return out;
}

TEST(StoreTest, NewStoreIsEmptyWithPrivatePermissions) {
  TempDir t;
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  auto snap = store->Load();
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_TRUE(snap->nodes.empty());
  EXPECT_TRUE(snap->pods.empty());
  EXPECT_EQ(snap->revision, 0);
  EXPECT_EQ(snap->policy_text, "");
  EXPECT_EQ(store->revision(), 0);
  EXPECT_EQ(store->oldest_event_revision(), 1);
  EXPECT_EQ(store->path(), t.db());
  Batch b;
  b.put_pods.push_back(Pod("a", 1));
  b.revision = 1;
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(Mode(t.state()), 0700);
  EXPECT_EQ(Mode(t.db()), 0600);
  EXPECT_EQ(Mode(t.db() + "-wal"), 0600);
  EXPECT_EQ(Mode(t.state() + "/lock"), 0600);
  EXPECT_FALSE(std::filesystem::exists(t.db() + ".init"));
}

TEST(StoreTest, RoundTripOfEveryField) {
  TempDir t;
  std::vector<NodeRecord> nodes = {Node("n1", 1), Node("n0", 2, true)};
  std::vector<PodRecord> pods = {Pod("u1", 3), Pod("u2", 4), Pod("u3", 5)};
  pods[1].phase = "Bound";
  pods[1].node = "n1";
  pods[1].gpus_json = R"([{"index":3,"milli":500},{"index":7,"milli":1000}])";
  pods[2].spec_json = std::string(100000, 'x');  // large values survive too
  {
    auto store = MustOpen(t.state());
    ASSERT_NE(store, nullptr);
    Batch b;
    b.put_nodes = nodes;
    b.put_pods = pods;
    b.events = {Event(1, "NodeAdded"), Event(2, "NodeAdded"), Event(5, "PodAdded")};
    b.revision = 5;
    b.policy_text = "profiles:\n  - name: default\n";
    ASSERT_TRUE(store->Commit(b).ok());
    EXPECT_EQ(store->revision(), 5);
  }
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->revision(), 5);
  auto snap = store->Load();
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->nodes.size(), 2u);
  for (size_t i = 0; i < nodes.size(); ++i) ExpectNode(snap->nodes[i], nodes[i]);
  ASSERT_EQ(snap->pods.size(), 3u);
  for (size_t i = 0; i < pods.size(); ++i) ExpectPod(snap->pods[i], pods[i]);
  EXPECT_EQ(snap->revision, 5);
  EXPECT_EQ(snap->policy_text, "profiles:\n  - name: default\n");
  auto events = store->EventsSince(0, 100);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].type, "NodeAdded");
  EXPECT_EQ((*events)[2].revision, 5);
  EXPECT_EQ((*events)[2].object_json, "{\"revision\":5}");
}

TEST(StoreTest, UpdatesKeepOrderAndDeletesRemove) {
  TempDir t;
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  Batch b1;
  b1.put_nodes = {Node("a", 1), Node("b", 1), Node("c", 1)};
  b1.put_pods = {Pod("p1", 1), Pod("p2", 1), Pod("p3", 1)};
  b1.revision = 1;
  ASSERT_TRUE(store->Commit(b1).ok());
  Batch b2;
  PodRecord bound = Pod("p1", 2);
  bound.phase = "Bound";
  bound.node = "c";
  bound.gpus_json = R"([{"index":0,"milli":250}])";
  b2.put_pods = {bound, Pod("p2", 2)};  // p2 is deleted later in the same batch
  b2.delete_pods = {"p2", "never-existed"};
  b2.put_nodes = {Node("b", 2, true)};
  b2.delete_nodes = {"a"};
  b2.revision = 2;
  ASSERT_TRUE(store->Commit(b2).ok());
  Batch b3;
  b3.put_pods = {Pod("p2", 3)};  // put again after a delete: goes to the end
  b3.put_nodes = {Node("a", 3)};
  b3.revision = 3;
  ASSERT_TRUE(store->Commit(b3).ok());
  store.reset();
  store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  auto snap = store->Load();
  ASSERT_TRUE(snap.ok());
  EXPECT_THAT(PodUids(*snap), ::testing::ElementsAre("p1", "p3", "p2"));
  ExpectPod(snap->pods[0], bound);
  ASSERT_EQ(snap->nodes.size(), 3u);
  EXPECT_EQ(snap->nodes[0].name, "b");
  EXPECT_TRUE(snap->nodes[0].cordoned);
  EXPECT_EQ(snap->nodes[0].revision, 2);
  EXPECT_EQ(snap->nodes[1].name, "c");
  EXPECT_EQ(snap->nodes[2].name, "a");
  EXPECT_EQ(snap->revision, 3);
  EXPECT_EQ(snap->policy_text, "");  // never committed
}

TEST(StoreTest, PolicyTextIsKeptUntilReplaced) {
  TempDir t;
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  Batch b;
  b.policy_text = "v1";
  b.revision = 1;
  ASSERT_TRUE(store->Commit(b).ok());
  Batch other;
  other.put_pods = {Pod("x", 2)};
  other.revision = 2;
  ASSERT_TRUE(store->Commit(other).ok());
  EXPECT_EQ(store->Load()->policy_text, "v1");
  Batch b2;
  b2.policy_text = "v2";
  b2.revision = 3;
  ASSERT_TRUE(store->Commit(b2).ok());
  EXPECT_EQ(store->Load()->policy_text, "v2");
}

TEST(StoreTest, EventsSinceHonoursAfterAndLimit) {
  TempDir t;
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  for (int64_t r = 1; r <= 10; r += 2) {
    Batch b;
    b.events = {Event(r), Event(r + 1)};
    b.revision = r + 1;
    ASSERT_TRUE(store->Commit(b).ok());
  }
  EXPECT_EQ(Revisions(*store->EventsSince(0, 100)),
            (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(Revisions(*store->EventsSince(5, 3)), (std::vector<int64_t>{6, 7, 8}));
  EXPECT_TRUE(store->EventsSince(10, 5)->empty());
  EXPECT_TRUE(store->EventsSince(0, 0)->empty());
  EXPECT_EQ(Revisions(*store->EventsSince(-7, 1)), (std::vector<int64_t>{1}));
  EXPECT_EQ(store->event_count(), 10);
  EXPECT_EQ(store->oldest_event_revision(), 1);
}

TEST(StoreTest, RetentionDropsTheOldestEventsAndPersists) {
  TempDir t;
  StoreOptions o;
  o.event_retention = 5;
  {
    auto store = MustOpen(t.state(), o);
    ASSERT_NE(store, nullptr);
    Batch b1;
    b1.events = {Event(1), Event(2), Event(3)};
    b1.revision = 3;
    ASSERT_TRUE(store->Commit(b1).ok());
    EXPECT_EQ(store->oldest_event_revision(), 1);
    Batch b2;  // 7 events at once: more than the retention on its own
    for (int64_t r = 4; r <= 10; ++r) b2.events.push_back(Event(r * 10));
    b2.revision = 100;
    ASSERT_TRUE(store->Commit(b2).ok());
    EXPECT_EQ(store->event_count(), 5);
    EXPECT_EQ(Revisions(*store->EventsSince(0, 100)), (std::vector<int64_t>{60, 70, 80, 90, 100}));
    // Dropped: 1, 2, 3, 40, 50. A watch after 50 or later is complete; after 49 it must relist.
    EXPECT_EQ(store->oldest_event_revision(), 51);
  }
  auto store = MustOpen(t.state(), o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->oldest_event_revision(), 51);
  EXPECT_EQ(store->event_count(), 5);
  Batch b3;
  b3.events = {Event(101)};
  b3.revision = 101;
  ASSERT_TRUE(store->Commit(b3).ok());
  EXPECT_EQ(store->oldest_event_revision(), 61);
  EXPECT_EQ(Revisions(*store->EventsSince(60, 100)), (std::vector<int64_t>{70, 80, 90, 100, 101}));
  // A larger retention on reopen keeps what is there and drops nothing more.
  store.reset();
  o.event_retention = 1000;
  store = MustOpen(t.state(), o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->oldest_event_revision(), 61);
  EXPECT_EQ(store->event_count(), 5);
}

TEST(StoreTest, CommitRefusesBatchesThatBreakTheRulesAndWritesNothing) {
  TempDir t;
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  Batch ok;
  ok.put_pods = {Pod("a", 5)};
  ok.events = {Event(5)};
  ok.revision = 5;
  ASSERT_TRUE(store->Commit(ok).ok());

  auto expect_refused = [&](Batch b, const std::string& why) {
    absl::Status s = store->Commit(b);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << why << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(why));
  };
  Batch backwards;
  backwards.put_pods = {Pod("b", 4)};
  backwards.revision = 4;
  expect_refused(backwards, "below the store's revision 5");
  Batch old_event;
  old_event.events = {Event(5)};
  old_event.revision = 6;
  expect_refused(old_event, "not above the previous event's 5");
  Batch unordered;
  unordered.events = {Event(8), Event(7)};
  unordered.revision = 8;
  expect_refused(unordered, "not above the previous event's 8");
  Batch ahead;
  ahead.events = {Event(9)};
  ahead.revision = 8;
  expect_refused(ahead, "above the batch revision 8");
  Batch no_uid;
  no_uid.put_pods = {Pod("", 9)};
  no_uid.revision = 9;
  expect_refused(no_uid, "empty uid");
  Batch no_name;
  no_name.put_nodes = {Node("", 9)};
  no_name.revision = 9;
  expect_refused(no_name, "empty name");

  auto snap = store->Load();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(PodUids(*snap), std::vector<std::string>{"a"});
  EXPECT_TRUE(snap->nodes.empty());
  EXPECT_EQ(snap->revision, 5);
  EXPECT_EQ(store->revision(), 5);
  EXPECT_EQ(Revisions(*store->EventsSince(0, 10)), std::vector<int64_t>{5});
  // An empty batch at the same revision is a no-op; the store still works afterwards.
  Batch empty;
  empty.revision = 5;
  EXPECT_TRUE(empty.empty());
  EXPECT_TRUE(store->Commit(empty).ok());
  Batch next;
  next.events = {Event(6)};
  next.revision = 6;
  EXPECT_FALSE(next.empty());
  EXPECT_TRUE(store->Commit(next).ok());
  EXPECT_EQ(store->revision(), 6);
}

TEST(StoreTest, OpenRefusesBadArguments) {
  TempDir t;
  EXPECT_EQ(Store::Open("").status().code(), absl::StatusCode::kInvalidArgument);
  StoreOptions o;
  o.event_retention = 0;
  auto s = Store::Open(t.state(), o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("retention"));
  StoreOptions c;
  c.checkpoint_pages = -1;
  s = Store::Open(t.state(), c);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("checkpoint pages"));
}

TEST(StoreTest, TheWalStaysBoundedUnderContinuousCommits) {
  for (int pages : {0, 10}) {  // SQLite's own checkpoint, and the background checkpointer
    SCOPED_TRACE("checkpoint_pages " + std::to_string(pages));
    TempDir t;
    StoreOptions o;
    o.checkpoint_pages = pages;
    auto store = MustOpen(t.state(), o);
    ASSERT_NE(store, nullptr);
    int64_t rev = 0;
    for (int c = 0; c < 300; ++c) {
      Batch b;
      for (int i = 0; i < 16; ++i) {
        ++rev;
        b.put_pods.push_back(Pod(std::to_string(rev), rev));
      }
      b.events = {Event(rev)};
      b.revision = rev;
      ASSERT_TRUE(store->Commit(b).ok());
    }
    // Without checkpoints the WAL would hold every page written (~2,000 here).
    const auto wal = std::filesystem::file_size(t.db() + "-wal");
    const uint64_t bound_pages = pages == 0 ? 1100 : 100 * static_cast<uint64_t>(pages);
    EXPECT_LT(wal, bound_pages * (4096 + 24)) << wal;
    auto snap = store->Load();
    ASSERT_TRUE(snap.ok());
    EXPECT_EQ(snap->pods.size(), 300u * 16);
    store.reset();
    store = MustOpen(t.state(), o);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Load()->pods.size(), 300u * 16);
  }
}

TEST(StoreTest, CreatesMissingParentDirectoriesAndAcceptsATrailingSlash) {
  TempDir t;
  const std::string dir = t.path() + "/a/b/state/";
  auto store = MustOpen(dir);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->path(), t.path() + "/a/b/state/state.db");
  EXPECT_EQ(Mode(t.path() + "/a/b"), 0700);
}

// Opens DIR, expecting `code` and a message naming `path` and containing `what`; checks that the
// refused file was not modified.
void ExpectRefused(const std::string& dir, const std::string& path, absl::StatusCode code,
                   const std::string& what) {
  const std::string before = ReadAll(path);
  auto s = Store::Open(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), code) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(what));
  EXPECT_EQ(ReadAll(path), before) << "a refused file must be left exactly as it was";
  EXPECT_FALSE(std::filesystem::exists(path + "-wal")) << "nothing written beside it";
}

TEST(StoreRefusalTest, PlainTextFile) {
  TempDir t;
  std::filesystem::create_directories(t.state());
  WriteAll(t.db(), "name,cpu_milli\nnode-1,64000\n");
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kFailedPrecondition, "not an SQLite database");
}

TEST(StoreRefusalTest, EmptyFile) {
  TempDir t;
  std::filesystem::create_directories(t.state());
  WriteAll(t.db(), "");
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kFailedPrecondition, "empty file");
}

TEST(StoreRefusalTest, DirectoryNamedStateDb) {
  TempDir t;
  std::filesystem::create_directories(t.db());
  auto s = Store::Open(t.state());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(t.db()));
}

TEST(StoreRefusalTest, StateDirIsAFile) {
  TempDir t;
  WriteAll(t.state(), "not a directory");
  auto s = Store::Open(t.state());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(t.state()));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("not a directory"));
}

// Runs SQL on a database file with SQLite directly (to build foreign files).
void RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err != nullptr ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(StoreRefusalTest, SqliteDatabaseOfAnotherApplication) {
  TempDir t;
  std::filesystem::create_directories(t.state());
  RawSql(t.db(),
         "PRAGMA application_id=305419896; CREATE TABLE pods(x); INSERT INTO pods "
         "VALUES(1);");
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kFailedPrecondition,
                "another application (application_id 0x12345678");
}

TEST(StoreRefusalTest, PlainSqliteDatabaseWithoutApplicationId) {
  TempDir t;
  std::filesystem::create_directories(t.state());
  RawSql(t.db(), "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kFailedPrecondition,
                "application_id 0x00000000");
}

// Runs SQL on a WAL-mode database and leaves the WAL un-checkpointed beside it (as a crashed
// program would).
void RawSqlLeavingWal(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  char* err = nullptr;
  int rc =
      sqlite3_exec(db, ("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; " + sql).c_str(),
                   nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err != nullptr ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_TRUE(std::filesystem::exists(path + "-wal"));
}

TEST(StoreRefusalTest, ForeignDatabaseWithAHotWalIsNotTouched) {
  TempDir t;
  std::filesystem::create_directories(t.state());
  RawSql(t.db(), "PRAGMA application_id=42; CREATE TABLE t(x);");
  RawSqlLeavingWal(t.db(), "INSERT INTO t VALUES(1); INSERT INTO t VALUES(2);");
  const std::string db = ReadAll(t.db()), wal = ReadAll(t.db() + "-wal");
  auto s = Store::Open(t.state());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("another application"));
  EXPECT_EQ(ReadAll(t.db()), db);
  EXPECT_EQ(ReadAll(t.db() + "-wal"), wal);
}

TEST(StoreRefusalTest, NewerSchemaVersionStillInTheWal) {
  TempDir t;
  { ASSERT_NE(MustOpen(t.state()), nullptr); }
  // A newer seedance bumped the version and crashed before checkpointing: only SQLite sees it.
  RawSqlLeavingWal(t.db(), "PRAGMA user_version=9; CREATE TABLE extra(x);");
  const std::string db = ReadAll(t.db()), wal = ReadAll(t.db() + "-wal");
  auto s = Store::Open(t.state());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("schema version 9 is newer"));
  EXPECT_EQ(ReadAll(t.db()), db) << "the refused file was not checkpointed into";
  EXPECT_EQ(ReadAll(t.db() + "-wal"), wal);
}

TEST(StoreRefusalTest, NewerSchemaVersion) {
  TempDir t;
  { ASSERT_NE(MustOpen(t.state()), nullptr); }
  RawSql(t.db(), "PRAGMA user_version=" + std::to_string(kSchemaVersion + 1));
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kFailedPrecondition,
                "schema version 3 is newer than this seedance supports (2)");
}

TEST(StoreRefusalTest, OurIdButMissingTables) {
  TempDir t;
  std::filesystem::create_directories(t.state());
  RawSql(t.db(), "PRAGMA application_id=" + std::to_string(kApplicationId) +
                     "; PRAGMA user_version=1; PRAGMA journal_mode=WAL; CREATE TABLE meta(k);");
  // Schema 1: the migration to 2 runs in the transaction that finds the damage, and rolls back.
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kDataLoss,
                "the schema is damaged (no such table: nodes)");
}

// ---- Objects (schema 2) ----------------------------------------------------------------------

ObjectRecord Object(const std::string& kind, const std::string& key, const std::string& json) {
  return ObjectRecord{kind, key, json, /*revision=*/0};  // Commit sets the revision
}

// "kind key=json@revision" for each object, in Load()'s order.
std::vector<std::string> Objects(Store& store) {
  absl::StatusOr<Snapshot> snap = store.Load();
  EXPECT_TRUE(snap.ok()) << snap.status();
  std::vector<std::string> out;
  if (!snap.ok()) return out;
  for (const ObjectRecord& o : snap->objects) {
    out.push_back(o.kind + " " + o.key + "=" + o.json + "@" + std::to_string(o.revision));
  }
  return out;
}

TEST(StoreObjectsTest, PutReplaceDeleteInKindKeyOrderAndSurviveReopen) {
  TempDir t;
  {
    auto store = MustOpen(t.state());
    ASSERT_NE(store, nullptr);
    Batch b1;
    b1.put_objects = {Object("experiment", "exp-b", "{\"v\":1}"),
                      Object("experiment-events", "exp-a/0001", "[1]"),
                      Object("experiment", "exp-a", "{\"v\":1}"),
                      Object("experiment", "exp-c", "{}")};
    b1.put_objects[0].revision = 99;  // ignored: the batch's revision is stored
    b1.revision = 3;
    EXPECT_FALSE(b1.empty());
    ASSERT_TRUE(store->Commit(b1).ok());
    Batch b2;
    b2.put_objects = {Object("experiment", "exp-b", "{\"v\":2}")};
    b2.delete_objects = {
        {"experiment", "exp-c"}, {"experiment", "never-existed"}, {"other-kind", "exp-a"}};
    b2.revision = 4;
    ASSERT_TRUE(store->Commit(b2).ok());
    EXPECT_THAT(Objects(*store), ::testing::ElementsAre("experiment exp-a={\"v\":1}@3",
                                                        "experiment exp-b={\"v\":2}@4",
                                                        "experiment-events exp-a/0001=[1]@3"));
    // Deletes apply before puts: a batch replaces everything under a prefix, and a delete and
    // a put of one object leave it put.
    Batch b3;
    b3.delete_object_prefixes = {{"experiment-events", "exp-a/"}};
    b3.delete_objects = {{"experiment", "exp-d"}};
    b3.put_objects = {Object("experiment-events", "exp-a/0002", "[2]"),
                      Object("experiment", "exp-d", "{}")};
    b3.revision = 5;
    ASSERT_TRUE(store->Commit(b3).ok());
  }
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Objects(*store), ::testing::ElementsAre(
                                   "experiment exp-a={\"v\":1}@3", "experiment exp-b={\"v\":2}@4",
                                   "experiment exp-d={}@5", "experiment-events exp-a/0002=[2]@5"));
  EXPECT_EQ(store->revision(), 5);
}

TEST(StoreObjectsTest, KeysAreAnyBytesButNulInBytewiseOrder) {
  TempDir t;
  const std::vector<std::string> keys = {"a",
                                         "a/b",
                                         "\xc3\xa9t\xc3\xa9",
                                         "\xff",
                                         "\xff\xfe",
                                         "\x01",
                                         std::string(kMaxObjectKeyBytes, 'k')};
  const std::string json = std::string("{\"bytes\":\"\xff\"}") + std::string(1, '\0') + "tail";
  {
    auto store = MustOpen(t.state());
    ASSERT_NE(store, nullptr);
    Batch b;
    for (const std::string& k : keys) b.put_objects.push_back(Object("k", k, json));
    b.revision = 1;
    ASSERT_TRUE(store->Commit(b).ok());
  }
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  auto snap = store->Load();
  ASSERT_TRUE(snap.ok());
  std::vector<std::string> want = keys;
  std::sort(want.begin(), want.end());  // std::string compares as unsigned bytes
  std::vector<std::string> got;
  for (const ObjectRecord& o : snap->objects) {
    got.push_back(o.key);
    EXPECT_EQ(o.json, json);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(want.front(), "\x01");
  EXPECT_EQ(want.back(), "\xff\xfe");
}

// Prefix deletes against a model (std::string::starts_with), over keys with '/' and 0xFF bytes,
// where a naive upper bound (prefix + 1 in the last byte) would overflow.
TEST(StoreObjectsTest, PrefixDeleteRemovesExactlyTheKeysWithThatPrefix) {
  const std::vector<std::string> keys = {"ru",      "run",   "run/1", "run/1/a",     "run/10",
                                         "run/2",   "run0",  "a\xff", "a\xff\xff/x", "a\xff\x01",
                                         "b",       "b\x01", "\xff",  "\xff\xff",    "\xff\xff\xfe",
                                         "\xfe\xff"};
  const std::vector<std::string> prefixes = {"run/1", "run",      "r",    "a\xff", "a\xff\xff",
                                             "\xff",  "\xff\xff", "\xfe", "zzz",   "b"};
  for (const std::string& prefix : prefixes) {
    SCOPED_TRACE("prefix " + absl::CHexEscape(prefix));
    TempDir t;
    auto store = MustOpen(t.state());
    ASSERT_NE(store, nullptr);
    Batch put;
    for (const std::string& k : keys) {
      put.put_objects.push_back(Object("x", k, "{}"));
      put.put_objects.push_back(Object("y", k, "{}"));  // another kind: untouched
    }
    put.revision = 1;
    ASSERT_TRUE(store->Commit(put).ok());
    Batch del;
    del.delete_object_prefixes = {{"x", prefix}};
    del.revision = 2;
    ASSERT_TRUE(store->Commit(del).ok());
    std::vector<std::pair<std::string, std::string>> model;  // (kind, key), sorted as Load's
    for (const std::string& k : keys) {
      if (!k.starts_with(prefix)) model.emplace_back("x", k);
      model.emplace_back("y", k);
    }
    std::sort(model.begin(), model.end());
    std::vector<std::string> want;
    for (const auto& [kind, key] : model) want.push_back(kind + " " + key + "={}@1");
    EXPECT_EQ(Objects(*store), want);
  }
}

TEST(StoreObjectsTest, RefusesBadKindsKeysAndPrefixesAndWritesNothing) {
  TempDir t;
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  Batch ok;
  ok.put_objects = {Object("experiment", "e1", "{}")};
  ok.revision = 1;
  ASSERT_TRUE(store->Commit(ok).ok());
  struct Case {
    std::string name;
    Batch batch;
    std::string want;
  };
  auto put = [](ObjectRecord o) {
    Batch b;
    b.put_objects = {Object("experiment", "fine", "{}"), std::move(o)};
    b.revision = 2;
    return b;
  };
  auto del = [](std::string kind, std::string key) {
    Batch b;
    b.put_objects = {Object("experiment", "fine", "{}")};
    b.delete_objects = {{std::move(kind), std::move(key)}};
    b.revision = 2;
    return b;
  };
  auto del_prefix = [](std::string kind, std::string prefix) {
    Batch b;
    b.put_objects = {Object("experiment", "fine", "{}")};
    b.delete_object_prefixes = {{std::move(kind), std::move(prefix)}};
    b.revision = 2;
    return b;
  };
  const std::vector<Case> cases = {
      {"empty kind", put(Object("", "k", "{}")), "put_objects[1]: object kind \"\" (0 bytes)"},
      {"upper case", put(Object("Experiment", "k", "{}")), "expected 1 to 63 of [a-z0-9-]"},
      {"slash in kind", put(Object("a/b", "k", "{}")), "object kind \"a/b\""},
      {"kind of 64", put(Object(std::string(64, 'a'), "k", "{}")), "(64 bytes)"},
      {"empty key", put(Object("experiment", "", "{}")), "put_objects[1]: an empty object key"},
      {"NUL in key", put(Object("experiment", std::string("a\0b", 3), "{}")), "none of them NUL"},
      {"key of 1025", put(Object("experiment", std::string(1025, 'k'), "{}")), "(1025 bytes)"},
      {"delete, empty key", del("experiment", ""), "delete_objects[0]: an empty object key"},
      {"delete, bad kind", del("Bad", "k"), "delete_objects[0]: object kind"},
      {"empty prefix", del_prefix("experiment", ""),
       "delete_object_prefixes[0]: an empty object key prefix"},
      {"prefix, bad kind", del_prefix("", "e"), "delete_object_prefixes[0]: object kind"},
  };
  for (const Case& c : cases) {
    absl::Status s = store->Commit(c.batch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.want)) << c.name;
  }
  EXPECT_THAT(Objects(*store), ::testing::ElementsAre("experiment e1={}@1"));
  EXPECT_EQ(store->revision(), 1);
  EXPECT_TRUE(CheckObjectKind(std::string(kMaxObjectKindBytes, 'z')).ok());
  EXPECT_TRUE(CheckObjectKind("a-0").ok());
}

// The schema of seedance 0.3.0 (user_version 1), as its CreateFresh wrote it.
constexpr const char kSchema1[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT;"
    "CREATE TABLE nodes(name TEXT PRIMARY KEY NOT NULL, spec_json TEXT NOT NULL,"
    " cordoned INTEGER NOT NULL, revision INTEGER NOT NULL) STRICT;"
    "CREATE TABLE pods(uid TEXT PRIMARY KEY NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,"
    " spec_json TEXT NOT NULL, phase TEXT NOT NULL, node TEXT NOT NULL, gpus_json TEXT NOT NULL,"
    " revision INTEGER NOT NULL) STRICT;"
    "CREATE TABLE events(revision INTEGER PRIMARY KEY NOT NULL, type TEXT NOT NULL,"
    " object_json TEXT NOT NULL) STRICT;"
    "INSERT INTO meta(key, value) VALUES('revision', 7), ('events_dropped_through', 2),"
    " ('policy_text', 'profiles: []'), ('created_by', 'seedance 0.3.0'), ('created_unix_s', 1);"
    "INSERT INTO nodes VALUES('n0', '{\"num_gpus\":8}', 1, 3);"
    "INSERT INTO pods VALUES('u1', 'ns', 'p1', '{}', 'Bound', 'n0', '[{\"index\":0}]', 7);"
    "INSERT INTO events VALUES(6, 'PodAdded', '{}'), (7, 'PodBound', '{}');";

// A state directory as seedance 0.3.0 left it (a clean close: no WAL).
void MakeSchema1Store(const TempDir& t) {
  std::filesystem::create_directories(t.state());
  RawSql(t.db(), "PRAGMA application_id=" + std::to_string(kApplicationId) +
                     "; PRAGMA user_version=1; " + kSchema1);
}

int64_t UserVersion(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, nullptr), SQLITE_OK);
  const int64_t v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

// The user_version in the file's header (offset 60), as Open reads it before SQLite does.
int64_t HeaderUserVersion(const std::string& path) {
  const std::string h = ReadAll(path).substr(0, 100);
  if (h.size() < 100) return -1;
  const auto* u = reinterpret_cast<const unsigned char*>(h.data() + 60);
  return (int64_t{u[0]} << 24) | (int64_t{u[1]} << 16) | (int64_t{u[2]} << 8) | int64_t{u[3]};
}

TEST(StoreMigrationTest, ASchema1FileIsMigratedInPlaceAndKeepsItsState) {
  TempDir t;
  MakeSchema1Store(t);
  ASSERT_EQ(UserVersion(t.db()), 1);
  ASSERT_EQ(HeaderUserVersion(t.db()), 1);
  {
    auto store = MustOpen(t.state());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->revision(), 7);
    EXPECT_EQ(store->oldest_event_revision(), 3);
    EXPECT_EQ(store->event_count(), 2);
    auto snap = store->Load();
    ASSERT_TRUE(snap.ok()) << snap.status();
    ASSERT_EQ(snap->nodes.size(), 1u);
    EXPECT_TRUE(snap->nodes[0].cordoned);
    EXPECT_EQ(PodUids(*snap), std::vector<std::string>{"u1"});
    EXPECT_EQ(snap->pods[0].gpus_json, "[{\"index\":0}]");
    EXPECT_EQ(snap->policy_text, "profiles: []");
    EXPECT_TRUE(snap->objects.empty());
    Batch b;
    b.put_objects = {Object("experiment", "e1", "{}")};
    b.events = {Event(8)};
    b.revision = 8;
    ASSERT_TRUE(store->Commit(b).ok());
  }
  EXPECT_EQ(UserVersion(t.db()), kSchemaVersion);
  EXPECT_EQ(HeaderUserVersion(t.db()), 2) << "a clean close checkpoints the migration";
  auto store = MustOpen(t.state());  // a schema-2 file opens as it is
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Objects(*store), ::testing::ElementsAre("experiment e1={}@8"));
  EXPECT_EQ(store->Load()->pods.size(), 1u);
  EXPECT_EQ(Revisions(*store->EventsSince(0, 10)), (std::vector<int64_t>{6, 7, 8}));
}

TEST(StoreMigrationTest, ASchema1FileWithItsWalStillHotIsMigrated) {
  TempDir t;
  MakeSchema1Store(t);
  // 0.3.0 crashed: its last commit is only in the WAL.
  RawSqlLeavingWal(t.db(), "UPDATE meta SET value = 9 WHERE key = 'revision';");
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->revision(), 9);
  Batch b;
  b.put_objects = {Object("experiment", "e1", "{}")};
  b.revision = 10;
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_THAT(Objects(*store), ::testing::ElementsAre("experiment e1={}@10"));
}

TEST(StoreMigrationTest, ASchema1FileWithAnObjectsTableAlreadyIsRefusedAndLeftAlone) {
  TempDir t;
  MakeSchema1Store(t);
  RawSql(t.db(), "CREATE TABLE objects(x);");
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kDataLoss,
                "schema 1 cannot be migrated to 2 (table objects already exists)");
  EXPECT_EQ(UserVersion(t.db()), 1);
}

// A closed store with enough pods to span many pages.
void MakeBigStore(const TempDir& t) {
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  Batch b;
  for (int i = 0; i < 3000; ++i) b.put_pods.push_back(Pod("pod-" + std::to_string(i), 1));
  b.revision = 1;
  ASSERT_TRUE(store->Commit(b).ok());
}

TEST(StoreRefusalTest, TruncatedFile) {
  TempDir t;
  MakeBigStore(t);
  ASSERT_FALSE(std::filesystem::exists(t.db() + "-wal")) << "a clean close checkpoints";
  const auto size = std::filesystem::file_size(t.db());
  ASSERT_GT(size, 100000u);
  std::filesystem::resize_file(t.db(), size / 2);
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kDataLoss, "corrupt");
}

TEST(StoreRefusalTest, GarbledPages) {
  TempDir t;
  MakeBigStore(t);
  std::string data = ReadAll(t.db());
  ASSERT_GT(data.size(), 40000u);
  std::mt19937 rng(7);
  for (size_t i = 4096; i < data.size() / 2; ++i) data[i] = static_cast<char>(rng());
  WriteAll(t.db(), data);
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kDataLoss, "corrupt");
}

TEST(StoreRefusalTest, GarbledHeader) {
  TempDir t;
  MakeBigStore(t);
  std::string data = ReadAll(t.db());
  for (size_t i = 0; i < 16; ++i) data[i] = static_cast<char>(0xA5 ^ i);
  WriteAll(t.db(), data);
  ExpectRefused(t.state(), t.db(), absl::StatusCode::kFailedPrecondition, "not an SQLite database");
}

TEST(StoreRefusalTest, LeftoverInitFileIsDiscarded) {
  TempDir t;
  std::filesystem::create_directories(t.state());
  WriteAll(t.db() + ".init", "half-created");  // a crash while the database was being created
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(std::filesystem::exists(t.db() + ".init"));
  EXPECT_TRUE(store->Load().ok());
}

TEST(StoreLockTest, SecondOpenInTheSameProcessFailsNamingThePid) {
  TempDir t;
  auto first = MustOpen(t.state());
  ASSERT_NE(first, nullptr);
  auto second = Store::Open(t.state());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string msg(second.status().message());
  EXPECT_THAT(msg, HasSubstr("pid " + std::to_string(::getpid())));
  EXPECT_THAT(msg, HasSubstr(t.state()));
  EXPECT_THAT(msg, HasSubstr("in use"));
  first.reset();
  EXPECT_NE(MustOpen(t.state()), nullptr) << "the lock goes with the store";
}

TEST(StoreLockTest, AnotherProcessHoldingTheLockIsNamed) {
  TempDir t;
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    auto s = Store::Open(t.state());
    char c = s.ok() ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(3);
    (void)::read(release[0], &c, 1);  // hold the store until the parent closes the pipe
    ::_exit(s.ok() ? 0 : 2);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto s = Store::Open(t.state());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("pid " + std::to_string(child)));
  ::close(release[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(ready[0]);
  EXPECT_NE(MustOpen(t.state()), nullptr) << "a dead holder's lock is free again";
}

TEST(StoreTest, EventsSinceRunsConcurrentlyWithCommits) {
  TempDir t;
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  std::atomic<bool> done{false};
  std::atomic<int64_t> max_seen{0};
  std::thread watcher([&] {
    int64_t since = 0;
    while (!done.load()) {
      auto events = store->EventsSince(since, 1000);
      if (!events.ok()) break;
      for (const EventRecord& e : *events) {
        EXPECT_EQ(e.revision, since + 1) << "events arrive in order without gaps";
        since = e.revision;
      }
      max_seen = since;
    }
  });
  for (int64_t r = 1; r <= 200; ++r) {
    Batch b;
    b.events = {Event(r)};
    b.revision = r;
    ASSERT_TRUE(store->Commit(b).ok());
  }
  done = true;
  watcher.join();
  EXPECT_LE(max_seen.load(), 200);
  EXPECT_EQ(store->EventsSince(0, 1000)->size(), 200u);
}

bool Drain(int fd, int timeout_ms, std::string* buf);

// A commit that cannot be written (the file-size limit stands in for a full disk): the batch is
// not applied, the store refuses further commits, and a reopen finds the last good state.
TEST(StoreTest, AFailedCommitWritesNothingAndTheStoreRefusesMore) {
  TempDir t;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // in a child: the limit applies to the whole process
    ::close(fds[0]);
    auto store = Store::Open(t.state());
    if (!store.ok()) ::_exit(2);
    Batch good;
    good.put_pods = {Pod("kept", 1)};
    good.events = {Event(1)};
    good.revision = 1;
    if (!(*store)->Commit(good).ok()) ::_exit(3);
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {1 << 20, 1 << 20};  // 1 MiB per file
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(4);
    Batch big;
    for (int i = 0; i < 2000; ++i) big.put_pods.push_back(Pod("big-" + std::to_string(i), 2));
    for (PodRecord& p : big.put_pods) p.spec_json = std::string(2000, 'x');
    big.events = {Event(2)};
    big.revision = 2;
    absl::Status failed = (*store)->Commit(big);
    Batch small;
    small.put_pods = {Pod("after", 3)};
    small.revision = 3;
    absl::Status refused = (*store)->Commit(small);
    std::string report = std::to_string(static_cast<int>(failed.code())) + " " +
                         std::to_string(static_cast<int>(refused.code())) + " " +
                         std::string(refused.message());
    if (::write(fds[1], report.data(), report.size()) < 0) ::_exit(5);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  Drain(fds[0], -1, &report);
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::printf("child: %s\n", report.c_str());
  std::istringstream in(report);
  int failed_code = -1, refused_code = -1;
  in >> failed_code >> refused_code;
  EXPECT_NE(failed_code, static_cast<int>(absl::StatusCode::kOk)) << report;
  EXPECT_EQ(refused_code, static_cast<int>(absl::StatusCode::kFailedPrecondition)) << report;
  EXPECT_THAT(report, HasSubstr("unusable after an earlier failed commit"));
  auto store = MustOpen(t.state());
  ASSERT_NE(store, nullptr);
  auto snap = store->Load();
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(PodUids(*snap), std::vector<std::string>{"kept"});
  EXPECT_EQ(snap->revision, 1);
  EXPECT_EQ(Revisions(*store->EventsSince(0, 10)), std::vector<int64_t>{1});
}

// ---- Durability under SIGKILL ----------------------------------------------------------------

// The batch committed at revision r: a deterministic function of r, so the parent can compute
// exactly what the store must hold after any prefix of commits.
Batch ModelBatch(int64_t r) {
  Batch b;
  b.revision = r;
  const int k = 1 + static_cast<int>((r * 7) % 32);
  for (int j = 0; j < k; ++j) {
    PodRecord p;
    p.uid = "pod-" + std::to_string(r) + "-" + std::to_string(j);
    p.ns = "ns-" + std::to_string(j % 3);
    p.name = p.uid;
    p.spec_json = "{\"r\":" + std::to_string(r) + ",\"j\":" + std::to_string(j) + "}";
    p.phase = j % 2 == 0 ? "Pending" : "Bound";
    p.node = j % 2 == 0 ? "" : "node-" + std::to_string(r % 10);
    p.gpus_json = "[{\"index\":" + std::to_string(j % 8) + ",\"milli\":500}]";
    p.revision = r;
    b.put_pods.push_back(p);
  }
  if (r > 5) {
    const int64_t old = r - 5;
    const int old_k = 1 + static_cast<int>((old * 7) % 32);
    for (int j = 0; j < old_k; j += 2) {
      b.delete_pods.push_back("pod-" + std::to_string(old) + "-" + std::to_string(j));
    }
  }
  b.put_nodes.push_back(Node("node-" + std::to_string(r % 10), r, r % 3 == 0));
  if (r % 13 == 0) b.delete_nodes.push_back("node-" + std::to_string((r + 5) % 10));
  b.events.push_back(Event(r, "Batch"));
  if (r % 7 == 0) b.policy_text = "policy " + std::to_string(r);
  return b;
}

// What the store holds after the batches 1..n, in Load()'s order.
Snapshot ModelSnapshot(int64_t n) {
  std::map<std::string, std::pair<int64_t, PodRecord>> pods;  // uid -> (first-put seq, record)
  std::map<std::string, std::pair<int64_t, NodeRecord>> nodes;
  int64_t seq = 0;
  Snapshot s;
  for (int64_t r = 1; r <= n; ++r) {
    Batch b = ModelBatch(r);
    for (const NodeRecord& x : b.put_nodes) {
      auto [it, added] = nodes.try_emplace(x.name, seq, x);
      if (!added) it->second.second = x;
      ++seq;
    }
    for (const std::string& x : b.delete_nodes) nodes.erase(x);
    for (const PodRecord& x : b.put_pods) {
      auto [it, added] = pods.try_emplace(x.uid, seq, x);
      if (!added) it->second.second = x;
      ++seq;
    }
    for (const std::string& x : b.delete_pods) pods.erase(x);
    if (b.policy_text) s.policy_text = *b.policy_text;
    s.revision = b.revision;
  }
  std::vector<std::pair<int64_t, PodRecord>> p;
  for (auto& [uid, v] : pods) p.push_back(v);
  std::sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& v : p) s.pods.push_back(v.second);
  std::vector<std::pair<int64_t, NodeRecord>> q;
  for (auto& [name, v] : nodes) q.push_back(v);
  std::sort(q.begin(), q.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& v : q) s.nodes.push_back(v.second);
  return s;
}

// The child: opens the store, continues from its revision, commits ModelBatch(r) for r = rev+1,
// ... and writes r to `fd` after each Commit returns. Runs until killed.
[[noreturn]] void CommitLoop(const std::string& dir, int fd) {
  auto store = Store::Open(dir);
  if (!store.ok()) ::_exit(2);
  for (int64_t r = (*store)->revision() + 1;; ++r) {
    if (!(*store)->Commit(ModelBatch(r)).ok()) ::_exit(3);
    if (::write(fd, &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) ::_exit(4);
    if (r > 1000000) ::_exit(5);
  }
}

// Reads whatever revisions are in the pipe within `timeout_ms` (-1: until EOF).
bool Drain(int fd, int timeout_ms, std::string* buf) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int wait = -1;
    if (timeout_ms >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return true;
      wait = static_cast<int>(left);
    }
    struct pollfd p = {fd, POLLIN, 0};
    int rc = ::poll(&p, 1, wait);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return rc == 0;
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // EOF: the child is gone
    buf->append(chunk, static_cast<size_t>(n));
  }
}

TEST(StoreDurabilityTest, EveryReportedCommitSurvivesSigkill) {
  TempDir t;
  std::mt19937 rng(20261201);
  int64_t previous = 0;
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(fds[0]);
      CommitLoop(t.state(), fds[1]);
    }
    ::close(fds[1]);
    std::string buf;
    // Readiness: poll until the child reports its first commit (a generous guard, not a timing
    // threshold: it only keeps a broken child from hanging the test).
    const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (buf.size() < sizeof(int64_t) && std::chrono::steady_clock::now() < guard) {
      if (!Drain(fds[0], 100, &buf)) break;
    }
    ASSERT_GE(buf.size(), sizeof(int64_t)) << "the child never committed";
    // Kill at a random moment, draining the pipe meanwhile so the child never blocks on it.
    const int delay_ms = std::uniform_int_distribution<int>(0, 400)(rng);
    Drain(fds[0], delay_ms, &buf);
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the child ended on its own with status " << status;
    Drain(fds[0], -1, &buf);
    ::close(fds[0]);

    std::vector<int64_t> reported(buf.size() / sizeof(int64_t));
    std::memcpy(reported.data(), buf.data(), reported.size() * sizeof(int64_t));
    ASSERT_FALSE(reported.empty());
    for (size_t i = 0; i < reported.size(); ++i) {
      ASSERT_EQ(reported[i], previous + 1 + static_cast<int64_t>(i)) << "reports are in order";
    }
    const int64_t max_reported = reported.back();

    auto store = MustOpen(t.state());
    ASSERT_NE(store, nullptr);
    auto snap = store->Load();
    ASSERT_TRUE(snap.ok()) << snap.status();
    // Every acknowledged commit is there; at most one more (committed, killed before reporting).
    EXPECT_GE(snap->revision, max_reported);
    EXPECT_LE(snap->revision, max_reported + 1);
    // And the database holds exactly the state after those commits: no partial batch.
    Snapshot want = ModelSnapshot(snap->revision);
    ASSERT_EQ(snap->pods.size(), want.pods.size());
    for (size_t i = 0; i < want.pods.size(); ++i) ExpectPod(snap->pods[i], want.pods[i]);
    ASSERT_EQ(snap->nodes.size(), want.nodes.size());
    for (size_t i = 0; i < want.nodes.size(); ++i) ExpectNode(snap->nodes[i], want.nodes[i]);
    EXPECT_EQ(snap->policy_text, want.policy_text);
    auto events = store->EventsSince(0, 10000000);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(static_cast<int64_t>(events->size()), snap->revision);
    for (int64_t r = 1; r <= snap->revision; ++r) {
      ASSERT_EQ((*events)[r - 1].revision, r);
      ASSERT_EQ((*events)[r - 1].object_json, Event(r).object_json);
    }
    std::printf(
        "round %d: killed after %d ms, %zu commits reported, revision %lld recovered, "
        "%zu pods, %zu nodes\n",
        round, delay_ms, reported.size(), static_cast<long long>(snap->revision), snap->pods.size(),
        snap->nodes.size());
    previous = snap->revision;
  }
}

}  // namespace
}  // namespace seedance::store
