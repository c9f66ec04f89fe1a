// `seedance clock`: probe an NTP server with the SNTP client, or score the clock estimators on the
// drifting-clock simulator (docs/clock.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "seedance/engine/clock_sync.h"
#include "seedance/engine/sntp.h"

namespace seedance::cli {
namespace {

using seedance::engine::ClockEstimator;
using seedance::engine::ClockSimOptions;
using seedance::engine::EstimatorScore;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct SimulateFlags {
  double drift_ppm = 10, jitter_us = 50, outlier_pct = 10, poll_s = 1;
  int samples = 64, warmup = 8, window = 64;
  std::string seeds = "1-15";
  bool json = false;
};

int Simulate(const SimulateFlags& f) {
  std::vector<uint64_t> seeds;
  if (!ParseSeedList(f.seeds, &seeds)) {
    return UsageError("clock simulate: --seeds: expected N, A-B or a comma list, got '" + f.seeds +
                      "'");
  }
  if (f.warmup >= f.samples) {
    return UsageError("clock simulate: --warmup " + std::to_string(f.warmup) +
                      " leaves no scored samples out of --samples " + std::to_string(f.samples));
  }
  // Per estimator, per metric, one value per seed; the report is the median over seeds.
  const std::vector<std::string> names = {"seedance", "ewma"};
  std::vector<std::vector<EstimatorScore>> per_seed(names.size());
  for (uint64_t seed : seeds) {
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
  if (f.json) {
    std::printf(
        "{\"drift_ppm\": %g, \"jitter_us\": %g, \"outlier_pct\": %g, \"poll_s\": %g, "
        "\"samples\": %d, \"warmup\": %d, \"seeds\": %zu, \"statistic\": \"median over seeds\",\n"
        " \"results\": [",
        f.drift_ppm, f.jitter_us, f.outlier_pct, f.poll_s, f.samples, f.warmup, seeds.size());
    for (size_t e = 0; e < med.size(); ++e) {
      std::printf(
          "%s\n  {\"estimator\": \"%s\", \"bias_us\": %.3f, \"rms_us\": %.3f, "
          "\"p99_abs_error_us\": %.3f, \"freq_error_ppm\": %.4f}",
          e ? "," : "", med[e].estimator.c_str(), med[e].bias_us, med[e].rms_us,
          med[e].p99_abs_error_us, med[e].freq_error_ppm);
    }
    std::printf("\n]}\n");
    return kExitOk;
  }
  std::printf(
      "drift %g ppm, jitter %g us (mean queueing per direction), %g%% delay outliers, %g s polls, "
      "%d samples (first %d not scored); medians over %zu seeds (%s)\n\n",
      f.drift_ppm, f.jitter_us, f.outlier_pct, f.poll_s, f.samples, f.warmup, seeds.size(),
      f.seeds.c_str());
  std::printf("%-10s %10s %10s %14s %16s\n", "estimator", "bias_us", "rms_us", "p99_|err|_us",
              "freq_error_ppm");
  for (const EstimatorScore& s : med) {
    std::printf("%-10s %10.2f %10.2f %14.2f %16.3f\n", s.estimator.c_str(), s.bias_us, s.rms_us,
                s.p99_abs_error_us, s.freq_error_ppm);
  }
  return kExitOk;
}

struct ProbeFlags {
  std::string server;
  int samples = 8, interval_ms = 1000, timeout_ms = 1000;
  bool json = false;
};

int Probe(const ProbeFlags& f) {
  engine::SntpOptions options;
  uint16_t port = 123;
  if (absl::Status s = engine::ParseHostPort(f.server, 123, &options.host, &port); !s.ok()) {
    return UsageError("clock probe: --server: " + std::string(s.message()));
  }
  options.port = port;
  options.timeout_ms = f.timeout_ms;
  engine::SntpClient client(options);
  auto est = engine::NewRegressionEstimator();
  int ok = 0;
  double min_delay_s = 0;
  engine::SntpResult last;
  std::string last_error;
  for (int i = 0; i < f.samples; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(f.interval_ms));
    auto r = client.Query();
    if (!r.ok()) {
      last_error = std::string(r.status().message());
      std::fprintf(stderr, "seedance: clock probe: sample %d: %s\n", i + 1, last_error.c_str());
      // A kiss-o'-death asks us to stop; so does a server that never answered the first time.
      if (r.status().code() == absl::StatusCode::kUnavailable || ok == 0) break;
      continue;
    }
    last = *r;
    est->AddSample(r->sample);
    min_delay_s = ok == 0 ? r->sample.delay_s : std::min(min_delay_s, r->sample.delay_s);
    ++ok;
    if (!f.json) {
      std::printf("sample %2d: offset %+12.1f us  delay %9.1f us  stratum %d\n", i + 1,
                  r->sample.offset_s * 1e6, r->sample.delay_s * 1e6, r->reply.stratum);
    }
  }
  if (ok == 0) return RuntimeError("clock probe: no usable reply: " + last_error);
  const double offset_us = est->OffsetAt(last.sample.local_time_s) * 1e6;
  const bool has_drift = est->SamplesUsed() >= 4;
  if (f.json) {
    std::printf(
        "{\"server\": \"%s:%u\", \"samples\": %d, \"stratum\": %d, \"offset_us\": %.3f, "
        "\"min_delay_us\": %.3f, \"drift_ppm\": %s}\n",
        options.host.c_str(), unsigned{options.port}, ok, last.reply.stratum, offset_us,
        min_delay_s * 1e6, has_drift ? std::to_string(est->FrequencyPpm()).c_str() : "null");
  } else {
    std::printf("\nserver %s:%u stratum %d, %d of %d samples\n", options.host.c_str(),
                unsigned{options.port}, last.reply.stratum, ok, f.samples);
    std::printf("offset %+.1f us (server - local; estimator at the last sample)\n", offset_us);
    std::printf("delay  %.1f us (minimum round trip)\n", min_delay_s * 1e6);
    if (has_drift) {
      std::printf("drift  %+.3f ppm (local clock %s than the server)\n", est->FrequencyPpm(),
                  est->FrequencyPpm() < 0 ? "faster" : "slower");
    } else {
      std::printf("drift  n/a (needs 4 samples)\n");
    }
  }
  return kExitOk;
}

}  // namespace

Command AddClockCommand(CLI::App& app) {
  CLI::App* clock = app.add_subcommand(
      "clock", "Probe an NTP server, or score the clock-offset estimators on a simulated clock");
  clock->require_subcommand(1);
  clock->footer(
      "Examples:\n"
      "  seedance clock probe --server pool.ntp.org --samples 8\n"
      "  seedance clock simulate --drift-ppm 10 --jitter-us 50 --outlier-pct 10 --samples 64 "
      "--json\n"
      "See docs/clock.md for the estimators and the simulator.");

  auto pf = std::make_shared<ProbeFlags>();
  CLI::App* probe = clock->add_subcommand(
      "probe", "Query an NTP server with the SNTP client; print offset, delay and drift");
  probe->footer(
      "Sends --samples SNTP requests --interval-ms apart. Prints each sample, then the "
      "estimator's offset (server - local), the minimum delay and the local clock's drift in ppm "
      "(from 4 samples on). A server that does not answer within --timeout-ms is an error (exit "
      "1).\n\nExamples:\n"
      "  seedance clock probe --server 127.0.0.1:11123\n"
      "  seedance clock probe --server time.example.org --samples 16 --interval-ms 2000 --json");
  probe->add_option("--server", pf->server, "NTP server HOST, HOST:PORT or [IPv6]:PORT")
      ->required();
  probe->add_option("--samples", pf->samples, "Number of requests")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  probe->add_option("--interval-ms", pf->interval_ms, "Time between requests")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600000));
  probe->add_option("--timeout-ms", pf->timeout_ms, "Wait this long for each reply")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000));
  probe->add_flag("--json", pf->json, "Print one JSON object instead of the text report");

  auto sf = std::make_shared<SimulateFlags>();
  CLI::App* sim = clock->add_subcommand(
      "simulate", "Score the Seedance estimator and the EWMA baseline on a drifting clock");
  sim->footer(
      "The client clock runs --drift-ppm fast; each direction of the path queues an exponential "
      "delay of mean --jitter-us, and --outlier-pct of the polls queue 1-20 ms more on one "
      "direction. The error at each poll is the estimate minus the simulator's true offset at that "
      "moment; bias = mean, rms = root mean square, p99 of |error|, and freq_error = |estimated - "
      "true frequency| after the last poll. Each figure is the median over --seeds.\n\n"
      "Examples:\n"
      "  seedance clock simulate --drift-ppm 10 --jitter-us 50 --outlier-pct 10 --samples 64\n"
      "  seedance clock simulate --drift-ppm 50 --jitter-us 200 --outlier-pct 20 --samples 256 "
      "--seeds 1-31 --json");
  sim->add_option("--drift-ppm", sf->drift_ppm, "Client clock frequency error (ppm, fast > 0)")
      ->capture_default_str()
      ->check(CLI::Range(-1000.0, 1000.0));
  sim->add_option("--jitter-us", sf->jitter_us, "Mean queueing delay per direction (us)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  sim->add_option("--outlier-pct", sf->outlier_pct, "Percent of polls with a 1-20 ms extra delay")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  sim->add_option("--samples", sf->samples, "Polls per run")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000000));
  sim->add_option("--poll-s", sf->poll_s, "Seconds between polls")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
  sim->add_option("--warmup", sf->warmup, "Polls not scored at the start (both windows filling)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  sim->add_option("--window", sf->window, "Samples in the Seedance estimator's regression window")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  sim->add_option("--seeds", sf->seeds, "Seeds: N, A-B or a comma list")->capture_default_str();
  sim->add_flag("--json", sf->json, "Print {\"results\": [...]} as JSON");

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
