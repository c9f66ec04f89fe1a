// Iteration-level batch schedulers of the inference runtime (docs/serving.md#schedulers).
//
// A scheduler decides, before every forward iteration, which sequences run and how many tokens
// each processes; it owns the KV block manager and allocates KV slots for exactly the tokens it
// schedules. Two policies:
//
//  * Continuous (Orca, OSDI'22; vLLM, SOSP'23; Sarathi-Serve, OSDI'24): requests join and leave the
//    running batch at every iteration. Each iteration has a token budget: running sequences first
//    (one token per decoding sequence, a chunk of the remaining prompt per prefilling one), then
//    waiting requests are admitted strictly in arrival order while budget, max_num_seqs and KV
//    blocks (minus a watermark) allow, their prompts split into chunks (chunked prefill). When a
//    running sequence cannot get a block, the most recently admitted sequence is preempted:
//    recompute (its blocks are freed and its prompt plus the tokens generated so far are
//    prefilled again later) or swap (its blocks move to CPU memory and come back before it runs
//    again; falls back to recompute when the swap space is full). Preempted requests go back to
//    the head of the waiting queue. No admissions happen in an iteration that preempted. A prompt
//    whose leading blocks are in the prefix cache skips them.
//  * Static (FasterTransformer-style request-level batching): a batch is formed from the waiting
//    queue in arrival order, each request reserving KV memory for `static_reserve_tokens` (the
//    maximum sequence length) up front; the batch prefills all its prompts in one iteration, then
//    decodes until its longest request is done; only then is the memory released and the next
//    batch formed.
//
// Time does not pass inside a scheduler: the caller runs Schedule(), prices the returned plan
// (model::CostModel::StepSeconds) and calls Complete(end time).
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "seedance/model/cost_model.h"
#include "seedance/serving/kv_block_manager.h"

namespace seedance::serving {

// What a scheduler needs to know about one request. The caller keeps the array alive.
struct SchedRequest {
  int32_t prompt_tokens = 1;
  int32_t output_tokens = 1;
  // Chain hashes of the prompt's full KV blocks that have content ids (ChainHash), for the prefix
  // cache; empty when unknown.
  std::span<const uint64_t> prefix_chain;
};

enum class PreemptionMode { kRecompute, kSwap };

struct SchedulerOptions {
  int max_num_seqs = 256;             // running sequences per iteration
  int max_num_batched_tokens = 2048;  // token budget per iteration (continuous)
  PreemptionMode preemption = PreemptionMode::kRecompute;
  int64_t swap_space_blocks = 0;      // CPU blocks for swapped-out sequences
  double watermark_frac = 0.01;       // KV blocks kept free when admitting (continuous)
  int64_t static_reserve_tokens = 0;  // static: KV tokens reserved per request (>= its length)
};

// Per-request outcome, times in the caller's clock (-1 = not yet).
struct RequestOutcome {
  double first_token_s = -1;
  double finish_s = -1;
  int64_t prefix_hit_tokens = 0;  // prompt tokens found in the prefix cache at first admission
  int32_t preemptions = 0;
  bool admitted = false;
  bool dropped = false;  // can never fit in the KV pool
};

// The sequences of one iteration: work[i] belongs to request requests[i].
struct StepPlan {
  std::vector<model::SequenceWork> work;
  std::vector<int32_t> requests;
  int64_t swap_in_blocks = 0;   // blocks copied CPU -> GPU before the iteration
  int64_t swap_out_blocks = 0;  // blocks copied GPU -> CPU before the iteration
  void Clear() {
    work.clear();
    requests.clear();
    swap_in_blocks = swap_out_blocks = 0;
  }
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;

  // Request `index` (into the array given at construction) has arrived. REQUIRES: arrival order.
  virtual void Arrive(int32_t index) = 0;
  // Decides the next iteration and allocates its KV slots; an empty plan means nothing can run.
  virtual const StepPlan& Schedule() = 0;
  // The last plan's iteration ended at `now_s`: sequences advance, emit tokens, finish.
  virtual void Complete(double now_s) = 0;

  virtual int64_t num_running() const = 0;
  virtual int64_t num_waiting() const = 0;
  virtual int64_t num_finished() const = 0;  // finished or dropped
  virtual int64_t preemptions() const = 0;
  virtual const std::vector<RequestOutcome>& outcomes() const = 0;
  virtual const KvBlockManager& kv() const = 0;
};

std::unique_ptr<BatchScheduler> NewContinuousScheduler(std::span<const SchedRequest> requests,
                                                       const SchedulerOptions& options,
                                                       const KvBlockManagerOptions& kv_options);
std::unique_ptr<BatchScheduler> NewStaticScheduler(std::span<const SchedRequest> requests,
                                                   const SchedulerOptions& options,
                                                   const KvBlockManagerOptions& kv_options);

}  // namespace seedance::serving
