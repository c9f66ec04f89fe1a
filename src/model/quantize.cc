// A precision plan as a standard ONNX model (quantize.h).
#include "seedance/model/quantize.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "seedance/model/float_formats.h"
#include "seedance/model/plan_file.h"

namespace seedance::model {
namespace {

// Names not yet used by any value, node or initializer of the graph.
class Names {
 public:
  explicit Names(const Graph& g) {
    for (const auto& [name, t] : g.initializers) used_.insert(name);
    for (const ValueInfo& v : g.inputs) used_.insert(v.name);
    for (const Node& n : g.nodes) {
      used_.insert(n.name);
      used_.insert(n.inputs.begin(), n.inputs.end());
      used_.insert(n.outputs.begin(), n.outputs.end());
    }
  }
  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = absl::StrCat(base, "_", i);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

Node MakeNode(std::string name, std::string op, std::vector<std::string> in, std::string out) {
  Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  return n;
}

Node CastToFloat(std::string name, std::string in, std::string out) {
  Node n = MakeNode(std::move(name), "Cast", {std::move(in)}, std::move(out));
  n.attributes["to"] = Attribute::Int(static_cast<int64_t>(DataType::kFloat));
  return n;
}

// What replaces one FP32 weight: new initializers and the nodes that restore it under its name.
struct Rewrite {
  std::map<std::string, Tensor> initializers;
  std::vector<Node> nodes;
  std::string storage;
};

// The scales of a ScaledTensor, shaped to broadcast against the weight in a Mul ([C, 1, ...]).
Tensor BroadcastScales(const ScaledTensor& q) {
  std::vector<int64_t> shape;
  if (q.axis >= 0) {
    shape.push_back(static_cast<int64_t>(q.scales.size()));
    for (int d = q.axis + 1; d < q.codes.rank(); ++d) shape.push_back(1);
  }
  return Tensor::From<float>(shape, q.scales);
}

Rewrite Int8Rewrite(const std::string& w, const ScaledTensor& q, int64_t opset, Names& names) {
  Rewrite r;
  Tensor codes(DataType::kInt8, q.codes.shape());
  for (int64_t i = 0; i < codes.size(); ++i) {
    codes.data<int8_t>()[i] = static_cast<int8_t>(q.codes.data<float>()[i]);
  }
  const std::string c = names.Fresh(w + "_quantized");
  r.initializers[c] = std::move(codes);
  const std::string s = names.Fresh(w + "_scale");
  const std::string z = names.Fresh(w + "_zero_point");
  if (opset >= 13 || (opset >= 10 && q.axis < 0)) {
    // Standard QDQ: one DequantizeLinear, per channel by its axis attribute.
    const int64_t channels = static_cast<int64_t>(q.scales.size());
    const std::vector<int64_t> shape =
        q.axis < 0 ? std::vector<int64_t>{} : std::vector<int64_t>{channels};
    r.initializers[s] = Tensor::From<float>(shape, q.scales);
    r.initializers[z] = Tensor(DataType::kInt8, shape);
    Node dq = MakeNode(names.Fresh(w + "_DequantizeLinear"), "DequantizeLinear", {c, s, z}, w);
    if (q.axis >= 0) dq.attributes["axis"] = Attribute::Int(q.axis);
    r.nodes.push_back(std::move(dq));
    r.storage = q.axis < 0 ? "int8, DequantizeLinear"
                           : absl::StrCat("int8, DequantizeLinear axis ", q.axis);
    return r;
  }
  // Before opset 13 DequantizeLinear has one scale (before 10 it does not exist): the codes as
  // floats, times the channel scales.
  const std::string widened = names.Fresh(w + "_codes");
  if (opset >= 10) {
    const std::string one = names.Fresh(w + "_unit_scale");
    r.initializers[one] = Tensor::Scalar<float>(1.0f);
    r.initializers[z] = Tensor::Scalar<int8_t>(0);
    r.nodes.push_back(MakeNode(names.Fresh(w + "_DequantizeLinear"), "DequantizeLinear",
                               {c, one, z}, widened));
    r.storage = "int8, DequantizeLinear and Mul by the channel scales (opset < 13)";
  } else {
    r.nodes.push_back(CastToFloat(names.Fresh(w + "_Cast"), c, widened));
    r.storage = "int8, Cast and Mul by the channel scales (opset < 10)";
  }
  r.initializers[s] = BroadcastScales(q);
  r.nodes.push_back(MakeNode(names.Fresh(w + "_Mul"), "Mul", {widened, s}, w));
  return r;
}

Rewrite Fp8Rewrite(const std::string& w, const ScaledTensor& q, Names& names) {
  Rewrite r;
  Tensor codes(DataType::kFloat16, q.codes.shape());
  for (int64_t i = 0; i < codes.size(); ++i) {
    codes.data<Float16>()[i] = ToFloat16(q.codes.data<float>()[i]);  // exact: E4M3 is in FP16
  }
  const std::string c = names.Fresh(w + "_fp8_codes");
  const std::string s = names.Fresh(w + "_scale");
  const std::string widened = names.Fresh(w + "_codes");
  r.initializers[c] = std::move(codes);
  r.initializers[s] = BroadcastScales(q);
  r.nodes.push_back(CastToFloat(names.Fresh(w + "_Cast"), c, widened));
  r.nodes.push_back(MakeNode(names.Fresh(w + "_Mul"), "Mul", {widened, s}, w));
  r.storage = "fp8-e4m3 codes held as float16 (no FP8 type before opset 19), Cast and Mul";
  return r;
}

Rewrite SixteenBitRewrite(const std::string& w, const Tensor& weight, NumericFormat format,
                          int64_t opset, Names& names) {
  Rewrite r;
  const float* in = weight.data<float>();
  if (format == NumericFormat::kBf16 && opset < 13) {
    Tensor rounded(DataType::kFloat, weight.shape());
    for (int64_t i = 0; i < rounded.size(); ++i) rounded.data<float>()[i] = RoundToBFloat16(in[i]);
    r.initializers[w] = std::move(rounded);
    r.storage = "bf16 values held as float32 (Cast has no bfloat16 before opset 13)";
    return r;
  }
  const bool half = format == NumericFormat::kFp16;
  Tensor narrow(half ? DataType::kFloat16 : DataType::kBfloat16, weight.shape());
  for (int64_t i = 0; i < narrow.size(); ++i) {
    if (half) {
      narrow.data<Float16>()[i] = ToFloat16(in[i]);
    } else {
      narrow.data<BFloat16>()[i] = ToBFloat16(in[i]);
    }
  }
  const std::string c = names.Fresh(w + (half ? "_fp16" : "_bf16"));
  r.initializers[c] = std::move(narrow);
  r.nodes.push_back(CastToFloat(names.Fresh(w + "_Cast"), c, w));
  r.storage = half ? "float16, Cast" : "bfloat16, Cast";
  return r;
}

absl::StatusOr<Rewrite> RewriteWeight(const Graph& graph, const Layer& layer, NumericFormat format,
                                      const QuantizeOptions& options, Names& names) {
  const Tensor& weight = graph.initializers.at(layer.weight);
  if (format == NumericFormat::kFp16 || format == NumericFormat::kBf16) {
    return SixteenBitRewrite(layer.weight, weight, format, graph.opset, names);
  }
  FakeQuantOptions q;
  q.per_channel = options.per_channel_weights && layer.weight_shape.size() > 1;
  q.axis = layer.channel_axis;
  absl::StatusOr<ScaledTensor> scaled = QuantizeScaled(weight, format, q);
  if (!scaled.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("weight \"", layer.weight, "\" of layer \"",
                                                   layer.node, "\": ", scaled.status().message()));
  }
  if (format == NumericFormat::kInt8) return Int8Rewrite(layer.weight, *scaled, graph.opset, names);
  return Fp8Rewrite(layer.weight, *scaled, names);
}

// The weight each planned layer multiplies by, with its format; one format per weight.
absl::StatusOr<std::map<std::string, std::pair<Layer, NumericFormat>>> PlannedWeights(
    const Graph& graph, const PrecisionPlan& plan) {
  const std::vector<Layer> layers = FindLayers(graph);
  std::map<std::string, std::pair<Layer, NumericFormat>> out;
  for (const auto& entry : plan) {
    const std::string& node = entry.first;  // (a structured binding cannot be captured in C++20)
    auto layer =
        std::find_if(layers.begin(), layers.end(), [&](const Layer& l) { return l.node == node; });
    if (layer == layers.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          graph.source, ": the plan names \"", node,
          "\", which is not a layer (a MatMul, Gemm or Conv with an FP32 weight initializer)"));
    }
    if (entry.second.activations != NumericFormat::kFp32) {
      return absl::InvalidArgumentError(absl::StrCat("layer \"", node, "\": activations in ",
                                                     FormatName(entry.second.activations),
                                                     " (quantize writes weight-only plans)"));
    }
    if (entry.second.weights == NumericFormat::kFp32) continue;
    auto [it, fresh] = out.try_emplace(layer->weight, *layer, entry.second.weights);
    if (!fresh && it->second.second != entry.second.weights) {
      return absl::InvalidArgumentError(absl::StrCat(
          "weight \"", layer->weight, "\" is planned as ", FormatName(it->second.second),
          " for layer \"", it->second.first.node, "\" and as ", FormatName(entry.second.weights),
          " for layer \"", node, "\""));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<QuantizedModel> QuantizeWeights(const Graph& graph, const PrecisionPlan& plan,
                                               const QuantizeOptions& options) {
  absl::StatusOr<std::map<std::string, std::pair<Layer, NumericFormat>>> planned =
      PlannedWeights(graph, plan);
  if (!planned.ok()) return planned.status();
  QuantizedModel out;
  out.graph = graph;
  Names names(graph);
  std::vector<Node> restore;  // run first: they read only initializers
  for (const auto& [weight, choice] : *planned) {
    absl::StatusOr<Rewrite> r = RewriteWeight(graph, choice.first, choice.second, options, names);
    if (!r.ok()) return r.status();
    QuantizedWeight q{weight, choice.second, r->storage,
                      static_cast<int64_t>(graph.initializers.at(weight).bytes()), 0};
    out.graph.initializers.erase(weight);
    for (auto& [name, t] : r->initializers) {
      q.bytes_after += static_cast<int64_t>(t.bytes());
      out.graph.initializers[name] = std::move(t);
    }
    for (Node& n : r->nodes) restore.push_back(std::move(n));
    out.weights.push_back(std::move(q));
  }
  out.graph.nodes.insert(out.graph.nodes.begin(), std::make_move_iterator(restore.begin()),
                         std::make_move_iterator(restore.end()));
  return out;
}

absl::StatusOr<PrecisionPlan> ParsePlanJson(const std::string& text, const std::string& source) {
  absl::StatusOr<PlanFile> file = ParsePlanFile(text, source);
  if (!file.ok()) return file.status();
  PrecisionPlan plan;
  for (const PlannedLayer& l : file->layers) {
    absl::StatusOr<NumericFormat> nf = ParseFormat(l.format);
    if (!nf.ok()) return nf.status();  // ParsePlanFile took only these formats
    plan[l.node].weights = *nf;
  }
  return plan;
}

}  // namespace seedance::model
