// Internal: the free room of one node (CPU, memory, per-GPU free milli) and the fit rule shared by
// the expansion estimator and the churn simulation. Not thread-safe.
#ifndef SEEDANCE_SRC_CLUSTERSCALE_NODE_ROOM_H_
#define SEEDANCE_SRC_CLUSTERSCALE_NODE_ROOM_H_

#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "seedance/base/check.h"
#include "seedance/clusterscale/cluster_autoscaler.h"

namespace seedance::clusterscale {

class NodeRoom {
 public:
  explicit NodeRoom(const core::NodeSpec& node)
      : model_(&node.gpu_model),
        cpu_free_(node.cpu_milli),
        memory_free_(node.memory_mib),
        gpu_free_(static_cast<size_t>(node.num_gpus), core::kMilliGpu) {}
  // A node with some of its room taken: what is free of each. `model` must outlive the room.
  NodeRoom(const std::string& model, int64_t cpu_free, int64_t memory_free,
           std::vector<int32_t> gpu_free)
      : model_(&model),
        cpu_free_(cpu_free),
        memory_free_(memory_free),
        gpu_free_(std::move(gpu_free)) {}

  // True when `pod` fits now: CPU, memory, an accepted model, whole free GPUs or one GPU with
  // enough free share.
  bool Fits(const PendingPod& pod) const {
    const core::PodShape& s = pod.shape;
    if (s.cpu_milli > cpu_free_ || s.memory_mib > memory_free_) return false;
    if (s.num_gpu == 0) return true;
    if (!pod.gpu_models.empty() &&
        std::find(pod.gpu_models.begin(), pod.gpu_models.end(), *model_) == pod.gpu_models.end()) {
      return false;
    }
    if (s.gpu_milli >= core::kMilliGpu) return WholeFree() >= s.num_gpu;
    for (int32_t f : gpu_free_) {
      if (f >= s.gpu_milli) return true;
    }
    return false;
  }

  // Takes the pod's request: whole GPUs from the lowest free index, a share from the GPU with
  // the least free room that holds it (best fit). Returns the GPUs used (for Give).
  // REQUIRES: the pod fits.
  std::vector<int> Take(const core::PodShape& s) {
    SEEDANCE_CHECK(s.cpu_milli <= cpu_free_ && s.memory_mib <= memory_free_)
        << "pod of " << s.cpu_milli << " mCPU taken from a node with " << cpu_free_ << " free";
    cpu_free_ -= s.cpu_milli;
    memory_free_ -= s.memory_mib;
    std::vector<int> used;
    if (s.num_gpu == 0) return used;
    if (s.gpu_milli >= core::kMilliGpu) {
      for (size_t i = 0; i < gpu_free_.size() && static_cast<int>(used.size()) < s.num_gpu; ++i) {
        if (gpu_free_[i] == core::kMilliGpu) {
          gpu_free_[i] = 0;
          used.push_back(static_cast<int>(i));
        }
      }
    } else {
      int best = -1;
      for (size_t i = 0; i < gpu_free_.size(); ++i) {
        if (gpu_free_[i] >= s.gpu_milli && (best < 0 || gpu_free_[i] < gpu_free_[best])) {
          best = static_cast<int>(i);
        }
      }
      if (best >= 0) {
        gpu_free_[best] -= s.gpu_milli;
        used.push_back(best);
      }
    }
    SEEDANCE_CHECK(static_cast<int>(used.size()) == s.num_gpu)
        << "pod of " << s.num_gpu << " GPUs got " << used.size();
    return used;
  }

  // Takes the pod's request on the GPUs given (a placement decided elsewhere): whole GPUs or
  // the pod's share of one. REQUIRES: they have the room.
  void TakeOn(const core::PodShape& s, std::span<const int8_t> gpus) {
    SEEDANCE_CHECK(s.cpu_milli <= cpu_free_ && s.memory_mib <= memory_free_ &&
                   static_cast<int>(gpus.size()) == s.num_gpu)
        << "pod of " << s.cpu_milli << " mCPU and " << s.num_gpu << " GPUs placed on a node with "
        << cpu_free_ << " free, on " << gpus.size() << " GPUs";
    const int32_t per = s.gpu_milli >= core::kMilliGpu ? core::kMilliGpu : s.gpu_milli;
    for (int8_t g : gpus) {
      SEEDANCE_CHECK(g >= 0 && static_cast<size_t>(g) < gpu_free_.size() && gpu_free_[g] >= per)
          << "GPU " << int{g} << " has no room for " << per << " milli";
    }
    cpu_free_ -= s.cpu_milli;
    memory_free_ -= s.memory_mib;
    for (int8_t g : gpus) gpu_free_[g] -= per;
  }

  // Returns what Take took.
  void Give(const core::PodShape& s, const std::vector<int>& gpus) {
    cpu_free_ += s.cpu_milli;
    memory_free_ += s.memory_mib;
    const int32_t per = s.gpu_milli >= core::kMilliGpu ? core::kMilliGpu : s.gpu_milli;
    for (int i : gpus) gpu_free_[i] += per;
  }

  int64_t cpu_free_milli() const { return cpu_free_; }
  int64_t memory_free_mib() const { return memory_free_; }
  int64_t gpu_free_milli() const {
    int64_t sum = 0;
    for (int32_t f : gpu_free_) sum += f;
    return sum;
  }

 private:
  int WholeFree() const {
    return static_cast<int>(std::count(gpu_free_.begin(), gpu_free_.end(), core::kMilliGpu));
  }

  const std::string* model_;
  int64_t cpu_free_;
  int64_t memory_free_;
  std::vector<int32_t> gpu_free_;
};

// The pods of `pods` that do not fit, in order, each first fit on `rooms` and taking its room
// there (on copies: the rooms are not changed). Pre-scaling's shortfall: the expected arrivals
// that the free room cannot hold, counted by shape rather than by GPU milli, so free shares no
// whole-GPU pod can use, or GPUs without the CPU to run them, are not counted as room.
inline std::vector<PendingPod> NotFitting(const std::vector<PendingPod>& pods,
                                          const std::vector<const NodeRoom*>& rooms) {
  std::vector<NodeRoom> copies;                             // of the rooms pods were fitted on
  std::vector<int> copy(rooms.size(), -1);                  // rooms[i]'s copy, or -1
  std::vector<std::pair<const PendingPod*, size_t>> first;  // a shape -> the first room to try
  std::vector<PendingPod> out;
  for (const PendingPod& p : pods) {
    const core::PodShape& s = p.shape;
    // Rooms only shrink, so a pod of a shape seen before fits none of the rooms before the one
    // the last pod of that shape took.
    auto seen = std::find_if(first.begin(), first.end(), [&](const auto& f) {
      return f.first->shape == s && f.first->gpu_models == p.gpu_models;
    });
    if (seen == first.end()) seen = first.insert(first.end(), {&p, 0});
    size_t i = seen->second;
    while (i < rooms.size() && !(copy[i] >= 0 ? copies[copy[i]] : *rooms[i]).Fits(p)) ++i;
    seen->second = i;
    if (i == rooms.size()) {
      out.push_back(p);
      continue;
    }
    if (copy[i] < 0) {
      copy[i] = static_cast<int>(copies.size());
      copies.push_back(*rooms[i]);
    }
    copies[copy[i]].Take(s);
  }
  return out;
}

}  // namespace seedance::clusterscale

#endif  // SEEDANCE_SRC_CLUSTERSCALE_NODE_ROOM_H_
