// Replay speed of the cache-policy simulator (issue 40's "Speed" line: >= 10 M requests/s for LRU
// and >= 3 M/s for the adaptive policies on one core), side by side with a floor: a plain
// std::unordered_map + std::list LRU written here, with the simulator's byte-sized semantics.
//
// Each shipped trace is read and decompressed once, before any timing; a run replays it through
// a new cache of one policy, exactly as cache::Simulate does (Simulate itself is what is timed),
// on this one thread. A trace shorter than --min-requests is replayed several times per run (a
// new cache each time). Each run times the floor and then the policy back to back; the figures
// are medians of --runs runs: the policy's M requests/s, the floor's, and the ratio of each
// run's pair (robust to a shared machine's changing load). The floor's miss count must equal the
// lru policy's (it is the same algorithm), which the program checks. --clock cpu times with this
// thread's CPU clock instead of the wall clock: on a machine shared with other work it leaves out
// the time the thread waited for a core (not the slowdown of sharing the caches).
//
//   build/bench/cache_replay [--traces P6,orm-busy,cloudphysics] [--policies lru,arc,...]
//       [--fraction 0.1] [--runs 5] [--min-requests 2000000] [--clock wall|cpu] [--csv OUT]
// Exit status: 0; 1 when a trace cannot be read or the floor disagrees with lru; 2 for bad flags.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "seedance/cache/policy.h"
#include "seedance/cache/simulate.h"
#include "seedance/cache/trace.h"
#include "seedance/trace/csv_reader.h"

namespace {

namespace cache = seedance::cache;

struct TraceSpec {
  const char* name;
  const char* file;  // under cache-traces/
  cache::TraceFormat format;
  cache::CacheUnit unit;
};

const std::vector<TraceSpec>& Specs() {
  static const std::vector<TraceSpec> specs = {
      {"P6", "arc/P6.lis.zst", cache::TraceFormat::kLis, cache::CacheUnit::kObjects},
      {"orm-busy", "cache2k/orm-busy.trace.xz", cache::TraceFormat::kCache2k,
       cache::CacheUnit::kObjects},
      {"cloudphysics", "libcachesim-cloudphysics/cloudPhysicsIO.oracleGeneral.bin",
       cache::TraceFormat::kOracleGeneral, cache::CacheUnit::kBytes},
  };
  return specs;
}

// The floor: the textbook LRU, a hash map from id to a node of a doubly linked list. Byte-sized
// as the simulator: an object larger than the cache is never admitted; a miss evicts from the
// back until the object fits.
class FloorLru {
 public:
  explicit FloorLru(int64_t capacity) : capacity_(capacity) {}
  bool Access(uint64_t id, int64_t size) {
    auto it = index_.find(id);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return true;
    }
    if (size > capacity_) return false;
    while (used_ + size > capacity_) {
      used_ -= order_.back().second;
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    order_.emplace_front(id, size);
    index_.emplace(id, order_.begin());
    used_ += size;
    return false;
  }

 private:
  int64_t capacity_;
  int64_t used_ = 0;
  std::list<std::pair<uint64_t, int64_t>> order_;
  std::unordered_map<uint64_t, std::list<std::pair<uint64_t, int64_t>>::iterator> index_;
};

// The floor replayed like Simulate: size 1 per object, or the request's size (0 skipped).
int64_t FloorReplay(const std::vector<cache::Request>& trace, int64_t capacity,
                    cache::CacheUnit unit) {
  FloorLru lru(capacity);
  int64_t misses = 0;
  for (const cache::Request& r : trace) {
    if (unit == cache::CacheUnit::kBytes && r.size == 0) continue;
    if (!lru.Access(r.id, unit == cache::CacheUnit::kObjects ? 1 : r.size)) ++misses;
  }
  return misses;
}

struct Result {
  std::string trace, policy;
  int64_t capacity = 0;
  double mreq_per_s = 0;        // median over the runs
  double floor_mreq_per_s = 0;  // the floor's median over the same runs
  double ratio = 0;             // median over the runs of (this run's rate / the floor's)
  int64_t misses = 0;           // of one replay
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Seconds on the wall clock, or on this thread's CPU clock.
double Now(bool cpu) {
  if (!cpu) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// M requests/s of `passes` passes of `replay` (one pass over the trace, returning its misses).
template <typename Replay>
double Rate(const Replay& replay, size_t requests, int passes, bool cpu, int64_t* misses) {
  const double start = Now(cpu);
  for (int p = 0; p < passes; ++p) *misses = replay();
  const double s = Now(cpu) - start;
  return static_cast<double>(requests) * passes / s / 1e6;
}

// `runs` runs, each timing the floor and then `replay` back to back, so that the ratio of a pair
// holds even when the machine's load changes between runs (a shared machine).
template <typename Floor, typename Replay>
Result Time(const Floor& floor, const Replay& replay, size_t requests, int runs, int passes,
            bool cpu) {
  Result r;
  std::vector<double> rates, floors, ratios;
  int64_t floor_misses = 0;
  for (int run = 0; run < runs; ++run) {
    floors.push_back(Rate(floor, requests, passes, cpu, &floor_misses));
    rates.push_back(Rate(replay, requests, passes, cpu, &r.misses));
    ratios.push_back(rates.back() / floors.back());
  }
  r.mreq_per_s = Median(rates);
  r.floor_mreq_per_s = Median(floors);
  r.ratio = Median(ratios);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Replay speed of the cache-policy simulator against a plain unordered_map+list LRU"};
  std::string traces = "P6,orm-busy,cloudphysics";
  std::string policies_flag = "all";
  double fraction = 0.1;
  int runs = 5;
  int64_t min_requests = 2'000'000;
  std::string clock = "wall";
  std::string csv;
  app.add_option("--traces", traces, "comma list of P6, orm-busy, cloudphysics");
  app.add_option("--policies", policies_flag, "comma list of policies, or all");
  app.add_option("--fraction", fraction, "cache size, a fraction of the working set")
      ->check(CLI::Range(1e-6, 1.0));
  app.add_option("--runs", runs, "runs per figure (the median is reported)")
      ->check(CLI::Range(1, 101));
  app.add_option("--min-requests", min_requests, "replay a short trace until this many requests")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--clock", clock, "time with the wall clock or this thread's CPU clock")
      ->check(CLI::IsMember({"wall", "cpu"}));
  app.add_option("--csv", csv, "also write the table as CSV to this file");
  CLI11_PARSE(app, argc, argv);

  auto policies = cache::ParsePolicyList(policies_flag);
  if (!policies.ok()) {
    std::fprintf(stderr, "--policies: %s\n", std::string(policies.status().message()).c_str());
    return 2;
  }
  std::vector<Result> results;
  std::printf("%-13s %-9s %14s %10s %10s %10s %9s %10s\n", "trace", "policy", "capacity",
              "requests", "Mreq/s", "floor", "x floor", "misses");
  const std::vector<std::string> trace_names = absl::StrSplit(traces, ',');
  for (const std::string& name : trace_names) {
    auto spec = std::find_if(Specs().begin(), Specs().end(),
                             [&](const TraceSpec& s) { return name == s.name; });
    if (spec == Specs().end()) {
      std::fprintf(stderr, "--traces: unknown trace '%s'\n", name.c_str());
      return 2;
    }
    const std::string path = seedance::trace::DataDir() + "/cache-traces/" + spec->file;
    auto trace = cache::ReadTrace(path, spec->format);
    if (!trace.ok()) {
      std::fprintf(stderr, "%s\n", std::string(trace.status().message()).c_str());
      return 1;
    }
    cache::ComputeNextAccess(&*trace);  // belady's oracle travels with the trace, untimed
    const cache::WorkingSet ws = cache::MeasureWorkingSet(*trace);
    const int64_t whole = spec->unit == cache::CacheUnit::kObjects ? ws.objects : ws.bytes;
    const int64_t capacity = std::max<int64_t>(1, static_cast<int64_t>(fraction * whole));
    const int passes = static_cast<int>(
        std::max<int64_t>(1, (min_requests + static_cast<int64_t>(trace->size()) - 1) /
                                 static_cast<int64_t>(trace->size())));
    const size_t n = trace->size();
    const int64_t floor_misses = FloorReplay(*trace, capacity, spec->unit);
    auto floor = [&] { return FloorReplay(*trace, capacity, spec->unit); };
    for (const std::string& policy : *policies) {
      Result r = Time(
          floor,
          [&] {
            auto row = cache::Simulate(*trace, policy, capacity, spec->unit);
            return row.ok() ? row->misses : int64_t{-1};
          },
          n, runs, passes, clock == "cpu");
      r.trace = spec->name;
      r.policy = policy;
      r.capacity = capacity;
      if (policy == "lru" && r.misses != floor_misses) {
        std::fprintf(stderr, "%s: the floor LRU has %lld misses, lru %lld: not the same LRU\n",
                     spec->name, static_cast<long long>(floor_misses),
                     static_cast<long long>(r.misses));
        return 1;
      }
      std::printf("%-13s %-9s %14lld %10zu %10.2f %10.2f %9.2f %10lld\n", r.trace.c_str(),
                  r.policy.c_str(), static_cast<long long>(r.capacity), n, r.mreq_per_s,
                  r.floor_mreq_per_s, r.ratio, static_cast<long long>(r.misses));
      std::fflush(stdout);
      results.push_back(r);
    }
  }
  if (!csv.empty()) {
    std::FILE* f = std::fopen(csv.c_str(), "w");
    if (f == nullptr) {
      std::perror(csv.c_str());
      return 1;
    }
    std::fprintf(f, "trace,policy,capacity,mreq_per_s,floor_mreq_per_s,ratio,misses\n");
    for (const Result& r : results) {
      std::fprintf(f, "%s,%s,%lld,%.3f,%.3f,%.3f,%lld\n", r.trace.c_str(), r.policy.c_str(),
                   static_cast<long long>(r.capacity), r.mreq_per_s, r.floor_mreq_per_s, r.ratio,
                   static_cast<long long>(r.misses));
    }
    std::fclose(f);
  }
  return 0;
}
