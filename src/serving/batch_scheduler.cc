// Continuous (iteration-level, chunked prefill, preemption) and static (request-level, max-length
// reservation) batch schedulers (include/seedance/serving/batch_scheduler.h).

#include "seedance/serving/batch_scheduler.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "seedance/base/check.h"

namespace seedance::serving {
namespace {

enum class SeqState : uint8_t { kNew, kWaiting, kRunning, kSwapped, kDone };

// Progress of one request. Its sequence length is prompt + generated; `computed` tokens of it are
// in the KV cache. An iteration that brings computed up to the length samples the next token.
struct SeqRt {
  KvSeqId kv = -1;
  int64_t computed = 0;
  int32_t generated = 0;
  int64_t swapped_tokens = 0;
  SeqState state = SeqState::kNew;
};

class SchedulerBase : public BatchScheduler {
 public:
  SchedulerBase(std::span<const SchedRequest> requests, const SchedulerOptions& options,
                const KvBlockManagerOptions& kv_options)
      : req_(requests),
        opt_(options),
        kv_(kv_options),
        seqs_(requests.size()),
        out_(requests.size()) {}

  void Arrive(int32_t index) override {
    seqs_[index].state = SeqState::kWaiting;
    waiting_.push_back(index);
  }
  int64_t num_running() const override { return static_cast<int64_t>(running_.size()); }
  int64_t num_waiting() const override { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_finished() const override { return finished_; }
  int64_t preemptions() const override { return preemptions_; }
  const std::vector<RequestOutcome>& outcomes() const override { return out_; }
  const KvBlockManager& kv() const override { return kv_; }

 protected:
  int64_t Length(int32_t r) const { return req_[r].prompt_tokens + seqs_[r].generated; }
  int64_t BlocksFor(int64_t tokens) const {
    return (tokens + kv_.block_size() - 1) / kv_.block_size();
  }
  void Add(int32_t r, int64_t new_tokens) {
    plan_.work.push_back({static_cast<int>(new_tokens), static_cast<int>(seqs_[r].computed)});
    plan_.requests.push_back(r);
  }
  // Offers the request's full prompt blocks written so far to the prefix cache.
  void Register(int32_t r) {
    if (!req_[r].prefix_chain.empty()) kv_.RegisterFullBlocks(seqs_[r].kv, req_[r].prefix_chain);
  }
  void Drop(int32_t r) {
    out_[r].dropped = true;
    seqs_[r].state = SeqState::kDone;
    ++finished_;
  }
  // Advances every planned sequence and calls on_finish(request) for each that finished (its KV
  // sequence is left to the caller).
  template <typename OnFinish>
  void Advance(double now_s, OnFinish on_finish) {
    for (size_t i = 0; i < plan_.requests.size(); ++i) {
      const int32_t r = plan_.requests[i];
      SeqRt& s = seqs_[r];
      s.computed += plan_.work[i].new_tokens;
      if (s.computed < Length(r)) continue;  // mid-prefill chunk
      ++s.generated;
      if (out_[r].first_token_s < 0) out_[r].first_token_s = now_s;
      if (s.generated >= req_[r].output_tokens) {
        out_[r].finish_s = now_s;
        s.state = SeqState::kDone;
        ++finished_;
        on_finish(r);
      }
    }
  }

  std::span<const SchedRequest> req_;
  SchedulerOptions opt_;
  KvBlockManager kv_;
  std::vector<SeqRt> seqs_;
  std::vector<RequestOutcome> out_;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;
  StepPlan plan_;
  int64_t finished_ = 0;
  int64_t preemptions_ = 0;
};

class ContinuousScheduler final : public SchedulerBase {
 public:
  using SchedulerBase::SchedulerBase;

  const StepPlan& Schedule() override {
    plan_.Clear();
    int64_t budget = opt_.max_num_batched_tokens;
    bool preempted = false;
    // 1. Running sequences, oldest admission first.
    for (size_t i = 0; i < running_.size() && budget > 0;) {
      const int32_t r = running_[i];
      SeqRt& s = seqs_[r];
      const int64_t want = std::min(Length(r) - s.computed, budget);
      bool self_preempted = false;
      while (!kv_.AppendTokens(s.kv, want)) {
        const int32_t victim = running_.back();
        running_.pop_back();
        Preempt(victim);
        preempted = true;
        if (victim == r) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;
      Register(r);
      Add(r, want);
      budget -= want;
      ++i;
    }
    // 2. Admissions in arrival order.
    const int64_t watermark = static_cast<int64_t>(
        std::ceil(opt_.watermark_frac * static_cast<double>(kv_.num_blocks())));
    while (!preempted && !waiting_.empty() && budget > 0 &&
           static_cast<int64_t>(running_.size()) < opt_.max_num_seqs) {
      const int32_t r = waiting_.front();
      SeqRt& s = seqs_[r];
      const int64_t reserve = running_.empty() ? 0 : watermark;
      if (BlocksFor(req_[r].prompt_tokens + req_[r].output_tokens - 1) > kv_.num_blocks()) {
        waiting_.pop_front();  // longer than the whole KV pool: can never run
        Drop(r);
        continue;
      }
      if (s.state == SeqState::kSwapped) {
        const int64_t need = BlocksFor(Length(r));
        if (need > kv_.NumAllocatableBlocks() - reserve) break;
        s.kv = kv_.CreateSequence();
        const bool swapped_in = kv_.AppendTokens(s.kv, s.swapped_tokens);
        SEEDANCE_CHECK(swapped_in) << "swap-in of request " << r << " (" << s.swapped_tokens
                                   << " tokens) failed after its blocks were found free";
        plan_.swap_in_blocks += BlocksFor(s.swapped_tokens);
        swap_used_blocks_ -= BlocksFor(s.swapped_tokens);
        s.computed = s.swapped_tokens;
      } else {
        const int64_t len = Length(r);
        // At least one prompt token is always computed, to produce logits.
        std::span<const uint64_t> chain = req_[r].prefix_chain;
        chain = chain.subspan(
            0, std::min<size_t>(chain.size(), static_cast<size_t>((len - 1) / kv_.block_size())));
        int64_t unref = 0;
        const int64_t hit = kv_.MatchPrefix(chain, &unref);
        const int64_t need = BlocksFor(len) - hit + unref;
        if (need > kv_.NumAllocatableBlocks() - reserve) break;
        s.kv = kv_.CreateSequence();
        kv_.AttachPrefix(s.kv, chain, hit);
        s.computed = hit * kv_.block_size();
        if (!out_[r].admitted) out_[r].prefix_hit_tokens = s.computed;
      }
      out_[r].admitted = true;
      const int64_t want = std::min(Length(r) - s.computed, budget);
      const bool admitted = kv_.AppendTokens(s.kv, want);
      SEEDANCE_CHECK(admitted) << "admitting request " << r << " (" << want
                               << " tokens) failed after its whole length was found to fit";
      waiting_.pop_front();
      s.state = SeqState::kRunning;
      running_.push_back(r);
      Register(r);
      Add(r, want);
      budget -= want;
    }
    return plan_;
  }

  void Complete(double now_s) override {
    Advance(now_s, [this](int32_t r) { kv_.FreeSequence(seqs_[r].kv); });
    std::erase_if(running_, [this](int32_t r) { return seqs_[r].state == SeqState::kDone; });
  }

 private:
  void Preempt(int32_t r) {
    SeqRt& s = seqs_[r];
    ++preemptions_;
    ++out_[r].preemptions;
    const int64_t blocks = BlocksFor(s.computed);
    if (opt_.preemption == PreemptionMode::kSwap &&
        swap_used_blocks_ + blocks <= opt_.swap_space_blocks) {
      swap_used_blocks_ += blocks;
      plan_.swap_out_blocks += blocks;
      s.swapped_tokens = s.computed;
      s.state = SeqState::kSwapped;
    } else {
      s.computed = 0;  // recompute: prompt and generated tokens are prefilled again
      s.state = SeqState::kWaiting;
    }
    kv_.FreeSequence(s.kv);
    s.kv = -1;
    waiting_.push_front(r);
  }

  int64_t swap_used_blocks_ = 0;
};

class StaticScheduler final : public SchedulerBase {
 public:
  using SchedulerBase::SchedulerBase;

  const StepPlan& Schedule() override {
    plan_.Clear();
    if (batch_.empty()) FormBatch();
    for (int32_t r : batch_) {
      SeqRt& s = seqs_[r];
      if (s.state == SeqState::kDone) continue;
      const int64_t want = Length(r) - s.computed;      // whole prompt, then one token
      const bool appended = kv_.AppendTokens(s.kv, want);
      SEEDANCE_CHECK(appended) << "request " << r << ": " << want
                               << " tokens did not fit its static reservation";
      Add(r, want);
    }
    return plan_;
  }

  void Complete(double now_s) override {
    Advance(now_s, [](int32_t) {});  // memory stays reserved until the whole batch is done
    if (std::all_of(batch_.begin(), batch_.end(),
                    [this](int32_t r) { return seqs_[r].state == SeqState::kDone; })) {
      for (int32_t r : batch_) kv_.FreeSequence(seqs_[r].kv);
      batch_.clear();
      running_.clear();
    }
  }

 private:
  void FormBatch() {
    while (!waiting_.empty() && static_cast<int64_t>(batch_.size()) < opt_.max_num_seqs) {
      const int32_t r = waiting_.front();
      const int64_t reserve = std::max<int64_t>(opt_.static_reserve_tokens,
                                                req_[r].prompt_tokens + req_[r].output_tokens - 1);
      if (BlocksFor(reserve) > kv_.num_blocks()) {
        waiting_.pop_front();
        Drop(r);
        continue;
      }
      const KvSeqId id = kv_.CreateSequence();
      if (!kv_.Reserve(id, reserve)) {
        kv_.FreeSequence(id);
        break;
      }
      waiting_.pop_front();
      seqs_[r].kv = id;
      seqs_[r].state = SeqState::kRunning;
      out_[r].admitted = true;
      batch_.push_back(r);
      running_.push_back(r);
    }
  }

  std::vector<int32_t> batch_;
};

}  // namespace

std::unique_ptr<BatchScheduler> NewContinuousScheduler(std::span<const SchedRequest> requests,
                                                       const SchedulerOptions& options,
                                                       const KvBlockManagerOptions& kv_options) {
  return std::make_unique<ContinuousScheduler>(requests, options, kv_options);
}

std::unique_ptr<BatchScheduler> NewStaticScheduler(std::span<const SchedRequest> requests,
                                                   const SchedulerOptions& options,
                                                   const KvBlockManagerOptions& kv_options) {
  KvBlockManagerOptions kv = kv_options;
  kv.enable_prefix_caching = false;  // FasterTransformer has no prefix cache
  return std::make_unique<StaticScheduler>(requests, options, kv);
}

}  // namespace seedance::serving
