// The reference protocol's job selection (docs/jobs.md, "Protocol").
#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/sim/jobs.h"

namespace seedance::sim {
namespace {

int32_t ScaledNodes(int64_t nodes, double scale) {
  // Round half to even, as Python's round() in the reference.
  return static_cast<int32_t>(std::nearbyint(static_cast<double>(nodes) * scale));
}

}  // namespace

absl::StatusOr<JobWorkload> SelectJobs(const std::vector<trace::TraceJob>& trace,
                                       const std::vector<trace::TenantSpec>& tenants,
                                       const JobSelection& sel) {
  const JobWindow& window = sel.window;
  const double capacity_scale = sel.capacity_scale;
  const bool pooled = sel.pooled;
  if (!(capacity_scale > 0) || capacity_scale > 1000) {
    return absl::InvalidArgumentError("--capacity-scale: must be in (0, 1000]");
  }
  if (window.end_unix_s < window.start_unix_s) {
    return absl::InvalidArgumentError("--window: the end is before the start");
  }
  JobWorkload w;
  std::unordered_map<std::string, int32_t> index;
  int64_t pool_nodes = 0;
  for (const trace::TenantSpec& t : tenants) {
    index.emplace(t.name, static_cast<int32_t>(w.tenants.size()));
    w.tenants.push_back({t.name, ScaledNodes(t.nodes, capacity_scale), t.weight});
    pool_nodes += w.tenants.back().nodes;
  }
  if (pool_nodes == 0) {
    return absl::InvalidArgumentError("the tenants have no nodes at this --capacity-scale");
  }

  // Candidates: GPU jobs of known tenants, in submit order (ties: see SubmitTies).
  std::vector<size_t> order;
  order.reserve(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const trace::TraceJob& j = trace[i];
    if (j.gpus <= 0) {
      ++w.no_gpus;
    } else if (auto it = index.find(j.tenant); it == index.end()) {
      ++w.unknown_tenant;
    } else if (j.submit_unix_s < window.start_unix_s) {
      ++w.outside_window;
    } else {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (trace[a].submit_unix_s != trace[b].submit_unix_s) {
      return trace[a].submit_unix_s < trace[b].submit_unix_s;
    }
    return sel.ties == SubmitTies::kReverseFile ? a > b : a < b;
  });
  w.window_s = window.end_unix_s - window.start_unix_s;
  w.origin_unix_s = order.empty() ? window.start_unix_s : trace[order.front()].submit_unix_s;
  const int64_t node_gpus = kGpusPerJobNode;
  for (size_t i : order) {
    const trace::TraceJob& j = trace[i];
    const int64_t submit = j.submit_unix_s - w.origin_unix_s;
    if (submit > w.window_s) {
      ++w.outside_window;
      continue;
    }
    const int32_t tenant = index.at(j.tenant);
    const int64_t capacity = (pooled ? pool_nodes : w.tenants[tenant].nodes) * node_gpus;
    if (j.gpus > capacity) {
      ++w.too_large;
      continue;
    }
    w.jobs.push_back({submit, j.duration_s, j.gpus, tenant, j.line});
  }
  return w;
}

}  // namespace seedance::sim
