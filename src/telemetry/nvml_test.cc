// Reads every local NVIDIA GPU through NVML (dlopen of libnvidia-ml.so.1) and checks the values
// for sanity; skips where the library is absent. Self-contained: no data files, so the binary can
// be copied to a GPU machine and run there. Prints what it read.
#include "nvml.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "gtest/gtest.h"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace {

using internal::NvmlLibrary;
using internal::NvmlReading;

TEST(NvmlTest, ReadsEveryDeviceWithSaneValues) {
  auto lib = NvmlLibrary::Load();
  if (!lib.ok()) GTEST_SKIP() << lib.status().message();
  const int count = (*lib)->DeviceCount();
  if (count == 0) GTEST_SKIP() << "NVML loaded but reports no device";
  std::vector<NvmlReading> readings;
  for (int i = 0; i < count; ++i) {
    auto r = (*lib)->Read(i);
    ASSERT_TRUE(r.ok()) << r.status();
    readings.push_back(*r);
  }
  const auto peers = (*lib)->NvlinkPeers(readings);
  std::set<std::string> uuids, buses;
  for (int i = 0; i < count; ++i) {
    const NvmlReading& r = readings[i];
    std::printf(
        "GPU %d: %s %s bus %s NUMA %d | util %.0f%% mem-bw %.0f%% | mem %.0f/%.0f MiB | PCIe rx "
        "%.1f tx %.1f MiB/s | power %.1f W | %d NVLinks, peers:",
        i, r.name.c_str(), r.uuid.c_str(), r.pci_bus_id.c_str(), r.numa_node, r.util_pct,
        r.mem_bw_util_pct, r.mem_used_bytes / 1048576.0, r.mem_total_bytes / 1048576.0,
        r.pcie_rx_mib_s, r.pcie_tx_mib_s, r.power_w, r.nvlinks_active);
    for (int p : peers[i]) std::printf(" %d", p);
    std::printf("\n");
    EXPECT_FALSE(r.name.empty());
    EXPECT_TRUE(uuids.insert(r.uuid).second) << "duplicate UUID " << r.uuid;
    EXPECT_EQ(r.pci_bus_id.size(), 12u) << r.pci_bus_id;
    EXPECT_TRUE(buses.insert(r.pci_bus_id).second);
    EXPECT_GE(r.util_pct, 0);
    EXPECT_LE(r.util_pct, 100);
    EXPECT_GE(r.mem_bw_util_pct, 0);
    EXPECT_LE(r.mem_bw_util_pct, 100);
    EXPECT_GT(r.mem_total_bytes, uint64_t{1} << 30) << "less than 1 GiB of GPU memory";
    EXPECT_LE(r.mem_used_bytes, r.mem_total_bytes);
    if (r.power_w >= 0) {
      EXPECT_GT(r.power_w, 1);
      EXPECT_LT(r.power_w, 2000);
    }
    // Below 128 GiB/s when supported (-1 = not supported).
    EXPECT_LT(r.pcie_rx_mib_s, 1 << 17);
    EXPECT_LT(r.pcie_tx_mib_s, 1 << 17);
    EXPECT_GE(r.numa_node, -1);
    for (int p : peers[i]) {
      EXPECT_NE(p, i);
      EXPECT_LT(p, count);
      // Links are symmetric.
      EXPECT_NE(std::find(peers[p].begin(), peers[p].end(), i), peers[p].end()) << i << "-" << p;
    }
    if (r.nvlinks_active == 0) {
      EXPECT_TRUE(peers[i].empty());
    }
  }
}

TEST(NvmlTest, CollectorFillsOneValuePerSampleForEveryGpu) {
  auto c = NewNvmlCollector("gpu-node");
  if (!c.ok()) GTEST_SKIP() << c.status().message();
  Profile p;
  ASSERT_TRUE((*c)->Describe(&p).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*c)->Sample(0, &p).ok());
    p.timestamps_s.push_back(i);
  }
  ASSERT_EQ(p.nodes.size(), 1u);
  ASSERT_FALSE(p.nodes[0].gpus.empty());
  for (const GpuInfo& g : p.nodes[0].gpus) {
    EXPECT_EQ(g.util_pct.size(), 3u);
    EXPECT_EQ(g.mem_used_mib.size(), 3u);
    EXPECT_GT(g.memory_mib, 1024);
  }
  // The profile survives its own format.
  auto back = ParseProfileJson(ToJson(p), "nvml");
  EXPECT_TRUE(back.ok()) << back.status();
}

TEST(NvmlTest, AbsentLibraryIsNotFoundNotACrash) {
  auto lib = NvmlLibrary::Load();
  if (lib.ok()) GTEST_SKIP() << "NVML present here";
  EXPECT_EQ(lib.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(lib.status().message()).find("libnvidia-ml.so.1"), std::string::npos);
}

}  // namespace
}  // namespace seedance::telemetry
