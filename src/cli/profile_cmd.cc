// `seedance profile`: samples node and GPU telemetry into a profile (docs/formats/profile.md).
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "seedance/telemetry/collector.h"

namespace seedance::cli {
namespace {

std::atomic<bool>* g_stop = nullptr;

extern "C" void OnSigint(int) {
  if (g_stop != nullptr) g_stop->store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

struct ProfileFlags {
  double duration_s = 300;
  double interval_s = 1;
  std::string output;
  std::string prometheus;
  double timeout_s = 5;
  bool live = false;
  std::string node_name;
  bool quiet = false;
};

int Profile(const ProfileFlags& f) {
  namespace tm = seedance::telemetry;
  if (!(f.interval_s > 0)) return UsageError("--interval: must be > 0");
  if (!(f.duration_s >= f.interval_s)) return UsageError("--duration: must be >= --interval");
  if (!(f.timeout_s > 0 && f.timeout_s <= 600)) return UsageError("--timeout: must be in (0, 600]");
  std::vector<std::unique_ptr<tm::Collector>> collectors;
  bool history = false;
  if (!f.prometheus.empty()) {
    tm::PrometheusOptions po;
    po.url = f.prometheus;
    po.timeout_s = f.timeout_s;
    auto c = tm::NewPrometheusCollector(po);
    if (!c.ok()) return UsageError(std::string(c.status().message()));
    collectors.push_back(std::move(*c));
    history = !f.live;
  } else {
    tm::ProcfsOptions po;
    po.node_name = f.node_name;
    collectors.push_back(tm::NewProcfsCollector(po));
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    auto nvml = tm::NewNvmlCollector(f.node_name.empty() ? host : f.node_name);
    if (nvml.ok()) {
      collectors.push_back(std::move(*nvml));
    } else if (!f.quiet) {
      std::cerr << "seedance: " << nvml.status().message() << "\n";
    }
  }
  const bool tty = !f.quiet && isatty(STDERR_FILENO);
  tm::ProfilerOptions opts;
  opts.duration_s = f.duration_s;
  opts.interval_s = f.interval_s;
  opts.history = history;
  if (tty) {
    opts.progress = [](size_t done, size_t total) {
      const int width = 30;
      const int filled = static_cast<int>(width * done / std::max<size_t>(total, 1));
      std::fprintf(stderr, "\r[%s%s] %zu/%zu samples", std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), done, total);
      if (done == total) std::fprintf(stderr, "\r%*s\r", width + 30, "");
      std::fflush(stderr);
    };
  }
  tm::Profiler profiler(std::move(collectors), opts);
  g_stop = profiler.stop_flag();
  std::signal(SIGINT, OnSigint);
  auto profile = profiler.Run();
  std::signal(SIGINT, SIG_DFL);
  g_stop = nullptr;
  if (tty) std::fprintf(stderr, "\n");
  if (!profile.ok()) {
    return profile.status().code() == absl::StatusCode::kInvalidArgument
               ? UsageError(std::string(profile.status().message()))
               : RuntimeError(std::string(profile.status().message()));
  }
  if (absl::Status s = tm::WriteProfile(*profile, f.output); !s.ok()) {
    return RuntimeError(std::string(s.message()));
  }
  size_t gpus = 0;
  for (const auto& n : profile->nodes) gpus += n.gpus.size();
  std::cerr << (profile->interrupted ? "interrupted; " : "") << "wrote " << f.output << ": "
            << profile->nodes.size() << " node(s), " << gpus << " GPU(s), "
            << profile->num_samples() << " sample(s)\n";
  return kExitOk;
}

}  // namespace

Command AddProfileCommand(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "profile",
      "Sample node and GPU telemetry into a versioned JSON profile (docs/formats/profile.md).\n"
      "Without --prometheus: this machine's CPUs, memory and NUMA nodes (procfs/sysfs), its hwloc\n"
      "topology, and its NVIDIA GPUs through NVML when libnvidia-ml.so.1 is present, sampled "
      "every\n"
      "--interval seconds for --duration seconds. With --prometheus: the whole cluster from\n"
      "dcgm-exporter, node-exporter and kube-state-metrics series, read for the last --duration\n"
      "seconds at once (or sampled live with --live). Ctrl-C writes what was gathered.");
  cmd.app->add_option("--duration", flags->duration_s, "seconds to profile")
      ->default_val(300)
      ->check(CLI::PositiveNumber);
  cmd.app->add_option("--interval", flags->interval_s, "seconds between samples")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  cmd.app->add_option("--output,-o", flags->output, "profile JSON to write")->required();
  cmd.app->add_option("--prometheus", flags->prometheus,
                      "Prometheus server, http://HOST:PORT[/PATH] (https is not supported)");
  cmd.app
      ->add_option("--timeout", flags->timeout_s,
                   "seconds before an unanswered Prometheus request fails")
      ->default_val(5);
  cmd.app->add_flag("--live", flags->live,
                    "with --prometheus: sample now and every interval instead of reading history");
  cmd.app->add_option("--node-name", flags->node_name, "name of this node (default: host name)");
  cmd.app->add_flag("--quiet,-q", flags->quiet, "no progress bar or notes on stderr");
  cmd.app->footer(
      "Examples:\n"
      "  seedance profile --duration 300 --interval 1 --output profile.json\n"
      "  seedance profile --duration 600 --output cluster.json --prometheus http://prom:9090\n"
      "  seedance analyze --input profile.json --report cost-savings\n"
      "Exit status: 0 written (also after Ctrl-C), 1 collection failed (e.g. Prometheus\n"
      "unreachable within --timeout), 2 bad flags.");
  cmd.run = [flags] { return Profile(*flags); };
  return cmd;
}

}  // namespace seedance::cli
