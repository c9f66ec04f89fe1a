#include "seedance/serving/serving_sim.h"

#include <cstdio>
#include <random>

#include "gtest/gtest.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::serving {
namespace {

using model::CostModel;
using model::LookupGpu;
using model::LookupModel;
using model::SequenceWork;

// A GPU where an iteration costs 5 ms plus 20 us per token processed.
ServingHardware FakeHardware(int64_t kv_tokens) {
  ServingHardware hw;
  hw.step_seconds = [](std::span<const SequenceWork> batch) {
    double tokens = 0;
    for (const auto& w : batch) tokens += w.new_tokens;
    return 0.005 + 20e-6 * tokens;
  };
  hw.kv_bytes_per_token = 1000;
  hw.kv_cache_bytes = kv_tokens * 1000;
  return hw;
}

RequestTrace SyntheticTrace(int n, double rate, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::lognormal_distribution<double> prompt(6.5, 0.8), output(4.8, 0.9);
  RequestTrace t;
  double now = 0;
  for (int i = 0; i < n; ++i) {
    TraceRequest r;
    r.arrival_s = now;
    now += gap(rng);
    r.prompt_tokens = std::clamp(static_cast<int32_t>(prompt(rng)), 1, 4000);
    r.output_tokens = std::clamp(static_cast<int32_t>(output(rng)), 1, 1000);
    t.requests.push_back(r);
  }
  return t;
}

TEST(PercentileTest, InterpolatesLikeNumpy) {
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2, 4}, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({10, 20}, 99), 19.9);
}

TEST(KvPoolBlocksTest, WholeBlocksOfTheCacheOrTheExplicitPool) {
  ServingSimOptions o;
  o.block_size = 16;
  EXPECT_EQ(KvPoolBlocks(FakeHardware(16 * 10 + 15), o), 10);  // a partial block is no block
  EXPECT_EQ(KvPoolBlocks(FakeHardware(15), o), 0);               // not even one
  o.kv_blocks = 3;
  EXPECT_EQ(KvPoolBlocks(FakeHardware(15), o), 3);  // an explicit pool wins
  o.kv_blocks = 0;
  ServingHardware none;  // no KV bytes per token: nothing to size
  EXPECT_EQ(KvPoolBlocks(none, o), 0);
}

TEST(ServingSimTest, EveryRequestCompletesWithSaneLatencies) {
  const RequestTrace t = SyntheticTrace(300, 5, 1);
  for (BatchingMode mode : {BatchingMode::kContinuous, BatchingMode::kStatic}) {
    ServingSimOptions o;
    o.mode = mode;
    auto r = RunServingSim(t, FakeHardware(200000), o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->completed, 300);
    EXPECT_EQ(r->dropped, 0);
    EXPECT_GT(r->ttft_p50_s, 0);
    EXPECT_LE(r->ttft_p50_s, r->ttft_p99_s);
    EXPECT_GT(r->tpot_p50_s, 0.005);  // at least one iteration per token
    EXPECT_LE(r->tpot_p50_s, r->tpot_p99_s);
    EXPECT_GT(r->throughput_rps, 0);
    EXPECT_GT(r->max_concurrent_seqs, 1);
    EXPECT_EQ(r->mode, BatchingModeName(mode));
  }
}

TEST(ServingSimTest, PagedContinuousBatchingWastesFarLessKvThanStatic) {
  const RequestTrace t = SyntheticTrace(300, 8, 2);
  ServingSimOptions o;
  auto cont = RunServingSim(t, FakeHardware(100000), o);
  o.mode = BatchingMode::kStatic;
  auto stat = RunServingSim(t, FakeHardware(100000), o);
  ASSERT_TRUE(cont.ok() && stat.ok());
  EXPECT_LT(cont->kv_waste_pct, 4);
  EXPECT_GT(stat->kv_waste_pct, 60);
  EXPECT_LT(cont->ttft_p99_s, stat->ttft_p99_s);
}

TEST(ServingSimTest, TightMemoryPreemptsAndStillFinishes) {
  const RequestTrace t = SyntheticTrace(200, 50, 3);
  for (PreemptionMode p : {PreemptionMode::kRecompute, PreemptionMode::kSwap}) {
    ServingSimOptions o;
    o.scheduler.preemption = p;
    auto r = RunServingSim(t, FakeHardware(8000), o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->preemptions, 0);
    EXPECT_EQ(r->completed + r->dropped, 200);
  }
}

TEST(ServingSimTest, RateScaleCompressesArrivals) {
  const RequestTrace t = SyntheticTrace(200, 1, 4);
  ServingSimOptions o;
  auto slow = RunServingSim(t, FakeHardware(200000), o);
  o.rate_scale = 4;
  auto fast = RunServingSim(t, FakeHardware(200000), o);
  ASSERT_TRUE(slow.ok() && fast.ok());
  EXPECT_NEAR(fast->throughput_rps / slow->throughput_rps, 4, 0.6);
  EXPECT_GE(fast->max_concurrent_seqs, slow->max_concurrent_seqs);
}

TEST(ServingSimTest, UnboundedPrefixCacheMatchesTheTraceDefinition) {
  // Conversations: each turn repeats its predecessor's blocks and adds one; turns far apart.
  // Prompts fill whole 512-token blocks, so an id seen before always names a full block.
  RequestTrace t;
  t.prefix_block_tokens = 512;
  std::mt19937_64 rng(5);
  uint64_t next_id = 0;
  std::vector<std::vector<uint64_t>> convs(20);
  for (int i = 0; i < 200; ++i) {
    auto& c = convs[rng() % convs.size()];
    c.push_back(next_id++);
    TraceRequest r;
    r.arrival_s = i * 10.0;
    r.prefix_block_ids = c;
    r.prompt_tokens = static_cast<int32_t>(512 * c.size());
    r.output_tokens = 5;
    t.requests.push_back(r);
  }
  ServingSimOptions o;
  o.prefix_cache = PrefixCacheMode::kUnbounded;
  auto r = RunServingSim(t, FakeHardware(20000), o);
  ASSERT_TRUE(r.ok()) << r.status();
  const double ideal = IdealPrefixHitRatio(t);
  EXPECT_GT(ideal, 0.5);
  EXPECT_NEAR(r->prefix_hit_ratio, ideal, 0.002);
  // A pool too small to keep the conversations loses hits; no caching loses all.
  o.prefix_cache = PrefixCacheMode::kPool;
  auto pool = RunServingSim(t, FakeHardware(12000), o);
  o.prefix_cache = PrefixCacheMode::kOff;
  auto off = RunServingSim(t, FakeHardware(20000), o);
  ASSERT_TRUE(pool.ok() && off.ok());
  EXPECT_LT(pool->prefix_hit_ratio, r->prefix_hit_ratio);
  EXPECT_EQ(off->prefix_hit_ratio, 0);
  o.block_size = 24;  // does not divide 512
  o.prefix_cache = PrefixCacheMode::kPool;
  EXPECT_EQ(RunServingSim(t, FakeHardware(20000), o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ServingSimTest, RequestsLongerThanThePoolAreDroppedInBothModes) {
  RequestTrace t;
  t.requests = {{0, 100, 5, {}}, {1, 6000, 5, {}}};  // the last one needs more than the pool
  for (BatchingMode mode : {BatchingMode::kContinuous, BatchingMode::kStatic}) {
    ServingSimOptions o;
    o.mode = mode;
    auto r = RunServingSim(t, FakeHardware(4096), o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->completed, 1);
    EXPECT_EQ(r->dropped, 1);
  }
}

TEST(ServingSimTest, RejectsNonPositiveRateScaleAndEmptyPool) {
  const RequestTrace t = SyntheticTrace(5, 1, 6);
  ServingSimOptions o;
  o.rate_scale = 0;
  EXPECT_FALSE(RunServingSim(t, FakeHardware(1000), o).ok());
  o.rate_scale = 1;
  EXPECT_FALSE(RunServingSim(t, FakeHardware(0), o).ok());
}

// A slice of the public Azure conversation trace on the A100-80G / Llama-3-8B cost model.
TEST(ServingSimTest, AzureConvSliceOnA100Llama3) {
  const std::string path =
      seedance::trace::DataDir() + "/llm-traces/azure-2023/AzureLLMInferenceTrace_conv.csv";
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    std::fclose(f);
  } else {
    if (seedance::trace::DataRequired()) FAIL() << "public data missing: " << path;
    GTEST_SKIP() << "public data not found: " << path;
  }
  TraceReadOptions ro;
  ro.max_requests = 1500;
  auto trace = ReadRequestTrace(path, ro);
  ASSERT_TRUE(trace.ok()) << trace.status();
  auto model = LookupModel("llama-3-8b");
  auto gpu = LookupGpu("a100-80g");
  ASSERT_TRUE(model.ok() && gpu.ok());
  const CostModel cost(*model, *gpu);
  const ServingHardware hw = HardwareFromCostModel(cost);
  ServingSimOptions o;
  auto cont = RunServingSim(*trace, hw, o);
  o.mode = BatchingMode::kStatic;
  auto stat = RunServingSim(*trace, hw, o);
  ASSERT_TRUE(cont.ok() && stat.ok());
  EXPECT_EQ(cont->completed, 1500);
  EXPECT_EQ(stat->completed, 1500);
  EXPECT_LE(cont->kv_waste_pct, 4);
  EXPECT_GE(stat->kv_waste_pct, 60);
}

}  // namespace
}  // namespace seedance::serving
