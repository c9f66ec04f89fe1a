// Trace-driven LLM serving simulator (docs/serving.md#simulator), in the spirit of Vidur
// (MLSys'24): the runtime's decisions (KV block manager, batch scheduler) run for real on the CPU;
// only the GPU time of each iteration comes from a model (model::CostModel::StepSeconds).
//
// The loop is event-driven over iterations: arrivals up to the current time join the waiting
// queue, the scheduler plans one iteration, the cost model prices it (plus PCIe time for swapped
// blocks), the clock advances by that much and the iteration completes. When nothing can run, the
// clock jumps to the next arrival. Each iteration costs O(batch) work.
//
// Metrics follow vLLM's benchmark definitions: TTFT = first token time - arrival; TPOT = (finish -
// first token) / (output tokens - 1) for requests with more than one output token; throughput is
// over the span from the first arrival to the last finish; KV waste is the time-average over
// iterations (weighted by iteration time) of allocated-but-unwritten token slots over allocated
// slots, counting blocks referenced by running sequences (cached free blocks are not allocated).
// Thread-safety: RunServingSim is reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/cost_model.h"
#include "seedance/serving/batch_scheduler.h"
#include "seedance/serving/request_trace.h"

namespace seedance::serving {

enum class BatchingMode { kContinuous, kStatic };
std::string_view BatchingModeName(BatchingMode mode);  // "continuous", "static"

enum class PrefixCacheMode {
  kOff,        // no prefix caching
  kPool,       // cached blocks live in the GPU pool and are LRU-evicted (vLLM)
  kUnbounded,  // cached blocks are free and never evicted (infinite cache)
};

// What the simulator needs from the hardware model.
struct ServingHardware {
  std::function<double(std::span<const model::SequenceWork>)> step_seconds;
  int64_t kv_cache_bytes = 0;      // per GPU
  int64_t kv_bytes_per_token = 0;  // per GPU (the model's K+V bytes per token / TP)
  double pcie_gbps = 25;           // host <-> GPU copies for swapping
};

// From the cost model: StepSeconds, KvCacheBytes(memory_utilization) and KvBytesPerToken / TP.
// REQUIRES: `cost_model` outlives the returned value.
ServingHardware HardwareFromCostModel(const model::CostModel& cost_model,
                                      double memory_utilization = 0.9);

struct ServingSimOptions {
  BatchingMode mode = BatchingMode::kContinuous;
  SchedulerOptions scheduler;  // static_reserve_tokens 0 = longest request (at most the pool)
  int block_size = 16;
  int64_t kv_blocks = 0;  // > 0 overrides the pool size derived from the hardware
  PrefixCacheMode prefix_cache = PrefixCacheMode::kPool;
  double rate_scale = 1.0;                      // arrivals are divided by this
  int64_t swap_space_bytes = int64_t{4} << 30;  // CPU swap space (vLLM's default 4 GiB)
};

struct ServingResult {
  std::string mode;
  double throughput_rps = 0;
  double throughput_tokens_per_s = 0;  // output (generated) tokens per second
  double ttft_p50_s = 0, ttft_p99_s = 0;
  double tpot_p50_s = 0, tpot_p99_s = 0;
  int64_t max_concurrent_seqs = 0;
  double kv_waste_pct = 0;
  int64_t preemptions = 0;
  double prefix_hit_ratio = 0;  // prompt tokens served from the prefix cache / prompt tokens
  // Not in the JSON contract; printed in the table.
  int64_t requests = 0, completed = 0, dropped = 0;
  int64_t iterations = 0;
  int64_t kv_blocks = 0;
  double sim_duration_s = 0;
  double mean_batch = 0;
  // Per request (index i = trace request i), in the simulation's clock (arrivals / rate scale).
  // Not in the JSON.
  std::vector<RequestOutcome> outcomes;
};

// Longest arrival span (last arrival / rate scale) replayed: beyond it a double's resolution is
// coarser than a microsecond and latencies would be garbage.
inline constexpr double kMaxArrivalSpanS = 1e9;
// Most KV blocks an explicit pool (ServingSimOptions::kv_blocks) may have.
inline constexpr int64_t kMaxKvBlocks = int64_t{1} << 26;

// Arrival times finite and non-decreasing, and the span at `rate_scale` at most
// kMaxArrivalSpanS; kInvalidArgument otherwise.
absl::Status ValidateArrivals(const RequestTrace& trace, double rate_scale);

// The KV pool a run gets, in blocks: the explicit ServingSimOptions::kv_blocks when set, else
// as many blocks of options.block_size tokens as hw.kv_cache_bytes holds; 0 when none fits.
int64_t KvPoolBlocks(const ServingHardware& hw, const ServingSimOptions& options);

// Replays `trace` with one batching mode. Errors: invalid options (block size not dividing the
// trace's prefix block, rate_scale <= 0, no KV blocks, ValidateArrivals, more than kMaxKvBlocks).
absl::StatusOr<ServingResult> RunServingSim(const RequestTrace& trace, const ServingHardware& hw,
                                            const ServingSimOptions& options);

// Chain hashes (ChainHash) of the full KV blocks of each request's prompt that carry content ids:
// KV block j of `block_size` tokens is part j mod (P / block_size) of trace block j*block_size/P.
// Flattened: chains[offsets[i] .. offsets[i+1]). REQUIRES: P % block_size == 0.
struct PrefixChains {
  std::vector<uint64_t> hashes;
  std::vector<size_t> offsets;
};
PrefixChains BuildPrefixChains(const RequestTrace& trace, int block_size);

// Linear-interpolation percentile (numpy's default) of unsorted values; 0 when empty.
double Percentile(std::vector<double> values, double pct);

}  // namespace seedance::serving
