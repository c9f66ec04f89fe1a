#include "seedance/core/resource_descriptor.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "seedance/base/io.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"
#include "seedance/core/yaml_scan.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace seedance::core {
namespace {

using Json = nlohmann::ordered_json;

// Beyond this many problems a message only counts the rest.
constexpr int kMaxReportedErrors = 20;

constexpr std::array<std::pair<DeviceType, std::string_view>, 4> kDeviceTypeNames = {{
    {DeviceType::kCpu, "cpu"},
    {DeviceType::kGpu, "gpu"},
    {DeviceType::kNpu, "npu"},
    {DeviceType::kFpga, "fpga"},
}};

std::string AllowedDeviceTypes() {
  std::vector<std::string> names;
  for (const auto& [type, name] : kDeviceTypeNames) names.emplace_back(name);
  return absl::StrJoin(names, ", ");
}

// Debian's Abseil is built with its own absl::string_view, which does not convert implicitly from
// std::string_view.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Field paths, in the syntax of base/json_path.h: "$.nodes[3].devices[1].capacity.gpu_milli",
// `$.gpu_models["RTX 4090"]`. The document's root is "$"; "" names no field (a parse error).
std::string Child(std::string_view path, std::string_view key) {
  return base::JsonPathChild(path, key);
}
std::string Index(std::string_view path, size_t i) { return base::JsonPathIndex(path, i); }

// For messages only: clipped, so a 2 MB key never becomes a 2 MB message.
std::string Quote(std::string_view s) { return absl::StrCat("\"", base::Clip(s, 80), "\""); }

// Longest field path quoted in a message (paths hold user keys).
constexpr size_t kMaxMessagePath = 200;

template <typename T>
std::string MustBe(std::string_view what, const T& got) {
  return absl::StrCat("must be ", Sv(what), " (got ", got, ")");
}

// Source line (1-based) of each field path a YAML parse visited.
using LineMap = std::map<std::string, int, std::less<>>;

// Collects problems as "SOURCE:LINE: PATH: MESSAGE" lines.
class Diagnostics {
 public:
  Diagnostics(std::string_view source, const LineMap* lines) : source_(source), lines_(lines) {}

  // Reports at the line of `path` or, if it was not visited, of its nearest visited ancestor.
  void Add(std::string_view path, std::string_view message) { AddAt(LineOf(path), path, message); }
  void AddAt(int line, std::string_view path, std::string_view message) {
    if (++count_ > kMaxReportedErrors) return;
    std::string error;
    if (!source_.empty()) {
      error = line > 0 ? absl::StrCat(source_, ":", line, ": ") : absl::StrCat(source_, ": ");
    } else if (line > 0) {
      error = absl::StrCat("line ", line, ": ");
    }
    if (!path.empty()) absl::StrAppend(&error, base::Clip(path, kMaxMessagePath), ": ");
    absl::StrAppend(&error, Sv(message));
    errors_.push_back(std::move(error));
  }

  bool ok() const { return count_ == 0; }

  absl::Status ToStatus() const {
    if (ok()) return absl::OkStatus();
    std::string message = absl::StrJoin(errors_, "\n");
    if (count_ > kMaxReportedErrors) {
      absl::StrAppend(&message, "\n... and ", count_ - kMaxReportedErrors, " more errors");
    }
    return absl::InvalidArgumentError(message);
  }

 private:
  int LineOf(std::string_view path) const {
    if (lines_ == nullptr) return 0;
    std::string p(path);
    while (true) {
      if (auto it = lines_->find(p); it != lines_->end()) return it->second;
      if (p.empty()) return 0;
      p = base::JsonPathParent(p);
    }
  }

  std::string source_;
  const LineMap* lines_;
  std::vector<std::string> errors_;
  int count_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Views: the same read interface over nlohmann JSON values and yaml-cpp nodes, so one templated
// Reader handles both formats.

class JsonView {
 public:
  static constexpr std::string_view kMapName = "an object";
  static constexpr std::string_view kSeqName = "an array";

  explicit JsonView(const Json& j) : j_(&j) {}

  int line() const { return 0; }
  bool IsMap() const { return j_->is_object(); }
  bool IsSeq() const { return j_->is_array(); }
  size_t size() const { return j_->size(); }
  JsonView at(size_t i) const { return JsonView((*j_)[i]); }

  // f(key, key_line, value) for each entry in document order.
  template <typename F>
  void ForEachEntry(F&& f) const {
    for (const auto& item : j_->items()) f(item.key(), 0, JsonView(item.value()));
  }

  std::optional<int64_t> AsInt64() const {
    if (j_->is_number_unsigned()) {
      uint64_t u = j_->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    if (j_->is_number_integer()) return j_->get<int64_t>();
    return std::nullopt;
  }
  std::optional<double> AsDouble() const {
    if (!j_->is_number()) return std::nullopt;
    return j_->get<double>();
  }
  std::optional<std::string> AsString() const {
    if (!j_->is_string()) return std::nullopt;
    return j_->get<std::string>();
  }

  std::string Describe() const {
    if (IsMap()) return std::string(kMapName);
    if (IsSeq()) return std::string(kSeqName);
    std::string text = j_->dump(-1, ' ', false, Json::error_handler_t::replace);
    return text.size() > 40 ? text.substr(0, 37) + "..." : text;
  }

 private:
  const Json* j_;
};

class YamlView {
 public:
  static constexpr std::string_view kMapName = "a mapping";
  static constexpr std::string_view kSeqName = "a sequence";

  explicit YamlView(YAML::Node n) : n_(std::move(n)) {}

  int line() const { return n_.Mark().line >= 0 ? n_.Mark().line + 1 : 0; }
  bool IsMap() const { return n_.IsMap(); }
  bool IsSeq() const { return n_.IsSequence(); }
  size_t size() const { return n_.size(); }
  YamlView at(size_t i) const { return YamlView(n_[i]); }

  // f(key, key_line, value) for each entry in document order, duplicates included.
  template <typename F>
  void ForEachEntry(F&& f) const {
    // Copies, not references: yaml-cpp's iterators hand out temporaries.
    for (const auto& entry : n_) {
      const YAML::Node key = entry.first;
      const int key_line = key.Mark().line >= 0 ? key.Mark().line + 1 : 0;
      f(key.IsScalar() ? key.Scalar() : std::string(), key_line, YamlView(entry.second));
    }
  }

  // Numbers must be plain scalars: a quoted "5" is a string, as in JSON.
  std::optional<int64_t> AsInt64() const {
    int64_t v = 0;
    if (!IsUnquotedScalar() || !YAML::convert<int64_t>::decode(n_, v)) return std::nullopt;
    return v;
  }
  std::optional<double> AsDouble() const {
    double v = 0;
    if (!IsUnquotedScalar() || !YAML::convert<double>::decode(n_, v)) return std::nullopt;
    return v;
  }
  // Any scalar reads as a string (YAML has no separate string type for plain scalars).
  std::optional<std::string> AsString() const {
    if (!n_.IsScalar()) return std::nullopt;
    return n_.Scalar();
  }

  std::string Describe() const {
    if (IsMap()) return std::string(kMapName);
    if (IsSeq()) return std::string(kSeqName);
    if (!n_.IsScalar()) return "null";
    std::string text = n_.Scalar();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return IsUnquotedScalar() ? text : Quote(text);
  }

 private:
  bool IsUnquotedScalar() const { return n_.IsScalar() && n_.Tag() != "!"; }

  YAML::Node n_;
};

// ---------------------------------------------------------------------------------------------
// Reader: the schema of docs/formats.md over a view.

template <typename V>
class Reader {
 public:
  Reader(Diagnostics* diag, LineMap* lines) : diag_(diag), lines_(lines) {}

  void ReadCluster(const V& root, ClusterDescriptor* c) {
    ReadObject(
        root, "$",
        {
            {"name", false, [&](const V& v, const std::string& p) { String(v, p, &c->name); }},
            {"gpu_models", false,
             [&](const V& v, const std::string& p) { ReadGpuModels(v, p, &c->gpu_models); }},
            {"nodes", false,
             [&](const V& v, const std::string& p) {
               ReadSeq(v, p, [&](const V& e, const std::string& ep) {
                 ReadNode(e, ep, &c->nodes.emplace_back());
               });
             }},
        });
  }
  // One node (and its GPU models) outside a cluster document: ParseNodeDescriptorJson.
  void ReadOneNode(const V& v, const V* models, const std::string& path, ClusterDescriptor* c) {
    if (models != nullptr) ReadGpuModels(*models, Child(path, "gpu_models"), &c->gpu_models);
    ReadNode(v, path, &c->nodes.emplace_back());
  }

 private:
  using ReadFn = std::function<void(const V&, const std::string&)>;
  struct Field {
    std::string_view key;
    bool required;
    ReadFn read;
  };

  void Note(const std::string& path, const V& v) {
    if (lines_ != nullptr && v.line() > 0) lines_->try_emplace(path, v.line());
  }

  bool Int64(const V& v, const std::string& path, int64_t* out) {
    Note(path, v);
    if (std::optional<int64_t> x = v.AsInt64()) {
      *out = *x;
      return true;
    }
    diag_->Add(path, MustBe("an integer", v.Describe()));
    return false;
  }
  bool Int(const V& v, const std::string& path, int* out) {
    int64_t x = 0;
    if (!Int64(v, path, &x)) return false;
    if (x < INT_MIN || x > INT_MAX) {
      diag_->Add(path, MustBe("a 32-bit integer", x));
      return false;
    }
    *out = static_cast<int>(x);
    return true;
  }
  bool Double(const V& v, const std::string& path, double* out) {
    Note(path, v);
    if (std::optional<double> x = v.AsDouble()) {
      *out = *x;
      return true;
    }
    diag_->Add(path, MustBe("a number", v.Describe()));
    return false;
  }
  bool String(const V& v, const std::string& path, std::string* out) {
    Note(path, v);
    if (std::optional<std::string> x = v.AsString()) {
      *out = std::move(*x);
      return true;
    }
    diag_->Add(path, MustBe("a string", v.Describe()));
    return false;
  }

  // A mapping with a fixed set of keys: unknown and duplicate keys are errors, and so is a
  // missing required key.
  void ReadObject(const V& v, const std::string& path, std::initializer_list<Field> fields) {
    if (!v.IsMap()) {
      Note(path, v);
      diag_->Add(path, MustBe(V::kMapName, v.Describe()));
      return;
    }
    Note(path, v);
    std::vector<bool> seen(fields.size(), false);
    v.ForEachEntry([&](const std::string& key, int key_line, const V& value) {
      size_t i = 0;
      for (const Field& f : fields) {
        if (f.key == key) break;
        ++i;
      }
      if (i == fields.size()) {
        std::vector<std::string> allowed;
        for (const Field& f : fields) allowed.emplace_back(f.key);
        diag_->AddAt(key_line, path,
                     absl::StrCat("unknown key ", Quote(key),
                                  " (allowed: ", absl::StrJoin(allowed, ", "), ")"));
        return;
      }
      if (seen[i]) {
        diag_->AddAt(key_line, path, absl::StrCat("duplicate key ", Quote(key)));
        return;
      }
      seen[i] = true;
      (fields.begin() + i)->read(value, Child(path, key));
    });
    size_t i = 0;
    for (const Field& f : fields) {
      if (f.required && !seen[i]) {
        diag_->Add(path, absl::StrCat("missing required key ", Quote(f.key)));
      }
      ++i;
    }
  }

  // A mapping with free-form keys; `read` returns false if the entry was a duplicate key.
  void ReadMap(const V& v, const std::string& path,
               const std::function<bool(const std::string&, const V&, const std::string&)>& read) {
    Note(path, v);
    if (!v.IsMap()) {
      diag_->Add(path, MustBe(V::kMapName, v.Describe()));
      return;
    }
    v.ForEachEntry([&](const std::string& key, int key_line, const V& value) {
      if (!read(key, value, Child(path, key))) {
        diag_->AddAt(key_line, path, absl::StrCat("duplicate key ", Quote(key)));
      }
    });
  }

  void ReadSeq(const V& v, const std::string& path, const ReadFn& read) {
    Note(path, v);
    if (!v.IsSeq()) {
      diag_->Add(path, MustBe(V::kSeqName, v.Describe()));
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) read(v.at(i), Index(path, i));
  }

  void ReadGpuModels(const V& v, const std::string& path,
                     std::map<std::string, GpuModelInfo>* models) {
    ReadMap(v, path, [&](const std::string& key, const V& value, const std::string& p) {
      GpuModelInfo m;
      m.name = key;
      ReadObject(
          value, p,
          {
              {"memory_mib", true,
               [&](const V& x, const std::string& xp) { Int64(x, xp, &m.memory_mib); }},
              {"price_usd_per_hour", true,
               [&](const V& x, const std::string& xp) { Double(x, xp, &m.price_usd_per_hour); }},
              {"power_w", true,
               [&](const V& x, const std::string& xp) { Double(x, xp, &m.power_w); }},
          });
      return models->emplace(key, std::move(m)).second;
    });
  }

  void ReadNode(const V& v, const std::string& path, NodeDescriptor* node) {
    ReadObject(
        v, path,
        {
            {"name", true, [&](const V& x, const std::string& p) { String(x, p, &node->name); }},
            {"labels", false,
             [&](const V& x, const std::string& p) {
               ReadMap(x, p, [&](const std::string& key, const V& value, const std::string& vp) {
                 std::string s;
                 String(value, vp, &s);
                 return node->labels.emplace(key, std::move(s)).second;
               });
             }},
            {"numa_nodes", true,
             [&](const V& x, const std::string& p) {
               ReadSeq(x, p, [&](const V& e, const std::string& ep) {
                 ReadNuma(e, ep, &node->numa_nodes.emplace_back());
               });
             }},
            {"devices", false,
             [&](const V& x, const std::string& p) {
               ReadSeq(x, p, [&](const V& e, const std::string& ep) {
                 ReadDevice(e, ep, &node->devices.emplace_back());
               });
             }},
        });
  }

  void ReadNuma(const V& v, const std::string& path, NumaNode* numa) {
    ReadObject(v, path,
               {
                   {"id", true, [&](const V& x, const std::string& p) { Int(x, p, &numa->id); }},
                   {"cpu_milli", true,
                    [&](const V& x, const std::string& p) { Int64(x, p, &numa->cpu_milli); }},
                   {"memory_mib", true,
                    [&](const V& x, const std::string& p) { Int64(x, p, &numa->memory_mib); }},
                   {"distances", false,
                    [&](const V& x, const std::string& p) {
                      ReadSeq(x, p, [&](const V& e, const std::string& ep) {
                        Int(e, ep, &numa->distances.emplace_back());
                      });
                    }},
               });
  }

  void ReadDevice(const V& v, const std::string& path, Device* d) {
    ReadObject(
        v, path,
        {
            {"id", true, [&](const V& x, const std::string& p) { String(x, p, &d->id); }},
            {"type", true,
             [&](const V& x, const std::string& p) {
               std::string name;
               if (!String(x, p, &name)) return;
               if (std::optional<DeviceType> t = DeviceTypeFromName(name)) {
                 d->type = *t;
               } else {
                 diag_->Add(p, absl::StrCat("unknown device type ", Quote(name),
                                            " (allowed: ", AllowedDeviceTypes(), ")"));
               }
             }},
            {"model", false, [&](const V& x, const std::string& p) { String(x, p, &d->model); }},
            {"capacity", false,
             [&](const V& x, const std::string& p) {
               ReadMap(x, p, [&](const std::string& key, const V& value, const std::string& vp) {
                 int64_t amount = 0;
                 Int64(value, vp, &amount);
                 return d->capacity.emplace(key, amount).second;
               });
             }},
            {"binding", false,
             [&](const V& x, const std::string& p) {
               ReadObject(x, p,
                          {
                              {"numa_node", false,
                               [&](const V& y, const std::string& yp) {
                                 Int(y, yp, &d->binding.numa_node);
                               }},
                              {"pci_address", false,
                               [&](const V& y, const std::string& yp) {
                                 String(y, yp, &d->binding.pci_address);
                               }},
                              {"pcie_switch", false,
                               [&](const V& y, const std::string& yp) {
                                 String(y, yp, &d->binding.pcie_switch);
                               }},
                          });
             }},
            {"latency_us", false,
             [&](const V& x, const std::string& p) { Int64(x, p, &d->latency_us); }},
            {"nvlink_group", false,
             [&](const V& x, const std::string& p) { String(x, p, &d->nvlink_group); }},
        });
    if (d->type == DeviceType::kGpu) {
      d->capacity.try_emplace(std::string(kCapacityGpuMilli), kMilliGpu);
    }
  }

  Diagnostics* diag_;
  LineMap* lines_;
};

// ---------------------------------------------------------------------------------------------
// Validation.

bool IsHex(char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); }

// "DDDD:BB:DD.F": hex domain, bus and device, function 0-7.
bool IsPciAddress(std::string_view s) {
  if (s.size() != 12) return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!IsHex(s[i])) return false;
  }
  return s[4] == ':' && s[7] == ':' && s[10] == '.' && s[11] >= '0' && s[11] <= '7';
}

bool AddOverflows(int64_t a, int64_t b, int64_t* sum) { return __builtin_add_overflow(a, b, sum); }

void CheckNonNegative(Diagnostics& diag, const std::string& path, int64_t value) {
  if (value < 0) diag.Add(path, MustBe(">= 0", value));
}

void CheckNonNegativeFinite(Diagnostics& diag, const std::string& path, double value) {
  if (!std::isfinite(value) || value < 0) diag.Add(path, MustBe("a finite number >= 0", value));
}

void ValidateDevice(const ClusterDescriptor& c, const NodeDescriptor& node, const Device& d,
                    const std::string& path, Diagnostics& diag) {
  if (d.id.empty()) diag.Add(Child(path, "id"), "must not be empty");

  bool known_type = false;
  for (const auto& [type, name] : kDeviceTypeNames) known_type |= type == d.type;
  if (!known_type) {
    diag.Add(Child(path, "type"),
             absl::StrCat("invalid device type value ", static_cast<int>(d.type),
                          " (allowed: ", AllowedDeviceTypes(), ")"));
  }
  const bool is_gpu = d.type == DeviceType::kGpu;

  const GpuModelInfo* model = nullptr;
  if (is_gpu) {
    if (d.model.empty()) {
      diag.Add(Child(path, "model"), "required for GPU devices (a key of gpu_models)");
    } else if (auto it = c.gpu_models.find(d.model); it != c.gpu_models.end()) {
      model = &it->second;
    } else {
      std::vector<std::string> known;
      for (const auto& [name, info] : c.gpu_models) known.push_back(name);
      diag.Add(Child(path, "model"),
               absl::StrCat("unknown GPU model ", Quote(d.model), " (gpu_models has: ",
                            known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
  }

  const std::string cap_path = Child(path, "capacity");
  for (const auto& [key, amount] : d.capacity) {
    if (key.empty()) {
      diag.Add(cap_path, "capacity names must not be empty");
      continue;
    }
    const std::string p = Child(cap_path, key);
    if (amount < 0) {
      diag.Add(p, MustBe(">= 0", amount));
    } else if (is_gpu && key == kCapacityGpuMilli && (amount == 0 || amount > kMilliGpu)) {
      diag.Add(p, MustBe(absl::StrCat("between 1 and ", kMilliGpu), amount));
    } else if (is_gpu && key == kCapacityMemoryMib && model != nullptr &&
               amount > model->memory_mib) {
      diag.Add(p, MustBe(absl::StrCat("<= ", model->memory_mib, ", the memory of model ", d.model),
                         amount));
    }
  }
  if (is_gpu && !d.capacity.contains(std::string(kCapacityMemoryMib))) {
    diag.Add(Child(cap_path, kCapacityMemoryMib), "required for GPU devices");
  }

  const std::string binding_path = Child(path, "binding");
  const int numa = d.binding.numa_node;
  if (numa < -1) {
    diag.Add(Child(binding_path, "numa_node"), MustBe("-1 (unknown) or a NUMA node id", numa));
  } else if (numa >= 0) {
    std::vector<int> ids;
    bool found = false;
    for (const NumaNode& n : node.numa_nodes) {
      ids.push_back(n.id);
      found |= n.id == numa;
    }
    if (!found) {
      diag.Add(Child(binding_path, "numa_node"),
               absl::StrCat("NUMA node ", numa, " does not exist on node ", Quote(node.name),
                            " (ids: ", ids.empty() ? "none" : absl::StrJoin(ids, ", "), ")"));
    }
  }
  if (!d.binding.pci_address.empty() && !IsPciAddress(d.binding.pci_address)) {
    diag.Add(Child(binding_path, "pci_address"),
             MustBe("a PCI address like 0000:3b:00.0 (domain:bus:device.function, hex)",
                    Quote(d.binding.pci_address)));
  }

  CheckNonNegative(diag, Child(path, "latency_us"), d.latency_us);

  if (!d.nvlink_group.empty() && !is_gpu) {
    diag.Add(Child(path, "nvlink_group"),
             absl::StrCat("only GPU devices can join an NVLink group (device type is ",
                          Sv(DeviceTypeName(d.type)), ")"));
  }
}

void ValidateNode(const ClusterDescriptor& c, const NodeDescriptor& node, const std::string& path,
                  std::map<std::string, size_t>* nvlink_owner, size_t node_index,
                  Diagnostics& diag) {
  if (node.name.empty()) diag.Add(Child(path, "name"), "must not be empty");

  for (const auto& [key, value] : node.labels) {
    if (key.empty()) diag.Add(Child(path, "labels"), "label keys must not be empty");
  }

  const std::string numa_path = Child(path, "numa_nodes");
  if (node.numa_nodes.empty()) diag.Add(numa_path, "must list at least one NUMA node");
  std::map<int, size_t> numa_first;
  int64_t cpu_total = 0;
  int64_t memory_total = 0;
  bool overflow = false;
  for (size_t i = 0; i < node.numa_nodes.size(); ++i) {
    const NumaNode& n = node.numa_nodes[i];
    const std::string p = Index(numa_path, i);
    if (n.id < 0) {
      diag.Add(Child(p, "id"), MustBe(">= 0", n.id));
    } else if (auto [it, inserted] = numa_first.emplace(n.id, i); !inserted) {
      diag.Add(Child(p, "id"), absl::StrCat("duplicate NUMA node id ", n.id, " (first at ",
                                            Index(numa_path, it->second), ")"));
    }
    CheckNonNegative(diag, Child(p, "cpu_milli"), n.cpu_milli);
    CheckNonNegative(diag, Child(p, "memory_mib"), n.memory_mib);
    overflow |= AddOverflows(cpu_total, n.cpu_milli, &cpu_total);
    overflow |= AddOverflows(memory_total, n.memory_mib, &memory_total);
    if (!n.distances.empty() && n.distances.size() != node.numa_nodes.size()) {
      diag.Add(Child(p, "distances"),
               absl::StrCat("must have one entry per NUMA node of the node (got ",
                            n.distances.size(), " for ", node.numa_nodes.size(), ")"));
    }
    for (size_t j = 0; j < n.distances.size(); ++j) {
      CheckNonNegative(diag, Index(Child(p, "distances"), j), n.distances[j]);
    }
  }
  if (overflow) diag.Add(numa_path, "total cpu_milli or memory_mib overflows a 64-bit integer");

  const std::string dev_path = Child(path, "devices");
  std::map<std::string, size_t> id_first;
  std::map<std::string, size_t> pci_first;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    const std::string p = Index(dev_path, i);
    ValidateDevice(c, node, d, p, diag);
    if (!d.id.empty()) {
      if (auto [it, inserted] = id_first.emplace(d.id, i); !inserted) {
        diag.Add(Child(p, "id"), absl::StrCat("duplicate device id ", Quote(d.id), " (first at ",
                                              Index(dev_path, it->second), ")"));
      }
    }
    if (!d.binding.pci_address.empty()) {
      if (auto [it, inserted] = pci_first.emplace(d.binding.pci_address, i); !inserted) {
        diag.Add(Child(Child(p, "binding"), "pci_address"),
                 absl::StrCat("duplicate PCI address ", Quote(d.binding.pci_address), " (first at ",
                              Index(dev_path, it->second), ")"));
      }
    }
    if (!d.nvlink_group.empty()) {
      auto [it, inserted] = nvlink_owner->emplace(d.nvlink_group, node_index);
      if (!inserted && it->second != node_index) {
        diag.Add(Child(p, "nvlink_group"),
                 absl::StrCat("NVLink group ", Quote(d.nvlink_group), " is already used on node ",
                              Quote(c.nodes[it->second].name), " (", Index("$.nodes", it->second),
                              "); an NVLink group cannot span nodes"));
      }
    }
  }
}

// The GPU model table, at `path` ("$.gpu_models" in a cluster document).
void ValidateModels(const ClusterDescriptor& c, const std::string& path, Diagnostics& diag) {
  for (const auto& [key, m] : c.gpu_models) {
    if (key.empty()) {
      diag.Add(path, "model names must not be empty");
      continue;
    }
    const std::string p = Child(path, key);
    if (m.name != key)
      diag.Add(Child(p, "name"), MustBe(absl::StrCat("the key ", Quote(key)), Quote(m.name)));
    CheckNonNegative(diag, Child(p, "memory_mib"), m.memory_mib);
    CheckNonNegativeFinite(diag, Child(p, "price_usd_per_hour"), m.price_usd_per_hour);
    CheckNonNegativeFinite(diag, Child(p, "power_w"), m.power_w);
  }
}

void ValidateInto(const ClusterDescriptor& c, Diagnostics& diag) {
  ValidateModels(c, "$.gpu_models", diag);
  std::map<std::string, size_t> name_first;
  std::map<std::string, size_t> nvlink_owner;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const NodeDescriptor& node = c.nodes[i];
    const std::string p = Index("$.nodes", i);
    if (!node.name.empty()) {
      if (auto [it, inserted] = name_first.emplace(node.name, i); !inserted) {
        diag.Add(Child(p, "name"), absl::StrCat("duplicate node name ", Quote(node.name),
                                                " (first at ", Index("$.nodes", it->second), ")"));
      }
    }
    ValidateNode(c, node, p, &nvlink_owner, i, diag);
  }
}

// ---------------------------------------------------------------------------------------------
// Writers.

std::string FormatDouble(double x) {
  if (std::isnan(x)) return ".nan";
  if (std::isinf(x)) return x > 0 ? ".inf" : "-.inf";
  std::array<char, 64> buf;
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), x);
  return std::string(buf.data(), end);
}

// True unless `s` reads back as the same string when written as a plain YAML scalar, in YAML
// 1.1 and 1.2 alike (so "0000:07:00.0", "true", "123" and "" are quoted).
bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  const unsigned char first = static_cast<unsigned char>(s[0]);
  if (!absl::ascii_isalpha(first) && first != '_') return true;
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (!absl::ascii_isalnum(u) && ch != '_' && ch != '-' && ch != '.' && ch != '/') return true;
  }
  static constexpr std::array<std::string_view, 11> kReserved = {
      "true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf"};
  const std::string lower = absl::AsciiStrToLower(std::string(s));
  for (std::string_view r : kReserved) {
    if (lower == r) return true;
  }
  return false;
}

void EmitString(YAML::Emitter& out, const std::string& s) {
  if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
  out << s;
}

void EmitKey(YAML::Emitter& out, const std::string& key) {
  out << YAML::Key;
  EmitString(out, key);
  out << YAML::Value;
}

Json DeviceToJson(const Device& d) {
  Json j = Json::object();
  j["id"] = d.id;
  j["type"] = std::string(DeviceTypeName(d.type));
  if (!d.model.empty()) j["model"] = d.model;
  if (!d.capacity.empty()) {
    Json cap = Json::object();
    for (const auto& [key, amount] : d.capacity) cap[key] = amount;
    j["capacity"] = std::move(cap);
  }
  if (d.binding != Binding{}) {
    Json b = Json::object();
    if (d.binding.numa_node != -1) b["numa_node"] = d.binding.numa_node;
    if (!d.binding.pci_address.empty()) b["pci_address"] = d.binding.pci_address;
    if (!d.binding.pcie_switch.empty()) b["pcie_switch"] = d.binding.pcie_switch;
    j["binding"] = std::move(b);
  }
  if (d.latency_us != 0) j["latency_us"] = d.latency_us;
  if (!d.nvlink_group.empty()) j["nvlink_group"] = d.nvlink_group;
  return j;
}

Json NodeToJson(const NodeDescriptor& node) {
  Json j = Json::object();
  j["name"] = node.name;
  if (!node.labels.empty()) {
    Json labels = Json::object();
    for (const auto& [key, value] : node.labels) labels[key] = value;
    j["labels"] = std::move(labels);
  }
  Json numa = Json::array();
  for (const NumaNode& n : node.numa_nodes) {
    Json e = Json::object();
    e["id"] = n.id;
    e["cpu_milli"] = n.cpu_milli;
    e["memory_mib"] = n.memory_mib;
    if (!n.distances.empty()) e["distances"] = n.distances;
    numa.push_back(std::move(e));
  }
  j["numa_nodes"] = std::move(numa);
  if (!node.devices.empty()) {
    Json devices = Json::array();
    for (const Device& d : node.devices) devices.push_back(DeviceToJson(d));
    j["devices"] = std::move(devices);
  }
  return j;
}

void EmitDevice(YAML::Emitter& out, const Device& d) {
  out << YAML::BeginMap;
  EmitKey(out, "id");
  EmitString(out, d.id);
  EmitKey(out, "type");
  out << std::string(DeviceTypeName(d.type));
  if (!d.model.empty()) {
    EmitKey(out, "model");
    EmitString(out, d.model);
  }
  if (!d.capacity.empty()) {
    EmitKey(out, "capacity");
    out << YAML::Flow << YAML::BeginMap;
    for (const auto& [key, amount] : d.capacity) {
      EmitKey(out, key);
      out << amount;
    }
    out << YAML::EndMap;
  }
  if (d.binding != Binding{}) {
    EmitKey(out, "binding");
    out << YAML::Flow << YAML::BeginMap;
    if (d.binding.numa_node != -1) {
      EmitKey(out, "numa_node");
      out << d.binding.numa_node;
    }
    if (!d.binding.pci_address.empty()) {
      EmitKey(out, "pci_address");
      EmitString(out, d.binding.pci_address);
    }
    if (!d.binding.pcie_switch.empty()) {
      EmitKey(out, "pcie_switch");
      EmitString(out, d.binding.pcie_switch);
    }
    out << YAML::EndMap;
  }
  if (d.latency_us != 0) {
    EmitKey(out, "latency_us");
    out << d.latency_us;
  }
  if (!d.nvlink_group.empty()) {
    EmitKey(out, "nvlink_group");
    EmitString(out, d.nvlink_group);
  }
  out << YAML::EndMap;
}

void EmitNode(YAML::Emitter& out, const NodeDescriptor& node) {
  out << YAML::BeginMap;
  EmitKey(out, "name");
  EmitString(out, node.name);
  if (!node.labels.empty()) {
    EmitKey(out, "labels");
    out << YAML::Flow << YAML::BeginMap;
    for (const auto& [key, value] : node.labels) {
      EmitKey(out, key);
      EmitString(out, value);
    }
    out << YAML::EndMap;
  }
  EmitKey(out, "numa_nodes");
  out << YAML::BeginSeq;
  for (const NumaNode& n : node.numa_nodes) {
    out << YAML::Flow << YAML::BeginMap;
    EmitKey(out, "id");
    out << n.id;
    EmitKey(out, "cpu_milli");
    out << n.cpu_milli;
    EmitKey(out, "memory_mib");
    out << n.memory_mib;
    if (!n.distances.empty()) {
      EmitKey(out, "distances");
      out << YAML::Flow << YAML::BeginSeq;
      for (int distance : n.distances) out << distance;
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (!node.devices.empty()) {
    EmitKey(out, "devices");
    out << YAML::BeginSeq;
    for (const Device& d : node.devices) EmitDevice(out, d);
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
}

// ---------------------------------------------------------------------------------------------
// Limits on what a document may make the reader do (resource_descriptor.h).

// Thrown out of a parser callback when a limit is exceeded; `line` is 1-based (0 = unknown).
struct LimitExceeded {
  int line = 0;
  std::string path;
  std::string message;
};

int MarkLine(const YAML::Mark& mark) { return mark.line >= 0 ? mark.line + 1 : 0; }

// A pass over the YAML parser's events before any tree is built: measures nesting depth and the
// number of nodes the document has once every alias is expanded (an alias counts the whole
// subtree it names, each time it is used), so an alias bomb is refused before the reader walks
// it. Throws LimitExceeded.
class YamlLimitCheck : public YAML::EventHandler {
 public:
  explicit YamlLimitCheck(int64_t max_nodes) : max_nodes_(max_nodes) {}

  void OnDocumentStart(const YAML::Mark&) override {
    stack_.clear();
    anchored_.clear();
    stack_.push_back({YAML::NullAnchor, total_});  // the document itself
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchored_.find(anchor);
    Add(mark, it == anchored_.end() ? 1 : it->second);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    YAML::anchor_t anchor;
    int64_t first;  // total_ once this collection itself was counted
  };

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchored_[anchor] = 1;
    Add(mark, 1);
  }
  void Add(const YAML::Mark& mark, int64_t n) {
    total_ += n;  // n <= max_nodes_, and total_ <= max_nodes_ before: no overflow
    if (total_ > max_nodes_) {
      throw LimitExceeded{MarkLine(mark), "",
                          absl::StrCat("the document expands to more than ", max_nodes_,
                                       " nodes (through YAML aliases?); the limit is the larger "
                                       "of ",
                                       kMaxDescriptorNodes, " and the file's size in bytes")};
    }
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    // The document frame does not count as a level.
    if (static_cast<int>(stack_.size()) > kMaxDescriptorDepth) {
      throw LimitExceeded{MarkLine(mark), "",
                          absl::StrCat("nested deeper than ", kMaxDescriptorDepth, " levels")};
    }
    Add(mark, 1);
    stack_.push_back({anchor, total_});
  }
  void Close() {
    if (stack_.size() <= 1) return;
    const Frame f = stack_.back();
    stack_.pop_back();
    if (f.anchor != YAML::NullAnchor) anchored_[f.anchor] = total_ - f.first + 1;
  }

  const int64_t max_nodes_;
  int64_t total_ = 0;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, int64_t> anchored_;
};

int64_t MaxNodesFor(std::string_view text) {
  return std::max<int64_t>(kMaxDescriptorNodes, static_cast<int64_t>(text.size()));
}

absl::StatusOr<ClusterDescriptor> Finish(ClusterDescriptor c, Diagnostics& diag) {
  if (diag.ok()) ValidateInto(c, diag);
  if (!diag.ok()) return diag.ToStatus();
  return c;
}

}  // namespace

std::string_view DeviceTypeName(DeviceType type) {
  for (const auto& [t, name] : kDeviceTypeNames) {
    if (t == type) return name;
  }
  return "invalid";
}

std::optional<DeviceType> DeviceTypeFromName(std::string_view name) {
  for (const auto& [type, n] : kDeviceTypeNames) {
    if (n == name) return type;
  }
  return std::nullopt;
}

int64_t Device::CapacityOr(const std::string& key, int64_t fallback) const {
  auto it = capacity.find(key);
  return it == capacity.end() ? fallback : it->second;
}

int64_t NodeDescriptor::CpuMilli() const {
  int64_t total = 0;
  for (const NumaNode& n : numa_nodes) total += n.cpu_milli;
  return total;
}

int64_t NodeDescriptor::MemoryMib() const {
  int64_t total = 0;
  for (const NumaNode& n : numa_nodes) total += n.memory_mib;
  return total;
}

int32_t NodeDescriptor::NumGpus() const {
  int32_t count = 0;
  for (const Device& d : devices) count += d.type == DeviceType::kGpu ? 1 : 0;
  return count;
}

absl::StatusOr<std::string> NodeDescriptor::GpuModel() const {
  const Device* first = nullptr;
  for (const Device& d : devices) {
    if (d.type != DeviceType::kGpu) continue;
    if (first == nullptr) {
      first = &d;
    } else if (d.model != first->model) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", Quote(name), " mixes GPU models ", Quote(first->model), " (", first->id,
          ") and ", Quote(d.model), " (", d.id, "); a NodeSpec has one GPU model"));
    }
  }
  return first == nullptr ? std::string() : first->model;
}

namespace {

// The kind of device a node's NodeSpec counts: its GPUs if it has any, else its NPUs (the
// GPUs, for a node with neither). A node with both keeps its NPUs as description only, as its
// FPGAs.
DeviceType AcceleratorType(const NodeDescriptor& node) {
  bool npu = false;
  for (const Device& d : node.devices) {
    if (d.type == DeviceType::kGpu) return DeviceType::kGpu;
    npu = npu || d.type == DeviceType::kNpu;
  }
  return npu ? DeviceType::kNpu : DeviceType::kGpu;
}

// The model shared by the node's NPUs ("" when it has none); an error when they differ.
absl::StatusOr<std::string> NpuModel(const NodeDescriptor& node) {
  const Device* first = nullptr;
  for (const Device& d : node.devices) {
    if (d.type != DeviceType::kNpu) continue;
    if (first == nullptr) {
      first = &d;
    } else if (d.model != first->model) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", Quote(node.name), " mixes NPU models ", Quote(first->model), " (", first->id,
          ") and ", Quote(d.model), " (", d.id, "); a NodeSpec has one device model"));
    }
  }
  return first == nullptr ? std::string() : first->model;
}

}  // namespace

absl::StatusOr<NodeSpec> NodeDescriptor::ToNodeSpec(const ClusterDescriptor& cluster) const {
  const DeviceType accel = AcceleratorType(*this);
  NodeSpec spec;
  spec.name = name;
  spec.cpu_milli = CpuMilli();
  spec.memory_mib = MemoryMib();
  spec.npu = accel == DeviceType::kNpu;
  for (const Device& d : devices) spec.num_gpus += d.type == accel ? 1 : 0;
  if (spec.num_gpus > kMaxGpusPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("node ", Quote(name), " has ", spec.num_gpus, spec.npu ? " NPUs" : " GPUs",
                     "; a NodeSpec allows at most ", kMaxGpusPerNode));
  }
  absl::StatusOr<std::string> model = spec.npu ? NpuModel(*this) : GpuModel();
  if (!model.ok()) return model.status();
  spec.gpu_model = *std::move(model);
  if (spec.npu && spec.gpu_model.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", Quote(name), ": its NPUs name no model; an NPU node needs one (e.g. Ascend910B)"));
  }
  if (!spec.gpu_model.empty()) {
    auto it = cluster.gpu_models.find(spec.gpu_model);
    if (it != cluster.gpu_models.end()) {
      spec.cost_usd_per_hour = it->second.price_usd_per_hour * spec.num_gpus;
      spec.power_w = it->second.power_w * spec.num_gpus;
      spec.device_memory_mib = it->second.memory_mib;
    } else if (!spec.npu) {
      return absl::InvalidArgumentError(absl::StrCat("node ", Quote(name), ": GPU model ",
                                                     Quote(spec.gpu_model),
                                                     " is not in the cluster's gpu_models"));
    }
  }
  spec.labels = labels;
  spec.topology.numa.reserve(numa_nodes.size());
  for (const NumaNode& numa : numa_nodes) {
    spec.topology.numa.push_back({numa.id, numa.cpu_milli, numa.memory_mib});
  }
  // One entry per device, in device order: device i of the NodeSpec is the i-th GPU (or NPU).
  for (const Device& d : devices) {
    if (d.type != accel) continue;
    if (spec.npu && spec.device_memory_mib == 0) {
      spec.device_memory_mib = d.CapacityOr(std::string(kCapacityMemoryMib), 0);
    }
    spec.topology.gpus.push_back(
        {d.binding.numa_node, d.nvlink_group, d.binding.pci_address, d.binding.pcie_switch});
  }
  return spec;
}

absl::StatusOr<std::vector<NodeSpec>> ToNodeSpecs(const ClusterDescriptor& cluster) {
  std::vector<NodeSpec> specs;
  specs.reserve(cluster.nodes.size());
  for (const NodeDescriptor& node : cluster.nodes) {
    absl::StatusOr<NodeSpec> spec = node.ToNodeSpec(cluster);
    if (!spec.ok()) return spec.status();
    specs.push_back(*std::move(spec));
  }
  return specs;
}

absl::StatusOr<ClusterDescriptor> ParseClusterJson(std::string_view text, std::string_view source) {
  Diagnostics diag(source, nullptr);

  // nlohmann keeps the last of duplicate keys silently; a parser callback catches them.
  struct Frame {
    bool is_array = false;
    size_t index = 0;
    std::string key;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  // The path of the innermost open value ("$.nodes[3].devices"); `levels` of the stack.
  auto path_of = [&](size_t levels) {
    std::string path = "$";
    for (size_t i = 0; i < levels; ++i) {
      path = stack[i].is_array ? Index(path, stack[i].index) : Child(path, stack[i].key);
    }
    return path;
  };
  auto open = [&](Frame frame) {
    if (static_cast<int>(stack.size()) >= kMaxDescriptorDepth) {
      throw LimitExceeded{0, path_of(stack.size()),
                          absl::StrCat("nested deeper than ", kMaxDescriptorDepth, " levels")};
    }
    stack.push_back(std::move(frame));
  };
  auto on_event = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open(Frame{});
        break;
      case Json::parse_event_t::array_start:
        open(Frame{.is_array = true, .index = 0, .key = {}, .keys = {}});
        break;
      case Json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (stack.back().keys.count(key) > 0) {
          diag.Add(path_of(stack.size() - 1), absl::StrCat("duplicate key ", Quote(key)));
        }
        stack.back().keys.insert(key);
        stack.back().key = std::move(key);
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        stack.pop_back();
        if (!stack.empty() && stack.back().is_array) ++stack.back().index;
        break;
      case Json::parse_event_t::value:
        if (!stack.empty() && stack.back().is_array) ++stack.back().index;
        break;
    }
    return true;
  };

  Json root;
  try {
    root = Json::parse(text.begin(), text.end(), on_event);
  } catch (const Json::exception& e) {
    std::string_view what = e.what();
    if (size_t pos = what.find("] "); pos != std::string_view::npos) what.remove_prefix(pos + 2);
    // nlohmann quotes the last token read, which may be megabytes long.
    diag.Add("", absl::StrCat("invalid JSON: ", base::Clip(what, 300)));
    return diag.ToStatus();
  } catch (const LimitExceeded& e) {
    diag.Add(e.path, e.message);
    return diag.ToStatus();
  }
  if (!diag.ok()) return diag.ToStatus();

  ClusterDescriptor c;
  Reader<JsonView>(&diag, nullptr).ReadCluster(JsonView(root), &c);
  return Finish(std::move(c), diag);
}

absl::StatusOr<ClusterDescriptor> ParseNodeDescriptorJson(const Json& node, const Json* gpu_models,
                                                          std::string_view path) {
  Diagnostics diag("", nullptr);
  const std::string root(path);
  ClusterDescriptor c;
  const JsonView models = gpu_models != nullptr ? JsonView(*gpu_models) : JsonView(node);
  Reader<JsonView>(&diag, nullptr)
      .ReadOneNode(JsonView(node), gpu_models != nullptr ? &models : nullptr, root, &c);
  if (diag.ok()) {
    ValidateModels(c, Child(root, "gpu_models"), diag);
    std::map<std::string, size_t> nvlink_owner;
    ValidateNode(c, c.nodes[0], root, &nvlink_owner, 0, diag);
  }
  if (!diag.ok()) return diag.ToStatus();
  return c;
}

// A ',' yaml-cpp would never return from (FindStrayYamlComma): reported at its line and column.
static bool RefuseStrayComma(std::string_view text, Diagnostics& diag) {
  const size_t comma = FindStrayYamlComma(text);
  if (comma == std::string_view::npos) return false;
  const size_t line_start = text.rfind('\n', comma);
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + comma, '\n'));
  const size_t col = comma - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  diag.AddAt(line, "", absl::StrCat("invalid YAML: ',' outside [...] or {...} (column ", col, ")"));
  return true;
}

absl::StatusOr<ClusterDescriptor> ParseClusterYaml(std::string_view text, std::string_view source) {
  LineMap lines;
  Diagnostics diag(source, &lines);
  if (RefuseStrayComma(text, diag)) return diag.ToStatus();
  std::vector<YAML::Node> docs;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    YamlLimitCheck check(MaxNodesFor(text));
    while (parser.HandleNextDocument(check)) {
    }
    docs = YAML::LoadAll(std::string(text));
  } catch (const LimitExceeded& e) {
    diag.AddAt(e.line, e.path, e.message);
    return diag.ToStatus();
  } catch (const YAML::Exception& e) {
    diag.AddAt(e.mark.line >= 0 ? e.mark.line + 1 : 0, "", absl::StrCat("invalid YAML: ", e.msg));
    return diag.ToStatus();
  }
  if (docs.size() != 1) {
    diag.Add("", absl::StrCat("must hold exactly one YAML document (got ", docs.size(), ")"));
    return diag.ToStatus();
  }

  ClusterDescriptor c;
  try {
    Reader<YamlView>(&diag, &lines).ReadCluster(YamlView(docs[0]), &c);
  } catch (const YAML::Exception& e) {
    // Defensive: yaml-cpp throws on some malformed trees (e.g. through aliases).
    diag.AddAt(e.mark.line >= 0 ? e.mark.line + 1 : 0, "", absl::StrCat("invalid YAML: ", e.msg));
    return diag.ToStatus();
  }
  return Finish(std::move(c), diag);
}

absl::Status CheckYamlLimits(std::string_view text, std::string_view source) {
  Diagnostics diag(source, nullptr);
  if (RefuseStrayComma(text, diag)) return diag.ToStatus();
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    YamlLimitCheck check(MaxNodesFor(text));
    while (parser.HandleNextDocument(check)) {
    }
  } catch (const LimitExceeded& e) {
    diag.AddAt(e.line, e.path, e.message);
  } catch (const YAML::Exception& e) {
    diag.AddAt(MarkLine(e.mark), "", absl::StrCat("invalid YAML: ", e.msg));
  }
  return diag.ToStatus();
}

absl::StatusOr<ClusterDescriptor> LoadClusterDescriptor(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  const size_t slash = path.find_last_of('/');
  std::string ext;
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    ext = absl::AsciiStrToLower(path.substr(dot));
  }
  if (ext != ".json" && ext != ".yaml" && ext != ".yml") {
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported file extension ",
                                                   Quote(ext), " (expected .json, .yaml or .yml)"));
  }
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kDescriptor);
  if (!text.ok()) return text.status();
  if (ext == ".json") return ParseClusterJson(*text, path);
  return ParseClusterYaml(*text, path);
}

std::string ToJson(const ClusterDescriptor& cluster) {
  Json j = Json::object();
  j["name"] = cluster.name;
  if (!cluster.gpu_models.empty()) {
    Json models = Json::object();
    for (const auto& [key, m] : cluster.gpu_models) {
      Json e = Json::object();
      e["memory_mib"] = m.memory_mib;
      e["price_usd_per_hour"] = m.price_usd_per_hour;
      e["power_w"] = m.power_w;
      models[key] = std::move(e);
    }
    j["gpu_models"] = std::move(models);
  }
  Json nodes = Json::array();
  for (const NodeDescriptor& node : cluster.nodes) nodes.push_back(NodeToJson(node));
  j["nodes"] = std::move(nodes);
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string ToYaml(const ClusterDescriptor& cluster) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  EmitKey(out, "name");
  EmitString(out, cluster.name);
  if (!cluster.gpu_models.empty()) {
    EmitKey(out, "gpu_models");
    out << YAML::BeginMap;
    for (const auto& [key, m] : cluster.gpu_models) {
      EmitKey(out, key);
      out << YAML::Flow << YAML::BeginMap;
      EmitKey(out, "memory_mib");
      out << m.memory_mib;
      EmitKey(out, "price_usd_per_hour");
      out << FormatDouble(m.price_usd_per_hour);
      EmitKey(out, "power_w");
      out << FormatDouble(m.power_w);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  EmitKey(out, "nodes");
  if (cluster.nodes.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const NodeDescriptor& node : cluster.nodes) EmitNode(out, node);
  out << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

absl::Status Validate(const ClusterDescriptor& cluster) {
  Diagnostics diag("", nullptr);
  ValidateInto(cluster, diag);
  return diag.ToStatus();
}

}  // namespace seedance::core
