// The JSON path syntax of messages: `$.a.b[0]`, `["key"]` for keys that are not identifiers.
#include "seedance/base/json_path.h"

#include <string>

#include "gtest/gtest.h"

namespace seedance::base {
namespace {

TEST(JsonPathTest, IdentifierKeysAreDotted) {
  EXPECT_EQ(JsonPathChild("$", "items"), "$.items");
  EXPECT_EQ(JsonPathChild("$.spec", "node_name"), "$.spec.node_name");
  EXPECT_EQ(JsonPathChild("$", "A100-80GB"), "$.A100-80GB");
  EXPECT_EQ(JsonPathChild("$", "_x9"), "$._x9");
}

TEST(JsonPathTest, OtherKeysAreQuoted) {
  EXPECT_EQ(JsonPathChild("$.limits", "nvidia.com/gpu"), "$.limits[\"nvidia.com/gpu\"]");
  EXPECT_EQ(JsonPathChild("$", "a.b"), "$[\"a.b\"]");
  EXPECT_EQ(JsonPathChild("$", "a/b"), "$[\"a/b\"]");
  EXPECT_EQ(JsonPathChild("$", "say \"hi\""), "$[\"say \\\"hi\\\"\"]");
  EXPECT_EQ(JsonPathChild("$", "back\\slash"), "$[\"back\\\\slash\"]");
  EXPECT_EQ(JsonPathChild("$", "a\nb\x1B"), "$[\"a\\nb\\u001b\"]");
  EXPECT_EQ(JsonPathChild("$", "bad\xFF"), "$[\"bad\xEF\xBF\xBD\"]");
  EXPECT_EQ(JsonPathChild("$", ""), "$[\"\"]");
  EXPECT_EQ(JsonPathChild("$", "0"), "$[\"0\"]");
  EXPECT_EQ(JsonPathChild("$", "-x"), "$[\"-x\"]");
  EXPECT_EQ(JsonPathChild("$", "a b"), "$[\"a b\"]");
}

TEST(JsonPathTest, IndexesAndNesting) {
  EXPECT_EQ(JsonPathIndex("$", 0), "$[0]");
  std::string p = JsonPathIndex(JsonPathChild("$", "items"), 3);
  p = JsonPathChild(JsonPathChild(p, "metadata"), "labels");
  p = JsonPathChild(p, "app.kubernetes.io/name");
  EXPECT_EQ(p, "$.items[3].metadata.labels[\"app.kubernetes.io/name\"]");
  EXPECT_EQ(JsonPathIndex(JsonPathIndex("$.m", 1), 2), "$.m[1][2]");
}

TEST(JsonPathTest, LongKeysAndPathsAreClipped) {
  const std::string key(100, 'k');
  EXPECT_EQ(JsonPathChild("$", key), "$[\"" + std::string(64, 'k') + "...\"]");
  std::string p = "$";
  for (int i = 0; i < 100; ++i) p = JsonPathChild(p, "field");
  EXPECT_EQ(p.size(), 203u);
  EXPECT_EQ(p.substr(200), "...");
  EXPECT_LE(JsonPathIndex(p, 7).size(), 203u);
}

TEST(JsonPathTest, ParentUndoesOneStep) {
  EXPECT_EQ(JsonPathParent("$.a.b"), "$.a");
  EXPECT_EQ(JsonPathParent("$.a[3]"), "$.a");
  EXPECT_EQ(JsonPathParent("$.a[\"b.c\"]"), "$.a");
  EXPECT_EQ(JsonPathParent("$.a[\"b[\\\"x\\\"]\"]"), "$.a");
  EXPECT_EQ(JsonPathParent("$.a[\"x\\\\\"]"), "$.a");
  EXPECT_EQ(JsonPathParent(JsonPathChild("$[\"k.y\"]", "z")), "$[\"k.y\"]");
  EXPECT_EQ(JsonPathParent("$.a"), "$");
  EXPECT_EQ(JsonPathParent("$"), "");
  EXPECT_EQ(JsonPathParent(""), "");
}

}  // namespace
}  // namespace seedance::base
