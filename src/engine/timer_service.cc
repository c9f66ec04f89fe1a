// Thread-safe batching front of the TimerWheel; see include/seedance/engine/timer_service.h.
#include "seedance/engine/timer_service.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <chrono>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "seedance/base/check.h"
#include "seedance/base/mutex.h"

namespace seedance::engine {

struct TimerService::Request {
  Id id;
  bool cancel;
  int64_t deadline_ns;
  int64_t period_ns;
  TimerCallback cb;
};

struct TimerService::Entry {
  TimerHandle handle;
  bool periodic;
  TimerCallback cb;
};

struct TimerService::State {
  explicit State(const TimerWheelOptions& o) : wheel(o) {}
  base::Mutex mu;
  std::condition_variable cv;
  std::vector<Request> incoming ABSL_GUARDED_BY(mu);
  bool stop ABSL_GUARDED_BY(mu) = false;
  int64_t sleeping_until_ns ABSL_GUARDED_BY(mu) = std::numeric_limits<int64_t>::max();
  // Owner thread only:
  std::vector<Request> batch;
  TimerWheel wheel;
  absl::flat_hash_map<Id, Entry> entries;
};

namespace {
TimerWheelOptions WheelOptions(const TimerServiceOptions& o, TimerClock* clock) {
  TimerWheelOptions w;
  w.tick_ns = o.tick_ns;
  w.levels = o.levels;
  w.start_ns = clock->NowNs();
  return w;
}
}  // namespace

TimerService::TimerService(const TimerServiceOptions& options)
    : clock_(options.clock != nullptr ? options.clock : RealTimerClock()),
      spin_ns_(options.spin_ns),
      realtime_priority_(options.realtime_priority),
      state_(std::make_unique<State>(WheelOptions(options, clock_))) {}

TimerService::~TimerService() { Stop(); }

TimerService::Id TimerService::Schedule(int64_t deadline_ns, TimerCallback cb) {
  return SchedulePeriodic(deadline_ns, 0, std::move(cb));
}

TimerService::Id TimerService::SchedulePeriodic(int64_t first_deadline_ns, int64_t period_ns,
                                                TimerCallback cb) {
  const Id id = next_id_.fetch_add(1, std::memory_order_relaxed);
  State& s = *state_;
  bool wake = false;
  {
    base::MutexLock lock(s.mu);
    s.incoming.push_back(Request{id, false, first_deadline_ns, period_ns, std::move(cb)});
    // Wake the owner only if it sleeps past this deadline; otherwise the batch waits for it.
    wake = first_deadline_ns < s.sleeping_until_ns;
    if (wake) s.sleeping_until_ns = first_deadline_ns;
  }
  if (wake) s.cv.notify_one();
  return id;
}

void TimerService::Cancel(Id id) {
  State& s = *state_;
  base::MutexLock lock(s.mu);
  s.incoming.push_back(Request{id, true, 0, 0, nullptr});
}

void TimerService::ApplyBatch() {
  State& s = *state_;
  {
    base::MutexLock lock(s.mu);
    s.batch.swap(s.incoming);
  }
  for (Request& r : s.batch) {
    if (r.cancel) {
      auto it = s.entries.find(r.id);
      if (it == s.entries.end()) continue;  // fired, or cancelled twice
      s.wheel.Cancel(it->second.handle);
      s.entries.erase(it);
      continue;
    }
    const Id id = r.id;
    const TimerHandle h =
        r.period_ns > 0
            ? s.wheel.SchedulePeriodic(r.deadline_ns, r.period_ns, [this, id] { Fire(id); })
            : s.wheel.Schedule(r.deadline_ns, [this, id] { Fire(id); });
    s.entries.emplace(id, Entry{h, r.period_ns > 0, std::move(r.cb)});
  }
  s.batch.clear();
  live_.store(s.entries.size(), std::memory_order_relaxed);
}

void TimerService::Fire(Id id) {
  State& s = *state_;
  auto it = s.entries.find(id);
  if (it == s.entries.end()) return;
  if (!it->second.periodic) {
    TimerCallback cb = std::move(it->second.cb);
    s.entries.erase(it);
    live_.store(s.entries.size(), std::memory_order_relaxed);
    cb();
    return;
  }
  // Callbacks cannot touch `entries` (their requests are queued), so the reference stays valid.
  it->second.cb();
}

size_t TimerService::Poll() {
  ApplyBatch();
  return state_->wheel.Advance(clock_->NowNs());
}

std::optional<int64_t> TimerService::NextWorkNs() {
  State& s = *state_;
  {
    base::MutexLock lock(s.mu);
    if (!s.incoming.empty()) return clock_->NowNs();
  }
  return s.wheel.NextWorkNs();
}

void TimerService::Start() {
  SEEDANCE_CHECK(clock_ == RealTimerClock())
      << "TimerService::Start() needs the real clock; a manual clock is driven by Poll()";
  SEEDANCE_CHECK(!thread_.joinable()) << "TimerService::Start() called twice";
  thread_ = std::thread([this] { Loop(); });
  started_.wait(false, std::memory_order_acquire);
}

void TimerService::Stop() {
  if (!thread_.joinable()) return;
  {
    base::MutexLock lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_one();
  thread_.join();
}

void TimerService::Loop() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // the default 50 us slack would show as lateness
  if (realtime_priority_ > 0) {
    sched_param param{};
    param.sched_priority = realtime_priority_;
    realtime_.store(pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0,
                    std::memory_order_release);
  }
  started_.store(true, std::memory_order_release);
  started_.notify_all();
  State& s = *state_;
  for (;;) {
    ApplyBatch();
    s.wheel.Advance(SteadyNowNs());
    const std::optional<int64_t> next = s.wheel.NextWorkNs();
    const int64_t wake_ns = next.value_or(std::numeric_limits<int64_t>::max());
    base::MutexLock lock(s.mu);
    if (s.stop) return;
    if (!s.incoming.empty()) continue;
    const int64_t now = SteadyNowNs();
    if (wake_ns - now > spin_ns_) {
      s.sleeping_until_ns = wake_ns;
      const int64_t sleep_to = wake_ns == std::numeric_limits<int64_t>::max()
                                   ? std::numeric_limits<int64_t>::max() / 2
                                   : wake_ns - spin_ns_;
      lock.WaitUntil(s.cv,
                     std::chrono::steady_clock::time_point(std::chrono::nanoseconds(sleep_to)),
                     [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
                       return s.stop || !s.incoming.empty() || SteadyNowNs() >= sleep_to;
                     });
      s.sleeping_until_ns = std::numeric_limits<int64_t>::max();
      if (s.stop) return;
      if (!s.incoming.empty() || SteadyNowNs() < wake_ns - spin_ns_) continue;
    }
    s.sleeping_until_ns = std::numeric_limits<int64_t>::max();
    lock.Unlock();
    // Spin the last stretch: a timed sleep's wakeup jitter is larger than the spin.
    while (SteadyNowNs() < wake_ns) {
      std::this_thread::yield();
      base::MutexLock l(s.mu);
      if (s.stop || !s.incoming.empty()) break;
    }
  }
}

}  // namespace seedance::engine
