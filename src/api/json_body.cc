#include "json_body.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/api/api.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::api::internal {
namespace {

std::string TypeMismatch(std::string_view what, const Json& v) {
  return absl::StrCat("must be ", Sv(what), " (got ", Describe(v), ")");
}

}  // namespace

std::string Describe(const Json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return base::Clip(base::DumpJson(v), 40);
}

std::string QuoteForMessage(std::string_view s) {
  return absl::StrCat("\"", base::Clip(s, 80), "\"");
}

absl::Status CheckKeys(const Json& obj, std::string_view path,
                       const std::vector<std::string>& allowed) {
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();
    bool known = false;
    for (const std::string& a : allowed) known |= a == key;
    if (known) continue;
    const std::string near = base::ClosestMatch(base::Clip(key, 64), allowed);
    std::string message = absl::StrCat("unknown key ", QuoteForMessage(key));
    if (!near.empty()) absl::StrAppend(&message, "; did you mean \"", near, "\"?");
    std::string list;
    for (const std::string& a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", a);
    absl::StrAppend(&message, " (allowed: ", list, ")");
    return FieldError(ChildPath(path, key), message);
  }
  return absl::OkStatus();
}

const Json* Member(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

absl::Status ReadInt(const Json* v, std::string_view path, int64_t lo, int64_t hi, int64_t* out) {
  if (v == nullptr) return absl::OkStatus();
  const std::string what = absl::StrCat("an integer in ", lo, "..", hi);
  int64_t x = 0;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return FieldError(path, TypeMismatch(what, *v));
    x = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else {
    return FieldError(path, TypeMismatch(what, *v));
  }
  if (x < lo || x > hi) return FieldError(path, TypeMismatch(what, *v));
  *out = x;
  return absl::OkStatus();
}

absl::Status ReadInt32(const Json* v, std::string_view path, int64_t lo, int64_t hi, int32_t* out) {
  int64_t x = *out;
  if (absl::Status s = ReadInt(v, path, lo, hi, &x); !s.ok()) return s;
  *out = static_cast<int32_t>(x);
  return absl::OkStatus();
}

absl::Status ReadNumber(const Json* v, std::string_view path, double lo, double hi, double* out) {
  if (v == nullptr) return absl::OkStatus();
  const std::string what =
      absl::StrCat("a number in ", base::FormatNumber(lo), "..", base::FormatNumber(hi));
  if (!v->is_number()) return FieldError(path, TypeMismatch(what, *v));
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) return FieldError(path, TypeMismatch(what, *v));
  *out = x;
  return absl::OkStatus();
}

absl::Status ReadString(const Json* v, std::string_view path, size_t max_len, std::string* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_string()) return FieldError(path, TypeMismatch("a string", *v));
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_len) {
    return FieldError(path,
                      absl::StrCat("must be at most ", max_len, " bytes (got ", s.size(), ")"));
  }
  *out = s;
  return absl::OkStatus();
}

absl::Status ReadBool(const Json* v, std::string_view path, bool* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_boolean()) return FieldError(path, TypeMismatch("true or false", *v));
  *out = v->get<bool>();
  return absl::OkStatus();
}

absl::Status ReadStringMap(const Json* v, std::string_view path, size_t max_entries,
                           std::map<std::string, std::string>* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_object()) return FieldError(path, TypeMismatch("an object of strings", *v));
  if (v->size() > max_entries) {
    return FieldError(
        path, absl::StrCat("must have at most ", max_entries, " entries (got ", v->size(), ")"));
  }
  out->clear();
  for (const auto& item : v->items()) {
    if (!item.value().is_string()) {
      return FieldError(ChildPath(path, item.key()), TypeMismatch("a string", item.value()));
    }
    (*out)[item.key()] = item.value().get<std::string>();
  }
  return absl::OkStatus();
}

}  // namespace seedance::api::internal
