// Replays the request rate of the Azure LLM inference traces (2023, Splitwise) through three
// autoscaler control loops and compares them (docs/clock.md, "Azure replay"):
//   fixed     every 10 s, replicas = ceil(qps / qps_per_replica), no change within tolerance
//             0.1 of the target, scale-down to the highest recommendation of the last 60 s
//   hpa       the Kubernetes HPA rule: every 15 s, no change within tolerance 0.1 of the target,
//             scale-up at most max(+100%, +4) per period, scale-down to the highest
//             recommendation of the last 300 s (stabilisation window)
//   seedance  the fixed loop's rule, but the period comes from PeriodController (SLA margin =
//             1 - qps / capacity)
//   seedance-min5  the same with the period bounded below by 5 s instead of 2 s
// All loops see the same signal: the mean request rate over the last 5 s at each tick.
// Reported: ticks (decisions evaluated), replica changes, reaction time to each load step of the
// trace (the time until capacity covers 90% of the new level), overload (requests beyond
// capacity, share of all requests) and replica-seconds.
//
//   build/bench/period_replay [--json] [--qps-per-replica 1]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>
#include <vector>

#include "seedance/engine/period_controller.h"
#include "seedance/trace/csv_reader.h"

namespace {

using seedance::engine::PeriodController;

// Per-second request counts of one trace, from its TIMESTAMP column.
bool LoadCounts(const std::string& path, std::vector<double>* counts, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = path + ": cannot open";
    return false;
  }
  std::string line;
  std::getline(in, line);  // header
  std::vector<double> ts;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    int y, mo, d, h, mi;
    double s;
    if (std::sscanf(line.c_str(), "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &s) != 6) {
      *err = path + ":" + std::to_string(lineno) + ": field 'TIMESTAMP': cannot parse";
      return false;
    }
    ts.push_back(d * 86400.0 + h * 3600.0 + mi * 60.0 + s);  // one month in the trace
  }
  if (ts.empty()) {
    *err = path + ": no rows";
    return false;
  }
  const double t0 = ts.front();
  counts->assign(static_cast<size_t>(ts.back() - t0) + 1, 0.0);
  for (double t : ts) (*counts)[static_cast<size_t>(t - t0)] += 1;
  return true;
}

struct Step {
  int t;
  double before, after;  // mean rate over the previous 60 s and the next 30 s
};

// Load steps: the next 30 s average at least 1.5x the previous 60 s and 2 req/s more; at least
// 120 s apart.
std::vector<Step> FindSteps(const std::vector<double>& c) {
  std::vector<Step> steps;
  int last = -1000;
  const int n = static_cast<int>(c.size());
  for (int t = 60; t + 30 <= n; ++t) {
    double a = 0, b = 0;
    for (int i = t - 60; i < t; ++i) a += c[i];
    for (int i = t; i < t + 30; ++i) b += c[i];
    a /= 60;
    b /= 30;
    if (b >= 1.5 * a && b - a >= 2 && t - last > 120) {
      steps.push_back({t, a, b});
      last = t;
    }
  }
  return steps;
}

struct Result {
  std::string policy;
  int ticks = 0, changes = 0;
  std::vector<double> reactions;
  double overload_pct = 0, replica_s = 0;
  double min_period = 1e9, max_period = 0;
};

enum class Policy { kFixed, kHpa, kSeedance, kSeedanceMin5 };

Result Replay(const std::vector<double>& c, const std::vector<Step>& steps, Policy policy,
              double per_replica) {
  Result r;
  r.policy = policy == Policy::kFixed      ? "fixed-10s"
             : policy == Policy::kHpa      ? "hpa-15s"
             : policy == Policy::kSeedance ? "seedance"
                                           : "seedance-min5";
  seedance::engine::PeriodOptions period_options;
  if (policy == Policy::kSeedanceMin5) period_options.min_period_s = 5;
  const bool adaptive = policy == Policy::kSeedance || policy == Policy::kSeedanceMin5;
  const int n = static_cast<int>(c.size());
  const double metric_window = 5, tolerance = 0.1;
  const double stabilization = policy == Policy::kHpa ? 300 : 60;
  PeriodController controller(period_options);
  int replicas = std::max(1, static_cast<int>(std::ceil(c[0] / per_replica)));
  double next_tick = policy == Policy::kHpa ? 15 : 10;
  std::deque<std::pair<double, int>> recommendations;  // (t, desired) for stabilisation
  std::vector<int> replicas_at(n);
  double overload = 0, total = 0;
  for (int s = 0; s < n; ++s) {
    // Second s covers (s, s + 1]; the tick at next_tick sees every second ending by then.
    const double t_end = s + 1;
    if (adaptive) controller.ObserveQps(t_end, c[s], 1.0);
    while (next_tick <= t_end + 1e-9) {
      const double now = next_tick;
      double qps = 0;
      int m = 0;
      for (int i = static_cast<int>(now) - 1; i >= 0 && i >= now - metric_window; --i, ++m)
        qps += c[i];
      qps = m ? qps / m : 0;
      const int desired = std::max(1, static_cast<int>(std::ceil(qps / per_replica)));
      int target = desired;
      {
        const double ratio = qps / (replicas * per_replica);
        if (std::fabs(ratio - 1) <= tolerance) target = replicas;
        recommendations.emplace_back(now, target);
        while (recommendations.front().first < now - stabilization) recommendations.pop_front();
        if (target < replicas) {
          int highest = target;
          for (const auto& [t, d] : recommendations) highest = std::max(highest, d);
          target = std::min(replicas, highest);
        }
        if (policy == Policy::kHpa && target > replicas) {
          target = std::min(target, std::max(2 * replicas, replicas + 4));
        }
      }
      ++r.ticks;
      if (target != replicas) ++r.changes;
      replicas = target;
      double period = 10;
      if (policy == Policy::kHpa) period = 15;
      if (adaptive) {
        const double margin = 1 - qps / (replicas * per_replica);
        period = controller.Decide(now, margin).period_s;
      }
      r.min_period = std::min(r.min_period, period);
      r.max_period = std::max(r.max_period, period);
      next_tick = now + period;
    }
    replicas_at[s] = replicas;
    overload += std::max(0.0, c[s] - replicas * per_replica);
    total += c[s];
    r.replica_s += replicas;
  }
  r.overload_pct = total > 0 ? 100 * overload / total : 0;
  for (const Step& st : steps) {
    double reaction = 300;
    for (int s = st.t; s < n && s < st.t + 300; ++s) {
      if (replicas_at[s] * per_replica >= 0.9 * st.after) {
        reaction = s - st.t + 1;
        break;
      }
    }
    r.reactions.push_back(reaction);
  }
  return r;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// A JSON number with one decimal, or null for NaN (no load steps to react to).
std::string JsonNumber(double x) {
  if (std::isnan(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", x);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  double per_replica = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--qps-per-replica") == 0 && i + 1 < argc) {
      per_replica = std::atof(argv[++i]);
      if (!(per_replica > 0)) {
        std::fprintf(stderr, "period_replay: --qps-per-replica must be > 0\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: period_replay [--json] [--qps-per-replica X]\n");
      return 2;
    }
  }
  const std::string dir = seedance::trace::DataDir() + "/llm-traces/azure-2023/";
  if (json) std::printf("{\"qps_per_replica\": %g, \"traces\": [", per_replica);
  bool first_trace = true;
  for (const char* name : {"conv", "code"}) {
    const std::string path = dir + "AzureLLMInferenceTrace_" + name + ".csv";
    std::vector<double> counts;
    std::string err;
    if (!LoadCounts(path, &counts, &err)) {
      std::fprintf(stderr, "period_replay: %s (public data missing? see trace::DataDir())\n",
                   err.c_str());
      return 1;
    }
    const std::vector<Step> steps = FindSteps(counts);
    std::vector<Result> results;
    for (Policy p : {Policy::kFixed, Policy::kHpa, Policy::kSeedance, Policy::kSeedanceMin5}) {
      results.push_back(Replay(counts, steps, p, per_replica));
    }
    if (json) {
      std::printf("%s\n {\"trace\": \"%s\", \"seconds\": %zu, \"load_steps\": %zu, \"results\": [",
                  first_trace ? "" : ",", name, counts.size(), steps.size());
      for (size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        std::printf(
            "%s\n  {\"policy\": \"%s\", \"ticks\": %d, \"replica_changes\": %d, "
            "\"reaction_median_s\": %s, \"reaction_p90_s\": %s, \"overload_pct\": %.2f, "
            "\"replica_seconds\": %.0f, \"period_min_s\": %.2f, \"period_max_s\": %.2f}",
            i ? "," : "", r.policy.c_str(), r.ticks, r.changes,
            JsonNumber(Quantile(r.reactions, 0.5)).c_str(),
            JsonNumber(Quantile(r.reactions, 0.9)).c_str(), r.overload_pct, r.replica_s,
            r.min_period, r.max_period);
      }
      std::printf("]}");
    } else {
      std::printf("Azure LLM trace '%s': %zu s, %zu load steps, %g req/s per replica\n", name,
                  counts.size(), steps.size(), per_replica);
      std::printf("%-14s %7s %8s %14s %11s %10s %12s %12s\n", "policy", "ticks", "changes",
                  "reaction_med_s", "reaction_p90", "overload%", "replica_s", "period_s");
      for (const Result& r : results) {
        std::printf("%-14s %7d %8d %14.1f %11.1f %10.2f %12.0f %5.1f-%-5.1f\n", r.policy.c_str(),
                    r.ticks, r.changes, Quantile(r.reactions, 0.5), Quantile(r.reactions, 0.9),
                    r.overload_pct, r.replica_s, r.min_period, r.max_period);
      }
      std::printf("\n");
    }
    first_trace = false;
  }
  if (json) std::printf("\n]}\n");
  return 0;
}
