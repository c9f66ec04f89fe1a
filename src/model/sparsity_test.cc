#include "seedance/model/sparsity.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "layer_noise.h"
#include "seedance/model/executor.h"

namespace seedance::model {
namespace {

// The element offsets of every group of 4 along `axis`, enumerated from the shape alone (not
// from the library's own row walk), so the tests check the axis independently.
std::vector<std::array<int64_t, 4>> GroupsAlong(const std::vector<int64_t>& shape, int axis) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<std::array<int64_t, 4>> groups;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t along =
        (i / strides[static_cast<size_t>(axis)]) % shape[static_cast<size_t>(axis)];
    if (along % 4 != 0) continue;
    const int64_t s = strides[static_cast<size_t>(axis)];
    groups.push_back({i, i + s, i + 2 * s, i + 3 * s});
  }
  return groups;
}

Tensor Random(const std::vector<int64_t>& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0, 1);
  Tensor t(DataType::kFloat, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a.data<float>()[i]) != std::bit_cast<uint32_t>(b.data<float>()[i]))
      return false;
  }
  return true;
}

// A graph whose only node is `op` reading x and the weight `w`, for FindLayers and the executor.
Graph OneLayer(const std::string& op, const Tensor& w, bool trans_b, std::vector<int64_t> x_shape,
               std::vector<int64_t> y_shape) {
  Graph g;
  g.source = "one";
  g.opset = 17;
  g.initializers["W"] = w;
  g.inputs.push_back({"x", DataType::kFloat, x_shape, {}, true});
  g.outputs.push_back({"y", DataType::kFloat, y_shape, {}, true});
  Node n{"layer", op, {"x", "W"}, {"y"}, {}};
  if (op == "Gemm") n.attributes["transB"].i = trans_b ? 1 : 0;
  g.nodes.push_back(n);
  return g;
}

struct Kind {
  std::string name, op;
  bool trans_b;
  std::vector<int64_t> weight_shape;
  int want_axis;
};

// Each layer kind with a weight shape drawn from `rng` (reduction lengths multiples of 4).
std::vector<Kind> RandomKinds(std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> d(1, 9), groups(1, 6);
  const int64_t k = 4 * groups(rng), n = d(rng);
  return {{"MatMul [K,N]", "MatMul", false, {k, n}, 0},
          {"MatMul [B,K,N]", "MatMul", false, {d(rng), k, n}, 1},
          {"MatMul [K]", "MatMul", false, {k}, 0},
          {"Gemm [K,N]", "Gemm", false, {k, n}, 0},
          {"Gemm transB [N,K]", "Gemm", true, {n, k}, 1},
          {"Conv [Cout,Cin,kh,kw]", "Conv", false, {n, k, d(rng) % 4 + 1, d(rng) % 4 + 1}, 1}};
}

Layer LayerOf(const Kind& kind, const Tensor& w) {
  const std::vector<Layer> layers = FindLayers(OneLayer(kind.op, w, kind.trans_b, {}, {}));
  EXPECT_EQ(layers.size(), 1u);
  return layers.at(0);
}

TEST(SparsityTest, ReductionAxisFollowsTheLayerKind) {
  std::mt19937 rng(1);
  for (const Kind& kind : RandomKinds(rng)) {
    EXPECT_EQ(ReductionAxis(LayerOf(kind, Random(kind.weight_shape, 1))), kind.want_axis)
        << kind.name;
  }
}

TEST(SparsityTest, EveryGroupOfFourAlongTheReductionAxisHoldsTwoZeros) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    for (const Kind& kind : RandomKinds(rng)) {
      const Tensor w = Random(kind.weight_shape, static_cast<uint32_t>(trial));
      const int axis = ReductionAxis(LayerOf(kind, w));
      absl::StatusOr<Tensor> p = Prune24(w, axis);
      ASSERT_TRUE(p.ok()) << kind.name << ": " << p.status();
      const float* before = w.data<float>();
      const float* after = p->data<float>();
      for (const auto& g : GroupsAlong(w.shape(), axis)) {
        int zeros = 0;
        float smallest_kept = INFINITY, largest_pruned = 0;
        for (int64_t at : g) {
          if (after[at] == 0) {
            ++zeros;
            largest_pruned = std::max(largest_pruned, std::fabs(before[at]));
          } else {
            EXPECT_EQ(after[at], before[at]) << kind.name << ": a kept weight changed";
            smallest_kept = std::min(smallest_kept, std::fabs(before[at]));
          }
        }
        EXPECT_EQ(zeros, 2) << kind.name << " " << ShapeString(w.shape());
        EXPECT_GE(smallest_kept, largest_pruned) << kind.name << ": a smaller weight was kept";
      }
      EXPECT_EQ(*Count24Violations(*p, axis), 0) << kind.name;
      EXPECT_GT(*Count24Violations(w, axis), 0) << kind.name;
      EXPECT_TRUE(BitEqual(*Prune24(w, axis), *p)) << kind.name << ": not deterministic";
    }
  }
}

TEST(SparsityTest, TiesKeepTheLowerIndex) {
  struct Row {
    std::vector<float> group, want;
  };
  const std::vector<Row> rows = {{{1, -1, 1, 1}, {1, -1, 0, 0}},
                                 {{2, 3, 3, 1}, {0, 3, 3, 0}},
                                 {{-3, 3, 3, 3}, {-3, 3, 0, 0}},
                                 {{0, 0, 0, 0}, {0, 0, 0, 0}},
                                 {{0, 0, 5, 0}, {0, 0, 5, 0}},
                                 {{1, 2, 2, 2}, {0, 2, 2, 0}},
                                 {{-INFINITY, 1, 2, 0}, {-INFINITY, 0, 2, 0}}};
  for (const Row& r : rows) {
    absl::StatusOr<Tensor> p = Prune24(Tensor::From<float>({4}, r.group), 0);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(std::vector<float>(p->values<float>().begin(), p->values<float>().end()), r.want);
  }
}

TEST(SparsityTest, IneligibleShapesAreRefusedWithTheReason) {
  const Tensor w = Random({6, 8}, 2);
  absl::StatusOr<Tensor> p = Prune24(w, 0);
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            "not eligible for 2:4 sparsity: reduction length 6 (axis 0 of [6,8]) is not a "
            "multiple of 4");
  EXPECT_TRUE(Prune24(w, 1).ok());  // 8 along axis 1
  EXPECT_EQ(Compress24(w, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Count24Violations(w, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(Prune24(w, 2).status().message().find("outside shape [6,8]"), std::string::npos);
  EXPECT_NE(Prune24(Tensor(DataType::kInt32, {4}), 0).status().message().find("float"),
            std::string::npos);
  std::vector<float> nan = {1, NAN, 2, 3};
  EXPECT_NE(Prune24(Tensor::From<float>({4}, nan), 0).status().message().find("NaN"),
            std::string::npos);
}

TEST(SparsityTest, CompressionRoundTripsAndHalvesTheBytes) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    for (const Kind& kind : RandomKinds(rng)) {
      const Tensor w = Random(kind.weight_shape, static_cast<uint32_t>(100 + trial));
      const int axis = ReductionAxis(LayerOf(kind, w));
      const Tensor p = *Prune24(w, axis);
      absl::StatusOr<Compressed24> c = Compress24(p, axis);
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_TRUE(BitEqual(Decompress24(*c), p)) << kind.name;
      EXPECT_EQ(c->bytes(), Compressed24Bytes(w.shape()));
      EXPECT_EQ(c->values.size(), static_cast<size_t>(w.size() / 2));
      EXPECT_EQ(c->bytes(), w.size() / 2 * 4 + (w.size() / 2 + 3) / 4);
      EXPECT_LE(c->bytes(), (DenseBytes(w.shape()) * 17 + 31) / 32);  // 53.1%
    }
  }
}

TEST(SparsityTest, CompressedLayoutPacksFourIndicesPerByteLowBitsFirst) {
  // Rows along axis 1 of [2, 4]: row 0 keeps positions 1 and 3, row 1 keeps 0 and 2.
  const std::vector<float> w = {0, 5, 0, 7, 6, 0, -8, 0};
  absl::StatusOr<Compressed24> c = Compress24(Tensor::From<float>({2, 4}, w), 1);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->values, (std::vector<float>{5, 7, 6, -8}));
  ASSERT_EQ(c->indices.size(), 1u);
  EXPECT_EQ(c->indices[0], 1 | 3 << 2 | 0 << 4 | 2 << 6);
  EXPECT_EQ(c->bytes(), 17);
}

TEST(SparsityTest, CompressionKeepsNegativeZeroWhereASlotIsFree) {
  const std::vector<float> fits = {-0.0f, 0, 3, 0};  // -0 and 3 take the two slots
  const Tensor a = Tensor::From<float>({4}, fits);
  EXPECT_TRUE(BitEqual(Decompress24(*Compress24(a, 0)), a));
  const std::vector<float> many = {-0.0f, -0.0f, -0.0f, 1};  // only one -0 fits
  const Tensor back = Decompress24(*Compress24(Tensor::From<float>({4}, many), 0));
  EXPECT_TRUE(std::signbit(back.data<float>()[0]));
  EXPECT_FALSE(std::signbit(back.data<float>()[1]));
  EXPECT_EQ(back.data<float>()[3], 1);
}

TEST(SparsityTest, CompressionRefusesAGroupWithMoreThanTwoNonzeros) {
  absl::StatusOr<Compressed24> c = Compress24(Random({2, 8}, 3), 1);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("holds 4 nonzero weights (prune it first)"),
            std::string::npos)
      << c.status();
}

// The naive dense product of the pruned matrix, summing every k in ascending order.
Tensor NaiveMatMul(const Tensor& x, const Tensor& w, bool trans_b) {
  const int64_t m = x.dim(0), k = x.dim(1), n = trans_b ? w.dim(0) : w.dim(1);
  Tensor y(DataType::kFloat, {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += x.data<float>()[i * k + kk] * w.data<float>()[trans_b ? j * k + kk : kk * n + j];
      }
      y.data<float>()[i * n + j] = sum;
    }
  }
  return y;
}

TEST(SparsityTest, KernelEqualsTheDenseProductOfThePrunedMatrix) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int64_t> d(1, 40), groups(1, 24);
  for (int trial = 0; trial < 30; ++trial) {
    const bool trans_b = trial % 2 == 1;
    const int64_t m = d(rng), k = 4 * groups(rng), n = d(rng);
    const Tensor x = Random({m, k}, static_cast<uint32_t>(trial));
    const std::vector<int64_t> shape = trans_b ? std::vector<int64_t>{n, k} : std::vector{k, n};
    const Tensor p = *Prune24(Random(shape, static_cast<uint32_t>(1000 + trial)), trans_b ? 1 : 0);
    absl::StatusOr<Tensor> y = MatMul24(x, *Compress24(p, trans_b ? 1 : 0));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(BitEqual(*y, NaiveMatMul(x, p, trans_b))) << m << "x" << k << "x" << n;
    // The executor's oneDNN product of the same pruned matrix (it may sum in another order).
    const Graph g = OneLayer(trans_b ? "Gemm" : "MatMul", p, trans_b, {m, k}, {m, n});
    absl::StatusOr<TensorMap> ref = model::Run(g, {{"x", x}});
    ASSERT_TRUE(ref.ok()) << ref.status();
    const Tensor& want = ref->at("y");
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double scale = 0;  // sum |x w|: the size of the terms the sum cancels
        for (int64_t kk = 0; kk < k; ++kk) {
          scale += std::fabs(x.data<float>()[i * k + kk] *
                             p.data<float>()[trans_b ? j * k + kk : kk * n + j]);
        }
        EXPECT_NEAR(y->data<float>()[i * n + j], want.data<float>()[i * n + j], 1e-5 * scale)
            << i << "," << j;
      }
    }
  }
}

TEST(SparsityTest, KernelRefusesMismatchedOperands) {
  const Compressed24 c = *Compress24(*Prune24(Random({8, 3}, 4), 0), 0);
  EXPECT_NE(MatMul24(Random({2, 4}, 5), c).status().message().find("float [M, 8]"),
            std::string::npos);
  const Compressed24 c3 = *Compress24(*Prune24(Random({2, 8, 3}, 4), 1), 1);
  EXPECT_NE(MatMul24(Random({2, 8}, 5), c3).status().message().find("must be 2-D"),
            std::string::npos);
}

TEST(SparsityDeathTest, MalformedCompressedTensorsAbort) {
  Compressed24 c = *Compress24(*Prune24(Random({8, 2}, 6), 0), 0);
  Compressed24 short_values = c;
  short_values.values.pop_back();
  EXPECT_DEATH(Decompress24(short_values), "malformed Compressed24: shape \\[8,2\\] axis 0");
  EXPECT_DEATH((void)MatMul24(Random({1, 8}, 1), short_values), "malformed Compressed24: shape");
  Compressed24 swapped = c;
  swapped.indices[0] = static_cast<uint8_t>(3 | 1 << 2 | (swapped.indices[0] & 0xF0));
  EXPECT_DEATH(Decompress24(swapped), "malformed Compressed24: group 0 stores positions 3 and 1");
}

TEST(SparsityDeathTest, LocalNoiseNeedsALayerOfTheGraphAndItsWeightShape) {
  const Graph g = OneLayer("MatMul", Random({8, 2}, 1), false, {1, 8}, {1, 2});
  Layer layer = FindLayers(g).at(0);
  EXPECT_DEATH((void)internal::LocalNoiseSquared(g, layer, Random({2, 8}, 1), {}),
               "replacement weight float\\[2,8\\] for float\\[8,2\\]");
  layer.node = "elsewhere";
  EXPECT_DEATH((void)internal::LocalNoiseSquared(g, layer, Random({8, 2}, 1), {}),
               "\"elsewhere\" is not a node of one");
}

// x [4, 8] -> MatMul W1 [8, 12] -> Relu -> MatMul W2 [12, 6] -> Gemm (transB) W3 [10, 6] -> y:
// two eligible layers and one whose reduction length (6) is not a multiple of 4.
Graph Tiny() {
  Graph g;
  g.source = "tiny";
  g.opset = 17;
  g.initializers["W1"] = Random({8, 12}, 21);
  g.initializers["W2"] = Random({12, 6}, 22);
  g.initializers["W3"] = Random({10, 6}, 23);
  g.inputs.push_back({"x", DataType::kFloat, {4, 8}, {}, true});
  g.outputs.push_back({"y", DataType::kFloat, {4, 10}, {}, true});
  g.nodes.push_back({"l1", "MatMul", {"x", "W1"}, {"h1"}, {}});
  g.nodes.push_back({"relu", "Relu", {"h1"}, {"r1"}, {}});
  g.nodes.push_back({"l2", "MatMul", {"r1", "W2"}, {"h2"}, {}});
  Node gemm{"l3", "Gemm", {"h2", "W3"}, {"y"}, {}};
  gemm.attributes["transB"].i = 1;
  g.nodes.push_back(gemm);
  return g;
}

std::vector<TensorMap> TinySamples() {
  std::vector<TensorMap> out;
  for (uint32_t s = 0; s < 6; ++s) out.push_back({{"x", Random({4, 8}, 50 + s)}});
  return out;
}

std::vector<TensorMap> RunAll(const Graph& g, const std::vector<TensorMap>& samples) {
  std::vector<TensorMap> out;
  for (const TensorMap& feeds : samples) out.push_back(*Run(g, feeds));
  return out;
}

TEST(SparsityReportTest, MeasuresEachLayerAloneAndAllAtOnce) {
  const Graph g = Tiny();
  const std::vector<TensorMap> samples = TinySamples();
  absl::StatusOr<SparsityReport> r = AnalyzeSparsity(g, samples, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->layers.size(), 3u);
  EXPECT_EQ(r->samples, 6u);
  const std::vector<TensorMap> dense = RunAll(g, samples);
  for (const LayerSparsity& row : r->layers) {
    EXPECT_EQ(row.dense_bytes, 4 * (row.layer.weight_shape[0] * row.layer.weight_shape[1]));
    if (row.layer.node == "l3") {
      EXPECT_FALSE(row.eligible);
      EXPECT_FALSE(row.pruned);
      EXPECT_EQ(row.compressed_bytes, 0);
      EXPECT_NE(row.reason.find("reduction length 6 (axis 1 of [10,6])"), std::string::npos);
      continue;
    }
    EXPECT_TRUE(row.eligible && row.pruned) << row.layer.node << ": " << row.reason;
    EXPECT_EQ(row.compressed_bytes, Compressed24Bytes(row.layer.weight_shape));
    EXPECT_GT(row.weight_energy_kept, 0.5);
    EXPECT_LT(row.weight_energy_kept, 1.0);
    // Substituting the pruned weight as the layer reads it is the same as pruning the model.
    const Graph one = *Sparsify(g, {{row.layer.node}, true});
    const OutputError want = *CompareOutputs(g, dense, RunAll(one, samples));
    EXPECT_EQ(row.output.metrics.sqnr_db, want.metrics.sqnr_db) << row.layer.node;
    EXPECT_EQ(row.output.top1_agreement, want.top1_agreement) << row.layer.node;
    EXPECT_GT(row.output.metrics.sqnr_db, 0);
    EXPECT_TRUE(std::isfinite(row.output.metrics.sqnr_db));
    EXPECT_GE(row.output.top1_agreement, 0);
    EXPECT_LE(row.output.top1_agreement, 1);
    EXPECT_GT(row.noise, 0);
    EXPECT_GT(row.gain, 0);
    EXPECT_DOUBLE_EQ(row.predicted_error, row.gain * row.noise);
    // A first-order prediction of a 50% pruning: the right size, not the exact figure.
    EXPECT_NEAR(row.predicted_sqnr_db, row.output.metrics.sqnr_db, 6) << row.layer.node;
  }
  const OutputError all = *CompareOutputs(g, dense, RunAll(*Sparsify(g, {}), samples));
  EXPECT_EQ(r->all_pruned.metrics.sqnr_db, all.metrics.sqnr_db);
  EXPECT_LT(r->all_pruned.metrics.sqnr_db, r->layers[0].output.metrics.sqnr_db);
  EXPECT_EQ(r->dense_bytes, 4 * (8 * 12 + 12 * 6));
  EXPECT_EQ(r->compressed_bytes, Compressed24Bytes({8, 12}) + Compressed24Bytes({12, 6}));
}

TEST(SparsityReportTest, SparsifyPrunesOnlyTheChosenLayers) {
  const Graph g = Tiny();
  absl::StatusOr<Graph> s = Sparsify(g, {{"l2"}, false});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(BitEqual(s->initializers.at("W1"), g.initializers.at("W1")));
  EXPECT_TRUE(BitEqual(s->initializers.at("W3"), g.initializers.at("W3")));
  EXPECT_TRUE(BitEqual(s->initializers.at("W2"), *Prune24(g.initializers.at("W2"), 0)));
  absl::StatusOr<SparsityReport> r = AnalyzeSparsity(g, TinySamples(), {{"l2"}, false});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->layers[0].pruned);
  EXPECT_EQ(r->layers[0].reason, "not chosen");
  EXPECT_TRUE(r->layers[1].pruned);
  EXPECT_EQ(r->layers[1].predicted_error, 0);  // predict = false
  EXPECT_EQ(r->all_pruned.metrics.sqnr_db, r->layers[1].output.metrics.sqnr_db);
}

TEST(SparsityReportTest, RefusesLayersThatCannotBePruned) {
  const Graph g = Tiny();
  absl::StatusOr<Graph> s = Sparsify(g, {{"l1", "l3"}, false});
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("tiny: layer \"l3\" cannot be pruned 2:4: not eligible"),
            std::string::npos)
      << s.status();
  s = Sparsify(g, {{"relu"}, false});
  EXPECT_NE(s.status().message().find("\"relu\" is not a layer"), std::string::npos) << s.status();
  EXPECT_EQ(AnalyzeSparsity(g, {}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  Graph none = g;
  none.nodes = {{"relu", "Relu", {"x"}, {"y"}, {}}};
  EXPECT_NE(Sparsify(none, {}).status().message().find("nothing to prune"), std::string::npos);
}

}  // namespace
}  // namespace seedance::model
