// Synthetic GPU-cluster profiles for tests and benchmarks (no hardware needed).
//
// Nodes are named node-gpu-01, node-gpu-02, ... (two digits up to 99 nodes, then more). Each has
// `gpus_per_node` GPUs of one model on two NUMA nodes (first half on NUMA 0), all NVLink peers
// (NVSwitch). Node kinds, chosen by index:
//   idle:  listed in idle_nodes; GPUs at 1-5% utilisation, no pods;
//   light: every `light_every`-th other node; one 2-GPU training pod and one GPU-sharing
//          inference pod (500 milli), GPUs at 5-25%;
//   busy:  the rest; whole-GPU pods on 3/4 of the GPUs at 60-95%.
// Every pod's CPUs sit on the NUMA node of its GPUs except on nodes listed in numa_mismatch_nodes.
// Values are drawn from a seeded generator: same options, same profile.
#ifndef SEEDANCE_TELEMETRY_SYNTHETIC_H_
#define SEEDANCE_TELEMETRY_SYNTHETIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "seedance/telemetry/profile.h"

namespace seedance::telemetry {

struct SyntheticOptions {
  int nodes = 16;
  int samples = 60;
  double interval_s = 1;
  int gpus_per_node = 8;
  std::string gpu_model = "NVIDIA A100-SXM4-80GB";
  std::vector<int> idle_nodes = {2, 9};  // 0-based node indices
  int light_every = 5;                   // 0 = no light nodes
  std::vector<int> numa_mismatch_nodes = {};
  uint64_t seed = 1;
};

std::string SyntheticNodeName(int index, int total);
Profile MakeSyntheticProfile(const SyntheticOptions& options);

}  // namespace seedance::telemetry

#endif  // SEEDANCE_TELEMETRY_SYNTHETIC_H_
