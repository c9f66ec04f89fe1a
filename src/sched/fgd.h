// Internal: FGD scoring shared by the `fgd` and `cas` policies.
#ifndef SEEDANCE_SCHED_FGD_H_
#define SEEDANCE_SCHED_FGD_H_

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/frag.h"

namespace seedance::sched::internal {

// Computes fragment-amount changes against a target workload, caching each node's current
// fragment amount by node version. Call Reset() when the workload changes.
class FragEvaluator {
 public:
  void SetWorkload(TargetWorkload w);
  const TargetWorkload& workload() const { return workload_; }
  void Reset() {
    cache_.clear();
    memo_.clear();
  }

  // Current fragment amount of node n.
  double Current(const core::ClusterState& s, int n);
  // Fragment decrease (F before - F after) if `pod` goes to node n on the GPUs FGD's reference
  // would use (Sub: the fullest GPUs that fit, ascending). For a GPU-sharing pod `gpu` selects
  // the device; -1 means the reference's default.
  double Delta(const core::ClusterState& s, int n, const core::PodShape& pod, int gpu = -1);

 private:
  // NodeFragScore over the workload compiled into flat arrays (same value, faster).
  double FastScore(const NodeResources& r) const;

  // FastScore is a pure function of the workload and of (CPU left, GPU model, GPU lefts as a
  // multiset): nodes in the same state - thousands of them in a large, mostly empty cluster of a
  // few node types - share one computation. Cleared with the workload (Reset), and when full.
  struct MemoKey {
    int64_t cpu_left;
    core::GpuModelId model;
    int32_t num_gpus;
    std::array<int32_t, core::kMaxGpusPerNode> sorted_gpu_left;  // descending, zero-padded
    bool operator==(const MemoKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const MemoKey& k) {
      return H::combine(std::move(h), k.cpu_left, k.model, k.num_gpus, k.sorted_gpu_left);
    }
  };
  static constexpr size_t kMaxMemo = 1 << 16;
  // The score of a memo key (GPU lefts sorted), `total` their sum (> 0).
  double FastScoreSorted(const MemoKey& key, int64_t total) const;
  mutable absl::flat_hash_map<MemoKey, double> memo_;

  TargetWorkload workload_;
  std::vector<int64_t> cpu_;
  std::vector<int32_t> milli_;
  std::vector<int32_t> num_;
  std::vector<uint64_t> mask_;
  std::vector<double> freq_;
  double freq_sum_ = 0;                             // over shapes with a valid frequency
  std::vector<std::pair<uint64_t, double>> cache_;  // (version + 1, amount)
};

// The best score(gpu) over the GPUs of node n with room for a sharing pod. GPUs with equal room
// score equally, so only the first of each room is scored. 0 if none has room.
template <typename ScoreGpu>
int64_t BestSharingGpuScore(const core::ClusterState& s, int n, const core::PodShape& pod,
                            ScoreGpu score) {
  int64_t best = 0;
  bool any = false;
  auto gl = s.gpu_left(n);
  for (int i = 0; i < static_cast<int>(gl.size()); ++i) {
    if (gl[i] < pod.gpu_milli) continue;
    bool seen = false;
    for (int j = 0; j < i && !seen; ++j) seen = gl[j] == gl[i];
    if (seen) continue;
    const int64_t v = score(i);
    if (!any || v > best) best = v;
    any = true;
  }
  return best;
}

// sigmoid(delta / 1000) * 100 truncated, the reference's FGD score.
int64_t FgdScoreFromDelta(double delta);

// Node resources after the reference's NodeResource.Sub (CPU, then GPUs fullest-first).
NodeResources SubtractLikeReference(NodeResources r, const core::PodShape& pod);

}  // namespace seedance::sched::internal

#endif  // SEEDANCE_SCHED_FGD_H_
