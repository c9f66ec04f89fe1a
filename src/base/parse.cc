// Strict command-line value parsers (parse.h).
#include "seedance/base/parse.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/base/text.h"

namespace seedance::base {
namespace {

// Debian's abseil has its own string_view.
absl::string_view V(std::string_view s) { return {s.data(), s.size()}; }

std::string Got(std::string_view text) { return ForTerminal(Clip(text, 40)); }

absl::Status Invalid(std::string_view flag, std::string_view expected, std::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat(V(flag), ": expected ", V(expected), ", got '", Got(text), "'"));
}

bool InRange(double v, const NumRange& r) {
  if (r.min_open ? !(v > r.min) : !(v >= r.min)) return false;
  if (r.max_open ? !(v < r.max) : !(v <= r.max)) return false;
  return true;
}

absl::Status OutOfRange(std::string_view flag, const NumRange& r, std::string_view text) {
  return absl::OutOfRangeError(
      absl::StrCat(V(flag), ": must be ", DescribeRange(r), ", got '", Got(text), "'"));
}

constexpr double kBig = std::numeric_limits<double>::max();

// Parses a finite decimal number occupying the whole of `text` (no leading/trailing spaces).
bool StrictDouble(std::string_view text, double* out) {
  if (text.empty() || text.size() > 64) return false;
  for (char c : text) {
    if (!(absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
          c == '+' || c == 'e' || c == 'E')) {
      return false;  // no "nan", "inf", hex floats or spaces
    }
  }
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (!std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.6g", v);
}

std::string DescribeRange(const NumRange& r) {
  const bool no_min = r.min <= -kBig;
  const bool no_max = r.max >= kBig;
  if (no_min && no_max) return "a finite number";
  if (no_max) return absl::StrCat(r.min_open ? "> " : ">= ", FormatNumber(r.min));
  if (no_min) return absl::StrCat(r.max_open ? "< " : "<= ", FormatNumber(r.max));
  return absl::StrCat("in ", r.min_open ? "(" : "[", FormatNumber(r.min), ", ",
                      FormatNumber(r.max), r.max_open ? ")" : "]");
}

absl::StatusOr<double> ParseDouble(std::string_view text, std::string_view flag,
                                   const NumRange& range) {
  double v = 0;
  if (!StrictDouble(text, &v)) return Invalid(flag, "a finite number", text);
  if (!InRange(v, range)) return OutOfRange(flag, range, text);
  return v;
}

absl::StatusOr<int64_t> ParseInt64(std::string_view text, std::string_view flag, int64_t lo,
                                   int64_t hi) {
  const std::string range = absl::StrCat("an integer in [", lo, ", ", hi, "]");
  if (text.empty() || text.size() > 24) return Invalid(flag, range, text);
  size_t i = text[0] == '-' || text[0] == '+' ? 1 : 0;
  if (i == text.size()) return Invalid(flag, range, text);
  for (size_t k = i; k < text.size(); ++k) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(text[k]))) {
      return Invalid(flag, range, text);
    }
  }
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || v < lo || v > hi) {
    return absl::OutOfRangeError(absl::StrCat(V(flag), ": must be ", range, ", got '", Got(text), "'"));
  }
  return static_cast<int64_t>(v);
}

absl::StatusOr<uint64_t> ParseUint64(std::string_view text, std::string_view flag, uint64_t lo,
                                     uint64_t hi) {
  const std::string range = absl::StrCat("an integer in [", lo, ", ", hi, "]");
  if (text.empty() || text.size() > 24) return Invalid(flag, range, text);
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return Invalid(flag, range, text);
  }
  const std::string s(text);
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi) {
    return absl::OutOfRangeError(absl::StrCat(V(flag), ": must be ", range, ", got '", Got(text), "'"));
  }
  return static_cast<uint64_t>(v);
}

std::string UnitName(double unit_s) {
  if (unit_s == 1) return "seconds";
  if (unit_s == 60) return "minutes";
  if (unit_s == 3600) return "hours";
  if (unit_s == 86400) return "days";
  if (unit_s == 1e-3) return "milliseconds";
  if (unit_s == 1e-6) return "microseconds";
  return absl::StrCat(FormatNumber(unit_s), "-second units");
}

absl::StatusOr<double> ParseDuration(std::string_view text, std::string_view flag,
                                     double bare_unit_s, const NumRange& range) {
  const std::string expected = absl::StrCat(
      "a duration such as 300s, 5m, 72h or 1h30m (a bare number is in ", UnitName(bare_unit_s),
      ")");
  double bare = 0;
  double seconds = 0;
  if (StrictDouble(text, &bare)) {
    seconds = bare * bare_unit_s;
  } else {
    std::string_view rest = text;
    if (rest.empty() || rest.size() > 64) return Invalid(flag, expected, text);
    while (!rest.empty()) {
      size_t n = 0;
      while (n < rest.size() && (absl::ascii_isdigit(static_cast<unsigned char>(rest[n])) ||
                                 rest[n] == '.')) {
        ++n;
      }
      size_t u = n;
      while (u < rest.size() && absl::ascii_isalpha(static_cast<unsigned char>(rest[u]))) ++u;
      double value = 0;
      if (n == 0 || !StrictDouble(rest.substr(0, n), &value)) return Invalid(flag, expected, text);
      const std::string_view unit = rest.substr(n, u - n);
      double scale;
      if (unit == "ns") {
        scale = 1e-9;
      } else if (unit == "us" || unit == "µs") {
        scale = 1e-6;
      } else if (unit == "ms") {
        scale = 1e-3;
      } else if (unit == "s") {
        scale = 1;
      } else if (unit == "m") {
        scale = 60;
      } else if (unit == "h") {
        scale = 3600;
      } else if (unit == "d") {
        scale = 86400;
      } else {
        return Invalid(flag, expected, text);
      }
      seconds += value * scale;
      rest.remove_prefix(u);
    }
  }
  if (!std::isfinite(seconds)) return Invalid(flag, expected, text);
  if (!InRange(seconds, range)) {
    NumRange shown = range;
    return absl::OutOfRangeError(absl::StrCat(V(flag), ": must be ", DescribeRange(shown),
                                              " seconds, got '", Got(text), "'"));
  }
  return seconds;
}

absl::StatusOr<int64_t> ParseByteSize(std::string_view text, std::string_view flag, int64_t lo,
                                      int64_t hi) {
  const std::string expected = "a size such as 1048576, 64M or 2G";
  size_t n = 0;
  while (n < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[n]))) ++n;
  if (n == 0 || n > 19) return Invalid(flag, expected, text);
  std::string unit = absl::AsciiStrToUpper(std::string(text.substr(n)));
  if (unit.size() == 3 && unit.substr(1) == "IB") unit = unit.substr(0, 1);
  if (unit.size() == 2 && unit[1] == 'B') unit = unit.substr(0, 1);
  int shift;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else {
    return Invalid(flag, expected, text);
  }
  const unsigned long long v = std::strtoull(std::string(text.substr(0, n)).c_str(), nullptr, 10);
  const unsigned long long limit = static_cast<unsigned long long>(hi) >> shift;
  if (v > limit || static_cast<int64_t>(v << shift) < lo) {
    return absl::OutOfRangeError(absl::StrCat(V(flag), ": must be in [", lo, ", ", hi,
                                              "] bytes, got '", Got(text), "'"));
  }
  return static_cast<int64_t>(v << shift);
}

absl::StatusOr<std::vector<uint64_t>> ParseSeedList(std::string_view text, std::string_view flag,
                                                    size_t max_seeds) {
  const std::string expected = "N, A-B or a comma list of both (e.g. 42-51 or 1,5-9)";
  std::vector<uint64_t> out;
  if (text.empty()) return Invalid(flag, expected, text);
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string_view part =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const size_t dash = part.find('-');
    uint64_t a, b;
    if (dash == std::string_view::npos) {
      auto v = ParseUint64(part, flag, 0, kMax);
      if (!v.ok()) return Invalid(flag, expected, text);
      a = b = *v;
    } else {
      auto va = ParseUint64(part.substr(0, dash), flag, 0, kMax);
      auto vb = ParseUint64(part.substr(dash + 1), flag, 0, kMax);
      if (!va.ok() || !vb.ok()) return Invalid(flag, expected, text);
      a = *va;
      b = *vb;
      if (a > b) {
        return absl::InvalidArgumentError(absl::StrCat(V(flag), ": range ", a, "-", b,
                                                       " is descending, got '", Got(text), "'"));
      }
    }
    if (b - a >= max_seeds || out.size() + (b - a) + 1 > max_seeds) {
      return absl::OutOfRangeError(
          absl::StrCat(V(flag), ": at most ", max_seeds, " seeds, got '", Got(text), "'"));
    }
    for (uint64_t k = 0; k <= b - a; ++k) out.push_back(a + k);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const std::string& c : candidates) {
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] != c[j - 1])});
      }
      std::swap(prev, cur);
    }
    const size_t d = prev[c.size()];
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  const size_t allowed = std::max<size_t>(2, word.size() / 3);
  if (best_d <= allowed && best_d < word.size()) return best;
  // A word that starts exactly one candidate ("--roofline-exp") is an abbreviation of it.
  std::string prefix_of;
  for (const std::string& c : candidates) {
    if (word.size() >= 3 && c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
      if (!prefix_of.empty()) return "";
      prefix_of = c;
    }
  }
  return prefix_of;
}

}  // namespace seedance::base
