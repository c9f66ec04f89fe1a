// Cache-access traces for the cache-policy simulator (docs/cache.md; issue 40): the formats of
// ../shared/data/cache-traces/ (its README.md describes each exactly) read into requests.
//
//  * kOracleGeneral: libCacheSim's binary records, 24 little-endian bytes each, no header:
//    uint32 time, uint64 id, uint32 size, int64 next_access_vtime (-1 = never again).
//  * kCsv: a CSV table read by Seedance's one CSV scanner (seedance/trace/csv_table.h); the
//    columns that hold time, id and size are named by CsvColumns (CloudPhysics: time, lbn, size).
//  * kTxt: one unsigned integer id per line (libCacheSim's plain txt); size 1.
//  * kLis: the ARC paper's traces, `start_block n_blocks ignore request_no` per line, expanded to
//    n_blocks requests for blocks start_block .. start_block + n_blocks - 1; size 1.
//  * kLirs: one integer block id per line; lines that are `*` are skipped; size 1.
//  * kCache2k: a stream of big-endian 32-bit keys, no header; size 1.
// Text formats number requests from 0 as their time. A file compressed with zstd, xz or gzip
// (recognised by its magic bytes, not its name) is decompressed first with Debian's libzstd,
// liblzma or zlib.
//
// Errors: a missing or unreadable file is the error of base::ReadInput (it names the path); bad
// input is absl::InvalidArgumentError naming the file and the line ("FILE:LINE: ...") or, for
// the binary formats, the record ("FILE: record N: ..."; N is 1-based).
//
// Thread-safety: every function here is a pure function of its arguments and the file system.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::cache {

// next_access_vtime of a request whose object is never requested again.
inline constexpr int64_t kNeverAgain = std::numeric_limits<int64_t>::max();
// next_access_vtime of a request whose next access is not known (yet): ComputeNextAccess fills it.
inline constexpr int64_t kUnknownNextAccess = -1;

// One access: the object `id` of `size` units (bytes, or 1 where a trace has no sizes) at `time`.
struct Request {
  int64_t time = 0;
  uint64_t id = 0;
  int64_t size = 1;
  // The index (0-based) of the next request for `id`, kNeverAgain, or kUnknownNextAccess.
  int64_t next_access_vtime = kUnknownNextAccess;
};

enum class TraceFormat { kOracleGeneral, kCsv, kTxt, kLis, kLirs, kCache2k };

// Parses "oracleGeneral", "csv", "txt", "lis", "lirs" or "cache2k".
absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);

// The header names of the columns a kCsv trace is read from; other columns are ignored.
struct CsvColumns {
  std::string time = "time";
  std::string id = "lbn";
  std::string size = "size";
};

// Parses `data` (already decompressed) in `format`; `source` names it in messages.
absl::StatusOr<std::vector<Request>> ParseTrace(std::string_view data, std::string_view source,
                                                TraceFormat format, const CsvColumns& csv = {});

// Reads the file at `path`, decompressing it if it is zstd, xz or gzip, and parses it.
absl::StatusOr<std::vector<Request>> ReadTrace(const std::string& path, TraceFormat format,
                                               const CsvColumns& csv = {});

// Decompresses `data` if it starts with a zstd, xz or gzip magic number; otherwise returns it as
// is. Errors (a corrupt or truncated stream) are InvalidArgument naming `source`.
absl::StatusOr<std::string> MaybeDecompress(std::string data, std::string_view source);

// Sets every request's next_access_vtime to the index of the next request for the same id, or
// kNeverAgain: the oracle that Belady needs on traces that do not carry it.
void ComputeNextAccess(std::vector<Request>* trace);

}  // namespace seedance::cache
