#include "seedance/policy/expr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::policy {

namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

enum class Op : uint8_t {
  kConst,   // value
  kMetric,  // metric index
  kNeg,
  kNot,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kLt,
  kLe,
  kGt,
  kGe,
  kEq,
  kNe,
  kAnd,
  kOr,
};

struct Instr {
  Op op = Op::kConst;
  double value = 0;
  int metric = 0;
};

}  // namespace

struct Expr::Program {
  std::string text;
  std::vector<std::string> metrics;  // sorted, unique
  std::vector<Instr> code;           // postfix
  int max_stack = 0;
};

namespace {

enum class Type { kNumber, kBool };

// Recursive descent over `text`, emitting postfix code. The first error wins.
class Parser {
 public:
  Parser(std::string_view text, const std::vector<std::string>& known)
      : text_(text), known_(known) {}

  absl::StatusOr<Expr::Program> Run() {
    Expr::Program p;
    p.text = std::string(text_);
    Skip();
    if (pos_ == text_.size()) {
      Error(pos_, "the condition is empty");
      return Status();
    }
    std::optional<Type> t = Or();
    if (!error_.empty()) return Status();
    if (pos_ != text_.size()) {
      Error(pos_, absl::StrCat("unexpected '", Clipped(Rest()), "'"));
      return Status();
    }
    if (*t != Type::kBool) {
      Error(0, "the condition is a number, not a comparison (write e.g. 'x > 0')");
      return Status();
    }
    p.metrics = metrics_;
    p.code = std::move(code_);
    p.max_stack = StackNeed(p.code);
    // Metric indices refer to positions in the sorted list.
    for (Instr& in : p.code) {
      if (in.op != Op::kMetric) continue;
      const std::string& name = names_[in.metric];
      in.metric = static_cast<int>(std::lower_bound(p.metrics.begin(), p.metrics.end(), name) -
                                   p.metrics.begin());
    }
    return p;
  }

  int error_column() const { return static_cast<int>(error_pos_) + 1; }

 private:
  static int StackNeed(const std::vector<Instr>& code) {
    int depth = 0, most = 0;
    for (const Instr& in : code) {
      switch (in.op) {
        case Op::kConst:
        case Op::kMetric:
          ++depth;
          break;
        case Op::kNeg:
        case Op::kNot:
          break;
        default:
          --depth;
      }
      most = std::max(most, depth);
    }
    return most;
  }

  std::string Clipped(std::string_view s) const {
    return base::ForTerminal(base::Clip(std::string(s), 20));
  }
  std::string_view Rest() const { return text_.substr(pos_); }

  void Error(size_t at, std::string message) {
    if (error_.empty()) {
      error_pos_ = std::min(at, text_.size());
      error_ = std::move(message);
    }
  }
  absl::Status Status() const {
    return absl::InvalidArgumentError(absl::StrCat("column ", error_column(), ": ", error_));
  }
  bool Failed() const { return !error_.empty(); }

  void Skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  // Consumes `tok` (and the blanks after it) when the text continues with it.
  bool Accept(std::string_view tok) {
    if (text_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    Skip();
    return true;
  }
  bool Peek(std::string_view tok) const { return text_.substr(pos_, tok.size()) == tok; }

  void Emit(Op op) { code_.push_back(Instr{op, 0, 0}); }

  bool Expect(Type got, Type want, size_t at, std::string_view op) {
    if (got == want) return true;
    Error(at, want == Type::kBool
                  ? absl::StrCat("'", std::string(op),
                                 "' needs a condition on each side (a comparison such "
                                 "as 'x > 0'), not a number")
                  : absl::StrCat("'", std::string(op), "' needs numbers, not a condition"));
    return false;
  }

  bool Enter(size_t at) {
    if (++depth_ > kMaxExprDepth) {
      Error(at, absl::StrCat("nested deeper than ", kMaxExprDepth, " levels"));
      return false;
    }
    return true;
  }

  std::optional<Type> Or() {
    std::optional<Type> left = And();
    while (left && Peek("||")) {
      const size_t at = pos_;
      Accept("||");
      std::optional<Type> right = And();
      if (!right) return std::nullopt;
      if (!Expect(*left, Type::kBool, at, "||") || !Expect(*right, Type::kBool, at, "||")) {
        return std::nullopt;
      }
      Emit(Op::kOr);
    }
    return left;
  }

  std::optional<Type> And() {
    std::optional<Type> left = Not();
    while (left && Peek("&&")) {
      const size_t at = pos_;
      Accept("&&");
      std::optional<Type> right = Not();
      if (!right) return std::nullopt;
      if (!Expect(*left, Type::kBool, at, "&&") || !Expect(*right, Type::kBool, at, "&&")) {
        return std::nullopt;
      }
      Emit(Op::kAnd);
    }
    return left;
  }

  std::optional<Type> Not() {
    if (Peek("!") && !Peek("!=")) {
      const size_t at = pos_;
      Accept("!");
      if (!Enter(at)) return std::nullopt;
      std::optional<Type> t = Not();
      --depth_;
      if (!t || !Expect(*t, Type::kBool, at, "!")) return std::nullopt;
      Emit(Op::kNot);
      return Type::kBool;
    }
    return Compare();
  }

  std::optional<Type> Compare() {
    std::optional<Type> left = Sum();
    if (!left) return std::nullopt;
    static constexpr std::pair<std::string_view, Op> kOps[] = {{"<=", Op::kLe}, {">=", Op::kGe},
                                                               {"==", Op::kEq}, {"!=", Op::kNe},
                                                               {"<", Op::kLt},  {">", Op::kGt}};
    for (const auto& [tok, op] : kOps) {
      if (!Peek(tok)) continue;
      const size_t at = pos_;
      Accept(tok);
      std::optional<Type> right = Sum();
      if (!right) return std::nullopt;
      if (!Expect(*left, Type::kNumber, at, tok) || !Expect(*right, Type::kNumber, at, tok)) {
        return std::nullopt;
      }
      Emit(op);
      for (const auto& [tok2, op2] : kOps) {
        if (Peek(tok2)) {
          Error(pos_, absl::StrCat("comparisons do not chain: write 'a ", std::string(tok),
                                   " b && b ", std::string(tok2), " c'"));
          return std::nullopt;
        }
      }
      return Type::kBool;
    }
    if (Peek("=") && !Peek("==")) {
      Error(pos_, "'=' is not an operator (did you mean '=='?)");
      return std::nullopt;
    }
    return left;
  }

  std::optional<Type> Sum() {
    std::optional<Type> left = Product();
    while (left && (Peek("+") || Peek("-"))) {
      const size_t at = pos_;
      const bool add = Accept("+") || !Accept("-");
      std::optional<Type> right = Product();
      if (!right) return std::nullopt;
      const char* tok = add ? "+" : "-";
      if (!Expect(*left, Type::kNumber, at, tok) || !Expect(*right, Type::kNumber, at, tok)) {
        return std::nullopt;
      }
      Emit(add ? Op::kAdd : Op::kSub);
    }
    return left;
  }

  std::optional<Type> Product() {
    std::optional<Type> left = Unary();
    while (left && (Peek("*") || Peek("/"))) {
      const size_t at = pos_;
      const bool mul = Accept("*") || !Accept("/");
      std::optional<Type> right = Unary();
      if (!right) return std::nullopt;
      const char* tok = mul ? "*" : "/";
      if (!Expect(*left, Type::kNumber, at, tok) || !Expect(*right, Type::kNumber, at, tok)) {
        return std::nullopt;
      }
      Emit(mul ? Op::kMul : Op::kDiv);
    }
    return left;
  }

  std::optional<Type> Unary() {
    if (Peek("-") || Peek("+")) {
      const size_t at = pos_;
      const bool neg = Accept("-") || !Accept("+");
      if (!Enter(at)) return std::nullopt;
      std::optional<Type> t = Unary();
      --depth_;
      if (!t || !Expect(*t, Type::kNumber, at, neg ? "-" : "+")) return std::nullopt;
      if (neg) Emit(Op::kNeg);
      return Type::kNumber;
    }
    return Primary();
  }

  static bool IsIdentStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9') || c == '.'; }
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  std::optional<Type> Primary() {
    if (pos_ == text_.size()) {
      Error(pos_, "unexpected end of the condition");
      return std::nullopt;
    }
    const size_t at = pos_;
    const char c = text_[pos_];
    if (c == '(') {
      Accept("(");
      if (!Enter(at)) return std::nullopt;
      std::optional<Type> t = Or();
      --depth_;
      if (!t) return std::nullopt;
      if (!Accept(")")) {
        Error(pos_, pos_ == text_.size()
                        ? absl::StrCat("missing ')' for the '(' at column ", at + 1)
                        : absl::StrCat("expected ')', got '", Clipped(Rest()), "'"));
        return std::nullopt;
      }
      return t;
    }
    if (IsDigit(c) || (c == '.' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1]))) {
      return Number();
    }
    if (IsIdentStart(c)) return Identifier();
    Error(at, absl::StrCat("expected a number, a metric or '(', got '", Clipped(Rest()), "'"));
    return std::nullopt;
  }

  std::optional<Type> Number() {
    const size_t at = pos_;
    size_t end = pos_;
    while (end < text_.size() && IsDigit(text_[end])) ++end;
    if (end < text_.size() && text_[end] == '.') {
      ++end;
      while (end < text_.size() && IsDigit(text_[end])) ++end;
    }
    if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
      size_t e = end + 1;
      if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
      if (e < text_.size() && IsDigit(text_[e])) {
        end = e;
        while (end < text_.size() && IsDigit(text_[end])) ++end;
      }
    }
    if (end < text_.size() && IsIdentChar(text_[end])) {
      Error(at, absl::StrCat("malformed number '", Clipped(text_.substr(at, end + 1 - at)), "'"));
      return std::nullopt;
    }
    double v = 0;
    const auto [ptr, ec] = std::from_chars(text_.data() + at, text_.data() + end, v);
    if (ec != std::errc() || ptr != text_.data() + end || !std::isfinite(v)) {
      Error(at, absl::StrCat("number '", Clipped(text_.substr(at, end - at)), "' is out of range"));
      return std::nullopt;
    }
    pos_ = end;
    Skip();
    code_.push_back(Instr{Op::kConst, v, 0});
    return Type::kNumber;
  }

  std::optional<Type> Identifier() {
    const size_t at = pos_;
    size_t end = pos_;
    while (end < text_.size() && IsIdentChar(text_[end])) ++end;
    const std::string name(text_.substr(at, end - at));
    pos_ = end;
    Skip();
    if (name == "true" || name == "false") {
      code_.push_back(Instr{Op::kConst, name == "true" ? 1.0 : 0.0, 0});
      return Type::kBool;
    }
    if (name == "and" || name == "or" || name == "not") {
      Error(at, absl::StrCat("'", name, "' is not an operator (write ",
                             name == "and"  ? "'&&'"
                             : name == "or" ? "'||'"
                                            : "'!'",
                             ")"));
      return std::nullopt;
    }
    if (std::find(known_.begin(), known_.end(), name) == known_.end()) {
      const std::string guess = base::ClosestMatch(name, known_);
      Error(at, absl::StrCat("unknown metric '", Clipped(name), "'",
                             guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)"),
                             "; known: ", KnownList()));
      return std::nullopt;
    }
    auto it = std::find(names_.begin(), names_.end(), name);
    if (it == names_.end()) {
      names_.push_back(name);
      metrics_.insert(std::lower_bound(metrics_.begin(), metrics_.end(), name), name);
      it = names_.end() - 1;
    }
    code_.push_back(Instr{Op::kMetric, 0, static_cast<int>(it - names_.begin())});
    return Type::kNumber;
  }

  std::string KnownList() const {
    std::string out;
    for (const std::string& k : known_) absl::StrAppend(&out, out.empty() ? "" : ", ", k);
    return out.empty() ? "(none)" : out;
  }

  std::string_view text_;
  const std::vector<std::string>& known_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Instr> code_;
  std::vector<std::string> names_;    // in order of first use (code_ indices, before Run remaps)
  std::vector<std::string> metrics_;  // sorted
  size_t error_pos_ = 0;
  std::string error_;
};

// Three-valued logic on doubles: 1 true, 0 false, NaN unknown.
double Tri(bool b) { return b ? 1.0 : 0.0; }
double Compare(Op op, double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kUnknown;
  switch (op) {
    case Op::kLt:
      return Tri(a < b);
    case Op::kLe:
      return Tri(a <= b);
    case Op::kGt:
      return Tri(a > b);
    case Op::kGe:
      return Tri(a >= b);
    case Op::kEq:
      return Tri(a == b);
    case Op::kNe:
      return Tri(a != b);
    default:
      return kUnknown;
  }
}

}  // namespace

Expr::Expr() {
  static const std::shared_ptr<const Program> kFalse = [] {
    auto p = std::make_shared<Program>();
    p->text = "false";
    p->code.push_back(Instr{Op::kConst, 0, 0});
    p->max_stack = 1;
    return p;
  }();
  program_ = kFalse;
}

absl::StatusOr<Expr> Expr::Parse(std::string_view text, const std::vector<std::string>& known,
                                 int* error_column) {
  if (text.size() > kMaxExprLength) {
    if (error_column != nullptr) *error_column = static_cast<int>(kMaxExprLength) + 1;
    return absl::InvalidArgumentError(absl::StrCat("column ", kMaxExprLength + 1,
                                                   ": the condition is longer than ",
                                                   kMaxExprLength, " bytes"));
  }
  Parser parser(text, known);
  absl::StatusOr<Program> p = parser.Run();
  if (!p.ok()) {
    if (error_column != nullptr) *error_column = parser.error_column();
    return p.status();
  }
  return Expr(std::make_shared<const Program>(*std::move(p)));
}

bool Expr::Eval(const std::map<std::string, double>& metrics) const {
  const Program& p = *program_;
  // Values of the metrics the condition reads, looked up once.
  double values_small[16];
  std::vector<double> values_big;
  double* values = values_small;
  if (p.metrics.size() > 16) {
    values_big.resize(p.metrics.size());
    values = values_big.data();
  }
  for (size_t i = 0; i < p.metrics.size(); ++i) {
    auto it = metrics.find(p.metrics[i]);
    values[i] = it == metrics.end() ? kUnknown : it->second;
  }
  std::vector<double> stack;
  stack.reserve(static_cast<size_t>(p.max_stack));
  for (const Instr& in : p.code) {
    switch (in.op) {
      case Op::kConst:
        stack.push_back(in.value);
        continue;
      case Op::kMetric:
        stack.push_back(values[in.metric]);
        continue;
      case Op::kNeg:
        stack.back() = -stack.back();
        continue;
      case Op::kNot:
        stack.back() = std::isnan(stack.back()) ? kUnknown : 1.0 - stack.back();
        continue;
      default:
        break;
    }
    const double b = stack.back();
    stack.pop_back();
    double& a = stack.back();
    switch (in.op) {
      case Op::kAdd:
        a = a + b;
        break;
      case Op::kSub:
        a = a - b;
        break;
      case Op::kMul:
        a = a * b;
        break;
      case Op::kDiv:
        a = b == 0 ? kUnknown : a / b;
        break;
      case Op::kAnd:
        a = (a == 0 || b == 0) ? 0.0 : (std::isnan(a) || std::isnan(b)) ? kUnknown : 1.0;
        break;
      case Op::kOr:
        a = (a == 1 || b == 1) ? 1.0 : (std::isnan(a) || std::isnan(b)) ? kUnknown : 0.0;
        break;
      default:
        a = Compare(in.op, a, b);
    }
  }
  return stack.size() == 1 && stack.back() == 1.0;
}

const std::string& Expr::text() const { return program_->text; }
const std::vector<std::string>& Expr::metrics() const { return program_->metrics; }

}  // namespace seedance::policy
