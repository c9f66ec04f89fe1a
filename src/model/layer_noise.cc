#include "layer_noise.h"

#include "seedance/base/check.h"
#include "seedance/model/jvp.h"

namespace seedance::model::internal {

absl::StatusOr<LayerInputs> RunKeepingLayerInputs(const Graph& graph,
                                                  const std::vector<Layer>& layers,
                                                  const std::vector<TensorMap>& samples) {
  LayerInputs r;
  RunOptions capture;
  capture.before_node = [&](const Node& node, std::vector<const Tensor*>& in,
                            std::vector<Tensor>&) {
    for (const Layer& l : layers) {
      if (l.node == node.name) r.inputs[l.node].push_back(*in[0]);
    }
    return absl::OkStatus();
  };
  for (const TensorMap& feeds : samples) {
    absl::StatusOr<TensorMap> out = Run(graph, feeds, capture);
    if (!out.ok()) return out.status();
    r.outputs.push_back(std::move(*out));
  }
  return r;
}

absl::StatusOr<double> LocalNoiseSquared(const Graph& graph, const Layer& layer,
                                         const Tensor& w_new, const std::vector<Tensor>& inputs) {
  const Node* node = nullptr;
  for (const Node& n : graph.nodes) node = n.name == layer.node ? &n : node;
  SEEDANCE_CHECK(node != nullptr) << "\"" << layer.node << "\" is not a node of " << graph.source;
  const Tensor& w = graph.initializers.at(layer.weight);
  SEEDANCE_CHECK(w_new.type() == DataType::kFloat && w_new.shape() == w.shape())
      << "replacement weight " << w_new.Describe() << " for " << w.Describe();
  Graph one;  // the layer alone, without its bias: x (W' - W)
  one.source = layer.node;
  one.opset = graph.opset;
  one.nodes.push_back({node->name, node->op_type, {"x", "dw"}, {"y"}, node->attributes, node->domain});
  Tensor dw(DataType::kDouble, w.shape());
  for (int64_t k = 0; k < w.size(); ++k) {
    dw.data<double>()[k] = static_cast<double>(w_new.data<float>()[k]) - w.data<float>()[k];
  }
  one.initializers["dw"] = std::move(dw);
  one.inputs.push_back({"x", DataType::kDouble, {}, {}, false});
  one.outputs.push_back({"y", DataType::kDouble, {}, {}, false});
  double sum = 0;
  for (const Tensor& x : inputs) {
    absl::StatusOr<TensorMap> y = Run(one, {{"x", ToFloat64(x)}});
    if (!y.ok()) return y.status();
    for (double v : y->at("y").values<double>()) sum += v * v;
  }
  return sum;
}

}  // namespace seedance::model::internal
