// The built-in demo cluster and workload (docs/simulator.md, "Built-in workload").
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "seedance/sim/simulator.h"

namespace seedance::sim {

Workload BuiltinWorkload() {
  Workload w;
  w.name = "builtin";
  auto add_nodes = [&](int count, int gpus, const char* model, int64_t cpu, int64_t mem) {
    for (int i = 0; i < count; ++i) {
      core::NodeSpec n;
      n.name = absl::StrCat("demo-", model, "-", w.nodes.size());
      n.cpu_milli = cpu;
      n.memory_mib = mem;
      n.num_gpus = gpus;
      n.gpu_model = model;
      n.cost_usd_per_hour = gpus * DefaultGpuPriceUsdPerHour(model);
      w.nodes.push_back(n);
    }
  };
  add_nodes(48, 8, "A100", 96000, 786432);
  add_nodes(32, 2, "T4", 64000, 262144);
  add_nodes(16, 4, "V100M32", 64000, 393216);

  // A fixed shape mix resembling production GPU-sharing clusters: many fractional inference
  // pods, mostly one-GPU training, a few gang-sized jobs and CPU-only helpers.
  std::mt19937_64 rng(20230710);
  std::uniform_real_distribution<double> u(0, 1);
  std::lognormal_distribution<double> life(std::log(900.0), 1.8);  // median 15 min
  const int kPods = 3000;
  const int sharing_milli[] = {250, 320, 470, 500, 650, 810};
  const char* qos[] = {"LS", "Burstable", "BE", "Guaranteed"};
  double t = 0;
  for (int i = 0; i < kPods; ++i) {
    core::PodSpec p;
    p.name = absl::StrCat("demo-pod-", i);
    const double x = u(rng);
    if (x < 0.32) {  // GPU-sharing
      p.shape.num_gpu = 1;
      p.shape.gpu_milli = sharing_milli[static_cast<int>(u(rng) * 6) % 6];
      p.shape.cpu_milli = 2000 * (1 + static_cast<int>(u(rng) * 4));
    } else if (x < 0.78) {  // one whole GPU
      p.shape.num_gpu = 1;
      p.shape.gpu_milli = 1000;
      p.shape.cpu_milli = 4000 * (1 + static_cast<int>(u(rng) * 4));
      if (u(rng) < 0.08) p.gpu_spec = "V100M32";
    } else if (x < 0.81) {
      p.shape.num_gpu = 2;
      p.shape.gpu_milli = 1000;
      p.shape.cpu_milli = 16000;
    } else if (x < 0.83) {
      p.shape.num_gpu = 4;
      p.shape.gpu_milli = 1000;
      p.shape.cpu_milli = 32000;
    } else if (x < 0.86) {
      p.shape.num_gpu = 8;
      p.shape.gpu_milli = 1000;
      p.shape.cpu_milli = 64000;
    } else {  // CPU-only
      p.shape.cpu_milli = 1000 * (1 + static_cast<int>(u(rng) * 16));
    }
    p.shape.memory_mib = p.shape.cpu_milli * 4;  // 4 GiB per core
    p.qos = qos[static_cast<int>(u(rng) * 4) % 4];
    p.priority = p.qos == std::string("LS")           ? 3
                 : p.qos == std::string("Guaranteed") ? 2
                 : p.qos == std::string("Burstable")  ? 1
                                                      : 0;
    t += -std::log(1.0 - u(rng)) * 30.0;  // one arrival every 30 s on average
    p.creation_s = static_cast<int64_t>(t);
    p.deletion_s = p.creation_s + static_cast<int64_t>(std::min(life(rng), 30 * 86400.0));
    w.pods.push_back(std::move(p));
  }
  return w;
}

}  // namespace seedance::sim
