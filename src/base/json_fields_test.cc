#include "seedance/base/json_fields.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace seedance::base {
namespace {

using Json = nlohmann::json;
using Ordered = nlohmann::ordered_json;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(LenientFields, FallBackInsteadOfThrowing) {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"s": "x", "o": {"a": 1}, "i": -3, "u": 18446744073709551615, "f": 1.5, "b": true})");
  EXPECT_EQ(StringField(j, "s"), "x");
  EXPECT_EQ(StringField(j, "o", "none"), "none");  // json::value would throw type_error
  EXPECT_EQ(StringField(j, "missing", "none"), "none");
  EXPECT_EQ(StringField(nlohmann::json::array(), "s", "none"), "none");
  EXPECT_EQ(IntField(j, "i"), -3);
  EXPECT_EQ(IntField(j, "u", 9), 9);  // beyond int64
  EXPECT_EQ(IntField(j, "f", 9), 9);  // not an integer
  EXPECT_EQ(IntField(j, "s", 9), 9);
  EXPECT_TRUE(BoolField(j, "b"));
  EXPECT_FALSE(BoolField(j, "i"));
  EXPECT_TRUE(BoolField(nlohmann::ordered_json::parse(R"({"b": true})"), "b"));
}

TEST(ReadJson, IntegersWithinTheirRange) {
  const Json doc = Json::parse(R"({"a": 7, "big": 18446744073709551615, "f": 1.5, "s": "7",
                                   "neg": -3})");
  int64_t out = 42;
  EXPECT_TRUE(ReadJsonInt<Json>(nullptr, "$.x", 0, 10, &out).ok());
  EXPECT_EQ(out, 42) << "an absent member leaves the default";
  ASSERT_TRUE(ReadJsonInt(JsonMember(doc, "a"), "$.a", 0, 10, &out).ok());
  EXPECT_EQ(out, 7);
  EXPECT_EQ(Message(ReadJsonInt(JsonMember(doc, "a"), "$.a", 8, 10, &out)),
            "$.a: must be an integer in 8..10 (got 7)");
  EXPECT_EQ(out, 7) << "a refused value sets nothing";
  EXPECT_EQ(Message(ReadJsonInt(JsonMember(doc, "big"), "$.big", 0, 10, &out)),
            "$.big: must be an integer in 0..10 (got 18446744073709551615)");
  EXPECT_EQ(Message(ReadJsonInt(JsonMember(doc, "big"), "$.big", -5, -1, &out)),
            "$.big: must be an integer in -5..-1 (got 18446744073709551615)");
  EXPECT_EQ(Message(ReadJsonInt(JsonMember(doc, "f"), "$.f", 0, 10, &out)),
            "$.f: must be an integer in 0..10 (got 1.5)");
  EXPECT_EQ(Message(ReadJsonInt(JsonMember(doc, "s"), "$.s", kAnyInt64Min, kAnyInt64Max, &out)),
            "$.s: must be an integer (got \"7\")");
  int32_t small = 0;
  ASSERT_TRUE(ReadJsonInt32(JsonMember(doc, "neg"), "$.neg", -5, 5, &small).ok());
  EXPECT_EQ(small, -3);
  EXPECT_EQ(ReadJsonInt(JsonMember(doc, "f"), "$.f", 0, 10, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReadJson, NumbersStringsBoolsAndMaps) {
  const Ordered doc = Ordered::parse(
      R"({"n": 0.25, "i": 3, "t": true, "s": "abcdef", "m": {"k": "v", "j": "w"}, "bad": {"k": 1},
          "o": {"x": 1}, "l": [1, 2]})");
  double d = 0;
  ASSERT_TRUE(ReadJsonNumber(JsonMember(doc, "n"), "$.n", 0, 1, &d).ok());
  EXPECT_EQ(d, 0.25);
  ASSERT_TRUE(ReadJsonNumber(JsonMember(doc, "i"), "$.i", -kAnyDouble, kAnyDouble, &d).ok());
  EXPECT_EQ(d, 3);
  EXPECT_EQ(Message(ReadJsonNumber(JsonMember(doc, "n"), "$.n", 1, 2.5, &d)),
            "$.n: must be a number in 1..2.5 (got 0.25)");
  EXPECT_EQ(Message(ReadJsonNumber(JsonMember(doc, "t"), "$.t", -kAnyDouble, kAnyDouble, &d)),
            "$.t: must be a number (got true)");
  std::string s;
  EXPECT_EQ(Message(ReadJsonString(JsonMember(doc, "s"), "$.s", 3, &s)),
            "$.s: must be at most 3 bytes (got 6)");
  EXPECT_EQ(Message(ReadJsonString(JsonMember(doc, "o"), "$.o", 3, &s)),
            "$.o: must be a string (got an object)");
  ASSERT_TRUE(ReadJsonString(JsonMember(doc, "s"), "$.s", 6, &s).ok());
  EXPECT_EQ(s, "abcdef");
  bool b = false;
  ASSERT_TRUE(ReadJsonBool(JsonMember(doc, "t"), "$.t", &b).ok());
  EXPECT_TRUE(b);
  EXPECT_EQ(Message(ReadJsonBool(JsonMember(doc, "l"), "$.l", &b)),
            "$.l: must be true or false (got an array)");
  std::map<std::string, std::string> m = {{"old", "x"}};
  EXPECT_EQ(Message(ReadJsonStringMap(JsonMember(doc, "m"), "$.m", 1, &m)),
            "$.m: must have at most 1 entries (got 2)");
  EXPECT_EQ(Message(ReadJsonStringMap(JsonMember(doc, "bad"), "$.bad", 4, &m)),
            "$.bad.k: must be a string (got 1)");
  EXPECT_EQ(m, (std::map<std::string, std::string>{{"old", "x"}})) << "nothing half-written";
  EXPECT_EQ(JsonErrorPath(ReadJsonStringMap(JsonMember(doc, "bad"), "$.bad", 4, &m)), "$.bad.k")
      << "a refusal carries the path it names";
  ASSERT_TRUE(ReadJsonStringMap(JsonMember(doc, "m"), "$.m", 4, &m).ok());
  EXPECT_EQ(m, (std::map<std::string, std::string>{{"j", "w"}, {"k", "v"}}));
  EXPECT_EQ(JsonMember(doc, "absent"), nullptr);
  EXPECT_EQ(JsonMember(*JsonMember(doc, "l"), "x"), nullptr) << "an array has no members";
}

TEST(ReadJson, UnknownKeysNameThePathAndTheNearestKnownKey) {
  const Json doc = Json::parse(R"({"name": "a", "replcas": 2, "app.kubernetes.io/x": 1})");
  EXPECT_EQ(Message(CheckJsonKeys(doc, "$.spec", {"name", "replicas", "app.kubernetes.io/x"})),
            "$.spec.replcas: unknown key \"replcas\"; did you mean \"replicas\"? (allowed: name, "
            "replicas, app.kubernetes.io/x)");
  EXPECT_EQ(Message(CheckJsonKeys(doc, "$", {"name", "replcas"})),
            "$[\"app.kubernetes.io/x\"]: unknown key \"app.kubernetes.io/x\" (allowed: name, "
            "replcas)");
  EXPECT_TRUE(CheckJsonKeys(doc, "$", {"name", "replcas", "app.kubernetes.io/x"}).ok());
  EXPECT_EQ(JsonErrorPath(CheckJsonKeys(doc, "$", {"name"})), "$[\"app.kubernetes.io/x\"]");
  EXPECT_EQ(JsonErrorPath(absl::OkStatus()), "");
  EXPECT_EQ(JsonErrorPath(absl::InvalidArgumentError("$.a: made elsewhere")), "");
}

TEST(JsonFields, ReadsAnObjectAndKeepsTheFirstProblem) {
  const Json doc = Json::parse(R"({"name": "g", "min": 2, "ratio": 0.5, "on": false})");
  JsonFields<Json> f(doc, "$.groups[1]", "f.json: ");
  std::string name;
  int min = 0;
  double ratio = 0;
  bool on = true;
  f.String("name", &name, /*required=*/true);
  f.Int("min", &min, 0, 10);
  f.Number("ratio", &ratio, 0, 1);
  f.Bool("on", &on);
  f.NoOthers();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(name, "g");
  EXPECT_EQ(min, 2);
  EXPECT_EQ(ratio, 0.5);
  EXPECT_FALSE(on);
  EXPECT_EQ(f.At("min"), "$.groups[1].min");

  JsonFields<Json> bad(doc, "$.groups[1]", "f.json: ");
  bad.Int("min", &min, 3, 10);
  bad.String("absent", &name, /*required=*/true);  // a second problem: not kept
  EXPECT_EQ(Message(bad.status()), "f.json: $.groups[1].min: must be an integer in 3..10 (got 2)");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(JsonErrorPath(bad.status()), "$.groups[1].min") << "the prefix leaves the path";
}

TEST(JsonFields, RequiredUnknownAndNotAnObject) {
  const Json doc = Json::parse(R"({"name": "", "nmae": "x"})");
  std::string name;
  {
    JsonFields<Json> f(doc, "$");
    f.String("absent", &name, /*required=*/true);
    EXPECT_EQ(Message(f.status()), "$.absent: missing required key \"absent\"");
  }
  {
    JsonFields<Json> f(doc, "$");
    f.String("name", &name, /*required=*/true);
    EXPECT_EQ(Message(f.status()), "$.name: must not be empty");
  }
  {
    JsonFields<Json> f(doc, "$");
    f.String("name", &name);
    f.NoOthers();
    EXPECT_EQ(Message(f.status()),
              "$.nmae: unknown key \"nmae\"; did you mean \"name\"? (allowed: name)");
  }
  {
    JsonFields<Json> f(doc, "$");
    EXPECT_NE(f.Member("name"), nullptr);
    f.Fail("name", "must be fixed or adaptive");
    f.Fail("", "a later problem");
    EXPECT_EQ(Message(f.status()), "$.name: must be fixed or adaptive");
  }
  const Json list = Json::parse("[1]");
  JsonFields<Json> f(list, "$.deployments[0]", "d.json: ");
  int x = 5;
  f.Int("x", &x);
  f.NoOthers();
  EXPECT_EQ(Message(f.status()), "d.json: $.deployments[0]: must be an object (got an array)");
  EXPECT_EQ(x, 5);
}

}  // namespace
}  // namespace seedance::base
