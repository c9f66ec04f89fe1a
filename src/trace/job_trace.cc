// Implementation of the job-trace and tenant-file readers (seedance/trace/job_trace.h).
#include "seedance/trace/job_trace.h"

#include <array>
#include <charconv>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "seedance/base/io.h"
#include "seedance/trace/csv_table.h"
#include "seedance/trace/input_error.h"

namespace seedance::trace {
namespace {

using table::Column;
using table::CountLines;
using table::ParseInRange;
using table::ParseTime;
using table::Row;
using table::ScanTable;

enum JobColumn { kJobTimestamp, kJobDuration, kJobNumGpus, kJobGpuTime, kJobCluster };
constexpr std::array<Column, 5> kJobColumns = {{
    {"timestamp", true},
    {"duration", true},
    {"num_gpus", true},
    {"gpu_time", false},
    {"cluster", true},
}};

enum TenantColumn { kTenantVc, kTenantNodeNum, kTenantName, kTenantNodes, kTenantWeight };
constexpr std::array<Column, 5> kTenantColumns = {{
    {"vc", false},
    {"node num", false},
    {"tenant", false},
    {"nodes", false},
    {"weight", false},
}};

absl::Status ParseJobRow(const Row& row, TraceJob* job) {
  if (!ParseUtcTimestamp(row.value(kJobTimestamp), &job->submit_unix_s)) {
    return row.Error(kJobTimestamp, "expected a UTC time 'YYYY-MM-DD HH:MM:SS'");
  }
  if (row.value(kJobDuration).empty()) return row.Error(kJobDuration, "must not be empty");
  if (absl::Status s = ParseTime(row, kJobDuration, 0, &job->duration_s); !s.ok()) return s;
  int64_t gpus = 0;
  if (absl::Status s = ParseInRange(row, kJobNumGpus, 0, kMaxJobGpus, &gpus); !s.ok()) return s;
  job->gpus = static_cast<int32_t>(gpus);
  if (row.has(kJobGpuTime)) {
    int64_t ignored = 0;
    if (absl::Status s = ParseTime(row, kJobGpuTime, 0, &ignored); !s.ok()) return s;
  }
  if (row.value(kJobCluster).empty()) return row.Error(kJobCluster, "must not be empty");
  job->tenant = std::string(row.value(kJobCluster));
  job->line = row.line;
  return absl::OkStatus();
}

// The tenant file names its columns vc/node num (Helios) or tenant/nodes, one of each pair.
absl::Status CheckTenantHeader(const Row& row) {
  if (row.has(kTenantVc) == row.has(kTenantName)) {
    return row.Error(row.has(kTenantVc) ? kTenantName : kTenantVc,
                     "the header needs exactly one of 'vc' and 'tenant'");
  }
  if (row.has(kTenantNodeNum) == row.has(kTenantNodes)) {
    return row.Error(row.has(kTenantNodeNum) ? kTenantNodes : kTenantNodeNum,
                     "the header needs exactly one of 'node num' and 'nodes'");
  }
  return absl::OkStatus();
}

absl::Status ParseTenantRow(const Row& row, TenantSpec* tenant) {
  if (absl::Status s = CheckTenantHeader(row); !s.ok()) return s;
  const int name_col = row.has(kTenantVc) ? kTenantVc : kTenantName;
  const int nodes_col = row.has(kTenantNodeNum) ? kTenantNodeNum : kTenantNodes;
  if (row.value(name_col).empty()) return row.Error(name_col, "tenant name must not be empty");
  tenant->name = std::string(row.value(name_col));
  if (absl::Status s = ParseInRange(row, nodes_col, 0, kMaxTenantNodes, &tenant->nodes); !s.ok()) {
    return s;
  }
  tenant->weight = 1.0;
  if (row.has(kTenantWeight) && !row.value(kTenantWeight).empty()) {
    const std::string_view w = row.value(kTenantWeight);
    double v = 0;
    auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (ec != std::errc() || ptr != w.data() + w.size() || !std::isfinite(v)) {
      return row.Error(kTenantWeight, "expected a number");
    }
    if (!(v > 0) || v > 1e6) return row.Error(kTenantWeight, "must be in (0, 1000000]");
    tenant->weight = v;
  }
  tenant->line = row.line;
  return absl::OkStatus();
}

}  // namespace

bool ParseUtcTimestamp(std::string_view text, int64_t* unix_s) {
  const std::string s(text);
  absl::Time t;
  std::string err;
  const char* format = s.size() == 10 ? "%Y-%m-%d" : "%Y-%m-%d %H:%M:%S";
  if (!absl::ParseTime(format, s, absl::UTCTimeZone(), &t, &err)) return false;
  *unix_s = absl::ToUnixSeconds(t);
  // Years 1970..9999 only: a trace time outside them is a typo, not a submit time.
  return *unix_s >= 0 && *unix_s < 253402300800;
}

absl::StatusOr<std::vector<TraceJob>> ParseJobTrace(std::string_view text,
                                                    std::string_view source) {
  std::vector<TraceJob> jobs;
  jobs.reserve(CountLines(text));
  absl::Status s = ScanTable(text, source, kJobColumns, [&](const Row& row) {
    TraceJob job;
    if (absl::Status s = ParseJobRow(row, &job); !s.ok()) return s;
    jobs.push_back(std::move(job));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return jobs;
}

absl::StatusOr<std::vector<TraceJob>> ReadJobTrace(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
  if (!text.ok()) return text.status();
  return ParseJobTrace(*text, path);
}

absl::StatusOr<std::vector<TenantSpec>> ParseTenantCsv(std::string_view text,
                                                       std::string_view source) {
  std::vector<TenantSpec> tenants;
  std::unordered_map<std::string, int64_t> first_line;
  int64_t last_line = 1;
  absl::Status s = ScanTable(text, source, kTenantColumns, [&](const Row& row) {
    TenantSpec tenant;
    if (absl::Status s = ParseTenantRow(row, &tenant); !s.ok()) return s;
    auto [it, inserted] = first_line.emplace(tenant.name, row.line);
    if (!inserted) {
      const int col = row.has(kTenantVc) ? kTenantVc : kTenantName;
      return row.Error(col, absl::StrCat("duplicate tenant (first at line ", it->second, ")"));
    }
    last_line = row.line;
    tenants.push_back(std::move(tenant));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (tenants.empty()) return LineError(source, last_line, "no tenants: expected at least one row");
  return tenants;
}

absl::StatusOr<std::vector<TenantSpec>> ReadTenantCsv(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
  if (!text.ok()) return text.status();
  return ParseTenantCsv(*text, path);
}

}  // namespace seedance::trace
