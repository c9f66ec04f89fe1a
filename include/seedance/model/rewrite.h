// The pattern rewriter (`seedance model optimize`, docs/model.md): an ONNX graph's decomposed
// patterns rewritten to fused operators the target device runs, each rewrite proven equivalent
// by its rule's preconditions or not made.
//
// First, in one pass: common-subexpressions (a node computing what an earlier one computes reads
// its outputs instead), eliminate-identity, eliminate-cast and fold-constants. Then rules applied
// until none applies (each names itself in the report), the graph re-indexed after each:
//   eliminate-identity   Identity nodes (consumers read the input directly)
//   eliminate-cast       a Cast to the type its input already has
//   fold-constants       a node whose inputs are all constants, run once (Shape of a value whose
//                        shape is fixed, and a Gather of a Shape at fixed dimensions, included);
//                        outputs above 1 MiB (sized from inference before anything runs) are
//                        left to run
//   fuse-slices          Slices of one tensor covering an axis end to end -> one Split
//   fuse-transposes      Transpose of a Transpose -> one Transpose, or none when they cancel
//   fuse-attention       the attention subgraph of torch's nn.MultiheadAttention ([S, B*H, d]
//                        heads) or of Hugging Face's layout ([B, H, S, d] by view/permute): head
//                        splits, scale, Q K^T, + mask (constant, computed [B|1, H|1, S|1, L], or a
//                        Where with a constant condition and a fill <= -1e30), Softmax, V, head
//                        merge -> com.microsoft MultiHeadAttention (the mask as attention_bias)
//   upgrade-opset        a model below opset 17 with a decomposed LayerNorm is converted to opset
//                        17 (libonnx's version converter) so that LayerNormalization exists
//   fuse-layernorm       ReduceMean Sub Pow ReduceMean Add Sqrt Div [Mul] [Add] over the last
//                        axis -> LayerNormalization (opset 17)
//   fuse-skip-layernorm  Add of two tensors of provably one shape feeding a LayerNormalization over
//                        the last axis -> com.microsoft SkipLayerNormalization (the sum as output
//                        3 when others read it)
//   fuse-gelu            Div(x, sqrt 2) or Mul(x, 1/sqrt 2), Erf, Add 1, Mul x, Mul 0.5 (in
//                        either order) -> com.microsoft Gelu; the tanh form -> FastGelu
//   fuse-matmul-add      MatMul(A, constant B [K,N]) + constant bias [N] -> Gemm; A of rank > 2
//                        with a fixed shape is flattened to [rows, K] and the result reshaped back
//   fuse-reshapes        Reshape of a Reshape -> one Reshape; a Reshape to its input's own fixed
//                        shape removed; Relu/Gelu between two Reshapes moved before the first
//   sink-transposes      Transpose [1,0,2], Reshape to rows, row-wise Gemm/activations, Reshape
//                        back, Transpose [1,0,2] -> the Reshapes alone
//   fuse-conv-bn         BatchNormalization of a Conv's output, constants only -> the Conv's
//                        weights and bias scaled
//   fuse-conv-activation Conv + Relu (CPU: also LeakyRelu, Sigmoid, Tanh) -> com.microsoft
//                        FusedConv
//   fuse-gemm-activation Gemm + Relu/LeakyRelu/Sigmoid/Tanh -> com.microsoft FusedGemm (CPU only:
//                        onnxruntime's CUDA provider has no FusedGemm)
// Nodes nothing reads any more (a removed Reshape's shape computation) are dropped.
//
// Every rule checks its preconditions: single consumers of the values it removes, constants where
// it folds them, exact constants (2 for the power, 1 and 0.5 and sqrt 2 for GELU, a scalar
// epsilon >= 0), the normalised axis being the last one, shapes where it reshapes or drops a
// broadcast: fixed sizes, or (dynamic axes) the same symbolic names from ONNX's shape inference
// with data propagation. A match that breaks one is left as it is and reported as refused with the
// rule and the reason. A graph output is never renamed or removed.
//
// Thread-safety: the functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/model/graph.h"

namespace seedance::model {

// What the rewritten model will run on: the CPU executor (and onnxruntime's CPU provider) or an
// NVIDIA GPU of the hardware catalog (onnxruntime's CUDA provider, Seedance's CUDA kernels).
struct RewriteTarget {
  std::string name;  // "cpu", or the catalog's canonical name ("H100")
  bool cpu = true;
  // Fused forms the target runs.
  bool fused_gemm = true;              // com.microsoft FusedGemm (CPU only)
  bool conv_other_activations = true;  // FusedConv with LeakyRelu/Sigmoid/Tanh (CPU only)
};

// "cpu" or a catalog NVIDIA GPU ("t4", "a100", "H100", "h200"...). InvalidArgument naming the
// value otherwise (an NPU, an unknown name).
absl::StatusOr<RewriteTarget> ParseRewriteTarget(std::string_view device);

struct RewriteStep {
  std::string rule;
  std::string node;    // the first node of the match
  std::string detail;  // what it became
};

struct RewriteRefusal {
  std::string rule;
  std::string node;
  std::string reason;
};

struct RewriteReport {
  std::vector<RewriteStep> applied;
  std::vector<RewriteRefusal> refused;
  int64_t nodes_before = 0, nodes_after = 0;
};

// The rewritten graph (a valid model: it passes the same checks as a loaded one). InvalidArgument
// when `graph` itself fails them; Internal when a rule produced a graph the checker refuses (a
// bug, reported with the rule).
absl::StatusOr<Graph> RewriteGraph(const Graph& graph, const RewriteTarget& target,
                                   RewriteReport* report);

// The fused-node kinds compared with onnxruntime (BENCHMARKS.md): "layernorm", "gelu",
// "attention", "matmul-bias", "conv-activation"; "" for any other node.
std::string FusedKind(const Node& node);
// node kind -> count over `graph`, every kind listed (zeros included), plus "nodes" (all).
std::map<std::string, int64_t> CountFusedKinds(const Graph& graph);

}  // namespace seedance::model
