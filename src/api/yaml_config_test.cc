#include "seedance/api/yaml_config.h"

#include <string>

#include "gtest/gtest.h"
#include "seedance/base/json_fields.h"

namespace seedance::api {
namespace {

TEST(YamlConfigTest, KnowsWhereEveryValueStands) {
  absl::StatusOr<YamlDocument> doc =
      ParseYamlDocument("a:\n  b: [1, 'x', {c: null}]\n  d: 2.5\n", "f.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->value()["a"]["b"][0], 1);
  EXPECT_EQ(doc->value()["a"]["b"][1], "x");  // quoted: a string
  EXPECT_TRUE(doc->value()["a"]["b"][2]["c"].is_null());
  EXPECT_EQ(doc->value()["a"]["d"], 2.5);
  EXPECT_EQ(doc->PositionOf("$.a.b[1]").line, 2);
  EXPECT_EQ(doc->PositionOf("$.a.b[1]").column, 10);
  EXPECT_EQ(doc->PositionOf("$.a.d").line, 3);
  // An absent key is placed at its nearest present ancestor.
  EXPECT_EQ(doc->PositionOf("$.a.b[2].e").column, 15);
  EXPECT_EQ(doc->PositionOf("$.a.missing").line, 2);
}

TEST(YamlConfigTest, PlacesTheJsonReadersRefusals) {
  absl::StatusOr<YamlDocument> doc = ParseYamlDocument("x: 1\ny:\n  z: -3\n", "f.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status();
  int64_t z = 0;
  const absl::Status st = base::ReadJsonInt(&doc->value()["y"]["z"], "$.y.z", 0, 10, &z);
  const absl::Status placed = doc->Locate(st);
  EXPECT_EQ(placed.message(), "f.yaml:3:6: $.y.z: must be an integer in 0..10 (got -3)");
  EXPECT_EQ(base::JsonErrorPath(placed), "$.y.z");
  EXPECT_EQ(doc->Error("$.x", "too small").message(), "f.yaml:1:4: $.x: too small");
  EXPECT_EQ(doc->Locate(absl::InvalidArgumentError("no path")).message(), "f.yaml: no path");
  EXPECT_TRUE(doc->Locate(absl::OkStatus()).ok());
}

TEST(YamlConfigTest, RefusesWhatIsNotOneDocument) {
  EXPECT_EQ(ParseYamlDocument("a: 1\n---\nb: 2\n", "f.yaml").status().message(),
            "f.yaml:3:1: a configuration file is one YAML document (found another)");
  EXPECT_EQ(ParseYamlDocument("a: 1\na: 2\n", "f.yaml").status().message(),
            "f.yaml:2: $: duplicate key \"a\"");
  EXPECT_EQ(ParseYamlDocument("[a]\n,", "f.yaml").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<YamlDocument> empty = ParseYamlDocument("", "f.yaml");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->value().is_null());
}

}  // namespace
}  // namespace seedance::api
