// Google Benchmark driver of the side-by-side timer comparison (include/seedance/engine/
// timer_bench.h): schedule+cancel pairs with N resident timers and expirations per second, for
// seedance, boost_asio, libevent and std_heap; plus the wall-clock lateness of TimerService.
//   timer_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include "seedance/engine/timer_bench.h"

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

namespace {

using seedance::engine::NewTimerBenchImpl;
using seedance::engine::TimerBenchImpl;

constexpr size_t kResident = 1'000'000;

// One prepared implementation per name, kept across runs: preparing 1M resident timers in
// Boost.Asio takes a good fraction of a second.
TimerBenchImpl* Prepared(const std::string& name) {
  static auto* cache = new std::map<std::string, std::unique_ptr<TimerBenchImpl>>();
  auto& slot = (*cache)[name];
  if (!slot) {
    slot = NewTimerBenchImpl(name);
    slot->Prepare(kResident);
  }
  return slot.get();
}

void BM_ScheduleCancelPair(benchmark::State& state, const std::string& impl_name) {
  TimerBenchImpl* impl = Prepared(impl_name);
  constexpr size_t kBatch = 1024;
  for (auto _ : state) impl->Pairs(kBatch);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
  state.counters["resident"] = static_cast<double>(kResident);
  state.counters["ns_per_pair"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBatch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Expire(benchmark::State& state, const std::string& impl_name) {
  std::unique_ptr<TimerBenchImpl> impl = NewTimerBenchImpl(impl_name);
  impl->set_cpu_time(true);  // like the pairs figure: per second of this thread's CPU time
  const size_t n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    const double s = impl->ExpireSeconds(n);
    if (s <= 0) {
      state.SkipWithError("not every timer fired");
      break;
    }
    state.SetIterationTime(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_WallClockLateness(benchmark::State& state) {
  const bool realtime = state.range(0) != 0;
  seedance::engine::TimerLatenessResult r;
  for (auto _ : state) {
    r = seedance::engine::RunTimerLateness(20'000, 1.0, 1'000'000, realtime).value();
  }
  state.counters["tick_us"] = r.tick_ns / 1000.0;
  state.counters["p50_us"] = r.p50_us;
  state.counters["p99_us"] = r.p99_us;
  state.counters["max_us"] = r.max_us;
  state.counters["early"] = static_cast<double>(r.early);
  state.counters["sched_fifo"] = r.realtime ? 1 : 0;
}

int Register() {
  for (const std::string& name : seedance::engine::TimerBenchImplNames()) {
    benchmark::RegisterBenchmark(("BM_ScheduleCancelPair/" + name).c_str(), BM_ScheduleCancelPair,
                                 name)
        ->MinTime(0.3);
  }
  for (const std::string& name : seedance::engine::TimerBenchImplNames()) {
    benchmark::RegisterBenchmark(("BM_Expire/" + name).c_str(), BM_Expire, name)
        ->Arg(static_cast<int64_t>(kResident))
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_WallClockLateness", BM_WallClockLateness)
      ->ArgName("sched_fifo")
      ->Arg(0)
      ->Arg(1)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  return 0;
}
const int registered = Register();

}  // namespace

BENCHMARK_MAIN();
