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

// The per-thread cache of freed element blocks (internal::AllocateTensorBytes).
constexpr size_t kMinCachedBytes = size_t{1} << 10;
constexpr size_t kMaxCachedBytes = size_t{16} << 20;
constexpr size_t kMaxCachedBlocks = 64;
constexpr size_t kMaxCacheBytes = size_t{64} << 20;

// 0: this thread's cache not made yet; 1: alive; 2: destroyed (thread exit; tensors freed after
// it, by other thread_local or static objects, go straight to operator delete).
thread_local int cache_state = 0;

class BlockCache {
 public:
  BlockCache() { cache_state = 1; }
  ~BlockCache() {
    cache_state = 2;
    for (const Block& b : blocks_) ::operator delete(b.p);
  }
  // A cached block of exactly `bytes`, or nullptr.
  void* Take(size_t bytes) {
    for (size_t i = blocks_.size(); i-- > 0;) {  // the most recently freed first
      if (blocks_[i].bytes != bytes) continue;
      void* p = blocks_[i].p;
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
      total_ -= bytes;
      return p;
    }
    return nullptr;
  }
  // Keeps `p` when there is room; false when the caller must free it.
  bool Keep(void* p, size_t bytes) {
    if (blocks_.size() >= kMaxCachedBlocks || total_ + bytes > kMaxCacheBytes) return false;
    blocks_.push_back({p, bytes});
    total_ += bytes;
    return true;
  }

 private:
  struct Block {
    void* p;
    size_t bytes;
  };
  std::vector<Block> blocks_;
  size_t total_ = 0;
};

BlockCache& ThreadBlockCache() {
  thread_local BlockCache cache;
  return cache;
}

// Sanitized builds bypass the cache: a block kept for reuse would hide a use after free of tensor
// storage from AddressSanitizer (it poisons only what is returned to it).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

bool Cacheable(size_t bytes) {
  return !kSanitized && bytes >= kMinCachedBytes && bytes <= kMaxCachedBytes && cache_state != 2;
}

}  // namespace

namespace internal {

void* AllocateTensorBytes(size_t bytes) {
  if (Cacheable(bytes)) {
    if (void* p = ThreadBlockCache().Take(bytes)) return p;
  }
  return ::operator new(bytes);
}

void FreeTensorBytes(void* p, size_t bytes) noexcept {
  if (Cacheable(bytes) && ThreadBlockCache().Keep(p, bytes)) return;
  ::operator delete(p);
}

}  // namespace internal

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

Tensor::Tensor(DataType type, std::vector<int64_t> shape)
    : Tensor(type, std::move(shape), Uninitialized{}) {
  std::fill(bytes_.begin(), bytes_.end(), std::byte{0});
}

Tensor::Tensor(DataType type, std::vector<int64_t> shape, Uninitialized)
    : type_(type), shape_(std::move(shape)) {
  SEEDANCE_CHECK(IsSupported(type_)) << "tensor of " << DataTypeName(type_);
  absl::StatusOr<int64_t> count = ElementCount(shape_);
  SEEDANCE_CHECK(count.ok()) << "tensor shape refused: " << count.status().message();
  size_ = *count;
  bytes_.resize(static_cast<size_t>(size_) * ElementSize(type_));  // unset (TensorAllocator)
}

Tensor::Tensor(const Tensor& other) : type_(other.type_), shape_(other.shape_), size_(other.size_) {
  bytes_.resize(other.bytes_.size());  // unset (TensorAllocator), then copied as one block
  if (!bytes_.empty()) std::memcpy(bytes_.data(), other.bytes_.data(), bytes_.size());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  type_ = other.type_;
  shape_ = other.shape_;
  size_ = other.size_;
  bytes_.resize(other.bytes_.size());
  if (!bytes_.empty()) std::memcpy(bytes_.data(), other.bytes_.data(), bytes_.size());
  return *this;
}

Tensor Tensor::Reshaped(std::vector<int64_t> shape) const& {
  Tensor t = *this;
  return std::move(t).Reshaped(std::move(shape));
}

Tensor Tensor::Reshaped(std::vector<int64_t> shape) && {
  absl::StatusOr<int64_t> count = ElementCount(shape);
  SEEDANCE_CHECK(count.ok() && *count == size_)
      << "reshape of " << Describe() << " to " << ShapeString(shape);
  Tensor t = std::move(*this);
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
