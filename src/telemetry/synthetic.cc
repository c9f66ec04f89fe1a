#include "seedance/telemetry/synthetic.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"

namespace seedance::telemetry {

std::string SyntheticNodeName(int index, int total) {
  const int width = total < 100 ? 2 : (total < 1000 ? 3 : 4);
  char buf[32];
  std::snprintf(buf, sizeof buf, "node-gpu-%0*d", width, index + 1);
  return buf;
}

Profile MakeSyntheticProfile(const SyntheticOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto uniform = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(rng);
  };
  Profile p;
  p.source = "synthetic";
  p.start_unix_s = 1.7e9;
  p.interval_s = o.interval_s;
  for (int i = 0; i < o.samples; ++i) p.timestamps_s.push_back(i * o.interval_s);
  const int g_n = o.gpus_per_node;
  const int half = std::max(1, g_n / 2);
  auto is_in = [](const std::vector<int>& v, int x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (int n = 0; n < o.nodes; ++n) {
    NodeProfile node;
    node.name = SyntheticNodeName(n, o.nodes);
    node.cpus = 96;
    node.memory_mib = 1024 * 1024;
    node.numa_nodes = {{0, "0-47", 512 * 1024, {}}, {1, "48-95", 512 * 1024, {}}};
    const bool idle = is_in(o.idle_nodes, n);
    const bool light = !idle && o.light_every > 0 && n % o.light_every == o.light_every - 1;
    std::vector<double> lo(g_n), hi(g_n);
    if (idle) {
      std::fill(lo.begin(), lo.end(), 1);
      std::fill(hi.begin(), hi.end(), 5);
    } else if (light) {
      std::fill(lo.begin(), lo.end(), 0);
      std::fill(hi.begin(), hi.end(), 5);
      for (int g = 0; g < std::min(3, g_n); ++g) {
        lo[g] = 18;
        hi[g] = 28;
      }
      PodInfo train{absl::StrCat("train-", node.name), "ml", 8000, 65536, 2, 1000, {0, 1}, {0}, ""};
      PodInfo infer{
          absl::StrCat("llama-7b-infer-", node.name), "ml", 4000, 32768, 1, 500, {2}, {0}, ""};
      if (g_n >= 3) node.pods = {train, infer};
    } else {
      std::fill(lo.begin(), lo.end(), 0);
      std::fill(hi.begin(), hi.end(), 3);
      const int used = g_n * 3 / 4;
      for (int g = 0; g + 1 < used; g += 2) {
        lo[g] = lo[g + 1] = 60;
        hi[g] = hi[g + 1] = 95;
        const int numa = g < half ? 0 : 1;
        node.pods.push_back({absl::StrCat("job-", node.name, "-", g / 2),
                             "ml",
                             16000,
                             131072,
                             2,
                             1000,
                             {g, g + 1},
                             {numa},
                             ""});
      }
    }
    if (is_in(o.numa_mismatch_nodes, n) && !node.pods.empty()) {
      const int gpu_numa = node.pods[0].gpu_ids[0] < half ? 0 : 1;
      node.pods[0].cpu_numa_nodes = {1 - gpu_numa};
    }
    for (int g = 0; g < g_n; ++g) {
      GpuInfo gpu;
      gpu.index = g;
      gpu.model = o.gpu_model;
      gpu.uuid = absl::StrCat("GPU-", n, "-", g);
      gpu.memory_mib = 81920;
      gpu.numa_node = g < half ? 0 : 1;
      for (int k = 0; k < g_n; ++k) {
        if (k != g) gpu.nvlink_peers.push_back(k);
      }
      gpu.util_pct.resize(o.samples);
      gpu.mem_used_mib.resize(o.samples);
      gpu.power_w.resize(o.samples);
      for (int i = 0; i < o.samples; ++i) {
        const double u = std::round(uniform(lo[g], hi[g]));
        gpu.util_pct[i] = u;
        gpu.mem_used_mib[i] = std::round(u > 10 ? uniform(20000, 70000) : uniform(0, 500));
        gpu.power_w[i] = std::round(60 + 3.4 * u);
      }
      node.gpus.push_back(std::move(gpu));
    }
    node.cpu_util_pct.resize(o.samples);
    node.mem_used_mib.resize(o.samples);
    for (int i = 0; i < o.samples; ++i) {
      node.cpu_util_pct[i] = std::round(uniform(idle ? 1 : 10, idle ? 5 : 60));
      node.mem_used_mib[i] = std::round(uniform(idle ? 8000 : 200000, idle ? 16000 : 600000));
    }
    p.nodes.push_back(std::move(node));
  }
  return p;
}

}  // namespace seedance::telemetry
