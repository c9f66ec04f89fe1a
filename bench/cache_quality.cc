// Seedance's prewarm-aware cache policy (seedance/cache/prewarm.h) on every shipped cache trace
// (../shared/data/cache-traces; docs/cache.md, "Seedance's policy and prewarming"; issue 40).
//
// Quality: each trace at the cache sizes --sizes, fractions of its distinct objects (of its
// distinct bytes for the byte-sized CloudPhysics trace): the miss ratio of each policy, the best
// of lru, arc, lirs, s3fifo, wtinylfu and sieve, and seedance's ratio to that best (the target
// is <= 1.02). The "set" column says whether the trace was used to tune Seedance ("tune") or
// only to confirm it afterwards ("confirm").
//
// Restart: each trace split at 50%; a Seedance cache runs the first half; then the hit ratio over
// the first 10% of the second half for "steady" (the same cache goes on), "cold" (a new empty
// cache) and "prewarmed" (a new cache that first fetches what the first cache's saved history
// ranks highest); recovery = (prewarmed - cold) / (steady - cold) (target >= 0.5).
//
//   build/bench/cache_quality [--traces gli,P6] [--sizes 0.01,0.05,0.1,0.25]
//       [--policies lru,...,seedance] [--no-restart] [--csv OUT]
// Exit status: 0; 2 for a bad flag or an unknown policy; 1 when a trace cannot be read.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "seedance/cache/policy.h"
#include "seedance/cache/prewarm.h"
#include "seedance/cache/trace.h"
#include "seedance/trace/csv_reader.h"

namespace {

using seedance::cache::Request;
using seedance::cache::TraceFormat;

struct TraceSpec {
  const char* name;
  const char* file;  // under cache-traces/
  TraceFormat format;
  bool bytes;  // byte-sized cache
  bool tune;   // used while tuning Seedance (else only to confirm)
};

// The tuning set was fixed before any Seedance run: a few traces of each kind.
const std::vector<TraceSpec>& Traces() {
  static const std::vector<TraceSpec> traces = {
      {"OLTP", "arc/OLTP.lis.zst", TraceFormat::kLis, false, true},
      {"P3", "arc/P3.lis.zst", TraceFormat::kLis, false, false},
      {"P6", "arc/P6.lis.zst", TraceFormat::kLis, false, false},
      {"2_pools", "lirs/2_pools.trace.gz", TraceFormat::kLirs, false, true},
      {"backf", "lirs/backf.trace.gz", TraceFormat::kLirs, false, false},
      {"cpp", "lirs/cpp.trace.gz", TraceFormat::kLirs, false, true},
      {"cs", "lirs/cs.trace.gz", TraceFormat::kLirs, false, false},
      {"gli", "lirs/gli.trace.gz", TraceFormat::kLirs, false, true},
      {"loop", "lirs/loop.trace.gz", TraceFormat::kLirs, false, true},
      {"multi1", "lirs/multi1.trace.gz", TraceFormat::kLirs, false, false},
      {"multi2", "lirs/multi2.trace.gz", TraceFormat::kLirs, false, false},
      {"multi3", "lirs/multi3.trace.gz", TraceFormat::kLirs, false, true},
      {"ps", "lirs/ps.trace.gz", TraceFormat::kLirs, false, false},
      {"scan", "lirs/scan.trace.gz", TraceFormat::kLirs, false, false},
      {"sprite", "lirs/sprite.trace.gz", TraceFormat::kLirs, false, true},
      {"zigzag", "lirs/zigzag.trace.gz", TraceFormat::kLirs, false, false},
      {"orm-busy", "cache2k/orm-busy.trace.xz", TraceFormat::kCache2k, false, false},
      {"orm-night", "cache2k/orm-night.trace.xz", TraceFormat::kCache2k, false, false},
      {"web07", "cache2k/web07.trace.xz", TraceFormat::kCache2k, false, true},
      {"cloudphysics", "libcachesim-cloudphysics/cloudPhysicsIO.oracleGeneral.bin",
       TraceFormat::kOracleGeneral, true, false},
  };
  return traces;
}

const std::vector<std::string> kPublished = {"lru", "arc", "lirs", "s3fifo", "wtinylfu", "sieve"};

struct Run {
  int64_t requests = 0;
  int64_t misses = 0;
  double seconds = 0;
  double miss_ratio() const { return requests == 0 ? 0 : double(misses) / double(requests); }
};

// Requests [begin, end) through `p`; byte mode skips size-0 requests as Simulate does.
Run Replay(seedance::cache::Policy& p, const std::vector<Request>& t, size_t begin, size_t end,
           bool bytes) {
  Run run;
  const auto start = std::chrono::steady_clock::now();
  Request r;
  for (size_t i = begin; i < end; ++i) {
    r = t[i];
    if (!bytes) {
      r.size = 1;
    } else if (r.size == 0) {
      continue;
    }
    ++run.requests;
    if (!p.Access(r)) ++run.misses;
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

// Seedance's options (--seedance-* flags: for exploring; the tables use the defaults).
seedance::cache::SeedanceOptions g_options;

std::unique_ptr<seedance::cache::Policy> MustPolicy(const std::string& name, int64_t capacity) {
  if (name == "seedance") return seedance::cache::NewSeedanceCache(capacity, g_options);
  auto p = seedance::cache::NewPolicy(name, capacity);
  if (!p.ok()) {
    std::fprintf(stderr, "cache_quality: %s\n", std::string(p.status().message()).c_str());
    std::exit(2);
  }
  return *std::move(p);
}

// Distinct objects, or distinct bytes (each object's first size) in byte mode.
int64_t WorkingSet(const std::vector<Request>& t, bool bytes) {
  absl::flat_hash_set<uint64_t> seen;
  int64_t total = 0;
  for (const Request& r : t) {
    if (seen.insert(r.id).second) total += bytes ? r.size : 1;
  }
  return total;
}

struct Restart {
  double steady = 0, cold = 0, prewarmed = 0;
  int64_t prefetched = 0;
};

Restart RunRestart(const std::vector<Request>& t, int64_t capacity, bool bytes) {
  const size_t half = t.size() / 2;
  const size_t end = half + (t.size() - half) / 10;
  auto first = seedance::cache::NewSeedanceCache(capacity, g_options);
  Replay(*first, t, 0, half, bytes);
  const std::string saved = seedance::cache::SerializeHistory(first->SaveHistory());
  auto history = seedance::cache::ParseHistory(saved, "history");
  if (!history.ok()) {
    std::fprintf(stderr, "cache_quality: %s\n", std::string(history.status().message()).c_str());
    std::exit(1);
  }
  Restart out;
  out.steady = 1 - Replay(*first, t, half, end, bytes).miss_ratio();
  auto cold = seedance::cache::NewSeedanceCache(capacity, g_options);
  out.cold = 1 - Replay(*cold, t, half, end, bytes).miss_ratio();
  auto warm = seedance::cache::NewSeedanceCache(capacity, g_options);
  out.prefetched = warm->PrewarmFromHistory(*history);
  out.prewarmed = 1 - Replay(*warm, t, half, end, bytes).miss_ratio();
  return out;
}

bool Wanted(const std::vector<std::string>& filter, const std::string& name) {
  return filter.empty() || std::find(filter.begin(), filter.end(), name) != filter.end();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Seedance's cache policy against the published ones on the shipped traces"};
  std::vector<std::string> filter;
  std::vector<double> sizes = {0.01, 0.05, 0.10, 0.25};
  std::vector<std::string> policies = kPublished;
  policies.push_back("seedance");
  bool no_restart = false;
  std::string csv_path;
  app.add_option("--traces", filter, "only these traces (names as printed)")->delimiter(',');
  app.add_option("--sizes", sizes, "cache sizes, fractions of the working set")
      ->delimiter(',')
      ->check(CLI::Range(1e-9, 1.0));
  app.add_option("--policies", policies, "policies to run (seedance's ratio needs all six)")
      ->delimiter(',');
  app.add_flag("--no-restart", no_restart, "skip the restart table");
  app.add_option("--csv", csv_path, "also write the quality rows as CSV here");
  auto& o = g_options;
  app.add_option("--seedance-initial-expert", o.initial_expert)
      ->check(CLI::IsMember(seedance::cache::SeedanceExperts()));
  app.add_option("--seedance-shadow-objects", o.shadow_objects)->check(CLI::PositiveNumber);
  app.add_option("--seedance-min-epoch", o.min_epoch_requests)->check(CLI::PositiveNumber);
  app.add_option("--seedance-epoch-caches", o.epoch_caches)->check(CLI::PositiveNumber);
  app.add_option("--seedance-window-epochs", o.window_epochs)->check(CLI::Range(1.0, 1e9));
  app.add_option("--seedance-margin", o.switch_margin)->check(CLI::NonNegativeNumber);
  app.add_option("--seedance-sigmas", o.switch_sigmas)->check(CLI::NonNegativeNumber);
  app.add_option("--seedance-replay-caches", o.replay_caches)->check(CLI::NonNegativeNumber);
  app.add_flag("--seedance-keep-unshadowed", o.keep_unshadowed);
  app.add_option("--seedance-half-life", o.history_half_life_caches)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  for (const std::string& p : policies) MustPolicy(p, 1);

  const std::string dir = seedance::trace::DataDir() + "/cache-traces/";
  FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
  if (!csv_path.empty() && csv == nullptr) {
    std::fprintf(stderr, "cache_quality: cannot write %s\n", csv_path.c_str());
    return 1;
  }
  if (csv != nullptr)
    std::fprintf(csv, "trace,set,fraction,capacity,policy,requests,misses,seconds\n");
  std::printf("%-12s %-7s %5s %9s", "trace", "set", "size", "capacity");
  for (const std::string& p : policies) std::printf(" %8s", p.c_str());
  std::printf(" %8s %7s %s\n", "best6", "ratio", "expert/switches");
  std::vector<std::string> restart_rows;
  for (const TraceSpec& spec : Traces()) {
    if (!Wanted(filter, spec.name)) continue;
    auto t = seedance::cache::ReadTrace(dir + spec.file, spec.format);
    if (!t.ok()) {
      std::fprintf(stderr, "cache_quality: %s\n", std::string(t.status().message()).c_str());
      return 1;
    }
    const int64_t ws = WorkingSet(*t, spec.bytes);
    for (double f : sizes) {
      const int64_t capacity = std::max<int64_t>(1, int64_t(f * double(ws)));
      std::printf("%-12s %-7s %4.0f%% %9lld", spec.name, spec.tune ? "tune" : "confirm", f * 100,
                  static_cast<long long>(capacity));
      double best = 2, ours = -1;
      std::string expert;
      for (const std::string& name : policies) {
        auto p = MustPolicy(name, capacity);
        const Run run = Replay(*p, *t, 0, t->size(), spec.bytes);
        std::printf(" %8.4f", run.miss_ratio());
        if (std::find(kPublished.begin(), kPublished.end(), name) != kPublished.end()) {
          best = std::min(best, run.miss_ratio());
        }
        if (name == "seedance") {
          ours = run.miss_ratio();
          auto* s = static_cast<seedance::cache::PrewarmingCache*>(p.get());
          expert = std::string(s->expert()) + "/" + std::to_string(s->prefetch_stats().switches) +
                   " " + std::to_string(double(run.requests) / run.seconds / 1e6).substr(0, 4) +
                   "M/s";
        }
        if (csv != nullptr) {
          std::fprintf(csv, "%s,%s,%g,%lld,%s,%lld,%lld,%.3f\n", spec.name,
                       spec.tune ? "tune" : "confirm", f, static_cast<long long>(capacity),
                       name.c_str(), static_cast<long long>(run.requests),
                       static_cast<long long>(run.misses), run.seconds);
        }
      }
      std::printf(" %8.4f", best);
      if (ours >= 0 && best > 0) {
        std::printf(" %7.4f%s %s\n", ours / best, ours / best > 1.02 ? "*" : " ", expert.c_str());
      } else {
        std::printf(" %7s\n", "-");
      }
      std::fflush(stdout);
      if (!no_restart) {
        const Restart r = RunRestart(*t, capacity, spec.bytes);
        const double gap = r.steady - r.cold;
        char line[256];
        std::snprintf(
            line, sizeof line, "%-12s %-7s %4.0f%% %9lld %8.4f %8.4f %9.4f %9lld %9s", spec.name,
            spec.tune ? "tune" : "confirm", f * 100, static_cast<long long>(capacity), r.steady,
            r.cold, r.prewarmed, static_cast<long long>(r.prefetched),
            gap > 1e-9 ? std::to_string((r.prewarmed - r.cold) / gap).substr(0, 6).c_str() : "n/a");
        restart_rows.push_back(line);
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);
  if (!restart_rows.empty()) {
    std::printf("\nrestart at 50%%: hit ratio over the next 10%% of the requests\n");
    std::printf("%-12s %-7s %5s %9s %8s %8s %9s %9s %9s\n", "trace", "set", "size", "capacity",
                "steady", "cold", "prewarmed", "prefetch", "recovery");
    for (const std::string& l : restart_rows) std::printf("%s\n", l.c_str());
  }
  return 0;
}
