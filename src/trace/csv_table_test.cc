#include "seedance/trace/csv_table.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::trace::table {
namespace {

using ::testing::HasSubstr;

enum TestColumn { kA, kB, kC };
constexpr std::array<Column, 3> kColumns = {{{"a", true}, {"b", true}, {"c", false}}};
constexpr TableOptions kIgnore = {.unknown_columns = UnknownColumns::kIgnore};

// Reads every row, returning "a=..;b=..;c=.." per row (c "-" when the file lacks it), or the
// error message.
std::vector<std::string> ReadAll(std::string_view text, TableOptions options = {}) {
  absl::StatusOr<TableReader> table = TableReader::Open(text, "t.csv", kColumns, options);
  if (!table.ok()) return {std::string(table.status().message())};
  std::vector<std::string> out;
  Row row;
  absl::Status status;
  while (table->Next(&row, &status)) {
    out.push_back(std::string("a=") + std::string(row.value(kA)) +
                  ";b=" + std::string(row.value(kB)) +
                  ";c=" + (row.has(kC) ? std::string(row.value(kC)) : std::string("-")) + "@" +
                  std::to_string(row.line));
  }
  if (!status.ok()) out.push_back(std::string(status.message()));
  return out;
}

TEST(CsvTableTest, MatchesColumnsByNameAndCleansFields) {
  EXPECT_THAT(ReadAll("\xEF\xBB\xBF b ,\"a\"\r\n\r\n  \n\"2\", 1 \n\"x\ty\",\"\r\n"),
              ::testing::ElementsAre("a=1;b=2;c=-@4", "a=;b=x\ty;c=-@5"));
}

TEST(CsvTableTest, UnknownColumnsAreErrorsOrIgnored) {
  EXPECT_THAT(ReadAll("a,b,zone\n1,2,3\n"),
              ::testing::ElementsAre(
                  "t.csv:1: field 'zone': unknown header; expected columns among a,b,c (got "
                  "'zone')"));
  // Ignored columns may repeat, be unnamed, and be many more than a schema may have.
  std::string header = ",a,x,x";
  std::string row = "0,1,y,y";
  for (size_t i = 0; i < 2 * kMaxColumns; ++i) {
    header += ",extra" + std::to_string(i);
    row += "," + std::to_string(i);
  }
  EXPECT_THAT(ReadAll(header + ",b,c\n" + row + ",2,3\n", kIgnore),
              ::testing::ElementsAre("a=1;b=2;c=3@2"));
}

TEST(CsvTableTest, HeaderErrorsNameTheColumn) {
  EXPECT_THAT(ReadAll("a,b,a\n", kIgnore),
              ::testing::ElementsAre("t.csv:1: field 'a': duplicate header (got 'a')"));
  EXPECT_THAT(ReadAll("\n a,x\n", kIgnore),
              ::testing::ElementsAre("t.csv:2: field 'b': missing required header (got ' a,x')"));
  EXPECT_THAT(ReadAll("\r\n \n"),
              ::testing::ElementsAre("t.csv:1: empty file: expected a header row"));
}

TEST(CsvTableTest, RowsMustHaveTheHeaderWidth) {
  EXPECT_THAT(ReadAll("a,x,b\n1,2,3\n1,2\n", kIgnore),
              ::testing::ElementsAre("a=1;b=3;c=-@2",
                                     "t.csv:3: field 'b': row has 2 fields, header has 3 (got "
                                     "'1,2')"));
  EXPECT_THAT(ReadAll("a,b\n1,2,\"3\",4\n"),
              ::testing::ElementsAre(
                  "t.csv:2: field '(column 3)': row has 4 fields, header has 2 (got '3')"));
}

TEST(CsvTableTest, RequireAndHeaderErrorForKindDependentColumns) {
  absl::StatusOr<TableReader> table = TableReader::Open("b,a\n", "t.csv", kColumns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->header_line(), 1);
  EXPECT_TRUE(table->has(kA));
  EXPECT_FALSE(table->has(kC));
  EXPECT_TRUE(table->Require(kA).ok());
  EXPECT_EQ(table->Require(kC).message(),
            "t.csv:1: field 'c': missing required header (got 'b,a')");
  EXPECT_EQ(table->HeaderError("c|d", "needs one of them").message(),
            "t.csv:1: field 'c|d': needs one of them (got 'b,a')");
}

TEST(CsvTableTest, ScanTableStopsAtTheFirstError) {
  int rows = 0;
  absl::Status s = ScanTable("a,b\n1,2\n3,4\n", "t.csv", kColumns, [&](const Row& row) {
    ++rows;
    return row.line == 3 ? row.Error(kB, "too big") : absl::OkStatus();
  });
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(s.message(), "t.csv:3: field 'b': too big (got '4')");
}

}  // namespace
}  // namespace seedance::trace::table
