#include "seedance/model/error_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "seedance/model/jvp.h"

namespace seedance::model {
namespace {

double SumSquares(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.size(); ++i) s += t.AsDouble(i) * t.AsDouble(i);
  return s;
}

double DiffSquares(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += std::pow(a.AsDouble(i) - b.AsDouble(i), 2);
  return s;
}

Tensor Difference(const Tensor& a, const Tensor& b) {  // a - b, as double
  Tensor d(DataType::kDouble, a.shape());
  for (int64_t i = 0; i < a.size(); ++i) d.data<double>()[i] = a.AsDouble(i) - b.AsDouble(i);
  return d;
}

double Db(double signal2, double noise2) {
  return noise2 == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(signal2 / noise2);
}

// For each layer, the layers reached from its output through nodes that are not layers, and
// whether the model's first output is reached so.
struct Reach {
  std::vector<std::vector<size_t>> next;
  std::vector<bool> to_output;
};

Reach Successors(const Graph& g, const std::vector<Layer>& layers) {
  std::map<std::string, size_t> layer_of;
  for (size_t i = 0; i < layers.size(); ++i) layer_of[layers[i].node] = i;
  Reach r{std::vector<std::vector<size_t>>(layers.size()), std::vector<bool>(layers.size())};
  for (size_t i = 0; i < layers.size(); ++i) {
    std::set<std::string> reached;
    std::set<size_t> next;
    for (const Node& n : g.nodes) {
      if (n.name == layers[i].node) {
        reached.insert(n.outputs.begin(), n.outputs.end());
        continue;
      }
      bool fed = false;
      for (const std::string& in : n.inputs) fed = fed || (!in.empty() && reached.count(in));
      if (!fed) continue;
      if (auto l = layer_of.find(n.name); l != layer_of.end()) {
        next.insert(l->second);
      } else {
        reached.insert(n.outputs.begin(), n.outputs.end());
      }
    }
    r.next[i].assign(next.begin(), next.end());
    r.to_output[i] = reached.count(g.outputs[0].name) > 0;
  }
  return r;
}

// Sums of squares over the samples, per layer.
struct Sums {
  std::vector<double> noise, predicted, measured;
  std::vector<std::map<size_t, double>> edge;  // i -> (j -> sum ||t_j||^2)
  double output = 0;
};

absl::Status Accumulate(const Graph& g64, const TensorMap& feeds64,
                        const std::vector<Layer>& layers, const std::vector<Tensor>& dw,
                        const std::vector<Tensor>& wq, const Reach& reach,
                        const ErrorGraphOptions& options, Sums& sums) {
  absl::StatusOr<Jvp> jvp = Jvp::Create(g64, feeds64);
  if (!jvp.ok()) return jvp.status();
  const std::string& out = g64.outputs[0].name;
  const Tensor& y = jvp->primal().at(out);
  sums.output += SumSquares(y);
  std::set<std::string> record = {out};
  std::map<std::string, std::string> output_of;
  for (const Node& n : g64.nodes) output_of[n.name] = n.outputs[0];
  for (const Layer& l : layers) record.insert(output_of[l.node]);
  for (size_t i = 0; i < layers.size(); ++i) {
    absl::StatusOr<TensorMap> t = jvp->Propagate({{layers[i].weight, dw[i]}}, record);
    if (!t.ok()) return t.status();
    sums.noise[i] += SumSquares(t->at(output_of[layers[i].node]));
    sums.predicted[i] += SumSquares(t->at(out));
    for (size_t j : reach.next[i]) sums.edge[i][j] += SumSquares(t->at(output_of[layers[j].node]));
    if (!options.measure) continue;
    // The rounded weight read in place of the graph's, without copying the model.
    RunOptions rounded;
    rounded.before_node = [&](const Node& node, std::vector<const Tensor*>& in,
                              std::vector<Tensor>&) {
      for (size_t k = 0; k < in.size(); ++k) {
        if (node.inputs[k] == layers[i].weight) in[k] = &wq[i];
      }
      return absl::OkStatus();
    };
    absl::StatusOr<TensorMap> q = Run(g64, feeds64, rounded);
    if (!q.ok()) return q.status();
    sums.measured[i] += DiffSquares(q->at(out), y);
  }
  return absl::OkStatus();
}

// The path of largest gain from any layer to the output: best[i] = max(own output gain when i
// reaches the output directly, max over edges i -> j of gain(i, j) best[j]).
void MostSensitivePath(const std::vector<Layer>& layers, const Reach& reach,
                       const std::map<std::pair<size_t, size_t>, double>& gain, ErrorGraph& eg) {
  const size_t n = layers.size();
  std::vector<double> best(n, 0);
  std::vector<int64_t> via(n, -1);
  for (size_t k = n; k-- > 0;) {
    if (reach.to_output[k]) best[k] = eg.layers[k].output_gain;
    for (size_t j : reach.next[k]) {
      auto e = gain.find({k, j});
      if (e != gain.end() && e->second * best[j] > best[k]) {
        best[k] = e->second * best[j];
        via[k] = static_cast<int64_t>(j);
      }
    }
  }
  const size_t start =
      static_cast<size_t>(std::max_element(best.begin(), best.end()) - best.begin());
  eg.most_sensitive_path_gain = best[start];
  for (int64_t k = static_cast<int64_t>(start); k >= 0; k = via[static_cast<size_t>(k)]) {
    eg.most_sensitive_path.push_back(layers[static_cast<size_t>(k)].node);
  }
  eg.most_sensitive_path.push_back("output");
}

}  // namespace

absl::StatusOr<ErrorGraph> BuildErrorGraph(const Graph& graph,
                                           const std::vector<TensorMap>& samples,
                                           const ErrorGraphOptions& options) {
  const std::vector<Layer> layers = FindLayers(graph);
  if (layers.empty() || samples.empty() || graph.outputs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(graph.source, ": an error graph needs layers, samples and an output"));
  }
  absl::StatusOr<Graph> g64 = ToFloat64(graph);
  if (!g64.ok()) return g64.status();
  std::vector<Tensor> dw, wq;  // each layer's rounding error and rounded weights, in FP64
  for (const Layer& l : layers) {
    FakeQuantOptions q;
    q.per_channel = options.per_channel_weights && l.weight_shape.size() > 1;
    q.axis = l.channel_axis;
    const Tensor& w = graph.initializers.at(l.weight);
    absl::StatusOr<Tensor> rounded = FakeQuantize(w, options.format, q);
    if (!rounded.ok()) return rounded.status();
    dw.push_back(Difference(*rounded, w));
    wq.push_back(ToFloat64(*rounded));
  }
  const Reach reach = Successors(graph, layers);
  const size_t n = layers.size();
  Sums sums{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n),
            std::vector<std::map<size_t, double>>(n), 0};
  for (const TensorMap& feeds : samples) {
    absl::Status s = Accumulate(*g64, FeedsToFloat64(feeds), layers, dw, wq, reach, options, sums);
    if (!s.ok()) return s;
  }
  ErrorGraph eg;
  eg.samples = samples.size();
  eg.output_norm = std::sqrt(sums.output);
  std::map<std::pair<size_t, size_t>, double> gain;
  for (size_t i = 0; i < n; ++i) {
    LayerError e{layers[i].node,
                 std::sqrt(sums.noise[i]),
                 std::sqrt(sums.predicted[i]),
                 std::sqrt(sums.measured[i]),
                 0,
                 Db(sums.output, sums.predicted[i]),
                 options.measure ? Db(sums.output, sums.measured[i]) : 0};
    e.output_gain = e.noise > 0 ? e.predicted / e.noise : 0;
    eg.layers.push_back(e);
    for (const auto& [j, sq] : sums.edge[i]) {
      const double g = sums.noise[i] > 0 ? std::sqrt(sq / sums.noise[i]) : 0;
      if (g < options.prune_below) {
        ++eg.pruned_edges;
        continue;
      }
      gain[{i, j}] = g;
      eg.edges.push_back({layers[i].node, layers[j].node, g});
    }
  }
  MostSensitivePath(layers, reach, gain, eg);
  return eg;
}

double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = a.size();
  if (n < 2 || b.size() != n) return std::numeric_limits<double>::quiet_NaN();
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && v[order[j + 1]] == v[order[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i + j) / 2.0) + 1;
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / static_cast<double>(n);
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / static_cast<double>(n);
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < n; ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (va == 0 || vb == 0) return std::numeric_limits<double>::quiet_NaN();
  return cov / std::sqrt(va * vb);
}

}  // namespace seedance::model
