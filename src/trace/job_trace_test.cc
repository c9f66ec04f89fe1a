#include "seedance/trace/job_trace.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace seedance::trace {
namespace {

constexpr char kHeader[] = "timestamp,duration,num_gpus,gpu_time,cluster\n";

TEST(JobTraceTest, ReadsThePhillyRowsInFileOrder) {
  auto jobs = ParseJobTrace(std::string(kHeader) +
                                "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                                "2017-10-01 00:00:00,5,8,40,6214e9\n\n",
                            "t.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].submit_unix_s, 1507532515);  // date -u -d '2017-10-09 07:01:55' +%s
  EXPECT_EQ((*jobs)[0].duration_s, 66);
  EXPECT_EQ((*jobs)[0].gpus, 1);
  EXPECT_EQ((*jobs)[0].tenant, "11cb48");
  EXPECT_EQ((*jobs)[0].line, 2);
  EXPECT_EQ((*jobs)[1].submit_unix_s, 1506816000);
  EXPECT_EQ((*jobs)[1].tenant, "6214e9");  // text, not the float 6214e9
}

struct BadCase {
  std::string name, text, want;
};

TEST(JobTraceTest, BadRowsNameTheLineAndField) {
  const std::vector<BadCase> cases = {
      {"bad time", "2017-13-01 00:00:00,1,1,1,a", "t.csv:2: field 'timestamp'"},
      {"time text", "yesterday,1,1,1,a", "t.csv:2: field 'timestamp'"},
      {"negative duration", "2017-10-01 00:00:00,-5,1,1,a", "field 'duration'"},
      {"empty duration", "2017-10-01 00:00:00,,1,1,a", "field 'duration': must not be empty"},
      {"nan duration", "2017-10-01 00:00:00,nan,1,1,a", "field 'duration'"},
      {"gpus word", "2017-10-01 00:00:00,1,two,1,a", "field 'num_gpus'"},
      {"too many gpus", "2017-10-01 00:00:00,1,99999999,1,a", "field 'num_gpus'"},
      {"empty tenant", "2017-10-01 00:00:00,1,1,1,", "field 'cluster': must not be empty"},
      {"short row", "2017-10-01 00:00:00,1,1", "header has 5"},
  };
  for (const BadCase& c : cases) {
    auto jobs = ParseJobTrace(std::string(kHeader) + c.text + "\n", "t.csv");
    ASSERT_FALSE(jobs.ok()) << c.name;
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(jobs.status().message().find(c.want), std::string::npos)
        << c.name << ": " << jobs.status().message();
  }
  auto missing = ParseJobTrace("timestamp,duration,cluster\n", "t.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("num_gpus"), std::string::npos);
}

TEST(JobTraceTest, TenantFilesInBothSpellings) {
  auto helios = ParseTenantCsv("vc,node num\n6214e9,64\nee9e8c,2\n", "vc.csv");
  ASSERT_TRUE(helios.ok()) << helios.status();
  ASSERT_EQ(helios->size(), 2u);
  EXPECT_EQ((*helios)[0].name, "6214e9");
  EXPECT_EQ((*helios)[0].nodes, 64);
  EXPECT_DOUBLE_EQ((*helios)[1].weight, 1.0);
  auto ours = ParseTenantCsv("tenant,nodes,weight\nteam-a,4,2.5\n", "t.csv");
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_DOUBLE_EQ((*ours)[0].weight, 2.5);
}

TEST(JobTraceTest, BadTenantFiles) {
  const std::vector<BadCase> cases = {
      {"duplicate", "vc,node num\na,1\na,2\n", "vc.csv:3: field 'vc': duplicate tenant"},
      {"both names", "vc,tenant,node num\na,b,1\n", "exactly one of 'vc' and 'tenant'"},
      {"no nodes", "vc\na\n", "exactly one of 'node num' and 'nodes'"},
      {"negative", "vc,node num\na,-1\n", "field 'node num'"},
      {"zero weight", "vc,node num,weight\na,1,0\n", "field 'weight'"},
      {"empty", "vc,node num\n", "no tenants"},
  };
  for (const BadCase& c : cases) {
    auto t = ParseTenantCsv(c.text, "vc.csv");
    ASSERT_FALSE(t.ok()) << c.name;
    EXPECT_NE(t.status().message().find(c.want), std::string::npos)
        << c.name << ": " << t.status().message();
  }
}

TEST(JobTraceTest, UtcTimestamps) {
  int64_t s = -1;
  EXPECT_TRUE(ParseUtcTimestamp("1970-01-01 00:00:00", &s));
  EXPECT_EQ(s, 0);
  EXPECT_TRUE(ParseUtcTimestamp("2017-11-30", &s));
  EXPECT_EQ(s, 1512000000);
  EXPECT_FALSE(ParseUtcTimestamp("1969-12-31 23:59:59", &s));
  EXPECT_FALSE(ParseUtcTimestamp("2017-11-30T00:00:00", &s));
  EXPECT_FALSE(ParseUtcTimestamp("", &s));
}

}  // namespace
}  // namespace seedance::trace
