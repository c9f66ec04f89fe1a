#include "seedance/policy/expr.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::policy {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kKnown = {
    "gpu_free_pct", "pending_pods", "nodes", "cordoned_nodes", "x", "y"};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool Holds(std::string_view text, const std::map<std::string, double>& m) {
  absl::StatusOr<Expr> e = Expr::Parse(text, kKnown);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status();
  return e.ok() && e->Eval(m);
}

std::string ErrorOf(std::string_view text, int* column = nullptr) {
  absl::StatusOr<Expr> e = Expr::Parse(text, kKnown, column);
  EXPECT_FALSE(e.ok()) << text;
  if (!e.ok()) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  }
  return e.ok() ? "" : std::string(e.status().message());
}

TEST(ExprTest, TheIssueExample) {
  EXPECT_TRUE(Holds("gpu_free_pct < 10 && pending_pods > 100",
                    {{"gpu_free_pct", 5}, {"pending_pods", 101}}));
  EXPECT_FALSE(Holds("gpu_free_pct < 10 && pending_pods > 100",
                     {{"gpu_free_pct", 5}, {"pending_pods", 100}}));
  EXPECT_FALSE(Holds("gpu_free_pct < 10 && pending_pods > 100",
                     {{"gpu_free_pct", 10}, {"pending_pods", 500}}));
}

TEST(ExprTest, ArithmeticPrecedence) {
  EXPECT_TRUE(Holds("1 + 2 * 3 == 7", {}));
  EXPECT_TRUE(Holds("(1 + 2) * 3 == 9", {}));
  EXPECT_TRUE(Holds("10 - 4 - 3 == 3", {}));  // left-associative
  EXPECT_TRUE(Holds("64 / 4 / 2 == 8", {}));  // left-associative
  EXPECT_TRUE(Holds("-2 * -3 == 6", {}));
  EXPECT_TRUE(Holds("- x + 1 == -4", {{"x", 5}}));
  EXPECT_TRUE(Holds("+x == 5", {{"x", 5}}));
  EXPECT_TRUE(Holds("1.5e1 == 15 && .5 == 0.5", {}));
}

TEST(ExprTest, LogicalPrecedence) {
  // && binds tighter than ||.
  EXPECT_TRUE(Holds("true || false && false", {}));
  EXPECT_FALSE(Holds("(true || false) && false", {}));
  // ! binds tighter than &&.
  EXPECT_FALSE(Holds("!true && false", {}));
  EXPECT_TRUE(Holds("!(true && false)", {}));
  EXPECT_TRUE(Holds("!!true", {}));
  // Comparisons bind tighter than && and looser than arithmetic.
  EXPECT_TRUE(Holds("x + 1 > y * 2 && x != y", {{"x", 5}, {"y", 2}}));
}

TEST(ExprTest, EveryComparison) {
  const std::map<std::string, double> m = {{"x", 2}, {"y", 3}};
  EXPECT_TRUE(Holds("x < y", m));
  EXPECT_TRUE(Holds("x <= y", m));
  EXPECT_TRUE(Holds("x <= 2", m));
  EXPECT_FALSE(Holds("x > y", m));
  EXPECT_TRUE(Holds("y >= 3", m));
  EXPECT_TRUE(Holds("x == 2", m));
  EXPECT_TRUE(Holds("x != y", m));
}

TEST(ExprTest, MissingOrNanMetricsNeverFire) {
  const std::map<std::string, double> nan = {{"x", kNaN}};
  EXPECT_FALSE(Holds("x < 1", nan));
  EXPECT_FALSE(Holds("x >= 1", nan));
  EXPECT_FALSE(Holds("x != 1", nan));    // unknown, not true
  EXPECT_FALSE(Holds("!(x < 1)", nan));  // !unknown is unknown
  EXPECT_FALSE(Holds("y > 0", {}));      // absent
  // Kleene logic: a known side decides when it can.
  EXPECT_TRUE(Holds("x < 1 || 1 < 2", nan));
  EXPECT_FALSE(Holds("x < 1 && 1 < 2", nan));
}

TEST(ExprTest, KleeneFalseAndUnknownIsFalse) {
  // false && unknown is false, so its negation holds.
  EXPECT_TRUE(Holds("!(1 > 2 && x < 1)", {{"x", kNaN}}));
  // true || unknown is true.
  EXPECT_TRUE(Holds("x < 1 || true", {{"x", kNaN}}));
}

TEST(ExprTest, DivisionByZeroIsUnknown) {
  EXPECT_FALSE(Holds("x / 0 > 0", {{"x", 1}}));
  EXPECT_FALSE(Holds("x / 0 <= 0", {{"x", 1}}));
  EXPECT_FALSE(Holds("x / y == 0", {{"x", 0}, {"y", 0}}));
  EXPECT_TRUE(Holds("x / y > 1 || nodes == 3", {{"x", 1}, {"y", 0}, {"nodes", 3}}));
}

TEST(ExprTest, InfinitiesCompare) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(Holds("x > 1e300", {{"x", inf}}));
  EXPECT_FALSE(Holds("x - x == 0", {{"x", inf}}));      // inf - inf is NaN: unknown
  EXPECT_TRUE(Holds("x * 1e300 > 1", {{"x", 1e300}}));  // overflow to inf still compares
}

TEST(ExprTest, UnknownMetricRefusedAtParseTimeWithSuggestion) {
  int column = 0;
  const std::string msg = ErrorOf("pending_pods > 1 && gpu_fre_pct < 10", &column);
  EXPECT_THAT(msg, HasSubstr("unknown metric 'gpu_fre_pct'"));
  EXPECT_THAT(msg, HasSubstr("did you mean 'gpu_free_pct'?"));
  EXPECT_THAT(msg, HasSubstr("column 21"));
  EXPECT_EQ(column, 21);
}

TEST(ExprTest, TypeErrors) {
  EXPECT_THAT(ErrorOf("pending_pods"), HasSubstr("is a number, not a comparison"));
  EXPECT_THAT(ErrorOf("pending_pods && x > 1"), HasSubstr("'&&' needs a condition"));
  EXPECT_THAT(ErrorOf("x > 1 || 2"), HasSubstr("'||' needs a condition"));
  EXPECT_THAT(ErrorOf("(x > 1) + 1 > 0"), HasSubstr("'+' needs numbers"));
  EXPECT_THAT(ErrorOf("!x"), HasSubstr("'!' needs a condition"));
  EXPECT_THAT(ErrorOf("-(x > 1)"), HasSubstr("'-' needs numbers"));
  EXPECT_THAT(ErrorOf("true < 1"), HasSubstr("'<' needs numbers"));
}

TEST(ExprTest, SyntaxErrorsNameTheColumn) {
  int column = 0;
  EXPECT_THAT(ErrorOf("", &column), HasSubstr("empty"));
  EXPECT_THAT(ErrorOf("x >", &column), HasSubstr("column 4: unexpected end"));
  EXPECT_EQ(column, 4);
  EXPECT_THAT(ErrorOf("(x > 1", &column), HasSubstr("missing ')' for the '(' at column 1"));
  EXPECT_THAT(ErrorOf("x > 1)", &column), HasSubstr("column 6: unexpected ')'"));
  EXPECT_THAT(ErrorOf("x = 1"), HasSubstr("did you mean '=='?"));
  EXPECT_THAT(ErrorOf("x > 1 and y > 1"), HasSubstr("unexpected 'and"));
  EXPECT_THAT(ErrorOf("x > 1 && not y"), HasSubstr("'not' is not an operator (write '!')"));
  EXPECT_THAT(ErrorOf("1 < x < 3"), HasSubstr("comparisons do not chain"));
  EXPECT_THAT(ErrorOf("x > 1e999"), HasSubstr("out of range"));
  EXPECT_THAT(ErrorOf("x > 12abc"), HasSubstr("malformed number"));
  EXPECT_THAT(ErrorOf("x > @"), HasSubstr("expected a number, a metric or '('"));
  EXPECT_THAT(ErrorOf("x > 1 &"), HasSubstr("unexpected '&'"));
}

TEST(ExprTest, DepthAndLengthLimits) {
  std::string deep(kMaxExprDepth + 1, '(');
  deep += "x > 1";
  deep += std::string(kMaxExprDepth + 1, ')');
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nested deeper than"));
  std::string nots(kMaxExprDepth + 1, '!');
  EXPECT_THAT(ErrorOf(nots + "true"), HasSubstr("nested deeper than"));
  std::string ok(kMaxExprDepth, '(');
  ok += "x > 1";
  ok += std::string(kMaxExprDepth, ')');
  EXPECT_TRUE(Holds(ok, {{"x", 2}}));
  EXPECT_THAT(ErrorOf(std::string(kMaxExprLength + 1, ' ')), HasSubstr("longer than"));
  // A long flat chain is parsed and evaluated without recursion.
  std::string chain = "x";
  for (int i = 0; i < 1000; ++i) chain += " + x";
  chain += " > 1000";
  EXPECT_TRUE(Holds(chain, {{"x", 1}}));
}

TEST(ExprTest, DefaultIsFalseAndMetricsListed) {
  EXPECT_FALSE(Expr().Eval({}));
  absl::StatusOr<Expr> e = Expr::Parse("y > x && x < 3 || y == 1", kKnown);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->metrics(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(e->text(), "y > x && x < 3 || y == 1");
  EXPECT_TRUE(e->Eval({{"x", 2}, {"y", 5}}));
  EXPECT_TRUE(e->Eval({{"x", 9}, {"y", 1}}));
  EXPECT_FALSE(e->Eval({{"x", 9}, {"y", 5}}));
}

}  // namespace
}  // namespace seedance::policy
