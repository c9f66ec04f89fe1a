// The YAML-to-JSON converter of seedance_api (yaml_json.h) and the YAML configuration files read
// through it (api/yaml_config.h).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "yaml_json.h"

namespace seedance::api {
namespace internal {

int LineOf(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

YamlPosition PositionOf(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return {};
  return {m.line + 1, m.column >= 0 ? m.column + 1 : 0};
}

namespace {

// A plain YAML scalar typed the way a JSON reader would see it: null, booleans, integers,
// finite numbers; anything quoted or tagged stays a string.
Json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "?") return s;  // quoted ("!") or explicitly tagged
  if (s == "null" || s == "Null" || s == "NULL" || s == "~") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  if (!s.empty() &&
      (absl::ascii_isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+')) {
    if (absl::SimpleAtoi(s, &i)) return i;
    double d = 0;
    if (absl::SimpleAtod(s, &d) && std::isfinite(d)) return d;
  }
  return s;
}

}  // namespace

absl::Status YamlToJson::Convert(const YAML::Node& n, const std::string& path, Json* out,
                                 PositionMap* positions, int depth) {
  // CheckYamlLimits bounds well-formed documents; an alias inside its own anchor
  // (`a: &a [*a]`) makes a cycle that only these bounds stop.
  if (depth > core::kMaxDescriptorDepth) {
    return Error(LineOf(n), path,
                 absl::StrCat("nested deeper than ", core::kMaxDescriptorDepth,
                              " levels (a YAML alias used inside its own anchor?)"));
  }
  if (++nodes_ > max_nodes_) {
    return Error(LineOf(n), path,
                 absl::StrCat("the document expands to more than ", max_nodes_, " nodes"));
  }
  if (const YamlPosition at = PositionOf(n); at.line > 0) positions->try_emplace(path, at);
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      *out = nullptr;
      return absl::OkStatus();
    case YAML::NodeType::Scalar:
      *out = ScalarToJson(n);
      return absl::OkStatus();
    case YAML::NodeType::Sequence: {
      *out = Json::array();
      for (size_t i = 0; i < n.size(); ++i) {
        Json element;
        if (absl::Status s = Convert(n[i], IndexPath(path, i), &element, positions, depth + 1);
            !s.ok()) {
          return s;
        }
        out->push_back(std::move(element));
      }
      return absl::OkStatus();
    }
    case YAML::NodeType::Map: {
      *out = Json::object();
      for (const auto& entry : n) {
        const YAML::Node key = entry.first;
        if (!key.IsScalar()) {
          return Error(LineOf(key), path, "mapping keys must be plain strings");
        }
        if (out->contains(key.Scalar())) {
          return Error(LineOf(key), path,
                       absl::StrCat("duplicate key ", QuoteForMessage(key.Scalar())));
        }
        Json value;
        if (absl::Status s =
                Convert(entry.second, ChildPath(path, key.Scalar()), &value, positions, depth + 1);
            !s.ok()) {
          return s;
        }
        (*out)[key.Scalar()] = std::move(value);
      }
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status YamlToJson::Error(int line, std::string_view path, std::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(
      source_, ":", line, ": ", path.empty() ? "" : absl::StrCat(Sv(path), ": "), Sv(message)));
}

}  // namespace internal

YamlDocument::YamlDocument(std::string source, nlohmann::ordered_json value,
                           std::map<std::string, YamlPosition> positions)
    : source_(std::move(source)), value_(std::move(value)), positions_(std::move(positions)) {}

YamlPosition YamlDocument::PositionOf(std::string_view path) const {
  std::string p(path);
  while (!p.empty()) {
    if (auto it = positions_.find(p); it != positions_.end()) return it->second;
    const size_t cut = p.find_last_of(".[");
    if (cut == std::string::npos) break;
    p.resize(cut);
  }
  auto root = positions_.find("$");
  return root == positions_.end() ? YamlPosition{} : root->second;
}

absl::Status YamlDocument::Error(std::string_view path, std::string_view message) const {
  return Locate(base::JsonError(path, message));
}

absl::Status YamlDocument::Locate(const absl::Status& st) const {
  if (st.ok()) return st;
  const std::string path = base::JsonErrorPath(st);
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": ", st.message()));
  }
  const YamlPosition at = PositionOf(path);
  absl::Status out = absl::InvalidArgumentError(
      at.line > 0 ? absl::StrCat(source_, ":", at.line, ":", at.column, ": ", st.message())
                  : absl::StrCat(source_, ": ", st.message()));
  st.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::StatusOr<YamlDocument> ParseYamlDocument(std::string_view text, std::string_view source) {
  const std::string src = base::ForTerminal(std::string(source));
  if (absl::Status s = core::CheckYamlLimits(text, src); !s.ok()) return s;
  std::vector<YAML::Node> docs;
  internal::PositionMap positions;
  nlohmann::ordered_json value;
  try {
    docs = YAML::LoadAll(std::string(text));
    if (docs.size() > 1) {
      const YamlPosition at = internal::PositionOf(docs[1]);
      return absl::InvalidArgumentError(
          absl::StrCat(src, ":", at.line, ":", at.column,
                       ": a configuration file is one YAML document (found another)"));
    }
    internal::YamlToJson convert{
        src, std::max<int64_t>(core::kMaxDescriptorNodes, static_cast<int64_t>(text.size()))};
    if (!docs.empty()) {
      if (absl::Status s = convert.Convert(docs[0], "$", &value, &positions); !s.ok()) return s;
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(src, ":", e.mark.line >= 0 ? e.mark.line + 1 : 0,
                                                   ":", e.mark.column >= 0 ? e.mark.column + 1 : 0,
                                                   ": invalid YAML: ", e.msg));
  }
  return YamlDocument(src, std::move(value), std::move(positions));
}

}  // namespace seedance::api
