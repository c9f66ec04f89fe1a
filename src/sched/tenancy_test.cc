#include "seedance/sched/tenancy.h"

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::sched {
namespace {

Resources Gpus(double g) { return {g, 0, 0, 0}; }

QueueSpec Queue(std::string name, std::string parent, double guaranteed, double weight,
                double limit = kUnlimited) {
  QueueSpec s;
  s.name = std::move(name);
  s.parent = std::move(parent);
  s.guaranteed = Gpus(guaranteed);
  s.limit = {limit, kUnlimited, kUnlimited, kUnlimited};
  s.weight = weight;
  return s;
}

// root -> org-a (8, w1) -> team-a1 (4, w1) -> proj-x (2, w1), proj-y (0, w3)
//                       -> team-a2 (0, w1, limit L)
//      -> org-b (8, w3)
std::vector<QueueSpec> ThreeLevels(double a2_limit) {
  return {Queue("org-a", "", 8, 1),       Queue("org-b", "", 8, 3),
          Queue("team-a1", "org-a", 4, 1), Queue("team-a2", "org-a", 0, 1, a2_limit),
          Queue("proj-x", "team-a1", 2, 1), Queue("proj-y", "team-a1", 0, 3)};
}

TEST(QueueTreeTest, QuotaDivisionWithOverQuotaWeightsOnAThreeLevelTree) {
  struct Case {
    std::string name;
    double a2_limit;
    double org_b_demand;  // the other leaves ask for 100 GPUs each
    double want_org_a, want_org_b, want_a1, want_a2, want_x, want_y;
  };
  const std::vector<Case> cases = {
      // 32 GPUs: guarantees 8 + 8, the other 16 by 1:3; org-a's 12: 4 + 0, then 8 by 1:1;
      // team-a1's 8: 2 + 0, then 6 by 1:3.
      {"everyone asks", kUnlimited, 100, 12, 20, 8, 4, 3.5, 4.5},
      // org-b asks for 2: its idle quota goes to org-a (30); a1 4 + 13, a2 13; x 2 + 15/4.
      {"idle quota is lent", kUnlimited, 2, 30, 2, 17, 13, 5.75, 11.25},
      // team-a2 is capped at 5: the rest of org-a's share goes to team-a1.
      {"a limit caps the lending", 5, 2, 30, 2, 25, 5, 7.75, 17.25},
  };
  for (const Case& c : cases) {
    auto tree = QueueTree::Build(ThreeLevels(c.a2_limit), Gpus(32));
    ASSERT_TRUE(tree.ok()) << tree.status();
    for (const char* leaf : {"proj-x", "proj-y", "team-a2"}) {
      tree->SetPending(tree->Find(leaf), Gpus(100));
    }
    tree->SetPending(tree->Find("org-b"), Gpus(c.org_b_demand));
    const std::vector<Resources> s = tree->FairShares();
    auto share = [&](const char* q) { return s[tree->Find(q)][kQueueGpus]; };
    EXPECT_NEAR(share("org-a"), c.want_org_a, 1e-9) << c.name;
    EXPECT_NEAR(share("org-b"), c.want_org_b, 1e-9) << c.name;
    EXPECT_NEAR(share("team-a1"), c.want_a1, 1e-9) << c.name;
    EXPECT_NEAR(share("team-a2"), c.want_a2, 1e-9) << c.name;
    EXPECT_NEAR(share("proj-x"), c.want_x, 1e-9) << c.name;
    EXPECT_NEAR(share("proj-y"), c.want_y, 1e-9) << c.name;
  }
}

TEST(QueueTreeTest, OverCommittedGuaranteesAreScaledAlike) {
  auto tree = QueueTree::Build({Queue("a", "", 8, 1), Queue("b", "", 24, 1)}, Gpus(16));
  ASSERT_TRUE(tree.ok());
  tree->SetPending(0, Gpus(100));
  tree->SetPending(1, Gpus(100));
  const auto s = tree->FairShares();
  EXPECT_NEAR(s[0][kQueueGpus], 4, 1e-9);
  EXPECT_NEAR(s[1][kQueueGpus], 12, 1e-9);
}

TEST(QueueTreeTest, ReclaimRestoresFairShareNotOnlyTheGuarantee) {
  // 12 GPUs, three queues guaranteed 4 each. a borrowed everything; b now asks for 6, c for none.
  auto tree = QueueTree::Build({Queue("a", "", 4, 1), Queue("b", "", 4, 1), Queue("c", "", 4, 1)},
                               Gpus(12));
  ASSERT_TRUE(tree.ok());
  const int a = tree->Find("a"), b = tree->Find("b");
  tree->SetUsage(a, Gpus(12));
  tree->SetPending(b, Gpus(6));
  auto shares = tree->FairShares();
  EXPECT_NEAR(shares[a][kQueueGpus], 6, 1e-9);  // 4 + half of c's idle 4
  EXPECT_NEAR(shares[b][kQueueGpus], 6, 1e-9);
  EXPECT_TRUE(tree->MayReclaim(b, Gpus(4), shares));
  EXPECT_TRUE(tree->OverFairShare(a, shares));
  // b got its guarantee back (a preempted to 8). It may go on to its fair share of 6...
  tree->SetUsage(a, Gpus(8));
  tree->SetUsage(b, Gpus(4));
  tree->SetPending(b, Gpus(2));
  shares = tree->FairShares();
  EXPECT_TRUE(tree->MayReclaim(b, Gpus(2), shares));
  EXPECT_TRUE(tree->OverFairShare(a, shares));
  // ...and no further: at 6 each neither may take from the other.
  tree->SetUsage(a, Gpus(6));
  tree->SetUsage(b, Gpus(6));
  tree->SetPending(b, Gpus(1));
  shares = tree->FairShares();
  EXPECT_FALSE(tree->MayReclaim(b, Gpus(1), shares));
  EXPECT_FALSE(tree->OverFairShare(a, shares));
}

TEST(QueueTreeTest, DrfOnTwoResourcesGivesThePapersWorkedExample) {
  // Ghodsi et al., NSDI'11, section 4: 9 CPUs and 18 GB; user A's tasks need <1 CPU, 4 GB>,
  // user B's <3 CPUs, 1 GB>. DRF gives A three tasks and B two (dominant shares 2/3 each).
  const Resources capacity = {0, 0, 9000, 18 * 1024};
  QueueSpec qa, qb;
  qa.name = "A";
  qb.name = "B";
  auto tree = QueueTree::Build({qa, qb}, capacity);
  ASSERT_TRUE(tree.ok());
  const std::vector<Resources> task = {{0, 0, 1000, 4 * 1024}, {0, 0, 3000, 1024}};
  std::vector<int> tasks = {0, 0};
  Resources used{};
  for (;;) {
    std::vector<int> fits;
    for (int u = 0; u < 2; ++u) {
      if (used[kQueueCpuMilli] + task[u][kQueueCpuMilli] <= capacity[kQueueCpuMilli] &&
          used[kQueueMemoryMib] + task[u][kQueueMemoryMib] <= capacity[kQueueMemoryMib]) {
        fits.push_back(u);
      }
    }
    const int u = tree->NextByDrf(fits);
    if (u < 0) break;
    ++tasks[u];
    for (size_t r = 0; r < kQueueResources; ++r) used[r] += task[u][r];
    Resources mine{};
    for (size_t r = 0; r < kQueueResources; ++r) mine[r] = task[u][r] * tasks[u];
    tree->SetUsage(u, mine);
  }
  EXPECT_EQ(tasks[0], 3);
  EXPECT_EQ(tasks[1], 2);
  EXPECT_NEAR(tree->DominantShare(0), 2.0 / 3, 1e-9);
  EXPECT_NEAR(tree->DominantShare(1), 2.0 / 3, 1e-9);
}

TEST(QueueTreeTest, WeightsDivideTheDominantShare) {
  QueueSpec a, b;
  a.name = "a";
  b.name = "b";
  b.weight = 2;
  auto tree = QueueTree::Build({a, b}, Gpus(10));
  ASSERT_TRUE(tree.ok());
  tree->SetUsage(0, Gpus(3));
  tree->SetUsage(1, Gpus(5));
  EXPECT_EQ(tree->NextByDrf({0, 1}), 1);  // 0.5 / 2 < 0.3
}

TEST(QueueTreeTest, BadTreesAreRefused) {
  struct Case {
    std::string name;
    std::vector<QueueSpec> specs;
    std::string want;
  };
  QueueSpec negative = Queue("n", "", -1, 1);
  QueueSpec low_limit = Queue("l", "", 4, 1, 2);
  const std::vector<Case> cases = {
      {"unknown parent", {Queue("a", "nope", 1, 1)}, "parent 'nope' is not a queue"},
      {"twice", {Queue("a", "", 1, 1), Queue("a", "", 1, 1)}, "defined twice"},
      {"cycle", {Queue("a", "b", 1, 1), Queue("b", "a", 1, 1)}, "cycle"},
      {"weight", {Queue("a", "", 1, 0)}, "weight"},
      {"negative", {negative}, "guaranteed gpus"},
      {"limit below guarantee", {low_limit}, "limit gpus"},
      {"no name", {Queue("", "", 1, 1)}, "name must not be empty"},
  };
  for (const Case& c : cases) {
    auto tree = QueueTree::Build(c.specs, Gpus(8));
    ASSERT_FALSE(tree.ok()) << c.name;
    EXPECT_NE(tree.status().message().find(c.want), std::string::npos)
        << c.name << ": " << tree.status().message();
  }
}

TEST(MinimalVictimsTest, AHigherPriorityPodPreemptsTheMinimalVictimSet) {
  struct Case {
    std::string name;
    int32_t priority;
    int64_t need;
    std::vector<int64_t> free;
    std::vector<VictimCandidate> running;  // id, node, priority, gpus, lost, protected
    int32_t want_node;
    std::vector<uint64_t> want;
  };
  const std::vector<Case> cases = {
      {"fewest victims, then the lowest priority",
       10, 4, {0, 2},
       {{1, 0, 1, 4, 0, false}, {2, 1, 0, 2, 0, false}},
       1, {2}},
      {"fewer victims beat lower priority",
       10, 4, {0, 0},
       {{1, 0, 0, 2, 0, false}, {2, 0, 0, 2, 0, false}, {3, 1, 5, 4, 0, false}},
       1, {3}},
      {"least lost work among equals",
       10, 4, {0, 0},
       {{1, 0, 0, 4, 900, false}, {2, 1, 0, 4, 100, false}},
       1, {2}},
      {"a victim the others make unneeded is given back",
       10, 4, {0},
       {{1, 0, 0, 1, 10, false}, {2, 0, 0, 4, 20, false}},
       0, {2}},
      {"equal or higher priority is never a victim",
       5, 4, {0},
       {{1, 0, 5, 4, 0, false}, {2, 0, 7, 4, 0, false}},
       -1, {}},
      {"a spent disruption budget protects",
       10, 4, {0},
       {{1, 0, 0, 4, 0, true}},
       -1, {}},
      {"room without eviction is not preemption",
       10, 4, {4},
       {{1, 0, 0, 4, 0, false}},
       -1, {}},
  };
  for (const Case& c : cases) {
    const VictimSet v = MinimalVictims(c.priority, c.need, c.free, c.running);
    EXPECT_EQ(v.node, c.want_node) << c.name;
    EXPECT_EQ(v.victims, c.want) << c.name;
  }
}

// The search with its bounds against a plain one (every node searched, no bound), on random
// clusters built to tie: few priorities, few sizes, few distinct lost-work values.
VictimSet PlainMinimalVictims(int32_t priority, int64_t need, const std::vector<int64_t>& free,
                              const std::vector<VictimCandidate>& running) {
  VictimSet best;
  size_t best_count = 0;
  for (size_t n = 0; n < free.size(); ++n) {
    if (free[n] >= need) continue;
    std::vector<VictimCandidate> here;
    for (const VictimCandidate& c : running) {
      if (c.node == static_cast<int32_t>(n) && c.priority < priority && !c.protected_pod) {
        here.push_back(c);
      }
    }
    std::sort(here.begin(), here.end(), [](const VictimCandidate& a, const VictimCandidate& b) {
      return std::tie(a.priority, a.lost_gpu_s, a.id) < std::tie(b.priority, b.lost_gpu_s, b.id);
    });
    std::vector<VictimCandidate> chosen;
    int64_t freed = free[n];
    for (const VictimCandidate& c : here) {
      if (freed >= need) break;
      freed += c.gpus;
      chosen.push_back(c);
    }
    if (freed < need) continue;
    for (size_t k = chosen.size(); k-- > 0;) {
      if (freed - chosen[k].gpus >= need) {
        freed -= chosen[k].gpus;
        chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    double lost = 0;
    int32_t top = std::numeric_limits<int32_t>::min();
    for (const VictimCandidate& c : chosen) {
      lost += c.lost_gpu_s;
      top = std::max(top, c.priority);
    }
    if (best.node >= 0 && std::tie(best_count, best.max_priority, best.lost_gpu_s) <=
                              std::make_tuple(chosen.size(), top, lost)) {
      continue;
    }
    best = VictimSet{static_cast<int32_t>(n), {}, lost, top};
    best_count = chosen.size();
    for (const VictimCandidate& c : chosen) best.victims.push_back(c.id);
  }
  return best;
}

TEST(MinimalVictimsTest, TheBoundsNeverChangeTheAnswer) {
  std::mt19937_64 rng(5);
  int found = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int nodes = 1 + static_cast<int>(rng() % 40);
    std::vector<int64_t> free(static_cast<size_t>(nodes));
    for (int64_t& f : free) f = static_cast<int64_t>(rng() % 3);
    std::vector<VictimCandidate> running;
    const int pods = static_cast<int>(rng() % 200);
    for (int i = 0; i < pods; ++i) {
      running.push_back({static_cast<uint64_t>(i), static_cast<int32_t>(rng() % nodes),
                         static_cast<int32_t>(rng() % 4), static_cast<int64_t>(rng() % 4),
                         static_cast<double>(rng() % 3) * 0.1, rng() % 10 == 0});
    }
    const int32_t priority = static_cast<int32_t>(1 + rng() % 4);
    const int64_t need = static_cast<int64_t>(1 + rng() % 6);
    const VictimSet want = PlainMinimalVictims(priority, need, free, running);
    const VictimSet got = MinimalVictims(priority, need, free, running);
    ASSERT_EQ(got.node, want.node) << "trial " << trial;
    ASSERT_EQ(got.victims, want.victims) << "trial " << trial;
    found += got.node >= 0;
  }
  EXPECT_GT(found, 100) << "too few instances had a victim set to compare";
}

// VictimRule::kLeastLostWork (the job simulator's): the least lost work wins across nodes
// whatever the count, the latest started goes first among equals, nothing is given back.
VictimSet LeastLostWork(int64_t need, const std::vector<int64_t>& free,
                        const std::vector<VictimCandidate>& running) {
  VictimSearch search(need, VictimRule::kLeastLostWork);
  for (size_t n = 0; n < free.size(); ++n) {
    std::vector<VictimCandidate> here;
    for (const VictimCandidate& c : running) {
      if (c.node == static_cast<int32_t>(n)) here.push_back(c);
    }
    search.Node(static_cast<int32_t>(n), free[n], here);
  }
  return search.TakeBest();
}

VictimCandidate Job(uint64_t id, int32_t node, int64_t gpus, double lost, double started) {
  return {.id = id,
          .node = node,
          .priority = 0,
          .gpus = gpus,
          .lost_gpu_s = lost,
          .protected_pod = false,
          .placed_at_s = started};
}

TEST(LeastLostWorkTest, TheCheapestSetWinsThenTheFewestVictims) {
  struct Case {
    std::string name;
    int64_t need;
    std::vector<int64_t> free;
    std::vector<VictimCandidate> running;
    int32_t want_node;
    std::vector<uint64_t> want;
    double want_lost;
  };
  const std::vector<Case> cases = {
      {"two cheap victims beat one dear one (kFewestVictims would take the one)",
       4,
       {0, 0},
       {Job(1, 0, 4, 900, 0), Job(2, 1, 2, 100, 0), Job(3, 1, 2, 100, 0)},
       1,
       {2, 3},
       200},
      {"equal loss: the fewer victims",
       4,
       {0, 0},
       {Job(1, 0, 2, 50, 0), Job(2, 0, 2, 50, 0), Job(3, 1, 4, 100, 0)},
       1,
       {3},
       100},
      {"equal loss and count: the lower node",
       4,
       {0, 0},
       {Job(1, 0, 4, 100, 0), Job(2, 1, 4, 100, 0)},
       0,
       {1},
       100},
      {"equal loss on a node: the latest started first, then the lower id",
       2,
       {0},
       {Job(1, 0, 2, 100, 10), Job(2, 0, 2, 100, 30), Job(3, 0, 2, 100, 30)},
       0,
       {2},
       100},
      {"a prefix: no victim is given back once a larger one is in",
       4,
       {0},
       {Job(1, 0, 1, 10, 0), Job(2, 0, 4, 20, 0)},
       0,
       {1, 2},
       30},
      {"free GPUs count", 4, {3}, {Job(1, 0, 1, 500, 0), Job(2, 0, 4, 100, 0)}, 0, {2}, 100},
      {"room without eviction is not preemption", 4, {4}, {Job(1, 0, 4, 1, 0)}, -1, {}, 0},
      {"no set makes room", 4, {0, 1}, {Job(1, 0, 3, 1, 0), Job(2, 1, 2, 1, 0)}, -1, {}, 0},
  };
  for (const Case& c : cases) {
    const VictimSet v = LeastLostWork(c.need, c.free, c.running);
    EXPECT_EQ(v.node, c.want_node) << c.name;
    EXPECT_EQ(v.victims, c.want) << c.name;
    EXPECT_EQ(v.lost_gpu_s, c.want_lost) << c.name;
  }
}

TEST(LeastLostWorkTest, NoBoundRulesANodeOut) {
  VictimSearch search(4, VictimRule::kLeastLostWork);
  const std::vector<VictimCandidate> here = {Job(1, 0, 4, 10, 0)};
  search.Node(0, 0, here);
  ASSERT_EQ(search.best().node, 0);
  // Under kFewestVictims a node needing two victims could not beat a one-victim set.
  EXPECT_FALSE(search.RulesOut(0, 2, 0, 0));
  VictimSearch fewest(4);
  fewest.Node(0, 0, here);
  EXPECT_TRUE(fewest.RulesOut(0, 2, 0, 0));
}

TEST(MinimalVictimsDeathTest, NodesOutOfOrderDie) {
  VictimSearch search(2);
  search.Node(3, 0, {});
  EXPECT_DEATH(search.Node(2, 0, {}), "node 2 after node 3");
}

}  // namespace
}  // namespace seedance::sched
