// `seedance costmodel check|fit`: the GPU cost model against measured operator profiles
// (docs/gpu-cost-model.md).
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/model/calibration.h"
#include "seedance/model/cost_model.h"

namespace seedance::cli {
namespace {

namespace md = seedance::model;

const std::vector<std::string> kFormats = {"table", "json"};

struct CostmodelFlags {
  std::string profile;
  std::string gpu;
  OutputFlags out;
  bool legacy_json = false;        // deprecated --json: JSON to standard output
  std::vector<int> train_workers;  // fit: only rows with these TP / all-reduce sizes
  std::string eval_profile;
  std::string eval_gpu;
  double roofline_exponent = 2.0;
};

double Round(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

// The chosen format ("json" when the deprecated --json was given) and the output path.
absl::StatusOr<std::string> Format(const CostmodelFlags& f) {
  if (f.legacy_json && f.out.format.empty()) return std::string("json");
  return ResolveFormat(f.out, kFormats);
}
std::string OutputPath(const CostmodelFlags& f) {
  return f.out.output.empty() ? "-" : f.out.output;
}

absl::Status CheckRequired(const CostmodelFlags& f, const char* sub) {
  if (f.profile.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("costmodel ", sub, ": --profile FILE is required"));
  }
  if (f.gpu.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("costmodel ", sub, ": --gpu GPU is required"));
  }
  return absl::OkStatus();
}

// Loads the profile and the GPU; errors name the flag or the file.
absl::Status Load(const std::string& path, const std::string& gpu_flag, const std::string& gpu_name,
                  md::Profile& profile, md::GpuSpec& gpu) {
  absl::StatusOr<md::GpuSpec> g = md::LookupGpu(gpu_name);
  if (!g.ok()) {
    return absl::InvalidArgumentError(gpu_flag + ": " + std::string(g.status().message()));
  }
  absl::StatusOr<md::Profile> p = md::ReadProfileCsv(path);
  if (!p.ok()) return p.status();
  if (p->samples.empty()) {
    return absl::InvalidArgumentError(base::ForTerminal(path) + ": no measured rows");
  }
  profile = std::move(*p);
  gpu = std::move(*g);
  return absl::OkStatus();
}

// A MAPE figure over `rows` rows, or null when there are none (undefined).
nlohmann::ordered_json Mape(double mape_pct, size_t rows) {
  if (rows == 0 || !std::isfinite(mape_pct)) return nullptr;
  return Round(mape_pct, 3);
}

// Opens the output before the work; writes and commits `text` after it.
absl::Status Emit(std::unique_ptr<base::OutputFile>& out, const std::string& text) {
  if (absl::Status s = out->Write(text); !s.ok()) return s;
  return out->Commit();
}

int Check(const CostmodelFlags& f) {
  if (absl::Status s = CheckRequired(f, "check"); !s.ok()) return Fail(s);
  absl::StatusOr<std::string> format = Format(f);
  if (!format.ok()) return Fail(format.status());
  if (absl::Status s =
          base::CheckOutputsDistinct({{"--profile", f.profile}}, {{"--output", OutputPath(f)}});
      !s.ok()) {
    return Fail(s);
  }
  md::Profile profile;
  md::GpuSpec gpu;
  if (absl::Status s = Load(f.profile, "--gpu", f.gpu, profile, gpu); !s.ok()) return Fail(s);
  auto out = base::OutputFile::Open(OutputPath(f));
  if (!out.ok()) return Fail(out.status());
  const md::CheckResult r = md::CheckProfile(profile, gpu);
  const std::string name = base::ForTerminal(f.profile);
  if (r.rows == 0) {
    return UsageError(name + ": no projection GEMM or intra-node all-reduce rows");
  }
  const char* kind = profile.collective ? "intra-node all-reduce" : "projection GEMM";
  std::string text;
  if (*format == "json") {
    nlohmann::ordered_json j = base::JsonHeader("costmodel-check/v1");
    j["profile"] = name;
    j["gpu"] = gpu.name;
    j["kind"] = profile.collective ? "all_reduce" : "operator";
    j["rows"] = r.rows;
    j["mape_pct"] = Mape(r.mape_pct, static_cast<size_t>(r.rows));
    j["skipped_rows"] = r.skipped_rows;
    j["per_op"] = nlohmann::ordered_json::array();
    for (const auto& op : r.per_op) {
      j["per_op"].push_back({{"op", op.op},
                             {"rows", op.rows},
                             {"mape_pct", Mape(op.mape_pct, static_cast<size_t>(op.rows))}});
    }
    text = base::DumpJson(j, 2) + "\n";
  } else {
    text = absl::StrFormat("%s on %s: %d %s rows, MAPE %.2f%%\n", name, gpu.name, r.rows, kind,
                           r.mape_pct);
    if (r.skipped_rows > 0) {
      absl::StrAppend(&text, "  skipped ", r.skipped_rows,
                      " multi-node all-reduce rows (tensor parallelism stays inside a node)\n");
    }
    absl::StrAppend(&text, "  per operator (element-wise ops are not in the headline figure):\n");
    for (const auto& op : r.per_op) {
      absl::StrAppend(&text, absl::StrFormat("    %-26s %6d rows  MAPE %6.2f%%\n", op.op, op.rows,
                                             op.mape_pct));
    }
  }
  if (absl::Status s = Emit(*out, text); !s.ok()) return Fail(s);
  return kExitOk;
}

nlohmann::ordered_json Constants(const md::CostModelParams& p, bool collective) {
  if (collective) {
    return {{"allreduce_latency_us", Round(p.allreduce_latency_s * 1e6, 2)},
            {"allreduce_efficiency", Round(p.allreduce_efficiency, 4)},
            {"allreduce_small_latency_us", Round(p.allreduce_small_latency_s * 1e6, 2)},
            {"allreduce_small_efficiency", Round(p.allreduce_small_efficiency, 4)}};
  }
  return {{"eta_compute", Round(p.eta_compute, 4)},
          {"eta_memory", Round(p.eta_memory, 4)},
          {"gemm_overhead_us", Round(p.gemm_overhead_s * 1e6, 2)},
          {"eta_memory_norm", Round(p.eta_memory_norm, 4)},
          {"eta_memory_rope", Round(p.eta_memory_rope, 4)},
          {"eta_memory_act", Round(p.eta_memory_act, 4)},
          {"eta_memory_add", Round(p.eta_memory_add, 4)},
          {"eta_memory_embedding", Round(p.eta_memory_embedding, 4)},
          {"elementwise_overhead_us", Round(p.elementwise_overhead_s * 1e6, 2)}};
}

std::string FitTable(const nlohmann::ordered_json& j) {
  auto num = [](const nlohmann::ordered_json& v) {
    return v.is_null() ? std::string("n/a") : absl::StrFormat("%.3f%%", v.get<double>());
  };
  std::string text = absl::StrCat("fitted on ", j["profile"].get<std::string>(), " (",
                                  j["gpu"].get<std::string>(), "), roofline exponent ",
                                  base::FormatNumber(j["roofline_exponent"].get<double>()), "\n");
  absl::StrAppend(&text, "constants:\n");
  for (const auto& [k, v] : j["constants"].items()) {
    absl::StrAppend(&text, absl::StrFormat("  %-28s %s\n", k, base::FormatNumber(v.get<double>())));
  }
  absl::StrAppend(&text, absl::StrFormat("%-9s %8s %10s\n", "set", "rows", "mape_pct"));
  auto row = [&](const char* label, const nlohmann::ordered_json& s) {
    if (s.is_null()) return;
    absl::StrAppend(&text, absl::StrFormat("%-9s %8d %10s\n", label, s["rows"].get<int64_t>(),
                                           num(s["mape_pct"])));
  };
  row("train", j["train"]);
  if (j["train"].contains("elementwise_rows")) {
    absl::StrAppend(&text, absl::StrFormat("%-9s %8d %10s\n", "train-ew",
                                           j["train"]["elementwise_rows"].get<int64_t>(),
                                           num(j["train"]["elementwise_mape_pct"])));
  }
  row("held-out", j["held_out"]);
  if (!j["eval"].is_null()) {
    absl::StrAppend(
        &text,
        absl::StrFormat("%-9s %8d %10s  (%s on %s)\n", "eval", j["eval"]["rows"].get<int64_t>(),
                        num(j["eval"]["mape_pct"]), j["eval"]["profile"].get<std::string>(),
                        j["eval"]["gpu"].get<std::string>()));
  }
  return text;
}

int Fit(const CostmodelFlags& f) {
  if (absl::Status s = CheckRequired(f, "fit"); !s.ok()) return Fail(s);
  absl::StatusOr<std::string> format = Format(f);
  if (!format.ok()) return Fail(format.status());
  if (absl::Status s = base::CheckOutputsDistinct(
          {{"--profile", f.profile}, {"--eval", f.eval_profile}}, {{"--output", OutputPath(f)}});
      !s.ok()) {
    return Fail(s);
  }
  md::Profile profile;
  md::GpuSpec gpu;
  if (absl::Status s = Load(f.profile, "--gpu", f.gpu, profile, gpu); !s.ok()) return Fail(s);
  md::Profile other;
  md::GpuSpec other_gpu;
  if (!f.eval_profile.empty()) {
    if (absl::Status s = Load(f.eval_profile, f.eval_gpu.empty() ? "--gpu" : "--eval-gpu",
                              f.eval_gpu.empty() ? f.gpu : f.eval_gpu, other, other_gpu);
        !s.ok()) {
      return Fail(s);
    }
  }
  auto out = base::OutputFile::Open(OutputPath(f));
  if (!out.ok()) return Fail(out.status());
  const std::set<int> train_n(f.train_workers.begin(), f.train_workers.end());
  auto in_train = [&](const md::ProfileSample& s) {
    return train_n.empty() || train_n.count(s.num_workers) > 0;
  };
  auto usable = [](const md::ProfileSample& s) {
    return s.op_class != md::OpClass::kAllReduce || md::IsIntraNode(s);
  };
  const auto train = md::Filter(
      profile.samples, [&](const md::ProfileSample& s) { return usable(s) && in_train(s); });
  const auto held = md::Filter(
      profile.samples, [&](const md::ProfileSample& s) { return usable(s) && !in_train(s); });
  if (train.empty()) {
    return UsageError("--train-workers: no rows of " + base::ForTerminal(f.profile) + " match");
  }
  md::CostModelParams p;
  p.roofline_exponent = f.roofline_exponent;
  p = md::FitGemm(train, gpu, p);
  p = md::FitElementwise(train, gpu, p);
  p = md::FitAllReduce(train, gpu, p);
  auto headline = [&](const std::vector<md::ProfileSample>& s) {
    return md::Filter(
        s, [](const md::ProfileSample& x) { return x.op_class != md::OpClass::kElementwise; });
  };
  nlohmann::ordered_json j = base::JsonHeader("costmodel-fit/v1");
  j["profile"] = base::ForTerminal(f.profile);
  j["gpu"] = gpu.name;
  j["roofline_exponent"] = f.roofline_exponent;
  j["constants"] = Constants(p, profile.collective);
  const auto train_h = headline(train);
  j["train"] = {{"rows", train_h.size()},
                {"mape_pct", Mape(md::MapePct(train_h, gpu, p), train_h.size())}};
  const auto train_e = md::Filter(
      train, [](const md::ProfileSample& x) { return x.op_class == md::OpClass::kElementwise; });
  if (!train_e.empty()) {
    j["train"]["elementwise_rows"] = train_e.size();
    j["train"]["elementwise_mape_pct"] = Mape(md::MapePct(train_e, gpu, p), train_e.size());
  }
  const auto held_h = headline(held);
  j["held_out"] =
      held_h.empty()
          ? nlohmann::ordered_json(nullptr)
          : nlohmann::ordered_json{{"rows", held_h.size()},
                                   {"mape_pct", Mape(md::MapePct(held_h, gpu, p), held_h.size())}};
  j["eval"] = nullptr;
  if (!f.eval_profile.empty()) {
    const auto rows = headline(md::Filter(other.samples, usable));
    j["eval"] = {{"profile", base::ForTerminal(f.eval_profile)},
                 {"gpu", other_gpu.name},
                 {"rows", rows.size()},
                 {"mape_pct", Mape(md::MapePct(rows, other_gpu, p), rows.size())}};
  }
  const std::string text = *format == "json" ? base::DumpJson(j, 2) + "\n" : FitTable(j);
  if (absl::Status s = Emit(*out, text); !s.ok()) return Fail(s);
  return kExitOk;
}

// --train-workers 1,2,4: each a TP degree / all-reduce group size in 1..1048576.
void AddTrainWorkers(CLI::App* fit, std::vector<int>* target) {
  fit->add_option_function<std::string>(
         "--train-workers",
         [target](const std::string& text) {
           target->clear();
           for (absl::string_view item : absl::StrSplit(text, ',')) {
             auto v = base::ParseInt64(std::string(item), "--train-workers", 1, 1 << 20);
             if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
             target->push_back(static_cast<int>(*v));
           }
         },
         "fit only on rows with these TP degrees / all-reduce group sizes (comma list, each "
         "1..1048576)")
      ->type_name("N,N,...");
}

}  // namespace

Command AddCostmodelCommand(CLI::App& app) {
  auto f = std::make_shared<CostmodelFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "costmodel",
      "Compare the GPU cost model with measured operator profiles (Vidur's schema: per-layer\n"
      "operator medians or NCCL all-reduce medians), or refit its constants. See\n"
      "docs/gpu-cost-model.md.");
  // No require_subcommand(1): CLI11's "A subcommand is required" would hide a mistyped one
  // (`costmodel chek`); the action below reports a missing subcommand.
  cmd.app->footer(
      "Examples:\n"
      "  seedance costmodel check --profile DATA/llm-traces/vidur-profiling/a100/"
      "Llama-2-7b-hf_mlp.csv --gpu a100-80g\n"
      "  seedance costmodel check --profile DATA/llm-traces/vidur-profiling/h100/"
      "dgx_all_reduce.csv --gpu h100 --format json\n"
      "  seedance costmodel fit --profile .../a100/Llama-2-7b-hf_mlp.csv --gpu a100-80g \\\n"
      "      --train-workers 1,2 --eval .../h100/Llama-2-7b-hf_mlp.csv --eval-gpu h100 -o "
      "fit.json\n"
      "DATA is the public data folder (../shared/data). A bad file, column or value is reported\n"
      "as FILE:LINE: field 'NAME'.\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");

  CLI::App* check = cmd.app->add_subcommand(
      "check",
      "MAPE of the built-in (calibrated) model against a profile: the four projection GEMMs of an\n"
      "operator file, or the intra-node rows of an all-reduce file. A summary with the\n"
      "per-operator error, or --format json (schema costmodel-check/v1).");
  // --profile and --gpu are required, checked in the action so that a mistyped flag is reported.
  check
      ->add_option("--profile", f->profile,
                   "profile CSV (Vidur schema; '-' = standard input; required)")
      ->type_name("FILE");
  check->add_option("--gpu", f->gpu,
                    "GPU the profile was measured on (a100-80g, h100, ...; required)");
  AddOutputFlags(check, &f->out, kFormats);
  AddDeprecatedFlag(check, "--json", &f->legacy_json, "--format json");
  check->footer(
      "Examples:\n"
      "  seedance costmodel check --profile a100/Llama-2-7b-hf_mlp.csv --gpu a100-80g\n"
      "  seedance costmodel check --profile h100/dgx_all_reduce.csv --gpu h100 --format json\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");

  CLI::App* fit = cmd.app->add_subcommand(
      "fit",
      "Fit the constants (eta_compute, eta_memory, overheads; or the all-reduce latencies and\n"
      "efficiencies) to a profile by minimising MAPE, and report the error on the training rows,\n"
      "on the held-out rows (those whose TP degree / all-reduce size is not in --train-workers)\n"
      "and on another profile (--eval, e.g. another GPU). --format json: schema costmodel-fit/v1.");
  fit->add_option("--profile", f->profile, "profile CSV to fit on ('-' = standard input; required)")
      ->type_name("FILE");
  fit->add_option("--gpu", f->gpu, "GPU the profile was measured on (required)");
  AddTrainWorkers(fit, &f->train_workers);
  fit->add_option("--eval", f->eval_profile, "another profile to evaluate the fit on")
      ->type_name("FILE");
  fit->add_option("--eval-gpu", f->eval_gpu, "GPU of --eval (default: --gpu)");
  AddDouble(fit, "--roofline-exponent", &f->roofline_exponent, base::Closed(1.0, 1e6),
            "p of the smooth roofline (t_c^p + t_m^p)^(1/p); 64 or more: the hard max()");
  AddOutputFlags(fit, &f->out, kFormats);
  AddDeprecatedFlag(fit, "--json", &f->legacy_json, "--format json");
  fit->footer(
      "Examples:\n"
      "  seedance costmodel fit --profile a100/Llama-2-7b-hf_mlp.csv --gpu a100-80g "
      "--train-workers 1,2\n"
      "  seedance costmodel fit --profile a100/Llama-2-7b-hf_mlp.csv --gpu a100-80g \\\n"
      "      --eval h100/Llama-2-7b-hf_mlp.csv --eval-gpu h100 --format json -o fit.json\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");

  cmd.run = [f, check, fit] {
    if (check->parsed()) return Check(*f);
    if (fit->parsed()) return Fit(*f);
    return UsageError("costmodel: expected a subcommand: check or fit");
  };
  return cmd;
}

}  // namespace seedance::cli
