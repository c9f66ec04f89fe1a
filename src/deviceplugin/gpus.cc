#include "seedance/deviceplugin/gpus.h"

#include <charconv>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "seedance/telemetry/collector.h"

namespace seedance::deviceplugin {

absl::StatusOr<std::vector<Gpu>> FakeGpus(const FakeGpuOptions& o) {
  if (o.count < 1 || o.count > core::kMaxGpusPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake GPUs: count ", o.count, " is outside 1..", core::kMaxGpusPerNode));
  }
  if (o.memory_mib < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake GPUs: memory ", o.memory_mib, " MiB must be positive"));
  }
  if (o.numa_nodes < 1 || o.numa_nodes > o.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake GPUs: ", o.numa_nodes, " NUMA nodes is outside 1..", o.count));
  }
  std::vector<Gpu> gpus(o.count);
  for (int i = 0; i < o.count; ++i) {
    Gpu& g = gpus[i];
    g.index = g.minor = i;
    g.uuid = absl::StrCat("GPU-fake-", o.node_name, "-", i);
    g.model = o.model;
    g.memory_mib = o.memory_mib;
    g.numa_node = i * o.numa_nodes / o.count;
    g.nvlink_group = o.nvlink ? "nvswitch" : "";
    g.pci_bus_id = absl::StrCat("0000:", absl::Hex(0x10 + i, absl::kZeroPad2), ":00.0");
  }
  return gpus;
}

namespace {

// Connected components of the NVLink peer graph, as group names "nvlink<lowest index>".
std::vector<std::string> NvlinkGroups(const std::vector<telemetry::LocalGpu>& local) {
  std::vector<int> root(local.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = static_cast<int>(i);
  auto find = [&](int x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  for (size_t i = 0; i < local.size(); ++i) {
    for (int p : local[i].nvlink_peers) {
      if (p < 0 || static_cast<size_t>(p) >= local.size()) continue;
      const int a = find(static_cast<int>(i)), b = find(p);
      root[std::max(a, b)] = std::min(a, b);
    }
  }
  std::vector<std::string> groups(local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    if (!local[i].nvlink_peers.empty())
      groups[i] = absl::StrCat("nvlink", find(static_cast<int>(i)));
  }
  return groups;
}

}  // namespace

absl::StatusOr<std::vector<Gpu>> NvmlGpus() {
  auto local = telemetry::ListNvmlGpus();
  if (!local.ok()) return local.status();
  const std::vector<std::string> groups = NvlinkGroups(*local);
  std::vector<Gpu> gpus;
  for (const telemetry::LocalGpu& l : *local) {
    if (!l.healthy || l.uuid.empty()) {
      return absl::UnavailableError(absl::StrCat("NVML cannot read GPU ", l.index));
    }
    gpus.push_back({.index = l.index,
                    .minor = l.index,
                    .uuid = l.uuid,
                    .model = l.name,
                    .memory_mib = l.memory_mib,
                    .numa_node = l.numa_node,
                    .nvlink_group = groups[l.index],
                    .pci_bus_id = l.pci_bus_id});
  }
  return gpus;
}

std::vector<bool> NvmlHealth(const std::vector<Gpu>& gpus) {
  std::vector<bool> healthy(gpus.size(), false);
  auto local = telemetry::ListNvmlGpus();
  if (!local.ok()) return healthy;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (const telemetry::LocalGpu& l : *local) {
      if (l.healthy && l.uuid == gpus[i].uuid) healthy[i] = true;
    }
  }
  return healthy;
}

std::string SliceId(const Gpu& gpu, int slice) { return absl::StrCat(gpu.uuid, "::", slice); }

absl::StatusOr<int> GpuOfDevice(const std::vector<Gpu>& gpus, int slices_per_gpu,
                                std::string_view id) {
  const size_t sep = id.rfind("::");
  int slice = -1;
  if (sep != std::string_view::npos) {
    const std::string_view digits = id.substr(sep + 2);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), slice);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) slice = -1;
  }
  if (slice < 0 || slice >= slices_per_gpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ID \"", std::string(id), "\" is not one of this plugin's (UUID::SLICE, slice 0..",
        slices_per_gpu - 1, ")"));
  }
  const std::string_view uuid = id.substr(0, sep);
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].uuid == uuid) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("device ID \"", std::string(id), "\" names GPU ",
                                                 std::string(uuid),
                                                 ", which this node does not have"));
}

absl::Status ValidateGpus(const std::vector<Gpu>& gpus, int slices_per_gpu) {
  if (gpus.empty() || gpus.size() > static_cast<size_t>(core::kMaxGpusPerNode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(gpus.size(), " GPUs is outside 1..", core::kMaxGpusPerNode));
  }
  std::set<std::string> seen;
  for (const Gpu& g : gpus) {
    if (g.uuid.empty())
      return absl::InvalidArgumentError(absl::StrCat("GPU ", g.index, " has no UUID"));
    if (!seen.insert(g.uuid).second) {
      return absl::InvalidArgumentError(absl::StrCat("GPU UUID ", g.uuid, " appears twice"));
    }
    if (SliceId(g, slices_per_gpu - 1).size() > kMaxDeviceIdLength) {
      return absl::InvalidArgumentError(absl::StrCat("GPU UUID ", g.uuid,
                                                     " is too long: its slice IDs exceed ",
                                                     kMaxDeviceIdLength, " characters"));
    }
  }
  return absl::OkStatus();
}

core::NodeSpec NodeOf(const std::vector<Gpu>& gpus, const std::string& node_name) {
  core::NodeSpec node{.name = node_name.empty() ? "node" : node_name,
                      .cpu_milli = 0,
                      .memory_mib = 0,
                      .num_gpus = static_cast<int32_t>(gpus.size()),
                      .gpu_model = gpus.empty() ? "" : gpus[0].model};
  std::set<int> numa;
  for (const Gpu& g : gpus) {
    if (g.numa_node >= 0) numa.insert(g.numa_node);
    node.topology.gpus.push_back(
        {.numa_node = g.numa_node, .nvlink_group = g.nvlink_group, .pci_address = g.pci_bus_id});
  }
  for (int id : numa) node.topology.numa.push_back({.id = id, .cpu_milli = 0, .memory_mib = 0});
  return node;
}

}  // namespace seedance::deviceplugin
