// `seedance bench timers`: the side-by-side timer benchmark of docs/engine.md (the Seedance
// TimerWheel against Boost.Asio, libevent and a std::priority_queue), plus a wall-clock lateness
// run of the thread-safe TimerService.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/engine/timer_bench.h"

namespace seedance::cli {
namespace {

struct TimersFlags {
  size_t timers = 1'000'000;
  std::string impls = "all";
  int repetitions = 3;
  double min_time_s = 0.3;
  size_t lateness_timers = 20'000;
  double lateness_s = 1.0;
  double tick_ms = 1.0;
  bool realtime = false;
  bool wall_clock = false;
  bool json = false;
};

int RunTimers(const TimersFlags& f) {
  if (f.timers < 1 || f.timers > 50'000'000) {
    return UsageError("bench timers: --timers must be in 1..50000000, got " +
                      std::to_string(f.timers));
  }
  if (f.repetitions < 1 || f.repetitions > 100) {
    return UsageError("bench timers: --repetitions must be in 1..100");
  }
  if (!(f.min_time_s > 0 && f.min_time_s <= 60)) {
    return UsageError("bench timers: --min-time must be in (0, 60] seconds");
  }
  if (!(f.lateness_s >= 0 && f.lateness_s <= 600) || !(f.tick_ms > 0 && f.tick_ms <= 1000)) {
    return UsageError("bench timers: --lateness-s must be in [0, 600] and --tick-ms in (0, 1000]");
  }
  std::vector<std::string> impls;
  if (f.impls != "all") {
    for (absl::string_view p : absl::StrSplit(f.impls, ',', absl::SkipEmpty())) {
      impls.emplace_back(p);
    }
    if (impls.empty()) return UsageError("bench timers: --impl: empty list");
  }
  const bool progress = isatty(STDERR_FILENO) && !f.json;
  if (progress)
    std::cerr << "measuring pairs and expiry (" << f.repetitions << " repetitions)...\n";
  engine::TimerBenchOptions o;
  o.resident = f.timers;
  o.repetitions = f.repetitions;
  o.min_time_s = f.min_time_s;
  o.cpu_time = !f.wall_clock;
  auto results = engine::RunTimerBench(impls, o);
  if (!results.ok()) {
    if (results.status().code() == absl::StatusCode::kInvalidArgument) {
      return UsageError("bench timers: --impl: " + std::string(results.status().message()));
    }
    return RuntimeError("bench timers: " + std::string(results.status().message()));
  }
  engine::TimerLatenessResult lateness;
  const bool run_lateness = f.lateness_s > 0 && f.lateness_timers > 0;
  if (run_lateness) {
    if (progress) std::cerr << "measuring wall-clock lateness (" << f.lateness_s << " s)...\n";
    lateness = engine::RunTimerLateness(f.lateness_timers, f.lateness_s,
                                        static_cast<int64_t>(f.tick_ms * 1e6), f.realtime);
  }
  double asio_pairs = 0;
  for (const auto& r : *results) {
    if (r.impl == "boost_asio") asio_pairs = r.schedule_cancel_pairs_per_s;
  }
  if (f.json) {
    nlohmann::json j;
    j["results"] = nlohmann::json::array();
    for (const auto& r : *results) {
      j["results"].push_back({{"impl", r.impl},
                              {"resident", r.resident},
                              {"schedule_cancel_pairs_per_s", r.schedule_cancel_pairs_per_s},
                              {"expire_per_s", r.expire_per_s}});
    }
    j["repetitions"] = f.repetitions;
    j["time_base"] = f.wall_clock ? "wall_clock" : "thread_cpu";
    if (run_lateness) {
      j["lateness"] = {{"impl", "seedance"},
                       {"timers", lateness.timers},
                       {"tick_us", lateness.tick_ns / 1000.0},
                       {"p50_us", lateness.p50_us},
                       {"p99_us", lateness.p99_us},
                       {"max_us", lateness.max_us},
                       {"early", lateness.early},
                       {"realtime", lateness.realtime}};
    }
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%-11s %10s %22s %16s %10s\n", "impl", "resident", "schedule+cancel/s", "expire/s",
              "vs asio");
  for (const auto& r : *results) {
    const std::string ratio =
        asio_pairs > 0 ? absl::StrFormat("%.2fx", r.schedule_cancel_pairs_per_s / asio_pairs) : "-";
    std::printf("%-11s %10zu %22.0f %16.0f %10s\n", r.impl.c_str(), r.resident,
                r.schedule_cancel_pairs_per_s, r.expire_per_s, ratio.c_str());
  }
  std::printf("(medians of %d repetitions; rates per second of %s)\n", f.repetitions,
              f.wall_clock ? "wall-clock time" : "the measuring thread's CPU time");
  if (run_lateness) {
    std::printf(
        "lateness (TimerService, wall clock, tick %.0f us, %zu timers): p50 %.1f us, p99 %.1f us, "
        "max %.1f us, early %zu%s\n",
        lateness.tick_ns / 1000.0, lateness.timers, lateness.p50_us, lateness.p99_us,
        lateness.max_us, lateness.early, lateness.realtime ? " (SCHED_FIFO timer thread)" : "");
  }
  return kExitOk;
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  Command cmd;
  cmd.app = app.add_subcommand("bench", "Side-by-side benchmarks of the scheduling engine");
  cmd.app->require_subcommand(1);
  cmd.app->footer("Subcommands:\n  timers   TimerWheel vs Boost.Asio, libevent and a std heap\n");
  auto flags = std::make_shared<TimersFlags>();
  CLI::App* timers = cmd.app->add_subcommand(
      "timers",
      "Schedule+cancel pairs per second with N resident timers and expirations per second, for\n"
      "the Seedance TimerWheel, Boost.Asio steady_timer (one io_context, normal API), libevent\n"
      "evtimers and a std::priority_queue with lazy cancellation, measured side by side in one\n"
      "process (repetitions interleaved, medians reported); then the expiry lateness of the\n"
      "thread-safe TimerService on the wall clock. Workloads: docs/engine.md.");
  timers->add_option("--timers", flags->timers, "resident timers (default 1000000)");
  timers->add_option("--impl", flags->impls,
                     "comma list of seedance,boost_asio,libevent,std_heap (default all)");
  timers->add_option("--repetitions", flags->repetitions, "runs per implementation (default 3)");
  timers->add_option("--min-time", flags->min_time_s,
                     "seconds per pairs measurement (default 0.3)");
  timers->add_option("--lateness-timers", flags->lateness_timers,
                     "timers in the lateness run (default 20000)");
  timers->add_option("--lateness-s", flags->lateness_s,
                     "seconds the lateness run spreads deadlines over; 0 skips it (default 1)");
  timers->add_option("--tick-ms", flags->tick_ms, "wheel tick of the lateness run (default 1)");
  timers->add_flag("--realtime", flags->realtime,
                   "run the lateness run's timer thread SCHED_FIFO when permitted (shared or "
                   "loaded machines: otherwise CPU contention, not the wheel, sets the tail)");
  timers->add_flag("--wall-clock", flags->wall_clock,
                   "rates per wall-clock second instead of per second of the measuring thread's "
                   "CPU time (the default, which stays per-core on a shared machine)");
  timers->add_flag(
      "--json", flags->json,
      "print {\"results\": [{\"impl\", \"resident\", "
      "\"schedule_cancel_pairs_per_s\", \"expire_per_s\"}, ...], \"lateness\": {...}}");
  timers->footer(
      "Examples:\n"
      "  seedance bench timers\n"
      "  seedance bench timers --timers 100000 --repetitions 5 --json\n"
      "  seedance bench timers --impl seedance,boost_asio --lateness-s 0\n"
      "  seedance bench timers --impl seedance --realtime --lateness-s 5");
  cmd.run = [timers, flags] {
    if (timers->parsed()) return RunTimers(*flags);
    return UsageError("bench: expected a subcommand (timers)");
  };
  return cmd;
}

}  // namespace seedance::cli
