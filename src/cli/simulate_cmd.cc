// `seedance simulate`: replays a workload against placement policies (docs/simulator.md).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "seedance/core/resource_descriptor.h"
#include "seedance/sched/registry.h"
#include "seedance/sim/report.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::cli {
namespace {

using seedance::sim::Mode;

class Progress {
 public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled) {}
  void Tick(const std::string& label) {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    if (!enabled_) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done_ / total_);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu %-24s", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), done_, total_, label.c_str());
    if (done_ == total_) std::fprintf(stderr, "\r%*s\r", width + 40, "");
    std::fflush(stderr);
  }

 private:
  std::mutex mu_;
  size_t total_, done_ = 0;
  bool enabled_;
};

// A CSV field, quoted when it holds a separator, quote or line break (RFC 4180).
std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Writes fill mode's arrival order for each seed as CSV, so the replay can be analysed outside
// the simulator (tools/analysis/fill_floor.py bounds any policy on exactly these sequences).
int DumpFillOrder(const seedance::sim::Workload& workload, seedance::sim::SimOptions options,
                  const std::vector<uint64_t>& seeds, const std::string& path) {
  std::ofstream out(path);
  if (!out) return UsageError(path + ": cannot write");
  out << "seed,position,name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,arrived_gpu_milli\n";
  for (uint64_t seed : seeds) {
    options.seed = seed;
    absl::StatusOr<seedance::sim::FillPlan> plan = seedance::sim::PlanFill(workload, options);
    if (!plan.ok()) {
      std::cerr << "seedance: " << plan.status().message() << "\n";
      return kExitUsage;
    }
    int64_t arrived = 0;
    for (size_t i = 0; i < plan->pods.size(); ++i) {
      const seedance::core::PodSpec& p = plan->pods[i];
      arrived += p.shape.TotalGpuMilli();
      out << seed << ',' << i << ',' << CsvField(p.name) << ',' << p.shape.cpu_milli << ','
          << p.shape.memory_mib << ',' << p.shape.num_gpu << ',' << p.shape.gpu_milli << ','
          << CsvField(p.gpu_spec) << ',' << arrived << '\n';
    }
  }
  out.flush();
  if (!out) return UsageError(path + ": cannot write");
  return 0;
}

int Simulate(const std::string& nodes_path, const std::string& pods_path,
             const std::string& policy_list, const std::string& mode_name,
             const std::string& seeds_text, seedance::sim::SimOptions options,
             const std::vector<std::string>& policy_opts, const std::string& json_path,
             const std::string& report_path, const std::string& dump_order_path, int jobs,
             bool quiet) {
  // Inputs.
  seedance::sim::Workload workload;
  std::string nodes_source = "builtin", pods_source = "builtin";
  if (nodes_path.empty() != pods_path.empty()) {
    return UsageError("--nodes and --pods go together (or give neither for the built-in demo)");
  }
  if (nodes_path.empty()) {
    workload = seedance::sim::BuiltinWorkload();
  } else {
    absl::StatusOr<std::vector<seedance::core::NodeSpec>> nodes;
    if (absl::EndsWith(nodes_path, ".yaml") || absl::EndsWith(nodes_path, ".yml") ||
        absl::EndsWith(nodes_path, ".json")) {
      // A Unified Resource Descriptor (docs/formats.md) instead of a node CSV.
      auto cluster = seedance::core::LoadClusterDescriptor(nodes_path);
      if (!cluster.ok()) return UsageError(std::string(cluster.status().message()));
      nodes = seedance::core::ToNodeSpecs(*cluster);
    } else {
      nodes = seedance::trace::ReadNodeCsv(nodes_path);
    }
    if (!nodes.ok()) return UsageError(std::string(nodes.status().message()));
    auto pods = seedance::trace::ReadPodCsv(pods_path);
    if (!pods.ok()) return UsageError(std::string(pods.status().message()));
    if (nodes->empty()) return UsageError(nodes_path + ": no nodes");
    if (pods->empty()) return UsageError(pods_path + ": no pods");
    workload.nodes = std::move(*nodes);
    workload.pods = std::move(*pods);
    nodes_source = nodes_path;
    pods_source = pods_path;
  }
  if (mode_name == "fill")
    options.mode = Mode::kFill;
  else if (mode_name == "churn")
    options.mode = Mode::kChurn;
  else if (mode_name == "replay")
    options.mode = Mode::kReplay;
  else
    return UsageError("--mode: expected fill, churn or replay, got '" + mode_name + "'");

  std::vector<uint64_t> seeds;
  if (!ParseSeedList(seeds_text, &seeds)) {
    return UsageError("--seeds: expected N, A-B or a comma list, got '" + seeds_text + "'");
  }

  if (!dump_order_path.empty()) {
    if (options.mode != Mode::kFill) return UsageError("--dump-order: only for --mode fill");
    const int rc = DumpFillOrder(workload, options, seeds, dump_order_path);
    if (rc != 0) return rc;
  }

  const auto& registry = seedance::sched::Registry::Builtins();
  std::vector<std::string> policies;
  for (absl::string_view p : absl::StrSplit(policy_list, ',', absl::SkipEmpty())) {
    if (p == "all") {
      for (const auto& n : seedance::sched::ReferencePolicyNames()) policies.push_back(n);
      policies.push_back("cas");
    } else {
      std::string name(p);
      if (!registry.Contains(name)) {
        std::string known;
        for (const auto& n : registry.Names()) known += (known.empty() ? "" : ", ") + n;
        return UsageError("--policy: unknown policy '" + name + "' (known: " + known + ", all)");
      }
      policies.push_back(name);
    }
  }
  if (policies.empty()) return UsageError("--policy: no policy given");
  for (const std::string& kv : policy_opts) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return UsageError("--policy-opt: expected KEY=VALUE, got '" + kv + "'");
    }
    options.policy_params[kv.substr(0, eq)] = kv.substr(eq + 1);
  }

  // Runs, spread over worker threads.
  struct Task {
    size_t policy;
    uint64_t seed;
  };
  std::vector<Task> tasks;
  for (size_t p = 0; p < policies.size(); ++p) {
    for (uint64_t s : seeds) tasks.push_back({p, s});
  }
  std::vector<seedance::sim::PolicyRuns> results(policies.size());
  for (size_t p = 0; p < policies.size(); ++p) {
    results[p].name = policies[p];
    results[p].runs.resize(seeds.size());
  }
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(tasks.size()));
  Progress progress(tasks.size(), !quiet && isatty(STDERR_FILENO));
  std::atomic<size_t> next{0};
  std::mutex err_mu;
  std::string first_error;
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      seedance::sim::SimOptions o = options;
      o.seed = tasks[i].seed;
      auto r = seedance::sim::Run(workload, policies[tasks[i].policy], o);
      if (!r.ok()) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (first_error.empty())
          first_error = policies[tasks[i].policy] + ": " + std::string(r.status().message());
        continue;
      }
      const size_t seed_idx = i % seeds.size();
      results[tasks[i].policy].runs[seed_idx] = std::move(*r);
      progress.Tick(policies[tasks[i].policy] + " seed " + std::to_string(tasks[i].seed));
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (!first_error.empty()) {
    std::cerr << "seedance: " << first_error << "\n";
    return first_error.find("unknown cas option") != std::string::npos ||
                   first_error.find("not a number") != std::string::npos
               ? kExitUsage
               : kExitFailure;
  }

  seedance::sim::ReportMeta meta;
  meta.nodes_source = nodes_source;
  meta.pods_source = pods_source;
  meta.mode = options.mode;
  meta.options = options;
  meta.seeds = seeds;
  meta.total_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << seedance::sim::RenderTable(results, meta);
  std::printf("%zu runs (%zu policies x %zu seeds) in %.2f s wall on %d thread(s)\n", tasks.size(),
              policies.size(), seeds.size(), meta.total_wall_s, jobs);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << seedance::sim::ToJson(results, meta).dump(1) << "\n";
    if (!out) return UsageError(json_path + ": cannot write");
  }
  if (!report_path.empty()) {
    std::ofstream out(report_path);
    out << seedance::sim::RenderHtml(results, meta);
    if (!out) return UsageError(report_path + ": cannot write");
  }
  return 0;
}

}  // namespace

Command AddSimulateCommand(CLI::App& app) {
  // Flag values live as long as the returned action, which outlives parsing.
  struct Flags {
    std::string nodes, pods, policy = "all", mode = "fill", seeds = "42-51", json, report,
                             dump_order;
    std::vector<std::string> policy_opts;
    seedance::sim::SimOptions options;
    int jobs = 0;
    bool quiet = false;
    std::string load_basis = "means";
    std::string rng = "seedance";
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sim = app.add_subcommand(
      "simulate", "Replay a workload against placement policies and compare them");
  sim->footer(
      "With no arguments it runs every policy on a built-in deterministic cluster and "
      "workload.\n\nExamples:\n"
      "  seedance simulate --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv "
      "\\\n"
      "      --policy fgd,bestfit,cas --mode fill --seeds 42-51 --tune 1.3 --json out.json "
      "--report out.html\n"
      "  seedance simulate --nodes N.csv --pods P.csv --mode churn --load 1.2 --seeds 42-46\n"
      "  seedance simulate --nodes N.csv --pods P.csv --mode replay --time-scale 1");
  sim->add_option("--nodes", f->nodes,
                  "Node CSV (sn,cpu_milli,memory_mib,gpu,model), or a cluster descriptor "
                  "(.yaml/.yml/.json, docs/formats.md)");
  sim->add_option("--pods", f->pods,
                  "Pod CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,...])");
  sim->add_option("--policy", f->policy,
                  "Comma list of random, dotprod, clustering, packing, bestfit, fgd, cas; "
                  "'all' = the six reference policies plus cas")
      ->capture_default_str();
  sim->add_option("--mode", f->mode,
                  "fill (paper protocol), churn (Poisson arrivals with "
                  "departures) or replay (trace times)")
      ->capture_default_str();
  sim->add_option("--seeds", f->seeds, "Seeds: N, A-B or a comma list")->capture_default_str();
  sim->add_option("--rng", f->rng,
                  "fill: random stream for pod and tie-break node order. 'seedance' "
                  "(mt19937_64) or 'reference' (Go math/rand drawn as the FGD authors' "
                  "simulator does, so seeds 42-51 replay the paper's runs)")
      ->capture_default_str()
      ->check(CLI::IsMember({"seedance", "reference"}));
  sim->add_option("--tune", f->options.tune,
                  "fill: replayed GPU demand as a multiple of GPU capacity")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 100.0));
  sim->add_option("--load", f->options.load, "churn: offered GPU load (1.0 = capacity)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 100.0));
  sim->add_option("--load-basis", f->load_basis,
                  "churn: 'means' (rate x mean lifetime x mean GPU / capacity, default) or "
                  "'exact' (rate x E[lifetime x GPU] / capacity)")
      ->capture_default_str()
      ->check(CLI::IsMember({"means", "exact"}));
  CLI::Option* duration_opt =
      sim->add_option(
             "--duration", f->options.duration_h,
             "churn/replay: measured window in simulated hours (replay: <=0 = whole trace)")
          ->capture_default_str();
  sim->add_option("--warmup", f->options.warmup_h,
                  "churn/replay: warm-up hours before measuring (<0: churn 3 mean lifetimes, "
                  "replay 0)")
      ->capture_default_str();
  sim->add_option("--time-scale", f->options.time_scale, "replay: divide trace times by this")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sim->add_option("--policy-opt", f->policy_opts,
                  "Policy knob KEY=VALUE (repeatable; see docs/cas.md)");
  sim->add_option("--json", f->json,
                  "Write results (summaries and per-seed curves) to this JSON file");
  sim->add_option("--report", f->report, "Write an offline HTML report with the curves");
  sim->add_option("--dump-order", f->dump_order,
                  "fill: also write each seed's pod arrival order to this CSV (seed,position,"
                  "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,arrived_gpu_milli)");
  sim->add_option("-j,--jobs", f->jobs, "Worker threads (default: all cores)");
  sim->add_flag("-q,--quiet", f->quiet, "No progress bar");

  Command cmd;
  cmd.app = sim;
  cmd.run = [f, duration_opt]() -> int {
    seedance::sim::SimOptions options = f->options;
    if (f->mode == "replay" && duration_opt->count() == 0) options.duration_h = -1;  // whole trace
    options.load_basis = f->load_basis == "exact" ? seedance::sim::LoadBasis::kExact
                                                  : seedance::sim::LoadBasis::kMeans;
    if (f->rng == "reference") {
      if (f->mode != "fill") return UsageError("--rng reference: only for --mode fill");
      options.rng = seedance::sim::RngKind::kReference;
    }
    return Simulate(f->nodes, f->pods, f->policy, f->mode, f->seeds, options, f->policy_opts,
                    f->json, f->report, f->dump_order, f->jobs, f->quiet);
  };
  return cmd;
}

}  // namespace seedance::cli
