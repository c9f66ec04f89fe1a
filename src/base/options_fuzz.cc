// libFuzzer target: every flag-value parser must return a value or a status on any bytes, never
// crash, hang or accept a non-finite number; an accepted value must be inside its range, and the
// text helpers must always produce valid UTF-8 without control characters where promised.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace base = seedance::base;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto v = base::ParseDouble(text, "--x", base::Closed(-5, 5)); v.ok()) {
    SEEDANCE_CHECK(std::isfinite(*v) && *v >= -5 && *v <= 5) << *v;
  }
  if (auto v = base::ParseInt64(text, "--n", -7, 1000); v.ok()) {
    SEEDANCE_CHECK(*v >= -7 && *v <= 1000) << *v;
  }
  (void)base::ParseUint64(text, "--seed", 0, UINT64_MAX);
  if (auto v = base::ParseDuration(text, "--duration", 3600, base::Positive(1e9)); v.ok()) {
    SEEDANCE_CHECK(std::isfinite(*v) && *v > 0 && *v <= 1e9) << *v;
  }
  if (auto v = base::ParseByteSize(text, "--max-input-size", 1, INT64_MAX); v.ok()) {
    SEEDANCE_CHECK(*v >= 1) << *v;
  }
  if (auto v = base::ParseSeedList(text, "--seeds", 1000); v.ok()) {
    SEEDANCE_CHECK(!v->empty() && v->size() <= 1000) << v->size();
  }
  SEEDANCE_CHECK(base::IsValidUtf8(base::SanitizeUtf8(text)));
  const std::string shown = base::ForTerminal(text);
  SEEDANCE_CHECK(base::IsValidUtf8(shown));
  for (unsigned char c : shown) SEEDANCE_CHECK(c >= 0x20 && c != 0x7F) << int{c};
  const std::string html = base::HtmlEscape(text);
  SEEDANCE_CHECK(html.find('<') == std::string::npos && html.find('"') == std::string::npos);
  (void)base::ClosestMatch(text.substr(0, 64), {"simulate", "profile", "analyze"});
  return 0;
}
