// The policy simulator's grid (`seedance cache simulate`, docs/cache.md): cache sizes given the
// way people state them (object counts, bytes with units, fractions of the working set), policy
// lists, and every policy at every size replayed in parallel over one trace held in memory.
//
// Sizes (ParseCacheSizes), a comma list; each item is one of
//   * a plain integer ("1000"): objects for CacheUnit::kObjects, bytes for CacheUnit::kBytes;
//   * bytes with a unit ("512KiB", "128MiB", "1GB", "1.5G"; K, KB and KiB are all 1024 bytes, M,
//     MB and MiB 1024^2, and so on to T, as base::ParseByteSize and libCacheSim read them;
//     case-insensitive; a fractional byte count is rounded down): only for kBytes;
//   * a fraction of the working set ("0.01", in (0, 1], or "5%", in (0, 100%]): of the trace's
//     distinct objects (kObjects) or their distinct bytes (kBytes; each object counted once, at
//     the size of its first request, as libCacheSim's working-set size), rounded down.
// Every size must come out >= 1. Errors are InvalidArgument naming the item:
// "item 3 '12XB': unknown unit 'XB' (...)"; the CLI prefixes the flag.
//
// Thread-safety: every function is a pure function of its arguments; SimulateGrid runs its cells
// on base::ParallelFor's threads and calls `progress` from them one at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/cache/policy.h"
#include "seedance/cache/trace.h"

namespace seedance::cache {

// What a trace touches: its distinct objects and the sum of their sizes (each object at the size
// of its first request; requests of size 0 are not counted, as Simulate skips them in byte mode).
struct WorkingSet {
  int64_t objects = 0;
  int64_t bytes = 0;
};
WorkingSet MeasureWorkingSet(const std::vector<Request>& trace);

// Parses a --sizes list (see the top) into capacities in `unit`, in the order given.
absl::StatusOr<std::vector<int64_t>> ParseCacheSizes(std::string_view list, CacheUnit unit,
                                                     const WorkingSet& working_set);

// Parses a --policy list: comma-separated PolicyNames (case-insensitive, NewPolicy's aliases
// accepted) or "all" (every PolicyNames() entry, in its order). Returns the canonical names, in
// the order given. InvalidArgument naming the item and listing the policies otherwise.
absl::StatusOr<std::vector<std::string>> ParsePolicyList(std::string_view list);

struct GridOptions {
  int jobs = 0;  // threads for the cells (base::WorkerCount: <= 0 = one per hardware thread)
  // Called after each cell with (cells done, cells in all); may be empty.
  std::function<void(size_t, size_t)> progress;
};

// Every policy at every capacity (Simulate's semantics), policy-major like SimulateJson, the
// cells run in parallel. The first error (by cell order) is returned.
absl::StatusOr<std::vector<SimulationRow>> SimulateGrid(const std::vector<Request>& trace,
                                                        const std::vector<std::string>& policies,
                                                        const std::vector<int64_t>& capacities,
                                                        CacheUnit unit,
                                                        const GridOptions& options = {});

// The rows as SimulateJson prints them (one line, no trailing newline).
std::string RowsToJson(const std::vector<SimulationRow>& rows);
// The rows as CSV with the header `policy,size,requests,misses,miss_ratio` ("\n" line ends).
std::string RowsToCsv(const std::vector<SimulationRow>& rows);
// The rows as an aligned text table with the same columns (miss_ratio to 6 decimals).
std::string RowsToTable(const std::vector<SimulationRow>& rows);

}  // namespace seedance::cache
