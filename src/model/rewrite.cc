// The pattern rewriter (rewrite.h). A Rewriter holds the graph being rewritten with an index of
// it (who makes and who reads each value, what is constant, the shapes ONNX's inference gives);
// each rule looks at one anchor node, checks its whole match against the index and either edits
// the graph (then the index is rebuilt) or records why it refused. Nodes are re-ordered after each
// edit (a stable topological sort), so a rule may put its fused node anywhere.
#include "seedance/model/rewrite.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rewrite_internal.h"
#include "seedance/hw/catalog.h"
#include "seedance/model/executor.h"

namespace seedance::model {
namespace rewrite_internal {

Rewriter::Rewriter(Graph graph, const RewriteTarget& target, RewriteReport* report)
    : g_(std::move(graph)), target_(target), report_(report) {}

absl::Status Rewriter::Index() {
  producer_.clear();
  consumers_.clear();
  outputs_.clear();
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (const std::string& out : g_.nodes[i].outputs) {
      if (!out.empty()) producer_[out] = i;
    }
    for (const std::string& in : g_.nodes[i].inputs) {
      if (!in.empty()) consumers_[in].push_back(i);
    }
  }
  for (const ValueInfo& v : g_.outputs) outputs_.insert(v.name);
  absl::StatusOr<std::map<std::string, ValueInfo>> info = InferValueInfo(g_);
  if (!info.ok()) return info.status();
  info_ = std::move(*info);
  return absl::OkStatus();
}

const Node* Rewriter::Producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : &g_.nodes[it->second];
}

const std::vector<size_t>& Rewriter::Consumers(const std::string& value) const {
  static const std::vector<size_t> kNone;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNone : it->second;
}

const Node* Rewriter::OnlyConsumer(const std::string& value) const {
  const std::vector<size_t>& c = Consumers(value);
  if (c.size() != 1 || IsGraphOutput(value)) return nullptr;
  return &g_.nodes[c[0]];
}

const Tensor* Rewriter::Constant(const std::string& value) const {
  auto it = g_.initializers.find(value);
  return it == g_.initializers.end() ? nullptr : &it->second;
}

std::optional<double> Rewriter::ScalarConstant(const std::string& value) const {
  const Tensor* t = Constant(value);
  if (t == nullptr || t->size() != 1 ||
      !(t->type() == DataType::kFloat || t->type() == DataType::kDouble ||
        t->type() == DataType::kFloat16 || t->type() == DataType::kBfloat16))
    return std::nullopt;
  return t->AsDouble(0);
}

std::optional<std::vector<int64_t>> Rewriter::StaticShape(const std::string& value) const {
  auto it = info_.find(value);
  if (it == info_.end() || !it->second.has_shape) return std::nullopt;
  for (int64_t d : it->second.shape) {
    if (d < 0) return std::nullopt;
  }
  return it->second.shape;
}

int Rewriter::RankOf(const std::string& value) const {
  auto it = info_.find(value);
  return it == info_.end() || !it->second.has_shape ? -1
                                                    : static_cast<int>(it->second.shape.size());
}

std::optional<int64_t> Rewriter::LastDim(const std::string& value) const {
  auto it = info_.find(value);
  if (it == info_.end() || !it->second.has_shape || it->second.shape.empty() ||
      it->second.shape.back() < 0) {
    return std::nullopt;
  }
  return it->second.shape.back();
}

bool Rewriter::SameDim(const std::string& a, size_t da, const std::string& b, size_t db) const {
  auto ia = info_.find(a), ib = info_.find(b);
  if (ia == info_.end() || ib == info_.end() || !ia->second.has_shape || !ib->second.has_shape ||
      da >= ia->second.shape.size() || db >= ib->second.shape.size()) {
    return false;
  }
  const int64_t x = ia->second.shape[da], y = ib->second.shape[db];
  if (x >= 0) return x == y;
  const std::string& nx = da < ia->second.dim_names.size() ? ia->second.dim_names[da] : "";
  const std::string& ny = db < ib->second.dim_names.size() ? ib->second.dim_names[db] : "";
  return y < 0 && !nx.empty() && nx == ny;
}

bool Rewriter::SameShape(const std::string& a, const std::string& b) const {
  const int rank = RankOf(a);
  if (rank < 0 || rank != RankOf(b)) return false;
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    if (!SameDim(a, d, b, d)) return false;
  }
  return true;
}

std::string Rewriter::ShapeText(const std::string& value) const {
  auto it = info_.find(value);
  if (it == info_.end() || !it->second.has_shape) return "(unknown)";
  std::vector<std::string> dims;
  for (size_t d = 0; d < it->second.shape.size(); ++d) {
    const std::string& name = d < it->second.dim_names.size() ? it->second.dim_names[d] : "";
    dims.push_back(it->second.shape[d] >= 0 ? absl::StrCat(it->second.shape[d])
                                            : (name.empty() ? "?" : name));
  }
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

DataType Rewriter::TypeOf(const std::string& value) const {
  auto it = info_.find(value);
  return it == info_.end() ? DataType::kUndefined : it->second.type;
}

size_t Rewriter::IndexOf(const Node* node) const {
  return static_cast<size_t>(node - g_.nodes.data());
}

void Rewriter::Remove(const Node* node) { removed_.insert(IndexOf(node)); }

void Rewriter::Rewire(const std::string& from, const std::string& to) {
  for (Node& n : g_.nodes) {
    for (std::string& in : n.inputs) {
      if (in == from) in = to;
    }
  }
}

std::string Rewriter::NewName(const std::string& base) {
  std::string name = base;
  for (int i = 1; producer_.count(name) || g_.initializers.count(name) || consumers_.count(name) ||
                  taken_.count(name);
       ++i) {
    name = absl::StrCat(base, "_", i);
  }
  taken_.insert(name);
  return name;
}

std::string Rewriter::AddConstant(const std::string& base, Tensor t) {
  std::string name = NewName(base);
  g_.initializers[name] = std::move(t);
  return name;
}

void Rewriter::Add(Node node) {
  if (node.name.empty()) node.name = NewName(node.op_type);
  added_.push_back(std::move(node));
}

void Rewriter::Applied(const std::string& rule, const Node& anchor, const std::string& detail) {
  if (report_ != nullptr) report_->applied.push_back({rule, anchor.name, detail});
}

bool Rewriter::Refuse(const std::string& rule, const Node& anchor, const std::string& reason) {
  if (report_ != nullptr && refused_.insert({rule, anchor.name}).second) {
    report_->refused.push_back({rule, anchor.name, reason});
  }
  return false;
}

// Nodes in a stable topological order: of the nodes whose inputs are made, the one that came
// first (added nodes after the others).
absl::Status Rewriter::Commit() {
  std::vector<Node> nodes;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!removed_.count(i)) nodes.push_back(std::move(g_.nodes[i]));
  }
  for (Node& n : added_) nodes.push_back(std::move(n));
  removed_.clear();
  added_.clear();
  std::unordered_map<std::string, size_t> maker;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& out : nodes[i].outputs) {
      if (!out.empty()) maker[out] = i;
    }
  }
  std::vector<std::vector<size_t>> readers(nodes.size());
  std::vector<size_t> waiting(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& in : nodes[i].inputs) {
      auto it = in.empty() ? maker.end() : maker.find(in);
      if (it == maker.end()) continue;
      readers[it->second].push_back(i);
      ++waiting[i];
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (waiting[i] == 0) ready.insert(i);
  }
  std::vector<Node> order;
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    for (size_t r : readers[i]) {
      if (--waiting[r] == 0) ready.insert(r);
    }
    order.push_back(std::move(nodes[i]));
  }
  if (order.size() != nodes.size()) return absl::InternalError("the rewrite made a cycle");
  g_.nodes = std::move(order);
  DropDeadNodes();
  DropUnusedConstants();
  return absl::OkStatus();
}

// Nodes none of whose outputs is read or a graph output (a rewrite left the shape computation of
// a Reshape it removed): ONNX's operators have no side effects, so they go, last first.
void Rewriter::DropDeadNodes() {
  std::set<std::string> read;
  for (const ValueInfo& v : g_.outputs) read.insert(v.name);
  std::vector<bool> keep(g_.nodes.size(), true);
  for (size_t i = g_.nodes.size(); i-- > 0;) {
    const Node& n = g_.nodes[i];
    keep[i] = std::any_of(n.outputs.begin(), n.outputs.end(),
                          [&](const std::string& o) { return !o.empty() && read.count(o); });
    if (keep[i]) read.insert(n.inputs.begin(), n.inputs.end());
  }
  std::vector<Node> live;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (keep[i]) live.push_back(std::move(g_.nodes[i]));
  }
  g_.nodes = std::move(live);
}

void Rewriter::DropUnusedConstants() {
  std::set<std::string> used;
  for (const Node& n : g_.nodes) used.insert(n.inputs.begin(), n.inputs.end());
  for (const ValueInfo& v : g_.outputs) used.insert(v.name);
  for (auto it = g_.initializers.begin(); it != g_.initializers.end();) {
    it = used.count(it->first) ? std::next(it) : g_.initializers.erase(it);
  }
}

// Identity and Cast bypasses and constant folding over the whole graph in one pass, without an
// index rebuilt after each: folding only turns a node's outputs into initializers (their shapes,
// names and readers stay, and Constant() reads the initializers themselves), and a bypass only
// points readers at the input; neither reads an index entry the other changes. Exported models
// hold hundreds of these (a 24-layer export: 410 of its 1,200 rewrites).
absl::Status Rewriter::CheapPass() {
  const size_t before = removed_.size();
  CommonSubexpressions();
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    if (removed_.count(i) || !n.domain.empty()) continue;
    if ((n.op_type == "Identity" || n.op_type == "Cast") && !IsGraphOutput(n.outputs[0])) {
      if (n.op_type == "Identity") {
        EliminateIdentity(n);
      } else {
        EliminateCast(n);
      }
      continue;
    }
    if (n.op_type != "Identity" && n.op_type != "Cast") FoldConstants(n);
  }
  for (auto it = producer_.begin(); it != producer_.end();) {  // folded outputs are constants now
    it = removed_.count(it->second) ? producer_.erase(it) : std::next(it);
  }
  if (removed_.size() == before) return absl::OkStatus();
  if (absl::Status s = Commit(); !s.ok()) return s;
  return Index();
}

namespace {

// An attribute's value as bytes (for telling equal nodes apart).
std::string AttributeKey(const Attribute& a) {
  std::string key = absl::StrCat(static_cast<int>(a.kind), ":", a.i, ":", a.s, ":");
  key.append(reinterpret_cast<const char*>(&a.f), sizeof a.f);
  for (float f : a.floats) key.append(reinterpret_cast<const char*>(&f), sizeof f);
  absl::StrAppend(&key, ":", absl::StrJoin(a.ints, ","), ":", absl::StrJoin(a.strings, "\x01"));
  for (const Tensor& t : a.tensor) {
    absl::StrAppend(&key, ":", t.Describe(), ":");
    key.append(reinterpret_cast<const char*>(t.raw()), t.bytes());
  }
  return key;
}

}  // namespace

// Nodes that compute the same thing (operator, domain, inputs, attributes, output count) as an
// earlier one: their readers read the earlier one's outputs instead (exports repeat a tensor's
// Shape, Gather and Unsqueeze for every Reshape that needs it). Deterministic operators only;
// a node writing a graph output is kept.
void Rewriter::CommonSubexpressions() {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    if (n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli" ||
        n.op_type == "Multinomial" || n.op_type == "Dropout") {
      continue;
    }
    std::string key = absl::StrCat(n.domain, "\x01", n.op_type, "\x01",
                                   absl::StrJoin(n.inputs, "\x02"), "\x01", n.outputs.size());
    for (const auto& [name, a] : n.attributes)
      absl::StrAppend(&key, "\x03", name, "=", AttributeKey(a));
    auto [it, fresh] = first.emplace(std::move(key), i);
    if (fresh) continue;
    const Node& kept = g_.nodes[it->second];
    const bool output = std::any_of(n.outputs.begin(), n.outputs.end(),
                                    [&](const std::string& o) { return IsGraphOutput(o); });
    if (output) continue;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (!n.outputs[o].empty() && !kept.outputs[o].empty()) Rewire(n.outputs[o], kept.outputs[o]);
    }
    const bool all_rewired =
        std::all_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) {
          return o.empty() || !kept.outputs[static_cast<size_t>(&o - n.outputs.data())].empty();
        });
    if (all_rewired) {
      Remove(&n);
      Applied("common-subexpressions", n, absl::StrCat("reads ", kept.name, "'s outputs"));
    }
  }
}

absl::Status Rewriter::Run() {
  if (report_ != nullptr) report_->nodes_before = static_cast<int64_t>(g_.nodes.size());
  if (absl::Status s = Index(); !s.ok()) return s;
  if (absl::Status s = CheapPass(); !s.ok()) return s;
  const size_t limit = 20 * (g_.nodes.size() + 10);
  for (size_t round = 0; round < limit; ++round) {
    if (!ApplyOne()) break;
    const std::string rule =
        report_ != nullptr && !report_->applied.empty() ? report_->applied.back().rule : "a rule";
    absl::Status s = Commit();
    if (s.ok()) s = Index();
    if (!s.ok()) {
      return absl::InternalError(
          absl::StrCat(rule, " made a graph that does not check: ", s.message()));
    }
  }
  if (report_ != nullptr) report_->nodes_after = static_cast<int64_t>(g_.nodes.size());
  return absl::OkStatus();
}

// The first rule that applies at the first node it applies to.
bool Rewriter::ApplyOne() {
  using Rule = bool (Rewriter::*)(const Node&);
  static const std::vector<std::pair<std::string, Rule>> kRules = {
      {"Identity", &Rewriter::EliminateIdentity},
      {"Cast", &Rewriter::EliminateCast},
      {"", &Rewriter::FoldConstants},
      {"Slice", &Rewriter::FuseSlices},
      {"Transpose", &Rewriter::FuseTransposes},
      {"Softmax", &Rewriter::FuseAttention},
      {"ReduceMean", &Rewriter::FuseLayerNorm},
      {"LayerNormalization", &Rewriter::FuseSkipLayerNorm},
      {"Erf", &Rewriter::FuseGelu},
      {"Tanh", &Rewriter::FuseFastGelu},
      {"MatMul", &Rewriter::FuseMatMulAdd},
      {"Reshape", &Rewriter::FuseReshapes},
      {"Transpose", &Rewriter::SinkTranspose},
      {"BatchNormalization", &Rewriter::FuseConvBn},
      {"", &Rewriter::FuseActivation},
  };
  for (const auto& [op, rule] : kRules) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (!op.empty() && (n.op_type != op || !n.domain.empty())) continue;
      if ((this->*rule)(n)) return true;
    }
  }
  return false;
}

Graph Rewriter::Take() { return std::move(g_); }

}  // namespace rewrite_internal

absl::StatusOr<RewriteTarget> ParseRewriteTarget(std::string_view device) {
  RewriteTarget t;
  if (absl::AsciiStrToLower(std::string(device)) == "cpu") {
    t.name = "cpu";
    return t;
  }
  const hw::GpuModel* gpu = hw::Find(device);
  if (gpu == nullptr || gpu->kind != hw::DeviceKind::kGpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device: \"", std::string(device),
                     "\" is not cpu or an NVIDIA GPU of the catalog "
                     "(`seedance gpus` lists them; e.g. t4, a100, h100, h200)"));
  }
  t.name = gpu->name;
  t.cpu = false;
  t.fused_gemm = false;
  t.conv_other_activations = false;
  return t;
}

absl::StatusOr<Graph> RewriteGraph(const Graph& graph, const RewriteTarget& target,
                                   RewriteReport* report) {
  rewrite_internal::Rewriter rewriter(graph, target, report);
  if (absl::Status s = rewriter.Run(); !s.ok()) return s;
  return rewriter.Take();
}

std::string FusedKind(const Node& node) {
  const std::string& op = node.op_type;
  if (op == "LayerNormalization" || op == "SkipLayerNormalization" ||
      op == "SimplifiedLayerNormalization" || op == "SkipSimplifiedLayerNormalization") {
    return "layernorm";
  }
  if (op == "Gelu" || op == "FastGelu" || op == "BiasGelu") return "gelu";
  if (op == "Attention" || op == "MultiHeadAttention") return "attention";
  if ((op == "Gemm" && node.inputs.size() > 2 && !node.inputs[2].empty()) || op == "FusedGemm") {
    return "matmul-bias";
  }
  if (op == "FusedConv") return "conv-activation";
  return "";
}

std::map<std::string, int64_t> CountFusedKinds(const Graph& graph) {
  std::map<std::string, int64_t> counts = {
      {"layernorm", 0}, {"gelu", 0}, {"attention", 0}, {"matmul-bias", 0}, {"conv-activation", 0}};
  for (const Node& n : graph.nodes) {
    const std::string kind = FusedKind(n);
    if (!kind.empty()) ++counts[kind];
  }
  counts["nodes"] = static_cast<int64_t>(graph.nodes.size());
  return counts;
}

}  // namespace seedance::model
