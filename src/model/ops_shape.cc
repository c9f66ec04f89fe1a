// Kernels that move elements without computing on them: Reshape, Transpose, Concat, Split, Slice,
// Gather, GatherElements, Unsqueeze, Squeeze, Shape, Size, Flatten, Expand, Tile, Trilu,
// ConstantOfShape, Range, Identity, Dropout (inference), Constant, DepthToSpace, SpaceToDepth.
//
// They copy raw bytes of ElementSize(type), so every element type a Tensor holds works unchanged
// (bool and the 16-bit floats included); only Range and Dropout's mask look at values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ops.h"
#include "seedance/base/check.h"

namespace seedance::model::ops {
namespace {

// Local to this file; undefined at its end.
// Assigns the value of the StatusOr `expr` to the existing `lhs`, or returns its error.
#define SHAPE_OPS_CONCAT_INNER(a, b) a##b
#define SHAPE_OPS_CONCAT(a, b) SHAPE_OPS_CONCAT_INNER(a, b)
#define SHAPE_OPS_ASSIGN_OR_RETURN(lhs, expr) \
  SHAPE_OPS_ASSIGN_OR_RETURN_IMPL(SHAPE_OPS_CONCAT(status_or_, __LINE__), lhs, expr)
#define SHAPE_OPS_ASSIGN_OR_RETURN_IMPL(var, lhs, expr) \
  auto var = (expr);                                    \
  if (!var.ok()) return var.status();                   \
  lhs = *std::move(var)

#define SHAPE_OPS_RETURN_IF_ERROR(expr) \
  do {                                  \
    absl::Status status_ = (expr);      \
    if (!status_.ok()) return status_;  \
  } while (false)

size_t Idx(int64_t i) { return static_cast<size_t>(i); }

int64_t Product(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// InvalidArgument unless inputs 0..count-1 are all given.
absl::Status RequireInputs(const OpContext& ctx, int count) {
  for (int i = 0; i < count; ++i) {
    if (!ctx.has_input(i)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " is required"));
    }
  }
  return absl::OkStatus();
}

// InvalidArgument when `shape` has a negative dimension or too many elements for a Tensor.
absl::Status CheckShape(std::span<const int64_t> shape, const std::string& what) {
  absl::StatusOr<int64_t> count = ElementCount(shape);
  if (!count.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": invalid shape ", ShapeString(shape), ": ", count.status().message()));
  }
  return absl::OkStatus();
}

bool IsIntegerType(DataType type) {
  switch (type) {
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint32:
    case DataType::kUint64:
      return true;
    default:
      return false;
  }
}

// The elements of input `i` (named `what` in messages) as int64; InvalidArgument unless it holds
// integers.
absl::StatusOr<std::vector<int64_t>> IntInput(const OpContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (!IsIntegerType(t.type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", i, " (", what, ") must hold integers, got ", t.Describe()));
  }
  return t.ToInt64Vector();
}

// A list of ints given as input `input` when present, else as attribute `attr`; nullopt when
// neither is given. Serves ops whose attribute became an input in a later opset.
absl::StatusOr<std::optional<std::vector<int64_t>>> IntsFromInputOrAttr(const OpContext& ctx,
                                                                        int input,
                                                                        const std::string& attr) {
  if (ctx.has_input(input)) {
    absl::StatusOr<std::vector<int64_t>> v = IntInput(ctx, input, attr.c_str());
    if (!v.ok()) return v.status();
    return std::optional<std::vector<int64_t>>(*std::move(v));
  }
  if (ctx.has_attr(attr)) {
    absl::StatusOr<std::vector<int64_t>> v = ctx.Ints(attr);
    if (!v.ok()) return v.status();
    return std::optional<std::vector<int64_t>>(*std::move(v));
  }
  return std::optional<std::vector<int64_t>>();
}

// ---- byte movers ----

template <size_t kSize>
void StridedCopyImpl(const std::byte* in, std::byte* out, std::span<const int64_t> shape,
                     int64_t offset, std::span<const int64_t> strides) {
  const size_t rank = shape.size();
  if (rank == 0) {
    std::memcpy(out, in + Idx(offset) * kSize, kSize);
    return;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  const int64_t rows = Product(shape.first(rank - 1));
  std::vector<int64_t> pos(rank, 0);
  int64_t base = offset;
  for (int64_t row = 0; row < rows; ++row) {
    if (inner_stride == 1) {
      std::memcpy(out, in + Idx(base) * kSize, Idx(inner) * kSize);
      out += Idx(inner) * kSize;
    } else {
      for (int64_t k = 0; k < inner; ++k, out += kSize) {
        std::memcpy(out, in + Idx(base + k * inner_stride) * kSize, kSize);
      }
    }
    for (size_t axis = rank - 1; axis-- > 0;) {  // odometer step over the outer axes
      base += strides[axis];
      if (++pos[axis] < shape[axis]) break;
      base -= strides[axis] * shape[axis];
      pos[axis] = 0;
    }
  }
}

}  // namespace

// A tensor of `out_shape` holding, in row-major order over `iter_shape`, the input elements at
// offset + sum(pos[d] * strides[d]) (strides in elements, possibly 0 or negative).
// REQUIRES: every addressed element lies inside `in`; iter_shape and out_shape have equal counts
// (checked by CheckShape when they come from input values).
Tensor StridedCopy(const Tensor& in, std::span<const int64_t> iter_shape, int64_t offset,
                   std::span<const int64_t> strides, std::vector<int64_t> out_shape) {
  Tensor out(in.type(), std::move(out_shape), Tensor::Uninitialized{});  // every element written
  SEEDANCE_CHECK(Product(iter_shape) == out.size()) << ShapeString(iter_shape);
  SEEDANCE_CHECK(iter_shape.size() == strides.size()) << ShapeString(iter_shape);
  if (out.size() == 0) return out;
  switch (ElementSize(in.type())) {
    case 1:
      StridedCopyImpl<1>(in.raw(), out.raw(), iter_shape, offset, strides);
      break;
    case 2:
      StridedCopyImpl<2>(in.raw(), out.raw(), iter_shape, offset, strides);
      break;
    case 4:
      StridedCopyImpl<4>(in.raw(), out.raw(), iter_shape, offset, strides);
      break;
    case 8:
      StridedCopyImpl<8>(in.raw(), out.raw(), iter_shape, offset, strides);
      break;
    default:
      SEEDANCE_UNREACHABLE() << DataTypeName(in.type());
  }
  return out;
}

namespace {

// `in` viewed as `view_shape` (same count), its axes permuted by `perm` (output axis i is view
// axis perm[i]), stored as `out_shape` (same count; the permuted view's shape when empty).
Tensor PermuteView(const Tensor& in, const std::vector<int64_t>& view_shape,
                   const std::vector<int>& perm, std::vector<int64_t> out_shape = {}) {
  const std::vector<int64_t> view_strides = Strides(view_shape);
  std::vector<int64_t> iter_shape(perm.size()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    iter_shape[i] = view_shape[Idx(perm[i])];
    strides[i] = view_strides[Idx(perm[i])];
  }
  if (out_shape.empty() && !iter_shape.empty()) out_shape = iter_shape;
  return StridedCopy(in, iter_shape, 0, strides, std::move(out_shape));
}

// Copies `count` elements from element `from` of `in` to element `to` of `out` (same type).
void CopyElements(const Tensor& in, int64_t from, Tensor& out, int64_t to, int64_t count) {
  if (count <= 0) return;
  const size_t es = ElementSize(in.type());
  std::memcpy(out.raw() + Idx(to) * es, in.raw() + Idx(from) * es, Idx(count) * es);
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Identity ----

// The shape Reshape produces from `requested` (0 copies the input dimension unless allowzero,
// one -1 is inferred).
absl::StatusOr<std::vector<int64_t>> ResolveReshape(const Tensor& data,
                                                    const std::vector<int64_t>& requested,
                                                    bool allowzero) {
  std::vector<int64_t> out = requested;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) {
        return absl::InvalidArgumentError("input 1 (shape): more than one dimension is -1");
      }
      infer = static_cast<int>(i);
      out[i] = 1;
    } else if (out[i] == 0 && !allowzero) {
      if (i >= data.shape().size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input 1 (shape): dimension ", i, " is 0 (copy the input's) but the ",
                         "input ", data.Describe(), " has rank ", data.rank()));
      }
      out[i] = data.shape()[i];
    } else if (out[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("input 1 (shape): invalid dimension ", out[i],
                                                     " in ", ShapeString(requested)));
    }
  }
  absl::StatusOr<int64_t> known = ElementCount(out);
  if (!known.ok()) return known.status();
  if (infer >= 0) {
    if (*known == 0 || data.size() % *known != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot infer the -1 of shape ", ShapeString(requested), " for ", data.Describe()));
    }
    out[Idx(infer)] = data.size() / *known;
  } else if (*known != data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", data.Describe(), " to ", ShapeString(out)));
  }
  return out;
}

// Input 0 under `shape`: its storage moved when the executor offers it (ops.h), else copied.
Tensor ReshapedInput(const OpContext& ctx, std::vector<int64_t> shape) {
  if (Tensor* t = ctx.takeable_input(0)) return std::move(*t).Reshaped(std::move(shape));
  return ctx.input(0).Reshaped(std::move(shape));
}

absl::Status Reshape(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  std::optional<std::vector<int64_t>> requested;
  SHAPE_OPS_ASSIGN_OR_RETURN(requested, IntsFromInputOrAttr(ctx, 1, "shape"));
  if (!requested.has_value()) return absl::InvalidArgumentError("input 1 (shape) is required");
  int64_t allowzero = 0;
  if (ctx.opset() >= 14) {
    SHAPE_OPS_ASSIGN_OR_RETURN(allowzero, ctx.Int("allowzero", 0));
  }
  std::vector<int64_t> shape;
  SHAPE_OPS_ASSIGN_OR_RETURN(shape, ResolveReshape(ctx.input(0), *requested, allowzero != 0));
  outputs[0] = ReshapedInput(ctx, std::move(shape));
  return absl::OkStatus();
}

absl::Status Flatten(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  int64_t axis = 1;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis, ctx.Int("axis", 1));
  // Unlike most axes, Flatten's may equal the rank.
  if (axis < -in.rank() || axis > in.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " is out of range for rank ", in.rank()));
  }
  if (axis < 0) axis += in.rank();
  const std::span<const int64_t> dims(in.shape());
  outputs[0] =
      ReshapedInput(ctx, {Product(dims.first(Idx(axis))), Product(dims.subspan(Idx(axis)))});
  return absl::OkStatus();
}

absl::Status Squeeze(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  std::optional<std::vector<int64_t>> axes;
  SHAPE_OPS_ASSIGN_OR_RETURN(axes, IntsFromInputOrAttr(ctx, 1, "axes"));
  std::vector<bool> drop(in.shape().size(), false);
  if (!axes.has_value()) {
    for (size_t i = 0; i < drop.size(); ++i) drop[i] = in.shape()[i] == 1;
  } else {
    for (int64_t a : *axes) {
      if (in.rank() == 0) return absl::InvalidArgumentError("axes given for a scalar input");
      int axis = 0;
      SHAPE_OPS_ASSIGN_OR_RETURN(axis, NormalizeAxis(a, in.rank(), "axes: axis"));
      if (in.dim(axis) != 1) {
        return absl::InvalidArgumentError(absl::StrCat("axes: dimension ", a, " of ", in.Describe(),
                                                       " is not 1 and cannot be squeezed"));
      }
      drop[Idx(axis)] = true;
    }
  }
  std::vector<int64_t> shape;
  for (size_t i = 0; i < drop.size(); ++i) {
    if (!drop[i]) shape.push_back(in.shape()[i]);
  }
  outputs[0] = ReshapedInput(ctx, std::move(shape));
  return absl::OkStatus();
}

absl::Status Unsqueeze(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  std::optional<std::vector<int64_t>> axes;
  SHAPE_OPS_ASSIGN_OR_RETURN(axes, IntsFromInputOrAttr(ctx, 1, "axes"));
  if (!axes.has_value()) return absl::InvalidArgumentError("axes are required");
  const int out_rank = in.rank() + static_cast<int>(axes->size());
  std::vector<bool> inserted(Idx(out_rank), false);
  for (int64_t a : *axes) {
    int axis = 0;
    SHAPE_OPS_ASSIGN_OR_RETURN(axis, NormalizeAxis(a, out_rank, "axes: axis"));
    if (inserted[Idx(axis)]) {
      return absl::InvalidArgumentError(absl::StrCat("axes: axis ", a, " is repeated"));
    }
    inserted[Idx(axis)] = true;
  }
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int i = 0; i < out_rank; ++i) {
    shape.push_back(inserted[Idx(i)] ? 1 : in.shape()[next++]);
  }
  outputs[0] = ReshapedInput(ctx, std::move(shape));
  return absl::OkStatus();
}

absl::Status Shape(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  const int64_t rank = in.rank();
  int64_t start = 0, end = rank;
  if (ctx.opset() >= 15) {
    SHAPE_OPS_ASSIGN_OR_RETURN(start, ctx.Int("start", 0));
    SHAPE_OPS_ASSIGN_OR_RETURN(end, ctx.Int("end", rank));
  }
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(in.shape().begin() + start, in.shape().begin() + end);
  const int64_t n = static_cast<int64_t>(dims.size());
  outputs[0] = Tensor::From<int64_t>({n}, dims);
  return absl::OkStatus();
}

absl::Status Size(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  outputs[0] = Tensor::Scalar<int64_t>(ctx.input(0).size());
  return absl::OkStatus();
}

absl::Status Identity(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  Tensor* t = ctx.takeable_input(0);
  outputs[0] = t != nullptr ? std::move(*t) : ctx.input(0);
  return absl::OkStatus();
}

// ---- Transpose, DepthToSpace, SpaceToDepth ----

absl::Status Transpose(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> perm;
  SHAPE_OPS_ASSIGN_OR_RETURN(perm, ctx.Ints("perm"));
  if (!ctx.has_attr("perm")) {
    for (int i = in.rank(); i-- > 0;) perm.push_back(i);
  }
  if (static_cast<int>(perm.size()) != in.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("perm has ", perm.size(), " entries for input ", in.Describe()));
  }
  std::vector<int> axes;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[Idx(p)]) {
      return absl::InvalidArgumentError(absl::StrCat("perm [", absl::StrJoin(perm, ","),
                                                     "] is not a permutation of the ", in.rank(),
                                                     " axes"));
    }
    seen[Idx(p)] = true;
    axes.push_back(static_cast<int>(p));
  }
  outputs[0] = PermuteView(in, in.shape(), axes);
  return absl::OkStatus();
}

// Reads the rank-4 input and blocksize shared by DepthToSpace and SpaceToDepth.
absl::StatusOr<int64_t> BlockSize(const OpContext& ctx) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  if (ctx.input(0).rank() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("input must have rank 4 (N,C,H,W), got ", ctx.input(0).Describe()));
  }
  int64_t b = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(b, ctx.Int("blocksize", 0));
  if (b <= 0 || b > (int64_t{1} << 20)) {
    return absl::InvalidArgumentError(absl::StrCat("blocksize must be positive, got ", b));
  }
  return b;
}

absl::Status DepthToSpace(const OpContext& ctx, std::vector<Tensor>& outputs) {
  int64_t b = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(b, BlockSize(ctx));
  const Tensor& in = ctx.input(0);
  std::string mode = "DCR";
  if (ctx.opset() >= 11) {
    SHAPE_OPS_ASSIGN_OR_RETURN(mode, ctx.String("mode", "DCR"));
  }
  const int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
  if (c % (b * b) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels of ", in.Describe(), " are not divisible by blocksize^2 = ", b * b));
  }
  const int64_t oc = c / (b * b);
  std::vector<int64_t> out_shape = {n, oc, h * b, w * b};
  if (mode == "DCR") {
    outputs[0] = PermuteView(in, {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, std::move(out_shape));
  } else if (mode == "CRD") {
    outputs[0] = PermuteView(in, {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, std::move(out_shape));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("mode must be \"DCR\" or \"CRD\", got \"", mode, "\""));
  }
  return absl::OkStatus();
}

absl::Status SpaceToDepth(const OpContext& ctx, std::vector<Tensor>& outputs) {
  int64_t b = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(b, BlockSize(ctx));
  const Tensor& in = ctx.input(0);
  const int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
  if (h % b != 0 || w % b != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("height and width of ", in.Describe(), " are not divisible by blocksize ", b));
  }
  outputs[0] =
      PermuteView(in, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, {n, c * b * b, h / b, w / b});
  return absl::OkStatus();
}

// ---- Concat, Split ----

absl::Status Concat(const OpContext& ctx, std::vector<Tensor>& outputs) {
  if (ctx.input_count() < 1) return absl::InvalidArgumentError("at least one input is required");
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, ctx.input_count()));
  const Tensor& first = ctx.input(0);
  if (first.rank() == 0) return absl::InvalidArgumentError("cannot concatenate scalars");
  if (!ctx.has_attr("axis")) return absl::InvalidArgumentError("attribute axis is required");
  int64_t axis_attr = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis_attr, ctx.Int("axis", 0));
  int axis = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_attr, first.rank()));
  std::vector<int64_t> out_shape = first.shape();
  out_shape[Idx(axis)] = 0;
  for (int i = 0; i < ctx.input_count(); ++i) {
    const Tensor& in = ctx.input(i);
    bool fits = in.type() == first.type() && in.rank() == first.rank();
    for (int d = 0; fits && d < in.rank(); ++d) fits = d == axis || in.dim(d) == first.dim(d);
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " ", in.Describe(),
                                                     " does not concatenate with input 0 ",
                                                     first.Describe(), " on axis ", axis));
    }
    out_shape[Idx(axis)] += in.dim(axis);
  }
  SHAPE_OPS_RETURN_IF_ERROR(CheckShape(out_shape, "output"));
  Tensor out(first.type(), out_shape);
  const std::span<const int64_t> dims(out_shape);
  const int64_t outer = Product(dims.first(Idx(axis)));
  const int64_t inner = Product(dims.subspan(Idx(axis) + 1));
  const int64_t out_row = out_shape[Idx(axis)] * inner;
  int64_t column = 0;
  for (int i = 0; i < ctx.input_count(); ++i) {
    const Tensor& in = ctx.input(i);
    const int64_t block = in.dim(axis) * inner;
    for (int64_t o = 0; o < outer; ++o)
      CopyElements(in, o * block, out, o * out_row + column, block);
    column += block;
  }
  outputs[0] = std::move(out);
  return absl::OkStatus();
}

// The part sizes Split cuts `dim` into for `count` outputs.
absl::StatusOr<std::vector<int64_t>> SplitSizes(const OpContext& ctx, int64_t dim, int count) {
  std::optional<std::vector<int64_t>> split;
  SHAPE_OPS_ASSIGN_OR_RETURN(split, IntsFromInputOrAttr(ctx, 1, "split"));
  if (!split.has_value()) {
    if (count <= 0 || dim % count != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", dim, " cannot be split into ", count, " equal parts"));
    }
    return std::vector<int64_t>(Idx(count), dim / count);
  }
  if (static_cast<int>(split->size()) != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("split has ", split->size(), " entries for ", count, " outputs"));
  }
  int64_t sum = 0;
  for (int64_t s : *split) {
    if (s < 0 || s > dim) {
      return absl::InvalidArgumentError(absl::StrCat("split: invalid part size ", s));
    }
    sum += s;
  }
  if (sum != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("split [", absl::StrJoin(*split, ","), "] does not sum to dimension ", dim));
  }
  return *std::move(split);
}

absl::Status Split(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  if (in.rank() == 0) return absl::InvalidArgumentError("cannot split a scalar");
  int64_t axis_attr = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis_attr, ctx.Int("axis", 0));
  int axis = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_attr, in.rank()));
  const int64_t dim = in.dim(axis);
  std::vector<int64_t> sizes;
  SHAPE_OPS_ASSIGN_OR_RETURN(sizes, SplitSizes(ctx, dim, ctx.output_count()));
  const std::span<const int64_t> dims(in.shape());
  const int64_t outer = Product(dims.first(Idx(axis)));
  const int64_t inner = Product(dims.subspan(Idx(axis) + 1));
  int64_t start = 0;
  for (size_t j = 0; j < sizes.size(); ++j) {
    std::vector<int64_t> shape = in.shape();
    shape[Idx(axis)] = sizes[j];
    Tensor out(in.type(), std::move(shape));
    const int64_t block = sizes[j] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      CopyElements(in, (o * dim + start) * inner, out, o * block, block);
    }
    outputs[j] = std::move(out);
    start += sizes[j];
  }
  return absl::OkStatus();
}

// ---- Slice ----

// The first index and element count selected on an axis of size `dim` (ONNX Slice clamping).
std::pair<int64_t, int64_t> SliceRange(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end <= start) return {start, 0};
    return {start, (end - start - 1) / step + 1};
  }
  if (dim == 0) return {0, 0};
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  if (start <= end) return {start, 0};
  const uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(step);  // |step|, even INT64_MIN
  return {start, static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude + 1)};
}

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

absl::StatusOr<SliceArgs> ReadSliceArgs(const OpContext& ctx) {
  SliceArgs args;
  if (ctx.opset() < 10) {
    SHAPE_OPS_ASSIGN_OR_RETURN(args.starts, ctx.Ints("starts"));
    SHAPE_OPS_ASSIGN_OR_RETURN(args.ends, ctx.Ints("ends"));
    SHAPE_OPS_ASSIGN_OR_RETURN(args.axes, ctx.Ints("axes"));
    if (!ctx.has_attr("starts") || !ctx.has_attr("ends")) {
      return absl::InvalidArgumentError("attributes starts and ends are required");
    }
  } else {
    SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 3));
    SHAPE_OPS_ASSIGN_OR_RETURN(args.starts, IntInput(ctx, 1, "starts"));
    SHAPE_OPS_ASSIGN_OR_RETURN(args.ends, IntInput(ctx, 2, "ends"));
    if (ctx.has_input(3)) {
      SHAPE_OPS_ASSIGN_OR_RETURN(args.axes, IntInput(ctx, 3, "axes"));
    }
    if (ctx.has_input(4)) {
      SHAPE_OPS_ASSIGN_OR_RETURN(args.steps, IntInput(ctx, 4, "steps"));
    }
  }
  const size_t n = args.starts.size();
  if (args.axes.empty() && !(ctx.opset() >= 10 && ctx.has_input(3))) {
    for (size_t i = 0; i < n; ++i) args.axes.push_back(static_cast<int64_t>(i));
  }
  if (args.steps.empty() && !(ctx.opset() >= 10 && ctx.has_input(4))) {
    args.steps.assign(n, 1);
  }
  if (args.ends.size() != n || args.axes.size() != n || args.steps.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("starts, ends, axes and steps must have equal lengths (got %d, %d, %d, %d)",
                        n, args.ends.size(), args.axes.size(), args.steps.size()));
  }
  return args;
}

absl::Status Slice(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  SliceArgs args;
  SHAPE_OPS_ASSIGN_OR_RETURN(args, ReadSliceArgs(ctx));
  std::vector<int64_t> shape = in.shape();
  std::vector<int64_t> strides = Strides(in.shape());
  std::vector<bool> seen(shape.size(), false);
  int64_t offset = 0;
  for (size_t i = 0; i < args.starts.size(); ++i) {
    if (in.rank() == 0) return absl::InvalidArgumentError("cannot slice a scalar");
    int axis = 0;
    SHAPE_OPS_ASSIGN_OR_RETURN(axis, NormalizeAxis(args.axes[i], in.rank(), "axes: axis"));
    if (seen[Idx(axis)]) {
      return absl::InvalidArgumentError(absl::StrCat("axes: axis ", args.axes[i], " is repeated"));
    }
    seen[Idx(axis)] = true;
    if (args.steps[i] == 0) return absl::InvalidArgumentError("steps: a step is 0");
    const auto [first, count] =
        SliceRange(in.dim(axis), args.starts[i], args.ends[i], args.steps[i]);
    if (count > 0) offset += first * strides[Idx(axis)];
    shape[Idx(axis)] = count;
    // With one element or none the step is never taken (and could overflow the product).
    strides[Idx(axis)] = count > 1 ? strides[Idx(axis)] * args.steps[i] : 0;
  }
  outputs[0] = StridedCopy(in, shape, offset, strides, shape);
  return absl::OkStatus();
}

// ---- Gather, GatherElements ----

absl::Status Gather(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& data = ctx.input(0);
  if (data.rank() == 0) return absl::InvalidArgumentError("input 0 (data) must not be a scalar");
  int64_t axis_attr = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis_attr, ctx.Int("axis", 0));
  int axis = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_attr, data.rank()));
  std::vector<int64_t> indices;
  SHAPE_OPS_ASSIGN_OR_RETURN(indices, IntInput(ctx, 1, "indices"));
  const int64_t dim = data.dim(axis);
  for (int64_t& i : indices) {
    if (i < -dim || i >= dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input 1 (indices): index ", i, " is out of range for axis ", axis, " of size ", dim));
    }
    if (i < 0) i += dim;
  }
  const std::span<const int64_t> dims(data.shape());
  std::vector<int64_t> out_shape(dims.begin(), dims.begin() + axis);
  const std::vector<int64_t>& index_shape = ctx.input(1).shape();
  out_shape.insert(out_shape.end(), index_shape.begin(), index_shape.end());
  out_shape.insert(out_shape.end(), dims.begin() + axis + 1, dims.end());
  SHAPE_OPS_RETURN_IF_ERROR(CheckShape(out_shape, "output"));
  Tensor out(data.type(), std::move(out_shape));
  const int64_t outer = Product(dims.first(Idx(axis)));
  const int64_t inner = Product(dims.subspan(Idx(axis) + 1));
  const int64_t n = static_cast<int64_t>(indices.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      CopyElements(data, (o * dim + indices[Idx(k)]) * inner, out, (o * n + k) * inner, inner);
    }
  }
  outputs[0] = std::move(out);
  return absl::OkStatus();
}

absl::Status GatherElements(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& data = ctx.input(0);
  const Tensor& index_tensor = ctx.input(1);
  if (data.rank() == 0 || index_tensor.rank() != data.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("input 1 (indices) ", index_tensor.Describe(),
                                                   " must have the rank of input 0 (data) ",
                                                   data.Describe(), " (at least 1)"));
  }
  int64_t axis_attr = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis_attr, ctx.Int("axis", 0));
  int axis = 0;
  SHAPE_OPS_ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_attr, data.rank()));
  for (int d = 0; d < data.rank(); ++d) {
    if (d != axis && index_tensor.dim(d) > data.dim(d)) {
      return absl::InvalidArgumentError(absl::StrCat("input 1 (indices) ", index_tensor.Describe(),
                                                     " exceeds input 0 (data) ", data.Describe(),
                                                     " on axis ", d));
    }
  }
  std::vector<int64_t> indices;
  SHAPE_OPS_ASSIGN_OR_RETURN(indices, IntInput(ctx, 1, "indices"));
  const int64_t dim = data.dim(axis);
  const std::vector<int64_t> data_strides = Strides(data.shape());
  const std::vector<int64_t>& shape = index_tensor.shape();
  const size_t rank = shape.size();
  Tensor out(data.type(), shape);
  std::vector<int64_t> pos(rank, 0);
  int64_t base = 0;  // data offset of pos with the gathered axis at 0
  for (int64_t k = 0; k < out.size(); ++k) {
    int64_t i = indices[Idx(k)];
    if (i < -dim || i >= dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input 1 (indices): index ", i, " is out of range for axis ", axis, " of size ", dim));
    }
    if (i < 0) i += dim;
    CopyElements(data, base + i * data_strides[Idx(axis)], out, k, 1);
    for (size_t d = rank; d-- > 0;) {  // odometer step
      const int64_t stride = static_cast<int>(d) == axis ? 0 : data_strides[d];
      base += stride;
      if (++pos[d] < shape[d]) break;
      base -= stride * shape[d];
      pos[d] = 0;
    }
  }
  outputs[0] = std::move(out);
  return absl::OkStatus();
}

// ---- Expand, Tile, Trilu ----

absl::Status Expand(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> requested;
  SHAPE_OPS_ASSIGN_OR_RETURN(requested, IntInput(ctx, 1, "shape"));
  SHAPE_OPS_RETURN_IF_ERROR(CheckShape(requested, "input 1 (shape)"));
  std::vector<int64_t> out_shape;
  SHAPE_OPS_ASSIGN_OR_RETURN(out_shape, BroadcastShapes(in.shape(), requested));
  SHAPE_OPS_RETURN_IF_ERROR(CheckShape(out_shape, "output"));
  const size_t lead = out_shape.size() - in.shape().size();
  const std::vector<int64_t> own = Strides(in.shape());
  std::vector<int64_t> strides(out_shape.size(), 0);
  for (size_t i = 0; i < own.size(); ++i) strides[lead + i] = in.shape()[i] == 1 ? 0 : own[i];
  outputs[0] = StridedCopy(in, out_shape, 0, strides, out_shape);
  return absl::OkStatus();
}

absl::Status Tile(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> repeats;
  SHAPE_OPS_ASSIGN_OR_RETURN(repeats, IntInput(ctx, 1, "repeats"));
  if (static_cast<int>(repeats.size()) != in.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("input 1 (repeats) has ", repeats.size(),
                                                   " entries for input 0 ", in.Describe()));
  }
  SHAPE_OPS_RETURN_IF_ERROR(CheckShape(repeats, "input 1 (repeats)"));
  // Output axis d is view axes (repeat d, input d): the repeat axis has stride 0.
  const std::vector<int64_t> own = Strides(in.shape());
  std::vector<int64_t> view_shape, view_strides, out_shape;
  for (size_t d = 0; d < repeats.size(); ++d) {
    view_shape.insert(view_shape.end(), {repeats[d], in.shape()[d]});
    view_strides.insert(view_strides.end(), {0, own[d]});
    out_shape.push_back(repeats[d] * in.shape()[d]);
  }
  SHAPE_OPS_RETURN_IF_ERROR(CheckShape(view_shape, "output"));
  outputs[0] = StridedCopy(in, view_shape, 0, view_strides, std::move(out_shape));
  return absl::OkStatus();
}

absl::Status Trilu(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  if (in.rank() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 0 must have rank 2 or more, got ", in.Describe()));
  }
  int64_t k = 0;
  if (ctx.has_input(1)) {
    const Tensor& kt = ctx.input(1);
    if (kt.size() != 1 || !IsIntegerType(kt.type())) {
      return absl::InvalidArgumentError(
          absl::StrCat("input 1 (k) must be one integer, got ", kt.Describe()));
    }
    k = kt.AsInt64(0);
  }
  int64_t upper = 1;
  SHAPE_OPS_ASSIGN_OR_RETURN(upper, ctx.Int("upper", 1));
  const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);  // beyond these every k acts alike
  Tensor out = in;
  const size_t es = ElementSize(in.type());
  const int64_t matrices = rows * cols == 0 ? 0 : in.size() / (rows * cols);
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      // Upper keeps j - i >= k; lower keeps j - i <= k. Zero the complement [lo, hi).
      const int64_t lo = upper != 0 ? 0 : std::clamp<int64_t>(i + k + 1, 0, cols);
      const int64_t hi = upper != 0 ? std::clamp<int64_t>(i + k, 0, cols) : cols;
      if (hi > lo) {
        std::memset(out.raw() + Idx((m * rows + i) * cols + lo) * es, 0, Idx(hi - lo) * es);
      }
    }
  }
  outputs[0] = std::move(out);
  return absl::OkStatus();
}

// ---- ConstantOfShape, Constant, Range ----

absl::Status ConstantOfShape(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  std::vector<int64_t> shape;
  SHAPE_OPS_ASSIGN_OR_RETURN(shape, IntInput(ctx, 0, "shape"));
  SHAPE_OPS_RETURN_IF_ERROR(CheckShape(shape, "input 0 (shape)"));
  Tensor value = Tensor::Scalar<float>(0.0f);
  if (ctx.has_attr("value")) {
    SHAPE_OPS_ASSIGN_OR_RETURN(value, ctx.TensorAttr("value"));
    if (value.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute value must hold one element, got ", value.Describe()));
    }
  }
  Tensor out(value.type(), std::move(shape));
  for (int64_t i = 0; i < out.size(); ++i) CopyElements(value, 0, out, i, 1);
  outputs[0] = std::move(out);
  return absl::OkStatus();
}

absl::Status Constant(const OpContext& ctx, std::vector<Tensor>& outputs) {
  for (const char* refused : {"sparse_value", "value_string", "value_strings"}) {
    if (ctx.has_attr(refused)) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute ", refused, " is not supported (no string or sparse tensors)"));
    }
  }
  int given = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    given += ctx.has_attr(name) ? 1 : 0;
  }
  if (given != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("exactly one value attribute must be given, got ", given));
  }
  if (ctx.has_attr("value")) {
    SHAPE_OPS_ASSIGN_OR_RETURN(outputs[0], ctx.TensorAttr("value"));
  } else if (ctx.has_attr("value_float")) {
    float v = 0;
    SHAPE_OPS_ASSIGN_OR_RETURN(v, ctx.Float("value_float", 0));
    outputs[0] = Tensor::Scalar<float>(v);
  } else if (ctx.has_attr("value_floats")) {
    std::vector<float> v;
    SHAPE_OPS_ASSIGN_OR_RETURN(v, ctx.Floats("value_floats"));
    outputs[0] = Tensor::From<float>({static_cast<int64_t>(v.size())}, v);
  } else if (ctx.has_attr("value_int")) {
    int64_t v = 0;
    SHAPE_OPS_ASSIGN_OR_RETURN(v, ctx.Int("value_int", 0));
    outputs[0] = Tensor::Scalar<int64_t>(v);
  } else {
    std::vector<int64_t> v;
    SHAPE_OPS_ASSIGN_OR_RETURN(v, ctx.Ints("value_ints"));
    outputs[0] = Tensor::From<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  return absl::OkStatus();
}

// Range over an integer type: exact (the count and values in modular uint64 arithmetic, whose
// results are in range whenever the true values are).
template <typename T>
absl::StatusOr<Tensor> IntegerRange(int64_t start, int64_t limit, int64_t delta) {
  uint64_t span = 0, step = 0;
  if (delta > 0 && limit > start) {
    span = static_cast<uint64_t>(limit) - static_cast<uint64_t>(start);
    step = static_cast<uint64_t>(delta);
  } else if (delta < 0 && limit < start) {
    span = static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    step = uint64_t{0} - static_cast<uint64_t>(delta);
  }
  const uint64_t n = step == 0 ? 0 : (span - 1) / step + 1;
  if (n > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("the range has too many elements: ", n));
  }
  std::vector<T> values(n);
  for (uint64_t i = 0; i < n; ++i) {
    values[i] = static_cast<T>(
        static_cast<int64_t>(static_cast<uint64_t>(start) + i * static_cast<uint64_t>(delta)));
  }
  return Tensor::From<T>({static_cast<int64_t>(n)}, values);
}

template <typename T>
absl::StatusOr<Tensor> FloatRange(double start, double limit, double delta) {
  // The count as ONNX Runtime computes it: the difference in T, the quotient in double.
  const double count =
      std::ceil(static_cast<double>(static_cast<T>(limit) - static_cast<T>(start)) / delta);
  if (!std::isfinite(count) || count > static_cast<double>(int64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid range: start ", start, ", limit ", limit, ", delta ", delta));
  }
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  std::vector<T> values(Idx(n));
  for (int64_t i = 0; i < n; ++i) {
    values[Idx(i)] = static_cast<T>(start + static_cast<double>(i) * delta);
  }
  return Tensor::From<T>({n}, values);
}

absl::Status Range(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const DataType type = ctx.input(0).type();
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).size() != 1 || ctx.input(i).type() != type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "start, limit and delta must be scalars of one type, got ", ctx.input(0).Describe(), ", ",
          ctx.input(1).Describe(), ", ", ctx.input(2).Describe()));
    }
  }
  const Tensor &s = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
  if (d.AsDouble(0) == 0) return absl::InvalidArgumentError("input 2 (delta) must not be 0");
  absl::StatusOr<Tensor> out;
  switch (type) {
    case DataType::kFloat:
      out = FloatRange<float>(s.AsDouble(0), l.AsDouble(0), d.AsDouble(0));
      break;
    case DataType::kDouble:
      out = FloatRange<double>(s.AsDouble(0), l.AsDouble(0), d.AsDouble(0));
      break;
    case DataType::kInt16:
      out = IntegerRange<int16_t>(s.AsInt64(0), l.AsInt64(0), d.AsInt64(0));
      break;
    case DataType::kInt32:
      out = IntegerRange<int32_t>(s.AsInt64(0), l.AsInt64(0), d.AsInt64(0));
      break;
    case DataType::kInt64:
      out = IntegerRange<int64_t>(s.AsInt64(0), l.AsInt64(0), d.AsInt64(0));
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("type ", DataTypeName(type),
                                                     " is not supported (float, double, int16, ",
                                                     "int32, int64)"));
  }
  if (!out.ok()) return out.status();
  outputs[0] = *std::move(out);
  return absl::OkStatus();
}

// ---- Dropout ----

// Inference-mode Dropout: the output is the input and the mask all ones. Training mode (opset
// 12+) is refused unless its ratio is 0, because its output is random.
absl::Status Dropout(const OpContext& ctx, std::vector<Tensor>& outputs) {
  SHAPE_OPS_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& in = ctx.input(0);
  for (int i = 1; ctx.opset() >= 12 && i < 3; ++i) {
    if (ctx.has_input(i) && ctx.input(i).size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, i == 1 ? " (ratio)" : " (training_mode)",
                       " must be a scalar, got ", ctx.input(i).Describe()));
    }
  }
  if (ctx.opset() >= 12 && ctx.has_input(2)) {
    const Tensor& training = ctx.input(2);
    const double ratio = ctx.has_input(1) ? ctx.input(1).AsDouble(0) : 0.5;
    if (training.AsDouble(0) != 0 && ratio != 0) {
      return absl::InvalidArgumentError(absl::StrCat("training-mode dropout (ratio ", ratio,
                                                     ") is not supported: its output is random"));
    }
  }
  outputs[0] = in;
  if (ctx.output_count() > 1) {
    if (ctx.opset() >= 10) {
      Tensor mask(DataType::kBool, in.shape());
      std::fill_n(mask.data<bool>(), mask.size(), true);
      outputs[1] = std::move(mask);
    } else {  // before opset 10 the mask has the input's type
      Tensor mask(in.type(), in.shape());
      VisitType(in.type(), [&](auto zero) {
        using T = decltype(zero);
        std::fill_n(mask.data<T>(), mask.size(), FromDouble<T>(1.0));
      });
      outputs[1] = std::move(mask);
    }
  }
  return absl::OkStatus();
}

#undef SHAPE_OPS_CONCAT_INNER
#undef SHAPE_OPS_CONCAT
#undef SHAPE_OPS_ASSIGN_OR_RETURN
#undef SHAPE_OPS_ASSIGN_OR_RETURN_IMPL
#undef SHAPE_OPS_RETURN_IF_ERROR

}  // namespace

void RegisterShapeOps(Table& table) {
  table["Reshape"] = Reshape;
  table["Flatten"] = Flatten;
  table["Squeeze"] = Squeeze;
  table["Unsqueeze"] = Unsqueeze;
  table["Shape"] = Shape;
  table["Size"] = Size;
  table["Identity"] = Identity;
  table["Transpose"] = Transpose;
  table["DepthToSpace"] = DepthToSpace;
  table["SpaceToDepth"] = SpaceToDepth;
  table["Concat"] = Concat;
  table["Split"] = Split;
  table["Slice"] = Slice;
  table["Gather"] = Gather;
  table["GatherElements"] = GatherElements;
  table["Expand"] = Expand;
  table["Tile"] = Tile;
  table["Trilu"] = Trilu;
  table["ConstantOfShape"] = ConstantOfShape;
  table["Constant"] = Constant;
  table["Range"] = Range;
  table["Dropout"] = Dropout;
}

}  // namespace seedance::model::ops
