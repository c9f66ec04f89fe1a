#include "seedance/model/tensor.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "seedance/model/float_formats.h"

namespace seedance::model {
namespace {

// Above this a tensor is refused (1 TiB of floats); a model or a dimension product past it is
// bad input, not something to allocate.
constexpr int64_t kMaxElements = int64_t{1} << 40;

}  // namespace

size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kInt32:
    case DataType::kUint32:
      return 4;
    case DataType::kDouble:
    case DataType::kInt64:
    case DataType::kUint64:
      return 8;
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kBool:
      return 1;
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return 2;
    case DataType::kUndefined:
    case DataType::kString:
      return 0;
  }
  return 0;
}

bool IsSupported(DataType type) { return ElementSize(type) > 0; }

std::string DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat:
      return "float";
    case DataType::kDouble:
      return "double";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kUint16:
      return "uint16";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUint32:
      return "uint32";
    case DataType::kUint64:
      return "uint64";
    case DataType::kBool:
      return "bool";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBfloat16:
      return "bfloat16";
    case DataType::kString:
      return "string";
    case DataType::kUndefined:
      return "undefined";
  }
  return absl::StrCat("type ", static_cast<int>(type));
}

absl::StatusOr<int64_t> ElementCount(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeString(shape), " has a negative dimension"));
    }
    if (d == 0) return 0;
  }
  for (int64_t d : shape) {
    if (d > kMaxElements || count > kMaxElements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeString(shape), " has more than 2^40 elements"));
    }
    count *= d;
  }
  return count;
}

std::string ShapeString(std::span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

Tensor::Tensor(DataType type, std::vector<int64_t> shape) : type_(type), shape_(std::move(shape)) {
  SEEDANCE_CHECK(IsSupported(type_)) << "tensor of " << DataTypeName(type_);
  absl::StatusOr<int64_t> count = ElementCount(shape_);
  SEEDANCE_CHECK(count.ok()) << "tensor shape refused: " << count.status().message();
  size_ = *count;
  bytes_.assign(static_cast<size_t>(size_) * ElementSize(type_), std::byte{0});
}

Tensor Tensor::Reshaped(std::vector<int64_t> shape) const {
  absl::StatusOr<int64_t> count = ElementCount(shape);
  SEEDANCE_CHECK(count.ok() && *count == size_)
      << "reshape of " << Describe() << " to " << ShapeString(shape);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::AsDouble(int64_t i) const {
  SEEDANCE_CHECK(i >= 0 && i < size_) << "element " << i << " of " << Describe();
  const std::byte* p = bytes_.data() + static_cast<size_t>(i) * ElementSize(type_);
  auto load = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (type_) {
    case DataType::kFloat:
      return load(float{});
    case DataType::kDouble:
      return load(double{});
    case DataType::kUint8:
      return load(uint8_t{});
    case DataType::kInt8:
      return load(int8_t{});
    case DataType::kUint16:
      return load(uint16_t{});
    case DataType::kInt16:
      return load(int16_t{});
    case DataType::kInt32:
      return load(int32_t{});
    case DataType::kInt64:
      return static_cast<double>(load(int64_t{}));
    case DataType::kUint32:
      return load(uint32_t{});
    case DataType::kUint64:
      return static_cast<double>(load(uint64_t{}));
    case DataType::kBool:
      return load(uint8_t{}) != 0 ? 1.0 : 0.0;
    case DataType::kFloat16:
      return FromFloat16(Float16{load(uint16_t{})});
    case DataType::kBfloat16:
      return FromBFloat16(BFloat16{load(uint16_t{})});
    case DataType::kString:
    case DataType::kUndefined:
      break;
  }
  SEEDANCE_UNREACHABLE();
  return 0;
}

int64_t Tensor::AsInt64(int64_t i) const {
  SEEDANCE_CHECK(i >= 0 && i < size_) << "element " << i << " of " << Describe();
  const std::byte* p = bytes_.data() + static_cast<size_t>(i) * ElementSize(type_);
  switch (type_) {
    case DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DataType::kUint64: {
      uint64_t v;
      std::memcpy(&v, p, sizeof v);
      return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
    }
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kFloat16:
    case DataType::kBfloat16: {
      const double d = AsDouble(i);
      if (!(d > -9.2e18 && d < 9.2e18)) return d > 0 ? INT64_MAX : INT64_MIN;
      return static_cast<int64_t>(d);
    }
    default:
      return static_cast<int64_t>(AsDouble(i));
  }
}

std::vector<int64_t> Tensor::ToInt64Vector() const {
  std::vector<int64_t> out(static_cast<size_t>(size_));
  for (int64_t i = 0; i < size_; ++i) out[static_cast<size_t>(i)] = AsInt64(i);
  return out;
}

std::string Tensor::Describe() const { return DataTypeName(type_) + ShapeString(shape_); }

}  // namespace seedance::model
