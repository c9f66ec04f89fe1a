#include "seedance/deviceplugin/allocator.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "seedance/base/mutex.h"
#include "seedance/sched/topology.h"

namespace seedance::deviceplugin {
namespace {

// A pod the plugin may still have to allocate: bound here, not yet started, with a decision.
bool Allocatable(const k8s::Pod& pod) {
  return (pod.phase.empty() || pod.phase == "Pending") && !pod.gpus.empty();
}

}  // namespace

void PodCache::Apply(std::vector<k8s::ObjectEvent> events, bool relisted) {
  base::MutexLock lock(mu_);
  if (relisted) pods_.clear();
  for (const k8s::ObjectEvent& e : events) {
    const std::string key = e.pod.Key();
    if (e.type == k8s::ObjectEvent::Type::kDeleted || !Allocatable(e.pod)) {
      pods_.erase(key);
    } else {
      pods_[key] = e.pod;
    }
  }
  std::erase_if(claimed_, [&](const std::string& key)
                              ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !pods_.contains(key); });
  ++version_;
  changed_.notify_all();
}

std::vector<k8s::Pod> PodCache::Unclaimed() const {
  base::MutexLock lock(mu_);
  std::vector<k8s::Pod> out;
  for (const auto& [key, pod] : pods_) {
    if (!claimed_.contains(key)) out.push_back(pod);
  }
  return out;
}

bool PodCache::Claim(const std::string& key) {
  base::MutexLock lock(mu_);
  return pods_.contains(key) && claimed_.insert(key).second;
}

uint64_t PodCache::version() const {
  base::MutexLock lock(mu_);
  return version_;
}

void PodCache::WaitForChange(uint64_t seen, double timeout_s) const {
  base::MutexLock lock(mu_);
  lock.WaitFor(changed_, std::chrono::duration<double>(timeout_s),
               [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return version_ != seen; });
}

size_t PodCache::size() const {
  base::MutexLock lock(mu_);
  return pods_.size();
}

absl::StatusOr<std::unique_ptr<Allocator>> Allocator::Create(std::vector<Gpu> gpus,
                                                             AllocatorConfig config,
                                                             PodCache* pods) {
  if (config.slices_per_gpu < 1 || config.slices_per_gpu > kMaxSlicesPerGpu) {
    return absl::InvalidArgumentError(absl::StrCat("slices per GPU ", config.slices_per_gpu,
                                                   " is outside 1..", kMaxSlicesPerGpu));
  }
  if (absl::Status s = ValidateGpus(gpus, config.slices_per_gpu); !s.ok()) return s;
  auto state = core::ClusterState::Create({NodeOf(gpus, config.node_name)});
  if (!state.ok()) return state.status();
  return std::unique_ptr<Allocator>(
      new Allocator(std::move(gpus), std::move(config), pods, std::move(*state)));
}

Allocator::Allocator(std::vector<Gpu> gpus, AllocatorConfig config, PodCache* pods,
                     core::ClusterState state)
    : gpus_(std::move(gpus)), config_(std::move(config)), pods_(pods), state_(std::move(state)) {}

bool Allocator::Resolve(const k8s::Pod& pod, Candidate* out) const {
  if (!config_.node_name.empty() && pod.node_name != config_.node_name) return false;
  out->gpus.clear();
  out->milli.clear();
  for (const k8s::GpuAssignment& a : pod.gpus) {
    int index = a.index;
    if (index < 0) {
      auto it =
          std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& g) { return g.uuid == a.uuid; });
      if (it == gpus_.end()) return false;
      index = static_cast<int>(it - gpus_.begin());
    }
    if (index >= static_cast<int>(gpus_.size()) || a.milli < 1 || a.milli > 1000 ||
        std::find(out->gpus.begin(), out->gpus.end(), index) != out->gpus.end()) {
      return false;
    }
    out->gpus.push_back(index);
    out->milli.push_back(a.milli);
  }
  out->pod = pod;
  return true;
}

bool Allocator::FindPod(size_t count, const std::function<int(const Candidate&)>& rank,
                        Candidate* out) const {
  if (pods_ == nullptr) return false;
  bool found = false;
  std::tuple<int, int64_t, std::string, std::string> best;
  for (const k8s::Pod& pod : pods_->Unclaimed()) {
    Candidate c;
    if (!Resolve(pod, &c) || c.gpus.size() != count) continue;
    const int r = rank(c);
    if (r < 0) continue;
    // Oldest first; a pod without a creation time after every dated one.
    const int64_t created = pod.creation_unix_s < 0 ? INT64_MAX : pod.creation_unix_s;
    auto key = std::make_tuple(r, created, pod.ns, pod.name);
    if (!found || key < best) {
      best = std::move(key);
      *out = std::move(c);
      found = true;
    }
  }
  return found;
}

std::vector<int> Allocator::ChooseGpus(const std::vector<bool>& usable, int k) const {
  std::vector<int> chosen;
  if (k <= 0) return chosen;
  sched::GpuSetNeeds needs;
  needs.usable = 0;
  for (size_t g = 0; g < usable.size(); ++g) {
    if (usable[g]) needs.usable |= 1u << g;
  }
  core::Placement p;
  if (sched::ChooseGpuSet(state_, 0, k, needs, &p)) {
    for (int8_t g : p.gpu_ids()) chosen.push_back(g);
    return chosen;
  }
  for (size_t g = 0; g < usable.size() && static_cast<int>(chosen.size()) < k; ++g) {
    if (usable[g]) chosen.push_back(static_cast<int>(g));
  }
  return chosen;
}

std::vector<std::string> Allocator::Preferred(const std::vector<std::string>& available,
                                              const std::vector<std::string>& must_include,
                                              int size) const {
  // Available slices of each GPU, in the order given; IDs that are not ours are left out.
  std::vector<std::vector<std::string>> free(gpus_.size());
  for (const std::string& id : available) {
    if (auto g = GpuOfDevice(gpus_, config_.slices_per_gpu, id); g.ok()) free[*g].push_back(id);
  }
  std::vector<std::string> out;
  std::vector<bool> taken(gpus_.size(), false);
  auto take = [&](const std::string& id, int gpu) {  // gpu: -1 when the ID is not ours
    if (static_cast<int>(out.size()) >= size ||
        std::find(out.begin(), out.end(), id) != out.end()) {
      return;
    }
    out.push_back(id);
    if (gpu >= 0) taken[gpu] = true;
  };
  for (const std::string& id : must_include) {
    auto g = GpuOfDevice(gpus_, config_.slices_per_gpu, id);
    take(id, g.ok() ? *g : -1);
  }
  if (size <= 0) return out;

  Candidate c;
  const bool decided = FindPod(
      static_cast<size_t>(size),
      [&](const Candidate& cand) {
        for (int g : cand.gpus) {
          if (free[g].empty()) return -1;
        }
        for (size_t g = 0; g < taken.size(); ++g) {
          if (taken[g] && std::find(cand.gpus.begin(), cand.gpus.end(), static_cast<int>(g)) ==
                              cand.gpus.end()) {
            return -1;
          }
        }
        return 0;
      },
      &c);
  std::vector<int> gpus;
  if (decided) {
    gpus = c.gpus;
  } else {
    std::vector<bool> usable(gpus_.size());
    int need = size - static_cast<int>(out.size());
    for (size_t g = 0; g < gpus_.size(); ++g) usable[g] = !free[g].empty() && !taken[g];
    gpus = ChooseGpus(usable, need);
  }
  for (int g : gpus) {
    if (!taken[g] && !free[g].empty()) take(free[g].front(), g);
  }
  // More slices than free GPUs: the rest from any GPU, in the order given.
  for (size_t g = 0; g < free.size(); ++g) {
    for (const std::string& id : free[g]) take(id, static_cast<int>(g));
  }
  return out;
}

absl::StatusOr<ContainerAllocation> Allocator::Allocate(const std::vector<std::string>& ids) {
  if (ids.empty())
    return absl::InvalidArgumentError("Allocate: a container request names no device");
  std::vector<int> asked;  // the GPUs of the slices, in the order given
  for (const std::string& id : ids) {
    auto g = GpuOfDevice(gpus_, config_.slices_per_gpu, id);
    if (!g.ok()) return g.status();
    if (std::find(asked.begin(), asked.end(), *g) == asked.end()) asked.push_back(*g);
  }
  std::vector<int> sorted = asked;
  std::sort(sorted.begin(), sorted.end());
  const bool whole = config_.slices_per_gpu == 1;
  auto rank = [&](const Candidate& c) {
    std::vector<int> mine = c.gpus;
    std::sort(mine.begin(), mine.end());
    if (mine == sorted) return 0;
    return whole ? -1 : 1;  // whole GPUs: only the kubelet's own devices are this container's
  };
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(0.0, config_.match_wait_s));
  while (true) {
    const uint64_t seen = pods_ == nullptr ? 0 : pods_->version();
    Candidate c;
    if (FindPod(asked.size(), rank, &c)) {
      if (pods_->Claim(c.pod.Key())) return Describe(c.gpus, c.milli, &c.pod);
      continue;  // another container claimed it first: look again
    }
    if (whole) return Describe(asked, std::vector<int32_t>(asked.size(), 1000), nullptr);
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (pods_ == nullptr || left <= 0) break;
    pods_->WaitForChange(seen, left);
  }
  std::vector<std::string> uuids;
  for (int g : asked) uuids.push_back(gpus_[g].uuid);
  return absl::FailedPreconditionError(absl::StrCat(
      "no pending pod on node ", config_.node_name.empty() ? "(any)" : config_.node_name,
      " has a Seedance decision (annotation ", k8s::kGpusAnnotation, ") for ", asked.size(),
      " GPU(s) not yet allocated (slices on ", absl::StrJoin(uuids, ","),
      "); shared slices are handed out only to pods the seedance extender bound",
      pods_ == nullptr ? ", and this plugin has no API server to read pods from" : ""));
}

ContainerAllocation Allocator::Describe(std::vector<int> gpus, std::vector<int32_t> milli,
                                        const k8s::Pod* pod) const {
  ContainerAllocation a;
  std::vector<std::string> uuids, shares, limits, decision;
  int32_t most = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const Gpu& g = gpus_[gpus[i]];
    const int64_t mib = g.memory_mib * milli[i] / 1000;
    uuids.push_back(g.uuid);
    shares.push_back(absl::StrCat(milli[i]));
    limits.push_back(absl::StrCat(mib));
    decision.push_back(absl::StrCat(g.uuid, ":", milli[i]));
    most = std::max(most, milli[i]);
    a.envs[absl::StrCat("CUDA_DEVICE_MEMORY_LIMIT_", i)] = absl::StrCat(mib, "m");
  }
  const std::string visible = absl::StrJoin(uuids, ",");
  a.envs["CUDA_VISIBLE_DEVICES"] = visible;
  a.envs["NVIDIA_VISIBLE_DEVICES"] = visible;
  a.envs["SEEDANCE_GPU_MILLI"] = absl::StrJoin(shares, ",");
  a.envs["SEEDANCE_GPU_MEMORY_LIMIT_MIB"] = absl::StrJoin(limits, ",");
  a.envs["CUDA_DEVICE_SM_LIMIT"] = absl::StrCat((most + 9) / 10);
  a.annotations[k8s::kGpusAnnotation] = absl::StrJoin(decision, ",");
  if (pod != nullptr) {
    a.pod = pod->ns + "/" + pod->name;
    a.envs["SEEDANCE_POD"] = a.pod;
    a.annotations["seedance.io/pod"] = a.pod;
  }
  std::vector<std::string> nodes;
  for (int g : gpus) nodes.push_back(absl::StrCat("nvidia", gpus_[g].minor));
  for (const char* shared : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"})
    nodes.push_back(shared);
  for (const std::string& name : nodes) {
    const std::string host = absl::StrCat(config_.dev_root, "/", name);
    struct stat st {};
    if (config_.device_nodes == DeviceNodes::kNever ||
        (config_.device_nodes == DeviceNodes::kAuto && stat(host.c_str(), &st) != 0)) {
      continue;
    }
    a.devices.push_back({absl::StrCat("/dev/", name), host, "rw"});
  }
  if (!config_.cdi_kind.empty()) {
    for (const std::string& u : uuids)
      a.cdi_devices.push_back(absl::StrCat(config_.cdi_kind, "=", u));
  }
  a.gpus = std::move(gpus);
  a.milli = std::move(milli);
  return a;
}

}  // namespace seedance::deviceplugin
