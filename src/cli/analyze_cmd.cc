// `seedance analyze`: cost-savings analysis of a profile (docs/cost.md).
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "seedance/cost/analyze.h"
#include "seedance/cost/prices.h"
#include "seedance/telemetry/profile.h"

namespace seedance::cli {
namespace {

struct AnalyzeFlags {
  std::string input;
  std::string report = "cost-savings";
  std::string prices;
  std::string format = "text";
  std::string output;
  seedance::cost::AnalyzeOptions options;
};

int Analyze(const AnalyzeFlags& f) {
  namespace cost = seedance::cost;
  if (f.report != "cost-savings") {
    return UsageError("--report: expected cost-savings, got '" + f.report + "'");
  }
  if (f.format != "text" && f.format != "json" && f.format != "html") {
    return UsageError("--format: expected text, json or html, got '" + f.format + "'");
  }
  auto profile = seedance::telemetry::LoadProfile(f.input);
  if (!profile.ok()) return UsageError(std::string(profile.status().message()));
  cost::PriceTable prices = cost::PriceTable::Builtin();
  if (!f.prices.empty()) {
    auto p = cost::LoadPrices(f.prices, prices);
    if (!p.ok()) return UsageError(std::string(p.status().message()));
    prices = std::move(*p);
  }
  auto report = cost::Analyze(*profile, prices, f.options);
  if (!report.ok()) return UsageError(f.input + ": " + std::string(report.status().message()));
  std::string out = f.format == "json"   ? cost::RenderJson(*report, *profile)
                    : f.format == "html" ? cost::RenderHtml(*report, *profile)
                                         : cost::RenderText(*report, *profile);
  if (f.output.empty() || f.output == "-") {
    std::cout << out;
    return kExitOk;
  }
  std::ofstream file(f.output, std::ios::binary | std::ios::trunc);
  if (!file || !(file << out).flush()) return RuntimeError(f.output + ": cannot write");
  std::cerr << "wrote " << f.output << "\n";
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
  cmd.app->add_option("--input,-i", f->input, "profile JSON")->required();
  cmd.app->add_option("--report", f->report, "report kind: cost-savings")
      ->default_val("cost-savings");
  cmd.app->add_option("--prices", f->prices,
                      "YAML price table laid over the built-in one (docs/cost.md)");
  cmd.app->add_option("--format", f->format, "text, json or html")->default_val("text");
  cmd.app->add_option("--output,-o", f->output, "write the report here instead of stdout");
  cmd.app
      ->add_option("--idle-util", f->options.idle_gpu_util_pct,
                   "idle: every GPU below this utilisation (%)")
      ->default_val(15)
      ->check(CLI::Range(0.0, 100.0));
  cmd.app
      ->add_option("--idle-window", f->options.idle_window_s,
                   "idle: for at least this many seconds, continuously")
      ->default_val(60)
      ->check(CLI::NonNegativeNumber);
  cmd.app
      ->add_option("--underused-util", f->options.underused_gpu_util_pct,
                   "an allocated GPU below this mean utilisation is under-used (%)")
      ->default_val(30)
      ->check(CLI::Range(0.0, 100.0));
  cmd.app
      ->add_option("--drain-max-util", f->options.drain_max_gpu_util_pct,
                   "only nodes below this mean GPU utilisation are drained (%)")
      ->default_val(40)
      ->check(CLI::Range(0.0, 100.0));
  cmd.app
      ->add_option("--target-util-cap", f->options.target_gpu_util_cap_pct,
                   "a move may not push a target GPU's projected utilisation above this (%)")
      ->default_val(80)
      ->check(CLI::Range(0.0, 100.0));
  cmd.app
      ->add_option("--policy", f->options.policy,
                   "placement policy of the scheduler used for the plan (bestfit, cas, fgd, ...)")
      ->default_val("bestfit");
  cmd.app->footer(
      "Examples:\n"
      "  seedance analyze --input profile.json --report cost-savings\n"
      "  seedance analyze -i profile.json --prices prices.yaml --format html -o report.html\n"
      "  seedance analyze -i profile.json --idle-util 10 --idle-window 300 --format json\n"
      "Exit status: 0 ok, 1 cannot write, 2 bad flags or a malformed profile (the message names\n"
      "the file and the JSON path, e.g. p.json: /nodes/3/gpus/0/util_pct/7: expected number or "
      "null).");
  cmd.run = [f] { return Analyze(*f); };
  return cmd;
}

}  // namespace seedance::cli
