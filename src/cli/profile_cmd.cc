// `seedance profile`: samples node and GPU telemetry into a profile (docs/formats/profile.md).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "commands.h"
#include "options.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
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

// Prometheus answers a range query with at most 11,000 points per series (its
// query.max-samples-per-series default); a history run asks for one point per interval.
constexpr size_t kMaxPrometheusRangePoints = 11'000;

// Refuses, before anything is opened, durations and intervals whose sample count is unbounded or
// more than the profile (or the Prometheus server) holds.
absl::Status CheckPlan(const ProfileFlags& f, bool history) {
  namespace tm = seedance::telemetry;
  if (!(f.duration_s >= f.interval_s)) {
    return absl::InvalidArgumentError(absl::StrCat("--duration (", base::FormatNumber(f.duration_s),
                                                   " s) must be at least --interval (",
                                                   base::FormatNumber(f.interval_s), " s)"));
  }
  const double samples = std::floor(f.duration_s / f.interval_s + 1e-9);
  const size_t cap = history ? kMaxPrometheusRangePoints : tm::kMaxProfileSamples;
  if (!(samples <= static_cast<double>(cap))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--duration / --interval asks for ", base::FormatNumber(samples), " samples; at most ", cap,
        history ? " from Prometheus history (its per-series limit); use a longer --interval or "
                  "--live"
                : " per profile; use a longer --interval or a shorter --duration"));
  }
  return absl::OkStatus();
}

// The collectors for this run: Prometheus, or this machine's procfs (+ NVML when present).
absl::StatusOr<std::vector<std::unique_ptr<seedance::telemetry::Collector>>> MakeCollectors(
    const ProfileFlags& f) {
  namespace tm = seedance::telemetry;
  std::vector<std::unique_ptr<tm::Collector>> collectors;
  if (!f.prometheus.empty()) {
    tm::PrometheusOptions po;
    po.url = f.prometheus;
    po.timeout_s = f.timeout_s;
    auto c = tm::NewPrometheusCollector(po);
    if (!c.ok()) return c.status();
    collectors.push_back(std::move(*c));
    return collectors;
  }
  tm::ProcfsOptions po;
  po.node_name = f.node_name;
  collectors.push_back(tm::NewProcfsCollector(po));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  auto nvml = tm::NewNvmlCollector(f.node_name.empty() ? host : f.node_name);
  if (nvml.ok()) {
    collectors.push_back(std::move(*nvml));
  } else if (!f.quiet) {
    Warn(std::string(nvml.status().message()));
  }
  return collectors;
}

int Profile(const ProfileFlags& f) {
  namespace tm = seedance::telemetry;
  const bool history = !f.prometheus.empty() && !f.live;
  if (absl::Status s = CheckPlan(f, history); !s.ok()) return Fail(s);
  if (f.output.empty())
    return UsageError("--output: the path is empty (give a file, or - for stdout)");
  // `-o json` is a format name where a file name belongs (kubectl habit): refused with a hint.
  if (auto name = ResolveFormat({f.output, ""}, {"json"}); !name.ok()) return Fail(name.status());
  // The output first, so that an unwritable -o fails now and not after the whole run.
  auto out = base::OutputFile::Open(f.output);
  if (!out.ok()) return Fail(out.status());
  auto collectors = MakeCollectors(f);
  if (!collectors.ok()) return Fail(collectors.status());
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
  tm::Profiler profiler(std::move(*collectors), opts);
  g_stop = profiler.stop_flag();
  std::signal(SIGINT, OnSigint);
  auto profile = profiler.Run();
  std::signal(SIGINT, SIG_DFL);
  g_stop = nullptr;
  if (tty) std::fprintf(stderr, "\n");
  if (!profile.ok()) return Fail(profile.status());
  if (absl::Status s = (*out)->Write(tm::ToJson(*profile)); !s.ok()) return Fail(s);
  if (absl::Status s = (*out)->Commit(); !s.ok()) return Fail(s);
  size_t gpus = 0;
  for (const auto& n : profile->nodes) gpus += n.gpus.size();
  std::cerr << (profile->interrupted ? "interrupted; " : "") << "wrote "
            << (f.output == "-" ? "standard output" : base::ForTerminal(f.output)) << ": "
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
  AddDuration(cmd.app, "--duration", &flags->duration_s, 1, base::Positive(366 * 86400.0),
              "how long to profile, at most 366 days");
  AddDuration(cmd.app, "--interval", &flags->interval_s, 1, base::Closed(0.001, 86400),
              "time between samples, 1 ms to 1 day; at most 10,000,000 samples per profile "
              "(11,000 from Prometheus history)");
  cmd.app->add_option("-o,--output", flags->output, "profile JSON to write ('-' = stdout)")
      ->type_name("FILE")
      ->required();
  cmd.app->add_option("--prometheus", flags->prometheus,
                      "Prometheus server, http://[USER:PASSWORD@]HOST:PORT[/PATH] (https is not "
                      "supported; credentials are never printed)");
  AddDuration(cmd.app, "--timeout", &flags->timeout_s, 1, base::NumRange{0, 600, true, false},
              "total time one Prometheus request may take, in (0, 600] s");
  cmd.app->add_flag("--live", flags->live,
                    "with --prometheus: sample now and every interval instead of reading history");
  cmd.app->add_option("--node-name", flags->node_name, "name of this node (default: host name)");
  cmd.app->add_flag("--quiet,-q", flags->quiet, "no progress bar or notes on stderr");
  cmd.app->footer(
      "Examples:\n"
      "  seedance profile --duration 300 --interval 1 -o profile.json\n"
      "  seedance profile --duration 10m -o cluster.json --prometheus http://prom:9090\n"
      "  seedance profile --duration 30 -o - | seedance analyze -i -\n"
      "The output is opened before sampling starts (an unwritable -o fails at once); a device or\n"
      "FIFO is written through, a symlink followed. Ctrl-C writes what was gathered. Prometheus\n"
      "unreachable, slower than --timeout in total, or answering malformed JSON is exit 1.\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  cmd.run = [flags] { return Profile(*flags); };
  return cmd;
}

}  // namespace seedance::cli
