// `seedance simulate`: replays a workload against placement policies (docs/simulator.md).
//
// Everything that can be refused is refused before the first run starts: flag values (while
// CLI11 parses), outputs that name an input or cannot be opened, unreadable or inconsistent
// inputs, policy options, and options that would make a run unbounded (sim::CheckRun).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "seedance/base/io.h"
#include "seedance/base/mutex.h"
#include "seedance/base/parallel.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/registry.h"
#include "seedance/sim/report.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"
#include "seedance/trace/node_file.h"
#include "simulate_modes.h"

namespace seedance::cli::simulate {

// `status` with "PREFIX: " in front of its message, keeping its code (and so its exit status).
absl::Status Prefixed(const std::string& prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, ": ", status.message()));
}

// An input name as it appears in messages: control characters escaped, clipped.
std::string Shown(const std::string& name) { return base::ForTerminal(base::Clip(name, 200)); }

// Reads --nodes and --pods (or the built-in workload) and checks what the runs need of them: a
// valid cluster with GPUs and at most kMaxGpuModels - 1 models. Warns about gpu_spec models the
// cluster lacks.
absl::StatusOr<seedance::sim::Workload> LoadWorkload(const Flags& f) {
  if (f.nodes.empty() != f.pods.empty()) {
    return absl::InvalidArgumentError(
        "--nodes and --pods go together (or give neither for the built-in demo)");
  }
  if (f.nodes == "-" && f.pods == "-") {
    return absl::InvalidArgumentError("--nodes and --pods cannot both read standard input");
  }
  seedance::sim::Workload w;
  std::vector<int64_t> pod_lines;
  if (f.nodes.empty()) {
    w = seedance::sim::BuiltinWorkload();
  } else {
    absl::StatusOr<seedance::trace::NodesAndPods> in =
        seedance::trace::ReadNodesAndPods(f.nodes, f.pods, {.ignore_unknown = f.ignore_unknown});
    if (!in.ok()) return in.status();
    for (const std::string& warning : in->warnings) Warn(warning);
    if (in->nodes.empty()) return absl::InvalidArgumentError(Shown(f.nodes) + ": no nodes");
    if (in->pods.empty()) return absl::InvalidArgumentError(Shown(f.pods) + ": no pods");
    w.nodes = std::move(in->nodes);
    w.pods = std::move(in->pods);
    pod_lines = std::move(in->pod_lines);
    w.name = f.pods;
  }
  const std::string nodes_name = f.nodes.empty() ? "built-in cluster" : Shown(f.nodes);
  absl::StatusOr<seedance::core::ClusterState> state =
      seedance::core::ClusterState::Create(w.nodes);
  if (!state.ok()) return Prefixed(nodes_name, state.status());
  if (state->gpu_capacity_milli() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(nodes_name, ": the cluster has no GPUs (", w.nodes.size(),
                     " nodes, none with a GPU); the simulator places GPU pods"));
  }
  if (!f.pods.empty()) {
    for (const std::string& warning :
         seedance::trace::UnknownGpuModelWarnings(w.pods, pod_lines, f.pods, state->gpu_models())) {
      Warn(warning);
    }
  }
  return w;
}

namespace {

// Where `path` finally leads through symlinks (which may not exist yet), made absolute.
std::string FinalTarget(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) break;
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  const fs::path dir = fs::weakly_canonical(p.parent_path(), ec);
  return ec ? p.lexically_normal().string() : (dir / p.filename()).string();
}

}  // namespace

absl::Status OpenOutputs(const Flags& f, const std::string& format, std::vector<Output>* outs) {
  std::vector<base::NamedPath> named = {{"--output", f.out.output},
                                        {"--json", f.json},
                                        {"--report", f.report},
                                        {"--dump-order", f.dump_order}};
  std::vector<base::NamedPath> inputs = {{"--nodes", f.nodes}, {"--pods", f.pods}};
  if (!f.trace.empty()) inputs.push_back({"--trace", f.trace});
  if (!f.tenants.empty()) inputs.push_back({"--tenants", f.tenants});
  std::vector<base::NamedPath> outputs;
  for (const auto& n : named) {
    if (!n.path.empty()) outputs.push_back(n);
  }
  if (absl::Status s = base::CheckOutputsDistinct(inputs, outputs); !s.ok()) return s;
  // Two outputs naming one file would overwrite each other.
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (outputs[i].path == "-" && outputs[j].path == "-") {
        return absl::InvalidArgumentError(
            absl::StrCat(outputs[i].flag, " and ", outputs[j].flag, " both name standard output"));
      }
      if (absl::Status s = base::CheckOutputsDistinct({outputs[i]}, {outputs[j]}); !s.ok()) {
        return s;
      }
      // Files that do not exist yet have no inode to compare: compare where their symlinks lead.
      if (outputs[i].path != "-" && outputs[j].path != "-" &&
          FinalTarget(outputs[i].path) == FinalTarget(outputs[j].path)) {
        return absl::InvalidArgumentError(
            absl::StrCat(outputs[j].flag, " ", Shown(outputs[j].path), " and ", outputs[i].flag,
                         " ", Shown(outputs[i].path), " name the same file"));
      }
    }
  }
  auto open = [&](const std::string& flag, const std::string& path,
                  const std::string& fmt) -> absl::Status {
    auto file = base::OutputFile::Open(path);
    if (!file.ok()) return Prefixed(flag, file.status());
    outs->push_back({flag, fmt, std::move(*file)});
    return absl::OkStatus();
  };
  const std::string main_path = f.out.output.empty() ? "-" : f.out.output;
  if (absl::Status s = open("--output", main_path, format); !s.ok()) return s;
  if (!f.json.empty()) {
    if (absl::Status s = open("--json", f.json, "json"); !s.ok()) return s;
  }
  if (!f.report.empty()) {
    if (absl::Status s = open("--report", f.report, "html"); !s.ok()) return s;
  }
  if (!f.dump_order.empty()) {
    if (absl::Status s = open("--dump-order", f.dump_order, "order"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

int Finish(const Flags& f, const std::string& format, std::vector<Output>& outs,
           const std::function<std::string(const std::string&)>& text_for,
           const std::string& summary) {
  for (Output& out : outs) {
    if (absl::Status s = out.file->Write(text_for(out.format)); !s.ok()) return Fail(s);
  }
  for (Output& out : outs) {
    if (absl::Status s = out.file->Commit(); !s.ok()) return Fail(s);
  }
  if (format != "table" && !f.quiet) std::fputs(summary.c_str(), stderr);
  return 0;
}

}  // namespace seedance::cli::simulate

namespace seedance::cli {
namespace {

using seedance::sim::Mode;
using simulate::Flags;
using simulate::kMaxRuns;
using simulate::Output;
using simulate::Prefixed;
using simulate::Shown;

const std::vector<std::string> kFormats = {"table", "json", "csv", "html"};
// Longest --duration / --warmup: 10 years of simulated time (sim::CheckRun's bound).
constexpr double kMaxSimulatedSeconds = 87600.0 * 3600;
constexpr int kMaxJobs = 1024;

class Progress {
 public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled) {}
  void Tick(const std::string& label) {
    base::MutexLock lock(mu_);
    ++done_;
    if (!enabled_) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done_ / total_);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu %-24s", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), done_, total_,
                 base::ForTerminal(label).c_str());
    if (done_ == total_) std::fprintf(stderr, "\r%*s\r", width + 40, "");
    std::fflush(stderr);
  }

 private:
  base::Mutex mu_;  // also keeps the lines on stderr whole
  size_t total_;
  size_t done_ ABSL_GUARDED_BY(mu_) = 0;
  bool enabled_;
};

// The --policy list: names, or "all" for the six reference policies plus cas.
absl::StatusOr<std::vector<std::string>> ParsePolicies(const std::string& list) {
  const auto& registry = seedance::sched::Registry::Builtins();
  std::vector<std::string> policies;
  for (absl::string_view p : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    std::vector<std::string> names;
    if (p == "all") {
      names = seedance::sched::ReferencePolicyNames();
      names.push_back("cas");
    } else {
      std::string name(p);
      if (!registry.Contains(name)) {
        std::string known;
        for (const auto& n : registry.Names()) known += (known.empty() ? "" : ", ") + n;
        return absl::InvalidArgumentError("--policy: unknown policy '" + Shown(name) +
                                          "' (known: " + known + ", all)");
      }
      names.push_back(name);
    }
    for (std::string& n : names) {
      if (std::find(policies.begin(), policies.end(), n) == policies.end()) {
        policies.push_back(std::move(n));
      }
    }
  }
  if (policies.empty()) return absl::InvalidArgumentError("--policy: no policy given");
  return policies;
}

// --policy-opt KEY=VALUE into options->policy_params, then each policy built once with them so
// that an unknown key or a bad value is refused (with the policy's own status code) before any
// run starts.
absl::Status ApplyPolicyOptions(const std::vector<std::string>& kvs,
                                const std::vector<std::string>& policies,
                                const seedance::sim::Workload& workload,
                                seedance::sim::SimOptions* options) {
  for (const std::string& kv : kvs) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError("--policy-opt: expected KEY=VALUE, got '" + Shown(kv) +
                                        "'");
    }
    options->policy_params[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  seedance::sched::PolicyContext ctx;
  ctx.oracle_workload = seedance::sched::TypicalShapes(seedance::sched::CountShapes(workload.pods),
                                                       options->typical_coverage_pct);
  ctx.params = options->policy_params;
  for (const std::string& policy : policies) {
    auto profile = seedance::sched::Registry::Builtins().Create(policy, ctx);
    if (!profile.ok()) return Prefixed(policy, profile.status());
  }
  return absl::OkStatus();
}

// Fill mode's arrival order for each seed as CSV, so the replay can be analysed outside the
// simulator (tools/analysis/fill_floor.py bounds any policy on exactly these sequences).
absl::StatusOr<std::string> FillOrderCsv(const seedance::sim::Workload& workload,
                                         seedance::sim::SimOptions options,
                                         const std::vector<uint64_t>& seeds) {
  using seedance::sim::CsvField;
  std::string out =
      "seed,position,name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,arrived_gpu_milli\n";
  for (uint64_t seed : seeds) {
    options.seed = seed;
    absl::StatusOr<seedance::sim::FillPlan> plan = seedance::sim::PlanFill(workload, options);
    if (!plan.ok()) return plan.status();
    int64_t arrived = 0;
    for (size_t i = 0; i < plan->pods.size(); ++i) {
      const seedance::core::PodSpec& p = plan->pods[i];
      arrived += p.shape.TotalGpuMilli();
      absl::StrAppend(&out, seed, ",", i, ",", CsvField(p.name), ",", p.shape.cpu_milli, ",",
                      p.shape.memory_mib, ",", p.shape.num_gpu, ",", p.shape.gpu_milli, ",",
                      CsvField(p.gpu_spec), ",", arrived, "\n");
    }
  }
  return out;
}

// Turns the flags into SimOptions; refuses combinations the flag parsers cannot see.
absl::StatusOr<seedance::sim::SimOptions> ResolveOptions(const Flags& f) {
  seedance::sim::SimOptions o = f.options;
  if (f.mode == "fill") {
    o.mode = Mode::kFill;
  } else if (f.mode == "churn") {
    o.mode = Mode::kChurn;
  } else {
    o.mode = Mode::kReplay;
  }
  o.load_basis =
      f.load_basis == "exact" ? seedance::sim::LoadBasis::kExact : seedance::sim::LoadBasis::kMeans;
  if (f.rng == "reference") {
    if (o.mode != Mode::kFill) {
      return absl::InvalidArgumentError("--rng reference: only for --mode fill");
    }
    o.rng = seedance::sim::RngKind::kReference;
  }
  o.duration_h = f.duration_s / 3600;
  if (o.mode == Mode::kChurn && !(f.duration_s > 0)) {
    return absl::InvalidArgumentError(
        "--duration: churn needs a measured window > 0 (got 0; e.g. --duration 72h)");
  }
  // Replay: no --duration (or 0) is the whole trace.
  if (o.mode == Mode::kReplay && (f.duration_opt->count() == 0 || f.duration_s == 0)) {
    o.duration_h = -1;
  }
  o.warmup_h = f.warmup_s < 0 ? -1 : f.warmup_s / 3600;
  o.score_cache = f.score_cache == "on";
  absl::StatusOr<seedance::core::TopologyTemplate> topo =
      seedance::core::ParseTopologyTemplate(f.topology);
  if (!topo.ok())
    return absl::InvalidArgumentError(absl::StrCat("--topology: ", topo.status().message()));
  o.topology = *topo;
  o.topology_gpus = f.gpu_choice == "topology";
  if (!f.dump_order.empty() && o.mode != Mode::kFill) {
    return absl::InvalidArgumentError("--dump-order: only for --mode fill");
  }
  return o;
}

std::string Render(const std::string& format, const std::vector<seedance::sim::PolicyRuns>& results,
                   const seedance::sim::ReportMeta& meta, const std::string& summary) {
  if (format == "json") return base::DumpJson(seedance::sim::ToJson(results, meta), 1) + "\n";
  if (format == "csv") return seedance::sim::RenderCsv(results, meta);
  if (format == "html") return seedance::sim::RenderHtml(results, meta);
  return seedance::sim::RenderTable(results, meta) + summary;
}

int Simulate(const Flags& f) {
  if (absl::Status s = CheckJobModeFlags(f); !s.ok()) return Fail(s);
  if (absl::Status s = CheckAutoscaleModeFlags(f); !s.ok()) return Fail(s);
  if (f.mode == "jobs") return SimulateJobs(f);
  if (f.mode == "autoscale") return SimulateAutoscale(f);
  absl::StatusOr<std::string> format = ResolveFormat(f.out, kFormats);
  if (!format.ok()) return Fail(format.status());
  absl::StatusOr<seedance::sim::SimOptions> options = ResolveOptions(f);
  if (!options.ok()) return Fail(options.status());
  std::vector<uint64_t> seeds = f.seeds;
  absl::StatusOr<std::vector<std::string>> policies = ParsePolicies(f.policy);
  if (!policies.ok()) return Fail(policies.status());
  if (policies->size() * seeds.size() > kMaxRuns) {
    return UsageError(absl::StrCat("--policy x --seeds: ", policies->size(), " x ", seeds.size(),
                                   " runs, more than the limit of ", kMaxRuns));
  }

  // Outputs are checked against the inputs before anything is read, and opened before the runs.
  std::vector<Output> outs;
  if (absl::Status s = OpenOutputs(f, *format, &outs); !s.ok()) return Fail(s);

  absl::StatusOr<seedance::sim::Workload> workload = LoadWorkload(f);
  if (!workload.ok()) return Fail(workload.status());
  if (absl::Status s = ApplyPolicyOptions(f.policy_opts, *policies, *workload, &*options);
      !s.ok()) {
    return Fail(s);
  }
  const std::string pods_name = f.pods.empty() ? "built-in workload" : Shown(f.pods);
  if (absl::Status s = seedance::sim::CheckRun(*workload, *options); !s.ok()) {
    return Fail(Prefixed(pods_name, s));
  }

  std::string order_csv;
  if (!f.dump_order.empty()) {
    absl::StatusOr<std::string> csv = FillOrderCsv(*workload, *options, seeds);
    if (!csv.ok()) return Fail(Prefixed(pods_name, csv.status()));
    order_csv = std::move(*csv);
  }

  // Runs, spread over worker threads.
  struct Task {
    size_t policy;
    size_t seed_index;
  };
  std::vector<Task> tasks;
  for (size_t p = 0; p < policies->size(); ++p) {
    for (size_t s = 0; s < seeds.size(); ++s) tasks.push_back({p, s});
  }
  std::vector<seedance::sim::PolicyRuns> results(policies->size());
  for (size_t p = 0; p < policies->size(); ++p) {
    results[p].name = (*policies)[p];
    results[p].runs.resize(seeds.size());
  }
  Progress progress(tasks.size(), !f.quiet && isatty(STDERR_FILENO));
  const auto start = std::chrono::steady_clock::now();
  const absl::Status failed = base::ParallelFor(tasks.size(), f.jobs, [&](size_t i) {
    const std::string& policy = (*policies)[tasks[i].policy];
    seedance::sim::SimOptions o = *options;
    o.seed = seeds[tasks[i].seed_index];
    auto r = seedance::sim::Run(*workload, policy, o);
    if (!r.ok()) return Prefixed(policy, r.status());
    results[tasks[i].policy].runs[tasks[i].seed_index] = std::move(*r);
    progress.Tick(policy + " seed " + std::to_string(o.seed));
    return absl::OkStatus();
  });
  if (!failed.ok()) return Fail(failed);

  seedance::sim::ReportMeta meta;
  meta.nodes_source = f.nodes.empty() ? "builtin" : f.nodes;
  meta.pods_source = f.pods.empty() ? "builtin" : f.pods;
  meta.mode = options->mode;
  meta.options = *options;
  meta.seeds = seeds;
  meta.total_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string summary =
      absl::StrFormat("%zu runs (%zu policies x %zu seeds) in %.2f s wall on %d thread(s)\n",
                      tasks.size(), policies->size(), seeds.size(), meta.total_wall_s,
                      base::WorkerCount(f.jobs, tasks.size()));

  return simulate::Finish(
      f, *format, outs,
      [&](const std::string& fmt) {
        return fmt == "order" ? order_csv : Render(fmt, results, meta, summary);
      },
      summary);
}

// The placement run's flags: the workload, the policies, the mode and its clock.
void AddRunFlags(CLI::App* sim, const std::shared_ptr<Flags>& f) {
  sim->add_option("--nodes", f->nodes,
                  "Node CSV (sn,cpu_milli,memory_mib,gpu,model), a cluster descriptor "
                  "(.yaml/.yml/.json, docs/formats.md), or `kubectl get nodes -o json` output "
                  "(docs/kubernetes.md)")
      ->type_name("FILE");
  sim->add_option("--pods", f->pods,
                  "Pod CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,...]), or "
                  "`kubectl get pods -A -o json` output (with a kubectl node snapshot as --nodes)")
      ->type_name("FILE");
  sim->add_flag("--ignore-unknown", f->ignore_unknown,
                "kubectl snapshots: skip objects Seedance does not understand (each named in a "
                "warning) instead of refusing the file");
  f->policy_opt = sim->add_option("--policy", f->policy,
                                  "Comma list of random, dotprod, clustering, packing, bestfit, "
                                  "fgd, cas, least-allocated, most-allocated (kube-scheduler's "
                                  "scoring); 'all' = the six reference policies plus cas. "
                                  "autoscale: the one policy placing pods under both "
                                  "autoscalers (default: a built-in best fit)")
                      ->capture_default_str();
  sim->add_option("--mode", f->mode,
                  "fill (paper protocol), churn (Poisson arrivals with "
                  "departures), replay (trace times), jobs (a multi-tenant job trace: "
                  "--trace, --tenants; docs/jobs.md) or autoscale (churn on a cluster whose "
                  "node groups a cluster autoscaler grows and shrinks; docs/cluster-autoscaler.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fill", "churn", "replay", "jobs", "autoscale"}));
  AddSeeds(sim, "--seeds,--seed", &f->seeds, &f->seeds_text,
           "Seeds: N, A-B or a comma list (at most 100000)");
  f->not_autoscale.push_back(
      sim->add_option("--rng", f->rng,
                      "fill: random stream for pod and tie-break node order. 'seedance' "
                      "(mt19937_64) or 'reference' (Go math/rand drawn as the FGD authors' "
                      "simulator does, so seeds 42-51 replay the paper's runs)")
          ->capture_default_str()
          ->check(CLI::IsMember({"seedance", "reference"})));
  f->not_autoscale.push_back(AddDouble(sim, "--tune", &f->options.tune, base::Closed(0.01, 100),
                                       "fill: replayed GPU demand as a multiple of GPU capacity"));
  f->load_opt = AddDouble(sim, "--load", &f->options.load, base::Closed(0.001, 100),
                          "churn: offered GPU load (1.0 = capacity); autoscale: against the "
                          "groups at their max sizes (default there 0.9)");
  f->not_autoscale.push_back(
      sim->add_option("--load-basis", f->load_basis,
                      "churn: 'means' (rate x mean lifetime x mean GPU / capacity, default) or "
                      "'exact' (rate x E[lifetime x GPU] / capacity)")
          ->capture_default_str()
          ->check(CLI::IsMember({"means", "exact"})));
  f->duration_opt =
      AddDuration(sim, "--duration", &f->duration_s, 3600, base::NonNegative(kMaxSimulatedSeconds),
                  "churn/replay: measured window of simulated time; churn needs > 0, replay "
                  "without it (or with 0) replays the whole trace");
  AddDuration(sim, "--warmup", &f->warmup_s, 3600, base::NonNegative(kMaxSimulatedSeconds),
              "churn/replay: warm-up before measuring (default: churn 3 mean lifetimes, capped "
              "at 7 days; replay 0; autoscale 6h)")
      ->default_str("auto");
  f->not_autoscale.push_back(AddDouble(sim, "--time-scale", &f->options.time_scale,
                                       base::Closed(1e-6, 1e9),
                                       "replay: divide trace times by this"));
  sim->add_option("--policy-opt", f->policy_opts,
                  "Policy knob KEY=VALUE (repeatable; see docs/cas.md)")
      ->type_name("KEY=VALUE");
  f->not_autoscale.push_back(
      sim->add_option("--score-cache", f->score_cache,
                      "Reuse cacheable scores between decisions: on (default) or off (every score "
                      "recomputed; results must be identical)")
          ->capture_default_str()
          ->check(CLI::IsMember({"on", "off"})));
  f->not_autoscale.push_back(
      sim->add_option(
             "--topology", f->topology,
             "Give every node a documented GPU topology before the run (docs/topology.md): "
             "none (default: the nodes' own), dgx (NVSwitch, 2 NUMA nodes), pcie-tree (2 "
             "PCIe switches x half the GPUs, 2 NUMA nodes, no NVLink) or mixed (alternating); "
             "reports then add the multi-GPU pods' best-bandwidth share and all-reduce "
             "slowdown")
          ->capture_default_str()
          ->check(CLI::IsMember({"none", "dgx", "pcie-tree", "mixed"})));
  f->not_autoscale.push_back(
      sim->add_option("--gpu-choice", f->gpu_choice,
                      "Which free GPUs a whole-GPU pod gets on its node: topology (default: the "
                      "best-bandwidth set that keeps islands whole; lowest indices without "
                      "topology) or index (lowest indices, as the FGD reference simulator)")
          ->capture_default_str()
          ->check(CLI::IsMember({"topology", "index"})));
}

// --mode jobs (and the job-trace input of --mode autoscale).
void AddJobTraceFlags(CLI::App* sim, const std::shared_ptr<Flags>& f) {
  sim->add_option("--trace", f->trace,
                  "jobs and autoscale: job trace CSV (timestamp,duration,num_gpus[,gpu_time],"
                  "cluster), e.g. the Philly trace; autoscale replays its jobs at their submit "
                  "times on a pool of the tenants' 8-GPU nodes")
      ->type_name("FILE");
  sim->add_option("--tenants", f->tenants,
                  "jobs and autoscale: tenant CSV (vc,node num[,weight]): each tenant's 8-GPU "
                  "nodes, its partition (isolated) or guaranteed quota (quota-*); autoscale: their "
                  "sum is the node group's size (x --group-max)")
      ->type_name("FILE");
  sim->add_option("--protocol", f->protocol,
                  "jobs: the job protocol; helios-qssf (the SC'21 Helios simulator's: 1-second "
                  "clock, consolidate placement, its checkpoint overheads) is the only one")
      ->capture_default_str()
      ->check(CLI::IsMember({"helios-qssf"}));
  sim->add_option("--partition", f->partition,
                  "jobs: where fifo, sjf and srtf run: isolated (one partition per tenant) or "
                  "pooled (every node shared); quota-* always share one pool")
      ->capture_default_str()
      ->check(CLI::IsMember({"isolated", "pooled"}));
  sim->add_option("--window", f->window,
                  "jobs and autoscale: START,END in UTC ('2017-10-01,2017-11-30' or with "
                  "HH:MM:SS; a bare end date runs to 23:59:00); default the whole trace")
      ->type_name("START,END");
  sim->add_option("--submit-ties", f->ties,
                  "jobs: order of jobs submitted in the same second: reverse (default: reverse "
                  "file order, which reproduces the Helios reference's output) or file")
      ->capture_default_str()
      ->check(CLI::IsMember({"reverse", "file"}));
  AddDouble(sim, "--capacity-scale", &f->capacity_scale, base::Closed(0.001, 1000),
            "jobs and autoscale: multiply every tenant's nodes (round half to even)");
}

// --mode autoscale only (refused elsewhere).
void AddAutoscaleFlags(CLI::App* sim, const std::shared_ptr<Flags>& f) {
  f->autoscale.drain_below_utilization = 0.5;  // CA's --scale-down-utilization-threshold
  f->autoscale_only = {
      sim->add_option("--expanders", f->expanders,
                      "autoscale: comma list of ca-least-waste (CA's least-waste: CPU and "
                      "memory waste, CA's scale-down) and seedance (price-weighted GPU waste, "
                      "similar groups balanced, drains that keep headroom); ratios are to the "
                      "first")
          ->capture_default_str(),
      AddDouble(sim, "--group-min", &f->group_min, base::Closed(0, 1),
                "autoscale: each node group's min size as a fraction of the node file's nodes "
                "of its shape"),
      AddDouble(sim, "--group-max", &f->group_max, base::Closed(1, 1000),
                "autoscale: each group's max size as a multiple of those nodes"),
      AddDouble(sim, "--drain-below", &f->autoscale.drain_below_utilization, base::Closed(0, 1),
                "autoscale: drain non-empty nodes under this utilization for --idle (CA's "
                "--scale-down-utilization-threshold; 0 = remove empty nodes only)"),
      AddDuration(sim, "--provision-min", &f->autoscale.provision_min_s, 1, base::Closed(0, 86400),
                  "autoscale: shortest provisioning delay of a new node"),
      AddDuration(sim, "--provision-max", &f->autoscale.provision_max_s, 1, base::Closed(0, 86400),
                  "autoscale: longest provisioning delay (uniform)"),
      AddDuration(sim, "--idle", &f->autoscale.idle_s, 1, base::Closed(0, 604800),
                  "autoscale: how long a node stays empty (or under --drain-below) before it "
                  "goes (CA's --scale-down-unneeded-time)"),
      sim->add_option("--ca-policy", f->autoscale.ca_policy,
                      "autoscale: the placement under the CA-like autoscaler, as a Kubernetes "
                      "cluster runs CA beside kube-scheduler: most-allocated (its bin-packing "
                      "strategy) or least-allocated (its default), both over CPU and memory "
                      "only; any registered policy (default: the same as --policy)")
          ->type_name("POLICY"),
      sim->add_flag("--prescale", f->autoscale.prescale,
                    "autoscale: Seedance's autoscaler also scales up ahead of the demand "
                    "expected during a provisioning delay (predictive pre-scaling)"),
      AddDuration(sim, "--scan-interval", &f->autoscale.scan_interval_s, 1,
                  base::Closed(0.001, 3600), "autoscale: the autoscaler's loop period"),
  };
}

}  // namespace

Command AddSimulateCommand(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  f->seeds = *base::ParseSeedList(f->seeds_text, "--seeds");
  CLI::App* sim = app.add_subcommand(
      "simulate", "Replay a workload against placement policies and compare them");
  sim->footer(
      "With no arguments it runs every policy on a built-in deterministic cluster and "
      "workload and prints the table.\n\n"
      "Examples:\n"
      "  seedance simulate\n"
      "  seedance simulate --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv "
      "\\\n"
      "      --policy fgd,bestfit,cas --mode fill --seeds 42-51 --tune 1.3 -o out.json\n"
      "  seedance simulate --nodes N.csv --pods P.csv --format html -o report.html\n"
      "  seedance simulate --nodes N.csv --pods P.csv --mode churn --load 1.2 --duration 72h "
      "--seeds 42-46\n"
      "  seedance simulate --nodes N.csv --pods P.csv --mode replay --time-scale 1 --format csv\n"
      "  kubectl get nodes -o json > nodes.json; kubectl get pods -A -o json > pods.json\n"
      "  seedance simulate --nodes nodes.json --pods pods.json --policy bestfit,fgd,cas\n"
      "  seedance simulate --mode jobs --trace philly.csv --tenants philly_vc.csv \\\n"
      "      --policy fifo,sjf,srtf --window 2017-10-01,2017-11-30 --capacity-scale 0.25\n"
      "  seedance simulate --mode autoscale --nodes N.csv --pods P.csv --duration 24h "
      "--seeds 42-44 --policy fgd\n"
      "  seedance simulate --mode autoscale --trace philly.csv --tenants philly_vc.csv \\\n"
      "      --window 2017-10-01,2017-11-30 --seeds 42-44 --prescale\n\n"
      "Limits: at most 10,000 runs (policies x seeds); a run replays at most 5,000,000 pods "
      "(fill: trace plus resampled; churn and autoscale: expected arrivals); --duration and "
      "--warmup at most 87600h; autoscale at most 1,000,000 scans.\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  AddRunFlags(sim, f);
  AddJobTraceFlags(sim, f);
  AddOutputFlags(sim, &f->out, kFormats,
                 "Write the results to FILE ('-' = standard output, the default)");
  f->not_autoscale.push_back(
      sim->add_option("--dump-order", f->dump_order,
                      "fill: also write each seed's pod arrival order to this CSV (seed,position,"
                      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,arrived_gpu_milli)")
          ->type_name("FILE"));
  f->not_autoscale.push_back(AddDeprecatedString(sim, "--json", &f->json, "-o FILE --format json"));
  f->not_autoscale.push_back(
      AddDeprecatedString(sim, "--report", &f->report, "-o FILE --format html"));
  AddAutoscaleFlags(sim, f);
  AddInt<int>(sim, "-j,--jobs", &f->jobs, 0, kMaxJobs, "Worker threads (0 = all cores)");
  sim->add_flag("-q,--quiet", f->quiet, "No progress bar and no summary line on stderr");

  Command cmd;
  cmd.app = sim;
  cmd.run = [f]() -> int { return Simulate(*f); };
  return cmd;
}

}  // namespace seedance::cli
