// Churn of the autoscaled Alibaba GPU cluster, CA-like least-waste against the Seedance expander
// (docs/cluster-autoscaler.md). Usage:
//   clusterscale_churn [--drain-below U] [--policy P] [--ca-policy P] [LOAD] [HOURS] [SEED...]
//   (defaults: 0.5, built-in best fit for both, 0.9 24 42)
// --drain-below U: both autoscalers drain non-empty nodes under utilization U (CA's
// --scale-down-utilization-threshold, default 0.5; 0 = only empty nodes are removed); Seedance's
// drains also keep the headroom for the demand expected during a provisioning delay.
// --policy P: both place pods with the sched policy P (bestfit, fgd, cas, ...); --ca-policy P
// gives the CA-like its own (default: the same as Seedance's).
// Needs the public data (trace::DataDir()). Prints one row per expander and seed and the ratios.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

using seedance::clusterscale::ExpanderKind;

int main(int argc, char** argv) {
  namespace cs = seedance::clusterscale;
  const std::string dir = seedance::trace::DataDir() + "/alibaba-gpu-v2023/csv/";
  auto nodes = seedance::trace::ReadNodeCsv(dir + "openb_node_list_gpu_node.csv");
  auto pods = seedance::trace::ReadPodCsv(dir + "openb_pod_list_default.csv");
  if (!nodes.ok() || !pods.ok()) {
    std::fprintf(stderr, "clusterscale_churn: %s %s\n", nodes.status().ToString().c_str(),
                 pods.status().ToString().c_str());
    return 1;
  }
  for (auto& n : *nodes) {
    n.cost_usd_per_hour = seedance::sim::DefaultGpuPriceUsdPerHour(n.gpu_model) * n.num_gpus;
  }
  auto groups = cs::GroupsFromNodes(*nodes, {.min_fraction = 0.1, .max_factor = 1.0});
  if (!groups.ok()) return 1;
  cs::ChurnOptions o;
  o.drain_below_utilization = 0.5;
  std::string policy, ca_policy;
  bool ca_policy_set = false;
  int arg = 1;
  for (; arg + 1 < argc && std::string(argv[arg]).starts_with("--"); arg += 2) {
    const std::string flag = argv[arg];
    if (flag == "--drain-below") {
      o.drain_below_utilization = std::atof(argv[arg + 1]);
    } else if (flag == "--policy") {
      policy = argv[arg + 1];
    } else if (flag == "--ca-policy") {
      ca_policy = argv[arg + 1];
      ca_policy_set = true;
    } else {
      std::fprintf(stderr, "clusterscale_churn: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (!ca_policy_set) ca_policy = policy;
  o.load = argc > arg ? std::atof(argv[arg]) : 0.9;
  o.duration_h = argc > arg + 1 ? std::atof(argv[arg + 1]) : 24;
  std::vector<uint64_t> seeds;
  for (int i = arg + 2; i < argc; ++i) seeds.push_back(std::strtoull(argv[i], nullptr, 10));
  if (seeds.empty()) seeds.push_back(42);
  std::printf(
      "groups %zu, load %.2f, window %.0f h after %.0f h warm-up, drain below %.2f, placement: "
      "ca-least-waste %s, seedance %s\n",
      groups->size(), o.load, o.duration_h, o.warmup_h, o.drain_below_utilization,
      ca_policy.empty() ? "best fit" : ca_policy.c_str(), policy.empty() ? "best fit" : policy.c_str());
  std::printf("%-14s %5s %8s %10s %10s %12s %12s %10s %7s %7s %7s %7s %7s\n", "expander", "seed", "arrived",
              "p50_s", "p99_s", "gpu_h_paid", "idle_gpu_h", "cost_usd", "added", "removed",
              "waiting", "drained", "moved");
  for (uint64_t seed : seeds) {
    cs::ChurnReport r[2];
    for (int e = 0; e < 2; ++e) {
      o.seed = seed;
      o.scale_up.expander = e == 0 ? ExpanderKind::kCaLeastWaste : ExpanderKind::kSeedance;
      o.drain_keeps_headroom = e == 1;
      o.policy = e == 0 ? ca_policy : policy;
      auto rep = cs::RunChurn(*groups, *pods, o);
      if (!rep.ok()) {
        std::fprintf(stderr, "%s\n", rep.status().ToString().c_str());
        return 1;
      }
      r[e] = *rep;
      std::printf("%-14s %5llu %8lld %10.1f %10.1f %12.1f %12.1f %10.0f %7lld %7lld %7lld %7lld %7lld\n",
                  e == 0 ? "ca-least-waste" : "seedance", static_cast<unsigned long long>(seed),
                  static_cast<long long>(r[e].pods_arrived), r[e].pending_p50_s, r[e].pending_p99_s,
                  r[e].gpu_hours_paid, r[e].idle_gpu_hours, r[e].cost_usd,
                  static_cast<long long>(r[e].nodes_added),
                  static_cast<long long>(r[e].nodes_removed),
                  static_cast<long long>(r[e].pods_waiting_at_end),
                  static_cast<long long>(r[e].nodes_drained),
                  static_cast<long long>(r[e].pods_moved));
    }
    std::printf("%-14s %5llu %8s %10.3f %10.3f %12.3f %12.3f %10.3f\n", "ratio s/ca",
                static_cast<unsigned long long>(seed), "", r[1].pending_p50_s / r[0].pending_p50_s,
                r[1].pending_p99_s / r[0].pending_p99_s, r[1].gpu_hours_paid / r[0].gpu_hours_paid,
                r[1].idle_gpu_hours / r[0].idle_gpu_hours, r[1].cost_usd / r[0].cost_usd);
    std::fflush(stdout);
  }
  return 0;
}
