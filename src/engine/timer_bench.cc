// Side-by-side timer benchmark; see include/seedance/engine/timer_bench.h.
#include "seedance/engine/timer_bench.h"

#include <event2/event.h>
#include <event2/event_struct.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <functional>
#include <queue>
#include <random>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/mutex.h"
#include "seedance/engine/timer_clock.h"
#include "seedance/engine/timer_service.h"
#include "seedance/engine/timer_wheel.h"

namespace seedance::engine {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr size_t kRing = 4096;  // precomputed offsets, shared by every implementation

// Offsets (ns) of the resident timers and of the timers of the pairs.
struct Offsets {
  explicit Offsets(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int64_t> resident_d(1 * kSec, 600 * kSec);
    std::uniform_int_distribution<int64_t> pair_d(10 * kMs, 60 * kSec);
    std::uniform_int_distribution<int64_t> expire_d(0, kSec);
    for (size_t i = 0; i < kRing; ++i) {
      resident[i] = resident_d(rng);
      pair[i] = pair_d(rng);
      expire[i] = expire_d(rng);
    }
  }
  int64_t resident[kRing];
  int64_t pair[kRing];
  int64_t expire[kRing];
};

double NowSeconds(bool cpu) {
  timespec ts;
  clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---- Seedance TimerWheel --------------------------------------------------------------------
class WheelImpl final : public TimerBenchImpl {
 public:
  explicit WheelImpl(uint64_t seed) : off_(std::make_unique<Offsets>(seed)) {}
  std::string name() const override { return "seedance"; }
  void Prepare(size_t resident) override {
    wheel_ = std::make_unique<TimerWheel>(
        TimerWheelOptions{.tick_ns = kMs, .levels = 6, .start_ns = kSec, .reserve = resident + 64});
    for (size_t i = 0; i < resident; ++i) {
      wheel_->Schedule(kSec + off_->resident[i % kRing] + static_cast<int64_t>(i),
                       [c = &count_] { ++*c; });
    }
  }
  void Pairs(size_t n) override {
    TimerWheel& w = *wheel_;
    const int64_t base = w.now();
    for (size_t i = 0; i < n; ++i) {
      const TimerHandle h = w.Schedule(base + off_->pair[i % kRing], [c = &count_] { ++*c; });
      w.Cancel(h);
    }
  }
  double ExpireSeconds(size_t n) override {
    TimerWheel w(TimerWheelOptions{.tick_ns = kMs, .levels = 6, .start_ns = 0, .reserve = n});
    size_t fired = 0;
    for (size_t i = 0; i < n; ++i) {
      w.Schedule(off_->expire[i % kRing] + static_cast<int64_t>(i % 1000), [c = &fired] { ++*c; });
    }
    const double t0 = NowS();
    for (int64_t t = kMs; t <= kSec + kMs; t += kMs) w.Advance(t);
    const double t1 = NowS();
    return fired == n ? (t1 - t0) : -1;
  }

 private:
  std::unique_ptr<Offsets> off_;
  std::unique_ptr<TimerWheel> wheel_;
  size_t count_ = 0;
};

// ---- Boost.Asio steady_timer ----------------------------------------------------------------
class AsioImpl final : public TimerBenchImpl {
 public:
  explicit AsioImpl(uint64_t seed) : off_(std::make_unique<Offsets>(seed)) {}
  ~AsioImpl() override {
    timers_.clear();
    io_.restart();
    io_.poll();
  }
  std::string name() const override { return "boost_asio"; }
  void Prepare(size_t resident) override {
    base_ = std::chrono::steady_clock::now();
    for (size_t i = 0; i < resident; ++i) {
      timers_.emplace_back(io_, base_ + std::chrono::nanoseconds(off_->resident[i % kRing] +
                                                                 static_cast<int64_t>(i)));
      timers_.back().async_wait([c = &count_](const boost::system::error_code&) { ++*c; });
    }
  }
  void Pairs(size_t n) override {
    const auto base = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      // The normal pattern: a timer created with its expiry, waited on, cancelled.
      boost::asio::steady_timer t(io_, base + std::chrono::nanoseconds(off_->pair[i % kRing]));
      t.async_wait([c = &count_](const boost::system::error_code&) { ++*c; });
      t.cancel();
      // The cancelled handler completes with operation_aborted when the io_context runs it.
      if ((i & 255) == 255) io_.poll();
    }
    io_.poll();
  }
  double ExpireSeconds(size_t n) override {
    boost::asio::io_context io;
    std::deque<boost::asio::steady_timer> timers;
    size_t fired = 0;
    const auto base = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      // Due within 100 ms of `base`: by the time all are created they are all due.
      timers.emplace_back(io, base + std::chrono::nanoseconds(off_->expire[i % kRing] / 10));
      timers.back().async_wait([c = &fired](const boost::system::error_code&) { ++*c; });
    }
    std::this_thread::sleep_until(base + std::chrono::milliseconds(101));
    const double t0 = NowS();
    io.run();
    const double t1 = NowS();
    return fired == n ? (t1 - t0) : -1;
  }

 private:
  std::unique_ptr<Offsets> off_;
  boost::asio::io_context io_{1};
  std::deque<boost::asio::steady_timer> timers_;
  std::chrono::steady_clock::time_point base_;
  size_t count_ = 0;
};

// ---- libevent evtimer ------------------------------------------------------------------------
void CountCallback(evutil_socket_t, short, void* arg) { ++*static_cast<size_t*>(arg); }

timeval ToTimeval(int64_t ns) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ns / kSec);
  tv.tv_usec = static_cast<suseconds_t>((ns % kSec) / 1000);
  return tv;
}

class LibeventImpl final : public TimerBenchImpl {
 public:
  explicit LibeventImpl(uint64_t seed) : off_(std::make_unique<Offsets>(seed)) {
    base_ = event_base_new();
  }
  ~LibeventImpl() override {
    for (event& ev : events_) event_del(&ev);
    event_base_free(base_);
  }
  std::string name() const override { return "libevent"; }
  void Prepare(size_t resident) override {
    events_.resize(resident);
    for (size_t i = 0; i < resident; ++i) {
      evtimer_assign(&events_[i], base_, CountCallback, &count_);
      const timeval tv = ToTimeval(off_->resident[i % kRing] + static_cast<int64_t>(i) * 1000);
      evtimer_add(&events_[i], &tv);
    }
  }
  void Pairs(size_t n) override {
    event ev;
    evtimer_assign(&ev, base_, CountCallback, &count_);
    for (size_t i = 0; i < n; ++i) {
      const timeval tv = ToTimeval(off_->pair[i % kRing]);
      evtimer_add(&ev, &tv);
      evtimer_del(&ev);
    }
  }
  double ExpireSeconds(size_t n) override {
    event_base* base = event_base_new();
    std::vector<event> events(n);
    size_t fired = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      evtimer_assign(&events[i], base, CountCallback, &fired);
      const timeval tv = ToTimeval(off_->expire[i % kRing] / 10);  // within 100 ms
      evtimer_add(&events[i], &tv);
    }
    std::this_thread::sleep_until(std::chrono::steady_clock::now() +
                                  std::chrono::milliseconds(101));
    (void)start;
    const double t0 = NowS();
    while (fired < n) {
      if (event_base_loop(base, EVLOOP_NONBLOCK) < 0) break;
      if (event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED) == 0) break;
    }
    const double t1 = NowS();
    for (event& ev : events) event_del(&ev);
    event_base_free(base);
    return fired == n ? (t1 - t0) : -1;
  }

 private:
  std::unique_ptr<Offsets> off_;
  event_base* base_ = nullptr;
  std::vector<event> events_;
  size_t count_ = 0;
};

// ---- std::priority_queue with lazy cancellation ---------------------------------------------
// What one writes without a timer library: a binary min-heap of (deadline, seq, slot); cancel
// bumps the slot's generation and the stale heap entry is dropped when it surfaces (or when a
// rebuild finds more stale entries than live ones).
class HeapTimers {
 public:
  struct Handle {
    uint32_t slot, generation;
  };
  Handle Schedule(int64_t deadline_ns, std::function<void()> cb) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.push_back(Slot{});
    }
    slots_[slot].cb = std::move(cb);
    slots_[slot].live = true;
    heap_.push(Entry{deadline_ns, seq_++, slot, slots_[slot].generation});
    ++live_;
    return Handle{slot, slots_[slot].generation};
  }
  bool Cancel(Handle h) {
    Slot& s = slots_[h.slot];
    if (!s.live || s.generation != h.generation) return false;
    Release(h.slot);
    ++stale_;
    if (stale_ > live_ + 1024) Rebuild();
    return true;
  }
  size_t Advance(int64_t now_ns) {
    size_t fired = 0;
    while (!heap_.empty() && heap_.top().deadline_ns <= now_ns) {
      const Entry e = heap_.top();
      heap_.pop();
      Slot& s = slots_[e.slot];
      if (!s.live || s.generation != e.generation) {
        --stale_;
        continue;
      }
      std::function<void()> cb = std::move(s.cb);
      Release(e.slot);
      cb();
      ++fired;
    }
    return fired;
  }

 private:
  struct Entry {
    int64_t deadline_ns;
    uint64_t seq;
    uint32_t slot, generation;
    bool operator>(const Entry& o) const {
      return deadline_ns != o.deadline_ns ? deadline_ns > o.deadline_ns : seq > o.seq;
    }
  };
  struct Slot {
    std::function<void()> cb;
    uint32_t generation = 0;
    bool live = false;
  };
  struct Heap : std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> {
    std::vector<Entry>& container() { return c; }
  };
  void Release(uint32_t slot) {
    Slot& s = slots_[slot];
    s.cb = nullptr;
    s.live = false;
    ++s.generation;
    free_.push_back(slot);
    --live_;
  }
  void Rebuild() {
    std::vector<Entry>& c = heap_.container();
    c.erase(std::remove_if(c.begin(), c.end(),
                           [&](const Entry& e) {
                             const Slot& s = slots_[e.slot];
                             return !s.live || s.generation != e.generation;
                           }),
            c.end());
    std::make_heap(c.begin(), c.end(), std::greater<Entry>());
    stale_ = 0;
  }
  Heap heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  uint64_t seq_ = 0;
  size_t live_ = 0, stale_ = 0;
};

class HeapImpl final : public TimerBenchImpl {
 public:
  explicit HeapImpl(uint64_t seed) : off_(std::make_unique<Offsets>(seed)) {}
  std::string name() const override { return "std_heap"; }
  void Prepare(size_t resident) override {
    for (size_t i = 0; i < resident; ++i) {
      heap_.Schedule(kSec + off_->resident[i % kRing] + static_cast<int64_t>(i),
                     [c = &count_] { ++*c; });
    }
  }
  void Pairs(size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      const auto h = heap_.Schedule(kSec + off_->pair[i % kRing], [c = &count_] { ++*c; });
      heap_.Cancel(h);
    }
  }
  double ExpireSeconds(size_t n) override {
    HeapTimers heap;
    size_t fired = 0;
    for (size_t i = 0; i < n; ++i) {
      heap.Schedule(off_->expire[i % kRing] + static_cast<int64_t>(i % 1000),
                    [c = &fired] { ++*c; });
    }
    const double t0 = NowS();
    for (int64_t t = kMs; t <= kSec + kMs; t += kMs) heap.Advance(t);
    const double t1 = NowS();
    return fired == n ? (t1 - t0) : -1;
  }

 private:
  std::unique_ptr<Offsets> off_;
  HeapTimers heap_;
  size_t count_ = 0;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

double TimerBenchImpl::NowS() const { return NowSeconds(cpu_time_); }

const std::vector<std::string>& TimerBenchImplNames() {
  static const std::vector<std::string> names = {"seedance", "boost_asio", "libevent", "std_heap"};
  return names;
}

std::unique_ptr<TimerBenchImpl> NewTimerBenchImpl(std::string_view name, uint64_t seed) {
  if (name == "seedance") return std::make_unique<WheelImpl>(seed);
  if (name == "boost_asio") return std::make_unique<AsioImpl>(seed);
  if (name == "libevent") return std::make_unique<LibeventImpl>(seed);
  if (name == "std_heap") return std::make_unique<HeapImpl>(seed);
  return nullptr;
}

absl::StatusOr<std::vector<TimerBenchResult>> RunTimerBench(const std::vector<std::string>& impls,
                                                            const TimerBenchOptions& options) {
  const std::vector<std::string>& names = impls.empty() ? TimerBenchImplNames() : impls;
  for (const std::string& n : names) {
    if (NewTimerBenchImpl(n) == nullptr) {
      return absl::InvalidArgumentError("unknown timer implementation '" + n +
                                        "' (expected seedance, boost_asio, libevent or std_heap)");
    }
  }
  if (options.resident == 0 || options.repetitions < 1) {
    return absl::InvalidArgumentError("resident and repetitions must be positive");
  }
  std::vector<std::vector<double>> pairs(names.size()), expire(names.size());
  for (int rep = 0; rep < options.repetitions; ++rep) {
    for (size_t k = 0; k < names.size(); ++k) {
      std::unique_ptr<TimerBenchImpl> impl = NewTimerBenchImpl(names[k], options.seed + rep);
      impl->set_cpu_time(options.cpu_time);
      impl->Prepare(options.resident);
      impl->Pairs(4096);  // warm-up
      size_t done = 0;
      const size_t batch = 16384;
      const double t0 = NowSeconds(options.cpu_time);
      double elapsed = 0;
      do {
        impl->Pairs(batch);
        done += batch;
        elapsed = NowSeconds(options.cpu_time) - t0;
      } while (elapsed < options.min_time_s);
      pairs[k].push_back(static_cast<double>(done) / elapsed);
      const double s = impl->ExpireSeconds(options.resident);
      if (s <= 0) {
        return absl::InternalError(names[k] + ": not every timer fired in the expire run");
      }
      expire[k].push_back(static_cast<double>(options.resident) / s);
    }
  }
  std::vector<TimerBenchResult> out;
  for (size_t k = 0; k < names.size(); ++k) {
    out.push_back(
        TimerBenchResult{names[k], options.resident, Median(pairs[k]), Median(expire[k])});
  }
  return out;
}

absl::StatusOr<TimerLatenessResult> RunTimerLateness(size_t timers, double duration_s,
                                                     int64_t tick_ns, bool realtime,
                                                     uint64_t seed) {
  if (tick_ns < kMinLatenessTickNs || tick_ns > kMaxLatenessTickNs) {
    return absl::InvalidArgumentError(
        absl::StrCat("lateness run: tick of ", tick_ns, " ns outside ", kMinLatenessTickNs, "..",
                     kMaxLatenessTickNs, " ns (below 1 us is under the clock's resolution)"));
  }
  if (!(duration_s >= 0 && duration_s <= kMaxLatenessSpanS)) {
    return absl::InvalidArgumentError(absl::StrCat("lateness run: span of ", duration_s,
                                                   " s outside 0..", kMaxLatenessSpanS, " s"));
  }
  if (timers > kMaxLatenessTimers) {
    return absl::InvalidArgumentError(
        absl::StrCat("lateness run: ", timers, " timers, more than ", kMaxLatenessTimers));
  }
  TimerService service({.tick_ns = tick_ns, .realtime_priority = realtime ? 10 : 0});
  service.Start();
  std::vector<int64_t> lateness(timers, 0);
  struct {
    base::Mutex mu;
    size_t done ABSL_GUARDED_BY(mu) = 0;
  } fired;
  std::condition_variable cv;
  std::mt19937_64 rng(seed);
  const int64_t span = std::max<int64_t>(1, static_cast<int64_t>(duration_s * kSec));
  const int64_t base = SteadyNowNs() + 10 * kMs;
  for (size_t i = 0; i < timers; ++i) {
    const int64_t d = base + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
    service.Schedule(d, [&, i, d] {
      lateness[i] = SteadyNowNs() - d;
      base::MutexLock lock(fired.mu);
      if (++fired.done == timers) cv.notify_one();
    });
  }
  {
    base::MutexLock lock(fired.mu);
    lock.Wait(cv, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(fired.mu) { return fired.done == timers; });
  }
  service.Stop();
  TimerLatenessResult r;
  r.timers = timers;
  r.tick_ns = tick_ns;
  r.realtime = service.realtime();
  for (int64_t l : lateness) r.early += l < 0;
  std::sort(lateness.begin(), lateness.end());
  if (!lateness.empty()) {
    auto pct = [&](double q) {
      return lateness[std::min(lateness.size() - 1, static_cast<size_t>(q * lateness.size()))] /
             1000.0;
    };
    r.p50_us = pct(0.50);
    r.p99_us = pct(0.99);
    r.max_us = lateness.back() / 1000.0;
  }
  return r;
}

}  // namespace seedance::engine
