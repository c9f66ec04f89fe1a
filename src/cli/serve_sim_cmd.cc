// `seedance serve-sim`: trace-driven LLM serving simulator (docs/serving.md).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/api/api.h"
#include "seedance/api/client.h"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"
#include "seedance/experiment/experiment.h"
#include "seedance/model/cost_model.h"
#include "seedance/model/plan_file.h"
#include "seedance/model/precision.h"
#include "seedance/serving/probe.h"
#include "seedance/serving/request_trace.h"
#include "seedance/serving/serving_sim.h"

namespace seedance::cli {
namespace {

using namespace seedance::serving;  // NOLINT: a thin shell over the serving library
using seedance::model::CostModel;
using seedance::model::GpuSpec;
using seedance::model::KnownGpus;
using seedance::model::KnownModels;
using seedance::model::LookupGpu;
using seedance::model::LookupModel;
using seedance::model::ModelConfig;

const std::vector<std::string> kOutputFormats = {"table", "json", "csv"};
const std::vector<std::string> kTraceFormats = {"auto", "azure", "mooncake", "sharegpt"};
// Largest explicit KV pool --prefix-cache N accepts (blocks).
constexpr int64_t kMaxPoolBlocks = int64_t{1} << 24;

struct Flags {
  std::string trace, model = "llama-3-8b", gpu = "a100-80g", batching = "continuous,static";
  std::string prefix_cache = "pool", preemption = "recompute", trace_format = "auto";
  OutputFlags out;
  std::string legacy_json;     // deprecated --json FILE: JSON to FILE besides the main output
  std::string precision_plan;  // --precision-plan: a `model plan` JSON's formats per layer class
  int tp = 1, block_size = 16, max_num_seqs = 256, max_batched_tokens = 2048;
  double rate_scale = 1.0, mem_util = 0.9, rate = 1.0, swap_gib = 4.0;
  int64_t static_max_len = 0, limit = 0;
  uint64_t seed = 42;
  // --experiment: the online precision probe (serving/probe.h, docs/serving.md).
  std::string experiment, experiment_name, events_out;
  ConnectionFlags server;
  bool apdf = false;
  double error_latency_ms = 0;
};

// One simulated batching mode and the wall time it took.
struct ModeRun {
  ServingResult r;
  double wall_s = 0;
};

// The experiment API of --server, as the probe's sink.
class ServerSink : public ExperimentSink {
 public:
  ServerSink(api::Client client, const std::string& name)
      : client_(std::move(client)), path_("/v1/experiments/" + api::UrlEncode(name)) {}
  // PUT the definition (idempotent: the server answers 200 for an identical one).
  absl::Status Define(const experiment::ExperimentSpec& spec) {
    return client_.CallObject("PUT", path_, {}, base::DumpJson(experiment::SpecToJson(spec), -1))
        .status();
  }
  PostResult Post(const std::string& events_json) override {
    absl::StatusOr<nlohmann::json> r =
        client_.CallObject("POST", path_ + "/events", {"accepted"}, events_json);
    if (r.ok()) return {absl::OkStatus(), false};
    return {r.status(), api::HttpStatusOf(r.status()) == 429};
  }
  void Sleep(double seconds) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
  const std::string& server() const { return client_.server(); }

 private:
  api::Client client_;
  std::string path_;
};

// --experiment FILE: the definition, each variant's replica and, once run, the probe's result.
struct Probe {
  std::string file;  // printable
  std::string name;
  experiment::ExperimentSpec spec;
  std::vector<std::string> plans;  // per variant: its plan file (printable); "" = model's own
  std::vector<std::unique_ptr<CostModel>> costs;  // `hw` points into these
  std::vector<ServingHardware> hw;
  ProbeOptions options;
  std::unique_ptr<base::OutputFile> events_out;  // --events-out
  std::unique_ptr<ServerSink> sink;              // --server
  ProbeResult result;
  double wall_s = 0;
};

// Everything the report needs besides the per-mode results.
struct Report {
  std::string trace;  // the path, printable
  size_t requests = 0;
  std::string model, gpu;
  int tp = 1, block_size = 16;
  double rate_scale = 1;
  int64_t kv_pool_blocks = 0;
  double kv_gib_per_gpu = 0;
  bool has_prefix_ids = false;
  double ideal_hit_ratio = 0;
  std::vector<ModeRun> runs;
  // --precision-plan: the file (printable) and what it made of the model; empty without it.
  std::string precision_plan;
  std::optional<seedance::model::ServingPlan> serving_plan;
  int64_t weight_bytes = 0;      // the model's weights at the plan's formats
  const Probe* probe = nullptr;  // --experiment, after the run
};

// A plan's formats per layer class for `model` served on `gpu` (plan_file.h). A bad file, or a
// format the GPU does not run, is InvalidArgument naming the file (the latter after `what`).
absl::StatusOr<seedance::model::ServingPlan> LoadServingPlan(const std::string& path,
                                                             const std::string& what,
                                                             const ModelConfig& model,
                                                             const GpuSpec& gpu) {
  namespace md = seedance::model;
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  absl::StatusOr<md::PlanFile> file = md::ParsePlanFile(*text, base::ForTerminal(path));
  if (!file.ok()) return file.status();
  absl::StatusOr<md::DeviceCapabilities> caps = md::LookupCapabilities(gpu.name);
  if (!caps.ok()) return caps.status();
  md::PrecisionBinder binder(*caps);
  absl::StatusOr<md::ServingPlan> plan = md::ApplyPlanFile(*file, model, binder);
  if (!plan.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", plan.status().message()));
  }
  return plan;
}

// The plan applied, for the JSON report.
nlohmann::ordered_json PlanJson(const Report& rep) {
  namespace md = seedance::model;
  const md::ServingPlan& sp = *rep.serving_plan;
  nlohmann::ordered_json classes = nlohmann::ordered_json::object();
  for (int i = 0; i < md::kNumLayerClasses; ++i) {
    const auto cls = static_cast<md::LayerClass>(i);
    classes[std::string(md::LayerClassName(cls))] = {
        {"format", std::string(md::DTypeName(sp.plan.of(cls)))}, {"planned_nodes", sp.nodes[i]}};
  }
  return {{"file", rep.precision_plan},
          {"classes", classes},
          {"unmatched_nodes", sp.unmatched},
          {"measured_output_error", sp.measured_rel_error
                                        ? nlohmann::ordered_json(*sp.measured_rel_error)
                                        : nlohmann::ordered_json()},
          {"weight_bytes", rep.weight_bytes},
          {"decisions", sp.plan.decisions}};
}

// The plan applied, for the table: one line of class formats, one of unmatched nodes.
std::string PlanTable(const Report& rep) {
  namespace md = seedance::model;
  const md::ServingPlan& sp = *rep.serving_plan;
  std::string out = absl::StrCat("precision plan ", rep.precision_plan, ":");
  for (int i = 0; i < md::kNumLayerClasses; ++i) {
    const auto cls = static_cast<md::LayerClass>(i);
    absl::StrAppend(&out, i ? ", " : " ", std::string(md::LayerClassName(cls)), " ",
                    std::string(md::DTypeName(sp.plan.of(cls))), sp.nodes[i] ? "" : " (model's)");
  }
  absl::StrAppend(&out, absl::StrFormat("; weights %.2f GiB\n",
                                        double(rep.weight_bytes) / double(int64_t{1} << 30)));
  if (!sp.unmatched.empty()) {
    absl::StrAppend(
        &out, "  nodes of no layer class (not applied): ", absl::StrJoin(sp.unmatched, ", "), "\n");
  }
  return out;
}

absl::Status ParsePrefixCache(const std::string& text, ServingSimOptions* o) {
  if (text == "off") {
    o->prefix_cache = PrefixCacheMode::kOff;
  } else if (text == "unbounded") {
    o->prefix_cache = PrefixCacheMode::kUnbounded;
  } else if (text == "pool") {
    o->prefix_cache = PrefixCacheMode::kPool;
  } else {
    absl::StatusOr<int64_t> n = base::ParseInt64(text, "--prefix-cache", 1, kMaxPoolBlocks);
    if (!n.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--prefix-cache: expected off, pool, unbounded or a block count N in 1..",
                       kMaxPoolBlocks, ", got '", base::ForTerminal(base::Clip(text, 64)), "'"));
    }
    o->prefix_cache = PrefixCacheMode::kPool;
    o->kv_blocks = *n;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BatchingMode>> ParseModes(const std::string& text) {
  std::vector<BatchingMode> modes;
  for (absl::string_view m : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    if (m == "continuous") {
      modes.push_back(BatchingMode::kContinuous);
    } else if (m == "static") {
      modes.push_back(BatchingMode::kStatic);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--batching: expected continuous and/or static, got '",
                       base::ForTerminal(base::Clip(std::string(m), 64)), "'"));
    }
  }
  if (modes.empty()) return absl::InvalidArgumentError("--batching: no mode given");
  return modes;
}

TraceFormat ToTraceFormat(const std::string& name) {
  if (name == "azure") return TraceFormat::kAzure;
  if (name == "mooncake") return TraceFormat::kMooncake;
  if (name == "sharegpt") return TraceFormat::kShareGpt;
  return TraceFormat::kAuto;
}

// A latency figure, or null when no request completed (the figure is undefined).
nlohmann::ordered_json Defined(double v, const ServingResult& r) {
  if (r.completed <= 0) return nullptr;
  return v;
}

// `s` with `where` before its message, its code kept.
absl::Status In(const std::string& where, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

// The probe's flags: --experiment's companions need it; --precision-plan conflicts with it.
absl::Status CheckProbeFlags(const Flags& f, const std::string& out_path) {
  namespace ab = absl;
  if (f.experiment.empty()) {
    const char* lonely = !f.experiment_name.empty()     ? "--experiment-name"
                         : !f.events_out.empty()        ? "--events-out"
                         : !f.server.server.empty()     ? "--server"
                         : !f.server.token_file.empty() ? "--token-file"
                         : !f.server.ca_file.empty()    ? "--ca-file"
                         : f.apdf                       ? "--apdf"
                         : f.error_latency_ms > 0       ? "--error-latency-ms"
                                                        : nullptr;
    if (lonely == nullptr) return ab::OkStatus();
    return ab::InvalidArgumentError(ab::StrCat(lonely, " needs --experiment FILE"));
  }
  if (!f.precision_plan.empty()) {
    return ab::InvalidArgumentError(
        "--precision-plan and --experiment: give one (the experiment names each variant's plan "
        "in \"precision_plan\")");
  }
  if (f.server.server.empty() && (!f.server.token_file.empty() || !f.server.ca_file.empty())) {
    return ab::InvalidArgumentError("--token-file and --ca-file need --server URL");
  }
  if (!f.events_out.empty() && (f.events_out == out_path || f.events_out == f.legacy_json)) {
    return ab::InvalidArgumentError(ab::StrCat("--events-out and the report name the same file '",
                                               base::ForTerminal(f.events_out), "'"));
  }
  return ab::OkStatus();
}

// --experiment FILE's definition and the experiment's name (--experiment-name, else the stem).
absl::Status LoadProbeSpec(const Flags& f, Probe* p) {
  p->file = f.experiment == "-" ? "<stdin>" : base::ForTerminal(f.experiment);
  absl::StatusOr<std::string> text = base::ReadInput(f.experiment, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  absl::StatusOr<nlohmann::json> doc = base::ParseJsonDocument(*text, p->file);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<experiment::ExperimentSpec> spec = experiment::ParseExperimentSpec(*doc);
  if (!spec.ok()) return In(p->file, spec.status());
  p->spec = std::move(*spec);
  if (!f.experiment_name.empty()) {
    p->name = f.experiment_name;
    absl::Status s = experiment::CheckExperimentName(p->name);
    return s.ok() ? s : In("--experiment-name", s);
  }
  if (f.experiment == "-") {
    return absl::InvalidArgumentError("--experiment -: name the experiment with --experiment-name");
  }
  p->name = std::filesystem::path(f.experiment).stem().string();
  if (absl::Status s = experiment::CheckExperimentName(p->name); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(p->file, ": ", s.message(),
                     " (the file's name names the experiment; or --experiment-name)"));
  }
  return absl::OkStatus();
}

// Each variant's replica: its plan (a path relative to the experiment file's folder) or the
// model's own formats, priced by the cost model.
absl::Status LoadProbeVariants(const Flags& f, const ModelConfig& model, const GpuSpec& gpu,
                               Probe* p) {
  const std::filesystem::path dir = f.experiment == "-"
                                        ? std::filesystem::path()
                                        : std::filesystem::path(f.experiment).parent_path();
  p->options.measured_rel_error.assign(p->spec.variants.size(), std::nullopt);
  for (size_t v = 0; v < p->spec.variants.size(); ++v) {
    std::filesystem::path plan(p->spec.variants[v].precision_plan);
    if (plan.empty()) {
      p->costs.push_back(std::make_unique<CostModel>(model, gpu, f.tp));
      p->plans.emplace_back();
    } else {
      if (plan.is_relative()) plan = dir / plan;
      const std::string shown = base::ForTerminal(plan.string());
      absl::StatusOr<seedance::model::ServingPlan> sp =
          LoadServingPlan(plan.string(), shown, model, gpu);
      if (!sp.ok()) {
        return In(absl::StrCat(
                      p->file, ": ",
                      base::JsonPathChild(base::JsonPathIndex("$.variants", v), "precision_plan")),
                  sp.status());
      }
      p->costs.push_back(
          std::make_unique<CostModel>(seedance::model::MakeCostModel(model, gpu, f.tp, sp->plan)));
      p->plans.push_back(shown);
      p->options.measured_rel_error[v] = sp->measured_rel_error;
    }
    p->hw.push_back(HardwareFromCostModel(*p->costs.back(), f.mem_util));
  }
  absl::Status s = CheckProbeSpec(p->spec, p->options);
  return s.ok() ? s : In(p->file, s);
}

// --experiment and its companions, before any work: the definition, the variants' plans and
// --events-out opened.
absl::StatusOr<std::unique_ptr<Probe>> LoadProbe(const Flags& f, const ModelConfig& model,
                                                 const GpuSpec& gpu) {
  auto p = std::make_unique<Probe>();
  if (absl::Status s = LoadProbeSpec(f, p.get()); !s.ok()) return s;
  if (absl::Status s = LoadProbeVariants(f, model, gpu, p.get()); !s.ok()) return s;
  p->options.error_latency_ms = f.error_latency_ms;
  if (f.apdf) p->options.apdf = ApdfOptions{};
  if (!f.events_out.empty()) {
    absl::StatusOr<std::unique_ptr<base::OutputFile>> out = base::OutputFile::Open(f.events_out);
    if (!out.ok()) return out.status();
    p->events_out = std::move(*out);
  }
  return p;
}

// A failure of --server: exit 1 whatever the reply (the input was checked here first).
int ServerFail(const absl::Status& s) {
  Fail(s);
  return kExitFailure;
}

// --server: the client, and the experiment PUT (so a refusal comes before the run).
absl::Status DefineOnServer(const Flags& f, Probe* p) {
  absl::StatusOr<api::Client> client = api::Client::Create(ClientOptionsOf(f.server));
  if (!client.ok()) return client.status();
  p->sink = std::make_unique<ServerSink>(std::move(*client), p->name);
  return p->sink->Define(p->spec);
}

// The probe on the trace with the first --batching mode; --events-out written.
absl::Status RunTheProbe(const RequestTrace& trace, const ServingSimOptions& sim, Probe* p) {
  p->options.sim = sim;
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<ProbeResult> r = RunProbe(trace, p->spec, p->name, p->hw, p->options);
  p->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) return r.status();
  p->result = std::move(*r);
  if (!p->events_out) return absl::OkStatus();
  if (absl::Status s =
          p->events_out->Write(experiment::EventsToJson(p->result.events, p->spec) + "\n");
      !s.ok()) {
    return s;
  }
  return p->events_out->Commit();
}

// The events POSTed in order, in batches of 1000; progress on a terminal every few seconds.
int PublishProbe(const Probe& p) {
  PublishOptions o;
  if (isatty(STDERR_FILENO)) {
    auto last = std::make_shared<std::chrono::steady_clock::time_point>();
    o.progress = [last](int64_t posted, int64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (posted < total && now - *last < std::chrono::seconds(2)) return;
      *last = now;
      std::cerr << "seedance: " << posted << " of " << total << " events posted\n";
    };
  }
  absl::Status s = PublishEvents(*p.sink, p.spec, p.result.events, o);
  return s.ok() ? kExitOk : ServerFail(In(p.sink->server(), s));
}

// The probe's section of the JSON report.
nlohmann::ordered_json ProbeJson(const Probe& p) {
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  for (size_t v = 0; v < p.result.variants.size(); ++v) {
    const ProbeVariant& pv = p.result.variants[v];
    nlohmann::ordered_json stop = nullptr;
    if (pv.stop) {
      stop = {
          {"time_s", pv.stop->time_s}, {"session", pv.stop->session}, {"reason", pv.stop->reason}};
    }
    variants.push_back({{"name", pv.name},
                        {"precision_plan", p.plans[v].empty() ? nlohmann::ordered_json()
                                                              : nlohmann::ordered_json(p.plans[v])},
                        {"requests", pv.requests},
                        {"completed_requests", pv.result.completed},
                        {"dropped_requests", pv.result.dropped},
                        {"events", pv.events},
                        {"mean_ttft_s", Defined(pv.mean_ttft_s, pv.result)},
                        {"mean_e2e_s", Defined(pv.mean_e2e_s, pv.result)},
                        {"stop", stop}});
  }
  return {{"name", p.name},
          {"file", p.file},
          {"control", p.spec.control},
          {"mode", p.options.sim.mode == BatchingMode::kStatic ? "static" : "continuous"},
          {"events", p.result.events.size()},
          {"apdf", p.options.apdf.has_value()},
          {"server", p.sink ? nlohmann::ordered_json(p.sink->server()) : nlohmann::ordered_json()},
          {"wall_s", p.wall_s},
          {"variants", variants}};
}

// The probe's section of the table: a line per variant, one per stop.
std::string ProbeTable(const Probe& p) {
  std::string out =
      absl::StrFormat("experiment %s (%s): %s, %d events%s\n%-20s %8s %7s %7s %7s %11s %10s %s\n",
                      p.name, p.file, std::string(BatchingModeName(p.options.sim.mode)),
                      p.result.events.size(), p.options.apdf ? ", APDF on" : "", "variant",
                      "requests", "done", "dropped", "events", "ttft_mean_s", "e2e_mean_s", "plan");
  for (size_t v = 0; v < p.result.variants.size(); ++v) {
    const ProbeVariant& pv = p.result.variants[v];
    const bool any = pv.result.completed > 0;
    absl::StrAppend(&out,
                    absl::StrFormat("%-20s %8d %7d %7d %7d %11s %10s %s\n",
                                    pv.name + (pv.name == p.spec.control ? " (control)" : ""),
                                    pv.requests, pv.result.completed, pv.result.dropped, pv.events,
                                    any ? absl::StrFormat("%.4f", pv.mean_ttft_s) : "-",
                                    any ? absl::StrFormat("%.4f", pv.mean_e2e_s) : "-",
                                    p.plans[v].empty() ? "(model's own formats)" : p.plans[v]));
  }
  for (const ProbeStop& s : p.result.stops) {
    absl::StrAppend(&out, absl::StrFormat("  %s stopped at %.1f s (session %s): %s\n",
                                          p.result.variants[s.variant].name, s.time_s, s.session,
                                          base::ForTerminal(s.reason)));
  }
  return out;
}

std::string RenderJson(const Report& rep) {
  nlohmann::ordered_json j = base::JsonHeader("serve-sim/v1");
  j["trace"] = rep.trace;
  j["requests"] = rep.requests;
  j["model"] = rep.model;
  j["gpu"] = rep.gpu;
  j["tensor_parallel"] = rep.tp;
  j["rate_scale"] = rep.rate_scale;
  j["block_size_tokens"] = rep.block_size;
  j["kv_pool_blocks"] = rep.kv_pool_blocks;
  j["kv_cache_gib_per_gpu"] = rep.kv_gib_per_gpu;
  j["ideal_prefix_hit_ratio"] =
      rep.has_prefix_ids ? nlohmann::ordered_json(rep.ideal_hit_ratio) : nullptr;
  if (rep.serving_plan) j["precision_plan"] = PlanJson(rep);
  j["modes"] = nlohmann::ordered_json::array();
  for (const ModeRun& m : rep.runs) {
    const ServingResult& r = m.r;
    j["modes"].push_back({{"mode", r.mode},
                          {"throughput_rps", r.throughput_rps},
                          {"throughput_tokens_per_s", r.throughput_tokens_per_s},
                          {"ttft_p50_s", Defined(r.ttft_p50_s, r)},
                          {"ttft_p99_s", Defined(r.ttft_p99_s, r)},
                          {"tpot_p50_s", Defined(r.tpot_p50_s, r)},
                          {"tpot_p99_s", Defined(r.tpot_p99_s, r)},
                          {"max_concurrent_seqs", r.max_concurrent_seqs},
                          {"kv_waste_pct", r.kv_waste_pct},
                          {"preemptions", r.preemptions},
                          {"prefix_hit_ratio", r.prefix_hit_ratio},
                          {"completed_requests", r.completed},
                          {"dropped_requests", r.dropped},
                          {"iterations", r.iterations},
                          {"wall_s", m.wall_s}});
  }
  if (rep.probe) j["experiment"] = ProbeJson(*rep.probe);
  return base::DumpJson(j, 2) + "\n";
}

std::string CsvNumber(double v, const ServingResult& r) {
  return r.completed > 0 ? absl::StrFormat("%.6g", v) : "";
}

std::string RenderCsv(const Report& rep) {
  std::string out =
      "mode,throughput_rps,throughput_tokens_per_s,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,"
      "max_concurrent_seqs,kv_waste_pct,preemptions,prefix_hit_ratio,completed_requests,"
      "dropped_requests,iterations,wall_s\n";
  for (const ModeRun& m : rep.runs) {
    const ServingResult& r = m.r;
    absl::StrAppend(&out, r.mode, ",", absl::StrFormat("%.6g", r.throughput_rps), ",",
                    absl::StrFormat("%.6g", r.throughput_tokens_per_s), ",",
                    CsvNumber(r.ttft_p50_s, r), ",", CsvNumber(r.ttft_p99_s, r), ",",
                    CsvNumber(r.tpot_p50_s, r), ",", CsvNumber(r.tpot_p99_s, r), ",",
                    r.max_concurrent_seqs, ",", absl::StrFormat("%.6g", r.kv_waste_pct), ",",
                    r.preemptions, ",", absl::StrFormat("%.6g", r.prefix_hit_ratio), ",",
                    r.completed, ",", r.dropped, ",", r.iterations, ",",
                    absl::StrFormat("%.3f", m.wall_s), "\n");
  }
  return out;
}

std::string RenderTable(const Report& rep) {
  // tools/serve_sim_sweep.sh reads columns 2 (req/s) and 5 (ttft99_s) of the mode rows.
  std::string out = absl::StrFormat(
      "serve-sim: %s, %d requests, %s on %s x%d, rate x%g, %d-token blocks\n", rep.trace,
      rep.requests, rep.model, rep.gpu, rep.tp, rep.rate_scale, rep.block_size);
  absl::StrAppend(
      &out, absl::StrFormat("%-10s %8s %9s %8s %8s %8s %8s %6s %6s %7s %6s %7s %7s %7s\n", "mode",
                            "req/s", "out_tok/s", "ttft50_s", "ttft99_s", "tpot50_s", "tpot99_s",
                            "maxseq", "waste%", "preempt", "hit", "done", "iters", "wall_s"));
  for (const ModeRun& m : rep.runs) {
    const ServingResult& r = m.r;
    if (r.completed > 0) {
      absl::StrAppend(
          &out, absl::StrFormat(
                    "%-10s %8.3f %9.1f %8.3f %8.3f %8.4f %8.4f %6d %6.2f %7d %6.3f %7d %7d %7.2f\n",
                    r.mode, r.throughput_rps, r.throughput_tokens_per_s, r.ttft_p50_s, r.ttft_p99_s,
                    r.tpot_p50_s, r.tpot_p99_s, r.max_concurrent_seqs, r.kv_waste_pct,
                    r.preemptions, r.prefix_hit_ratio, r.completed, r.iterations, m.wall_s));
    } else {
      absl::StrAppend(
          &out, absl::StrFormat("%-10s %8.3f %9.1f %8s %8s %8s %8s %6d %6.2f %7d %6.3f %7d %7d "
                                "%7.2f\n",
                                r.mode, r.throughput_rps, r.throughput_tokens_per_s, "-", "-", "-",
                                "-", r.max_concurrent_seqs, r.kv_waste_pct, r.preemptions,
                                r.prefix_hit_ratio, r.completed, r.iterations, m.wall_s));
    }
    if (r.dropped > 0) {
      absl::StrAppend(
          &out,
          absl::StrFormat("  %s: %d requests longer than the KV pool (%d blocks) were dropped\n",
                          r.mode, r.dropped, r.kv_blocks));
    }
  }
  absl::StrAppend(&out, absl::StrFormat("KV pool: %d blocks of %d tokens (%.1f GiB per GPU)\n",
                                        rep.kv_pool_blocks, rep.block_size, rep.kv_gib_per_gpu));
  if (rep.has_prefix_ids) {
    absl::StrAppend(&out, absl::StrFormat("trace's own infinite-cache prefix hit ratio: %.4f\n",
                                          rep.ideal_hit_ratio));
  }
  if (rep.serving_plan) absl::StrAppend(&out, PlanTable(rep));
  return out;
}

std::string TraceName(const std::string& path) { return base::ForTerminal(path); }

// The output format: --format (table/json/csv), else -o's extension, else table.
absl::StatusOr<std::string> OutputFormat(const Flags& f) {
  return ResolveFormat(f.out, kOutputFormats);
}

// The options every run shares (the batching mode is set per run).
absl::StatusOr<ServingSimOptions> BaseOptions(const Flags& f) {
  ServingSimOptions o;
  o.block_size = f.block_size;
  o.rate_scale = f.rate_scale;
  o.scheduler.max_num_seqs = f.max_num_seqs;
  o.scheduler.max_num_batched_tokens = f.max_batched_tokens;
  o.scheduler.static_reserve_tokens = f.static_max_len;
  o.scheduler.preemption =
      f.preemption == "swap" ? PreemptionMode::kSwap : PreemptionMode::kRecompute;
  o.swap_space_bytes = static_cast<int64_t>(f.swap_gib * double(int64_t{1} << 30));
  if (absl::Status s = ParsePrefixCache(f.prefix_cache, &o); !s.ok()) return s;
  return o;
}

// The report in `format` to `out`, and its JSON to --json's file when given.
absl::Status WriteReport(const Report& rep, const std::string& format, base::OutputFile& out,
                         base::OutputFile* legacy) {
  const std::string text = format == "json" ? RenderJson(rep)
                           : format == "csv"
                               ? RenderCsv(rep)
                               : RenderTable(rep) + (rep.probe ? ProbeTable(*rep.probe) : "");
  if (absl::Status s = out.Write(text); !s.ok()) return s;
  if (absl::Status s = out.Commit(); !s.ok()) return s;
  if (legacy == nullptr) return absl::OkStatus();
  if (absl::Status s = legacy->Write(RenderJson(rep)); !s.ok()) return s;
  return legacy->Commit();
}

int Run(const Flags& f) {
  if (f.trace.empty()) return UsageError("serve-sim: --trace FILE is required");
  absl::StatusOr<std::string> format = OutputFormat(f);
  if (!format.ok()) return Fail(format.status());
  const std::string out_path = f.out.output.empty() ? "-" : f.out.output;
  if (absl::Status s = CheckProbeFlags(f, out_path); !s.ok()) return Fail(s);
  if (absl::Status s = base::CheckOutputsDistinct(
          {{"--trace", f.trace},
           {"--precision-plan", f.precision_plan},
           {"--experiment", f.experiment}},
          {{"--output", out_path}, {"--json", f.legacy_json}, {"--events-out", f.events_out}});
      !s.ok()) {
    return Fail(s);
  }
  if (!f.legacy_json.empty() && f.legacy_json == out_path && out_path != "-") {
    return UsageError("--json and --output name the same file '" + base::ForTerminal(out_path) +
                      "'");
  }
  absl::StatusOr<ServingSimOptions> base_options = BaseOptions(f);
  if (!base_options.ok()) return Fail(base_options.status());
  absl::StatusOr<std::vector<BatchingMode>> modes = ParseModes(f.batching);
  if (!modes.ok()) return Fail(modes.status());

  absl::StatusOr<ModelConfig> model = LookupModel(f.model);
  if (!model.ok()) return UsageError("--model: " + std::string(model.status().message()));
  absl::StatusOr<GpuSpec> gpu = LookupGpu(f.gpu);
  if (!gpu.ok()) return UsageError("--gpu: " + std::string(gpu.status().message()));
  std::optional<seedance::model::ServingPlan> serving_plan;
  if (!f.precision_plan.empty()) {
    absl::StatusOr<seedance::model::ServingPlan> sp = LoadServingPlan(
        f.precision_plan, "--precision-plan " + base::ForTerminal(f.precision_plan), *model, *gpu);
    if (!sp.ok()) return Fail(sp.status());
    serving_plan = std::move(*sp);
  }
  std::unique_ptr<Probe> probe;  // --experiment
  if (!f.experiment.empty()) {
    absl::StatusOr<std::unique_ptr<Probe>> p = LoadProbe(f, *model, *gpu);
    if (!p.ok()) return Fail(p.status());
    probe = std::move(*p);
  }

  // Open the outputs before the work, so an unwritable one fails now, not after the run.
  absl::StatusOr<std::unique_ptr<base::OutputFile>> out = base::OutputFile::Open(out_path);
  if (!out.ok()) return Fail(out.status());
  std::unique_ptr<base::OutputFile> legacy;
  if (!f.legacy_json.empty()) {
    auto l = base::OutputFile::Open(f.legacy_json);
    if (!l.ok()) return Fail(l.status());
    legacy = std::move(*l);
  }

  TraceReadOptions ro;
  ro.poisson_rate = f.rate;
  ro.seed = f.seed;
  ro.max_requests = f.limit;
  ro.format = ToTraceFormat(f.trace_format);
  absl::StatusOr<RequestTrace> trace = ReadRequestTrace(f.trace, ro);
  if (!trace.ok()) return Fail(trace.status());
  if (absl::Status s = ValidateArrivals(*trace, f.rate_scale); !s.ok()) {
    return UsageError("--rate-scale " + base::FormatNumber(f.rate_scale) + ": " +
                      std::string(s.message()));
  }

  if (trace->prefix_block_tokens > 0 && trace->prefix_block_tokens % f.block_size != 0 &&
      base_options->prefix_cache != PrefixCacheMode::kOff) {
    return UsageError(absl::StrCat("--block-size ", f.block_size,
                                   ": must divide the trace's prefix block of ",
                                   trace->prefix_block_tokens, " tokens (", TraceName(f.trace),
                                   " has hash ids; or use --prefix-cache off)"));
  }
  const CostModel cost =
      serving_plan ? seedance::model::MakeCostModel(*model, *gpu, f.tp, serving_plan->plan)
                   : CostModel(*model, *gpu, f.tp);
  const ServingHardware hw = HardwareFromCostModel(cost, f.mem_util);
  const int64_t kv_pool_blocks = KvPoolBlocks(hw, *base_options);
  if (kv_pool_blocks <= 0) {
    return UsageError("no GPU memory left for the KV cache: " + model->name + " does not fit " +
                      gpu->name + " x" + std::to_string(f.tp) + " at --mem-util " +
                      base::FormatNumber(f.mem_util) + " (try a larger --tp)");
  }
  if (probe && !f.server.server.empty()) {
    if (absl::Status s = DefineOnServer(f, probe.get()); !s.ok()) return ServerFail(s);
  }

  Report rep;
  rep.trace = base::ForTerminal(f.trace);
  rep.requests = trace->requests.size();
  rep.model = model->name;
  rep.gpu = gpu->name;
  rep.tp = f.tp;
  rep.block_size = f.block_size;
  rep.rate_scale = f.rate_scale;
  rep.kv_pool_blocks = kv_pool_blocks;
  rep.kv_gib_per_gpu = double(hw.kv_cache_bytes) / double(int64_t{1} << 30);
  rep.has_prefix_ids = trace->prefix_block_tokens > 0;
  if (rep.has_prefix_ids) rep.ideal_hit_ratio = IdealPrefixHitRatio(*trace);
  if (serving_plan) {
    rep.precision_plan = base::ForTerminal(f.precision_plan);
    rep.weight_bytes = seedance::model::WeightBytes(cost.model(), cost.weight_dtypes());
    rep.serving_plan = std::move(serving_plan);
  }
  for (BatchingMode mode : *modes) {
    ServingSimOptions o = *base_options;
    o.mode = mode;
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<ServingResult> r = RunServingSim(*trace, hw, o);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) return Fail(r.status());
    rep.runs.push_back({std::move(*r), wall});
  }
  if (probe) {
    ServingSimOptions o = *base_options;
    o.mode = modes->front();
    if (absl::Status s = RunTheProbe(*trace, o, probe.get()); !s.ok()) return Fail(s);
    rep.probe = probe.get();
  }

  if (absl::Status s = WriteReport(rep, *format, **out, legacy.get()); !s.ok()) return Fail(s);
  return probe && probe->sink ? PublishProbe(*probe) : kExitOk;
}

std::string JoinNames(const std::vector<std::string>& names) { return absl::StrJoin(names, ", "); }

// --format: the output format (table, json, csv); the old input-format values (auto, azure,
// mooncake, sharegpt) still select the trace format for one release, with a warning.
void AddFormatFlag(CLI::App* cmd, Flags* f) {
  cmd->add_option_function<std::string>(
         "--format",
         [f](const std::string& v) {
           for (const auto& t : kTraceFormats) {
             if (v == t) {
               Warn("--format " + v +
                    " (a trace format) is deprecated and will be removed in the next release; "
                    "use --trace-format " +
                    v + " (--format now names the output format)");
               f->trace_format = v;
               return;
             }
           }
           for (const auto& o : kOutputFormats) {
             if (v == o) {
               f->out.format = v;
               return;
             }
           }
           throw CLI::ValidationError("--format: expected one of table, json, csv, got '" +
                                      base::ForTerminal(base::Clip(v, 64)) + "'");
         },
         "Output format: table, json, csv (default: from -o's extension, else table)")
      ->type_name("FORMAT");
}

// --precision-plan, and the online precision probe's --experiment with its companions.
void AddPlanFlags(CLI::App* cmd, Flags* f) {
  cmd->add_option("--precision-plan", f->precision_plan,
                  "Serve with a `seedance model plan` JSON's weight formats: each layer class\n"
                  "(embedding, attention, ffn, norm, lm_head) in the widest format the plan gives\n"
                  "its nodes, classes it does not plan as the model's own (docs/serving.md)")
      ->type_name("PLAN.json");
  cmd->add_option("--experiment", f->experiment,
                  "The online precision probe: an A/B experiment definition (JSON, the body of\n"
                  "PUT /v1/experiments/NAME) whose variants' \"precision_plan\" name `model plan`\n"
                  "files (none: the model's own formats); the trace's requests are split between\n"
                  "the variants, each replayed as its own replica with the first --batching mode,\n"
                  "and each request yields a tagged event (docs/serving.md). Not with\n"
                  "--precision-plan")
      ->type_name("FILE");
  cmd->add_option("--experiment-name", f->experiment_name,
                  "The experiment's name (a DNS-1123 label; default: --experiment's file stem)")
      ->type_name("NAME");
  cmd->add_option("--events-out", f->events_out,
                  "Write the probe's events, {\"events\": [...]}, to FILE (atomically)")
      ->type_name("FILE");
  AddConnectionFlags(cmd, &f->server);
  cmd->get_option("--server")
      ->description(
          "Send the probe to this server, http://HOST:PORT or https://HOST:PORT: PUT the\n"
          "experiment before the run, POST its events after (none without the flag)");
  cmd->add_flag("--apdf", f->apdf,
                "Stop a variant's events when its APDF breaker trips (seed A 4.4): a stop event");
  AddDouble(cmd, "--error-latency-ms", &f->error_latency_ms, base::Closed(0, 1e9),
            "A request slower end to end counts as an error (0 = only dropped ones)");
}

}  // namespace

Command AddServeSimCommand(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "serve-sim",
      "Replay an LLM request trace through the inference runtime (paged KV cache, continuous or "
      "static batching) with GPU time from the cost model, and report latency, throughput and "
      "KV-cache use per batching mode");
  cmd->footer(
      "Traces: Azure 2023 CSV (TIMESTAMP,ContextTokens,GeneratedTokens), Mooncake JSONL "
      "(timestamp,input_length,output_length,hash_ids) or ShareGPT length CSV "
      "(num_prefill_tokens,num_decode_tokens; Poisson arrivals at --rate). Bad input exits 2 "
      "naming file, line and field. See docs/serving.md.\n\nExamples:\n"
      "  seedance serve-sim --trace AzureLLMInferenceTrace_conv.csv --model llama-3-8b "
      "--gpu a100-80g -o out.json\n"
      "  seedance serve-sim --trace AzureLLMInferenceTrace_conv.csv --rate-scale 4 "
      "--batching continuous\n"
      "  seedance serve-sim --trace conversation_trace.jsonl --batching continuous "
      "--prefix-cache unbounded --format csv\n"
      "  seedance serve-sim --trace sharegpt_8k_filtered_stats_llama2_tokenizer.csv --rate 2 "
      "--limit 2000\n"
      "  seedance serve-sim --trace AzureLLMInferenceTrace_conv.csv --gpu h100 "
      "--precision-plan plan.json\n"
      "  seedance serve-sim --trace AzureLLMInferenceTrace_conv.csv --gpu h100 --batching "
      "continuous --experiment int8-probe.json --events-out events.json\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  // Required, but checked in Run: CLI11's "--trace is required" would hide a mistyped flag.
  cmd->add_option("--trace", f->trace, "Request trace file ('-' = standard input; required)")
      ->type_name("FILE");
  cmd->add_option("--trace-format", f->trace_format,
                  "Trace format: auto (by extension and header), azure, mooncake, sharegpt")
      ->capture_default_str()
      ->check(CLI::IsMember(kTraceFormats));
  cmd->add_option("-o,--output", f->out.output,
                  "Write the report to FILE instead of standard output ('-' = stdout)")
      ->type_name("FILE");
  AddFormatFlag(cmd, f.get());
  AddDeprecatedString(cmd, "--json", &f->legacy_json, "-o FILE --format json");
  cmd->add_option("--model", f->model, "Model: " + JoinNames(KnownModels()))->capture_default_str();
  cmd->add_option("--gpu", f->gpu, "GPU: " + JoinNames(KnownGpus()))->capture_default_str();
  AddPlanFlags(cmd, f.get());
  AddInt<int>(cmd, "--tp", &f->tp, 1, 64, "Tensor-parallel GPUs per replica (1..64)");
  cmd->add_option("--batching", f->batching, "Comma list of continuous, static")
      ->capture_default_str();
  AddDouble(cmd, "--rate-scale", &f->rate_scale, base::Closed(1e-6, 1e6),
            "Speed arrivals up by X (inter-arrival / X)");
  cmd->add_option("--prefix-cache", f->prefix_cache,
                  "off; pool (cached blocks share the cost model's KV pool, LRU eviction); "
                  "unbounded (infinite cache); or N (a KV pool of N blocks, 1..16777216, LRU "
                  "eviction)")
      ->capture_default_str();
  AddInt<int>(cmd, "--block-size", &f->block_size, 1, 4096, "KV block size in tokens (1..4096)");
  AddInt<int>(cmd, "--max-num-seqs", &f->max_num_seqs, 1, 1 << 20,
              "Running sequences per iteration (1..1048576)");
  AddInt<int>(cmd, "--max-batched-tokens", &f->max_batched_tokens, 1, 1 << 24,
              "Continuous: token budget per iteration (prefill chunk size; 1..16777216)");
  cmd->add_option("--preemption", f->preemption, "Continuous: recompute or swap")
      ->capture_default_str()
      ->check(CLI::IsMember({"recompute", "swap"}));
  AddDouble(cmd, "--swap-gib", &f->swap_gib, base::Closed(0, 1 << 20),
            "CPU swap space for --preemption swap (GiB)");
  AddInt<int64_t>(cmd, "--static-max-len", &f->static_max_len, 0, int64_t{1} << 30,
                  "Static: tokens reserved per request (0 = the trace's longest request)");
  AddDouble(cmd, "--mem-util", &f->mem_util, base::Closed(0.05, 1.0),
            "Fraction of GPU memory the runtime may use");
  AddDouble(cmd, "--rate", &f->rate, base::Closed(1e-6, 1e9),
            "ShareGPT traces: Poisson arrival rate (requests/s)");
  AddInt<uint64_t>(cmd, "--seed", &f->seed, 0,
                   static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                   "ShareGPT traces: seed of the arrival draws (0..2^63-1)");
  AddInt<int64_t>(cmd, "--limit", &f->limit, 0, std::numeric_limits<int64_t>::max(),
                  "Replay only the first N requests (0 = all)");
  Command c;
  c.app = cmd;
  c.run = [f] { return Run(*f); };
  return c;
}

}  // namespace seedance::cli
