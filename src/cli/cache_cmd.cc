// `seedance cache simulate`: replays a cache trace through replacement policies at several cache
// sizes (docs/cache.md). Thin: the readers, the size and policy lists and the parallel grid are
// seedance_cache's (seedance/cache/simulate.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/cache/simulate.h"
#include "seedance/cache/trace.h"

namespace seedance::cli {
namespace {

namespace cache = seedance::cache;

const std::vector<std::string> kFormats = {"table", "json", "csv"};
constexpr int kMaxJobs = 1024;

struct CacheSimulateFlags {
  std::string trace;
  std::string trace_format;  // "" = from the file name
  std::string policy;
  std::string sizes;
  std::string object_sizes;  // "", "on" or "off"
  int jobs = 0;
  bool quiet = false;
  OutputFlags out;
};

absl::Status Prefixed(const std::string& flag, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(flag, ": ", s.message()));
}

// The trace's format: --trace-format, else from the file's name.
absl::StatusOr<cache::TraceFormat> Format(const CacheSimulateFlags& f) {
  if (!f.trace_format.empty()) {
    auto format = cache::ParseTraceFormat(f.trace_format);
    if (!format.ok()) return Prefixed("--trace-format", format.status());
    return format;
  }
  auto format = cache::TraceFormatFromPath(f.trace);
  if (!format.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trace-format: cannot tell the format of ", base::ForTerminal(f.trace),
                     " from its name; give --trace-format, one of ", cache::TraceFormatList()));
  }
  return format;
}

// Byte-sized (object sizes on) or one unit per object.
absl::StatusOr<cache::CacheUnit> Unit(const CacheSimulateFlags& f, cache::TraceFormat format) {
  const bool has_sizes = cache::TraceHasSizes(format);
  if (f.object_sizes == "on" && !has_sizes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--object-sizes on: a ", std::string(cache::TraceFormatName(format)),
                     " trace has no object sizes (every request is one object)"));
  }
  const bool on = f.object_sizes.empty() ? has_sizes : f.object_sizes == "on";
  return on ? cache::CacheUnit::kBytes : cache::CacheUnit::kObjects;
}

// Draws a progress bar on stderr (a terminal only).
void ShowProgress(size_t done, size_t total) {
  const int width = 30;
  const int filled = static_cast<int>(width * done / std::max<size_t>(total, 1));
  std::fprintf(stderr, "\r[%s%s] %zu/%zu cells", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\r%*s\r", width + 30, "");
  std::fflush(stderr);
}

int Simulate(const CacheSimulateFlags& f) {
  if (f.trace.empty()) return UsageError("cache simulate: --trace FILE is required");
  if (f.policy.empty()) return UsageError("cache simulate: --policy LIST is required");
  if (f.sizes.empty()) return UsageError("cache simulate: --sizes LIST is required");
  absl::StatusOr<std::string> out_format = ResolveFormat(f.out, kFormats);
  if (!out_format.ok()) return Fail(out_format.status());
  const std::string out_path = f.out.output.empty() ? "-" : f.out.output;
  if (absl::Status s = base::CheckOutputsDistinct({{"--trace", f.trace}}, {{"--output", out_path}});
      !s.ok()) {
    return Fail(s);
  }
  absl::StatusOr<cache::TraceFormat> format = Format(f);
  if (!format.ok()) return Fail(format.status());
  absl::StatusOr<cache::CacheUnit> unit = Unit(f, *format);
  if (!unit.ok()) return Fail(unit.status());
  absl::StatusOr<std::vector<std::string>> policies = cache::ParsePolicyList(f.policy);
  if (!policies.ok()) return Fail(Prefixed("--policy", policies.status()));
  // The syntax of --sizes now, before a long read; fractions are resolved after it.
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max() / 2;
  if (auto s = cache::ParseCacheSizes(f.sizes, *unit, {kHuge, kHuge}); !s.ok()) {
    return Fail(Prefixed("--sizes", s.status()));
  }
  // The output before the work: an unwritable -o fails at once.
  auto out = base::OutputFile::Open(out_path);
  if (!out.ok()) return Fail(out.status());
  absl::StatusOr<std::vector<cache::Request>> trace = cache::ReadTrace(f.trace, *format);
  if (!trace.ok()) return Fail(trace.status());
  absl::StatusOr<std::vector<int64_t>> sizes =
      cache::ParseCacheSizes(f.sizes, *unit, cache::MeasureWorkingSet(*trace));
  if (!sizes.ok()) return Fail(Prefixed("--sizes", sizes.status()));
  cache::GridOptions options;
  options.jobs = f.jobs;
  if (!f.quiet && isatty(STDERR_FILENO)) options.progress = ShowProgress;
  auto rows = cache::SimulateGrid(*trace, *policies, *sizes, *unit, options);
  if (!rows.ok()) return Fail(rows.status());
  std::string text = *out_format == "json"  ? cache::RowsToJson(*rows) + "\n"
                     : *out_format == "csv" ? cache::RowsToCsv(*rows)
                                            : cache::RowsToTable(*rows);
  if (absl::Status s = (*out)->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = (*out)->Commit(); !s.ok()) return Fail(s);
  return kExitOk;
}

void AddSimulateFlags(CLI::App* sim, CacheSimulateFlags* f) {
  // --trace, --policy and --sizes are required, checked in the action so that a mistyped flag
  // is what gets reported.
  sim->add_option("--trace", f->trace,
                  "cache trace to replay (zstd, xz, gzip or bzip2 compressed or not; '-' = "
                  "standard input; required)")
      ->type_name("FILE");
  sim->add_option("--trace-format", f->trace_format,
                  "the trace's format: " + cache::TraceFormatList() +
                      " (default: from the file name, see docs/cache.md)")
      ->type_name("NAME");
  sim->add_option("--policy", f->policy,
                  "comma list of policies, or all: " + absl::StrJoin(cache::PolicyNames(), ", ") +
                      " (required)")
      ->type_name("LIST");
  sim->add_option("--sizes", f->sizes,
                  "comma list of cache sizes: objects (1000), bytes with a unit (128MiB, 1GB; "
                  "object sizes on), or a fraction of the working set (0.01, 5%) (required)")
      ->type_name("LIST");
  sim->add_option("--object-sizes", f->object_sizes,
                  "on: a byte-sized cache, each request charged its size; off: one unit per "
                  "object (default: on when the format carries sizes)")
      ->check(CLI::IsMember({"on", "off"}))
      ->type_name("on|off");
  AddInt<int>(sim, "-j,--jobs", &f->jobs, 0, kMaxJobs, "worker threads (0 = all cores)");
  sim->add_flag("-q,--quiet", f->quiet, "no progress bar on stderr");
  AddOutputFlags(sim, &f->out, kFormats);
}

}  // namespace

Command AddCacheCommand(CLI::App& app) {
  auto f = std::make_shared<CacheSimulateFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "cache",
      "The cache-policy simulator: replay public cache traces through replacement policies\n"
      "(docs/cache.md).");
  CLI::App* sim = cmd.app->add_subcommand(
      "simulate",
      "Replay a cache trace through each --policy at each of --sizes and report the misses:\n"
      "one row {policy, size, requests, misses, miss_ratio} per policy and size, policy-major.\n"
      "The trace is read whole into memory; the cells run in parallel (--jobs).");
  AddSimulateFlags(sim, f.get());
  sim->footer(
      "Examples:\n"
      "  seedance cache simulate --trace DATA/cache-traces/arc/OLTP.lis.zst \\\n"
      "      --policy lru,arc,lirs,wtinylfu,belady --sizes 250,500,1000,2000\n"
      "  seedance cache simulate --trace DATA/cache-traces/libcachesim-cloudphysics/"
      "cloudPhysicsIO.oracleGeneral.bin \\\n"
      "      --policy all --sizes 128MiB,256MiB,1GiB --format json -o cloudphysics.json\n"
      "  seedance cache simulate --trace DATA/cache-traces/lirs/gli.trace.gz --policy s3fifo,sieve"
      " \\\n"
      "      --sizes 1%,5%,0.1 --format csv\n"
      "  seedance cache simulate --trace web.csv --trace-format msr --policy lru --sizes "
      "64MiB,1GiB\n"
      "DATA is the public data folder (../shared/data). The format comes from the file name\n"
      "(.lis, .vscsi, .csv, .txt, *.oracleGeneral*, .trace under lirs/ or cache2k/, msr*,\n"
      "systor*, tencent-cbs*, tencent-photo*) unless --trace-format names it. Sizes: a plain\n"
      "number is objects (--object-sizes off) or bytes (on); K/KB/KiB = 1024; a fraction or a\n"
      "percentage is of the distinct objects (off) or their distinct bytes (on). A bad record\n"
      "is reported as FILE:LINE (text) or FILE: record N (binary).\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  cmd.app->footer(
      "Examples:\n"
      "  seedance cache simulate --trace OLTP.lis.zst --policy all --sizes 1000\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  cmd.run = [f, sim] {
    if (sim->parsed()) return Simulate(*f);
    return UsageError("cache: expected a subcommand: simulate");
  };
  return cmd;
}

}  // namespace seedance::cli
