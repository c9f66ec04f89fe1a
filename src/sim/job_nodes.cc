#include "job_nodes.h"

#include <cstddef>


namespace seedance::sim {

JobNodes::JobNodes(int32_t nodes, int32_t gpus_per_node)
    : gpus_per_node_(gpus_per_node),
      free_(static_cast<size_t>(nodes), gpus_per_node),
      free_total_(static_cast<int64_t>(nodes) * gpus_per_node) {}

bool JobNodes::Find(int32_t gpus, JobAlloc* alloc) const {
  alloc->clear();
  if (gpus <= 0 || gpus > free_total_) return false;
  if (gpus > gpus_per_node_) return FindMultiNode(gpus, alloc);
  int32_t best = -1;
  for (int32_t n = 0; n < num_nodes(); ++n) {
    if (free_[n] >= gpus && (best < 0 || free_[n] < free_[best])) best = n;
  }
  if (best < 0) return false;
  alloc->emplace_back(best, gpus);
  return true;
}

bool JobNodes::FindMultiNode(int32_t gpus, JobAlloc* alloc) const {
  const int32_t whole = gpus / gpus_per_node_;
  const int32_t rest = gpus % gpus_per_node_;
  int32_t taken = 0;
  int32_t spare_whole = -1;  // the first whole free node after the ones taken
  int32_t fullest = -1;      // the partly free node with the most free GPUs
  for (int32_t n = 0; n < num_nodes(); ++n) {
    if (free_[n] == gpus_per_node_) {
      if (taken < whole) {
        alloc->emplace_back(n, gpus_per_node_);
        ++taken;
      } else if (spare_whole < 0) {
        spare_whole = n;
      }
    } else if (free_[n] > 0 && (fullest < 0 || free_[n] > free_[fullest])) {
      fullest = n;
    }
  }
  if (taken < whole) {
    alloc->clear();
    return false;
  }
  if (rest == 0) return true;
  const int32_t last = spare_whole >= 0 ? spare_whole : fullest;
  if (last < 0 || free_[last] < rest) {
    alloc->clear();
    return false;
  }
  alloc->emplace_back(last, rest);
  return true;
}

bool JobNodes::Place(int32_t gpus, JobAlloc* alloc) {
  if (!Find(gpus, alloc)) return false;
  Take(*alloc);
  return true;
}

void JobNodes::Take(const JobAlloc& alloc) {
  for (const auto& [node, g] : alloc) {
    free_[node] -= g;
    free_total_ -= g;
  }
}

void JobNodes::Release(const JobAlloc& alloc) {
  for (const auto& [node, g] : alloc) {
    free_[node] += g;
    free_total_ += g;
  }
}

int64_t CheckpointOverheadS(int32_t gpus, int32_t gpus_per_node) {
  if (gpus <= 1) return 7;
  if (gpus <= gpus_per_node) return 30;
  return 60;
}

}  // namespace seedance::sim
