// The local machine from procfs/sysfs, and its topology from hwloc.
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

struct CpuTimes {
  uint64_t busy = 0;
  uint64_t total = 0;
};

// /proc/stat: "cpu  user nice system idle iowait irq softirq steal ..." (aggregate first, then
// cpu0, cpu1, ...). Busy time is everything except idle and iowait; guest time is already part
// of user time, so only the first eight fields are summed.
bool ParseProcStat(const std::string& text, CpuTimes* all, std::vector<CpuTimes>* per_cpu) {
  per_cpu->clear();
  bool have_all = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "cpu")) continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 5) continue;
    uint64_t v[8] = {};
    for (size_t i = 1; i < f.size() && i <= 8; ++i) {
      if (!absl::SimpleAtoi(f[i], &v[i - 1])) return false;
    }
    CpuTimes t;
    for (uint64_t x : v) t.total += x;
    t.busy = t.total - v[3] - v[4];
    if (f[0] == "cpu") {
      *all = t;
      have_all = true;
    } else {
      per_cpu->push_back(t);
    }
  }
  return have_all;
}

double Util(const CpuTimes& a, const CpuTimes& b) {
  if (b.total <= a.total) return 0;
  return 100.0 * static_cast<double>(b.busy - a.busy) / static_cast<double>(b.total - a.total);
}

// Value in kB of "KEY: N kB" lines (/proc/meminfo, or "Node 0 KEY: N kB" in sysfs).
std::map<std::string, uint64_t> ParseMeminfo(const std::string& text) {
  std::map<std::string, uint64_t> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view key = line.substr(0, colon);
    if (absl::StartsWith(key, "Node ")) {  // "Node 0 MemTotal"
      const size_t sp = key.find(' ', 5);
      if (sp != absl::string_view::npos) key = key.substr(sp + 1);
    }
    std::vector<absl::string_view> f =
        absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty());
    uint64_t v = 0;
    if (!f.empty() && absl::SimpleAtoi(f[0], &v)) out[std::string(key)] = v;
  }
  return out;
}

class ProcfsCollector : public Collector {
 public:
  explicit ProcfsCollector(ProcfsOptions options) : options_(std::move(options)) {}
  std::string_view Name() const override { return "procfs"; }

  absl::Status Describe(Profile* profile) override {
    std::string name = options_.node_name;
    if (name.empty()) {
      char host[256] = {};
      if (::gethostname(host, sizeof host - 1) != 0)
        return absl::InternalError("gethostname failed");
      name = host;
    }
    std::string stat, meminfo;
    if (!ReadFile(options_.proc_root + "/stat", &stat) ||
        !ParseProcStat(stat, &last_, &last_cpu_)) {
      return absl::UnavailableError(
          absl::StrCat(options_.proc_root, "/stat: cannot read CPU times"));
    }
    if (!ReadFile(options_.proc_root + "/meminfo", &meminfo)) {
      return absl::UnavailableError(absl::StrCat(options_.proc_root, "/meminfo: cannot read"));
    }
    auto mem = ParseMeminfo(meminfo);
    if (!mem.count("MemTotal")) {
      return absl::UnavailableError(absl::StrCat(options_.proc_root, "/meminfo: no MemTotal"));
    }
    NodeProfile node;
    node.name = name;
    node.cpus = static_cast<int>(last_cpu_.size());
    node.memory_mib = static_cast<int64_t>(mem["MemTotal"] / 1024);
    node.per_cpu_util_pct.resize(last_cpu_.size());
    // NUMA nodes from sysfs; a machine without the directory is one NUMA node.
    std::vector<int> ids;
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(options_.sys_root + "/devices/system/node", ec)) {
      const std::string base = e.path().filename().string();
      int id = 0;
      if (absl::StartsWith(base, "node") && absl::SimpleAtoi(base.substr(4), &id))
        ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    for (int id : ids) {
      const std::string dir = absl::StrCat(options_.sys_root, "/devices/system/node/node", id);
      std::string cpulist, nodemem;
      NumaNodeInfo info;
      info.id = id;
      if (ReadFile(dir + "/cpulist", &cpulist)) {
        info.cpus = std::string(absl::StripAsciiWhitespace(cpulist));
      }
      if (ReadFile(dir + "/meminfo", &nodemem)) {
        info.memory_mib = static_cast<int64_t>(ParseMeminfo(nodemem)["MemTotal"] / 1024);
      }
      node.numa_nodes.push_back(std::move(info));
      numa_dirs_.push_back(dir);
    }
    if (options_.with_topology) {
      auto topo = ReadHwlocTopology();
      if (!topo.ok()) return topo.status();
      node.topology = std::move(*topo);
    }
    node_index_ = profile->nodes.size();
    profile->nodes.push_back(std::move(node));
    return absl::OkStatus();
  }

  absl::Status Sample(double, Profile* profile) override {
    NodeProfile& node = profile->nodes[node_index_];
    std::string stat, meminfo;
    CpuTimes now;
    std::vector<CpuTimes> now_cpu;
    if (!ReadFile(options_.proc_root + "/stat", &stat) || !ParseProcStat(stat, &now, &now_cpu)) {
      return absl::UnavailableError(
          absl::StrCat(options_.proc_root, "/stat: cannot read CPU times"));
    }
    node.cpu_util_pct.push_back(Util(last_, now));
    for (size_t c = 0; c < node.per_cpu_util_pct.size(); ++c) {
      node.per_cpu_util_pct[c].push_back(
          c < now_cpu.size() && c < last_cpu_.size() ? Util(last_cpu_[c], now_cpu[c]) : Missing());
    }
    last_ = now;
    last_cpu_ = std::move(now_cpu);
    if (!ReadFile(options_.proc_root + "/meminfo", &meminfo)) {
      return absl::UnavailableError(absl::StrCat(options_.proc_root, "/meminfo: cannot read"));
    }
    auto mem = ParseMeminfo(meminfo);
    const uint64_t avail = mem.count("MemAvailable") ? mem["MemAvailable"] : mem["MemFree"];
    node.mem_used_mib.push_back(
        static_cast<double>(mem["MemTotal"] - std::min(avail, mem["MemTotal"])) / 1024.0);
    for (size_t i = 0; i < numa_dirs_.size(); ++i) {
      std::string text;
      double used = Missing();
      if (ReadFile(numa_dirs_[i] + "/meminfo", &text)) {
        auto m = ParseMeminfo(text);
        if (m.count("MemUsed")) used = static_cast<double>(m["MemUsed"]) / 1024.0;
      }
      node.numa_nodes[i].mem_used_mib.push_back(used);
    }
    return absl::OkStatus();
  }

 private:
  ProcfsOptions options_;
  size_t node_index_ = 0;
  CpuTimes last_;
  std::vector<CpuTimes> last_cpu_;
  std::vector<std::string> numa_dirs_;
};

std::string PciKind(unsigned class_id, unsigned vendor_id) {
  switch (class_id >> 8) {
    case 0x03:
      return vendor_id == 0x10de || class_id == 0x0302 ? "gpu" : "display";
    case 0x02:
      return "network";
    case 0x01:
      return "storage";
    case 0x12:
      return "accelerator";
    default:
      return "other";
  }
}

}  // namespace

absl::StatusOr<TopologyInfo> ReadHwlocTopology() {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return absl::InternalError("hwloc: init failed");
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // PCI devices come from sysfs through the linux component. The libpciaccess plugin ("pci")
  // and the display plugins ("gl", "opencl") are not loaded: they add names only, and leak the
  // pci.ids tables they read.
  for (const char* plugin : {"pci", "gl", "opencl"}) {
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  }
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return absl::InternalError("hwloc: cannot load the topology");
  }
  TopologyInfo info;
  info.packages = std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE));
  info.cores = std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE));
  info.pus = std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
  for (hwloc_obj_t obj = hwloc_get_next_pcidev(topo, nullptr); obj != nullptr;
       obj = hwloc_get_next_pcidev(topo, obj)) {
    const auto& a = obj->attr->pcidev;
    PciDeviceInfo d;
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%01x", a.domain, a.bus, a.dev, a.func);
    d.bus_id = bus;
    d.kind = PciKind(a.class_id, a.vendor_id);
    if (obj->name != nullptr) d.name = obj->name;
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (parent != nullptr && parent->nodeset != nullptr && !hwloc_bitmap_iszero(parent->nodeset) &&
        hwloc_bitmap_weight(parent->nodeset) == 1) {
      d.numa_node = hwloc_bitmap_first(parent->nodeset);
    }
    info.pci_devices.push_back(std::move(d));
  }
  hwloc_topology_destroy(topo);
  return info;
}

std::unique_ptr<Collector> NewProcfsCollector(ProcfsOptions options) {
  return std::make_unique<ProcfsCollector>(std::move(options));
}

}  // namespace seedance::telemetry
