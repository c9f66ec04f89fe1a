// `seedance analyze`: cost-savings analysis of a profile (docs/cost.md).
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "options.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/cost/analyze.h"
#include "seedance/cost/prices.h"
#include "seedance/k8s/snapshot.h"
#include "seedance/sched/registry.h"
#include "seedance/telemetry/profile.h"

namespace seedance::cli {
namespace {

const std::vector<std::string> kFormats = {"table", "json", "html"};

struct AnalyzeFlags {
  std::string input;
  std::string nodes, pods;  // a kubectl snapshot instead of a profile
  bool ignore_unknown = false;
  std::string report = "cost-savings";
  std::string prices;
  OutputFlags out;
  seedance::cost::AnalyzeOptions options;
};

// -i's profile, or a profile made from a kubectl snapshot (--nodes, --pods).
absl::StatusOr<telemetry::Profile> LoadInput(const AnalyzeFlags& f) {
  if (!f.input.empty()) return telemetry::LoadProfile(f.input);
  std::vector<std::string> paths = {f.nodes};
  if (!f.pods.empty()) paths.push_back(f.pods);
  absl::StatusOr<k8s::Snapshot> s = k8s::LoadSnapshot(paths, {.ignore_unknown = f.ignore_unknown});
  if (!s.ok()) return s.status();
  for (const std::string& w : s->warnings) Warn(w);
  Warn(
      "a kubectl snapshot measures nothing: each GPU's utilisation is taken to be its allocated "
      "share, so idle and under-used mean unallocated and partly allocated");
  return k8s::ToProfile(*s);
}

// One input: a profile or a snapshot.
absl::Status CheckInputs(const AnalyzeFlags& f) {
  if (!f.pods.empty() && f.nodes.empty()) {
    return absl::InvalidArgumentError("--pods goes with --nodes (the snapshot's nodes)");
  }
  if (f.input.empty() && f.nodes.empty()) {
    return absl::InvalidArgumentError(
        "no input: give --input PROFILE (-i), or a kubectl snapshot as --nodes FILE "
        "[--pods FILE]");
  }
  if (!f.input.empty() && !f.nodes.empty()) {
    return absl::InvalidArgumentError(
        "give --input PROFILE or a kubectl snapshot (--nodes, --pods), not both");
  }
  if (f.ignore_unknown && f.nodes.empty()) {
    return absl::InvalidArgumentError("--ignore-unknown applies to a kubectl snapshot (--nodes)");
  }
  return absl::OkStatus();
}

int Analyze(AnalyzeFlags f) {
  namespace cost = seedance::cost;
  if (f.report != "cost-savings") {
    return UsageError("--report: expected cost-savings, got '" + base::ForTerminal(f.report) + "'");
  }
  const auto& registry = seedance::sched::Registry::Builtins();
  if (!registry.Contains(f.options.policy)) {
    std::string msg = "--policy: unknown placement policy '" + base::ForTerminal(f.options.policy) +
                      "' (expected one of " + absl::StrJoin(registry.Names(), ", ") + ")";
    const std::string near = base::ClosestMatch(f.options.policy, registry.Names());
    if (!near.empty()) msg += "; did you mean " + near + "?";
    return UsageError(msg);
  }
  if (absl::Status st = CheckInputs(f); !st.ok()) return UsageError(std::string(st.message()));
  if (f.out.format == "text") {
    Warn("--format text is deprecated; use --format table");
    f.out.format = "table";
  }
  auto format = ResolveFormat(f.out, kFormats);
  if (!format.ok()) return Fail(format.status());
  if (absl::Status s = base::CheckOutputsDistinct(
          {{"--input", f.input}, {"--nodes", f.nodes}, {"--pods", f.pods}, {"--prices", f.prices}},
          {{"--output", f.out.output}});
      !s.ok()) {
    return Fail(s);
  }
  const std::string output = f.out.output.empty() ? "-" : f.out.output;
  auto out = base::OutputFile::Open(output);
  if (!out.ok()) return Fail(out.status());
  auto profile = LoadInput(f);
  if (!profile.ok()) return Fail(profile.status());
  cost::PriceTable prices = cost::PriceTable::Builtin();
  if (!f.prices.empty()) {
    auto p = cost::LoadPrices(f.prices, prices);
    if (!p.ok()) return Fail(p.status());
    prices = std::move(*p);
  }
  auto report = cost::Analyze(*profile, prices, f.options);
  if (!report.ok()) {
    const std::string& source = f.input.empty() ? f.nodes : f.input;
    const std::string where = source == "-" ? "<stdin>" : source;
    return Fail(
        absl::Status(report.status().code(), absl::StrCat(where, ": ", report.status().message())));
  }
  const std::string text = *format == "json"   ? cost::RenderJson(*report, *profile)
                           : *format == "html" ? cost::RenderHtml(*report, *profile)
                                               : cost::RenderText(*report, *profile);
  if (absl::Status s = (*out)->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = (*out)->Commit(); !s.ok()) return Fail(s);
  if (output != "-") std::cerr << "wrote " << base::ForTerminal(output) << "\n";
  return kExitOk;
}

}  // namespace

Command AddAnalyzeCommand(CLI::App& app) {
  auto f = std::make_shared<AnalyzeFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "analyze",
      "Cost-savings analysis of a profile written by `seedance profile`: idle nodes (every GPU\n"
      "below --idle-util for --idle-window seconds and no pending pod that fits), under-used and\n"
      "fragmented GPUs, pods whose CPUs and GPUs sit on different NUMA nodes, and a consolidation\n"
      "plan computed with the scheduler (GPU model, NUMA and NVLink kept) with the money it "
      "saves,\n"
      "from a GPU price table (built-in, or --prices FILE.yaml). See docs/cost.md.");
  cmd.app->add_option("-i,--input", f->input, "profile JSON ('-' = stdin)")->type_name("FILE");
  cmd.app
      ->add_option("--nodes", f->nodes,
                   "instead of -i: `kubectl get nodes -o json` output (docs/kubernetes.md)")
      ->type_name("FILE");
  cmd.app
      ->add_option("--pods", f->pods,
                   "with --nodes: `kubectl get pods -A -o json` output (placements from the "
                   "seedance.io/gpus annotation)")
      ->type_name("FILE");
  cmd.app->add_flag("--ignore-unknown", f->ignore_unknown,
                    "with --nodes: skip objects Seedance does not understand (each named in a "
                    "warning) instead of refusing the snapshot");
  cmd.app->add_option("--report", f->report, "report kind: cost-savings")
      ->default_val("cost-savings");
  cmd.app
      ->add_option("--prices", f->prices,
                   "YAML price table laid over the built-in one (docs/cost.md)")
      ->type_name("FILE");
  cmd.app
      ->add_option("-o,--output", f->out.output,
                   "write the report to FILE instead of standard output ('-' = stdout)")
      ->type_name("FILE");
  // --format: table, json or html; `text` (the old name of table) is accepted with a warning.
  cmd.app
      ->add_option("--format", f->out.format,
                   "Output format: table, json, html (default: from -o's extension, else table)")
      ->type_name("FORMAT")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "table" || v == "json" || v == "html" || v == "text") return "";
            return "--format: expected table, json or html, got '" + base::ForTerminal(v) + "'";
          },
          "", "FORMAT"));
  AddDouble(cmd.app, "--idle-util", &f->options.idle_gpu_util_pct, base::Closed(0, 100),
            "idle: every GPU below this utilisation (%)");
  AddDuration(cmd.app, "--idle-window", &f->options.idle_window_s, 1, base::NonNegative(1e11),
              "idle: for at least this long, continuously");
  AddDouble(cmd.app, "--underused-util", &f->options.underused_gpu_util_pct, base::Closed(0, 100),
            "an allocated GPU below this mean utilisation is under-used (%)");
  AddDouble(cmd.app, "--drain-max-util", &f->options.drain_max_gpu_util_pct, base::Closed(0, 100),
            "only nodes below this mean GPU utilisation are drained (%)");
  AddDouble(cmd.app, "--target-util-cap", &f->options.target_gpu_util_cap_pct, base::Closed(0, 100),
            "a move may not push a target GPU's projected utilisation above this (%)");
  cmd.app
      ->add_option("--policy", f->options.policy,
                   "placement policy of the scheduler used for the plan (bestfit, cas, fgd, ...)")
      ->default_val("bestfit");
  cmd.app->footer(
      "Examples:\n"
      "  seedance analyze -i profile.json\n"
      "  seedance analyze -i profile.json --prices prices.yaml -o report.html\n"
      "  seedance analyze -i profile.json --idle-util 10 --idle-window 5m --format json\n"
      "  seedance analyze --nodes nodes.json --pods pods.json   # kubectl get ... -o json\n"
      "A malformed or meaningless profile or price table is named with its file and JSON path\n"
      "or line, e.g. p.json: $.nodes[3].gpus[0].util_pct[7]: 250 is outside 0..100 (percent).\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  cmd.run = [f] { return Analyze(*f); };
  return cmd;
}

}  // namespace seedance::cli
