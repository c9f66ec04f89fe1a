#include "seedance/server/codec.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/text.h"
#include "seedance/base/uuid.h"

namespace seedance::server {

namespace {

// Reads j[key] as T, or fails naming the key; absent keys keep `*out`.
template <typename T>
absl::Status Get(const Json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  try {
    *out = it->get<T>();
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("$.", key, ": ", e.what()));
  }
  return absl::OkStatus();
}

Json TopologyToJson(const core::NodeTopology& t) {
  Json numa = Json::array();
  for (const core::NumaInfo& n : t.numa) {
    numa.push_back({{"id", n.id}, {"cpu_milli", n.cpu_milli}, {"memory_mib", n.memory_mib}});
  }
  Json gpus = Json::array();
  for (const core::GpuTopology& g : t.gpus) {
    gpus.push_back({{"numa_node", g.numa_node},
                    {"nvlink_group", g.nvlink_group},
                    {"pci_address", g.pci_address},
                    {"pcie_switch", g.pcie_switch}});
  }
  return {{"numa_nodes", numa}, {"gpus", gpus}};
}

absl::Status TopologyFromJson(const Json& j, core::NodeTopology* t) {
  if (!j.is_object()) return absl::InvalidArgumentError("$.topology: not an object");
  try {
    for (const Json& n : j.value("numa_nodes", Json::array())) {
      t->numa.push_back({n.at("id").get<int>(), n.at("cpu_milli").get<int64_t>(),
                         n.at("memory_mib").get<int64_t>()});
    }
    for (const Json& g : j.value("gpus", Json::array())) {
      t->gpus.push_back({g.value("numa_node", -1), g.value("nvlink_group", std::string()),
                         g.value("pci_address", std::string()),
                         g.value("pcie_switch", std::string())});
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("$.topology: ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace

Json NodeToJson(const core::NodeSpec& node) {
  Json taints = Json::array();
  for (const core::Taint& t : node.taints) {
    taints.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
  }
  Json labels = Json::object();
  for (const auto& [k, v] : node.labels) labels[k] = v;
  Json j = {{"name", node.name},
            {"cpu_milli", node.cpu_milli},
            {"memory_mib", node.memory_mib},
            {"num_gpus", node.num_gpus},
            {"gpu_model", node.gpu_model},
            {"cost_usd_per_hour", node.cost_usd_per_hour},
            {"power_w", node.power_w},
            {"labels", labels},
            {"taints", taints},
            {"topology", TopologyToJson(node.topology)}};
  // Written only for NPU nodes and stated memories, so that GPU nodes read as they always did.
  if (node.npu) j["device_type"] = "npu";
  if (node.device_memory_mib > 0) j["device_memory_mib"] = node.device_memory_mib;
  return j;
}

absl::StatusOr<core::NodeSpec> NodeFromJson(const Json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("$: a node must be a JSON object");
  core::NodeSpec n;
  absl::Status st = Get(j, "name", &n.name);
  if (st.ok()) st = Get(j, "cpu_milli", &n.cpu_milli);
  if (st.ok()) st = Get(j, "memory_mib", &n.memory_mib);
  if (st.ok()) st = Get(j, "num_gpus", &n.num_gpus);
  if (st.ok()) st = Get(j, "gpu_model", &n.gpu_model);
  if (st.ok()) st = Get(j, "cost_usd_per_hour", &n.cost_usd_per_hour);
  if (st.ok()) st = Get(j, "power_w", &n.power_w);
  if (st.ok()) st = Get(j, "labels", &n.labels);
  if (st.ok()) st = Get(j, "device_memory_mib", &n.device_memory_mib);
  std::string device_type = "gpu";
  if (st.ok()) st = Get(j, "device_type", &device_type);
  if (!st.ok()) return st;
  n.npu = device_type == "npu";
  try {
    for (const Json& t : j.value("taints", Json::array())) {
      n.taints.push_back({t.at("key").get<std::string>(), t.value("value", std::string()),
                          t.at("effect").get<std::string>()});
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("$.taints: ", e.what()));
  }
  if (auto it = j.find("topology"); it != j.end() && !it->is_null()) {
    if (absl::Status ts = TopologyFromJson(*it, &n.topology); !ts.ok()) return ts;
  }
  return n;
}

Json NodeStatusJson(const core::ClusterState& state, int n, const sched::PodLedger& ledger,
                    bool with_pods) {
  Json j = NodeToJson(state.node(n));
  j["cordoned"] = state.cordoned(n);
  Json gpus = Json::array();
  int64_t gpu_free = 0;
  const std::span<const int32_t> left = state.gpu_left(n);
  for (size_t g = 0; g < left.size(); ++g) {
    gpus.push_back({{"index", g}, {"free_milli", left[g]}, {"allocated_milli", 1000 - left[g]}});
    gpu_free += left[g];
  }
  const core::NodeSpec& spec = state.node(n);
  j["allocated"] = {{"cpu_milli", spec.cpu_milli - state.cpu_left(n)},
                    {"memory_mib", spec.memory_mib - state.memory_left(n)},
                    {"gpu_milli", int64_t{1000} * spec.num_gpus - gpu_free}};
  j["free"] = {{"cpu_milli", state.cpu_left(n)},
               {"memory_mib", state.memory_left(n)},
               {"gpu_milli", gpu_free}};
  j["gpus"] = gpus;
  j["num_pods"] = state.num_pods(n);
  if (with_pods) {
    Json pods = Json::array();
    for (const sched::PodInfo* p : ledger.PodsOnNode(n)) pods.push_back(p->uid);
    j["pods"] = pods;
  }
  return j;
}

namespace {

// Capacity and free room of a set of nodes.
struct RoomSum {
  int64_t nodes = 0, cpu = 0, memory = 0, gpus = 0, cpu_free = 0, memory_free = 0,
          gpu_milli_free = 0, whole_gpus_free = 0;
  // The most on one node (a pod fits nowhere if it asks more).
  int64_t max_cpu_free = 0, max_memory_free = 0, max_whole_gpus_free = 0;

  void Add(const core::ClusterState& state, int n) {
    const core::NodeSpec& spec = state.node(n);
    int64_t milli = 0, whole = 0;
    for (int32_t left : state.gpu_left(n)) {
      milli += left;
      whole += left == 1000 ? 1 : 0;
    }
    ++nodes;
    cpu += spec.cpu_milli;
    memory += spec.memory_mib;
    gpus += spec.num_gpus;
    cpu_free += state.cpu_left(n);
    memory_free += state.memory_left(n);
    gpu_milli_free += milli;
    whole_gpus_free += whole;
    max_cpu_free = std::max<int64_t>(max_cpu_free, state.cpu_left(n));
    max_memory_free = std::max<int64_t>(max_memory_free, state.memory_left(n));
    max_whole_gpus_free = std::max(max_whole_gpus_free, whole);
  }
  Json ToJson() const {
    return {{"nodes", nodes},
            {"capacity", {{"cpu_milli", cpu}, {"memory_mib", memory}, {"num_gpus", gpus}}},
            {"free",
             {{"cpu_milli", cpu_free},
              {"memory_mib", memory_free},
              {"gpu_milli", gpu_milli_free},
              {"whole_gpus", whole_gpus_free}}},
            {"largest_free",
             {{"cpu_milli", max_cpu_free},
              {"memory_mib", max_memory_free},
              {"whole_gpus", max_whole_gpus_free}}}};
  }
};

}  // namespace

Json ClusterSummaryJson(const std::string& cluster, const std::string& backend,
                        const core::ClusterState& state, size_t pending_pods) {
  RoomSum all;
  std::map<std::string, RoomSum> by_model;
  std::map<std::string, core::GpuModelId> model_ids;
  int64_t cordoned = 0;
  for (int n = 0; n < state.num_nodes(); ++n) {
    if (!state.alive(n)) continue;
    if (state.cordoned(n)) {
      ++cordoned;
      continue;
    }
    all.Add(state, n);
    if (state.node(n).num_gpus > 0) {
      by_model[state.node(n).gpu_model].Add(state, n);
      model_ids[state.node(n).gpu_model] = state.model(n);
    }
  }
  Json models = Json::array();
  for (const auto& [model, sum] : by_model) {
    const core::GpuModelId id = model_ids[model];
    Json m = {{"gpu_model", model},
              {"device_type", id == core::kNoGpuModel || !state.model_npu(id) ? "gpu" : "npu"},
              {"device_memory_mib", id == core::kNoGpuModel ? 0 : state.model_memory_mib(id)}};
    m.update(sum.ToJson());
    models.push_back(std::move(m));
  }
  Json j = {{"cluster", cluster}, {"backend", backend}};
  j.update(all.ToJson());
  j["cordoned_nodes"] = cordoned;
  j["gpu_models"] = std::move(models);
  j["pending_pods"] = pending_pods;
  return j;
}

namespace {

// A pod's device ask, written only when set (docs/api.md: absent keys mean unset).
void AddDeviceAsk(const core::DeviceAsk& ask, Json* j) {
  if (ask.type != core::DeviceClass::kUnset) {
    (*j)["device_type"] = std::string(core::DeviceClassName(ask.type));
  }
  if (ask.memory_mib > 0) (*j)["device_memory_mib"] = ask.memory_mib;
}

}  // namespace

Json PodToJson(const sched::PodInfo& pod, const core::ClusterState& state) {
  Json gpus = Json::array();
  Json node = nullptr, numa = nullptr;
  if (pod.phase != sched::PodPhase::kPending && pod.placement.node >= 0) {
    node = state.node(pod.placement.node).name;
    if (pod.placement.numa >= 0) numa = pod.placement.numa;
    for (int8_t g : pod.placement.gpu_ids()) {
      gpus.push_back({{"index", g}, {"milli", pod.shape.gpu_milli}});
    }
  }
  Json labels = Json::object();
  for (const auto& [k, v] : pod.labels) labels[k] = v;
  Json annotations = Json::object();
  for (const auto& [k, v] : pod.annotations) annotations[k] = v;
  Json j = {{"uid", pod.uid},
            {"name", pod.name},
            {"namespace", pod.ns},
            {"phase", std::string(sched::PodPhaseName(pod.phase))},
            {"node", node},
            {"gpus", gpus},
            {"numa_node", numa},
            {"revision", pod.revision},
            {"cpu_milli", pod.shape.cpu_milli},
            {"memory_mib", pod.shape.memory_mib},
            {"num_gpu", pod.shape.num_gpu},
            {"gpu_milli", pod.shape.gpu_milli},
            {"gpu_spec", pod.gpu_spec},
            {"priority", pod.priority},
            {"labels", labels},
            {"annotations", annotations},
            {"gang", pod.gang},
            {"gang_min", pod.gang.empty() ? Json(nullptr) : Json(pod.gang_min)},
            {"created_unix_ns", pod.created_unix_ns}};
  AddDeviceAsk(pod.device, &j);
  return j;
}

namespace {

// s as a JSON string, as DumpJson writes it: printable ASCII other than '"' and '\\' goes out as
// it is; anything else through nlohmann (escapes, and U+FFFD for invalid UTF-8).
void AppendJsonString(std::string* out, std::string_view s) {
  for (const unsigned char c : s) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
      out->append(base::DumpJson(Json(std::string(s)), -1));
      return;
    }
  }
  out->push_back('"');
  out->append(s);
  out->push_back('"');
}

void AppendJsonMap(std::string* out, const std::map<std::string, std::string>& m) {
  out->push_back('{');
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(out, k);
    out->push_back(':');
    AppendJsonString(out, v);
  }
  out->push_back('}');
}

}  // namespace

std::string PodJsonText(const sched::PodInfo& pod, const core::ClusterState& state, bool as_pending,
                        int64_t revision) {
  const bool placed =
      !as_pending && pod.phase != sched::PodPhase::kPending && pod.placement.node >= 0;
  std::string out;
  out.reserve(320);
  out.append("{\"uid\":");
  AppendJsonString(&out, pod.uid);
  out.append(",\"name\":");
  AppendJsonString(&out, pod.name);
  out.append(",\"namespace\":");
  AppendJsonString(&out, pod.ns);
  out.append(",\"phase\":\"");
  out.append(as_pending ? std::string_view("Pending") : sched::PodPhaseName(pod.phase));
  out.append("\",\"node\":");
  if (placed) {
    AppendJsonString(&out, state.node(pod.placement.node).name);
  } else {
    out.append("null");
  }
  out.append(",\"gpus\":[");
  if (placed) {
    bool first = true;
    for (const int8_t g : pod.placement.gpu_ids()) {
      absl::StrAppend(&out, first ? "" : ",", "{\"index\":", static_cast<int>(g),
                      ",\"milli\":", pod.shape.gpu_milli, "}");
      first = false;
    }
  }
  out.append("],\"numa_node\":");
  if (placed && pod.placement.numa >= 0) {
    absl::StrAppend(&out, pod.placement.numa);
  } else {
    out.append("null");
  }
  absl::StrAppend(&out, ",\"revision\":", revision >= 0 ? revision : pod.revision,
                  ",\"cpu_milli\":", pod.shape.cpu_milli, ",\"memory_mib\":", pod.shape.memory_mib,
                  ",\"num_gpu\":", pod.shape.num_gpu, ",\"gpu_milli\":", pod.shape.gpu_milli,
                  ",\"gpu_spec\":");
  AppendJsonString(&out, pod.gpu_spec);
  absl::StrAppend(&out, ",\"priority\":", pod.priority, ",\"labels\":");
  AppendJsonMap(&out, pod.labels);
  out.append(",\"annotations\":");
  AppendJsonMap(&out, pod.annotations);
  out.append(",\"gang\":");
  AppendJsonString(&out, pod.gang);
  out.append(",\"gang_min\":");
  if (pod.gang.empty()) {
    out.append("null");
  } else {
    absl::StrAppend(&out, pod.gang_min);
  }
  absl::StrAppend(&out, ",\"created_unix_ns\":", pod.created_unix_ns);
  if (pod.device.type != core::DeviceClass::kUnset) {
    absl::StrAppend(&out, ",\"device_type\":\"",
                    std::string(core::DeviceClassName(pod.device.type)), "\"");
  }
  if (pod.device.memory_mib > 0) {
    absl::StrAppend(&out, ",\"device_memory_mib\":", pod.device.memory_mib);
  }
  out.push_back('}');
  return out;
}

absl::StatusOr<sched::PodInfo> PodFromJson(const Json& j, const core::ClusterState& state) {
  if (!j.is_object()) return absl::InvalidArgumentError("$: a pod must be a JSON object");
  sched::PodInfo p;
  std::string phase = "Pending";
  absl::Status st = Get(j, "uid", &p.uid);
  if (st.ok()) st = Get(j, "name", &p.name);
  if (st.ok()) st = Get(j, "namespace", &p.ns);
  if (st.ok()) st = Get(j, "phase", &phase);
  if (st.ok()) st = Get(j, "revision", &p.revision);
  if (st.ok()) st = Get(j, "cpu_milli", &p.shape.cpu_milli);
  if (st.ok()) st = Get(j, "memory_mib", &p.shape.memory_mib);
  if (st.ok()) st = Get(j, "num_gpu", &p.shape.num_gpu);
  if (st.ok()) st = Get(j, "gpu_milli", &p.shape.gpu_milli);
  if (st.ok()) st = Get(j, "gpu_spec", &p.gpu_spec);
  if (st.ok()) st = Get(j, "priority", &p.priority);
  if (st.ok()) st = Get(j, "labels", &p.labels);
  if (st.ok()) st = Get(j, "annotations", &p.annotations);
  if (st.ok()) st = Get(j, "gang", &p.gang);
  if (st.ok()) st = Get(j, "gang_min", &p.gang_min);
  if (st.ok()) st = Get(j, "created_unix_ns", &p.created_unix_ns);
  std::string device_type;
  if (st.ok()) st = Get(j, "device_type", &device_type);
  if (st.ok()) st = Get(j, "device_memory_mib", &p.device.memory_mib);
  if (!st.ok()) return st;
  p.device.type = core::DeviceClassFromName(device_type);
  if (phase == "Pending") {
    p.phase = sched::PodPhase::kPending;
    return p;
  }
  p.phase = phase == "Bound" ? sched::PodPhase::kBound : sched::PodPhase::kAssumed;
  if (phase != "Bound" && phase != "Assumed") {
    return absl::InvalidArgumentError(absl::StrCat("$.phase: unknown phase '", phase, "'"));
  }
  std::string node;
  if (st = Get(j, "node", &node); !st.ok()) return st;
  p.placement.node = state.FindNode(node);
  if (p.placement.node < 0) {
    return absl::InvalidArgumentError(absl::StrCat("$.node: no node named '", node, "'"));
  }
  const Json gpus = j.value("gpus", Json::array());
  if (!gpus.is_array() || gpus.size() > static_cast<size_t>(core::kMaxGpusPerNode)) {
    return absl::InvalidArgumentError("$.gpus: not a list of at most 16 GPUs");
  }
  try {
    for (const Json& g : gpus) {
      p.placement.gpus[p.placement.num_gpus++] = static_cast<int8_t>(g.at("index").get<int>());
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("$.gpus: ", e.what()));
  }
  // Absent or null in state written before NUMA pinning: not pinned.
  if (const auto it = j.find("numa_node"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX) {
      return absl::InvalidArgumentError("$.numa_node: not a NUMA node id");
    }
    p.placement.numa = static_cast<int32_t>(it->get<int64_t>());
  }
  return p;
}

sched::PodInfo PodFromRequest(api::PodRequest r) {
  sched::PodInfo pod;
  pod.uid = base::NewUuid();
  pod.name = std::move(r.name);
  pod.ns = std::move(r.ns);
  pod.priority = r.priority;
  pod.labels = std::move(r.labels);
  pod.annotations = std::move(r.annotations);
  pod.gang = std::move(r.gang);
  pod.gang_min = r.gang_min;
  pod.gpu_spec = std::move(r.gpu_spec);
  pod.device = r.device;
  pod.shape.cpu_milli = r.cpu_milli;
  pod.shape.memory_mib = r.memory_mib;
  pod.shape.num_gpu = r.num_gpu;
  pod.shape.gpu_milli = r.gpu_milli;
  pod.created_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  return pod;
}

}  // namespace seedance::server
