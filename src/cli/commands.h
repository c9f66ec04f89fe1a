// Subcommands of the `seedance` CLI. Each Add*Command registers its subcommand (options, help
// text) on the application and returns the action to run when the parser selects it. The CLI stays
// thin: actions parse and validate flags, call the libraries and print.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace seedance::cli {

// Exit codes shared by every subcommand: 2 for usage and input errors (bad flag, malformed file),
// 1 for failures at run time (I/O, unreachable service).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "seedance: MSG" to stderr and returns kExitUsage.
inline int UsageError(const std::string& msg) {
  std::cerr << "seedance: " << msg << "\n";
  return kExitUsage;
}
// Prints "seedance: MSG" to stderr and returns kExitFailure.
inline int RuntimeError(const std::string& msg) {
  std::cerr << "seedance: " << msg << "\n";
  return kExitFailure;
}

// Parses a seed list: "7", "42-51" or a comma list of both ("1,5-9"). Returns false on anything
// else, an empty list, or a range of more than 100,000 seeds.
bool ParseSeedList(const std::string& text, std::vector<uint64_t>* out);

struct Command {
  CLI::App* app = nullptr;   // the registered subcommand
  std::function<int()> run;  // called after parsing when `app` was selected
};

Command AddSimulateCommand(CLI::App& app);   // simulate_cmd.cc  (sched, sim)
Command AddBenchCommand(CLI::App& app);      // bench_cmd.cc     (engine: bench timers)
Command AddClockCommand(CLI::App& app);      // clock_cmd.cc     (engine: clock probe|simulate)
Command AddProfileCommand(CLI::App& app);    // profile_cmd.cc   (telemetry)
Command AddAnalyzeCommand(CLI::App& app);    // analyze_cmd.cc   (cost)
Command AddServeSimCommand(CLI::App& app);   // serve_sim_cmd.cc (serving)
Command AddCostmodelCommand(CLI::App& app);  // costmodel_cmd.cc (serving: costmodel check)

}  // namespace seedance::cli
