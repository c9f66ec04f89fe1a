#include "seedance/engine/period_controller.h"

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::engine {
namespace {

// Drives a controller on a fake clock: one QPS sample per second (load(t) measured over
// (t - 1, t]), a decision at the end of every period.
class Loop {
 public:
  explicit Loop(PeriodOptions options = {}) : controller_(options) {}

  // Runs until `end_s`; returns the decisions made.
  std::vector<std::pair<double, PeriodDecision>> Run(double end_s,
                                                     const std::function<double(double)>& load,
                                                     double sla_margin = 0.1,
                                                     double count_window_s = 0) {
    std::vector<std::pair<double, PeriodDecision>> out;
    while (true) {
      const double next_tick = tick_s_ + controller_.period_s();
      if (next_tick > end_s) break;
      while (sample_s_ + 1 <= next_tick + 1e-9) {
        sample_s_ += 1;
        controller_.ObserveQps(sample_s_, load(sample_s_), count_window_s);
      }
      tick_s_ = next_tick;
      out.emplace_back(tick_s_, controller_.Decide(tick_s_, sla_margin));
    }
    return out;
  }
  double now() const { return tick_s_; }

 private:
  PeriodController controller_;
  double tick_s_ = 0;
  double sample_s_ = 0;
};

int Reversals(const std::vector<std::pair<double, PeriodDecision>>& ds) {
  int last = 0, reversals = 0;
  for (const auto& [t, d] : ds) {
    if (d.direction == 0) continue;
    if (last != 0 && d.direction != last) ++reversals;
    last = d.direction;
  }
  return reversals;
}
int Changes(const std::vector<std::pair<double, PeriodDecision>>& ds) {
  int n = 0;
  for (const auto& [t, d] : ds) n += d.direction != 0;
  return n;
}

TEST(PeriodControllerTest, StartsAtTheBasePeriod) {
  PeriodController c;
  EXPECT_EQ(c.period_s(), 10);
}

TEST(PeriodControllerTest, TenPercentNoiseNeverMovesThePeriod) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> noise(-0.1, 0.1);
    Loop loop;
    const auto ds = loop.Run(4 * 3600, [&](double) { return 100 * (1 + noise(rng)); });
    EXPECT_EQ(Reversals(ds), 0) << "seed " << seed;
    EXPECT_EQ(Changes(ds), 0) << "seed " << seed;
    EXPECT_EQ(ds.back().second.period_s, 10);
  }
}

TEST(PeriodControllerTest, TenPercentNoiseWithComfortableSlaLengthensOnceAndNeverReverses) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> noise(-0.1, 0.1);
    Loop loop;
    const auto ds = loop.Run(
        4 * 3600, [&](double) { return 100 * (1 + noise(rng)); }, 0.5);
    EXPECT_EQ(Reversals(ds), 0) << "seed " << seed;
    EXPECT_EQ(Changes(ds), 1) << "seed " << seed;
    EXPECT_EQ(ds.back().second.period_s, 15);
  }
}

TEST(PeriodControllerTest, ReactsToALoadStepWithinOnePeriod) {
  // Every phase of the step within a period, on 1 s samples.
  for (double phase = 0.5; phase < 10; phase += 1) {
    std::mt19937_64 rng(static_cast<uint64_t>(phase * 10));
    std::uniform_real_distribution<double> noise(-0.1, 0.1);
    const double step_s = 600 + phase;
    Loop loop;
    const auto ds =
        loop.Run(900, [&](double t) { return (t < step_s ? 100 : 200) * (1 + noise(rng)); });
    double period_at_step = 0, reacted_s = -1;
    for (const auto& [t, d] : ds) {
      if (t < step_s) period_at_step = d.period_s;
      if (t >= step_s && d.direction == -1) {
        reacted_s = t;
        EXPECT_EQ(d.reason, "step");
        EXPECT_LT(d.period_s, 5);
        break;
      }
    }
    ASSERT_GT(reacted_s, 0) << "phase " << phase;
    EXPECT_LE(reacted_s - step_s, period_at_step) << "phase " << phase;
  }
}

TEST(PeriodControllerTest, DropInLoadIsAStepToo) {
  Loop loop;
  const auto ds = loop.Run(700, [&](double t) { return t < 600.5 ? 200.0 : 80.0; });
  bool reacted = false;
  for (const auto& [t, d] : ds) {
    if (t < 600.5) {
      EXPECT_EQ(d.direction, 0);
    } else if (t <= 610.5 && d.direction == -1) {
      EXPECT_EQ(d.reason, "step");
      EXPECT_GT(d.step, 0.5);  // 200 -> 80 is -60%; the baseline already holds a few 80s
      reacted = true;
    }
  }
  EXPECT_TRUE(reacted);
}

TEST(PeriodControllerTest, NegativeSlaMarginShortensThePeriod) {
  Loop loop;
  const auto ds = loop.Run(
      100, [](double) { return 100.0; }, -0.2);
  // base / (1 + 5 * 0.2) = 5 s.
  EXPECT_DOUBLE_EQ(ds.back().second.period_s, 5);
  EXPECT_EQ(ds.back().second.reason, "sla");
}

TEST(PeriodControllerTest, VolatileLoadShortensThePeriodAndStaysBounded) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  Loop loop;
  const auto ds = loop.Run(
      1200, [&](double) { return u(rng) < 0.5 ? 20.0 : 180.0; }, -1.0);
  for (const auto& [t, d] : ds) {
    EXPECT_GE(d.period_s, 2);
    EXPECT_LE(d.period_s, 30);
  }
  EXPECT_DOUBLE_EQ(ds.back().second.period_s, 2);
}

TEST(PeriodControllerTest, LengthensOnlyAfterTheHoldTime) {
  Loop loop;
  auto ds = loop.Run(1500, [&](double t) { return t < 600.5 ? 100.0 : 200.0; });
  double shortened_at = -1, lengthened_at = -1;
  for (const auto& [t, d] : ds) {
    if (d.direction == -1 && shortened_at < 0) shortened_at = t;
    if (d.direction == +1 && lengthened_at < 0) lengthened_at = t;
  }
  ASSERT_GT(shortened_at, 0);
  ASSERT_GT(lengthened_at, shortened_at);
  // The step stays in the 300 s history; after it leaves, lengthening still waits 60 s.
  EXPECT_GE(lengthened_at - 600, 60);
  EXPECT_EQ(Reversals(ds), 1);
  EXPECT_DOUBLE_EQ(ds.back().second.period_s, 10);
}

TEST(PeriodControllerTest, PoissonCountingNoiseIsNotVolatility) {
  std::mt19937_64 rng(5);
  std::poisson_distribution<int> arrivals(5.0);  // 5 requests/s counted per second
  Loop loop;
  const auto ds = loop.Run(
      3600, [&](double) { return double(arrivals(rng)); }, 0.1, 1.0);
  EXPECT_EQ(Changes(ds), 0);
}

}  // namespace
}  // namespace seedance::engine
