// Internal to seedance_trace: the CSV table scanner the trace readers share (cluster CSVs, job
// traces). The dialect is the one documented in seedance/trace/csv_reader.h: columns matched by
// header name, no quoting, blanks trimmed, blank lines skipped; every error names the source,
// the 1-based line and the field.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/trace/input_error.h"
#include "seedance/trace/line_scanner.h"

namespace seedance::trace::table {

// A table never has more columns than this (the pod schema has 11).
constexpr size_t kMaxColumns = 16;

struct Column {
  std::string_view name;
  bool required;
};

// Debian's Abseil is built with its own absl::string_view, which does not convert implicitly from
// std::string_view.
inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// Trims blanks, then strips a surrounding pair of double quotes (or a lone leading one).
inline std::string_view CleanField(std::string_view s) {
  s = Trim(s);
  if (!s.empty() && s.front() == '"') {
    s.remove_prefix(1);
    if (!s.empty() && s.back() == '"') s.remove_suffix(1);
  }
  return s;
}

// One data row: the cleaned value of each schema column (empty when the file lacks it).
struct Row {
  std::string_view source;
  int64_t line = 0;
  std::span<const Column> columns;
  std::array<std::string_view, kMaxColumns> values{};
  std::array<bool, kMaxColumns> present{};

  std::string_view value(int col) const { return values[col]; }
  bool has(int col) const { return present[col]; }
  absl::Status Error(int col, std::string_view what) const {
    return FieldError(source, line, columns[col].name, what, values[col]);
  }
};

// Parses an int64 that must consume the whole field; reports what was wrong as a field error.
inline absl::Status ParseInt(const Row& row, int col, int64_t* out) {
  std::string_view s = row.value(col);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) return row.Error(col, "integer out of range");
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return row.Error(col, "expected an integer");
  }
  *out = v;
  return absl::OkStatus();
}

// Parses an integer in [lo, hi].
inline absl::Status ParseInRange(const Row& row, int col, int64_t lo, int64_t hi, int64_t* out) {
  if (absl::Status s = ParseInt(row, col, out); !s.ok()) return s;
  if (*out < lo) {
    return row.Error(col, lo == 0 ? "must be non-negative" : absl::StrCat("must be >= ", lo));
  }
  if (*out > hi) return row.Error(col, absl::StrCat("must be in ", lo, "..", hi));
  return absl::OkStatus();
}

inline absl::Status ParseQuantity(const Row& row, int col, int64_t* out) {
  return ParseInRange(row, col, 0, std::numeric_limits<int64_t>::max(), out);
}

// A time in seconds: empty (or an absent column) gives `if_empty`; otherwise a non-negative
// integer, or a finite non-negative decimal that is rounded down.
inline absl::Status ParseTime(const Row& row, int col, int64_t if_empty, int64_t* out) {
  std::string_view s = row.value(col);
  if (!row.has(col) || s.empty()) {
    *out = if_empty;
    return absl::OkStatus();
  }
  const char* end = s.data() + s.size();
  int64_t i = 0;
  auto [iptr, iec] = std::from_chars(s.data(), end, i);
  if (iec == std::errc() && iptr == end) {
    if (i < 0) return row.Error(col, "must be non-negative seconds");
    *out = i;
    return absl::OkStatus();
  }
  double d = 0;
  auto [dptr, dec] = std::from_chars(s.data(), end, d);
  if (dec != std::errc() || dptr != end || !std::isfinite(d)) {
    return row.Error(col, "expected non-negative seconds");
  }
  if (d < 0) return row.Error(col, "must be non-negative seconds");
  // 2^63 is exactly representable; anything at or beyond it does not fit an int64.
  if (d >= 9223372036854775808.0) return row.Error(col, "time out of range");
  *out = static_cast<int64_t>(d);
  return absl::OkStatus();
}

inline size_t CountFields(std::string_view line) {
  return static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
}

// Scans a table with the given schema, calling `parse_row(row)` for each data row. The header
// is the first non-blank line; every header name must be a schema column, at most once, and
// every required column must be present.
template <typename ParseRow>
inline absl::Status ScanTable(std::string_view text, std::string_view source,
                       std::span<const Column> columns, ParseRow parse_row) {
  // A UTF-8 byte order mark is not part of the first header name.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  LineScanner lines(text);
  std::string_view line;
  int64_t line_no = 0;
  if (!lines.Next(&line, &line_no)) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(source), ":1: empty file: expected a header row"));
  }

  // field_col[i] = schema column of the file's i-th field.
  std::array<int, kMaxColumns> field_col{};
  std::array<bool, kMaxColumns> seen{};
  size_t num_fields = 0;
  for (size_t pos = 0; pos <= line.size();) {
    size_t comma = std::min(line.find(',', pos), line.size());
    std::string_view name = CleanField(line.substr(pos, comma - pos));
    pos = comma + 1;
    auto it = std::find_if(columns.begin(), columns.end(),
                           [name](const Column& c) { return c.name == name; });
    if (it == columns.end()) {
      std::string what = "unknown header; expected columns among ";
      for (const Column& c : columns) {
        if (&c != columns.data()) what += ',';
        what += c.name;
      }
      return FieldError(source, line_no, name, what, name);
    }
    int col = static_cast<int>(it - columns.begin());
    if (seen[col]) return FieldError(source, line_no, name, "duplicate header", name);
    seen[col] = true;
    // No overflow: each field is a distinct schema column, and columns.size() <= kMaxColumns.
    field_col[num_fields++] = col;
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].required && !seen[c]) {
      return FieldError(source, line_no, columns[c].name, "missing required header", line);
    }
  }

  Row row;
  row.source = source;
  row.columns = columns;
  row.present = seen;
  while (lines.Next(&line, &line_no)) {
    row.line = line_no;
    size_t n = 0;
    size_t pos = 0;
    for (; pos <= line.size() && n < num_fields; ++n) {
      size_t comma = std::min(line.find(',', pos), line.size());
      row.values[field_col[n]] = CleanField(line.substr(pos, comma - pos));
      pos = comma + 1;
    }
    if (n < num_fields) {
      const int col = field_col[n];
      return FieldError(source, line_no, columns[col].name,
                        absl::StrCat("row has ", n, " fields, header has ", num_fields), line);
    }
    if (pos <= line.size()) {
      const size_t total = CountFields(line);
      size_t comma = std::min(line.find(',', pos), line.size());
      return FieldError(source, line_no, absl::StrCat("(column ", num_fields + 1, ")"),
                        absl::StrCat("row has ", total, " fields, header has ", num_fields),
                        CleanField(line.substr(pos, comma - pos)));
    }
    if (absl::Status s = parse_row(row); !s.ok()) return s;
  }
  return absl::OkStatus();
}

inline size_t CountLines(std::string_view text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}


}  // namespace seedance::trace::table
