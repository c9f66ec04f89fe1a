// Internal: reading the server's JSON configuration files (--deployments, --node-groups) with
// errors that name the file and the JSON path ("f.json: $.groups[0].max_size: must be >= 0"),
// or the line for text that is not JSON. Not thread-safe.
#ifndef SEEDANCE_SRC_SERVER_CONFIG_JSON_H_
#define SEEDANCE_SRC_SERVER_CONFIG_JSON_H_

#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"

namespace seedance::server {

// The document in `text` (at most 32 levels deep); InvalidArgument "FILE:LINE: not JSON ...".
absl::StatusOr<nlohmann::json> ParseConfigJson(std::string_view text, std::string_view file);

// "FILE: PATH: message of st", InvalidArgument.
absl::Status WithPath(std::string_view file, const std::string& path, const absl::Status& st);

// Reads one object's fields, each by name and JSON path (base/json_path.h); the first problem is
// kept.
class Fields {
 public:
  Fields(const nlohmann::json& j, std::string path, std::string_view file)
      : j_(j), path_(std::move(path)), file_(file) {
    if (!j_.is_object()) Fail("", "expected an object");
  }
  template <class T>
  void Number(const char* key, T* out) {
    seen_.insert(key);
    auto it = j_.find(key);
    if (!ok() || it == j_.end()) return;
    if (!it->is_number()) return Fail(key, "expected a number");
    const double v = it->get<double>();
    if constexpr (std::is_integral_v<T>) {
      if (v != std::floor(v) || v < -1e9 || v > 1e9) return Fail(key, "expected an integer");
    }
    *out = static_cast<T>(v);
  }
  void String(const char* key, std::string* out, bool required = false) {
    seen_.insert(key);
    auto it = j_.find(key);
    if (!ok()) return;
    if (it == j_.end()) {
      if (required) Fail(key, "required");
      return;
    }
    if (!it->is_string()) return Fail(key, "expected a string");
    *out = it->get<std::string>();
    if (required && out->empty()) Fail(key, "must not be empty");
  }
  void Bool(const char* key, bool* out) {
    seen_.insert(key);
    auto it = j_.find(key);
    if (!ok() || it == j_.end()) return;
    if (!it->is_boolean()) return Fail(key, "expected true or false");
    *out = it->get<bool>();
  }
  // The raw member (null when absent); the caller decodes it.
  const nlohmann::json* Member(const char* key) {
    seen_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  // Every key was read: one that was not is a typo, refused.
  void NoOthers() {
    if (!ok() || !j_.is_object()) return;
    for (const auto& [k, v] : j_.items()) {
      if (!seen_.contains(k)) {
        return Fail(k, absl::StrCat("unknown field (known: ", absl::StrJoin(seen_, ", "), ")"));
      }
    }
  }
  void Fail(std::string_view key, std::string_view why) {
    if (!ok()) return;
    // "" names the object itself.
    const std::string at = key.empty() ? path_ : base::JsonPathChild(path_, key);
    status_ =
        absl::InvalidArgumentError(absl::StrCat(base::ForTerminal(std::string(file_)), ": ",
                                                base::ForTerminal(at), ": ", std::string(why)));
  }
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  // The path of the member `key` (base/json_path.h).
  std::string At(std::string_view key) const { return base::JsonPathChild(path_, key); }

 private:
  const nlohmann::json& j_;
  std::string path_;
  std::string_view file_;
  std::set<std::string> seen_;
  absl::Status status_;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SRC_SERVER_CONFIG_JSON_H_
