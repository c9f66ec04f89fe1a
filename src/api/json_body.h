// Internal helpers of seedance_api shared by the decoders (api.cc, node_request.cc, apply.cc):
// JSON paths, and the typed field readers of base/json_fields.h with the field attached to each
// refusal (FieldOf).
#ifndef SEEDANCE_API_JSON_BODY_H_
#define SEEDANCE_API_JSON_BODY_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/base/json_path.h"

namespace seedance::api::internal {

using Json = nlohmann::ordered_json;

// Debian's Abseil has its own string_view.
inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// "$.name" for identifier-like keys, `$["app.kubernetes.io/name"]` for others (clipped): the
// syntax of base/json_path.h.
inline std::string ChildPath(std::string_view path, std::string_view key) {
  return base::JsonPathChild(path, key);
}
inline std::string IndexPath(std::string_view path, size_t i) {
  return base::JsonPathIndex(path, i);
}
// A JSON value for a message: compact, clipped to 40 bytes.
std::string Describe(const Json& v);
// "\"text\"" clipped, for messages.
std::string QuoteForMessage(std::string_view s);

// `s` remembering `field` as the JSON path FieldOf returns (the message is left as it is).
absl::Status AttachField(absl::Status s, std::string_view field);

// ParseJsonBody without the size limit (depth, duplicate keys, UTF-8; errors name the path).
absl::StatusOr<Json> ParseJsonText(std::string_view text);

// Refuses keys of `obj` (an object) that are not in `allowed`, with a did-you-mean.
absl::Status CheckKeys(const Json& obj, std::string_view path,
                       const std::vector<std::string>& allowed);
// The member `key` of `obj`, or nullptr when absent.
const Json* Member(const Json& obj, std::string_view key);

// Readers: `v` == nullptr leaves *out as it is (the default). Wrong type or range fails naming
// `path`: "must be an integer in LO..HI (got X)".
absl::Status ReadInt(const Json* v, std::string_view path, int64_t lo, int64_t hi, int64_t* out);
absl::Status ReadInt32(const Json* v, std::string_view path, int64_t lo, int64_t hi, int32_t* out);
absl::Status ReadNumber(const Json* v, std::string_view path, double lo, double hi, double* out);
absl::Status ReadString(const Json* v, std::string_view path, size_t max_len, std::string* out);
absl::Status ReadBool(const Json* v, std::string_view path, bool* out);
// An object of string values, at most `max_entries`.
absl::Status ReadStringMap(const Json* v, std::string_view path, size_t max_entries,
                           std::map<std::string, std::string>* out);

}  // namespace seedance::api::internal

#endif  // SEEDANCE_API_JSON_BODY_H_
