#include "seedance/hw/catalog.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace seedance::hw {
namespace {

// Sources of the figures (vendor datasheets, dense tensor-core numbers without 2:4 sparsity):
//  A100 40GB/80GB SXM: NVIDIA A100 Tensor Core GPU datasheet (2021): BF16 312, INT8 624, no FP8;
//    HBM2 1555 GB/s (40 GB), HBM2e 2039 GB/s (80 GB); NVLink 3 600 GB/s (12 links x 25 GB/s
//    per direction: 300 GB/s each way), PCIe Gen4 x16 31.5 GB/s per direction.
//  H100 SXM5: NVIDIA H100 Tensor Core GPU datasheet (2023): BF16 989, FP8/INT8 1979, HBM3 3350
//    GB/s, NVLink 4 900 GB/s (450 each way), PCIe Gen5 x16 63 GB/s per direction.
//  H200 SXM: NVIDIA H200 datasheet (2024): compute as H100, HBM3e 4800 GB/s, 141 GB, NVLink 900.
//  H800 and H20 (Hopper parts for the Chinese market): modelled with H100's link generation.
//  L40S: NVIDIA L40S datasheet (2023): BF16 362, FP8 733, GDDR6 864 GB/s, 48 GB, PCIe Gen4 x16
//    (64 GB/s both directions).
//  A10: NVIDIA A10 datasheet (2021): BF16 125, INT8 250, GDDR6 600 GB/s, 24 GB, PCIe Gen4 x16.
//  T4: NVIDIA T4 datasheet (2019): FP16 65 (no BF16), INT8 130, GDDR6 320 GB/s, 16 GB, PCIe
//    Gen3 x16 (32 GB/s both directions).
//  V100 SXM2: NVIDIA V100 datasheet (2020): NVLink 2 300 GB/s (150 each way), PCIe Gen3 x16
//    15.75 GB/s per direction; 16 or 32 GB (one entry: no user tells them apart).
//  Ascend 910B and 910 (Huawei NPUs): memory only (64 GB HBM2e and 32 GB HBM2, Huawei's product
//    pages); no compute figure or price is given here, as no datasheet or on-demand list price
//    of the kind cited above is public. A federation's member file prices them per hour.
//
// Prices, USD per GPU-hour, on demand:
//  GCP: Compute Engine GPU pricing, us-central1, the GPU part of the VM price (for A3/H100 the
//    whole a3-highgpu-8g VM divided by 8), read 2024
//    (https://cloud.google.com/compute/gpus-pricing).
//  AWS: EC2 on-demand us-east-1 (2024), the whole one-GPU instance: g5.xlarge (A10G) 1.006,
//    g6e.xlarge (L40S) 1.861.
//  Parts neither lists are priced as their closest listed part, said in their price_source.
constexpr const char kGcp[] = "GCP us-central1 on-demand GPU price, read 2024";
constexpr const char kAws[] = "AWS us-east-1 on-demand one-GPU instance, read 2024";

GpuModel Gpu(std::string name, std::vector<std::string> tags, std::string description, Arch arch,
             double memory_gib) {
  GpuModel g;
  g.name = std::move(name);
  g.tags = std::move(tags);
  g.description = std::move(description);
  g.arch = arch;
  g.memory_gib = memory_gib;
  g.bf16 = arch == Arch::kAmpere || arch == Arch::kAda || arch == Arch::kHopper;
  g.fp8 = arch == Arch::kAda || arch == Arch::kHopper;
  return g;
}

GpuModel& Compute(GpuModel& g, double bf16, double fp8, double int8, double bandwidth,
                  double interconnect) {
  g.tflops_bf16 = bf16;
  g.tflops_fp8 = fp8;
  g.tops_int8 = int8;
  g.mem_bandwidth_gbps = bandwidth;
  g.interconnect_gbps = interconnect;
  return g;
}

GpuModel& Links(GpuModel& g, double nvlink, double pcie) {
  g.nvlink_gbps_per_direction = nvlink;
  g.pcie_gbps_per_direction = pcie;
  return g;
}

GpuModel& Price(GpuModel& g, double usd, std::string source) {
  g.usd_per_hour = usd;
  g.price_source = std::move(source);
  return g;
}

std::vector<GpuModel> Hopper() {
  GpuModel h200 = Gpu("H200", {"H200"}, "NVIDIA H200 SXM", Arch::kHopper, 141);
  Links(Compute(h200, 989, 1979, 1979, 4800, 900), 450, 63);
  GpuModel h100 = Gpu("H100", {"H100"}, "NVIDIA H100 SXM5", Arch::kHopper, 80);
  Price(Links(Compute(h100, 989, 1979, 1979, 3350, 900), 450, 63), 11.06,
        std::string(kGcp) + " (a3-highgpu-8g / 8)");
  GpuModel h800 = Gpu("H800", {"H800"}, "NVIDIA H800 (Hopper, China)", Arch::kHopper, 80);
  Price(Links(h800, 450, 63), 11.06, "no public list price: priced as H100 (the same die)");
  GpuModel h20 = Gpu("H20", {"H20"}, "NVIDIA H20 (Hopper, China)", Arch::kHopper, 96);
  Links(h20, 450, 63);
  return {h200, h100, h800, h20};
}

std::vector<GpuModel> Ampere() {
  GpuModel a100_80 = Gpu("A100-80GB", {"A100", "80G"}, "NVIDIA A100 80GB", Arch::kAmpere, 80);
  a100_80.aliases = {"a100-80g"};
  Price(Links(Compute(a100_80, 312, 0, 624, 2039, 600), 300, 31.5), 3.93, kGcp);
  GpuModel a100_40 = Gpu("A100-40GB", {"A100"}, "NVIDIA A100 40GB", Arch::kAmpere, 40);
  Price(Links(Compute(a100_40, 312, 0, 624, 1555, 600), 300, 31.5), 2.93, kGcp);
  GpuModel a800 = Gpu("A800", {"A800"}, "NVIDIA A800 (Ampere, China)", Arch::kAmpere, 40);
  Price(Links(a800, 300, 31.5), 2.93, "no public list price: priced as A100-40GB");
  return {a100_80, a100_40, a800};
}

std::vector<GpuModel> Pcie() {
  GpuModel l40s = Gpu("L40S", {"L40S"}, "NVIDIA L40S", Arch::kAda, 48);
  Price(Compute(l40s, 362, 733, 733, 864, 64), 1.861, std::string(kAws) + " (g6e.xlarge)");
  GpuModel l40 = Gpu("L40", {"L40"}, "NVIDIA L40", Arch::kAda, 48);
  GpuModel a10g = Gpu("A10G", {"A10G"}, "NVIDIA A10G (AWS)", Arch::kAmpere, 24);
  Price(a10g, 1.006, std::string(kAws) + " (g5.xlarge)");
  GpuModel a10 = Gpu("A10", {"A10"}, "NVIDIA A10", Arch::kAmpere, 24);
  Price(Compute(a10, 125, 0, 250, 600, 64), 1.006,
        "no GPU-hour list price: priced as A10G (AWS g5.xlarge), the same GA102 part");
  GpuModel l4 = Gpu("L4", {"L4"}, "NVIDIA L4", Arch::kAda, 24);
  Price(l4, 0.56, kGcp);
  return {l40s, l40, a10g, a10, l4};
}

std::vector<GpuModel> Older() {
  GpuModel v100 = Gpu("V100", {"V100"}, "NVIDIA V100 (16 or 32 GB)", Arch::kVolta, 16);
  Price(Links(v100, 150, 15.75), 2.48, kGcp);
  GpuModel p100 = Gpu("P100", {"P100"}, "NVIDIA P100", Arch::kPascal, 16);
  Price(p100, 1.46, kGcp);
  GpuModel t4 = Gpu("T4", {"T4"}, "NVIDIA T4", Arch::kTuring, 16);
  Price(Compute(t4, 65, 0, 130, 320, 32), 0.35, kGcp);
  GpuModel p4 = Gpu("P4", {"P4"}, "NVIDIA P4", Arch::kPascal, 8);
  Price(p4, 0.60, kGcp);
  return {v100, p100, t4, p4};
}

// The Alibaba GPU trace names three models only as G1-G3; they are matched by exact name only and
// priced as the public parts of their generation.
std::vector<GpuModel> Undisclosed() {
  std::vector<GpuModel> out;
  const struct {
    const char* name;
    const char* like;
    double usd;
  } kParts[] = {{"G1", "P100", 1.46}, {"G2", "V100", 2.48}, {"G3", "V100", 2.48}};
  for (const auto& p : kParts) {
    GpuModel g = Gpu(p.name, {}, "undisclosed model of the Alibaba GPU trace", Arch::kUnknown, 0);
    Price(g, p.usd, std::string("undisclosed part: priced as ") + p.like);
    out.push_back(g);
  }
  return out;
}

std::vector<GpuModel> Npus() {
  GpuModel b = Gpu("Ascend910B", {"910B"}, "Huawei Ascend 910B NPU", Arch::kUnknown, 64);
  b.aliases = {"ascend-910b", "910b"};
  GpuModel a = Gpu("Ascend910", {"ASCEND", "910"}, "Huawei Ascend 910 NPU", Arch::kUnknown, 32);
  a.aliases = {"ascend-910"};
  for (GpuModel* g : {&b, &a}) {
    g->kind = DeviceKind::kNpu;
    g->int8 = false;  // no tensor-core figures recorded (see above)
  }
  return {b, a};
}

std::vector<GpuModel> Build() {
  std::vector<GpuModel> all;
  for (auto part : {Hopper(), Ampere(), Pcie(), Older(), Undisclosed(), Npus()}) {
    for (GpuModel& g : part) all.push_back(std::move(g));
  }
  return all;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::span<const GpuModel> Gpus() {
  static const std::vector<GpuModel> kAll = Build();
  return kAll;
}

const GpuModel* Find(std::string_view name) {
  // Exact names and aliases, upper-cased once: Find runs per placement in the topology model.
  static const std::vector<std::pair<std::string, const GpuModel*>> kExact = [] {
    std::vector<std::pair<std::string, const GpuModel*>> out;
    for (const GpuModel& g : Gpus()) {
      out.emplace_back(Upper(g.name), &g);
      for (const std::string& a : g.aliases) out.emplace_back(Upper(a), &g);
    }
    return out;
  }();
  const std::string up = Upper(name);
  for (const auto& [exact, g] : kExact) {
    if (exact == up) return g;
  }
  for (const GpuModel& g : Gpus()) {
    if (g.tags.empty()) continue;
    const bool all = std::all_of(g.tags.begin(), g.tags.end(), [&](const std::string& t) {
      return up.find(t) != std::string::npos;
    });
    if (all) return &g;
  }
  return nullptr;
}

std::string CanonicalName(std::string_view reported) {
  if (const GpuModel* g = Find(reported)) return g->name;
  std::string out = Upper(reported);
  std::replace(out.begin(), out.end(), ' ', '-');
  return out;
}

std::string_view PriceSources() {
  return "built-in: GCP us-central1 on-demand GPU prices (A100/H100/L4/V100/P100/T4/P4) and "
         "AWS us-east-1 on-demand (A10G g5.xlarge, L40S g6e.xlarge), read 2024; H800, A800, A10 "
         "and the Alibaba trace's G1-G3 priced as their closest listed part";
}

}  // namespace seedance::hw
