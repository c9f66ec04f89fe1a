// The etcd store against a real etcd (etcd_testing.h): commits read back by another store,
// batches too big for one etcd request, snapshots, and the fence: a store whose lease was
// revoked, or whose leader key another replica now holds, cannot commit.
#include "seedance/ha/etcd_store.h"

#include <limits>
#include <string>

#include "etcd_client.h"
#include "etcd_testing.h"
#include "gtest/gtest.h"

namespace seedance::ha {
namespace {

constexpr const char* kPrefix = "/t/";

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(testing::kEtcd, X_OK) != 0) {
      if (testing::DaemonRequired())
        FAIL() << testing::kEtcd << " missing; SEEDANCE_REQUIRE_DATA=1";
      GTEST_SKIP() << testing::kEtcd << " not installed (apt-get install etcd-server)";
    }
    ASSERT_TRUE(etcd_.Start()) << "etcd did not start";
    client_ = EtcdClient::New(*ParseEtcdUrl(etcd_.url(), "test"));
  }

  std::unique_ptr<EtcdStore> Open(Leadership* l, int64_t snapshot_log_bytes = 64 << 20) {
    EtcdStoreOptions o;
    o.url = etcd_.url();
    o.prefix = kPrefix;
    o.snapshot_log_bytes = snapshot_log_bytes;
    absl::StatusOr<std::unique_ptr<EtcdStore>> s = EtcdStore::Open(o, l);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // Makes `l` the leader as the election would: a lease and the leader key attached to it.
  int64_t Elect(Leadership* l) {
    absl::StatusOr<int64_t> lease = client_->LeaseGrant(60);
    EXPECT_TRUE(lease.ok()) << lease.status();
    absl::StatusOr<TxnResult> r =
        client_->Txn({{TxnCompare::kCreate, std::string(kPrefix) + "leader", 0, ""}},
                     {{TxnOp::kPut, std::string(kPrefix) + "leader", "me", "", *lease}}, {});
    EXPECT_TRUE(r.ok() && r->succeeded);
    l->create_revision = r->revision;
    l->valid_until_s = std::numeric_limits<double>::infinity();
    return *lease;
  }

  static store::Batch Pods(int64_t first_rev, int n, size_t spec_bytes = 20) {
    store::Batch b;
    for (int i = 0; i < n; ++i) {
      const int64_t rev = first_rev + i;
      const std::string uid = "u" + std::to_string(rev);
      b.put_pods.push_back({uid, "ns", "p" + std::to_string(rev), std::string(spec_bytes, 'x'),
                            "Pending", "", "[]", rev});
      b.events.push_back({rev, "PodAdded", "{\"uid\":\"" + uid + "\"}"});
    }
    b.revision = first_rev + n - 1;
    return b;
  }

  size_t KeysUnder(const std::string& area) {
    const std::string p = std::string(kPrefix) + area;
    absl::StatusOr<RangeResult> r = client_->Range(p, PrefixEnd(p));
    return r.ok() ? r->kvs.size() : 0;
  }

  testing::EtcdServer etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(EtcdStoreTest, AnotherStoreReadsBackEveryCommitInOrder) {
  Leadership leader, follower;
  auto a = Open(&leader);
  ASSERT_TRUE(a);
  Elect(&leader);
  store::Batch nodes;
  nodes.put_nodes = {{"n0", "{\"a\":1}", false, 1}, {"n1", "{}", true, 1}};
  nodes.events = {{1, "NodeAdded", "{}"}};
  nodes.revision = 1;
  nodes.policy_text = "profiles: []\n";
  ASSERT_TRUE(a->Commit(nodes).ok());
  ASSERT_TRUE(a->Commit(Pods(2, 3)).ok());
  store::Batch del;
  del.delete_pods = {"u3"};
  del.delete_nodes = {"n1"};
  del.events = {{5, "PodDeleted", "{}"}};
  del.revision = 5;
  ASSERT_TRUE(a->Commit(del).ok());

  auto b = Open(&follower);
  ASSERT_TRUE(b);
  absl::StatusOr<store::Snapshot> s = b->Load();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->revision, 5);
  ASSERT_EQ(s->nodes.size(), 1u);
  EXPECT_EQ(s->nodes[0].spec_json, "{\"a\":1}");
  ASSERT_EQ(s->pods.size(), 2u);
  EXPECT_EQ(s->pods[0].uid, "u2");  // the order of first put
  EXPECT_EQ(s->pods[1].uid, "u4");
  EXPECT_EQ(s->policy_text, "profiles: []\n");
  absl::StatusOr<std::vector<store::EventRecord>> ev = b->EventsSince(2, 10);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 3u);
  EXPECT_EQ((*ev)[0].revision, 3);
  EXPECT_EQ(b->oldest_event_revision(), 1);

  // A later commit reaches the follower through Refresh.
  ASSERT_TRUE(a->Commit(Pods(6, 1)).ok());
  absl::StatusOr<bool> moved = b->Refresh();
  ASSERT_TRUE(moved.ok());
  EXPECT_TRUE(*moved);
  EXPECT_EQ(b->revision(), 6);
  EXPECT_FALSE(*b->Refresh());
}

TEST_F(EtcdStoreTest, ABatchOverOneEtcdRequestIsSplitAndStaysWhole) {
  Leadership leader, follower;
  auto a = Open(&leader);
  ASSERT_TRUE(a);
  Elect(&leader);
  // 4096 pods of 1 KiB: about 4.5 MiB, three times what etcd takes in one request.
  ASSERT_TRUE(a->Commit(Pods(1, 4096, 1024)).ok());
  EXPECT_GE(KeysUnder("log/"), 5u);
  auto b = Open(&follower);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->Load()->pods.size(), 4096u);
  EXPECT_EQ(b->revision(), 4096);
}

TEST_F(EtcdStoreTest, ASnapshotReplacesTheLogAndLoadsTheSameState) {
  Leadership leader, follower;
  auto a = Open(&leader, /*snapshot_log_bytes=*/4096);
  ASSERT_TRUE(a);
  Elect(&leader);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a->Commit(Pods(1 + 10 * i, 10, 100)).ok());
  EXPECT_LT(KeysUnder("log/"), 20u);  // snapshots deleted most of the log
  EXPECT_GE(KeysUnder("snap/"), 1u);
  auto b = Open(&follower);
  ASSERT_TRUE(b);
  absl::StatusOr<store::Snapshot> s = b->Load();
  ASSERT_EQ(s->pods.size(), 200u);
  EXPECT_EQ(s->pods.front().uid, "u1");
  EXPECT_EQ(s->pods.back().uid, "u200");
  EXPECT_EQ(s->revision, 200);
  // Events before the snapshot are gone for a new reader: a watch from before must relist.
  EXPECT_GT(b->oldest_event_revision(), 1);
}

// "kind key=json@revision" for each object, in Load()'s order.
std::vector<std::string> Objects(EtcdStore& s) {
  absl::StatusOr<store::Snapshot> snap = s.Load();
  EXPECT_TRUE(snap.ok()) << snap.status();
  std::vector<std::string> out;
  if (!snap.ok()) return out;
  for (const store::ObjectRecord& o : snap->objects) {
    out.push_back(o.kind + " " + o.key + "=" + o.json.substr(0, 8) + "@" +
                  std::to_string(o.revision));
  }
  return out;
}

TEST_F(EtcdStoreTest, ObjectsReachFollowersThroughTheLogAndSnapshots) {
  Leadership leader, follower, late;
  auto a = Open(&leader, /*snapshot_log_bytes=*/4096);
  ASSERT_TRUE(a);
  Elect(&leader);
  store::Batch b1;
  for (const char* key : {"run/1", "run/1/a", "run/10", "run0", "\xff\xff", "\xff/x", "z"}) {
    b1.put_objects.push_back({"experiment", key, "{}", 0});
  }
  b1.put_objects.push_back({"experiment-events", "run/1", "[]", 0});
  b1.revision = 1;
  ASSERT_TRUE(a->Commit(b1).ok());
  auto b = Open(&follower);  // reads the log
  ASSERT_TRUE(b);
  EXPECT_EQ(Objects(*b).size(), 8u);
  EXPECT_EQ(Objects(*b), Objects(*a));

  store::Batch b2;
  b2.put_objects = {{"experiment", "z", "{\"v\":2}", 0}, {"experiment", "run/1/new", "{}", 0}};
  b2.delete_objects = {{"experiment", "run0"}, {"experiment", "absent"}};
  b2.delete_object_prefixes = {{"experiment", "run/1"}, {"experiment", "\xff"}};
  b2.revision = 2;
  ASSERT_TRUE(a->Commit(b2).ok());
  // Deletes apply before puts: run/1/new, put under a deleted prefix, stays.
  const std::vector<std::string> want = {"experiment run/1/new={}@2", "experiment z={\"v\":2}@2",
                                         "experiment-events run/1=[]@1"};
  EXPECT_EQ(Objects(*a), want);
  ASSERT_TRUE(b->Refresh().ok());
  EXPECT_EQ(Objects(*b), want);

  // Over 4 KiB of log: the leader writes a snapshot; a new replica reads the objects from it,
  // each with the revision of the batch that put it.
  store::Batch b3;
  b3.put_objects = {{"experiment", "big", std::string(5000, 'x'), 0}};
  b3.revision = 3;
  ASSERT_TRUE(a->Commit(b3).ok());
  EXPECT_GE(KeysUnder("snap/"), 1u);
  EXPECT_EQ(KeysUnder("log/"), 0u);
  auto c = Open(&late);
  ASSERT_TRUE(c);
  EXPECT_EQ(Objects(*c),
            (std::vector<std::string>{"experiment big=xxxxxxxx@3", want[0], want[1], want[2]}));
  EXPECT_EQ(Objects(*c), Objects(*a));
}

TEST_F(EtcdStoreTest, AStoreWhoseLeaseWasRevokedCannotCommit) {
  Leadership leader, follower;
  auto a = Open(&leader);
  ASSERT_TRUE(a);
  const int64_t lease = Elect(&leader);
  ASSERT_TRUE(a->Commit(Pods(1, 1)).ok());
  ASSERT_TRUE(client_->LeaseRevoke(lease).ok());  // etcd deletes the leader key with it
  absl::Status st = a->Commit(Pods(2, 1));
  EXPECT_EQ(st.code(), absl::StatusCode::kAborted) << st;
  auto b = Open(&follower);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->revision(), 1);  // nothing of the refused commit
}

TEST_F(EtcdStoreTest, ADeposedLeaderCannotCommitOverTheNewOne) {
  Leadership old_leader, new_leader;
  auto a = Open(&old_leader);
  ASSERT_TRUE(a);
  const int64_t lease = Elect(&old_leader);
  ASSERT_TRUE(a->Commit(Pods(1, 1)).ok());
  ASSERT_TRUE(client_->LeaseRevoke(lease).ok());
  auto b = Open(&new_leader);
  ASSERT_TRUE(b);
  Elect(&new_leader);
  ASSERT_TRUE(b->PrepareToLead().ok());
  ASSERT_TRUE(b->Commit(Pods(2, 1)).ok());
  // The old leader still believes it leads (its local deadline has not passed).
  EXPECT_EQ(a->Commit(Pods(2, 1)).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(a->Commit(Pods(3, 1)).code(), absl::StatusCode::kAborted);
  Leadership reader;
  auto c = Open(&reader);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->revision(), 2);
  EXPECT_EQ(c->Load()->pods.size(), 2u);
}

TEST_F(EtcdStoreTest, AFollowerOrAnExpiredDeadlineRefusesWithoutWriting) {
  Leadership l;
  auto a = Open(&l);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->Commit(Pods(1, 1)).code(), absl::StatusCode::kAborted);  // never elected
  Elect(&l);
  l.valid_until_s = 0;  // the local deadline has passed
  EXPECT_EQ(a->Commit(Pods(1, 1)).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(KeysUnder("log/"), 0u);
}

TEST_F(EtcdStoreTest, HalfACommitBeyondTheHeadIsInvisibleAndRemovedByTheNextLeader) {
  Leadership leader, next;
  auto a = Open(&leader);
  ASSERT_TRUE(a);
  const int64_t lease = Elect(&leader);
  ASSERT_TRUE(a->Commit(Pods(1, 1)).ok());
  // A deposed leader's first part of commit 2, written before it lost the fence.
  ASSERT_TRUE(client_
                  ->Txn({},
                        {{TxnOp::kPut, std::string(kPrefix) + "log/00000000000000000002.000000",
                          "SDB1garbage", "", 0}},
                        {})
                  .ok());
  ASSERT_TRUE(client_->LeaseRevoke(lease).ok());
  auto b = Open(&next);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->revision(), 1);
  Elect(&next);
  ASSERT_TRUE(b->PrepareToLead().ok());
  EXPECT_EQ(KeysUnder("log/"), 1u);
  ASSERT_TRUE(b->Commit(Pods(2, 1)).ok());
  EXPECT_EQ(b->Load()->pods.size(), 2u);
}

TEST_F(EtcdStoreTest, RefusesBatchesThatBreakTheRules) {
  Leadership l;
  auto a = Open(&l);
  ASSERT_TRUE(a);
  Elect(&l);
  ASSERT_TRUE(a->Commit(Pods(1, 2)).ok());
  store::Batch back = Pods(1, 1);  // revision 1 < 2
  EXPECT_EQ(a->Commit(back).code(), absl::StatusCode::kInvalidArgument);
  store::Batch empty_uid = Pods(3, 1);
  empty_uid.put_pods[0].uid.clear();
  EXPECT_EQ(a->Commit(empty_uid).code(), absl::StatusCode::kInvalidArgument);
  store::Batch bad_kind = Pods(3, 1);
  bad_kind.put_objects = {{"Experiment", "k", "{}", 0}};
  EXPECT_EQ(a->Commit(bad_kind).code(), absl::StatusCode::kInvalidArgument);
  store::Batch empty_prefix = Pods(3, 1);
  empty_prefix.delete_object_prefixes = {{"experiment", ""}};
  EXPECT_EQ(a->Commit(empty_prefix).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KeysUnder("log/"), 1u);  // nothing of the refused batches
}

TEST(EtcdUrlTest, ParsesEndpointsAndRefusesMalformedOnes) {
  absl::StatusOr<std::vector<EtcdEndpoint>> e =
      ParseEtcdUrl("etcd://127.0.0.1:2379,[::1]:2381,etcd-0.x:1", "--store");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->size(), 3u);
  EXPECT_EQ((*e)[1].host, "::1");
  EXPECT_EQ((*e)[2].port, 1);
  for (const char* bad : {"etcd://", "etcd://host", "etcd://host:0", "etcd://host:70000",
                          "etcd://:2379", "etcd://a:1,", "etcd://h st:1", "etcd://\x1b[2J:1"}) {
    absl::StatusOr<std::vector<EtcdEndpoint>> r = ParseEtcdUrl(bad, "--store");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--store"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace seedance::ha
