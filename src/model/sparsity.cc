#include "seedance/model/sparsity.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "layer_noise.h"
#include "seedance/base/check.h"
#include "seedance/model/error_graph.h"

namespace seedance::model {
namespace {

// A tensor seen as rows along `axis`: row r = o * inner + i holds the elements
// o * length * inner + k * inner + i, k = 0 .. length - 1.
struct Rows {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t Offset(int64_t row, int64_t k) const {
    return (row / inner) * length * inner + k * inner + row % inner;
  }
};

Rows RowsOf(const std::vector<int64_t>& shape, int axis) {
  Rows r;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    const int64_t n = shape[static_cast<size_t>(d)];
    if (d < axis) r.outer *= n;
    if (d == axis) r.length = n;
    if (d > axis) r.inner *= n;
  }
  return r;
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The 2-bit index of kept value `t` (over the whole tensor).
int IndexAt(const std::vector<uint8_t>& indices, int64_t t) {
  return (indices[static_cast<size_t>(t / 4)] >> (2 * (t % 4))) & 3;
}

// Aborts unless `c` is as Compress24 makes one: an eligible shape, half the elements as values,
// their indices, and each group's two positions ascending.
void CheckWellFormed(const Compressed24& c) {
  const int64_t kept = Count(c.shape) / 2;
  SEEDANCE_CHECK(CheckEligible24(c.shape, c.axis).ok() &&
                 static_cast<int64_t>(c.values.size()) == kept &&
                 static_cast<int64_t>(c.indices.size()) == (kept + 3) / 4)
      << "malformed Compressed24: shape " << ShapeString(c.shape) << " axis " << c.axis << ", "
      << c.values.size() << " values, " << c.indices.size() << " index bytes";
  for (int64_t t = 0; t < kept; t += 2) {
    SEEDANCE_CHECK(IndexAt(c.indices, t) < IndexAt(c.indices, t + 1))
        << "malformed Compressed24: group " << t / 2 << " stores positions "
        << IndexAt(c.indices, t) << " and " << IndexAt(c.indices, t + 1);
  }
}

absl::Status CheckFloat(const Tensor& w, const char* what) {
  if (w.type() == DataType::kFloat) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": a float tensor is needed, not ", w.Describe()));
}

double Db(double signal2, double noise2) {
  return noise2 == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(signal2 / noise2);
}

// Every sample run with the weights in `pruned` read in place of the graph's.
absl::StatusOr<std::vector<TensorMap>> RunPruned(
    const Graph& graph, const std::vector<TensorMap>& samples,
    const std::map<std::string, const Tensor*>& pruned) {
  RunOptions options;
  options.before_node = [&pruned](const Node& node, std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>&) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto w = pruned.find(node.inputs[i]);
      if (w != pruned.end()) inputs[i] = w->second;
    }
    return absl::OkStatus();
  };
  std::vector<TensorMap> outs;
  for (const TensorMap& feeds : samples) {
    absl::StatusOr<TensorMap> out = Run(graph, feeds, options);
    if (!out.ok()) return out.status();
    outs.push_back(std::move(*out));
  }
  return outs;
}

// Each layer's row of the report, up to the measurements, and the pruned weights.
struct Selection {
  std::vector<LayerSparsity> rows;
  std::map<std::string, Tensor> pruned;  // weight -> pruned 2:4
};

absl::StatusOr<Selection> Select(const Graph& graph, const SparsityOptions& options) {
  Selection s;
  std::set<std::string> named(options.layers.begin(), options.layers.end());
  std::map<std::string, std::pair<int, std::string>> axis_of;  // weight -> axis, first layer
  for (const Layer& layer : FindLayers(graph)) {
    LayerSparsity row;
    row.layer = layer;
    row.reduction_axis = ReductionAxis(layer);
    row.dense_bytes = DenseBytes(layer.weight_shape);
    const Tensor& w = graph.initializers.at(layer.weight);
    absl::StatusOr<Tensor> pruned = Prune24(w, row.reduction_axis);
    auto first = axis_of.find(layer.weight);
    if (!pruned.ok()) {
      row.reason = std::string(pruned.status().message());
    } else if (first != axis_of.end() && first->second.first != row.reduction_axis) {
      row.reason =
          absl::StrCat("its weight \"", layer.weight, "\" is also read by layer \"",
                       first->second.second, "\", which sums over axis ", first->second.first);
    } else {
      row.eligible = true;
      row.compressed_bytes = Compressed24Bytes(layer.weight_shape);
      double kept = 0, all = 0;
      for (int64_t i = 0; i < w.size(); ++i) {
        all += std::pow(static_cast<double>(w.data<float>()[i]), 2);
        kept += std::pow(static_cast<double>(pruned->data<float>()[i]), 2);
      }
      row.weight_energy_kept = all > 0 ? kept / all : 1;
      axis_of.emplace(layer.weight, std::make_pair(row.reduction_axis, layer.node));
    }
    const bool chosen = options.layers.empty() || named.erase(layer.node) > 0;
    if (chosen && !row.eligible && !options.layers.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(graph.source, ": layer \"", layer.node,
                                                     "\" cannot be pruned 2:4: ", row.reason));
    }
    if (chosen && row.eligible) {
      row.pruned = true;
      s.pruned.emplace(layer.weight, std::move(*pruned));
    } else if (row.eligible) {
      row.reason = "not chosen";
    }
    s.rows.push_back(std::move(row));
  }
  if (s.rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        graph.source, ": nothing to prune (no MatMul, Gemm or Conv with a weight initializer)"));
  }
  if (!named.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(graph.source, ": \"", *named.begin(),
                     "\" is not a layer (a MatMul, Gemm or Conv with an FP32 weight initializer)"));
  }
  return s;
}

}  // namespace

int ReductionAxis(const Layer& layer) {
  if (layer.op_type == "Conv") return 1;
  if (layer.op_type == "Gemm") return 1 - layer.channel_axis;           // transB: [N, K]
  return std::max(0, static_cast<int>(layer.weight_shape.size()) - 2);  // MatMul [..., K, N]
}

absl::Status CheckEligible24(const std::vector<int64_t>& shape, int axis) {
  if (axis < 0 || axis >= static_cast<int>(shape.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("reduction axis ", axis, " is outside shape ", ShapeString(shape)));
  }
  const int64_t length = shape[static_cast<size_t>(axis)];
  if (length % kSparseGroup != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("not eligible for 2:4 sparsity: reduction length ", length, " (axis ", axis,
                     " of ", ShapeString(shape), ") is not a multiple of ", kSparseGroup));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Prune24(const Tensor& w, int axis) {
  if (absl::Status s = CheckFloat(w, "2:4 pruning"); !s.ok()) return s;
  if (absl::Status s = CheckEligible24(w.shape(), axis); !s.ok()) return s;
  const float* in = w.data<float>();
  for (int64_t i = 0; i < w.size(); ++i) {
    if (std::isnan(in[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("2:4 pruning: weight ", i, " of ", w.Describe(), " is NaN"));
    }
  }
  Tensor out = w;
  float* o = out.data<float>();
  const Rows rows = RowsOf(w.shape(), axis);
  for (int64_t r = 0; r < rows.count(); ++r) {
    for (int64_t g = 0; g < rows.length; g += kSparseGroup) {
      std::array<int64_t, kSparseGroup> at;
      for (int64_t j = 0; j < kSparseGroup; ++j) at[j] = rows.Offset(r, g + j);
      for (int64_t i = 0; i < kSparseGroup; ++i) {
        // The rank of i's magnitude in its group; a tie goes to the lower position.
        int64_t beaten_by = 0;
        for (int64_t j = 0; j < kSparseGroup; ++j) {
          const float a = std::fabs(in[at[j]]), b = std::fabs(in[at[i]]);
          beaten_by += j != i && (a > b || (a == b && j < i));
        }
        if (beaten_by >= kSparseKept) o[at[i]] = 0.0f;
      }
    }
  }
  return out;
}

absl::StatusOr<int64_t> Count24Violations(const Tensor& w, int axis) {
  if (absl::Status s = CheckFloat(w, "2:4 check"); !s.ok()) return s;
  if (absl::Status s = CheckEligible24(w.shape(), axis); !s.ok()) return s;
  const Rows rows = RowsOf(w.shape(), axis);
  int64_t bad = 0;
  for (int64_t r = 0; r < rows.count(); ++r) {
    for (int64_t g = 0; g < rows.length; g += kSparseGroup) {
      int64_t zeros = 0;
      for (int64_t j = 0; j < kSparseGroup; ++j)
        zeros += w.data<float>()[rows.Offset(r, g + j)] == 0;
      bad += zeros < kSparseGroup - kSparseKept;
    }
  }
  return bad;
}

int64_t DenseBytes(const std::vector<int64_t>& shape) {
  return Count(shape) * static_cast<int64_t>(sizeof(float));
}

int64_t Compressed24Bytes(const std::vector<int64_t>& shape) {
  const int64_t kept = Count(shape) / 2;
  return kept * static_cast<int64_t>(sizeof(float)) + (kept + 3) / 4;
}

absl::StatusOr<Compressed24> Compress24(const Tensor& w, int axis) {
  if (absl::Status s = CheckFloat(w, "2:4 compression"); !s.ok()) return s;
  if (absl::Status s = CheckEligible24(w.shape(), axis); !s.ok()) return s;
  Compressed24 c{w.shape(), axis, {}, {}};
  const int64_t kept = w.size() / 2;
  c.values.reserve(static_cast<size_t>(kept));
  c.indices.assign(static_cast<size_t>((kept + 3) / 4), 0);
  const float* in = w.data<float>();
  const Rows rows = RowsOf(w.shape(), axis);
  int64_t t = 0;  // kept values so far
  for (int64_t r = 0; r < rows.count(); ++r) {
    for (int64_t g = 0; g < rows.length; g += kSparseGroup) {
      // Slots go to the nonzero elements, then to -0, then to +0, lower positions first.
      auto rank = [&](int64_t j) {
        const float v = in[rows.Offset(r, g + j)];
        return v != 0 ? 0 : std::bit_cast<uint32_t>(v) != 0 ? 1 : 2;
      };
      std::array<int64_t, 2> slot = {-1, -1};
      int64_t used = 0, nonzero = 0;
      for (int level = 0; level < 3; ++level) {
        for (int64_t j = 0; j < kSparseGroup; ++j) {
          if (rank(j) != level) continue;
          nonzero += level == 0;
          if (used < kSparseKept) slot[static_cast<size_t>(used++)] = j;
        }
      }
      if (nonzero > kSparseKept) {
        return absl::InvalidArgumentError(absl::StrCat(
            "2:4 compression: group ", g / kSparseGroup, " of row ", r, " along axis ", axis,
            " of ", w.Describe(), " holds ", nonzero, " nonzero weights (prune it first)"));
      }
      std::sort(slot.begin(), slot.end());
      for (int64_t j : slot) {
        c.values.push_back(in[rows.Offset(r, g + j)]);
        c.indices[static_cast<size_t>(t / 4)] |= static_cast<uint8_t>(j << (2 * (t % 4)));
        ++t;
      }
    }
  }
  return c;
}

Tensor Decompress24(const Compressed24& c) {
  CheckWellFormed(c);
  Tensor w(DataType::kFloat, c.shape);
  float* out = w.data<float>();
  const Rows rows = RowsOf(c.shape, c.axis);
  int64_t t = 0;
  for (int64_t r = 0; r < rows.count(); ++r) {
    for (int64_t g = 0; g < rows.length; g += kSparseGroup) {
      for (int64_t j = 0; j < kSparseKept; ++j, ++t) {
        out[rows.Offset(r, g + IndexAt(c.indices, t))] = c.values[static_cast<size_t>(t)];
      }
    }
  }
  return w;
}

absl::StatusOr<Tensor> MatMul24(const Tensor& x, const Compressed24& w) {
  CheckWellFormed(w);
  if (w.shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("2:4 MatMul: the weight must be 2-D, not ", ShapeString(w.shape)));
  }
  const int64_t k = w.shape[static_cast<size_t>(w.axis)];
  const int64_t n = w.shape[static_cast<size_t>(1 - w.axis)];
  if (x.type() != DataType::kFloat || x.rank() != 2 || x.dim(1) != k) {
    return absl::InvalidArgumentError(
        absl::StrCat("2:4 MatMul: the activation must be float [M, ", k, "], not ", x.Describe()));
  }
  const int64_t m = x.dim(0), half = k / 2;
  Tensor y(DataType::kFloat, {m, n});
  const float* a = x.data<float>();
  float* out = y.data<float>();
  // Both layouts ([K, N] along axis 0, [N, K] along axis 1) store output column j's kept values
  // as row j: half values, each with its position k.
  std::vector<int64_t> column(static_cast<size_t>(half));
  for (int64_t j = 0; j < n; ++j) {
    const float* v = w.values.data() + j * half;
    for (int64_t t = 0; t < half; ++t) {
      column[static_cast<size_t>(t)] =
          (t / kSparseKept) * kSparseGroup + IndexAt(w.indices, j * half + t);
    }
    for (int64_t i = 0; i < m; ++i) {
      const float* row = a + i * k;
      float sum = 0.0f;
      for (int64_t t = 0; t < half; ++t) sum += row[column[static_cast<size_t>(t)]] * v[t];
      out[i * n + j] = sum;
    }
  }
  return y;
}

absl::StatusOr<Graph> Sparsify(const Graph& graph, const SparsityOptions& options) {
  absl::StatusOr<Selection> s = Select(graph, options);
  if (!s.ok()) return s.status();
  Graph out = graph;
  for (auto& [name, w] : s->pruned) out.initializers[name] = std::move(w);
  return out;
}

absl::StatusOr<SparsityReport> AnalyzeSparsity(const Graph& graph,
                                               const std::vector<TensorMap>& samples,
                                               const SparsityOptions& options) {
  absl::StatusOr<Selection> s = Select(graph, options);
  if (!s.ok()) return s.status();
  if (samples.empty() || graph.outputs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(graph.source, ": a sparsity report needs samples and an output"));
  }
  std::vector<Layer> layers;
  for (const LayerSparsity& row : s->rows) layers.push_back(row.layer);
  absl::StatusOr<internal::LayerInputs> ref =
      internal::RunKeepingLayerInputs(graph, layers, samples);
  if (!ref.ok()) return ref.status();
  ErrorGraph eg;
  if (options.predict) {
    ErrorGraphOptions eo;
    eo.measure = false;
    absl::StatusOr<ErrorGraph> built = BuildErrorGraph(graph, samples, eo);
    if (!built.ok()) return built.status();
    eg = std::move(*built);
  }
  SparsityReport report;
  report.samples = samples.size();
  std::map<std::string, const Tensor*> all;
  for (size_t i = 0; i < s->rows.size(); ++i) {
    LayerSparsity& row = s->rows[i];
    if (!row.pruned) continue;
    const Tensor* pruned = &s->pruned.at(row.layer.weight);
    if (all.emplace(row.layer.weight, pruned).second) {
      report.dense_bytes += row.dense_bytes;
      report.compressed_bytes += row.compressed_bytes;
    }
    absl::StatusOr<std::vector<TensorMap>> outs =
        RunPruned(graph, samples, {{row.layer.weight, pruned}});
    if (!outs.ok()) return outs.status();
    absl::StatusOr<OutputError> e = CompareOutputs(graph, ref->outputs, *outs);
    if (!e.ok()) return e.status();
    row.output = *e;
    if (!options.predict) continue;
    absl::StatusOr<double> noise2 =
        internal::LocalNoiseSquared(graph, row.layer, *pruned, ref->inputs.at(row.layer.node));
    if (!noise2.ok()) return noise2.status();
    row.noise = std::sqrt(*noise2);
    row.gain = eg.layers[i].output_gain;
    row.predicted_error = row.gain * row.noise;
    row.predicted_sqnr_db =
        Db(eg.output_norm * eg.output_norm, row.predicted_error * row.predicted_error);
  }
  if (!all.empty()) {
    absl::StatusOr<std::vector<TensorMap>> outs = RunPruned(graph, samples, all);
    if (!outs.ok()) return outs.status();
    absl::StatusOr<OutputError> e = CompareOutputs(graph, ref->outputs, *outs);
    if (!e.ok()) return e.status();
    report.all_pruned = *e;
  }
  report.layers = std::move(s->rows);
  return report;
}

}  // namespace seedance::model
