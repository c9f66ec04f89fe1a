// Internal to `seedance simulate`: the flags every mode reads and what the modes share.
// simulate_cmd.cc parses the flags and runs fill, churn and replay; simulate_jobs.cc runs
// --mode jobs and simulate_autoscale.cc --mode autoscale.
#ifndef SEEDANCE_CLI_SIMULATE_MODES_H_
#define SEEDANCE_CLI_SIMULATE_MODES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "options.h"
#include "seedance/base/io.h"
#include "seedance/clusterscale/cluster_autoscaler.h"
#include "seedance/sim/simulator.h"

namespace seedance::cli::simulate {

// Runs (policies x seeds, or autoscalers x seeds) in one invocation; each run keeps its results
// in memory for the report.
inline constexpr size_t kMaxRuns = 10000;

// All flag values; they live as long as the returned action, which outlives parsing.
struct Flags {
  std::string nodes, pods, policy = "all", mode = "fill", rng = "seedance";
  std::string load_basis = "means", score_cache = "on";
  std::string topology = "none", gpu_choice = "topology";
  // --mode jobs
  std::string trace, tenants, protocol = "helios-qssf", partition = "isolated", window;
  std::string ties = "reverse";
  double capacity_scale = 1.0;
  std::string seeds_text = "42-51";
  std::vector<uint64_t> seeds;
  OutputFlags out;
  std::string json, report, dump_order;  // --json and --report are deprecated aliases
  std::vector<std::string> policy_opts;
  seedance::sim::SimOptions options;
  double duration_s = 72 * 3600.0;
  double warmup_s = -1;  // < 0: the mode's default
  int jobs = 0;
  bool quiet = false;
  bool ignore_unknown = false;
  CLI::Option* duration_opt = nullptr;
  // --mode autoscale (docs/cluster-autoscaler.md)
  std::string expanders = "ca-least-waste,seedance";
  double group_min = 0.1, group_max = 1.0;
  seedance::clusterscale::ChurnOptions autoscale;
  CLI::Option* policy_opt = nullptr;
  CLI::Option* load_opt = nullptr;
  std::vector<CLI::Option*> autoscale_only;  // refused in the other modes
  std::vector<CLI::Option*> not_autoscale;   // refused in autoscale mode
};

// An output opened before the runs, with the text to write once they are done.
struct Output {
  std::string flag;
  std::string format;
  std::unique_ptr<base::OutputFile> file;
};

// `status` with "PREFIX: " in front of its message, keeping its code (and so its exit status).
absl::Status Prefixed(const std::string& prefix, const absl::Status& status);
// An input name as it appears in messages: control characters escaped, clipped.
std::string Shown(const std::string& name);
// Reads --nodes and --pods (or the built-in workload) and checks what the runs need of them: a
// valid cluster with GPUs and at most kMaxGpuModels - 1 models. Warns about gpu_spec models the
// cluster lacks.
absl::StatusOr<seedance::sim::Workload> LoadWorkload(const Flags& f);
// Opens -o/--output (in `format`) and the extra outputs (--json, --report, --dump-order) before
// any run, refusing outputs that name an input or each other.
absl::Status OpenOutputs(const Flags& f, const std::string& format, std::vector<Output>* outs);

// Writes each output's text (`text_for(its format)`), then commits them all, so that a failed
// write leaves no output half-written; then prints `summary` on standard error unless the main
// output is a table (which ends with it) or -q. The command's exit status.
int Finish(const Flags& f, const std::string& format, std::vector<Output>& outs,
           const std::function<std::string(const std::string&)>& text_for,
           const std::string& summary);

// --mode jobs (simulate_jobs.cc). Its flags only with it, and the pod modes' not with it.
absl::Status CheckJobModeFlags(const Flags& f);
int SimulateJobs(const Flags& f);
// --mode autoscale --trace: the jobs of --window as pods of 8-GPU nodes (PodsFromJobs) and
// the pooled cluster of the tenants' nodes (x --capacity-scale) as that many 8-GPU nodes, and
// the last job's submit time in seconds after the first's.
struct JobReplay {
  std::vector<seedance::core::NodeSpec> nodes;
  std::vector<seedance::core::PodSpec> pods;
  double span_s = 0;
};
absl::StatusOr<JobReplay> LoadJobReplay(const Flags& f);

// --mode autoscale (simulate_autoscale.cc). Its flags only with it, and the others not with it.
absl::Status CheckAutoscaleModeFlags(const Flags& f);
int SimulateAutoscale(const Flags& f);

}  // namespace seedance::cli::simulate

#endif  // SEEDANCE_CLI_SIMULATE_MODES_H_
