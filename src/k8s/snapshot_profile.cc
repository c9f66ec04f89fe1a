// Snapshot -> telemetry::Profile for `seedance analyze` (snapshot.h).
#include <algorithm>
#include <map>

#include "absl/strings/str_split.h"
#include "seedance/k8s/snapshot.h"

namespace seedance::k8s {
namespace {

telemetry::PodInfo PodInfoOf(const Pod& p) {
  telemetry::PodInfo info;
  info.name = p.name;
  info.namespace_name = p.ns;
  info.cpu_milli = p.shape.cpu_milli;
  info.memory_mib = p.shape.memory_mib;
  info.num_gpus = p.shape.num_gpu;
  info.gpu_milli = p.shape.gpu_milli;
  for (const GpuAssignment& g : p.gpus) info.gpu_ids.push_back(g.index);
  if (p.gpu_spec.find('|') == std::string::npos) info.gpu_model = p.gpu_spec;
  return info;
}

// Milli allocated per GPU: pods with a written placement where it says; the others (placed by
// another scheduler or device plugin) on the fullest GPUs with room, for the estimate only.
std::vector<int64_t> AllocatedMilli(const Node& n, const std::vector<const Pod*>& pods) {
  std::vector<int64_t> used(static_cast<size_t>(n.spec.num_gpus), 0);
  for (const Pod* p : pods) {
    for (const GpuAssignment& g : p->gpus) used[static_cast<size_t>(g.index)] += g.milli;
  }
  for (const Pod* p : pods) {
    if (!p->gpus.empty() || p->shape.num_gpu == 0) continue;
    for (int k = 0; k < p->shape.num_gpu; ++k) {
      int best = -1;
      for (int i = 0; i < n.spec.num_gpus; ++i) {
        if (used[i] + p->shape.gpu_milli > core::kMilliGpu) continue;
        if (best < 0 || used[i] > used[best]) best = i;
      }
      if (best < 0) break;  // over-committed: the estimate stops at full
      used[best] += p->shape.gpu_milli;
    }
  }
  return used;
}

}  // namespace

telemetry::Profile ToProfile(const Snapshot& snapshot) {
  telemetry::Profile profile;
  profile.source = "kubernetes snapshot";
  profile.interval_s = 1;
  profile.timestamps_s = {0};
  std::map<std::string, std::vector<const Pod*>> on_node;
  for (const Pod& p : snapshot.pods) {
    if (p.node_name.empty()) {
      profile.pending_pods.push_back(PodInfoOf(p));
    } else {
      on_node[p.node_name].push_back(&p);
    }
  }
  for (const Node& n : snapshot.nodes) {
    telemetry::NodeProfile node;
    node.name = n.spec.name;
    node.cpus = static_cast<int>(n.spec.cpu_milli / 1000);
    node.memory_mib = n.spec.memory_mib;
    const std::vector<const Pod*>& pods = on_node[n.spec.name];
    const std::vector<int64_t> used = AllocatedMilli(n, pods);
    for (int i = 0; i < n.spec.num_gpus; ++i) {
      telemetry::GpuInfo g;
      g.index = i;
      g.model = n.spec.gpu_model;
      g.memory_mib = n.gpu_memory_mib;
      if (static_cast<size_t>(i) < n.gpu_uuids.size()) g.uuid = n.gpu_uuids[i];
      g.util_pct = {std::min<double>(100.0, static_cast<double>(used[i]) / 10.0)};
      node.gpus.push_back(std::move(g));
    }
    for (const Pod* p : pods) node.pods.push_back(PodInfoOf(*p));
    profile.nodes.push_back(std::move(node));
  }
  return profile;
}

}  // namespace seedance::k8s
