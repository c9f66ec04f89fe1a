// The rewriter's rules on small hand-built graphs: each fuses its pattern into a graph that gives
// the same outputs in the executor, and each precondition, when broken, leaves the pattern as it
// is with the rule and the reason reported (the hostile cases of issue 43). The exporters' own
// patterns (torch's) are checked by tools/model_fixtures/rewrite_check.py, with onnxruntime.
#include "seedance/model/rewrite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "seedance/model/executor.h"

namespace seedance::model {
namespace {

Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return Tensor::From<float>(std::move(shape), v);
}

Tensor Scalar(float v) { return Tensor::Scalar<float>(v); }

Node N(std::string op, std::vector<std::string> in, std::vector<std::string> out,
       std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = out.empty() ? op : out[0] + "_" + op;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

Graph Base(std::vector<int64_t> x_shape, int64_t opset = 17) {
  Graph g;
  g.source = "test";
  g.opset = opset;
  g.inputs.push_back(
      {"x", DataType::kFloat, x_shape, std::vector<std::string>(x_shape.size()), true});
  g.outputs.push_back(
      {"y", DataType::kFloat, x_shape, std::vector<std::string>(x_shape.size()), true});
  return g;
}

ValueInfo Out(std::string name, std::vector<int64_t> shape) {
  return {std::move(name), DataType::kFloat, shape, std::vector<std::string>(shape.size()), true};
}

// The decomposed LayerNorm torch exports below opset 17, over x [2, 3, 8] -> y.
Graph LayerNormGraph(int64_t opset = 17) {
  Graph g = Base({2, 3, 8}, opset);
  g.initializers["two"] = Scalar(2);
  g.initializers["eps"] = Scalar(1e-5f);
  g.initializers["gamma"] = Random({8}, 1);
  g.initializers["beta"] = Random({8}, 2);
  g.nodes = {N("ReduceMean", {"x"}, {"mean"}, {{"axes", Attribute::Ints({-1})}}),
             N("Sub", {"x", "mean"}, {"d"}),
             N("Pow", {"d", "two"}, {"sq"}),
             N("ReduceMean", {"sq"}, {"var"}, {{"axes", Attribute::Ints({-1})}}),
             N("Add", {"var", "eps"}, {"ve"}),
             N("Sqrt", {"ve"}, {"std"}),
             N("Div", {"d", "std"}, {"n"}),
             N("Mul", {"n", "gamma"}, {"s"}),
             N("Add", {"s", "beta"}, {"y"})};
  return g;
}

// GELU as torch 1.13 exports it: Div(x, sqrt 2), Erf, Add 1, Mul x, Mul 0.5.
Graph GeluGraph(float divisor = 1.4142135f) {
  Graph g = Base({4, 16});
  g.initializers["sqrt2"] = Scalar(divisor);
  g.initializers["one"] = Scalar(1);
  g.initializers["half"] = Scalar(0.5f);
  g.nodes = {N("Div", {"x", "sqrt2"}, {"xs"}), N("Erf", {"xs"}, {"e"}),
             N("Add", {"e", "one"}, {"e1"}), N("Mul", {"x", "e1"}, {"m"}),
             N("Mul", {"m", "half"}, {"y"})};
  return g;
}

struct Rewritten {
  Graph graph;
  RewriteReport report;
};

Rewritten Rewrite(const Graph& g, const std::string& device = "cpu") {
  absl::StatusOr<RewriteTarget> target = ParseRewriteTarget(device);
  SEEDANCE_CHECK(target.ok()) << target.status();
  Rewritten r;
  absl::StatusOr<Graph> out = RewriteGraph(g, *target, &r.report);
  EXPECT_TRUE(out.ok()) << out.status();
  if (out.ok()) r.graph = std::move(*out);
  return r;
}

int Count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// The largest difference between the two graphs' outputs on the same random feed, relative to
// the largest output.
double Difference(const Graph& a, const Graph& b, const std::vector<int64_t>& x_shape) {
  const TensorMap feeds = {{"x", Random(x_shape, 7)}};
  absl::StatusOr<TensorMap> ya = Run(a, feeds), yb = Run(b, feeds);
  SEEDANCE_CHECK(ya.ok() && yb.ok()) << ya.status() << " / " << yb.status();
  const Tensor& ta = ya->at("y");
  const Tensor& tb = yb->at("y");
  SEEDANCE_CHECK(ta.shape() == tb.shape());
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < ta.size(); ++i) {
    worst = std::max(worst, std::abs(ta.AsDouble(i) - tb.AsDouble(i)));
    scale = std::max(scale, std::abs(ta.AsDouble(i)));
  }
  return worst / scale;
}

// The refusal `rule` reported, or "" when none.
std::string Refusal(const RewriteReport& r, const std::string& rule) {
  for (const RewriteRefusal& f : r.refused) {
    if (f.rule == rule) return f.reason;
  }
  return "";
}

TEST(RewriteTest, FusesTheDecomposedLayerNorm) {
  const Graph g = LayerNormGraph();
  const Rewritten r = Rewrite(g);
  ASSERT_EQ(r.graph.nodes.size(), 1u);
  EXPECT_EQ(r.graph.nodes[0].op_type, "LayerNormalization");
  EXPECT_NEAR(r.graph.nodes[0].attributes.at("epsilon").f, 1e-5f, 1e-12);
  EXPECT_LT(Difference(g, r.graph, {2, 3, 8}), 1e-5);
}

TEST(RewriteTest, UpgradesAnOlderOpsetForLayerNormalization) {
  const Graph g = LayerNormGraph(13);
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(r.graph.opset, 17);
  EXPECT_EQ(Count(r.graph, "LayerNormalization"), 1);
  EXPECT_LT(Difference(g, r.graph, {2, 3, 8}), 1e-5);
}

TEST(RewriteTest, LeavesALayerNormWithAWrongEpsilonOrPower) {
  Graph g = LayerNormGraph();
  g.initializers["eps"] = Random({8}, 3);  // one epsilon per column: not LayerNormalization's
  Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "LayerNormalization"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-layernorm").find("epsilon"), std::string::npos);
  EXPECT_LT(Difference(g, r.graph, {2, 3, 8}), 1e-6);

  g = LayerNormGraph();
  g.initializers["eps"] = Scalar(-1e-3f);
  EXPECT_NE(Refusal(Rewrite(g).report, "fuse-layernorm").find("epsilon"), std::string::npos);

  g = LayerNormGraph();
  g.initializers["two"] = Scalar(3);
  r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "LayerNormalization"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-layernorm").find("power"), std::string::npos);
}

TEST(RewriteTest, LeavesALayerNormWhoseInnerValueHasAnotherReader) {
  Graph g = LayerNormGraph();
  g.outputs.push_back(Out("var", {2, 3, 1}));  // the variance is read outside
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "LayerNormalization"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-layernorm").find("variance"), std::string::npos);
}

TEST(RewriteTest, LeavesALayerNormOverAnotherAxis) {
  Graph g = LayerNormGraph();
  g.nodes[0].attributes["axes"] = Attribute::Ints({1});
  g.nodes[3].attributes["axes"] = Attribute::Ints({1});
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "LayerNormalization"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-layernorm").find("last axis"), std::string::npos);
}

TEST(RewriteTest, LeavesALayerNormOfDynamicShape) {
  Graph g = LayerNormGraph();
  g.inputs[0].shape = {2, 3, -1};
  g.inputs[0].dim_names = {"", "", "hidden"};
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "LayerNormalization"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-layernorm").find("dynamic shapes"), std::string::npos);
}

TEST(RewriteTest, FusesALayerNormOverDynamicBatchAndSequence) {
  Graph g = LayerNormGraph();
  g.inputs[0].shape = {-1, -1, 8};
  g.inputs[0].dim_names = {"batch", "seq", ""};
  g.outputs[0].shape = {-1, -1, 8};
  g.outputs[0].dim_names = {"batch", "seq", ""};
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "LayerNormalization"), 1);
  EXPECT_LT(Difference(g, r.graph, {2, 3, 8}), 1e-5);
}

TEST(RewriteTest, FusesGelu) {
  const Graph g = GeluGraph();
  const Rewritten r = Rewrite(g);
  ASSERT_EQ(r.graph.nodes.size(), 1u);
  EXPECT_EQ(r.graph.nodes[0].op_type, "Gelu");
  EXPECT_EQ(r.graph.nodes[0].domain, kMicrosoftDomain);
  EXPECT_LT(Difference(g, r.graph, {4, 16}), 1e-6);
}

TEST(RewriteTest, LeavesAGeluWithAnotherConstant) {
  const Graph g = GeluGraph(1.5f);
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "Gelu"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-gelu").find("not sqrt(2)"), std::string::npos);
  EXPECT_LT(Difference(g, r.graph, {4, 16}), 1e-6);
}

TEST(RewriteTest, LeavesAGeluWhoseErfIsReadElsewhere) {
  Graph g = GeluGraph();
  g.outputs.push_back(Out("e", {4, 16}));
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "Gelu"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-gelu").find("erf"), std::string::npos);
}

// x [2, 3, 8] + skip, LayerNormalization over the last axis.
Graph SkipGraph(std::vector<int64_t> skip_shape) {
  Graph g = Base({2, 3, 8});
  g.initializers["skip"] = Random(std::move(skip_shape), 4);
  g.inputs.push_back({"s", DataType::kFloat, {2, 3, 8}, {"", "", ""}, true});
  g.initializers["gamma"] = Random({8}, 1);
  g.initializers["beta"] = Random({8}, 2);
  g.nodes = {N("Add", {"x", "s"}, {"sum"}),
             N("LayerNormalization", {"sum", "gamma", "beta"}, {"y"})};
  return g;
}

TEST(RewriteTest, FusesAddAndLayerNormIntoSkipLayerNormalization) {
  Graph g = SkipGraph({8});
  const Rewritten r = Rewrite(g);
  ASSERT_EQ(r.graph.nodes.size(), 1u);
  EXPECT_EQ(r.graph.nodes[0].op_type, "SkipLayerNormalization");
  TensorMap feeds = {{"x", Random({2, 3, 8}, 5)}, {"s", Random({2, 3, 8}, 6)}};
  absl::StatusOr<TensorMap> a = model::Run(g, feeds), b = model::Run(r.graph, feeds);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t i = 0; i < a->at("y").size(); ++i) {
    EXPECT_NEAR(a->at("y").AsDouble(i), b->at("y").AsDouble(i), 1e-5);
  }
}

TEST(RewriteTest, LeavesAnAddThatBroadcasts) {
  Graph g = SkipGraph({8});
  g.nodes[0].inputs[1] = "skip";  // [8] broadcast over [2, 3, 8]: a bias, not a skip
  g.inputs.pop_back();
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "SkipLayerNormalization"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-skip-layernorm").find("not provably one"), std::string::npos);
  EXPECT_LT(Difference(g, r.graph, {2, 3, 8}), 1e-6);
}

TEST(RewriteTest, SkipLayerNormNeedsTheSameSymbolicShapes) {
  Graph g = SkipGraph({8});
  for (ValueInfo* v : {&g.inputs[0], &g.inputs[1], &g.outputs[0]}) {
    v->shape = {-1, -1, 8};
    v->dim_names = {"batch", "seq", ""};
  }
  Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "SkipLayerNormalization"), 1);
  g.inputs[1].dim_names = {"batch", "other", ""};  // seq and other may differ (then broadcast)
  g.outputs[0].dim_names = {"batch", "", ""};
  r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "SkipLayerNormalization"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-skip-layernorm").find("[batch,seq,8] and [batch,other,8]"),
            std::string::npos);
}

// x [2, 3, 8] @ W [8, 5] + b [5] -> y.
Graph MatMulAddGraph() {
  Graph g = Base({2, 3, 8});
  g.initializers["W"] = Random({8, 5}, 1);
  g.initializers["b"] = Random({5}, 2);
  g.nodes = {N("MatMul", {"x", "W"}, {"p"}), N("Add", {"b", "p"}, {"y"})};
  g.outputs[0] = Out("y", {2, 3, 5});
  return g;
}

TEST(RewriteTest, FusesMatMulAndBiasIntoGemm) {
  const Graph g = MatMulAddGraph();
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "Gemm"), 1);
  EXPECT_EQ(Count(r.graph, "MatMul"), 0);
  EXPECT_LT(Difference(g, r.graph, {2, 3, 8}), 1e-6);
}

TEST(RewriteTest, LeavesABatchedMatMulOfDynamicShape) {
  Graph g = MatMulAddGraph();
  g.inputs[0].shape = {-1, 3, 8};
  g.inputs[0].dim_names = {"batch", "", ""};
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "Gemm"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-matmul-add").find("dynamic shapes"), std::string::npos);
  EXPECT_LT(Difference(g, r.graph, {2, 3, 8}), 1e-6);
}

TEST(RewriteTest, LeavesAProductReadTwice) {
  Graph g = MatMulAddGraph();
  g.outputs.push_back(Out("p", {2, 3, 5}));
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "Gemm"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-matmul-add").find("other readers"), std::string::npos);
}

// Conv [1,2,6,6] -> BatchNormalization -> act -> y.
Graph ConvGraph(const std::string& act) {
  Graph g = Base({1, 2, 6, 6});
  g.initializers["W"] = Random({3, 2, 3, 3}, 1);
  g.initializers["B"] = Random({3}, 2);
  g.initializers["scale"] = Random({3}, 3);
  g.initializers["bias"] = Random({3}, 4);
  g.initializers["mean"] = Random({3}, 5);
  g.initializers["var"] = Tensor::From<float>({3}, std::vector<float>{0.5f, 1.5f, 2.0f});
  g.nodes = {N("Conv", {"x", "W", "B"}, {"c"}, {{"pads", Attribute::Ints({1, 1, 1, 1})}}),
             N("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"bn"}),
             N(act, {"bn"}, {"y"})};
  g.outputs[0] = Out("y", {1, 3, 6, 6});
  return g;
}

TEST(RewriteTest, FoldsBatchNormAndFusesTheActivation) {
  const Graph g = ConvGraph("Relu");
  const Rewritten r = Rewrite(g);
  ASSERT_EQ(r.graph.nodes.size(), 1u);
  EXPECT_EQ(r.graph.nodes[0].op_type, "FusedConv");
  EXPECT_EQ(r.graph.nodes[0].attributes.at("activation").s, "Relu");
  EXPECT_LT(Difference(g, r.graph, {1, 2, 6, 6}), 1e-5);
}

TEST(RewriteTest, AGpuTargetGetsOnlyTheFusedFormsItRuns) {
  Rewritten r = Rewrite(ConvGraph("LeakyRelu"), "h100");
  EXPECT_EQ(Count(r.graph, "FusedConv"), 0);
  EXPECT_EQ(Count(r.graph, "Conv"), 1);  // BatchNormalization still folded
  EXPECT_NE(Refusal(r.report, "fuse-conv-activation").find("Relu only"), std::string::npos);
  EXPECT_EQ(Count(Rewrite(ConvGraph("LeakyRelu"), "cpu").graph, "FusedConv"), 1);

  Graph gemm = Base({4, 8});
  gemm.initializers["W"] = Random({8, 5}, 1);
  gemm.initializers["b"] = Random({5}, 2);
  gemm.nodes = {N("Gemm", {"x", "W", "b"}, {"g"}), N("Relu", {"g"}, {"y"})};
  gemm.outputs[0] = Out("y", {4, 5});
  r = Rewrite(gemm, "t4");
  EXPECT_EQ(Count(r.graph, "FusedGemm"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-gemm-activation").find("no FusedGemm"), std::string::npos);
  r = Rewrite(gemm, "cpu");
  EXPECT_EQ(Count(r.graph, "FusedGemm"), 1);
  EXPECT_LT(Difference(gemm, r.graph, {4, 8}), 1e-6);
}

TEST(RewriteTest, RemovesIdentitiesAndFoldsConstantsButKeepsGraphOutputs) {
  Graph g = Base({2, 4});
  g.initializers["a"] = Random({4}, 1);
  g.nodes = {N("Identity", {"a"}, {"a2"}), N("Neg", {"a2"}, {"na"}), N("Add", {"x", "na"}, {"t"}),
             N("Identity", {"t"}, {"y"})};
  const Rewritten r = Rewrite(g);
  ASSERT_EQ(r.graph.nodes.size(), 1u);  // Neg folded, both Identities gone
  EXPECT_EQ(r.graph.nodes[0].op_type, "Add");
  EXPECT_EQ(r.graph.nodes[0].outputs[0], "y");  // the graph output keeps its name
  EXPECT_LT(Difference(g, r.graph, {2, 4}), 1e-7);
}

// torch's multi-head attention core over x [S=4, B=2, E=8] as query, key and value, 2 heads of
// 4: Reshape [S, B*H, d], Transpose, q / 2, Q K^T, + mask, Softmax, V, Transpose, Reshape.
Graph AttentionGraph(std::vector<int64_t> mask_shape = {4, 4}) {
  Graph g = Base({4, 2, 8});
  g.outputs[0] = Out("y", {8, 8});
  g.initializers["heads"] = Tensor::From<int64_t>({3}, std::vector<int64_t>{4, 4, 4});
  g.initializers["two"] = Scalar(2);
  g.initializers["mask"] = Random(std::move(mask_shape), 9);
  g.initializers["merged"] = Tensor::From<int64_t>({2}, std::vector<int64_t>{8, 8});
  auto perm = [](std::vector<int64_t> p) {
    return std::map<std::string, Attribute>{{"perm", Attribute::Ints(p)}};
  };
  g.nodes = {N("Reshape", {"x", "heads"}, {"qr"}),
             N("Transpose", {"qr"}, {"qt"}, perm({1, 0, 2})),
             N("Div", {"qt", "two"}, {"qs"}),
             N("Reshape", {"x", "heads"}, {"kr"}),
             N("Transpose", {"kr"}, {"kt"}, perm({1, 2, 0})),
             N("Reshape", {"x", "heads"}, {"vr"}),
             N("Transpose", {"vr"}, {"vt"}, perm({1, 0, 2})),
             N("MatMul", {"qs", "kt"}, {"scores"}),
             N("Add", {"scores", "mask"}, {"masked"}),
             N("Softmax", {"masked"}, {"p"}, {{"axis", Attribute::Int(-1)}}),
             N("MatMul", {"p", "vt"}, {"o"}),
             N("Transpose", {"o"}, {"ot"}, perm({1, 0, 2})),
             N("Reshape", {"ot", "merged"}, {"y"})};
  return g;
}

TEST(RewriteTest, FusesTorchsAttentionIntoMultiHeadAttention) {
  const Graph g = AttentionGraph();
  const Rewritten r = Rewrite(g);
  ASSERT_EQ(Count(r.graph, "MultiHeadAttention"), 1);
  EXPECT_EQ(Count(r.graph, "Softmax"), 0);
  EXPECT_LT(Difference(g, r.graph, {4, 2, 8}), 1e-5);
}

TEST(RewriteTest, FusesAttentionOverASplitAlongAnotherAxisWithoutMovingIt) {
  // q, k, v from one Split along axis 0 of a [3S, B, E] tensor: the Split must stay as it is
  // (a Transpose before it would split the batch instead).
  Graph g = AttentionGraph();
  g.inputs[0] = {"x", DataType::kFloat, {12, 2, 8}, {"", "", ""}, true};
  g.initializers["thirds"] = Tensor::From<int64_t>({3}, std::vector<int64_t>{4, 4, 4});
  Node split = N("Split", {"x", "thirds"}, {"xq", "xk", "xv"}, {{"axis", Attribute::Int(0)}});
  g.nodes[0].inputs[0] = "xq";
  g.nodes[3].inputs[0] = "xk";
  g.nodes[5].inputs[0] = "xv";
  g.nodes.insert(g.nodes.begin(), split);
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "MultiHeadAttention"), 1);
  EXPECT_LT(Difference(g, r.graph, {12, 2, 8}), 1e-5);
}

TEST(RewriteTest, DoesNotFoldAConstantTooLargeToHold) {
  Graph g = Base({1, 1});
  g.outputs[0] = Out("y", {100000, 100000});
  g.initializers["shape"] = Tensor::From<int64_t>({2}, std::vector<int64_t>{100000, 100000});
  g.nodes = {N("ConstantOfShape", {"shape"}, {"zeros"}), N("Mul", {"x", "zeros"}, {"y"})};
  const Rewritten r = Rewrite(g);  // would need 40 GB if it ran the node
  EXPECT_EQ(Count(r.graph, "ConstantOfShape"), 1);
  EXPECT_NE(Refusal(r.report, "fold-constants").find("above the 1 MiB"), std::string::npos);
}

// The head split of AttentionGraph with dynamic S and B as torch exports it: its shape computed
// at run time as Concat(Unsqueeze(S), Unsqueeze(B * heads), [d]). `heads` other than 2 (E / d)
// makes the computed shape disagree with the split the rule would assume.
Graph DynamicAttentionGraph(int64_t heads) {
  Graph g = AttentionGraph();
  g.inputs[0] = {"x", DataType::kFloat, {-1, -1, 8}, {"seq", "batch", ""}, true};
  g.outputs[0] = {"y", DataType::kFloat, {-1, 8}, {"rows", ""}, true};
  g.initializers["i0"] = Tensor::Scalar<int64_t>(0);
  g.initializers["i1"] = Tensor::Scalar<int64_t>(1);
  g.initializers["ax"] = Tensor::From<int64_t>({1}, std::vector<int64_t>{0});
  g.initializers["h"] = Tensor::Scalar<int64_t>(heads);
  g.initializers["d"] = Tensor::From<int64_t>({1}, std::vector<int64_t>{4});
  g.initializers["merged"] = Tensor::From<int64_t>({2}, std::vector<int64_t>{-1, 8});
  std::vector<Node> shape = {
      N("Shape", {"x"}, {"sx"}),
      N("Gather", {"sx", "i0"}, {"s"}),
      N("Gather", {"sx", "i1"}, {"b"}),
      N("Mul", {"b", "h"}, {"bh"}),
      N("Unsqueeze", {"s", "ax"}, {"s1"}),
      N("Unsqueeze", {"bh", "ax"}, {"bh1"}),
      N("Concat", {"s1", "bh1", "d"}, {"heads_shape"}, {{"axis", Attribute::Int(0)}})};
  g.nodes.insert(g.nodes.begin(), shape.begin(), shape.end());
  for (Node& n : g.nodes) {
    for (std::string& in : n.inputs) {
      if (in == "heads") in = "heads_shape";
    }
    if (n.op_type == "Add" && n.inputs[1] == "mask") {  // no [S, L] mask with S dynamic
      n.op_type = "Identity";
      n.inputs = {"scores"};
    }
  }
  return g;
}

TEST(RewriteTest, FusesAttentionWhoseHeadSplitIsComputedAtRunTime) {
  const Graph g = DynamicAttentionGraph(2);
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "MultiHeadAttention"), 1);
  EXPECT_LT(Difference(g, r.graph, {4, 2, 8}), 1e-5);
  const Graph wrong = DynamicAttentionGraph(1);  // B * 1 rows of 4: not the 2 heads E / d gives
  const Rewritten w = Rewrite(wrong);
  EXPECT_EQ(Count(w.graph, "MultiHeadAttention"), 0);
  EXPECT_NE(Refusal(w.report, "fuse-attention").find("head split"), std::string::npos);
}

TEST(RewriteTest, LeavesAnAttentionWhoseMaskDiffersPerHead) {
  const Graph g = AttentionGraph({4, 4, 4});  // one mask per batch and head
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "MultiHeadAttention"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-attention").find("does not broadcast"), std::string::npos);
  EXPECT_LT(Difference(g, r.graph, {4, 2, 8}), 1e-6);
}

TEST(RewriteTest, LeavesAnAttentionWithAnotherLayout) {
  Graph g = AttentionGraph();
  g.nodes[4].attributes["perm"] =
      Attribute::Ints({1, 0, 2});  // K not transposed: Q K (S == d) is another product
  Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "MultiHeadAttention"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-attention").find("Transpose [1,2,0]"), std::string::npos);

  g = AttentionGraph();
  g.nodes[9].attributes["axis"] = Attribute::Int(1);  // a softmax over the query axis
  r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "MultiHeadAttention"), 0);
  EXPECT_NE(Refusal(r.report, "fuse-attention").find("last axis"), std::string::npos);
  EXPECT_LT(Difference(g, r.graph, {4, 2, 8}), 1e-6);
}

// GELU's tanh form as torch exports approximate="tanh": x * x * x, * 0.044715, + x, * sqrt(2/pi),
// Tanh, + 1, * x, * 0.5.
Graph FastGeluGraph(float cube_scale = 0.044715f) {
  Graph g = Base({4, 16});
  g.initializers["c3"] = Scalar(cube_scale);
  g.initializers["k"] = Scalar(0.7978845608f);
  g.initializers["one"] = Scalar(1);
  g.initializers["half"] = Scalar(0.5f);
  g.nodes = {N("Mul", {"x", "x"}, {"sq"}),     N("Mul", {"x", "sq"}, {"cube"}),
             N("Mul", {"c3", "cube"}, {"sc"}), N("Add", {"x", "sc"}, {"in"}),
             N("Mul", {"k", "in"}, {"arg"}),   N("Tanh", {"arg"}, {"t"}),
             N("Add", {"one", "t"}, {"t1"}),   N("Mul", {"x", "t1"}, {"m"}),
             N("Mul", {"half", "m"}, {"y"})};
  return g;
}

TEST(RewriteTest, FusesGelusTanhFormIntoFastGelu) {
  const Graph g = FastGeluGraph();
  const Rewritten r = Rewrite(g);
  ASSERT_EQ(r.graph.nodes.size(), 1u);
  EXPECT_EQ(r.graph.nodes[0].op_type, "FastGelu");
  EXPECT_LT(Difference(g, r.graph, {4, 16}), 1e-6);
  const Graph wrong = FastGeluGraph(0.05f);
  const Rewritten w = Rewrite(wrong);
  EXPECT_EQ(Count(w.graph, "FastGelu"), 0);
  EXPECT_NE(Refusal(w.report, "fuse-gelu").find("0.044715"), std::string::npos);
  EXPECT_LT(Difference(wrong, w.graph, {4, 16}), 1e-6);
}

// Hugging Face's attention over x [B=2, S=4, E=8] as query, key and value, 2 heads of 4:
// Reshape [B, S, H, d], Transposes [0,2,1,3] (K: then [0,1,3,2]), Q K^T / 2, + a mask computed
// from the input ([B, 1, 1, S]), Softmax, V, Transpose [0,2,1,3], Reshape [B, S, E].
Graph BatchFirstAttentionGraph() {
  Graph g = Base({2, 4, 8});
  g.initializers["heads"] = Tensor::From<int64_t>({4}, std::vector<int64_t>{2, 4, 2, 4});
  g.initializers["merged"] = Tensor::From<int64_t>({3}, std::vector<int64_t>{2, 4, 8});
  g.initializers["two"] = Scalar(2);
  g.initializers["mask_shape"] = Tensor::From<int64_t>({4}, std::vector<int64_t>{2, 1, 1, 4});
  auto perm = [](std::vector<int64_t> p) {
    return std::map<std::string, Attribute>{{"perm", Attribute::Ints(p)}};
  };
  g.nodes = {N("ReduceMax", {"x"}, {"mx"},
               {{"axes", Attribute::Ints({2})}, {"keepdims", Attribute::Int(0)}}),
             N("Reshape", {"mx", "mask_shape"}, {"mask"}),
             N("Reshape", {"x", "heads"}, {"qr"}),
             N("Transpose", {"qr"}, {"q"}, perm({0, 2, 1, 3})),
             N("Reshape", {"x", "heads"}, {"kr"}),
             N("Transpose", {"kr"}, {"k"}, perm({0, 2, 1, 3})),
             N("Transpose", {"k"}, {"kt"}, perm({0, 1, 3, 2})),
             N("Reshape", {"x", "heads"}, {"vr"}),
             N("Transpose", {"vr"}, {"v"}, perm({0, 2, 1, 3})),
             N("MatMul", {"q", "kt"}, {"scores"}),
             N("Div", {"scores", "two"}, {"scaled"}),
             N("Add", {"scaled", "mask"}, {"masked"}),
             N("Softmax", {"masked"}, {"p"}, {{"axis", Attribute::Int(-1)}}),
             N("MatMul", {"p", "v"}, {"o"}),
             N("Transpose", {"o"}, {"ot"}, perm({0, 2, 1, 3})),
             N("Reshape", {"ot", "merged"}, {"y"})};
  return g;
}

TEST(RewriteTest, FusesBatchFirstAttentionWithAComputedMask) {
  const Graph g = BatchFirstAttentionGraph();
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "MultiHeadAttention"), 1);
  EXPECT_EQ(Count(r.graph, "Expand"), 1);  // [B, 1, 1, L] to [B, 1, S, L] for attention_bias
  EXPECT_EQ(Count(r.graph, "Transpose"), 0);
  EXPECT_LT(Difference(g, r.graph, {2, 4, 8}), 1e-5);
}

// GPT-2's causal mask: Where(lower-triangular condition, scores, the float minimum) before the
// padding mask is added.
TEST(RewriteTest, FusesACausalWhereMaskWithThePaddingMask) {
  Graph g = BatchFirstAttentionGraph();
  std::vector<uint8_t> tril(16);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) tril[static_cast<size_t>(i * 4 + j)] = j <= i;
  }
  Tensor cond(DataType::kBool, {1, 1, 4, 4});
  std::copy(tril.begin(), tril.end(), reinterpret_cast<uint8_t*>(cond.raw()));
  g.initializers["causal"] = std::move(cond);
  g.initializers["lowest"] = Scalar(-3.4028234663852886e38f);
  g.nodes[10].outputs = {"scaled0"};  // Div -> Where -> Add(mask)
  g.nodes.insert(g.nodes.begin() + 11, N("Where", {"causal", "scaled0", "lowest"}, {"scaled"}));
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "MultiHeadAttention"), 1);
  EXPECT_EQ(Count(r.graph, "Where"), 0);
  EXPECT_LT(Difference(g, r.graph, {2, 4, 8}), 1e-5);

  Graph other = g;  // a Where that fills with 0 is not a mask
  other.initializers["lowest"] = Scalar(0.0f);
  const Rewritten o = Rewrite(other);
  EXPECT_EQ(Count(o.graph, "MultiHeadAttention"), 0);
  EXPECT_NE(Refusal(o.report, "fuse-attention").find("Where"), std::string::npos);
  EXPECT_LT(Difference(other, o.graph, {2, 4, 8}), 1e-6);
}

// Slices of one tensor that cover an axis end to end become one Split: its sizes an input from
// opset 13, an attribute before.
TEST(RewriteTest, FusesSlicesIntoOneSplitAtEveryOpset) {
  for (int64_t opset : {11, 17}) {
    Graph g = Base({2, 6}, opset);
    g.outputs = {Out("a", {2, 2}), Out("b", {2, 4})};
    auto one = [](int64_t v) { return Tensor::From<int64_t>({1}, std::vector<int64_t>{v}); };
    g.initializers["s0"] = one(0);
    g.initializers["s2"] = one(2);
    g.initializers["s6"] = one(6);
    g.initializers["ax"] = one(1);
    g.nodes = {N("Slice", {"x", "s0", "s2", "ax"}, {"a"}),
               N("Slice", {"x", "s2", "s6", "ax"}, {"b"})};
    const Rewritten r = Rewrite(g);
    ASSERT_EQ(r.graph.nodes.size(), 1u) << opset;
    EXPECT_EQ(r.graph.nodes[0].op_type, "Split");
    EXPECT_EQ(r.graph.nodes[0].attributes.count("split"), opset < 13 ? 1u : 0u);
    const TensorMap feeds = {{"x", Random({2, 6}, 3)}};
    absl::StatusOr<TensorMap> a = model::Run(g, feeds), b = model::Run(r.graph, feeds);
    ASSERT_TRUE(a.ok() && b.ok());
    for (const char* out : {"a", "b"}) {
      for (int64_t i = 0; i < a->at(out).size(); ++i) {
        EXPECT_EQ(a->at(out).AsDouble(i), b->at(out).AsDouble(i));
      }
    }
  }
}

TEST(RewriteTest, ComputesARepeatedNodeOnce) {
  Graph g = Base({2, 4});
  g.initializers["axes"] = Tensor::From<int64_t>({1}, std::vector<int64_t>{0});
  g.nodes = {N("Relu", {"x"}, {"a"}),
             N("Relu", {"x"}, {"b"}),  // the same twice
             N("Unsqueeze", {"a", "axes"}, {"ua"}),
             N("Unsqueeze", {"b", "axes"}, {"ub"}),
             N("Add", {"ua", "ub"}, {"s"}),
             N("Squeeze", {"s", "axes"}, {"y"})};
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "Relu"), 1);
  EXPECT_EQ(Count(r.graph, "Unsqueeze"), 1);  // equal once their inputs are
  EXPECT_LT(Difference(g, r.graph, {2, 4}), 1e-7);
}

// x [batch, 8]: Gather(Shape(x), 1) is the fixed 8 and folds; Gather(Shape(x), 0) is the batch
// and stays.
TEST(RewriteTest, FoldsTheFixedDimensionsOfADynamicShape) {
  Graph g = Base({-1, 8});
  g.inputs[0].dim_names = {"batch", ""};
  g.outputs = {Out("cols", {}), Out("rows", {})};
  g.initializers["one"] = Tensor::Scalar<int64_t>(1);
  g.initializers["zero"] = Tensor::Scalar<int64_t>(0);
  g.outputs[0].type = g.outputs[1].type = DataType::kInt64;
  g.nodes = {N("Shape", {"x"}, {"s"}), N("Gather", {"s", "one"}, {"c"}),
             N("Gather", {"s", "zero"}, {"rows"}), N("Identity", {"c"}, {"cols"})};
  const Rewritten r = Rewrite(g);
  EXPECT_EQ(Count(r.graph, "Gather"), 1);  // the batch's
  const TensorMap feeds = {{"x", Random({3, 8}, 1)}};
  absl::StatusOr<TensorMap> a = model::Run(g, feeds), b = model::Run(r.graph, feeds);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(b->at("cols").AsInt64(0), 8);
  EXPECT_EQ(b->at("rows").AsInt64(0), 3);
}

TEST(RewriteTest, NamesTheTargetsItKnows) {
  EXPECT_TRUE(ParseRewriteTarget("cpu").ok());
  absl::StatusOr<RewriteTarget> h100 = ParseRewriteTarget("h100");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->name, "H100");
  EXPECT_FALSE(h100->fused_gemm);
  EXPECT_EQ(ParseRewriteTarget("Ascend910B").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRewriteTarget("tpu").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace seedance::model
