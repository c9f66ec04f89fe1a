// A dense tensor as ONNX defines one: an element type (ONNX's TensorProto.DataType codes), a
// shape, and the elements in row-major order.
//
// Tensors are values: copying one copies its elements. A tensor of rank 0 is a scalar and holds
// one element; a tensor with a zero dimension holds none. 16-bit floats are stored as their bits
// (`Float16`, `BFloat16`, converted by float_formats.h); booleans as one byte each (0 or 1).
// Strings are not supported (no operator the executor claims produces or reads them).
//
// Thread-safety: none; a const tensor may be read from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/base/check.h"

namespace seedance::model {

// ONNX's TensorProto.DataType codes (onnx.proto), kept numerically equal.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
};

// IEEE 754 binary16 and bfloat16, as bits.
struct Float16 {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};

// The DataType of a C++ element type (float -> kFloat, bool -> kBool, Float16 -> kFloat16, ...).
template <typename T>
constexpr DataType DataTypeOf();
template <>
constexpr DataType DataTypeOf<float>() {
  return DataType::kFloat;
}
template <>
constexpr DataType DataTypeOf<double>() {
  return DataType::kDouble;
}
template <>
constexpr DataType DataTypeOf<uint8_t>() {
  return DataType::kUint8;
}
template <>
constexpr DataType DataTypeOf<int8_t>() {
  return DataType::kInt8;
}
template <>
constexpr DataType DataTypeOf<uint16_t>() {
  return DataType::kUint16;
}
template <>
constexpr DataType DataTypeOf<int16_t>() {
  return DataType::kInt16;
}
template <>
constexpr DataType DataTypeOf<int32_t>() {
  return DataType::kInt32;
}
template <>
constexpr DataType DataTypeOf<int64_t>() {
  return DataType::kInt64;
}
template <>
constexpr DataType DataTypeOf<uint32_t>() {
  return DataType::kUint32;
}
template <>
constexpr DataType DataTypeOf<uint64_t>() {
  return DataType::kUint64;
}
template <>
constexpr DataType DataTypeOf<bool>() {
  return DataType::kBool;
}
template <>
constexpr DataType DataTypeOf<Float16>() {
  return DataType::kFloat16;
}
template <>
constexpr DataType DataTypeOf<BFloat16>() {
  return DataType::kBfloat16;
}

// Bytes per element; 0 for kUndefined, kString and codes this library does not know.
size_t ElementSize(DataType type);
// ONNX's name of the type ("float", "int64", "float16", "bfloat16", ...); "type N" when unknown.
std::string DataTypeName(DataType type);
// True for the types a Tensor can hold (every code above but kUndefined and kString).
bool IsSupported(DataType type);
// The element count of `shape` (1 for rank 0). InvalidArgument for a negative dimension or a
// count above 2^40 elements.
absl::StatusOr<int64_t> ElementCount(std::span<const int64_t> shape);

namespace internal {

// Element storage for tensors. Blocks of 1 KiB to 16 MiB freed on a thread are kept there (at most
// 64 blocks, 64 MiB) for the next allocation of the same size: a run allocates the same
// activation sizes node after node and run after run, and this keeps them off malloc. The
// allocator leaves elements unset (Tensor's constructors set what they promise).
// Thread-safety: any thread may allocate and free; a block is cached by the thread that frees it.
void* AllocateTensorBytes(size_t bytes);
void FreeTensorBytes(void* p, size_t bytes) noexcept;

template <typename T>
struct TensorAllocator {
  using value_type = T;
  TensorAllocator() = default;
  template <typename U>
  TensorAllocator(const TensorAllocator<U>&) {}  // NOLINT: rebinding is implicit
  T* allocate(size_t n) { return static_cast<T*>(AllocateTensorBytes(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { FreeTensorBytes(p, n * sizeof(T)); }
  // Default-initialises (leaves bytes unset) where std::allocator would zero.
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const TensorAllocator&, const TensorAllocator&) { return true; }
};

}  // namespace internal

class Tensor {
 public:
  // Tag of the constructor that leaves the elements unset.
  struct Uninitialized {};

  // An empty float tensor of shape [0].
  Tensor() : type_(DataType::kFloat), shape_{0} {}
  // Copies copy the elements (as one block); moves take them.
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  // Zero-filled. REQUIRES: IsSupported(type); every dimension >= 0 and the count checked by
  // ElementCount (a broken requirement is a bug and aborts).
  Tensor(DataType type, std::vector<int64_t> shape);
  // The same with the elements unset, for a kernel that writes every one of them before anyone
  // reads the tensor. Same REQUIRES.
  Tensor(DataType type, std::vector<int64_t> shape, Uninitialized);
  // A tensor of `shape` holding `values`. REQUIRES: values.size() == the shape's element count.
  template <typename T>
  static Tensor From(std::vector<int64_t> shape, std::span<const T> values) {
    Tensor t(DataTypeOf<T>(), std::move(shape));
    SEEDANCE_CHECK(static_cast<int64_t>(values.size()) == t.size())
        << values.size() << " values for " << t.size() << " elements";
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <typename T>
  static Tensor Scalar(T value) {
    return From<T>({}, std::span<const T>(&value, 1));
  }

  DataType type() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t size() const { return size_; }  // element count
  size_t bytes() const { return bytes_.size(); }

  // The elements as T. REQUIRES: DataTypeOf<T>() == type() (aborts otherwise).
  template <typename T>
  T* data() {
    SEEDANCE_CHECK(DataTypeOf<T>() == type_)
        << "tensor of " << DataTypeName(type_) << " read as " << DataTypeName(DataTypeOf<T>());
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T>
  const T* data() const {
    SEEDANCE_CHECK(DataTypeOf<T>() == type_)
        << "tensor of " << DataTypeName(type_) << " read as " << DataTypeName(DataTypeOf<T>());
    return reinterpret_cast<const T*>(bytes_.data());
  }
  template <typename T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<size_t>(size_)};
  }
  std::byte* raw() { return bytes_.data(); }
  const std::byte* raw() const { return bytes_.data(); }

  // The same elements under another shape with the same element count. REQUIRES: equal counts.
  // The rvalue form moves the elements instead of copying them; the moved-from tensor may then
  // only be assigned to or destroyed.
  Tensor Reshaped(std::vector<int64_t> shape) const&;
  Tensor Reshaped(std::vector<int64_t> shape) &&;
  // Element `i` converted to double / int64 (bool -> 0/1, 16-bit floats widened). For indices,
  // shapes and attributes read from small tensors. REQUIRES: 0 <= i < size().
  double AsDouble(int64_t i) const;
  int64_t AsInt64(int64_t i) const;
  // All elements as int64 (for shape, axes and index inputs).
  std::vector<int64_t> ToInt64Vector() const;

  // "float[2,3]"; for messages.
  std::string Describe() const;

 private:
  DataType type_;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  std::vector<std::byte, internal::TensorAllocator<std::byte>> bytes_;
};

// "[2,3,4]" for messages.
std::string ShapeString(std::span<const int64_t> shape);

}  // namespace seedance::model
