// The one reader of JSON fields behind Seedance's JSON decoders (API bodies, the server's
// configuration files, Kubernetes objects, Prometheus replies, ...). Every refusal of the checked
// readers is InvalidArgument "PATH: what the value must be
// (got what it was)", PATH in the syntax of base/json_path.h:
//   $.gpu_milli: must be an integer in 0..1000 (got 1500)
//   $.groups[0].name: must be a string (got 12)
//   $.spec.nmae: unknown key "nmae"; did you mean "name"? (allowed: name, replicas)
// A caller adds its own context in front (a file name) or behind (api's field payload). Values
// shown are compact JSON clipped to 40 bytes; an object or array is named, not shown.
//
// ReadJson*(v, path, ...): `v` == nullptr (the member is absent) leaves *out as it is and
// succeeds; otherwise *out is set, or nothing is and the reason is returned. StringField,
// IntField and BoolField are the lenient readers: a fallback instead of an error.
// JsonFields reads one object member by member, keeps the first problem, and refuses a member
// nobody asked for (NoOthers).
//
// For nlohmann::json and nlohmann::ordered_json (the checked readers are explicitly
// instantiated in json_fields.cc; the lenient ones are templates here). Pure functions; a
// JsonFields is not thread-safe.
#ifndef SEEDANCE_BASE_JSON_FIELDS_H_
#define SEEDANCE_BASE_JSON_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace seedance::base {

// The JSON document in `text` (at most `max_depth` levels deep), for a decoder to read with the
// readers below: InvalidArgument "FILE:LINE: not JSON (byte N)" for text that is not JSON, "FILE:
// JSON nested deeper than N levels" (FILE is `file` made safe for a terminal).
absl::StatusOr<nlohmann::json> ParseJsonDocument(std::string_view text, std::string_view file,
                                                 int max_depth = 32);

// ---- Lenient readers: for fields of untrusted documents that only steer (snapshots, apiserver
// and slurmrestd replies), where a wrong type means "not given", never an error.

// j[key] when `j` is an object holding a string there, else `fallback`. Unlike json::value(),
// which throws when the field exists with another type ({"kind": {}}), it never throws.
template <class Json>
std::string StringField(const Json& j, std::string_view key, std::string_view fallback = "") {
  if (!j.is_object()) return std::string(fallback);
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::string(fallback);
  return it->template get<std::string>();
}

// The same for an integer field (a number with no fraction that fits an int64), else `fallback`.
template <class Json>
int64_t IntField(const Json& j, std::string_view key, int64_t fallback = 0) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return fallback;
  if (it->is_number_unsigned() && it->template get<uint64_t>() > uint64_t{INT64_MAX}) {
    return fallback;
  }
  return it->template get<int64_t>();
}

// The same for a boolean field.
template <class Json>
bool BoolField(const Json& j, std::string_view key, bool fallback = false) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it == j.end() || !it->is_boolean() ? fallback : it->template get<bool>();
}

// ---- Checked readers.

// InvalidArgument "PATH: message", carrying PATH for JsonErrorPath.
absl::Status JsonError(std::string_view path, std::string_view message);
// The JSON path a refusal made by JsonError names; "" for any other status.
std::string JsonErrorPath(const absl::Status& s);
// A JSON value for a message: "an object", "an array", or its compact text clipped to 40 bytes.
template <class Json>
std::string DescribeJson(const Json& v);
// A string for a message: in double quotes, clipped to 80 bytes.
std::string QuoteForMessage(std::string_view s);

// The member `key` of `obj`, or nullptr when absent or `obj` is not an object.
template <class Json>
const Json* JsonMember(const Json& obj, std::string_view key);

// Kinds of JSON value a decoder asks for (kInteger: signed or unsigned).
enum class JsonKind { kObject, kArray, kString, kBool, kInteger };
// "must be an object (got X)" when `v` is not of `kind`.
template <class Json>
absl::Status CheckJsonKind(const Json& v, std::string_view path, JsonKind kind);
// The member `key` of `obj` (an object) when it is of `kind`; nullptr when absent or, with
// `null_is_absent` (Kubernetes reads null as unset), null; else `PATH.KEY: must be ...`.
template <class Json>
absl::StatusOr<const Json*> JsonMemberOf(const Json& obj, std::string_view key,
                                         std::string_view path, JsonKind kind,
                                         bool null_is_absent = false);

// "must be an integer in LO..HI (got X)"; the full int64 range reads "must be an integer".
template <class Json>
absl::Status ReadJsonInt(const Json* v, std::string_view path, int64_t lo, int64_t hi,
                         int64_t* out);
template <class Json>
absl::Status ReadJsonInt32(const Json* v, std::string_view path, int64_t lo, int64_t hi,
                           int32_t* out);
// A finite number: "must be a number in LO..HI (got X)"; the full double range reads "must be a
// number".
template <class Json>
absl::Status ReadJsonNumber(const Json* v, std::string_view path, double lo, double hi,
                            double* out);
// "must be a string (got X)", "must be at most N bytes (got M)".
template <class Json>
absl::Status ReadJsonString(const Json* v, std::string_view path, size_t max_len, std::string* out);
// "must be true or false (got X)".
template <class Json>
absl::Status ReadJsonBool(const Json* v, std::string_view path, bool* out);
// An object of string values, at most `max_entries`; *out is replaced.
template <class Json>
absl::Status ReadJsonStringMap(const Json* v, std::string_view path, size_t max_entries,
                               std::map<std::string, std::string>* out);
// The first key of `obj` (an object) not in `allowed`: `PATH.KEY: unknown key "KEY"; did you
// mean "NEAR"? (allowed: A, B)`.
template <class Json>
absl::Status CheckJsonKeys(const Json& obj, std::string_view path,
                           const std::vector<std::string>& allowed);

inline constexpr int64_t kAnyInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kAnyInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr double kAnyDouble = std::numeric_limits<double>::max();

// One object's members, read by key. Each reader records the key as known and does nothing once
// a problem has been found; status() is the first problem, with `prefix` (e.g. "FILE: ") in
// front of its "PATH: ..." message.
template <class Json>
class JsonFields {
 public:
  // `path` names `obj` ("$", "$.groups[0]"); not an object: "PATH: must be an object (got X)".
  JsonFields(const Json& obj, std::string path, std::string prefix = "");

  // Integers of any integral type within [lo, hi] (by default the type's range).
  template <class T>
  void Int(std::string_view key, T* out, int64_t lo = std::numeric_limits<T>::min(),
           int64_t hi = std::numeric_limits<T>::max()) {
    int64_t v = static_cast<int64_t>(*out);
    Read(key, [&](const Json* m, const std::string& at) {
      absl::Status st = ReadJsonInt(m, at, lo, hi, &v);
      if (st.ok()) *out = static_cast<T>(v);
      return st;
    });
  }
  void Number(std::string_view key, double* out, double lo = -kAnyDouble, double hi = kAnyDouble);
  // `required`: absent is `missing required key "KEY"`, and "" is refused ("must not be empty").
  void String(std::string_view key, std::string* out, bool required = false, size_t max_len = 4096);
  void Bool(std::string_view key, bool* out);
  // The raw member (nullptr when absent), for the caller to decode.
  const Json* Member(std::string_view key);
  // Refuses the first key no reader asked for (with a did-you-mean).
  void NoOthers();
  // Records a problem with member `key` ("" = the object itself) unless one is recorded already.
  void Fail(std::string_view key, std::string_view why);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  // The path of the member `key`.
  std::string At(std::string_view key) const;

 private:
  template <class F>
  void Read(std::string_view key, F read) {
    const Json* m = Member(key);
    if (!ok() || m == nullptr) return;
    Keep(read(m, At(key)));
  }
  void Keep(const absl::Status& st);

  const Json& obj_;
  std::string path_;
  std::string prefix_;
  std::vector<std::string> seen_;
  absl::Status status_;
};

}  // namespace seedance::base

#endif  // SEEDANCE_BASE_JSON_FIELDS_H_
