// One scale-up decision (expansion options of every group + expander) for 1,000 pending pods x 50
// node groups; issue 17's goal is < 100 ms. Groups are the Alibaba trace's 14 node shapes
// repeated with scaled CPU and memory; pods are the first 1,000 GPU pods of the default trace.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/clusterscale/live.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace cs = seedance::clusterscale;

namespace {

struct Trace {
  std::vector<seedance::core::NodeSpec> nodes;
  std::vector<seedance::core::PodSpec> pods;
};

// The Alibaba trace's nodes and default pods; false (the benchmark skipped) without the data.
bool ReadTrace(benchmark::State& state, Trace* out) {
  const std::string dir = seedance::trace::DataDir() + "/alibaba-gpu-v2023/csv/";
  auto nodes = seedance::trace::ReadNodeCsv(dir + "openb_node_list_gpu_node.csv");
  auto pods = seedance::trace::ReadPodCsv(dir + "openb_pod_list_default.csv");
  if (!nodes.ok() || !pods.ok()) {
    state.SkipWithError("public data missing");
    return false;
  }
  out->nodes = std::move(*nodes);
  out->pods = std::move(*pods);
  return true;
}

// The first 1,000 GPU pods of the trace, as pending pods.
std::vector<cs::PendingPod> FirstGpuPods(const std::vector<seedance::core::PodSpec>& pods) {
  std::vector<cs::PendingPod> pending;
  for (const auto& p : pods) {
    if (p.shape.num_gpu == 0) continue;
    pending.push_back({p.shape, {}});
    if (pending.size() == 1000) break;
  }
  return pending;
}

}  // namespace

static void BM_ScaleUpDecision(benchmark::State& state) {
  Trace t;
  if (!ReadTrace(state, &t)) return;
  auto* nodes = &t.nodes;
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
  const std::vector<cs::PendingPod> pending = FirstGpuPods(t.pods);
  std::vector<int> room(groups.size(), 1000);
  const cs::ScaleUpOptions options{.expander = static_cast<cs::ExpanderKind>(state.range(0))};
  for (auto _ : state) {
    benchmark::DoNotOptimize(cs::DecideScaleUp(groups, pending, room, options));
  }
  state.SetLabel(state.range(0) == 0 ? "ca-least-waste" : "seedance");
}
BENCHMARK(BM_ScaleUpDecision)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// One scan of the service's cluster autoscaler (`seedance server --node-groups`, live.h): the
// same 1,000 pending pods x 50 groups, plus the 1,213 trace nodes as group nodes, each with
// three quarters of its GPUs allocated; with range(0) = 1 draining is on (threshold 0.8 and no
// unneeded time, so every node is an underused candidate and 30 are tried per scan, CA's
// default).
static void BM_LiveScan(benchmark::State& state) {
  Trace t;
  if (!ReadTrace(state, &t)) return;
  auto* nodes = &t.nodes;
  auto base = cs::GroupsFromNodes(*nodes);
  std::vector<cs::NodeGroup> groups;
  for (int i = 0; groups.size() < 50; ++i) {
    cs::NodeGroup g = (*base)[i % base->size()];
    if (i >= static_cast<int>(base->size())) g.name += "-v" + std::to_string(i);
    g.max_size = 2000;
    groups.push_back(g);
  }
  cs::LiveView view;
  for (size_t n = 0; n < nodes->size(); ++n) {
    const seedance::core::NodeSpec& spec = (*nodes)[n];
    cs::LiveNode node{spec.name, -1, false};
    for (size_t g = 0; g < base->size(); ++g) {
      const seedance::core::NodeSpec& t = (*base)[g].node;
      if (t.cpu_milli == spec.cpu_milli && t.memory_mib == spec.memory_mib &&
          t.num_gpus == spec.num_gpus && t.gpu_model == spec.gpu_model) {
        node.group = static_cast<int>(g);
      }
    }
    node.gpu_model = spec.gpu_model;
    node.cpu_free_milli = spec.cpu_milli / 4;
    node.memory_free_mib = spec.memory_mib / 4;
    const int used = spec.num_gpus * 3 / 4;
    for (int g = 0; g < spec.num_gpus; ++g) node.gpu_free_milli.push_back(g < used ? 0 : 1000);
    node.utilization = spec.num_gpus > 0 ? static_cast<double>(used) / spec.num_gpus : 0.75;
    for (int i = 0; i < used; ++i) node.pods.push_back({{1000, 1024, 1, 1000}, {}});
    view.nodes.push_back(std::move(node));
  }
  view.unschedulable = FirstGpuPods(t.pods);
  cs::LiveOptions options;
  options.scale_down_utilization_threshold = state.range(0) == 1 ? 0.8 : 0;
  options.scale_down_unneeded_s = 0;  // candidates at once
  for (auto _ : state) {
    cs::LiveAutoscaler scaler(groups, options);  // no request in flight: every scan decides
    benchmark::DoNotOptimize(scaler.Scan(view));
  }
  state.SetLabel(state.range(0) == 1 ? "draining on" : "empty nodes only");
}
BENCHMARK(BM_LiveScan)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
