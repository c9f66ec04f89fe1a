#include "fgd.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace seedance::sched::internal {

NodeResources SubtractLikeReference(NodeResources r, const core::PodShape& pod) {
  r.cpu_left -= pod.cpu_milli;
  if (pod.num_gpu == 0) return r;
  int need = pod.num_gpu;
  if (pod.gpu_milli >= core::kMilliGpu) {
    // Only fully free GPUs fit; ascending order with stable ties is plain index order.
    for (int i = 0; i < r.num_gpus && need > 0; ++i) {
      if (r.gpu_left[i] >= pod.gpu_milli) {
        r.gpu_left[i] -= pod.gpu_milli;
        --need;
      }
    }
    return r;
  }
  // Fullest GPUs that fit first (ascending room, index order on ties): an insertion sort of at
  // most kMaxGpusPerNode indices, without allocating.
  std::array<int, core::kMaxGpusPerNode> idx;
  for (int i = 0; i < r.num_gpus; ++i) {
    int j = i;
    for (; j > 0 && r.gpu_left[idx[j - 1]] > r.gpu_left[i]; --j) idx[j] = idx[j - 1];
    idx[j] = i;
  }
  for (int k = 0; k < r.num_gpus && need > 0; ++k) {
    if (pod.gpu_milli <= r.gpu_left[idx[k]]) {
      r.gpu_left[idx[k]] -= pod.gpu_milli;
      --need;
    }
  }
  return r;
}

void FragEvaluator::SetWorkload(TargetWorkload w) {
  workload_ = std::move(w);
  cpu_.clear();
  milli_.clear();
  num_.clear();
  mask_.clear();
  freq_.clear();
  freq_sum_ = 0;
  for (const TargetShape& t : workload_) {
    if (t.freq < 0 || t.freq > 1) continue;  // the reference skips these
    freq_sum_ += t.freq;
    if (t.gpu_milli == 0) continue;  // CPU-only shapes count every idle GPU: only in freq_sum_
    cpu_.push_back(t.cpu_milli);
    milli_.push_back(t.gpu_milli);
    num_.push_back(t.num_gpu);
    mask_.push_back(t.gpu_model_mask);
    freq_.push_back(t.freq);
  }
  levels_ = milli_;
  std::sort(levels_.begin(), levels_.end(), std::greater<>());
  levels_.erase(std::unique(levels_.begin(), levels_.end()), levels_.end());
  level_.clear();
  for (const int32_t v : milli_) {
    level_.push_back(static_cast<int32_t>(
        std::lower_bound(levels_.begin(), levels_.end(), v, std::greater<>()) - levels_.begin()));
  }
  count_at_.assign(levels_.size(), 0);
  Reset();
}

// F = sum over shapes of freq x (idle GPU the shape cannot use). Every class but Q3 counts all
// idle GPU, so F = total x sum(freq) - sum over Q3 shapes of freq x (GPU on devices that fit).
FragMemoKey KeyOf(const NodeResources& r, int64_t* total) {
  FragMemoKey key{r.cpu_left, r.model, r.num_gpus, {}};
  std::array<int32_t, core::kMaxGpusPerNode>& g = key.sorted_gpu_left;
  int64_t sum = 0;
  for (int i = 0; i < r.num_gpus; ++i) {  // insertion sort, descending
    int32_t v = r.gpu_left[i];
    sum += v;
    int j = i;
    for (; j > 0 && g[j - 1] < v; --j) g[j] = g[j - 1];
    g[j] = v;
  }
  if (total != nullptr) *total = sum;
  return key;
}

double FragEvaluator::FastScore(const NodeResources& r) const {
  int64_t total = 0;
  const MemoKey key = KeyOf(r, &total);
  if (total == 0) return 0;
  if (!memoize_) return FastScoreSorted(key, total);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  const double score = FastScoreSorted(key, total);
  if (memo_.size() >= kMaxMemo) memo_.clear();
  memo_.emplace(key, score);
  return score;
}

double FragEvaluator::FastScoreSorted(const MemoKey& key, int64_t total) const {
  const std::array<int32_t, core::kMaxGpusPerNode>& g = key.sorted_gpu_left;
  const int k = key.num_gpus;
  std::array<int64_t, core::kMaxGpusPerNode + 1> prefix;
  prefix[0] = 0;
  for (int i = 0; i < k; ++i) prefix[i + 1] = prefix[i] + g[i];
  // GPUs with room for each distinct per-GPU request, in one pass (both descending).
  int cnt = 0;
  for (size_t j = 0; j < levels_.size(); ++j) {
    while (cnt < k && g[cnt] >= levels_[j]) ++cnt;
    count_at_[j] = cnt;
  }
  // Shapes that cannot use the node add exactly 0.0, so the sum is the same, in the same order,
  // as skipping them: the figures stay identical to the last digit.
  const uint64_t model_bit =
      key.model == core::kNoGpuModel ? 0 : uint64_t{1} << static_cast<unsigned>(key.model);
  double usable = 0;
  const size_t m = milli_.size();
  for (size_t t = 0; t < m; ++t) {
    const int c = count_at_[level_[t]];
    const bool fits =
        key.cpu_left >= cpu_[t] && (mask_[t] == 0 || (mask_[t] & model_bit) != 0) && c >= num_[t];
    usable += fits ? freq_[t] * static_cast<double>(prefix[c]) : 0.0;
  }
  return static_cast<double>(total) * freq_sum_ - usable;
}

double FragEvaluator::Current(const core::ClusterState& s, int n) {
  if (cache_.size() != static_cast<size_t>(s.num_nodes())) cache_.assign(s.num_nodes(), {0, 0});
  const uint64_t stamp = static_cast<uint64_t>(s.version(n)) + 1;
  auto& e = cache_[n];
  if (e.first != stamp) {
    e.second = FastScore(NodeResources::Of(s, n));
    e.first = stamp;
  }
  return e.second;
}

double FragEvaluator::Delta(const core::ClusterState& s, int n, const core::PodShape& pod,
                            int gpu) {
  const double before = Current(s, n);
  NodeResources r = NodeResources::Of(s, n);
  if (gpu >= 0) {
    r.cpu_left -= pod.cpu_milli;
    r.gpu_left[gpu] -= pod.gpu_milli;
  } else {
    r = SubtractLikeReference(r, pod);
  }
  return before - FastScore(r);
}

void StateScoreMemo::StartCycle(const core::ClusterState& s, const core::PodShape& pod,
                                uint64_t epoch) {
  if (&s != state_ || node_.size() != static_cast<size_t>(s.num_nodes())) {
    // Versions are per ClusterState object (and size): ids made for another are void.
    state_ = &s;
    node_.assign(static_cast<size_t>(s.num_nodes()), {0, 0});
    Renumber();
  }
  if (epoch != epoch_) {
    epoch_ = epoch;
    ++gen_;
  }
  row_key_ = ShapeOf(pod);
  auto it = rows_.find(row_key_);
  if (it == rows_.end()) {
    // The service sees whatever shapes its users submit: keep the rows of a bounded number.
    if (rows_.size() >= kMaxShapes) rows_.clear();
    it = rows_.emplace(row_key_, std::vector<Entry>()).first;
  }
  row_ = &it->second;
}

int StateScoreMemo::NewStateOf(const core::ClusterState& s, int n) {
  auto& slot = node_[static_cast<size_t>(n)];
  const uint64_t stamp = static_cast<uint64_t>(s.version(n)) + 1;
  // A bound on distinct states keeps the rows small in long churn: renumber past it.
  if (ids_.size() >= 2 * node_.size() + extra_states_) {
    Renumber();
    ++renumberings_;
  }
  auto [it, inserted] = ids_.emplace(KeyOf(NodeResources::Of(s, n)), static_cast<int>(ids_.size()));
  slot = {stamp, it->second};
  return it->second;
}

void StateScoreMemo::Renumber() {
  ids_.clear();
  for (auto& slot : node_) slot.first = 0;
  for (auto& [key, row] : rows_) row.clear();
  ++gen_;
}

int64_t FgdScoreFromDelta(double delta) {
  return static_cast<int64_t>(1.0 / (1.0 + std::exp(-delta / 1000.0)) * 100.0);
}

}  // namespace seedance::sched::internal
