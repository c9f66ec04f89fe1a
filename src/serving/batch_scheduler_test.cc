#include "seedance/serving/batch_scheduler.h"

#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::serving {
namespace {

using model::SequenceWork;

class BatchSchedulerTest : public ::testing::Test {
 protected:
  static KvBlockManagerOptions Kv(int64_t blocks, int block_size = 4) {
    KvBlockManagerOptions o;
    o.block_size = block_size;
    o.num_blocks = blocks;
    return o;
  }
  static SchedulerOptions Opts(int budget, int max_seqs = 256) {
    SchedulerOptions o;
    o.max_num_batched_tokens = budget;
    o.max_num_seqs = max_seqs;
    o.watermark_frac = 0;
    return o;
  }
  // Runs every request (all arrived at t=0) to completion, one time unit per iteration; checks
  // the KV invariants after every iteration. Returns the number of iterations.
  static int RunAll(BatchScheduler& s, int n, std::vector<int>* tokens_per_step = nullptr) {
    for (int i = 0; i < n; ++i) s.Arrive(i);
    int steps = 0;
    while (s.num_finished() < n) {
      const StepPlan& p = s.Schedule();
      EXPECT_FALSE(p.work.empty()) << "stalled at step " << steps;
      if (p.work.empty()) break;
      if (tokens_per_step != nullptr) {
        int t = 0;
        for (const auto& w : p.work) t += w.new_tokens;
        tokens_per_step->push_back(t);
      }
      absl::Status st = s.kv().CheckInvariants();
      EXPECT_TRUE(st.ok()) << st;
      s.Complete(++steps);
    }
    return steps;
  }
};

// The static scheduler appends within the blocks it reserved at admission; were they taken
// behind its back (here: forked, so the next write must copy a shared block in a full pool),
// the append fails and that is a bug, caught in every build.
using BatchSchedulerDeathTest = BatchSchedulerTest;

TEST_F(BatchSchedulerDeathTest, StaticAppendBeyondItsReservationIsCaught) {
  std::vector<SchedRequest> reqs = {{4, 4, {}}};
  auto s = NewStaticScheduler(reqs, Opts(64), Kv(2));  // 7 tokens reserved: the whole pool
  s->Arrive(0);
  ASSERT_EQ(s->Schedule().work.size(), 1u);
  s->Complete(1);
  KvBlockManager& kv = const_cast<KvBlockManager&>(s->kv());  // test-only
  EXPECT_DEATH(
      {
        kv.Fork(0);
        s->Schedule();
      },
      "invariant violated.*request 0: 1 tokens did not fit its static reservation");
}

// The continuous scheduler's admission and swap-in appends follow a room check that asks the KV
// manager the same question as the append (NumAllocatableBlocks() against the blocks the tokens
// need) for at least as many blocks (the whole length, against the first chunk or the
// swapped-out tokens), and nothing between them changes the pool: no state of the KV manager
// makes the room check pass and the append fail (a corrupted pool trips the KV checks first).
// A room check that is too generous does: here a negative watermark, which lets admission count
// blocks that are not there.
SchedulerOptions NegativeWatermark(SchedulerOptions o) {
  o.watermark_frac = -1;
  return o;
}

TEST_F(BatchSchedulerDeathTest, AdmissionThatFailsAfterItsRoomCheckIsCaught) {
  std::vector<SchedRequest> reqs = {{4, 1, {}}, {4, 1, {}}};
  auto s = NewContinuousScheduler(reqs, NegativeWatermark(Opts(64)), Kv(1));
  s->Arrive(0);
  s->Arrive(1);
  // Request 0 takes the only block; request 1's block "fits" below a reserve of -1 blocks.
  EXPECT_DEATH(s->Schedule(),
               "invariant violated.*admitting request 1 \\(4 tokens\\) failed after its whole "
               "length was found to fit");
}

TEST_F(BatchSchedulerDeathTest, SwapInThatFailsAfterItsRoomCheckIsCaught) {
  std::vector<SchedRequest> reqs = {{4, 5, {}}, {4, 5, {}}};
  SchedulerOptions o = NegativeWatermark(Opts(64));
  o.preemption = PreemptionMode::kSwap;
  o.swap_space_blocks = 8;
  auto s = NewContinuousScheduler(reqs, o, Kv(2));
  s->Arrive(0);
  s->Arrive(1);
  ASSERT_EQ(s->Schedule().work.size(), 2u);  // both prompts, one block each: the pool is full
  s->Complete(1);
  const StepPlan& p = s->Schedule();  // request 0 needs a second block: request 1 swaps out
  ASSERT_EQ(p.swap_out_blocks, 1);
  ASSERT_EQ(s->preemptions(), 1);
  s->Complete(2);
  // Request 0 holds both blocks; request 1's two "fit" below a reserve of -2 blocks.
  EXPECT_DEATH(s->Schedule(),
               "invariant violated.*swap-in of request 1 \\(4 tokens\\) failed after its blocks "
               "were found free");
}

TEST_F(BatchSchedulerTest, ChunkedPrefillThenOneTokenPerIteration) {
  std::vector<SchedRequest> reqs = {{10, 3, {}}};
  auto s = NewContinuousScheduler(reqs, Opts(4), Kv(16));
  std::vector<int> tokens;
  EXPECT_EQ(RunAll(*s, 1, &tokens), 5);
  EXPECT_EQ(tokens, (std::vector<int>{4, 4, 2, 1, 1}));
  EXPECT_EQ(s->outcomes()[0].first_token_s, 3);  // the last prefill chunk samples token 1
  EXPECT_EQ(s->outcomes()[0].finish_s, 5);
  EXPECT_EQ(s->kv().num_referenced_blocks(), 0);
}

TEST_F(BatchSchedulerTest, DecodesShareTheBudgetWithANewPrefillChunk) {
  std::vector<SchedRequest> reqs = {{2, 5, {}}, {20, 1, {}}};
  auto s = NewContinuousScheduler(reqs, Opts(8), Kv(32));
  s->Arrive(0);
  const StepPlan& p1 = s->Schedule();
  ASSERT_EQ(p1.work.size(), 1u);
  s->Complete(1);
  s->Arrive(1);
  const StepPlan& p2 = s->Schedule();
  ASSERT_EQ(p2.work.size(), 2u);
  EXPECT_EQ(p2.requests[0], 0);  // running first
  EXPECT_EQ(p2.work[0].new_tokens, 1);
  EXPECT_EQ(p2.work[0].context_tokens, 2);
  EXPECT_EQ(p2.requests[1], 1);
  EXPECT_EQ(p2.work[1].new_tokens, 7);  // the rest of the budget
}

TEST_F(BatchSchedulerTest, AdmitsInArrivalOrderWithinMaxNumSeqs) {
  std::vector<SchedRequest> reqs(5, {3, 2, {}});
  auto s = NewContinuousScheduler(reqs, Opts(100, 2), Kv(64));
  for (int i = 0; i < 5; ++i) s->Arrive(i);
  const StepPlan& p = s->Schedule();
  EXPECT_EQ(p.requests, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(s->num_waiting(), 3);
}

TEST_F(BatchSchedulerTest, RecomputePreemptionFreesTheNewestSequenceAndEveryoneFinishes) {
  // 6 blocks of 4 tokens; two sequences growing to 16 tokens each cannot both fit.
  std::vector<SchedRequest> reqs = {{8, 9, {}}, {8, 9, {}}};
  auto s = NewContinuousScheduler(reqs, Opts(64), Kv(6));
  RunAll(*s, 2);
  EXPECT_GT(s->preemptions(), 0);
  EXPECT_EQ(s->outcomes()[0].preemptions, 0);  // the oldest is never the victim
  EXPECT_GT(s->outcomes()[1].preemptions, 0);
  EXPECT_LT(s->outcomes()[0].finish_s, s->outcomes()[1].finish_s);
  EXPECT_EQ(s->kv().num_referenced_blocks(), 0);
  EXPECT_EQ(s->kv().live_sequences(), 0);
}

TEST_F(BatchSchedulerTest, SwapPreemptionMovesBlocksOutAndBackIn) {
  std::vector<SchedRequest> reqs = {{8, 9, {}}, {8, 9, {}}};
  SchedulerOptions o = Opts(64);
  o.preemption = PreemptionMode::kSwap;
  o.swap_space_blocks = 100;
  auto s = NewContinuousScheduler(reqs, o, Kv(6));
  for (int i = 0; i < 2; ++i) s->Arrive(i);
  int64_t out = 0, in = 0;
  for (int step = 1; s->num_finished() < 2 && step < 100; ++step) {
    const StepPlan& p = s->Schedule();
    out += p.swap_out_blocks;
    in += p.swap_in_blocks;
    s->Complete(step);
  }
  EXPECT_EQ(s->num_finished(), 2);
  EXPECT_GT(out, 0);
  EXPECT_EQ(in, out);
}

TEST_F(BatchSchedulerTest, RequestLongerThanThePoolIsDroppedNotLooped) {
  std::vector<SchedRequest> reqs = {{40, 2, {}}, {4, 2, {}}};
  auto s = NewContinuousScheduler(reqs, Opts(64), Kv(4));
  RunAll(*s, 2);
  EXPECT_TRUE(s->outcomes()[0].dropped);
  EXPECT_FALSE(s->outcomes()[1].dropped);
}

TEST_F(BatchSchedulerTest, PrefixCacheSkipsCachedPromptBlocks) {
  std::vector<uint64_t> chain;
  uint64_t h = 1;
  for (uint64_t k = 0; k < 3; ++k) chain.push_back(h = ChainHash(h, k));
  std::vector<SchedRequest> reqs = {{13, 1, chain}, {13, 2, chain}};
  auto s = NewContinuousScheduler(reqs, Opts(64), Kv(16));
  s->Arrive(0);
  s->Schedule();
  s->Complete(1);
  s->Arrive(1);
  const StepPlan& p = s->Schedule();
  ASSERT_EQ(p.work.size(), 1u);
  EXPECT_EQ(p.work[0].context_tokens, 12);  // three cached blocks
  EXPECT_EQ(p.work[0].new_tokens, 1);
  EXPECT_EQ(s->outcomes()[1].prefix_hit_tokens, 12);
  EXPECT_EQ(s->outcomes()[0].prefix_hit_tokens, 0);
}

TEST_F(BatchSchedulerTest, FullyCachedPromptStillComputesItsLastToken) {
  std::vector<uint64_t> chain;
  uint64_t h = 1;
  for (uint64_t k = 0; k < 2; ++k) chain.push_back(h = ChainHash(h, k));
  std::vector<SchedRequest> reqs = {{8, 1, chain}, {8, 1, chain}};
  auto s = NewContinuousScheduler(reqs, Opts(64), Kv(16));
  RunAll(*s, 2);
  EXPECT_EQ(s->outcomes()[1].prefix_hit_tokens, 4);
}

TEST_F(BatchSchedulerTest, StaticBatchReservesMaxLengthAndWaitsForTheLongest) {
  std::vector<SchedRequest> reqs = {{4, 1, {}}, {4, 3, {}}, {4, 1, {}}};
  SchedulerOptions o = Opts(64);
  o.static_reserve_tokens = 16;  // 4 blocks each; the pool of 8 blocks holds a batch of 2
  auto s = NewStaticScheduler(reqs, o, Kv(8));
  for (int i = 0; i < 3; ++i) s->Arrive(i);
  const StepPlan& p = s->Schedule();
  EXPECT_EQ(p.requests, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(p.work[0].new_tokens, 4);  // whole prompts in one iteration
  EXPECT_EQ(s->kv().allocated_slots(), 32);
  EXPECT_EQ(s->kv().used_slots(), 8);
  s->Complete(1);
  EXPECT_EQ(s->outcomes()[0].finish_s, 1);
  const StepPlan& p2 = s->Schedule();
  EXPECT_EQ(p2.requests, (std::vector<int32_t>{1}));  // request 2 waits for the batch
  EXPECT_EQ(s->kv().allocated_slots(), 32);           // request 0's reservation is kept
  s->Complete(2);
  s->Schedule();
  s->Complete(3);
  EXPECT_EQ(s->outcomes()[1].finish_s, 3);
  const StepPlan& p3 = s->Schedule();
  EXPECT_EQ(p3.requests, (std::vector<int32_t>{2}));
  s->Complete(4);
  EXPECT_EQ(s->num_finished(), 3);
  EXPECT_EQ(s->kv().num_referenced_blocks(), 0);
}

// Property test: random workloads under random pool sizes and budgets always finish, respect the
// token budget and max_num_seqs, keep the KV invariants and release every block.
TEST_F(BatchSchedulerTest, RandomWorkloadsFinishWithinLimitsAndLeakNothing) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = 30;
    std::vector<std::vector<uint64_t>> chains(3);
    for (size_t c = 0; c < chains.size(); ++c) {
      uint64_t h = c;
      for (int k = 0; k < 6; ++k) chains[c].push_back(h = ChainHash(h, (c == 2 ? 0 : c) + k));
    }
    std::vector<SchedRequest> reqs(n);
    for (auto& r : reqs) {
      r.prompt_tokens = 1 + static_cast<int32_t>(rng() % 30);
      r.output_tokens = 1 + static_cast<int32_t>(rng() % 20);
      const auto& c = chains[rng() % chains.size()];
      r.prefix_chain = std::span<const uint64_t>(c).subspan(
          0, std::min<size_t>(c.size(), static_cast<size_t>(r.prompt_tokens / 4)));
    }
    SchedulerOptions o = Opts(4 + static_cast<int>(rng() % 40), 1 + static_cast<int>(rng() % 8));
    o.preemption = seed % 2 ? PreemptionMode::kSwap : PreemptionMode::kRecompute;
    o.swap_space_blocks = static_cast<int64_t>(rng() % 20);
    o.watermark_frac = 0.05;
    KvBlockManagerOptions kv = Kv(8 + static_cast<int64_t>(rng() % 20));
    kv.unbounded_prefix_cache = seed % 3 == 0;
    auto s = seed % 4 == 0 ? NewStaticScheduler(reqs, o, kv) : NewContinuousScheduler(reqs, o, kv);
    int next = 0, step = 0;
    while (s->num_finished() < n && step < 100000) {
      while (next < n && next <= step / 2) s->Arrive(next++);
      const StepPlan& p = s->Schedule();
      const int tokens =
          std::accumulate(p.work.begin(), p.work.end(), 0,
                          [](int a, const SequenceWork& w) { return a + w.new_tokens; });
      if (seed % 4 != 0) {
        EXPECT_LE(tokens, o.max_num_batched_tokens);
      }
      EXPECT_LE(static_cast<int>(p.work.size()), o.max_num_seqs);
      absl::Status st = s->kv().CheckInvariants();
      ASSERT_TRUE(st.ok()) << "seed " << seed << " step " << step << ": " << st;
      s->Complete(++step);
    }
    ASSERT_EQ(s->num_finished(), n) << "seed " << seed;
    EXPECT_EQ(s->kv().num_referenced_blocks(), 0) << "seed " << seed;
    EXPECT_EQ(s->kv().live_sequences(), 0) << "seed " << seed;
    for (int i = 0; i < n; ++i) {
      const RequestOutcome& out = s->outcomes()[i];
      if (out.dropped) continue;
      EXPECT_GE(out.finish_s, out.first_token_s) << "seed " << seed;
      EXPECT_GT(out.first_token_s, 0) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace seedance::serving
