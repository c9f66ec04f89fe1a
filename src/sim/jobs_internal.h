// Internal to seedance_sim: what the job-simulation engines share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seedance/sim/jobs.h"

namespace seedance::sim {

class JobAccounting;

// One set of nodes and the jobs that run on it, in submit order.
struct JobPartition {
  int32_t nodes = 0;
  std::vector<int32_t> jobs;
};

// Isolated: one partition per tenant with nodes; pooled: one with every node and job.
std::vector<JobPartition> Partitions(const JobWorkload& w, Partitioning partitioning);

void RunReference(const JobWorkload& w, const std::string& policy, Partitioning partitioning,
                  JobRun* run, JobAccounting* acc);
void RunTenancy(const JobWorkload& w, const JobSimOptions& options, JobRun* run,
                JobAccounting* acc);

}  // namespace seedance::sim
