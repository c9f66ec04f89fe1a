// Conditions over live metrics: a small, statically typed expression language.
//
//   gpu_free_pct < 10 && pending_pods > 100
//   !(cordoned_nodes >= nodes / 2) || fragmentation_ratio * 100 > 35.5
//
// Grammar (lowest precedence first; every binary operator is left-associative):
//   or      := and ( "||" and )*                 boolean operands
//   and     := not ( "&&" not )*                 boolean operands
//   not     := "!" not | compare
//   compare := sum [ ("<" | "<=" | ">" | ">=" | "==" | "!=") sum ]   numbers -> boolean;
//                                                no chains (a < b < c is refused)
//   sum     := product ( ("+" | "-") product )*  numbers
//   product := unary ( ("*" | "/") unary )*      numbers
//   unary   := "-" unary | "+" unary | primary
//   primary := NUMBER | METRIC | "true" | "false" | "(" or ")"
// NUMBER is a decimal (1, 0.5, 1e3); METRIC a name from the caller's list of known metrics
// ([A-Za-z_][A-Za-z0-9_.]*). Types are checked at parse time: the whole expression must be a
// condition (boolean), `pending_pods && 1` and `(a < b) + 1` are refused, and so is an unknown
// metric name (with a did-you-mean).
//
// Evaluation never fails and never crashes. A metric missing from the map, a NaN metric or a
// division by zero makes the value "unknown"; a comparison with an unknown operand is unknown;
// `!`, `&&` and `||` follow Kleene's three-valued logic (false && unknown = false, true ||
// unknown = true); a condition that ends up unknown does not hold. So a rule never fires on
// data that is not there.
//
// Thread-safety: an Expr is immutable after Parse; Eval may be called from any number of threads.
#ifndef SEEDANCE_POLICY_EXPR_H_
#define SEEDANCE_POLICY_EXPR_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::policy {

// Limits on what one expression may make the parser do (refused with InvalidArgument).
inline constexpr size_t kMaxExprLength = 4096;  // bytes
inline constexpr int kMaxExprDepth = 64;        // nested parentheses and unary operators

class Expr {
 public:
  // The constant condition `false`.
  Expr();

  // Parses `text` against the known metric names. Errors are InvalidArgument with the message
  // "column C: what was wrong" (C is 1-based, in bytes); `error_column`, when given, receives C
  // on failure.
  static absl::StatusOr<Expr> Parse(std::string_view text, const std::vector<std::string>& known,
                                    int* error_column = nullptr);

  // True when the condition holds for `metrics` (see the header comment for unknown values).
  bool Eval(const std::map<std::string, double>& metrics) const;

  // The text it was parsed from, and the metric names it reads (sorted, unique).
  const std::string& text() const;
  const std::vector<std::string>& metrics() const;

  struct Program;  // the compiled form (postfix), shared between copies

 private:
  explicit Expr(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const Program> program_;
};

}  // namespace seedance::policy

#endif  // SEEDANCE_POLICY_EXPR_H_
