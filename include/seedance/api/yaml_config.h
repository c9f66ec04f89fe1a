// YAML configuration files read by the one JSON field reader (base/json_fields.h).
//
// ParseYamlDocument converts one YAML document to the JSON a decoder reads - plain scalars typed
// as a JSON reader would see them (null, booleans, integers, finite numbers), quoted or tagged
// ones kept as strings - and remembers where every value stood in the text, so that a refusal of
// the JSON readers ("$.members[0].url: must be a string (got 12)") is placed in the file:
//   members.yaml:4:10: $.members[0].url: must be a string (got 12)
// It is the converter `seedance apply -f` reads its YAML with (apply.cc), under the same limits
// (core::CheckYamlLimits: depth and alias-expanded size; duplicate keys and non-scalar keys
// refused). Errors are InvalidArgument "SOURCE:LINE:COL: ..." (SOURCE made safe for a terminal).
//
// Thread-safety: pure functions; a YamlDocument is an immutable value.
#ifndef SEEDANCE_API_YAML_CONFIG_H_
#define SEEDANCE_API_YAML_CONFIG_H_

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace seedance::api {

// Where a value starts in the text: 1-based line and column; 0 when unknown.
struct YamlPosition {
  int line = 0;
  int column = 0;
};

class YamlDocument {
 public:
  YamlDocument(std::string source, nlohmann::ordered_json value,
               std::map<std::string, YamlPosition> positions);

  // The document as JSON (null for an empty document).
  const nlohmann::ordered_json& value() const { return value_; }
  // The source as messages name it (made safe for a terminal).
  const std::string& source() const { return source_; }
  // Where the value at JSON path `path` ("$.members[0].url", base/json_path.h) starts, or, when
  // it is absent (a missing key), its nearest ancestor that is present.
  YamlPosition PositionOf(std::string_view path) const;
  // InvalidArgument "SOURCE:LINE:COL: PATH: message" for the value at `path`; the status carries
  // `path` as base::JsonErrorPath does.
  absl::Status Error(std::string_view path, std::string_view message) const;
  // A refusal of the JSON readers ("PATH: message", base::JsonError) placed in the file:
  // "SOURCE:LINE:COL: PATH: message"; a status without a path becomes "SOURCE: message"; OK
  // stays OK.
  absl::Status Locate(const absl::Status& st) const;

 private:
  std::string source_;
  nlohmann::ordered_json value_;
  std::map<std::string, YamlPosition> positions_;
};

// The one YAML document of `text` (`source` names it in messages). A second document is refused
// ("SOURCE:LINE:COL: a configuration file is one YAML document (found another)").
absl::StatusOr<YamlDocument> ParseYamlDocument(std::string_view text, std::string_view source);

}  // namespace seedance::api

#endif  // SEEDANCE_API_YAML_CONFIG_H_
