#include "json_body.h"

#include <string>
#include <utility>
#include <vector>

#include "seedance/api/api.h"
#include "seedance/base/json_fields.h"

namespace seedance::api::internal {

// The readers are base/json_fields.h's; here they only attach the field path for FieldOf.

std::string Describe(const Json& v) { return base::DescribeJson(v); }

std::string QuoteForMessage(std::string_view s) { return base::QuoteForMessage(s); }

absl::Status CheckKeys(const Json& obj, std::string_view path,
                       const std::vector<std::string>& allowed) {
  absl::Status s = base::CheckJsonKeys(obj, path, allowed);
  const std::string field = base::JsonErrorPath(s);  // the unknown key's path
  return AttachField(std::move(s), field);
}

const Json* Member(const Json& obj, std::string_view key) { return base::JsonMember(obj, key); }

absl::Status ReadInt(const Json* v, std::string_view path, int64_t lo, int64_t hi, int64_t* out) {
  return AttachField(base::ReadJsonInt(v, path, lo, hi, out), path);
}

absl::Status ReadInt32(const Json* v, std::string_view path, int64_t lo, int64_t hi, int32_t* out) {
  return AttachField(base::ReadJsonInt32(v, path, lo, hi, out), path);
}

absl::Status ReadNumber(const Json* v, std::string_view path, double lo, double hi, double* out) {
  return AttachField(base::ReadJsonNumber(v, path, lo, hi, out), path);
}

absl::Status ReadString(const Json* v, std::string_view path, size_t max_len, std::string* out) {
  return AttachField(base::ReadJsonString(v, path, max_len, out), path);
}

absl::Status ReadBool(const Json* v, std::string_view path, bool* out) {
  return AttachField(base::ReadJsonBool(v, path, out), path);
}

absl::Status ReadStringMap(const Json* v, std::string_view path, size_t max_entries,
                           std::map<std::string, std::string>* out) {
  absl::Status s = base::ReadJsonStringMap(v, path, max_entries, out);
  const std::string field = base::JsonErrorPath(s);  // a bad value's own path
  return AttachField(std::move(s), field);
}

}  // namespace seedance::api::internal
