#include "seedance/cache/trace.h"

#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <charconv>
#include <cstring>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "seedance/base/check.h"
#include "seedance/base/io.h"
#include "seedance/trace/csv_table.h"
#include "seedance/trace/input_error.h"
#include "seedance/trace/line_scanner.h"

namespace seedance::cache {
namespace {

using trace::AbslView;

// Decompressed traces are held in memory whole: the largest shipped trace expands to ~150 MB.
constexpr size_t kMaxDecompressedBytes = size_t{1} << 30;
constexpr size_t kOracleRecordBytes = 24;
constexpr int64_t kMicrosPerSecond = 1'000'000;
// The longest run one .lis line may expand to: the ARC traces' longest is 128 blocks; without a
// bound a 20-byte line could ask for billions of requests.
constexpr uint64_t kMaxLisRunBlocks = uint64_t{1} << 14;
// Block traces name their objects by 512-byte block; a volume goes in the id's top 24 bits.
constexpr uint64_t kBlockBytes = 512;
constexpr int kVolumeShift = 40;
constexpr uint64_t kBlockMask = (uint64_t{1} << kVolumeShift) - 1;
constexpr uint64_t kMaxVolume = (uint64_t{1} << (64 - kVolumeShift)) - 1;

absl::Status TooLarge(std::string_view source) {
  return absl::InvalidArgumentError(absl::StrCat(AbslView(source), ": decompressed trace exceeds ",
                                                 kMaxDecompressedBytes, " bytes"));
}

absl::Status Corrupt(std::string_view source, std::string_view codec, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(AbslView(source), ": corrupt ", AbslView(codec), " stream: ", AbslView(what)));
}

absl::StatusOr<std::string> Unzstd(std::string_view in, std::string_view source) {
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> ds(ZSTD_createDStream(),
                                                              ZSTD_freeDStream);
  ZSTD_initDStream(ds.get());
  std::string out;
  std::string buf(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  size_t last = 1;
  while (ib.pos < ib.size) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ds.get(), &ob, &ib);
    if (ZSTD_isError(last)) return Corrupt(source, "zstd", ZSTD_getErrorName(last));
    out.append(buf.data(), ob.pos);
    if (out.size() > kMaxDecompressedBytes) return TooLarge(source);
  }
  if (last != 0) return Corrupt(source, "zstd", "truncated");
  return out;
}

absl::StatusOr<std::string> Unxz(std::string_view in, std::string_view source) {
  lzma_stream s = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
    return Corrupt(source, "xz", "cannot start the decoder");
  }
  std::string out;
  std::array<uint8_t, 1 << 16> buf;
  s.next_in = reinterpret_cast<const uint8_t*>(in.data());
  s.avail_in = in.size();
  lzma_ret r = LZMA_OK;
  while (r == LZMA_OK) {
    s.next_out = buf.data();
    s.avail_out = buf.size();
    r = lzma_code(&s, s.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    out.append(reinterpret_cast<const char*>(buf.data()), buf.size() - s.avail_out);
    if (out.size() > kMaxDecompressedBytes) r = LZMA_MEMLIMIT_ERROR;
  }
  lzma_end(&s);
  if (out.size() > kMaxDecompressedBytes) return TooLarge(source);
  if (r != LZMA_STREAM_END) return Corrupt(source, "xz", absl::StrCat("lzma error ", int(r)));
  return out;
}

absl::StatusOr<std::string> Gunzip(std::string_view in, std::string_view source) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 32) != Z_OK) return Corrupt(source, "gzip", "cannot start zlib");
  std::string out;
  std::array<Bytef, 1 << 16> buf;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uInt>(in.size());
  int r = Z_OK;
  while (r == Z_OK) {
    s.next_out = buf.data();
    s.avail_out = buf.size();
    r = inflate(&s, Z_NO_FLUSH);
    out.append(reinterpret_cast<const char*>(buf.data()), buf.size() - s.avail_out);
    if (out.size() > kMaxDecompressedBytes) r = Z_MEM_ERROR;
    // A member ended but more input follows: a multi-member gzip file.
    if (r == Z_STREAM_END && s.avail_in > 0) r = inflateReset(&s);
    if (r == Z_BUF_ERROR && s.avail_in == 0) break;
  }
  inflateEnd(&s);
  if (out.size() > kMaxDecompressedBytes) return TooLarge(source);
  if (r != Z_STREAM_END)
    return Corrupt(source, "gzip",
                   r == Z_BUF_ERROR ? "truncated"
                   : s.msg          ? s.msg
                                    : "inflate error");
  return out;
}

absl::StatusOr<std::string> Bunzip2(std::string_view in, std::string_view source) {
  bz_stream s{};
  if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) return Corrupt(source, "bzip2", "cannot start");
  std::string out;
  std::array<char, 1 << 16> buf;
  s.next_in = const_cast<char*>(in.data());
  s.avail_in = static_cast<unsigned>(in.size());
  int r = BZ_OK;
  while (r == BZ_OK) {
    s.next_out = buf.data();
    s.avail_out = buf.size();
    const unsigned avail_before = s.avail_in;
    r = BZ2_bzDecompress(&s);
    out.append(buf.data(), buf.size() - s.avail_out);
    if (out.size() > kMaxDecompressedBytes) break;
    // A stream ended but more input follows: concatenated streams (pbzip2, lbzip2).
    if (r == BZ_STREAM_END && s.avail_in > 0) {
      char* next = s.next_in;
      const unsigned left = s.avail_in;
      BZ2_bzDecompressEnd(&s);
      s = bz_stream{};
      if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) return Corrupt(source, "bzip2", "cannot start");
      s.next_in = next;
      s.avail_in = left;
      r = BZ_OK;
    } else if (r == BZ_OK && s.avail_in == 0 && avail_before == 0 && s.avail_out == buf.size()) {
      r = BZ_UNEXPECTED_EOF;  // no input left and no progress: the stream is cut short
    }
  }
  BZ2_bzDecompressEnd(&s);
  if (out.size() > kMaxDecompressedBytes) return TooLarge(source);
  if (r != BZ_STREAM_END) {
    return Corrupt(source, "bzip2",
                   r == BZ_UNEXPECTED_EOF ? "truncated" : absl::StrCat("bzip2 error ", r));
  }
  return out;
}

// A request per record of libCacheSim's oracleGeneral binary format.
absl::StatusOr<std::vector<Request>> ParseOracleGeneral(std::string_view data,
                                                        std::string_view source) {
  const size_t n = data.size() / kOracleRecordBytes;
  if (data.size() % kOracleRecordBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(source), ": record ", n + 1, ": truncated record (",
                     data.size() % kOracleRecordBytes, " of ", kOracleRecordBytes, " bytes)"));
  }
  std::vector<Request> out(n);
  for (size_t i = 0; i < n; ++i) {
    const char* p = data.data() + i * kOracleRecordBytes;
    uint32_t time = 0;
    uint32_t size = 0;
    int64_t next = 0;
    std::memcpy(&time, p, 4);  // x86-64 and arm64 are little-endian, as the format is
    std::memcpy(&out[i].id, p + 4, 8);
    std::memcpy(&size, p + 12, 4);
    std::memcpy(&next, p + 16, 8);
    if (next < -1) {
      return absl::InvalidArgumentError(absl::StrCat(AbslView(source), ": record ", i + 1,
                                                     ": next_access_vtime ", next,
                                                     " is negative (expected -1 or >= 0)"));
    }
    out[i].time = int64_t{time} * kMicrosPerSecond;
    out[i].size = size;
    out[i].next_access_vtime = next == -1 ? kNeverAgain : next;
  }
  return out;
}

absl::StatusOr<std::vector<Request>> ParseCache2k(std::string_view data, std::string_view source) {
  const size_t n = data.size() / 4;
  if (data.size() % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(AbslView(source), ": record ", n + 1,
                                                   ": truncated record (", data.size() % 4,
                                                   " of 4 bytes)"));
  }
  std::vector<Request> out(n);
  for (size_t i = 0; i < n; ++i) {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data() + i * 4);
    const uint32_t key =
        (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
    out[i].time = static_cast<int64_t>(i);
    out[i].id = key;
  }
  return out;
}

absl::Status ParseU64(std::string_view field, std::string_view source, int64_t line,
                      std::string_view what, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    return trace::FieldError(source, line, what, "integer out of range", field);
  }
  if (ec != std::errc() || ptr != field.data() + field.size()) {
    return trace::FieldError(source, line, what, "expected a non-negative integer", field);
  }
  return absl::OkStatus();
}

// The line-oriented formats: txt and lirs (one id a line) and lis (a run of blocks a line).
absl::StatusOr<std::vector<Request>> ParseLines(std::string_view data, std::string_view source,
                                                TraceFormat format) {
  std::vector<Request> out;
  trace::LineScanner lines(data);
  std::string_view line;
  int64_t line_no = 0;
  while (lines.Next(&line, &line_no)) {
    line = trace::table::Trim(line);
    if (format == TraceFormat::kLirs && line == "*") continue;
    if (format != TraceFormat::kLis) {
      uint64_t id = 0;
      if (absl::Status s = ParseU64(line, source, line_no, "id", &id); !s.ok()) return s;
      out.push_back(Request{.time = static_cast<int64_t>(out.size()), .id = id});
      continue;
    }
    std::array<std::string_view, 4> f;
    size_t n = 0;
    for (std::string_view rest = line; !rest.empty() && n < f.size();) {
      const size_t end = std::min(rest.find_first_of(" \t"), rest.size());
      f[n++] = rest.substr(0, end);
      rest = trace::table::Trim(rest.substr(end));
    }
    if (n < 2) {
      return trace::FieldError(source, line_no, "n_blocks",
                               "expected `start_block n_blocks ignore request_no`", line);
    }
    uint64_t start = 0;
    uint64_t count = 0;
    if (absl::Status s = ParseU64(f[0], source, line_no, "start_block", &start); !s.ok()) return s;
    if (absl::Status s = ParseU64(f[1], source, line_no, "n_blocks", &count); !s.ok()) return s;
    if (count > kMaxLisRunBlocks) {
      return trace::FieldError(source, line_no, "n_blocks",
                               absl::StrCat("more than ", kMaxLisRunBlocks, " blocks in one run"),
                               f[1]);
    }
    for (uint64_t b = 0; b < count; ++b) {
      out.push_back(Request{.time = static_cast<int64_t>(out.size()), .id = start + b});
    }
  }
  return out;
}

// Splits `line` at every `sep` into at most `f.size()` fields; returns how many there were (more
// than f.size() when the line has too many).
template <size_t N>
size_t SplitFields(std::string_view line, char sep, std::array<std::string_view, N>* f) {
  size_t n = 0;
  while (true) {
    const size_t end = std::min(line.find(sep), line.size());
    if (n < N) (*f)[n] = trace::table::Trim(line.substr(0, end));
    ++n;
    if (end == line.size()) return n;
    line.remove_prefix(end + 1);
  }
}

// Like SplitFields, but fields are separated by runs of spaces and tabs.
template <size_t N>
size_t SplitBlanks(std::string_view line, std::array<std::string_view, N>* f) {
  size_t n = 0;
  for (line = trace::table::Trim(line); !line.empty();) {
    const size_t end = std::min(line.find_first_of(" \t"), line.size());
    if (n < N) (*f)[n] = line.substr(0, end);
    ++n;
    line = trace::table::Trim(line.substr(end));
  }
  return n;
}

absl::Status FieldCount(std::string_view source, int64_t line_no, size_t got, size_t want,
                        std::string_view layout, std::string_view line) {
  if (got == want) return absl::OkStatus();
  return trace::LineError(source, line_no,
                          absl::StrCat(got, " fields, expected ", want, " (`", AbslView(layout),
                                       "`) (got '", trace::QuoteValue(line), "')"));
}

// A non-negative decimal number of seconds ("12", "1455591804.310701000") in microseconds;
// digits past the microsecond are dropped.
absl::Status ParseSecondsUs(std::string_view field, std::string_view source, int64_t line,
                            std::string_view what, int64_t* us) {
  const size_t dot = field.find('.');
  const std::string_view whole = field.substr(0, dot);
  const std::string_view frac =
      dot == std::string_view::npos ? std::string_view() : field.substr(dot + 1);
  uint64_t seconds = 0;
  auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), seconds);
  const bool digits_only = frac.find_first_not_of("0123456789") == std::string_view::npos;
  if (ec != std::errc() || ptr != whole.data() + whole.size() || !digits_only ||
      (dot != std::string_view::npos && frac.empty())) {
    return trace::FieldError(source, line, what, "expected non-negative decimal seconds", field);
  }
  if (seconds > uint64_t{std::numeric_limits<int64_t>::max() / kMicrosPerSecond} - 1) {
    return trace::FieldError(source, line, what, "seconds out of range", field);
  }
  int64_t micros = 0;
  for (size_t i = 0; i < 6; ++i) micros = micros * 10 + (i < frac.size() ? frac[i] - '0' : 0);
  *us = static_cast<int64_t>(seconds) * kMicrosPerSecond + micros;
  return absl::OkStatus();
}

// A non-negative integer that fits int64 (a size or a time).
absl::Status ParseI64(std::string_view field, std::string_view source, int64_t line,
                      std::string_view what, int64_t* out) {
  uint64_t v = 0;
  if (absl::Status s = ParseU64(field, source, line, what, &v); !s.ok()) return s;
  if (v > uint64_t{std::numeric_limits<int64_t>::max()}) {
    return trace::FieldError(source, line, what, "integer out of range", field);
  }
  *out = static_cast<int64_t>(v);
  return absl::OkStatus();
}

// The id of `block` on `volume`: volume << 40 | block (mod 2^40).
absl::StatusOr<uint64_t> BlockId(std::string_view volume_field, uint64_t block,
                                 std::string_view source, int64_t line, std::string_view what) {
  uint64_t volume = 0;
  if (absl::Status s = ParseU64(volume_field, source, line, what, &volume); !s.ok()) return s;
  if (volume > kMaxVolume) {
    return trace::FieldError(source, line, what, absl::StrCat("volume above ", kMaxVolume),
                             volume_field);
  }
  return (volume << kVolumeShift) | (block & kBlockMask);
}

absl::Status CheckOneOf(std::string_view field, std::string_view a, std::string_view b,
                        std::string_view source, int64_t line, std::string_view what) {
  if (field == a || field == b) return absl::OkStatus();
  return trace::FieldError(source, line, what,
                           absl::StrCat("expected ", AbslView(a), " or ", AbslView(b)), field);
}

// MSR Cambridge: `timestamp,host,disk,Read|Write,offset,size,latency`, no header.
absl::StatusOr<std::vector<Request>> ParseMsr(std::string_view data, std::string_view source) {
  static constexpr std::string_view kLayout = "timestamp,host,disk,Read|Write,offset,size,latency";
  std::vector<Request> out;
  trace::LineScanner lines(data);
  std::string_view line;
  int64_t n = 0;
  while (lines.Next(&line, &n)) {
    std::array<std::string_view, 7> f;
    if (absl::Status s = FieldCount(source, n, SplitFields(line, ',', &f), 7, kLayout, line);
        !s.ok())
      return s;
    Request r;
    uint64_t ticks = 0;
    uint64_t offset = 0;
    if (absl::Status s = ParseU64(f[0], source, n, "timestamp", &ticks); !s.ok()) return s;
    if (absl::Status s = CheckOneOf(f[3], "Read", "Write", source, n, "type"); !s.ok()) return s;
    if (absl::Status s = ParseU64(f[4], source, n, "offset", &offset); !s.ok()) return s;
    if (absl::Status s = ParseI64(f[5], source, n, "size", &r.size); !s.ok()) return s;
    absl::StatusOr<uint64_t> id = BlockId(f[2], offset / kBlockBytes, source, n, "disk");
    if (!id.ok()) return id.status();
    r.time = static_cast<int64_t>(ticks / 10);  // 100 ns ticks; uint64 / 10 fits int64
    r.id = *id;
    out.push_back(r);
  }
  return out;
}

// SYSTOR '17: `Timestamp,Response,IOType,LUN,Offset,Size` with that header.
absl::StatusOr<std::vector<Request>> ParseSystor(std::string_view data, std::string_view source) {
  const std::array<trace::table::Column, 5> columns = {
      {{"Timestamp", true}, {"IOType", true}, {"LUN", true}, {"Offset", true}, {"Size", true}}};
  std::vector<Request> out;
  absl::Status s = trace::table::ScanTable(
      data, source, columns, {.unknown_columns = trace::table::UnknownColumns::kIgnore},
      [&](const trace::table::Row& row) -> absl::Status {
        Request r;
        int64_t offset = 0;
        if (row.value(1) != "R" && row.value(1) != "W") return row.Error(1, "expected R or W");
        if (absl::Status e = ParseSecondsUs(row.value(0), source, row.line, "Timestamp", &r.time);
            !e.ok())
          return e;
        if (absl::Status e = trace::table::ParseQuantity(row, 3, &offset); !e.ok()) return e;
        if (absl::Status e = trace::table::ParseQuantity(row, 4, &r.size); !e.ok()) return e;
        absl::StatusOr<uint64_t> id = BlockId(
            row.value(2), static_cast<uint64_t>(offset) / kBlockBytes, source, row.line, "LUN");
        if (!id.ok()) return id.status();
        r.id = *id;
        out.push_back(r);
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return out;
}

// Tencent CBS: `timestamp,offset,size,is_write,volume_id`, offset and size in sectors.
absl::StatusOr<std::vector<Request>> ParseTencentCbs(std::string_view data,
                                                     std::string_view source) {
  static constexpr std::string_view kLayout = "timestamp,offset,size,is_write,volume_id";
  std::vector<Request> out;
  trace::LineScanner lines(data);
  std::string_view line;
  int64_t n = 0;
  while (lines.Next(&line, &n)) {
    std::array<std::string_view, 5> f;
    if (absl::Status s = FieldCount(source, n, SplitFields(line, ',', &f), 5, kLayout, line);
        !s.ok())
      return s;
    Request r;
    uint64_t offset = 0;
    int64_t sectors = 0;
    if (absl::Status s = ParseSecondsUs(f[0], source, n, "timestamp", &r.time); !s.ok()) return s;
    if (absl::Status s = ParseU64(f[1], source, n, "offset", &offset); !s.ok()) return s;
    if (absl::Status s = ParseI64(f[2], source, n, "size", &sectors); !s.ok()) return s;
    if (absl::Status s = CheckOneOf(f[3], "0", "1", source, n, "is_write"); !s.ok()) return s;
    if (sectors > std::numeric_limits<int64_t>::max() / int64_t{kBlockBytes}) {
      return trace::FieldError(source, n, "size", "integer out of range", f[2]);
    }
    absl::StatusOr<uint64_t> id = BlockId(f[4], offset, source, n, "volume_id");
    if (!id.ok()) return id.status();
    r.size = sectors * int64_t{kBlockBytes};
    r.id = *id;
    out.push_back(r);
  }
  return out;
}

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian; Howard Hinnant's
// days_from_civil algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// YYYYMMDDhhmmss (UTC) as Unix microseconds.
absl::Status ParseCivilTimeUs(std::string_view field, std::string_view source, int64_t line,
                              int64_t* us) {
  auto bad = [&] {
    return trace::FieldError(source, line, "time", "expected YYYYMMDDhhmmss", field);
  };
  if (field.size() != 14 || field.find_first_not_of("0123456789") != std::string_view::npos) {
    return bad();
  }
  auto num = [&](size_t pos, size_t len) {
    int64_t v = 0;
    for (size_t i = pos; i < pos + len; ++i) v = v * 10 + (field[i] - '0');
    return v;
  };
  const int64_t y = num(0, 4), mo = num(4, 2), d = num(6, 2);
  const int64_t h = num(8, 2), mi = num(10, 2), sec = num(12, 2);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
    return bad();
  }
  *us = ((DaysFromCivil(y, mo, d) * 24 + h) * 3600 + mi * 60 + sec) * kMicrosPerSecond;
  return absl::OkStatus();
}

// FNV-1a over `s`, continuing from `h`.
uint64_t Fnv1a(std::string_view s, uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Tencent photo: `time md5 format spec size cached terminal latency`, space separated.
absl::StatusOr<std::vector<Request>> ParseTencentPhoto(std::string_view data,
                                                       std::string_view source) {
  static constexpr std::string_view kLayout = "time md5 format spec size cached terminal latency";
  std::vector<Request> out;
  trace::LineScanner lines(data);
  std::string_view line;
  int64_t n = 0;
  while (lines.Next(&line, &n)) {
    std::array<std::string_view, 8> f;
    if (absl::Status s = FieldCount(source, n, SplitBlanks(line, &f), 8, kLayout, line); !s.ok())
      return s;
    Request r;
    uint64_t photo = 0;
    if (absl::Status s = ParseCivilTimeUs(f[0], source, n, &r.time); !s.ok()) return s;
    const std::string_view hex = f[1].substr(0, 16);
    auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), photo, 16);
    if (f[1].size() < 16 || ec != std::errc() || ptr != hex.data() + hex.size() ||
        f[1].find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
      return trace::FieldError(source, n, "md5", "expected at least 16 hex digits", f[1]);
    }
    if (absl::Status s = ParseI64(f[4], source, n, "size", &r.size); !s.ok()) return s;
    // The rendition (format, spec) is part of the object: mix it into the photo's bits.
    r.id = photo ^ Fnv1a(f[3], Fnv1a(f[2]));
    out.push_back(r);
  }
  return out;
}

// VMware vscsi, libCacheSim's two record layouts (trace.h).
struct VscsiLayout {
  size_t bytes, ver, len, lbn, ts;
};
constexpr VscsiLayout kVscsi1{32, 14, 4, 16, 24};
constexpr VscsiLayout kVscsi2{40, 2, 8, 16, 24};

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // little-endian hosts, as the format is
  return v;
}

// The version byte of the record at `index` of `layout` (the high byte of `ver`).
int VscsiVersion(std::string_view data, const VscsiLayout& layout, size_t index) {
  return Load<uint16_t>(data.data() + index * layout.bytes + layout.ver) >> 8;
}

absl::StatusOr<std::vector<Request>> ParseVscsi(std::string_view data, std::string_view source) {
  if (data.empty()) return std::vector<Request>();
  // As libCacheSim: version 2 if the first (up to) two records say 2, else version 1 if they say
  // 1.
  auto says = [&](const VscsiLayout& layout, int version) {
    const size_t n = std::min<size_t>(2, data.size() / layout.bytes);
    for (size_t i = 0; i < n; ++i) {
      if (VscsiVersion(data, layout, i) != version) return false;
    }
    return n > 0;
  };
  const VscsiLayout* layout = says(kVscsi2, 2) ? &kVscsi2 : says(kVscsi1, 1) ? &kVscsi1 : nullptr;
  if (layout == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        AbslView(source), ": record 1: not a vscsi trace (no version 1 or 2 record header)"));
  }
  const int version = layout == &kVscsi2 ? 2 : 1;
  const size_t n = data.size() / layout->bytes;
  if (data.size() % layout->bytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(source), ": record ", n + 1, ": truncated vscsi version ", version,
                     " record (", data.size() % layout->bytes, " of ", layout->bytes, " bytes)"));
  }
  std::vector<Request> out(n);
  for (size_t i = 0; i < n; ++i) {
    const char* p = data.data() + i * layout->bytes;
    const uint64_t ts = Load<uint64_t>(p + layout->ts);
    if (VscsiVersion(data, *layout, i) != version) {
      return absl::InvalidArgumentError(absl::StrCat(AbslView(source), ": record ", i + 1,
                                                     ": version ", VscsiVersion(data, *layout, i),
                                                     " in a version ", version, " trace"));
    }
    if (ts > uint64_t{std::numeric_limits<int64_t>::max()}) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(source), ": record ", i + 1, ": timestamp ", ts, " out of range"));
    }
    out[i].time = static_cast<int64_t>(ts);
    out[i].id = Load<uint64_t>(p + layout->lbn);
    out[i].size = Load<uint32_t>(p + layout->len);
  }
  return out;
}

absl::StatusOr<std::vector<Request>> ParseCsv(std::string_view data, std::string_view source,
                                              const CsvColumns& csv) {
  const std::array<trace::table::Column, 3> columns = {
      {{csv.time, true}, {csv.id, true}, {csv.size, true}}};
  std::vector<Request> out;
  absl::Status s = trace::table::ScanTable(
      data, source, columns, {.unknown_columns = trace::table::UnknownColumns::kIgnore},
      [&](const trace::table::Row& row) -> absl::Status {
        Request r;
        int64_t id = 0;
        // Seconds (the CloudPhysics csv's vscsi time / 1e6), kept in microseconds.
        if (row.has(0) && !row.value(0).empty()) {
          if (absl::Status e = ParseSecondsUs(row.value(0), source, row.line, csv.time, &r.time);
              !e.ok())
            return e;
        }
        if (absl::Status e = trace::table::ParseQuantity(row, 1, &id); !e.ok()) return e;
        if (absl::Status e = trace::table::ParseQuantity(row, 2, &r.size); !e.ok()) return e;
        r.id = static_cast<uint64_t>(id);
        out.push_back(r);
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return out;
}

struct FormatInfo {
  TraceFormat format;
  std::string_view name;
  bool has_time_and_sizes;
};

constexpr std::array<FormatInfo, 11> kFormats = {{
    {TraceFormat::kOracleGeneral, "oracleGeneral", true},
    {TraceFormat::kCsv, "csv", true},
    {TraceFormat::kTxt, "txt", false},
    {TraceFormat::kLis, "lis", false},
    {TraceFormat::kLirs, "lirs", false},
    {TraceFormat::kCache2k, "cache2k", false},
    {TraceFormat::kVscsi, "vscsi", true},
    {TraceFormat::kMsr, "msr", true},
    {TraceFormat::kSystor, "systor", true},
    {TraceFormat::kTencentCbs, "tencent-cbs", true},
    {TraceFormat::kTencentPhoto, "tencent-photo", true},
}};

const FormatInfo& Info(TraceFormat format) {
  for (const FormatInfo& f : kFormats) {
    if (f.format == format) return f;
  }
  SEEDANCE_CHECK(false) << "unknown TraceFormat " << static_cast<int>(format);
  return kFormats[0];
}

}  // namespace

absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(AbslView(name));
  for (const FormatInfo& f : kFormats) {
    if (lower == absl::AsciiStrToLower(AbslView(f.name))) return f.format;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown trace format '", trace::QuoteValue(name),
                                                 "'; expected one of ", TraceFormatList()));
}

std::string_view TraceFormatName(TraceFormat format) { return Info(format).name; }

std::string TraceFormatList(std::string_view separator) {
  return absl::StrJoin(kFormats, AbslView(separator),
                       [](std::string* out, const FormatInfo& f) { out->append(f.name); });
}

bool TraceHasTime(TraceFormat format) { return Info(format).has_time_and_sizes; }

bool TraceHasSizes(TraceFormat format) { return Info(format).has_time_and_sizes; }

absl::StatusOr<TraceFormat> TraceFormatFromPath(std::string_view path) {
  const size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::string_view dir = slash == std::string_view::npos ? "" : path.substr(0, slash);
  const std::string_view folder =
      dir.substr(dir.rfind('/') == std::string_view::npos ? 0 : dir.rfind('/') + 1);
  for (std::string_view z : {".zst", ".xz", ".gz", ".bz2"}) {
    if (name.ends_with(z)) name.remove_suffix(z.size());
  }
  static constexpr std::array<std::pair<std::string_view, TraceFormat>, 4> kPrefixes = {{
      {"msr", TraceFormat::kMsr},
      {"systor", TraceFormat::kSystor},
      {"tencent-cbs", TraceFormat::kTencentCbs},
      {"tencent-photo", TraceFormat::kTencentPhoto},
  }};
  for (const auto& [prefix, format] : kPrefixes) {
    if (name.starts_with(prefix)) return format;
  }
  if (name.find(".oracleGeneral") != std::string_view::npos) return TraceFormat::kOracleGeneral;
  static constexpr std::array<std::pair<std::string_view, TraceFormat>, 4> kSuffixes = {{
      {".lis", TraceFormat::kLis},
      {".vscsi", TraceFormat::kVscsi},
      {".csv", TraceFormat::kCsv},
      {".txt", TraceFormat::kTxt},
  }};
  for (const auto& [suffix, format] : kSuffixes) {
    if (name.ends_with(suffix)) return format;
  }
  if (name.ends_with(".trace") && folder == "lirs") return TraceFormat::kLirs;
  if (name.ends_with(".trace") && folder == "cache2k") return TraceFormat::kCache2k;
  return absl::NotFoundError(absl::StrCat("cannot tell the format of '", trace::QuoteValue(path),
                                          "' from its name; name one of ", TraceFormatList()));
}

absl::StatusOr<std::string> MaybeDecompress(std::string data, std::string_view source) {
  const std::string_view d = data;
  if (d.starts_with("\x28\xB5\x2F\xFD")) return Unzstd(d, source);
  if (d.starts_with(std::string_view("\xFD"
                                     "7zXZ\0",
                                     6)))
    return Unxz(d, source);
  if (d.starts_with("\x1F\x8B")) return Gunzip(d, source);
  // "BZh" and a block size digit 1-9.
  if (d.size() >= 4 && d.starts_with("BZh") && d[3] >= '1' && d[3] <= '9') {
    return Bunzip2(d, source);
  }
  return data;
}

absl::StatusOr<std::vector<Request>> ParseTrace(std::string_view data, std::string_view source,
                                                TraceFormat format, const CsvColumns& csv) {
  switch (format) {
    case TraceFormat::kOracleGeneral:
      return ParseOracleGeneral(data, source);
    case TraceFormat::kCache2k:
      return ParseCache2k(data, source);
    case TraceFormat::kCsv:
      return ParseCsv(data, source, csv);
    case TraceFormat::kTxt:
    case TraceFormat::kLis:
    case TraceFormat::kLirs:
      return ParseLines(data, source, format);
    case TraceFormat::kVscsi:
      return ParseVscsi(data, source);
    case TraceFormat::kMsr:
      return ParseMsr(data, source);
    case TraceFormat::kSystor:
      return ParseSystor(data, source);
    case TraceFormat::kTencentCbs:
      return ParseTencentCbs(data, source);
    case TraceFormat::kTencentPhoto:
      return ParseTencentPhoto(data, source);
  }
  return absl::InvalidArgumentError("unknown trace format");
}

absl::StatusOr<std::vector<Request>> ReadTrace(const std::string& path, TraceFormat format,
                                               const CsvColumns& csv) {
  absl::StatusOr<std::string> raw = base::ReadInput(path, base::InputKind::kTrace);
  if (!raw.ok()) return raw.status();
  absl::StatusOr<std::string> data = MaybeDecompress(*std::move(raw), path);
  if (!data.ok()) return data.status();
  return ParseTrace(*data, path, format, csv);
}

void ComputeNextAccess(std::vector<Request>* trace) {
  absl::flat_hash_map<uint64_t, int64_t> next;
  next.reserve(trace->size() / 2);
  for (int64_t i = static_cast<int64_t>(trace->size()) - 1; i >= 0; --i) {
    Request& r = (*trace)[i];
    auto [it, inserted] = next.try_emplace(r.id, i);
    r.next_access_vtime = inserted ? kNeverAgain : it->second;
    it->second = i;
  }
}

}  // namespace seedance::cache
