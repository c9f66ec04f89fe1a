// Internal to seedance_api: YAML nodes converted to the JSON the decoders read, with where each
// value stood, for `seedance apply -f` files (apply.cc) and YAML configuration files
// (yaml_config.cc, api/yaml_config.h). Not thread-safe: one converter per file.
#ifndef SEEDANCE_API_YAML_JSON_H_
#define SEEDANCE_API_YAML_JSON_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "json_body.h"
#include "seedance/api/yaml_config.h"
#include "yaml-cpp/yaml.h"

namespace seedance::api::internal {

// JSON path ("$.spec.gpu_milli") -> where its value starts.
using PositionMap = std::map<std::string, YamlPosition>;

// 1-based line of `n`, 0 when unknown.
int LineOf(const YAML::Node& n);
// 1-based line and column of `n`, {0, 0} when unknown.
YamlPosition PositionOf(const YAML::Node& n);

class YamlToJson {
 public:
  // `source` prefixes errors; a document expanding to more than `max_nodes` nodes is refused.
  YamlToJson(std::string source, int64_t max_nodes)
      : source_(std::move(source)), max_nodes_(max_nodes) {}

  // Converts `n` (at JSON path `path`), recording the position of every path in `positions`.
  // Errors: "SOURCE:LINE: PATH: message" (non-scalar or duplicate keys, too deep, too large).
  absl::Status Convert(const YAML::Node& n, const std::string& path, Json* out,
                       PositionMap* positions, int depth = 0);

 private:
  absl::Status Error(int line, std::string_view path, std::string_view message) const;

  std::string source_;
  int64_t max_nodes_;
  int64_t nodes_ = 0;
};

}  // namespace seedance::api::internal

#endif  // SEEDANCE_API_YAML_JSON_H_
