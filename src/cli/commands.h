// Subcommands of the `seedance` CLI. Each Add*Command registers its subcommand (options, help
// text) on the application and returns the action to run when the parser selects it. The CLI stays
// thin: actions parse and validate flags, call the libraries and print.
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "options.h"
#include "seedance/api/client.h"
#include "seedance/k8s/apiserver.h"

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
Command AddModelCommand(CLI::App& app);      // model_cmd.cc     (model: run, ops)
Command AddServerCommand(CLI::App& app);     // server_cmd.cc    (server: the live scheduler)
Command AddNodeAgentCommand(CLI::App& app);  // node_agent_cmd.cc (nodeagent: cpuset pinning)
Command AddDevicePluginCommand(CLI::App& app);  // device_plugin_cmd.cc (deviceplugin)
Command AddTrainCommand(CLI::App& app);      // train_cmd.cc     (train: becomes seedance-train)
Command AddCacheCommand(CLI::App& app);      // cache_cmd.cc     (cache: simulate)
Command AddExperimentCommand(CLI::App& app); // experiment_cmd.cc (api + experiment: A/B experiments)

// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it starts after, so
// that only its sigwait(&set) takes them (never a handler in another thread), and ignores SIGPIPE.
// Returns the set for sigwait. Long-running commands (server, device-plugin) call it first.
sigset_t BlockStopSignals();

// How a command reaches the Kubernetes API server: --kube-api URL (with --kube-token-file,
// --kube-ca-file) or --kube-in-cluster.
struct KubeFlags {
  std::string kube_api, kube_token_file, kube_ca_file;
  bool kube_in_cluster = false;
};
void AddKubeFlags(CLI::App* app, KubeFlags* f, const std::string& api_help);
// The API server's options, or nullopt when no flag names one. InvalidArgument for both
// --kube-api and --kube-in-cluster, or a token or CA file without --kube-api.
absl::StatusOr<std::optional<k8s::ApiServerOptions>> KubeOptionsOf(const KubeFlags& f);

// How a command reaches a Seedance server: --server URL, --token-file FILE, --ca-file FILE (the
// client commands, the node agent's cache and prewarm-wait).
struct ConnectionFlags {
  std::string server, token_file, ca_file;
};
void AddConnectionFlags(CLI::App* app, ConnectionFlags* f);
// The API client's options from the flags (the client resolves the environment's defaults).
api::ClientOptions ClientOptionsOf(const ConnectionFlags& f);

// get, apply, delete, explain, cordon, uncordon over the REST API (client_cmd.cc: api).
std::vector<Command> AddClientCommands(CLI::App& app);

// version, help, completion (meta_cmd.cc); they read `app`'s command tree when they run.
std::vector<Command> AddMetaCommands(CLI::App& app);

}  // namespace seedance::cli
