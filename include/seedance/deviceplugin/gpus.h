// The GPUs a device plugin hands out, and the slice devices it advertises for them.
//
// Every GPU is advertised to the kubelet as `slices_per_gpu` devices with the IDs
// "<GPU UUID>::<k>", k = 0 .. slices_per_gpu-1 (at most 63 characters, the kubelet's limit). A
// container that asks for N devices of the plugin's resource gets N slices; N is the number of
// GPUs it shares, as HAMi's `nvidia.com/gpu` is (its share of each is the scheduler's decision,
// in the pod's seedance.io/gpus annotation). With slices_per_gpu = 1 each device is a whole GPU.
//
// GPUs come from NVML (ListNvmlGpus, through the dlopen'ed library) or are made up
// (FakeGpus, for tests and CI): fake GPUs have the UUIDs "GPU-fake-<node>-<i>" and are spread
// over `numa_nodes` NUMA nodes in order (GPUs 0..n/2-1 on node 0, the rest on node 1 for two).
//
// Thread-safety: plain values and functions.
#ifndef SEEDANCE_DEVICEPLUGIN_GPUS_H_
#define SEEDANCE_DEVICEPLUGIN_GPUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::deviceplugin {

inline constexpr int kMaxSlicesPerGpu = 100;
inline constexpr size_t kMaxDeviceIdLength = 63;  // the kubelet's limit

struct Gpu {
  int index = 0;     // position in PCI bus order, NVML's index
  int minor = 0;     // /dev/nvidiaN (NVML's index order is the minor order on a plain machine)
  std::string uuid;  // "GPU-..."
  std::string model;
  int64_t memory_mib = 0;
  int numa_node = -1;        // -1 = unknown
  std::string nvlink_group;  // GPUs sharing a non-empty group are NVLink-connected
  std::string pci_bus_id;
};

struct FakeGpuOptions {
  int count = 0;  // 1 .. core::kMaxGpusPerNode
  std::string model = "NVIDIA-A100-SXM4-80GB";
  int64_t memory_mib = 81920;
  int numa_nodes = 1;              // 1 .. count
  std::string node_name = "node";  // part of the UUIDs
  bool nvlink = true;              // all in one NVLink group (an NVSwitch machine)
};
// InvalidArgument for a count, memory or NUMA count out of range.
[[nodiscard]] absl::StatusOr<std::vector<Gpu>> FakeGpus(const FakeGpuOptions& options);

// The machine's GPUs from NVML. NotFound without the library or without GPUs; a GPU NVML
// cannot read is an error (the plugin cannot advertise a device it cannot name).
[[nodiscard]] absl::StatusOr<std::vector<Gpu>> NvmlGpus();

// Which of `gpus` NVML still reads, by UUID (all false when NVML cannot be loaded).
std::vector<bool> NvmlHealth(const std::vector<Gpu>& gpus);

// "<uuid>::<slice>".
std::string SliceId(const Gpu& gpu, int slice);
// The GPU (index into `gpus`) and slice of a device ID; InvalidArgument naming the ID when it is
// not one of this plugin's (unknown UUID, slice out of range, malformed).
[[nodiscard]] absl::StatusOr<int> GpuOfDevice(const std::vector<Gpu>& gpus, int slices_per_gpu,
                                              std::string_view id);
// InvalidArgument when a UUID is empty, repeated, or too long for its slice IDs.
[[nodiscard]] absl::Status ValidateGpus(const std::vector<Gpu>& gpus, int slices_per_gpu);

// The one node of `gpus` as the scheduler core describes it (model, NUMA nodes, NVLink groups),
// for the topology-aware GPU chooser.
core::NodeSpec NodeOf(const std::vector<Gpu>& gpus, const std::string& node_name);

}  // namespace seedance::deviceplugin

#endif  // SEEDANCE_DEVICEPLUGIN_GPUS_H_
