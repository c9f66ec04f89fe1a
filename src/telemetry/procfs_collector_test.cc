// The procfs collector against the kernel's own counters over the same interval.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace {

struct Stat {
  double busy = 0, total = 0;
};

// Aggregate "cpu" line of /proc/stat: busy = all - idle - iowait (first eight fields).
Stat ReadStat() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double v[8] = {};
  in >> cpu;
  for (double& x : v) in >> x;
  Stat s;
  for (double x : v) s.total += x;
  s.busy = s.total - v[3] - v[4];
  return s;
}

double MeminfoKb(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string k;
  double v = 0;
  std::string unit;
  while (in >> k >> v) {
    std::getline(in, unit);
    if (k == key + ":") return v;
  }
  return -1;
}

TEST(ProcfsCollectorTest, CpuAndMemoryAgreeWithProcOverTheSameInterval) {
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(NewProcfsCollector());
  ProfilerOptions o;
  o.duration_s = 2;
  o.interval_s = 0.5;
  Profiler profiler(std::move(cs), o);
  // The collector's baseline is taken in Describe, right after this reading; the last sample
  // lands just before the reading after Run.
  const Stat before = ReadStat();
  auto p = profiler.Run();
  const Stat after = ReadStat();
  const double mem_total_kb = MeminfoKb("MemTotal");
  const double mem_used_kb = mem_total_kb - MeminfoKb("MemAvailable");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->nodes.size(), 1u);
  const NodeProfile& n = p->nodes[0];
  EXPECT_EQ(p->num_samples(), 4u);
  ASSERT_EQ(n.cpu_util_pct.size(), p->num_samples());
  ASSERT_EQ(n.mem_used_mib.size(), p->num_samples());
  EXPECT_EQ(n.cpus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_NEAR(static_cast<double>(n.memory_mib), mem_total_kb / 1024, 1.0);

  // Equal-length intervals: the mean of the samples is the utilisation over the whole run.
  double mean = 0;
  for (double v : n.cpu_util_pct) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 100);
    mean += v / static_cast<double>(n.cpu_util_pct.size());
  }
  const double kernel = 100.0 * (after.busy - before.busy) / (after.total - before.total);
  EXPECT_NEAR(mean, kernel, 5.0) << "profile mean " << mean << "%, /proc/stat " << kernel << "%";
  // Memory in use (MemTotal - MemAvailable), within 5 points of the total.
  const double last_used_pct = 100.0 * n.mem_used_mib.back() * 1024 / mem_total_kb;
  EXPECT_NEAR(last_used_pct, 100.0 * mem_used_kb / mem_total_kb, 5.0);
  for (const auto& per_cpu : n.per_cpu_util_pct) EXPECT_EQ(per_cpu.size(), p->num_samples());
}

TEST(ProcfsCollectorTest, RecordsTheHwlocTopology) {
  auto topo = ReadHwlocTopology();
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_GE(topo->packages, 1);
  EXPECT_GE(topo->cores, 1);
  EXPECT_GE(topo->pus, topo->cores);
  EXPECT_GE(topo->pus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  for (const auto& d : topo->pci_devices) EXPECT_EQ(d.bus_id.size(), 12u) << d.bus_id;
}

TEST(ProcfsCollectorTest, ReadsAFixtureTreeAndFailsClearlyWithoutOne) {
  const std::string root = ::testing::TempDir() + "/procfs_fixture";
  ASSERT_EQ(system(("mkdir -p " + root).c_str()), 0);
  {
    std::ofstream(root + "/stat")
        << "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\n";
    std::ofstream(root + "/meminfo")
        << "MemTotal: 2048000 kB\nMemFree: 100 kB\nMemAvailable: 1024000 kB\n";
  }
  ProcfsOptions o;
  o.proc_root = root;
  o.sys_root = root + "/nosys";
  o.node_name = "fixture";
  o.with_topology = false;
  auto c = NewProcfsCollector(o);
  Profile p;
  ASSERT_TRUE(c->Describe(&p).ok());
  {
    std::ofstream(root + "/stat")
        << "cpu  250 0 250 1300 0 0 0 0 0 0\ncpu0 250 0 250 1300 0 0 0 0 0 0\n";
  }
  ASSERT_TRUE(c->Sample(0, &p).ok());
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].name, "fixture");
  EXPECT_EQ(p.nodes[0].memory_mib, 2000);
  // busy +300 of total +800.
  EXPECT_DOUBLE_EQ(p.nodes[0].cpu_util_pct[0], 37.5);
  EXPECT_DOUBLE_EQ(p.nodes[0].mem_used_mib[0], 1000.0);

  o.proc_root = root + "/missing";
  auto bad = NewProcfsCollector(o);
  Profile q;
  absl::Status s = bad->Describe(&q);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("/stat"), std::string::npos) << s;
}

}  // namespace
}  // namespace seedance::telemetry
