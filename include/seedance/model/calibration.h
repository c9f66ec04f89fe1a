// Calibration of the GPU cost model (cost_model.h) against measured operator profiles in the
// schema of Vidur's profiling data (github.com/microsoft/vidur, data/profiling):
//
//   * operator files (MODEL_mlp.csv): columns time_stats.<op>.median (milliseconds) for the ops
//     emb, input_layernorm, attn_pre_proj, attn_rope, attn_post_proj, post_attention_layernorm,
//     mlp_up_proj, mlp_act, mlp_down_proj, add, and the shape columns n_head, n_kv_head, n_embd,
//     n_expanded_embd, vocab_size, use_gated_mlp, num_tokens, num_tensor_parallel_workers.
//     Each operator runs with the per-worker shapes of tensor parallelism.
//   * collective files (*all_reduce.csv): time_stats.all_reduce.median, num_workers, size (number
//     of FP16 elements), devices_per_node.
//
// The file kind is recognised from its header. Files are read in the one CSV dialect of
// seedance/trace/csv_table.h (columns matched by name, other columns not read, blank lines skipped,
// "\r\n" accepted, blanks and surrounding double quotes stripped from fields). Errors read
// "FILE:LINE: field 'NAME': what was wrong (got 'VALUE')" (kInvalidArgument; kNotFound for a
// missing file). A column that is absent from the header, or named twice, is reported at the
// header's line, quoting the header.
//
// Fitting minimises the mean absolute percentage error (MAPE) over the rows with a deterministic
// coordinate descent in log-parameter space; only the few constants of CostModelParams move.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/cost_model.h"

namespace seedance::model {

enum class OpClass { kGemm, kElementwise, kAllReduce };

// One measured operator time, with the shape the cost model needs to predict it.
struct ProfileSample {
  int line = 0;    // 1-based line in the source file
  std::string op;  // "mlp_up_proj", "add", "all_reduce", ...
  OpClass op_class = OpClass::kGemm;
  int64_t m = 0, k = 0, n = 0;  // GEMM [m x k] * [k x n] (kGemm)
  double bytes = 0;             // bytes moved (kElementwise) or all-reduce payload (kAllReduce)
  ElementwiseKind kind = ElementwiseKind::kNorm;  // kElementwise only
  int num_workers = 1;                            // tensor-parallel degree / all-reduce group size
  int devices_per_node = 0;  // all-reduce only: < num_workers means the group spans nodes
  int64_t num_tokens = 0;    // operator files only
  double measured_s = 0;     // median time, seconds
};

struct Profile {
  std::string source;
  bool collective = false;  // an all-reduce file
  std::vector<ProfileSample> samples;
};

absl::StatusOr<Profile> ParseProfileCsv(std::string_view text, std::string_view source);
absl::StatusOr<Profile> ReadProfileCsv(const std::string& path);

// True for the four projection GEMMs (attn_pre_proj, attn_post_proj, mlp_up_proj, mlp_down_proj).
bool IsProjection(const ProfileSample& s);
// True for an all-reduce within one node (what tensor parallelism uses).
bool IsIntraNode(const ProfileSample& s);

// The cost model's prediction for one sample, seconds.
double PredictSeconds(const ProfileSample& s, const GpuSpec& gpu, const CostModelParams& p);

// Mean absolute percentage error (in %) of the prediction over `samples` (0 when empty).
double MapePct(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
               const CostModelParams& p);

// Fits eta_compute, eta_memory and gemm_overhead_s on the kGemm samples.
CostModelParams FitGemm(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
                        CostModelParams start);
// Fits the five eta_memory_<kind> and elementwise_overhead_s on the kElementwise samples.
CostModelParams FitElementwise(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
                               CostModelParams start);
// Fits the two all-reduce protocols (latency and efficiency each) on the kAllReduce samples.
CostModelParams FitAllReduce(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
                             CostModelParams start);

// The samples for which `keep` is true.
template <typename Pred>
std::vector<ProfileSample> Filter(const std::vector<ProfileSample>& in, Pred keep) {
  std::vector<ProfileSample> out;
  for (const ProfileSample& s : in) {
    if (keep(s)) out.push_back(s);
  }
  return out;
}

// Result of comparing the model with a profile (what `seedance costmodel check` prints).
struct CheckResult {
  int rows = 0;  // samples compared (projection GEMMs, or intra-node all-reduces)
  double mape_pct = 0;
  int skipped_rows = 0;  // e.g. multi-node all-reduces (not modelled)
  struct PerOp {
    std::string op;
    int rows = 0;
    double mape_pct = 0;
  };
  std::vector<PerOp> per_op;  // every operator in the file, including non-projection ones
};
// Compares the model (DefaultParamsFor(gpu, N) for each row's N) with `profile`.
CheckResult CheckProfile(const Profile& profile, const GpuSpec& gpu);

}  // namespace seedance::model
