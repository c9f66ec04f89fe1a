// Internal: NVIDIA Management Library loaded at run time with dlopen("libnvidia-ml.so.1"), so that
// Seedance builds and runs without the NVIDIA driver. Only the few functions used are declared
// here, with the signatures of NVML's public header (nvml.h, API version 11+).
//
// Thread-safety: NVML itself is thread-safe; one NvmlLibrary may be shared.
#ifndef SEEDANCE_TELEMETRY_NVML_H_
#define SEEDANCE_TELEMETRY_NVML_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::telemetry::internal {

// One reading of one GPU.
struct NvmlReading {
  std::string name;
  std::string uuid;
  std::string pci_bus_id;  // lower case, "0000:3b:00.0"
  int numa_node = -1;      // from sysfs; -1 if unknown
  double util_pct = 0;     // SM busy
  double mem_bw_util_pct = 0;
  uint64_t mem_total_bytes = 0;
  uint64_t mem_used_bytes = 0;
  double pcie_rx_mib_s = -1;  // -1 = not supported
  double pcie_tx_mib_s = -1;
  double power_w = -1;
  int nvlinks_active = 0;
  std::vector<std::string> nvlink_remote_bus_ids;  // one per active link, lower case
};

class NvmlLibrary {
 public:
  // NotFound if the library is absent or nvmlInit fails; the message says which.
  static absl::StatusOr<std::shared_ptr<NvmlLibrary>> Load();
  ~NvmlLibrary();

  int DeviceCount() const { return count_; }
  absl::StatusOr<NvmlReading> Read(int index) const;
  // NVLink peers of each device as device indices (links to non-GPU endpoints such as NVSwitch
  // are reported as peers to every GPU behind the same switch: all GPUs with a switch link).
  std::vector<std::vector<int>> NvlinkPeers(const std::vector<NvmlReading>& readings) const;

  struct Api;

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  int count_ = 0;
};

}  // namespace seedance::telemetry::internal

#endif  // SEEDANCE_TELEMETRY_NVML_H_
