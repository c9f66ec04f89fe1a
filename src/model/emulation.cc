#include "seedance/model/emulation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace seedance::model {
namespace {

bool Scaled(NumericFormat f) { return f == NumericFormat::kInt8 || f == NumericFormat::kFp8E4M3; }

// The output-channel axis of a layer's weight.
int ChannelAxis(const Node& node, const Tensor& w) {
  if (node.op_type == "Conv") return 0;
  if (node.op_type == "Gemm") {
    auto it = node.attributes.find("transB");
    return it != node.attributes.end() && it->second.i != 0 ? 0 : 1;
  }
  return std::max(0, w.rank() - 1);  // MatMul: [..., in, out]
}

// |x| at `percentile` (0..100) of the values seen, by sorting them all (calibration sets are
// small).
double Percentile(std::vector<float>& values, double percentile) {
  if (values.empty()) return 0;
  const size_t k =
      std::min(values.size() - 1, static_cast<size_t>(percentile / 100.0 * values.size()));
  std::nth_element(values.begin(), values.begin() + static_cast<int64_t>(k), values.end());
  return values[k];
}

}  // namespace

std::vector<Layer> FindLayers(const Graph& graph) {
  std::vector<Layer> layers;
  for (const Node& node : graph.nodes) {
    if (node.op_type != "MatMul" && node.op_type != "Gemm" && node.op_type != "Conv") continue;
    if (node.inputs.size() < 2) continue;
    auto w = graph.initializers.find(node.inputs[1]);
    if (w == graph.initializers.end() || w->second.type() != DataType::kFloat) continue;
    layers.push_back({node.name, node.op_type, node.inputs[1], node.inputs[0], w->second.shape(),
                      ChannelAxis(node, w->second)});
  }
  return layers;
}

// KL(p || q) of two histograms (unnormalised), over the bins where p > 0.
double KlDivergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0, sq = 0, kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  if (sp == 0 || sq == 0) return std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    if (q[i] == 0) return std::numeric_limits<double>::infinity();
    kl += p[i] / sp * std::log((p[i] / sp) / (q[i] / sq));
  }
  return kl;
}

// The clipping threshold of TensorRT's entropy calibration: a 2,048-bin histogram of |x| over
// [0, max|x|]; for each candidate cut i (128..2048 bins) the reference P is the first i bins with
// everything above folded into bin i - 1, the candidate Q is P merged into 128 levels (INT8's
// magnitudes) and spread back over the bins P holds; the cut with the least KL(P || Q) wins, at
// the upper edge of its last bin.
double EntropyThreshold(const std::vector<float>& values) {
  constexpr int kBins = 2048, kLevels = 128;
  double amax = 0;
  for (float v : values) amax = std::max(amax, static_cast<double>(v));
  if (amax == 0) return 0;
  std::vector<double> hist(kBins, 0);
  for (float v : values) {
    hist[std::min(kBins - 1, static_cast<int>(v / amax * kBins))] += 1;
  }
  double best_kl = std::numeric_limits<double>::infinity();
  int best = kBins;
  for (int i = kLevels; i <= kBins; ++i) {
    std::vector<double> p(hist.begin(), hist.begin() + i);
    for (int k = i; k < kBins; ++k) p[static_cast<size_t>(i - 1)] += hist[static_cast<size_t>(k)];
    std::vector<double> q(static_cast<size_t>(i), 0);
    for (int level = 0; level < kLevels; ++level) {
      const int lo = level * i / kLevels, hi = (level + 1) * i / kLevels;
      double sum = 0;
      int nonzero = 0;
      for (int k = lo; k < hi; ++k) {
        sum += hist[static_cast<size_t>(k)];
        nonzero += hist[static_cast<size_t>(k)] > 0;
      }
      for (int k = lo; k < hi; ++k) {
        if (hist[static_cast<size_t>(k)] > 0) q[static_cast<size_t>(k)] = sum / nonzero;
      }
    }
    const double kl = KlDivergence(p, q);
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return amax * best / kBins;
}

absl::StatusOr<ActivationRanges> Calibrate(const Graph& graph,
                                           const std::vector<TensorMap>& samples,
                                           const EmulationOptions& options) {
  std::map<std::string, std::vector<float>> seen;  // percentile: every |x|
  ActivationRanges ranges;
  for (const Layer& l : FindLayers(graph)) ranges[l.node] = 0;
  RunOptions run;
  run.before_node = [&](const Node& node, std::vector<const Tensor*>& inputs,
                        std::vector<Tensor>&) -> absl::Status {
    auto it = ranges.find(node.name);
    if (it == ranges.end() || inputs.empty() || inputs[0] == nullptr) return absl::OkStatus();
    const Tensor& x = *inputs[0];
    if (x.type() != DataType::kFloat) return absl::OkStatus();
    for (float v : x.values<float>()) {
      if (!std::isfinite(v)) continue;
      it->second = std::max(it->second, static_cast<double>(std::fabs(v)));
      if (options.percentile > 0 || options.entropy) seen[node.name].push_back(std::fabs(v));
    }
    return absl::OkStatus();
  };
  for (const TensorMap& feeds : samples) {
    absl::StatusOr<TensorMap> out = Run(graph, feeds, run);
    if (!out.ok()) return out.status();
  }
  for (auto& [node, values] : seen) {
    ranges[node] =
        options.entropy ? EntropyThreshold(values) : Percentile(values, options.percentile);
  }
  return ranges;
}

absl::StatusOr<Emulation> Emulation::Create(const Graph& graph, const PrecisionPlan& plan,
                                            const ActivationRanges& ranges,
                                            const EmulationOptions& options) {
  Emulation e;
  e.graph_ = &graph;
  const std::vector<Layer> layers = FindLayers(graph);
  for (const auto& entry : plan) {
    const std::string& node = entry.first;  // (a structured binding cannot be captured in C++20)
    const LayerPrecision& precision = entry.second;
    auto layer =
        std::find_if(layers.begin(), layers.end(), [&](const Layer& l) { return l.node == node; });
    if (layer == layers.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          graph.source, ": the plan names \"", node,
          "\", which is not a layer (a MatMul, Gemm or Conv with an FP32 weight initializer)"));
    }
    if (precision.weights != NumericFormat::kFp32) {
      FakeQuantOptions q;
      q.per_channel = options.per_channel_weights && layer->weight_shape.size() > 1;
      q.axis = layer->channel_axis;
      absl::StatusOr<Tensor> w =
          FakeQuantize(graph.initializers.at(layer->weight), precision.weights, q);
      if (!w.ok()) return w.status();
      e.weights_[layer->weight] = std::move(*w);
    }
    if (precision.activations == NumericFormat::kFp32) continue;
    double amax = 0;
    if (Scaled(precision.activations)) {
      auto r = ranges.find(node);
      if (r == ranges.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("layer \"", node, "\" has no calibrated activation range"));
      }
      amax = r->second;
    }
    e.activations_[node] = {precision.activations, amax};
  }
  return e;
}

absl::StatusOr<TensorMap> Emulation::Run(const TensorMap& feeds, RunOptions options) const {
  options.before_node = [this](const Node& node, std::vector<const Tensor*>& inputs,
                               std::vector<Tensor>& replacements) -> absl::Status {
    // Rounded weights are read in place of the graph's (every node reading the initializer).
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto w = weights_.find(node.inputs[i]);
      if (w != weights_.end()) inputs[i] = &w->second;
    }
    auto it = activations_.find(node.name);
    if (it == activations_.end() || inputs.empty() || inputs[0] == nullptr ||
        inputs[0]->type() != DataType::kFloat) {
      return absl::OkStatus();
    }
    FakeQuantOptions q;
    q.amax = it->second.second;
    absl::StatusOr<Tensor> x = FakeQuantize(*inputs[0], it->second.first, q);
    if (!x.ok()) return x.status();
    replacements[0] = std::move(*x);
    inputs[0] = &replacements[0];
    return absl::OkStatus();
  };
  return model::Run(*graph_, feeds, options);
}

const Tensor& Emulation::Weight(const std::string& name) const {
  auto w = weights_.find(name);
  return w != weights_.end() ? w->second : graph_->initializers.at(name);
}

absl::StatusOr<OutputError> CompareOutputs(const Graph& graph, const std::vector<TensorMap>& ref,
                                           const std::vector<TensorMap>& test) {
  if (graph.outputs.empty() || ref.size() != test.size()) {
    return absl::InvalidArgumentError("outputs to compare differ in count");
  }
  const std::string& name = graph.outputs[0].name;
  std::vector<double> r, t;
  int64_t rows = 0, agree = 0;
  for (size_t s = 0; s < ref.size(); ++s) {
    const Tensor& a = ref[s].at(name);
    const Tensor& b = test[s].at(name);
    if (a.size() != b.size()) return absl::InvalidArgumentError("outputs differ in size");
    for (int64_t i = 0; i < a.size(); ++i) {
      r.push_back(a.AsDouble(i));
      t.push_back(b.AsDouble(i));
    }
    const int64_t classes = a.rank() >= 2 ? a.shape().back() : 0;
    for (int64_t row = 0; classes > 1 && row < a.size() / classes; ++row) {
      int64_t ia = 0, ib = 0;
      for (int64_t c = 1; c < classes; ++c) {
        if (a.AsDouble(row * classes + c) > a.AsDouble(row * classes + ia)) ia = c;
        if (b.AsDouble(row * classes + c) > b.AsDouble(row * classes + ib)) ib = c;
      }
      ++rows;
      agree += ia == ib;
    }
  }
  const int64_t n = static_cast<int64_t>(r.size());
  absl::StatusOr<ErrorMetrics> m =
      CompareTensors(Tensor::From<double>({n}, r), Tensor::From<double>({n}, t));
  if (!m.ok()) return m.status();
  OutputError e;
  e.metrics = *m;
  e.top1_agreement = rows > 0 ? static_cast<double>(agree) / static_cast<double>(rows)
                              : std::numeric_limits<double>::quiet_NaN();
  return e;
}

namespace {

// Runs `e` on every sample, keeping the graph outputs and `layer`'s own output (when not "").
absl::StatusOr<std::vector<TensorMap>> RunAll(const Emulation& e,
                                              const std::vector<TensorMap>& samples,
                                              const std::string& layer,
                                              std::vector<Tensor>* layer_outputs) {
  std::vector<TensorMap> outs;
  RunOptions options;
  if (!layer.empty()) {
    options.after_node = [&](const Node& node, std::vector<Tensor>& outputs) {
      if (node.name == layer && !outputs.empty()) layer_outputs->push_back(outputs[0]);
      return absl::OkStatus();
    };
  }
  for (const TensorMap& feeds : samples) {
    absl::StatusOr<TensorMap> out = e.Run(feeds, options);
    if (!out.ok()) return out.status();
    outs.push_back(std::move(*out));
  }
  return outs;
}

// The samples' `layer` outputs as one double tensor, to compare as one.
Tensor Concat(const std::vector<Tensor>& parts) {
  std::vector<double> all;
  for (const Tensor& t : parts) {
    for (int64_t i = 0; i < t.size(); ++i) all.push_back(t.AsDouble(i));
  }
  const int64_t n = static_cast<int64_t>(all.size());
  return Tensor::From<double>({n}, all);
}

}  // namespace

absl::StatusOr<Analysis> Analyze(const Graph& graph, const std::vector<TensorMap>& samples,
                                 const AnalyzeOptions& options) {
  Analysis a;
  a.formats = options.formats;
  a.samples = samples.size();
  absl::StatusOr<ActivationRanges> ranges = Calibrate(graph, samples, options.emulation);
  if (!ranges.ok()) return ranges.status();
  const std::vector<Layer> layers = FindLayers(graph);
  const size_t total = (layers.size() + 1) * options.formats.size();
  size_t done = 0;
  absl::StatusOr<Emulation> fp32 = Emulation::Create(graph, {}, *ranges, options.emulation);
  if (!fp32.ok()) return fp32.status();
  for (const Layer& layer : layers) {
    std::vector<Tensor> ref_layer;
    absl::StatusOr<std::vector<TensorMap>> ref = RunAll(*fp32, samples, layer.node, &ref_layer);
    if (!ref.ok()) return ref.status();
    LayerAnalysis la{layer, {}};
    for (NumericFormat f : options.formats) {
      const LayerPrecision p{f, options.activations ? f : NumericFormat::kFp32};
      absl::StatusOr<Emulation> e =
          Emulation::Create(graph, {{layer.node, p}}, *ranges, options.emulation);
      if (!e.ok()) return e.status();
      std::vector<Tensor> test_layer;
      absl::StatusOr<std::vector<TensorMap>> test = RunAll(*e, samples, layer.node, &test_layer);
      if (!test.ok()) return test.status();
      absl::StatusOr<OutputError> out = CompareOutputs(graph, *ref, *test);
      absl::StatusOr<ErrorMetrics> local = CompareTensors(Concat(ref_layer), Concat(test_layer));
      if (!out.ok()) return out.status();
      if (!local.ok()) return local.status();
      la.by_format[f] = {*out, *local};
      if (options.progress) options.progress(++done, total);
    }
    a.layers.push_back(std::move(la));
  }
  absl::StatusOr<std::vector<TensorMap>> ref = RunAll(*fp32, samples, "", nullptr);
  if (!ref.ok()) return ref.status();
  for (NumericFormat f : options.formats) {
    PrecisionPlan plan;
    for (const Layer& l : layers)
      plan[l.node] = {f, options.activations ? f : NumericFormat::kFp32};
    absl::StatusOr<Emulation> e = Emulation::Create(graph, plan, *ranges, options.emulation);
    if (!e.ok()) return e.status();
    absl::StatusOr<std::vector<TensorMap>> test = RunAll(*e, samples, "", nullptr);
    if (!test.ok()) return test.status();
    absl::StatusOr<OutputError> out = CompareOutputs(graph, *ref, *test);
    if (!out.ok()) return out.status();
    a.all_layers[f] = *out;
    if (options.progress) options.progress(++done, total);
  }
  return a;
}

}  // namespace seedance::model
