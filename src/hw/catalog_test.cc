#include "seedance/hw/catalog.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace seedance::hw {
namespace {

std::string NameOf(std::string_view reported) {
  const GpuModel* g = Find(reported);
  return g == nullptr ? "<none>" : g->name;
}

TEST(CatalogTest, DriverAndExporterNamesFindTheirModel) {
  EXPECT_EQ(NameOf("NVIDIA A100-SXM4-80GB"), "A100-80GB");
  EXPECT_EQ(NameOf("NVIDIA A100-SXM4-40GB"), "A100-40GB");
  EXPECT_EQ(NameOf("NVIDIA A100 80GB PCIe"), "A100-80GB");
  EXPECT_EQ(NameOf("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_EQ(NameOf("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(NameOf("NVIDIA L4"), "L4");
  EXPECT_EQ(NameOf("NVIDIA A10G"), "A10G");
  EXPECT_EQ(NameOf("Tesla T4"), "T4");
}

TEST(CatalogTest, LongerNamesWinOverTheirPrefixes) {
  EXPECT_EQ(NameOf("NVIDIA H200"), "H200");
  EXPECT_EQ(NameOf("NVIDIA H20"), "H20");
  EXPECT_EQ(NameOf("NVIDIA A100"), "A100-40GB");
  EXPECT_EQ(NameOf("NVIDIA A10"), "A10");
  EXPECT_EQ(NameOf("NVIDIA L40S"), "L40S");
  EXPECT_EQ(NameOf("NVIDIA L40"), "L40");
}

TEST(CatalogTest, AliasesAndCanonicalNamesAreCaseInsensitive) {
  EXPECT_EQ(NameOf("a100-80g"), "A100-80GB");
  EXPECT_EQ(NameOf("h100"), "H100");
  EXPECT_EQ(NameOf("l40s"), "L40S");
  EXPECT_EQ(NameOf("V100M32"), "V100");
  EXPECT_EQ(NameOf("V100M16"), "V100");
}

TEST(CatalogTest, TraceOnlyNamesMatchExactlyAndNothingElse) {
  EXPECT_EQ(NameOf("G2"), "G2");
  EXPECT_EQ(NameOf("g3"), "G3");
  EXPECT_EQ(NameOf("G20"), "<none>");
  EXPECT_EQ(NameOf("GPU"), "<none>");
  EXPECT_EQ(NameOf(""), "<none>");
  EXPECT_EQ(NameOf("MI300X"), "<none>");
}

TEST(CatalogTest, AscendNpusAreNpusAndTheirVariantsFindThem) {
  EXPECT_EQ(NameOf("Ascend910B"), "Ascend910B");
  EXPECT_EQ(NameOf("Ascend 910B3"), "Ascend910B");  // as npu-smi reports a 910B part
  EXPECT_EQ(NameOf("910b"), "Ascend910B");
  EXPECT_EQ(NameOf("Ascend910"), "Ascend910");
  EXPECT_EQ(NameOf("Ascend 910"), "Ascend910");
  EXPECT_EQ(NameOf("910"), "<none>");  // a bare number names no part
  EXPECT_EQ(Find("Ascend910B")->kind, DeviceKind::kNpu);
  EXPECT_EQ(Find("Ascend910B")->memory_gib, 64);
  EXPECT_EQ(Find("Ascend910")->kind, DeviceKind::kNpu);
  int npus = 0;
  for (const GpuModel& g : Gpus()) npus += g.kind == DeviceKind::kNpu ? 1 : 0;
  EXPECT_EQ(npus, 2);
  EXPECT_EQ(Find("H100")->kind, DeviceKind::kGpu);
}

TEST(CatalogTest, CanonicalNameKeepsUnknownPartsApartButComparable) {
  EXPECT_EQ(CanonicalName("nvidia a100-sxm4-80gb"), "A100-80GB");
  EXPECT_EQ(CanonicalName("Instinct MI300X"), "INSTINCT-MI300X");
  EXPECT_EQ(CanonicalName("instinct mi300x"), CanonicalName("Instinct MI300X"));
}

TEST(CatalogTest, EveryEntryIsWellFormed) {
  std::set<std::string> names;
  for (const GpuModel& g : Gpus()) {
    SCOPED_TRACE(g.name);
    EXPECT_TRUE(names.insert(g.name).second) << "duplicate";
    for (const std::string& a : g.aliases) EXPECT_TRUE(names.insert(a).second) << a;
    // Every model finds itself, by its own name and by each alias.
    EXPECT_EQ(Find(g.name), &g);
    for (const std::string& a : g.aliases) EXPECT_EQ(Find(a), &g);
    EXPECT_EQ(g.usd_per_hour.has_value(), !g.price_source.empty());
    if (g.usd_per_hour) {
      EXPECT_GT(*g.usd_per_hour, 0);
    }
    // FP8 throughput only where the tensor cores run FP8; compute figures come as a set.
    if (!g.fp8) {
      EXPECT_EQ(g.tflops_fp8, 0);
    }
    if (g.tflops_bf16 > 0) {
      EXPECT_GT(g.mem_bandwidth_gbps, 0);
      EXPECT_GT(g.memory_gib, 0);
      EXPECT_GT(g.interconnect_gbps, 0);
      EXPECT_GT(g.tops_int8, 0);
    }
    EXPECT_EQ(g.nvlink_gbps_per_direction > 0, g.pcie_gbps_per_direction > 0);
  }
}

TEST(CatalogTest, DataTypesFollowTheArchitecture) {
  EXPECT_FALSE(Find("T4")->bf16);
  EXPECT_FALSE(Find("T4")->fp8);
  EXPECT_TRUE(Find("A10")->bf16);
  EXPECT_FALSE(Find("A100-80GB")->fp8);
  EXPECT_TRUE(Find("L40S")->fp8);
  EXPECT_TRUE(Find("H200")->fp8);
}

}  // namespace
}  // namespace seedance::hw
