// Internal: a small strict JSON parser for profiles. A profile of 1,000 nodes x 300 samples holds
// millions of numbers; this parser reads them several times faster than nlohmann::json's DOM
// parser (contiguous input, std::from_chars, no token buffer). It accepts exactly RFC 8259 JSON
// (UTF-8 checked, nesting limited to kMaxDepth) and reports only that it failed and where; callers
// use nlohmann's parser to explain a failure. The value API mirrors the subset of nlohmann::json
// that the profile reader uses, so one reader template serves both.
//
// Thread-safety: values are immutable after parsing.
#ifndef SEEDANCE_TELEMETRY_FAST_JSON_H_
#define SEEDANCE_TELEMETRY_FAST_JSON_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seedance::telemetry::internal {

class JValue {
 public:
  enum class Type : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Array = std::vector<JValue>;
  using Object = std::vector<std::pair<std::string, JValue>>;

  JValue() = default;
  JValue(JValue&& o) noexcept { *this = std::move(o); }
  JValue& operator=(JValue&& o) noexcept;
  JValue(const JValue&) = delete;
  JValue& operator=(const JValue&) = delete;
  ~JValue() { Reset(); }

  bool is_null() const { return type_ == Type::kNull; }
  bool is_boolean() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kDouble; }
  bool is_number_integer() const { return type_ == Type::kInt; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Elements of an array, members of an object; 0 otherwise.
  size_t size() const;
  // REQUIRES: is_array() and i < size().
  const JValue& operator[](size_t i) const { return (*u_.a)[i]; }
  // The member named `key` of an object, or nullptr.
  const JValue* Find(std::string_view key) const;

  template <typename T>
  T get() const;

  // Parses `text`; on failure returns false and sets *error_offset.
  static bool Parse(std::string_view text, JValue* out, size_t* error_offset);

  static constexpr int kMaxDepth = 256;

 private:
  friend class JsonParser;
  void Reset();

  Type type_ = Type::kNull;
  union {
    bool b;
    int64_t i;
    double d;
    std::string* s;
    Array* a;
    Object* o;
  } u_{};
};

template <>
inline bool JValue::get<bool>() const {
  return u_.b;
}
template <>
inline double JValue::get<double>() const {
  return type_ == Type::kInt ? static_cast<double>(u_.i) : u_.d;
}
template <>
inline int64_t JValue::get<int64_t>() const {
  return type_ == Type::kInt ? u_.i : static_cast<int64_t>(u_.d);
}
template <>
inline int JValue::get<int>() const {
  return static_cast<int>(get<int64_t>());
}
template <>
inline std::string JValue::get<std::string>() const {
  return *u_.s;
}

}  // namespace seedance::telemetry::internal

#endif  // SEEDANCE_TELEMETRY_FAST_JSON_H_
