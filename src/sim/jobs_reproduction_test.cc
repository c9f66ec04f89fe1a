// The Helios reference results on the Philly trace (docs/jobs.md, "Reproduction"): the overall
// rows of expected/reference_isolated_vcs.csv for FIFO, SJF and SRTF on isolated VCs, window
// 2017-10-01..11-30. Needs the public data under trace::DataDir(); skips without it unless
// SEEDANCE_REQUIRE_DATA=1.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "seedance/sim/jobs.h"
#include "seedance/trace/csv_reader.h"
#include "seedance/trace/job_trace.h"

namespace seedance::sim {
namespace {

// policy,vc -> column -> value, from the reference CSV.
using RefRows = std::map<std::string, std::map<std::string, std::string>>;

RefRows ReadReference(const std::string& path) {
  RefRows rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = absl::StrSplit(line, ',');
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = absl::StrSplit(line, ',');
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows[row["policy"] + "," + row["vc"]] = row;
  }
  return rows;
}

TEST(JobsReproductionTest, OverallRowsOfTheIsolatedReference) {
  const std::string dir = trace::DataDir() + "/philly-vc";
  const std::string expected = dir + "/expected/reference_isolated_vcs.csv";
  if (!std::filesystem::exists(expected) || !std::filesystem::exists(dir + "/philly.csv")) {
    if (trace::DataRequired()) FAIL() << dir << " missing and SEEDANCE_REQUIRE_DATA=1";
    GTEST_SKIP() << dir << " not found; set SEEDANCE_DATA_DIR";
  }
  auto jobs = trace::ReadJobTrace(dir + "/philly.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  auto tenants = trace::ReadTenantCsv(dir + "/philly_vc.csv");
  ASSERT_TRUE(tenants.ok()) << tenants.status();
  JobSelection sel;
  ASSERT_TRUE(trace::ParseUtcTimestamp("2017-10-01 00:00:00", &sel.window.start_unix_s));
  ASSERT_TRUE(trace::ParseUtcTimestamp("2017-11-30 23:59:00", &sel.window.end_unix_s));
  auto w = SelectJobs(*jobs, *tenants, sel);
  ASSERT_TRUE(w.ok()) << w.status();
  const RefRows ref = ReadReference(expected);
  for (const std::string policy : {"fifo", "sjf", "srtf"}) {
    JobSimOptions o;
    o.policy = policy;
    auto run = RunJobs(*w, o);
    ASSERT_TRUE(run.ok()) << run.status();
    const JobSummary s = SummarizeJobs(*w, *run, -1);
    const auto it = ref.find(policy + ",all");
    ASSERT_NE(it, ref.end()) << policy;
    const auto& row = it->second;
    EXPECT_EQ(s.jobs, std::stoll(row.at("jobs"))) << policy;
    // The reference rounds to two decimals.
    EXPECT_NEAR(s.avg_jct_s, std::stod(row.at("avg_jct_s")), 0.01) << policy;
    EXPECT_NEAR(s.avg_queue_s, std::stod(row.at("avg_queue_s")), 0.01) << policy;
    EXPECT_EQ(s.makespan_s, std::stoll(row.at("makespan_s"))) << policy;
    EXPECT_EQ(s.preemptions, std::stoll(row.at("preemptions"))) << policy;
    EXPECT_EQ(s.preempted_jobs, std::stoll(row.at("preempted_jobs"))) << policy;
  }
}

}  // namespace
}  // namespace seedance::sim
