// LLM request trace readers: Azure 2023 CSV, Mooncake JSONL, ShareGPT length statistics.

#include "seedance/serving/request_trace.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <random>
#include <string>
#include <system_error>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/trace/csv_table.h"
#include "seedance/trace/input_error.h"
#include "seedance/trace/line_scanner.h"

namespace seedance::serving {
namespace {

using trace::FieldError;
using trace::LineError;
using trace::table::Column;
using trace::table::Row;
using trace::table::ScanTable;
using trace::table::TableOptions;
using trace::table::UnknownColumns;

// The CSV traces carry columns of their own (ShareGPT's num_total_tokens, pd_ratio): columns are
// matched by name and the others are not read.
constexpr TableOptions kOtherColumnsIgnored = {.unknown_columns = UnknownColumns::kIgnore};

// Column order fixes the indexes below; a request's prompt column comes right before its output.
enum AzureColumn { kAzureTimestamp, kAzureContextTokens, kAzureGeneratedTokens };
constexpr std::array<Column, 3> kAzureColumns = {{
    {"TIMESTAMP", true},
    {"ContextTokens", true},
    {"GeneratedTokens", true},
}};
enum ShareGptColumn { kShareGptPrefillTokens, kShareGptDecodeTokens };
constexpr std::array<Column, 2> kShareGptColumns = {{
    {"num_prefill_tokens", true},
    {"num_decode_tokens", true},
}};

constexpr int kMooncakeBlockTokens = 512;
// Mooncake timestamps beyond this many milliseconds are garbage, not a trace.
constexpr double kMaxTimestampMs = 1e15;
// A Mooncake line nests two levels (the object and hash_ids); deeper input is refused before the
// JSON parser sees it (a 100000-deep line would exhaust the stack).
constexpr int kMaxJsonDepth = 64;

// A value quoted back in a message: long digit runs are cut so that a message never carries a
// 40-digit number.
std::string ShownValue(std::string_view s) {
  constexpr size_t kMax = 24;
  if (s.size() <= kMax) return std::string(s);
  return absl::StrCat(trace::AbslView(s.substr(0, kMax)), "... (", s.size(), " characters)");
}

absl::Status ParseLength(std::string_view source, int64_t line, std::string_view field,
                         std::string_view s, int64_t min, int32_t* out) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return FieldError(source, line, field, "too large for a token count", ShownValue(s));
  }
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return FieldError(source, line, field, "expected an integer token count", ShownValue(s));
  }
  if (v < 0) return FieldError(source, line, field, "must be non-negative", s);
  if (v < min) return FieldError(source, line, field, absl::StrCat("must be >= ", min), s);
  if (v > INT32_MAX / 2) return FieldError(source, line, field, "too large", s);
  *out = static_cast<int32_t>(v);
  return absl::OkStatus();
}

// Reads a request's prompt and output token counts (each >= 1) from the row's columns `prompt`
// and `prompt + 1`.
absl::Status ParseTokenCounts(const Row& row, int prompt, TraceRequest* r) {
  if (absl::Status s = ParseLength(row.source, row.line, row.columns[prompt].name,
                                   row.value(prompt), 1, &r->prompt_tokens);
      !s.ok()) {
    return s;
  }
  return ParseLength(row.source, row.line, row.columns[prompt + 1].name, row.value(prompt + 1), 1,
                     &r->output_tokens);
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ParseDigits(std::string_view s, size_t pos, size_t len, int64_t* out) {
  if (pos + len > s.size()) return false;
  int64_t v = 0;
  for (size_t i = pos; i < pos + len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// "YYYY-MM-DD HH:MM:SS[.fraction]" -> whole seconds since the epoch and the fraction.
bool ParseTimestamp(std::string_view s, int64_t* secs, double* frac) {
  int64_t y, mo, d, h, mi, se;
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':') {
    return false;
  }
  if (!ParseDigits(s, 0, 4, &y) || !ParseDigits(s, 5, 2, &mo) || !ParseDigits(s, 8, 2, &d) ||
      !ParseDigits(s, 11, 2, &h) || !ParseDigits(s, 14, 2, &mi) || !ParseDigits(s, 17, 2, &se)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || se > 60) {
    return false;  // 2023-02-31 is not a date
  }
  *frac = 0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20) return false;
    double scale = 0.1;
    for (size_t i = 20; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      *frac += (s[i] - '0') * scale;
      scale /= 10;
    }
  }
  *secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
  return true;
}

absl::Status CheckOrder(std::string_view source, int64_t line, std::string_view field,
                        std::string_view got, double prev, double now) {
  if (now < prev) {
    return FieldError(source, line, field,
                      absl::StrCat("timestamps must not decrease (previous row is ", prev,
                                   " s after the start, this one ", now, " s)"),
                      got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RequestTrace> ParseAzureTrace(std::string_view text, std::string_view source) {
  RequestTrace trace;
  trace.source = std::string(source);
  trace.format = TraceFormat::kAzure;
  int64_t secs0 = 0;
  double frac0 = 0, prev = 0;
  auto parse_row = [&](const Row& row) -> absl::Status {
    TraceRequest r;
    const std::string_view ts = row.value(kAzureTimestamp);
    int64_t secs;
    double frac;
    if (!ParseTimestamp(ts, &secs, &frac)) {
      return FieldError(source, row.line, "TIMESTAMP", "expected YYYY-MM-DD HH:MM:SS[.fff]",
                        ShownValue(ts));
    }
    if (trace.requests.empty()) {
      secs0 = secs;
      frac0 = frac;
    }
    r.arrival_s = static_cast<double>(secs - secs0) + (frac - frac0);
    if (absl::Status s = CheckOrder(source, row.line, "TIMESTAMP", ts, prev, r.arrival_s);
        !s.ok()) {
      return s;
    }
    prev = r.arrival_s;
    if (absl::Status s = ParseTokenCounts(row, kAzureContextTokens, &r); !s.ok()) return s;
    trace.requests.push_back(std::move(r));
    return absl::OkStatus();
  };
  if (absl::Status s = ScanTable(text, source, kAzureColumns, kOtherColumnsIgnored, parse_row);
      !s.ok()) {
    return s;
  }
  return trace;
}

absl::StatusOr<RequestTrace> ParseMooncakeTrace(std::string_view text, std::string_view source) {
  RequestTrace trace;
  trace.source = std::string(source);
  trace.format = TraceFormat::kMooncake;
  trace.prefix_block_tokens = kMooncakeBlockTokens;
  trace::LineScanner lines(text);
  std::string_view line;
  int64_t no = 0;
  double prev = 0;
  while (lines.Next(&line, &no)) {
    if (base::JsonNestingDepth(line, kMaxJsonDepth) > kMaxJsonDepth) {
      return LineError(source, no,
                       absl::StrCat("JSON nested deeper than ", kMaxJsonDepth, " levels"));
    }
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return LineError(
          source, no,
          absl::StrCat("expected one JSON object per line (got '", trace::QuoteValue(line), "')"));
    }
    auto length = [&](const char* key, int64_t min, int32_t* out) -> absl::Status {
      auto it = j.find(key);
      if (it == j.end()) return FieldError(source, no, key, "missing key", line);
      if (!it->is_number_integer()) {
        return FieldError(source, no, key, "expected an integer token count", base::DumpJson(*it));
      }
      return ParseLength(source, no, key, base::DumpJson(*it), min, out);
    };
    TraceRequest r;
    auto ts = j.find("timestamp");
    if (ts == j.end()) return FieldError(source, no, "timestamp", "missing key", line);
    if (!ts->is_number() || !std::isfinite(ts->get<double>()) || ts->get<double>() < 0 ||
        ts->get<double>() > kMaxTimestampMs) {
      return FieldError(source, no, "timestamp",
                        "expected non-negative milliseconds below 1e15 (31,000 years)",
                        base::DumpJson(*ts));
    }
    r.arrival_s = ts->get<double>() / 1000.0;
    if (absl::Status s =
            CheckOrder(source, no, "timestamp", base::DumpJson(*ts), prev, r.arrival_s);
        !s.ok()) {
      return s;
    }
    prev = r.arrival_s;
    if (absl::Status s = length("input_length", 1, &r.prompt_tokens); !s.ok()) return s;
    if (absl::Status s = length("output_length", 1, &r.output_tokens); !s.ok()) return s;
    auto ids = j.find("hash_ids");
    if (ids == j.end()) return FieldError(source, no, "hash_ids", "missing key", line);
    if (!ids->is_array())
      return FieldError(source, no, "hash_ids", "expected an array", base::DumpJson(*ids));
    const size_t max_blocks =
        static_cast<size_t>((r.prompt_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens);
    if (ids->size() > max_blocks) {
      return FieldError(
          source, no, "hash_ids",
          absl::StrCat("more ids than 512-token blocks of input_length (", max_blocks, ")"),
          absl::StrCat(ids->size(), " ids"));
    }
    r.prefix_block_ids.reserve(ids->size());
    for (const auto& id : *ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0) {
        return FieldError(source, no, "hash_ids", "expected non-negative integers",
                          base::DumpJson(id));
      }
      r.prefix_block_ids.push_back(id.get<uint64_t>());
    }
    trace.requests.push_back(std::move(r));
  }
  return trace;
}

absl::StatusOr<RequestTrace> ParseShareGptTrace(std::string_view text, std::string_view source,
                                                double poisson_rate, uint64_t seed) {
  if (!(poisson_rate > 0) || !std::isfinite(poisson_rate)) {
    return absl::InvalidArgumentError(absl::StrCat(trace::AbslView(source),
                                                   ": the Poisson arrival rate must be > 0 (got ",
                                                   poisson_rate, ")"));
  }
  RequestTrace trace;
  trace.source = std::string(source);
  trace.format = TraceFormat::kShareGpt;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(poisson_rate);
  double t = 0;
  auto parse_row = [&](const Row& row) -> absl::Status {
    TraceRequest r;
    if (absl::Status s = ParseTokenCounts(row, kShareGptPrefillTokens, &r); !s.ok()) return s;
    if (!trace.requests.empty()) t += gap(rng);
    r.arrival_s = t;
    trace.requests.push_back(std::move(r));
    return absl::OkStatus();
  };
  if (absl::Status s = ScanTable(text, source, kShareGptColumns, kOtherColumnsIgnored, parse_row);
      !s.ok()) {
    return s;
  }
  return trace;
}

absl::StatusOr<RequestTrace> ReadRequestTrace(const std::string& path,
                                              const TraceReadOptions& options) {
  // One reader for every input: a directory, /dev/zero or a silent FIFO is an error naming the
  // path and the OS error, never "empty file" or "unknown trace format".
  absl::StatusOr<std::string> text_or = base::ReadInput(path, base::InputKind::kTrace);
  if (!text_or.ok()) return text_or.status();
  const std::string& text = *text_or;
  const std::string source = base::ForTerminal(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return LineError(source, 1,
                     text.empty() ? "empty trace file (expected a header or JSONL requests)"
                                  : "blank trace file (expected a header or JSONL requests)");
  }
  TraceFormat format = options.format;
  if (format == TraceFormat::kAuto) {
    if (path.size() >= 6 && (path.ends_with(".jsonl") || path.ends_with(".json"))) {
      format = TraceFormat::kMooncake;
    } else {
      const size_t eol = text.find('\n');
      const std::string_view first = std::string_view(text).substr(0, eol);
      if (first.find("TIMESTAMP") != std::string_view::npos) {
        format = TraceFormat::kAzure;
      } else if (first.find("num_prefill_tokens") != std::string_view::npos) {
        format = TraceFormat::kShareGpt;
      } else if (!first.empty() && trace::table::Trim(first).starts_with("{")) {
        format = TraceFormat::kMooncake;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            source,
            ":1: unknown trace format: expected an Azure header (TIMESTAMP,ContextTokens,"
            "GeneratedTokens), a ShareGPT header (num_prefill_tokens,num_decode_tokens) or "
            "Mooncake JSONL (got '",
            trace::QuoteValue(first), "'; --trace-format names the format)"));
      }
    }
  }
  absl::StatusOr<RequestTrace> trace;
  switch (format) {
    case TraceFormat::kMooncake:
      trace = ParseMooncakeTrace(text, source);
      break;
    case TraceFormat::kShareGpt:
      trace = ParseShareGptTrace(text, source, options.poisson_rate, options.seed);
      break;
    default:
      trace = ParseAzureTrace(text, source);
      break;
  }
  if (!trace.ok()) return trace;
  if (trace->requests.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no requests (the trace has no data rows)"));
  }
  if (options.max_requests > 0 &&
      static_cast<int64_t>(trace->requests.size()) > options.max_requests) {
    trace->requests.resize(static_cast<size_t>(options.max_requests));
  }
  return trace;
}

double IdealPrefixHitRatio(const RequestTrace& trace) {
  if (trace.prefix_block_tokens <= 0) return 0;
  absl::flat_hash_set<uint64_t> seen;
  double hit = 0, total = 0;
  for (const TraceRequest& r : trace.requests) {
    size_t k = 0;
    while (k < r.prefix_block_ids.size() && seen.contains(r.prefix_block_ids[k])) ++k;
    hit += std::min<double>(static_cast<double>(k) * trace.prefix_block_tokens, r.prompt_tokens);
    total += r.prompt_tokens;
    seen.insert(r.prefix_block_ids.begin(), r.prefix_block_ids.end());
  }
  return total > 0 ? hit / total : 0;
}

}  // namespace seedance::serving
