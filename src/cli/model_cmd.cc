// `seedance model run|ops`: ONNX models on the CPU executor (docs/model.md).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/inputs.h"

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
};

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

int Run(const ModelFlags& f) {
  if (f.model.empty()) return UsageError("model run: MODEL.onnx is required");
  if (!f.inputs.empty() && !f.shapes.empty()) {
    return UsageError("model run: --shape shapes a drawn sample; --inputs gives the tensors");
  }
  if (absl::Status s = CheckOutputFolder(f); !s.ok()) return Fail(s);
  md::LoadOptions load;
  load.max_tensor_bytes = f.max_tensor_mib << 20;
  absl::StatusOr<md::Graph> graph = md::LoadOnnxModel(f.model, load);
  if (!graph.ok()) return Fail(graph.status());
  std::vector<md::Sample> samples;
  const bool drawn = f.inputs.empty();
  if (drawn) {
    absl::StatusOr<std::map<std::string, std::vector<int64_t>>> shapes = md::ParseShapes(f.shapes);
    if (!shapes.ok()) return Fail(shapes.status());
    absl::StatusOr<md::TensorMap> feeds = md::RandomSample(*graph, *shapes, f.seed);
    if (!feeds.ok()) return Fail(feeds.status());
    samples.push_back({"", std::move(*feeds)});
  } else {
    absl::StatusOr<std::vector<md::Sample>> read = md::ReadSamples(*graph, f.inputs);
    if (!read.ok()) return Fail(read.status());
    samples = std::move(*read);
  }
  std::string summary;
  for (const md::Sample& sample : samples) {
    absl::StatusOr<md::TensorMap> out = md::Run(*graph, sample.feeds);
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

int Ops() {
  const std::vector<std::string> ops = md::ClaimedOps();
  const std::string text = absl::StrCat(absl::StrJoin(ops, "\n"), "\n");
  if (absl::Status s = base::WriteStdout(text); !s.ok()) return Fail(s);
  return kExitOk;
}

}  // namespace

Command AddModelCommand(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "model",
      "Run ONNX models on the CPU executor (the default ONNX domain up to opset 17). See\n"
      "docs/model.md.");
  cmd.app->footer(
      "Examples:\n"
      "  seedance model run DATA/onnx-models/hello_deepa.onnx -o out/\n"
      "  seedance model run model.onnx --inputs samples/ -o out/\n"
      "  seedance model ops\n"
      "DATA is the public data folder (../shared/data).\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error (a bad model names\n"
      "the node and the reason).");

  CLI::App* run = cmd.app->add_subcommand(
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
  AddInt<int64_t>(run, "--max-tensor-size", &f->max_tensor_mib, 1, int64_t{1} << 20,
                  "largest initializer or constant the model may hold, in MiB");
  run->add_option("-o,--output", f->output, "folder for output_N.pb (created if missing; required)")
      ->type_name("DIR");
  run->footer(
      "Examples:\n"
      "  seedance model run hello_deepa.onnx -o out/\n"
      "  seedance model run encoder.onnx --shape src=16x1x64 --seed 7 -o out/\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");

  CLI::App* ops = cmd.app->add_subcommand(
      "ops",
      "List the operators the executor runs (each checked against ONNX's own conformance\n"
      "cases; docs/model.md has the counts).");

  cmd.run = [f, run, ops] {
    if (run->parsed()) return Run(*f);
    if (ops->parsed()) return Ops();
    return UsageError("model: expected a subcommand: run or ops");
  };
  return cmd;
}

}  // namespace seedance::cli
