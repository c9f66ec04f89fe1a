#include "seedance/model/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "layer_noise.h"
#include "seedance/hw/catalog.h"
#include "seedance/model/error_graph.h"
#include "seedance/model/jvp.h"

namespace seedance::model {
namespace {

// How far above the budget the prior must put the narrowest plan for it to be measured first.
// The prior assumes unit relative gain through the rest of the model; on the six models of the
// benchmark it was 3.4-29 dB below the measured SQNR (residual paths and normalisations shrink
// relative errors), so it is used without a margin: a miss costs one evaluation, and that
// measurement then calibrates the gain-based prediction.
constexpr double kPriorMarginDb = 0;

bool Scaled(NumericFormat f) { return f == NumericFormat::kInt8 || f == NumericFormat::kFp8E4M3; }

int64_t ElementBytes(NumericFormat f) {
  switch (f) {
    case NumericFormat::kFp32:
      return 4;
    case NumericFormat::kFp16:
    case NumericFormat::kBf16:
      return 2;
    case NumericFormat::kFp8E4M3:
    case NumericFormat::kInt8:
      return 1;
  }
  return 4;
}

// Everything the searches share: the layers, FP32 reference outputs, each choice's bytes.
struct Problem {
  const Graph* graph = nullptr;
  const std::vector<TensorMap>* samples = nullptr;
  PlanOptions options;
  std::vector<NumericFormat> formats;
  std::vector<Layer> layers;
  std::vector<TensorMap> reference;
  std::vector<std::vector<int64_t>> bytes;  // [layer][format index]
  int64_t evaluations = 0;
  std::map<std::string, std::vector<Tensor>> inputs;  // layer -> its FP32 input, per sample
};

absl::StatusOr<Problem> Setup(const Graph& graph, const std::vector<TensorMap>& samples,
                              const PlanOptions& options) {
  Problem p{&graph, &samples, options, {}, FindLayers(graph), {}, {}, 0, {}};
  absl::StatusOr<std::vector<NumericFormat>> formats = FormatsFor(options.gpu);
  if (!formats.ok()) return formats.status();
  p.formats = *formats;
  if (p.layers.empty() || samples.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        graph.source, ": nothing to plan (no MatMul, Gemm or Conv with a weight initializer)"));
  }
  // The FP32 reference runs also keep each layer's input (the planner's local noise reads them).
  absl::StatusOr<internal::LayerInputs> runs =
      internal::RunKeepingLayerInputs(graph, p.layers, samples);
  if (!runs.ok()) return runs.status();
  p.reference = std::move(runs->outputs);
  p.inputs = std::move(runs->inputs);
  ++p.evaluations;
  const Tensor& y = p.reference.front().at(graph.outputs[0].name);
  if (options.budget_top1 > 0 && (y.rank() < 2 || y.shape().back() < 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        graph.source, ": a top-1 budget needs a classifier's output [..., classes]; output \"",
        graph.outputs[0].name, "\" is ", y.Describe()));
  }
  for (const Layer& l : p.layers) {
    const int64_t channels = l.weight_shape.empty() ? 1 : l.weight_shape[l.channel_axis];
    std::vector<int64_t> row;
    for (NumericFormat f : p.formats) {
      row.push_back(WeightBytes(l.weight_shape, f, options.per_channel_weights ? channels : 1));
    }
    p.bytes.push_back(row);
  }
  return p;
}

// A plan of format indices measured in FP32: output SQNR and top-1 agreement.
absl::StatusOr<OutputError> Measure(Problem& p, const std::vector<size_t>& choice) {
  PrecisionPlan plan;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    plan[p.layers[i].node] = {p.formats[choice[i]], NumericFormat::kFp32};
  }
  EmulationOptions eo;
  eo.per_channel_weights = p.options.per_channel_weights;
  absl::StatusOr<Emulation> e = Emulation::Create(*p.graph, plan, {}, eo);
  if (!e.ok()) return e.status();
  std::vector<TensorMap> outs;
  for (const TensorMap& feeds : *p.samples) {
    absl::StatusOr<TensorMap> out = e->Run(feeds);
    if (!out.ok()) return out.status();
    outs.push_back(std::move(*out));
  }
  ++p.evaluations;
  return CompareOutputs(*p.graph, p.reference, outs);
}

bool Meets(const PlanOptions& o, const OutputError& e) {
  if (o.budget_top1 > 0) return e.top1_agreement >= o.budget_top1;
  return e.metrics.sqnr_db >= o.budget_sqnr_db;
}

Plan Describe(const Problem& p, const std::vector<size_t>& choice, const OutputError& measured,
              const std::vector<std::vector<double>>* predicted) {
  Plan plan;
  plan.gpu = p.options.gpu;
  plan.formats = p.formats;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const Layer& l = p.layers[i];
    LayerChoice c{l.node,
                  l.weight,
                  p.formats[choice[i]],
                  p.bytes[i][0],
                  p.bytes[i][choice[i]],
                  predicted != nullptr ? (*predicted)[i][choice[i]] : 0};
    plan.bytes_fp32 += c.bytes_fp32;
    plan.bytes += c.bytes;
    plan.layers.push_back(c);
  }
  plan.measured_sqnr_db = measured.metrics.sqnr_db;
  plan.measured_top1 = measured.top1_agreement;
  plan.meets_budget = Meets(p.options, measured);
  plan.model_evaluations = p.evaluations;
  return plan;
}

double OutputSumSquares(const Problem& p) {
  double s = 0;
  for (const TensorMap& out : p.reference) {
    const Tensor& y = out.at(p.graph->outputs[0].name);
    for (int64_t i = 0; i < y.size(); ++i) s += y.AsDouble(i) * y.AsDouble(i);
  }
  return s;
}

// n_i(f)^2 summed over the samples: the layer alone on its FP64 input with weight Q_f(W) - W.
absl::StatusOr<std::vector<std::vector<double>>> LocalNoise(Problem& p) {
  std::vector<std::vector<double>> noise(p.layers.size());
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const Layer& l = p.layers[i];
    const Tensor& w = p.graph->initializers.at(l.weight);
    for (NumericFormat f : p.formats) {
      FakeQuantOptions q;
      q.per_channel = p.options.per_channel_weights && w.rank() > 1;
      q.axis = l.channel_axis;
      absl::StatusOr<Tensor> wq = FakeQuantize(w, f, q);
      if (!wq.ok()) return wq.status();
      absl::StatusOr<double> sum =
          internal::LocalNoiseSquared(*p.graph, l, *wq, p.inputs.at(l.node));
      if (!sum.ok()) return sum.status();
      noise[i].push_back(*sum);
    }
  }
  return noise;
}

// The cheapest choice whose predicted error^2 sum stays within `limit2`: branch and bound over
// every combination (layers' options tried cheapest first).
struct Search {
  const std::vector<std::vector<int64_t>>& bytes;
  const std::vector<std::vector<double>>& err2;
  double limit2;
  std::vector<size_t> current, best;
  int64_t best_bytes = std::numeric_limits<int64_t>::max();
  std::vector<double> min_err2_after;  // the least error the layers from i on can add

  void Go(size_t i, int64_t spent, double err) {
    if (spent >= best_bytes || err + min_err2_after[i] > limit2) return;
    if (i == bytes.size()) {
      best_bytes = spent;
      best = current;
      return;
    }
    std::vector<size_t> order(bytes[i].size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return bytes[i][a] != bytes[i][b] ? bytes[i][a] < bytes[i][b] : err2[i][a] < err2[i][b];
    });
    for (size_t k : order) {
      current[i] = k;
      Go(i + 1, spent + bytes[i][k], err + err2[i][k]);
    }
  }
};

std::vector<size_t> Cheapest(const std::vector<std::vector<int64_t>>& bytes,
                             const std::vector<std::vector<double>>& err2, double limit2) {
  const size_t n = bytes.size();
  Search s{bytes,
           err2,
           limit2,
           std::vector<size_t>(n, 0),
           {},
           std::numeric_limits<int64_t>::max(),
           std::vector<double>(n + 1, 0)};
  for (size_t i = n; i-- > 0;) {
    s.min_err2_after[i] =
        s.min_err2_after[i + 1] + *std::min_element(err2[i].begin(), err2[i].end());
  }
  s.Go(0, 0, 0);
  if (s.best.empty()) s.best.assign(n, 0);  // nothing meets it: keep every layer FP32
  return s.best;
}

// The prior, before any model run beyond the reference: each layer's relative local noise
// n_i(f) / ||x_i W_i|| reaching the output at unit relative gain. [layer][format]: the output
// error each layer's format would cause on that assumption.
absl::StatusOr<std::vector<std::vector<double>>> PriorError(
    const Problem& p, const std::vector<std::vector<double>>& noise2, double y2) {
  std::vector<std::vector<double>> err(p.layers.size());
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const Layer& l = p.layers[i];
    // ||x_i (0 - W_i)||^2 = ||x_i W_i||^2: the layer's own output, without its bias.
    const Tensor zero(DataType::kFloat, p.graph->initializers.at(l.weight).shape());
    absl::StatusOr<double> out2 =
        internal::LocalNoiseSquared(*p.graph, l, zero, p.inputs.at(l.node));
    if (!out2.ok()) return out2.status();
    for (double n2 : noise2[i]) err[i].push_back(*out2 > 0 ? std::sqrt(n2 / *out2 * y2) : 0.0);
  }
  return err;
}

double PredictedDb(const std::vector<std::vector<double>>& err, const std::vector<size_t>& choice,
                   double y2) {
  double e2 = 0;
  for (size_t i = 0; i < choice.size(); ++i) e2 += err[i][choice[i]] * err[i][choice[i]];
  return e2 == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(y2 / e2);
}

}  // namespace

absl::StatusOr<std::vector<NumericFormat>> FormatsFor(const std::string& gpu) {
  const hw::GpuModel* m = hw::Find(gpu);
  if (m == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown GPU \"", gpu,
                                                   "\" (the hardware catalog's names: H100, "
                                                   "A100-80GB, T4, ...)"));
  }
  std::vector<NumericFormat> f = {NumericFormat::kFp32, NumericFormat::kFp16};
  if (m->bf16) f.push_back(NumericFormat::kBf16);
  if (m->fp8) f.push_back(NumericFormat::kFp8E4M3);
  if (m->int8) f.push_back(NumericFormat::kInt8);
  return f;
}

int64_t WeightBytes(const std::vector<int64_t>& shape, NumericFormat format, int64_t channels) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n * ElementBytes(format) + (Scaled(format) ? 4 * channels : 0);
}

PrecisionPlan ToPrecisionPlan(const Plan& plan) {
  PrecisionPlan p;
  for (const LayerChoice& c : plan.layers) p[c.node] = {c.format, NumericFormat::kFp32};
  return p;
}

absl::StatusOr<Plan> MakePlan(const Graph& graph, const std::vector<TensorMap>& samples,
                              const PlanOptions& options) {
  absl::StatusOr<Problem> p = Setup(graph, samples, options);
  if (!p.ok()) return p.status();
  absl::StatusOr<std::vector<std::vector<double>>> noise2 = LocalNoise(*p);
  if (!noise2.ok()) return noise2.status();
  const double y2 = OutputSumSquares(*p);
  double target_db = options.budget_top1 > 0 ? 20 : options.budget_sqnr_db;
  // 1. When the prior gives the narrowest format everywhere a wide margin, that plan (the
  // cheapest there is) is measured first: one evaluation, as a fallback search spends.
  absl::StatusOr<std::vector<std::vector<double>>> prior = PriorError(*p, *noise2, y2);
  if (!prior.ok()) return prior.status();
  const std::vector<size_t> narrowest(p->layers.size(), p->formats.size() - 1);
  std::optional<OutputError> narrow;
  const double prior_db = PredictedDb(*prior, narrowest, y2);
  if (prior_db >= target_db + kPriorMarginDb) {
    absl::StatusOr<OutputError> m = Measure(*p, narrowest);
    if (!m.ok()) return m.status();
    if (Meets(options, *m)) {
      Plan plan = Describe(*p, narrowest, *m, &*prior);
      plan.predicted_sqnr_db = prior_db;
      plan.rounds = 1;
      return plan;
    }
    narrow = *m;
  }
  // 2. The gains g_i (one FP64 run, one tangent pass per layer) make the prediction.
  ErrorGraphOptions eo;
  eo.format = p->formats.back();
  eo.per_channel_weights = options.per_channel_weights;
  eo.measure = false;
  absl::StatusOr<ErrorGraph> eg = BuildErrorGraph(graph, samples, eo);
  if (!eg.ok()) return eg.status();
  p->evaluations += 1 + static_cast<int64_t>(p->layers.size());  // the FP64 run, the tangents
  std::vector<std::vector<double>> err2 = *noise2, err(p->layers.size());
  for (size_t i = 0; i < p->layers.size(); ++i) {
    const double g = eg->layers[i].output_gain;
    for (size_t k = 0; k < err2[i].size(); ++k) {
      err2[i][k] *= g * g;
      err[i].push_back(std::sqrt(err2[i][k]));
    }
  }
  // A measured narrowest plan shows how optimistic the prediction is there: plan with that much
  // more room (the rounds below do the same after a miss).
  if (narrow && options.budget_top1 <= 0) {
    target_db += std::max(0.0, PredictedDb(err, narrowest, y2) - narrow->metrics.sqnr_db);
  }
  Plan plan;
  for (int round = 1; round <= std::max(1, options.max_rounds); ++round) {
    const std::vector<size_t> choice = Cheapest(p->bytes, err2, y2 / std::pow(10, target_db / 10));
    absl::StatusOr<OutputError> m = Measure(*p, choice);
    if (!m.ok()) return m.status();
    plan = Describe(*p, choice, *m, &err);
    plan.predicted_sqnr_db = PredictedDb(err, choice, y2);
    plan.rounds = round;
    if (plan.meets_budget) break;
    // The prediction was optimistic: tighten by its shortfall (top-1: by 6 dB) and plan again.
    target_db += options.budget_top1 > 0 ? 6 : std::max(0.5, target_db - m->metrics.sqnr_db + 0.5);
  }
  return plan;
}

absl::StatusOr<Plan> FallbackSearch(const Graph& graph, const std::vector<TensorMap>& samples,
                                    const PlanOptions& options) {
  absl::StatusOr<Problem> p = Setup(graph, samples, options);
  if (!p.ok()) return p.status();
  const size_t narrowest = p->formats.size() - 1;
  std::vector<size_t> choice(p->layers.size(), narrowest);
  absl::StatusOr<OutputError> m = Measure(*p, choice);
  if (!m.ok()) return m.status();
  while (!Meets(options, *m)) {
    double best_gain = -std::numeric_limits<double>::infinity();
    std::vector<size_t> best;
    OutputError best_m;
    for (size_t i = 0; i < choice.size(); ++i) {
      if (choice[i] == 0) continue;
      std::vector<size_t> c = choice;
      --c[i];  // one step wider
      absl::StatusOr<OutputError> t = Measure(*p, c);
      if (!t.ok()) return t.status();
      const double gain = options.budget_top1 > 0 ? t->top1_agreement : t->metrics.sqnr_db;
      if (gain > best_gain) {
        best_gain = gain;
        best = c;
        best_m = *t;
      }
    }
    if (best.empty()) break;  // everything is FP32
    choice = best;
    m = best_m;
  }
  Plan plan = Describe(*p, choice, *m, nullptr);
  plan.rounds = 1;
  return plan;
}

absl::StatusOr<Plan> ExhaustiveSearch(const Graph& graph, const std::vector<TensorMap>& samples,
                                      const PlanOptions& options) {
  absl::StatusOr<Problem> p = Setup(graph, samples, options);
  if (!p.ok()) return p.status();
  const size_t n = p->layers.size(), f = p->formats.size();
  const double combos = std::pow(static_cast<double>(f), static_cast<double>(n));
  if (n > 12 || combos > 20000) {
    return absl::InvalidArgumentError(
        absl::StrCat("exhaustive search over ", n, " layers and ", f, " formats is too large"));
  }
  // Every combination by total bytes, cheapest first; the first that meets the budget is the
  // cheapest plan (each measured in FP32 until then).
  std::vector<std::pair<int64_t, uint64_t>> all;
  for (uint64_t code = 0; code < static_cast<uint64_t>(combos); ++code) {
    int64_t bytes = 0;
    for (uint64_t c = code, i = 0; i < n; ++i, c /= f) bytes += p->bytes[i][c % f];
    all.push_back({bytes, code});
  }
  std::sort(all.begin(), all.end());
  for (const auto& [bytes, code] : all) {
    std::vector<size_t> choice(n);
    for (uint64_t c = code, i = 0; i < n; ++i, c /= f) choice[i] = static_cast<size_t>(c % f);
    absl::StatusOr<OutputError> m = Measure(*p, choice);
    if (!m.ok()) return m.status();
    if (Meets(options, *m)) {
      Plan plan = Describe(*p, choice, *m, nullptr);
      plan.rounds = 1;
      return plan;
    }
  }
  return absl::InternalError("no plan meets the budget, not even FP32");
}

}  // namespace seedance::model
