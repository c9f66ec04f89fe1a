// ONNX schemas of the "com.microsoft" operators the executor runs (ops_fused.cc), registered with
// libonnx so that its checker validates a rewritten model's fused nodes (inputs, outputs,
// attributes, types) and its shape inference carries types and shapes through them, as
// onnxruntime's own registration of these operators does. Inputs, attributes and defaults follow
// onnxruntime's contrib-operator documentation (docs/ContribOperators.md, version 1).
#include <mutex>

#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"
#include "ops.h"
#include "seedance/model/graph.h"

namespace seedance::model::ops {
namespace {

const std::vector<std::string>& FloatTypes() {
  static const std::vector<std::string> types = {"tensor(float)", "tensor(double)",
                                                 "tensor(float16)", "tensor(bfloat16)"};
  return types;
}

onnx::OpSchema Base(const char* name, const char* doc) {
  onnx::OpSchema s;
  s.SetName(name).SetDomain(kMicrosoftDomain).SinceVersion(1).SetDoc(doc);
  s.TypeConstraint("T", FloatTypes(), "floating-point tensors");
  return s;
}

// The inference of a default-domain operator whose attributes the fused one repeats.
onnx::InferenceFunction InferAs(const char* op, int opset) {
  return [op, opset](onnx::InferenceContext& ctx) {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, opset, "");
    if (schema != nullptr && schema->GetTypeAndShapeInferenceFunction()) {
      schema->GetTypeAndShapeInferenceFunction()(ctx);
    }
  };
}

void Register(onnx::OpSchema schema) { onnx::OpSchemaRegistry::OpSchemaRegisterOnce r(schema); }

void AddActivation(onnx::OpSchema& s) {
  s.Attr("activation", "Relu, LeakyRelu, Sigmoid or Tanh", onnx::AttributeProto::STRING);
  s.Attr("activation_alpha", "LeakyRelu's alpha", onnx::AttributeProto::FLOAT, 0.01f);
}

void RegisterAll() {
  onnx::OpSchemaRegistry::DomainToVersionRange::Instance().AddDomainToVersion(kMicrosoftDomain, 1,
                                                                              1);
  Register(Base("Gelu", "0.5 x (1 + erf(x / sqrt 2))")
               .Input(0, "X", "", "T")
               .Output(0, "Y", "", "T")
               .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput));
  Register(Base("FastGelu", "the tanh approximation of GELU of X + bias")
               .Input(0, "X", "", "T")
               .Input(1, "bias", "", "T", onnx::OpSchema::Optional)
               .Output(0, "Y", "", "T")
               .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput));
  Register(Base("SkipLayerNormalization", "LayerNormalization of input + skip (+ bias)")
               .Attr("epsilon", "", onnx::AttributeProto::FLOAT, 1e-12f)
               .Input(0, "input", "", "T")
               .Input(1, "skip", "", "T")
               .Input(2, "gamma", "", "T")
               .Input(3, "beta", "", "T", onnx::OpSchema::Optional)
               .Input(4, "bias", "", "T", onnx::OpSchema::Optional)
               .Output(0, "output", "", "T")
               .Output(1, "mean", "", "U", onnx::OpSchema::Optional)
               .Output(2, "inv_std_var", "", "U", onnx::OpSchema::Optional)
               .Output(3, "input_skip_bias_sum", "", "T", onnx::OpSchema::Optional)
               .TypeConstraint("U", {"tensor(float)"}, "")
               .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
                 onnx::propagateShapeAndTypeFromFirstInput(ctx);
                 if (ctx.getNumOutputs() > 3) {
                   onnx::propagateElemTypeFromInputToOutput(ctx, 0, 3);
                   if (onnx::hasInputShape(ctx, 0))
                     onnx::propagateShapeFromInputToOutput(ctx, 0, 3);
                 }
               }));
  onnx::OpSchema gemm = Base("FusedGemm", "Gemm followed by an activation");
  gemm.Attr("alpha", "", onnx::AttributeProto::FLOAT, 1.0f)
      .Attr("beta", "", onnx::AttributeProto::FLOAT, 1.0f)
      .Attr("transA", "", onnx::AttributeProto::INT, int64_t{0})
      .Attr("transB", "", onnx::AttributeProto::INT, int64_t{0})
      .Input(0, "A", "", "T")
      .Input(1, "B", "", "T")
      .Input(2, "C", "", "T", onnx::OpSchema::Optional)
      .Output(0, "Y", "", "T")
      .TypeAndShapeInferenceFunction(InferAs("Gemm", 13));
  AddActivation(gemm);
  Register(std::move(gemm));
  onnx::OpSchema conv = Base("FusedConv", "Conv followed by an activation");
  conv.Attr("auto_pad", "", onnx::AttributeProto::STRING, std::string("NOTSET"))
      .Attr("kernel_shape", "", onnx::AttributeProto::INTS, onnx::OPTIONAL_VALUE)
      .Attr("dilations", "", onnx::AttributeProto::INTS, onnx::OPTIONAL_VALUE)
      .Attr("strides", "", onnx::AttributeProto::INTS, onnx::OPTIONAL_VALUE)
      .Attr("pads", "", onnx::AttributeProto::INTS, onnx::OPTIONAL_VALUE)
      .Attr("group", "", onnx::AttributeProto::INT, int64_t{1})
      .Input(0, "X", "", "T")
      .Input(1, "W", "", "T")
      .Input(2, "B", "", "T", onnx::OpSchema::Optional)
      .Input(3, "Z", "", "T", onnx::OpSchema::Optional)
      .Output(0, "Y", "", "T")
      .TypeAndShapeInferenceFunction(InferAs("Conv", 11));
  AddActivation(conv);
  Register(std::move(conv));
  Register(Base("MultiHeadAttention", "softmax(scale Q K^T + attention_bias) V per head")
               .Attr("num_heads", "", onnx::AttributeProto::INT)
               .Attr("scale", "", onnx::AttributeProto::FLOAT, onnx::OPTIONAL_VALUE)
               .Attr("mask_filter_value", "", onnx::AttributeProto::FLOAT, onnx::OPTIONAL_VALUE)
               .Attr("unidirectional", "", onnx::AttributeProto::INT, int64_t{0})
               .Input(0, "query", "", "T")
               .Input(1, "key", "", "T", onnx::OpSchema::Optional)
               .Input(2, "value", "", "T", onnx::OpSchema::Optional)
               .Input(3, "bias", "", "T", onnx::OpSchema::Optional)
               .Input(4, "key_padding_mask", "", "M", onnx::OpSchema::Optional)
               .Input(5, "attention_bias", "", "T", onnx::OpSchema::Optional)
               .Input(6, "past_key", "", "T", onnx::OpSchema::Optional)
               .Input(7, "past_value", "", "T", onnx::OpSchema::Optional)
               .Output(0, "output", "", "T")
               .Output(1, "present_key", "", "T", onnx::OpSchema::Optional)
               .Output(2, "present_value", "", "T", onnx::OpSchema::Optional)
               .TypeConstraint("M", {"tensor(int32)"}, "")
               .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
                 onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
                 if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 2)) return;
                 const auto& q = onnx::getInputShape(ctx, 0);
                 const auto& v = onnx::getInputShape(ctx, 2);
                 if (q.dim_size() != 3 || v.dim_size() != 3) return;
                 onnx::TensorShapeProto shape;
                 *shape.add_dim() = q.dim(0);
                 *shape.add_dim() = q.dim(1);
                 *shape.add_dim() = v.dim(2);
                 onnx::updateOutputShape(ctx, 0, shape);
               }));
}

}  // namespace

void RegisterContribSchemas() {
  static std::once_flag once;
  std::call_once(once, RegisterAll);
}

}  // namespace seedance::model::ops
