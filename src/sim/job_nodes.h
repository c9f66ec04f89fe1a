// Internal to seedance_sim: the GPU nodes of one job-simulation partition and the reference
// protocol's consolidate placement on them (docs/jobs.md, "Placement").
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace seedance::sim {

// (node, GPUs) pieces of one job's allocation.
using JobAlloc = std::vector<std::pair<int32_t, int32_t>>;

class JobNodes {
 public:
  JobNodes(int32_t nodes, int32_t gpus_per_node);

  int32_t num_nodes() const { return static_cast<int32_t>(free_.size()); }
  int32_t gpus_per_node() const { return gpus_per_node_; }
  int64_t total_gpus() const { return static_cast<int64_t>(free_.size()) * gpus_per_node_; }
  int64_t free_gpus() const { return free_total_; }
  int32_t free_on(int32_t node) const { return free_[node]; }

  // Consolidate placement. A job of at most one node's GPUs goes to the node with the fewest
  // free GPUs that still holds it (lowest index on ties). A larger job takes whole free nodes
  // (lowest indices first) and, for a remainder, one more node: the next whole free node, or
  // else the node with the most free GPUs (lowest index on ties) when it holds the remainder.
  // On success the GPUs are taken and `alloc` says where.
  bool Place(int32_t gpus, JobAlloc* alloc);
  // Where Place would put the job, without taking anything.
  bool Find(int32_t gpus, JobAlloc* alloc) const;
  void Take(const JobAlloc& alloc);
  void Release(const JobAlloc& alloc);

 private:
  bool FindMultiNode(int32_t gpus, JobAlloc* alloc) const;

  int32_t gpus_per_node_;
  std::vector<int32_t> free_;
  int64_t free_total_;
};

// The reference protocol's checkpoint overhead of one preemption: 7 s for 1 GPU, 30 s up to one
// node, 60 s beyond.
int64_t CheckpointOverheadS(int32_t gpus, int32_t gpus_per_node);

}  // namespace seedance::sim
