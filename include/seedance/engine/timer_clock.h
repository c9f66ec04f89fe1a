// The monotonic time source of the engine's timers and tasks, behind a small interface so tests
// drive time by hand (FakeTimerClock) instead of sleeping.
//
// Times are int64 nanoseconds on an arbitrary monotonic epoch (std::chrono::steady_clock for the
// real clock). Thread-safety: NowNs() may be called from any thread; FakeTimerClock's setters too.
#ifndef SEEDANCE_ENGINE_TIMER_CLOCK_H_
#define SEEDANCE_ENGINE_TIMER_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace seedance::engine {

class TimerClock {
 public:
  virtual ~TimerClock() = default;
  virtual int64_t NowNs() const = 0;
};

// std::chrono::steady_clock; a process-wide instance that is never destroyed.
TimerClock* RealTimerClock();
// steady_clock now, in nanoseconds, without the virtual call.
int64_t SteadyNowNs();

// A clock that only moves when told to. Starts at `start_ns`.
class FakeTimerClock final : public TimerClock {
 public:
  explicit FakeTimerClock(int64_t start_ns = 0) : now_ns_(start_ns) {}
  int64_t NowNs() const override { return now_ns_.load(std::memory_order_acquire); }
  void Set(int64_t now_ns) { now_ns_.store(now_ns, std::memory_order_release); }
  void Advance(int64_t delta_ns) { now_ns_.fetch_add(delta_ns, std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_TIMER_CLOCK_H_
