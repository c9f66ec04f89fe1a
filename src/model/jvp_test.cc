// Forward-mode JVPs against central finite differences in FP64, operator by operator on small
// graphs and end to end on the public data folder's hello_deepa.onnx, with the tangent seeded at
// a graph input, at a weight and at a layer's output.
#include "seedance/model/jvp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "fd_check.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::model {
namespace {

using testing::JvpError;
using testing::Random;

// A one-node graph over double inputs x0, x1, ... (shapes given) with output "y".
Graph OneNode(const std::string& op, const std::vector<std::vector<int64_t>>& shapes,
              std::map<std::string, Attribute> attrs = {}, int64_t opset = 17) {
  Graph g;
  g.source = op;
  g.opset = opset;
  Node n{op, op, {}, {"y"}, std::move(attrs)};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    g.inputs.push_back({name, DataType::kDouble, shapes[i], {}, false});
    n.inputs.push_back(name);
  }
  g.outputs.push_back({"y", DataType::kDouble, {}, {}, false});
  g.nodes.push_back(n);
  return g;
}

struct OpCase {
  std::string op;
  std::vector<std::vector<int64_t>> shapes;
  std::map<std::string, Attribute> attrs = {};
  double lo = -1, hi = 1;  // input range (Sqrt, Log and Pow's base need positive values)
  int64_t opset = 17;
};

TEST(JvpTest, EveryRuleAgreesWithCentralDifferences) {
  const std::vector<OpCase> cases = {
      {"Add", {{2, 3}, {3}}},
      {"Sub", {{2, 3}, {2, 1}}},
      {"Mul", {{2, 3}, {2, 3}}},
      {"Div", {{2, 3}, {3}}, {}, 0.5, 2},
      {"Pow", {{2, 3}, {2, 3}}, {}, 0.5, 2},
      {"MatMul", {{2, 3, 4}, {4, 5}}},
      {"Gemm", {{3, 4}, {5, 4}, {5}}, {{"transB", Attribute::Int(1)}}},
      {"Conv", {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}}, {{"pads", Attribute::Ints({1, 1, 1, 1})}}},
      {"Softmax", {{2, 3, 4}}, {{"axis", Attribute::Int(1)}}},
      {"Softmax", {{2, 3, 4}}, {{"axis", Attribute::Int(1)}}, -1, 1, 11},
      {"LogSoftmax", {{2, 5}}},
      {"LayerNormalization", {{2, 3, 4}, {4}, {4}}},
      {"Relu", {{4, 5}}},
      {"Sigmoid", {{4, 5}}},
      {"Tanh", {{4, 5}}},
      {"Erf", {{4, 5}}},
      {"Sqrt", {{4, 5}}, {}, 0.5, 2},
      {"Exp", {{4, 5}}},
      {"Log", {{4, 5}}, {}, 0.5, 2},
      {"Transpose", {{2, 3, 4}}, {{"perm", Attribute::Ints({2, 0, 1})}}},
      {"Concat", {{2, 3}, {2, 2}}, {{"axis", Attribute::Int(1)}}},
      {"MaxPool", {{1, 2, 4, 4}}, {{"kernel_shape", Attribute::Ints({2, 2})}}},
      {"GlobalAveragePool", {{1, 2, 3, 3}}},
  };
  uint64_t seed = 1;
  for (const OpCase& c : cases) {
    const Graph g = OneNode(c.op, c.shapes, c.attrs, c.opset);
    TensorMap feeds;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      feeds["x" + std::to_string(i)] = Random(c.shapes[i], ++seed, c.lo, c.hi);
    }
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      const std::string at = "x" + std::to_string(i);
      EXPECT_LT(JvpError(g, feeds, at, ++seed), 1e-3)
          << c.op << " opset " << c.opset << " d/d" << at;
    }
  }
}

TEST(JvpTest, BatchNormalizationInInference) {
  Graph g = OneNode("BatchNormalization", {{2, 3, 2, 2}});
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    g.initializers[name] = Random({3}, name[0], 0.5, 1.5);
    g.nodes[0].inputs.push_back(name);
  }
  EXPECT_LT(JvpError(g, {{"x0", Random({2, 3, 2, 2}, 3)}}, "x0"), 1e-3);
}

TEST(JvpTest, RefusesAnOperatorWithoutARule) {
  const Graph g = OneNode("Hardmax", {{2, 3}});
  absl::StatusOr<Jvp> jvp = Jvp::Create(g, {{"x0", Random({2, 3}, 1)}});
  ASSERT_TRUE(jvp.ok());
  absl::StatusOr<TensorMap> t = jvp->Propagate({{"x0", Random({2, 3}, 2)}}, {"y"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("Hardmax"), std::string::npos) << t.status();
}

TEST(JvpTest, HelloDeepaAgreesAtTheInputAWeightAndALayerOutput) {
  const std::string path = trace::DataDir() + "/onnx-models/hello_deepa.onnx";
  if (!std::filesystem::exists(path)) {
    if (trace::DataRequired()) FAIL() << path << " is missing";
    GTEST_SKIP() << path << " is missing";
  }
  absl::StatusOr<Graph> g = LoadOnnxModel(path);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<Graph> g64 = ToFloat64(*g);
  ASSERT_TRUE(g64.ok());
  const TensorMap feeds = {{g64->inputs[0].name, Random({1, 25, 96}, 11)}};
  for (const char* at : {"onnx::Flatten_0", "layer1.weight", "/layer1/Gemm_output_0",
                         "blocks.0.fcn_layer.weight", "/blocks.0/fcn_layer/Gemm_output_0"}) {
    EXPECT_LT(JvpError(*g64, feeds, at), 1e-3) << at;
  }
}

}  // namespace
}  // namespace seedance::model
