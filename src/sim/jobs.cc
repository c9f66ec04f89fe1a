// Job-trace simulation: policy dispatch, per-tenant summaries and the JSON document.
#include "seedance/sim/jobs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "seedance/base/build_info.h"
#include "seedance/base/text.h"
#include "job_accounting.h"
#include "jobs_internal.h"

namespace seedance::sim {
namespace {

// numpy's default ("linear") percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Jain's index of the tenants' mean speed (duration / JCT): 1 when every tenant's jobs are
// slowed alike, 1/n when one tenant gets everything.
double JainOfSpeeds(const JobWorkload& w, const JobRun& run) {
  std::vector<double> sum(w.tenants.size(), 0), n(w.tenants.size(), 0);
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    const double jct = static_cast<double>(run.jobs[i].end_s - w.jobs[i].submit_s);
    const double speed = jct > 0 ? static_cast<double>(w.jobs[i].duration_s) / jct : 1.0;
    sum[w.jobs[i].tenant] += speed;
    n[w.jobs[i].tenant] += 1;
  }
  double s = 0, s2 = 0, k = 0;
  for (size_t t = 0; t < sum.size(); ++t) {
    if (n[t] == 0) continue;
    const double x = sum[t] / n[t];
    s += x;
    s2 += x * x;
    k += 1;
  }
  return s2 > 0 ? s * s / (k * s2) : 1.0;
}

// A per-job statistic over no job (an empty trace, a tenant without jobs) is null, not 0.
nlohmann::ordered_json PerJob(const JobSummary& s, double v) {
  return s.jobs > 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

// The same in the table: "-" where JSON has null.
std::string PerJobCell(const JobSummary& s, double v) {
  return s.jobs > 0 ? absl::StrFormat("%12.2f", v) : absl::StrFormat("%12s", "-");
}

nlohmann::ordered_json SummaryJson(const JobSummary& s) {
  nlohmann::ordered_json j;
  j["jobs"] = s.jobs;
  j["avg_jct_s"] = PerJob(s, s.avg_jct_s);
  j["p99_jct_s"] = PerJob(s, s.p99_jct_s);
  j["avg_queue_s"] = PerJob(s, s.avg_queue_s);
  j["p99_queue_s"] = PerJob(s, s.p99_queue_s);
  j["p999_queue_s"] = PerJob(s, s.p999_queue_s);
  j["makespan_s"] = s.makespan_s;
  j["preemptions"] = s.preemptions;
  j["preempted_jobs"] = s.preempted_jobs;
  j["lost_gpu_h"] = s.lost_gpu_h;
  j["gpu_util"] = s.gpu_util;
  j["below_quota_s"] = s.below_quota_s;
  j["below_quota_pct"] = s.below_quota_pct;
  return j;
}

}  // namespace

const std::vector<std::string>& JobPolicyNames() {
  static const std::vector<std::string> names = {"fifo", "sjf", "srtf", "quota-fifo",
                                                 "quota-las"};
  return names;
}

bool IsReferenceJobPolicy(const std::string& policy) {
  return policy == "fifo" || policy == "sjf" || policy == "srtf";
}

std::vector<JobPartition> Partitions(const JobWorkload& w, Partitioning partitioning) {
  std::vector<JobPartition> parts;
  if (partitioning == Partitioning::kPooled) {
    parts.resize(1);
    for (const JobTenant& t : w.tenants) parts[0].nodes += t.nodes;
    for (size_t i = 0; i < w.jobs.size(); ++i) parts[0].jobs.push_back(static_cast<int32_t>(i));
    return parts;
  }
  parts.resize(w.tenants.size());
  for (size_t t = 0; t < w.tenants.size(); ++t) parts[t].nodes = w.tenants[t].nodes;
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    parts[w.jobs[i].tenant].jobs.push_back(static_cast<int32_t>(i));
  }
  return parts;
}

absl::StatusOr<JobRun> RunJobs(const JobWorkload& workload, const JobSimOptions& options) {
  const auto& names = JobPolicyNames();
  if (std::find(names.begin(), names.end(), options.policy) == names.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown job policy '", options.policy,
                                                   "'; expected fifo, sjf, srtf, quota-fifo or "
                                                   "quota-las"));
  }
  JobRun run;
  run.policy = options.policy;
  run.jobs.assign(workload.jobs.size(), JobOutcome{});
  for (const JobTenant& t : workload.tenants) run.total_gpus += int64_t{t.nodes} * kGpusPerJobNode;
  JobAccounting acc(workload, &run);
  if (IsReferenceJobPolicy(options.policy)) {
    RunReference(workload, options.policy, options.partitioning, &run, &acc);
  } else {
    RunTenancy(workload, options, &run, &acc);
  }
  for (size_t i = 0; i < run.jobs.size(); ++i) {
    if (run.jobs[i].end_s < 0) {
      return absl::InternalError(absl::StrCat("job at trace line ", workload.jobs[i].line,
                                              " never finished"));
    }
  }
  return run;
}

absl::StatusOr<JobRunSet> RunJobPolicies(const std::vector<trace::TraceJob>& trace,
                                         const std::vector<trace::TenantSpec>& tenants,
                                         JobSelection selection, bool pooled_reference,
                                         const std::vector<std::string>& policies) {
  JobRunSet set;
  const auto start = std::chrono::steady_clock::now();
  bool first = true;
  for (const std::string& policy : policies) {
    selection.pooled = !IsReferenceJobPolicy(policy) || pooled_reference;
    absl::StatusOr<JobWorkload> w = SelectJobs(trace, tenants, selection);
    if (!w.ok()) return w.status();
    JobSimOptions o;
    o.policy = policy;
    o.partitioning = selection.pooled ? Partitioning::kPooled : Partitioning::kIsolated;
    absl::StatusOr<JobRun> r = RunJobs(*w, o);
    if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat(policy, ": ", r.status().message()));
    if (!first && set.workload.jobs.size() != w->jobs.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          policy, ": the isolated partitions leave out ",
          std::max(w->too_large, set.workload.too_large),
          " jobs larger than their tenant's partition; run it apart from the pooled policies"));
    }
    if (first) set.workload = std::move(*w);
    first = false;
    set.runs.push_back(std::move(*r));
  }
  set.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return set;
}

nlohmann::ordered_json JobMetaJson(const JobRunSet& set, nlohmann::ordered_json inputs) {
  const JobWorkload& w = set.workload;
  nlohmann::ordered_json meta = std::move(inputs);
  meta["window_s"] = w.window_s;
  meta["origin_unix_s"] = w.origin_unix_s;
  meta["jobs"] = w.jobs.size();
  meta["left_out"] = {{"outside_window", w.outside_window},
                      {"no_gpus", w.no_gpus},
                      {"unknown_tenant", w.unknown_tenant},
                      {"larger_than_partition", w.too_large}};
  meta["wall_s"] = set.wall_s;
  return meta;
}

std::string JobRunSummary(const JobRunSet& set) {
  return absl::StrFormat("%zu jobs, %zu policies in %.2f s wall (%d left out: larger than their "
                         "partition)\n",
                         set.workload.jobs.size(), set.runs.size(), set.wall_s,
                         set.workload.too_large);
}

JobSummary SummarizeJobs(const JobWorkload& w, const JobRun& run, int tenant) {
  JobSummary s;
  s.name = tenant < 0 ? "all" : w.tenants[tenant].name;
  std::vector<double> jct, queue;
  int64_t first_submit = -1, last_end = 0, lost_gpu_s = 0;
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    if (tenant >= 0 && w.jobs[i].tenant != tenant) continue;
    const JobOutcome& o = run.jobs[i];
    jct.push_back(static_cast<double>(o.end_s - w.jobs[i].submit_s));
    queue.push_back(static_cast<double>(o.queue_s));
    if (first_submit < 0) first_submit = w.jobs[i].submit_s;
    last_end = std::max(last_end, o.end_s);
    s.preemptions += o.preemptions;
    s.preempted_jobs += o.preemptions > 0 ? 1 : 0;
    lost_gpu_s += o.lost_gpu_s;
  }
  s.jobs = static_cast<int64_t>(jct.size());
  s.avg_jct_s = Mean(jct);
  s.avg_queue_s = Mean(queue);
  std::sort(jct.begin(), jct.end());
  std::sort(queue.begin(), queue.end());
  s.p99_jct_s = Percentile(jct, 0.99);
  s.p99_queue_s = Percentile(queue, 0.99);
  s.p999_queue_s = Percentile(queue, 0.999);
  s.makespan_s = s.jobs > 0 ? last_end : 0;
  s.lost_gpu_h = static_cast<double>(lost_gpu_s) / 3600.0;
  int64_t busy = 0, gpus = 0;
  for (size_t t = 0; t < w.tenants.size(); ++t) {
    if (tenant >= 0 && static_cast<int>(t) != tenant) continue;
    busy += run.busy_gpu_s[t];
    gpus += int64_t{w.tenants[t].nodes} * kGpusPerJobNode;
    s.below_quota_s = std::max(s.below_quota_s, run.below_quota_s[t]);
  }
  if (tenant < 0) gpus = run.total_gpus;
  if (gpus > 0 && s.makespan_s > 0) {
    s.gpu_util = static_cast<double>(busy) / (static_cast<double>(gpus) * s.makespan_s);
  }
  if (w.window_s > 0) {
    s.below_quota_pct = 100.0 * static_cast<double>(s.below_quota_s) / w.window_s;
  }
  if (tenant < 0) s.jain_fairness = JainOfSpeeds(w, run);
  return s;
}

nlohmann::ordered_json JobRunsToJson(const JobWorkload& w, const std::vector<JobRun>& runs) {
  nlohmann::ordered_json policies = nlohmann::ordered_json::array();
  for (const JobRun& run : runs) {
    const JobSummary all = SummarizeJobs(w, run, -1);
    nlohmann::ordered_json summary = SummaryJson(all);
    summary["jain_fairness"] = all.jain_fairness;
    summary["scheduling_passes"] = run.scheduling_passes;
    nlohmann::ordered_json tenants = nlohmann::ordered_json::array();
    for (size_t t = 0; t < w.tenants.size(); ++t) {
      nlohmann::ordered_json tj;
      tj["name"] = w.tenants[t].name;
      tj["quota_gpus"] = int64_t{w.tenants[t].nodes} * kGpusPerJobNode;
      const nlohmann::ordered_json figures =
          SummaryJson(SummarizeJobs(w, run, static_cast<int>(t)));
      for (auto it = figures.begin(); it != figures.end(); ++it) tj[it.key()] = it.value();
      tenants.push_back(std::move(tj));
    }
    nlohmann::ordered_json p;
    p["name"] = run.policy;
    p["summary"] = std::move(summary);
    p["tenants"] = std::move(tenants);
    policies.push_back(std::move(p));
  }
  nlohmann::ordered_json doc = base::JsonHeader(kJobsSchema);
  doc["policies"] = std::move(policies);
  return doc;
}

std::string RenderJobTable(const JobWorkload& w, const std::vector<JobRun>& runs) {
  std::string out = absl::StrFormat("%-12s %-10s %7s %12s %12s %12s %10s %8s %9s %8s\n", "policy",
                                    "tenant", "jobs", "avg_jct_s", "avg_queue_s", "p99_queue_s",
                                    "makespan_s", "preempt", "lost_gpuh", "starv_%");
  for (const JobRun& run : runs) {
    for (int t = -1; t < static_cast<int>(w.tenants.size()); ++t) {
      const JobSummary s = SummarizeJobs(w, run, t);
      absl::StrAppendFormat(&out, "%-12s %-10s %7d %s %s %s %10d %8d %9.1f %8.3f\n",
                            base::ForTerminal(base::Clip(run.policy, 12)),
                            base::ForTerminal(base::Clip(s.name, 10)), s.jobs,
                            PerJobCell(s, s.avg_jct_s), PerJobCell(s, s.avg_queue_s),
                            PerJobCell(s, s.p99_queue_s), s.makespan_s, s.preemptions,
                            s.lost_gpu_h, s.below_quota_pct);
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ParseJobPolicies(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view p : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    std::vector<std::string> names;
    if (p == "all") {
      names = JobPolicyNames();
    } else {
      names.emplace_back(p);
      const auto& known = JobPolicyNames();
      if (std::find(known.begin(), known.end(), names[0]) == known.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--policy: unknown job policy '", base::ForTerminal(base::Clip(names[0], 64)),
                         "' (known: fifo, sjf, srtf, quota-fifo, quota-las, all)"));
      }
    }
    for (std::string& n : names) {
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("--policy: no policy given");
  return out;
}

}  // namespace seedance::sim
