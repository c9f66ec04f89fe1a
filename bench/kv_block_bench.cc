// KV block manager micro-benchmarks: one block allocated and freed, decode appends, prefix lookup.
#include <vector>

#include "benchmark/benchmark.h"
#include "seedance/serving/kv_block_manager.h"

namespace seedance::serving {
namespace {

KvBlockManagerOptions Options(int64_t blocks, bool caching) {
  KvBlockManagerOptions o;
  o.block_size = 16;
  o.num_blocks = blocks;
  o.enable_prefix_caching = caching;
  return o;
}

// One full block allocated (a sequence writing 16 tokens) and freed, with 4,096 other sequences'
// blocks live so the pool is not trivially empty.
void BM_KvBlockAllocateFree(benchmark::State& state) {
  KvBlockManager m(Options(1 << 16, state.range(0) != 0));
  for (int i = 0; i < 4096; ++i) {
    if (!m.AppendTokens(m.CreateSequence(), 16)) state.SkipWithError("pool too small");
  }
  for (auto _ : state) {
    const KvSeqId s = m.CreateSequence();
    benchmark::DoNotOptimize(m.AppendTokens(s, 16));
    m.FreeSequence(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KvBlockAllocateFree)->Arg(0)->Arg(1)->ArgName("prefix_caching");

// A cached block taken back out of the LRU list by a prefix hit, then released again.
void BM_KvCachedBlockAttachRelease(benchmark::State& state) {
  KvBlockManager m(Options(1 << 16, true));
  const std::vector<uint64_t> chain = {ChainHash(1, 2)};
  const KvSeqId first = m.CreateSequence();
  if (!m.AppendTokens(first, 16)) state.SkipWithError("pool too small");
  m.RegisterFullBlocks(first, chain);
  m.FreeSequence(first);
  for (auto _ : state) {
    const KvSeqId s = m.CreateSequence();
    m.AttachPrefix(s, chain, m.MatchPrefix(chain));
    m.FreeSequence(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KvCachedBlockAttachRelease);

// Decode: 256 sequences append one token each (a block allocated every 16 tokens).
void BM_KvDecodeAppend256(benchmark::State& state) {
  KvBlockManager m(Options(1 << 20, false));
  std::vector<KvSeqId> seqs;
  for (int i = 0; i < 256; ++i) seqs.push_back(m.CreateSequence());
  int64_t steps = 0;
  for (auto _ : state) {
    for (KvSeqId s : seqs) benchmark::DoNotOptimize(m.AppendTokens(s, 1));
    if (++steps == 4000) {  // keep the pool from running out
      state.PauseTiming();
      for (KvSeqId& s : seqs) {
        m.FreeSequence(s);
        s = m.CreateSequence();
      }
      steps = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_KvDecodeAppend256);

// Prefix lookup of a 64-block (1,024-token) chain that is fully cached.
void BM_KvPrefixMatch64(benchmark::State& state) {
  KvBlockManager m(Options(1 << 16, true));
  std::vector<uint64_t> chain;
  uint64_t h = 3;
  for (uint64_t k = 0; k < 64; ++k) chain.push_back(h = ChainHash(h, k));
  const KvSeqId s = m.CreateSequence();
  if (!m.AppendTokens(s, 64 * 16)) state.SkipWithError("pool too small");
  m.RegisterFullBlocks(s, chain);
  for (auto _ : state) benchmark::DoNotOptimize(m.MatchPrefix(chain));
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_KvPrefixMatch64);

// O(1) lookup of the block holding a token.
void BM_KvBlockOf(benchmark::State& state) {
  KvBlockManager m(Options(1 << 16, false));
  const KvSeqId s = m.CreateSequence();
  if (!m.AppendTokens(s, 8192)) state.SkipWithError("pool too small");
  int64_t t = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.BlockOf(s, t));
    t = (t + 4099) & 8191;
  }
}
BENCHMARK(BM_KvBlockOf);

}  // namespace
}  // namespace seedance::serving
