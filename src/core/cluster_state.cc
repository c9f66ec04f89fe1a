#include "seedance/core/cluster_state.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

namespace seedance::core {

absl::StatusOr<ClusterState> ClusterState::Create(std::vector<NodeSpec> nodes) {
  ClusterState s;
  const size_t n = nodes.size();
  s.cpu_left_.reserve(n);
  s.memory_left_.reserve(n);
  s.gpu_offset_.reserve(n);
  s.model_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const NodeSpec& node = nodes[i];
    if (node.cpu_milli < 0 || node.memory_mib < 0 || node.num_gpus < 0) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node.name, "': negative capacity"));
    }
    if (node.num_gpus > kMaxGpusPerNode) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node.name, "': ", node.num_gpus,
                                                     " GPUs, at most ", kMaxGpusPerNode));
    }
    GpuModelId model = kNoGpuModel;
    if (node.num_gpus > 0 && !node.gpu_model.empty()) {
      model = s.ModelId(node.gpu_model);
      if (model == kNoGpuModel) {
        if (static_cast<int>(s.model_names_.size()) >= kMaxGpuModels - 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("more than ", kMaxGpuModels - 1, " distinct GPU models"));
        }
        model = static_cast<GpuModelId>(s.model_names_.size());
        s.model_names_.push_back(node.gpu_model);
      }
    }
    s.cpu_left_.push_back(node.cpu_milli);
    s.memory_left_.push_back(node.memory_mib);
    s.gpu_offset_.push_back(static_cast<int32_t>(s.gpu_left_.size()));
    for (int g = 0; g < node.num_gpus; ++g) s.gpu_left_.push_back(kMilliGpu);
    s.model_.push_back(model);
    s.gpu_capacity_milli_ += static_cast<int64_t>(node.num_gpus) * kMilliGpu;
    s.cpu_capacity_milli_ += node.cpu_milli;
  }
  s.nodes_ = std::move(nodes);
  s.version_.assign(n, 0);
  s.class_counts_.assign(n * (kMaxGpusPerNode + 1), 0);
  s.pods_on_node_.assign(n, 0);
  s.model_bit_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (s.model_[i] != kNoGpuModel) s.model_bit_[i] = uint64_t{1} << s.model_[i];
  }
  s.free_gpus_.assign(n, 0);
  s.max_gpu_left_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) s.RefreshGpuSummary(static_cast<int>(i));
  return s;
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

void ClusterState::RefreshGpuSummary(int n) {
  int free = 0;
  int32_t most = 0;
  for (int32_t left : gpu_left(n)) {
    SEEDANCE_CHECK(left >= 0 && left <= kMilliGpu)
        << "node '" << nodes_[n].name << "': a GPU has " << left << " milli left, outside 0.."
        << kMilliGpu;
    free += left >= kMilliGpu;
    most = std::max(most, left);
  }
  free_gpus_[n] = free;
  max_gpu_left_[n] = most;
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
    out->resize(base + count);
    return;
  }
  const int64_t* cpu = cpu_left_.data();
  const int64_t* mem = memory_left_.data();
  const uint64_t* bit = model_bit_.data();
  // GPU test as one comparison: whole GPUs against the free count, a share against the
  // largest room on one GPU, nothing for CPU-only pods.
  const int32_t* gpu = pod.gpu_milli >= kMilliGpu ? free_gpus_.data() : max_gpu_left_.data();
  const int32_t gpu_need =
      pod.num_gpu == 0 ? INT32_MIN : (pod.gpu_milli >= kMilliGpu ? pod.num_gpu : pod.gpu_milli);
  const uint64_t mask = pod.gpu_model_mask;
  const bool any_model = mask == 0;
  for (int i = 0; i < n; ++i) {
    const bool ok = (cpu[i] >= pod.cpu_milli) & (mem[i] >= pod.memory_mib) & (gpu[i] >= gpu_need) &
                    (any_model | ((bit[i] & mask) != 0));
    dst[count] = i;
    count += ok;
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
  const int cls = pod.IsGpuSharing() ? 0 : pod.num_gpu;  // <= kMaxGpusPerNode: checked above
  int16_t& class_count = class_counts_[static_cast<size_t>(n) * (kMaxGpusPerNode + 1) + cls];
  if (pod.num_gpu > 0 && class_count == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        nodes_[n].name, ": release of a ", cls == 0 ? "GPU-sharing" : absl::StrCat(cls, "-GPU"),
        " pod, none is bound there"));
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
      << "node '" << node.name << "': " << cpu_left_[n] << " milli-CPU left of "
      << node.cpu_milli;
  SEEDANCE_CHECK(memory_left_[n] >= 0 && memory_left_[n] <= node.memory_mib)
      << "node '" << node.name << "': " << memory_left_[n] << " MiB left of " << node.memory_mib;
  SEEDANCE_CHECK(pods_on_node_[n] >= 0)
      << "node '" << node.name << "': " << pods_on_node_[n] << " pods";
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
                 class_counts_.size() == n * (kMaxGpusPerNode + 1))
      << "per-node arrays disagree on the number of nodes (" << n << ")";
  int64_t cpu_capacity = 0, cpu_used = 0, gpu_capacity = 0, gpu_used = 0;
  size_t next_gpu = 0;
  for (size_t i = 0; i < n; ++i) {
    const int node = static_cast<int>(i);
    const NodeSpec& spec = nodes_[i];
    CheckAfterChange(node);
    SEEDANCE_CHECK(gpu_offset_[i] >= 0 && static_cast<size_t>(gpu_offset_[i]) == next_gpu &&
                   next_gpu + static_cast<size_t>(spec.num_gpus) <= gpu_left_.size())
        << "node '" << spec.name << "': GPUs at offset " << gpu_offset_[i] << ", expected "
        << next_gpu << " (" << gpu_left_.size() << " GPUs in the cluster)";
    next_gpu += static_cast<size_t>(spec.num_gpus);
    int free = 0;
    int32_t most = 0;
    for (int32_t left : gpu_left(node)) {
      SEEDANCE_CHECK(left >= 0 && left <= kMilliGpu)
          << "node '" << spec.name << "': a GPU has " << left << " milli left";
      free += left >= kMilliGpu;
      most = std::max(most, left);
      gpu_used += kMilliGpu - left;
    }
    SEEDANCE_CHECK(free_gpus_[i] == free && max_gpu_left_[i] == most)
        << "node '" << spec.name << "': summary says " << free_gpus_[i] << " free GPUs and "
        << max_gpu_left_[i] << " milli at most on one, the GPUs say " << free << " and " << most;
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
