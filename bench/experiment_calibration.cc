// Calibration of the experiment statistics by simulation (seedance/experiment/stats.h;
// docs/experiments.md, "Statistics"; issue 41). Every number is measured on simulated data with
// a fixed seed; nothing is asserted.
//
// A/A and A/B: --experiments experiments per metric, two arms, per-unit values drawn from
// N(100, 20^2) ("normal") and from a log-normal with median 50 and log-sd --lognormal-sigma
// ("lognormal", latency-like, skewed). Each is planned for the MDE --mde relative to the mean,
// i.e. the absolute effect mde_abs = mde * mean, from the true variance: n = SequentialSampleSize
// units per arm and tau2 = MsprtTau2(mde_abs, sigma2, n, alpha). Both arms grow to n and are
// read after every n / --looks units per arm (peeking --looks times): the sequential test keeps a
// SequentialState; the Welch t-test is read at every look ("peeking"), once at the last look
// (n) and once at the fixed-horizon sample FixedHorizonSampleSize. A/A has no effect; A/B adds
// mde_abs to every treatment value (an absolute shift of the mean by the MDE, variance unchanged).
// Rates carry 95% Wilson intervals; "stop" is the units per arm at the first sequential
// rejection (experiments not rejected by n count as later than n).
//
// CUPED: --cuped-experiments A/A experiments of --cuped-units units per arm, x ~ N(0, 1) and
// y = 100 + 20 (rho x + sqrt(1 - rho^2) e): the variance of delta across experiments, raw and
// CUPED-adjusted, and the measured reduction 1 - var(cuped) / var(raw) against rho^2 (with its
// standard error by the delta method).
//
// SRM: the p-value of 5,200 / 4,800 sessions in a 50/50 plan, and the share of --experiments
// simulated experiments of 10,000 sessions flagged (p < 0.001) when each session lands in the
// first arm with probability 0.52, and with 0.5.
//
//   build/bench/experiment_calibration [--experiments 2000] [--looks 100] [--seed 1]
//       [--threads 2] [--mde 0.02] [--alpha 0.05] [--power 0.8] [--lognormal-sigma 1]
//       [--cuped-experiments 50000] [--cuped-units 500] [--json FILE]
// Exit status: 0; 2 for a bad flag; 1 when the JSON file cannot be written.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "seedance/base/parallel.h"
#include "seedance/experiment/stats.h"

namespace {

using nlohmann::json;
using seedance::experiment::CupedResult;
using seedance::experiment::JointMoments;
using seedance::experiment::Moments;
using seedance::experiment::SequentialState;
using seedance::experiment::TestResult;

struct Flags {
  int experiments = 2000;
  int looks = 100;
  uint64_t seed = 1;
  int threads = 2;
  double mde = 0.02;
  double alpha = 0.05;
  double power = 0.8;
  double lognormal_sigma = 1.0;
  int cuped_experiments = 50000;
  int cuped_units = 500;
  std::string json_path;
};

// A per-unit metric: normal, or log-normal exp(mu + sigma z).
struct Metric {
  std::string name;
  bool lognormal = false;
  double mu = 0, sigma = 0;
  double mean() const { return lognormal ? std::exp(mu + sigma * sigma / 2) : mu; }
  double variance() const {
    return lognormal ? std::expm1(sigma * sigma) * std::exp(2 * mu + sigma * sigma) : sigma * sigma;
  }
  double Draw(std::mt19937_64& rng, std::normal_distribution<double>& z) const {
    return lognormal ? std::exp(mu + sigma * z(rng)) : mu + sigma * z(rng);
  }
};

struct Plan {
  double mde_abs = 0, sigma2 = 0, tau2 = 0;
  int64_t n = 0;        // sequential planned sample per arm
  int64_t n_fixed = 0;  // fixed-horizon sample per arm
};

// What one simulated experiment did.
struct Outcome {
  bool seq_rejected = false;                               // at some look up to n
  int64_t seq_stop = std::numeric_limits<int64_t>::max();  // units per arm at first rejection
  bool seq_covered = true;     // the true delta is inside the final running intersection
  bool welch_peeking = false;  // rejected at some look
  bool welch_end = false;      // at the last look (n) alone
  bool welch_fixed = false;    // once, at n_fixed units per arm
};

struct Rate {
  int64_t k = 0, n = 0;
  double p() const { return n == 0 ? 0 : double(k) / double(n); }
  // 95% Wilson score interval.
  std::pair<double, double> Wilson() const {
    const double z = 1.959963984540054, nn = double(n), ph = p();
    const double denom = 1 + z * z / nn;
    const double centre = (ph + z * z / (2 * nn)) / denom;
    const double half = z * std::sqrt(ph * (1 - ph) / nn + z * z / (4 * nn * nn)) / denom;
    return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
  }
  json Json() const {
    const auto [lo, hi] = Wilson();
    return {{"rate", p()}, {"count", k}, {"of", n}, {"wilson95", {lo, hi}}};
  }
  std::string Text() const {
    const auto [lo, hi] = Wilson();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%5.1f%% [%4.1f, %4.1f]", 100 * p(), 100 * lo, 100 * hi);
    return buf;
  }
};

uint64_t StreamSeed(uint64_t seed, uint64_t section, uint64_t index) {
  std::seed_seq seq{seed, seed >> 32, section, index, index >> 32};
  std::array<uint32_t, 2> words;
  seq.generate(words.begin(), words.end());
  return uint64_t{words[0]} << 32 | words[1];
}

Outcome SimulateOne(const Flags& f, const Metric& metric, const Plan& plan, double effect,
                    uint64_t stream) {
  std::mt19937_64 rng(stream);
  std::normal_distribution<double> z(0, 1);
  Moments c, t;
  SequentialState seq;
  Outcome out;
  for (int look = 1; look <= f.looks; ++look) {
    const int64_t target = plan.n * look / f.looks;
    while (c.n < target) {
      c.Add(metric.Draw(rng, z));
      t.Add(metric.Draw(rng, z) + effect);
      if (c.n == plan.n_fixed) {
        out.welch_fixed = seedance::experiment::WelchTest(c, t, f.alpha).significant;
      }
    }
    seq.Update(seedance::experiment::MsprtTest(c, t, f.alpha, plan.tau2), f.alpha);
    if (seq.significant && !out.seq_rejected) {
      out.seq_rejected = true;
      out.seq_stop = c.n;
    }
    const TestResult welch = seedance::experiment::WelchTest(c, t, f.alpha);
    if (welch.significant) out.welch_peeking = true;
    if (look == f.looks) out.welch_end = welch.significant;
  }
  out.seq_covered = seq.ci_lo <= effect && effect <= seq.ci_hi;
  return out;
}

struct ScenarioResult {
  Rate seq, seq_miss, peeking, end, fixed;
  int64_t stop_p25 = 0, stop_median = 0, stop_p75 = 0;  // INT64_MAX: later than n
  double seconds = 0;
};

ScenarioResult RunScenario(const Flags& f, const Metric& metric, const Plan& plan, double effect,
                           uint64_t section) {
  std::vector<Outcome> outcomes(f.experiments);
  const auto start = std::chrono::steady_clock::now();
  absl::Status st = seedance::base::ParallelFor(outcomes.size(), f.threads, [&](size_t i) {
    outcomes[i] = SimulateOne(f, metric, plan, effect, StreamSeed(f.seed, section, i));
    return absl::OkStatus();
  });
  (void)st;  // the task never fails
  ScenarioResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<int64_t> stops;
  for (const Outcome& o : outcomes) {
    for (Rate* rate : {&r.seq, &r.seq_miss, &r.peeking, &r.end, &r.fixed}) ++rate->n;
    r.seq.k += o.seq_rejected;
    r.seq_miss.k += !o.seq_covered;
    r.peeking.k += o.welch_peeking;
    r.end.k += o.welch_end;
    r.fixed.k += o.welch_fixed;
    stops.push_back(o.seq_stop);
  }
  std::sort(stops.begin(), stops.end());
  auto quantile = [&](double q) { return stops[static_cast<size_t>(q * (stops.size() - 1))]; };
  r.stop_p25 = quantile(0.25);
  r.stop_median = quantile(0.5);
  r.stop_p75 = quantile(0.75);
  return r;
}

std::string Units(int64_t n) {
  return n == std::numeric_limits<int64_t>::max() ? std::string("> n") : std::to_string(n);
}

json StopJson(int64_t n) {
  return n == std::numeric_limits<int64_t>::max() ? json(nullptr) : json(n);
}

json CalibrationSection(const Flags& f) {
  const std::vector<Metric> metrics = {
      {"normal", false, 100, 20},
      {"lognormal", true, std::log(50.0), f.lognormal_sigma},
  };
  json out = json::array();
  std::printf(
      "A/A and A/B: %d experiments each, %d looks, alpha %g, power %g, MDE %g of the mean\n",
      f.experiments, f.looks, f.alpha, f.power, f.mde);
  std::printf("%-9s %-4s %8s %8s %9s | %-22s %-22s %-22s %-22s | %s\n", "metric", "case", "n_seq",
              "n_fixed", "tau2", "sequential (any look)", "Welch peeking", "Welch once at n",
              "Welch once at n_fixed", "stop p25/median/p75, CS miss, s");
  uint64_t section = 0;
  for (const Metric& m : metrics) {
    Plan plan;
    plan.mde_abs = f.mde * m.mean();
    plan.sigma2 = m.variance();
    plan.n =
        seedance::experiment::SequentialSampleSize(plan.sigma2, plan.mde_abs, f.alpha, f.power);
    plan.n_fixed =
        seedance::experiment::FixedHorizonSampleSize(plan.sigma2, plan.mde_abs, f.alpha, f.power);
    plan.tau2 = seedance::experiment::MsprtTau2(plan.mde_abs, plan.sigma2, plan.n, f.alpha);
    for (const bool ab : {false, true}) {
      const ScenarioResult r = RunScenario(f, m, plan, ab ? plan.mde_abs : 0.0, ++section);
      std::printf("%-9s %-4s %8lld %8lld %9.4g | %-22s %-22s %-22s %-22s | %s/%s/%s, %s, %.1f\n",
                  m.name.c_str(), ab ? "A/B" : "A/A", static_cast<long long>(plan.n),
                  static_cast<long long>(plan.n_fixed), plan.tau2, r.seq.Text().c_str(),
                  r.peeking.Text().c_str(), r.end.Text().c_str(), r.fixed.Text().c_str(),
                  Units(r.stop_p25).c_str(), Units(r.stop_median).c_str(),
                  Units(r.stop_p75).c_str(), r.seq_miss.Text().c_str(), r.seconds);
      out.push_back({{"metric", m.name},
                     {"case", ab ? "A/B" : "A/A"},
                     {"mean", m.mean()},
                     {"sigma2", plan.sigma2},
                     {"mde_abs", plan.mde_abs},
                     {"effect", ab ? plan.mde_abs : 0.0},
                     {"n_sequential", plan.n},
                     {"n_fixed", plan.n_fixed},
                     {"tau2", plan.tau2},
                     {"sequential_rejects", r.seq.Json()},
                     {"sequential_ci_misses_truth", r.seq_miss.Json()},
                     {"welch_peeking_rejects", r.peeking.Json()},
                     {"welch_once_at_n_rejects", r.end.Json()},
                     {"welch_once_at_n_fixed_rejects", r.fixed.Json()},
                     {"stop_units_p25", StopJson(r.stop_p25)},
                     {"stop_units_median", StopJson(r.stop_median)},
                     {"stop_units_p75", StopJson(r.stop_p75)},
                     {"seconds", r.seconds}});
    }
  }
  return out;
}

// The deltas of one CUPED experiment: raw and adjusted.
std::pair<double, double> CupedDeltas(double rho, int units, uint64_t stream) {
  std::mt19937_64 rng(stream);
  std::normal_distribution<double> z(0, 1);
  JointMoments c, t;
  const double resid = std::sqrt(1 - rho * rho);
  for (int i = 0; i < units; ++i) {
    for (JointMoments* arm : {&c, &t}) {
      const double x = z(rng);
      arm->Add(100 + 20 * (rho * x + resid * z(rng)), x);
    }
  }
  const CupedResult r = seedance::experiment::Cuped(c, t);
  return {t.mean_y - c.mean_y, r.treatment.mean - r.control.mean};
}

json CupedSection(const Flags& f) {
  std::printf("\nCUPED: %d A/A experiments of %d units per arm per rho\n", f.cuped_experiments,
              f.cuped_units);
  std::printf("%5s %8s %10s %10s %9s %8s %9s %s\n", "rho", "rho^2", "var raw", "var cuped",
              "reduction", "se", "rel.err", "within 10%");
  json out = json::array();
  uint64_t section = 100;
  for (const double rho : {0.3, 0.5, 0.7, 0.9}) {
    std::vector<std::pair<double, double>> d(f.cuped_experiments);
    ++section;
    (void)seedance::base::ParallelFor(d.size(), f.threads, [&](size_t i) {
      d[i] = CupedDeltas(rho, f.cuped_units, StreamSeed(f.seed, section, i));
      return absl::OkStatus();
    });
    Moments raw, adj;
    for (const auto& [a, b] : d) {
      raw.Add(a);
      adj.Add(b);
    }
    const double ratio = adj.variance() / raw.variance();
    // Delta method: u_i = (b_i - mean_b)^2 - ratio (a_i - mean_a)^2 has mean ~0 and
    // se(ratio) = sd(u) / (sqrt(R) var(a)).
    Moments u;
    for (const auto& [a, b] : d) {
      u.Add((b - adj.mean) * (b - adj.mean) - ratio * (a - raw.mean) * (a - raw.mean));
    }
    const double se = std::sqrt(u.variance() / double(d.size())) / raw.variance();
    const double reduction = 1 - ratio, target = rho * rho;
    const double rel = (reduction - target) / target;
    const bool within = std::fabs(rel) <= 0.10;
    std::printf("%5.1f %8.3f %10.5f %10.5f %9.4f %8.4f %+8.1f%% %s\n", rho, target, raw.variance(),
                adj.variance(), reduction, se, 100 * rel, within ? "yes" : "no");
    out.push_back({{"rho", rho},
                   {"rho2", target},
                   {"var_delta_raw", raw.variance()},
                   {"var_delta_cuped", adj.variance()},
                   {"reduction", reduction},
                   {"reduction_se", se},
                   {"relative_error", rel},
                   {"within_10pct", within}});
  }
  return out;
}

json SrmSection(const Flags& f) {
  const std::vector<int64_t> counts = {5200, 4800};
  const std::vector<double> weights = {0.5, 0.5};
  const auto exact = seedance::experiment::SampleRatioTest(counts, weights);
  std::printf("\nSRM: 5200/4800 sessions in a 50/50 plan: chi2 %.2f, p %.3g, mismatch %s\n",
              exact.chi2, exact.p_value, exact.mismatch ? "yes" : "no");
  json out = {{"chi2", exact.chi2}, {"p_value", exact.p_value}, {"mismatch", exact.mismatch}};
  uint64_t section = 200;
  for (const double share : {0.52, 0.5}) {
    std::vector<char> flagged(f.experiments);
    ++section;
    (void)seedance::base::ParallelFor(flagged.size(), f.threads, [&](size_t i) {
      std::mt19937_64 rng(StreamSeed(f.seed, section, i));
      std::bernoulli_distribution first(share);
      std::vector<int64_t> n = {0, 0};
      for (int s = 0; s < 10000; ++s) ++n[first(rng) ? 0 : 1];
      flagged[i] = seedance::experiment::SampleRatioTest(n, weights).mismatch;
      return absl::OkStatus();
    });
    Rate r;
    r.n = f.experiments;
    r.k = std::count(flagged.begin(), flagged.end(), 1);
    std::printf("SRM: %d experiments of 10,000 sessions, P(first arm) = %.2f: flagged %s\n",
                f.experiments, share, r.Text().c_str());
    out[share == 0.5 ? "flagged_at_50_50" : "flagged_at_52_48"] = r.Json();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Calibration of the experiment statistics by simulation (issue 41)"};
  Flags f;
  app.add_option("--experiments", f.experiments, "simulated experiments per case")
      ->check(CLI::Range(1, 100000000));
  app.add_option("--looks", f.looks, "looks per experiment (peeks)")->check(CLI::Range(1, 100000));
  app.add_option("--seed", f.seed, "seed of every random stream");
  app.add_option("--threads", f.threads, "worker threads")->check(CLI::Range(1, 1024));
  app.add_option("--mde", f.mde, "minimum detectable effect, relative to the mean")
      ->check(CLI::Range(1e-6, 10.0));
  app.add_option("--alpha", f.alpha)->check(CLI::Range(1e-6, 0.5));
  app.add_option("--power", f.power)->check(CLI::Range(0.5, 0.999));
  app.add_option("--lognormal-sigma", f.lognormal_sigma, "log-sd of the log-normal metric")
      ->check(CLI::Range(0.01, 3.0));
  app.add_option("--cuped-experiments", f.cuped_experiments)->check(CLI::Range(10, 100000000));
  app.add_option("--cuped-units", f.cuped_units, "units per arm")->check(CLI::Range(10, 100000000));
  app.add_option("--json", f.json_path, "also write the report as JSON here");
  CLI11_PARSE(app, argc, argv);

  const auto start = std::chrono::steady_clock::now();
  json report = {{"experiments", f.experiments},
                 {"looks", f.looks},
                 {"seed", f.seed},
                 {"threads", f.threads},
                 {"mde", f.mde},
                 {"alpha", f.alpha},
                 {"power", f.power},
                 {"lognormal_sigma", f.lognormal_sigma}};
  report["calibration"] = CalibrationSection(f);
  report["cuped"] = CupedSection(f);
  report["srm"] = SrmSection(f);
  report["seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\ntotal %.1f s\n", report["seconds"].get<double>());
  if (!f.json_path.empty()) {
    std::ofstream out(f.json_path);
    out << report.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "experiment_calibration: cannot write %s\n", f.json_path.c_str());
      return 1;
    }
  }
  return 0;
}
