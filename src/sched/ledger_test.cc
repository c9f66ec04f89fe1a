#include "seedance/sched/ledger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace seedance::sched {
namespace {

PodInfo Pod(std::string uid, std::string ns = "", std::string name = "") {
  PodInfo p;
  p.uid = std::move(uid);
  p.ns = std::move(ns);
  p.name = std::move(name);
  p.shape.cpu_milli = 1000;
  p.shape.num_gpu = 1;
  p.shape.gpu_milli = 500;
  return p;
}

core::Placement On(int node, std::vector<int> gpus = {}) {
  core::Placement p;
  p.node = node;
  p.num_gpus = static_cast<int32_t>(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) p.gpus[i] = static_cast<int8_t>(gpus[i]);
  return p;
}

std::set<std::string> Uids(const std::vector<const PodInfo*>& pods) {
  std::set<std::string> out;
  for (const PodInfo* p : pods) out.insert(p->uid);
  EXPECT_EQ(out.size(), pods.size()) << "a pod listed twice";
  return out;
}

TEST(PodPhase, Names) {
  EXPECT_EQ(PodPhaseName(PodPhase::kPending), "Pending");
  EXPECT_EQ(PodPhaseName(PodPhase::kAssumed), "Assumed");
  EXPECT_EQ(PodPhaseName(PodPhase::kBound), "Bound");
}

TEST(PodLedger, AddAndFindByUidAndName) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("u1", "default", "web")).ok());
  ASSERT_TRUE(l.Add(Pod("u2", "prod", "web")).ok());  // same name, other namespace
  ASSERT_NE(l.Find("u1"), nullptr);
  EXPECT_EQ(l.Find("u1")->name, "web");
  EXPECT_EQ(l.Find("nope"), nullptr);
  EXPECT_EQ(l.FindByName("default", "web")->uid, "u1");
  EXPECT_EQ(l.FindByName("prod", "web")->uid, "u2");
  EXPECT_EQ(l.FindByName("other", "web"), nullptr);
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(l.count(PodPhase::kPending), 2u);
  l.CheckInvariants();
}

TEST(PodLedger, RefusesTakenUidOrName) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("u1", "default", "web")).ok());
  absl::Status uid = l.Add(Pod("u1", "default", "other"));
  EXPECT_EQ(uid.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(uid.message().find("u1"), std::string_view::npos) << uid;
  absl::Status name = l.Add(Pod("u2", "default", "web"));
  EXPECT_EQ(name.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(name.message().find("default/web"), std::string_view::npos) << name;
  EXPECT_EQ(l.Add(Pod("")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.size(), 1u);
  // The namespace/name key cannot be forged by moving characters between the two.
  EXPECT_TRUE(l.Add(Pod("u3", "defaul", "tweb")).ok());
  l.CheckInvariants();
}

TEST(PodLedger, ARefusedAddLeavesNoTrace) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("u1", "ns", "a")).ok());
  // Refused for its name, then for its placement: the uid stays free.
  EXPECT_EQ(l.Add(Pod("u2", "ns", "a")).code(), absl::StatusCode::kAlreadyExists);
  PodInfo bad = Pod("u2");
  bad.phase = PodPhase::kBound;  // placed without a node
  EXPECT_EQ(l.Add(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Find("u2"), nullptr);
  EXPECT_EQ(l.HandleOf("u2"), 0u);
  EXPECT_EQ(l.size(), 1u);
  EXPECT_TRUE(l.Add(Pod("u2", "ns", "b")).ok());
  l.CheckInvariants();
}

TEST(PodLedger, AHandleNamesOneRecordOfOnePod) {
  PodLedger l;
  EXPECT_EQ(l.HandleOf("a"), 0u);
  EXPECT_EQ(l.FindByHandle(0), nullptr);
  ASSERT_TRUE(l.Add(Pod("a")).ok());
  ASSERT_TRUE(l.Add(Pod("b")).ok());
  const uint64_t a = l.HandleOf("a"), b = l.HandleOf("b");
  ASSERT_NE(a, 0u);
  ASSERT_NE(a, b);
  EXPECT_EQ(l.FindByHandle(a), l.Find("a"));
  EXPECT_EQ(l.FindByHandle(b), l.Find("b"));
  // Phase changes keep the record, so the handle.
  ASSERT_TRUE(l.Assume("a", On(0, {0}), 100).ok());
  ASSERT_TRUE(l.Bind("a").ok());
  EXPECT_EQ(l.HandleOf("a"), a);
  EXPECT_EQ(l.FindByHandle(a), l.Find("a"));
  // Removed: the handle finds nothing, even once its slot holds a new pod (or the same uid).
  ASSERT_TRUE(l.Remove("a").ok());
  EXPECT_EQ(l.FindByHandle(a), nullptr);
  ASSERT_TRUE(l.Add(Pod("c")).ok());
  ASSERT_TRUE(l.Add(Pod("a")).ok());
  EXPECT_EQ(l.FindByHandle(a), nullptr);
  EXPECT_NE(l.HandleOf("a"), a);
  EXPECT_NE(l.HandleOf("c"), a);
  EXPECT_EQ(l.FindByHandle(l.HandleOf("c"))->uid, "c");
  EXPECT_EQ(l.FindByHandle(l.HandleOf("a"))->uid, "a");
  EXPECT_EQ(l.FindByHandle(b), l.Find("b"));
  // A handle past every slot finds nothing.
  EXPECT_EQ(l.FindByHandle((uint64_t{1} << 32) | 1000), nullptr);
}

TEST(PodLedger, AnonymousPodsAreNotIndexedByName) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("a")).ok());
  ASSERT_TRUE(l.Add(Pod("b")).ok());
  EXPECT_EQ(l.FindByName("", ""), nullptr);
  EXPECT_EQ(l.size(), 2u);
  l.CheckInvariants();
}

TEST(PodLedger, AssumeBindConfirm) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("u1")).ok());
  ASSERT_TRUE(l.Assume("u1", On(3, {1}), 5'000).ok());
  const PodInfo* p = l.Find("u1");
  EXPECT_EQ(p->phase, PodPhase::kAssumed);
  EXPECT_EQ(p->placement.node, 3);
  EXPECT_EQ(p->assume_deadline_ns, 5'000);
  EXPECT_EQ(Uids(l.PodsOnNode(3)), std::set<std::string>{"u1"});  // assumed pods occupy
  EXPECT_EQ(l.count(PodPhase::kAssumed), 1u);
  // Not Pending any more: a second Assume is refused.
  EXPECT_EQ(l.Assume("u1", On(2), 0).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(l.Bind("u1").ok());
  EXPECT_EQ(p->phase, PodPhase::kBound);
  EXPECT_EQ(Uids(l.PodsOnNode(3)), std::set<std::string>{"u1"});
  EXPECT_EQ(l.count(PodPhase::kBound), 1u);
  EXPECT_EQ(l.count(PodPhase::kAssumed), 0u);
  EXPECT_TRUE(l.ExpiredAssumptions(1'000'000).empty());  // bound pods never expire
  EXPECT_EQ(l.Bind("u1").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(l.Forget("u1").code(), absl::StatusCode::kFailedPrecondition);
  l.CheckInvariants();
}

TEST(PodLedger, BindNeedsAnAssumption) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("u1")).ok());
  EXPECT_EQ(l.Bind("u1").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(l.Forget("u1").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(l.Bind("ghost").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(l.Assume("ghost", On(0), 0).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(l.Forget("ghost").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(l.SetRevision("ghost", 1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(l.Remove("ghost").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(l.Assume("u1", On(-1), 0).code(), absl::StatusCode::kInvalidArgument);
  core::Placement too_many = On(0);
  too_many.num_gpus = core::kMaxGpusPerNode + 1;
  EXPECT_EQ(l.Assume("u1", too_many, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Find("u1")->phase, PodPhase::kPending);
  l.CheckInvariants();
}

TEST(PodLedger, ForgetOnBindFailureFreesTheNode) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("u1")).ok());
  ASSERT_TRUE(l.Add(Pod("u2")).ok());
  ASSERT_TRUE(l.Assume("u1", On(0, {0}), 100).ok());
  ASSERT_TRUE(l.Assume("u2", On(0, {1}), 200).ok());
  ASSERT_TRUE(l.Forget("u1").ok());
  const PodInfo* p = l.Find("u1");
  EXPECT_EQ(p->phase, PodPhase::kPending);
  EXPECT_EQ(p->placement.node, -1);
  EXPECT_EQ(p->assume_deadline_ns, 0);
  EXPECT_EQ(Uids(l.PodsOnNode(0)), std::set<std::string>{"u2"});
  EXPECT_EQ(l.ExpiredAssumptions(1000), std::vector<std::string>{"u2"});
  // A forgotten pod can be assumed again, elsewhere.
  ASSERT_TRUE(l.Assume("u1", On(1, {0}), 300).ok());
  EXPECT_EQ(Uids(l.PodsOnNode(1)), std::set<std::string>{"u1"});
  l.CheckInvariants();
}

TEST(PodLedger, ExpiredAssumptionsByDeadline) {
  PodLedger l;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(l.Add(Pod("p" + std::to_string(i))).ok());
  ASSERT_TRUE(l.Assume("p0", On(0), 300).ok());
  ASSERT_TRUE(l.Assume("p1", On(0), 100).ok());
  ASSERT_TRUE(l.Assume("p2", On(1), 200).ok());
  ASSERT_TRUE(l.Assume("p3", On(1), 400).ok());
  EXPECT_TRUE(l.ExpiredAssumptions(99).empty());
  EXPECT_EQ(l.ExpiredAssumptions(100), std::vector<std::string>{"p1"});  // at the deadline
  EXPECT_EQ(l.ExpiredAssumptions(300), (std::vector<std::string>{"p1", "p2", "p0"}));
  ASSERT_TRUE(l.Bind("p2").ok());
  ASSERT_TRUE(l.Forget("p0").ok());
  ASSERT_TRUE(l.Remove("p1").ok());
  EXPECT_EQ(l.ExpiredAssumptions(1000), std::vector<std::string>{"p3"});
  l.CheckInvariants();
}

TEST(PodLedger, PodsOnNodeAndGpuListOnlyThatNodesPods) {
  PodLedger l;
  // Many pods elsewhere; node 7 holds four, node 8 none.
  for (int i = 0; i < 2000; ++i) {
    const std::string uid = "bg" + std::to_string(i);
    ASSERT_TRUE(l.Add(Pod(uid)).ok());
    ASSERT_TRUE(l.Assume(uid, On(i % 5, {i % 4}), 0).ok());
  }
  const std::vector<std::pair<std::string, std::vector<int>>> mine = {
      {"a", {0}}, {"b", {0, 1}}, {"c", {2}}, {"d", {}}};
  for (const auto& [uid, gpus] : mine) {
    ASSERT_TRUE(l.Add(Pod(uid)).ok());
    ASSERT_TRUE(l.Assume(uid, On(7, gpus), 0).ok());
  }
  ASSERT_TRUE(l.Bind("b").ok());
  EXPECT_EQ(Uids(l.PodsOnNode(7)), (std::set<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(l.num_pods_on_node(7), 4u);
  EXPECT_EQ(Uids(l.PodsOnGpu(7, 0)), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(Uids(l.PodsOnGpu(7, 1)), std::set<std::string>{"b"});
  EXPECT_EQ(Uids(l.PodsOnGpu(7, 2)), std::set<std::string>{"c"});
  EXPECT_TRUE(l.PodsOnGpu(7, 3).empty());
  EXPECT_TRUE(l.PodsOnNode(8).empty());
  EXPECT_TRUE(l.PodsOnNode(100000).empty());
  EXPECT_TRUE(l.PodsOnNode(-1).empty());
  EXPECT_EQ(l.num_pods_on_node(0), 400u);
  ASSERT_TRUE(l.Remove("a").ok());
  EXPECT_EQ(Uids(l.PodsOnNode(7)), (std::set<std::string>{"b", "c", "d"}));
  EXPECT_EQ(Uids(l.PodsOnGpu(7, 0)), std::set<std::string>{"b"});
  l.CheckInvariants();
}

TEST(PodLedger, RemoveFromEveryPhaseKeepsOtherPointers) {
  PodLedger l;
  ASSERT_TRUE(l.Add(Pod("pending", "ns", "p")).ok());
  ASSERT_TRUE(l.Add(Pod("assumed", "ns", "a")).ok());
  ASSERT_TRUE(l.Add(Pod("bound", "ns", "b")).ok());
  ASSERT_TRUE(l.Assume("assumed", On(0), 10).ok());
  ASSERT_TRUE(l.Assume("bound", On(0), 10).ok());
  ASSERT_TRUE(l.Bind("bound").ok());
  ASSERT_TRUE(l.SetRevision("bound", 42).ok());
  const PodInfo* bound = l.Find("bound");

  absl::StatusOr<PodInfo> a = l.Remove("assumed");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->phase, PodPhase::kAssumed);
  EXPECT_EQ(a->placement.node, 0);
  EXPECT_TRUE(l.ExpiredAssumptions(100).empty());
  absl::StatusOr<PodInfo> p = l.Remove("pending");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->name, "p");
  EXPECT_EQ(l.FindByName("ns", "p"), nullptr);
  // The freed slots are reused; the bound pod did not move.
  ASSERT_TRUE(l.Add(Pod("new1", "ns", "p")).ok());
  ASSERT_TRUE(l.Add(Pod("new2")).ok());
  EXPECT_EQ(l.Find("bound"), bound);
  EXPECT_EQ(bound->revision, 42);
  EXPECT_EQ(l.FindByName("ns", "p")->uid, "new1");
  absl::StatusOr<PodInfo> b = l.Remove("bound");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->revision, 42);
  EXPECT_TRUE(l.PodsOnNode(0).empty());
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(l.count(PodPhase::kBound), 0u);
  l.CheckInvariants();
}

TEST(PodLedger, AddsPlacedPodsForRecovery) {
  PodLedger l;
  PodInfo bound = Pod("b");
  bound.phase = PodPhase::kBound;
  bound.placement = On(2, {0, 1});
  ASSERT_TRUE(l.Add(bound).ok());
  PodInfo assumed = Pod("a");
  assumed.phase = PodPhase::kAssumed;
  assumed.placement = On(2, {2});
  assumed.assume_deadline_ns = 50;
  ASSERT_TRUE(l.Add(assumed).ok());
  EXPECT_EQ(Uids(l.PodsOnNode(2)), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(l.ExpiredAssumptions(50), std::vector<std::string>{"a"});
  PodInfo nowhere = Pod("x");
  nowhere.phase = PodPhase::kBound;
  EXPECT_EQ(l.Add(nowhere).code(), absl::StatusCode::kInvalidArgument);
  // A pending pod's stray placement is dropped.
  PodInfo pending = Pod("p");
  pending.placement = On(2);
  ASSERT_TRUE(l.Add(pending).ok());
  EXPECT_EQ(l.Find("p")->placement.node, -1);
  EXPECT_EQ(l.num_pods_on_node(2), 2u);
  l.CheckInvariants();
}

TEST(PodLedger, ForEachVisitsEveryPod) {
  PodLedger l;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(l.Add(Pod("p" + std::to_string(i))).ok());
  ASSERT_TRUE(l.Remove("p3").ok());
  std::set<std::string> seen;
  l.ForEach([&](const PodInfo& p) { seen.insert(p.uid); });
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_FALSE(seen.contains("p3"));
}

// Random operations against a plain model: the indexes always agree with brute force.
TEST(PodLedger, RandomOperationsMatchAModel) {
  PodLedger l;
  struct Model {
    PodPhase phase = PodPhase::kPending;
    int node = -1;
    int gpu = -1;
    int64_t deadline = 0;
  };
  std::map<std::string, Model> model;
  std::mt19937 rng(7);
  constexpr int kNodes = 6;
  for (int step = 0; step < 20000; ++step) {
    const std::string uid = "p" + std::to_string(rng() % 300);
    const bool known = model.contains(uid);
    switch (rng() % 6) {
      case 0:
        EXPECT_EQ(l.Add(Pod(uid)).ok(), !known);
        if (!known) model[uid] = Model{};
        break;
      case 1: {
        const int node = static_cast<int>(rng() % kNodes);
        const int gpu = static_cast<int>(rng() % 4);
        const int64_t deadline = static_cast<int64_t>(rng() % 1000);
        const bool ok = l.Assume(uid, On(node, {gpu}), deadline).ok();
        EXPECT_EQ(ok, known && model[uid].phase == PodPhase::kPending);
        if (ok) model[uid] = {PodPhase::kAssumed, node, gpu, deadline};
        break;
      }
      case 2: {
        const bool ok = l.Bind(uid).ok();
        EXPECT_EQ(ok, known && model[uid].phase == PodPhase::kAssumed);
        if (ok) model[uid].phase = PodPhase::kBound;
        break;
      }
      case 3: {
        const bool ok = l.Forget(uid).ok();
        EXPECT_EQ(ok, known && model[uid].phase == PodPhase::kAssumed);
        if (ok) model[uid] = Model{};
        break;
      }
      default:
        EXPECT_EQ(l.Remove(uid).ok(), known);
        model.erase(uid);
        break;
    }
  }
  l.CheckInvariants();
  ASSERT_EQ(l.size(), model.size());
  for (int n = 0; n < kNodes; ++n) {
    std::set<std::string> on_node, on_gpu0;
    for (const auto& [uid, m] : model) {
      if (m.node != n) continue;
      on_node.insert(uid);
      if (m.gpu == 0) on_gpu0.insert(uid);
    }
    EXPECT_EQ(Uids(l.PodsOnNode(n)), on_node) << "node " << n;
    EXPECT_EQ(Uids(l.PodsOnGpu(n, 0)), on_gpu0) << "node " << n;
  }
  std::multimap<int64_t, std::string> expiring;
  for (const auto& [uid, m] : model) {
    if (m.phase == PodPhase::kAssumed && m.deadline <= 500) expiring.emplace(m.deadline, uid);
  }
  std::vector<std::string> expired = l.ExpiredAssumptions(500);
  ASSERT_EQ(expired.size(), expiring.size());
  int64_t last = -1;
  for (const std::string& uid : expired) {
    EXPECT_GE(model[uid].deadline, last);
    last = model[uid].deadline;
  }
}

// The compact per-node records and their summary follow every transition: what a node lists is
// its placed pods' priority, whole GPUs, namespace id and placement time, and the summary is the
// bound over exactly those.
TEST(PodLedger, PlacedRecordsAndSummariesFollowThePods) {
  PodLedger l;
  auto pod = [](std::string uid, std::string ns, int32_t priority, int32_t whole) {
    PodInfo p = Pod(std::move(uid), std::move(ns));
    p.priority = priority;
    p.shape.num_gpu = whole > 0 ? whole : 1;
    p.shape.gpu_milli = whole > 0 ? core::kMilliGpu : 500;
    return p;
  };
  ASSERT_TRUE(l.Add(pod("a", "team-x", 5, 2)).ok());
  ASSERT_TRUE(l.Add(pod("b", "team-y", 1, 0)).ok());
  ASSERT_TRUE(l.Add(pod("c", "team-x", 3, 4)).ok());
  EXPECT_EQ(l.NamespaceId("team-x"), 0u);
  EXPECT_EQ(l.NamespaceId("team-y"), 1u);
  EXPECT_EQ(l.NamespaceId("nobody"), PodLedger::kNoNamespaceId);
  EXPECT_EQ(l.NamespaceName(1), "team-y");
  EXPECT_TRUE(l.PlacedOnNode(0).empty());
  EXPECT_EQ(l.SummaryOfNode(0).min_priority, std::numeric_limits<int32_t>::max());

  ASSERT_TRUE(l.Assume("a", On(0, {0, 1}), 1, 10.0).ok());
  ASSERT_TRUE(l.Assume("b", On(0, {2}), 1, 20.0).ok());
  ASSERT_TRUE(l.Assume("c", On(1, {0, 1, 2, 3}), 1, 30.0).ok());
  l.CheckInvariants();
  ASSERT_EQ(l.PlacedOnNode(0).size(), 2u);
  std::map<std::string, PlacedRef> on0;
  for (const PlacedRef& r : l.PlacedOnNode(0)) on0[l.PodAt(r.slot).uid] = r;
  EXPECT_EQ(on0["a"].priority, 5);
  EXPECT_EQ(on0["a"].whole_gpus, 2);
  EXPECT_EQ(on0["a"].ns_id, 0u);
  EXPECT_EQ(on0["a"].placed_at_s, 10.0);
  EXPECT_EQ(on0["b"].whole_gpus, 0) << "a GPU-sharing pod holds no whole GPU";
  EXPECT_EQ(on0["b"].ns_id, 1u);
  EXPECT_EQ(l.Find("b")->placed_at_s, 20.0);
  PodLedger::PlacedSummary s0 = l.SummaryOfNode(0);
  EXPECT_EQ(s0.min_priority, 1);
  EXPECT_EQ(s0.max_whole_gpus, 2);
  EXPECT_EQ(s0.last_placed_at_s, 20.0);

  // Removing the pod that set a bound narrows it to what is left.
  ASSERT_TRUE(l.Forget("b").ok());
  EXPECT_EQ(l.Find("b")->placed_at_s, 0.0) << "a Pending pod has no placement time";
  s0 = l.SummaryOfNode(0);
  EXPECT_EQ(s0.min_priority, 5);
  EXPECT_EQ(s0.last_placed_at_s, 10.0);
  ASSERT_TRUE(l.Remove("a").ok());
  EXPECT_TRUE(l.PlacedOnNode(0).empty());
  EXPECT_EQ(l.SummaryOfNode(0).max_whole_gpus, 0);
  EXPECT_EQ(l.SummaryOfNode(1).max_whole_gpus, 4);
  EXPECT_EQ(l.NamespaceId("team-x"), 0u) << "ids outlive the pods";
  l.CheckInvariants();
}

// Death tests: one per invariant the ledger checks. The broken states come from
// CorruptForTesting (the public API cannot reach them); each test breaks one record and shows
// that the check guarding it stops the process with its own message.
using Corrupt = PodLedger::TestCorruption;

// u1 Pending (named default/a), u2 Assumed on node 1 GPU 0, u3 Bound on node 2 GPU 1.
void Fill(PodLedger& l) {
  ASSERT_TRUE(l.Add(Pod("u1", "default", "a")).ok());
  ASSERT_TRUE(l.Add(Pod("u2")).ok());
  ASSERT_TRUE(l.Assume("u2", On(1, {0}), 5'000).ok());
  ASSERT_TRUE(l.Add(Pod("u3")).ok());
  ASSERT_TRUE(l.Assume("u3", On(2, {1}), 6'000).ok());
  ASSERT_TRUE(l.Bind("u3").ok());
  l.CheckInvariants();
}

// Corrupts pod `uid` of a filled ledger and runs `then` on it, in the death test's child.
template <class F>
void CorruptAndRun(std::string_view uid, Corrupt what, F then) {
  PodLedger l;
  Fill(l);
  l.CorruptForTesting(uid, what);
  then(l);
}

void Audit(PodLedger& l) { l.CheckInvariants(); }

TEST(PodLedgerDeathTest, ForgetWithAStaleNodePositionIsCaught) {
  EXPECT_DEATH(
      CorruptAndRun("u2", Corrupt::kNodePosition, [](PodLedger& l) { (void)l.Forget("u2"); }),
      "ledger node index out of step for pod u2");
}

TEST(PodLedgerDeathTest, AuditCatchesAMissingUidEntry) {
  EXPECT_DEATH(CorruptAndRun("u3", Corrupt::kDropUid, Audit), "uid index out of step for pod u3");
}

TEST(PodLedgerDeathTest, AuditCatchesAMissingNameEntry) {
  EXPECT_DEATH(CorruptAndRun("u1", Corrupt::kDropName, Audit), "name index out of step for pod u1");
}

TEST(PodLedgerDeathTest, AuditCatchesAStaleNodePosition) {
  EXPECT_DEATH(
      CorruptAndRun("u3", Corrupt::kNodePosition, Audit),
      "nodes_\\[node\\]\\[s.pos_on_node\\].slot == slot: node index out of step for pod u3");
}

TEST(PodLedgerDeathTest, AuditCatchesAPendingPodWithANode) {
  EXPECT_DEATH(CorruptAndRun("u1", Corrupt::kPendingNode, Audit), "pending pod u1 has a node");
}

TEST(PodLedgerDeathTest, AuditCatchesAnAssumptionWithoutADeadline) {
  EXPECT_DEATH(CorruptAndRun("u2", Corrupt::kDropDeadline, Audit),
               "assumed pod u2 missing from the deadline index");
}

TEST(PodLedgerDeathTest, AuditCatchesWrongPhaseCounts) {
  EXPECT_DEATH(CorruptAndRun("u1", Corrupt::kPhaseCount, Audit), "pod counts out of step");
}

TEST(PodLedgerDeathTest, AuditCatchesAGhostUidKey) {
  EXPECT_DEATH(CorruptAndRun("u1", Corrupt::kGhostUid, Audit), "== named: index sizes");
}

TEST(PodLedgerDeathTest, AuditCatchesAPodListedTwiceOnItsNode) {
  EXPECT_DEATH(CorruptAndRun("u3", Corrupt::kDuplicateOnNode, Audit), "node/deadline index sizes");
}

TEST(PodLedgerDeathTest, AuditCatchesALiveSlotOnTheFreeList) {
  EXPECT_DEATH(CorruptAndRun("u1", Corrupt::kFreeList, Audit), "free list out of step");
}

TEST(PodLedgerDeathTest, AuditCatchesANodeRecordOutOfStep) {
  EXPECT_DEATH(CorruptAndRun("u3", Corrupt::kNodeRecord, Audit),
               "node index record out of step for pod u3");
}

TEST(PodLedgerDeathTest, AuditCatchesANodeSummaryOutOfStep) {
  EXPECT_DEATH(CorruptAndRun("u3", Corrupt::kNodeSummary, Audit),
               "summary of node 2 out of step with its pods");
}

TEST(PodLedgerDeathTest, AuditCatchesMissingNodeSummaries) {
  EXPECT_DEATH(CorruptAndRun("u3", Corrupt::kSummaryCount, Audit), "node summaries out of step");
}

TEST(PodLedgerDeathTest, PodAtAnEmptySlotDies) {
  EXPECT_DEATH(CorruptAndRun("u1", Corrupt::kPhaseCount, [](PodLedger& l) { (void)l.PodAt(99); }),
               "ledger slot 99 holds no pod");
}

TEST(PodLedgerDeathTest, ANamespaceIdNeverGivenDies) {
  PodLedger l;
  EXPECT_DEATH((void)l.NamespaceName(3), "namespace id 3 was never given");
}

TEST(PodLedgerDeathTest, CorruptForTestingNeedsAPodInTheLedger) {
  EXPECT_DEATH(CorruptAndRun("nobody", Corrupt::kPhase, Audit),
               "CorruptForTesting needs a pod in the ledger");
}

}  // namespace
}  // namespace seedance::sched
