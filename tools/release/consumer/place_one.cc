// Places one GPU-sharing pod with the fgd policy on a two-node cluster, through the installed
// Seedance::sched, and prints where it went: "placed share-1 on NODE gpu G (fgd)".
#include <cstdio>
#include <memory>
#include <utility>

#include "seedance/sched/scheduler.h"

int main() {
  using namespace seedance;
  sched::SchedulerOptions options;
  options.default_profile.policy = "fgd";
  // fgd scores nodes by the fragmentation they would leave for the typical workload.
  options.oracle_workload = {{.cpu_milli = 4000, .num_gpu = 1, .gpu_milli = 500, .freq = 0.5},
                             {.cpu_milli = 8000, .num_gpu = 1, .gpu_milli = 1000, .freq = 0.5}};
  auto scheduler = sched::Scheduler::Create(std::move(options));
  if (!scheduler.ok()) {
    std::fprintf(stderr, "create: %s\n", scheduler.status().ToString().c_str());
    return 1;
  }
  for (const char* name : {"gpu-a", "gpu-b"}) {
    core::NodeSpec node{
        .name = name, .cpu_milli = 64000, .memory_mib = 262144, .num_gpus = 4, .gpu_model = "A100"};
    if (auto s = (*scheduler)->PutNode(node); !s.ok()) {
      std::fprintf(stderr, "node: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  sched::PodInfo pod;
  pod.uid = "share-1";
  pod.name = "share-1";
  pod.ns = "default";
  pod.shape = {.cpu_milli = 2000, .memory_mib = 4096, .num_gpu = 1, .gpu_milli = 250};
  if (auto s = (*scheduler)->SubmitPod(pod, 0); !s.ok()) {
    std::fprintf(stderr, "submit: %s\n", s.ToString().c_str());
    return 1;
  }
  (*scheduler)->RunCycles(0);
  const sched::PodInfo* placed = (*scheduler)->ledger().Find("share-1");
  if (placed == nullptr || placed->phase != sched::PodPhase::kBound) {
    std::fprintf(stderr, "share-1 was not placed\n");
    return 1;
  }
  std::printf("placed share-1 on %s gpu %d (fgd)\n",
              (*scheduler)->state().node(placed->placement.node).name.c_str(),
              static_cast<int>(placed->placement.gpus[0]));
  return 0;
}
