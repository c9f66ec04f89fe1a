#include "seedance/base/json_path.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "seedance/base/text.h"

namespace seedance::base {
namespace {

constexpr size_t kMaxPathBytes = 200;
constexpr size_t kMaxKeyBytes = 64;

// Debian's Abseil has its own string_view.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool IsIdentifier(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes || (key[0] >= '0' && key[0] <= '9') ||
      key[0] == '-') {
    return false;
  }
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string JsonPathChild(std::string_view path, std::string_view key) {
  std::string out =
      IsIdentifier(key)
          ? absl::StrCat(Sv(path), ".", Sv(key))
          : absl::StrCat(Sv(path), "[", DumpJson(nlohmann::json(Clip(key, kMaxKeyBytes))), "]");
  return Clip(out, kMaxPathBytes);
}

std::string JsonPathIndex(std::string_view path, size_t i) {
  return Clip(absl::StrCat(Sv(path), "[", i, "]"), kMaxPathBytes);
}

std::string JsonPathParent(std::string_view path) {
  if (path.size() >= 4 && path.substr(path.size() - 2) == "\"]") {
    // A quoted key: it opens at the last '"' that no backslash escapes.
    for (size_t i = path.size() - 2; i-- > 0;) {
      if (path[i] != '"') continue;
      size_t slashes = 0;
      while (slashes < i && path[i - 1 - slashes] == '\\') ++slashes;
      if (slashes % 2 == 0) {
        return i > 0 && path[i - 1] == '[' ? std::string(path.substr(0, i - 1)) : std::string();
      }
    }
    return std::string();
  }
  const size_t pos = path.find_last_of(".[");
  return pos == std::string_view::npos ? std::string() : std::string(path.substr(0, pos));
}

}  // namespace seedance::base
