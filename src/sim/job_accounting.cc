#include "job_accounting.h"

namespace seedance::sim {

JobAccounting::JobAccounting(const JobWorkload& workload, JobRun* run)
    : used_(workload.tenants.size(), 0),
      quota_(workload.tenants.size(), 0),
      pending_(workload.tenants.size()),
      run_(run) {
  for (size_t t = 0; t < workload.tenants.size(); ++t) {
    quota_[t] = static_cast<int64_t>(workload.tenants[t].nodes) * kGpusPerJobNode;
  }
  run_->below_quota_s.assign(workload.tenants.size(), 0);
  run_->busy_gpu_s.assign(workload.tenants.size(), 0);
}

void JobAccounting::Unpend(const JobSpec& job) {
  auto& by_size = pending_[job.tenant];
  auto it = by_size.find(job.gpus);
  if (it == by_size.end()) return;
  if (--it->second == 0) by_size.erase(it);
}

void JobAccounting::Stop(const JobSpec& job, int64_t held_s) {
  used_[job.tenant] -= job.gpus;
  run_->busy_gpu_s[job.tenant] += held_s * job.gpus;
}

bool JobAccounting::Starved(int32_t tenant) const {
  const auto& by_size = pending_[tenant];
  return !by_size.empty() && used_[tenant] + by_size.begin()->first <= quota_[tenant];
}

void JobAccounting::Advance(int64_t from, int64_t to) {
  if (to <= from) return;
  for (size_t t = 0; t < used_.size(); ++t) {
    if (Starved(static_cast<int32_t>(t))) run_->below_quota_s[t] += to - from;
  }
}

}  // namespace seedance::sim
