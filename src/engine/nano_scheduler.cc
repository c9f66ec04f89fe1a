// NanoScheduler; see include/seedance/engine/nano_scheduler.h and docs/engine.md.
#include "seedance/engine/nano_scheduler.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <bit>
#include <condition_variable>
#include <thread>
#include <vector>

#include "seedance/base/check.h"
#include "seedance/base/mutex.h"
#include "seedance/engine/timer_service.h"

namespace seedance::engine {
namespace nano_internal {

enum class Action { kNone, kYield, kSleep, kEvent, kJoin, kDone };

struct alignas(64) Worker {
  NanoScheduler::Impl* impl = nullptr;
  std::atomic<bool> preempt{false};
  std::atomic<int> running_priority{-1};  // written under Impl::mu
  std::atomic<uint64_t> dispatches{0};
  uint64_t seen_dispatches = 0;  // slice checker (timer thread) only
  // Set by the awaitable that suspended the current task, read once it has returned.
  Action action = Action::kNone;
  int64_t sleep_deadline_ns = 0;
  Event* event = nullptr;
  TaskControl* join_target = nullptr;
  std::thread thread;
};

struct EventAccess {
  // The task suspended in Event::Wait(): park it unless the event got set meanwhile.
  static bool Park(Event* e, TaskControl* t) {
    base::MutexLock lock(e->mu_);
    if (e->set_.load(std::memory_order_relaxed)) return false;
    t->next = e->waiters_;
    e->waiters_ = t;
    return true;
  }
};

namespace {
// Failure reports of the dispatch-path checks, out of line and cold, so that inline each check is
// a compare and a branch. Each reports through SEEDANCE_CHECK: what broke, the values, abort.
[[noreturn, gnu::cold, gnu::noinline]] void DieAlreadyRunning(int priority) {
  const bool task_not_running = false;
  SEEDANCE_CHECK(task_not_running)
      << "task of priority " << priority << " resumed while it already runs";
}

[[noreturn, gnu::cold, gnu::noinline]] void DieWorkerPriority(int advertised, int priority) {
  const bool worker_priority_is_its_tasks = false;
  SEEDANCE_CHECK(worker_priority_is_its_tasks)
      << "worker advertises priority " << advertised << " while its task has priority " << priority
      << ": preemption would misjudge it";
}
}  // namespace

void ReleaseTask(TaskControl* t) {
  if (t->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) t->handle.destroy();
}

}  // namespace nano_internal

using nano_internal::Action;
using nano_internal::TaskControl;
using nano_internal::Worker;

struct NanoScheduler::Impl {
  Impl(NanoScheduler* s, const NanoSchedulerOptions& o)
      : self(s),
        options(o),
        clock(o.workers > 0 || o.clock == nullptr ? RealTimerClock() : o.clock),
        timers(TimerServiceOptions{.tick_ns = o.timer_tick_ns, .clock = clock}) {}

  struct Queue {
    TaskControl* head = nullptr;
    TaskControl* tail = nullptr;
  };

  void Push(TaskControl* t, bool front) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    SEEDANCE_CHECK(t->priority >= 0 && t->priority <= kMaxPriority)
        << "task of priority " << t->priority << " made ready, outside 0.." << kMaxPriority;
    SEEDANCE_CHECK(!t->queued) << "task of priority " << t->priority
                               << " made ready while already in the ready queue";
    SEEDANCE_CHECK(!t->running.load(std::memory_order_relaxed))
        << "task of priority " << t->priority << " made ready while it runs";
    t->queued = true;
    Queue& q = queues[t->priority];
    if (q.head == nullptr) {
      t->next = nullptr;
      q.head = q.tail = t;
      ready_mask.store(ready_mask.load(std::memory_order_relaxed) | (uint64_t{1} << t->priority),
                       std::memory_order_relaxed);
    } else if (front) {
      t->next = q.head;
      q.head = t;
    } else {
      t->next = nullptr;
      q.tail->next = t;
      q.tail = t;
    }
  }
  TaskControl* Pop() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const uint64_t mask = ready_mask.load(std::memory_order_relaxed);
    if (mask == 0) return nullptr;
    const int p = 63 - std::countl_zero(mask);
    Queue& q = queues[p];
    TaskControl* t = q.head;
    SEEDANCE_CHECK(t != nullptr) << "ready bit " << p << " set on an empty queue";
    SEEDANCE_CHECK(t->priority == p)
        << "task of priority " << t->priority << " in the ready queue of priority " << p;
    t->queued = false;
    q.head = t->next;
    if (q.head == nullptr) {
      q.tail = nullptr;
      ready_mask.store(mask & ~(uint64_t{1} << p), std::memory_order_relaxed);
    }
    return t;
  }
  int HighestReady() const {
    const uint64_t mask = ready_mask.load(std::memory_order_relaxed);
    return mask == 0 ? -1 : 63 - std::countl_zero(mask);
  }
  // Asks the worker running the lowest priority below `priority` to yield.
  void RequestPreemption(int priority) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Worker* victim = nullptr;
    int lowest = priority;
    for (Worker* w : all_workers) {
      const int p = w->running_priority.load(std::memory_order_relaxed);
      if (p >= 0 && p < lowest) {
        lowest = p;
        victim = w;
      }
    }
    if (victim != nullptr && !victim->preempt.load(std::memory_order_relaxed)) {
      victim->preempt.store(true, std::memory_order_relaxed);
      preempt_requests.fetch_add(1, std::memory_order_relaxed);
    }
  }
  void MakeReady(TaskControl* t, bool front) {
    bool notify = false;
    {
      base::MutexLock lock(mu);
      Push(t, front);
      notify = idle > 0;
      if (!notify) RequestPreemption(t->priority);
    }
    if (notify) cv.notify_one();
  }

  // Slice expiry (timer thread): a worker still on the same dispatch as at the last check, with
  // another task of at least its priority waiting, is asked to yield.
  void CheckSlices() {
    const int highest = HighestReady();
    for (Worker* w : all_workers) {
      const uint64_t d = w->dispatches.load(std::memory_order_relaxed);
      const int p = w->running_priority.load(std::memory_order_relaxed);
      if (p >= 0 && d == w->seen_dispatches && highest >= p &&
          !w->preempt.load(std::memory_order_relaxed)) {
        w->preempt.store(true, std::memory_order_relaxed);
        preempt_requests.fetch_add(1, std::memory_order_relaxed);
      }
      w->seen_dispatches = d;
    }
  }

  // Runs `t` and whatever follows it directly, until the worker must pick from the queues again.
  size_t RunChain(Worker* w, TaskControl* t) {
    size_t runs = 0;
    while (t != nullptr) {
      w->preempt.store(false, std::memory_order_relaxed);
      w->action = Action::kNone;
      w->dispatches.store(w->dispatches.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
      ++runs;
      // A load and a store, not an atomic exchange: cheap, and a second worker resuming the same
      // task is still caught unless both pass the load in the same instant.
      if (t->running.load(std::memory_order_relaxed)) [[unlikely]] {
        nano_internal::DieAlreadyRunning(t->priority);
      }
      t->running.store(true, std::memory_order_relaxed);
      t->handle.resume();
      // Suspended now: whatever AfterSuspend hands it to may resume it on another worker.
      t->running.store(false, std::memory_order_release);
      t = AfterSuspend(w, t);
    }
    return runs;
  }

  // Applies what the suspended task asked for; returns the task to run next without going back
  // to the queues, if any.
  TaskControl* AfterSuspend(Worker* w, TaskControl* t) {
    if (const int advertised = w->running_priority.load(std::memory_order_relaxed);
        advertised != t->priority) [[unlikely]] {
      nano_internal::DieWorkerPriority(advertised, t->priority);
    }
    switch (w->action) {
      case Action::kYield: {
        base::MutexLock lock(mu);
        const int highest = HighestReady();
        if (highest < t->priority) return t;  // nothing else of its rank is ready: continue
        // Preempted by a higher priority: keep its turn; slice expiry or a plain yield: go last.
        Push(t, highest > t->priority);
        TaskControl* next = Pop();
        w->running_priority.store(next->priority, std::memory_order_relaxed);
        return next;
      }
      case Action::kSleep: {
        NanoScheduler* s = self;
        timers.Schedule(w->sleep_deadline_ns, [s, t] { s->MakeReady(t); });
        break;
      }
      case Action::kEvent:
        if (!nano_internal::EventAccess::Park(w->event, t)) MakeReady(t, false);
        break;
      case Action::kJoin: {
        TaskControl* expected = nullptr;
        if (!w->join_target->joiner.compare_exchange_strong(expected, t,
                                                            std::memory_order_acq_rel)) {
          SEEDANCE_CHECK(expected == nano_internal::kJoinDone)
              << "a second task joins the same task (one joiner at most)";
          return t;  // finished meanwhile
        }
        break;
      }
      case Action::kDone: {
        t->done.store(1, std::memory_order_release);
        t->done.notify_all();
        TaskControl* joiner =
            t->joiner.exchange(nano_internal::kJoinDone, std::memory_order_acq_rel);
        nano_internal::ReleaseTask(t);
        if (joiner != nullptr && joiner != nano_internal::kJoinDone) {
          // Hand over to the joiner directly when it outranks everything that is ready.
          base::MutexLock lock(mu);
          if (HighestReady() <= joiner->priority) {
            w->running_priority.store(joiner->priority, std::memory_order_relaxed);
            return joiner;
          }
          Push(joiner, false);
          if (idle > 0) cv.notify_one();
        }
        break;
      }
      case Action::kNone:
        SEEDANCE_CHECK(false) << "a task suspended on an awaitable that is not the scheduler's";
        break;
    }
    w->running_priority.store(-1, std::memory_order_relaxed);
    return nullptr;
  }

  void WorkerLoop(Worker* w) {
    if (options.realtime_priority > 0) {
      sched_param param{};
      param.sched_priority = options.realtime_priority;
      pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);  // best effort
    }
    nano_internal::tls_worker = w;
    nano_internal::tls_preempt_flag = &w->preempt;
    for (;;) {
      TaskControl* t;
      {
        base::MutexLock lock(mu);
        while ((t = Pop()) == nullptr) {
          if (stop) return;
          ++idle;
          lock.Wait(cv);
          --idle;
        }
        w->running_priority.store(t->priority, std::memory_order_relaxed);
      }
      RunChain(w, t);
    }
  }

  NanoScheduler* self;
  const NanoSchedulerOptions options;
  TimerClock* const clock;
  base::Mutex mu;
  std::condition_variable cv;
  bool stop ABSL_GUARDED_BY(mu) = false;
  int idle ABSL_GUARDED_BY(mu) = 0;
  Queue queues[kMaxPriority + 1] ABSL_GUARDED_BY(mu);
  std::atomic<uint64_t> ready_mask{0};  // written under mu
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<Worker*> all_workers;  // the threads' workers, or the manual one
  std::unique_ptr<Worker> manual;
  std::atomic<uint64_t> preempt_requests{0};
  TimerService timers;
};

namespace nano_internal {
namespace {
Worker* Current() {
  Worker* w = tls_worker;
  SEEDANCE_CHECK(w != nullptr) << "a NanoScheduler awaitable was awaited outside a task";
  return w;
}
}  // namespace
void SuspendForYield() { Current()->action = Action::kYield; }
void SuspendForSleep(int64_t deadline_ns) {
  Worker* w = Current();
  w->action = Action::kSleep;
  w->sleep_deadline_ns = deadline_ns;
}
void SuspendForEvent(Event* event) {
  Worker* w = Current();
  w->action = Action::kEvent;
  w->event = event;
}
void SuspendForJoin(TaskControl* target) {
  Worker* w = Current();
  w->action = Action::kJoin;
  w->join_target = target;
}
void SuspendForDone() { Current()->action = Action::kDone; }
int64_t SchedulerNowNs() {
  Worker* w = tls_worker;
  return w != nullptr ? w->impl->clock->NowNs() : SteadyNowNs();
}
}  // namespace nano_internal

NanoScheduler::NanoScheduler(const NanoSchedulerOptions& options)
    : impl_(std::make_unique<Impl>(this, options)) {
  Impl& m = *impl_;
  if (options.workers <= 0) {
    m.manual = std::make_unique<Worker>();
    m.manual->impl = &m;
    m.all_workers.push_back(m.manual.get());
    return;
  }
  for (int i = 0; i < options.workers; ++i) {
    m.workers.push_back(std::make_unique<Worker>());
    m.workers.back()->impl = &m;
    m.all_workers.push_back(m.workers.back().get());
  }
  m.timers.Start();
  if (options.time_slice_ns > 0) {
    m.timers.SchedulePeriodic(m.clock->NowNs() + options.time_slice_ns, options.time_slice_ns,
                              [&m] { m.CheckSlices(); });
  }
  for (auto& w : m.workers) {
    Worker* wp = w.get();
    wp->thread = std::thread([&m, wp] { m.WorkerLoop(wp); });
  }
}

NanoScheduler::~NanoScheduler() {
  Impl& m = *impl_;
  m.timers.Stop();
  {
    base::MutexLock lock(m.mu);
    m.stop = true;
  }
  m.cv.notify_all();
  for (auto& w : m.workers) w->thread.join();
  base::MutexLock lock(m.mu);
  while (TaskControl* t = m.Pop()) nano_internal::ReleaseTask(t);
}

JoinHandle NanoScheduler::Spawn(Task task, int priority) {
  Task::Handle h = std::exchange(task.handle_, nullptr);
  TaskControl& c = h.promise().control;
  c.sched = this;
  c.priority = std::clamp(priority, 0, kMaxPriority);
  c.refs.store(2, std::memory_order_relaxed);
  impl_->MakeReady(&c, false);
  return JoinHandle(&c);
}

void NanoScheduler::MakeReady(TaskControl* t, bool front) { impl_->MakeReady(t, front); }

void NanoScheduler::SetReadyBitForTesting(int priority) {
  Impl& m = *impl_;
  base::MutexLock lock(m.mu);
  const uint64_t bit = uint64_t{1} << std::clamp(priority, 0, kMaxPriority);
  m.ready_mask.store(m.ready_mask.load(std::memory_order_relaxed) | bit, std::memory_order_relaxed);
}

size_t NanoScheduler::RunUntilIdle() {
  Impl& m = *impl_;
  SEEDANCE_CHECK(m.manual != nullptr) << "RunUntilIdle() is for manual mode (workers = 0), this "
                                      << "scheduler has " << m.workers.size() << " workers";
  Worker* w = m.manual.get();
  Worker* saved_worker = nano_internal::tls_worker;
  const std::atomic<bool>* saved_flag = nano_internal::tls_preempt_flag;
  nano_internal::tls_worker = w;
  nano_internal::tls_preempt_flag = &w->preempt;
  size_t runs = 0;
  for (;;) {
    m.timers.Poll();
    TaskControl* t;
    {
      base::MutexLock lock(m.mu);
      t = m.Pop();
      if (t == nullptr) break;
      w->running_priority.store(t->priority, std::memory_order_relaxed);
    }
    runs += m.RunChain(w, t);
  }
  nano_internal::tls_worker = saved_worker;
  nano_internal::tls_preempt_flag = saved_flag;
  return runs;
}

NanoSchedulerStats NanoScheduler::stats() const {
  NanoSchedulerStats s;
  for (Worker* w : impl_->all_workers)
    s.dispatches += w->dispatches.load(std::memory_order_relaxed);
  s.preempt_requests = impl_->preempt_requests.load(std::memory_order_relaxed);
  return s;
}

int64_t NanoScheduler::NowNs() const { return impl_->clock->NowNs(); }

void JoinHandle::Wait() const {
  if (t_ == nullptr) return;
  while (t_->done.load(std::memory_order_acquire) == 0) t_->done.wait(0, std::memory_order_acquire);
}

void Event::Set() {
  TaskControl* list;
  {
    base::MutexLock lock(mu_);
    set_.store(true, std::memory_order_release);
    list = std::exchange(waiters_, nullptr);
  }
  // Waiters were parked newest first; wake them in arrival order.
  std::vector<TaskControl*> order;
  for (TaskControl* t = list; t != nullptr; t = t->next) order.push_back(t);
  for (auto it = order.rbegin(); it != order.rend(); ++it) (*it)->sched->MakeReady(*it);
}

void Event::Reset() {
  base::MutexLock lock(mu_);
  set_.store(false, std::memory_order_release);
}

}  // namespace seedance::engine
