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

// A node's state as FGD's fragment amount sees it: CPU left, GPU model, and the GPU lefts as a
// multiset (sorted descending, zero-padded). Memory does not enter the fragment amount.
struct FragMemoKey {
  int64_t cpu_left;
  core::GpuModelId model;
  int32_t num_gpus;
  std::array<int32_t, core::kMaxGpusPerNode> sorted_gpu_left;
  bool operator==(const FragMemoKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const FragMemoKey& k) {
    return H::combine(std::move(h), k.cpu_left, k.model, k.num_gpus, k.sorted_gpu_left);
  }
};
// The key of r; *total (if not null) gets the sum of its GPU lefts.
FragMemoKey KeyOf(const NodeResources& r, int64_t* total = nullptr);

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

  // Whether to memoise fragment amounts by node state (on by default). A caller that already
  // computes once per distinct state (StateScoreMemo) gains nothing from it.
  void set_memoize(bool on) { memoize_ = on; }

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
  using MemoKey = FragMemoKey;
  static constexpr size_t kMaxMemo = 1 << 16;
  // The score of a memo key (GPU lefts sorted), `total` their sum (> 0).
  double FastScoreSorted(const MemoKey& key, int64_t total) const;
  mutable absl::flat_hash_map<MemoKey, double> memo_;
  bool memoize_ = true;

  TargetWorkload workload_;
  std::vector<int64_t> cpu_;
  std::vector<int32_t> milli_;
  std::vector<int32_t> num_;
  std::vector<uint64_t> mask_;
  std::vector<double> freq_;
  double freq_sum_ = 0;                             // over shapes with a valid frequency
  std::vector<int32_t> levels_;                     // distinct milli_ values, descending
  std::vector<int32_t> level_;                      // per shape: its milli_'s index in levels_
  mutable std::vector<int> count_at_;               // FastScoreSorted's scratch, per level
  std::vector<std::pair<uint64_t, double>> cache_;  // (version + 1, amount)
};

// Scores that are a pure function of a node's state as FragEvaluator sees it (CPU left, GPU
// model, GPU lefts as a multiset), of the pod's shape and of an epoch, computed once per distinct
// state instead of once per node. In a cluster of a few node types thousands of nodes share a
// state, so re-scoring every node after the epoch moves (cas relearning its workload) costs a
// computation per distinct state and an array read per node. Each node's state id is kept by
// node version; ids are renumbered from scratch when more than a bound of states have been seen.
class StateScoreMemo {
 public:
  // Keeps at most 2 x nodes + extra_states distinct states before renumbering.
  explicit StateScoreMemo(size_t extra_states = 4096) : extra_states_(extra_states) {}
  // Starts a cycle for `pod` under `epoch`; scores from another epoch are void.
  void StartCycle(const core::ClusterState& s, const core::PodShape& pod, uint64_t epoch);
  // The score of `pod` on node n: compute() once per distinct state per epoch. A pod other than
  // the cycle's (or no cycle started) is computed every time.
  template <typename Compute>
  int64_t Get(const core::ClusterState& s, int n, const core::PodShape& pod, Compute compute) {
    if (row_ == nullptr || &s != state_ || !(ShapeOf(pod) == row_key_)) return compute();
    const int id = StateOf(s, n);
    std::vector<Entry>& row = *row_;
    if (static_cast<size_t>(id) >= row.size()) row.resize(static_cast<size_t>(id) + 1);
    Entry& e = row[static_cast<size_t>(id)];
    if (e.gen != gen_) {
      e.score = compute();
      e.gen = gen_;
    }
    return e.score;
  }
  // Pod shapes whose scores are kept at once; a new shape past it drops all rows.
  static constexpr size_t kMaxShapes = 512;
  // Distinct states seen since the last renumbering, pod shapes with kept scores, and
  // renumberings so far (for tests).
  size_t num_states() const { return ids_.size(); }
  size_t num_shapes() const { return rows_.size(); }
  int renumberings() const { return renumberings_; }

 private:
  struct Entry {
    uint64_t gen = 0;
    int64_t score = 0;
  };
  struct ShapeKey {
    int64_t cpu_milli;
    int32_t gpu_milli, num_gpu;
    uint64_t mask;
    bool operator==(const ShapeKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const ShapeKey& k) {
      return H::combine(std::move(h), k.cpu_milli, k.gpu_milli, k.num_gpu, k.mask);
    }
  };
  static ShapeKey ShapeOf(const core::PodShape& p) {
    return {p.cpu_milli, p.gpu_milli, p.num_gpu, p.gpu_model_mask};
  }
  int StateOf(const core::ClusterState& s, int n) {
    const auto& slot = node_[static_cast<size_t>(n)];
    if (slot.first == static_cast<uint64_t>(s.version(n)) + 1) return slot.second;
    return NewStateOf(s, n);
  }
  // StateOf for a node whose version moved: its state's id, a new one if the state is new.
  int NewStateOf(const core::ClusterState& s, int n);
  void Renumber();

  const core::ClusterState* state_ = nullptr;
  std::vector<std::pair<uint64_t, int>> node_;  // (version + 1, state id), 0 = unknown
  absl::flat_hash_map<FragMemoKey, int> ids_;
  absl::flat_hash_map<ShapeKey, std::vector<Entry>> rows_;
  std::vector<Entry>* row_ = nullptr;
  ShapeKey row_key_{};
  uint64_t epoch_ = 0;
  size_t extra_states_;
  int renumberings_ = 0;
  uint64_t gen_ = 1;  // moves with the epoch and on renumbering; entries of other gens are void
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
