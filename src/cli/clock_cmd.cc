// `seedance clock`: probe an NTP server with the SNTP client, or score the clock estimators on the
// drifting-clock simulator (docs/clock.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/engine/clock_sync.h"
#include "seedance/engine/sntp.h"

namespace seedance::cli {
namespace {

using seedance::engine::ClockEstimator;
using seedance::engine::ClockSimOptions;
using seedance::engine::EstimatorScore;

const std::vector<std::string> kFormats = {"table", "json"};
// clock simulate: most estimator updates (seeds x samples x window) one run may cost.
constexpr double kMaxSimulateWork = 2e9;
// clock probe: longest run (--samples x (--interval-ms + --timeout-ms)).
constexpr double kMaxProbeSeconds = 86400;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A figure, or null when it is not a finite number.
nlohmann::ordered_json Finite(double v, int digits) {
  if (!std::isfinite(v)) return nullptr;
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

absl::StatusOr<std::string> Format(const OutputFlags& out, bool legacy_json) {
  if (legacy_json && out.format.empty()) return std::string("json");
  return ResolveFormat(out, kFormats);
}
std::string OutputPath(const OutputFlags& out) { return out.output.empty() ? "-" : out.output; }

struct SimulateFlags {
  double drift_ppm = 10, jitter_us = 50, outlier_pct = 10, poll_s = 1;
  int samples = 64, warmup = 8, window = 64;
  CLI::Option* warmup_opt = nullptr;  // to tell a given --warmup from the default
  std::vector<uint64_t> seeds = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  std::string seeds_text = "1-15";
  OutputFlags out;
  bool legacy_json = false;
};

std::string SimulateJson(const SimulateFlags& f, const std::vector<EstimatorScore>& med) {
  nlohmann::ordered_json j = base::JsonHeader("clock-simulate/v1");
  j["drift_ppm"] = f.drift_ppm;
  j["jitter_us"] = f.jitter_us;
  j["outlier_pct"] = f.outlier_pct;
  j["poll_s"] = f.poll_s;
  j["samples"] = f.samples;
  j["warmup"] = f.warmup;
  j["window"] = f.window;
  j["seeds"] = f.seeds_text;
  j["seed_count"] = f.seeds.size();
  j["statistic"] = "median over seeds";
  j["results"] = nlohmann::ordered_json::array();
  for (const EstimatorScore& s : med) {
    j["results"].push_back({{"estimator", s.estimator},
                            {"bias_us", Finite(s.bias_us, 3)},
                            {"rms_us", Finite(s.rms_us, 3)},
                            {"p99_abs_error_us", Finite(s.p99_abs_error_us, 3)},
                            {"freq_error_ppm", Finite(s.freq_error_ppm, 4)}});
  }
  return base::DumpJson(j, 2) + "\n";
}

std::string SimulateTable(const SimulateFlags& f, const std::vector<EstimatorScore>& med) {
  std::string text = absl::StrFormat(
      "drift %g ppm, jitter %g us (mean queueing per direction), %g%% delay outliers, %g s polls, "
      "%d samples (first %d not scored); medians over %d seeds (%s)\n\n",
      f.drift_ppm, f.jitter_us, f.outlier_pct, f.poll_s, f.samples, f.warmup, f.seeds.size(),
      base::ForTerminal(f.seeds_text));
  absl::StrAppend(&text, absl::StrFormat("%-10s %10s %10s %14s %16s\n", "estimator", "bias_us",
                                         "rms_us", "p99_|err|_us", "freq_error_ppm"));
  for (const EstimatorScore& s : med) {
    absl::StrAppend(&text,
                    absl::StrFormat("%-10s %10.2f %10.2f %14.2f %16.3f\n", s.estimator, s.bias_us,
                                    s.rms_us, s.p99_abs_error_us, s.freq_error_ppm));
  }
  return text;
}

int Simulate(SimulateFlags f) {
  absl::StatusOr<std::string> format = Format(f.out, f.legacy_json);
  if (!format.ok()) return Fail(format.status());
  // The default warmup (8) leaves at least half of a short run scored; a given one is kept.
  if (f.warmup_opt == nullptr || f.warmup_opt->count() == 0)
    f.warmup = std::min(f.warmup, f.samples / 2);
  if (f.warmup >= f.samples) {
    return UsageError("clock simulate: --warmup " + std::to_string(f.warmup) +
                      " leaves no scored samples out of --samples " + std::to_string(f.samples));
  }
  const double work =
      static_cast<double>(f.seeds.size()) * f.samples * std::min(f.window, f.samples);
  if (work > kMaxSimulateWork) {
    return UsageError(
        absl::StrCat("clock simulate: --seeds (", f.seeds.size(), " seeds) x --samples ", f.samples,
                     " x --window ", f.window, " is ", base::FormatNumber(work),
                     " estimator updates, more than the ", base::FormatNumber(kMaxSimulateWork),
                     " one run may take; use fewer seeds or samples"));
  }
  auto out = base::OutputFile::Open(OutputPath(f.out));
  if (!out.ok()) return Fail(out.status());
  // Per estimator, per metric, one value per seed; the report is the median over seeds.
  const std::vector<std::string> names = {"seedance", "ewma"};
  std::vector<std::vector<EstimatorScore>> per_seed(names.size());
  for (uint64_t seed : f.seeds) {
    ClockSimOptions sim;
    sim.drift_ppm = f.drift_ppm;
    sim.jitter_s = f.jitter_us * 1e-6;
    sim.outlier_fraction = f.outlier_pct / 100;
    sim.poll_interval_s = f.poll_s;
    sim.seed = seed;
    engine::RegressionOptions reg_options;
    reg_options.window = f.window;
    auto reg = engine::NewRegressionEstimator(reg_options);
    auto ewma = engine::NewEwmaEstimator();
    const auto scores = engine::ScoreEstimators(sim, f.samples, f.warmup, {reg.get(), ewma.get()});
    for (size_t e = 0; e < names.size(); ++e) per_seed[e].push_back(scores[e]);
  }
  std::vector<EstimatorScore> med(names.size());
  for (size_t e = 0; e < names.size(); ++e) {
    std::vector<double> bias, rms, p99, freq;
    for (const EstimatorScore& s : per_seed[e]) {
      bias.push_back(s.bias_us);
      rms.push_back(s.rms_us);
      p99.push_back(s.p99_abs_error_us);
      freq.push_back(s.freq_error_ppm);
    }
    med[e] = {names[e], Median(bias), Median(rms), Median(p99), Median(freq)};
  }
  const std::string text = *format == "json" ? SimulateJson(f, med) : SimulateTable(f, med);
  if (absl::Status s = (*out)->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = (*out)->Commit(); !s.ok()) return Fail(s);
  return kExitOk;
}

struct ProbeFlags {
  std::string server;
  CLI::Option* server_opt = nullptr;
  int samples = 8;
  double interval_s = 1.0, timeout_s = 1.0;
  OutputFlags out;
  bool legacy_json = false;
};

// What the probe learnt, for the report.
struct ProbeReport {
  std::string server;
  int requested = 0, ok = 0, failed = 0;
  int stratum = 0;
  double offset_us = 0, min_delay_us = 0;
  bool has_drift = false;
  double drift_ppm = 0;
  nlohmann::ordered_json samples = nlohmann::ordered_json::array();
};

std::string ProbeJson(const ProbeReport& r) {
  nlohmann::ordered_json j = base::JsonHeader("clock-probe/v1");
  j["server"] = r.server;
  j["samples_requested"] = r.requested;
  j["samples"] = r.ok;
  j["samples_failed"] = r.failed;
  j["stratum"] = r.stratum;
  j["offset_us"] = Finite(r.offset_us, 3);
  j["min_delay_us"] = Finite(r.min_delay_us, 3);
  j["drift_ppm"] = r.has_drift ? Finite(r.drift_ppm, 4) : nlohmann::ordered_json(nullptr);
  j["per_sample"] = r.samples;
  return base::DumpJson(j, 2) + "\n";
}

std::string ProbeSummary(const ProbeReport& r) {
  std::string text = absl::StrFormat("\nserver %s stratum %d, %d of %d samples\n", r.server,
                                     r.stratum, r.ok, r.requested);
  absl::StrAppend(
      &text, absl::StrFormat("offset %+.1f us (server - local; estimator at the last sample)\n",
                             r.offset_us));
  absl::StrAppend(&text, absl::StrFormat("delay  %.1f us (minimum round trip)\n", r.min_delay_us));
  if (r.has_drift) {
    absl::StrAppend(&text, absl::StrFormat("drift  %+.3f ppm (local clock %s than the server)\n",
                                           r.drift_ppm, r.drift_ppm < 0 ? "faster" : "slower"));
  } else {
    absl::StrAppend(&text, "drift  n/a (needs 4 samples)\n");
  }
  return text;
}

// Whether the probe should stop after a failed query: a kiss-o'-death or an unreachable server
// (kUnavailable), or a server that never answered at all. A reply that was bad (kInvalidArgument:
// impossible timestamps and the like) only costs that sample.
bool StopAfter(const absl::Status& s, int ok_so_far) {
  if (s.code() == absl::StatusCode::kUnavailable) return true;
  return s.code() == absl::StatusCode::kDeadlineExceeded && ok_so_far == 0;
}

int Probe(const ProbeFlags& f) {
  if (f.server.empty() && f.server_opt != nullptr && f.server_opt->count() == 0) {
    return UsageError("clock probe: --server HOST[:PORT] is required");
  }
  absl::StatusOr<std::string> format = Format(f.out, f.legacy_json);
  if (!format.ok()) return Fail(format.status());
  const double total_s = f.samples * (f.interval_s + f.timeout_s);
  if (total_s > kMaxProbeSeconds) {
    return UsageError(absl::StrCat("clock probe: --samples ", f.samples,
                                   " x (--interval-ms + --timeout-ms) is ",
                                   base::FormatNumber(total_s), " s; at most ",
                                   base::FormatNumber(kMaxProbeSeconds), " s (24 h) per run"));
  }
  engine::SntpOptions options;
  uint16_t port = 123;
  const std::string shown_server = "'" + base::ForTerminal(base::Clip(f.server, 256)) + "'";
  if (absl::Status s = engine::ParseHostPort(f.server, 123, &options.host, &port); !s.ok()) {
    return UsageError("clock probe: --server " + shown_server + ": " + std::string(s.message()));
  }
  options.port = port;
  options.timeout_ms = std::max(1, static_cast<int>(std::lround(f.timeout_s * 1000)));
  auto out = base::OutputFile::Open(OutputPath(f.out));
  if (!out.ok()) return Fail(out.status());
  const bool table = *format != "json";
  engine::SntpClient client(options);
  auto est = engine::NewRegressionEstimator();
  ProbeReport rep;
  rep.server = base::ForTerminal(absl::StrCat(options.host, ":", options.port));
  rep.requested = f.samples;
  double min_delay_s = 0;
  engine::SntpResult last;
  std::string last_error;
  for (int i = 0; i < f.samples; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(f.interval_s));
    auto r = client.Query();
    if (!r.ok()) {
      last_error = std::string(r.status().message());
      ++rep.failed;
      Warn(absl::StrCat("clock probe: sample ", i + 1, ": ", last_error));
      if (StopAfter(r.status(), rep.ok)) break;
      continue;
    }
    last = *r;
    est->AddSample(r->sample);
    min_delay_s = rep.ok == 0 ? r->sample.delay_s : std::min(min_delay_s, r->sample.delay_s);
    ++rep.ok;
    rep.samples.push_back({{"sample", i + 1},
                           {"offset_us", Finite(r->sample.offset_s * 1e6, 3)},
                           {"delay_us", Finite(r->sample.delay_s * 1e6, 3)},
                           {"stratum", r->reply.stratum}});
    if (table) {
      const std::string line =
          absl::StrFormat("sample %2d: offset %+12.1f us  delay %9.1f us  stratum %d\n", i + 1,
                          r->sample.offset_s * 1e6, r->sample.delay_s * 1e6, r->reply.stratum);
      if (absl::Status s = (*out)->Write(line); !s.ok()) return Fail(s);
    }
  }
  if (rep.ok == 0) {
    return Fail(absl::UnavailableError("clock probe: --server " + shown_server +
                                       ": no usable reply: " + last_error));
  }
  rep.stratum = last.reply.stratum;
  rep.offset_us = est->OffsetAt(last.sample.local_time_s) * 1e6;
  rep.min_delay_us = min_delay_s * 1e6;
  rep.has_drift = est->SamplesUsed() >= 4;
  if (rep.has_drift) rep.drift_ppm = est->FrequencyPpm();
  const std::string text = table ? ProbeSummary(rep) : ProbeJson(rep);
  if (absl::Status s = (*out)->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = (*out)->Commit(); !s.ok()) return Fail(s);
  return kExitOk;
}

void AddProbeFlags(CLI::App* probe, ProbeFlags* pf) {
  // Required, checked in Probe: CLI11's "--server is required" would hide a mistyped flag.
  pf->server_opt = probe->add_option("--server", pf->server,
                                     "NTP server HOST, HOST:PORT or [IPv6]:PORT (required)");
  AddInt<int>(probe, "--samples", &pf->samples, 1, 10000, "Number of requests (1..10000)");
  AddDuration(probe, "--interval-ms", &pf->interval_s, 1e-3, base::Closed(0, 3600),
              "Time between requests, at most 1h");
  AddDuration(probe, "--timeout-ms", &pf->timeout_s, 1e-3, base::Closed(1e-3, 60),
              "Wait this long for each reply, 1ms..60s");
  AddOutputFlags(probe, &pf->out, kFormats);
  AddDeprecatedFlag(probe, "--json", &pf->legacy_json, "--format json");
}

void AddSimulateFlags(CLI::App* sim, SimulateFlags* sf) {
  AddDouble(sim, "--drift-ppm", &sf->drift_ppm, base::Closed(-1000, 1000),
            "Client clock frequency error (ppm, fast > 0)");
  AddDouble(sim, "--jitter-us", &sf->jitter_us, base::Closed(0, 1e6),
            "Mean queueing delay per direction (us)");
  AddDouble(sim, "--outlier-pct", &sf->outlier_pct, base::Closed(0, 100),
            "Percent of polls with a 1-20 ms extra delay");
  AddInt<int>(sim, "--samples", &sf->samples, 2, 1000000, "Polls per run (2..1000000)");
  AddDuration(sim, "--poll-s", &sf->poll_s, 1, base::Closed(0.001, 3600),
              "Time between polls, 1ms..1h");
  sf->warmup_opt = AddInt<int>(sim, "--warmup", &sf->warmup, 0, 1000000,
                               "Polls not scored at the start (both windows filling; 0..1000000, "
                               "below --samples; by default 8, or half of --samples when fewer "
                               "than 16)");
  AddInt<int>(sim, "--window", &sf->window, 2, 100000,
              "Samples in the Seedance estimator's regression window (2..100000)");
  AddSeeds(sim, "--seeds", &sf->seeds, &sf->seeds_text, "Seeds: N, A-B or a comma list");
  AddOutputFlags(sim, &sf->out, kFormats);
  AddDeprecatedFlag(sim, "--json", &sf->legacy_json, "--format json");
}

}  // namespace

Command AddClockCommand(CLI::App& app) {
  CLI::App* clock = app.add_subcommand(
      "clock", "Probe an NTP server, or score the clock-offset estimators on a simulated clock");
  // No require_subcommand(1): it would hide a mistyped subcommand (`clock prob`).
  clock->footer(
      "Examples:\n"
      "  seedance clock probe --server pool.ntp.org --samples 8\n"
      "  seedance clock simulate --drift-ppm 10 --jitter-us 50 --outlier-pct 10 --samples 64 "
      "--format json\n"
      "See docs/clock.md for the estimators and the simulator.\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");

  auto pf = std::make_shared<ProbeFlags>();
  CLI::App* probe = clock->add_subcommand(
      "probe", "Query an NTP server with the SNTP client; print offset, delay and drift");
  probe->footer(
      "Sends --samples SNTP requests --interval-ms apart. Prints each sample, then the "
      "estimator's offset (server - local), the minimum delay and the local clock's drift in ppm "
      "(from 4 samples on; null in JSON before). A reply with impossible timestamps is rejected "
      "and the probe goes on with the next sample. A server that never answers within "
      "--timeout-ms, a kiss-o'-death or no usable reply at all is an error (exit 1). "
      "--format json: schema clock-probe/v1.\n\nExamples:\n"
      "  seedance clock probe --server 127.0.0.1:11123\n"
      "  seedance clock probe --server time.example.org --samples 16 --interval-ms 2s "
      "--format json\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  AddProbeFlags(probe, pf.get());

  auto sf = std::make_shared<SimulateFlags>();
  CLI::App* sim = clock->add_subcommand(
      "simulate", "Score the Seedance estimator and the EWMA baseline on a drifting clock");
  sim->footer(
      "The client clock runs --drift-ppm fast; each direction of the path queues an exponential "
      "delay of mean --jitter-us, and --outlier-pct of the polls queue 1-20 ms more on one "
      "direction. The error at each poll is the estimate minus the simulator's true offset at that "
      "moment; bias = mean, rms = root mean square, p99 of |error|, and freq_error = |estimated - "
      "true frequency| after the last poll. Each figure is the median over --seeds. "
      "--format json: schema clock-simulate/v1.\n\n"
      "Examples:\n"
      "  seedance clock simulate --drift-ppm 10 --jitter-us 50 --outlier-pct 10 --samples 64\n"
      "  seedance clock simulate --drift-ppm 50 --jitter-us 200 --outlier-pct 20 --samples 256 "
      "--seeds 1-31 --format json -o sim.json\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  AddSimulateFlags(sim, sf.get());

  Command cmd;
  cmd.app = clock;
  cmd.run = [probe, sim, pf, sf]() -> int {
    if (probe->parsed()) return Probe(*pf);
    if (sim->parsed()) return Simulate(*sf);
    return UsageError("clock: expected 'probe' or 'simulate'");
  };
  return cmd;
}

}  // namespace seedance::cli
