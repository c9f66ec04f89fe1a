// Readers for multi-tenant job traces: the Philly trace as shipped in the Sia artifact and the
// tenant (virtual cluster) capacity file of the Helios study (docs/jobs.md).
//
// Job schema:    timestamp,duration,num_gpus[,gpu_time],cluster
//   timestamp  submit time "YYYY-MM-DD HH:MM:SS", read as UTC
//   duration   run time in seconds, an integer or a decimal (rounded down), >= 0
//   num_gpus   GPUs the job needs, all at once (a gang), 0..1048576
//   gpu_time   ignored when present (duration x num_gpus in the published file), but must be a
//              non-negative number
//   cluster    the tenant (virtual cluster) name, read as text
// Tenant schema: vc,node num[,weight]  (also accepted: tenant,nodes[,weight])
//   vc         tenant name, unique within the file
//   node num   nodes of the tenant's partition, 0..100000; with --capacity-scale the quota
//   weight     over-quota weight for sharing what the owners leave idle, > 0 (default 1)
//
// The CSV dialect and the error format are those of seedance/trace/csv_reader.h: every content
// error is kInvalidArgument "FILE:LINE: field 'NAME': what (got 'VALUE')". Rows keep file order
// (the Philly file is not sorted by time).
#ifndef SEEDANCE_TRACE_JOB_TRACE_H_
#define SEEDANCE_TRACE_JOB_TRACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::trace {

// Most GPUs one job may ask for.
inline constexpr int64_t kMaxJobGpus = 1 << 20;
// Most nodes one tenant may own.
inline constexpr int64_t kMaxTenantNodes = 100000;

struct TraceJob {
  int64_t submit_unix_s = 0;
  int64_t duration_s = 0;
  int32_t gpus = 0;
  std::string tenant;
  int64_t line = 0;  // 1-based line in the trace file
};

struct TenantSpec {
  std::string name;
  int64_t nodes = 0;
  double weight = 1.0;
  int64_t line = 0;
};

absl::StatusOr<std::vector<TraceJob>> ParseJobTrace(std::string_view text,
                                                    std::string_view source);
absl::StatusOr<std::vector<TraceJob>> ReadJobTrace(const std::string& path);

// Tenant names must be unique; the file must name at least one tenant.
absl::StatusOr<std::vector<TenantSpec>> ParseTenantCsv(std::string_view text,
                                                       std::string_view source);
absl::StatusOr<std::vector<TenantSpec>> ReadTenantCsv(const std::string& path);

// Parses "YYYY-MM-DD HH:MM:SS" (or "YYYY-MM-DD", midnight) as UTC into Unix seconds.
bool ParseUtcTimestamp(std::string_view text, int64_t* unix_s);

}  // namespace seedance::trace

#endif  // SEEDANCE_TRACE_JOB_TRACE_H_
