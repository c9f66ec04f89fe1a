#include "seedance/serving/memory_pressure.h"

#include <gtest/gtest.h>

#include <random>

namespace seedance::serving {
namespace {

// A job whose memory use is static + per_sample * micro_batch (weights, optimizer state, and
// activations), as a fraction of GPU memory.
struct Job {
  double static_fraction;
  double per_sample;
  double Use(int micro) const { return static_fraction + per_sample * micro; }
};

void ExpectEffectiveBatchKept(const MemoryPressureController& c) {
  const BatchPlan p = c.plan();
  EXPECT_EQ(p.micro_batch * p.accumulation_steps, c.options().effective_batch);
  EXPECT_GE(p.micro_batch, 1);
}

TEST(MemoryPressureDeathTest, BadOptionsAreCaught) {
  MemoryPressureOptions zero_batch;
  zero_batch.effective_batch = 0;
  EXPECT_DEATH(MemoryPressureController c(zero_batch), "effective_batch 0, need >= 1");
  MemoryPressureOptions crossed;
  crossed.low_watermark = 0.9;
  crossed.high_watermark = 0.8;
  EXPECT_DEATH(MemoryPressureController c(crossed),
               "watermarks low 0.9, high 0.8: need 0 < low < high");
}

TEST(MemoryPressureTest, StartsWithoutAccumulation) {
  MemoryPressureController c;
  EXPECT_EQ(c.plan().micro_batch, 64);
  EXPECT_EQ(c.plan().accumulation_steps, 1);
}

TEST(MemoryPressureTest, ShrinksAboveTheHighWatermarkKeepingTheEffectiveBatch) {
  MemoryPressureController c;
  const BatchPlan p = c.Observe(0.90);  // seed: x0.6 -> 38.4 -> largest divisor of 64: 32
  EXPECT_EQ(p.micro_batch, 32);
  EXPECT_EQ(p.accumulation_steps, 2);
  ExpectEffectiveBatchKept(c);
}

TEST(MemoryPressureTest, HoldsInsideTheBand) {
  MemoryPressureOptions o;
  o.initial_micro_batch = 16;
  MemoryPressureController c(o);
  for (int i = 0; i < 100; ++i) c.Observe(0.61 + 0.23 * (i % 2));  // 0.61 / 0.84 alternating
  EXPECT_EQ(c.plan().micro_batch, 16);
  EXPECT_EQ(c.adjustments(), 0);
}

TEST(MemoryPressureTest, GrowsOnlyAfterSustainedLowUse) {
  MemoryPressureOptions o;
  o.initial_micro_batch = 8;
  MemoryPressureController c(o);
  c.Observe(0.30);
  c.Observe(0.30);
  EXPECT_EQ(c.plan().micro_batch, 8);  // grow_after = 3
  c.Observe(0.70);                     // back in the band: the streak restarts
  c.Observe(0.30);
  c.Observe(0.30);
  EXPECT_EQ(c.plan().micro_batch, 8);
  c.Observe(0.30);
  EXPECT_GT(c.plan().micro_batch, 8);
  EXPECT_LE(c.plan().micro_batch, 16);  // at most x2
  ExpectEffectiveBatchKept(c);
}

TEST(MemoryPressureTest, ConvergesWithoutOscillatingOnARealisticJob) {
  const Job job{0.35, 0.012};  // micro 64 -> 1.12 (OOM), micro 16 -> 0.54, micro 32 -> 0.73
  MemoryPressureController c;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.01);
  for (int step = 0; step < 500; ++step) {
    c.Observe(job.Use(c.plan().micro_batch) + noise(rng));
    ExpectEffectiveBatchKept(c);
  }
  EXPECT_EQ(c.plan().micro_batch, 32);  // the largest that stays under 85%
  EXPECT_EQ(c.plan().accumulation_steps, 2);
  EXPECT_LE(c.adjustments(), 3);  // no grow-shrink cycles
}

TEST(MemoryPressureTest, FollowsChangingMemoryUseBothWays) {
  // Another tenant takes memory, then releases it: the micro-batch shrinks, then grows back,
  // and the effective batch never changes.
  MemoryPressureOptions o;
  o.effective_batch = 96;
  MemoryPressureController c(o);
  double other = 0;
  int min_micro = 96, max_after = 0;
  for (int step = 0; step < 300; ++step) {
    if (step == 50) other = 0.45;
    if (step == 150) other = 0;
    const double use = other + 0.2 + 0.006 * c.plan().micro_batch;
    c.Observe(use);
    ExpectEffectiveBatchKept(c);
    if (step >= 50 && step < 150) min_micro = std::min(min_micro, c.plan().micro_batch);
    if (step >= 250) max_after = std::max(max_after, c.plan().micro_batch);
  }
  EXPECT_LT(min_micro, 48);  // 0.45 + 0.2 + 0.006 * 48 = 0.94 is still too much
  EXPECT_GE(max_after, 96);  // 0.2 + 0.006 * 96 = 0.78: back to no accumulation
  EXPECT_LE(c.adjustments(), 8);
}

TEST(MemoryPressureTest, SaturatesAtMicroBatchOne) {
  MemoryPressureController c;
  for (int i = 0; i < 20; ++i) c.Observe(0.99);
  EXPECT_EQ(c.plan().micro_batch, 1);
  EXPECT_EQ(c.plan().accumulation_steps, 64);
  EXPECT_TRUE(c.saturated());
  c.Observe(0.5);
  EXPECT_FALSE(c.saturated());
}

TEST(MemoryPressureTest, EffectiveBatchIsExactForAnySize) {
  for (int eff : {1, 7, 12, 30, 100, 128}) {
    MemoryPressureOptions o;
    o.effective_batch = eff;
    MemoryPressureController c(o);
    std::mt19937 rng(eff);
    std::uniform_real_distribution<double> use(0.1, 1.0);
    for (int i = 0; i < 200; ++i) {
      c.Observe(use(rng));
      ExpectEffectiveBatchKept(c);
    }
  }
}

}  // namespace
}  // namespace seedance::serving
