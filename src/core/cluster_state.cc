#include "seedance/core/cluster_state.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"
#include "seedance/hw/catalog.h"

namespace seedance::core {

std::string_view DeviceClassName(DeviceClass c) {
  switch (c) {
    case DeviceClass::kGpu:
      return "gpu";
    case DeviceClass::kNpu:
      return "npu";
    case DeviceClass::kAny:
      return "any";
    case DeviceClass::kUnset:
      break;
  }
  return "";
}

DeviceClass DeviceClassFromName(std::string_view name) {
  if (name == "gpu") return DeviceClass::kGpu;
  if (name == "npu") return DeviceClass::kNpu;
  if (name == "any") return DeviceClass::kAny;
  return DeviceClass::kUnset;
}

bool DeviceAccepts(const DeviceAsk& ask, bool spec_empty, bool named, bool npu,
                   int64_t memory_mib) {
  if (!named) return false;
  DeviceClass type = ask.type;
  if (type == DeviceClass::kUnset) type = spec_empty ? DeviceClass::kGpu : DeviceClass::kAny;
  if (type == DeviceClass::kGpu && npu) return false;
  if (type == DeviceClass::kNpu && !npu) return false;
  return ask.memory_mib <= 0 || memory_mib >= ask.memory_mib;
}

namespace {

// The catalog's entry for a node's device model, or nullptr.
const hw::GpuModel* CatalogEntry(const NodeSpec& spec) {
  return spec.gpu_model.empty() ? nullptr : hw::Find(spec.gpu_model);
}

}  // namespace

absl::StatusOr<ClusterState> ClusterState::Create(std::vector<NodeSpec> nodes) {
  ClusterState s;
  const size_t n = nodes.size();
  s.nodes_.reserve(n);
  s.cpu_left_.reserve(n);
  s.memory_left_.reserve(n);
  s.gpu_offset_.reserve(n);
  s.model_.reserve(n);
  s.by_name_.reserve(n);
  for (NodeSpec& node : nodes) {
    absl::StatusOr<int> added = s.AddNode(std::move(node));
    if (!added.ok()) return added.status();
  }
  return s;
}

absl::Status ClusterState::ValidateSpec(const NodeSpec& node) {
  auto error = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("node '", node.name, "': ", parts...));
  };
  if (node.cpu_milli < 0 || node.memory_mib < 0 || node.num_gpus < 0) {
    return error("negative capacity");
  }
  if (node.num_gpus > kMaxGpusPerNode) {
    return error(node.num_gpus, " GPUs, at most ", kMaxGpusPerNode);
  }
  if (node.device_memory_mib < 0) return error("negative device memory");
  if (node.npu && node.num_gpus > 0 && node.gpu_model.empty()) {
    return error("its NPUs name no model");
  }
  // The catalog is asked only about nodes that call their devices NPUs (AddNode runs per node
  // of a cluster-scale simulation).
  if (const hw::GpuModel* entry = node.npu && node.num_gpus > 0 ? CatalogEntry(node) : nullptr;
      entry != nullptr && entry->kind == hw::DeviceKind::kGpu) {
    return error("model '", node.gpu_model, "' is a GPU (", entry->description, "), not an NPU");
  }
  for (const Taint& t : node.taints) {
    if (t.key.empty()) return error("a taint has an empty key");
    if (t.effect != kTaintNoSchedule && t.effect != kTaintPreferNoSchedule &&
        t.effect != kTaintNoExecute) {
      return error("taint '", t.key, "' has effect '", t.effect, "'; expected ",
                   std::string(kTaintNoSchedule), ", ", std::string(kTaintPreferNoSchedule), " or ",
                   std::string(kTaintNoExecute));
    }
  }
  const NodeTopology& topo = node.topology;
  for (size_t i = 0; i < topo.numa.size(); ++i) {
    const NumaInfo& numa = topo.numa[i];
    if (numa.id < 0) return error("NUMA node id ", numa.id, " is negative");
    if (numa.cpu_milli < 0 || numa.memory_mib < 0) {
      return error("NUMA node ", numa.id, " has a negative capacity");
    }
    for (size_t j = 0; j < i; ++j) {
      if (topo.numa[j].id == numa.id) return error("NUMA node id ", numa.id, " listed twice");
    }
  }
  if (!topo.gpus.empty() && topo.gpus.size() != static_cast<size_t>(node.num_gpus)) {
    return error("topology describes ", topo.gpus.size(), " GPUs, the node has ", node.num_gpus);
  }
  for (size_t g = 0; g < topo.gpus.size(); ++g) {
    const int numa = topo.gpus[g].numa_node;
    if (numa == -1) continue;
    const bool listed = std::any_of(topo.numa.begin(), topo.numa.end(),
                                    [&](const NumaInfo& info) { return info.id == numa; });
    if (!listed)
      return error("GPU ", g, " is on NUMA node ", numa, ", which the node does not list");
  }
  return absl::OkStatus();
}

absl::StatusOr<GpuModelId> ClusterState::ModelFor(const NodeSpec& spec, bool add) {
  if (spec.num_gpus == 0 || spec.gpu_model.empty()) return kNoGpuModel;
  GpuModelId model = ModelId(spec.gpu_model);
  if (model != kNoGpuModel) {
    // A node that does not say its devices are NPUs takes the model's kind as first seen.
    if (spec.npu && !model_npu(model)) {
      return absl::InvalidArgumentError(absl::StrCat("node '", spec.name, "': model '",
                                                     spec.gpu_model,
                                                     "' is an NPU here and a GPU on the nodes "
                                                     "that named it first"));
    }
    return model;
  }
  if (!add) return model;
  if (static_cast<int>(model_names_.size()) >= kMaxGpuModels - 1) {
    return absl::InvalidArgumentError(absl::StrCat("node '", spec.name, "': more than ",
                                                   kMaxGpuModels - 1, " distinct GPU models"));
  }
  const hw::GpuModel* entry = CatalogEntry(spec);
  const bool npu = spec.npu || (entry != nullptr && entry->kind == hw::DeviceKind::kNpu);
  model_names_.push_back(spec.gpu_model);
  model_npu_.push_back(npu ? 1 : 0);
  model_memory_mib_.push_back(
      spec.device_memory_mib > 0
          ? spec.device_memory_mib
          : (entry != nullptr ? static_cast<int64_t>(entry->memory_gib * 1024) : 0));
  has_npu_models_ = has_npu_models_ || npu;
  return static_cast<GpuModelId>(model_names_.size() - 1);
}

static bool HasBlockingTaint(const NodeSpec& spec) {
  return std::any_of(spec.taints.begin(), spec.taints.end(),
                     [](const Taint& t) { return t.Blocks(); });
}

void ClusterState::SetBlocked(int n, uint8_t bits) {
  num_blocked_ += (bits != 0) - (blocked_[n] != 0);
  free_gpu_nodes_[static_cast<size_t>(free_gpus_[n])] += (blocked_[n] != 0) - (bits != 0);
  blocked_[n] = bits;
}

absl::StatusOr<int> ClusterState::AddNode(NodeSpec spec) {
  if (absl::Status st = ValidateSpec(spec); !st.ok()) return st;
  if (by_name_.contains(absl::string_view(spec.name.data(), spec.name.size()))) {
    return absl::AlreadyExistsError(absl::StrCat("node '", spec.name, "' already exists"));
  }
  absl::StatusOr<GpuModelId> model = ModelFor(spec, /*add=*/true);
  if (!model.ok()) return model.status();
  // Nothing fails from here on.
  const int n = num_nodes();
  std::vector<NumaUse> numa;
  for (const NumaInfo& info : spec.topology.numa) numa.push_back({info.id, 0, 0});
  numa_used_.push_back(std::move(numa));
  cpu_left_.push_back(spec.cpu_milli);
  memory_left_.push_back(spec.memory_mib);
  gpu_offset_.push_back(static_cast<int32_t>(gpu_left_.size()));
  gpu_left_.insert(gpu_left_.end(), static_cast<size_t>(spec.num_gpus), kMilliGpu);
  model_.push_back(*model);
  model_bit_.push_back(*model == kNoGpuModel ? 0 : uint64_t{1} << *model);
  version_.push_back(0);
  class_counts_.insert(class_counts_.end(), kMaxGpusPerNode + 1, 0);
  pods_on_node_.push_back(0);
  free_gpus_.push_back(0);
  max_gpu_left_.push_back(0);
  gpu_milli_left_.push_back(0);
  blocked_.push_back(0);
  ++free_gpu_nodes_[0];
  gpu_capacity_milli_ += static_cast<int64_t>(spec.num_gpus) * kMilliGpu;
  cpu_capacity_milli_ += spec.cpu_milli;
  by_name_.emplace(spec.name, n);
  ++num_live_;
  SetBlocked(n, HasBlockingTaint(spec) ? kBlockedTainted : 0);
  nodes_.push_back(std::move(spec));
  RefreshGpuSummary(n);
  CheckAfterChange(n);
  return n;
}

void ClusterState::ResizeGpus(int n, int count) {
  const int old = nodes_[n].num_gpus;
  const auto at = gpu_left_.begin() + gpu_offset_[n] + std::min(old, count);
  if (count < old) {
    gpu_left_.erase(at, at + (old - count));
  } else {
    gpu_left_.insert(at, static_cast<size_t>(count - old), kMilliGpu);
  }
  for (size_t m = static_cast<size_t>(n) + 1; m < gpu_offset_.size(); ++m) {
    gpu_offset_[m] += count - old;
  }
  nodes_[n].num_gpus = count;
}

absl::Status ClusterState::UpdateNode(int n, NodeSpec spec) {
  if (n < 0 || n >= num_nodes() || !alive(n)) {
    return absl::NotFoundError(absl::StrCat("no live node in slot ", n));
  }
  NodeSpec& old = nodes_[n];
  if (spec.name != old.name) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", old.name, "': an update may not rename it (to '", spec.name, "')"));
  }
  if (absl::Status st = ValidateSpec(spec); !st.ok()) return st;
  const int64_t cpu_used = old.cpu_milli - cpu_left_[n];
  const int64_t memory_used = old.memory_mib - memory_left_[n];
  if (spec.cpu_milli < cpu_used || spec.memory_mib < memory_used) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node '", old.name, "': new capacity ", spec.cpu_milli, " milli-CPU, ", spec.memory_mib,
        " MiB is below what is allocated (", cpu_used, " milli-CPU, ", memory_used, " MiB)"));
  }
  absl::StatusOr<GpuModelId> known = ModelFor(spec, /*add=*/false);
  if (!known.ok()) return known.status();
  const bool new_model_name =
      (spec.num_gpus > 0 && !spec.gpu_model.empty() && *known == kNoGpuModel);
  const bool gpus_change = spec.num_gpus != old.num_gpus || new_model_name || *known != model_[n];
  if (gpus_change) {
    bool busy = false;
    for (int16_t c : gpu_class_counts(n)) busy = busy || c != 0;
    for (int32_t left : gpu_left(n)) busy = busy || left != kMilliGpu;
    if (busy) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node '", old.name, "': GPU count or model may not change while a GPU pod ", "is bound (",
          old.num_gpus, " ", old.gpu_model, " -> ", spec.num_gpus, " ", spec.gpu_model, ")"));
    }
  }
  absl::StatusOr<std::vector<NumaUse>> numa = NumaUseFor(n, spec);
  if (!numa.ok()) return numa.status();
  absl::StatusOr<GpuModelId> model = ModelFor(spec, /*add=*/true);
  if (!model.ok()) return model.status();
  // Nothing fails from here on.
  numa_used_[n] = std::move(*numa);
  cpu_left_[n] += spec.cpu_milli - old.cpu_milli;
  memory_left_[n] += spec.memory_mib - old.memory_mib;
  cpu_capacity_milli_ += spec.cpu_milli - old.cpu_milli;
  gpu_capacity_milli_ += static_cast<int64_t>(spec.num_gpus - old.num_gpus) * kMilliGpu;
  if (spec.num_gpus != old.num_gpus) ResizeGpus(n, spec.num_gpus);
  model_[n] = *model;
  model_bit_[n] = *model == kNoGpuModel ? 0 : uint64_t{1} << *model;
  SetBlocked(n, static_cast<uint8_t>((blocked_[n] & kBlockedCordoned) |
                                     (HasBlockingTaint(spec) ? kBlockedTainted : 0)));
  old = std::move(spec);
  ++version_[n];
  RefreshGpuSummary(n);
  CheckAfterChange(n);
  return absl::OkStatus();
}

int ClusterState::NumaIndex(int n, int id) const {
  const std::vector<NumaUse>& numa = numa_used_[n];
  for (size_t i = 0; i < numa.size(); ++i) {
    if (numa[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

int64_t ClusterState::numa_cpu_left(int n, int id) const {
  const int i = NumaIndex(n, id);
  return i < 0 ? -1 : nodes_[n].topology.numa[i].cpu_milli - numa_used_[n][i].cpu_used;
}

int64_t ClusterState::numa_memory_left(int n, int id) const {
  const int i = NumaIndex(n, id);
  return i < 0 ? -1 : nodes_[n].topology.numa[i].memory_mib - numa_used_[n][i].memory_used;
}

absl::StatusOr<std::vector<ClusterState::NumaUse>> ClusterState::NumaUseFor(
    int n, const NodeSpec& spec) const {
  std::vector<NumaUse> out;
  for (const NumaInfo& info : spec.topology.numa) {
    NumaUse use{info.id, 0, 0};
    if (const int i = NumaIndex(n, info.id); i >= 0) use = numa_used_[n][i];
    if (info.cpu_milli < use.cpu_used || info.memory_mib < use.memory_used) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node '", spec.name, "': NUMA node ", info.id, " would have ", info.cpu_milli,
          " milli-CPU, ", info.memory_mib, " MiB, below what pods pinned there use (", use.cpu_used,
          " milli-CPU, ", use.memory_used, " MiB)"));
    }
    out.push_back(use);
  }
  for (const NumaUse& use : numa_used_[n]) {
    const bool kept =
        std::any_of(out.begin(), out.end(), [&](const NumaUse& u) { return u.id == use.id; });
    if (!kept && (use.cpu_used > 0 || use.memory_used > 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node '", spec.name, "': NUMA node ", use.id, " may not go while pods are pinned to it"));
    }
  }
  return out;
}

absl::Status ClusterState::RemoveNode(int n) {
  if (n < 0 || n >= num_nodes() || !alive(n)) {
    return absl::NotFoundError(absl::StrCat("no live node in slot ", n));
  }
  if (pods_on_node_[n] != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("node '", nodes_[n].name, "' has ", pods_on_node_[n], " pods bound"));
  }
  NodeSpec& spec = nodes_[n];
  cpu_capacity_milli_ -= spec.cpu_milli;
  gpu_capacity_milli_ -= static_cast<int64_t>(spec.num_gpus) * kMilliGpu;
  ResizeGpus(n, 0);
  numa_used_[n].clear();
  cpu_left_[n] = 0;
  memory_left_[n] = 0;
  model_[n] = kNoGpuModel;
  model_bit_[n] = 0;
  by_name_.erase(absl::string_view(spec.name.data(), spec.name.size()));
  --num_live_;
  SetBlocked(n, kBlockedDead);
  NodeSpec dead;
  dead.name = std::move(spec.name);
  spec = std::move(dead);
  ++version_[n];
  RefreshGpuSummary(n);
  CheckAfterChange(n);
  return absl::OkStatus();
}

void ClusterState::SetCordoned(int n, bool cordoned) {
  SEEDANCE_CHECK(n >= 0 && n < num_nodes() && alive(n))
      << "SetCordoned(" << n << "): not a live node (" << num_nodes() << " slots)";
  const uint8_t bits = static_cast<uint8_t>(cordoned ? blocked_[n] | kBlockedCordoned
                                                     : blocked_[n] & ~kBlockedCordoned);
  if (bits == blocked_[n]) return;
  SetBlocked(n, bits);
  ++version_[n];
}

int ClusterState::FindNode(std::string_view name) const {
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  return it == by_name_.end() ? -1 : it->second;
}

GpuModelId ClusterState::ModelId(std::string_view name) const {
  for (size_t i = 0; i < model_names_.size(); ++i) {
    if (model_names_[i] == name) return static_cast<GpuModelId>(i);
  }
  return kNoGpuModel;
}

uint64_t ClusterState::ModelMask(std::string_view gpu_spec) const {
  uint64_t mask = 0;
  bool named_any = false;
  size_t start = 0;
  while (start <= gpu_spec.size()) {
    size_t bar = gpu_spec.find('|', start);
    if (bar == std::string_view::npos) bar = gpu_spec.size();
    std::string_view part = gpu_spec.substr(start, bar - start);
    start = bar + 1;
    if (part.empty()) continue;
    named_any = true;
    GpuModelId id = ModelId(part);
    if (id != kNoGpuModel) mask |= uint64_t{1} << id;
  }
  if (named_any && mask == 0) return kNoModelMatches;
  return mask;
}

uint64_t ClusterState::PodModelMask(std::string_view gpu_spec, const DeviceAsk& ask,
                                    bool wants_devices) const {
  const uint64_t named = ModelMask(gpu_spec);
  if (!wants_devices || named == kNoModelMatches) return named;
  if (ask.memory_mib <= 0) {
    // Without a memory floor the narrowing is a no-op when every kind passes, or when only GPUs
    // pass and the table has no NPU.
    const bool any_kind =
        ask.type == DeviceClass::kAny || (ask.type == DeviceClass::kUnset && !gpu_spec.empty());
    const bool gpus_only = !any_kind && ask.type != DeviceClass::kNpu;
    if (any_kind || (gpus_only && !has_npu_models_)) return named;
  }
  uint64_t mask = 0;
  for (size_t id = 0; id < model_names_.size(); ++id) {
    const bool in_spec = named == 0 || ((named >> id) & 1u) != 0;
    if (DeviceAccepts(ask, gpu_spec.empty(), in_spec, model_npu_[id] != 0, model_memory_mib_[id])) {
      mask |= uint64_t{1} << id;
    }
  }
  return mask == 0 ? kNoModelMatches : mask;
}

void ClusterState::RefreshGpuSummary(int n) {
  int free = 0;
  int32_t most = 0, total = 0;
  for (int32_t left : gpu_left(n)) {
    SEEDANCE_CHECK(left >= 0 && left <= kMilliGpu)
        << "node '" << nodes_[n].name << "': a GPU has " << left << " milli left, outside 0.."
        << kMilliGpu;
    free += left >= kMilliGpu;
    most = std::max(most, left);
    total += left;
  }
  if (blocked_[n] == 0) {
    --free_gpu_nodes_[static_cast<size_t>(free_gpus_[n])];
    ++free_gpu_nodes_[static_cast<size_t>(free)];
  }
  free_gpus_[n] = free;
  max_gpu_left_[n] = most;
  gpu_milli_left_[n] = total;
}

template <bool kWithBlocked>
void ClusterState::FeasibleSimple(const PodShape& pod, int* dst, size_t* count_out) const {
  const int n = num_nodes();
  size_t count = 0;
  const int64_t* cpu = cpu_left_.data();
  const int64_t* mem = memory_left_.data();
  const uint64_t* bit = model_bit_.data();
  const uint8_t* blocked = blocked_.data();
  // GPU test as one comparison: whole GPUs against the free count, a share against the
  // largest room on one GPU, nothing for CPU-only pods.
  const int32_t* gpu = pod.gpu_milli >= kMilliGpu ? free_gpus_.data() : max_gpu_left_.data();
  const int32_t gpu_need =
      pod.num_gpu == 0 ? INT32_MIN : (pod.gpu_milli >= kMilliGpu ? pod.num_gpu : pod.gpu_milli);
  const uint64_t mask = pod.gpu_model_mask;
  const bool any_model = mask == 0;
  for (int i = 0; i < n; ++i) {
    bool ok = (cpu[i] >= pod.cpu_milli) & (mem[i] >= pod.memory_mib) & (gpu[i] >= gpu_need) &
              (any_model | ((bit[i] & mask) != 0));
    if constexpr (kWithBlocked) ok = ok & (blocked[i] == 0);
    dst[count] = i;
    count += ok;
  }
  *count_out = count;
}

void ClusterState::FeasibleNodes(const PodShape& pod, std::vector<int>* out) const {
  const int n = num_nodes();
  const size_t base = out->size();
  out->resize(base + static_cast<size_t>(n));
  int* dst = out->data() + base;
  size_t count = 0;
  const bool simple = pod.num_gpu == 0 || pod.gpu_milli >= kMilliGpu || pod.num_gpu == 1;
  if (!simple) {
    for (int i = 0; i < n; ++i) {
      if (Fits(i, pod)) dst[count++] = i;
    }
  } else if (num_blocked_ == 0) {
    // Every node schedulable (the simulator's case): the pass without the blocked_ test.
    FeasibleSimple<false>(pod, dst, &count);
  } else {
    FeasibleSimple<true>(pod, dst, &count);
  }
  out->resize(base + count);
}

bool ClusterState::FitsSlow(int n, const PodShape& pod) const {
  int need = pod.num_gpu;
  for (int32_t left : gpu_left(n)) {
    if (left >= pod.gpu_milli && --need == 0) return true;
  }
  return false;
}

absl::Status ClusterState::CheckPlacement(const PodShape& pod, const Placement& p) const {
  if (p.node < 0 || p.node >= num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat("node index ", p.node, " out of range"));
  }
  if (pod.cpu_milli < 0 || pod.memory_mib < 0 || pod.num_gpu < 0 || pod.gpu_milli < 0 ||
      pod.gpu_milli > kMilliGpu) {
    return absl::InvalidArgumentError("pod has a negative or over-size request");
  }
  if (p.num_gpus != pod.num_gpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement lists ", p.num_gpus, " GPUs, pod asks for ", pod.num_gpu));
  }
  const int ngpu = nodes_[p.node].num_gpus;
  if (p.num_gpus < 0 || p.num_gpus > ngpu) {
    return absl::InvalidArgumentError(absl::StrCat("placement lists ", p.num_gpus, " GPUs, ",
                                                   nodes_[p.node].name, " has ", ngpu));
  }
  for (int i = 0; i < p.num_gpus; ++i) {
    if (p.gpus[i] < 0 || p.gpus[i] >= ngpu) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU index ", p.gpus[i], " out of range on ", nodes_[p.node].name));
    }
    for (int j = 0; j < i; ++j) {
      if (p.gpus[j] == p.gpus[i]) return absl::InvalidArgumentError("GPU listed twice");
    }
  }
  return absl::OkStatus();
}

absl::Status ClusterState::Allocate(const PodShape& pod, const Placement& p) {
  if (absl::Status st = CheckPlacement(pod, p); !st.ok()) return st;
  const int n = p.node;
  if (!alive(n)) {
    return absl::FailedPreconditionError(absl::StrCat(nodes_[n].name, ": node was removed"));
  }
  if (cpu_left_[n] < pod.cpu_milli) {
    return absl::FailedPreconditionError(absl::StrCat(nodes_[n].name, ": not enough CPU"));
  }
  if (memory_left_[n] < pod.memory_mib) {
    return absl::FailedPreconditionError(absl::StrCat(nodes_[n].name, ": not enough memory"));
  }
  int32_t* gl = gpu_left_.data() + gpu_offset_[n];
  for (int i = 0; i < p.num_gpus; ++i) {
    if (gl[p.gpus[i]] < pod.gpu_milli) {
      return absl::FailedPreconditionError(
          absl::StrCat(nodes_[n].name, ": GPU ", p.gpus[i], " has too little room"));
    }
  }
  const int numa = p.numa < 0 ? -1 : NumaIndex(n, p.numa);
  if (p.numa >= 0 && numa < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(nodes_[n].name, ": placement pins NUMA node ", p.numa, ", not one of its"));
  }
  if (numa >= 0 &&
      (numa_cpu_left(n, p.numa) < pod.cpu_milli || numa_memory_left(n, p.numa) < pod.memory_mib)) {
    return absl::FailedPreconditionError(
        absl::StrCat(nodes_[n].name, ": not enough CPU or memory left on NUMA node ", p.numa));
  }
  if (numa >= 0) {
    numa_used_[n][numa].cpu_used += pod.cpu_milli;
    numa_used_[n][numa].memory_used += pod.memory_mib;
  }
  cpu_left_[n] -= pod.cpu_milli;
  memory_left_[n] -= pod.memory_mib;
  for (int i = 0; i < p.num_gpus; ++i) gl[p.gpus[i]] -= pod.gpu_milli;
  gpu_allocated_milli_ += pod.TotalGpuMilli();
  cpu_allocated_milli_ += pod.cpu_milli;
  if (pod.num_gpu > 0) {
    int cls = pod.IsGpuSharing() ? 0 : pod.num_gpu;
    if (cls <= kMaxGpusPerNode)
      ++class_counts_[static_cast<size_t>(n) * (kMaxGpusPerNode + 1) + cls];
  }
  ++pods_on_node_[n];
  ++version_[n];
  RefreshGpuSummary(n);
  CheckAfterChange(n);
  return absl::OkStatus();
}

absl::Status ClusterState::Release(const PodShape& pod, const Placement& p) {
  if (absl::Status st = CheckPlacement(pod, p); !st.ok()) return st;
  const int n = p.node;
  if (cpu_left_[n] + pod.cpu_milli > nodes_[n].cpu_milli ||
      memory_left_[n] + pod.memory_mib > nodes_[n].memory_mib || pods_on_node_[n] == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(nodes_[n].name, ": release exceeds capacity"));
  }
  int32_t* gl = gpu_left_.data() + gpu_offset_[n];
  for (int i = 0; i < p.num_gpus; ++i) {
    if (gl[p.gpus[i]] + pod.gpu_milli > kMilliGpu) {
      return absl::FailedPreconditionError(
          absl::StrCat(nodes_[n].name, ": release exceeds GPU ", p.gpus[i], " capacity"));
    }
  }
  const int numa = p.numa < 0 ? -1 : NumaIndex(n, p.numa);
  if (p.numa >= 0 && (numa < 0 || numa_used_[n][numa].cpu_used < pod.cpu_milli ||
                      numa_used_[n][numa].memory_used < pod.memory_mib)) {
    return absl::FailedPreconditionError(
        absl::StrCat(nodes_[n].name, ": release exceeds what is pinned to NUMA node ", p.numa));
  }
  const int cls = pod.IsGpuSharing() ? 0 : pod.num_gpu;  // <= kMaxGpusPerNode: checked above
  int16_t& class_count = class_counts_[static_cast<size_t>(n) * (kMaxGpusPerNode + 1) + cls];
  if (pod.num_gpu > 0 && class_count == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        nodes_[n].name, ": release of a ", cls == 0 ? "GPU-sharing" : absl::StrCat(cls, "-GPU"),
        " pod, none is bound there"));
  }
  if (numa >= 0) {
    numa_used_[n][numa].cpu_used -= pod.cpu_milli;
    numa_used_[n][numa].memory_used -= pod.memory_mib;
  }
  cpu_left_[n] += pod.cpu_milli;
  memory_left_[n] += pod.memory_mib;
  for (int i = 0; i < p.num_gpus; ++i) gl[p.gpus[i]] += pod.gpu_milli;
  gpu_allocated_milli_ -= pod.TotalGpuMilli();
  cpu_allocated_milli_ -= pod.cpu_milli;
  if (pod.num_gpu > 0) --class_count;
  --pods_on_node_[n];
  ++version_[n];
  RefreshGpuSummary(n);
  CheckAfterChange(n);
  return absl::OkStatus();
}

void ClusterState::CheckAfterChange(int n) const {
  const NodeSpec& node = nodes_[n];
  SEEDANCE_CHECK(cpu_left_[n] >= 0 && cpu_left_[n] <= node.cpu_milli)
      << "node '" << node.name << "': " << cpu_left_[n] << " milli-CPU left of " << node.cpu_milli;
  SEEDANCE_CHECK(memory_left_[n] >= 0 && memory_left_[n] <= node.memory_mib)
      << "node '" << node.name << "': " << memory_left_[n] << " MiB left of " << node.memory_mib;
  SEEDANCE_CHECK(pods_on_node_[n] >= 0)
      << "node '" << node.name << "': " << pods_on_node_[n] << " pods";
  SEEDANCE_CHECK(numa_used_[n].size() == node.topology.numa.size())
      << "node '" << node.name << "': pinned use kept for " << numa_used_[n].size()
      << " NUMA nodes, the topology lists " << node.topology.numa.size();
  for (size_t i = 0; i < numa_used_[n].size(); ++i) {
    const NumaUse& use = numa_used_[n][i];
    const NumaInfo& info = node.topology.numa[i];
    SEEDANCE_CHECK(use.id == info.id && use.cpu_used >= 0 && use.cpu_used <= info.cpu_milli &&
                   use.memory_used >= 0 && use.memory_used <= info.memory_mib)
        << "node '" << node.name << "': NUMA node " << info.id << " has " << use.cpu_used
        << " milli-CPU and " << use.memory_used << " MiB pinned of " << info.cpu_milli << ", "
        << info.memory_mib;
  }
  SEEDANCE_CHECK(cpu_allocated_milli_ >= 0 && cpu_allocated_milli_ <= cpu_capacity_milli_)
      << "cluster: " << cpu_allocated_milli_ << " milli-CPU allocated of " << cpu_capacity_milli_;
  SEEDANCE_CHECK(gpu_allocated_milli_ >= 0 && gpu_allocated_milli_ <= gpu_capacity_milli_)
      << "cluster: " << gpu_allocated_milli_ << " milli-GPU allocated of " << gpu_capacity_milli_;
}

void ClusterState::CheckInvariants() const {
  const size_t n = nodes_.size();
  SEEDANCE_CHECK(cpu_left_.size() == n && memory_left_.size() == n && gpu_offset_.size() == n &&
                 model_.size() == n && version_.size() == n && pods_on_node_.size() == n &&
                 model_bit_.size() == n && free_gpus_.size() == n && max_gpu_left_.size() == n &&
                 gpu_milli_left_.size() == n && blocked_.size() == n &&
                 class_counts_.size() == n * (kMaxGpusPerNode + 1) && numa_used_.size() == n)
      << "per-node arrays disagree on the number of nodes (" << n << ")";
  SEEDANCE_CHECK(model_npu_.size() == model_names_.size() &&
                 model_memory_mib_.size() == model_names_.size())
      << "the model table's kinds and memories disagree with its " << model_names_.size()
      << " names";
  int64_t cpu_capacity = 0, cpu_used = 0, gpu_capacity = 0, gpu_used = 0;
  size_t next_gpu = 0;
  int live = 0, blocked = 0;
  std::array<int32_t, kMaxGpusPerNode + 1> by_free{};
  for (size_t i = 0; i < n; ++i) {
    const int node = static_cast<int>(i);
    const NodeSpec& spec = nodes_[i];
    CheckAfterChange(node);
    blocked += blocked_[i] != 0;
    if (alive(node)) {
      ++live;
      SEEDANCE_CHECK(FindNode(spec.name) == node)
          << "node '" << spec.name << "' in slot " << i << ": the name index says slot "
          << FindNode(spec.name);
      SEEDANCE_CHECK(tainted(node) == HasBlockingTaint(spec) && (blocked_[i] & kBlockedDead) == 0 &&
                     blocked_[i] <= (kBlockedCordoned | kBlockedTainted))
          << "node '" << spec.name << "': schedulability bits " << int{blocked_[i]}
          << " disagree with its taints";
    } else {
      SEEDANCE_CHECK(blocked_[i] == kBlockedDead && spec.cpu_milli == 0 && spec.memory_mib == 0 &&
                     spec.num_gpus == 0 && spec.labels.empty() && spec.taints.empty() &&
                     pods_on_node_[i] == 0 && model_[i] == kNoGpuModel &&
                     FindNode(spec.name) != node)
          << "dead slot " << i << " ('" << spec.name << "') is not empty";
    }
    SEEDANCE_CHECK(gpu_offset_[i] >= 0 && static_cast<size_t>(gpu_offset_[i]) == next_gpu &&
                   next_gpu + static_cast<size_t>(spec.num_gpus) <= gpu_left_.size())
        << "node '" << spec.name << "': GPUs at offset " << gpu_offset_[i] << ", expected "
        << next_gpu << " (" << gpu_left_.size() << " GPUs in the cluster)";
    next_gpu += static_cast<size_t>(spec.num_gpus);
    int free = 0;
    int32_t most = 0, total = 0;
    for (int32_t left : gpu_left(node)) {
      SEEDANCE_CHECK(left >= 0 && left <= kMilliGpu)
          << "node '" << spec.name << "': a GPU has " << left << " milli left";
      free += left >= kMilliGpu;
      most = std::max(most, left);
      total += left;
      gpu_used += kMilliGpu - left;
    }
    SEEDANCE_CHECK(free_gpus_[i] == free && max_gpu_left_[i] == most && gpu_milli_left_[i] == total)
        << "node '" << spec.name << "': summary says " << free_gpus_[i] << " free GPUs, "
        << max_gpu_left_[i] << " milli at most on one and " << gpu_milli_left_[i]
        << " milli in all, the GPUs say " << free << ", " << most << " and " << total;
    if (blocked_[i] == 0) ++by_free[static_cast<size_t>(free)];
    int classed = 0;
    for (int16_t c : gpu_class_counts(node)) {
      SEEDANCE_CHECK(c >= 0) << "node '" << spec.name << "': a GPU class count is " << c;
      classed += c;
    }
    SEEDANCE_CHECK(classed <= pods_on_node_[i])
        << "node '" << spec.name << "': " << classed << " GPU pods by class but "
        << pods_on_node_[i] << " pods";
    const GpuModelId m = model_[i];
    SEEDANCE_CHECK(m == kNoGpuModel ||
                   (m >= 0 && static_cast<size_t>(m) < model_names_.size() && spec.num_gpus > 0))
        << "node '" << spec.name << "': GPU model id " << m << " of " << model_names_.size();
    SEEDANCE_CHECK(model_bit_[i] == (m == kNoGpuModel ? 0 : uint64_t{1} << m))
        << "node '" << spec.name << "': model bit disagrees with model id " << m;
    cpu_capacity += spec.cpu_milli;
    cpu_used += spec.cpu_milli - cpu_left_[i];
    gpu_capacity += static_cast<int64_t>(spec.num_gpus) * kMilliGpu;
  }
  SEEDANCE_CHECK(live == num_live_ && by_name_.size() == static_cast<size_t>(live) &&
                 blocked == num_blocked_)
      << "counts: " << num_live_ << " live nodes, " << by_name_.size() << " names, " << num_blocked_
      << " unschedulable; the slots hold " << live << " live, " << blocked << " unschedulable";
  for (size_t f = 0; f < by_free.size(); ++f) {
    SEEDANCE_CHECK(by_free[f] == free_gpu_nodes_[f])
        << "counts: " << free_gpu_nodes_[f] << " schedulable nodes with " << f
        << " free GPUs; the slots hold " << by_free[f];
  }
  SEEDANCE_CHECK(next_gpu == gpu_left_.size())
      << "nodes list " << next_gpu << " GPUs, the cluster holds " << gpu_left_.size();
  SEEDANCE_CHECK(cpu_capacity == cpu_capacity_milli_ && gpu_capacity == gpu_capacity_milli_)
      << "capacity totals " << cpu_capacity_milli_ << " milli-CPU, " << gpu_capacity_milli_
      << " milli-GPU; the nodes add up to " << cpu_capacity << ", " << gpu_capacity;
  SEEDANCE_CHECK(cpu_used == cpu_allocated_milli_ && gpu_used == gpu_allocated_milli_)
      << "cluster says " << cpu_allocated_milli_ << " milli-CPU and " << gpu_allocated_milli_
      << " milli-GPU allocated; the nodes hold " << cpu_used << " and " << gpu_used;
}

}  // namespace seedance::core
