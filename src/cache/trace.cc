#include "seedance/cache/trace.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <charconv>
#include <cstring>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
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
    out[i].time = time;
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
    if (count > kMaxDecompressedBytes) {
      return trace::FieldError(source, line_no, "n_blocks", "too many blocks", f[1]);
    }
    for (uint64_t b = 0; b < count; ++b) {
      out.push_back(Request{.time = static_cast<int64_t>(out.size()), .id = start + b});
    }
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
        if (absl::Status e = trace::table::ParseTime(row, 0, 0, &r.time); !e.ok()) return e;
        if (absl::Status e = trace::table::ParseQuantity(row, 1, &id); !e.ok()) return e;
        if (absl::Status e = trace::table::ParseQuantity(row, 2, &r.size); !e.ok()) return e;
        r.id = static_cast<uint64_t>(id);
        out.push_back(r);
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return out;
}

}  // namespace

absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  static const std::array<std::pair<std::string_view, TraceFormat>, 6> kNames = {{
      {"oraclegeneral", TraceFormat::kOracleGeneral},
      {"csv", TraceFormat::kCsv},
      {"txt", TraceFormat::kTxt},
      {"lis", TraceFormat::kLis},
      {"lirs", TraceFormat::kLirs},
      {"cache2k", TraceFormat::kCache2k},
  }};
  const std::string lower = absl::AsciiStrToLower(AbslView(name));
  for (const auto& [n, f] : kNames) {
    if (lower == n) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown trace format '", trace::QuoteValue(name),
                   "'; expected one of oracleGeneral, csv, txt, lis, lirs, cache2k"));
}

absl::StatusOr<std::string> MaybeDecompress(std::string data, std::string_view source) {
  const std::string_view d = data;
  if (d.starts_with("\x28\xB5\x2F\xFD")) return Unzstd(d, source);
  if (d.starts_with(std::string_view("\xFD"
                                     "7zXZ\0",
                                     6)))
    return Unxz(d, source);
  if (d.starts_with("\x1F\x8B")) return Gunzip(d, source);
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
