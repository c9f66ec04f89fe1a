// `seedance simulate --mode jobs`: a multi-tenant job trace against the job policies
// (docs/jobs.md).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "commands.h"
#include "seedance/base/text.h"
#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/sim/jobs.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/job_trace.h"
#include "simulate_modes.h"

namespace seedance::cli::simulate {
namespace {

// --window START,END: UTC dates or times; an empty side is the trace's own first or last submit.
absl::StatusOr<seedance::sim::JobWindow> ParseWindow(
    const std::string& text, const std::vector<seedance::trace::TraceJob>& trace) {
  seedance::sim::JobWindow w{std::numeric_limits<int64_t>::max(), 0};
  for (const auto& j : trace) {
    w.start_unix_s = std::min(w.start_unix_s, j.submit_unix_s);
    w.end_unix_s = std::max(w.end_unix_s, j.submit_unix_s);
  }
  if (trace.empty()) w.start_unix_s = 0;
  if (text.empty()) return w;
  const std::vector<std::string> parts = absl::StrSplit(text, ',');
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--window: expected START,END (got '", Shown(text), "')"));
  }
  for (int side = 0; side < 2; ++side) {
    const std::string p(absl::StripAsciiWhitespace(parts[side]));
    if (p.empty()) continue;
    int64_t v = 0;
    if (!seedance::trace::ParseUtcTimestamp(p, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--window: '", Shown(p),
                       "' is not a UTC date 'YYYY-MM-DD' or time 'YYYY-MM-DD HH:MM:SS'"));
    }
    // A bare end date means the whole day, to its last minute (the reference's 23:59:00).
    if (side == 1 && p.size() == 10) v += 86400 - 60;
    (side == 0 ? w.start_unix_s : w.end_unix_s) = v;
  }
  if (w.end_unix_s < w.start_unix_s) {
    return absl::InvalidArgumentError(
        absl::StrCat("--window: the end is before the start (got '", Shown(text), "')"));
  }
  return w;
}

}  // namespace

// Flags of the other modes make no sense with jobs, and the reverse.
absl::Status CheckJobModeFlags(const Flags& f) {
  const bool jobs = f.mode == "jobs";
  if (!jobs) {
    if (f.partition != "isolated" || f.ties != "reverse") {
      return absl::InvalidArgumentError("--partition and --submit-ties: only for --mode jobs");
    }
    if (f.mode != "autoscale" &&
        (!f.trace.empty() || !f.tenants.empty() || !f.window.empty() || f.capacity_scale != 1.0)) {
      return absl::InvalidArgumentError(
          "--trace, --tenants, --window and --capacity-scale: only for --mode jobs and "
          "--mode autoscale");
    }
    return absl::OkStatus();
  }
  if (!f.nodes.empty() || !f.pods.empty() || !f.dump_order.empty() || f.topology != "none" ||
      !f.policy_opts.empty() || f.rng != "seedance") {
    return absl::InvalidArgumentError(
        "--nodes, --pods, --dump-order, --topology, --policy-opt and --rng: not for --mode jobs "
        "(it reads --trace and --tenants)");
  }
  if (f.trace.empty() || f.tenants.empty()) {
    return absl::InvalidArgumentError("--mode jobs needs --trace FILE and --tenants FILE");
  }
  return absl::OkStatus();
}

absl::StatusOr<JobReplay> LoadJobReplay(const Flags& f) {
  absl::StatusOr<std::vector<seedance::trace::TraceJob>> trace =
      seedance::trace::ReadJobTrace(f.trace);
  if (!trace.ok()) return trace.status();
  absl::StatusOr<std::vector<seedance::trace::TenantSpec>> tenants =
      seedance::trace::ReadTenantCsv(f.tenants);
  if (!tenants.ok()) return tenants.status();
  absl::StatusOr<seedance::sim::JobWindow> window = ParseWindow(f.window, *trace);
  if (!window.ok()) return window.status();
  seedance::sim::JobSelection sel;
  sel.window = *window;
  sel.capacity_scale = f.capacity_scale;
  sel.pooled = true;  // one autoscaled pool: a job is too large only beyond all of it
  absl::StatusOr<seedance::sim::JobWorkload> w = seedance::sim::SelectJobs(*trace, *tenants, sel);
  if (!w.ok()) return w.status();
  constexpr int kGpusPerNode = 8;  // the tenant file counts 8-GPU nodes
  std::vector<seedance::clusterscale::JobArrival> jobs;
  JobReplay out;
  for (const seedance::sim::JobSpec& j : w->jobs) {
    jobs.push_back({j.submit_s, j.duration_s, j.gpus});
    out.span_s = std::max(out.span_s, static_cast<double>(j.submit_s));
  }
  out.pods = seedance::clusterscale::PodsFromJobs(jobs, kGpusPerNode);
  int64_t nodes = 0;
  for (const seedance::sim::JobTenant& t : w->tenants) nodes += t.nodes;
  // A job trace records no CPU, memory or GPU model: nominal values, and no pod asks for CPU or
  // memory (docs/cluster-autoscaler.md, "Job traces").
  const seedance::core::NodeSpec node{
      "gpu8",       64'000, 512 * 1024,
      kGpusPerNode, "GPU",  seedance::sim::DefaultGpuPriceUsdPerHour("GPU") * 8};
  out.nodes.assign(static_cast<size_t>(nodes), node);
  if (out.nodes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tenants: ", Shown(f.tenants), " gives no node at --capacity-scale ", f.capacity_scale));
  }
  return out;
}

int SimulateJobs(const Flags& f) {
  absl::StatusOr<std::string> format = ResolveFormat(f.out, {"table", "json"});
  if (!format.ok()) return Fail(format.status());
  const std::string policy_list = f.policy == "all" ? "all" : f.policy;
  absl::StatusOr<std::vector<std::string>> policies = seedance::sim::ParseJobPolicies(policy_list);
  if (!policies.ok()) return Fail(policies.status());
  std::vector<Output> outs;
  if (absl::Status s = OpenOutputs(f, *format, &outs); !s.ok()) return Fail(s);
  absl::StatusOr<std::vector<seedance::trace::TraceJob>> trace =
      seedance::trace::ReadJobTrace(f.trace);
  if (!trace.ok()) return Fail(trace.status());
  absl::StatusOr<std::vector<seedance::trace::TenantSpec>> tenants =
      seedance::trace::ReadTenantCsv(f.tenants);
  if (!tenants.ok()) return Fail(tenants.status());
  absl::StatusOr<seedance::sim::JobWindow> window = ParseWindow(f.window, *trace);
  if (!window.ok()) return Fail(window.status());

  seedance::sim::JobSelection sel;
  sel.window = *window;
  sel.capacity_scale = f.capacity_scale;
  sel.ties =
      f.ties == "file" ? seedance::sim::SubmitTies::kFile : seedance::sim::SubmitTies::kReverseFile;
  absl::StatusOr<seedance::sim::JobRunSet> set =
      seedance::sim::RunJobPolicies(*trace, *tenants, sel, f.partition == "pooled", *policies);
  if (!set.ok()) return Fail(set.status());
  nlohmann::ordered_json doc = seedance::sim::JobRunsToJson(set->workload, set->runs);
  doc["meta"] = seedance::sim::JobMetaJson(*set, {{"trace", f.trace},
                                                  {"tenants", f.tenants},
                                                  {"protocol", f.protocol},
                                                  {"partition", f.partition},
                                                  {"capacity_scale", f.capacity_scale}});
  const std::string summary = seedance::sim::JobRunSummary(*set);
  return Finish(
      f, *format, outs,
      [&](const std::string& fmt) {
        return fmt == "json" ? base::DumpJson(doc, 1) + "\n"
                             : seedance::sim::RenderJobTable(set->workload, set->runs) + summary;
      },
      summary);
}

}  // namespace seedance::cli::simulate
