// Cache-access traces for the cache-policy simulator (docs/cache.md; issue 40): the formats of
// ../shared/data/cache-traces/ (its README.md describes each exactly) read into requests.
//
//  * kOracleGeneral: libCacheSim's binary records, 24 little-endian bytes each, no header:
//    uint32 time (seconds), uint64 id, uint32 size, int64 next_access_vtime (-1 = never again).
//  * kCsv: a CSV table read by Seedance's one CSV scanner (seedance/trace/csv_table.h); the
//    columns that hold time (seconds, a non-negative integer or decimal), id and size are named
//    by CsvColumns (CloudPhysics: time, lbn, size; its time column is the vscsi timestamp in
//    seconds, as libCacheSim writes it: vscsi microseconds / 1e6, rounded down).
//  * kTxt: one unsigned integer id per line (libCacheSim's plain txt); size 1.
//  * kLis: the ARC paper's traces, `start_block n_blocks ignore request_no` per line, expanded to
//    n_blocks requests for blocks start_block .. start_block + n_blocks - 1; size 1. A run is at
//    most 16384 blocks (the ARC traces' longest is 128).
//  * kLirs: one integer block id per line; lines that are `*` are skipped; size 1.
//  * kCache2k: a stream of big-endian 32-bit keys, no header; size 1.
//  * kVscsi: VMware vscsi binary records as libCacheSim's vscsi reader reads them, little-endian,
//    no header, in one of two versions told apart by the version byte (the high byte of the
//    16-bit `ver` field) of the first two records, as libCacheSim does:
//      version 1, 32 bytes: uint32 sn, uint32 len, uint32 nSG, uint16 cmd, uint16 ver,
//                           uint64 lbn, uint64 ts;
//      version 2, 40 bytes: uint16 cmd, uint16 ver, uint32 sn, uint32 len, uint32 nSG,
//                           uint64 lbn, uint64 ts, uint64 rt.
//    id = lbn, size = len (bytes), time = ts (microseconds). Every record is a request, whatever
//    its SCSI command (libCacheSim also keeps them all).
//  * kMsr: MSR Cambridge csv, no header: `timestamp,host,disk,Read|Write,offset,size,latency`
//    (timestamp in Windows filetime 100 ns ticks; offset and size in bytes).
//  * kSystor: SYSTOR '17 csv with the header `Timestamp,Response,IOType,LUN,Offset,Size`
//    (Timestamp in decimal seconds; IOType R or W; offset and size in bytes).
//  * kTencentCbs: Tencent cloud block storage csv, no header:
//    `timestamp,offset,size,is_write,volume_id` (timestamp in seconds; offset and size in 512 B
//    sectors, as Caffeine's TencentBlockTraceReader reads them).
//  * kTencentPhoto: Tencent photo cache, space separated, no header:
//    `time md5 format spec size cached terminal latency` (time as YYYYMMDDhhmmss, read as UTC;
//    format a digit, 0 = jpeg, 5 = webp; spec the size class letter; size in bytes).
//
// Block traces (vscsi, msr, systor, tencent-cbs) follow libCacheSim's convention: one request per
// I/O, whatever its direction, the object is the I/O's first 512-byte block and the request's
// size is the I/O's size in bytes. Where a trace names several volumes the volume is in the top
// 24 bits of the id, as Caffeine's TencentBlockTraceReader keys its blocks:
// id = volume << 40 | (block & (2^40 - 1)) (msr: volume = disk; systor: LUN; tencent-cbs:
// volume_id). A Tencent photo is the object (md5, format, spec): its id is the first 64 bits of
// the md5 mixed with the format and spec (different renditions of a photo are different files).
//
// Request::time is in MICROSECONDS for every format that carries time (TraceHasTime):
// oracleGeneral and csv: seconds x 1e6; vscsi: as recorded; msr: 100 ns ticks / 10 (rounded
// down); systor and tencent-cbs: seconds x 1e6 (systor's decimals kept to the microsecond);
// tencent-photo: the Unix time of its UTC timestamp x 1e6. Formats without time (txt, lis,
// lirs, cache2k) number requests from 0 as their time, and have no sizes (TraceHasSizes): every
// request's size is 1.
//
// A file compressed with zstd, xz, gzip or bzip2 (recognised by its magic bytes, not its name) is
// decompressed first with Debian's libzstd, liblzma, zlib or libbz2.
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

// One access: the object `id` of `size` units (bytes, or 1 where a trace has no sizes) at `time`
// (microseconds where the format carries time, else the request's index: see the top).
struct Request {
  int64_t time = 0;
  uint64_t id = 0;
  int64_t size = 1;
  // The index (0-based) of the next request for `id`, kNeverAgain, or kUnknownNextAccess.
  int64_t next_access_vtime = kUnknownNextAccess;
};

enum class TraceFormat {
  kOracleGeneral,
  kCsv,
  kTxt,
  kLis,
  kLirs,
  kCache2k,
  kVscsi,
  kMsr,
  kSystor,
  kTencentCbs,
  kTencentPhoto,
};

// Parses a format's name, case-insensitively: "oracleGeneral", "csv", "txt", "lis", "lirs",
// "cache2k", "vscsi", "msr", "systor", "tencent-cbs" or "tencent-photo". The error lists them.
absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);

// The name ParseTraceFormat accepts for `format` ("oracleGeneral", ..., "tencent-photo").
std::string_view TraceFormatName(TraceFormat format);

// Every format's name, in the enum's order, joined by `separator` (for help and error text).
std::string TraceFormatList(std::string_view separator = ", ");

// Whether requests of `format` carry a time (in microseconds): false for txt, lis, lirs and
// cache2k, whose time is the request's index.
bool TraceHasTime(TraceFormat format);

// Whether requests of `format` carry sizes (bytes): false for txt, lis, lirs and cache2k, whose
// every request has size 1.
bool TraceHasSizes(TraceFormat format);

// The format a trace file's name implies, after any .zst/.xz/.gz/.bz2 suffix is stripped:
// `*.oracleGeneral*` -> oracleGeneral, `*.lis` -> lis, `*.vscsi` -> vscsi, `*.csv` -> csv,
// `*.txt` -> txt, and `*.trace` -> lirs or cache2k by the name of the folder it is in (`lirs`,
// `cache2k`). NotFound (naming the path and listing the formats) for any other name.
absl::StatusOr<TraceFormat> TraceFormatFromPath(std::string_view path);

// The header names of the columns a kCsv trace is read from; other columns are ignored.
struct CsvColumns {
  std::string time = "time";
  std::string id = "lbn";
  std::string size = "size";
};

// Parses `data` (already decompressed) in `format`; `source` names it in messages.
absl::StatusOr<std::vector<Request>> ParseTrace(std::string_view data, std::string_view source,
                                                TraceFormat format, const CsvColumns& csv = {});

// Reads the file at `path`, decompressing it if it is zstd, xz, gzip or bzip2, and parses it.
absl::StatusOr<std::vector<Request>> ReadTrace(const std::string& path, TraceFormat format,
                                               const CsvColumns& csv = {});

// Decompresses `data` if it starts with a zstd, xz, gzip or bzip2 magic number; otherwise returns
// it as is. Errors (a corrupt or truncated stream, or more than 1 GiB decompressed) are
// InvalidArgument naming `source`.
absl::StatusOr<std::string> MaybeDecompress(std::string data, std::string_view source);

// Sets every request's next_access_vtime to the index of the next request for the same id, or
// kNeverAgain: the oracle that Belady needs on traces that do not carry it.
void ComputeNextAccess(std::vector<Request>* trace);

}  // namespace seedance::cache
