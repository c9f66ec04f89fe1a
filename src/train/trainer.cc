// The data-parallel trainer (trainer.h).
#include "seedance/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <numeric>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "seedance/train/clip.h"

namespace seedance::train {
namespace {

// A stack of dense layers: W (out x in, row-major) then b (out) per layer, in one flat vector.
struct Network {
  std::vector<int> widths;     // input, hidden..., classes
  std::vector<size_t> offset;  // where each layer's W starts in the flat vector
  size_t parameters = 0;

  int layers() const { return static_cast<int>(widths.size()) - 1; }
  size_t in(int l) const { return static_cast<size_t>(widths[static_cast<size_t>(l)]); }
  size_t out(int l) const { return static_cast<size_t>(widths[static_cast<size_t>(l) + 1]); }
  size_t bias(int l) const { return offset[static_cast<size_t>(l)] + in(l)*out(l); }
};

Network MakeNetwork(int features, const std::vector<int>& hidden, int classes) {
  Network net;
  net.widths.push_back(features);
  net.widths.insert(net.widths.end(), hidden.begin(), hidden.end());
  net.widths.push_back(classes);
  for (int l = 0; l < net.layers(); ++l) {
    net.offset.push_back(net.parameters);
    net.parameters += net.in(l)*net.out(l) + net.out(l);
  }
  return net;
}

// He-normal weights for ReLU layers, 1/sqrt(in) for the output layer, zero biases; the same on
// every rank for the same seed.
std::vector<float> InitialWeights(const Network& net, uint64_t seed) {
  std::vector<float> w(net.parameters, 0.0f);
  std::mt19937_64 rng(seed ^ 0x5eedda9ce5eedULL);
  for (int l = 0; l < net.layers(); ++l) {
    const bool last = l + 1 == net.layers();
    std::normal_distribution<double> normal(0.0, std::sqrt((last ? 1.0 : 2.0) / net.in(l)));
    for (size_t i = 0; i < net.in(l)*net.out(l); ++i) {
      w[net.offset[static_cast<size_t>(l)] + i] = static_cast<float>(normal(rng));
    }
  }
  return w;
}

// Forward (and, with `grad`, backward) over `rows` of `data`: returns the summed cross-entropy
// and adds the summed gradient to *grad; counts correct predictions in *correct.
double Pass(const Network& net, const std::vector<float>& w, const Dataset& data,
            std::span<const size_t> rows, std::vector<float>* grad, int64_t* correct) {
  const int layers = net.layers();
  std::vector<std::vector<float>> act(static_cast<size_t>(layers) + 1);
  double loss = 0;
  for (size_t r : rows) {
    const float* x = data.x.data() + r * net.in(0);
    act[0].assign(x, x + net.in(0));
    for (int l = 0; l < layers; ++l) {
      const float* W = w.data() + net.offset[static_cast<size_t>(l)];
      const float* b = w.data() + net.bias(l);
      std::vector<float>& z = act[static_cast<size_t>(l) + 1];
      z.assign(net.out(l), 0.0f);
      for (size_t o = 0; o < net.out(l); ++o) {
        float sum = b[o];
        for (size_t i = 0; i < net.in(l); ++i)
          sum += W[o * net.in(l) + i] * act[static_cast<size_t>(l)][i];
        z[o] = (l + 1 < layers) ? std::max(0.0f, sum) : sum;
      }
    }
    std::vector<float>& logits = act[static_cast<size_t>(layers)];
    const float top = *std::max_element(logits.begin(), logits.end());
    double denom = 0;
    for (float v : logits) denom += std::exp(static_cast<double>(v - top));
    const int label = data.y[r];
    loss += std::log(denom) - static_cast<double>(logits[static_cast<size_t>(label)] - top);
    if (std::max_element(logits.begin(), logits.end()) - logits.begin() == label) ++*correct;
    if (grad == nullptr) continue;
    // delta of the output layer: softmax - one-hot; then back through the layers.
    std::vector<float> delta(logits.size());
    for (size_t k = 0; k < logits.size(); ++k) {
      delta[k] = static_cast<float>(std::exp(static_cast<double>(logits[k] - top)) / denom) -
                 (static_cast<int>(k) == label ? 1.0f : 0.0f);
    }
    for (int l = layers - 1; l >= 0; --l) {
      const std::vector<float>& a = act[static_cast<size_t>(l)];
      float* gW = grad->data() + net.offset[static_cast<size_t>(l)];
      float* gb = grad->data() + net.bias(l);
      for (size_t o = 0; o < net.out(l); ++o) {
        gb[o] += delta[o];
        for (size_t i = 0; i < net.in(l); ++i) gW[o * net.in(l) + i] += delta[o] * a[i];
      }
      if (l == 0) break;
      const float* W = w.data() + net.offset[static_cast<size_t>(l)];
      std::vector<float> prev(net.in(l), 0.0f);
      for (size_t o = 0; o < net.out(l); ++o) {
        for (size_t i = 0; i < net.in(l); ++i) prev[i] += W[o * net.in(l) + i] * delta[o];
      }
      for (size_t i = 0; i < net.in(l); ++i) {
        if (a[i] <= 0.0f) prev[i] = 0.0f;  // ReLU'
      }
      delta = std::move(prev);
    }
  }
  return loss;
}

}  // namespace

absl::Status CheckTrainOptions(const Split& split, const TrainOptions& o, int ranks) {
  if (o.steps < 1) return absl::InvalidArgumentError("--steps must be at least 1");
  if (!(o.lr > 0) || !std::isfinite(o.lr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr must be a positive number (got ", o.lr, ")"));
  }
  if (o.batch < 1 || o.batch % ranks != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch ", o.batch, " does not split evenly over the ", ranks,
                     " ranks mpirun started; use a multiple of ", ranks));
  }
  if (static_cast<size_t>(o.batch) > split.train.rows()) {
    return absl::InvalidArgumentError(absl::StrCat("--batch ", o.batch, " is larger than the ",
                                                   split.train.rows(), " training rows"));
  }
  if (o.clip_norm < 0 || !std::isfinite(o.clip_norm)) {
    return absl::InvalidArgumentError("--clip-norm must be a non-negative number");
  }
  if (o.weight_decay < 0 || !std::isfinite(o.weight_decay)) {
    return absl::InvalidArgumentError("--weight-decay must be a non-negative number");
  }
  if (o.buckets < 1) return absl::InvalidArgumentError("--buckets must be at least 1");
  return absl::OkStatus();
}

namespace {

// The optimizer's state and step.
struct Optimizer {
  OptimizerKind kind;
  std::vector<float> m, v;
  int64_t t = 0;

  void Step(std::vector<float>& w, const std::vector<float>& g, double lr) {
    if (kind == OptimizerKind::kSgd) {
      for (size_t i = 0; i < w.size(); ++i) w[i] -= static_cast<float>(lr) * g[i];
      return;
    }
    constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;
    if (m.empty()) m.assign(w.size(), 0.0f), v.assign(w.size(), 0.0f);
    ++t;
    const double c1 = 1 - std::pow(kB1, static_cast<double>(t));
    const double c2 = 1 - std::pow(kB2, static_cast<double>(t));
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = static_cast<float>(kB1 * m[i] + (1 - kB1) * g[i]);
      v[i] = static_cast<float>(kB2 * v[i] + (1 - kB2) * g[i] * g[i]);
      w[i] -= static_cast<float>(lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + kEps));
    }
  }
};

absl::Status Allreduce(AllreduceMethod method, Communicator& comm, OneBitAllreduce& onebit,
                       int bucket, std::span<float> g) {
  switch (method) {
    case AllreduceMethod::kFp32:
      return comm.AllreduceFp32(bucket, g);
    case AllreduceMethod::kFp16:
      return comm.AllreduceFp16(bucket, g);
    case AllreduceMethod::kOneBit:
    case AllreduceMethod::kOneBitEf:
      return onebit.Run(comm, bucket, g);
  }
  return absl::InternalError("unknown all-reduce method");
}

// Rank 0's progress line on stderr, at most every options.progress_s seconds (the first step's
// line says every rank is past MPI_Init and in the loop).
void ReportProgress(int step, const TrainOptions& options, double batch_loss,
                    std::chrono::steady_clock::time_point start,
                    std::chrono::steady_clock::time_point* last) {
  const auto now = std::chrono::steady_clock::now();
  if (now - *last < std::chrono::duration<double>(options.progress_s) && step != options.steps)
    return;
  *last = now;
  std::fprintf(stderr, "seedance train: step %d of %d (%.0f%%), rank 0's batch loss %.6f, %.1f s\n",
               step, options.steps, 100.0 * step / options.steps, batch_loss,
               std::chrono::duration<double>(now - start).count());
  std::fflush(stderr);
}

}  // namespace

absl::StatusOr<TrainResult> Train(const Split& split, const TrainOptions& options,
                                  Communicator& comm) {
  const int ranks = comm.size();
  if (absl::Status s = CheckTrainOptions(split, options, ranks); !s.ok()) return s;
  const Network net = MakeNetwork(split.train.features, options.hidden, split.train.classes);
  std::vector<float> w = InitialWeights(net, options.seed);
  Optimizer opt{options.optimizer, {}, {}, 0};
  OneBitAllreduce onebit(
      OneBitOptions{SignScale::kL2Rms, options.allreduce == AllreduceMethod::kOneBitEf});
  const size_t rows = split.train.rows();
  const size_t local = static_cast<size_t>(options.batch / ranks);
  std::vector<size_t> order(rows);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(options.seed);
  size_t cursor = rows;  // reshuffle before the first batch
  std::vector<float> grad(net.parameters);
  const size_t buckets = std::min<size_t>(static_cast<size_t>(options.buckets), net.parameters);
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start - std::chrono::hours(1);  // the first step is reported
  for (int step = 0; step < options.steps; ++step) {
    if (cursor + static_cast<size_t>(options.batch) > rows) {
      std::shuffle(order.begin(), order.end(), rng);
      cursor = 0;
    }
    const std::span<const size_t> mine(
        order.data() + cursor + local * static_cast<size_t>(comm.rank()), local);
    cursor += static_cast<size_t>(options.batch);
    std::fill(grad.begin(), grad.end(), 0.0f);
    int64_t unused = 0;
    const double batch_loss =
        Pass(net, w, split.train, mine, &grad, &unused) / static_cast<double>(local);
    for (float& g : grad) g /= static_cast<float>(local);
    for (size_t k = 0; k < buckets; ++k) {
      const size_t begin = net.parameters * k / buckets;
      const size_t end = net.parameters * (k + 1) / buckets;
      absl::Status s = Allreduce(options.allreduce, comm, onebit, static_cast<int>(k),
                                 std::span<float>(grad.data() + begin, end - begin));
      if (!s.ok())
        return absl::Status(s.code(), absl::StrCat("step ", step + 1, ": ", s.message()));
    }
    if (options.weight_decay > 0) {
      for (size_t i = 0; i < grad.size(); ++i)
        grad[i] += static_cast<float>(options.weight_decay) * w[i];
    }
    if (options.clip_norm > 0) {  // clip.h: torch's clip_grad_norm_ on the averaged gradient
      ClipOptions clip;
      clip.max_norm = options.clip_norm;
      const GradTensor tensors[] = {GradTensor::Float32(grad)};
      if (absl::StatusOr<ClipResult> c = ClipGradNorm(tensors, clip); !c.ok()) return c.status();
    }
    double lr = options.lr;
    if (options.schedule == LrSchedule::kCosine) {
      lr *= 0.5 * (1 + std::cos(std::numbers::pi * step / options.steps));
    }
    opt.Step(w, grad, lr);
    if (options.progress_s > 0 && comm.rank() == 0)
      ReportProgress(step + 1, options, batch_loss, start, &last_report);
  }
  TrainResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<size_t> all(rows);
  std::iota(all.begin(), all.end(), size_t{0});
  int64_t correct = 0;
  result.train_loss = Pass(net, w, split.train, all, nullptr, &correct) / static_cast<double>(rows);
  result.train_accuracy = static_cast<double>(correct) / static_cast<double>(rows);
  if (split.test.rows() > 0) {
    std::vector<size_t> test(split.test.rows());
    std::iota(test.begin(), test.end(), size_t{0});
    correct = 0;
    Pass(net, w, split.test, test, nullptr, &correct);
    result.test_accuracy = static_cast<double>(correct) / static_cast<double>(test.size());
  }
  if (!std::isfinite(result.train_loss)) {
    return absl::InvalidArgumentError(
        "the training loss is not finite: lower --lr or set --clip-norm");
  }
  result.parameters = static_cast<int64_t>(net.parameters);
  result.steps = options.steps;
  result.ranks = ranks;
  result.bytes_sent_per_rank.resize(static_cast<size_t>(ranks));
  const uint64_t mine_bytes = comm.bytes_sent();
  MPI_Allgather(&mine_bytes, 1, MPI_UINT64_T, result.bytes_sent_per_rank.data(), 1, MPI_UINT64_T,
                comm.comm());
  return result;
}

absl::StatusOr<std::vector<int>> ParseModelSpec(std::string_view spec) {
  if (spec == "softmax") return std::vector<int>{};
  if (spec.starts_with("mlp:")) {
    std::vector<int> widths;
    for (absl::string_view part :
         absl::StrSplit(absl::string_view(spec.data() + 4, spec.size() - 4), '-')) {
      int w = 0;
      if (!absl::SimpleAtoi(part, &w) || w < 1 || w > 65536) {
        return absl::InvalidArgumentError(absl::StrCat("--model ", std::string(spec),
                                                       ": hidden width '", part,
                                                       "' must be an integer in 1..65536"));
      }
      widths.push_back(w);
    }
    return widths;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--model '", std::string(spec), "': expected softmax or mlp:W1-W2-... (e.g. mlp:64-32)"));
}

absl::StatusOr<AllreduceMethod> ParseAllreduceMethod(std::string_view name) {
  for (AllreduceMethod m : {AllreduceMethod::kFp32, AllreduceMethod::kFp16,
                            AllreduceMethod::kOneBit, AllreduceMethod::kOneBitEf}) {
    if (AllreduceMethodName(m) == name) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat("--allreduce '", std::string(name),
                                                 "': expected fp32, fp16, onebit or onebit-ef"));
}

std::string_view AllreduceMethodName(AllreduceMethod method) {
  switch (method) {
    case AllreduceMethod::kFp32:
      return "fp32";
    case AllreduceMethod::kFp16:
      return "fp16";
    case AllreduceMethod::kOneBit:
      return "onebit";
    case AllreduceMethod::kOneBitEf:
      return "onebit-ef";
  }
  return "?";
}

}  // namespace seedance::train
