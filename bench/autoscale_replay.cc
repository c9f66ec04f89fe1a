// Replays the Azure LLM inference traces (2023, Splitwise; conv and code) through the container
// autoscaler's modes and an oracle, and reports per trace and mode the SLO-violation minutes
// (minutes whose TTFT p99 > 2 s) and the replica-hours paid (docs/autoscale.md, "Azure replay").
//
// Replica model. One replica = one copy of --model on --gpu (tensor parallel --tp) running the
// serving simulator's continuous batching. It is calibrated once per trace: the simulator replays
// stationary Poisson arrivals at a grid of rates with request sizes drawn from the trace, giving
// TTFT p50/p99 as a function of the per-replica rate r, and the saturation throughput mu. Requests
// are spread evenly over the ready replicas (random routing: each sees r = lambda / N).
// A minute's TTFT p99 = p99(r) at that minute's mean rate over its mean ready replicas, plus the
// wait of a fluid backlog Q (carried across minutes: Q += (lambda - N mu) * 60, floored at 0;
// wait = max(Q before, Q after) / (N mu)). A full serving simulation of every minute of every
// policy would be exact but each minute's queue depends on the previous ones; this keeps the
// replay in seconds. r at or beyond the last grid point counts as a violation.
//
// Control loop. Every period (15 s; --period adaptive gives seed and predictive the engine's
// PeriodController) each mode sees the mean arrival rate of the last --metric-window-s (60 s, as a
// Prometheus rate(...[1m]) would give) and answers a replica count. A new replica is ready
// --startup-s (60 s) after it is requested and is paid from the request on; a removed replica
// stops (and stops being paid) at once, a starting one first. Everything starts at the oracle's
// first-minute count.
//   hpa         External metric, AverageValue target = r_slo / 1.1 requests/s per replica, where
//               r_slo = the highest per-replica rate with TTFT p99 <= 2 s: the highest target
//               whose 10% tolerance band never lets a steady load past the SLO.
//   seed        CPU = r / mu, P95 and error rate (share of TTFT > 2 s) from the calibration at r,
//               each target = its value at the HPA's operating point r_slo / 1.1.
//   predictive  capacity r_slo per replica, horizon = start-up + period.
//   oracle      each minute the fewest replicas with p99(lambda / N) <= 2 s, ready at once.
//   oracle-hpa-violations  the oracle allowed the HPA's violation minutes (BudgetOracle).
//   lower-bound-hpa-violations  no schedule at all, causal or not, pays less with the HPA's
//               violation minutes under these rules, start-up pay included (LowerBound).
// p95 and the error rate are not reported by the simulator (only p50 and p99): they come from an
// exponential tail through p50 and p99 (P(T > x) = 0.5 exp(-(x - p50) ln 50 / (p99 - p50))).
//
//   build/bench/autoscale_replay [--model llama-3-8b] [--gpu a10] [--tp 1] [--startup-s 60]
//       [--metric-window-s 60] [--period fixed|adaptive] [--json]
//       [--headroom-quantile 0.9] [--trend-window-s 300] [--error-window-s 600]
//       [--down-window-s 120]   (predictive's options; defaults = PredictiveOptions)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "seedance/autoscale/autoscaler.h"
#include "seedance/engine/period_controller.h"
#include "seedance/model/cost_model.h"
#include "seedance/serving/request_trace.h"
#include "seedance/serving/serving_sim.h"
#include "seedance/trace/csv_reader.h"

namespace {

namespace as = seedance::autoscale;
namespace md = seedance::model;
namespace sv = seedance::serving;

constexpr double kSloS = 2.0;
constexpr double kPeriodS = 15;

struct Config {
  std::string model = "llama-3-8b", gpu = "a10";
  int tp = 1;
  double startup_s = 60, metric_window_s = 60;
  bool adaptive = false, json = false;
  seedance::autoscale::PredictiveOptions predictive;  // horizon_s and capacity set per trace
};

// TTFT of one replica as a function of its arrival rate (stationary Poisson, trace sizes).
struct ReplicaModel {
  double mu = 0;     // saturation throughput, requests/s
  double r_slo = 0;  // highest rate with p99 <= kSloS
  std::vector<double> rate, p50, p99;

  double Interp(const std::vector<double>& y, double r) const {
    if (r <= rate.front()) return y.front();
    for (size_t i = 1; i < rate.size(); ++i) {
      if (r <= rate[i]) {
        const double w = (r - rate[i - 1]) / (rate[i] - rate[i - 1]);
        return y[i - 1] + w * (y[i] - y[i - 1]);
      }
    }
    return INFINITY;  // past the grid: overloaded
  }
  double P99(double r) const { return Interp(p99, r); }
  double P95(double r) const {
    const double a = Interp(p50, r), b = Interp(p99, r);
    if (!std::isfinite(b)) return b;
    return a + (b - a) * std::log(10.0) / std::log(50.0);  // exponential tail through p50, p99
  }
  double ErrorRate(double r) const {
    const double a = Interp(p50, r), b = Interp(p99, r);
    if (!std::isfinite(b)) return 1;
    if (kSloS <= a) return 0.5;
    if (b <= a) return 0;
    return 0.5 * std::exp(-(kSloS - a) * std::log(50.0) / (b - a));
  }
};

sv::ServingResult Simulate(const sv::RequestTrace& source, const md::CostModel& cm, double rate,
                           double duration_s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<size_t> pick(0, source.requests.size() - 1);
  sv::RequestTrace t;
  t.source = "poisson";
  t.format = sv::TraceFormat::kAzure;
  for (double at = gap(rng); at < duration_s; at += gap(rng)) {
    sv::TraceRequest r = source.requests[pick(rng)];
    r.arrival_s = at;
    r.prefix_block_ids.clear();
    t.requests.push_back(r);
  }
  const sv::ServingHardware hw = sv::HardwareFromCostModel(cm);
  auto res = sv::RunServingSim(t, hw, sv::ServingSimOptions{});
  if (!res.ok()) {
    std::fprintf(stderr, "autoscale_replay: serving sim: %s\n", res.status().ToString().c_str());
    std::exit(1);
  }
  return *res;
}

ReplicaModel Calibrate(const sv::RequestTrace& trace, const md::CostModel& cm) {
  ReplicaModel m;
  // Saturation: far more arrivals than one replica completes.
  m.mu = Simulate(trace, cm, 50, 300, 1).throughput_rps;
  for (double f = 0.05; f < 0.99; f += 0.05) {
    const double r = f * m.mu;
    const sv::ServingResult res = Simulate(trace, cm, r, std::max(1800.0, 3000 / r), 2);
    m.rate.push_back(r);
    m.p50.push_back(res.ttft_p50_s);
    m.p99.push_back(std::max(res.ttft_p99_s, m.p99.empty() ? 0.0 : m.p99.back()));  // monotone
  }
  m.r_slo = 0;
  for (size_t i = 0; i < m.rate.size(); ++i) {
    if (m.p99[i] > kSloS) {
      if (i > 0) {
        const double w = (kSloS - m.p99[i - 1]) / (m.p99[i] - m.p99[i - 1]);
        m.r_slo = m.rate[i - 1] + w * (m.rate[i] - m.rate[i - 1]);
      }
      return m;
    }
    m.r_slo = m.rate[i];
  }
  return m;
}

struct Result {
  std::string mode;
  int violation_minutes = 0, minutes = 0, decisions = 0, changes = 0;
  double replica_hours = 0;
};

// Per-minute evaluation of a ready-replica schedule (replica-seconds per minute).
struct MinuteEval {
  const ReplicaModel& m;
  double backlog = 0;
  bool Violates(double lambda, double ready) {
    if (ready <= 0) {
      backlog += lambda * 60;
      return lambda > 0;
    }
    const double before = backlog;
    backlog = std::max(0.0, backlog + (lambda - ready * m.mu) * 60);
    const double wait = std::max(before, backlog) / (ready * m.mu);
    return m.P99(lambda / ready) + wait > kSloS;
  }
};

int OracleReplicas(const ReplicaModel& m, double lambda) {
  int n = 1;
  while (m.P99(lambda / n) > kSloS) ++n;
  return n;
}

Result Oracle(const ReplicaModel& m, const std::vector<double>& per_minute) {
  Result r;
  r.mode = "oracle";
  MinuteEval eval{m};
  for (double lambda : per_minute) {
    const int n = OracleReplicas(m, lambda);
    r.replica_hours += n / 60.0;
    r.violation_minutes += eval.Violates(lambda, n);
    ++r.minutes;
  }
  return r;
}

// Violation minutes of a per-minute replica schedule, backlog carried (MinuteEval).
int Violations(const ReplicaModel& m, const std::vector<double>& per_minute,
               const std::vector<int>& n) {
  MinuteEval eval{m};
  int v = 0;
  for (size_t i = 0; i < n.size(); ++i) v += eval.Violates(per_minute[i], n[i]);
  return v;
}

// The oracle allowed `budget` violation minutes (the HPA's count): from the oracle's schedule,
// one replica at a time is taken from the minute where that keeps the violations (backlog
// carried) within the budget, the busiest minute first, until none can be. A feasible hindsight
// schedule, so an upper bound on the fewest replica-hours with that many violations: what a
// causal policy would have to beat to spend its violation minutes as well.
Result BudgetOracle(const ReplicaModel& m, const std::vector<double>& per_minute, int budget) {
  std::vector<int> n;
  for (double lambda : per_minute) n.push_back(OracleReplicas(m, lambda));
  for (bool cut = true; cut;) {
    cut = false;
    std::vector<size_t> order(n.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return n[a] > n[b]; });
    for (size_t i : order) {
      if (n[i] <= 1) continue;
      --n[i];
      if (Violations(m, per_minute, n) <= budget) {
        cut = true;
        break;
      }
      ++n[i];
    }
  }
  Result r;
  r.mode = "oracle-hpa-violations";
  for (int k : n) r.replica_hours += k / 60.0;
  r.violation_minutes = Violations(m, per_minute, n);
  r.minutes = static_cast<int>(n.size());
  return r;
}

// The fewest replica-hours of *any* schedule - causal or not, knowing every minute in advance -
// with at most `budget` violation minutes under this replay's own rules. In Replay a replica
// requested at tick t is paid from second t - 1 and ready from second t + startup_s, a multiple
// of 15, and one removed at tick t goes from second t - 1: so the ready count is constant over
// each 15 s slot but for the slot's last second, every added replica pays at least startup_s
// before it serves, none can be ready before the first tick's request (15 s + startup_s), and a
// removal saves at most one second of its slot. The programme charges each slot its count, each
// addition startup_s, and credits each removal one second: at most what Replay charges the same
// schedule. Relaxed where that only helps the schedule (a minute passes on the slots' mean,
// which the last seconds' removals only lower; backlog ignored; the last, partial minute may
// violate freely), so no policy in this replay pays less with these many violation minutes.
// State: (ready count, its sum over the minute's slots so far, violation minutes used); a
// minute passes when P99(lambda / mean ready) <= 2 s. Unlike the oracles above it pays the
// start-up and lets the count change within a minute.
Result LowerBound(const ReplicaModel& m, const std::vector<double>& per_minute, size_t seconds,
                  int budget, double startup_s) {
  constexpr double kInf = 1e300;
  const int n0 = OracleReplicas(m, per_minute.empty() ? 0 : per_minute[0]);  // as Replay starts
  constexpr int kSlotsPerMinute = 4;
  int nmax = n0;
  for (double lambda : per_minute) nmax = std::max(nmax, OracleReplicas(m, lambda));
  const int q_max = kSlotsPerMinute * nmax, v_max = std::max(0, budget);
  const auto at = [&](int n, int q, int v) {
    return (static_cast<size_t>(n) * (q_max + 1) + q) * (v_max + 1) + v;
  };
  const size_t size = at(nmax, q_max, v_max) + 1;
  std::vector<double> cost(size, kInf), best(size), next(size);
  for (int v = 0; v <= v_max; ++v) cost[at(n0, 0, v)] = v == 0 ? 0 : kInf;
  const size_t slots = static_cast<size_t>(std::ceil(static_cast<double>(seconds) / kPeriodS));
  const double first_add_s = kPeriodS + startup_s;
  for (size_t k = 0; k < slots; ++k) {
    const double t0 = k * kPeriodS, w = std::min(kPeriodS, seconds - t0);
    const int cap = k == 0 ? n0 : (t0 < first_add_s ? n0 : nmax), floor_n = k == 0 ? n0 : 0;
    // best[n'] = min over n of cost[n] + startup_s * max(0, n' - n) - max(0, n - n'): a prefix
    // minimum of cost[n] - startup_s * n for n <= n', a suffix minimum of cost[n] - n for n > n'.
    for (int q = 0; q <= q_max; ++q) {
      for (int v = 0; v <= v_max; ++v) {
        double pre = kInf, suf = kInf;
        for (int n = 0; n <= nmax; ++n) {
          pre = std::min(pre, cost[at(n, q, v)] - startup_s * n);
          best[at(n, q, v)] = pre + startup_s * n;
        }
        for (int n = nmax; n >= 0; --n) {
          best[at(n, q, v)] = std::min(best[at(n, q, v)], suf + n);
          suf = std::min(suf, cost[at(n, q, v)] - n);
        }
      }
    }
    std::fill(next.begin(), next.end(), kInf);
    for (int n = floor_n; n <= cap; ++n) {
      for (int q = 0; q + n <= q_max; ++q) {
        for (int v = 0; v <= v_max; ++v) {
          const double c = best[at(n, q, v)];
          if (c < kInf) next[at(n, q + n, v)] = std::min(next[at(n, q + n, v)], c + w * n);
        }
      }
    }
    cost.swap(next);
    const bool minute_end = (k + 1) % kSlotsPerMinute == 0 || k + 1 == slots;
    if (!minute_end) continue;
    const size_t minute = k / kSlotsPerMinute;
    const bool partial = (minute + 1) * 60 > seconds;
    const double lambda = per_minute[minute];
    std::fill(next.begin(), next.end(), kInf);
    for (int n = 0; n <= nmax; ++n) {
      for (int q = 0; q <= q_max; ++q) {
        const double mean = static_cast<double>(q) / kSlotsPerMinute;
        const bool ok = partial || (mean > 0 ? m.P99(lambda / mean) <= kSloS : lambda <= 0);
        for (int v = 0; v <= v_max; ++v) {
          const double c = cost[at(n, q, v)];
          if (c >= kInf) continue;
          const int v2 = v + (ok ? 0 : 1);
          if (v2 <= v_max) next[at(n, 0, v2)] = std::min(next[at(n, 0, v2)], c);
        }
      }
    }
    cost.swap(next);
  }
  double lowest = kInf;
  for (double c : cost) lowest = std::min(lowest, c);
  Result r;
  r.mode = "lower-bound-hpa-violations";
  r.replica_hours = lowest / 3600;
  r.violation_minutes = budget;
  r.minutes = static_cast<int>(per_minute.size());
  return r;
}

Result Replay(const Config& cfg, as::Mode mode, const ReplicaModel& m,
              const std::vector<double>& counts, const std::vector<double>& per_minute) {
  Result res;
  res.mode = std::string(as::ModeName(mode));
  const double r_target = m.r_slo / 1.1;
  std::unique_ptr<as::Autoscaler> scaler;
  const int max_replicas = 1000;
  if (mode == as::Mode::kHpa) {
    as::HpaOptions o;
    o.max_replicas = max_replicas;
    scaler = *as::NewHpaAutoscaler(o);
  } else if (mode == as::Mode::kSeed) {
    as::SeedOptions o;
    o.max_replicas = max_replicas;
    o.cpu_target = r_target / m.mu;
    o.latency_target_s = m.P95(r_target);
    o.error_rate_target = std::max(1e-3, m.ErrorRate(r_target));
    scaler = *as::NewSeedAutoscaler(o);
  } else {
    as::PredictiveOptions o = cfg.predictive;
    o.max_replicas = max_replicas;
    o.capacity_rps_per_replica = m.r_slo;
    o.horizon_s = cfg.startup_s + kPeriodS;
    auto p = as::NewPredictiveAutoscaler(o);
    if (!p.ok()) {
      std::fprintf(stderr, "autoscale_replay: %s\n", p.status().ToString().c_str());
      std::exit(2);
    }
    scaler = std::move(*p);
  }
  seedance::engine::PeriodController period_controller;
  const bool adaptive = cfg.adaptive && mode != as::Mode::kHpa;

  const int n = static_cast<int>(counts.size());
  int ready = OracleReplicas(m, per_minute.empty() ? 0 : per_minute[0]);
  std::deque<double> starting;  // ready times of replicas being started
  double next_tick = kPeriodS, paid_s = 0, ready_s_in_minute = 0;
  MinuteEval eval{m};
  double last_p99 = 0;
  for (int s = 0; s < n; ++s) {
    const double t_end = s + 1;
    while (!starting.empty() && starting.front() <= s) {
      starting.pop_front();
      ++ready;
    }
    if (adaptive) period_controller.ObserveQps(t_end, counts[s], 1.0);
    while (next_tick <= t_end + 1e-9) {
      const double now = next_tick;
      double sum = 0;
      int k = 0;
      for (int i = static_cast<int>(now) - 1; i >= 0 && i >= now - cfg.metric_window_s; --i, ++k) {
        sum += counts[i];
      }
      const double rate = k ? sum / k : 0;
      const int spec = ready + static_cast<int>(starting.size());
      as::Observation obs;
      obs.now_s = now;
      obs.current_replicas = spec;
      obs.arrival_rate_rps = rate;
      obs.metrics.push_back({"requests_per_second", rate / std::max(1, spec), r_target});
      const double r = ready > 0 ? rate / ready : INFINITY;
      obs.cpu_utilization = std::min(1.0, r / m.mu);
      const double wait = ready > 0 ? eval.backlog / (ready * m.mu) : 1e3;
      obs.p95_latency_s = std::min(1e3, m.P95(r) + wait);
      obs.error_rate = wait > kSloS ? 1.0 : m.ErrorRate(r);
      const as::Decision d = scaler->Decide(obs);
      ++res.decisions;
      if (d.replicas != spec) ++res.changes;
      for (int add = spec; add < d.replicas; ++add) starting.push_back(now + cfg.startup_s);
      for (int del = spec; del > d.replicas; --del) {
        if (!starting.empty()) {
          starting.pop_back();
        } else {
          --ready;
        }
      }
      double period = kPeriodS;
      if (adaptive) {
        last_p99 = std::isfinite(m.P99(r)) ? m.P99(r) + wait : 10 * kSloS;
        period = period_controller.Decide(now, (kSloS - last_p99) / kSloS).period_s;
      }
      next_tick = now + period;
    }
    paid_s += ready + static_cast<double>(starting.size());
    ready_s_in_minute += ready;
    if ((s + 1) % 60 == 0 || s + 1 == n) {
      const int len = (s % 60) + 1;
      const double lambda = per_minute[s / 60];
      res.violation_minutes += eval.Violates(lambda, ready_s_in_minute / len);
      ++res.minutes;
      ready_s_in_minute = 0;
    }
  }
  res.replica_hours = paid_s / 3600;
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--json") {
      cfg.json = true;
    } else if (a == "--model" && has) {
      cfg.model = argv[++i];
    } else if (a == "--gpu" && has) {
      cfg.gpu = argv[++i];
    } else if (a == "--tp" && has) {
      cfg.tp = std::atoi(argv[++i]);
    } else if (a == "--startup-s" && has) {
      cfg.startup_s = std::atof(argv[++i]);
    } else if (a == "--metric-window-s" && has) {
      cfg.metric_window_s = std::atof(argv[++i]);
    } else if (a == "--headroom-quantile" && has) {
      cfg.predictive.headroom_quantile = std::atof(argv[++i]);
    } else if (a == "--trend-window-s" && has) {
      cfg.predictive.trend_window_s = std::atof(argv[++i]);
    } else if (a == "--error-window-s" && has) {
      cfg.predictive.error_window_s = std::atof(argv[++i]);
    } else if (a == "--down-window-s" && has) {
      cfg.predictive.scale_down_window_s = std::atof(argv[++i]);
    } else if (a == "--period" && has) {
      const std::string p = argv[++i];
      if (p != "fixed" && p != "adaptive") {
        std::fprintf(stderr, "autoscale_replay: --period: got '%s', expected fixed|adaptive\n",
                     p.c_str());
        return 2;
      }
      cfg.adaptive = p == "adaptive";
    } else {
      std::fprintf(stderr,
                   "usage: autoscale_replay [--model M] [--gpu G] [--tp N] [--startup-s S] "
                   "[--metric-window-s S] [--period fixed|adaptive] [--json]\n"
                   "       predictive: [--headroom-quantile Q] [--trend-window-s S] "
                   "[--error-window-s S] [--down-window-s S]\n");
      return 2;
    }
  }
  if (cfg.tp < 1 || !(cfg.startup_s >= 0) || !(cfg.metric_window_s >= 1)) {
    std::fprintf(stderr,
                 "autoscale_replay: --tp must be >= 1, --startup-s >= 0, --metric-window-s >= 1\n");
    return 2;
  }
  auto model = md::LookupModel(cfg.model);
  auto gpu = md::LookupGpu(cfg.gpu);
  if (!model.ok() || !gpu.ok()) {
    std::fprintf(stderr, "autoscale_replay: %s\n",
                 (!model.ok() ? model.status() : gpu.status()).ToString().c_str());
    return 2;
  }
  const md::CostModel cm(*model, *gpu, cfg.tp);
  const std::string dir = seedance::trace::DataDir() + "/llm-traces/azure-2023/";
  // Every trace is read before anything is printed: with none there is nothing to report, and
  // that is a failure (exit 1), not an empty success.
  std::vector<std::pair<std::string, sv::RequestTrace>> traces;
  for (const char* name : {"conv", "code"}) {
    const std::string path = dir + "AzureLLMInferenceTrace_" + name + ".csv";
    auto trace = sv::ReadRequestTrace(path);
    if (!trace.ok()) {
      std::fprintf(stderr,
                   "autoscale_replay: skipping %s: %s (public data missing? see "
                   "trace::DataDir(), SEEDANCE_DATA_DIR)\n",
                   name, trace.status().ToString().c_str());
      continue;
    }
    traces.emplace_back(name, std::move(*trace));
  }
  if (traces.empty()) {
    std::fprintf(stderr,
                 "autoscale_replay: no trace under %s: nothing replayed, nothing measured\n",
                 dir.c_str());
    return 1;
  }
  if (cfg.json) {
    std::printf("{\"model\": \"%s\", \"gpu\": \"%s\", \"tp\": %d, \"startup_s\": %g, \"traces\": [",
                cfg.model.c_str(), cfg.gpu.c_str(), cfg.tp, cfg.startup_s);
  } else {
    std::printf("replica = %s on %d x %s; start-up %g s; metric window %g s; period %s\n\n",
                cfg.model.c_str(), cfg.tp, cfg.gpu.c_str(), cfg.startup_s, cfg.metric_window_s,
                cfg.adaptive ? "adaptive (seed, predictive)" : "15 s");
  }
  bool first = true;
  for (auto& [name_string, trace_value] : traces) {
    const char* name = name_string.c_str();
    const sv::RequestTrace* trace = &trace_value;
    std::vector<double> counts(static_cast<size_t>(trace->requests.back().arrival_s) + 1, 0.0);
    for (const auto& r : trace->requests) counts[static_cast<size_t>(r.arrival_s)] += 1;
    std::vector<double> per_minute((counts.size() + 59) / 60, 0.0);
    for (size_t s = 0; s < counts.size(); ++s) per_minute[s / 60] += counts[s];
    for (size_t mi = 0; mi < per_minute.size(); ++mi) {
      const size_t len = std::min<size_t>(60, counts.size() - mi * 60);
      per_minute[mi] /= static_cast<double>(len);
    }
    const ReplicaModel m = Calibrate(*trace, cm);
    std::vector<Result> results;
    for (as::Mode mode : {as::Mode::kHpa, as::Mode::kSeed, as::Mode::kPredictive}) {
      results.push_back(Replay(cfg, mode, m, counts, per_minute));
    }
    results.push_back(Oracle(m, per_minute));
    results.push_back(BudgetOracle(m, per_minute, results[0].violation_minutes));
    results.push_back(
        LowerBound(m, per_minute, counts.size(), results[0].violation_minutes, cfg.startup_s));
    const Result& hpa = results[0];
    const Result& pred = results[2];
    const double vm_ratio =
        hpa.violation_minutes ? static_cast<double>(pred.violation_minutes) / hpa.violation_minutes
                              : (pred.violation_minutes ? INFINITY : 1.0);
    const double rh_ratio = pred.replica_hours / hpa.replica_hours;
    if (cfg.json) {
      std::printf(
          "%s\n {\"trace\": \"%s\", \"minutes\": %zu, \"mu_rps\": %.6f, \"r_slo_rps\": %.6f, "
          "\"calibration\": {",
          first ? "" : ",", name, per_minute.size(), m.mu, m.r_slo);
      // The replica model itself (rate -> TTFT p50 / p99), for
      // tools/analysis/autoscale_frontier.py.
      const std::pair<const char*, const std::vector<double>*> columns[] = {
          {"rate_rps", &m.rate}, {"ttft_p50_s", &m.p50}, {"ttft_p99_s", &m.p99}};
      for (size_t c = 0; c < 3; ++c) {
        std::printf("%s\"%s\": [", c ? ", " : "", columns[c].first);
        for (size_t i = 0; i < columns[c].second->size(); ++i) {
          std::printf("%s%.9g", i ? ", " : "", (*columns[c].second)[i]);
        }
        std::printf("]");
      }
      std::printf("},\n  \"results\": [");
      for (size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        std::printf(
            "%s\n  {\"mode\": \"%s\", \"violation_minutes\": %d, \"replica_hours\": %.3f, "
            "\"decisions\": %d, \"changes\": %d}",
            i ? "," : "", r.mode.c_str(), r.violation_minutes, r.replica_hours, r.decisions,
            r.changes);
      }
      std::printf(
          "],\n  \"predictive_over_hpa\": {\"violation_minutes\": %.3f, "
          "\"replica_hours\": %.3f}}",
          vm_ratio, rh_ratio);
    } else {
      std::printf(
          "Azure '%s': %zu minutes, mean %.2f req/s; one replica: saturation %.3f req/s, "
          "TTFT p99 <= 2 s up to %.3f req/s\n",
          name, per_minute.size(), static_cast<double>(trace->requests.size()) / counts.size(),
          m.mu, m.r_slo);
      std::printf("%-26s %16s %14s %10s %8s\n", "mode", "SLO-viol. min", "replica-hours",
                  "decisions", "changes");
      for (const Result& r : results) {
        std::printf("%-26s %9d / %-4d %14.2f %10d %8d\n", r.mode.c_str(), r.violation_minutes,
                    r.minutes, r.replica_hours, r.decisions, r.changes);
      }
      std::printf(
          "predictive / hpa: violation minutes %.3f, replica-hours %.3f (goal: <= 1 and "
          "<= 0.85)\n\n",
          vm_ratio, rh_ratio);
    }
    first = false;
  }
  if (cfg.json) std::printf("\n]}\n");
  return 0;
}
