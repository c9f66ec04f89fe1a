// Node groups, expansion options and the two expanders (see the header's contract).
#include "seedance/clusterscale/cluster_autoscaler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "node_room.h"
#include "seedance/base/check.h"

namespace seedance::clusterscale {

absl::StatusOr<std::vector<NodeGroup>> GroupsFromNodes(const std::vector<core::NodeSpec>& nodes,
                                                       const GroupOptions& options) {
  if (nodes.empty()) return absl::InvalidArgumentError("nodes: empty node list");
  if (!(options.min_fraction >= 0 && options.min_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_fraction: ", options.min_fraction, " is outside [0, 1]"));
  }
  if (!(options.max_factor >= 1) || !std::isfinite(options.max_factor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_factor: ", options.max_factor, " must be finite and >= 1"));
  }
  std::vector<NodeGroup> groups;
  std::vector<int> counts;
  std::map<std::tuple<int64_t, int64_t, int32_t, std::string>, size_t> index;
  for (const core::NodeSpec& n : nodes) {
    auto key = std::make_tuple(n.cpu_milli, n.memory_mib, n.num_gpus, n.gpu_model);
    auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) {
      NodeGroup g;
      g.name = absl::StrCat(n.gpu_model.empty() ? "cpu" : n.gpu_model, "x", n.num_gpus, "-",
                            n.cpu_milli / 1000, "c-", n.memory_mib / 1024, "g");
      g.node = n;
      g.node.name = g.name;
      groups.push_back(std::move(g));
      counts.push_back(0);
    }
    ++counts[it->second];
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].min_size = static_cast<int>(std::floor(options.min_fraction * counts[g]));
    groups[g].max_size = static_cast<int>(std::ceil(options.max_factor * counts[g]));
  }
  return groups;
}

bool FitsEmptyNode(const core::NodeSpec& node, const PendingPod& pod) {
  NodeRoom room(node);
  return room.Fits(pod);
}

absl::Status Validate(const ScaleUpOptions& options) {
  if (options.max_nodes_per_scale_up < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_nodes_per_scale_up: ", options.max_nodes_per_scale_up, " must be >= 1"));
  }
  if (!(options.balance_tolerance >= 0 && options.balance_tolerance <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("balance_tolerance: ", options.balance_tolerance, " is outside [0, 1]"));
  }
  return absl::OkStatus();
}

std::vector<Option> ExpansionOptions(const std::vector<NodeGroup>& groups,
                                     const std::vector<PendingPod>& pending,
                                     const std::vector<int>& room, int max_nodes) {
  SEEDANCE_CHECK(room.size() == groups.size())
      << "room has " << room.size() << " entries for " << groups.size() << " groups";
  // Largest request first, as CA's binpacking estimator (it sorts by a CPU+memory score; GPUs
  // lead here so that whole-GPU pods are not crowded out by shares).
  std::vector<int> order(pending.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const core::PodShape& x = pending[a].shape;
    const core::PodShape& y = pending[b].shape;
    return std::tie(y.num_gpu, y.gpu_milli, y.cpu_milli, y.memory_mib) <
           std::tie(x.num_gpu, x.gpu_milli, x.cpu_milli, x.memory_mib);
  });
  std::vector<Option> options;
  for (size_t g = 0; g < groups.size(); ++g) {
    SEEDANCE_CHECK(room[g] >= 0) << "group " << groups[g].name << " has negative room " << room[g];
    const int limit = std::min(room[g], max_nodes);
    if (limit == 0) continue;
    const core::NodeSpec& t = groups[g].node;
    NodeRoom empty(t);
    std::vector<NodeRoom> open;
    Option option;
    option.group = static_cast<int>(g);
    for (int p : order) {
      if (!empty.Fits(pending[p])) continue;
      bool placed = false;
      for (NodeRoom& n : open) {
        if (n.Fits(pending[p])) {
          n.Take(pending[p].shape);
          placed = true;
          break;
        }
      }
      if (!placed && static_cast<int>(open.size()) < limit) {
        open.push_back(empty);
        open.back().Take(pending[p].shape);
        placed = true;
      }
      if (placed) option.pods.push_back(p);
    }
    if (open.empty()) continue;
    option.node_count = static_cast<int>(open.size());
    double cpu_free = 0, mem_free = 0, gpu_free_milli = 0;
    for (const NodeRoom& n : open) {
      cpu_free += static_cast<double>(n.cpu_free_milli());
      mem_free += static_cast<double>(n.memory_free_mib());
      gpu_free_milli += static_cast<double>(n.gpu_free_milli());
    }
    const double count = option.node_count;
    option.cpu_waste = t.cpu_milli > 0 ? cpu_free / (count * t.cpu_milli) : 0;
    option.memory_waste = t.memory_mib > 0 ? mem_free / (count * t.memory_mib) : 0;
    const double gpu_price = t.num_gpus > 0 ? t.cost_usd_per_hour / t.num_gpus : 0;
    option.gpu_waste_usd_per_hour = gpu_free_milli / core::kMilliGpu * gpu_price;
    options.push_back(std::move(option));
  }
  return options;
}

namespace {

bool Similar(const core::NodeSpec& a, const core::NodeSpec& b, double tolerance) {
  auto close = [tolerance](int64_t x, int64_t y) {
    const double hi = static_cast<double>(std::max(x, y));
    return hi == 0 || std::abs(static_cast<double>(x - y)) <= tolerance * hi;
  };
  return a.gpu_model == b.gpu_model && a.num_gpus == b.num_gpus &&
         close(a.cpu_milli, b.cpu_milli) && close(a.memory_mib, b.memory_mib);
}

// GPU waste as a fraction of the option's paid GPU capacity (price-weighted).
double GpuWasteFraction(const NodeGroup& g, const Option& o) {
  const double paid = g.node.cost_usd_per_hour * o.node_count;
  if (g.node.num_gpus == 0) return 1.0;
  return paid > 0 ? o.gpu_waste_usd_per_hour / paid : 0.0;
}

}  // namespace

ScaleUp DecideScaleUp(const std::vector<NodeGroup>& groups, const std::vector<PendingPod>& pending,
                      const std::vector<int>& room, const ScaleUpOptions& options) {
  ScaleUp result;
  result.add.assign(groups.size(), 0);
  std::vector<Option> opts =
      ExpansionOptions(groups, pending, room, options.max_nodes_per_scale_up);
  if (opts.empty()) return result;
  const Option* best = &opts[0];
  if (options.expander == ExpanderKind::kCaLeastWaste) {
    // CA least-waste: wasted CPU + wasted memory fraction, lowest wins; first group on ties.
    for (const Option& o : opts) {
      if (o.cpu_waste + o.memory_waste < best->cpu_waste + best->memory_waste) best = &o;
    }
  } else {
    // Seedance: the price-weighted fraction of GPU capacity left unallocated; then CPU+memory
    // waste; then more pods helped; then the cheaper option per pod helped.
    auto key = [&](const Option& o) {
      const NodeGroup& g = groups[o.group];
      return std::make_tuple(GpuWasteFraction(g, o), o.cpu_waste + o.memory_waste,
                             -static_cast<double>(o.pods.size()),
                             g.node.cost_usd_per_hour * o.node_count / o.pods.size());
    };
    for (const Option& o : opts) {
      if (key(o) < key(*best)) best = &o;
    }
  }
  result.pods_helped = static_cast<int>(best->pods.size());
  if (options.expander == ExpanderKind::kCaLeastWaste) {
    result.add[best->group] = best->node_count;
    return result;
  }
  // Balance over similar groups: each node goes to the similar group with the most room left,
  // which keeps equally bounded groups equally sized (CA's balancing of similar node groups).
  std::vector<int> similar;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (room[g] > 0 &&
        Similar(groups[g].node, groups[best->group].node, options.balance_tolerance)) {
      similar.push_back(static_cast<int>(g));
    }
  }
  for (int i = 0; i < best->node_count; ++i) {
    int pick = -1;
    for (int g : similar) {
      if (room[g] - result.add[g] <= 0) continue;
      if (pick < 0 || room[g] - result.add[g] > room[pick] - result.add[pick]) pick = g;
    }
    if (pick < 0) break;  // unreachable: the chosen group is similar to itself and has room
    ++result.add[pick];
  }
  return result;
}

}  // namespace seedance::clusterscale
