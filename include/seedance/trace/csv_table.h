// The one CSV table scanner of Seedance's text readers: the cluster trace CSVs (csv_reader.h), the
// job trace and tenant files (job_trace.h), the LLM request traces (serving/request_trace.h) and
// the operator profiles (model/calibration.h). Header-only, like input_error.h and
// line_scanner.h, so that a library that does not link seedance_trace (seedance_serving,
// seedance_model_cost) can use it.
//
// Dialect, the same for every reader:
//  * "\n" or "\r\n" ends a line; a UTF-8 byte order mark at the start of the text is skipped;
//    blank lines (only spaces and tabs) are skipped anywhere but still counted in line numbers.
//  * The header is the first non-blank line. Columns are matched by header name, so their order
//    may vary. A schema column may appear at most once and a required one must appear. A header
//    name that is not a schema column is an error, or, with UnknownColumns::kIgnore, a column whose
//    values are never looked at (any number of them, repeated names included).
//  * Every comma separates fields: there is no CSV quoting. Spaces and tabs around a field (and a
//    header name) are trimmed, then a surrounding pair of double quotes, or a lone leading one, is
//    stripped.
//  * Every data row has exactly as many fields as the header. A header with no rows is valid.
// Errors are absl::InvalidArgumentError reading "SOURCE:LINE: field 'NAME': what (got 'VALUE')"
// (input_error.h; LINE is 1-based and counts every line). A header error names the column and
// quotes the header name or, for a missing column, the header line; a row with too few fields
// names the header of the first missing field and quotes the row; a row with too many names
// "(column N)", N the first extra field, and quotes it. The one error without a field is an empty
// (or blank) text: "SOURCE:1: empty file: expected a header row".
//
// Thread-safety: everything here is a pure function of its arguments, or a TableReader value that
// one thread uses at a time; distinct readers may run concurrently. The text (and the schema) must
// outlive the reader and the rows it yields, which are views into the text.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "seedance/trace/input_error.h"
#include "seedance/trace/line_scanner.h"

namespace seedance::trace::table {

// A schema has at most this many columns (the pod schema has 11, the operator profile 21). A file
// read with UnknownColumns::kIgnore may have any number of columns.
inline constexpr size_t kMaxColumns = 32;

struct Column {
  std::string_view name = {};
  bool required = false;
};

// What a header name that is not a schema column is.
enum class UnknownColumns {
  kError,   // an error naming it (the cluster and job trace schemas are closed)
  kIgnore,  // a column that is not read (request traces and profiles carry columns of their own)
};

struct TableOptions {
  UnknownColumns unknown_columns = UnknownColumns::kError;
};

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
  std::string_view source = {};
  int64_t line = 0;
  std::span<const Column> columns = {};
  std::array<std::string_view, kMaxColumns> values{};
  std::array<bool, kMaxColumns> present{};

  std::string_view value(int col) const { return values[col]; }
  bool has(int col) const { return present[col]; }
  // "SOURCE:LINE: field 'COLUMN': WHAT (got 'VALUE')" for column `col` of this row.
  absl::Status Error(int col, std::string_view what) const {
    return FieldError(source, line, columns[col].name, what, values[col]);
  }
};

// A table being read: Open reads the header, Next yields the data rows in file order.
class TableReader {
 public:
  // Reads the header of `text` (`source` names it in messages) against the schema `columns`.
  template <size_t N>
  static absl::StatusOr<TableReader> Open(std::string_view text, std::string_view source,
                                          const std::array<Column, N>& columns,
                                          TableOptions options = {}) {
    static_assert(N <= kMaxColumns, "a schema has at most kMaxColumns columns");
    TableReader reader(text, source, columns);
    if (absl::Status s = reader.ReadHeader(options); !s.ok()) return s;
    return reader;
  }

  // Whether the header has schema column `col`.
  bool has(int col) const { return present_[col]; }
  int64_t header_line() const { return header_line_; }

  // OK when the header has column `col`, else the error a missing required column gives. For a
  // reader whose required columns depend on which others are present (the profile kinds).
  absl::Status Require(int col) const {
    if (present_[col]) return absl::OkStatus();
    return HeaderError(columns_[col].name, "missing required header");
  }

  // "SOURCE:HEADER_LINE: field 'FIELD': WHAT (got 'HEADER LINE')".
  absl::Status HeaderError(std::string_view field, std::string_view what) const {
    return FieldError(source_, header_line_, field, what, header_);
  }

  // Reads the next data row into `row`. False at the end of the text (`*status` OK) or on a row
  // with the wrong number of fields (`*status` the error).
  bool Next(Row* row, absl::Status* status) {
    *status = absl::OkStatus();
    std::string_view line;
    int64_t line_no = 0;
    if (!lines_.Next(&line, &line_no)) return false;
    row->source = source_;
    row->line = line_no;
    row->columns = columns_;
    row->present = present_;
    const size_t num_fields = field_col_.size();
    size_t n = 0;
    size_t pos = 0;
    for (; pos <= line.size() && n < num_fields; ++n) {
      const size_t comma = std::min(line.find(',', pos), line.size());
      if (field_col_[n] >= 0) {
        row->values[field_col_[n]] = CleanField(line.substr(pos, comma - pos));
      }
      pos = comma + 1;
    }
    if (n < num_fields) {
      *status = FieldError(source_, line_no, field_name_[n],
                           absl::StrCat("row has ", n, " fields, header has ", num_fields), line);
      return false;
    }
    if (pos <= line.size()) {
      const size_t total = static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
      const size_t comma = std::min(line.find(',', pos), line.size());
      *status = FieldError(source_, line_no, absl::StrCat("(column ", num_fields + 1, ")"),
                           absl::StrCat("row has ", total, " fields, header has ", num_fields),
                           CleanField(line.substr(pos, comma - pos)));
      return false;
    }
    return true;
  }

 private:
  TableReader(std::string_view text, std::string_view source, std::span<const Column> columns)
      : lines_(text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text),
        source_(source),
        columns_(columns) {}

  absl::Status ReadHeader(TableOptions options) {
    if (!lines_.Next(&header_, &header_line_)) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(source_), ":1: empty file: expected a header row"));
    }
    for (size_t pos = 0; pos <= header_.size();) {
      const size_t comma = std::min(header_.find(',', pos), header_.size());
      const std::string_view name = CleanField(header_.substr(pos, comma - pos));
      pos = comma + 1;
      auto it = std::find_if(columns_.begin(), columns_.end(),
                             [name](const Column& c) { return c.name == name; });
      int col = -1;
      if (it != columns_.end()) {
        col = static_cast<int>(it - columns_.begin());
        if (present_[col]) return FieldError(source_, header_line_, name, "duplicate header", name);
        present_[col] = true;
      } else if (options.unknown_columns == UnknownColumns::kError) {
        std::string what = "unknown header; expected columns among ";
        for (const Column& c : columns_) {
          if (&c != columns_.data()) what += ',';
          what += c.name;
        }
        return FieldError(source_, header_line_, name, what, name);
      }
      field_col_.push_back(col);
      field_name_.push_back(name);
    }
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (columns_[c].required) {
        if (absl::Status s = Require(static_cast<int>(c)); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  LineScanner lines_;
  std::string_view source_;
  std::span<const Column> columns_;
  std::string_view header_;
  int64_t header_line_ = 0;
  std::array<bool, kMaxColumns> present_{};
  std::vector<int> field_col_;                // schema column of each header field, -1 if none
  std::vector<std::string_view> field_name_;  // each header field's cleaned name
};

// Scans a table with the given schema, calling `parse_row(row)` (which returns an absl::Status)
// for each data row; the first error, the scanner's or parse_row's, ends the scan.
template <size_t N, typename ParseRow>
absl::Status ScanTable(std::string_view text, std::string_view source,
                       const std::array<Column, N>& columns, TableOptions options,
                       ParseRow parse_row) {
  absl::StatusOr<TableReader> reader = TableReader::Open(text, source, columns, options);
  if (!reader.ok()) return reader.status();
  Row row;
  absl::Status status;
  while (reader->Next(&row, &status)) {
    if (absl::Status s = parse_row(row); !s.ok()) return s;
  }
  return status;
}

template <size_t N, typename ParseRow>
absl::Status ScanTable(std::string_view text, std::string_view source,
                       const std::array<Column, N>& columns, ParseRow parse_row) {
  return ScanTable(text, source, columns, TableOptions{}, std::move(parse_row));
}

// Field parsers shared by the readers; each reports what was wrong as a field error of the row.

// Parses an int64 that must consume the whole field.
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

// A table of numbers with any number of columns and no schema (a training data set: features and
// a label, seedance_train). The same dialect as above: the first non-blank line names the columns,
// every row has as many fields, each a finite decimal number (from_chars: no leading '+').
struct NumericTable {
  std::vector<std::string> names;  // the header's cleaned names, in column order
  std::vector<double> values;      // row-major, rows() x names.size()
  std::vector<int64_t> lines;      // each row's line number
  size_t rows() const { return lines.size(); }
};

inline absl::StatusOr<NumericTable> ReadNumericTable(std::string_view text,
                                                     std::string_view source) {
  LineScanner lines(text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text);
  std::string_view header;
  int64_t header_line = 0;
  if (!lines.Next(&header, &header_line)) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(source), ":1: empty file: expected a header row"));
  }
  NumericTable table;
  for (size_t pos = 0; pos <= header.size();) {
    const size_t comma = std::min(header.find(',', pos), header.size());
    table.names.emplace_back(CleanField(header.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  const size_t columns = table.names.size();
  std::string_view line;
  int64_t line_no = 0;
  while (lines.Next(&line, &line_no)) {
    size_t n = 0;
    size_t pos = 0;
    for (; pos <= line.size(); ++n) {
      const size_t comma = std::min(line.find(',', pos), line.size());
      const std::string_view field = CleanField(line.substr(pos, comma - pos));
      const std::string_view name =
          n < columns ? std::string_view(table.names[n]) : std::string_view("(extra column)");
      if (n >= columns) {
        const size_t total = static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
        return FieldError(source, line_no, absl::StrCat("(column ", columns + 1, ")"),
                          absl::StrCat("row has ", total, " fields, header has ", columns), field);
      }
      double v = 0;
      auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc() || ptr != field.data() + field.size() || !std::isfinite(v)) {
        return FieldError(source, line_no, name, "must be a finite number", field);
      }
      table.values.push_back(v);
      pos = comma + 1;
    }
    if (n < columns) {
      return FieldError(source, line_no, table.names[n],
                        absl::StrCat("row has ", n, " fields, header has ", columns), line);
    }
    table.lines.push_back(line_no);
  }
  return table;
}

// Lines in `text` (an upper bound on its rows, for reserving).
inline size_t CountLines(std::string_view text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

}  // namespace seedance::trace::table
