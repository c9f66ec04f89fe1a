#include "seedance/k8s/objects.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "seedance/base/check.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/k8s/quantity.h"

namespace seedance::k8s {
namespace {

using json = nlohmann::json;

absl::Status Bad(const std::string& path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

std::string Shown(std::string_view s) { return base::ForTerminal(base::Clip(s, 60)); }

// Paths in messages: base/json_path.h ("$.items[0].spec.containers[1]").
std::string Child(std::string_view path, std::string_view key) {
  return base::JsonPathChild(path, key);
}
std::string Index(std::string_view path, size_t i) { return base::JsonPathIndex(path, i); }

// obj[key] of `kind` (base/json_fields.h); nullptr when absent or null (Kubernetes reads null as
// unset).
absl::StatusOr<const json*> Member(const json& obj, std::string_view key, const std::string& path,
                                   base::JsonKind kind) {
  return base::JsonMemberOf(obj, key, path, kind, /*null_is_absent=*/true);
}

absl::Status GetString(const json& obj, std::string_view key, const std::string& path,
                       std::string* out) {
  absl::StatusOr<const json*> m = Member(obj, key, path, base::JsonKind::kString);
  if (!m.ok()) return m.status();
  if (*m != nullptr) *out = (*m)->get<std::string>();
  return absl::OkStatus();
}

absl::Status GetStringMap(const json& obj, std::string_view key, const std::string& path,
                          std::map<std::string, std::string>* out) {
  absl::StatusOr<const json*> m = Member(obj, key, path, base::JsonKind::kObject);
  if (!m.ok()) return m.status();
  std::map<std::string, std::string> read;
  if (absl::Status st = base::ReadJsonStringMap(*m, Child(path, key), SIZE_MAX, &read); !st.ok()) {
    return st;
  }
  for (auto& [k, v] : read) (*out)[k] = std::move(v);
  return absl::OkStatus();
}

// An object member that must be an object; an empty object when absent.
absl::StatusOr<const json*> ObjectOrEmpty(const json& obj, std::string_view key,
                                          const std::string& path) {
  static const json* const kEmpty = new json(json::object());
  absl::StatusOr<const json*> m = Member(obj, key, path, base::JsonKind::kObject);
  if (!m.ok()) return m.status();
  return *m == nullptr ? kEmpty : *m;
}

// The text of a quantity: kubectl prints strings; the API also accepts JSON numbers.
absl::StatusOr<std::string> QuantityText(const json& v, const std::string& path) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) return Bad(path, "not a finite number");
    return v.dump();
  }
  return Bad(path,
             absl::StrCat("must be a quantity such as \"500m\" (got ", base::DescribeJson(v), ")"));
}

absl::StatusOr<int64_t> Quantity(const json& v, const std::string& path, Unit unit, Round round) {
  absl::StatusOr<std::string> text = QuantityText(v, path);
  if (!text.ok()) return text.status();
  absl::StatusOr<int64_t> q = ParseQuantity(*text, unit, round);
  if (!q.ok()) return Bad(path, q.status().message());
  return q;
}

// Resource names Seedance reads; every other name with a domain outside kubernetes.io is an
// extended resource it cannot honour.
bool IsGpuResource(std::string_view name) {
  return name == kGpuMilliResource || name == kGpuCountResource || name == kGpuMemoryResource ||
         name == kNvidiaGpuResource || name == kHamiGpuMemResource ||
         name == kHamiGpuCoresResource || name == kHamiGpuMemPctResource;
}

bool IsNativeResource(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos) return true;  // cpu, memory, hugepages-2Mi, ...
  const std::string_view domain = name.substr(0, slash);
  return domain == "kubernetes.io" || domain.ends_with(".kubernetes.io");
}

// One container's (or the overhead's) request: CPU, memory and the GPU resources by name, with
// the JSON path each came from.
struct Need {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::map<std::string, int64_t, std::less<>> gpu;
  std::map<std::string, std::string, std::less<>> where;
};

absl::Status AddResource(const std::string& name, const json& v, const std::string& where,
                         Need* out, std::vector<Unknown>* unknown) {
  if (name == "cpu" || name == "memory") {
    absl::StatusOr<int64_t> q = Quantity(v, where, name == "cpu" ? kMilli : kMib, Round::kUp);
    if (!q.ok()) return q.status();
    (name == "cpu" ? out->cpu_milli : out->memory_mib) = *q;
  } else if (IsGpuResource(name)) {
    absl::StatusOr<int64_t> q = Quantity(v, where, kCount, Round::kUp);
    if (!q.ok()) return q.status();
    out->gpu[name] = *q;
    out->where[name] = where;
  } else if (!IsNativeResource(name)) {
    unknown->push_back({where, absl::StrCat("extended resource ", Shown(name))});
  }
  // Native resources other than CPU and memory (ephemeral-storage, hugepages-*) are not
  // scheduled by Seedance: skipped.
  return absl::OkStatus();
}

// requests[r], else limits[r] (Kubernetes defaults a missing request to the limit).
absl::Status DecodeResources(const json& resources, const std::string& path, Need* out,
                             std::vector<Unknown>* unknown) {
  absl::StatusOr<const json*> requests = ObjectOrEmpty(resources, "requests", path);
  if (!requests.ok()) return requests.status();
  absl::StatusOr<const json*> limits = ObjectOrEmpty(resources, "limits", path);
  if (!limits.ok()) return limits.status();
  std::map<std::string, std::pair<const json*, std::string>> effective;
  for (const auto& [k, v] : (*limits)->items()) {
    effective[k] = {&v, Child(Child(path, "limits"), k)};
  }
  for (const auto& [k, v] : (*requests)->items()) {
    effective[k] = {&v, Child(Child(path, "requests"), k)};
  }
  for (const auto& [name, value] : effective) {
    if (absl::Status st = AddResource(name, *value.first, value.second, out, unknown); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

// A GPU request: how many GPUs, the share of each, the memory of each.
struct GpuAsk {
  int32_t num = 0;
  int32_t milli = 0;       // compute share; 0 = by memory only
  int64_t memory_mib = 0;  // 0 = not by memory
  GpuStyle style = GpuStyle::kNone;
  bool operator==(const GpuAsk& o) const {
    return milli == o.milli && memory_mib == o.memory_mib && style == o.style;
  }
};

int64_t GpuValue(const Need& n, std::string_view name, int64_t fallback) {
  auto it = n.gpu.find(name);
  return it == n.gpu.end() ? fallback : it->second;
}

// A well-formed ask for more GPUs than any node has: OutOfRange, so that the extender can answer
// "every node fails" (kube-scheduler then reports the pod unschedulable with the reason) where a
// malformed pod is an InvalidArgument.
absl::Status TooManyGpus(const std::string& path, int64_t gpus) {
  return absl::OutOfRangeError(
      absl::StrCat(path, ": asks for ", gpus, " GPUs; a node has at most ", core::kMaxGpusPerNode));
}

absl::StatusOr<GpuAsk> GpuAskOf(const Need& n, const std::string& path) {
  GpuAsk a;
  for (std::string_view count : {kGpuCountResource, kNvidiaGpuResource}) {
    const int64_t v = GpuValue(n, count, 0);
    if (v > core::kMaxGpusPerNode && v <= int64_t{1} << 30) {
      auto where = n.where.find(count);
      return TooManyGpus(where == n.where.end() ? path : where->second, v);
    }
  }
  auto check = [&](std::string_view name, int64_t lo, int64_t hi, const char* unit) {
    const int64_t v = GpuValue(n, name, lo);
    if (v >= lo && v <= hi) return absl::OkStatus();
    auto where = n.where.find(name);
    return Bad(where == n.where.end() ? path : where->second,
               absl::StrCat(v, " is outside ", lo, "..", hi, " (", unit, ")"));
  };
  const bool seedance = n.gpu.contains(kGpuMilliResource) || n.gpu.contains(kGpuCountResource) ||
                        n.gpu.contains(kGpuMemoryResource);
  if (seedance) {
    for (absl::Status st : {check(kGpuMilliResource, 1, core::kMilliGpu, "milli-GPU per GPU"),
                            check(kGpuCountResource, 0, core::kMaxGpusPerNode, "GPUs"),
                            check(kGpuMemoryResource, 0, int64_t{1} << 40, "MiB per GPU")}) {
      if (!st.ok()) return st;
    }
    a.style = GpuStyle::kSeedance;
    a.num = static_cast<int32_t>(GpuValue(n, kGpuCountResource, 1));
    a.memory_mib = GpuValue(n, kGpuMemoryResource, 0);
    a.milli = static_cast<int32_t>(
        GpuValue(n, kGpuMilliResource, a.memory_mib > 0 ? 0 : core::kMilliGpu));
    if (n.gpu.contains(kNvidiaGpuResource)) {
      return Bad(path, "asks for both seedance.io/ and nvidia.com/gpu GPUs; use one");
    }
    return a;
  }
  const int64_t gpus = GpuValue(n, kNvidiaGpuResource, 0);
  if (gpus == 0) return a;
  for (absl::Status st : {check(kNvidiaGpuResource, 0, core::kMaxGpusPerNode, "GPUs"),
                          check(kHamiGpuCoresResource, 0, 100, "percent of a GPU"),
                          check(kHamiGpuMemPctResource, 0, 100, "percent of a GPU's memory"),
                          check(kHamiGpuMemResource, 0, int64_t{1} << 40, "MiB per GPU")}) {
    if (!st.ok()) return st;
  }
  a.num = static_cast<int32_t>(gpus);
  const int64_t cores = GpuValue(n, kHamiGpuCoresResource, 0);
  const int64_t mem_pct = GpuValue(n, kHamiGpuMemPctResource, 0);
  a.memory_mib = GpuValue(n, kHamiGpuMemResource, 0);
  const bool hami = n.gpu.contains(kHamiGpuCoresResource) || n.gpu.contains(kHamiGpuMemResource) ||
                    n.gpu.contains(kHamiGpuMemPctResource);
  a.style = hami ? GpuStyle::kHami : GpuStyle::kWhole;
  a.milli = static_cast<int32_t>(std::max(cores, mem_pct) * 10);
  if (a.milli == 0 && a.memory_mib == 0) a.milli = core::kMilliGpu;  // HAMi: the whole device
  return a;
}

// KAI's annotations: gpu-fraction (with gpu-fraction-num-devices) or gpu-memory.
absl::StatusOr<GpuAsk> KaiAsk(const std::map<std::string, std::string>& annotations,
                              const std::string& path) {
  GpuAsk a;
  auto fraction = annotations.find(std::string(kKaiFractionAnnotation));
  auto memory = annotations.find(std::string(kKaiMemoryAnnotation));
  if (fraction == annotations.end() && memory == annotations.end()) return a;
  const std::string where = Child(path, "annotations");
  a.style = GpuStyle::kKai;
  a.num = 1;
  if (auto it = annotations.find(std::string(kKaiNumDevicesAnnotation)); it != annotations.end()) {
    absl::StatusOr<int64_t> n =
        base::ParseInt64(it->second, Child(where, it->first), 1, core::kMaxGpusPerNode);
    if (!n.ok()) return n.status();
    a.num = static_cast<int32_t>(*n);
  }
  if (fraction != annotations.end()) {
    absl::StatusOr<double> f =
        base::ParseDouble(fraction->second, Child(where, fraction->first), {0, 1, true, false});
    if (!f.ok()) return f.status();
    a.milli = static_cast<int32_t>(std::max(1.0, std::round(*f * core::kMilliGpu)));
  }
  if (memory != annotations.end()) {
    absl::StatusOr<int64_t> m =
        base::ParseInt64(memory->second, Child(where, memory->first), 1, int64_t{1} << 40);
    if (!m.ok()) return m.status();
    a.memory_mib = *m;
  }
  return a;
}

absl::Status DecodeContainers(const json& spec, std::string_view key, const std::string& path,
                              std::vector<Need>* needs, std::vector<bool>* sidecar,
                              std::vector<Unknown>* unknown) {
  absl::StatusOr<const json*> list = Member(spec, key, path, base::JsonKind::kArray);
  if (!list.ok()) return list.status();
  if (*list == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const json& c = (**list)[i];
    const std::string where = Index(Child(path, key), i);
    if (absl::Status st = base::CheckJsonKind(c, where, base::JsonKind::kObject); !st.ok()) {
      return st;
    }
    absl::StatusOr<const json*> res = ObjectOrEmpty(c, "resources", where);
    if (!res.ok()) return res.status();
    Need n;
    if (absl::Status st = DecodeResources(**res, Child(where, "resources"), &n, unknown);
        !st.ok()) {
      return st;
    }
    std::string restart;
    if (absl::Status st = GetString(c, "restartPolicy", where, &restart); !st.ok()) return st;
    needs->push_back(std::move(n));
    sidecar->push_back(restart == "Always");
  }
  return absl::OkStatus();
}

// The kubelet's effective request: max(sum of containers and sidecars, each init container with
// the sidecars started before it) + overhead.
void EffectiveCpuMemory(const std::vector<Need>& containers, const std::vector<Need>& inits,
                        const std::vector<bool>& sidecar, const Need& overhead, Pod* out) {
  int64_t cpu = 0, mem = 0;
  for (const Need& n : containers) {
    cpu += n.cpu_milli;
    mem += n.memory_mib;
  }
  int64_t side_cpu = 0, side_mem = 0, init_cpu = 0, init_mem = 0;
  for (size_t i = 0; i < inits.size(); ++i) {
    init_cpu = std::max(init_cpu, side_cpu + inits[i].cpu_milli);
    init_mem = std::max(init_mem, side_mem + inits[i].memory_mib);
    if (sidecar[i]) {
      side_cpu += inits[i].cpu_milli;
      side_mem += inits[i].memory_mib;
    }
  }
  out->shape.cpu_milli = std::max(cpu + side_cpu, init_cpu) + overhead.cpu_milli;
  out->shape.memory_mib = std::max(mem + side_mem, init_mem) + overhead.memory_mib;
}

// One GPU ask for the pod: regular containers' GPUs add up; an init container's ask counts when
// larger. Asks of different shares cannot be one pod shape.
absl::StatusOr<GpuAsk> PodGpuAsk(const std::vector<Need>& containers,
                                 const std::vector<Need>& inits, const std::string& path,
                                 std::vector<Unknown>* unknown) {
  GpuAsk total;
  bool mixed = false;
  auto add = [&](const GpuAsk& a, bool init) {
    if (a.num == 0) return;
    if (total.num > 0 && !(total == a)) {
      mixed = true;
      return;
    }
    const int32_t num = init ? std::max(total.num, a.num) : total.num + a.num;
    total = a;
    total.num = num;
  };
  for (size_t pass = 0; pass < 2; ++pass) {
    const std::vector<Need>& list = pass == 0 ? containers : inits;
    for (size_t i = 0; i < list.size(); ++i) {
      absl::StatusOr<GpuAsk> a = GpuAskOf(
          list[i],
          Child(Index(Child(path, pass == 0 ? "containers" : "initContainers"), i), "resources"));
      if (!a.ok()) return a.status();
      add(*a, pass == 1);
    }
  }
  if (mixed) {
    unknown->push_back({path, "containers ask for different GPU shares (one pod, one share)"});
  }
  if (total.num > core::kMaxGpusPerNode) return TooManyGpus(path, total.num);
  return total;
}

// Models a pod accepts: nodeSelector, then required node affinity "In" on the model labels.
absl::Status DecodeGpuModels(const json& spec, const std::string& path, Pod* out) {
  std::map<std::string, std::string> selector;
  if (absl::Status st = GetStringMap(spec, "nodeSelector", path, &selector); !st.ok()) {
    return st;
  }
  for (std::string_view label : {kGpuModelLabel, kGfdProductLabel}) {
    if (auto it = selector.find(std::string(label)); it != selector.end()) {
      out->gpu_spec = it->second;
      return absl::OkStatus();
    }
  }
  const json* terms = nullptr;
  if (auto a = spec.find("affinity"); a != spec.end() && a->is_object()) {
    if (auto na = a->find("nodeAffinity"); na != a->end() && na->is_object()) {
      if (auto req = na->find("requiredDuringSchedulingIgnoredDuringExecution");
          req != na->end() && req->is_object()) {
        if (auto t = req->find("nodeSelectorTerms"); t != req->end() && t->is_array()) {
          terms = &*t;
        }
      }
    }
  }
  if (terms == nullptr || terms->size() != 1 || !(*terms)[0].is_object()) return absl::OkStatus();
  auto exprs = (*terms)[0].find("matchExpressions");
  if (exprs == (*terms)[0].end() || !exprs->is_array()) return absl::OkStatus();
  for (const json& e : *exprs) {
    if (!e.is_object() || base::StringField(e, "operator") != "In") continue;
    const std::string key = base::StringField(e, "key");
    if (key != kGpuModelLabel && key != kGfdProductLabel) continue;
    auto values = e.find("values");
    if (values == e.end() || !values->is_array()) continue;
    std::vector<std::string> models;
    for (const json& v : *values) {
      if (v.is_string()) models.push_back(v.get<std::string>());
    }
    out->gpu_spec = absl::StrJoin(models, "|");
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status DecodeGpuAssignments(const std::string& text, const std::string& path,
                                  std::vector<GpuAssignment>* out) {
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const size_t colon = item.rfind(':');
    if (colon == std::string_view::npos) {
      return Bad(path, absl::StrCat("'", Shown(std::string(item)),
                                    "': expected GPU:MILLI (index or UUID)"));
    }
    GpuAssignment g;
    absl::StatusOr<int64_t> milli =
        base::ParseInt64(std::string(item.substr(colon + 1)), path, 1, core::kMilliGpu);
    if (!milli.ok()) return milli.status();
    g.milli = static_cast<int32_t>(*milli);
    const absl::string_view id = item.substr(0, colon);
    int index = 0;
    if (absl::SimpleAtoi(id, &index)) {
      if (index < 0 || index >= core::kMaxGpusPerNode) {
        return Bad(path,
                   absl::StrCat("GPU index ", index, " is outside 0..", core::kMaxGpusPerNode - 1));
      }
      g.index = index;
    } else if (!id.empty()) {
      g.uuid = std::string(id);
    } else {
      return Bad(path, "an empty GPU id");
    }
    out->push_back(std::move(g));
  }
  return absl::OkStatus();
}

absl::Status DecodeMetadata(const json& j, const std::string& path, std::string* name,
                            std::map<std::string, std::string>* labels,
                            std::map<std::string, std::string>* annotations,
                            const json** meta_out) {
  absl::StatusOr<const json*> meta = ObjectOrEmpty(j, "metadata", path);
  if (!meta.ok()) return meta.status();
  const std::string where = Child(path, "metadata");
  if (absl::Status st = GetString(**meta, "name", where, name); !st.ok()) return st;
  if (name->empty()) return Bad(Child(where, "name"), "missing (every object has a name)");
  if (absl::Status st = GetStringMap(**meta, "labels", where, labels); !st.ok()) return st;
  if (absl::Status st = GetStringMap(**meta, "annotations", where, annotations); !st.ok()) {
    return st;
  }
  *meta_out = *meta;
  return absl::OkStatus();
}

absl::Status LabelInt(const std::map<std::string, std::string>& labels, std::string_view key,
                      const std::string& path, int64_t hi, std::optional<int64_t>* out) {
  auto it = labels.find(std::string(key));
  if (it == labels.end()) return absl::OkStatus();
  absl::StatusOr<int64_t> v = base::ParseInt64(it->second, Child(path, key), 0, hi);
  if (!v.ok()) return v.status();
  *out = *v;
  return absl::OkStatus();
}

absl::Status DecodeTaints(const json& spec, const std::string& path,
                          std::vector<core::Taint>* out) {
  absl::StatusOr<const json*> taints = Member(spec, "taints", path, base::JsonKind::kArray);
  if (!taints.ok()) return taints.status();
  if (*taints == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < (*taints)->size(); ++i) {
    const json& t = (**taints)[i];
    const std::string where = Index(Child(path, "taints"), i);
    if (absl::Status st = base::CheckJsonKind(t, where, base::JsonKind::kObject); !st.ok()) {
      return st;
    }
    core::Taint taint;
    for (auto [key, field] : {std::pair{"key", &taint.key}, std::pair{"value", &taint.value},
                              std::pair{"effect", &taint.effect}}) {
      if (absl::Status st = GetString(t, key, where, field); !st.ok()) return st;
    }
    if (taint.key.empty()) return Bad(Child(where, "key"), "missing");
    if (taint.effect != core::kTaintNoSchedule && taint.effect != core::kTaintPreferNoSchedule &&
        taint.effect != core::kTaintNoExecute) {
      return Bad(Child(where, "effect"),
                 absl::StrCat("'", Shown(taint.effect),
                              "' is not NoSchedule, PreferNoSchedule or NoExecute"));
    }
    out->push_back(std::move(taint));
  }
  return absl::OkStatus();
}

absl::Status DecodeNodeGpus(const std::map<std::string, std::string>& labels,
                            const json& allocatable, const std::string& path, Node* out) {
  const std::string labels_at = Child(Child(path, "metadata"), "labels");
  std::optional<int64_t> count, gfd_count, memory, gfd_memory;
  for (auto [key, dst, hi] :
       {std::tuple{kGpuCountLabel, &count, int64_t{core::kMaxGpusPerNode}},
        std::tuple{kGfdCountLabel, &gfd_count, int64_t{core::kMaxGpusPerNode}},
        std::tuple{kGpuMemoryLabel, &memory, int64_t{1} << 40},
        std::tuple{kGfdMemoryLabel, &gfd_memory, int64_t{1} << 40}}) {
    if (absl::Status st = LabelInt(labels, key, labels_at, hi, dst); !st.ok()) return st;
  }
  if (!count) count = gfd_count;
  if (!count) {
    if (auto it = allocatable.find(kNvidiaGpuResource); it != allocatable.end()) {
      const std::string where =
          Child(Child(Child(path, "status"), "allocatable"), kNvidiaGpuResource);
      absl::StatusOr<int64_t> q = Quantity(*it, where, kCount, Round::kDown);
      if (!q.ok()) return q.status();
      if (*q > core::kMaxGpusPerNode) {
        return Bad(where, absl::StrCat(*q, " GPUs; Seedance models at most ", core::kMaxGpusPerNode,
                                       " per node (virtual GPUs? label the node with "
                                       "nvidia.com/gpu.count)"));
      }
      count = *q;
    }
  }
  out->spec.num_gpus = static_cast<int32_t>(count.value_or(0));
  out->gpu_memory_mib = memory.value_or(gfd_memory.value_or(0));
  for (std::string_view key : {kGpuModelLabel, kGfdProductLabel}) {
    if (auto it = labels.find(std::string(key));
        it != labels.end() && out->spec.gpu_model.empty()) {
      out->spec.gpu_model = it->second;
    }
  }
  if (out->spec.num_gpus > 0 && out->spec.gpu_model.empty()) out->spec.gpu_model = "unknown";
  if (out->spec.num_gpus == 0) out->spec.gpu_model.clear();
  return absl::OkStatus();
}

}  // namespace

std::string_view GpuStyleName(GpuStyle style) {
  switch (style) {
    case GpuStyle::kNone:
      return "none";
    case GpuStyle::kSeedance:
      return "seedance";
    case GpuStyle::kWhole:
      return "whole";
    case GpuStyle::kHami:
      return "hami";
    case GpuStyle::kKai:
      return "kai";
  }
  return "none";
}

int32_t Pod::ShareFor(int64_t node_gpu_memory_mib) const {
  if (gpu_memory_mib <= 0) return shape.gpu_milli;
  if (node_gpu_memory_mib <= 0) return 0;
  const int64_t by_memory =
      (gpu_memory_mib * core::kMilliGpu + node_gpu_memory_mib - 1) / node_gpu_memory_mib;
  return static_cast<int32_t>(
      std::min<int64_t>(core::kMilliGpu, std::max<int64_t>(shape.gpu_milli, by_memory)));
}

absl::Status DecodeNode(const json& j, const std::string& path, Node* out,
                        std::vector<Unknown>* unknown) {
  if (absl::Status st = base::CheckJsonKind(j, path, base::JsonKind::kObject); !st.ok()) return st;
  std::map<std::string, std::string> annotations;
  const json* meta = nullptr;
  if (absl::Status st =
          DecodeMetadata(j, path, &out->spec.name, &out->spec.labels, &annotations, &meta);
      !st.ok()) {
    return st;
  }
  absl::StatusOr<const json*> spec = ObjectOrEmpty(j, "spec", path);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<const json*> status = ObjectOrEmpty(j, "status", path);
  if (!status.ok()) return status.status();
  const std::string status_at = Child(path, "status");
  absl::StatusOr<const json*> alloc = ObjectOrEmpty(**status, "allocatable", status_at);
  if (!alloc.ok()) return alloc.status();
  std::string alloc_at = Child(status_at, "allocatable");
  if ((*alloc)->empty()) {
    alloc = ObjectOrEmpty(**status, "capacity", status_at);
    if (!alloc.ok()) return alloc.status();
    alloc_at = Child(status_at, "capacity");
  }
  for (auto [key, dst, unit] : {std::tuple{"cpu", &out->spec.cpu_milli, kMilli},
                                std::tuple{"memory", &out->spec.memory_mib, kMib}}) {
    auto it = (*alloc)->find(key);
    if (it == (*alloc)->end()) return Bad(Child(alloc_at, key), "missing");
    absl::StatusOr<int64_t> q = Quantity(*it, Child(alloc_at, key), unit, Round::kDown);
    if (!q.ok()) return q.status();
    *dst = *q;
  }
  for (const auto& [name, v] : (*alloc)->items()) {
    if (!IsNativeResource(name) && !IsGpuResource(name)) {
      unknown->push_back(
          {Child(alloc_at, name), absl::StrCat("extended resource ", Shown(name), " (ignored)")});
    }
  }
  if (absl::Status st = DecodeNodeGpus(out->spec.labels, **alloc, path, out); !st.ok()) {
    return st;
  }
  const std::string spec_at = Child(path, "spec");
  absl::StatusOr<const json*> unsched =
      Member(**spec, "unschedulable", spec_at, base::JsonKind::kBool);
  if (!unsched.ok()) return unsched.status();
  out->unschedulable = *unsched != nullptr && (*unsched)->get<bool>();
  if (absl::Status st = DecodeTaints(**spec, spec_at, &out->spec.taints); !st.ok()) return st;
  if (auto it = annotations.find(std::string(kGpuUuidsAnnotation)); it != annotations.end()) {
    out->gpu_uuids = absl::StrSplit(it->second, ',', absl::SkipWhitespace());
  }
  return absl::OkStatus();
}

absl::Status DecodePod(const json& j, const std::string& path, Pod* out,
                       std::vector<Unknown>* unknown) {
  if (absl::Status st = base::CheckJsonKind(j, path, base::JsonKind::kObject); !st.ok()) return st;
  std::map<std::string, std::string> annotations;
  const json* meta = nullptr;
  if (absl::Status st = DecodeMetadata(j, path, &out->name, &out->labels, &annotations, &meta);
      !st.ok()) {
    return st;
  }
  const std::string meta_at = Child(path, "metadata");
  for (auto [key, dst] : {std::pair{"namespace", &out->ns}, std::pair{"uid", &out->uid}}) {
    if (absl::Status st = GetString(*meta, key, meta_at, dst); !st.ok()) return st;
  }
  if (out->ns.empty()) out->ns = "default";
  std::string created;
  if (absl::Status st = GetString(*meta, "creationTimestamp", meta_at, &created); !st.ok()) {
    return st;
  }
  if (!created.empty()) {
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, created, &t, &err)) {
      return Bad(Child(meta_at, "creationTimestamp"),
                 absl::StrCat("'", Shown(created), "' is not an RFC 3339 time"));
    }
    out->creation_unix_s = absl::ToUnixSeconds(t);
  }
  absl::StatusOr<const json*> spec = ObjectOrEmpty(j, "spec", path);
  if (!spec.ok()) return spec.status();
  const std::string spec_at = Child(path, "spec");
  if (absl::Status st = GetString(**spec, "nodeName", spec_at, &out->node_name); !st.ok()) {
    return st;
  }
  absl::StatusOr<const json*> prio = Member(**spec, "priority", spec_at, base::JsonKind::kInteger);
  if (!prio.ok()) return prio.status();
  if (*prio != nullptr) {
    const int64_t p = (*prio)->is_number_unsigned()
                          ? static_cast<int64_t>(
                                std::min<uint64_t>((*prio)->get<uint64_t>(), uint64_t{INT64_MAX}))
                          : (*prio)->get<int64_t>();
    if (p < INT32_MIN || p > INT32_MAX) return Bad(Child(spec_at, "priority"), "outside int32");
    out->priority = static_cast<int32_t>(p);
  }
  absl::StatusOr<const json*> status = ObjectOrEmpty(j, "status", path);
  if (!status.ok()) return status.status();
  for (auto [key, dst] : {std::pair{"phase", &out->phase}, std::pair{"qosClass", &out->qos}}) {
    if (absl::Status st = GetString(**status, key, Child(path, "status"), dst); !st.ok()) {
      return st;
    }
  }
  std::vector<Need> containers, inits;
  std::vector<bool> regular_sidecar, init_sidecar;
  if (absl::Status st =
          DecodeContainers(**spec, "containers", spec_at, &containers, &regular_sidecar, unknown);
      !st.ok()) {
    return st;
  }
  if (absl::Status st =
          DecodeContainers(**spec, "initContainers", spec_at, &inits, &init_sidecar, unknown);
      !st.ok()) {
    return st;
  }
  Need overhead;
  absl::StatusOr<const json*> oh = ObjectOrEmpty(**spec, "overhead", spec_at);
  if (!oh.ok()) return oh.status();
  for (const auto& [name, v] : (*oh)->items()) {
    if (absl::Status st =
            AddResource(name, v, Child(Child(spec_at, "overhead"), name), &overhead, unknown);
        !st.ok()) {
      return st;
    }
  }
  EffectiveCpuMemory(containers, inits, init_sidecar, overhead, out);
  absl::StatusOr<GpuAsk> ask = PodGpuAsk(containers, inits, spec_at, unknown);
  if (!ask.ok()) return ask.status();
  absl::StatusOr<GpuAsk> kai = KaiAsk(annotations, meta_at);
  if (!kai.ok()) return kai.status();
  if (kai->num > 0) {
    if (ask->num > 0) {
      unknown->push_back({Child(meta_at, "annotations"),
                          "KAI gpu-fraction annotations beside GPU resource requests"});
    }
    ask = kai;
  }
  out->shape.num_gpu = ask->num;
  out->shape.gpu_milli = ask->num > 0 ? ask->milli : 0;
  out->gpu_memory_mib = ask->num > 0 ? ask->memory_mib : 0;
  out->style = ask->num > 0 ? ask->style : GpuStyle::kNone;
  if (absl::Status st = DecodeGpuModels(**spec, spec_at, out); !st.ok()) return st;
  for (auto [key, dst] : {std::pair{kHamiUseTypeAnnotation, &out->gpu_type_substrings},
                          std::pair{kHamiNoUseTypeAnnotation, &out->gpu_type_excluded}}) {
    if (auto it = annotations.find(std::string(key)); it != annotations.end()) {
      *dst = absl::StrSplit(it->second, ',', absl::SkipWhitespace());
    }
  }
  if (auto it = annotations.find(std::string(kGpusAnnotation)); it != annotations.end()) {
    if (absl::Status st = DecodeGpuAssignments(
            it->second, Child(Child(meta_at, "annotations"), kGpusAnnotation), &out->gpus);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

std::string EncodeGpuPod(const GpuPodManifest& m) {
  SEEDANCE_CHECK(m.gpu_memory_mib > 0) << "a GPU pod asks for some GPU memory";
  std::string name;
  for (char c : m.name) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += (std::isalnum(static_cast<unsigned char>(l)) != 0) ? l : '-';
  }
  name = name.substr(0, 63);
  const size_t first = name.find_first_not_of('-');
  name = first == std::string::npos ? "model" : name.substr(first);
  name.erase(name.find_last_not_of('-') + 1);
  nlohmann::ordered_json limits = {{kGpuCountResource, "1"},
                                   {kGpuMemoryResource, std::to_string(m.gpu_memory_mib)}};
  nlohmann::ordered_json spec = {{"schedulerName", "seedance"}};
  if (!m.gpu_model.empty()) spec["nodeSelector"] = {{kGpuModelLabel, m.gpu_model}};
  spec["containers"] = {
      {{"name", "model"}, {"image", m.image}, {"resources", {{"limits", limits}}}}};
  nlohmann::ordered_json meta = {{"name", name}};
  if (!m.annotations.empty()) meta["annotations"] = m.annotations;
  nlohmann::ordered_json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}};
  pod["spec"] = spec;
  return pod.dump(2) + "\n";
}

}  // namespace seedance::k8s
