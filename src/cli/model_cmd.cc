// `seedance model run|analyze|plan|quantize|sparsify|optimize|ops`: ONNX models on the CPU (docs/model.md).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/k8s/objects.h"
#include "seedance/model/analysis_html.h"
#include "seedance/model/emulation.h"
#include "seedance/model/error_graph.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/inputs.h"
#include "seedance/model/plan_file.h"
#include "seedance/model/planner.h"
#include "seedance/model/quantize.h"
#include "seedance/model/rewrite.h"
#include "seedance/model/sparsity.h"

namespace seedance::cli {
namespace {

namespace md = seedance::model;
namespace fs = std::filesystem;

struct ModelFlags {
  std::string model;
  std::string inputs;
  std::vector<std::string> shapes;
  std::string output;
  uint64_t seed = 42;
  int64_t max_tensor_mib = 1024;
  // analyze
  int samples = 8;
  std::string formats = "fp16,bf16,fp8-e4m3,int8";
  bool weights_only = false;
  double percentile = 0;
  bool entropy = false;
  OutputFlags out;
  // plan
  std::string gpu = "A100-80GB";
  double budget_sqnr_db = 30;
  double budget_top1 = 0;
  std::string emit_pod;  // a pod manifest asking for the plan's GPU memory
  // run, quantize
  std::string plan_file;
  // sparsify
  std::string layers = "all";
  std::string report;
  // optimize
  std::string device = "cpu";
};

const std::vector<std::string> kAnalyzeFormats = {"table", "json", "html"};
const std::vector<std::string> kSparsifyFormats = {"table", "json"};
const std::vector<std::string> kOptimizeFormats = {"table", "json"};

// min / max / mean of a tensor's elements, for the summary.
std::string Stats(const md::Tensor& t) {
  if (t.size() == 0) return "(empty)";
  double lo = t.AsDouble(0), hi = lo, sum = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = t.AsDouble(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  return absl::StrFormat("min %.6g max %.6g mean %.6g", lo, hi,
                         sum / static_cast<double>(t.size()));
}

absl::Status CheckOutputFolder(const ModelFlags& f) {
  if (f.output.empty()) return absl::InvalidArgumentError("model run: -o/--output DIR is required");
  std::error_code ec;
  if (fs::exists(f.output, ec) && !fs::is_directory(f.output, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--output ", base::ForTerminal(f.output), ": exists and is not a folder"));
  }
  if (!f.inputs.empty() && fs::exists(f.output, ec) && fs::equivalent(f.output, f.inputs, ec)) {
    return absl::InvalidArgumentError("--output is the --inputs folder; give another folder");
  }
  return absl::OkStatus();
}

absl::StatusOr<md::Graph> Load(const ModelFlags& f, const char* sub) {
  if (f.model.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("model ", sub, ": MODEL.onnx is required"));
  }
  if (!f.inputs.empty() && !f.shapes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", sub, ": --shape shapes drawn samples; --inputs gives the tensors"));
  }
  md::LoadOptions load;
  load.max_tensor_bytes = f.max_tensor_mib << 20;
  return md::LoadOnnxModel(f.model, load);
}

// The samples of --inputs, or `drawn` samples drawn with seeds --seed, --seed + 1, ...
absl::StatusOr<std::vector<md::Sample>> Samples(const ModelFlags& f, const md::Graph& graph,
                                                int drawn) {
  if (!f.inputs.empty()) return md::ReadSamples(graph, f.inputs);
  absl::StatusOr<std::map<std::string, std::vector<int64_t>>> shapes = md::ParseShapes(f.shapes);
  if (!shapes.ok()) return shapes.status();
  std::vector<md::Sample> samples;
  for (int i = 0; i < drawn; ++i) {
    absl::StatusOr<md::TensorMap> feeds = md::RandomSample(graph, *shapes, f.seed + i);
    if (!feeds.ok()) return feeds.status();
    samples.push_back({drawn == 1 ? "" : absl::StrCat("sample_", i), std::move(*feeds)});
  }
  return samples;
}

// What analyze and plan start from: the model, its samples' feeds, the output opened up front.
struct Prepared {
  md::Graph graph;
  std::vector<md::TensorMap> feeds;
  std::unique_ptr<base::OutputFile> out;
};

absl::StatusOr<Prepared> Prepare(const ModelFlags& f, const char* sub,
                                 const std::string& out_path) {
  absl::StatusOr<md::Graph> graph = Load(f, sub);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<std::vector<md::Sample>> samples = Samples(f, *graph, f.samples);
  if (!samples.ok()) return samples.status();
  absl::StatusOr<std::unique_ptr<base::OutputFile>> out = base::OutputFile::Open(out_path);
  if (!out.ok()) return out.status();
  Prepared p{std::move(*graph), {}, std::move(*out)};
  for (md::Sample& s : *samples) p.feeds.push_back(std::move(s.feeds));
  return p;
}

// The --plan file's plan (a `model plan` JSON).
absl::StatusOr<md::PrecisionPlan> LoadPlan(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  return md::ParsePlanJson(*text, base::ForTerminal(path));
}

// A plan the model cannot take (a node that is not a layer, a weight given two formats): the
// message names the plan file too.
absl::Status PlanError(const ModelFlags& f, const absl::Status& s) {
  if (!absl::IsInvalidArgument(s)) return s;
  return absl::InvalidArgumentError(
      absl::StrCat("--plan ", base::ForTerminal(f.plan_file), ": ", s.message()));
}

int Run(const ModelFlags& f) {
  if (absl::Status s = CheckOutputFolder(f); !s.ok()) return Fail(s);
  absl::StatusOr<md::Graph> graph = Load(f, "run");
  if (!graph.ok()) return Fail(graph.status());
  std::optional<md::Emulation> emulation;  // --plan: its weight formats emulated
  if (!f.plan_file.empty()) {
    absl::StatusOr<md::PrecisionPlan> plan = LoadPlan(f.plan_file);
    if (!plan.ok()) return Fail(plan.status());
    absl::StatusOr<md::Emulation> e = md::Emulation::Create(*graph, *plan, {}, {});
    if (!e.ok()) return Fail(PlanError(f, e.status()));
    emulation = std::move(*e);
  }
  const bool drawn = f.inputs.empty();
  absl::StatusOr<std::vector<md::Sample>> read = Samples(f, *graph, 1);
  if (!read.ok()) return Fail(read.status());
  const std::vector<md::Sample>& samples = *read;
  std::string summary;
  for (const md::Sample& sample : samples) {
    absl::StatusOr<md::TensorMap> out =
        emulation ? emulation->Run(sample.feeds) : md::Run(*graph, sample.feeds);
    if (!out.ok()) return Fail(out.status());
    const std::string dir =
        sample.name.empty() ? f.output : (fs::path(f.output) / sample.name).string();
    // A drawn sample's inputs are written beside its outputs, so another runtime can be fed them.
    absl::Status s = md::WriteSampleFolder(dir, *graph, drawn ? &sample.feeds : nullptr, *out);
    if (!s.ok()) return Fail(s);
    for (size_t i = 0; i < graph->outputs.size(); ++i) {
      const md::Tensor& t = out->at(graph->outputs[i].name);
      absl::StrAppend(&summary, base::ForTerminal(dir), "/output_", i, ".pb  ",
                      base::ForTerminal(graph->outputs[i].name), "  ", t.Describe(), "  ", Stats(t),
                      "\n");
    }
  }
  if (absl::Status s = base::WriteStdout(summary); !s.ok()) return Fail(s);
  return kExitOk;
}

nlohmann::ordered_json Metrics(const md::ErrorMetrics& m) {
  auto finite = [](double v) -> nlohmann::ordered_json {
    if (std::isfinite(v)) return v;
    return nullptr;  // an exact result: SQNR is infinite
  };
  return {{"sqnr_db", finite(m.sqnr_db)},
          {"normalized_l2", finite(m.normalized_l2)},
          {"cosine", finite(m.cosine)}};
}

nlohmann::ordered_json OutputJson(const md::OutputError& e) {
  nlohmann::ordered_json j = Metrics(e.metrics);
  j["top1_agreement"] = std::isnan(e.top1_agreement) ? nlohmann::ordered_json()
                                                     : nlohmann::ordered_json(e.top1_agreement);
  return j;
}

nlohmann::ordered_json AnalysisJson(const ModelFlags& f, const md::Analysis& a) {
  nlohmann::ordered_json j = base::JsonHeader("model-analyze/v1");
  j["model"] = base::ForTerminal(f.model);
  j["samples"] = a.samples;
  j["samples_from"] = f.inputs.empty() ? "drawn" : "inputs";
  j["activations"] = f.weights_only ? "fp32" : "same format as the weights";
  j["calibration"] = f.entropy          ? std::string("entropy")
                     : f.percentile > 0 ? absl::StrCat("percentile ", f.percentile)
                                        : std::string("max");
  j["layers"] = nlohmann::ordered_json::array();
  for (const md::LayerAnalysis& la : a.layers) {
    nlohmann::ordered_json l = {{"node", la.layer.node},
                                {"op", la.layer.op_type},
                                {"weight", la.layer.weight},
                                {"weight_shape", la.layer.weight_shape}};
    for (const auto& [format, e] : la.by_format) {
      l["formats"][md::FormatName(format)] = {{"output", OutputJson(e.output)},
                                              {"layer", Metrics(e.layer)}};
    }
    j["layers"].push_back(l);
  }
  for (const auto& [format, e] : a.all_layers)
    j["all_layers"][md::FormatName(format)] = OutputJson(e);
  return j;
}

std::string Db(double v) {
  return std::isfinite(v) ? absl::StrFormat("%.2f", v) : std::string(v > 0 ? "exact" : "-inf");
}

std::string AnalysisTable(const ModelFlags& f, const md::Analysis& a) {
  std::string t = absl::StrFormat(
      "%s: %d layers, %d samples (%s), activations %s; SQNR in dB of the model output (and of "
      "the layer's own output) with that layer alone in the format\n",
      base::ForTerminal(f.model), a.layers.size(), a.samples,
      f.inputs.empty() ? "drawn" : "--inputs", f.weights_only ? "FP32" : "in the same format");
  absl::StrAppend(&t, absl::StrFormat("%-32s %-6s %-12s", "layer", "op", "weight"));
  for (md::NumericFormat format : a.formats) {
    absl::StrAppend(&t, absl::StrFormat(" %17s", md::FormatName(format)));
  }
  absl::StrAppend(&t, "\n");
  for (const md::LayerAnalysis& la : a.layers) {
    absl::StrAppend(
        &t, absl::StrFormat("%-32s %-6s %-12s", base::ForTerminal(base::Clip(la.layer.node, 32)),
                            la.layer.op_type, md::ShapeString(la.layer.weight_shape)));
    for (md::NumericFormat format : a.formats) {
      const md::FormatError& e = la.by_format.at(format);
      absl::StrAppend(&t, absl::StrFormat(" %17s", absl::StrCat(Db(e.output.metrics.sqnr_db), " (",
                                                                Db(e.layer.sqnr_db), ")")));
    }
    absl::StrAppend(&t, "\n");
  }
  absl::StrAppend(&t, absl::StrFormat("%-52s", "all layers"));
  for (md::NumericFormat format : a.formats) {
    absl::StrAppend(&t, absl::StrFormat(" %17s", Db(a.all_layers.at(format).metrics.sqnr_db)));
  }
  absl::StrAppend(&t, "\n");
  const md::OutputError& any = a.all_layers.begin()->second;
  if (!std::isnan(any.top1_agreement)) {
    absl::StrAppend(&t, absl::StrFormat("%-52s", "all layers: top-1 agreement"));
    for (md::NumericFormat format : a.formats) {
      absl::StrAppend(&t,
                      absl::StrFormat(" %16.2f%%", 100 * a.all_layers.at(format).top1_agreement));
    }
    absl::StrAppend(&t, "\n");
  }
  return t;
}

// --format html: the page with the error graph of the narrowest format asked (the enum runs from
// wide to narrow), predicted only (no measuring runs: the table holds measured SQNRs); a model
// whose operators have no derivative rule gets the page without the graph.
std::string AnalysisHtml(const ModelFlags& f, const Prepared& p, const md::Analysis& a) {
  md::AnalysisPageSettings page;
  page.model = f.model;
  page.samples_from = f.inputs.empty() ? "drawn" : "--inputs";
  page.weights_only = f.weights_only;
  page.percentile = f.percentile;
  page.entropy = f.entropy;
  page.error_graph.format = *std::max_element(a.formats.begin(), a.formats.end());
  page.error_graph.measure = false;
  absl::StatusOr<md::ErrorGraph> eg = md::BuildErrorGraph(p.graph, p.feeds, page.error_graph);
  if (!eg.ok()) page.error_graph_unavailable = std::string(eg.status().message());
  return md::RenderAnalysisHtml(a, eg.ok() ? *eg : md::ErrorGraph{}, page);
}

int Analyze(const ModelFlags& f) {
  absl::StatusOr<std::string> format = ResolveFormat(f.out, kAnalyzeFormats);
  if (!format.ok()) return Fail(format.status());
  const std::string out_path = f.out.output.empty() ? "-" : f.out.output;
  if (absl::Status s = base::CheckOutputsDistinct({{"MODEL", f.model}, {"--inputs", f.inputs}},
                                                  {{"--output", out_path}});
      !s.ok()) {
    return Fail(s);
  }
  md::AnalyzeOptions options;
  options.formats.clear();
  for (absl::string_view name : absl::StrSplit(f.formats, ',')) {
    absl::StatusOr<md::NumericFormat> nf = md::ParseFormat(std::string(name));
    if (!nf.ok()) return UsageError(absl::StrCat("--formats: ", nf.status().message()));
    options.formats.push_back(*nf);
  }
  options.activations = !f.weights_only;
  if (f.entropy && f.percentile > 0) {
    return UsageError("--entropy and --percentile are two calibrations; give one");
  }
  options.emulation.percentile = f.percentile;
  options.emulation.entropy = f.entropy;
  absl::StatusOr<Prepared> p = Prepare(f, "analyze", out_path);
  if (!p.ok()) return Fail(p.status());
  absl::StatusOr<md::Analysis> a = md::Analyze(p->graph, p->feeds, options);
  if (!a.ok()) return Fail(a.status());
  if (a->layers.empty()) {
    return UsageError(absl::StrCat(base::ForTerminal(f.model),
                                   ": no layer to analyze (no MatMul, Gemm or Conv with an FP32 "
                                   "weight initializer)"));
  }
  const std::string text = *format == "html"   ? AnalysisHtml(f, *p, *a)
                           : *format == "json" ? base::DumpJson(AnalysisJson(f, *a), 2) + "\n"
                                               : AnalysisTable(f, *a);
  if (absl::Status s = p->out->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = p->out->Commit(); !s.ok()) return Fail(s);
  return kExitOk;
}

nlohmann::ordered_json PlanJson(const ModelFlags& f, const md::Plan& p) {
  auto finite = [](double v) -> nlohmann::ordered_json {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
  };
  nlohmann::ordered_json j = base::JsonHeader("model-plan/v1");
  j["model"] = base::ForTerminal(f.model);
  j["gpu"] = p.gpu;
  j["budget"] = f.budget_top1 > 0 ? nlohmann::ordered_json{{"top1_agreement", f.budget_top1}}
                                  : nlohmann::ordered_json{{"sqnr_db", f.budget_sqnr_db}};
  j["formats"] = nlohmann::ordered_json::array();
  for (md::NumericFormat nf : p.formats) j["formats"].push_back(md::FormatName(nf));
  j["layers"] = nlohmann::ordered_json::array();
  for (const md::LayerChoice& c : p.layers) {
    j["layers"].push_back({{"node", c.node},
                           {"weight", c.weight},
                           {"format", md::FormatName(c.format)},
                           {"bytes_fp32", c.bytes_fp32},
                           {"bytes", c.bytes},
                           {"predicted_output_error", c.predicted_error}});
  }
  j["bytes_fp32"] = p.bytes_fp32;
  j["bytes"] = p.bytes;
  j["predicted_sqnr_db"] = finite(p.predicted_sqnr_db);
  j["measured_sqnr_db"] = finite(p.measured_sqnr_db);
  j["measured_top1_agreement"] = finite(p.measured_top1);
  j["meets_budget"] = p.meets_budget;
  j["model_evaluations"] = p.model_evaluations;
  j["rounds"] = p.rounds;
  return j;
}

// The --emit-pod manifest's container image: a placeholder for the serving image to run.
constexpr char kPodImage[] = "serving-image:replace-me";

// --emit-pod: a pod asking for the plan's weights plus PodMemoryOptions' allowance (plan_file.h).
absl::Status WritePlanPod(const ModelFlags& f, const md::Plan& p, base::OutputFile& out) {
  md::PlanFile file;
  file.bytes = p.bytes;
  file.bytes_fp32 = p.bytes_fp32;
  k8s::GpuPodManifest m;
  m.name = fs::path(f.model).stem().string();
  m.image = kPodImage;
  m.gpu_model = p.gpu;
  m.gpu_memory_mib = md::PlanGpuMemoryMib(file);
  m.annotations = {{"seedance.io/model", base::ForTerminal(f.model)},
                   {"seedance.io/plan-weight-bytes", std::to_string(p.bytes)}};
  if (!f.out.output.empty() && f.out.output != "-") {
    m.annotations["seedance.io/precision-plan"] = base::ForTerminal(f.out.output);
  }
  if (absl::Status s = out.Write(k8s::EncodeGpuPod(m)); !s.ok()) return s;
  return out.Commit();
}

int PlanCommand(const ModelFlags& f) {
  const std::string out_path = f.out.output.empty() ? "-" : f.out.output;
  if (absl::Status s =
          base::CheckOutputsDistinct({{"MODEL", f.model}, {"--inputs", f.inputs}},
                                     {{"--output", out_path}, {"--emit-pod", f.emit_pod}});
      !s.ok()) {
    return Fail(s);
  }
  // --emit-pod: opened before the work, written only for a plan that meets its budget.
  std::unique_ptr<base::OutputFile> pod;
  if (!f.emit_pod.empty()) {
    absl::StatusOr<std::unique_ptr<base::OutputFile>> o = base::OutputFile::Open(f.emit_pod);
    if (!o.ok()) return Fail(o.status());
    pod = std::move(*o);
  }
  if (absl::StatusOr<std::vector<md::NumericFormat>> formats = md::FormatsFor(f.gpu);
      !formats.ok()) {
    return UsageError(absl::StrCat("--gpu: ", formats.status().message()));
  }
  absl::StatusOr<Prepared> p = Prepare(f, "plan", out_path);
  if (!p.ok()) return Fail(p.status());
  md::PlanOptions options;
  options.gpu = f.gpu;
  options.budget_sqnr_db = f.budget_sqnr_db;
  options.budget_top1 = f.budget_top1;
  absl::StatusOr<md::Plan> plan = md::MakePlan(p->graph, p->feeds, options);
  if (!plan.ok()) return Fail(plan.status());
  if (absl::Status s = p->out->Write(base::DumpJson(PlanJson(f, *plan), 2) + "\n"); !s.ok()) {
    return Fail(s);
  }
  // The pod before the plan is committed: a pod that cannot be written leaves no plan either.
  if (pod && plan->meets_budget) {
    if (absl::Status s = WritePlanPod(f, *plan, *pod); !s.ok()) return Fail(s);
  }
  if (absl::Status s = p->out->Commit(); !s.ok()) return Fail(s);
  if (!plan->meets_budget) {
    return RuntimeError(absl::StrFormat(
        "no plan met the budget in %d rounds (measured %.2f dB, top-1 agreement %.4f); the plan "
        "written is the last tried",
        plan->rounds, plan->measured_sqnr_db, plan->measured_top1));
  }
  return kExitOk;
}

int Quantize(const ModelFlags& f) {
  if (f.plan_file.empty()) return UsageError("model quantize: --plan PLAN.json is required");
  if (f.output.empty()) return UsageError("model quantize: -o/--output OUT.onnx is required");
  if (absl::Status s = base::CheckOutputsDistinct({{"MODEL", f.model}, {"--plan", f.plan_file}},
                                                  {{"--output", f.output}});
      !s.ok()) {
    return Fail(s);
  }
  absl::StatusOr<md::Graph> graph = Load(f, "quantize");
  if (!graph.ok()) return Fail(graph.status());
  absl::StatusOr<md::PrecisionPlan> plan = LoadPlan(f.plan_file);
  if (!plan.ok()) return Fail(plan.status());
  absl::StatusOr<md::QuantizedModel> q = md::QuantizeWeights(*graph, *plan);
  if (!q.ok()) return Fail(PlanError(f, q.status()));
  if (absl::Status s = md::SaveOnnxModel(q->graph, f.output); !s.ok()) return Fail(s);
  std::string text = absl::StrFormat("%-32s %-9s %12s %12s  %s\n", "weight", "format", "bytes_fp32",
                                     "bytes", "stored as");
  int64_t before = 0, after = 0;
  for (const md::QuantizedWeight& w : q->weights) {
    absl::StrAppend(
        &text,
        absl::StrFormat("%-32s %-9s %12d %12d  %s\n", base::ForTerminal(base::Clip(w.weight, 32)),
                        md::FormatName(w.format), w.bytes_before, w.bytes_after, w.storage));
    before += w.bytes_before;
    after += w.bytes_after;
  }
  absl::StrAppend(
      &text, absl::StrFormat("%d weights quantized: %d bytes -> %d; wrote %s\n", q->weights.size(),
                             before, after, base::ForTerminal(f.output)));
  if (absl::Status s = base::WriteStdout(text); !s.ok()) return Fail(s);
  return kExitOk;
}

nlohmann::ordered_json SparsityJson(const ModelFlags& f, const md::SparsityReport& r) {
  auto finite = [](double v) -> nlohmann::ordered_json {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
  };
  nlohmann::ordered_json j = base::JsonHeader("model-sparsify/v1");
  j["model"] = base::ForTerminal(f.model);
  j["output"] = base::ForTerminal(f.output);
  j["pattern"] = "2:4 along the reduction axis (NVIDIA ASP m4n2_1d)";
  j["samples"] = r.samples;
  j["samples_from"] = f.inputs.empty() ? "drawn" : "inputs";
  j["layers"] = nlohmann::ordered_json::array();
  for (const md::LayerSparsity& l : r.layers) {
    nlohmann::ordered_json row = {{"node", l.layer.node},
                                  {"op", l.layer.op_type},
                                  {"weight", l.layer.weight},
                                  {"weight_shape", l.layer.weight_shape},
                                  {"reduction_axis", l.reduction_axis},
                                  {"eligible", l.eligible},
                                  {"pruned", l.pruned},
                                  {"bytes_fp32", l.dense_bytes},
                                  {"bytes_24", l.compressed_bytes}};
    if (!l.pruned) {
      row["reason"] = l.reason;
    } else {
      row["weight_energy_kept"] = l.weight_energy_kept;
      row["output"] = OutputJson(l.output);
      row["local_noise"] = l.noise;
      row["output_gain"] = l.gain;
      row["predicted_output_error"] = l.predicted_error;
      row["predicted_sqnr_db"] = finite(l.predicted_sqnr_db);
    }
    j["layers"].push_back(row);
  }
  j["all_pruned"] = OutputJson(r.all_pruned);
  j["bytes_fp32"] = r.dense_bytes;
  j["bytes_24"] = r.compressed_bytes;
  return j;
}

std::string SparsityTable(const ModelFlags& f, const md::SparsityReport& r) {
  std::string t = absl::StrFormat(
      "%s: 2:4 sparsity (NVIDIA ASP m4n2_1d), %d samples (%s); each layer alone pruned, the "
      "model's output against dense FP32 (SQNR measured and predicted by the error graph, dB)\n",
      base::ForTerminal(f.model), r.samples, f.inputs.empty() ? "drawn" : "--inputs");
  absl::StrAppend(
      &t, absl::StrFormat("%-32s %-6s %-14s %4s %9s %9s %8s %10s %10s\n", "layer", "op", "weight",
                          "axis", "sqnr", "predicted", "top-1", "bytes_fp32", "bytes_24"));
  std::string skipped;
  for (const md::LayerSparsity& l : r.layers) {
    const std::string name = base::ForTerminal(base::Clip(l.layer.node, 32));
    std::string measured = "-", predicted = "-", top1 = "-", bytes = "-";
    if (l.pruned) {
      measured = Db(l.output.metrics.sqnr_db);
      predicted = Db(l.predicted_sqnr_db);
      if (!std::isnan(l.output.top1_agreement)) {
        top1 = absl::StrFormat("%.2f%%", 100 * l.output.top1_agreement);
      }
    } else {
      absl::StrAppend(&skipped, "  ", name, ": ", base::ForTerminal(l.reason), "\n");
    }
    if (l.eligible) bytes = absl::StrCat(l.compressed_bytes);
    absl::StrAppend(
        &t, absl::StrFormat("%-32s %-6s %-14s %4d %9s %9s %8s %10d %10s\n", name, l.layer.op_type,
                            md::ShapeString(l.layer.weight_shape), l.reduction_axis, measured,
                            predicted, top1, l.dense_bytes, bytes));
  }
  const std::string top1 = std::isnan(r.all_pruned.top1_agreement)
                               ? "-"
                               : absl::StrFormat("%.2f%%", 100 * r.all_pruned.top1_agreement);
  absl::StrAppend(&t, absl::StrFormat("%-58s %9s %9s %8s %10d %10d\n", "all pruned layers",
                                      Db(r.all_pruned.metrics.sqnr_db), "", top1, r.dense_bytes,
                                      r.compressed_bytes));
  if (!skipped.empty()) absl::StrAppend(&t, "not pruned:\n", skipped);
  absl::StrAppend(&t,
                  absl::StrFormat("wrote %s: %d weight bytes stored 2:4 in %d (%.1f%%)\n",
                                  base::ForTerminal(f.output), r.dense_bytes, r.compressed_bytes,
                                  100.0 * static_cast<double>(r.compressed_bytes) /
                                      static_cast<double>(r.dense_bytes)));
  return t;
}

int SparsifyCommand(const ModelFlags& f) {
  if (f.output.empty()) return UsageError("model sparsify: -o/--output OUT.onnx is required");
  absl::StatusOr<std::string> format = ResolveFormat({f.report, f.out.format}, kSparsifyFormats);
  if (!format.ok()) return Fail(format.status());
  const std::string report_path = f.report.empty() ? "-" : f.report;
  if (absl::Status s =
          base::CheckOutputsDistinct({{"MODEL", f.model}, {"--inputs", f.inputs}},
                                     {{"--output", f.output}, {"--report", report_path}});
      !s.ok()) {
    return Fail(s);
  }
  md::SparsityOptions options;
  if (f.layers != "all") {
    for (absl::string_view name : absl::StrSplit(f.layers, ',')) {
      if (name.empty()) return UsageError("--layers: an empty layer name (all, or NAME,NAME...)");
      options.layers.emplace_back(name);
    }
  }
  absl::StatusOr<Prepared> p = Prepare(f, "sparsify", report_path);
  if (!p.ok()) return Fail(p.status());
  absl::StatusOr<md::SparsityReport> r = md::AnalyzeSparsity(p->graph, p->feeds, options);
  if (!r.ok()) return Fail(r.status());
  if (r->dense_bytes == 0) {
    std::string why;
    for (const md::LayerSparsity& l : r->layers)
      absl::StrAppend(&why, "; ", l.layer.node, ": ", l.reason);
    return UsageError(
        absl::StrCat(base::ForTerminal(f.model), ": no layer can be pruned 2:4", why));
  }
  absl::StatusOr<md::Graph> pruned = md::Sparsify(p->graph, options);
  if (!pruned.ok()) return Fail(pruned.status());
  const std::string text =
      *format == "json" ? base::DumpJson(SparsityJson(f, *r), 2) + "\n" : SparsityTable(f, *r);
  if (absl::Status s = p->out->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = md::SaveOnnxModel(*pruned, f.output); !s.ok()) return Fail(s);
  if (absl::Status s = p->out->Commit(); !s.ok()) {
    std::error_code ec;
    fs::remove(f.output, ec);  // a failed run leaves no output behind
    return Fail(s);
  }
  return kExitOk;
}

nlohmann::ordered_json RewriteJson(const ModelFlags& f, const md::RewriteTarget& target,
                                   const md::RewriteReport& r, const md::Graph& before,
                                   const md::Graph& after) {
  nlohmann::ordered_json j = base::JsonHeader("model-optimize/v1");
  j["model"] = base::ForTerminal(f.model);
  j["output"] = base::ForTerminal(f.output);
  j["device"] = target.name;
  j["applied"] = nlohmann::ordered_json::array();
  for (const md::RewriteStep& s : r.applied) {
    j["applied"].push_back({{"rule", s.rule}, {"node", s.node}, {"result", s.detail}});
  }
  j["refused"] = nlohmann::ordered_json::array();
  for (const md::RewriteRefusal& s : r.refused) {
    j["refused"].push_back({{"rule", s.rule}, {"node", s.node}, {"reason", s.reason}});
  }
  j["before"] = md::CountFusedKinds(before);
  j["after"] = md::CountFusedKinds(after);
  return j;
}

std::string RewriteTable(const ModelFlags& f, const md::RewriteTarget& target,
                         const md::RewriteReport& r, const md::Graph& before,
                         const md::Graph& after) {
  std::string t = absl::StrFormat("%s -> %s for %s: %d nodes -> %d\n", base::ForTerminal(f.model),
                                  base::ForTerminal(f.output), target.name, r.nodes_before,
                                  r.nodes_after);
  std::map<std::string, int> per_rule;
  for (const md::RewriteStep& s : r.applied) ++per_rule[s.rule];
  for (const auto& [rule, n] : per_rule) absl::StrAppend(&t, absl::StrFormat("  %-22s %d\n", rule, n));
  const auto b = md::CountFusedKinds(before), a = md::CountFusedKinds(after);
  absl::StrAppend(&t, "fused nodes by kind (before -> after):");
  for (const auto& [kind, n] : a) {
    if (kind != "nodes") absl::StrAppend(&t, " ", kind, " ", b.at(kind), "->", n);
  }
  absl::StrAppend(&t, "\n");
  if (!r.refused.empty()) absl::StrAppend(&t, "left as they are:\n");
  for (const md::RewriteRefusal& s : r.refused) {
    absl::StrAppend(&t, "  ", s.rule, " at ", base::ForTerminal(base::Clip(s.node, 48)), ": ",
                    base::ForTerminal(s.reason), "\n");
  }
  return t;
}

int OptimizeCommand(const ModelFlags& f) {
  if (f.output.empty()) return UsageError("model optimize: -o/--output OUT.onnx is required");
  absl::StatusOr<std::string> format = ResolveFormat({"", f.out.format}, kOptimizeFormats);
  if (!format.ok()) return Fail(format.status());
  if (absl::Status s = base::CheckOutputsDistinct({{"MODEL", f.model}}, {{"--output", f.output}});
      !s.ok()) {
    return Fail(s);
  }
  absl::StatusOr<md::RewriteTarget> target = md::ParseRewriteTarget(f.device);
  if (!target.ok()) return UsageError(std::string(target.status().message()));
  absl::StatusOr<md::Graph> graph = Load(f, "optimize");
  if (!graph.ok()) return Fail(graph.status());
  md::RewriteReport report;
  absl::StatusOr<md::Graph> rewritten = md::RewriteGraph(*graph, *target, &report);
  if (!rewritten.ok()) return Fail(rewritten.status());
  if (absl::Status s = md::SaveOnnxModel(*rewritten, f.output); !s.ok()) return Fail(s);
  const std::string text =
      *format == "json"
          ? base::DumpJson(RewriteJson(f, *target, report, *graph, *rewritten), 2) + "\n"
          : RewriteTable(f, *target, report, *graph, *rewritten);
  if (absl::Status s = base::WriteStdout(text); !s.ok()) return Fail(s);
  return kExitOk;
}

int Ops() {
  std::vector<std::string> ops = md::ClaimedOps();
  for (const std::string& op : md::ClaimedContribOps()) {
    ops.push_back(absl::StrCat(md::kMicrosoftDomain, ".", op));
  }
  const std::string text = absl::StrCat(absl::StrJoin(ops, "\n"), "\n");
  if (absl::Status s = base::WriteStdout(text); !s.ok()) return Fail(s);
  return kExitOk;
}

// The model's tensor limit (--max-tensor-size), for every command that loads a model to change it.
void AddMaxTensorSize(CLI::App* app, ModelFlags* f) {
  AddInt<int64_t>(app, "--max-tensor-size", &f->max_tensor_mib, 1, int64_t{1} << 20,
                  "largest initializer or constant the model may hold, in MiB");
}

// The samples a command measures on (--inputs, or drawn: --shape, --samples, --seed) and the
// model's tensor limit: the same flags for analyze, plan and sparsify.
void AddSampleFlags(CLI::App* app, ModelFlags* f) {
  app->add_option("--inputs", f->inputs, "folder of samples (as for `model run`)")
      ->type_name("DIR");
  app->add_option("--shape", f->shapes, "shape of a free input dimension for drawn samples")
      ->type_name("NAME=DxD...");
  AddInt<int>(app, "--samples", &f->samples, 1, 10000,
              "samples to draw without --inputs (seeds --seed, --seed + 1, ...)");
  AddInt<uint64_t>(app, "--seed", &f->seed, 0, UINT64_MAX, "seed of the first drawn sample");
  AddMaxTensorSize(app, f);
}

// `seedance model run`.
CLI::App* AddRun(CLI::App* model, ModelFlags* f) {
  CLI::App* run = model->add_subcommand(
      "run",
      "Run a model in FP32 and write its outputs as ONNX TensorProto files (output_N.pb, the\n"
      "layout of ONNX's conformance suite), with a one-line summary per output on standard\n"
      "output. Without --inputs, one sample is drawn (floats uniform in [-1, 1), integers in\n"
      "[0, 10), seeded) and written beside the outputs as input_N.pb.");
  run->add_option("model", f->model, "the .onnx file (external data is read from its folder)")
      ->type_name("MODEL.onnx");
  run->add_option("--inputs", f->inputs,
                  "folder of input tensors: NAME.pb or input_N.pb per graph input, or one\n"
                  "sub-folder of them per sample (outputs then go to OUT_DIR/SAMPLE/)")
      ->type_name("DIR");
  run->add_option("--shape", f->shapes,
                  "shape of an input whose dimensions are not fixed, e.g. x=1x3x48x192 "
                  "(repeatable; drawn samples only)")
      ->type_name("NAME=DxD...");
  AddInt<uint64_t>(run, "--seed", &f->seed, 0, UINT64_MAX, "seed of the drawn sample");
  AddMaxTensorSize(run, f);
  run->add_option("--plan", f->plan_file,
                  "run with a `model plan` JSON's weight formats emulated (as `model quantize`\n"
                  "writes them) instead of FP32")
      ->type_name("PLAN.json");
  run->add_option("-o,--output", f->output, "folder for output_N.pb (created if missing; required)")
      ->type_name("DIR");
  run->footer(
      "Examples:\n"
      "  seedance model run hello_deepa.onnx -o out/\n"
      "  seedance model run encoder.onnx --shape src=16x1x64 --seed 7 -o out/\n"
      "  seedance model run hello_deepa.onnx --plan plan.json -o out-int8/\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  return run;
}

// `seedance model analyze`.
CLI::App* AddAnalyze(CLI::App* model, ModelFlags* f) {
  CLI::App* analyze = model->add_subcommand(
      "analyze",
      "Per-layer precision sensitivity: for each layer (MatMul, Gemm, Conv with a weight\n"
      "initializer) and each format, run the model with that layer alone in the format (weights,\n"
      "INT8/FP8 per output channel; and its input activations, INT8/FP8 scaled to a range\n"
      "calibrated on the samples) and report the SQNR of the model's output and of the layer's\n"
      "own output against FP32, then every layer at once. --format json: schema\n"
      "model-analyze/v1 (SQNR, normalised L2, cosine, top-1 agreement for classifiers).\n"
      "--format html: one self-contained page with the table (cells coloured by SQNR) and the\n"
      "error-propagation graph drawn as SVG (INT8 weights, or the narrowest of --formats;\n"
      "predicted, not measured; the most sensitive path in red).");
  analyze->add_option("model", f->model, "the .onnx file")->type_name("MODEL.onnx");
  AddSampleFlags(analyze, f);
  analyze->add_option("--formats", f->formats, "formats to try: fp16, bf16, fp8-e4m3, int8")
      ->type_name("LIST");
  analyze->add_flag("--weights-only", f->weights_only,
                    "keep activations in FP32 (weight-only quantization)");
  AddDouble(analyze, "--percentile", &f->percentile, base::Closed(0.0, 100.0),
            "calibrate INT8/FP8 activation ranges at this percentile of |x| (0 = the maximum)");
  analyze->add_flag("--entropy", f->entropy,
                    "calibrate INT8/FP8 activation ranges by entropy (TensorRT's KL threshold)");
  AddOutputFlags(analyze, &f->out, kAnalyzeFormats);
  analyze->footer(
      "Examples:\n"
      "  seedance model analyze hello_deepa.onnx\n"
      "  seedance model analyze cnn.onnx --inputs calib/ --percentile 99.99 --format json -o "
      "a.json\n"
      "  seedance model analyze encoder.onnx --inputs samples/ --format html -o analysis.html\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  return analyze;
}

// `seedance model plan`.
CLI::App* AddPlan(CLI::App* model, ModelFlags* f) {
  CLI::App* plan = model->add_subcommand(
      "plan",
      "The cheapest weight format per layer (bytes) whose model output stays within a budget,\n"
      "from the formats the GPU runs: predicted from each layer's error gain (one FP64 tangent\n"
      "pass per layer) and its local rounding noise, then measured in FP32 and remade if the\n"
      "measurement misses. Writes the plan as JSON (schema model-plan/v1).");
  plan->add_option("model", f->model, "the .onnx file")->type_name("MODEL.onnx");
  plan->add_option("--gpu", f->gpu,
                   "target GPU (hardware catalog: T4, V100, A100-80GB, L40S, H100, ...); its\n"
                   "formats: FP16 everywhere, BF16 from Ampere, FP8 on Ada and Hopper, INT8");
  AddDouble(plan, "--budget-sqnr-db", &f->budget_sqnr_db, base::Closed(0.0, 300.0),
            "least SQNR of the model's first output against FP32, dB");
  AddDouble(plan, "--budget-top1", &f->budget_top1, base::Closed(0.0, 1.0),
            "least top-1 agreement with FP32 instead (classifiers; 0 = use --budget-sqnr-db)");
  AddSampleFlags(plan, f);
  plan->add_option("--emit-pod", f->emit_pod,
                   "also write a Kubernetes pod manifest (JSON, which is YAML) asking for one GPU\n"
                   "with the plan's weight bytes plus an allowance, in MiB (docs/model.md); only\n"
                   "for a plan that meets its budget")
      ->type_name("POD.yaml");
  plan->add_option("-o,--output", f->out.output, "the plan JSON ('-' or none: standard output)")
      ->type_name("FILE");
  plan->footer(
      "Examples:\n"
      "  seedance model plan hello_deepa.onnx --gpu T4 -o plan.json\n"
      "  seedance model plan encoder.onnx --gpu H100 --budget-sqnr-db 45 --inputs calib/\n"
      "  seedance model plan hello_deepa.onnx --gpu T4 -o plan.json --emit-pod pod.yaml\n\n"
      "Exit status: 0 ok, 1 no plan met the budget (the last one tried is written) or another\n"
      "runtime failure, 2 usage or input error.");
  return plan;
}

// `seedance model quantize`.
CLI::App* AddQuantize(CLI::App* model, ModelFlags* f) {
  CLI::App* quantize = model->add_subcommand(
      "quantize",
      "Write a plan as a standard ONNX model that onnxruntime and other runtimes run: each\n"
      "planned weight stored in its format (INT8 codes with DequantizeLinear and FP32 scales per\n"
      "output channel; FP16/BF16 with Cast; FP8 codes as float16, Cast and Mul, as opsets up to\n"
      "17 have no FP8 type), restored under its own name, the rest of the graph unchanged. Its\n"
      "outputs are those of `model run --plan` (the same FP32 products). Prints each weight's\n"
      "bytes before and after.");
  quantize->add_option("model", f->model, "the .onnx file")->type_name("MODEL.onnx");
  quantize->add_option("--plan", f->plan_file, "the plan (`seedance model plan` JSON; required)")
      ->type_name("PLAN.json");
  AddMaxTensorSize(quantize, f);
  quantize->add_option("-o,--output", f->output, "the quantized model (required)")
      ->type_name("OUT.onnx");
  quantize->footer(
      "Examples:\n"
      "  seedance model plan hello_deepa.onnx --gpu T4 -o plan.json\n"
      "  seedance model quantize hello_deepa.onnx --plan plan.json -o hello_deepa.int8.onnx\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error (a bad plan names\n"
      "the file and the JSON path).");
  return quantize;
}

// `seedance model sparsify`.
CLI::App* AddSparsify(CLI::App* model, ModelFlags* f) {
  CLI::App* sparsify = model->add_subcommand(
      "sparsify",
      "Prune weights 2:4 (NVIDIA ASP's m4n2_1d: in every 4 consecutive weights along a layer's\n"
      "reduction axis, the 2 of smallest magnitude set to zero; MatMul [K, N] along K, Gemm by\n"
      "transB, Conv along its input channels) and write the pruned model. Reports, for each layer\n"
      "alone pruned, the SQNR and top-1 agreement of the model's output against dense FP32, the\n"
      "SQNR the error graph predicts, and the weight's bytes dense and 2:4-compressed (the kept\n"
      "values plus 2-bit indices); then every pruned layer at once. A layer whose reduction "
      "length\n"
      "is not a multiple of 4 is not eligible (as in ASP). --format json: schema "
      "model-sparsify/v1.");
  sparsify->add_option("model", f->model, "the .onnx file")->type_name("MODEL.onnx");
  sparsify
      ->add_option("--layers", f->layers,
                   "the layers (node names) to prune, comma-separated, or all: every eligible\n"
                   "layer (a named layer that is not eligible is an error)")
      ->type_name("all|NAME,...");
  AddSampleFlags(sparsify, f);
  sparsify
      ->add_option("--format", f->out.format,
                   "the report: table or json (default: from --report's extension, else table)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember(kSparsifyFormats));
  sparsify->add_option("--report", f->report, "write the report to FILE ('-' or none: stdout)")
      ->type_name("FILE");
  sparsify->add_option("-o,--output", f->output, "the pruned model (required)")
      ->type_name("OUT.onnx");
  sparsify->footer(
      "Examples:\n"
      "  seedance model sparsify digits_mlp/model.onnx --inputs digits_mlp/test_data_set_0 -o "
      "digits_24.onnx\n"
      "  seedance model sparsify cnn.onnx --layers /4/Conv,/10/Gemm --format json --report r.json "
      "-o cnn_24.onnx\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error (a layer that cannot\n"
      "be pruned names the file, the layer and the reason).");
  return sparsify;
}

// `seedance model optimize`.
CLI::App* AddOptimize(CLI::App* model, ModelFlags* f) {
  CLI::App* opt = model->add_subcommand(
      "optimize",
      "Rewrite decomposed patterns (LayerNorm, GELU, MatMul + bias, Conv + BatchNorm, Conv/Gemm\n"
      "+ activation, Add + LayerNorm, redundant Identity/Cast/Reshape, constants) to the fused\n"
      "operators the target device runs (onnxruntime's com.microsoft domain, LayerNormalization\n"
      "at opset 17). Each rule proves its match equivalent (single readers, exact constants,\n"
      "fixed shapes) or leaves it as it is and says why. Prints what it did; writes OUT.onnx.");
  opt->add_option("model", f->model, "the .onnx file")->type_name("MODEL.onnx");
  opt->add_option("-o,--output", f->output, "the rewritten model (required)")->type_name("OUT.onnx");
  opt->add_option("--device", f->device,
                  "cpu, or an NVIDIA GPU of the catalog (t4, a100, h100, h200...): fused forms "
                  "the target cannot run stay decomposed")
      ->type_name("DEVICE");
  opt->add_option("--format", f->out.format, "report format: table (default) or json")
      ->type_name("FORMAT")
      ->check(CLI::IsMember(kOptimizeFormats));
  AddMaxTensorSize(opt, f);
  opt->footer(
      "Examples:\n"
      "  seedance model optimize encoder.onnx -o encoder.fused.onnx\n"
      "  seedance model optimize decoder.onnx --device h100 --format json -o decoder.h100.onnx\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error (a bad model names\n"
      "the node and the reason).");
  return opt;
}

// `seedance model ops`.
CLI::App* AddOps(CLI::App* model) {
  CLI::App* ops = model->add_subcommand(
      "ops",
      "List the operators the executor runs (each checked against ONNX's own conformance\n"
      "cases; docs/model.md has the counts).");
  return ops;
}

}  // namespace

Command AddModelCommand(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "model",
      "Run ONNX models on the CPU executor (the default ONNX domain up to opset 17), measure\n"
      "what narrower formats do to them, plan per-layer precision and write the plan as a\n"
      "quantized model. See docs/model.md.");
  cmd.app->footer(
      "Examples:\n"
      "  seedance model run DATA/onnx-models/hello_deepa.onnx -o out/\n"
      "  seedance model run model.onnx --inputs samples/ -o out/\n"
      "  seedance model analyze model.onnx --inputs samples/\n"
      "  seedance model plan model.onnx --gpu T4 -o plan.json\n"
      "  seedance model quantize model.onnx --plan plan.json -o model.int8.onnx\n"
      "  seedance model sparsify model.onnx -o model.24.onnx\n"
      "  seedance model optimize model.onnx --device h100 -o model.fused.onnx\n"
      "  seedance model ops\n"
      "DATA is the public data folder (../shared/data).\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error (a bad model names\n"
      "the node and the reason).");

  CLI::App* run = AddRun(cmd.app, f.get());
  CLI::App* analyze = AddAnalyze(cmd.app, f.get());
  CLI::App* plan = AddPlan(cmd.app, f.get());
  CLI::App* quantize = AddQuantize(cmd.app, f.get());
  CLI::App* sparsify = AddSparsify(cmd.app, f.get());
  CLI::App* optimize = AddOptimize(cmd.app, f.get());
  CLI::App* ops = AddOps(cmd.app);

  cmd.run = [f, run, analyze, plan, quantize, sparsify, optimize, ops] {
    if (run->parsed()) return Run(*f);
    if (analyze->parsed()) return Analyze(*f);
    if (plan->parsed()) return PlanCommand(*f);
    if (quantize->parsed()) return Quantize(*f);
    if (sparsify->parsed()) return SparsifyCommand(*f);
    if (optimize->parsed()) return OptimizeCommand(*f);
    if (ops->parsed()) return Ops();
    return UsageError(
        "model: expected a subcommand: run, analyze, plan, quantize, sparsify, optimize or ops");
  };
  return cmd;
}

}  // namespace seedance::cli
