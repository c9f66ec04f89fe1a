#include "fast_json.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace seedance::telemetry::internal {

JValue& JValue::operator=(JValue&& o) noexcept {
  if (this != &o) {
    Reset();
    type_ = o.type_;
    u_ = o.u_;
    o.type_ = Type::kNull;
    o.u_.i = 0;
  }
  return *this;
}

void JValue::Reset() {
  switch (type_) {
    case Type::kString:
      delete u_.s;
      break;
    case Type::kArray:
      delete u_.a;
      break;
    case Type::kObject:
      delete u_.o;
      break;
    default:
      break;
  }
  type_ = Type::kNull;
  u_.i = 0;
}

size_t JValue::size() const {
  if (type_ == Type::kArray) return u_.a->size();
  if (type_ == Type::kObject) return u_.o->size();
  return 0;
}

const JValue* JValue::Find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  // Last one wins for duplicate keys, as in nlohmann::json.
  for (auto it = u_.o->rbegin(); it != u_.o->rend(); ++it) {
    if (it->first == key) return &it->second;
  }
  return nullptr;
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view text)
      : p_(text.data()), begin_(text.data()), end_(text.data() + text.size()) {}

  bool ParseDocument(JValue* out) {
    SkipWs();
    if (!Value(out, 0)) return false;
    SkipWs();
    return p_ == end_ || Fail();
  }
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }

 private:
  bool Fail() { return false; }
  void SkipWs() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Literal(const char* word, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  bool Value(JValue* out, int depth) {
    if (p_ >= end_) return false;
    switch (*p_) {
      case '{':
        return ObjectValue(out, depth);
      case '[':
        return ArrayValue(out, depth);
      case '"': {
        auto s = std::make_unique<std::string>();
        if (!String(s.get())) return false;
        out->type_ = JValue::Type::kString;
        out->u_.s = s.release();
        return true;
      }
      case 't':
        if (!Literal("true", 4)) return false;
        out->type_ = JValue::Type::kBool;
        out->u_.b = true;
        return true;
      case 'f':
        if (!Literal("false", 5)) return false;
        out->type_ = JValue::Type::kBool;
        out->u_.b = false;
        return true;
      case 'n':
        if (!Literal("null", 4)) return false;
        out->type_ = JValue::Type::kNull;
        return true;
      default:
        return Number(out);
    }
  }

  bool ObjectValue(JValue* out, int depth) {
    if (depth >= JValue::kMaxDepth) return false;
    ++p_;  // '{'
    auto obj = std::make_unique<JValue::Object>();
    SkipWs();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
    } else {
      for (;;) {
        SkipWs();
        if (p_ >= end_ || *p_ != '"') return false;
        std::string key;
        if (!String(&key)) return false;
        SkipWs();
        if (p_ >= end_ || *p_ != ':') return false;
        ++p_;
        SkipWs();
        obj->emplace_back(std::move(key), JValue());
        if (!Value(&obj->back().second, depth + 1)) return false;
        SkipWs();
        if (p_ >= end_) return false;
        if (*p_ == ',') {
          ++p_;
          continue;
        }
        if (*p_ == '}') {
          ++p_;
          break;
        }
        return false;
      }
    }
    out->type_ = JValue::Type::kObject;
    out->u_.o = obj.release();
    return true;
  }

  bool ArrayValue(JValue* out, int depth) {
    if (depth >= JValue::kMaxDepth) return false;
    ++p_;  // '['
    auto arr = std::make_unique<JValue::Array>();
    SkipWs();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
    } else {
      for (;;) {
        SkipWs();
        arr->emplace_back();
        if (!Value(&arr->back(), depth + 1)) return false;
        SkipWs();
        if (p_ >= end_) return false;
        if (*p_ == ',') {
          ++p_;
          continue;
        }
        if (*p_ == ']') {
          ++p_;
          break;
        }
        return false;
      }
    }
    out->type_ = JValue::Type::kArray;
    out->u_.a = arr.release();
    return true;
  }

  static bool Digit(char c) { return c >= '0' && c <= '9'; }

  bool Number(JValue* out) {
    const char* start = p_;
    const char* q = p_;
    if (q < end_ && *q == '-') ++q;
    if (q >= end_) return false;
    if (*q == '0') {
      ++q;
    } else if (Digit(*q)) {
      while (q < end_ && Digit(*q)) ++q;
    } else {
      return false;
    }
    bool integer = true;
    if (q < end_ && *q == '.') {
      integer = false;
      ++q;
      if (q >= end_ || !Digit(*q)) return false;
      while (q < end_ && Digit(*q)) ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      integer = false;
      ++q;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q >= end_ || !Digit(*q)) return false;
      while (q < end_ && Digit(*q)) ++q;
    }
    if (integer) {
      int64_t v = 0;
      auto r = std::from_chars(start, q, v);
      if (r.ec == std::errc() && r.ptr == q) {
        out->type_ = JValue::Type::kInt;
        out->u_.i = v;
        p_ = q;
        return true;
      }
      // Out of int64 range: keep it as a double, as nlohmann does for huge values.
    }
    double d = 0;
    auto r = std::from_chars(start, q, d);
    if (r.ptr != q || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) return false;
    if (r.ec == std::errc::result_out_of_range || !std::isfinite(d)) return false;
    out->type_ = JValue::Type::kDouble;
    out->u_.d = d;
    p_ = q;
    return true;
  }

  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool Hex4(unsigned* v) {
    if (end_ - p_ < 4) return false;
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = Hex(p_[k]);
      if (h < 0) return false;
      *v = *v * 16 + static_cast<unsigned>(h);
    }
    p_ += 4;
    return true;
  }
  static void AppendUtf8(std::string* s, unsigned cp) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  // One UTF-8 sequence starting at p_ (a byte >= 0x80), validated (no overlongs, surrogates or
  // code points above U+10FFFF).
  bool Utf8(std::string* s) {
    const auto b0 = static_cast<unsigned char>(*p_);
    int len = 0;
    unsigned cp = 0, min = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
      cp = b0 & 0x1F;
      min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      cp = b0 & 0x0F;
      min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      cp = b0 & 0x07;
      min = 0x10000;
    } else {
      return false;
    }
    if (end_ - p_ < len) return false;
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(p_[k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    s->append(p_, static_cast<size_t>(len));
    p_ += len;
    return true;
  }

  bool String(std::string* s) {
    ++p_;  // opening quote
    for (;;) {
      // Fast path: a run of plain ASCII.
      const char* run = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20 &&
             static_cast<unsigned char>(*p_) < 0x80) {
        ++p_;
      }
      s->append(run, static_cast<size_t>(p_ - run));
      if (p_ >= end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c >= 0x80) {
        if (!Utf8(s)) return false;
        continue;
      }
      // Escape.
      ++p_;
      if (p_ >= end_) return false;
      const char e = *p_++;
      switch (e) {
        case '"':
          s->push_back('"');
          break;
        case '\\':
          s->push_back('\\');
          break;
        case '/':
          s->push_back('/');
          break;
        case 'b':
          s->push_back('\b');
          break;
        case 'f':
          s->push_back('\f');
          break;
        case 'n':
          s->push_back('\n');
          break;
        case 'r':
          s->push_back('\r');
          break;
        case 't':
          s->push_back('\t');
          break;
        case 'u': {
          unsigned cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!Hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
          }
          AppendUtf8(s, cp);
          break;
        }
        default:
          return false;
      }
    }
  }

  const char* p_;
  const char* begin_;
  const char* end_;
};

bool JValue::Parse(std::string_view text, JValue* out, size_t* error_offset) {
  JsonParser parser(text);
  JValue v;
  if (!parser.ParseDocument(&v)) {
    *error_offset = parser.offset();
    return false;
  }
  *out = std::move(v);
  return true;
}

}  // namespace seedance::telemetry::internal
