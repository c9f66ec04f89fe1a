// Input error messages shared by the text readers (cluster CSVs, LLM request traces): every
// error names the file (or source), the 1-based line and, where there is one, the field, and
// quotes the offending value clipped and C-escaped so binary garbage cannot garble the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace seedance::trace {

// Longest value quoted back in an error message; longer values are cut with "...".
inline constexpr size_t kMaxQuotedValue = 64;

// Debian's abseil has its own string_view.
inline absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }

// A value as it may appear inside '...' in a message.
inline std::string QuoteValue(std::string_view value) {
  if (value.size() <= kMaxQuotedValue) return absl::CHexEscape(AbslView(value));
  return absl::StrCat(absl::CHexEscape(AbslView(value.substr(0, kMaxQuotedValue))), "...");
}

// "SOURCE:LINE: field 'FIELD': WHAT (got 'VALUE')".
inline absl::Status FieldError(std::string_view source, int64_t line, std::string_view field,
                               std::string_view what, std::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(AbslView(source), ":", line, ": field '",
                                                 QuoteValue(field), "': ", AbslView(what),
                                                 " (got '", QuoteValue(got), "')"));
}

// "SOURCE:LINE: WHAT".
inline absl::Status LineError(std::string_view source, int64_t line, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(AbslView(source), ":", line, ": ", AbslView(what)));
}

}  // namespace seedance::trace
