// Tiering with money (issue 40 item 3; docs/cache.md "Tiering"): the seed's fixed rule, Seedance's
// cost policy and the offline optimum (seedance/cache/tiering.h) on the shipped traces that carry
// time and size, under the default cost model (S3 Standard + EBS gp3 list prices, read 2024).
//
// Two evaluations, printed as separate tables:
//  1. the traces as recorded (their own times), without and with a stall price (a waiting reader
//     charged the hardware catalog's H100 GPU-hour price);
//  2. a SENSITIVITY STUDY, not the traces' own results: the same access sequences with every
//     time stretched by one factor so that the trace spans --span-days (default 30) days;
//  3. the same again with every size multiplied by --size-factor (default 1024: 64 KiB blocks
//     become 64 MiB files), so that the seed's > 10 MiB condition can hold.
// Each under two models (exclusive tiers, the default; a store that keeps a copy), without and
// with the stall price. Then the cost policy's trust parameter swept on the stretched traces.
//
//   build-dir/bench/cache_tiering [--data DIR] [--span-days 30] [--size-factor 1024]
// DIR defaults to seedance::trace::DataDir(); a trace file that is missing is reported and
// skipped, and so are requests of size 0. Exit 1 when a present trace cannot be read.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "seedance/cache/tiering.h"
#include "seedance/cache/trace.h"
#include "seedance/hw/catalog.h"
#include "seedance/trace/csv_reader.h"

namespace {

namespace cache = seedance::cache;
using cache::TierPolicyKind;

struct TraceFile {
  const char* name;
  const char* path;  // under DIR/cache-traces
  cache::TraceFormat format;
  bool evaluate = true;  // false: described only (the csv's trace, at microseconds: same results)
};

constexpr TraceFile kTraces[] = {
    {"cloudphysics-csv", "libcachesim-cloudphysics/cloudPhysicsIO.csv", cache::TraceFormat::kCsv},
    {"cloudphysics-vscsi", "libcachesim-cloudphysics/cloudPhysicsIO.vscsi",
     cache::TraceFormat::kVscsi, false},
    {"msr-sample", "snia-samples/msr-cambridge1-sample.csv", cache::TraceFormat::kMsr},
    {"systor17-sample", "snia-samples/systor17-traces-sample.csv.gz", cache::TraceFormat::kSystor},
    {"systor17-add-sample", "snia-samples/systor17-additional-sample.csv.gz",
     cache::TraceFormat::kSystor},
    {"tencent-cbs-sample", "snia-samples/tencent-cbs-cloud_storage-sample.bz2",
     cache::TraceFormat::kTencentCbs},
    {"tencent-photo-sample", "snia-samples/tencent-photo-cloud_photos-sample.bz2",
     cache::TraceFormat::kTencentPhoto},
};

struct Loaded {
  std::string name;
  std::vector<cache::Request> trace;
  bool evaluate = true;
};

// Orders by time (stable: a trace's order within one timestamp is kept).
void SortByTime(std::vector<cache::Request>* t) {
  std::stable_sort(t->begin(), t->end(), [](const cache::Request& a, const cache::Request& b) {
    return a.time < b.time;
  });
}

void Describe(const Loaded& l) {
  const auto& t = l.trace;
  absl::flat_hash_set<uint64_t> ids;
  double bytes = 0;
  int64_t max_size = 0;
  for (const auto& r : t) {
    ids.insert(r.id);
    bytes += double(r.size);
    max_size = std::max(max_size, r.size);
  }
  const double span_s = t.empty() ? 0 : double(t.back().time - t.front().time) / 1e6;
  std::printf("| %s | %zu | %zu | %.1f | %.3f | %.1f | %lld |\n", l.name.c_str(), t.size(),
              ids.size(), span_s, span_s / 3600, bytes / 1e6, static_cast<long long>(max_size));
}

// Every request's size times `factor` (a labelled sensitivity study: objects as large as the
// AI cluster's files, where the seed's 10 MiB condition can hold).
std::vector<cache::Request> ScaleSizes(std::vector<cache::Request> t, int64_t factor) {
  for (auto& r : t) r.size *= factor;
  return t;
}

std::vector<cache::Request> Stretch(const std::vector<cache::Request>& t, double span_us) {
  std::vector<cache::Request> out = t;
  if (t.size() < 2 || t.back().time == t.front().time) return out;
  const double k = span_us / double(t.back().time - t.front().time);
  for (auto& r : out) r.time = t.front().time + int64_t(double(r.time - t.front().time) * k);
  return out;
}

void Header() {
  std::printf(
      "| trace | model | stall $/h | policy | total $ | w/o stall $ | local stor $ | remote stor $ "
      "| GET $ "
      "| PUT $ | egress $ | stall $ | remote reads | demotions | mean lat ms | p99 lat ms | "
      "/ optimum | <= seed |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---"
      "|---|\n");
}

cache::TieringResult MustRun(const std::vector<cache::Request>& t, TierPolicyKind kind,
                             const cache::TierCostModel& m, const cache::CostPolicyOptions& o) {
  absl::StatusOr<cache::TieringResult> r = cache::SimulateTiering(t, kind, m, {}, o);
  if (!r.ok()) {
    std::fprintf(stderr, "cache_tiering: %s\n", std::string(r.status().message()).c_str());
    std::exit(1);
  }
  return *r;
}

void Rows(const std::string& name, const std::vector<cache::Request>& t,
          const cache::TierCostModel& m) {
  const char* model = m.remote_keeps_copy ? "keeps-copy" : "exclusive";
  const cache::TieringResult seed = MustRun(t, TierPolicyKind::kSeedRule, m, {});
  const cache::TieringResult cost = MustRun(t, TierPolicyKind::kCostPolicy, m, {});
  const cache::TieringResult opt = MustRun(t, TierPolicyKind::kOptimum, m, {});
  for (const cache::TieringResult* r : {&seed, &cost, &opt}) {
    std::printf(
        "| %s | %s | %.2f | %s | %.6g | %.6g | %.4g | %.4g | %.4g | %.4g | %.4g | %.4g | %lld | "
        "%lld | "
        "%.2f | %.2f | %.4f | %s |\n",
        name.c_str(), model, m.stall_usd_per_hour, r->policy.c_str(), r->total_usd(),
        r->total_without_stall_usd(), r->local_storage_usd, r->remote_storage_usd, r->get_usd,
        r->put_usd, r->egress_usd, r->stall_usd, static_cast<long long>(r->remote_reads),
        static_cast<long long>(r->demotions), r->mean_read_latency_s * 1e3,
        r->p99_read_latency_s * 1e3, opt.total_usd() > 0 ? r->total_usd() / opt.total_usd() : 1.0,
        r->total_usd() <= seed.total_usd() * (1 + 1e-12) ? "yes" : "NO");
  }
}

void TrustSweep(const std::vector<Loaded>& traces, double span_us, const cache::TierCostModel& m) {
  std::printf(
      "\n| trace (stretched) | model | stall $/h | trust | cost policy / optimum |\n"
      "|---|---|---|---|---|\n");
  for (const Loaded& l : traces) {
    if (!l.evaluate) continue;
    const std::vector<cache::Request> t = Stretch(l.trace, span_us);
    const double opt = MustRun(t, TierPolicyKind::kOptimum, m, {}).total_usd();
    for (double trust : {0.02, 0.05, 0.1, 0.2, 0.5, 1.0}) {
      const double c = MustRun(t, TierPolicyKind::kCostPolicy, m, {.trust = trust}).total_usd();
      std::printf("| %s | %s | %.2f | %.2f | %.4f |\n", l.name.c_str(),
                  m.remote_keeps_copy ? "keeps-copy" : "exclusive", m.stall_usd_per_hour, trust,
                  c / opt);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = seedance::trace::DataDir();
  double span_days = 30;
  int64_t size_factor = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--data") == 0) {
      data = argv[i + 1];
    } else if (std::strcmp(argv[i], "--span-days") == 0) {
      span_days = std::atof(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--size-factor") == 0) {
      size_factor = std::atoll(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: cache_tiering [--data DIR] [--span-days D] [--size-factor K]\n");
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0 || !(span_days > 0) || size_factor < 1) {
    std::fprintf(stderr,
                 "usage: cache_tiering [--data DIR] [--span-days D > 0] [--size-factor K >= 1]\n");
    return 2;
  }
  std::vector<Loaded> traces;
  for (const TraceFile& f : kTraces) {
    const std::string path = data + "/cache-traces/" + f.path;
    if (!std::filesystem::exists(path)) {
      std::printf("(%s: %s absent, skipped)\n", f.name, path.c_str());
      continue;
    }
    absl::StatusOr<std::vector<cache::Request>> t = cache::ReadTrace(path, f.format);
    if (!t.ok()) {
      std::fprintf(stderr, "cache_tiering: %s\n", std::string(t.status().message()).c_str());
      return 1;
    }
    // Requests of size 0 read nothing (libCacheSim's ignore_size_zero_req); they are dropped.
    const size_t before = t->size();
    std::erase_if(*t, [](const cache::Request& r) { return r.size < 1; });
    if (t->size() != before) {
      std::printf("(%s: %zu requests of size 0 dropped)\n", f.name, before - t->size());
    }
    SortByTime(&*t);
    traces.push_back({f.name, *std::move(t), f.evaluate});
  }
  const seedance::hw::GpuModel* h100 = seedance::hw::Find("H100");
  const double gpu_usd_per_hour = h100 && h100->usd_per_hour ? *h100->usd_per_hour : 0;
  // The models: exclusive tiers (the default) and a store that keeps a copy, each without and
  // with the stall price.
  std::vector<cache::TierCostModel> models(4);
  models[1].stall_usd_per_hour = gpu_usd_per_hour;
  models[2].remote_keeps_copy = true;
  models[3] = models[2];
  models[3].stall_usd_per_hour = gpu_usd_per_hour;
  std::printf("stall price: H100 $%.2f per GPU-hour (%s)\n\n", gpu_usd_per_hour,
              h100 ? h100->price_source.c_str() : "absent");

  std::printf(
      "| trace | requests | objects | span s | span h | MB requested | largest object B |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const Loaded& l : traces) Describe(l);

  std::printf("\n1. The traces as recorded\n\n");
  Header();
  for (const cache::TierCostModel& m : models) {
    for (const Loaded& l : traces) {
      if (l.evaluate) Rows(l.name, l.trace, m);
    }
  }

  const double span_us = span_days * 86400e6;
  std::printf(
      "\n2. SENSITIVITY STUDY (not the traces' own results): times stretched to span %g "
      "days\n\n",
      span_days);
  Header();
  for (const cache::TierCostModel& m : models) {
    for (const Loaded& l : traces) {
      if (!l.evaluate) continue;
      Rows(l.name + " stretched", Stretch(l.trace, span_us), m);
    }
  }
  std::printf(
      "\n3. SENSITIVITY STUDY (not the traces' own results): times stretched to span %g "
      "days AND every size x %lld\n\n",
      span_days, static_cast<long long>(size_factor));
  Header();
  for (const cache::TierCostModel& m : models) {
    for (const Loaded& l : traces) {
      if (!l.evaluate) continue;
      Rows(l.name + " stretched x" + std::to_string(size_factor),
           ScaleSizes(Stretch(l.trace, span_us), size_factor), m);
    }
  }
  TrustSweep(traces, span_us, models[0]);
  TrustSweep(traces, span_us, models[2]);
  return 0;
}
