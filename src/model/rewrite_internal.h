// The rewriter's state and rules (internal to seedance_model; rewrite.h is the contract).
//
// Not thread-safe: one Rewriter per rewrite.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/model/graph.h"
#include "seedance/model/rewrite.h"

namespace seedance::model::rewrite_internal {

class Rewriter {
 public:
  Rewriter(Graph graph, const RewriteTarget& target, RewriteReport* report);
  absl::Status Run();
  Graph Take();  // the rewritten graph (after Run)

 private:
  // --- the index (rebuilt after every edit) ---
  absl::Status Index();
  const Node* Producer(const std::string& value) const;
  const std::vector<size_t>& Consumers(const std::string& value) const;
  // The one node that reads `value`, or nullptr (none, several, or a graph output).
  const Node* OnlyConsumer(const std::string& value) const;
  bool IsGraphOutput(const std::string& value) const { return outputs_.count(value) > 0; }
  const Tensor* Constant(const std::string& value) const;
  std::optional<double> ScalarConstant(const std::string& value) const;
  std::optional<std::vector<int64_t>> StaticShape(const std::string& value) const;
  int RankOf(const std::string& value) const;  // -1 when unknown
  // The last dimension of `value` when its rank and that dimension are known.
  std::optional<int64_t> LastDim(const std::string& value) const;
  // True when `a` and `b` provably have one shape: the same rank and, per axis, the same fixed
  // size or the same symbolic name (ONNX's inference, with data propagation, names them).
  bool SameShape(const std::string& a, const std::string& b) const;
  // The same for axis `da` of `a` and axis `db` of `b`.
  bool SameDim(const std::string& a, size_t da, const std::string& b, size_t db) const;
  // "[batch,seq,64]" for messages ("?" for an unnamed unknown dimension).
  std::string ShapeText(const std::string& value) const;
  DataType TypeOf(const std::string& value) const;
  size_t IndexOf(const Node* node) const;

  // --- edits (applied by Commit) ---
  void Remove(const Node* node);
  void Rewire(const std::string& from, const std::string& to);  // every reader of `from`
  std::string NewName(const std::string& base);
  std::string AddConstant(const std::string& base, Tensor t);
  void Add(Node node);
  // Applies the edits and re-orders the nodes; Internal when they made a cycle (a rule's bug).
  absl::Status Commit();
  void DropUnusedConstants();
  void DropDeadNodes();
  void Applied(const std::string& rule, const Node& anchor, const std::string& detail);
  // Records the refusal (once per rule and node); returns false for `return Refuse(...)`.
  bool Refuse(const std::string& rule, const Node& anchor, const std::string& reason);

  bool ApplyOne();
  absl::Status CheapPass();
  void CommonSubexpressions();
  bool UpgradeOpset(const Node& n);

  // --- rules (rewrite_rules.cc): true when the graph was edited ---
  bool EliminateIdentity(const Node& n);
  bool EliminateCast(const Node& n);
  bool Bypass(const Node& n, const char* rule);
  bool FoldConstants(const Node& n);
  bool FoldShape(const Node& n);
  bool FoldShapeGather(const Node& n);
  bool FuseLayerNorm(const Node& n);
  bool FuseSkipLayerNorm(const Node& n);
  bool FuseGelu(const Node& n);
  bool FuseFastGelu(const Node& n);
  bool FinishGelu(const Node& n, const std::string& x, const char* op, const char* f,
                  std::vector<const Node*> nodes);
  std::optional<double> ConstantOperand(const Node* n, const std::string& value) const;
  bool IsCube(const std::string& value, const std::string& x,
              std::vector<const Node*>& nodes) const;
  bool FuseMatMulAdd(const Node& n);
  bool FuseReshapes(const Node& n);
  bool SwapReshapeActivation(const Node& n);
  bool FuseConvBn(const Node& n);
  // rewrite_attention.cc
  bool FuseSlices(const Node& n);
  bool FuseAttention(const Node& n);
  bool SinkTranspose(const Node& n);
  bool FuseTransposes(const Node& n);
  struct AttentionMatch;
  std::optional<std::string> MatchAttention(const Node& softmax, AttentionMatch& m) const;
  bool FromProduct(const std::string& value) const;
  double DimensionOf(const std::string& v, const std::string& of, size_t axis) const;
  int64_t DynamicHeads(const Node& reshape, const std::string& in, int64_t e) const;
  std::string Unscaled(const std::string& value, double& scale,
                       std::vector<const Node*>& nodes) const;
  std::string HeadInput(const std::string& value, const std::vector<int64_t>& perm,
                        AttentionMatch& m, std::string& why) const;
  std::string AttentionBias(const AttentionMatch& m, const Node& anchor, bool& ok);
  std::string ExpandAlongS(const AttentionMatch& m, const Node& anchor);
  std::string WhereBias(const AttentionMatch& m, const Node& anchor, int64_t s, int64_t l);
  bool EmitBatchFirstAttention(const Node& n, const AttentionMatch& m, const std::string& bias);
  bool FuseActivation(const Node& n);
  // The LayerNorm match from its first ReduceMean (rewrite_rules.cc).
  struct LayerNormMatch;
  std::optional<std::string> MatchLayerNorm(const Node& n, LayerNormMatch& m) const;
  // True when `axes` (a ReduceMean's) is exactly the last axis of `value`.
  bool IsLastAxis(const Node& reduce, const std::string& value) const;

  Graph g_;
  RewriteTarget target_;
  RewriteReport* report_;
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_map<std::string, std::vector<size_t>> consumers_;
  std::set<std::string> outputs_;
  std::map<std::string, ValueInfo> info_;
  std::set<size_t> removed_;
  std::vector<Node> added_;
  std::set<std::string> taken_;
  std::set<std::pair<std::string, std::string>> refused_;
  bool upgrade_tried_ = false;
};

}  // namespace seedance::model::rewrite_internal
