// `seedance costmodel check|fit`: the GPU cost model against measured operator profiles
// (docs/serving-model.md).
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/serving/calibration.h"
#include "seedance/serving/cost_model.h"

namespace seedance::cli {
namespace {

namespace sv = seedance::serving;

struct CostmodelFlags {
  std::string profile;
  std::string gpu;
  bool json = false;
  std::vector<int> train_workers;  // fit: only rows with these TP / all-reduce sizes
  std::string eval_profile;
  std::string eval_gpu;
  double roofline_exponent = 2.0;
};

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double Round(double v, int digits) {
  double scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  return static_cast<double>(static_cast<long long>(v * scale + (v >= 0 ? 0.5 : -0.5))) / scale;
}

// Loads the profile and the GPU or prints the usage error; returns the exit code on failure.
int Load(const std::string& path, const std::string& gpu_name, sv::Profile& profile,
         sv::GpuSpec& gpu) {
  absl::StatusOr<sv::GpuSpec> g = sv::LookupGpu(gpu_name);
  if (!g.ok()) return UsageError("--gpu: " + std::string(g.status().message()));
  absl::StatusOr<sv::Profile> p = sv::ReadProfileCsv(path);
  if (!p.ok()) return UsageError(std::string(p.status().message()));
  if (p->samples.empty()) return UsageError(path + ": no measured rows");
  profile = std::move(*p);
  gpu = std::move(*g);
  return kExitOk;
}

int Check(const CostmodelFlags& f) {
  sv::Profile profile;
  sv::GpuSpec gpu;
  if (int rc = Load(f.profile, f.gpu, profile, gpu); rc != kExitOk) return rc;
  const sv::CheckResult r = sv::CheckProfile(profile, gpu);
  if (r.rows == 0)
    return UsageError(f.profile + ": no projection GEMM or intra-node all-reduce rows");
  if (f.json) {
    nlohmann::ordered_json j;
    j["rows"] = r.rows;
    j["mape_pct"] = Round(r.mape_pct, 3);
    std::cout << j.dump() << "\n";
    return kExitOk;
  }
  std::cout << f.profile << " on " << gpu.name << ": " << r.rows << " "
            << (profile.collective ? "intra-node all-reduce" : "projection GEMM") << " rows, MAPE "
            << Fixed(r.mape_pct, 2) << "%\n";
  if (r.skipped_rows > 0) {
    std::cout << "  skipped " << r.skipped_rows
              << " multi-node all-reduce rows (tensor parallelism stays inside a node)\n";
  }
  std::cout << "  per operator (element-wise ops are not in the headline figure):\n";
  for (const auto& op : r.per_op) {
    std::printf("    %-26s %6d rows  MAPE %6.2f%%\n", op.op.c_str(), op.rows, op.mape_pct);
  }
  return kExitOk;
}

int Fit(const CostmodelFlags& f) {
  sv::Profile profile;
  sv::GpuSpec gpu;
  if (int rc = Load(f.profile, f.gpu, profile, gpu); rc != kExitOk) return rc;
  const std::set<int> train_n(f.train_workers.begin(), f.train_workers.end());
  auto in_train = [&](const sv::ProfileSample& s) {
    return train_n.empty() || train_n.count(s.num_workers) > 0;
  };
  auto usable = [](const sv::ProfileSample& s) {
    return s.op_class != sv::OpClass::kAllReduce || sv::IsIntraNode(s);
  };
  const auto train = sv::Filter(
      profile.samples, [&](const sv::ProfileSample& s) { return usable(s) && in_train(s); });
  const auto held = sv::Filter(
      profile.samples, [&](const sv::ProfileSample& s) { return usable(s) && !in_train(s); });
  if (train.empty()) return UsageError("--train-workers: no rows of " + f.profile + " match");
  sv::CostModelParams p;
  p.roofline_exponent = f.roofline_exponent;
  p = sv::FitGemm(train, gpu, p);
  p = sv::FitElementwise(train, gpu, p);
  p = sv::FitAllReduce(train, gpu, p);
  auto headline = [&](const std::vector<sv::ProfileSample>& s) {
    return sv::Filter(
        s, [](const sv::ProfileSample& x) { return x.op_class != sv::OpClass::kElementwise; });
  };
  nlohmann::json j;
  if (profile.collective) {
    j["constants"] = {{"allreduce_latency_us", Round(p.allreduce_latency_s * 1e6, 2)},
                      {"allreduce_efficiency", Round(p.allreduce_efficiency, 4)},
                      {"allreduce_small_latency_us", Round(p.allreduce_small_latency_s * 1e6, 2)},
                      {"allreduce_small_efficiency", Round(p.allreduce_small_efficiency, 4)}};
  } else {
    j["constants"] = {{"eta_compute", Round(p.eta_compute, 4)},
                      {"eta_memory", Round(p.eta_memory, 4)},
                      {"gemm_overhead_us", Round(p.gemm_overhead_s * 1e6, 2)},
                      {"eta_memory_norm", Round(p.eta_memory_norm, 4)},
                      {"eta_memory_rope", Round(p.eta_memory_rope, 4)},
                      {"eta_memory_act", Round(p.eta_memory_act, 4)},
                      {"eta_memory_add", Round(p.eta_memory_add, 4)},
                      {"eta_memory_embedding", Round(p.eta_memory_embedding, 4)},
                      {"elementwise_overhead_us", Round(p.elementwise_overhead_s * 1e6, 2)}};
  }
  const auto train_h = headline(train);
  j["train"] = {{"rows", train_h.size()}, {"mape_pct", Round(sv::MapePct(train_h, gpu, p), 3)}};
  const auto train_e = sv::Filter(
      train, [](const sv::ProfileSample& x) { return x.op_class == sv::OpClass::kElementwise; });
  if (!train_e.empty()) {
    j["train"]["elementwise_rows"] = train_e.size();
    j["train"]["elementwise_mape_pct"] = Round(sv::MapePct(train_e, gpu, p), 3);
  }
  const auto held_h = headline(held);
  if (!held_h.empty()) {
    j["held_out"] = {{"rows", held_h.size()}, {"mape_pct", Round(sv::MapePct(held_h, gpu, p), 3)}};
  }
  if (!f.eval_profile.empty()) {
    sv::Profile other;
    sv::GpuSpec other_gpu;
    if (int rc = Load(f.eval_profile, f.eval_gpu.empty() ? f.gpu : f.eval_gpu, other, other_gpu);
        rc != kExitOk) {
      return rc;
    }
    const auto rows = headline(sv::Filter(other.samples, usable));
    j["eval"] = {{"profile", f.eval_profile},
                 {"gpu", other_gpu.name},
                 {"rows", rows.size()},
                 {"mape_pct", Round(sv::MapePct(rows, other_gpu, p), 3)}};
  }
  if (f.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "fitted on " << f.profile << " (" << gpu.name << ")\n" << j.dump(2) << "\n";
  }
  return kExitOk;
}

}  // namespace

Command AddCostmodelCommand(CLI::App& app) {
  auto f = std::make_shared<CostmodelFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "costmodel",
      "Compare the GPU cost model with measured operator profiles (Vidur's schema: per-layer\n"
      "operator medians or NCCL all-reduce medians), or refit its constants. See\n"
      "docs/serving-model.md.");
  cmd.app->require_subcommand(1);
  cmd.app->footer(
      "Examples:\n"
      "  seedance costmodel check --profile DATA/llm-traces/vidur-profiling/a100/"
      "Llama-2-7b-hf_mlp.csv --gpu a100-80g\n"
      "  seedance costmodel check --profile DATA/llm-traces/vidur-profiling/h100/"
      "dgx_all_reduce.csv --gpu h100 --json\n"
      "  seedance costmodel fit --profile .../a100/Llama-2-7b-hf_mlp.csv --gpu a100-80g \\\n"
      "      --train-workers 1,2 --eval .../h100/Llama-2-7b-hf_mlp.csv --eval-gpu h100\n"
      "DATA is the public data folder (../shared/data). Exit 2 on a bad file, column or value,\n"
      "with FILE:LINE: field 'NAME'.\n");

  CLI::App* check = cmd.app->add_subcommand(
      "check",
      "MAPE of the built-in (calibrated) model against a profile: the four projection GEMMs of an\n"
      "operator file, or the intra-node rows of an all-reduce file. Prints {\"rows\": n,\n"
      "\"mape_pct\": x} with --json, else a summary with the per-operator error.");
  check->add_option("--profile", f->profile, "profile CSV (Vidur schema)")->required();
  check->add_option("--gpu", f->gpu, "GPU the profile was measured on (a100-80g, h100, ...)")
      ->required();
  check->add_flag("--json", f->json, "print {\"rows\": n, \"mape_pct\": x}");

  CLI::App* fit = cmd.app->add_subcommand(
      "fit",
      "Fit the constants (eta_compute, eta_memory, overheads; or the all-reduce latencies and\n"
      "efficiencies) to a profile by minimising MAPE, and report the error on the training rows,\n"
      "on the held-out rows (those whose TP degree / all-reduce size is not in --train-workers)\n"
      "and on another profile (--eval, e.g. another GPU).");
  fit->add_option("--profile", f->profile, "profile CSV to fit on")->required();
  fit->add_option("--gpu", f->gpu, "GPU the profile was measured on")->required();
  fit->add_option("--train-workers", f->train_workers,
                  "fit only on rows with these TP degrees / all-reduce group sizes")
      ->delimiter(',');
  fit->add_option("--eval", f->eval_profile, "another profile to evaluate the fit on");
  fit->add_option("--eval-gpu", f->eval_gpu, "GPU of --eval (default: --gpu)");
  fit->add_option("--roofline-exponent", f->roofline_exponent,
                  "p of the smooth roofline (t_c^p + t_m^p)^(1/p); 64 or more: the hard max()")
      ->default_val(2.0)
      ->check(CLI::Range(1.0, 1e6));
  fit->add_flag("--json", f->json, "one-line JSON");

  cmd.run = [f, check, fit] {
    if (check->parsed()) return Check(*f);
    if (fit->parsed()) return Fit(*f);
    return UsageError("costmodel: expected a subcommand: check or fit");
  };
  return cmd;
}

}  // namespace seedance::cli
