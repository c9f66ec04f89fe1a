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
#include "options.h"

namespace seedance::cli {

// Parses a seed list with base::ParseSeedList; false on any error (prefer AddSeeds).
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
Command AddServerCommand(CLI::App& app);     // server_cmd.cc    (server: the live scheduler)
Command AddNodeAgentCommand(CLI::App& app);  // node_agent_cmd.cc (nodeagent: cpuset pinning)

// get, apply, delete, explain, cordon, uncordon over the REST API (client_cmd.cc: api).
std::vector<Command> AddClientCommands(CLI::App& app);

// version, help, completion (meta_cmd.cc); they read `app`'s command tree when they run.
std::vector<Command> AddMetaCommands(CLI::App& app);

}  // namespace seedance::cli
