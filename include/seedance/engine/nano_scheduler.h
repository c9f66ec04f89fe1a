// NanoScheduler: worker threads running short tasks (C++20 coroutines) with strict priorities,
// time slices, preemption, yield, blocking on events and sleeping on a TimerWheel
// (MISSION §2, seed A 3.2). Design, mechanism and measured costs: docs/engine.md.
//
//   Task Work(Event& go) {                      // a task is a coroutine returning Task
//     co_await go.Wait();                       // blocks on an event (the worker runs others)
//     co_await SleepFor(2'000'000);             // sleeps 2 ms on the scheduler's timer wheel
//     for (...) { Crunch(); co_await Checkpoint(); }  // CPU-bound: a preemption point
//   }
//   NanoScheduler sched({.workers = 2});
//   JoinHandle h = sched.Spawn(Work(go), /*priority=*/5);
//   h.Wait();
//
// Scheduling: a ready task of priority p (0..kMaxPriority, higher first) runs before any ready
// task of lower priority; equal priorities run FIFO. When a task becomes ready and no worker is
// idle, the worker running the lowest priority below p is asked to yield; a task that has run a
// whole time slice while another task of at least its priority waits is asked too.
//
// Preemption is cooperative at the instruction level and prompt at the task level: "asked to
// yield" sets a per-worker flag; ShouldYield() is one relaxed atomic load of it, and
// `co_await Checkpoint()` suspends only when it is set. A task that never reaches a checkpoint or
// another co_await is never preempted (no signals: coroutine frames cannot be switched from a
// signal handler safely). A preempted task goes back to the front of its priority's queue; a
// task whose slice ran out, or that called Yield(), to the back.
//
// Invariants, checked in every build (SEEDANCE_CHECK: a bug aborts with what broke): a task is
// in the ready queue at most once and never while it runs, it is never resumed on two workers,
// the queue a task is popped from is its priority's, a worker's advertised priority (what
// preemption picks victims by) is that of the task it runs, a task has one joiner at most, and
// the awaitables are only awaited inside a task.
//
// Thread-safety: Spawn(), Event::Set() and JoinHandle::Wait() may be called from any thread.
// The awaitables (Yield, Checkpoint, SleepFor, SleepUntil, Event::Wait, JoinHandle::Join) are for
// use inside a task running on a NanoScheduler. An exception escaping a task terminates.
#ifndef SEEDANCE_ENGINE_NANO_SCHEDULER_H_
#define SEEDANCE_ENGINE_NANO_SCHEDULER_H_

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>

#include "seedance/base/mutex.h"
#include "seedance/engine/timer_clock.h"

namespace seedance::engine {

inline constexpr int kMaxPriority = 63;

class NanoScheduler;
class Event;

namespace nano_internal {
struct Worker;
struct TaskControl;
struct EventAccess;
// The running worker's "please yield" flag; null outside workers.
inline thread_local const std::atomic<bool>* tls_preempt_flag = nullptr;
inline thread_local Worker* tls_worker = nullptr;
void SuspendForYield();
void SuspendForSleep(int64_t deadline_ns);
void SuspendForEvent(Event* event);
void SuspendForJoin(TaskControl* target);
void SuspendForDone();
int64_t SchedulerNowNs();
}  // namespace nano_internal

// The return type of a task coroutine. A Task that is never spawned is destroyed unrun.
class Task {
 public:
  struct promise_type;
  using Handle = std::coroutine_handle<promise_type>;

  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Task& operator=(Task&&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

 private:
  friend class NanoScheduler;
  explicit Task(Handle h) : handle_(h) {}
  Handle handle_;
};

namespace nano_internal {
// Per-task state, inside the coroutine frame (no allocation besides the frame itself).
struct TaskControl {
  std::coroutine_handle<> handle;
  NanoScheduler* sched = nullptr;
  TaskControl* next = nullptr;  // ready queue / event wait list link
  int priority = 0;
  std::atomic<int> refs{1};  // the scheduler's, plus one per live JoinHandle
  std::atomic<uint32_t> done{0};
  std::atomic<TaskControl*> joiner{nullptr};  // a task blocked in Join(), or kJoinDone
  std::atomic<bool> running{false};           // resumed on a worker right now
  bool queued = false;                        // in a ready queue (guarded by the scheduler's mu)
};
inline TaskControl* const kJoinDone = reinterpret_cast<TaskControl*>(uintptr_t{1});
void ReleaseTask(TaskControl* t);
}  // namespace nano_internal

struct Task::promise_type {
  nano_internal::TaskControl control;

  Task get_return_object() {
    control.handle = Handle::from_promise(*this);
    return Task(Handle::from_promise(*this));
  }
  std::suspend_always initial_suspend() noexcept { return {}; }
  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) noexcept { nano_internal::SuspendForDone(); }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void return_void() {}
  void unhandled_exception() { std::terminate(); }
};

// Refers to a spawned task. Destroying it detaches the task (it still runs to completion).
class JoinHandle {
 public:
  JoinHandle() = default;
  JoinHandle(JoinHandle&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  JoinHandle& operator=(JoinHandle&& o) noexcept {
    if (this != &o) {
      Reset();
      t_ = std::exchange(o.t_, nullptr);
    }
    return *this;
  }
  ~JoinHandle() { Reset(); }

  bool valid() const { return t_ != nullptr; }
  bool done() const { return t_ != nullptr && t_->done.load(std::memory_order_acquire) != 0; }
  // Blocks the calling thread (not a worker: that would stall it) until the task finished.
  void Wait() const;
  // Inside a task: `co_await handle.Join();` resumes once the task finished. One joiner at most.
  auto Join() const {
    struct Awaiter {
      nano_internal::TaskControl* t;
      bool await_ready() const noexcept { return t->done.load(std::memory_order_acquire) != 0; }
      void await_suspend(std::coroutine_handle<>) const noexcept {
        nano_internal::SuspendForJoin(t);
      }
      void await_resume() const noexcept {}
    };
    return Awaiter{t_};
  }

 private:
  friend class NanoScheduler;
  explicit JoinHandle(nano_internal::TaskControl* t) : t_(t) {}
  void Reset() {
    if (t_ != nullptr) nano_internal::ReleaseTask(std::exchange(t_, nullptr));
  }
  nano_internal::TaskControl* t_ = nullptr;
};

struct NanoSchedulerOptions {
  // Worker threads. 0: manual mode, tasks run on the thread that calls RunUntilIdle().
  int workers = 1;
  // A task that ran this long while another task of at least its priority waits is asked to
  // yield (checked by the timer thread every time_slice_ns, so a slice lasts 1..2 of these).
  // 0 disables slicing.
  int64_t time_slice_ns = 2'000'000;
  int64_t timer_tick_ns = 100'000;  // the tick of the wheel that sleeping tasks wait on
  TimerClock* clock = nullptr;      // manual mode only (e.g. a FakeTimerClock); default real
  // > 0: workers ask for SCHED_FIFO at this priority (needs CAP_SYS_NICE; ignored without it).
  // On a loaded machine the OS descheduling a worker, not the checkpoint, sets the latency tail.
  int realtime_priority = 0;
};

struct NanoSchedulerStats {
  uint64_t dispatches = 0;        // task resumptions
  uint64_t preempt_requests = 0;  // times a worker was asked to yield
};

class NanoScheduler {
 public:
  explicit NanoScheduler(const NanoSchedulerOptions& options = {});
  // Stops the workers. Ready tasks that never finished are destroyed unfinished; a task blocked
  // on an Event that is never set must not outlive its scheduler.
  ~NanoScheduler();
  NanoScheduler(const NanoScheduler&) = delete;
  NanoScheduler& operator=(const NanoScheduler&) = delete;

  // Makes `task` ready at `priority` (clamped to 0..kMaxPriority). Thread-safe.
  JoinHandle Spawn(Task task, int priority = 0);

  // Manual mode: runs ready tasks and due sleeps on this thread until none is ready. Returns the
  // number of task resumptions.
  size_t RunUntilIdle();

  NanoSchedulerStats stats() const;
  int64_t NowNs() const;

  // Internal (awaitables, events, timers): makes a suspended task ready again.
  void MakeReady(nano_internal::TaskControl* t, bool front = false);
  // Test-only, for the death test of the ready-queue check: sets the ready bit of `priority`
  // (clamped to 0..kMaxPriority) whatever its queue holds. Every other call keeps a queue's bit
  // and its contents in step, whatever the tasks' own fields say, so none can produce this state.
  void SetReadyBitForTesting(int priority);
  struct Impl;  // internal

 private:
  std::unique_ptr<Impl> impl_;
};

// True when the scheduler asks the running task to yield (a higher-priority task is ready, or
// its slice ran out). One relaxed atomic load; false outside a task.
inline bool ShouldYield() {
  const std::atomic<bool>* f = nano_internal::tls_preempt_flag;
  return f != nullptr && f->load(std::memory_order_relaxed);
}

// `co_await Yield();` goes to the back of its priority's queue (resumes at once if nothing else
// of at least its priority is ready).
inline auto Yield() {
  struct Awaiter {
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) const noexcept { nano_internal::SuspendForYield(); }
    void await_resume() const noexcept {}
  };
  return Awaiter{};
}

// `co_await Checkpoint();` suspends only if ShouldYield(): the preemption point of CPU-bound code.
inline auto Checkpoint() {
  struct Awaiter {
    bool await_ready() const noexcept { return !ShouldYield(); }
    void await_suspend(std::coroutine_handle<>) const noexcept { nano_internal::SuspendForYield(); }
    void await_resume() const noexcept {}
  };
  return Awaiter{};
}

// `co_await SleepUntil(t);` resumes at or after scheduler time t (NanoScheduler::NowNs()).
inline auto SleepUntil(int64_t deadline_ns) {
  struct Awaiter {
    int64_t deadline_ns;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) const noexcept {
      nano_internal::SuspendForSleep(deadline_ns);
    }
    void await_resume() const noexcept {}
  };
  return Awaiter{deadline_ns};
}
inline auto SleepFor(int64_t duration_ns) {
  return SleepUntil(nano_internal::SchedulerNowNs() + duration_ns);
}

// A manual-reset event: tasks block in `co_await event.Wait()` until Set(). Set() and Reset() may
// be called from any thread. The event must outlive its waiters.
class Event {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void Set();
  void Reset();
  bool IsSet() const { return set_.load(std::memory_order_acquire); }
  auto Wait() {
    struct Awaiter {
      Event* e;
      bool await_ready() const noexcept { return e->IsSet(); }
      void await_suspend(std::coroutine_handle<>) const noexcept {
        nano_internal::SuspendForEvent(e);
      }
      void await_resume() const noexcept {}
    };
    return Awaiter{this};
  }

 private:
  friend struct nano_internal::EventAccess;
  base::Mutex mu_;
  std::atomic<bool> set_{false};
  nano_internal::TaskControl* waiters_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_NANO_SCHEDULER_H_
