// `seedance simulate --mode autoscale`: churn on a cluster whose node groups a cluster
// autoscaler grows and shrinks, the CA-like least-waste against Seedance's
// (docs/cluster-autoscaler.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "seedance/base/text.h"
#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/clusterscale/report.h"
#include "seedance/sched/registry.h"
#include "seedance/sim/report.h"
#include "simulate_modes.h"

namespace seedance::cli::simulate {

namespace {

// The library's field names in an autoscale error ("provision_max_s: ...") as the flags that
// set them; other errors keep `prefix` in front.
absl::Status AsFlagError(const absl::Status& status, const std::string& prefix) {
  static const std::vector<std::pair<std::string, std::string>> kFields = {
      {"load", "--load"},
      {"duration_h", "--duration"},
      {"warmup_h", "--warmup"},
      {"scan_interval_s", "--scan-interval"},
      {"provision_min_s", "--provision-min"},
      {"provision_max_s", "--provision-max"},
      {"idle_s", "--idle"},
      {"drain_below_utilization", "--drain-below"},
      {"min_fraction", "--group-min"},
      {"max_factor", "--group-max"},
      {"policy", "--policy"}};
  const std::string msg(status.message());
  for (const auto& [field, flag] : kFields) {
    if (msg.starts_with(field + ": ")) {
      return absl::Status(status.code(), flag + msg.substr(field.size()));
    }
  }
  return Prefixed(prefix, status);
}

// --expanders as a list without repeats.
absl::StatusOr<std::vector<seedance::clusterscale::ExpanderKind>> ParseExpanders(const Flags& f) {
  std::vector<seedance::clusterscale::ExpanderKind> expanders;
  for (absl::string_view name : absl::StrSplit(f.expanders, ',', absl::SkipEmpty())) {
    auto kind = seedance::clusterscale::ParseExpander(std::string(name));
    if (!kind.ok()) return Prefixed("--expanders", kind.status());
    if (std::find(expanders.begin(), expanders.end(), *kind) == expanders.end()) {
      expanders.push_back(*kind);
    }
  }
  if (expanders.empty()) return absl::InvalidArgumentError("--expanders: no expander given");
  if (expanders.size() * f.seeds.size() > kMaxRuns) {
    return absl::InvalidArgumentError(absl::StrCat("--expanders x --seeds: ", expanders.size(),
                                                   " x ", f.seeds.size(),
                                                   " runs, more than the limit of ", kMaxRuns));
  }
  return expanders;
}

// The autoscale flags as ChurnOptions, every value and the placement policy's knobs checked.
absl::StatusOr<seedance::clusterscale::ChurnOptions> ResolveAutoscaleOptions(const Flags& f) {
  seedance::clusterscale::ChurnOptions o = f.autoscale;
  o.load = f.load_opt->count() > 0 ? f.options.load : 0.9;
  o.duration_h = f.duration_s / 3600;
  o.warmup_h = f.warmup_s < 0 ? 6 : f.warmup_s / 3600;
  if (!(o.duration_h > 0)) {
    return absl::InvalidArgumentError("--duration: autoscale needs a window > 0");
  }
  if (f.policy_opt->count() > 0) {
    if (!seedance::sched::Registry::Builtins().Contains(f.policy)) {
      return absl::InvalidArgumentError(
          "--policy: autoscale places with one registered policy (got '" + Shown(f.policy) +
          "'); leave it out for the built-in best fit");
    }
    o.policy = f.policy;
  }
  for (const std::string& kv : f.policy_opts) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError("--policy-opt: expected KEY=VALUE, got '" + Shown(kv) +
                                        "'");
    }
    o.policy_params[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!o.ca_policy.empty() && !seedance::sched::Registry::Builtins().Contains(o.ca_policy)) {
    return absl::InvalidArgumentError("--ca-policy: not a registered policy (got '" +
                                      Shown(o.ca_policy) +
                                      "'); e.g. most-allocated or least-allocated");
  }
  if (!o.policy_params.empty()) {
    if (o.policy.empty() && o.ca_policy.empty()) {
      return absl::InvalidArgumentError("--policy-opt: autoscale needs --policy with it");
    }
    seedance::sched::PolicyContext ctx;
    ctx.params = o.policy_params;
    for (const std::string& name : {o.policy, o.ca_policy}) {
      if (name.empty()) continue;
      auto profile = seedance::sched::Registry::Builtins().Create(name, ctx);
      if (!profile.ok()) return Prefixed(name, profile.status());
    }
  }
  if (absl::Status s = seedance::clusterscale::Validate(o); !s.ok()) {
    return AsFlagError(s, "--mode autoscale");
  }
  return o;
}

// The cluster and the pods: from --nodes and --pods, or a job trace replayed (--trace, with
// o->replay set and, without --duration, the window running to the last submit).
absl::StatusOr<seedance::sim::Workload> LoadAutoscaleWorkload(
    const Flags& f, seedance::clusterscale::ChurnOptions* o) {
  if (f.trace.empty()) return LoadWorkload(f);
  absl::StatusOr<JobReplay> replay = LoadJobReplay(f);
  if (!replay.ok()) return replay.status();
  o->replay = true;
  if (f.duration_opt->count() == 0) {
    o->duration_h = std::max(1.0, replay->span_s / 3600 - o->warmup_h);
  }
  seedance::sim::Workload w;
  w.nodes = std::move(replay->nodes);
  w.pods = std::move(replay->pods);
  return w;
}

}  // namespace

// The autoscale flags only with --mode autoscale, and the flags it has no use for not with it.
absl::Status CheckAutoscaleModeFlags(const Flags& f) {
  const bool autoscale = f.mode == "autoscale";
  for (const CLI::Option* o : autoscale ? f.not_autoscale : f.autoscale_only) {
    if (o->count() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          o->get_name(), autoscale ? ": not for --mode autoscale" : ": only for --mode autoscale"));
    }
  }
  if (!autoscale) return absl::OkStatus();
  if (!f.trace.empty() || !f.tenants.empty()) {
    if (f.trace.empty() || f.tenants.empty()) {
      return absl::InvalidArgumentError(
          "--mode autoscale replays a job trace with --trace FILE and --tenants FILE together");
    }
    if (!f.nodes.empty() || !f.pods.empty()) {
      return absl::InvalidArgumentError(
          "--nodes, --pods: not with --trace (the tenants' nodes are the cluster, the jobs the "
          "pods)");
    }
    if (f.load_opt->count() > 0) {
      return absl::InvalidArgumentError(
          "--load: not with --trace (a job trace is replayed at its own arrival times)");
    }
    return absl::OkStatus();
  }
  if (!f.window.empty() || f.capacity_scale != 1.0) {
    return absl::InvalidArgumentError("--window, --capacity-scale: only with --trace");
  }
  if (f.nodes.empty() || f.pods.empty()) {
    return absl::InvalidArgumentError(
        "--mode autoscale needs --nodes FILE and --pods FILE (the node shapes become the node "
        "groups; pods need deletion times), or a job trace: --trace FILE --tenants FILE");
  }
  return absl::OkStatus();
}

// --mode autoscale: churn on an autoscaled cluster, one run per seed and autoscaler.
int SimulateAutoscale(const Flags& f) {
  namespace cs = seedance::clusterscale;
  absl::StatusOr<std::string> format = ResolveFormat(f.out, {"table", "json"});
  if (!format.ok()) return Fail(format.status());
  absl::StatusOr<std::vector<cs::ExpanderKind>> expanders = ParseExpanders(f);
  if (!expanders.ok()) return Fail(expanders.status());
  absl::StatusOr<cs::ChurnOptions> options = ResolveAutoscaleOptions(f);
  if (!options.ok()) return Fail(options.status());
  cs::ChurnOptions o = *options;
  std::vector<Output> outs;
  if (absl::Status s = OpenOutputs(f, *format, &outs); !s.ok()) return Fail(s);
  absl::StatusOr<seedance::sim::Workload> workload = LoadAutoscaleWorkload(f, &o);
  if (!workload.ok()) return Fail(workload.status());
  for (seedance::core::NodeSpec& n : workload->nodes) {
    if (n.cost_usd_per_hour <= 0) {
      n.cost_usd_per_hour = seedance::sim::DefaultGpuPriceUsdPerHour(n.gpu_model) * n.num_gpus;
    }
  }
  absl::StatusOr<std::vector<cs::NodeGroup>> groups = cs::GroupsFromNodes(
      workload->nodes, {.min_fraction = f.group_min, .max_factor = f.group_max});
  if (!groups.ok()) return Fail(AsFlagError(groups.status(), Shown(f.nodes)));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<cs::ChurnRun>> runs =
      cs::RunChurnSet(*groups, workload->pods, o, *expanders, f.seeds, f.jobs);
  if (!runs.ok()) return Fail(AsFlagError(runs.status(), Shown(o.replay ? f.trace : f.pods)));
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string summary =
      absl::StrFormat("%zu runs (%zu autoscalers x %zu seeds, %zu node groups) in %.2f s wall\n",
                      runs->size(), expanders->size(), f.seeds.size(), groups->size(), wall_s);
  nlohmann::ordered_json doc = cs::ChurnRunsToJson(*runs);
  doc["meta"] = {{"nodes", f.nodes},
                 {"pods", f.pods},
                 {"trace", f.trace},
                 {"tenants", f.tenants},
                 {"window", f.window},
                 {"capacity_scale", f.capacity_scale},
                 {"replay", o.replay},
                 {"pods_replayed", o.replay ? workload->pods.size() : 0},
                 {"placement", o.policy.empty() ? "best fit" : o.policy},
                 {"ca_placement", !o.ca_policy.empty() ? o.ca_policy
                                  : o.policy.empty()   ? "best fit"
                                                       : o.policy},
                 {"groups", groups->size()},
                 {"load", o.load},
                 {"duration_h", o.duration_h},
                 {"warmup_h", o.warmup_h},
                 {"drain_below", o.drain_below_utilization},
                 {"prescale", o.prescale},
                 {"seeds", f.seeds}};
  const std::string inputs = absl::StrFormat(
      "inputs: %s; %zu node groups; load %.2f of the groups' GPUs at max size; window %g h after "
      "%g h warm-up; placement %s (CA-like: %s); drain below %.2f; prescale %s; seeds %s",
      o.replay ? absl::StrCat("trace ", Shown(f.trace), ", tenants ", Shown(f.tenants))
               : absl::StrCat("nodes ", Shown(f.nodes), ", pods ", Shown(f.pods)),
      groups->size(), o.load, o.duration_h, o.warmup_h, doc["meta"]["placement"].get<std::string>(),
      doc["meta"]["ca_placement"].get<std::string>(), o.drain_below_utilization,
      o.prescale ? "on" : "off", absl::StrJoin(f.seeds, ","));
  return Finish(
      f, *format, outs,
      [&](const std::string& fmt) {
        return fmt == "json" ? base::DumpJson(doc, 1) + "\n"
                             : cs::RenderChurnTable(*runs, inputs) + summary;
      },
      summary);
}

}  // namespace seedance::cli::simulate
