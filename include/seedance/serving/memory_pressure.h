// Memory-pressure controller (seed A ch.1, "dynamic batching and gradient accumulation"): adjusts
// the micro-batch to the measured GPU memory use while the effective batch (micro-batch x
// gradient-accumulation steps) stays exactly constant, so the optimisation is unchanged.
//
// Seed rule: above 85% memory use shrink the micro-batch (x0.6) and accumulate more steps; between
// 60% and 85% keep it; below 60% grow it (x2). Here, with hysteresis and a learnt memory model:
//   * micro-batches are divisors of the effective batch, so accumulation_steps is an integer and
//     micro_batch * accumulation_steps == effective_batch always holds;
//   * shrinking is immediate (an OOM is worse than a slow step): the largest divisor <=
//     shrink_factor x micro, or, once the memory model is known, the largest divisor predicted to
//     use <= target (the middle of the band) if that is smaller;
//   * growing needs grow_after consecutive observations below the low watermark and cooldown
//     steps since the last change; it takes the largest divisor <= grow_factor x micro that the
//     memory model predicts to stay <= high_watermark - grow_headroom, so it does not grow into
//     the high watermark and oscillate;
//   * the memory model is use = static + per_sample x micro: the slope is fitted from the last
//     two observations at different micro-batch sizes, the static part re-anchored on every
//     observation (other tenants' memory comes and goes).
// Not thread-safe.
#pragma once

#include <vector>

namespace seedance::serving {

struct MemoryPressureOptions {
  int effective_batch = 64;      // micro_batch * accumulation_steps; constant
  int initial_micro_batch = 0;   // 0: the effective batch (no accumulation)
  double high_watermark = 0.85;  // seed: shrink above 85% memory use
  double low_watermark = 0.60;   // seed: grow below 60%
  double shrink_factor = 0.6;    // seed: x0.6
  double grow_factor = 2.0;      // seed: x2
  int grow_after = 3;            // consecutive low observations before growing
  int cooldown_steps = 3;        // observations after a change before the next growth
  double grow_headroom = 0.05;   // grow only to sizes predicted <= high_watermark - this
};

struct BatchPlan {
  int micro_batch = 1;
  int accumulation_steps = 1;
};

class MemoryPressureController {
 public:
  // REQUIRES: effective_batch >= 1, 0 < low_watermark < high_watermark <= 1.
  explicit MemoryPressureController(MemoryPressureOptions options = {});

  // Memory use (fraction of GPU memory, 0..1+) measured during the last step, which ran with
  // plan(); returns the plan for the next step.
  BatchPlan Observe(double memory_fraction);

  BatchPlan plan() const { return {micro_, options_.effective_batch / micro_}; }
  int adjustments() const { return adjustments_; }
  // True when memory is over the high watermark at the smallest micro-batch (1): nothing left.
  bool saturated() const { return saturated_; }
  const MemoryPressureOptions& options() const { return options_; }

 private:
  int LargestDivisorAtMost(double limit) const;
  double Predict(int micro) const;
  void SetMicro(int micro);

  MemoryPressureOptions options_;
  std::vector<int> divisors_;  // ascending divisors of effective_batch
  int micro_;
  int low_streak_ = 0;
  int since_change_ = 0;
  int adjustments_ = 0;
  bool saturated_ = false;
  // Memory model from observations at two different micro-batch sizes.
  int last_micro_ = 0;
  double last_use_ = 0;
  bool have_model_ = false;
  double static_ = 0;
  double per_sample_ = 0;
};

}  // namespace seedance::serving
