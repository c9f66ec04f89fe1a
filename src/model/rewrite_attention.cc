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
  const int64_t rank = RankOf(x);
  if (rank < 1 || n.inputs.size() < 4) return false;
  const std::vector<int64_t>& shape = info_.at(x).shape;  // -1 on a dynamic axis
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
    const int64_t dim = shape[static_cast<size_t>(axis)];
    if (dim < 0) return false;  // only a fixed axis is split
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
  if (at != shape[static_cast<size_t>(axis)]) return false;
  // The sizes are an input from opset 13 on, an attribute before.
  Node split = MakeNode(absl::StrCat(ranges[0].node->name, "/Split"), "Split", {x}, {});
  if (g_.opset >= 13) {
    split.inputs.push_back(AddConstant(x + "/splits", Int64s(sizes)));
  } else {
    split.attributes["split"] = Attribute::Ints(sizes);
  }
  split.attributes["axis"] = Attribute::Int(axis);
  for (const SliceRange& r : ranges) {
    split.outputs.push_back(r.node->outputs[0]);
    Remove(r.node);
  }
  Applied("fuse-slices", n, absl::StrCat("one Split into ", sizes.size()));
  Add(std::move(split));
  return true;
}

// --- attention ----------------------------------------------------------------------------------

// Two layouts. torch's nn.MultiheadAttention export: q, k, v [S, B, E] -> Reshape [S, B*H, d] ->
// Transpose (q, v: [1,0,2]; k: [1,2,0]) -> q scaled -> MatMul -> (+ constant mask) -> Softmax ->
// MatMul v -> Transpose [1,0,2] -> Reshape. Hugging Face's (BERT, GPT-2): q, k, v [B, S, E] ->
// Reshape [B, S, H, d] -> Transpose (q, v: [0,2,1,3]; k: [0,2,3,1]) -> MatMul -> scaled ->
// (+ mask, constant or computed, broadcast to [B, H, S, L]) -> Softmax -> MatMul v -> Transpose
// [0,2,1,3] -> Reshape.
struct Rewriter::AttentionMatch {
  std::vector<const Node*> nodes;  // every node the fused form replaces
  std::string q, k, v;             // [S, B, E] each ([B, S, E] when batch_first)
  std::string mask;                // "" or the added mask
  std::string where_cond;          // "" or Where(cond, scores, fill)'s constant condition
  float where_fill = 0;            // its fill: -inf, or at most -1e30
  bool batch_first = false;        // heads as [B, H, S, d] (Hugging Face), else [B*H, S, d]
  const Node* out_reshape = nullptr;
  int64_t heads = 0;
  double scale = 1;
};

// True when `value` is a MatMul's output, or one reached from it through a Div or Mul by a
// constant or a Where's chosen input (a few steps).
// The value of a 1-element tensor `v` = Unsqueeze(Gather(Shape(u), i)) [* or / by a constant]
// when dimension i of u is provably dimension `axis` of `of`: the scale applied (1 when none), or
// 0 when `v` is not such a tensor.
double Rewriter::DimensionOf(const std::string& v, const std::string& of, size_t axis) const {
  const Node* unsqueeze = Producer(v);
  if (!Is(unsqueeze, "Unsqueeze")) return 0;
  std::string x = unsqueeze->inputs[0];
  double scale = 1;
  // (shapes are int64: a one-element constant of any number type)
  auto number = [&](const std::string& name) -> std::optional<double> {
    const Tensor* t = Constant(name);
    if (t == nullptr || t->size() != 1) return std::nullopt;
    return t->AsDouble(0);
  };
  if (const Node* op = Producer(x); Is(op, "Mul") || Is(op, "Div")) {
    const bool left = number(op->inputs[0]).has_value() && op->op_type == "Mul";
    const std::optional<double> c = number(op->inputs[left ? 0 : 1]);
    if (!c || *c <= 0) return 0;
    scale = op->op_type == "Mul" ? *c : 1 / *c;
    x = op->inputs[left ? 1 : 0];
  }
  const Node* gather = Producer(x);
  const Node* shape = gather == nullptr ? nullptr : Producer(gather->inputs[0]);
  const Tensor* index =
      gather == nullptr || gather->inputs.size() < 2 ? nullptr : Constant(gather->inputs[1]);
  if (!Is(gather, "Gather") || !Is(shape, "Shape") || index == nullptr || index->size() != 1 ||
      shape->attributes.count("start") || shape->attributes.count("end")) {
    return 0;
  }
  const int64_t i = index->AsInt64(0);
  if (i < 0 || !SameDim(shape->inputs[0], static_cast<size_t>(i), of, axis)) return 0;
  return scale;
}

// The heads of a head split [S, B, E] -> [S, B*H, d] whose shape is computed at run time, as
// torch exports it with dynamic axes: Concat(Unsqueeze(S), Unsqueeze(B * H), [d]) with S and B
// read off tensors of provably those dimensions, H and d constants, H * d = E. 0 when not.
int64_t Rewriter::DynamicHeads(const Node& reshape, const std::string& in, int64_t e) const {
  const Node* concat = Producer(reshape.inputs[1]);
  if (!Is(concat, "Concat") || concat->inputs.size() != 3) return 0;
  const Tensor* d = Constant(concat->inputs[2]);
  if (d == nullptr || d->size() != 1 || d->AsInt64(0) <= 0 || e % d->AsInt64(0) != 0) return 0;
  const int64_t heads = e / d->AsInt64(0);
  if (DimensionOf(concat->inputs[0], in, 0) != 1.0) return 0;
  if (DimensionOf(concat->inputs[1], in, 1) != static_cast<double>(heads)) return 0;
  return heads;
}

bool Rewriter::FromProduct(const std::string& value) const {
  std::string v = value;
  for (int step = 0; step < 4; ++step) {
    const Node* p = Producer(v);
    if (Is(p, "MatMul")) return true;
    if (Is(p, "Where")) {
      v = p->inputs[1];
    } else if ((Is(p, "Div") || Is(p, "Mul")) && ScalarConstant(p->inputs[1])) {
      v = p->inputs[0];
    } else {
      return false;
    }
  }
  return false;
}

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

// The 3-D input of a head split ending at `value` (Reshape [S, B, E] -> [S, B*H, d], or
// [B, S, E] -> [B, S, H, d], then Transpose `perm`), or "" with `why`.
std::string Rewriter::HeadInput(const std::string& value, const std::vector<int64_t>& perm,
                                AttentionMatch& m, std::string& why) const {
  // The Transpose and Reshape may have other readers (a tensor split into heads once for two
  // of q, k, v): they are not removed here, and go with the dead nodes once nothing reads them.
  const Node* t = Producer(value);
  if (!IsTranspose(t, perm)) {
    why = absl::StrCat("a head split is not a Transpose [", absl::StrJoin(perm, ","), "]");
    return "";
  }
  const Node* r = Producer(t->inputs[0]);
  const std::string in_value = r == nullptr ? "" : r->inputs[0];
  const std::string& out_value = t->inputs[0];
  if (!Is(r, "Reshape") || RankOf(in_value) != 3 ||
      RankOf(out_value) != static_cast<int>(perm.size())) {
    why = "a head split that is not a Reshape of a 3-D tensor of known rank";
    return "";
  }
  // Heads split the last axis; the others keep their sizes (fixed, or the same symbolic name).
  const std::optional<int64_t> e = LastDim(in_value);
  auto dim = [&](size_t d) {
    auto it = info_.find(out_value);
    return it->second.shape[d];
  };
  int64_t heads = 0;
  if (perm.size() == 3) {  // [S, B, E] -> [S, B*H, d]: fixed sizes only (B*H is a product)
    const std::optional<std::vector<int64_t>> in = StaticShape(in_value);
    const std::optional<std::vector<int64_t>> out = StaticShape(out_value);
    const int64_t b = in ? (*in)[1] : 0;
    if (in && out && b > 0 && (*out)[0] == (*in)[0] && (*out)[1] % b == 0 &&
        (*out)[1] / b * (*out)[2] == (*in)[2]) {
      heads = (*out)[1] / b;
    } else if (e) {
      heads = DynamicHeads(*r, in_value, *e);
    }
  } else if (e && dim(2) > 0 && dim(3) > 0 && dim(2) * dim(3) == *e &&
             SameDim(in_value, 0, out_value, 0) && SameDim(in_value, 1, out_value, 1)) {
    heads = dim(2);  // [B, S, E] -> [B, S, H, d]
  }
  if (heads == 0) {
    why = absl::StrCat("the head split ", ShapeText(in_value), " -> ", ShapeText(out_value),
                       " does not provably keep rows and split columns by head");
    return "";
  }
  if (m.heads != 0 && m.heads != heads) {
    why = "query, key and value are split into different numbers of heads";
    return "";
  }
  m.heads = heads;
  return r->inputs[0];
}

std::optional<std::string> Rewriter::MatchAttention(const Node& sm, AttentionMatch& m) const {
  std::string scores = sm.inputs[0];
  const Node* mm2 = OnlyConsumer(sm.outputs[0]);
  const int rank = RankOf(scores);
  const Node* first = Producer(scores);
  if (!Is(mm2, "MatMul") || mm2->inputs[0] != sm.outputs[0] || (rank != 3 && rank != 4)) return "";
  m.batch_first = rank == 4;
  if (!(Is(first, "MatMul") || Is(first, "Add") || Is(first, "Div") || Is(first, "Mul") ||
        Is(first, "Where"))) {
    return "";
  }
  const int64_t axis = [&] {
    auto it = sm.attributes.find("axis");
    return it == sm.attributes.end() ? (g_.opset >= 13 ? -1 : 1) : it->second.i;
  }();
  if (axis != -1 && axis != rank - 1) return "the softmax is not over the last axis";
  m.nodes = {&sm, mm2};
  if (const Node* add = Producer(scores); Is(add, "Add") && OnlyConsumer(scores) != nullptr) {
    // The mask is the operand that does not come from Q K^T (through a scale or a Where): a
    // constant, or (Hugging Face's layout) a value computed from the inputs.
    const bool left_is_mask = !FromProduct(add->inputs[0]);
    m.mask = add->inputs[left_is_mask ? 0 : 1];
    if (Constant(m.mask) == nullptr && !m.batch_first) return "the added mask is not a constant";
    scores = add->inputs[left_is_mask ? 1 : 0];
    m.nodes.push_back(add);
  }
  // A causal mask as GPT-2 writes it: Where(constant condition, scores, -inf or the float
  // minimum). Equal to scores + (cond ? 0 : fill): where cond holds, s + 0 = s; elsewhere
  // s + fill rounds to fill whenever |s| < 1e30 (half an ulp of 3.4e38 is 2^103), and -inf stays
  // -inf; either way the softmax gives those keys no weight.
  if (const Node* w = Producer(scores); Is(w, "Where") && OnlyConsumer(scores) != nullptr) {
    const Tensor* cond = Constant(w->inputs[0]);
    const std::optional<double> fill = ScalarConstant(w->inputs[2]);
    if (cond == nullptr || cond->type() != DataType::kBool || !fill || !(*fill <= -1e30)) {
      return "a Where before the softmax that is not a constant condition with a fill of -inf "
             "or at most -1e30";
    }
    m.where_cond = w->inputs[0];
    m.where_fill = static_cast<float>(*fill);
    scores = w->inputs[1];
    m.nodes.push_back(w);
  }
  scores = Unscaled(scores, m.scale, m.nodes);
  const Node* mm1 = Producer(scores);
  if (!Is(mm1, "MatMul") || OnlyConsumer(scores) == nullptr) return "the scores are not Q K^T";
  m.nodes.push_back(mm1);
  const std::string qh = Unscaled(mm1->inputs[0], m.scale, m.nodes);
  std::string why;
  const std::vector<int64_t> qv_perm =
      m.batch_first ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{1, 0, 2};
  const std::vector<int64_t> k_perm =
      m.batch_first ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{1, 2, 0};
  m.q = HeadInput(qh, qv_perm, m, why);
  if (m.q.empty()) return why;
  m.k = HeadInput(mm1->inputs[1], k_perm, m, why);
  if (m.k.empty()) return why;
  m.v = HeadInput(mm2->inputs[1], qv_perm, m, why);
  if (m.v.empty()) return why;
  const Node* to = OnlyConsumer(mm2->outputs[0]);
  m.out_reshape = to == nullptr ? nullptr : OnlyConsumer(to->outputs[0]);
  if (!IsTranspose(to, qv_perm) || !Is(m.out_reshape, "Reshape")) {
    return absl::StrCat("the heads are not merged back by Transpose [", absl::StrJoin(qv_perm, ","),
                        "] and Reshape");
  }
  m.nodes.push_back(to);
  m.nodes.push_back(m.out_reshape);
  return std::nullopt;
}

// The Where mask as a constant [1, 1, S, L] bias (0 where the condition holds, the fill
// elsewhere), or "" when there is none or its condition is not one [S, L] for every batch and head.
std::string Rewriter::WhereBias(const AttentionMatch& m, const Node& anchor, int64_t s, int64_t l) {
  if (m.where_cond.empty()) return "";
  const Tensor& cond = *Constant(m.where_cond);
  if (cond.size() != s * l || cond.rank() < 2 || cond.dim(cond.rank() - 1) != l ||
      cond.dim(cond.rank() - 2) != s) {
    return "";
  }
  std::vector<float> bias(static_cast<size_t>(s * l));
  for (int64_t i = 0; i < s * l; ++i)
    bias[static_cast<size_t>(i)] = cond.AsDouble(i) != 0 ? 0.0f : m.where_fill;
  return AddConstant(absl::StrCat(anchor.name, "/causal_bias"),
                     Tensor::From<float>({1, 1, s, l}, bias));
}

// The mask as MultiHeadAttention's attention_bias ([B or 1, H or 1, S, L]): one constant [S, L]
// mask as [1, 1, S, L]; in the batch-first layout, a mask of fixed shape [B or 1, H or 1, S or 1,
// L] as it is, expanded along S when it has 1 there (onnxruntime wants S); a Where mask as its
// constant bias, added to the other mask when there is one. "" when there is no mask; `ok` false
// when a mask is there but none of these.
std::string Rewriter::AttentionBias(const AttentionMatch& m, const Node& anchor, bool& ok) {
  ok = true;
  if (m.mask.empty() && m.where_cond.empty()) return "";
  const size_t bq = m.batch_first ? 0 : 1, sq = m.batch_first ? 1 : 0, lk = m.batch_first ? 1 : 0;
  auto dim = [&](const std::string& v, size_t d) -> int64_t {
    auto it = info_.find(v);
    return it == info_.end() || !it->second.has_shape || d >= it->second.shape.size()
               ? -1
               : it->second.shape[d];
  };
  const int64_t s = dim(m.q, sq), l = dim(m.k, lk);  // -1: not fixed
  const std::string causal = s >= 0 && l >= 0 ? WhereBias(m, anchor, s, l) : "";
  if (!m.where_cond.empty() && causal.empty()) ok = false;
  if (m.mask.empty() || !ok) return causal;
  std::string mask;
  if (const Tensor* c = Constant(m.mask); c != nullptr) {
    if (s >= 0 && l >= 0 && c->size() == s * l && c->rank() >= 2 && c->dim(c->rank() - 1) == l &&
        c->dim(c->rank() - 2) == s && c->type() == DataType::kFloat) {
      mask = AddConstant(absl::StrCat(anchor.name, "/attention_bias"), c->Reshaped({1, 1, s, l}));
    }
  } else if (m.batch_first && RankOf(m.mask) == 4 && TypeOf(m.mask) == DataType::kFloat) {
    // [B or 1, H or 1, S or 1, L], each provably (a fixed size or the same symbolic name).
    const bool fits = (dim(m.mask, 0) == 1 || SameDim(m.mask, 0, m.q, bq)) &&
                      (dim(m.mask, 1) == 1 || dim(m.mask, 1) == m.heads) &&
                      (dim(m.mask, 2) == 1 || SameDim(m.mask, 2, m.q, sq)) &&
                      SameDim(m.mask, 3, m.k, lk);
    if (fits) {
      mask = dim(m.mask, 2) == 1 && causal.empty() ? ExpandAlongS(m, anchor) : m.mask;
    }
  }
  if (mask.empty()) {
    ok = false;
    if (!causal.empty()) g_.initializers.erase(causal);  // nothing of a refused match stays
    return "";
  }
  if (causal.empty()) return mask;
  Node sum = MakeNode(absl::StrCat(anchor.name, "/CausalAndMask"), "Add", {causal, mask},
                      {NewName(m.mask + "/with_causal")});
  std::string out = sum.outputs[0];
  Add(std::move(sum));
  return out;
}

// The mask [d0, d1, 1, L] expanded to [d0, d1, S, L] (onnxruntime wants S in attention_bias):
// with a constant shape when everything is fixed, else with the shape read at run time (S from
// the query's shape, the rest from the mask's own).
std::string Rewriter::ExpandAlongS(const AttentionMatch& m, const Node& anchor) {
  const std::optional<std::vector<int64_t>> d = StaticShape(m.mask);
  const std::optional<std::vector<int64_t>> q = StaticShape(m.q);
  std::string shape;
  if (d && q) {
    shape = AddConstant(anchor.name + "/mask_shape", Int64s({(*d)[0], (*d)[1], (*q)[1], (*d)[3]}));
  } else {
    auto slice = [&](const std::string& of, int64_t from, int64_t to, const char* what) {
      Node n = MakeNode(absl::StrCat(anchor.name, "/", what), "Slice",
                        {of, AddConstant(anchor.name + "/from", Int64s({from})),
                         AddConstant(anchor.name + "/to", Int64s({to}))},
                        {NewName(absl::StrCat(anchor.name, "/", what))});
      std::string out = n.outputs[0];
      Add(std::move(n));
      return out;
    };
    Node mask_shape = MakeNode(absl::StrCat(anchor.name, "/MaskShape"), "Shape", {m.mask},
                               {NewName(anchor.name + "/mask_shape")});
    Node query_shape = MakeNode(absl::StrCat(anchor.name, "/QueryShape"), "Shape", {m.q},
                                {NewName(anchor.name + "/query_shape")});
    const std::string ms = mask_shape.outputs[0], qs = query_shape.outputs[0];
    Add(std::move(mask_shape));
    Add(std::move(query_shape));
    Node concat = MakeNode(
        absl::StrCat(anchor.name, "/BiasShape"), "Concat",
        {slice(ms, 0, 2, "batch_heads"), slice(qs, 1, 2, "queries"), slice(ms, 3, 4, "keys")},
        {NewName(anchor.name + "/bias_shape")});
    concat.attributes["axis"] = Attribute::Int(0);
    shape = concat.outputs[0];
    Add(std::move(concat));
  }
  Node expand = MakeNode(absl::StrCat(anchor.name, "/ExpandMask"), "Expand", {m.mask, shape},
                         {NewName(m.mask + "/expanded")});
  std::string out = expand.outputs[0];
  Add(std::move(expand));
  return out;
}

bool Rewriter::FuseAttention(const Node& n) {
  AttentionMatch m;
  const std::optional<std::string> refused = MatchAttention(n, m);
  const char* rule = "fuse-attention";
  if (refused.has_value()) return refused->empty() ? false : Refuse(rule, n, *refused);
  if (TypeOf(m.q) != DataType::kFloat) return Refuse(rule, n, "not float");
  bool bias_ok = true;
  const std::string bias = AttentionBias(m, n, bias_ok);
  if (!bias_ok) {
    return Refuse(rule, n,
                  "the mask does not broadcast to [B, H, S, L] as attention_bias can "
                  "(a constant: one [S, L] mask; computed: a fixed [B|1, H|1, S|1, L]; "
                  "dynamic shapes: no mask can be sized)");
  }
  if (m.batch_first) return EmitBatchFirstAttention(n, m, bias);
  // [S, B, E] -> [B, S, E]: one Transpose before a Split the three come from, else one each.
  std::vector<std::string> bse;
  const Node* split = Producer(m.q);
  auto split_axis = [&] {
    auto it = split->attributes.find("axis");
    return it == split->attributes.end() ? 0 : it->second.i;
  };
  // (the split must be along the last axis, which the Transpose before it keeps last)
  const bool one_split = Is(split, "Split") && (split_axis() == 2 || split_axis() == -1) &&
                         split->outputs.size() == 3 && split->outputs[0] == m.q &&
                         split->outputs[1] == m.k && split->outputs[2] == m.v &&
                         !IsGraphOutput(m.q) && !IsGraphOutput(m.k) && !IsGraphOutput(m.v);
  if (one_split) {
    Node t = MakeNode(absl::StrCat(n.name, "/ToBatchFirst"), "Transpose", {split->inputs[0]},
                      {NewName(split->inputs[0] + "/bse")});
    t.attributes["perm"] = Attribute::Ints({1, 0, 2});
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
      t.attributes["perm"] = Attribute::Ints({1, 0, 2});
      bse.push_back(t.outputs[0]);
      Add(std::move(t));
    }
  }
  Node mha = MakeNode(absl::StrCat(n.name, "/MultiHeadAttention"), "MultiHeadAttention",
                      {bse[0], bse[1], bse[2]}, {NewName(n.outputs[0] + "/attention")});
  mha.domain = kMicrosoftDomain;
  if (!bias.empty()) mha.inputs.insert(mha.inputs.end(), {"", "", bias});
  mha.attributes["num_heads"] = Attribute::Int(m.heads);
  mha.attributes["scale"] = Attribute::Float(static_cast<float>(m.scale));
  Node back = MakeNode(absl::StrCat(n.name, "/ToSequenceFirst"), "Transpose", {mha.outputs[0]},
                       {NewName(n.outputs[0] + "/sbe")});
  back.attributes["perm"] = Attribute::Ints({1, 0, 2});
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

// q, k, v already [B, S, E]: MultiHeadAttention straight on them, its [B, S, E] output reshaped
// as the heads were.
bool Rewriter::EmitBatchFirstAttention(const Node& n, const AttentionMatch& m,
                                       const std::string& bias) {
  Node mha = MakeNode(absl::StrCat(n.name, "/MultiHeadAttention"), "MultiHeadAttention",
                      {m.q, m.k, m.v}, {NewName(n.outputs[0] + "/attention")});
  mha.domain = kMicrosoftDomain;
  if (!bias.empty()) mha.inputs.insert(mha.inputs.end(), {"", "", bias});
  mha.attributes["num_heads"] = Attribute::Int(m.heads);
  mha.attributes["scale"] = Attribute::Float(static_cast<float>(m.scale));
  Node merge = *m.out_reshape;
  merge.inputs[0] = mha.outputs[0];
  for (const Node* p : m.nodes) Remove(p);
  Applied("fuse-attention", n,
          absl::StrCat("MultiHeadAttention (", m.heads, " heads, scale ", m.scale,
                       bias.empty() ? "" : ", the mask as attention_bias", ")"));
  Add(std::move(mha));
  Add(std::move(merge));
  return true;
}

// Transpose of a Transpose: one Transpose of the two permutations composed, or none when they
// cancel. The inner one stays while something else reads it.
bool Rewriter::FuseTransposes(const Node& n) {
  const Node* inner = Producer(n.inputs[0]);
  if (!Is(inner, "Transpose")) return false;
  const std::vector<int64_t> p1 = PermOf(*inner), p2 = PermOf(n);
  if (p1.empty() || p1.size() != p2.size()) return false;  // a default (reversing) perm: leave it
  std::vector<int64_t> perm(p2.size());
  bool identity = true;
  for (size_t i = 0; i < p2.size(); ++i) {
    if (p2[i] < 0 || p2[i] >= static_cast<int64_t>(p1.size())) return false;
    perm[i] = p1[static_cast<size_t>(p2[i])];
    identity = identity && perm[i] == static_cast<int64_t>(i);
  }
  if (identity && IsGraphOutput(n.outputs[0])) return false;
  if (identity) {
    Rewire(n.outputs[0], inner->inputs[0]);
  } else {
    Node one = n;
    one.inputs[0] = inner->inputs[0];
    one.attributes["perm"] = Attribute::Ints(perm);
    Add(std::move(one));
  }
  if (OnlyConsumer(n.inputs[0]) == &n) Remove(inner);
  Remove(&n);
  Applied("fuse-transposes", n,
          identity ? "two Transposes that cancel removed"
                   : absl::StrCat("one Transpose [", absl::StrJoin(perm, ","), "]"));
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
    const bool act = Is(c, "Relu") || ((c->op_type == "Gelu" || c->op_type == "FastGelu") &&
                                       c->domain == kMicrosoftDomain && c->inputs.size() == 1);
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
