// Unified Resource Descriptor (URD): one typed description of a cluster's hardware.
//
// A ClusterDescriptor lists the cluster's GPU models (memory, price, power) and its nodes. A node
// lists its NUMA nodes (the node's CPU and memory capacity, and the distances between them) and
// its devices (CPU, GPU, NPU, FPGA), each with named integer capacities (cores, memory_mib,
// gpu_milli, lut_count, bandwidth_gbps, ...), a binding (NUMA node, PCI address), an access
// latency and, for GPUs, an optional NVLink group. Descriptors are read from and written to JSON
// and YAML; docs/formats.md holds the schema. Parsing validates, and every error message names
// the source, the line (YAML only) and the field path, e.g.
//   cluster.yaml:42: nodes[3].devices[1].capacity.gpu_milli: must be >= 0 (got -5)
// For every descriptor d that passes Validate, ParseClusterJson(ToJson(d)) == d and
// ParseClusterYaml(ToYaml(d)) == d. A node converts to the scheduler's NodeSpec with
// NodeDescriptor::ToNodeSpec.
//
// Thread-safety: all functions are pure (no global or hidden state) and may be called
// concurrently; the structs are plain values.
#ifndef SEEDANCE_CORE_RESOURCE_DESCRIPTOR_H_
#define SEEDANCE_CORE_RESOURCE_DESCRIPTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "seedance/core/cluster_state.h"

namespace seedance::core {

enum class DeviceType { kCpu, kGpu, kNpu, kFpga };

// "cpu", "gpu", "npu", "fpga".
std::string_view DeviceTypeName(DeviceType type);
// Inverse of DeviceTypeName (exact, lower case); nullopt for any other name.
std::optional<DeviceType> DeviceTypeFromName(std::string_view name);

// Well-known capacity names. Capacities are open-ended: any non-empty name is allowed.
inline constexpr std::string_view kCapacityCores = "cores";
inline constexpr std::string_view kCapacityMemoryMib = "memory_mib";
inline constexpr std::string_view kCapacityGpuMilli = "gpu_milli";
inline constexpr std::string_view kCapacityLutCount = "lut_count";
inline constexpr std::string_view kCapacityBandwidthGbps = "bandwidth_gbps";

// Where a device is attached.
struct Binding {
  int numa_node = -1;       // id of a NumaNode of the same node; -1 = unknown
  std::string pci_address;  // "0000:3b:00.0" (domain:bus:device.function, hex); empty = unknown
  // The PCIe switch the device sits under (any name, unique within its node); empty = unknown.
  std::string pcie_switch;

  bool operator==(const Binding&) const = default;
};

struct Device {
  std::string id;  // unique within its node
  DeviceType type = DeviceType::kCpu;
  // For GPUs, a key of ClusterDescriptor::gpu_models (required); free text for other types.
  std::string model;
  // Named non-negative capacities. A GPU has memory_mib (required) and gpu_milli (1..1000; the
  // parsers fill in 1000 when it is absent).
  std::map<std::string, int64_t> capacity;
  Binding binding;
  int64_t latency_us = 0;    // access latency from its NUMA node
  std::string nvlink_group;  // GPUs only; empty = none. One group lives on one node.

  // capacity[key], or `fallback` when the device has no such capacity.
  int64_t CapacityOr(const std::string& key, int64_t fallback) const;

  bool operator==(const Device&) const = default;
};

struct NumaNode {
  int id = 0;  // unique within its node, >= 0
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  // Empty, or one entry per NUMA node of the same node, in the order of
  // NodeDescriptor::numa_nodes (the SLIT convention: 10 = local).
  std::vector<int> distances;

  bool operator==(const NumaNode&) const = default;
};

struct ClusterDescriptor;

struct NodeDescriptor {
  std::string name;  // unique within the cluster
  // At least one. The node's CPU and memory capacity is the sum over its NUMA nodes; CPU
  // devices describe processors (model, cores) for binding and latency only.
  std::vector<NumaNode> numa_nodes;
  std::vector<Device> devices;
  std::map<std::string, std::string> labels;

  // Sum of the NUMA nodes' cpu_milli.
  int64_t CpuMilli() const;
  // Sum of the NUMA nodes' memory_mib.
  int64_t MemoryMib() const;
  // Number of devices of type kGpu.
  int32_t NumGpus() const;
  // The model shared by all the node's GPUs; "" for a node without GPUs. InvalidArgument if the
  // node mixes GPU models.
  absl::StatusOr<std::string> GpuModel() const;

  // The scheduler's view of this node: name, CpuMilli, MemoryMib, NumGpus, GpuModel,
  // cost_usd_per_hour / power_w = the GPU model's price / power times the number of GPUs,
  // device_memory_mib = the model's memory_mib, the labels, and the topology: every NUMA node
  // (id, cpu_milli, memory_mib) and, per GPU in device order (the i-th GPU device is GPU i of the
  // NodeSpec), its NUMA node, NVLink group and PCI address. No taints (the descriptor has none).
  // A node with NPUs and no GPUs converts to an NPU node (NodeSpec::npu): its NPUs counted and
  // placed as above, their model priced from gpu_models when listed there (else cost 0), and
  // device_memory_mib from gpu_models or the first NPU's memory_mib capacity. A node with both
  // counts its GPUs; its NPUs, as its FPGAs, are description only.
  // Fails if the node mixes GPU (or NPU) models, has more than kMaxGpusPerNode of them, or names
  // a GPU model missing from cluster.gpu_models.
  // REQUIRES: the descriptor passed Validate (sums must not overflow).
  absl::StatusOr<NodeSpec> ToNodeSpec(const ClusterDescriptor& cluster) const;

  bool operator==(const NodeDescriptor&) const = default;
};

struct GpuModelInfo {
  std::string name;  // equals its key in ClusterDescriptor::gpu_models
  int64_t memory_mib = 0;
  double price_usd_per_hour = 0.0;
  double power_w = 0.0;

  bool operator==(const GpuModelInfo&) const = default;
};

struct ClusterDescriptor {
  std::string name;
  std::map<std::string, GpuModelInfo> gpu_models;  // by model name
  std::vector<NodeDescriptor> nodes;

  bool operator==(const ClusterDescriptor&) const = default;
};

// Limits on what a descriptor may make the parsers do, so a small hostile file cannot exhaust
// memory or stack: nesting deeper than kMaxDescriptorDepth levels of mappings/sequences (JSON
// objects/arrays) is refused, and so is a YAML document that, with every alias expanded (each
// use of an alias counts the whole subtree it names), has more than the larger of
// kMaxDescriptorNodes and the text's size in bytes nodes. Both are InvalidArgument naming the
// source and the line (YAML) or the field path (JSON).
inline constexpr int kMaxDescriptorDepth = 64;
inline constexpr int64_t kMaxDescriptorNodes = 1'000'000;

// Parses and validates a cluster descriptor. `source` (usually the file name) prefixes every
// error message. Errors are InvalidArgument; all problems found are reported, one per line.
// Values quoted in messages are clipped.
[[nodiscard]] absl::StatusOr<ClusterDescriptor> ParseClusterJson(std::string_view text,
                                                                 std::string_view source);
[[nodiscard]] absl::StatusOr<ClusterDescriptor> ParseClusterYaml(std::string_view text,
                                                                 std::string_view source);
// One node of a descriptor (an element of `nodes`, already parsed from JSON: duplicate keys and
// nesting depth are the caller's to refuse) with the GPU models it may use (`gpu_models` as in
// the descriptor, or nullptr for none), read and validated by the rules of ParseClusterJson.
// Error paths start at `path`: with "$", "$.devices[0].model" and "$.gpu_models.A100.power_w".
// Returns a descriptor holding exactly that node and those models (for the API's node bodies).
[[nodiscard]] absl::StatusOr<ClusterDescriptor> ParseNodeDescriptorJson(
    const nlohmann::ordered_json& node, const nlohmann::ordered_json* gpu_models,
    std::string_view path);
// The limits above (depth, alias-expanded size) checked over every document of a YAML text
// before any tree is built, for other YAML readers: InvalidArgument "SOURCE:LINE: message"
// (also for YAML that does not parse).
[[nodiscard]] absl::Status CheckYamlLimits(std::string_view text, std::string_view source);
// Reads `path` with base::ReadInput (kind kDescriptor: a 64 MiB cap by default, directories and
// endless devices refused) and parses it by extension: .json, or .yaml / .yml. Read errors keep
// ReadInput's codes (NotFound for a missing file); InvalidArgument for any other extension or bad
// content.
[[nodiscard]] absl::StatusOr<ClusterDescriptor> LoadClusterDescriptor(const std::string& path);

// Pretty JSON (2-space indent, trailing newline). Fields equal to their defaults are omitted.
std::string ToJson(const ClusterDescriptor& cluster);
// Block-style YAML in the layout of docs/formats.md. Fields equal to their defaults are omitted.
std::string ToYaml(const ClusterDescriptor& cluster);

// Checks every rule of docs/formats.md (unique names and ids, NUMA bindings, GPU models,
// non-negative capacities, NVLink groups, ...). Messages name the field path, one per line.
[[nodiscard]] absl::Status Validate(const ClusterDescriptor& cluster);

// ToNodeSpec of every node, in order; the first failure is returned.
[[nodiscard]] absl::StatusOr<std::vector<NodeSpec>> ToNodeSpecs(const ClusterDescriptor& cluster);

}  // namespace seedance::core

#endif  // SEEDANCE_CORE_RESOURCE_DESCRIPTOR_H_
