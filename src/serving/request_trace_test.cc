#include "seedance/serving/request_trace.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/serving/serving_sim.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::serving {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AzureTraceTest, ParsesRelativeArrivalsAndLengths) {
  auto t = ParseAzureTrace(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.6805900,374,44\r\n"
      "\n"
      "2023-11-16 18:15:50.9951690,396,109\n"
      "2023-11-17 00:00:00,5,1\n",
      "conv.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 3u);
  EXPECT_DOUBLE_EQ(t->requests[0].arrival_s, 0);
  EXPECT_NEAR(t->requests[1].arrival_s, 4.314579, 1e-9);
  EXPECT_NEAR(t->requests[2].arrival_s, 5 * 3600 + 44 * 60 + 13.31941, 1e-6);
  EXPECT_EQ(t->requests[1].prompt_tokens, 396);
  EXPECT_EQ(t->requests[1].output_tokens, 109);
  EXPECT_EQ(t->prefix_block_tokens, 0);
}

TEST(AzureTraceTest, ColumnsMatchedByName) {
  auto t = ParseAzureTrace("GeneratedTokens,TIMESTAMP,ContextTokens\n7,2023-01-01 00:00:00,9\n",
                           "x.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->requests[0].prompt_tokens, 9);
  EXPECT_EQ(t->requests[0].output_tokens, 7);
}

// The one CSV dialect (seedance/trace/csv_table.h): a byte order mark, quoted fields and
// header names, blanks around them, CRLF and blank lines, and columns the reader does not read.
TEST(AzureTraceTest, ReadsTheSharedCsvDialect) {
  auto t = ParseAzureTrace(
      "\xEF\xBB\xBF\"TIMESTAMP\", ContextTokens ,GeneratedTokens,Region\r\n"
      "\r\n"
      "\"2023-11-16 18:15:46.5\",\"374\", 44 ,westus\r\n"
      "  \n"
      "2023-11-16 18:15:47,\"396\",\"109\",\r\n",
      "dialect.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 2u);
  EXPECT_EQ(t->requests[0].prompt_tokens, 374);
  EXPECT_EQ(t->requests[0].output_tokens, 44);
  EXPECT_DOUBLE_EQ(t->requests[1].arrival_s, 0.5);
  EXPECT_EQ(t->requests[1].prompt_tokens, 396);
  EXPECT_EQ(t->requests[1].output_tokens, 109);
}

TEST(ShareGptTraceTest, ReadsTheSharedCsvDialect) {
  auto t = ParseShareGptTrace(
      "num_total_tokens,\"num_decode_tokens\",num_prefill_tokens\r\n\r\n99,\"7\", 5 \r\n", "s.csv",
      1.0, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 1u);
  EXPECT_EQ(t->requests[0].prompt_tokens, 5);
  EXPECT_EQ(t->requests[0].output_tokens, 7);
  auto bad =
      ParseShareGptTrace("num_prefill_tokens,num_decode_tokens\r\n\n5,\"x\"\r\n", "s.csv", 1.0, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("s.csv:3: field 'num_decode_tokens': expected an integer token count "
                        "(got 'x')"));
}

struct BadCase {
  std::string name, text, want;
};

class AzureBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(AzureBadInputTest, NamesFileLineAndField) {
  auto t = ParseAzureTrace(GetParam().text, "bad.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(GetParam().want));
}

constexpr char kHeader[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
INSTANTIATE_TEST_SUITE_P(
    Cases, AzureBadInputTest,
    ::testing::Values(
        BadCase{"MissingColumn", "TIMESTAMP,ContextTokens\n2023-01-01 00:00:00,5\n",
                "bad.csv:1: field 'GeneratedTokens': missing required header"},
        BadCase{"NegativeLength", std::string(kHeader) + "2023-01-01 00:00:00,-5,3\n",
                "bad.csv:2: field 'ContextTokens': must be non-negative (got '-5')"},
        BadCase{"ZeroOutput", std::string(kHeader) + "2023-01-01 00:00:00,5,0\n",
                "bad.csv:2: field 'GeneratedTokens': must be >= 1"},
        BadCase{"NotANumber", std::string(kHeader) + "2023-01-01 00:00:00,5,x\n",
                "bad.csv:2: field 'GeneratedTokens': expected an integer"},
        BadCase{"Unsorted",
                std::string(kHeader) + "2023-01-01 00:00:05,5,3\n\n2023-01-01 00:00:01,5,3\n",
                "bad.csv:4: field 'TIMESTAMP': timestamps must not decrease"},
        BadCase{"BadTimestamp", std::string(kHeader) + "yesterday,5,3\n",
                "bad.csv:2: field 'TIMESTAMP': expected YYYY-MM-DD"},
        BadCase{"ShortRow", std::string(kHeader) + "2023-01-01 00:00:05,5\n",
                "bad.csv:2: field 'GeneratedTokens': row has 2 fields, header has 3"},
        BadCase{"LongRow", std::string(kHeader) + "2023-01-01 00:00:05,5,3,x\n",
                "bad.csv:2: field '(column 4)': row has 4 fields, header has 3 (got 'x')"},
        BadCase{"DuplicateColumn", "TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n",
                "bad.csv:1: field 'ContextTokens': duplicate header"},
        BadCase{"QuotedBadLengthAfterCrlfAndBlankLine",
                "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-01-01 00:00:00,5,3\r\n\r\n"
                "\"2023-01-01 00:00:01\",\"-5\",3\r\n",
                "bad.csv:4: field 'ContextTokens': must be non-negative (got '-5')"},
        BadCase{"Empty", "", "bad.csv:1: empty file: expected a header row"},
        BadCase{"February31", std::string(kHeader) + "2023-02-31 00:00:00,5,3\n",
                "bad.csv:2: field 'TIMESTAMP': expected YYYY-MM-DD"},
        BadCase{"February29NotALeapYear", std::string(kHeader) + "2023-02-29 00:00:00,5,3\n",
                "bad.csv:2: field 'TIMESTAMP'"},
        BadCase{"April31", std::string(kHeader) + "2023-04-31 00:00:00,5,3\n",
                "bad.csv:2: field 'TIMESTAMP'"},
        BadCase{"Year1900NotLeap", std::string(kHeader) + "1900-02-29 00:00:00,5,3\n",
                "bad.csv:2: field 'TIMESTAMP'"},
        BadCase{"NaNLength", std::string(kHeader) + "2023-01-01 00:00:00,nan,3\n",
                "bad.csv:2: field 'ContextTokens': expected an integer"},
        BadCase{"HugeLength", std::string(kHeader) + "2023-01-01 00:00:00,99999999999999999999,3\n",
                "bad.csv:2: field 'ContextTokens'"}),
    [](const auto& info) { return info.param.name; });

TEST(MooncakeTraceTest, ParsesHashIdsAndMilliseconds) {
  auto t = ParseMooncakeTrace(
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
      "{\"timestamp\": 1500, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [0]}\n",
      "m.jsonl");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->prefix_block_tokens, 512);
  ASSERT_EQ(t->requests.size(), 2u);
  EXPECT_DOUBLE_EQ(t->requests[1].arrival_s, 1.5);
  EXPECT_EQ(t->requests[0].prefix_block_ids, (std::vector<uint64_t>{0, 1}));
  // Request 1's only block was seen: 100 of 700 prompt tokens hit.
  EXPECT_NEAR(IdealPrefixHitRatio(*t), 100.0 / 700.0, 1e-12);
}

TEST(MooncakeTraceTest, RejectsBadRowsWithLine) {
  const std::string ok =
      "{\"timestamp\": 10, \"input_length\": 6, \"output_length\": 5, \"hash_ids\": [0]}\n";
  struct Case {
    std::string line, want;
  } cases[] = {
      {"{\"timestamp\": 10, \"output_length\": 5, \"hash_ids\": [0]}",
       "m.jsonl:2: field 'input_length': missing key"},
      {"{\"timestamp\": 10, \"input_length\": -6, \"output_length\": 5, \"hash_ids\": [0]}",
       "m.jsonl:2: field 'input_length': must be non-negative"},
      {"{\"timestamp\": 5, \"input_length\": 6, \"output_length\": 5, \"hash_ids\": [0]}",
       "m.jsonl:2: field 'timestamp': timestamps must not decrease"},
      {"{\"timestamp\": 10, \"input_length\": 6, \"output_length\": 5, \"hash_ids\": [0, 1]}",
       "m.jsonl:2: field 'hash_ids': more ids than 512-token blocks"},
      {"{\"timestamp\": 10, \"input_length\": 6", "m.jsonl:2: expected one JSON object"},
  };
  for (const Case& c : cases) {
    auto t = ParseMooncakeTrace(ok + c.line + "\n", "m.jsonl");
    ASSERT_FALSE(t.ok()) << c.line;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.want));
  }
}

TEST(ShareGptTraceTest, PoissonArrivalsAtTheRequestedRate) {
  std::string text = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n";
  for (int i = 0; i < 4000; ++i) text += "100,20,120,5\n";
  auto t = ParseShareGptTrace(text, "s.csv", 4.0, 7);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 4000u);
  EXPECT_EQ(t->requests[0].arrival_s, 0);
  const double rate = 3999 / t->requests.back().arrival_s;
  EXPECT_NEAR(rate, 4.0, 0.25);
  auto again = ParseShareGptTrace(text, "s.csv", 4.0, 7);
  EXPECT_EQ(again->requests[100].arrival_s, t->requests[100].arrival_s);  // seeded
  EXPECT_FALSE(ParseShareGptTrace(text, "s.csv", 0, 7).ok());
  auto bad = ParseShareGptTrace("num_prefill_tokens\n5\n", "s.csv", 1, 7);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("s.csv:1: field 'num_decode_tokens'"));
}

TEST(ReadRequestTraceTest, MissingFileIsNotFound) {
  auto t = ReadRequestTrace("/nonexistent/trace.csv");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("/nonexistent/trace.csv"));
}

TEST(AzureTraceTest, AcceptsLeapDays) {
  for (const char* day : {"2024-02-29 00:00:00", "2000-02-29 12:00:00", "2023-12-31 23:59:59"}) {
    auto t = ParseAzureTrace(std::string(kHeader) + day + ",5,3\n", "ok.csv");
    EXPECT_TRUE(t.ok()) << day << ": " << t.status();
  }
}

TEST(MooncakeTraceTest, RejectsTimestampsBeyondAnyTrace) {
  for (const char* ts : {"1e300", "1.5e15"}) {
    auto t = ParseMooncakeTrace(absl::StrCat("{\"timestamp\": ", ts,
                                             ", \"input_length\": 6, \"output_length\": 5, "
                                             "\"hash_ids\": [0]}\n"),
                                "m.jsonl");
    ASSERT_FALSE(t.ok()) << ts;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("m.jsonl:1: field 'timestamp'"));
  }
}

TEST(MooncakeTraceTest, RefusesDeepNestingAndClipsHugeNumbers) {
  struct Case {
    const char* name;
    std::string line;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"deep",
       R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": )" +
           std::string(100000, '[') + std::string(100000, ']') + "}",
       "m.jsonl:1: JSON nested deeper than 64 levels"},
      // Brackets inside strings do not count.
      {"brackets in a string",
       R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [], "x": ")" +
           std::string(100, '[') + R"("} garbage)",
       "m.jsonl:1: expected one JSON object per line"},
  };
  for (const Case& c : cases) {
    auto t = ParseMooncakeTrace(c.line + "\n", "m.jsonl");
    ASSERT_FALSE(t.ok()) << c.name;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.want)) << c.name;
  }
  auto ok = ParseMooncakeTrace(
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [], "x": ")" +
          std::string(100, '[') + "\"}\n",
      "m.jsonl");
  EXPECT_TRUE(ok.ok()) << ok.status();
  auto huge = ParseAzureTrace(
      std::string(kHeader) + "2023-01-01 00:00:00," + std::string(60, '9') + ",3\n", "a.csv");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("too large"));
  EXPECT_THAT(std::string(huge.status().message()), Not(HasSubstr(std::string(40, '9'))));
}

// Files that are not traces: each an exit-2 error naming the file and what is wrong, never
// "unknown trace format (got '')".
class ReadRequestTraceFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("request_trace_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "a_directory.csv");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ReadRequestTraceFileTest, RejectsNonTracesNamingTheFile) {
  struct Case {
    const char* name;
    std::string text;  // ignored for the directory
    const char* want;
  };
  const std::vector<Case> cases = {
      {"empty.csv", "", "empty.csv:1: empty trace file"},
      {"blank.csv", "\n \n", "blank.csv:1: blank trace file"},
      {"header_only.csv", kHeader, "header_only.csv: no requests"},
      {"header_only.jsonl", "\n", "header_only.jsonl:1: blank trace file"},
      {"sharegpt_header.csv", "num_prefill_tokens,num_decode_tokens\n",
       "sharegpt_header.csv: no requests"},
      {"garbage.csv", std::string("\x01\x02binary\n", 9), "garbage.csv:1: unknown trace format"},
  };
  for (const Case& c : cases) {
    auto t = ReadRequestTrace(Write(c.name, c.text));
    ASSERT_FALSE(t.ok()) << c.name;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.want)) << c.name;
  }
  auto d = ReadRequestTrace((dir_ / "a_directory.csv").string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("a_directory.csv"));
  EXPECT_THAT(std::string(d.status().message()), Not(HasSubstr("unknown trace format")));
}

TEST(ValidateArrivalsTest, RefusesSpansBeyondTheTimeResolution) {
  RequestTrace trace;
  trace.source = "t.csv";
  trace.requests.resize(2);
  trace.requests[1].arrival_s = 1000;
  struct Case {
    double rate_scale;
    bool ok;
  };
  for (const Case& c : {Case{1, true}, Case{1e-6, true}, Case{1e-7, false}, Case{1e6, true}}) {
    const absl::Status s = ValidateArrivals(trace, c.rate_scale);
    EXPECT_EQ(s.ok(), c.ok) << c.rate_scale << ": " << s;
    if (!c.ok) {
      EXPECT_THAT(std::string(s.message()), HasSubstr("rate scale"));
    }
  }
  trace.requests[0].arrival_s = std::nan("");
  EXPECT_THAT(std::string(ValidateArrivals(trace, 1).message()), HasSubstr("not finite"));
  trace.requests[0].arrival_s = 2000;
  EXPECT_THAT(std::string(ValidateArrivals(trace, 1).message()), HasSubstr("goes backwards"));
}

// The public traces: every row parses, and the Mooncake trace reproduces its README's figures.
class PublicTraceTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& rel) {
    return seedance::trace::DataDir() + "/llm-traces/" + rel;
  }
  bool Skip(const std::string& path) {
    if (std::FILE* f = std::fopen(path.c_str(), "r")) {
      std::fclose(f);
      return false;
    }
    return true;
  }
};

TEST_F(PublicTraceTest, AzureConvAndMooncakeConversation) {
  const std::string conv = Path("azure-2023/AzureLLMInferenceTrace_conv.csv");
  const std::string moon = Path("mooncake-fast25/conversation_trace.jsonl");
  if (Skip(conv) || Skip(moon)) {
    if (seedance::trace::DataRequired()) FAIL() << "public data missing: " << conv;
    GTEST_SKIP() << "public data not found under " << seedance::trace::DataDir();
  }
  auto a = ReadRequestTrace(conv);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->requests.size(), 19366u);
  EXPECT_NEAR(a->requests.back().arrival_s, 3502, 1.0);
  auto m = ReadRequestTrace(moon);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->requests.size(), 12031u);
  EXPECT_NEAR(IdealPrefixHitRatio(*m), 0.374, 0.0005);
}

}  // namespace
}  // namespace seedance::serving
