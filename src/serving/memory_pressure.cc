// Memory-pressure controller (memory_pressure.h).
#include "seedance/serving/memory_pressure.h"

#include <algorithm>

#include "seedance/base/check.h"

namespace seedance::serving {

MemoryPressureController::MemoryPressureController(MemoryPressureOptions options)
    : options_(options) {
  SEEDANCE_CHECK(options_.effective_batch >= 1)
      << "effective_batch " << options_.effective_batch << ", need >= 1";
  SEEDANCE_CHECK(options_.low_watermark > 0 && options_.low_watermark < options_.high_watermark)
      << "watermarks low " << options_.low_watermark << ", high " << options_.high_watermark
      << ": need 0 < low < high";
  for (int d = 1; d <= options_.effective_batch; ++d) {
    if (options_.effective_batch % d == 0) divisors_.push_back(d);
  }
  const int initial =
      options_.initial_micro_batch > 0 ? options_.initial_micro_batch : options_.effective_batch;
  micro_ = LargestDivisorAtMost(initial);
  since_change_ = options_.cooldown_steps;
}

int MemoryPressureController::LargestDivisorAtMost(double limit) const {
  int best = 1;
  for (int d : divisors_) {
    if (d <= limit + 1e-9) best = d;
  }
  return best;
}

double MemoryPressureController::Predict(int micro) const { return static_ + per_sample_ * micro; }

void MemoryPressureController::SetMicro(int micro) {
  if (micro != micro_) {
    micro_ = micro;
    ++adjustments_;
    since_change_ = 0;
  }
  low_streak_ = 0;
}

BatchPlan MemoryPressureController::Observe(double use) {
  const MemoryPressureOptions& o = options_;
  // Learn use = static + per_sample * micro from two sizes.
  if (last_micro_ > 0 && last_micro_ != micro_) {
    const double slope = (use - last_use_) / static_cast<double>(micro_ - last_micro_);
    if (slope > 0) {
      per_sample_ = slope;
      static_ = use - slope * micro_;
      have_model_ = true;
    }
  }
  // Memory not owned by this job (other tenants, fragmentation) moves: re-anchor the static part
  // on every observation, keeping the learnt per-sample slope.
  if (have_model_) static_ = use - per_sample_ * micro_;
  last_micro_ = micro_;
  last_use_ = use;
  ++since_change_;
  const double target = 0.5 * (o.low_watermark + o.high_watermark);

  if (use > o.high_watermark) {
    saturated_ = micro_ == 1;
    int next = LargestDivisorAtMost(std::max(1.0, o.shrink_factor * micro_));
    if (have_model_) {
      // The model may ask for more than the seed's step when the overshoot is large.
      for (auto it = divisors_.rbegin(); it != divisors_.rend(); ++it) {
        if (*it <= next && Predict(*it) <= target) {
          next = *it;
          break;
        }
        if (*it == 1) next = 1;
      }
    }
    SetMicro(std::min(next, micro_));
    return plan();
  }
  saturated_ = false;
  if (use < o.low_watermark) {
    ++low_streak_;
    if (low_streak_ >= o.grow_after && since_change_ >= o.cooldown_steps) {
      int next = micro_;
      for (int d : divisors_) {
        if (d <= micro_ || d > o.grow_factor * micro_ + 1e-9) continue;
        // Without a model, assume memory grows in proportion to the micro-batch (pessimistic).
        const double predicted =
            have_model_ ? Predict(d) : use * static_cast<double>(d) / static_cast<double>(micro_);
        if (predicted <= o.high_watermark - o.grow_headroom) next = d;
      }
      if (next == micro_ && !have_model_) {
        // Take the smallest step up so that a model can be learnt.
        for (int d : divisors_) {
          if (d > micro_) {
            if (use * d / micro_ <= o.high_watermark) next = d;
            break;
          }
        }
      }
      SetMicro(next);
      low_streak_ = 0;
    }
    return plan();
  }
  low_streak_ = 0;  // inside the band: hold
  return plan();
}

}  // namespace seedance::serving
