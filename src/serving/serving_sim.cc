// Trace-driven serving simulator (include/seedance/serving/serving_sim.h).

#include "seedance/serving/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace seedance::serving {

std::string_view BatchingModeName(BatchingMode mode) {
  return mode == BatchingMode::kStatic ? "static" : "continuous";
}

ServingHardware HardwareFromCostModel(const model::CostModel& cost_model,
                                      double memory_utilization) {
  ServingHardware hw;
  hw.step_seconds = [&cost_model](std::span<const model::SequenceWork> batch) {
    return cost_model.StepSeconds(batch);
  };
  hw.kv_cache_bytes = cost_model.KvCacheBytes(memory_utilization);
  // K/V heads are split across tensor-parallel ranks.
  hw.kv_bytes_per_token = std::max<int64_t>(
      1, cost_model.model().KvBytesPerToken() / std::max(1, cost_model.tensor_parallel()));
  return hw;
}

double Percentile(std::vector<double> v, double pct) {
  if (v.empty()) return 0;
  const double pos = std::clamp(pct, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double a = v[lo];
  if (lo + 1 >= v.size()) return a;
  const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return a + (b - a) * (pos - static_cast<double>(lo));
}

PrefixChains BuildPrefixChains(const RequestTrace& trace, int block_size) {
  PrefixChains c;
  c.offsets.reserve(trace.requests.size() + 1);
  c.offsets.push_back(0);
  const int64_t p = trace.prefix_block_tokens;
  for (const TraceRequest& r : trace.requests) {
    if (p > 0 && !r.prefix_block_ids.empty()) {
      const int64_t per = p / block_size;
      const int64_t full = std::min<int64_t>(r.prompt_tokens / block_size,
                                             static_cast<int64_t>(r.prefix_block_ids.size()) * per);
      uint64_t h = 0x5eedace05eedaceULL;
      for (int64_t j = 0; j < full; ++j) {
        const uint64_t id = r.prefix_block_ids[static_cast<size_t>(j / per)];
        h = ChainHash(h, (id << 16) ^ static_cast<uint64_t>(j % per));
        c.hashes.push_back(h);
      }
    }
    c.offsets.push_back(c.hashes.size());
  }
  return c;
}

absl::Status ValidateArrivals(const RequestTrace& trace, double rate_scale) {
  double prev = 0;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const double a = trace.requests[i].arrival_s;
    if (!std::isfinite(a) || a < prev) {
      return absl::InvalidArgumentError(absl::StrCat(
          "request ", i + 1, " of ", trace.source, ": arrival time ", a,
          " s is not finite or goes backwards (previous ", prev, " s)"));
    }
    prev = a;
  }
  const double span = trace.requests.empty() ? 0 : trace.requests.back().arrival_s / rate_scale;
  if (!(span <= kMaxArrivalSpanS)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the trace's arrivals span ", span, " s at rate scale ", rate_scale,
        "; at most ", kMaxArrivalSpanS,
        " s can be simulated with sub-microsecond time resolution (raise the rate scale)"));
  }
  return absl::OkStatus();
}

int64_t KvPoolBlocks(const ServingHardware& hw, const ServingSimOptions& options) {
  if (options.kv_blocks > 0) return options.kv_blocks;
  const int64_t slot_bytes = static_cast<int64_t>(options.block_size) * hw.kv_bytes_per_token;
  return slot_bytes > 0 ? hw.kv_cache_bytes / slot_bytes : 0;
}

absl::StatusOr<ServingResult> RunServingSim(const RequestTrace& trace, const ServingHardware& hw,
                                            const ServingSimOptions& options) {
  if (options.block_size <= 0) return absl::InvalidArgumentError("block size must be > 0");
  if (!(options.rate_scale > 0) || !std::isfinite(options.rate_scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate scale must be > 0 (got ", options.rate_scale, ")"));
  }
  if (absl::Status s = ValidateArrivals(trace, options.rate_scale); !s.ok()) return s;
  if (options.kv_blocks > kMaxKvBlocks) {
    return absl::InvalidArgumentError(absl::StrCat("a KV pool of ", options.kv_blocks,
                                                   " blocks is more than the ", kMaxKvBlocks,
                                                   " the simulator allocates"));
  }
  const bool caching = options.prefix_cache != PrefixCacheMode::kOff &&
                       options.mode == BatchingMode::kContinuous && trace.prefix_block_tokens > 0;
  if (caching && trace.prefix_block_tokens % options.block_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("block size ", options.block_size,
                                                   " must divide the trace's prefix block of ",
                                                   trace.prefix_block_tokens, " tokens"));
  }
  const int64_t slot_bytes = static_cast<int64_t>(options.block_size) * hw.kv_bytes_per_token;
  const int64_t kv_blocks = KvPoolBlocks(hw, options);
  if (kv_blocks <= 0) {
    return absl::InvalidArgumentError(
        "no memory left for the KV cache (the model's weights do not fit the GPU; try --tp)");
  }

  // Requests as the scheduler sees them.
  PrefixChains chains;
  if (caching) chains = BuildPrefixChains(trace, options.block_size);
  const size_t n = trace.requests.size();
  std::vector<SchedRequest> reqs(n);
  int64_t longest = 0;
  for (size_t i = 0; i < n; ++i) {
    const TraceRequest& t = trace.requests[i];
    reqs[i].prompt_tokens = t.prompt_tokens;
    reqs[i].output_tokens = t.output_tokens;
    if (caching) {
      reqs[i].prefix_chain =
          std::span<const uint64_t>(chains.hashes)
              .subspan(chains.offsets[i], chains.offsets[i + 1] - chains.offsets[i]);
    }
    longest = std::max<int64_t>(longest, int64_t{t.prompt_tokens} + t.output_tokens);
  }
  SchedulerOptions so = options.scheduler;
  // FasterTransformer's max_seq_len: the longest request, as far as the pool can hold one.
  if (so.static_reserve_tokens <= 0) {
    so.static_reserve_tokens = std::min<int64_t>(longest, kv_blocks * options.block_size);
  }
  so.swap_space_blocks = slot_bytes > 0 ? options.swap_space_bytes / slot_bytes : 0;
  KvBlockManagerOptions ko;
  ko.block_size = options.block_size;
  ko.num_blocks = kv_blocks;
  ko.enable_prefix_caching = caching;
  ko.unbounded_prefix_cache = options.prefix_cache == PrefixCacheMode::kUnbounded;
  std::unique_ptr<BatchScheduler> sched = options.mode == BatchingMode::kStatic
                                              ? NewStaticScheduler(reqs, so, ko)
                                              : NewContinuousScheduler(reqs, so, ko);

  ServingResult res;
  res.mode = std::string(BatchingModeName(options.mode));
  res.requests = static_cast<int64_t>(n);
  res.kv_blocks = kv_blocks;
  const double first_arrival = n > 0 ? trace.requests[0].arrival_s / options.rate_scale : 0;
  double now = first_arrival;
  size_t next = 0;
  double alloc_integral = 0, waste_integral = 0, batch_integral = 0;
  const double swap_s_per_block =
      static_cast<double>(slot_bytes) / (std::max(hw.pcie_gbps, 1e-9) * 1e9);
  while (sched->num_finished() < static_cast<int64_t>(n)) {
    while (next < n && trace.requests[next].arrival_s / options.rate_scale <= now) {
      sched->Arrive(static_cast<int32_t>(next++));
    }
    const StepPlan& plan = sched->Schedule();
    if (plan.work.empty()) {
      if (sched->num_finished() >= static_cast<int64_t>(n)) break;  // the last ones were dropped
      if (next >= n) {
        return absl::InternalError(absl::StrCat("simulation stalled with ", sched->num_waiting(),
                                                " waiting and ", sched->num_running(),
                                                " running requests"));
      }
      now = std::max(now, trace.requests[next].arrival_s / options.rate_scale);
      continue;
    }
    const double dt =
        hw.step_seconds(plan.work) +
        static_cast<double>(plan.swap_in_blocks + plan.swap_out_blocks) * swap_s_per_block;
    const KvBlockManager& kv = sched->kv();
    const double alloc = static_cast<double>(kv.allocated_slots());
    alloc_integral += alloc * dt;
    waste_integral += (alloc - static_cast<double>(kv.used_slots())) * dt;
    batch_integral += static_cast<double>(plan.work.size());
    res.max_concurrent_seqs =
        std::max<int64_t>(res.max_concurrent_seqs, static_cast<int64_t>(plan.work.size()));
    ++res.iterations;
    now += dt;
    sched->Complete(now);
  }

  std::vector<double> ttft, tpot;
  ttft.reserve(n);
  tpot.reserve(n);
  double last_finish = first_arrival, out_tokens = 0, hit_tokens = 0, prompt_tokens = 0;
  for (size_t i = 0; i < n; ++i) {
    const RequestOutcome& o = sched->outcomes()[i];
    const TraceRequest& t = trace.requests[i];
    if (o.dropped) {
      ++res.dropped;
      continue;
    }
    ++res.completed;
    const double arrival = t.arrival_s / options.rate_scale;
    ttft.push_back(o.first_token_s - arrival);
    if (t.output_tokens > 1) tpot.push_back((o.finish_s - o.first_token_s) / (t.output_tokens - 1));
    last_finish = std::max(last_finish, o.finish_s);
    out_tokens += t.output_tokens;
    hit_tokens += static_cast<double>(o.prefix_hit_tokens);
    prompt_tokens += t.prompt_tokens;
  }
  res.sim_duration_s = last_finish - first_arrival;
  if (res.sim_duration_s > 0) {
    res.throughput_rps = static_cast<double>(res.completed) / res.sim_duration_s;
    res.throughput_tokens_per_s = out_tokens / res.sim_duration_s;
  }
  res.ttft_p50_s = Percentile(ttft, 50);
  res.ttft_p99_s = Percentile(ttft, 99);
  res.tpot_p50_s = Percentile(tpot, 50);
  res.tpot_p99_s = Percentile(tpot, 99);
  res.kv_waste_pct = alloc_integral > 0 ? 100.0 * waste_integral / alloc_integral : 0;
  res.preemptions = sched->preemptions();
  res.prefix_hit_ratio = prompt_tokens > 0 ? hit_tokens / prompt_tokens : 0;
  res.mean_batch = res.iterations > 0 ? batch_integral / static_cast<double>(res.iterations) : 0;
  res.outcomes = sched->outcomes();
  return res;
}

}  // namespace seedance::serving
