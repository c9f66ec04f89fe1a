// `seedance apply -f` files (api.h): YAML documents or JSON, each object a Node or a Pod, every
// body validated by the API's own decoders, errors as "SOURCE:LINE: PATH: MESSAGE".
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "json_body.h"
#include "seedance/api/api.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "yaml-cpp/yaml.h"
#include "yaml_json.h"

namespace seedance::api {
namespace {

using internal::ChildPath;
using internal::Json;
using internal::LineOf;
using internal::Member;
using internal::Sv;

// One object of the file before it is checked: its JSON value and where its parts are
// (object-relative JSON paths, "$.spec.gpu_milli").
struct RawObject {
  Json value;
  int line = 0;
  internal::PositionMap lines;
};

// "SOURCE:LINE: $[i]REST: MESSAGE" for a problem at object-relative path `path` ("$..."): the
// file read as the list of its objects, in the one JSON path syntax (base/json_path.h).
absl::Status ObjectError(std::string_view source, size_t index, const RawObject& obj,
                         std::string_view path, std::string_view message) {
  int line = obj.line;
  std::string p(path);
  while (!p.empty()) {
    if (auto it = obj.lines.find(p); it != obj.lines.end()) {
      line = it->second.line;
      break;
    }
    const size_t cut = p.find_last_of(".[");
    if (cut == std::string::npos) break;
    p.resize(cut);
  }
  const std::string shown =
      absl::StrCat(base::JsonPathIndex("$", index), Sv(path.substr(path.empty() ? 0 : 1)));
  absl::Status s = absl::InvalidArgumentError(
      absl::StrCat(Sv(source), ":", line, ": ", shown, ": ", Sv(message)));
  return s;
}

// Rewrites a decoder's "$.field: message" error for the file.
absl::Status BodyError(std::string_view source, size_t index, const RawObject& obj,
                       std::string_view body_prefix, const absl::Status& s) {
  const std::string field = FieldOf(s);
  std::string message(s.message());
  if (!field.empty() && message.rfind(field + ": ", 0) == 0) {
    message.erase(0, field.size() + 2);
  }
  std::string path(body_prefix);
  if (field == "name") {
    path = absl::StrCat(Sv(body_prefix), ".name");
  } else if (!field.empty()) {
    path = absl::StrCat(Sv(body_prefix), field.substr(1));
  }
  return ObjectError(source, index, obj, path, message);
}

absl::StatusOr<std::vector<RawObject>> ReadJson(std::string_view text, std::string_view source) {
  absl::StatusOr<Json> root = internal::ParseJsonText(text);
  if (!root.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", root.status().message()));
  }
  std::vector<RawObject> out;
  if (root->is_array()) {
    // The line where each element of the top-level list starts: the first character after
    // the opening '[' or a ',' at depth 1 that is not white space.
    std::vector<int> lines;
    int line = 1, depth = 0;
    bool in_string = false, escaped = false, expect = false;
    for (char c : text) {
      if (c == '\n') ++line;
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
      if (expect && c != ']') lines.push_back(line);
      expect = false;
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        expect = depth == 0 && c == '[';
        ++depth;
      } else if (c == '}' || c == ']') {
        --depth;
      } else if (c == ',' && depth == 1) {
        expect = true;
      }
    }
    for (size_t i = 0; i < root->size(); ++i) {
      out.push_back({std::move((*root)[i]), i < lines.size() ? lines[i] : 1, {}});
    }
  } else {
    int line = 1;
    for (char c : text) {
      if (c == '{') break;
      if (c == '\n') ++line;
    }
    out.push_back({*std::move(root), line, {}});
  }
  return out;
}

absl::StatusOr<std::vector<RawObject>> ReadYaml(std::string_view text, std::string_view source) {
  if (absl::Status s = core::CheckYamlLimits(text, source); !s.ok()) return s;
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(source), ":", e.mark.line >= 0 ? e.mark.line + 1 : 0, ": invalid YAML: ", e.msg));
  }
  internal::YamlToJson convert{
      std::string(source),
      std::max<int64_t>(core::kMaxDescriptorNodes, static_cast<int64_t>(text.size()))};
  std::vector<RawObject> out;
  try {
    for (const YAML::Node& doc : docs) {
      if (doc.IsNull()) continue;  // an empty document (a trailing ---)
      if (doc.IsSequence()) {
        for (size_t i = 0; i < doc.size(); ++i) {
          RawObject obj;
          obj.line = LineOf(doc[i]);
          if (absl::Status s = convert.Convert(doc[i], "$", &obj.value, &obj.lines); !s.ok()) {
            return s;
          }
          out.push_back(std::move(obj));
        }
        continue;
      }
      RawObject obj;
      obj.line = LineOf(doc);
      if (absl::Status s = convert.Convert(doc, "$", &obj.value, &obj.lines); !s.ok()) return s;
      out.push_back(std::move(obj));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(source), ":", e.mark.line >= 0 ? e.mark.line + 1 : 0, ": invalid YAML: ", e.msg));
  }
  return out;
}

absl::StatusOr<ApplyObject> CheckObject(std::string_view source, size_t index,
                                        const RawObject& obj) {
  const Json& v = obj.value;
  if (!v.is_object()) {
    return ObjectError(source, index, obj, "$",
                       absl::StrCat("must be an object with \"kind\": Node or Pod (got ",
                                    internal::Describe(v), ")"));
  }
  const Json* kind = Member(v, "kind");
  if (kind == nullptr) {
    return ObjectError(source, index, obj, "$", "missing required key \"kind\" (Node or Pod)");
  }
  if (!kind->is_string() || (*kind != "Node" && *kind != "Pod")) {
    std::string near;
    if (kind->is_string()) near = base::ClosestMatch(kind->get<std::string>(), {"Node", "Pod"});
    return ObjectError(
        source, index, obj, "$.kind",
        absl::StrCat("must be Node or Pod (got ", internal::Describe(*kind), ")",
                     near.empty() ? "" : absl::StrCat("; did you mean ", near, "?")));
  }
  ApplyObject out;
  out.kind = *kind == "Node" ? ApplyObject::kNode : ApplyObject::kPod;
  out.line = obj.line;
  // The body: "spec", or everything beside "kind".
  Json body = Json::object();
  std::string prefix = "$";
  std::string top_name;
  if (const Json* spec = Member(v, "spec"); spec != nullptr) {
    for (const auto& item : v.items()) {
      if (item.key() != "kind" && item.key() != "spec" && item.key() != "name") {
        return ObjectError(source, index, obj, ChildPath("$", item.key()),
                           "unknown key beside \"spec\" (allowed there: kind, name, spec)");
      }
    }
    if (!spec->is_object()) {
      return ObjectError(source, index, obj, "$.spec",
                         absl::StrCat("must be an object (got ", internal::Describe(*spec), ")"));
    }
    body = *spec;
    prefix = "$.spec";
    if (const Json* name = Member(v, "name"); name != nullptr) {
      if (!name->is_string()) {
        return ObjectError(source, index, obj, "$.name",
                           absl::StrCat("must be a string (got ", internal::Describe(*name), ")"));
      }
      top_name = name->get<std::string>();
      if (const Json* inner = Member(body, "name");
          inner != nullptr && (!inner->is_string() || *inner != top_name)) {
        return ObjectError(
            source, index, obj, "$.spec.name",
            absl::StrCat("must equal the name beside spec ", internal::QuoteForMessage(top_name),
                         " (got ", internal::Describe(*inner), ")"));
      }
      if (out.kind == ApplyObject::kPod) body["name"] = top_name;
    }
  } else {
    for (const auto& item : v.items()) {
      if (item.key() != "kind") body[item.key()] = item.value();
    }
  }
  out.body_json = base::DumpJson(body);
  if (out.kind == ApplyObject::kPod) {
    absl::StatusOr<PodRequest> pod = ParsePodRequest(out.body_json);
    if (!pod.ok()) return BodyError(source, index, obj, prefix, pod.status());
    out.name = pod->name;
    out.body_json = base::DumpJson(PodRequestToJson(*pod));
    return out;
  }
  if (top_name.empty()) {
    const Json* name = Member(body, "name");
    if (name == nullptr) {
      return ObjectError(source, index, obj, prefix,
                         "missing required key \"name\" (the node's name)");
    }
    if (!name->is_string()) {
      return ObjectError(source, index, obj, absl::StrCat(prefix, ".name"),
                         absl::StrCat("must be a string (got ", internal::Describe(*name), ")"));
    }
    top_name = name->get<std::string>();
  }
  out.name = top_name;
  absl::StatusOr<NodeRequest> node = DecodeNodeRequest(out.name, out.body_json);
  if (!node.ok()) return BodyError(source, index, obj, prefix, node.status());
  return out;
}

}  // namespace

absl::StatusOr<std::vector<ApplyObject>> ParseApplyFile(std::string_view text,
                                                        std::string_view source) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(source), ": no objects (expected YAML or JSON with kind: Node or Pod)"));
  }
  if (!base::IsValidUtf8(text)) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": not valid UTF-8 text"));
  }
  const bool json = text[first] == '{' || text[first] == '[';
  absl::StatusOr<std::vector<RawObject>> raw =
      json ? ReadJson(text, source) : ReadYaml(text, source);
  if (!raw.ok()) return raw.status();
  if (raw->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(source), ": no objects (expected YAML or JSON with kind: Node or Pod)"));
  }
  if (raw->size() > kMaxApplyObjects) {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(source), ": ", raw->size(), " objects; at most ", kMaxApplyObjects, " per file"));
  }
  std::vector<ApplyObject> out;
  out.reserve(raw->size());
  for (size_t i = 0; i < raw->size(); ++i) {
    absl::StatusOr<ApplyObject> obj = CheckObject(source, i, (*raw)[i]);
    if (!obj.ok()) return obj.status();
    out.push_back(*std::move(obj));
  }
  return out;
}

}  // namespace seedance::api
