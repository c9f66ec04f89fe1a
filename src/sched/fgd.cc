#include "fgd.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace seedance::sched::internal {

NodeResources SubtractLikeReference(NodeResources r, const core::PodShape& pod) {
  r.cpu_left -= pod.cpu_milli;
  if (pod.num_gpu == 0) return r;
  std::array<int, core::kMaxGpusPerNode> idx;
  std::iota(idx.begin(), idx.begin() + r.num_gpus, 0);
  std::stable_sort(idx.begin(), idx.begin() + r.num_gpus,
                   [&](int a, int b) { return r.gpu_left[a] < r.gpu_left[b]; });
  int need = pod.num_gpu;
  for (int k = 0; k < r.num_gpus && need > 0; ++k) {
    if (pod.gpu_milli <= r.gpu_left[idx[k]]) {
      r.gpu_left[idx[k]] -= pod.gpu_milli;
      --need;
    }
  }
  return r;
}

double FragEvaluator::Current(const core::ClusterState& s, int n) {
  if (cache_.size() != static_cast<size_t>(s.num_nodes())) cache_.assign(s.num_nodes(), {0, 0});
  const uint64_t stamp = static_cast<uint64_t>(s.version(n)) + 1;
  auto& e = cache_[n];
  if (e.first != stamp) {
    e.second = NodeFragScore(NodeResources::Of(s, n), workload_);
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
  return before - NodeFragScore(r, workload_);
}

int64_t FgdScoreFromDelta(double delta) {
  return static_cast<int64_t>(1.0 / (1.0 + std::exp(-delta / 1000.0)) * 100.0);
}

}  // namespace seedance::sched::internal
