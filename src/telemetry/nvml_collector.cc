// NVIDIA GPUs through NVML loaded with dlopen (no build dependency on the driver).
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "nvml.h"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace internal {
namespace {

// Declarations from nvml.h (only what is used). nvmlReturn_t is an int enum; 0 is success.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
constexpr int kNvmlPcieTx = 0;     // NVML_PCIE_UTIL_TX_BYTES
constexpr int kNvmlPcieRx = 1;     // NVML_PCIE_UTIL_RX_BYTES
constexpr int kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// NVML reports an 8-hex-digit domain ("00000000:3B:00.0"); sysfs uses 4.
std::string NormalizeBusId(const char* raw) {
  std::string s = Lower(raw);
  const size_t colon = s.find(':');
  if (colon == 8 && s.compare(0, 4, "0000") == 0) s = s.substr(4);
  return s;
}

}  // namespace

struct NvmlLibrary::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*device_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*pcie_throughput)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int*) = nullptr;
  nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*) = nullptr;

  std::string Error(nvmlReturn_t r) const {
    return error_string != nullptr ? error_string(r) : absl::StrCat("NVML error ", r);
  }
};

absl::StatusOr<std::shared_ptr<NvmlLibrary>> NvmlLibrary::Load() {
  void* h = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    return absl::NotFoundError(absl::StrCat("NVML: libnvidia-ml.so.1 not loadable (", ::dlerror(),
                                            "); no NVIDIA GPUs will be profiled"));
  }
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = h;
  lib->api_ = std::make_unique<Api>();
  Api& a = *lib->api_;
  bool missing = false;
  std::string which;
  auto sym = [&](auto& fn, const char* primary, const char* fallback) {
    void* p = ::dlsym(h, primary);
    if (p == nullptr && fallback != nullptr) p = ::dlsym(h, fallback);
    if (p == nullptr) {
      missing = true;
      which = primary;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  sym(a.init, "nvmlInit_v2", "nvmlInit");
  sym(a.shutdown, "nvmlShutdown", nullptr);
  sym(a.error_string, "nvmlErrorString", nullptr);
  sym(a.device_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  sym(a.handle_by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  sym(a.name, "nvmlDeviceGetName", nullptr);
  sym(a.uuid, "nvmlDeviceGetUUID", nullptr);
  sym(a.utilization, "nvmlDeviceGetUtilizationRates", nullptr);
  sym(a.memory, "nvmlDeviceGetMemoryInfo", nullptr);
  sym(a.pci_info, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
  sym(a.pcie_throughput, "nvmlDeviceGetPcieThroughput", nullptr);
  sym(a.power, "nvmlDeviceGetPowerUsage", nullptr);
  sym(a.nvlink_state, "nvmlDeviceGetNvLinkState", nullptr);
  sym(a.nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2",
      "nvmlDeviceGetNvLinkRemotePciInfo");
  if (missing) {
    return absl::NotFoundError(absl::StrCat("NVML: libnvidia-ml.so.1 lacks ", which));
  }
  if (nvmlReturn_t r = a.init(); r != kNvmlSuccess) {
    return absl::NotFoundError(absl::StrCat("NVML: nvmlInit failed: ", a.Error(r)));
  }
  unsigned int count = 0;
  if (nvmlReturn_t r = a.device_count(&count); r != kNvmlSuccess) {
    return absl::NotFoundError(absl::StrCat("NVML: nvmlDeviceGetCount failed: ", a.Error(r)));
  }
  lib->count_ = static_cast<int>(count);
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (api_ != nullptr && api_->shutdown != nullptr) api_->shutdown();
  if (handle_ != nullptr) ::dlclose(handle_);
}

absl::StatusOr<NvmlReading> NvmlLibrary::Read(int index) const {
  const Api& a = *api_;
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = a.handle_by_index(static_cast<unsigned>(index), &dev); r != kNvmlSuccess) {
    return absl::UnavailableError(absl::StrCat("NVML: device ", index, ": ", a.Error(r)));
  }
  NvmlReading out;
  char buf[128] = {};
  if (a.name(dev, buf, sizeof buf) == kNvmlSuccess) out.name = buf;
  char ubuf[96] = {};
  if (a.uuid(dev, ubuf, sizeof ubuf) == kNvmlSuccess) out.uuid = ubuf;
  nvmlPciInfo_t pci{};
  if (a.pci_info(dev, &pci) == kNvmlSuccess) {
    out.pci_bus_id = NormalizeBusId(pci.busId);
    std::ifstream numa("/sys/bus/pci/devices/" + out.pci_bus_id + "/numa_node");
    int node = -1;
    if (numa >> node) out.numa_node = node;
  }
  nvmlUtilization_t util{};
  if (nvmlReturn_t r = a.utilization(dev, &util); r != kNvmlSuccess) {
    return absl::UnavailableError(
        absl::StrCat("NVML: device ", index, ": utilization: ", a.Error(r)));
  }
  out.util_pct = util.gpu;
  out.mem_bw_util_pct = util.memory;
  nvmlMemory_t mem{};
  if (nvmlReturn_t r = a.memory(dev, &mem); r != kNvmlSuccess) {
    return absl::UnavailableError(absl::StrCat("NVML: device ", index, ": memory: ", a.Error(r)));
  }
  out.mem_total_bytes = mem.total;
  out.mem_used_bytes = mem.used;
  unsigned int kb = 0;
  if (a.pcie_throughput(dev, kNvmlPcieRx, &kb) == kNvmlSuccess) out.pcie_rx_mib_s = kb / 1024.0;
  if (a.pcie_throughput(dev, kNvmlPcieTx, &kb) == kNvmlSuccess) out.pcie_tx_mib_s = kb / 1024.0;
  unsigned int mw = 0;
  if (a.power(dev, &mw) == kNvmlSuccess) out.power_w = mw / 1000.0;
  for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
    int state = 0;
    if (a.nvlink_state(dev, link, &state) != kNvmlSuccess) continue;
    if (state != 1) continue;  // NVML_FEATURE_ENABLED
    ++out.nvlinks_active;
    nvmlPciInfo_t remote{};
    if (a.nvlink_remote_pci(dev, link, &remote) == kNvmlSuccess) {
      out.nvlink_remote_bus_ids.push_back(NormalizeBusId(remote.busId));
    }
  }
  return out;
}

std::vector<std::vector<int>> NvmlLibrary::NvlinkPeers(
    const std::vector<NvmlReading>& readings) const {
  std::map<std::string, int> by_bus;
  for (size_t i = 0; i < readings.size(); ++i) by_bus[readings[i].pci_bus_id] = static_cast<int>(i);
  std::vector<std::set<int>> peers(readings.size());
  std::vector<int> switched;  // GPUs with a link to something that is not a GPU (NVSwitch)
  for (size_t i = 0; i < readings.size(); ++i) {
    bool to_switch = false;
    for (const std::string& remote : readings[i].nvlink_remote_bus_ids) {
      auto it = by_bus.find(remote);
      if (it != by_bus.end() && it->second != static_cast<int>(i)) {
        peers[i].insert(it->second);
      } else if (it == by_bus.end()) {
        to_switch = true;
      }
    }
    if (to_switch) switched.push_back(static_cast<int>(i));
  }
  for (int a : switched) {
    for (int b : switched) {
      if (a != b) peers[a].insert(b);
    }
  }
  std::vector<std::vector<int>> out(readings.size());
  for (size_t i = 0; i < readings.size(); ++i) out[i].assign(peers[i].begin(), peers[i].end());
  return out;
}

}  // namespace internal

namespace {

class NvmlCollector : public Collector {
 public:
  NvmlCollector(std::shared_ptr<internal::NvmlLibrary> lib, std::string node_name)
      : lib_(std::move(lib)), node_name_(std::move(node_name)) {}
  std::string_view Name() const override { return "nvml"; }

  absl::Status Describe(Profile* profile) override {
    node_index_ = profile->nodes.size();
    for (size_t i = 0; i < profile->nodes.size(); ++i) {
      if (profile->nodes[i].name == node_name_) node_index_ = i;
    }
    if (node_index_ == profile->nodes.size()) {
      NodeProfile n;
      n.name = node_name_;
      profile->nodes.push_back(std::move(n));
    }
    std::vector<internal::NvmlReading> readings;
    for (int i = 0; i < lib_->DeviceCount(); ++i) {
      auto r = lib_->Read(i);
      if (!r.ok()) return r.status();
      readings.push_back(std::move(*r));
    }
    const auto peers = lib_->NvlinkPeers(readings);
    NodeProfile& node = profile->nodes[node_index_];
    for (size_t i = 0; i < readings.size(); ++i) {
      GpuInfo g;
      g.index = static_cast<int>(i);
      g.uuid = readings[i].uuid;
      g.model = readings[i].name;
      g.memory_mib = static_cast<int64_t>(readings[i].mem_total_bytes >> 20);
      g.numa_node = readings[i].numa_node;
      g.pci_bus_id = readings[i].pci_bus_id;
      g.nvlink_peers = peers[i];
      node.gpus.push_back(std::move(g));
    }
    return absl::OkStatus();
  }

  absl::Status Sample(double, Profile* profile) override {
    NodeProfile& node = profile->nodes[node_index_];
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      GpuInfo& g = node.gpus[i];
      auto r = lib_->Read(static_cast<int>(i));
      auto opt = [](double v) { return v < 0 ? Missing() : v; };
      if (!r.ok()) {
        for (auto* s : {&g.util_pct, &g.mem_used_mib, &g.mem_bw_util_pct, &g.pcie_rx_mib_s,
                        &g.pcie_tx_mib_s, &g.power_w}) {
          s->push_back(Missing());
        }
        continue;
      }
      g.util_pct.push_back(r->util_pct);
      g.mem_used_mib.push_back(static_cast<double>(r->mem_used_bytes) / (1 << 20));
      g.mem_bw_util_pct.push_back(r->mem_bw_util_pct);
      g.pcie_rx_mib_s.push_back(opt(r->pcie_rx_mib_s));
      g.pcie_tx_mib_s.push_back(opt(r->pcie_tx_mib_s));
      g.power_w.push_back(opt(r->power_w));
    }
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<internal::NvmlLibrary> lib_;
  std::string node_name_;
  size_t node_index_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Collector>> NewNvmlCollector(std::string node_name) {
  auto lib = internal::NvmlLibrary::Load();
  if (!lib.ok()) return lib.status();
  if ((*lib)->DeviceCount() == 0) return absl::NotFoundError("NVML: no NVIDIA GPU found");
  return std::unique_ptr<Collector>(new NvmlCollector(std::move(*lib), std::move(node_name)));
}

absl::StatusOr<std::vector<LocalGpu>> ListNvmlGpus() {
  auto lib = internal::NvmlLibrary::Load();
  if (!lib.ok()) return lib.status();
  if ((*lib)->DeviceCount() == 0) return absl::NotFoundError("NVML: no NVIDIA GPU found");
  std::vector<internal::NvmlReading> readings((*lib)->DeviceCount());
  std::vector<LocalGpu> gpus(readings.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].index = static_cast<int>(i);
    auto r = (*lib)->Read(static_cast<int>(i));
    if (!r.ok()) {
      gpus[i].healthy = false;
      continue;
    }
    readings[i] = *r;
    gpus[i].name = r->name;
    gpus[i].uuid = r->uuid;
    gpus[i].pci_bus_id = r->pci_bus_id;
    gpus[i].numa_node = r->numa_node;
    gpus[i].memory_mib = static_cast<int64_t>(r->mem_total_bytes >> 20);
  }
  const auto peers = (*lib)->NvlinkPeers(readings);
  for (size_t i = 0; i < gpus.size() && i < peers.size(); ++i) gpus[i].nvlink_peers = peers[i];
  return gpus;
}

}  // namespace seedance::telemetry
