#include "seedance/telemetry/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fast_json.h"
#include "nlohmann/json.hpp"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::telemetry {

double Missing() { return std::numeric_limits<double>::quiet_NaN(); }
bool IsMissing(double v) { return std::isnan(v); }

namespace {

using nlohmann::json;

// Paths in messages: base/json_path.h ("$.nodes[0].gpus[1].util_pct").
std::string Child(std::string_view path, std::string_view key) {
  return base::JsonPathChild(path, key);
}
std::string Index(std::string_view path, size_t i) { return base::JsonPathIndex(path, i); }

// Records the JSON path of the value being read while nlohmann's SAX parser walks a document,
// so that a syntax error (a truncated file) can say where it happened.
class PathTracker : public nlohmann::json_sax<json> {
 public:
  std::string Path() const {
    std::string p = "$";
    for (const Frame& f : stack_) {
      if (f.is_array) {
        if (f.index >= 0) p = Index(p, static_cast<size_t>(f.index));
      } else if (!f.key.empty()) {
        p = Child(p, f.key);
      }
    }
    return p;
  }
  std::string error;
  size_t error_byte = 0;

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    Value();
    stack_.push_back({false, -1, ""});
    return true;
  }
  bool key(string_t& k) override {
    stack_.back().key = k;
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    Value();
    stack_.push_back({true, -1, ""});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error_byte = position;
    error = ex.what();
    // The array element being read when the input broke off is the one after the last complete.
    if (!stack_.empty() && stack_.back().is_array) ++stack_.back().index;
    return false;
  }

 private:
  struct Frame {
    bool is_array;
    int64_t index;
    std::string key;
  };
  bool Value() {
    if (!stack_.empty() && stack_.back().is_array) ++stack_.back().index;
    return true;
  }
  std::vector<Frame> stack_;
};

// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." ->
// the part after the last "]".
std::string ShortParseMessage(const std::string& what) {
  const size_t b = what.find("] ");
  return b == std::string::npos ? what : what.substr(b + 2);
}

const json* FindField(const json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}
const internal::JValue* FindField(const internal::JValue& o, const char* key) {
  return o.Find(key);
}

// Largest CPU, memory or count a profile may state: far above any real machine, small enough that
// sums over a million nodes cannot overflow.
constexpr int64_t kMaxQuantity = int64_t{1} << 40;

// The values a series or a number may take; anything else (including 1e308 and -50 for a
// percentage) is an error naming the value's JSON path.
struct ValueRange {
  double lo;
  double hi;
  const char* unit;
};
constexpr ValueRange kPercent = {0, 100, "percent"};
// MiB, MiB/s and watts: non-negative and far below anything that would overflow a sum.
constexpr ValueRange kQuantity = {0, 1e15, "a non-negative quantity"};
// Unix times from 1970 to the year 5138 (about 1e11 s).
constexpr ValueRange kUnixTime = {0, 1e11, "Unix seconds"};
// Seconds within a profile: at most about 3,170 years.
constexpr ValueRange kSeconds = {0, 1e11, "seconds"};

// Converts a parsed document into a Profile, stopping at the first problem.
template <typename J>
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  void Fail(const std::string& path, const std::string& msg) {
    if (status_.ok())
      status_ = absl::InvalidArgumentError(absl::StrCat(source_, ": ", path, ": ", msg));
  }
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

  const J* Field(const J& obj, const std::string& path, const char* key, bool required) {
    const J* v = FindField(obj, key);
    if (v == nullptr && required) Fail(Child(path, key), "missing required field");
    return v;
  }
  bool Object(const J& v, const std::string& path) {
    if (!v.is_object()) Fail(path, "expected object");
    return ok();
  }
  bool Array(const J& v, const std::string& path) {
    if (!v.is_array()) Fail(path, "expected array");
    return ok();
  }
  void Str(const J& obj, const std::string& path, const char* key, bool required,
           std::string* out) {
    if (!ok()) return;
    const J* v = Field(obj, path, key, required);
    if (v == nullptr) return;
    if (!v->is_string()) {
      Fail(Child(path, key), "expected string");
      return;
    }
    *out = v->template get<std::string>();
  }
  template <typename T>
  void Int(const J& obj, const std::string& path, const char* key, bool required, T* out,
           int64_t min_value = 0, int64_t max_value = kMaxQuantity) {
    if (!ok()) return;
    const J* v = Field(obj, path, key, required);
    if (v == nullptr) return;
    if (!v->is_number_integer()) {
      Fail(Child(path, key), "expected integer");
      return;
    }
    const int64_t x = v->template get<int64_t>();
    if (x < min_value || x > max_value || x > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      Fail(Child(path, key),
           absl::StrCat("out of range (got ", x, "; expected ", min_value, "..",
                        std::min<int64_t>(max_value, std::numeric_limits<T>::max()), ")"));
      return;
    }
    *out = static_cast<T>(x);
  }
  void Num(const J& obj, const std::string& path, const char* key, bool required,
           const ValueRange& range, double* out) {
    if (!ok()) return;
    const J* v = Field(obj, path, key, required);
    if (v == nullptr) return;
    if (!v->is_number()) {
      Fail(Child(path, key), "expected number");
      return;
    }
    const double d = v->template get<double>();
    if (!(d >= range.lo && d <= range.hi)) {
      Fail(Child(path, key),
           absl::StrCat(base::FormatNumber(d), " is outside ", base::FormatNumber(range.lo), "..",
                        base::FormatNumber(range.hi), " (", range.unit, ")"));
      return;
    }
    *out = d;
  }
  void Bool(const J& obj, const std::string& path, const char* key, bool* out) {
    if (!ok()) return;
    const J* v = Field(obj, path, key, false);
    if (v == nullptr) return;
    if (!v->is_boolean()) {
      Fail(Child(path, key), "expected true or false");
      return;
    }
    *out = v->template get<bool>();
  }
  // A series: numbers within `range` or null, exactly `samples` long.
  void Series(const J& obj, const std::string& path, const char* key, size_t samples,
              const ValueRange& range, std::vector<double>* out) {
    if (!ok()) return;
    const J* v = Field(obj, path, key, false);
    if (v == nullptr) return;
    SeriesValue(*v, Child(path, key), samples, range, out);
  }
  void SeriesValue(const J& v, const std::string& p, size_t samples, const ValueRange& range,
                   std::vector<double>* out) {
    if (!Array(v, p)) return;
    if (v.size() != samples) {
      Fail(p, absl::StrCat("expected ", samples, " values (one per timestamp), got ", v.size()));
      return;
    }
    out->resize(samples);
    for (size_t i = 0; i < samples; ++i) {
      const J& x = v[i];
      if (x.is_number()) {
        const double d = x.template get<double>();
        if (!(d >= range.lo && d <= range.hi)) {
          Fail(Index(p, i),
               absl::StrCat(base::FormatNumber(d), " is outside ", base::FormatNumber(range.lo),
                            "..", base::FormatNumber(range.hi), " (", range.unit, ")"));
          return;
        }
        (*out)[i] = d;
      } else if (x.is_null()) {
        (*out)[i] = Missing();
      } else {
        Fail(Index(p, i), "expected number or null");
        return;
      }
    }
  }
  void IntList(const J& obj, const std::string& path, const char* key, std::vector<int>* out) {
    if (!ok()) return;
    const J* v = Field(obj, path, key, false);
    if (v == nullptr) return;
    const std::string p = Child(path, key);
    if (!Array(*v, p)) return;
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_number_integer() || (*v)[i].template get<int64_t>() < 0 ||
          (*v)[i].template get<int64_t>() > 1 << 20) {
        Fail(Index(p, i), "expected non-negative integer");
        return;
      }
      out->push_back((*v)[i].template get<int>());
    }
  }

  void Pod(const J& v, const std::string& p, PodInfo* pod) {
    if (!Object(v, p)) return;
    Str(v, p, "name", true, &pod->name);
    Str(v, p, "namespace", false, &pod->namespace_name);
    Int(v, p, "cpu_milli", false, &pod->cpu_milli);
    Int(v, p, "memory_mib", false, &pod->memory_mib);
    Int(v, p, "num_gpus", false, &pod->num_gpus);
    Int(v, p, "gpu_milli", false, &pod->gpu_milli);
    IntList(v, p, "gpu_ids", &pod->gpu_ids);
    IntList(v, p, "cpu_numa_nodes", &pod->cpu_numa_nodes);
    Str(v, p, "gpu_model", false, &pod->gpu_model);
    if (!ok()) return;
    if (pod->num_gpus > 0 && pod->gpu_milli == 0) pod->gpu_milli = 1000;
    if (pod->gpu_milli > 1000)
      Fail(Child(p, "gpu_milli"), "must be at most 1000 (one GPU)");
    else if (pod->gpu_milli < 1000 && pod->num_gpus > 1)
      Fail(Child(p, "gpu_milli"), "a pod sharing a GPU (gpu_milli < 1000) uses one GPU");
    else if (!pod->gpu_ids.empty() && pod->gpu_ids.size() != static_cast<size_t>(pod->num_gpus))
      Fail(Child(p, "gpu_ids"), absl::StrCat("expected num_gpus (", pod->num_gpus, ") entries"));
  }

  void Gpu(const J& v, const std::string& p, size_t samples, GpuInfo* g) {
    if (!Object(v, p)) return;
    Int(v, p, "index", true, &g->index);
    Str(v, p, "uuid", false, &g->uuid);
    Str(v, p, "model", false, &g->model);
    Int(v, p, "memory_mib", false, &g->memory_mib);
    Int(v, p, "numa_node", false, &g->numa_node, -1);
    Str(v, p, "pci_bus_id", false, &g->pci_bus_id);
    IntList(v, p, "nvlink_peers", &g->nvlink_peers);
    Series(v, p, "util_pct", samples, kPercent, &g->util_pct);
    Series(v, p, "mem_used_mib", samples, kQuantity, &g->mem_used_mib);
    Series(v, p, "mem_bw_util_pct", samples, kPercent, &g->mem_bw_util_pct);
    Series(v, p, "pcie_rx_mib_s", samples, kQuantity, &g->pcie_rx_mib_s);
    Series(v, p, "pcie_tx_mib_s", samples, kQuantity, &g->pcie_tx_mib_s);
    Series(v, p, "power_w", samples, kQuantity, &g->power_w);
  }

  void Topology(const J& v, const std::string& p, TopologyInfo* t) {
    if (!Object(v, p)) return;
    Int(v, p, "packages", false, &t->packages);
    Int(v, p, "cores", false, &t->cores);
    Int(v, p, "pus", false, &t->pus);
    const J* pci = Field(v, p, "pci_devices", false);
    if (pci == nullptr || !ok()) return;
    if (!Array(*pci, Child(p, "pci_devices"))) return;
    for (size_t i = 0; i < pci->size() && ok(); ++i) {
      const std::string q = Index(Child(p, "pci_devices"), i);
      const J& d = (*pci)[i];
      if (!Object(d, q)) return;
      PciDeviceInfo info;
      Str(d, q, "bus_id", true, &info.bus_id);
      Str(d, q, "kind", false, &info.kind);
      Str(d, q, "name", false, &info.name);
      Int(d, q, "numa_node", false, &info.numa_node, -1);
      t->pci_devices.push_back(std::move(info));
    }
  }

  void Node(const J& v, const std::string& p, size_t samples, NodeProfile* n) {
    if (!Object(v, p)) return;
    Str(v, p, "name", true, &n->name);
    Int(v, p, "cpus", false, &n->cpus);
    Int(v, p, "memory_mib", false, &n->memory_mib);
    Series(v, p, "cpu_util_pct", samples, kPercent, &n->cpu_util_pct);
    Series(v, p, "mem_used_mib", samples, kQuantity, &n->mem_used_mib);
    if (const J* pc = Field(v, p, "per_cpu_util_pct", false); pc != nullptr && ok()) {
      const std::string q = Child(p, "per_cpu_util_pct");
      if (!Array(*pc, q)) return;
      n->per_cpu_util_pct.resize(pc->size());
      for (size_t i = 0; i < pc->size() && ok(); ++i) {
        SeriesValue((*pc)[i], Index(q, i), samples, kPercent, &n->per_cpu_util_pct[i]);
      }
    }
    if (const J* numa = Field(v, p, "numa_nodes", false); numa != nullptr && ok()) {
      const std::string q = Child(p, "numa_nodes");
      if (!Array(*numa, q)) return;
      for (size_t i = 0; i < numa->size() && ok(); ++i) {
        const std::string r = Index(q, i);
        const J& d = (*numa)[i];
        if (!Object(d, r)) return;
        NumaNodeInfo info;
        Int(d, r, "id", true, &info.id);
        Str(d, r, "cpus", false, &info.cpus);
        Int(d, r, "memory_mib", false, &info.memory_mib);
        Series(d, r, "mem_used_mib", samples, kQuantity, &info.mem_used_mib);
        n->numa_nodes.push_back(std::move(info));
      }
    }
    if (const J* topo = Field(v, p, "topology", false); topo != nullptr && ok()) {
      Topology(*topo, Child(p, "topology"), &n->topology);
    }
    if (const J* gpus = Field(v, p, "gpus", false); gpus != nullptr && ok()) {
      const std::string q = Child(p, "gpus");
      if (!Array(*gpus, q)) return;
      n->gpus.resize(gpus->size());
      for (size_t i = 0; i < gpus->size() && ok(); ++i) {
        Gpu((*gpus)[i], Index(q, i), samples, &n->gpus[i]);
      }
    }
    if (const J* pods = Field(v, p, "pods", false); pods != nullptr && ok()) {
      const std::string q = Child(p, "pods");
      if (!Array(*pods, q)) return;
      n->pods.resize(pods->size());
      for (size_t i = 0; i < pods->size() && ok(); ++i) {
        Pod((*pods)[i], Index(q, i), &n->pods[i]);
      }
    }
    if (!ok()) return;
    // Cross-references within the node.
    for (size_t i = 0; i < n->gpus.size(); ++i) {
      if (n->gpus[i].index != static_cast<int>(i)) {
        Fail(Child(Index(Child(p, "gpus"), i), "index"),
             absl::StrCat("expected ", i, " (GPUs are listed in index order)"));
        return;
      }
      for (size_t k = 0; k < n->gpus[i].nvlink_peers.size(); ++k) {
        if (n->gpus[i].nvlink_peers[k] >= static_cast<int>(n->gpus.size())) {
          Fail(Index(Child(Index(Child(p, "gpus"), i), "nvlink_peers"), k),
               "no such GPU on this node");
          return;
        }
      }
    }
    for (size_t i = 0; i < n->pods.size(); ++i) {
      for (size_t k = 0; k < n->pods[i].gpu_ids.size(); ++k) {
        if (n->pods[i].gpu_ids[k] >= static_cast<int>(n->gpus.size())) {
          Fail(Index(Child(Index(Child(p, "pods"), i), "gpu_ids"), k), "no such GPU on this node");
          return;
        }
      }
    }
  }

  void Document(const J& doc, Profile* out) {
    if (!Object(doc, "$")) return;
    int version = 0;
    Int(doc, "$", "version", true, &version);
    if (ok() && version != kProfileFormatVersion) {
      Fail("$.version", absl::StrCat("unsupported profile version ", version, " (this build reads ",
                                     kProfileFormatVersion, ")"));
      return;
    }
    out->version = version;
    if (const J* sv = Field(doc, "$", "schema_version", false); sv != nullptr) {
      if (!sv->is_string() || sv->template get<std::string>() != kProfileSchemaVersion) {
        Fail("$.schema_version", absl::StrCat("expected \"", kProfileSchemaVersion, "\""));
        return;
      }
    }
    Str(doc, "$", "source", false, &out->source);
    Num(doc, "$", "start_unix_s", false, kUnixTime, &out->start_unix_s);
    Num(doc, "$", "interval_s", false, kSeconds, &out->interval_s);
    if (ok() && !(out->interval_s > 0)) {
      Fail("$.interval_s", "must be > 0");
      return;
    }
    Bool(doc, "$", "interrupted", &out->interrupted);
    const J* ts = Field(doc, "$", "timestamps_s", true);
    if (!ok()) return;
    if (!Array(*ts, "$.timestamps_s")) return;
    out->timestamps_s.resize(ts->size());
    for (size_t i = 0; i < ts->size(); ++i) {
      if (!(*ts)[i].is_number()) {
        Fail(Index("$.timestamps_s", i), "expected number");
        return;
      }
      out->timestamps_s[i] = (*ts)[i].template get<double>();
      if (!(out->timestamps_s[i] >= kSeconds.lo && out->timestamps_s[i] <= kSeconds.hi)) {
        Fail(Index("$.timestamps_s", i),
             absl::StrCat(base::FormatNumber(out->timestamps_s[i]), " is outside 0..",
                          base::FormatNumber(kSeconds.hi), " (seconds since start_unix_s)"));
        return;
      }
      if (i > 0 && out->timestamps_s[i] <= out->timestamps_s[i - 1]) {
        Fail(Index("$.timestamps_s", i), "timestamps must increase");
        return;
      }
    }
    const size_t samples = out->timestamps_s.size();
    const J* nodes = Field(doc, "$", "nodes", true);
    if (!ok() || !Array(*nodes, "$.nodes")) return;
    out->nodes.resize(nodes->size());
    for (size_t i = 0; i < nodes->size() && ok(); ++i) {
      Node((*nodes)[i], Index("$.nodes", i), samples, &out->nodes[i]);
    }
    if (const J* pending = Field(doc, "$", "pending_pods", false); pending != nullptr && ok()) {
      if (!Array(*pending, "$.pending_pods")) return;
      out->pending_pods.resize(pending->size());
      for (size_t i = 0; i < pending->size() && ok(); ++i) {
        Pod((*pending)[i], Index("$.pending_pods", i), &out->pending_pods[i]);
      }
    }
    if (ok()) Unique(*out);
  }

  // Node names are unique, and so are pods (namespace and name) across the whole profile: the
  // plan names nodes and pods, and a duplicate would make it ambiguous.
  void Unique(const Profile& p) {
    std::map<std::string, size_t> nodes;
    std::map<std::pair<std::string, std::string>, std::string> pods;
    auto pod = [&](const PodInfo& x, const std::string& path) {
      auto [it, fresh] = pods.emplace(std::make_pair(x.namespace_name, x.name), path);
      if (!fresh) {
        Fail(Child(path, "name"),
             absl::StrCat("duplicate pod '", x.namespace_name.empty() ? "" : x.namespace_name + "/",
                          base::Clip(x.name), "' (also at ", it->second, ")"));
      }
      return ok();
    };
    for (size_t n = 0; n < p.nodes.size(); ++n) {
      const std::string path = Index("$.nodes", n);
      if (p.nodes[n].name.empty()) {
        Fail(Child(path, "name"), "empty node name");
        return;
      }
      auto [it, fresh] = nodes.emplace(p.nodes[n].name, n);
      if (!fresh) {
        Fail(Child(path, "name"),
             absl::StrCat("duplicate node name '", base::Clip(p.nodes[n].name), "' (also at ",
                          Child(Index("$.nodes", it->second), "name"), ")"));
        return;
      }
      for (size_t i = 0; i < p.nodes[n].pods.size(); ++i) {
        if (!pod(p.nodes[n].pods[i], Index(Child(path, "pods"), i))) return;
      }
    }
    for (size_t i = 0; i < p.pending_pods.size(); ++i) {
      if (!pod(p.pending_pods[i], Index("$.pending_pods", i))) return;
    }
  }

 private:
  std::string source_;
  absl::Status status_;
};

// Writes a number compactly: integers without a fraction, others with up to 4 significant
// decimals; NaN as null.
void AppendNumber(std::string* out, double v) {
  if (std::isnan(v) || std::isinf(v)) {
    out->append("null");
    return;
  }
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (std::fabs(v) >= 1e5) {
    std::snprintf(buf, sizeof buf, "%.3f", v);  // Unix times: keep milliseconds
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  out->append(buf);
}

json SeriesJson(const std::vector<double>& s) {
  json a = json::array();
  for (double v : s) {
    if (std::isnan(v) || std::isinf(v)) {
      a.push_back(nullptr);
    } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
      a.push_back(static_cast<int64_t>(v));
    } else {
      // Four decimals are more than any collector measures; the shortest form keeps files small.
      a.push_back(std::round(v * 1e4) / 1e4);
    }
  }
  return a;
}

json PodJson(const PodInfo& p) {
  json j = {{"name", p.name}};
  if (!p.namespace_name.empty()) j["namespace"] = p.namespace_name;
  j["cpu_milli"] = p.cpu_milli;
  j["memory_mib"] = p.memory_mib;
  if (p.num_gpus > 0) {
    j["num_gpus"] = p.num_gpus;
    j["gpu_milli"] = p.gpu_milli;
  }
  if (!p.gpu_ids.empty()) j["gpu_ids"] = p.gpu_ids;
  if (!p.cpu_numa_nodes.empty()) j["cpu_numa_nodes"] = p.cpu_numa_nodes;
  if (!p.gpu_model.empty()) j["gpu_model"] = p.gpu_model;
  return j;
}

}  // namespace

absl::StatusOr<Profile> ParseProfileJson(std::string_view text, std::string_view source) {
  Profile profile;
  // The fast parser first; nlohmann's explains a failure (and reads anything the fast one might
  // refuse that is valid JSON after all).
  internal::JValue fast;
  size_t offset = 0;
  if (internal::JValue::Parse(text, &fast, &offset)) {
    Reader<internal::JValue> reader(source);
    reader.Document(fast, &profile);
    if (!reader.ok()) return reader.status();
    return profile;
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    PathTracker tracker;
    json::sax_parse(text.begin(), text.end(), &tracker, nlohmann::detail::input_format_t::json,
                    /*strict=*/true);
    const bool truncated =
        tracker.error.find("end of input") != std::string::npos || tracker.error_byte > text.size();
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": ", tracker.Path(), ": ",
                     truncated ? "unexpected end of file (truncated profile?)" : "invalid JSON",
                     " (byte ", tracker.error_byte, ": ", ShortParseMessage(tracker.error), ")"));
  }
  Reader<json> reader(source);
  reader.Document(doc, &profile);
  if (!reader.ok()) return reader.status();
  return profile;
}

absl::StatusOr<Profile> LoadProfile(const std::string& path) {
  auto text = base::ReadInput(path, base::InputKind::kProfile);
  if (!text.ok()) return text.status();
  return ParseProfileJson(*text, path == "-" ? "<stdin>" : path);
}

std::string ToJson(const Profile& profile) {
  // Written by hand around per-node nlohmann objects so that series stay compact and each node
  // sits on its own line.
  // The header every Seedance JSON output starts with, then the format's own version key (which
  // readers of format 1 require).
  std::string header = base::DumpJson(base::JsonHeader(kProfileSchemaVersion));
  header.pop_back();  // the closing brace
  std::string out = header + ", \"version\": " + std::to_string(profile.version);
  out += ",\n \"source\": " + base::DumpJson(json(profile.source));
  out += ", \"start_unix_s\": ";
  AppendNumber(&out, profile.start_unix_s);
  out += ", \"interval_s\": ";
  AppendNumber(&out, profile.interval_s);
  if (profile.interrupted) out += ", \"interrupted\": true";
  out += ",\n \"timestamps_s\": [";
  for (size_t i = 0; i < profile.timestamps_s.size(); ++i) {
    if (i) out += ",";
    AppendNumber(&out, profile.timestamps_s[i]);
  }
  out += "],\n \"nodes\": [";
  for (size_t n = 0; n < profile.nodes.size(); ++n) {
    const NodeProfile& node = profile.nodes[n];
    json j = {{"name", node.name}, {"cpus", node.cpus}, {"memory_mib", node.memory_mib}};
    if (!node.cpu_util_pct.empty()) j["cpu_util_pct"] = SeriesJson(node.cpu_util_pct);
    if (!node.mem_used_mib.empty()) j["mem_used_mib"] = SeriesJson(node.mem_used_mib);
    if (!node.per_cpu_util_pct.empty()) {
      json a = json::array();
      for (const auto& s : node.per_cpu_util_pct) a.push_back(SeriesJson(s));
      j["per_cpu_util_pct"] = std::move(a);
    }
    if (!node.numa_nodes.empty()) {
      json a = json::array();
      for (const NumaNodeInfo& m : node.numa_nodes) {
        json x = {{"id", m.id}, {"cpus", m.cpus}, {"memory_mib", m.memory_mib}};
        if (!m.mem_used_mib.empty()) x["mem_used_mib"] = SeriesJson(m.mem_used_mib);
        a.push_back(std::move(x));
      }
      j["numa_nodes"] = std::move(a);
    }
    if (!node.topology.empty()) {
      json t = {{"packages", node.topology.packages},
                {"cores", node.topology.cores},
                {"pus", node.topology.pus}};
      json pci = json::array();
      for (const PciDeviceInfo& d : node.topology.pci_devices) {
        pci.push_back(
            {{"bus_id", d.bus_id}, {"kind", d.kind}, {"name", d.name}, {"numa_node", d.numa_node}});
      }
      t["pci_devices"] = std::move(pci);
      j["topology"] = std::move(t);
    }
    if (!node.gpus.empty()) {
      json a = json::array();
      for (const GpuInfo& g : node.gpus) {
        json x = {{"index", g.index},
                  {"model", g.model},
                  {"memory_mib", g.memory_mib},
                  {"numa_node", g.numa_node}};
        if (!g.uuid.empty()) x["uuid"] = g.uuid;
        if (!g.pci_bus_id.empty()) x["pci_bus_id"] = g.pci_bus_id;
        if (!g.nvlink_peers.empty()) x["nvlink_peers"] = g.nvlink_peers;
        if (!g.util_pct.empty()) x["util_pct"] = SeriesJson(g.util_pct);
        if (!g.mem_used_mib.empty()) x["mem_used_mib"] = SeriesJson(g.mem_used_mib);
        if (!g.mem_bw_util_pct.empty()) x["mem_bw_util_pct"] = SeriesJson(g.mem_bw_util_pct);
        if (!g.pcie_rx_mib_s.empty()) x["pcie_rx_mib_s"] = SeriesJson(g.pcie_rx_mib_s);
        if (!g.pcie_tx_mib_s.empty()) x["pcie_tx_mib_s"] = SeriesJson(g.pcie_tx_mib_s);
        if (!g.power_w.empty()) x["power_w"] = SeriesJson(g.power_w);
        a.push_back(std::move(x));
      }
      j["gpus"] = std::move(a);
    }
    json pods = json::array();
    for (const PodInfo& p : node.pods) pods.push_back(PodJson(p));
    j["pods"] = std::move(pods);
    out += n ? ",\n  " : "\n  ";
    out += base::DumpJson(j);
  }
  out += "],\n \"pending_pods\": [";
  for (size_t i = 0; i < profile.pending_pods.size(); ++i) {
    out += i ? ",\n  " : "\n  ";
    out += base::DumpJson(PodJson(profile.pending_pods[i]));
  }
  out += "]}\n";
  return out;
}

absl::Status WriteProfile(const Profile& profile, const std::string& path) {
  return base::WriteOutput(path, ToJson(profile));
}

}  // namespace seedance::telemetry
