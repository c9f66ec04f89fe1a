// A resource profile: what `seedance profile` records and `seedance analyze` reads.
//
// A Profile holds a fixed timeline (sample times) and, per node, its static description (CPU,
// memory, NUMA nodes, hwloc topology, GPUs with their NUMA node and NVLink peers), one value per
// sample for each measured series, and the pods running there with their requests. Pods waiting
// for a node are listed separately. Series are aligned with the timeline: series[i] is the value
// at timestamps_s[i]; a value that could not be measured is NaN (JSON null).
//
// The JSON form is versioned (kProfileFormatVersion) and documented in docs/formats/profile.md.
// ParseProfileJson reports the first problem with the file name and the JSON path of the
// offending value, e.g. "p.json: $.nodes[3].gpus[0].util_pct[7]: expected number"; a syntax error
// (truncated file) names the byte offset and the JSON path of the value being read.
//
// Thread-safety: plain values and pure functions.
#ifndef SEEDANCE_TELEMETRY_PROFILE_H_
#define SEEDANCE_TELEMETRY_PROFILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::telemetry {

inline constexpr int kProfileFormatVersion = 1;
// The schema_version every profile written since the hardening release carries (optional when
// read; older profiles have only `version`).
inline constexpr char kProfileSchemaVersion[] = "profile/v1";
// Most samples a profile may plan (duration / interval); `seedance profile` refuses more up front
// so that no flag can make the sampling loop or its series unbounded.
inline constexpr size_t kMaxProfileSamples = 10'000'000;

// A series value that was not measured.
double Missing();
bool IsMissing(double v);

struct NumaNodeInfo {
  int id = 0;
  std::string cpus;  // kernel cpulist form, "0-3,8-11"
  int64_t memory_mib = 0;
  std::vector<double> mem_used_mib;  // series; may be empty
};

// A PCI device seen by hwloc (GPUs, NICs, NVMe, ...).
struct PciDeviceInfo {
  std::string bus_id;  // "0000:3b:00.0"
  std::string kind;    // "gpu", "network", "storage", "other"
  std::string name;    // hwloc's name when known
  int numa_node = -1;
};

// The node's hardware topology as hwloc reports it (local profiles only).
struct TopologyInfo {
  int packages = 0;
  int cores = 0;
  int pus = 0;  // hardware threads
  std::vector<PciDeviceInfo> pci_devices;
  bool empty() const { return packages == 0 && cores == 0 && pus == 0 && pci_devices.empty(); }
};

struct GpuInfo {
  int index = 0;
  std::string uuid;
  std::string model;  // as reported, e.g. "NVIDIA A100-SXM4-80GB"
  int64_t memory_mib = 0;
  int numa_node = -1;
  std::string pci_bus_id;
  std::vector<int> nvlink_peers;  // indices of GPUs of the same node reachable over NVLink
  // Series (each empty or one value per sample).
  std::vector<double> util_pct;         // SM busy time, 0..100
  std::vector<double> mem_used_mib;     // framebuffer used
  std::vector<double> mem_bw_util_pct;  // memory-controller busy time, 0..100
  std::vector<double> pcie_rx_mib_s;
  std::vector<double> pcie_tx_mib_s;
  std::vector<double> power_w;
};

struct PodInfo {
  std::string name;
  std::string namespace_name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpus = 0;             // GPUs the pod uses
  int32_t gpu_milli = 0;            // per GPU; 1000 for whole GPUs, less for a shared GPU
  std::vector<int> gpu_ids;         // indices of the node's GPUs it runs on; may be empty (unknown)
  std::vector<int> cpu_numa_nodes;  // NUMA nodes of the pod's CPUs; empty = unknown
  std::string gpu_model;            // pending pods: required GPU model, "" = any
};

struct NodeProfile {
  std::string name;
  int cpus = 0;
  int64_t memory_mib = 0;
  std::vector<NumaNodeInfo> numa_nodes;
  TopologyInfo topology;
  std::vector<GpuInfo> gpus;
  std::vector<double> cpu_util_pct;                   // whole node, 0..100
  std::vector<std::vector<double>> per_cpu_util_pct;  // [cpu][sample]; local profiles only
  std::vector<double> mem_used_mib;
  std::vector<PodInfo> pods;

  // The GPU model of the node ("" without GPUs; the first GPU's model otherwise).
  std::string GpuModel() const { return gpus.empty() ? "" : gpus.front().model; }
};

struct Profile {
  int version = kProfileFormatVersion;
  std::string source;       // "local" or "prometheus http://..."
  double start_unix_s = 0;  // time of the first sample
  double interval_s = 1;
  std::vector<double> timestamps_s;  // seconds since start_unix_s, increasing
  std::vector<NodeProfile> nodes;
  std::vector<PodInfo> pending_pods;
  bool interrupted = false;  // the run stopped early (Ctrl-C)

  size_t num_samples() const { return timestamps_s.size(); }
};

// Parses a profile. `source` (usually the file name) prefixes every error message. Errors are
// InvalidArgument and carry the JSON path of the problem. Also checks that every series has
// one value per sample, that values mean something (percentages within 0..100, quantities
// non-negative, times finite), that node names and pods (namespace + name) are unique, and that
// GPU indices in pods and NVLink peers exist.
[[nodiscard]] absl::StatusOr<Profile> ParseProfileJson(std::string_view text,
                                                       std::string_view source);
// Reads (base::ReadInput, kind kProfile: "-" = stdin; a directory or a device that never ends is
// an error naming the path) and parses `path`.
[[nodiscard]] absl::StatusOr<Profile> LoadProfile(const std::string& path);

// Compact JSON (one line per node), trailing newline, starting with base::JsonHeader's keys
// (schema_version "profile/v1", seedance_version, command_line) and then `version`. Strings that
// are not valid UTF-8 are written with U+FFFD. ParseProfileJson(ToJson(p)) == p up to float
// formatting.
std::string ToJson(const Profile& profile);
// Writes ToJson(profile) to `path` with base::WriteOutput ("-" = stdout; a device or FIFO is
// written through, a symlink followed, a regular file replaced atomically).
[[nodiscard]] absl::Status WriteProfile(const Profile& profile, const std::string& path);

}  // namespace seedance::telemetry

#endif  // SEEDANCE_TELEMETRY_PROFILE_H_
