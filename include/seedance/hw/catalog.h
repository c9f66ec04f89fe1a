// The hardware catalog: every accelerator model Seedance knows (GPUs and NPUs), once.
//
// Each entry holds the model's canonical name and the names it is reported under, its memory,
// dense tensor-core throughput per data type, memory bandwidth, interconnect, the data types its
// tensor cores run, and a default on-demand price with its source. Every library that needs a
// fact about a GPU model reads it here: the GPU cost model and precision binder (model/; compute,
// bandwidth, data types), the cost analysis and the simulator (prices), the topology model
// (NVLink and PCIe per-direction bandwidth). A figure the vendor does not publish, or that no
// user needs, is 0; a price nobody published is absent.
//
// Names. `Find` takes any spelling a user, a trace or a driver reports:
//  - the canonical name or an alias, case-insensitive ("h100", "a100-80g", "G2");
//  - otherwise a name that contains a model's tag: "NVIDIA A100-SXM4-80GB" -> A100-80GB,
//    "Tesla V100-SXM2-16GB" -> V100, "NVIDIA H100 80GB HBM3" -> H100. Tags are tried in catalog
//    order, longer names first (H200 before H20, A100 before A10, L40S before L40 before L4).
// Anything else is not found (nullptr).
//
// Thread-safety: the catalog is immutable after its first use; every function may be called from
// any thread.
#ifndef SEEDANCE_HW_CATALOG_H_
#define SEEDANCE_HW_CATALOG_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace seedance::hw {

enum class Arch { kUnknown, kPascal, kVolta, kTuring, kAmpere, kAda, kHopper };

// What kind of accelerator a model is. NPUs (Huawei Ascend) sit in the same catalog and the same
// node slots as GPUs; a scheduler keeps pods that ask for one kind off nodes of the other
// (core::ClusterState::PodModelMask).
enum class DeviceKind { kGpu, kNpu };

struct GpuModel {
  std::string name;                  // canonical: "H100", "A100-80GB", "L40S"
  std::vector<std::string> aliases;  // exact alternative names (case-insensitive)
  // Substrings (upper case) that identify the model inside a reported name; all must occur.
  std::vector<std::string> tags;
  std::string description;
  DeviceKind kind = DeviceKind::kGpu;
  Arch arch = Arch::kUnknown;  // kUnknown for NPUs
  double memory_gib = 0;
  // Dense (no 2:4 sparsity) tensor-core throughput, TFLOP/s or TOP/s; 0 = not published here.
  double tflops_bf16 = 0;  // BF16 (FP16 on parts without BF16)
  double tflops_fp8 = 0;   // 0 where the part has no FP8 tensor cores
  double tops_int8 = 0;
  double mem_bandwidth_gbps = 0;  // HBM/GDDR, GB/s
  // Per-GPU NVLink (or PCIe x16) bandwidth, both directions together, GB/s: the figure the
  // GPU cost model's all-reduce fits are made against.
  double interconnect_gbps = 0;
  // Per-direction link bandwidth the topology model uses for rings (0: not modelled, the topology
  // model's default generation applies).
  double nvlink_gbps_per_direction = 0;
  double pcie_gbps_per_direction = 0;
  // Data types the tensor cores run (FP32 and FP16 everywhere listed).
  bool bf16 = false;
  bool fp8 = false;
  bool int8 = true;
  // Default on-demand price of one GPU-hour and where it comes from.
  std::optional<double> usd_per_hour;
  std::string price_source;
};

// Every model, in matching order.
std::span<const GpuModel> Gpus();

// The model a name denotes (see the header comment), or nullptr.
const GpuModel* Find(std::string_view name);

// The canonical name of `reported`, or, for a name the catalog does not know, the name
// upper-cased with spaces replaced by '-' (so two spellings of one unknown part still meet).
std::string CanonicalName(std::string_view reported);

// Where the built-in prices come from, one line.
std::string_view PriceSources();

}  // namespace seedance::hw

#endif  // SEEDANCE_HW_CATALOG_H_
