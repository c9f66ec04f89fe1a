// The fast profile parser accepts exactly what nlohmann::json accepts and reads the same values.
#include "fast_json.h"

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace seedance::telemetry::internal {
namespace {

TEST(FastJsonTest, AgreesWithNlohmannOnAcceptance) {
  const char* cases[] = {
      "{}",
      "[]",
      "[1,2,3]",
      "{\"a\": [1, -2.5e3, null, true, false, \"x\"]}",
      " [ 0 ] ",
      "-0",
      "1e400",
      "[01]",
      "[1.]",
      "[.5]",
      "[1,]",
      "{\"a\":1,}",
      "{\"a\" 1}",
      "[\"\\u00e9\"]",
      "[\"\\ud83d\\ude00\"]",
      "[\"\\ud83d\"]",
      "[\"\\x\"]",
      "[\"tab\there\"]",
      "\"\xc3\xa9\"",
      "\"\xff\"",
      "\"\xc0\xaf\"",
      "[1] [2]",
      "",
      "nul",
      "[1e5, 1E-2, -0.0]",
      "{\"a\":{\"b\":[[]]}}",
      "[9223372036854775807, 9223372036854775808, -9223372036854775809]",
      "[+1]",
      "[\"unterminated",
  };
  for (const char* c : cases) {
    JValue v;
    size_t off = 0;
    const bool fast = JValue::Parse(c, &v, &off);
    const bool slow = !nlohmann::json::parse(c, nullptr, false).is_discarded();
    // nlohmann accepts 1e400 as +inf; the profile reader has no use for it and refuses it.
    if (std::string(c) == "1e400") {
      EXPECT_FALSE(fast);
      continue;
    }
    EXPECT_EQ(fast, slow) << c;
  }
}

TEST(FastJsonTest, ReadsValuesAndKeys) {
  JValue v;
  size_t off = 0;
  ASSERT_TRUE(
      JValue::Parse(R"({"a": [1, 2.5, null], "s": "h\u00e9\n", "b": true, "a": [7]})", &v, &off));
  ASSERT_TRUE(v.is_object());
  const JValue* a = v.Find("a");  // the last duplicate wins
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].get<int64_t>(), 7);
  EXPECT_TRUE((*a)[0].is_number_integer());
  EXPECT_EQ(v.Find("s")->get<std::string>(), "h\xc3\xa9\n");
  EXPECT_TRUE(v.Find("b")->get<bool>());
  EXPECT_EQ(v.Find("zz"), nullptr);
  ASSERT_TRUE(JValue::Parse("[2.5, -3]", &v, &off));
  EXPECT_DOUBLE_EQ(v[0].get<double>(), 2.5);
  EXPECT_FALSE(v[0].is_number_integer());
  EXPECT_DOUBLE_EQ(v[1].get<double>(), -3);
}

TEST(FastJsonTest, RefusesDeepNestingInsteadOfOverflowingTheStack) {
  const std::string deep(100000, '[');
  JValue v;
  size_t off = 0;
  EXPECT_FALSE(JValue::Parse(deep, &v, &off));
  std::string ok = std::string(100, '[') + std::string(100, ']');
  EXPECT_TRUE(JValue::Parse(ok, &v, &off));
}

}  // namespace
}  // namespace seedance::telemetry::internal
