// Internal to seedance_sim: per-tenant bookkeeping shared by the job-simulation engines: GPUs
// held, pending jobs by size, and the time a tenant waited below its guaranteed quota.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "seedance/sim/jobs.h"

namespace seedance::sim {

class JobAccounting {
 public:
  JobAccounting(const JobWorkload& workload, JobRun* run);

  void Pend(const JobSpec& job) { ++pending_[job.tenant][job.gpus]; }
  void Unpend(const JobSpec& job);
  void Start(const JobSpec& job) { used_[job.tenant] += job.gpus; }
  // `held_s`: how long the job held its GPUs in this stretch.
  void Stop(const JobSpec& job, int64_t held_s);
  int64_t used(int32_t tenant) const { return used_[tenant]; }
  int64_t quota(int32_t tenant) const { return quota_[tenant]; }
  // True when the tenant has a pending job that fits its quota beside what it holds.
  bool Starved(int32_t tenant) const;
  // Charges [from, to) to every starved tenant.
  void Advance(int64_t from, int64_t to);

 private:
  std::vector<int64_t> used_, quota_;
  std::vector<std::map<int32_t, int64_t>> pending_;  // tenant -> GPUs -> pending jobs
  JobRun* run_;
};

}  // namespace seedance::sim
