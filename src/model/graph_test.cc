// The model reader on small models built here with libonnx's protobuf classes: what it keeps,
// renames and refuses, and the TensorProto round trip.
#include "seedance/model/graph.h"

#include <gtest/gtest.h>

#include "onnx/onnx_pb.h"

namespace seedance::model {
namespace {

void AddValue(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(2);
}

// x -> Relu ("n") -> a -> OP ("n") -> y, opset 13.
onnx::ModelProto TwoNodes(const std::string& op = "Relu") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  AddValue(g->add_input(), "x");
  AddValue(g->add_output(), "y");
  for (auto [in, out, type] : {std::tuple{"x", "a", "Relu"}, std::tuple{"a", "y", op.c_str()}}) {
    auto* n = g->add_node();
    n->set_name("n");
    n->set_op_type(type);
    n->add_input(in);
    n->add_output(out);
  }
  return m;
}

TEST(GraphTest, RepeatedNodeNamesAreMadeUnique) {
  absl::StatusOr<Graph> g = ParseOnnxModel(TwoNodes().SerializeAsString(), "m.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].name, "n");
  EXPECT_EQ(g->nodes[1].name, "n#1");
  EXPECT_EQ(g->opset, 13);
  EXPECT_EQ(g->inputs[0].shape, std::vector<int64_t>{2});
}

// The message of refusing `bytes`, or "" when they are accepted.
std::string Refusal(const std::string& bytes) {
  absl::StatusOr<Graph> g = ParseOnnxModel(bytes, "m.onnx");
  return g.ok() ? "" : std::string(g.status().message());
}

TEST(GraphTest, RefusalsNameTheFileNodeAndReason) {
  const std::string bytes = TwoNodes().SerializeAsString();
  EXPECT_NE(Refusal(bytes.substr(0, bytes.size() / 2)).find("m.onnx: not an ONNX model"),
            std::string::npos);
  const std::string unclaimed = Refusal(TwoNodes("LpNormalization").SerializeAsString());
  EXPECT_NE(unclaimed.find("node \"n\" (LpNormalization)"), std::string::npos) << unclaimed;
  onnx::ModelProto old = TwoNodes("Add");  // Add at opset 6 broadcasts the legacy way
  old.mutable_opset_import(0)->set_version(6);
  old.mutable_graph()->mutable_node(1)->add_input("a");
  EXPECT_NE(Refusal(old.SerializeAsString()).find("version 6"), std::string::npos)
      << Refusal(old.SerializeAsString());
  onnx::ModelProto ext = TwoNodes();
  auto* w = ext.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("w.bin");
  EXPECT_NE(Refusal(ext.SerializeAsString()).find("w"), std::string::npos);  // no folder
}

TEST(GraphTest, TensorsSurviveTheirSerialisation) {
  const std::vector<int64_t> v = {1, -2, 3};
  for (const Tensor& t : {Tensor::From<int64_t>({3}, v), Tensor(DataType::kFloat, {0, 4}),
                          Tensor::Scalar<double>(2.5)}) {
    std::string name;
    absl::StatusOr<Tensor> back = ParseTensor(SerializeTensor("t", t), "t.pb", &name);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(name, "t");
    EXPECT_EQ(back->Describe(), t.Describe());
    EXPECT_EQ(back->ToInt64Vector(), t.ToInt64Vector());
  }
  onnx::TensorProto b;  // raw booleans other than 0 and 1 read as true
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(2);
  b.set_raw_data(std::string("\x00\x07", 2));
  absl::StatusOr<Tensor> bools = ParseTensor(b.SerializeAsString(), "b.pb");
  ASSERT_TRUE(bools.ok()) << bools.status();
  EXPECT_EQ(bools->ToInt64Vector(), (std::vector<int64_t>{0, 1}));
  b.set_raw_data("x");  // one byte for two elements
  EXPECT_FALSE(ParseTensor(b.SerializeAsString(), "b.pb").ok());
}

}  // namespace
}  // namespace seedance::model
