// Roofline cost model of a transformer forward iteration (docs/gpu-cost-model.md).
#include "seedance/model/cost_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/hw/catalog.h"

namespace seedance::model {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

ModelConfig MakeModel(std::string name, int layers, int hidden, int heads, int kv_heads,
                      int intermediate, int vocab) {
  ModelConfig m;
  m.name = std::move(name);
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.intermediate_size = intermediate;
  m.vocab_size = vocab;
  return m;
}

// Shapes from the models' published config.json files (Hugging Face model cards).
const std::vector<ModelConfig>& Models() {
  static const std::vector<ModelConfig> kModels = {
      MakeModel("llama-2-7b", 32, 4096, 32, 32, 11008, 32000),
      MakeModel("llama-2-13b", 40, 5120, 40, 40, 13824, 32000),
      MakeModel("llama-2-70b", 80, 8192, 64, 8, 28672, 32000),
      MakeModel("llama-3-8b", 32, 4096, 32, 8, 14336, 128256),
      MakeModel("llama-3-70b", 80, 8192, 64, 8, 28672, 128256),
      MakeModel("mistral-7b", 32, 4096, 32, 8, 14336, 32000),
      MakeModel("codellama-34b", 48, 8192, 64, 8, 22016, 32000),
  };
  return kModels;
}

// The GPUs the cost model prices: every model of the hardware catalog (hw/catalog.h, which cites
// the datasheets) with compute figures.
const std::vector<GpuSpec>& Gpus() {
  static const std::vector<GpuSpec> kGpus = [] {
    std::vector<GpuSpec> out;
    for (const hw::GpuModel& g : hw::Gpus()) {
      if (g.tflops_bf16 <= 0) continue;
      out.push_back(GpuSpec{g.name, g.tflops_bf16, std::max(g.tflops_fp8, g.tops_int8),
                            g.mem_bandwidth_gbps, g.memory_gib, g.interconnect_gbps,
                            g.arch == hw::Arch::kHopper, g.bf16, g.fp8, g.int8});
    }
    return out;
  }();
  return kGpus;
}

double Bytes(DType d) { return BytesPerElement(d); }

// (t_c^p + t_m^p)^(1/p): the smooth roofline; p >= 64 is the hard max().
double Roof(double t_c, double t_m, double p) {
  if (p >= 64) return std::max(t_c, t_m);
  const double hi = std::max(t_c, t_m);
  if (hi <= 0) return 0;
  return hi * std::pow(std::pow(t_c / hi, p) + std::pow(t_m / hi, p), 1.0 / p);
}

// Constants fitted by FitCostModel (calibration.h) on the Vidur profiles; see
// docs/gpu-cost-model.md for the fit error. GEMM and element-wise constants per GPU family,
// all-reduce constants per GPU family and tensor-parallel degree.
CostModelParams CalibratedParams(const GpuSpec& gpu, int tp) {
  CostModelParams p;
  const bool hopper = gpu.hopper;
  // Fitted with `seedance costmodel fit` on vidur-profiling/{a100,h100} (Llama-2-7B operators:
  // all rows; DGX all-reduce: --train-workers N per row, all intra-node N for "any other N");
  // rounded to 3 significant digits. Commands and errors: docs/gpu-cost-model.md.
  struct AllReduceFit {
    int n;
    double latency_us, efficiency, small_latency_us, small_efficiency;
  };
  static constexpr AllReduceFit kA100[] = {{2, 106.0, 0.693, 43.2, 0.563},
                                           {4, 69.3, 0.638, 20.3, 0.327},
                                           {8, 146.0, 0.727, 36.1, 0.421},
                                           {0, 63.4, 0.613, 32.7, 0.416}};  // 0: any other N
  static constexpr AllReduceFit kH100[] = {{2, 32.0, 0.698, 17.9, 0.649},
                                           {4, 26.9, 0.802, 40.0, 0.450},
                                           {8, 40.0, 0.835, 27.0, 0.652},
                                           {0, 27.6, 0.778, 28.3, 0.450}};
  if (hopper) {
    p.eta_compute = 0.732;
    p.eta_memory = 0.844;
    p.gemm_overhead_s = 6.05e-6;
    p.eta_memory_norm = 0.406;
    p.eta_memory_rope = 0.510;
    p.eta_memory_act = 0.565;
    p.eta_memory_add = 1.26;  // > 1: part of the operands stays in the 50 MB L2
    p.eta_memory_embedding = 0.179;
    p.elementwise_overhead_s = 1.50e-6;
  } else {  // A100 fit, also used for the PCIe GPUs (no profiles for them)
    p.eta_compute = 0.722;
    p.eta_memory = 0.793;
    p.gemm_overhead_s = 5.64e-6;
    p.eta_memory_norm = 0.405;
    p.eta_memory_rope = 0.465;
    p.eta_memory_act = 0.487;
    p.eta_memory_add = 1.13;  // > 1: part of the operands stays in the 40 MB L2
    p.eta_memory_embedding = 0.155;
    p.elementwise_overhead_s = 1.75e-6;
  }
  const AllReduceFit* table = hopper ? kH100 : kA100;
  const AllReduceFit* fit = &table[3];
  for (int i = 0; i < 3; ++i) {
    if (table[i].n == tp) fit = &table[i];
  }
  p.allreduce_latency_s = fit->latency_us * 1e-6;
  p.allreduce_efficiency = fit->efficiency;
  p.allreduce_small_latency_s = fit->small_latency_us * 1e-6;
  p.allreduce_small_efficiency = fit->small_efficiency;
  return p;
}

}  // namespace

double BytesPerElement(DType dtype) {
  switch (dtype) {
    case DType::kFP32:
      return 4;
    case DType::kBF16:
    case DType::kFP16:
      return 2;
    case DType::kFP8:
    case DType::kINT8:
      return 1;
  }
  return 2;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFP32:
      return "fp32";
    case DType::kBF16:
      return "bf16";
    case DType::kFP16:
      return "fp16";
    case DType::kFP8:
      return "fp8";
    case DType::kINT8:
      return "int8";
  }
  return "?";
}

int64_t WeightBytes(const ModelConfig& m, const WeightDTypes& d) {
  const double h = m.hidden_size;
  const double hd = m.head_dim();
  const double attn = h * (m.num_heads * hd + 2.0 * m.num_kv_heads * hd)  // QKV
                      + m.num_heads * hd * h;                             // O
  const double mlp = 3.0 * h * m.intermediate_size;                       // gate, up, down
  const double norms = 2.0 * h;
  double bytes =
      m.num_layers * (attn * Bytes(d.attention) + mlp * Bytes(d.mlp) + norms * Bytes(d.norm));
  bytes += static_cast<double>(m.vocab_size) * h * Bytes(d.embedding);  // embedding
  bytes += h * Bytes(d.norm);                                           // final norm
  bytes += static_cast<double>(m.vocab_size) * h * Bytes(d.lm_head);    // untied LM head
  return static_cast<int64_t>(bytes);
}

int64_t ModelConfig::KvBytesPerToken() const {
  return static_cast<int64_t>(2.0 * num_layers * num_kv_heads * head_dim() * Bytes(kv_dtype));
}

int64_t ModelConfig::WeightBytes() const {
  return model::WeightBytes(*this, WeightDTypes::Uniform(weight_dtype));
}

absl::StatusOr<ModelConfig> LookupModel(std::string_view name) {
  const std::string key = Lower(name);
  for (const ModelConfig& m : Models()) {
    if (m.name == key) return m;
  }
  std::string known;
  for (const ModelConfig& m : Models()) absl::StrAppend(&known, known.empty() ? "" : ", ", m.name);
  return absl::NotFoundError(
      absl::StrCat("unknown model '", std::string(name), "' (known: ", known, ")"));
}

std::vector<std::string> KnownModels() {
  std::vector<std::string> out;
  for (const ModelConfig& m : Models()) out.push_back(m.name);
  return out;
}

absl::StatusOr<GpuSpec> LookupGpu(std::string_view name) {
  const hw::GpuModel* model = hw::Find(name);
  for (const GpuSpec& g : Gpus()) {
    if (model != nullptr && g.name == model->name) return g;
  }
  std::string known;
  for (const GpuSpec& g : Gpus()) absl::StrAppend(&known, known.empty() ? "" : ", ", g.name);
  const std::string why =
      model == nullptr ? "" : absl::StrCat(": the hardware catalog has no compute figures for ",
                                           model->name);
  return absl::NotFoundError(
      absl::StrCat("unknown GPU '", std::string(name), "'", why, " (known: ", known, ")"));
}

std::vector<std::string> KnownGpus() {
  std::vector<std::string> out;
  for (const GpuSpec& g : Gpus()) out.push_back(g.name);
  return out;
}

CostModelParams DefaultParamsFor(const GpuSpec& gpu, int tensor_parallel) {
  return CalibratedParams(gpu, tensor_parallel);
}

double PeakTflops(const GpuSpec& gpu, DType dtype) {
  switch (dtype) {
    case DType::kFP8:
    case DType::kINT8:
      return gpu.peak_tflops_8 > 0 ? gpu.peak_tflops_8 : gpu.peak_tflops_16;
    case DType::kFP32:
      return gpu.peak_tflops_16 / 16.0;
    case DType::kBF16:
    case DType::kFP16:
      break;
  }
  return gpu.peak_tflops_16;
}

double GemmSeconds(const GpuSpec& gpu, const CostModelParams& p, int64_t m, int64_t k, int64_t n,
                   DType weight_dtype) {
  if (m <= 0 || k <= 0 || n <= 0) return 0;
  const double flops = 2.0 * static_cast<double>(m) * k * n;
  const double act_bytes = 2.0;  // 16-bit activations in and out
  const double bytes = static_cast<double>(k) * n * Bytes(weight_dtype) +
                       (static_cast<double>(m) * k + static_cast<double>(m) * n) * act_bytes;
  const double t_c = flops / (p.eta_compute * PeakTflops(gpu, weight_dtype) * 1e12);
  const double t_m = bytes / (p.eta_memory * gpu.mem_bandwidth_gbps * 1e9);
  return Roof(t_c, t_m, p.roofline_exponent) + p.gemm_overhead_s;
}

double ElementwiseSeconds(const GpuSpec& gpu, const CostModelParams& p, ElementwiseKind kind,
                          double bytes) {
  if (bytes <= 0) return 0;
  double eta = p.eta_memory_norm;
  switch (kind) {
    case ElementwiseKind::kNorm:
      break;
    case ElementwiseKind::kRope:
      eta = p.eta_memory_rope;
      break;
    case ElementwiseKind::kActivation:
      eta = p.eta_memory_act;
      break;
    case ElementwiseKind::kAdd:
      eta = p.eta_memory_add;
      break;
    case ElementwiseKind::kEmbedding:
      eta = p.eta_memory_embedding;
      break;
  }
  return bytes / (eta * gpu.mem_bandwidth_gbps * 1e9) + p.elementwise_overhead_s;
}

double AllReduceSeconds(const GpuSpec& gpu, const CostModelParams& p, double bytes, int n_gpus) {
  if (n_gpus <= 1 || bytes <= 0) return 0;
  const double n = n_gpus;
  const double moved = 2.0 * (n - 1) / n * bytes;
  const double link = gpu.interconnect_gbps * 1e9;
  const double bulk = p.allreduce_latency_s + moved / (p.allreduce_efficiency * link);
  if (p.allreduce_small_efficiency <= 0) return bulk;
  const double small = p.allreduce_small_latency_s + moved / (p.allreduce_small_efficiency * link);
  return std::min(bulk, small);
}

CostModel::CostModel(ModelConfig model, GpuSpec gpu, int tensor_parallel)
    : CostModel(model, gpu, tensor_parallel, DefaultParamsFor(gpu)) {}

CostModel::CostModel(ModelConfig model, GpuSpec gpu, int tensor_parallel, CostModelParams params)
    : model_(std::move(model)),
      gpu_(std::move(gpu)),
      tp_(std::max(1, tensor_parallel)),
      params_(params),
      dtypes_(WeightDTypes::Uniform(model_.weight_dtype)) {}

CostModel::Breakdown CostModel::StepBreakdown(std::span<const SequenceWork> batch) const {
  Breakdown b;
  int64_t tokens = 0;
  int64_t seqs = 0;
  for (const SequenceWork& w : batch) {
    if (w.new_tokens <= 0) continue;
    tokens += w.new_tokens;
    ++seqs;
  }
  if (tokens == 0) return b;

  const ModelConfig& m = model_;
  const GpuSpec& g = gpu_;
  const CostModelParams& p = params_;
  const int64_t h = m.hidden_size;
  const int64_t hd = m.head_dim();
  const int64_t q_heads = std::max<int64_t>(1, m.num_heads / tp_);
  const int64_t kv_heads = std::max<int64_t>(1, m.num_kv_heads / tp_);
  const int64_t inter = std::max<int64_t>(1, m.intermediate_size / tp_);
  const double kv_b = Bytes(m.kv_dtype);
  const double act_b = 2.0;

  // Projections of one layer: QKV, O, fused gate+up, down (column/row parallel under TP).
  const double linear =
      GemmSeconds(g, p, tokens, h, (q_heads + 2 * kv_heads) * hd, dtypes_.attention) +
      GemmSeconds(g, p, tokens, q_heads * hd, h, dtypes_.attention) +
      GemmSeconds(g, p, tokens, h, 2 * inter, dtypes_.mlp) +
      GemmSeconds(g, p, tokens, inter, h, dtypes_.mlp);

  // Attention: prefill chunks and decode tokens run as two kernels (FlashAttention-style); each is
  // a roofline over QK^T and PV FLOPs and K/V + Q/O bytes.
  double pre_flops = 0, pre_bytes = 0, dec_flops = 0, dec_bytes = 0;
  bool has_prefill = false, has_decode = false;
  for (const SequenceWork& w : batch) {
    if (w.new_tokens <= 0) continue;
    const double n = w.new_tokens;
    const double c = std::max(0, w.context_tokens);
    const double flops = 4.0 * hd * q_heads * n * (c + (n + 1) / 2.0);
    const double bytes = (c + n) * 2.0 * kv_heads * hd * kv_b  // read K, V
                         + n * 2.0 * kv_heads * hd * kv_b      // write new K, V
                         + n * 2.0 * q_heads * hd * act_b;     // read Q, write O
    if (w.new_tokens > 1) {
      has_prefill = true;
      pre_flops += flops;
      pre_bytes += bytes;
    } else {
      has_decode = true;
      dec_flops += flops;
      dec_bytes += bytes;
    }
  }
  auto roof = [&](double flops, double bytes) {
    return Roof(flops / (p.eta_compute * g.peak_tflops_16 * 1e12),
                bytes / (p.eta_memory * g.mem_bandwidth_gbps * 1e9), p.roofline_exponent) +
           p.attention_overhead_s;
  };
  double attention = 0;
  if (has_prefill) attention += roof(pre_flops, pre_bytes);
  if (has_decode) attention += roof(dec_flops, dec_bytes);

  // Element-wise kernels of one layer: 2 RMSNorms (read+write h), RoPE on Q and K, SiLU*up
  // (read 2*inter, write inter), 2 residual adds (read 2h, write h).
  const double t = static_cast<double>(tokens);
  const double elementwise =
      2 * ElementwiseSeconds(g, p, ElementwiseKind::kNorm, t * 2.0 * h * act_b) +
      ElementwiseSeconds(g, p, ElementwiseKind::kRope,
                         t * 2.0 * (q_heads + kv_heads) * hd * act_b) +
      ElementwiseSeconds(g, p, ElementwiseKind::kActivation, t * 3.0 * inter * act_b) +
      2 * ElementwiseSeconds(g, p, ElementwiseKind::kAdd, t * 3.0 * h * act_b);

  // Two all-reduces per layer (after O and after down) of the [tokens x h] activations.
  const double allreduce = 2 * AllReduceSeconds(g, p, t * h * act_b, tp_);

  b.linear_s = m.num_layers * linear;
  b.attention_s = m.num_layers * attention;
  b.elementwise_s = m.num_layers * elementwise;
  b.allreduce_s = m.num_layers * allreduce;
  // Embedding gather, final norm and the LM head for the last token of each sequence; under TP the
  // vocabulary is split and the logits are gathered (modelled as one all-reduce-sized transfer).
  const int64_t vocab = std::max<int64_t>(1, m.vocab_size / tp_);
  b.lm_head_s = ElementwiseSeconds(g, p, ElementwiseKind::kEmbedding,
                                   t * h * (act_b + Bytes(dtypes_.embedding))) +
                ElementwiseSeconds(g, p, ElementwiseKind::kNorm, t * 2.0 * h * act_b) +
                GemmSeconds(g, p, seqs, h, vocab, dtypes_.lm_head) +
                AllReduceSeconds(g, p, static_cast<double>(seqs) * vocab * act_b, tp_);
  b.overhead_s = p.iteration_overhead_s;
  return b;
}

double CostModel::StepSeconds(std::span<const SequenceWork> batch) const {
  return StepBreakdown(batch).total();
}

int64_t CostModel::KvCacheBytes(double memory_utilization) const {
  const double total = gpu_.memory_gib * 1024.0 * 1024.0 * 1024.0 * memory_utilization;
  const double weights = static_cast<double>(model::WeightBytes(model_, dtypes_)) / tp_;
  // Peak activations while profiling a max-size batch (vLLM profiles max_num_batched_tokens,
  // 4096 here): the MLP intermediate (gate+up, then act) and a few hidden-size buffers per token,
  // plus the logits of up to 256 sequences in FP32 and ~0.5 GiB of non-tensor memory (CUDA
  // context workspace, NCCL buffers, CUDA graphs).
  const double tokens = 4096;
  const double inter = static_cast<double>(model_.intermediate_size) / tp_;
  const double activations = tokens * (3.0 * inter + 6.0 * model_.hidden_size) * 2.0 +
                             256.0 * (static_cast<double>(model_.vocab_size) / tp_) * 4.0 +
                             0.5 * 1024 * 1024 * 1024;
  const double left = total - weights - activations;
  return left > 0 ? static_cast<int64_t>(left) : 0;
}

}  // namespace seedance::model
