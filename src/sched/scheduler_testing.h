// Test-only helpers shared by the Scheduler's tests: a plain GPU node.
#pragma once

#include <string>
#include <utility>

#include "seedance/core/cluster_state.h"

namespace seedance::sched::testing {

// A node of `gpus` A100s with 64 cores and 256 GiB.
inline core::NodeSpec GpuNode(std::string name, int gpus) {
  core::NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = 64000;
  n.memory_mib = 262144;
  n.num_gpus = gpus;
  n.gpu_model = "A100";
  return n;
}

}  // namespace seedance::sched::testing
