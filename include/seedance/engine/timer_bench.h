// Side-by-side timer benchmark behind `seedance bench timers` and bench/timer_bench: the Seedance
// TimerWheel against Boost.Asio steady_timer (one io_context, normal API), libevent evtimers
// (event_assign/evtimer_add/evtimer_del on one event_base) and a std::priority_queue baseline with
// lazy cancellation. Workloads (docs/engine.md, BENCHMARKS.md):
//   pairs:  `resident` timers due 1..600 s ahead stay pending while the loop schedules a timer due
//           10 ms..60 s ahead (a ring of precomputed random offsets) and cancels it at once.
//   expire: a fresh set of `resident` timers, all due, then fired in deadline order; only the
//           firing is timed (for the wheel and heap: time advanced in 1 ms steps over 1 s).
// Plus a wall-clock lateness run of TimerService (fire time minus deadline).
// Thread-safety: an implementation object is used by one thread.
#ifndef SEEDANCE_ENGINE_TIMER_BENCH_H_
#define SEEDANCE_ENGINE_TIMER_BENCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::engine {

class TimerBenchImpl {
 public:
  virtual ~TimerBenchImpl() = default;
  virtual std::string name() const = 0;
  // Schedules `resident` timers far in the future; they stay pending. Call once.
  virtual void Prepare(size_t resident) = 0;
  // Runs `n` schedule+cancel pairs.
  virtual void Pairs(size_t n) = 0;
  // Builds `n` due timers apart from the resident ones (untimed), fires them all and returns the
  // seconds the firing took. Returns a negative value if not every timer fired.
  virtual double ExpireSeconds(size_t n) = 0;

  // Time base of ExpireSeconds(): this thread's CPU time (true) or the steady clock (false).
  void set_cpu_time(bool cpu) { cpu_time_ = cpu; }

 protected:
  double NowS() const;  // in the chosen time base
  bool cpu_time_ = false;
};

// "seedance", "boost_asio", "libevent", "std_heap".
const std::vector<std::string>& TimerBenchImplNames();
// nullptr for an unknown name.
std::unique_ptr<TimerBenchImpl> NewTimerBenchImpl(std::string_view name, uint64_t seed = 1);

struct TimerBenchOptions {
  size_t resident = 1'000'000;
  double min_time_s = 0.3;  // per pairs measurement
  int repetitions = 3;      // the reported figure is the median of these
  uint64_t seed = 1;
  // Rates per second of this thread's CPU time (true: "per core", robust on a shared machine) or
  // per second of wall-clock time (false).
  bool cpu_time = true;
};

struct TimerBenchResult {
  std::string impl;
  size_t resident = 0;
  double schedule_cancel_pairs_per_s = 0;  // median over repetitions
  double expire_per_s = 0;                 // median over repetitions
};

// Measures every implementation in `impls` (all when empty) in one process, interleaving the
// repetitions so machine noise hits them alike.
absl::StatusOr<std::vector<TimerBenchResult>> RunTimerBench(const std::vector<std::string>& impls,
                                                            const TimerBenchOptions& options);

struct TimerLatenessResult {
  size_t timers = 0;
  int64_t tick_ns = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  size_t early = 0;       // fired before their deadline (must be 0)
  bool realtime = false;  // the timer thread ran SCHED_FIFO
};

// Limits of RunTimerLateness: a tick below the clock's resolution (1 us) would make the timer
// thread spin (and a tick of 0 divides by zero); the deadlines are spread over at most 600 s.
inline constexpr int64_t kMinLatenessTickNs = 1'000;
inline constexpr int64_t kMaxLatenessTickNs = 1'000'000'000;
inline constexpr double kMaxLatenessSpanS = 600;
inline constexpr size_t kMaxLatenessTimers = 10'000'000;

// Wall clock: a started TimerService with `tick_ns`, `timers` timers scheduled from this thread
// with deadlines spread over `duration_s`; waits until all fired. `realtime`: ask SCHED_FIFO for
// the timer thread (see TimerServiceOptions::realtime_priority). kInvalidArgument (nothing run)
// when tick_ns, duration_s or timers is outside the limits above or duration_s is not finite.
absl::StatusOr<TimerLatenessResult> RunTimerLateness(size_t timers, double duration_s,
                                                     int64_t tick_ns, bool realtime = false,
                                                     uint64_t seed = 1);

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_TIMER_BENCH_H_
