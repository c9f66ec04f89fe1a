// Google Benchmark driver of NanoScheduler: spawn+join, yield, the cost of a preemption
// checkpoint, and the preemption latency of a high-priority task arriving while a CPU-bound
// low-priority task runs on the only worker.
//   nano_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "seedance/engine/nano_scheduler.h"

namespace {

using seedance::engine::Checkpoint;
using seedance::engine::JoinHandle;
using seedance::engine::NanoScheduler;
using seedance::engine::SteadyNowNs;
using seedance::engine::Task;
using seedance::engine::Yield;

Task Empty() { co_return; }

// About 0.5 us of dependent integer work on a ~3 GHz core.
inline uint64_t Chunk(uint64_t x) {
  for (int i = 0; i < 400; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

// A parent task spawns a child of its priority and joins it; the child runs on the same worker
// (manual mode: no thread wakeups), the parent resumes when it finished.
void BM_SpawnJoin(benchmark::State& state) {
  NanoScheduler sched({.workers = 0});
  auto parent = [&]() -> Task {
    for (auto _ : state) {
      JoinHandle h = sched.Spawn(Empty(), 3);
      co_await h.Join();
    }
  };
  JoinHandle p = sched.Spawn(parent(), 3);
  sched.RunUntilIdle();
}
BENCHMARK(BM_SpawnJoin);

// The same across threads: this thread spawns onto a worker and blocks until the task finished.
void BM_SpawnJoinFromAnotherThread(benchmark::State& state) {
  NanoScheduler sched({.workers = 1});
  for (auto _ : state) {
    JoinHandle h = sched.Spawn(Empty(), 3);
    h.Wait();
  }
}
BENCHMARK(BM_SpawnJoinFromAnotherThread)->UseRealTime();

// Two tasks of one priority yield to each other: one iteration is two task switches.
void BM_YieldPingPong(benchmark::State& state) {
  NanoScheduler sched({.workers = 0});
  bool stop = false;
  auto measured = [&]() -> Task {
    for (auto _ : state) co_await Yield();
    stop = true;
  };
  auto partner = [&]() -> Task {
    while (!stop) co_await Yield();
  };
  JoinHandle a = sched.Spawn(measured(), 2);
  JoinHandle b = sched.Spawn(partner(), 2);
  sched.RunUntilIdle();
  state.counters["ns_per_yield"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 2),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_YieldPingPong);

// A lone task yields: it is suspended, nothing outranks it, it resumes.
void BM_YieldAlone(benchmark::State& state) {
  NanoScheduler sched({.workers = 0});
  auto t = [&]() -> Task {
    for (auto _ : state) co_await Yield();
  };
  JoinHandle h = sched.Spawn(t(), 2);
  sched.RunUntilIdle();
}
BENCHMARK(BM_YieldAlone);

// The price of the preemption mechanism when nothing is pending: one relaxed load per check.
void BM_CheckpointNotTaken(benchmark::State& state) {
  NanoScheduler sched({.workers = 0});
  auto t = [&]() -> Task {
    for (auto _ : state) co_await Checkpoint();
  };
  JoinHandle h = sched.Spawn(t(), 2);
  sched.RunUntilIdle();
}
BENCHMARK(BM_CheckpointNotTaken);

// A CPU-bound loop of ~0.5 us chunks with and without a checkpoint after each chunk.
void BM_CpuChunk(benchmark::State& state) {
  const bool with_checkpoint = state.range(0) != 0;
  NanoScheduler sched({.workers = 0});
  uint64_t x = 1;
  auto t = [&]() -> Task {
    for (auto _ : state) {
      x = Chunk(x);
      benchmark::DoNotOptimize(x);
      if (with_checkpoint) co_await Checkpoint();
    }
  };
  JoinHandle h = sched.Spawn(t(), 2);
  sched.RunUntilIdle();
}
BENCHMARK(BM_CpuChunk)->ArgName("checkpoint")->Arg(0)->Arg(1);

// Preemption latency: one worker runs a low-priority task doing ~0.5 us chunks separated by
// checkpoints; another thread spawns a high-priority task and the latency is the time from
// Spawn() to the high task's first instruction. Reported as p50/p99 over `samples` arrivals,
// with normal threads and with SCHED_FIFO worker and spawner (when permitted).
void BM_PreemptionLatency(benchmark::State& state) {
  const bool fifo = state.range(0) != 0;
  const int samples = 2000;
  std::vector<int64_t> lat;
  bool got_fifo = false;
  if (fifo) {  // this thread too, so that it spawns promptly after its sleep
    sched_param p{};
    p.sched_priority = 11;
    got_fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
  }
  for (auto _ : state) {
    NanoScheduler sched({.workers = 1, .time_slice_ns = 0, .realtime_priority = fifo ? 10 : 0});
    std::atomic<bool> stop{false}, started{false};
    auto low = [&]() -> Task {
      started = true;
      uint64_t x = 1;
      while (!stop.load(std::memory_order_relaxed)) {
        x = Chunk(x);
        benchmark::DoNotOptimize(x);
        co_await Checkpoint();
      }
    };
    auto high = [](int64_t t0, int64_t* out) -> Task {
      *out = SteadyNowNs() - t0;
      co_return;
    };
    JoinHandle l = sched.Spawn(low(), 1);
    while (!started.load()) std::this_thread::yield();
    lat.assign(samples, 0);
    std::mt19937 rng(1);
    for (int i = 0; i < samples; ++i) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(20'000 + rng() % 80'000));
      JoinHandle h = sched.Spawn(high(SteadyNowNs(), &lat[i]), 9);
      h.Wait();
    }
    stop = true;
    l.Wait();
  }
  if (got_fifo) {
    sched_param p{};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &p);
  }
  state.counters["sched_fifo"] = got_fifo ? 1 : 0;
  std::sort(lat.begin(), lat.end());
  state.counters["p50_us"] = lat[lat.size() / 2] / 1000.0;
  state.counters["p99_us"] = lat[lat.size() * 99 / 100] / 1000.0;
  state.counters["max_us"] = lat.back() / 1000.0;
}
BENCHMARK(BM_PreemptionLatency)
    ->ArgName("sched_fifo")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
