#include "seedance/serving/kv_block_manager.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::serving {

// Reaches the manager's internals so the death tests can break an invariant the public API
// cannot (that is what an invariant is); test-only, befriended in kv_block_manager.h.
class KvBlockManagerTestPeer {
 public:
  static std::vector<int32_t>& ref(KvBlockManager& m) { return m.ref_; }
  static std::vector<BlockId>& free_list(KvBlockManager& m) { return m.free_list_; }
  static int64_t& referenced_blocks(KvBlockManager& m) { return m.referenced_blocks_; }
};

namespace {

using Peer = KvBlockManagerTestPeer;

KvBlockManagerOptions DeathOpts(int64_t blocks, int block_size = 4) {
  KvBlockManagerOptions o;
  o.block_size = block_size;
  o.num_blocks = blocks;
  return o;
}

// One test per invariant KvBlockManager checks in every build (docs/reliability.md#invariants).
TEST(KvBlockManagerDeathTest, BadOptionsAreCaught) {
  EXPECT_DEATH(KvBlockManager m(DeathOpts(8, 0)),
               "invariant violated.*block_size > 0.*got block_size 0, num_blocks 8");
  EXPECT_DEATH(KvBlockManager m(DeathOpts(-1)), "got block_size 4, num_blocks -1");
}

TEST(KvBlockManagerDeathTest, DoubleFreeIsCaught) {
  KvBlockManager m(DeathOpts(8));
  const KvSeqId s = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(s, 5));
  m.FreeSequence(s);
  EXPECT_DEATH(m.FreeSequence(s), "FreeSequence on sequence 0, which is not live");
}

TEST(KvBlockManagerDeathTest, UnknownSequenceIsCaught) {
  KvBlockManager m(DeathOpts(8));
  EXPECT_DEATH((void)m.AppendTokens(7, 1), "AppendTokens on sequence 7, which is not live");
  EXPECT_DEATH(m.Fork(-1), "Fork on sequence -1, which is not live");
}

TEST(KvBlockManagerDeathTest, RefCountNeverGoesNegative) {
  KvBlockManager m(DeathOpts(8));
  const KvSeqId s = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(s, 4));
  Peer::ref(m)[m.BlockOf(s, 0)] = 0;  // as if someone had released it already
  EXPECT_DEATH(m.FreeSequence(s), "block 0 released with ref count 0 \\(double free\\)");
}

TEST(KvBlockManagerDeathTest, ReferencedBlockOnFreeListIsCaught) {
  KvBlockManager m(DeathOpts(8));
  const KvSeqId a = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 4));
  Peer::free_list(m).push_back(m.BlockOf(a, 0));  // block 0 is a's, yet "free"
  const KvSeqId b = m.CreateSequence();
  EXPECT_DEATH((void)m.AppendTokens(b, 1), "block 0 on the free list has ref count 1");
}

TEST(KvBlockManagerDeathTest, ReferencedBlockInLruIsCaught) {
  KvBlockManager m(DeathOpts(1));
  const KvSeqId a = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 4));
  const std::vector<uint64_t> chain = {ChainHash(7, 1)};
  m.RegisterFullBlocks(a, chain);
  m.FreeSequence(a);  // block 0 parks in the LRU list
  ASSERT_EQ(m.num_cached_blocks(), 1);
  Peer::ref(m)[0] = 1;
  const KvSeqId b = m.CreateSequence();
  EXPECT_DEATH((void)m.AppendTokens(b, 1), "block 0 cached in the LRU list has ref count 1");
}

TEST(KvBlockManagerDeathTest, AllocationFromAnEmptyPoolIsCaught) {
  KvBlockManager m(DeathOpts(1));
  const KvSeqId a = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 4));
  Peer::referenced_blocks(m) = 0;  // the count now claims a free block
  const KvSeqId b = m.CreateSequence();
  EXPECT_DEATH((void)m.AppendTokens(b, 1), "KV pool exhausted");
}

TEST(KvBlockManagerDeathTest, BlockCountConservationIsChecked) {
  KvBlockManager m(DeathOpts(8));
  const KvSeqId a = m.CreateSequence();
  Peer::free_list(m).pop_back();  // a block leaks: neither free, cached nor referenced
  EXPECT_DEATH((void)m.AppendTokens(a, 1),
               "KV block count not conserved: 1 referenced \\+ 6 free \\+ 0 cached != 8 blocks");
}

TEST(KvBlockManagerDeathTest, AttachPrefixToANonEmptySequenceIsCaught) {
  KvBlockManager m(DeathOpts(8));
  const KvSeqId a = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 4));
  const std::vector<uint64_t> chain = {ChainHash(7, 1)};
  m.RegisterFullBlocks(a, chain);
  EXPECT_DEATH(m.AttachPrefix(a, chain, 1), "AttachPrefix on sequence 0, which already holds 4");
}

TEST(KvBlockManagerDeathTest, AttachPrefixBeyondTheCacheIsCaught) {
  KvBlockManager m(DeathOpts(8));
  const KvSeqId a = m.CreateSequence();
  const std::vector<uint64_t> chain = {ChainHash(7, 1), ChainHash(ChainHash(7, 1), 2)};
  EXPECT_DEATH(m.AttachPrefix(a, chain, 1), "block 0 of the chain is not in the prefix cache");
  EXPECT_DEATH(m.AttachPrefix(a, chain, 3), "AttachPrefix of 3 blocks from a chain of 2");
}

class KvBlockManagerTest : public ::testing::Test {
 protected:
  static KvBlockManagerOptions Opts(int64_t blocks, int block_size = 4, bool caching = true,
                                    bool unbounded = false) {
    KvBlockManagerOptions o;
    o.block_size = block_size;
    o.num_blocks = blocks;
    o.enable_prefix_caching = caching;
    o.unbounded_prefix_cache = unbounded;
    return o;
  }
  static std::vector<uint64_t> Chain(std::initializer_list<uint64_t> keys) {
    std::vector<uint64_t> c;
    uint64_t h = 7;
    for (uint64_t k : keys) c.push_back(h = ChainHash(h, k));
    return c;
  }
  static void ExpectOk(const KvBlockManager& m) {
    absl::Status s = m.CheckInvariants();
    EXPECT_TRUE(s.ok()) << s;
  }
};

TEST_F(KvBlockManagerTest, AppendAllocatesWholeBlocksAndTracksUsedSlots) {
  KvBlockManager m(Opts(8));
  const KvSeqId s = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(s, 5));
  EXPECT_EQ(m.BlockTable(s).size(), 2u);
  EXPECT_EQ(m.allocated_slots(), 8);
  EXPECT_EQ(m.used_slots(), 5);
  ASSERT_TRUE(m.AppendTokens(s, 3));
  EXPECT_EQ(m.BlockTable(s).size(), 2u);
  EXPECT_EQ(m.used_slots(), 8);
  EXPECT_EQ(m.BlockOf(s, 0), m.BlockTable(s)[0]);
  EXPECT_EQ(m.BlockOf(s, 7), m.BlockTable(s)[1]);
  ExpectOk(m);
  m.FreeSequence(s);
  EXPECT_EQ(m.num_referenced_blocks(), 0);
  EXPECT_EQ(m.NumAllocatableBlocks(), 8);
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, AppendFailsWithoutSideEffectsWhenBlocksRunOut) {
  KvBlockManager m(Opts(2));
  const KvSeqId s = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(s, 6));
  EXPECT_FALSE(m.AppendTokens(s, 3));  // needs a third block
  EXPECT_EQ(m.NumTokens(s), 6);
  EXPECT_EQ(m.BlockTable(s).size(), 2u);
  EXPECT_TRUE(m.AppendTokens(s, 2));  // fits in the second block
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, ReserveAllocatesSlotsThatStayUnused) {
  KvBlockManager m(Opts(10));
  const KvSeqId s = m.CreateSequence();
  ASSERT_TRUE(m.Reserve(s, 20));
  EXPECT_EQ(m.allocated_slots(), 20);
  EXPECT_EQ(m.used_slots(), 0);
  ASSERT_TRUE(m.AppendTokens(s, 6));
  EXPECT_EQ(m.allocated_slots(), 20);
  EXPECT_EQ(m.used_slots(), 6);
  EXPECT_FALSE(m.Reserve(m.CreateSequence(), 24));  // 5 blocks left, 6 needed
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, ForkSharesBlocksAndCopiesOnWrite) {
  KvBlockManager m(Opts(8));
  const KvSeqId a = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 6));  // block 0 full, block 1 half
  const KvSeqId b = m.Fork(a);
  EXPECT_EQ(m.RefCount(m.BlockTable(a)[0]), 2);
  EXPECT_EQ(m.RefCount(m.BlockTable(a)[1]), 2);
  EXPECT_EQ(m.num_referenced_blocks(), 2);
  EXPECT_EQ(m.BlocksNeededFor(b, 7), 1);  // the shared half block is copied
  ASSERT_TRUE(m.AppendTokens(b, 1));
  EXPECT_EQ(m.cow_copies(), 1);
  EXPECT_EQ(m.BlockTable(a)[0], m.BlockTable(b)[0]);
  EXPECT_NE(m.BlockTable(a)[1], m.BlockTable(b)[1]);
  EXPECT_EQ(m.RefCount(m.BlockTable(a)[1]), 1);
  EXPECT_EQ(m.used_slots(), 4 + 2 + 3);  // shared full block counted once
  ExpectOk(m);
  ASSERT_TRUE(m.AppendTokens(a, 1));  // a's half block is now exclusive: no copy
  EXPECT_EQ(m.cow_copies(), 1);
  m.FreeSequence(a);
  m.FreeSequence(b);
  EXPECT_EQ(m.num_referenced_blocks(), 0);
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, PrefixCacheReusesRegisteredBlocksAfterRelease) {
  KvBlockManager m(Opts(8));
  const auto chain = Chain({1, 2, 3});
  const KvSeqId a = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 10));  // blocks 0,1 full, 2 half
  m.RegisterFullBlocks(a, chain);      // only the two full ones
  EXPECT_EQ(m.MatchPrefix(chain), 2);
  m.FreeSequence(a);
  EXPECT_EQ(m.num_cached_blocks(), 2);
  EXPECT_EQ(m.NumAllocatableBlocks(), 8);  // cached blocks are evictable
  int64_t unref = -1;
  EXPECT_EQ(m.MatchPrefix(Chain({1, 2, 9}), &unref), 2);
  EXPECT_EQ(unref, 2);
  EXPECT_EQ(m.MatchPrefix(Chain({2, 1})), 0);  // a chain, not a set
  const KvSeqId b = m.CreateSequence();
  m.AttachPrefix(b, chain, 2);
  EXPECT_EQ(m.NumTokens(b), 8);
  EXPECT_EQ(m.num_cached_blocks(), 0);
  const KvSeqId c = m.CreateSequence();
  m.AttachPrefix(c, chain, 1);  // shares a live block
  EXPECT_EQ(m.RefCount(m.BlockTable(b)[0]), 2);
  ExpectOk(m);
  m.FreeSequence(b);
  m.FreeSequence(c);
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, EvictsLeastRecentlyReleasedCachedBlockFirst) {
  KvBlockManager m(Opts(3));
  const auto x = Chain({10}), y = Chain({20});
  const KvSeqId a = m.CreateSequence(), b = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 4));
  ASSERT_TRUE(m.AppendTokens(b, 4));
  m.RegisterFullBlocks(a, x);
  m.RegisterFullBlocks(b, y);
  m.FreeSequence(a);  // x released first: least recently used
  m.FreeSequence(b);
  const KvSeqId c = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(c, 8));  // the free block, then one eviction
  EXPECT_EQ(m.evictions(), 1);
  EXPECT_EQ(m.MatchPrefix(x), 0);
  EXPECT_EQ(m.MatchPrefix(y), 1);
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, UnboundedCacheNeverEvictsAndCostsNothing) {
  KvBlockManager m(Opts(2, 4, true, true));
  for (uint64_t k = 0; k < 10; ++k) {
    const KvSeqId s = m.CreateSequence();
    ASSERT_TRUE(m.AppendTokens(s, 8));
    m.RegisterFullBlocks(s, Chain({k, k + 100}));
    m.FreeSequence(s);
  }
  EXPECT_EQ(m.num_cached_blocks(), 20);
  EXPECT_EQ(m.evictions(), 0);
  EXPECT_EQ(m.NumAllocatableBlocks(), 2);
  for (uint64_t k = 0; k < 10; ++k) EXPECT_EQ(m.MatchPrefix(Chain({k, k + 100})), 2);
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, DuplicateContentKeepsTheFirstRegisteredBlock) {
  KvBlockManager m(Opts(4));
  const auto chain = Chain({5});
  const KvSeqId a = m.CreateSequence(), b = m.CreateSequence();
  ASSERT_TRUE(m.AppendTokens(a, 4));
  ASSERT_TRUE(m.AppendTokens(b, 4));
  m.RegisterFullBlocks(a, chain);
  m.RegisterFullBlocks(b, chain);
  m.FreeSequence(b);  // b's copy is not cached: straight to the free list
  EXPECT_EQ(m.num_cached_blocks(), 0);
  m.FreeSequence(a);
  EXPECT_EQ(m.num_cached_blocks(), 1);
  ExpectOk(m);
}

TEST_F(KvBlockManagerTest, CheckerDetectsNothingOnFreshManager) {
  KvBlockManager m(Opts(0));
  ExpectOk(m);
  EXPECT_EQ(m.NumAllocatableBlocks(), 0);
  EXPECT_FALSE(m.AppendTokens(m.CreateSequence(), 1));
}

// Randomised property test: any mix of create/append/reserve/fork/attach/register/free keeps every
// invariant, and once all sequences are gone no block is referenced or leaked.
TEST_F(KvBlockManagerTest, RandomOperationsKeepInvariantsAndLeakNothing) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    const bool unbounded = seed % 3 == 0;
    KvBlockManager m(Opts(64, 4, seed % 2 == 1 || unbounded, unbounded));
    std::vector<KvSeqId> live;
    std::vector<std::vector<uint64_t>> chains;
    for (uint64_t p = 0; p < 5; ++p) {
      chains.push_back(Chain({p % 2, p, p + 1, p + 2, p + 3, p + 4, p + 5, p + 6}));
    }
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    for (int step = 0; step < 3000; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op <= 1 || live.empty()) {
        const KvSeqId s = m.CreateSequence();
        const auto& chain = chains[pick(chains.size())];
        const int64_t hit = m.MatchPrefix(chain);
        int64_t unref = 0;
        m.MatchPrefix(std::span<const uint64_t>(chain).subspan(0, hit), &unref);
        if (hit > 0 && unref <= m.NumAllocatableBlocks() && rng() % 2) {
          m.AttachPrefix(s, chain, hit);
        }
        live.push_back(s);
      } else if (op <= 4) {
        const KvSeqId s = live[pick(live.size())];
        const int64_t before = m.NumTokens(s);
        const int64_t n = 1 + static_cast<int64_t>(rng() % 9);
        const bool fits = m.BlocksNeededFor(s, before + n) <= m.NumAllocatableBlocks();
        EXPECT_EQ(m.AppendTokens(s, n), fits);
        EXPECT_EQ(m.NumTokens(s), fits ? before + n : before);
      } else if (op == 5) {
        const KvSeqId s = live[pick(live.size())];
        (void)m.Reserve(s, m.NumTokens(s) + static_cast<int64_t>(rng() % 12));
      } else if (op == 6) {
        live.push_back(m.Fork(live[pick(live.size())]));
      } else if (op == 7) {
        m.RegisterFullBlocks(live[pick(live.size())], chains[pick(chains.size())]);
      } else {
        const size_t i = pick(live.size());
        m.FreeSequence(live[i]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
      if (step % 50 == 0) {
        absl::Status s = m.CheckInvariants();
        ASSERT_TRUE(s.ok()) << "seed " << seed << " step " << step << ": " << s;
      }
    }
    for (KvSeqId s : live) m.FreeSequence(s);
    absl::Status s = m.CheckInvariants();
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(m.num_referenced_blocks(), 0);
    EXPECT_EQ(m.used_slots(), 0);
    EXPECT_EQ(m.live_sequences(), 0);
    EXPECT_EQ(m.NumAllocatableBlocks(), 64);
  }
}

}  // namespace
}  // namespace seedance::serving
