// One scale-up decision (expansion options of every group + expander) for 1,000 pending pods x 50
// node groups; issue 17's goal is < 100 ms. Groups are the Alibaba trace's 14 node shapes
// repeated with scaled CPU and memory; pods are the first 1,000 GPU pods of the default trace.
#include <benchmark/benchmark.h>

#include <vector>

#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace cs = seedance::clusterscale;

static void BM_ScaleUpDecision(benchmark::State& state) {
  const std::string dir = seedance::trace::DataDir() + "/alibaba-gpu-v2023/csv/";
  auto nodes = seedance::trace::ReadNodeCsv(dir + "openb_node_list_gpu_node.csv");
  auto pods = seedance::trace::ReadPodCsv(dir + "openb_pod_list_default.csv");
  if (!nodes.ok() || !pods.ok()) {
    state.SkipWithError("public data missing");
    return;
  }
  for (auto& n : *nodes) {
    n.cost_usd_per_hour = seedance::sim::DefaultGpuPriceUsdPerHour(n.gpu_model) * n.num_gpus;
  }
  auto base = cs::GroupsFromNodes(*nodes);
  std::vector<cs::NodeGroup> groups;
  for (int i = 0; groups.size() < 50; ++i) {
    cs::NodeGroup g = (*base)[i % base->size()];
    g.node.cpu_milli += (i / static_cast<int>(base->size())) * 8000;
    g.node.memory_mib += (i / static_cast<int>(base->size())) * 32768;
    g.max_size = 1000;
    groups.push_back(g);
  }
  std::vector<cs::PendingPod> pending;
  for (const auto& p : *pods) {
    if (p.shape.num_gpu == 0) continue;
    pending.push_back({p.shape, {}});
    if (pending.size() == 1000) break;
  }
  std::vector<int> room(groups.size(), 1000);
  const cs::ScaleUpOptions options{.expander = static_cast<cs::ExpanderKind>(state.range(0))};
  for (auto _ : state) {
    benchmark::DoNotOptimize(cs::DecideScaleUp(groups, pending, room, options));
  }
  state.SetLabel(state.range(0) == 0 ? "ca-least-waste" : "seedance");
}
BENCHMARK(BM_ScaleUpDecision)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
