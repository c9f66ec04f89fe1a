// libFuzzer target: any bytes as a slurmrestd reply must give nodes, jobs, a job id or a status,
// never a crash. The first byte picks the reply (nodes, jobs, submit, errors) and, for a submit
// or errors reply, its HTTP status; the rest is the body. A node's figures must come out in
// range and convertible to Seedance's NodeSpec.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/core/cluster_state.h"
#include "seedance/slurm/objects.h"

namespace slurm = seedance::slurm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const int http_status = (data[0] & 4) ? 500 : 200;
  switch (data[0] & 3) {
    case 0:
      if (auto nodes = slurm::ParseNodes(body); nodes.ok()) {
        for (const slurm::Node& n : *nodes) {
          SEEDANCE_CHECK(!n.name.empty() && n.cpus >= 0 && n.memory_mib >= 0 && n.num_gpus >= 0 &&
                         n.num_gpus <= seedance::core::kMaxGpusPerNode && n.shards_per_gpu >= 0)
              << "node " << n.name << " decoded to impossible figures";
          const seedance::core::NodeSpec spec = slurm::ToNodeSpec(n, "GPU");
          SEEDANCE_CHECK(spec.cpu_milli >= 0) << "node " << n.name << ": cpu_milli overflowed";
          (void)n.Unavailability();
          (void)n.Lost();
        }
      }
      break;
    case 1:
      if (auto jobs = slurm::ParseJobs(body); jobs.ok()) {
        for (const slurm::Job& j : *jobs) {
          SEEDANCE_CHECK(j.id > 0) << "job decoded with id " << j.id;
        }
      }
      break;
    case 2:
      if (auto id = slurm::ParseSubmitReply(http_status, body); id.ok()) {
        SEEDANCE_CHECK(*id > 0) << "submit reply decoded to job id " << *id;
      }
      break;
    default:
      (void)slurm::ErrorsOf(http_status, body, "fuzz");
  }
  return 0;
}
