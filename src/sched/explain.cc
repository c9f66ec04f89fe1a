#include "seedance/sched/explain.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

namespace seedance::sched {

std::string_view FilterReasonName(FilterReason reason) {
  switch (reason) {
    case FilterReason::kNodeRemoved:
      return "node removed";
    case FilterReason::kCordoned:
      return "cordoned";
    case FilterReason::kTainted:
      return "untolerated taint";
    case FilterReason::kGpuModel:
      return "GPU model";
    case FilterReason::kInsufficientCpu:
      return "insufficient CPU";
    case FilterReason::kInsufficientMemory:
      return "insufficient memory";
    case FilterReason::kTooFewGpus:
      return "too few GPUs";
    case FilterReason::kInsufficientGpu:
      return "insufficient free GPUs";
    case FilterReason::kInsufficientGpuMilli:
      return "insufficient GPU milli";
    case FilterReason::kPlugin:
      return "rejected by plugin";
  }
  return "unknown";
}

namespace {

// GPUs of node n with at least `milli` left.
int GpusWithRoom(const core::ClusterState& state, int n, int32_t milli) {
  int count = 0;
  for (int32_t left : state.gpu_left(n)) count += left >= milli;
  return count;
}

}  // namespace

std::optional<FilterReason> NodeFilterReason(const core::ClusterState& state, int n,
                                             const core::PodShape& pod) {
  SEEDANCE_CHECK(n >= 0 && n < state.num_nodes())
      << "NodeFilterReason: node " << n << " of " << state.num_nodes();
  std::optional<FilterReason> reason;
  if (!state.alive(n)) {
    reason = FilterReason::kNodeRemoved;
  } else if (state.cordoned(n)) {
    reason = FilterReason::kCordoned;
  } else if (state.tainted(n)) {
    reason = FilterReason::kTainted;
  } else if (!state.Accessible(n, pod)) {
    reason = FilterReason::kGpuModel;
  } else if (state.cpu_left(n) < pod.cpu_milli) {
    reason = FilterReason::kInsufficientCpu;
  } else if (state.memory_left(n) < pod.memory_mib) {
    reason = FilterReason::kInsufficientMemory;
  } else if (pod.num_gpu > 0) {
    if (state.node(n).num_gpus < pod.num_gpu) {
      reason = FilterReason::kTooFewGpus;
    } else if (pod.gpu_milli >= core::kMilliGpu) {
      if (state.free_gpus(n) < pod.num_gpu) reason = FilterReason::kInsufficientGpu;
    } else if (GpusWithRoom(state, n, pod.gpu_milli) < pod.num_gpu) {
      reason = FilterReason::kInsufficientGpuMilli;
    }
  }
  // The reasons are Fits spelled out (explain_test checks they agree on random states).
  return reason;
}

Diagnosis Diagnose(const core::ClusterState& state, const core::PodShape& pod) {
  Diagnosis d;
  for (int n = 0; n < state.num_nodes(); ++n) {
    if (!state.alive(n)) continue;
    ++d.nodes_total;
    if (std::optional<FilterReason> r = NodeFilterReason(state, n, pod)) {
      ++d.counts[static_cast<size_t>(*r)];
    } else {
      ++d.nodes_fit;
    }
  }
  return d;
}

std::string FitErrorMessage(const Diagnosis& d) {
  std::string out = absl::StrCat(d.nodes_fit, "/", d.nodes_total, " nodes fit");
  if (d.nodes_total == 0) return absl::StrCat(out, ": the cluster has no nodes");
  std::vector<int> order;
  for (int r = 0; r < kNumFilterReasons; ++r) {
    if (d.counts[static_cast<size_t>(r)] > 0) order.push_back(r);
  }
  // Stable: equal counts stay in FilterReason order.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return d.counts[static_cast<size_t>(a)] > d.counts[static_cast<size_t>(b)];
  });
  const char* sep = ": ";
  for (int r : order) {
    const auto reason = static_cast<FilterReason>(r);
    const std::string_view name = FilterReasonName(reason);
    absl::StrAppend(&out, sep, d.counts[static_cast<size_t>(r)], " ",
                    absl::string_view(name.data(), name.size()));
    if (reason == FilterReason::kPlugin && !d.plugin.empty()) absl::StrAppend(&out, " ", d.plugin);
    sep = ", ";
  }
  return out;
}

}  // namespace seedance::sched
