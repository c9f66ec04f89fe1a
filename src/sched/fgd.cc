#include "fgd.h"

#include <algorithm>
#include <cmath>
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
  Reset();
}

// F = sum over shapes of freq x (idle GPU the shape cannot use). Every class but Q3 counts all
// idle GPU, so F = total x sum(freq) - sum over Q3 shapes of freq x (GPU on devices that fit).
double FragEvaluator::FastScore(const NodeResources& r) const {
  MemoKey key{r.cpu_left, r.model, r.num_gpus, {}};
  std::array<int32_t, core::kMaxGpusPerNode>& g = key.sorted_gpu_left;
  const int k = r.num_gpus;
  int64_t total = 0;
  for (int i = 0; i < k; ++i) {  // insertion sort, descending
    int32_t v = r.gpu_left[i];
    total += v;
    int j = i;
    for (; j > 0 && g[j - 1] < v; --j) g[j] = g[j - 1];
    g[j] = v;
  }
  if (total == 0) return 0;
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
  double usable = 0;
  const size_t m = milli_.size();
  for (size_t t = 0; t < m; ++t) {
    if (key.cpu_left < cpu_[t]) continue;
    if (mask_[t] != 0 && (key.model == core::kNoGpuModel || !((mask_[t] >> key.model) & 1u))) {
      continue;
    }
    int cnt = 0;
    while (cnt < k && g[cnt] >= milli_[t]) ++cnt;
    if (cnt >= num_[t]) usable += freq_[t] * static_cast<double>(prefix[cnt]);
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

int64_t FgdScoreFromDelta(double delta) {
  return static_cast<int64_t>(1.0 / (1.0 + std::exp(-delta / 1000.0)) * 100.0);
}

}  // namespace seedance::sched::internal
