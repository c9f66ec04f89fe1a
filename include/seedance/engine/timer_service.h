// TimerService: the thread-safe front of a TimerWheel. Any thread may Schedule() and Cancel();
// requests are appended to a batch under a short lock and the owning thread applies the whole
// batch at once before it advances the wheel, so producers never touch the wheel and the wheel
// stays single-threaded. The owner is either a background thread (Start(), real clock; it sleeps
// until the wheel's next work, with 1 ns timer slack and a short final spin for precision) or the
// caller of Poll() (manual mode, any TimerClock, e.g. a FakeTimerClock in tests).
//
// Ids are 64-bit and never reused. Cancel() is asynchronous: it takes effect when the batch is
// applied; a callback that has already started is not interrupted, and cancelling an id that has
// fired is a no-op. Callbacks run on the owner thread, one at a time, and may call Schedule() and
// Cancel() (their requests join the next batch). Unlike the bare wheel this front allocates (a
// request per Schedule and a hash-map entry per live timer): it is for cross-thread use.
#ifndef SEEDANCE_ENGINE_TIMER_SERVICE_H_
#define SEEDANCE_ENGINE_TIMER_SERVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "seedance/engine/timer_clock.h"
#include "seedance/engine/timer_wheel.h"

namespace seedance::engine {

struct TimerServiceOptions {
  int64_t tick_ns = 1'000'000;
  int levels = 6;
  TimerClock* clock = nullptr;  // nullptr: RealTimerClock(); Start() requires the real clock
  int64_t spin_ns = 20'000;     // the background thread busy-waits the last spin_ns before work
  // > 0: the background thread asks for SCHED_FIFO at this priority (needs CAP_SYS_NICE; falls
  // back to normal scheduling without it, see realtime()). On a loaded machine the wakeup delay of
  // a normal thread, not the wheel, dominates lateness.
  int realtime_priority = 0;
};

class TimerService {
 public:
  using Id = uint64_t;  // 0 is never a valid id

  explicit TimerService(const TimerServiceOptions& options = {});
  // Stops the background thread if any; timers still pending are dropped without running.
  ~TimerService();
  TimerService(const TimerService&) = delete;
  TimerService& operator=(const TimerService&) = delete;

  // Thread-safe. See TimerWheel::Schedule / SchedulePeriodic for the timing contract.
  Id Schedule(int64_t deadline_ns, TimerCallback cb);
  Id SchedulePeriodic(int64_t first_deadline_ns, int64_t period_ns, TimerCallback cb);
  void Cancel(Id id);

  // Starts the owner thread. REQUIRES: the real clock; not started yet.
  void Start();
  // Stops and joins the owner thread (idempotent).
  void Stop();

  // Manual mode (no thread started): applies pending requests, then advances the wheel to the
  // clock's now. Returns the number of callbacks run.
  size_t Poll();
  // Manual mode: when Poll() next has work (requests count as work now). nullopt when idle.
  std::optional<int64_t> NextWorkNs();

  TimerClock* clock() const { return clock_; }
  // Whether the background thread got SCHED_FIFO (valid once Start() returned).
  bool realtime() const { return realtime_.load(std::memory_order_acquire); }
  // Timers in the wheel (owner's view; approximate from other threads).
  size_t size() const { return live_.load(std::memory_order_relaxed); }

 private:
  struct Request;
  struct Entry;
  struct State;

  void ApplyBatch();
  void Fire(Id id);
  void Loop();

  TimerClock* const clock_;
  const int64_t spin_ns_;
  const int realtime_priority_;
  std::atomic<bool> realtime_{false};
  std::atomic<bool> started_{false};
  std::atomic<uint64_t> next_id_{1};
  std::atomic<size_t> live_{0};
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_TIMER_SERVICE_H_
