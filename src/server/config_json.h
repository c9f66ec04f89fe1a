// Internal: reading the server's JSON configuration files (--deployments, --node-groups) with
// errors that name the file and the JSON path ("f.json: $.groups[0].max_size: must be >= 0"),
// or the line for text that is not JSON. Not thread-safe.
#ifndef SEEDANCE_SRC_SERVER_CONFIG_JSON_H_
#define SEEDANCE_SRC_SERVER_CONFIG_JSON_H_

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"

namespace seedance::server {

// The document in `text` (at most 32 levels deep); InvalidArgument "FILE:LINE: not JSON ...".
inline absl::StatusOr<nlohmann::json> ParseConfigJson(std::string_view text,
                                                      std::string_view file) {
  return base::ParseJsonDocument(text, file);
}

// "FILE: PATH: message of st", InvalidArgument.
absl::Status WithPath(std::string_view file, const std::string& path, const absl::Status& st);

// One object's fields, read by the one typed JSON reader (base/json_fields.h); the first
// problem is kept, prefixed with the file: "f.json: $.groups[0].max_size: must be an integer
// in 0..100000 (got -1)".
class Fields : public base::JsonFields<nlohmann::json> {
 public:
  Fields(const nlohmann::json& j, std::string path, std::string_view file)
      : JsonFields(j, std::move(path), absl::StrCat(base::ForTerminal(std::string(file)), ": ")) {}
};

}  // namespace seedance::server

#endif  // SEEDANCE_SRC_SERVER_CONFIG_JSON_H_
