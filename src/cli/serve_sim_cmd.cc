// `seedance serve-sim`: trace-driven LLM serving simulator (docs/serving.md).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/serving/cost_model.h"
#include "seedance/serving/request_trace.h"
#include "seedance/serving/serving_sim.h"

namespace seedance::cli {
namespace {

using namespace seedance::serving;  // NOLINT: a thin shell over one library

struct Flags {
  std::string trace, model = "llama-3-8b", gpu = "a100-80g", batching = "continuous,static";
  std::string prefix_cache = "pool", preemption = "recompute", format = "auto", json;
  int tp = 1, block_size = 16, max_num_seqs = 256, max_batched_tokens = 2048;
  double rate_scale = 1.0, mem_util = 0.9, rate = 1.0, swap_gib = 4.0;
  int64_t static_max_len = 0, limit = 0;
  uint64_t seed = 42;
};

int Run(const Flags& f) {
  ServingSimOptions base;
  base.block_size = f.block_size;
  base.rate_scale = f.rate_scale;
  base.scheduler.max_num_seqs = f.max_num_seqs;
  base.scheduler.max_num_batched_tokens = f.max_batched_tokens;
  base.scheduler.static_reserve_tokens = f.static_max_len;
  base.scheduler.preemption =
      f.preemption == "swap" ? PreemptionMode::kSwap : PreemptionMode::kRecompute;
  base.swap_space_bytes = static_cast<int64_t>(f.swap_gib * double(int64_t{1} << 30));
  if (f.prefix_cache == "off") {
    base.prefix_cache = PrefixCacheMode::kOff;
  } else if (f.prefix_cache == "unbounded") {
    base.prefix_cache = PrefixCacheMode::kUnbounded;
  } else if (f.prefix_cache == "pool") {
    base.prefix_cache = PrefixCacheMode::kPool;
  } else if (int64_t n = 0; absl::SimpleAtoi(f.prefix_cache, &n) && n > 0) {
    base.prefix_cache = PrefixCacheMode::kPool;
    base.kv_blocks = n;
  } else {
    return UsageError(
        "--prefix-cache: expected off, pool, unbounded or a block count N > 0, got '" +
        f.prefix_cache + "'");
  }
  std::vector<BatchingMode> modes;
  for (absl::string_view m : absl::StrSplit(f.batching, ',', absl::SkipEmpty())) {
    if (m == "continuous")
      modes.push_back(BatchingMode::kContinuous);
    else if (m == "static")
      modes.push_back(BatchingMode::kStatic);
    else
      return UsageError("--batching: expected continuous and/or static, got '" + std::string(m) +
                        "'");
  }
  if (modes.empty()) return UsageError("--batching: no mode given");

  absl::StatusOr<ModelConfig> model = LookupModel(f.model);
  if (!model.ok()) return UsageError("--model: " + std::string(model.status().message()));
  absl::StatusOr<GpuSpec> gpu = LookupGpu(f.gpu);
  if (!gpu.ok()) return UsageError("--gpu: " + std::string(gpu.status().message()));

  TraceReadOptions ro;
  ro.poisson_rate = f.rate;
  ro.seed = f.seed;
  ro.max_requests = f.limit;
  if (f.format == "azure")
    ro.format = TraceFormat::kAzure;
  else if (f.format == "mooncake")
    ro.format = TraceFormat::kMooncake;
  else if (f.format == "sharegpt")
    ro.format = TraceFormat::kShareGpt;
  absl::StatusOr<RequestTrace> trace = ReadRequestTrace(f.trace, ro);
  if (!trace.ok()) return UsageError(std::string(trace.status().message()));
  if (trace->requests.empty()) return UsageError(f.trace + ": no requests");

  const CostModel cost(*model, *gpu, f.tp);
  const ServingHardware hw = HardwareFromCostModel(cost, f.mem_util);
  if (base.kv_blocks <= 0 && hw.kv_cache_bytes < int64_t{f.block_size} * hw.kv_bytes_per_token) {
    return UsageError("no GPU memory left for the KV cache: " + model->name + " does not fit " +
                      gpu->name + " x" + std::to_string(f.tp) + " at --mem-util " +
                      std::to_string(f.mem_util) + " (try a larger --tp)");
  }

  nlohmann::ordered_json out = {{"modes", nlohmann::ordered_json::array()}};
  std::printf("serve-sim: %s, %zu requests, %s on %s x%d, rate x%g, %d-token blocks\n",
              f.trace.c_str(), trace->requests.size(), model->name.c_str(), gpu->name.c_str(), f.tp,
              f.rate_scale, f.block_size);
  std::printf("%-10s %8s %9s %8s %8s %8s %8s %6s %6s %7s %6s %7s %7s %7s\n", "mode", "req/s",
              "out_tok/s", "ttft50", "ttft99", "tpot50", "tpot99", "maxseq", "waste%", "preempt",
              "hit", "done", "iters", "wall_s");
  for (BatchingMode mode : modes) {
    ServingSimOptions o = base;
    o.mode = mode;
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<ServingResult> r = RunServingSim(*trace, hw, o);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      if (r.status().code() == absl::StatusCode::kInvalidArgument) {
        return UsageError(std::string(r.status().message()));
      }
      return RuntimeError(std::string(r.status().message()));
    }
    std::printf(
        "%-10s %8.3f %9.1f %8.3f %8.3f %8.4f %8.4f %6lld %6.2f %7lld %6.3f %7lld %7lld %7.2f\n",
        r->mode.c_str(), r->throughput_rps, r->throughput_tokens_per_s, r->ttft_p50_s,
        r->ttft_p99_s, r->tpot_p50_s, r->tpot_p99_s, static_cast<long long>(r->max_concurrent_seqs),
        r->kv_waste_pct, static_cast<long long>(r->preemptions), r->prefix_hit_ratio,
        static_cast<long long>(r->completed), static_cast<long long>(r->iterations), wall);
    if (r->dropped > 0) {
      std::printf("  %s: %lld requests longer than the KV pool (%lld blocks) were dropped\n",
                  r->mode.c_str(), static_cast<long long>(r->dropped),
                  static_cast<long long>(r->kv_blocks));
    }
    out["modes"].push_back({{"mode", r->mode},
                            {"throughput_rps", r->throughput_rps},
                            {"throughput_tokens_per_s", r->throughput_tokens_per_s},
                            {"ttft_p50_s", r->ttft_p50_s},
                            {"ttft_p99_s", r->ttft_p99_s},
                            {"tpot_p50_s", r->tpot_p50_s},
                            {"tpot_p99_s", r->tpot_p99_s},
                            {"max_concurrent_seqs", r->max_concurrent_seqs},
                            {"kv_waste_pct", r->kv_waste_pct},
                            {"preemptions", r->preemptions},
                            {"prefix_hit_ratio", r->prefix_hit_ratio}});
  }
  std::printf(
      "KV pool: %lld blocks of %d tokens (%.1f GiB per GPU)\n",
      static_cast<long long>(
          base.kv_blocks > 0 ? base.kv_blocks
                             : hw.kv_cache_bytes / (int64_t{f.block_size} * hw.kv_bytes_per_token)),
      f.block_size, double(hw.kv_cache_bytes) / double(int64_t{1} << 30));
  if (trace->prefix_block_tokens > 0) {
    std::printf("trace's own infinite-cache prefix hit ratio: %.4f\n", IdealPrefixHitRatio(*trace));
  }
  if (!f.json.empty()) {
    std::ofstream file(f.json);
    file << out.dump(2) << "\n";
    if (!file) return RuntimeError("cannot write " + f.json);
  }
  return kExitOk;
}

}  // namespace

Command AddServeSimCommand(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "serve-sim",
      "Replay an LLM request trace through the inference runtime (paged KV cache, continuous or "
      "static batching) with GPU time from the cost model, and report latency, throughput and "
      "KV-cache use per batching mode");
  cmd->footer(
      "Traces: Azure 2023 CSV (TIMESTAMP,ContextTokens,GeneratedTokens), Mooncake JSONL "
      "(timestamp,input_length,output_length,hash_ids) or ShareGPT length CSV "
      "(num_prefill_tokens,num_decode_tokens; Poisson arrivals at --rate). Bad input exits 2 "
      "naming file, line and field. See docs/serving.md.\n\nExamples:\n"
      "  seedance serve-sim --trace AzureLLMInferenceTrace_conv.csv --model llama-3-8b "
      "--gpu a100-80g --json out.json\n"
      "  seedance serve-sim --trace AzureLLMInferenceTrace_conv.csv --rate-scale 4 "
      "--batching continuous\n"
      "  seedance serve-sim --trace conversation_trace.jsonl --batching continuous "
      "--prefix-cache unbounded\n"
      "  seedance serve-sim --trace sharegpt_8k_filtered_stats_llama2_tokenizer.csv --rate 2 "
      "--limit 2000");
  cmd->add_option("--trace", f->trace, "Request trace file")->required();
  cmd->add_option(
         "--model", f->model,
         "Model: " +
             [] {
               std::string s;
               for (const auto& m : KnownModels()) s += (s.empty() ? "" : ", ") + m;
               return s;
             }())
      ->capture_default_str();
  cmd->add_option(
         "--gpu", f->gpu,
         "GPU: " +
             [] {
               std::string s;
               for (const auto& g : KnownGpus()) s += (s.empty() ? "" : ", ") + g;
               return s;
             }())
      ->capture_default_str();
  cmd->add_option("--tp", f->tp, "Tensor-parallel GPUs per replica")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--batching", f->batching, "Comma list of continuous, static")
      ->capture_default_str();
  cmd->add_option("--rate-scale", f->rate_scale, "Speed arrivals up by X (inter-arrival / X)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--prefix-cache", f->prefix_cache,
                  "off; pool (cached blocks share the cost model's KV pool, LRU eviction); "
                  "unbounded (infinite cache); or N (a KV pool of N blocks, LRU eviction)")
      ->capture_default_str();
  cmd->add_option("--block-size", f->block_size, "KV block size in tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-num-seqs", f->max_num_seqs, "Running sequences per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-batched-tokens", f->max_batched_tokens,
                  "Continuous: token budget per iteration (prefill chunk size)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--preemption", f->preemption, "Continuous: recompute or swap")
      ->capture_default_str()
      ->check(CLI::IsMember({"recompute", "swap"}));
  cmd->add_option("--swap-gib", f->swap_gib, "CPU swap space for --preemption swap (GiB)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--static-max-len", f->static_max_len,
                  "Static: tokens reserved per request (0 = the trace's longest request)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--mem-util", f->mem_util, "Fraction of GPU memory the runtime may use")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 1.0));
  cmd->add_option("--rate", f->rate, "ShareGPT traces: Poisson arrival rate (requests/s)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", f->seed, "ShareGPT traces: seed of the arrival draws")
      ->capture_default_str();
  cmd->add_option("--limit", f->limit, "Replay only the first N requests (0 = all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", f->format, "Trace format: auto, azure, mooncake, sharegpt")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "azure", "mooncake", "sharegpt"}));
  cmd->add_option("--json", f->json, "Write {\"modes\": [...]} to this file");
  Command c;
  c.app = cmd;
  c.run = [f] { return Run(*f); };
  return c;
}

}  // namespace seedance::cli
