// The rewriter's attention rules (rewrite.h): slices to one Split, the attention subgraph to
// com.microsoft MultiHeadAttention, and transposes sunk through row-wise products.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rewrite_internal.h"

namespace seedance::model::rewrite_internal {
namespace {

bool Is(const Node* n, const char* op) {
  return n != nullptr && n->domain.empty() && n->op_type == op;
}

std::vector<int64_t> PermOf(const Node& n) {
  auto it = n.attributes.find("perm");
  return it == n.attributes.end() ? std::vector<int64_t>{} : it->second.ints;
}

bool IsTranspose(const Node* n, std::vector<int64_t> perm) {
  return Is(n, "Transpose") && PermOf(*n) == perm;
}

Attribute IntsAttr(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

Node MakeNode(std::string name, std::string op, std::vector<std::string> in,
              std::vector<std::string> out) {
  Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

Tensor Int64s(const std::vector<int64_t>& v) {
  return Tensor::From<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// One Slice's range on one axis: constant starts/ends/axes of one element, steps 1.
struct SliceRange {
  const Node* node = nullptr;
  int64_t axis = 0, start = 0, end = 0;
};

}  // namespace

// --- slices -> Split ----------------------------------------------------------------------------

bool Rewriter::FuseSlices(const Node& n) {
  const std::string& x = n.inputs[0];
  const std::optional<std::vector<int64_t>> shape = StaticShape(x);
  if (!shape || n.inputs.size() < 4 || g_.opset < 13) return false;
  const int64_t rank = static_cast<int64_t>(shape->size());
  std::vector<SliceRange> ranges;
  for (size_t c : Consumers(x)) {
    const Node& s = g_.nodes[c];
    if (!Is(&s, "Slice") || s.inputs[0] != x || s.inputs.size() < 4) continue;
    const Tensor* st = Constant(s.inputs[1]);
    const Tensor* en = Constant(s.inputs[2]);
    const Tensor* ax = Constant(s.inputs[3]);
    const Tensor* step =
        s.inputs.size() > 4 && !s.inputs[4].empty() ? Constant(s.inputs[4]) : nullptr;
    const bool unit = s.inputs.size() <= 4 || s.inputs[4].empty() ||
                      (step != nullptr && step->size() == 1 && step->AsInt64(0) == 1);
    if (st == nullptr || en == nullptr || ax == nullptr || st->size() != 1 || en->size() != 1 ||
        ax->size() != 1 || !unit) {
      return false;
    }
    const int64_t axis = ax->AsInt64(0) < 0 ? ax->AsInt64(0) + rank : ax->AsInt64(0);
    if (axis < 0 || axis >= rank) return false;
    const int64_t dim = (*shape)[static_cast<size_t>(axis)];
    auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
    ranges.push_back({&s, axis, clamp(st->AsInt64(0)), clamp(en->AsInt64(0))});
  }
  if (ranges.size() < 2) return false;
  std::sort(ranges.begin(), ranges.end(),
            [](const SliceRange& a, const SliceRange& b) { return a.start < b.start; });
  const int64_t axis = ranges[0].axis;
  int64_t at = 0;
  std::vector<int64_t> sizes;
  for (const SliceRange& r : ranges) {
    if (r.axis != axis || r.start != at || r.end <= r.start) return false;
    sizes.push_back(r.end - r.start);
    at = r.end;
  }
  if (at != (*shape)[static_cast<size_t>(axis)]) return false;
  Node split = MakeNode(absl::StrCat(ranges[0].node->name, "/Split"), "Split",
                        {x, AddConstant(x + "/splits", Int64s(sizes))}, {});
  split.attributes["axis"].i = axis;
  for (const SliceRange& r : ranges) {
    split.outputs.push_back(r.node->outputs[0]);
    Remove(r.node);
  }
  Applied("fuse-slices", n, absl::StrCat("one Split into ", sizes.size()));
  Add(std::move(split));
  return true;
}

// --- attention ----------------------------------------------------------------------------------

// torch's nn.MultiheadAttention export: q, k, v [S, B, E] -> Reshape [S, B*H, d] -> Transpose
// (q, v: [1,0,2]; k: [1,2,0]) -> q scaled -> MatMul -> (+ mask) -> Softmax -> MatMul v ->
// Transpose [1,0,2] -> Reshape.
struct Rewriter::AttentionMatch {
  std::vector<const Node*> nodes;  // every node the fused form replaces
  std::string q, k, v;             // [S, B, E] each
  std::string mask;                // "" or a constant [S, L] / [1, S, L]
  const Node* out_reshape = nullptr;
  int64_t heads = 0;
  double scale = 1;
};

// Follows `value` up through a Div or Mul by a scalar constant, multiplying `scale`.
std::string Rewriter::Unscaled(const std::string& value, double& scale,
                               std::vector<const Node*>& nodes) const {
  const Node* p = Producer(value);
  if ((!Is(p, "Div") && !Is(p, "Mul")) || OnlyConsumer(value) == nullptr) return value;
  const std::optional<double> c = ScalarConstant(p->inputs[1]);
  if (!c || *c == 0 || !std::isfinite(*c)) return value;
  scale *= p->op_type == "Div" ? 1 / *c : *c;
  nodes.push_back(p);
  return p->inputs[0];
}

// The [S, B, E] input of a head split (Reshape [S, B*H, d] then Transpose `perm`) ending at
// `value`, or "" with `why`.
std::string Rewriter::HeadInput(const std::string& value, const std::vector<int64_t>& perm,
                                AttentionMatch& m, std::string& why) const {
  const Node* t = Producer(value);
  if (!IsTranspose(t, perm) || OnlyConsumer(value) == nullptr) {
    why = absl::StrCat("a head split is not a Transpose [", absl::StrJoin(perm, ","), "]");
    return "";
  }
  const Node* r = Producer(t->inputs[0]);
  const std::optional<std::vector<int64_t>> in =
      r == nullptr ? std::nullopt : StaticShape(r->inputs[0]);
  const std::optional<std::vector<int64_t>> out = StaticShape(t->inputs[0]);
  if (!Is(r, "Reshape") || OnlyConsumer(t->inputs[0]) == nullptr || !in || !out ||
      in->size() != 3 || out->size() != 3) {
    why = "dynamic shapes, or a head split that is not a Reshape of a 3-D tensor";
    return "";
  }
  // [S, B, E] -> [S, B*H, d]: the same S, and B*H*d == B*E with H whole.
  const int64_t s = (*in)[0], b = (*in)[1], e = (*in)[2];
  if ((*out)[0] != s || (*out)[1] % b != 0 || (*out)[1] / b * (*out)[2] != e) {
    why = absl::StrCat("the head split [", absl::StrJoin(*in, ","), "] -> [",
                       absl::StrJoin(*out, ","), "] does not keep rows and split columns by head");
    return "";
  }
  const int64_t heads = (*out)[1] / b;
  if (m.heads != 0 && m.heads != heads) {
    why = "query, key and value are split into different numbers of heads";
    return "";
  }
  m.heads = heads;
  m.nodes.push_back(t);
  m.nodes.push_back(r);
  return r->inputs[0];
}

std::optional<std::string> Rewriter::MatchAttention(const Node& sm, AttentionMatch& m) const {
  std::string scores = sm.inputs[0];
  const Node* mm2 = OnlyConsumer(sm.outputs[0]);
  const int rank = RankOf(scores);
  const Node* first = Producer(scores);
  if (!Is(mm2, "MatMul") || mm2->inputs[0] != sm.outputs[0] || rank != 3) return "";
  if (!(Is(first, "MatMul") || Is(first, "Add") || Is(first, "Div") || Is(first, "Mul"))) return "";
  const int64_t axis = [&] {
    auto it = sm.attributes.find("axis");
    return it == sm.attributes.end() ? (g_.opset >= 13 ? -1 : 1) : it->second.i;
  }();
  if (axis != -1 && axis != rank - 1) return "the softmax is not over the last axis";
  m.nodes = {&sm, mm2};
  if (const Node* add = Producer(scores); Is(add, "Add") && OnlyConsumer(scores) != nullptr) {
    const bool left = Constant(add->inputs[0]) != nullptr;
    m.mask = add->inputs[left ? 0 : 1];
    if (Constant(m.mask) == nullptr) return "the added mask is not a constant";
    scores = add->inputs[left ? 1 : 0];
    m.nodes.push_back(add);
  }
  scores = Unscaled(scores, m.scale, m.nodes);
  const Node* mm1 = Producer(scores);
  if (!Is(mm1, "MatMul") || OnlyConsumer(scores) == nullptr) return "the scores are not Q K^T";
  m.nodes.push_back(mm1);
  const std::string qh = Unscaled(mm1->inputs[0], m.scale, m.nodes);
  std::string why;
  m.q = HeadInput(qh, {1, 0, 2}, m, why);
  if (m.q.empty()) return why;
  m.k = HeadInput(mm1->inputs[1], {1, 2, 0}, m, why);
  if (m.k.empty()) return why;
  m.v = HeadInput(mm2->inputs[1], {1, 0, 2}, m, why);
  if (m.v.empty()) return why;
  const Node* to = OnlyConsumer(mm2->outputs[0]);
  m.out_reshape = to == nullptr ? nullptr : OnlyConsumer(to->outputs[0]);
  if (!IsTranspose(to, {1, 0, 2}) || !Is(m.out_reshape, "Reshape")) {
    return "the heads are not merged back by Transpose [1,0,2] and Reshape";
  }
  m.nodes.push_back(to);
  m.nodes.push_back(m.out_reshape);
  return std::nullopt;
}

// The mask as attention_bias [1, 1, S, L], or "" when it is not one mask for every batch and
// head.
std::string Rewriter::AttentionBias(const AttentionMatch& m, const Node& anchor) {
  if (m.mask.empty()) return "";
  const Tensor& mask = *Constant(m.mask);
  const std::optional<std::vector<int64_t>> q = StaticShape(m.q);
  const std::optional<std::vector<int64_t>> k = StaticShape(m.k);
  const int64_t s = (*q)[0], l = (*k)[0];
  const bool shared = mask.size() == s * l && mask.rank() >= 2 && mask.dim(mask.rank() - 1) == l &&
                      mask.dim(mask.rank() - 2) == s && mask.type() == DataType::kFloat;
  if (!shared) return "";
  return AddConstant(absl::StrCat(anchor.name, "/attention_bias"), mask.Reshaped({1, 1, s, l}));
}

bool Rewriter::FuseAttention(const Node& n) {
  AttentionMatch m;
  const std::optional<std::string> refused = MatchAttention(n, m);
  const char* rule = "fuse-attention";
  if (refused.has_value()) return refused->empty() ? false : Refuse(rule, n, *refused);
  if (TypeOf(m.q) != DataType::kFloat) return Refuse(rule, n, "not float");
  const std::string bias = AttentionBias(m, n);
  if (!m.mask.empty() && bias.empty()) {
    return Refuse(rule, n, "the mask differs between batches or heads (not one [S, L] mask)");
  }
  // [S, B, E] -> [B, S, E]: one Transpose before a Split the three come from, else one each.
  std::vector<std::string> bse;
  const Node* split = Producer(m.q);
  const bool one_split = Is(split, "Split") && split->outputs.size() == 3 &&
                         split->outputs[0] == m.q && split->outputs[1] == m.k &&
                         split->outputs[2] == m.v && !IsGraphOutput(m.q) && !IsGraphOutput(m.k) &&
                         !IsGraphOutput(m.v);
  if (one_split) {
    Node t = MakeNode(absl::StrCat(n.name, "/ToBatchFirst"), "Transpose", {split->inputs[0]},
                      {NewName(split->inputs[0] + "/bse")});
    t.attributes["perm"] = IntsAttr({1, 0, 2});
    Node s = *split;
    s.name = absl::StrCat(split->name, "/BatchFirst");
    s.inputs[0] = t.outputs[0];
    s.outputs = {NewName(m.q + "/bse"), NewName(m.k + "/bse"), NewName(m.v + "/bse")};
    bse = s.outputs;
    Remove(split);
    Add(std::move(t));
    Add(std::move(s));
  } else {
    for (const std::string& in : {m.q, m.k, m.v}) {
      Node t = MakeNode(absl::StrCat(n.name, "/ToBatchFirst/", bse.size()), "Transpose", {in},
                        {NewName(in + "/bse")});
      t.attributes["perm"] = IntsAttr({1, 0, 2});
      bse.push_back(t.outputs[0]);
      Add(std::move(t));
    }
  }
  Node mha = MakeNode(absl::StrCat(n.name, "/MultiHeadAttention"), "MultiHeadAttention",
                      {bse[0], bse[1], bse[2]}, {NewName(n.outputs[0] + "/attention")});
  mha.domain = kMicrosoftDomain;
  if (!bias.empty()) mha.inputs.insert(mha.inputs.end(), {"", "", bias});
  mha.attributes["num_heads"].i = m.heads;
  mha.attributes["scale"].kind = Attribute::Kind::kFloat;
  mha.attributes["scale"].f = static_cast<float>(m.scale);
  Node back = MakeNode(absl::StrCat(n.name, "/ToSequenceFirst"), "Transpose", {mha.outputs[0]},
                       {NewName(n.outputs[0] + "/sbe")});
  back.attributes["perm"] = IntsAttr({1, 0, 2});
  Node merge = *m.out_reshape;
  merge.inputs[0] = back.outputs[0];
  for (const Node* p : m.nodes) Remove(p);
  Applied(rule, n,
          absl::StrCat("MultiHeadAttention (", m.heads, " heads, scale ", m.scale,
                       bias.empty() ? "" : ", the mask as attention_bias", ")"));
  Add(std::move(mha));
  Add(std::move(back));
  Add(std::move(merge));
  return true;
}

// --- transposes sunk through row-wise products --------------------------------------------------

// Transpose [1,0,2] of a [d0, d1, E], Reshape to [d1*d0, E], row-wise nodes (Gemm or FusedGemm of
// constant weights, Relu, Gelu), Reshape to [d1, d0, N], Transpose [1,0,2]: the rows are only
// reordered and put back, so the two Transposes go and the Reshapes use [d0*d1, .] and
// [d0, d1, N].
bool Rewriter::SinkTranspose(const Node& n) {
  if (PermOf(n) != std::vector<int64_t>{1, 0, 2}) return false;
  const std::optional<std::vector<int64_t>> a = StaticShape(n.inputs[0]);
  const Node* r1 = OnlyConsumer(n.outputs[0]);
  const std::optional<std::vector<int64_t>> flat =
      r1 == nullptr ? std::nullopt : StaticShape(r1->outputs[0]);
  if (!a || a->size() != 3 || !Is(r1, "Reshape") || !flat ||
      *flat != std::vector<int64_t>{(*a)[0] * (*a)[1], (*a)[2]}) {
    return false;
  }
  std::string cur = r1->outputs[0];
  int row_wise = 0;
  for (const Node* c = OnlyConsumer(cur); c != nullptr; c = OnlyConsumer(cur)) {
    const bool gemm = (c->op_type == "Gemm" && c->domain.empty()) ||
                      (c->op_type == "FusedGemm" && c->domain == kMicrosoftDomain);
    const bool act = Is(c, "Relu") || (c->op_type == "Gelu" && c->domain == kMicrosoftDomain);
    const Tensor* bias =
        gemm && c->inputs.size() > 2 && !c->inputs[2].empty() ? Constant(c->inputs[2]) : nullptr;
    const bool row_bias = gemm && (c->inputs.size() < 3 || c->inputs[2].empty() ||
                                   (bias != nullptr && bias->rank() <= 1));
    auto ta = c->attributes.find("transA");
    const bool plain = ta == c->attributes.end() || ta->second.i == 0;
    if (!((gemm && c->inputs[0] == cur && plain && Constant(c->inputs[1]) && row_bias) || act))
      break;
    cur = c->outputs[0];
    ++row_wise;
  }
  const Node* r2 = OnlyConsumer(cur);
  const std::optional<std::vector<int64_t>> back =
      r2 == nullptr ? std::nullopt : StaticShape(r2->outputs[0]);
  const std::optional<std::vector<int64_t>> rows = StaticShape(cur);
  const Node* t2 = r2 == nullptr ? nullptr : OnlyConsumer(r2->outputs[0]);
  if (row_wise == 0 || !Is(r2, "Reshape") || !back || !rows || rows->size() != 2 ||
      *back != std::vector<int64_t>{(*a)[1], (*a)[0], (*rows)[1]} || !IsTranspose(t2, {1, 0, 2})) {
    return false;
  }
  Node first = *r1;
  first.inputs = {n.inputs[0],
                  AddConstant(r1->name + "/rows", Int64s({(*a)[0] * (*a)[1], (*a)[2]}))};
  Node last = *r2;
  last.inputs = {cur, AddConstant(r2->name + "/rows", Int64s({(*a)[0], (*a)[1], (*rows)[1]}))};
  last.outputs = {t2->outputs[0]};
  for (const Node* p : {&n, r1, r2, t2}) Remove(p);
  Applied("sink-transposes", n,
          absl::StrCat("two Transposes around ", row_wise, " row-wise nodes"));
  Add(std::move(first));
  Add(std::move(last));
  return true;
}

}  // namespace seedance::model::rewrite_internal
