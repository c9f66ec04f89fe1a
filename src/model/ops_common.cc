// OpContext, the broadcasting helpers and the kernel table (ops.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ops.h"

namespace seedance::model::ops {
namespace {

const char* KindName(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kFloat:
      return "a float";
    case Attribute::Kind::kInt:
      return "an int";
    case Attribute::Kind::kString:
      return "a string";
    case Attribute::Kind::kTensor:
      return "a tensor";
    case Attribute::Kind::kFloats:
      return "a list of floats";
    case Attribute::Kind::kInts:
      return "a list of ints";
    case Attribute::Kind::kStrings:
      return "a list of strings";
  }
  return "an attribute";
}

// The attribute `name` when present and of `kind`; nullptr when absent; InvalidArgument when of
// another kind.
absl::StatusOr<const Attribute*> Find(const Node& node, const std::string& name,
                                      Attribute::Kind kind) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end()) return nullptr;
  if (it->second.kind != kind) {
    return absl::InvalidArgumentError(absl::StrCat("attribute ", name, " must be ", KindName(kind),
                                                   " (got ", KindName(it->second.kind), ")"));
  }
  return &it->second;
}

}  // namespace

const Tensor& OpContext::input(int i) const {
  SEEDANCE_CHECK(has_input(i)) << node_.op_type << " reads input " << i << " it was not given";
  return *inputs_[static_cast<size_t>(i)];
}

absl::StatusOr<int64_t> OpContext::Int(const std::string& name, int64_t fallback) const {
  absl::StatusOr<const Attribute*> a = Find(node_, name, Attribute::Kind::kInt);
  if (!a.ok()) return a.status();
  return *a == nullptr ? fallback : (*a)->i;
}

absl::StatusOr<float> OpContext::Float(const std::string& name, float fallback) const {
  absl::StatusOr<const Attribute*> a = Find(node_, name, Attribute::Kind::kFloat);
  if (!a.ok()) return a.status();
  return *a == nullptr ? fallback : (*a)->f;
}

absl::StatusOr<std::string> OpContext::String(const std::string& name,
                                              const std::string& fallback) const {
  absl::StatusOr<const Attribute*> a = Find(node_, name, Attribute::Kind::kString);
  if (!a.ok()) return a.status();
  return *a == nullptr ? fallback : (*a)->s;
}

absl::StatusOr<std::vector<int64_t>> OpContext::Ints(const std::string& name,
                                                     std::vector<int64_t> fallback) const {
  absl::StatusOr<const Attribute*> a = Find(node_, name, Attribute::Kind::kInts);
  if (!a.ok()) return a.status();
  return *a == nullptr ? fallback : (*a)->ints;
}

absl::StatusOr<std::vector<float>> OpContext::Floats(const std::string& name,
                                                     std::vector<float> fallback) const {
  absl::StatusOr<const Attribute*> a = Find(node_, name, Attribute::Kind::kFloats);
  if (!a.ok()) return a.status();
  return *a == nullptr ? fallback : (*a)->floats;
}

absl::StatusOr<Tensor> OpContext::TensorAttr(const std::string& name) const {
  absl::StatusOr<const Attribute*> a = Find(node_, name, Attribute::Kind::kTensor);
  if (!a.ok()) return a.status();
  if (*a == nullptr || (*a)->tensor.empty()) {
    return absl::NotFoundError(absl::StrCat("attribute ", name, " is not given"));
  }
  return (*a)->tensor.front();
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(std::span<const int64_t> a,
                                                     std::span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ShapeString(a), " and ", ShapeString(b), " do not broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> Strides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i > 1; --i) strides[i - 2] = strides[i - 1] * shape[i - 1];
  return strides;
}

std::vector<int64_t> BroadcastIndex(std::span<const int64_t> in_shape,
                                    std::span<const int64_t> out_shape) {
  SEEDANCE_CHECK(in_shape.size() <= out_shape.size())
      << ShapeString(in_shape) << " does not broadcast to " << ShapeString(out_shape);
  const size_t rank = out_shape.size();
  const size_t offset = rank - in_shape.size();
  // The input's stride for each output axis (0 where it broadcasts).
  std::vector<int64_t> in_strides(rank, 0);
  const std::vector<int64_t> own = Strides(in_shape);
  for (size_t i = 0; i < in_shape.size(); ++i) {
    SEEDANCE_CHECK(in_shape[i] == out_shape[i + offset] || in_shape[i] == 1)
        << ShapeString(in_shape) << " does not broadcast to " << ShapeString(out_shape);
    in_strides[i + offset] = in_shape[i] == 1 ? 0 : own[i];
  }
  int64_t count = 1;
  for (int64_t d : out_shape) count *= d;
  std::vector<int64_t> index(static_cast<size_t>(count));
  std::vector<int64_t> pos(rank, 0);
  int64_t flat = 0;
  for (int64_t k = 0; k < count; ++k) {
    index[static_cast<size_t>(k)] = flat;
    for (size_t axis = rank; axis-- > 0;) {  // odometer step, carrying into outer axes
      flat += in_strides[axis];
      if (++pos[axis] < out_shape[axis]) break;
      flat -= in_strides[axis] * pos[axis];
      pos[axis] = 0;
    }
  }
  return index;
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank, const char* what) {
  if (rank == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", axis, " is out of range for a scalar (rank 0)"));
  }
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

int64_t OldestVersion(const std::string& op_type) {
  // Operators whose versions before the one in force at opset 7 differ only in the legacy
  // consumed_inputs hint, or not at all.
  static const std::map<std::string, int64_t> kOlder = {
      {"GlobalAveragePool", 1}, {"GlobalMaxPool", 1}, {"InstanceNormalization", 6}};
  auto it = kOlder.find(op_type);
  return it == kOlder.end() ? 0 : it->second;
}

const Table& OpTable() {
  static const Table* const table = [] {
    auto* t = new Table;
    RegisterElementwiseOps(*t);
    RegisterMathOps(*t);
    RegisterNnOps(*t);
    RegisterShapeOps(*t);
    RegisterReduceOps(*t);
    RegisterQuantOps(*t);
    return t;
  }();
  return *table;
}

}  // namespace seedance::model::ops
