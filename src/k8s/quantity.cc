#include "seedance/k8s/quantity.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "seedance/base/text.h"

namespace seedance::k8s {
namespace {

using int128 = __int128;

constexpr int kMaxDigits = 18;

absl::Status NotQuantity(std::string_view text, const char* why) {
  return absl::InvalidArgumentError(absl::StrCat("'", base::ForTerminal(base::Clip(text, 40)),
                                                 "' is not a Kubernetes quantity (", why,
                                                 "; e.g. 500m, 2, 1.5, 16Gi, 100M)"));
}

// A parsed quantity: mantissa x 10^dec x 2^bin.
struct Parsed {
  int64_t mantissa = 0;
  int dec = 0;
  int bin = 0;
};

// The suffix's exponents; false for an unknown suffix.
bool SuffixExponents(std::string_view s, int* dec, int* bin) {
  *dec = 0;
  *bin = 0;
  if (s.empty()) return true;
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [name, e] : kBinary) {
    if (s == name) {
      *bin = e;
      return true;
    }
  }
  static constexpr std::pair<std::string_view, int> kDecimal[] = {{"n", -9}, {"u", -6}, {"m", -3},
                                                                  {"k", 3},  {"M", 6},  {"G", 9},
                                                                  {"T", 12}, {"P", 15}, {"E", 18}};
  for (const auto& [name, e] : kDecimal) {
    if (s == name) {
      *dec = e;
      return true;
    }
  }
  if (s[0] != 'e' && s[0] != 'E') return false;
  std::string_view rest = s.substr(1);
  bool neg = false;
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
    neg = rest[0] == '-';
    rest.remove_prefix(1);
  }
  if (rest.empty() || rest.size() > 3) return false;
  int e = 0;
  for (char c : rest) {
    if (c < '0' || c > '9') return false;
    e = e * 10 + (c - '0');
  }
  *dec = neg ? -e : e;
  return true;
}

absl::StatusOr<Parsed> Parse(std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    if (s[0] == '-') return NotQuantity(text, "negative");
    s.remove_prefix(1);
  }
  std::string digits;  // significant digits, leading zeros dropped
  int frac = 0;        // digits after the point kept in `digits`
  bool point = false, any = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any = true;
    if (digits.empty() && c == '0') {
      if (point) ++frac;  // 0.005: the zeros still scale
      continue;
    }
    digits += c;
    if (point) ++frac;
  }
  if (!any) return NotQuantity(text, "no digits");
  Parsed p;
  if (!SuffixExponents(s.substr(i), &p.dec, &p.bin)) return NotQuantity(text, "unknown suffix");
  // Trailing zeros after the point carry no value.
  while (frac > 0 && !digits.empty() && digits.back() == '0') {
    digits.pop_back();
    --frac;
  }
  if (static_cast<int>(digits.size()) > kMaxDigits) {
    return NotQuantity(text, "more than 18 significant digits");
  }
  for (char c : digits) p.mantissa = p.mantissa * 10 + (c - '0');
  if (digits.empty()) frac = 0;
  p.dec -= frac;
  return p;
}

int128 Pow10(int e) {
  int128 v = 1;
  for (int k = 0; k < e; ++k) v *= 10;
  return v;
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantity(std::string_view text, Unit unit, Round round) {
  absl::StatusOr<Parsed> p = Parse(text);
  if (!p.ok()) return p.status();
  if (p->mantissa == 0) return 0;
  const int dec = p->dec + unit.decimal_exp;
  const int bin = p->bin + unit.binary_exp;
  // int64 holds 19 digits: a positive exponent beyond that (with a non-zero mantissa) overflows,
  // and a negative one beyond 40 digits leaves 0 or 1 whatever the mantissa.
  const absl::Status too_large = absl::InvalidArgumentError(
      absl::StrCat("'", base::ForTerminal(base::Clip(text, 40)), "' is too large"));
  if (dec > 19 || bin > 63) return too_large;
  int128 num = p->mantissa;
  int128 den = 1;
  if (dec >= 0) {
    if (__builtin_mul_overflow(num, Pow10(dec), &num)) return too_large;
  } else {
    if (dec < -30) return round == Round::kUp ? 1 : 0;
    den = Pow10(-dec);
  }
  if (bin >= 0) {
    if (__builtin_mul_overflow(num, static_cast<int128>(1) << bin, &num)) return too_large;
  } else {
    if (bin < -64) return round == Round::kUp ? 1 : 0;
    if (__builtin_mul_overflow(den, static_cast<int128>(1) << -bin, &den)) {
      return round == Round::kUp ? 1 : 0;
    }
  }
  int128 q = num / den;
  if (round == Round::kUp && q * den != num) ++q;
  if (q > static_cast<int128>(INT64_MAX)) return too_large;
  return static_cast<int64_t>(q);
}

}  // namespace seedance::k8s
