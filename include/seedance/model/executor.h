// The CPU executor: runs a Graph (graph.h) on input tensors, node by node, with the operator
// semantics of the ONNX specification at the graph's opset.
//
// Every operator it claims (ClaimedOps) is checked against ONNX's own node conformance cases
// (Debian's libonnx-testdata; executor_conformance_test, docs/model.md). Matrix products and
// convolutions in FP32 run on oneDNN (Debian's libdnnl); everything else is plain loops. An
// operator it does not claim is refused when the model is loaded, so Run never meets one.
//
// Errors (InvalidArgument, naming the node and operator): a missing or misnamed feed, a feed whose
// type or fixed dimensions differ from the graph's declaration, and what the operators refuse at
// run time (shapes that do not broadcast, an index out of range, a reshape of the wrong count).
//
// Thread-safety: Run is reentrant; concurrent runs of one const Graph are safe. Each thread keeps
// what it worked out about the last graphs it ran (values numbered, last readers), checked
// against the graph's names on every run, so a graph changed between runs is planned anew.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/graph.h"
#include "seedance/model/tensor.h"

namespace seedance::model {

struct RunOptions {
  // Called before each node with the tensors it will read (nullptr for an omitted input); to
  // make the node read another tensor for input i, store it in replacements[i] (sized like
  // `inputs`) and point inputs[i] at it. The graph's own values are never changed. An error stops
  // the run and is returned with the node's name.
  std::function<absl::Status(const Node&, std::vector<const Tensor*>& inputs,
                             std::vector<Tensor>& replacements)>
      before_node;
  // Called after each node with its outputs, which it may change (precision emulation rounds
  // them); an error stops the run and is returned with the node's name.
  std::function<absl::Status(const Node&, std::vector<Tensor>& outputs)> after_node;
  // Keep every intermediate value in the result, not only the graph's outputs.
  bool keep_intermediates = false;
};

// name -> tensor for the graph's outputs (and every value when keep_intermediates).
using TensorMap = std::map<std::string, Tensor>;

absl::StatusOr<TensorMap> Run(const Graph& graph, const TensorMap& feeds,
                              const RunOptions& options = {});

// The operators of the default ONNX domain the executor runs, sorted.
std::vector<std::string> ClaimedOps();
bool IsClaimed(const std::string& op_type);
// The operators of onnxruntime's "com.microsoft" domain (version 1) the executor runs, sorted:
// the fused forms the rewriter emits (rewrite.h), with onnxruntime's contrib-operator semantics.
std::vector<std::string> ClaimedContribOps();
bool IsClaimedContrib(const std::string& op_type);

}  // namespace seedance::model
