#include "seedance/base/json_fields.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::base {
namespace {

// Debian's Abseil has its own string_view.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

template <class Json>
absl::Status Mismatch(std::string_view path, std::string_view what, const Json& v) {
  return JsonError(path, absl::StrCat("must be ", Sv(what), " (got ", DescribeJson(v), ")"));
}

}  // namespace

constexpr std::string_view kPathPayload = "seedance.dev/json-path";

absl::StatusOr<nlohmann::json> ParseJsonDocument(std::string_view text, std::string_view file,
                                                 int max_depth) {
  if (JsonNestingDepth(text, max_depth) > max_depth) {
    return absl::InvalidArgumentError(absl::StrCat(
        ForTerminal(std::string(file)), ": JSON nested deeper than ", max_depth, " levels"));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const size_t byte = std::min(e.byte, text.size());
    const auto line = std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(byte), '\n');
    return absl::InvalidArgumentError(absl::StrCat(ForTerminal(std::string(file)), ":", line + 1,
                                                   ": not JSON (byte ", e.byte, ")"));
  } catch (const nlohmann::json::exception& e) {
    // A number beyond a double (1e999): the parser names no position, its message the token.
    return absl::InvalidArgumentError(
        absl::StrCat(ForTerminal(std::string(file)), ": not JSON: ", Clip(e.what(), 160)));
  }
  return j;
}

absl::Status JsonError(std::string_view path, std::string_view message) {
  absl::Status s = absl::InvalidArgumentError(absl::StrCat(Sv(path), ": ", Sv(message)));
  s.SetPayload(Sv(kPathPayload), absl::Cord(Sv(path)));
  return s;
}

std::string JsonErrorPath(const absl::Status& s) {
  const auto path = s.GetPayload(Sv(kPathPayload));  // Abseil's optional
  return path ? std::string(*path) : std::string();
}

template <class Json>
std::string DescribeJson(const Json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return Clip(DumpJson(v), 40);
}

std::string QuoteForMessage(std::string_view s) { return absl::StrCat("\"", Clip(s, 80), "\""); }

template <class Json>
const Json* JsonMember(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

template <class Json>
absl::Status CheckJsonKind(const Json& v, std::string_view path, JsonKind kind) {
  switch (kind) {
    case JsonKind::kObject:
      return v.is_object() ? absl::OkStatus() : Mismatch(path, "an object", v);
    case JsonKind::kArray:
      return v.is_array() ? absl::OkStatus() : Mismatch(path, "an array", v);
    case JsonKind::kString:
      return v.is_string() ? absl::OkStatus() : Mismatch(path, "a string", v);
    case JsonKind::kBool:
      return v.is_boolean() ? absl::OkStatus() : Mismatch(path, "true or false", v);
    case JsonKind::kInteger:
      return v.is_number_integer() ? absl::OkStatus() : Mismatch(path, "an integer", v);
  }
  return Mismatch(path, "a known kind", v);
}

template <class Json>
absl::StatusOr<const Json*> JsonMemberOf(const Json& obj, std::string_view key,
                                         std::string_view path, JsonKind kind,
                                         bool null_is_absent) {
  const Json* m = JsonMember(obj, key);
  if (m == nullptr || (null_is_absent && m->is_null())) return nullptr;
  if (absl::Status st = CheckJsonKind(*m, JsonPathChild(path, key), kind); !st.ok()) return st;
  return m;
}

template <class Json>
absl::Status ReadJsonInt(const Json* v, std::string_view path, int64_t lo, int64_t hi,
                         int64_t* out) {
  if (v == nullptr) return absl::OkStatus();
  const std::string what = lo == kAnyInt64Min && hi == kAnyInt64Max
                               ? std::string("an integer")
                               : absl::StrCat("an integer in ", lo, "..", hi);
  int64_t x = 0;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->template get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi)) return Mismatch(path, what, *v);
    x = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    x = v->template get<int64_t>();
  } else {
    return Mismatch(path, what, *v);
  }
  if (x < lo || x > hi) return Mismatch(path, what, *v);
  *out = x;
  return absl::OkStatus();
}

template <class Json>
absl::Status ReadJsonInt32(const Json* v, std::string_view path, int64_t lo, int64_t hi,
                           int32_t* out) {
  int64_t x = *out;
  if (absl::Status s = ReadJsonInt(v, path, lo, hi, &x); !s.ok()) return s;
  *out = static_cast<int32_t>(x);
  return absl::OkStatus();
}

template <class Json>
absl::Status ReadJsonNumber(const Json* v, std::string_view path, double lo, double hi,
                            double* out) {
  if (v == nullptr) return absl::OkStatus();
  const std::string what =
      lo == -kAnyDouble && hi == kAnyDouble
          ? std::string("a number")
          : absl::StrCat("a number in ", FormatNumber(lo), "..", FormatNumber(hi));
  if (!v->is_number()) return Mismatch(path, what, *v);
  const double x = v->template get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) return Mismatch(path, what, *v);
  *out = x;
  return absl::OkStatus();
}

template <class Json>
absl::Status ReadJsonString(const Json* v, std::string_view path, size_t max_len,
                            std::string* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_string()) return Mismatch(path, "a string", *v);
  const std::string& s = v->template get_ref<const std::string&>();
  if (s.size() > max_len) {
    return JsonError(path,
                     absl::StrCat("must be at most ", max_len, " bytes (got ", s.size(), ")"));
  }
  *out = s;
  return absl::OkStatus();
}

template <class Json>
absl::Status ReadJsonBool(const Json* v, std::string_view path, bool* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_boolean()) return Mismatch(path, "true or false", *v);
  *out = v->template get<bool>();
  return absl::OkStatus();
}

template <class Json>
absl::Status ReadJsonStringMap(const Json* v, std::string_view path, size_t max_entries,
                               std::map<std::string, std::string>* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_object()) return Mismatch(path, "an object of strings", *v);
  if (v->size() > max_entries) {
    return JsonError(
        path, absl::StrCat("must have at most ", max_entries, " entries (got ", v->size(), ")"));
  }
  std::map<std::string, std::string> read;
  for (const auto& item : v->items()) {
    if (!item.value().is_string()) {
      return Mismatch(JsonPathChild(path, item.key()), "a string", item.value());
    }
    read[item.key()] = item.value().template get<std::string>();
  }
  *out = std::move(read);
  return absl::OkStatus();
}

template <class Json>
absl::Status CheckJsonKeys(const Json& obj, std::string_view path,
                           const std::vector<std::string>& allowed) {
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    const std::string near = ClosestMatch(Clip(key, 64), allowed);
    std::string message = absl::StrCat("unknown key ", QuoteForMessage(key));
    if (!near.empty()) absl::StrAppend(&message, "; did you mean \"", near, "\"?");
    std::string list;
    for (const std::string& a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", a);
    absl::StrAppend(&message, " (allowed: ", list, ")");
    return JsonError(JsonPathChild(path, key), message);
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------------------------ JsonFields

template <class Json>
JsonFields<Json>::JsonFields(const Json& obj, std::string path, std::string prefix)
    : obj_(obj), path_(std::move(path)), prefix_(std::move(prefix)) {
  if (!obj_.is_object()) Keep(Mismatch(path_, "an object", obj_));
}

template <class Json>
void JsonFields<Json>::Number(std::string_view key, double* out, double lo, double hi) {
  Read(key,
       [&](const Json* m, const std::string& at) { return ReadJsonNumber(m, at, lo, hi, out); });
}

template <class Json>
void JsonFields<Json>::String(std::string_view key, std::string* out, bool required,
                              size_t max_len) {
  const Json* m = Member(key);
  if (!ok()) return;
  if (m == nullptr) {
    if (required) Fail(key, absl::StrCat("missing required key ", QuoteForMessage(key)));
    return;
  }
  Keep(ReadJsonString(m, At(key), max_len, out));
  if (ok() && required && out->empty()) Fail(key, "must not be empty");
}

template <class Json>
void JsonFields<Json>::Bool(std::string_view key, bool* out) {
  Read(key, [&](const Json* m, const std::string& at) { return ReadJsonBool(m, at, out); });
}

template <class Json>
const Json* JsonFields<Json>::Member(std::string_view key) {
  if (std::find(seen_.begin(), seen_.end(), key) == seen_.end()) seen_.emplace_back(key);
  return JsonMember(obj_, key);
}

template <class Json>
void JsonFields<Json>::NoOthers() {
  if (ok() && obj_.is_object()) Keep(CheckJsonKeys(obj_, path_, seen_));
}

template <class Json>
void JsonFields<Json>::Fail(std::string_view key, std::string_view why) {
  Keep(JsonError(key.empty() ? path_ : At(key), why));
}

template <class Json>
std::string JsonFields<Json>::At(std::string_view key) const {
  return JsonPathChild(path_, key);
}

template <class Json>
void JsonFields<Json>::Keep(const absl::Status& st) {
  if (!ok() || st.ok()) return;
  status_ = absl::InvalidArgumentError(absl::StrCat(prefix_, st.message()));
  st.ForEachPayload([this](absl::string_view url, const absl::Cord& payload) {
    status_.SetPayload(url, payload);
  });
}

#define SEEDANCE_JSON_FIELDS_FOR(J)                                                               \
  template std::string DescribeJson<J>(const J&);                                                 \
  template const J* JsonMember<J>(const J&, std::string_view);                                    \
  template absl::Status CheckJsonKind<J>(const J&, std::string_view, JsonKind);                   \
  template absl::StatusOr<const J*> JsonMemberOf<J>(const J&, std::string_view, std::string_view, \
                                                    JsonKind, bool);                              \
  template absl::Status ReadJsonInt<J>(const J*, std::string_view, int64_t, int64_t, int64_t*);   \
  template absl::Status ReadJsonInt32<J>(const J*, std::string_view, int64_t, int64_t, int32_t*); \
  template absl::Status ReadJsonNumber<J>(const J*, std::string_view, double, double, double*);   \
  template absl::Status ReadJsonString<J>(const J*, std::string_view, size_t, std::string*);      \
  template absl::Status ReadJsonBool<J>(const J*, std::string_view, bool*);                       \
  template absl::Status ReadJsonStringMap<J>(const J*, std::string_view, size_t,                  \
                                             std::map<std::string, std::string>*);                \
  template absl::Status CheckJsonKeys<J>(const J&, std::string_view,                              \
                                         const std::vector<std::string>&);                        \
  template class JsonFields<J>;

SEEDANCE_JSON_FIELDS_FOR(nlohmann::json)
SEEDANCE_JSON_FIELDS_FOR(nlohmann::ordered_json)

#undef SEEDANCE_JSON_FIELDS_FOR

}  // namespace seedance::base
