// Strict parsers for command-line values, shared by every subcommand so that each numeric flag
// accepts and refuses the same things: NaN, infinities, trailing garbage, integer overflow and
// values outside the flag's range are errors (kInvalidArgument or kOutOfRange) whose message
// names the flag, the accepted range (printed readably) and the value given (clipped).
// Durations take unit suffixes (300s, 5m, 72h, 1h30m, 250ms); sizes take K/M/G/T (powers of 1024).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::base {

// A closed or half-open interval of accepted values.
struct NumRange {
  double min = -std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::max();
  bool min_open = false;  // (min, ... instead of [min, ...
  bool max_open = false;
};
inline NumRange Closed(double lo, double hi) { return {lo, hi, false, false}; }
inline NumRange Positive(double hi = std::numeric_limits<double>::max()) {
  return {0, hi, true, false};
}
inline NumRange NonNegative(double hi = std::numeric_limits<double>::max()) {
  return {0, hi, false, false};
}

// "[0.01, 100]", "(0, 600]", ">= 0", "> 0": the range as a person would write it.
std::string DescribeRange(const NumRange& range);
// A number as a person would read it: up to 6 significant digits, no 310-digit expansions.
std::string FormatNumber(double v);

// A finite decimal number within `range`.
absl::StatusOr<double> ParseDouble(std::string_view text, std::string_view flag,
                                   const NumRange& range);
// A decimal integer within [lo, hi] (no sign for unsigned targets, no fraction, no overflow).
absl::StatusOr<int64_t> ParseInt64(std::string_view text, std::string_view flag, int64_t lo,
                                   int64_t hi);
absl::StatusOr<uint64_t> ParseUint64(std::string_view text, std::string_view flag, uint64_t lo,
                                     uint64_t hi);

// A duration in seconds: a bare number in `bare_unit_s` seconds (1 = seconds, 3600 = hours), or
// one or more number+unit terms (ns, us, ms, s, m, h, d), e.g. "90s", "1h30m", "0.5h". The result
// must be finite and within `range` (in seconds).
absl::StatusOr<double> ParseDuration(std::string_view text, std::string_view flag,
                                     double bare_unit_s, const NumRange& range);
// The unit of a bare number, for messages and help: "seconds", "hours", ...
std::string UnitName(double unit_s);

// A byte size: "1048576", "64M", "64MiB", "2G" (powers of 1024), within [lo, hi].
absl::StatusOr<int64_t> ParseByteSize(std::string_view text, std::string_view flag, int64_t lo,
                                      int64_t hi);

// A seed list: "7", "42-51" or a comma list of both ("1,5-9"); at most `max_seeds` seeds in all.
// Ranges ending at 2^64-1 work; descending ranges, empty items and overflow are errors.
absl::StatusOr<std::vector<uint64_t>> ParseSeedList(std::string_view text, std::string_view flag,
                                                    size_t max_seeds = 100000);

// The closest of `candidates` to `word` by edit distance, or "" when none is close enough to be
// a likely typo (for "did you mean ...?").
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace seedance::base
