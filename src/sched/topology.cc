#include "seedance/sched/topology.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "seedance/hw/catalog.h"

namespace seedance::sched {
namespace {

using core::NodeTopology;

// The levels a GPU set can stay within, best bandwidth first.
enum Level { kLevelNvLink, kLevelSwitch, kLevelNuma, kNumLevels };

// GPU g's group at `level`; empty: unknown, a group of its own.
std::string GroupOf(const NodeTopology& t, int g, int level) {
  const core::GpuTopology& gt = t.gpus[static_cast<size_t>(g)];
  switch (level) {
    case kLevelNvLink:
      return gt.nvlink_group;
    case kLevelSwitch:
      return gt.pcie_switch;
    default:
      return gt.numa_node < 0 ? std::string() : std::to_string(gt.numa_node);
  }
}

// `gpus` (increasing indices) partitioned by their group at `level`, groups in the order of
// their lowest index.
std::vector<std::vector<int>> Partition(const NodeTopology& t, const std::vector<int>& gpus,
                                        int level) {
  std::vector<std::vector<int>> groups;
  std::map<std::string, size_t> at;
  for (int g : gpus) {
    const std::string key = GroupOf(t, g, level);
    if (key.empty()) {
      groups.push_back({g});
      continue;
    }
    auto [it, fresh] = at.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(g);
  }
  return groups;
}

void Choose(const NodeTopology& t, const std::vector<int>& free, int k, int level,
            std::vector<int>* out);

// No level from `level` on holds k of `free`: whole NUMA groups, largest first, then the rest
// from the smallest group that holds it (chosen by the same rules).
void Spread(const NodeTopology& t, const std::vector<int>& free, int k, std::vector<int>* out) {
  std::vector<std::vector<int>> groups = Partition(t, free, kLevelNuma);
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  int left = k;
  std::vector<const std::vector<int>*> rest;
  for (const std::vector<int>& g : groups) {
    if (static_cast<int>(g.size()) <= left) {
      out->insert(out->end(), g.begin(), g.end());
      left -= static_cast<int>(g.size());
    } else {
      rest.push_back(&g);
    }
  }
  if (left == 0) return;
  const std::vector<int>* home = nullptr;  // the smallest group holding the rest
  for (const std::vector<int>* g : rest) {
    if (!home || g->size() < home->size()) home = g;
  }
  Choose(t, *home, left, kLevelNvLink, out);
}

void Choose(const NodeTopology& t, const std::vector<int>& free, int k, int level,
            std::vector<int>* out) {
  for (int l = level; l < kNumLevels; ++l) {
    const std::vector<std::vector<int>> groups = Partition(t, free, l);
    const std::vector<int>* fit = nullptr;  // best fit: the fewest free GPUs that hold k
    for (const std::vector<int>& g : groups) {
      if (static_cast<int>(g.size()) >= k && (!fit || g.size() < fit->size())) fit = &g;
    }
    if (!fit) continue;
    if (static_cast<int>(fit->size()) == k) {
      out->insert(out->end(), fit->begin(), fit->end());
    } else {
      Choose(t, *fit, k, l + 1, out);
    }
    return;
  }
  if (level == kLevelNvLink) {
    Spread(t, free, k, out);
    return;
  }
  // Inside a group that holds k but no finer group does: its lowest indices.
  out->insert(out->end(), free.begin(), free.begin() + k);
}

// The fully free GPUs of node n, and the GPUs of `also` (increasing indices).
std::vector<int> FreeGpus(const core::ClusterState& s, int n, std::span<const int8_t> also = {}) {
  std::vector<int> free;
  const std::span<const int32_t> left = s.gpu_left(n);
  for (int g = 0; g < static_cast<int>(left.size()); ++g) {
    const bool listed = std::find(also.begin(), also.end(), g) != also.end();
    if (listed || left[static_cast<size_t>(g)] == core::kMilliGpu) free.push_back(g);
  }
  return free;
}

}  // namespace

std::string_view GpuLinkName(GpuLink link) {
  switch (link) {
    case GpuLink::kNvLink:
      return "nvlink";
    case GpuLink::kPcieSwitch:
      return "pcie-switch";
    case GpuLink::kHostBridge:
      return "host-bridge";
    case GpuLink::kCrossSocket:
      return "cross-socket";
  }
  return "cross-socket";
}

LinkGeneration LinkGenerationOf(std::string_view gpu_model) {
  const hw::GpuModel* g = hw::Find(gpu_model);
  if (g == nullptr || g->nvlink_gbps_per_direction <= 0) return {};
  return {g->nvlink_gbps_per_direction, g->pcie_gbps_per_direction};
}

bool HasGpuTopology(const core::NodeSpec& node) {
  return node.num_gpus > 0 && node.topology.gpus.size() == static_cast<size_t>(node.num_gpus);
}

GpuLink LinkBetween(const NodeTopology& t, int a, int b) {
  const core::GpuTopology& x = t.gpus[static_cast<size_t>(a)];
  const core::GpuTopology& y = t.gpus[static_cast<size_t>(b)];
  if (!x.nvlink_group.empty() && x.nvlink_group == y.nvlink_group) return GpuLink::kNvLink;
  if (!x.pcie_switch.empty() && x.pcie_switch == y.pcie_switch) return GpuLink::kPcieSwitch;
  if (x.numa_node >= 0 && x.numa_node == y.numa_node) return GpuLink::kHostBridge;
  return GpuLink::kCrossSocket;
}

double LinkGbps(GpuLink link, const LinkGeneration& gen) {
  switch (link) {
    case GpuLink::kNvLink:
      return gen.nvlink_gbps;
    case GpuLink::kPcieSwitch:
    case GpuLink::kHostBridge:
      return gen.pcie_gbps;
    case GpuLink::kCrossSocket:
      return std::min(gen.pcie_gbps, kUpiLinkGbps);
  }
  return std::min(gen.pcie_gbps, kUpiLinkGbps);
}

double RingGbps(const core::NodeSpec& node, std::span<const int8_t> gpus) {
  if (gpus.size() < 2) return std::numeric_limits<double>::infinity();
  const NodeTopology& t = node.topology;
  // The ring visits GPUs grouped by NUMA node, then switch, then NVLink group, so each level is
  // crossed as few times as the set allows.
  std::vector<int> ring(gpus.begin(), gpus.end());
  std::sort(ring.begin(), ring.end(), [&t](int a, int b) {
    const core::GpuTopology& x = t.gpus[static_cast<size_t>(a)];
    const core::GpuTopology& y = t.gpus[static_cast<size_t>(b)];
    return std::tie(x.numa_node, x.pcie_switch, x.nvlink_group, a) <
           std::tie(y.numa_node, y.pcie_switch, y.nvlink_group, b);
  });
  const LinkGeneration gen = LinkGenerationOf(node.gpu_model);
  double slowest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < ring.size(); ++i) {
    const int next = ring[(i + 1) % ring.size()];
    slowest = std::min(slowest, LinkGbps(LinkBetween(t, ring[i], next), gen));
  }
  return slowest;
}

double RingAllReduceSeconds(const core::NodeSpec& node, std::span<const int8_t> gpus,
                            double bytes) {
  const size_t k = gpus.size();
  if (k < 2) return 0;
  const double per_hop = 2.0 * static_cast<double>(k - 1) / static_cast<double>(k) * bytes;
  return per_hop / (RingGbps(node, gpus) * 1e9);
}

bool ChooseGpuSet(const core::ClusterState& s, int n, int k, core::Placement* placement) {
  return ChooseGpuSet(s, n, k, GpuSetNeeds{}, placement);
}

namespace {

// The GPUs a set is chosen from: the usable fully free GPUs of node n, narrowed for nvlink or
// one_numa to the best-fit group that meets them (the fewest that hold k; the lowest first
// index on ties). false when fewer than k remain.
bool SetPool(const core::ClusterState& s, int n, int k, const GpuSetNeeds& needs,
             std::vector<int>* pool) {
  std::vector<int> free = FreeGpus(s, n);
  std::erase_if(free, [&](int g) { return g >= 32 || ((needs.usable >> g) & 1u) == 0; });
  if (k < 0 || static_cast<int>(free.size()) < k) return false;
  if (!needs.nvlink && !needs.one_numa) {
    *pool = std::move(free);
    return true;
  }
  if (!HasGpuTopology(s.node(n))) return false;
  // Groups by their first GPU (a node has at most kMaxGpusPerNode): no allocation per call
  // beyond the pool, since a filter asks this of every node for every pod.
  const NodeTopology& t = s.node(n).topology;
  auto same = [&](int a, int b) {
    const core::GpuTopology& x = t.gpus[static_cast<size_t>(a)];
    const core::GpuTopology& y = t.gpus[static_cast<size_t>(b)];
    return (!needs.nvlink || x.nvlink_group == y.nvlink_group) &&
           (!needs.one_numa || x.numa_node == y.numa_node);
  };
  std::array<int, core::kMaxGpusPerNode> first{}, size{};
  int groups = 0;
  std::array<int, core::kMaxGpusPerNode> group_of{};
  for (size_t i = 0; i < free.size(); ++i) {
    const core::GpuTopology& gt = t.gpus[static_cast<size_t>(free[i])];
    group_of[i] = -1;
    if ((needs.nvlink && gt.nvlink_group.empty()) || (needs.one_numa && gt.numa_node < 0)) {
      continue;
    }
    int at = 0;
    while (at < groups && !same(first[static_cast<size_t>(at)], free[i])) ++at;
    if (at == groups) first[static_cast<size_t>(groups++)] = free[i];
    ++size[static_cast<size_t>(at)];
    group_of[i] = at;
  }
  int fit = -1;  // groups are in the order of their first GPU: the first smallest wins ties
  for (int g = 0; g < groups; ++g) {
    const int have = size[static_cast<size_t>(g)];
    if (have >= k && (fit < 0 || have < size[static_cast<size_t>(fit)])) fit = g;
  }
  if (fit < 0) return false;
  pool->clear();
  for (size_t i = 0; i < free.size(); ++i) {
    if (group_of[i] == fit) pool->push_back(free[i]);
  }
  return true;
}

}  // namespace

bool GpuSetFits(const core::ClusterState& s, int n, int k, const GpuSetNeeds& needs) {
  std::vector<int> pool;
  return SetPool(s, n, k, needs, &pool);
}

bool ChooseGpuSet(const core::ClusterState& s, int n, int k, const GpuSetNeeds& needs,
                  core::Placement* placement) {
  std::vector<int> pool;
  if (!SetPool(s, n, k, needs, &pool)) return false;
  std::vector<int> chosen;
  if (HasGpuTopology(s.node(n))) {
    Choose(s.node(n).topology, pool, k, kLevelNvLink, &chosen);
  } else {
    chosen.assign(pool.begin(), pool.begin() + k);
  }
  std::sort(chosen.begin(), chosen.end());
  placement->num_gpus = k;
  for (int i = 0; i < k; ++i)
    placement->gpus[static_cast<size_t>(i)] = static_cast<int8_t>(chosen[i]);
  return true;
}

int HomeNuma(const core::NodeSpec& node, const core::Placement& placement) {
  if (!HasGpuTopology(node)) return -1;
  std::map<int, int> count;  // NUMA id -> GPUs of the placement there
  for (int8_t g : placement.gpu_ids()) {
    const int numa = node.topology.gpus[static_cast<size_t>(g)].numa_node;
    if (numa >= 0) ++count[numa];
  }
  int home = -1, most = 0;
  for (const auto& [id, k] : count) {  // increasing id: the lowest wins ties
    if (k > most) {
      home = id;
      most = k;
    }
  }
  return home;
}

int ChooseNuma(const core::ClusterState& s, const core::PodShape& pod,
               const core::Placement& placement) {
  const int n = placement.node;
  auto fits = [&](int id) {
    return s.numa_cpu_left(n, id) >= pod.cpu_milli && s.numa_memory_left(n, id) >= pod.memory_mib;
  };
  const int home = HomeNuma(s.node(n), placement);
  if (home >= 0) return fits(home) ? home : -1;
  int best = -1;
  for (const core::NumaInfo& info : s.node(n).topology.numa) {
    if (!fits(info.id)) continue;
    if (best < 0 || s.numa_cpu_left(n, info.id) > s.numa_cpu_left(n, best) ||
        (s.numa_cpu_left(n, info.id) == s.numa_cpu_left(n, best) && info.id < best)) {
      best = info.id;
    }
  }
  return best;
}

GpuSetQuality MeasureGpuSet(const core::ClusterState& s, const core::Placement& placement) {
  GpuSetQuality q;
  const core::NodeSpec& node = s.node(placement.node);
  const int k = placement.num_gpus;
  if (k < 2 || !HasGpuTopology(node)) return q;
  const std::span<const int8_t> mine = placement.gpu_ids();
  const std::vector<int> free = FreeGpus(s, placement.node, mine);  // its GPUs were free
  std::vector<int> best_set;
  Choose(node.topology, free, k, kLevelNvLink, &best_set);
  std::vector<int8_t> best(best_set.begin(), best_set.end());
  const double got = RingGbps(node, mine);
  const double reachable = std::max(got, RingGbps(node, best));
  q.measured = true;
  q.best = got >= reachable;
  q.slowdown = reachable / got;
  q.allreduce_s = RingAllReduceSeconds(node, mine, kAllReduceBytes);
  return q;
}

}  // namespace seedance::sched
