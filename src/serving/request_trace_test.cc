#include "seedance/serving/request_trace.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::serving {
namespace {

using ::testing::HasSubstr;

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
    ::testing::Values(BadCase{"MissingColumn", "TIMESTAMP,ContextTokens\n2023-01-01 00:00:00,5\n",
                              "bad.csv:1: field 'GeneratedTokens': missing column"},
                      BadCase{"NegativeLength", std::string(kHeader) + "2023-01-01 00:00:00,-5,3\n",
                              "bad.csv:2: field 'ContextTokens': must be non-negative (got '-5')"},
                      BadCase{"ZeroOutput", std::string(kHeader) + "2023-01-01 00:00:00,5,0\n",
                              "bad.csv:2: field 'GeneratedTokens': must be >= 1"},
                      BadCase{"NotANumber", std::string(kHeader) + "2023-01-01 00:00:00,5,x\n",
                              "bad.csv:2: field 'GeneratedTokens': expected an integer"},
                      BadCase{"Unsorted",
                              std::string(kHeader) +
                                  "2023-01-01 00:00:05,5,3\n\n2023-01-01 00:00:01,5,3\n",
                              "bad.csv:4: field 'TIMESTAMP': timestamps must not decrease"},
                      BadCase{"BadTimestamp", std::string(kHeader) + "yesterday,5,3\n",
                              "bad.csv:2: field 'TIMESTAMP': expected YYYY-MM-DD"},
                      BadCase{"ShortRow", std::string(kHeader) + "2023-01-01 00:00:05,5\n",
                              "bad.csv:2: expected 3 fields, got 2"},
                      BadCase{"Empty", "", "bad.csv:1: empty file"}),
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
