// Behaviour of the job-trace simulator on small hand-made workloads (docs/jobs.md).
#include "seedance/sim/jobs.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "job_nodes.h"

namespace seedance::sim {
namespace {

// A workload of jobs {submit, duration, gpus, tenant} on tenants {name, nodes}.
JobWorkload Make(std::vector<JobTenant> tenants, std::vector<JobSpec> jobs) {
  JobWorkload w;
  w.tenants = std::move(tenants);
  w.jobs = std::move(jobs);
  w.window_s = 1000000;
  for (size_t i = 0; i < w.jobs.size(); ++i) w.jobs[i].line = static_cast<int64_t>(i) + 2;
  return w;
}

JobRun MustRun(const JobWorkload& w, const std::string& policy,
               Partitioning p = Partitioning::kIsolated) {
  JobSimOptions o;
  o.policy = policy;
  o.partitioning = p;
  auto r = RunJobs(w, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : JobRun{};
}

TEST(JobNodesTest, ConsolidatePlacement) {
  struct Case {
    std::string name;
    std::vector<int32_t> taken;  // GPUs already used per node
    int32_t gpus;
    bool ok;
    JobAlloc want;
  };
  const std::vector<Case> cases = {
      {"best fit", {0, 6, 4}, 2, true, {{1, 2}}},
      {"best fit tie takes the lowest index", {4, 4, 0}, 3, true, {{0, 3}}},
      {"no node holds it", {5, 5, 5}, 4, false, {}},
      {"whole nodes, lowest indices", {1, 0, 0, 0}, 16, true, {{1, 8}, {2, 8}}},
      {"remainder on the next whole node", {0, 0, 3}, 12, true, {{0, 8}, {1, 4}}},
      {"remainder on the fullest partly free node", {0, 7, 3, 2}, 12, true, {{0, 8}, {3, 4}}},
      {"remainder does not fit", {0, 7, 6}, 12, false, {}},
      {"too few whole nodes", {0, 1, 1}, 16, false, {}},
  };
  for (const Case& c : cases) {
    JobNodes nodes(static_cast<int32_t>(c.taken.size()), 8);
    for (size_t n = 0; n < c.taken.size(); ++n) {
      if (c.taken[n] > 0) nodes.Take({{static_cast<int32_t>(n), c.taken[n]}});
    }
    JobAlloc alloc;
    EXPECT_EQ(nodes.Place(c.gpus, &alloc), c.ok) << c.name;
    EXPECT_EQ(alloc, c.want) << c.name;
  }
}

TEST(JobsTest, FifoBlocksBehindTheHeadAndSjfTakesTheShortest) {
  // One 8-GPU node. A (8 GPUs, 100 s) runs; B (8 GPUs, 50 s) and C (1 GPU, 10 s) queue.
  const JobWorkload w = Make({{"a", 1, 1.0}}, {{0, 100, 8, 0}, {1, 50, 8, 0}, {2, 10, 1, 0}});
  const JobRun fifo = MustRun(w, "fifo");
  EXPECT_EQ(fifo.jobs[1].start_s, 100);
  EXPECT_EQ(fifo.jobs[2].start_s, 150);  // C waits behind B although it would fit beside nothing
  const JobRun sjf = MustRun(w, "sjf");
  EXPECT_EQ(sjf.jobs[2].start_s, 100);  // C is shorter: it goes first
  EXPECT_EQ(sjf.jobs[1].start_s, 110);
  EXPECT_EQ(sjf.jobs[1].end_s, 160);
}

TEST(JobsTest, SrtfPreemptsWithTheCheckpointOverhead) {
  // A (8 GPUs, 100 s) runs; at 10 s B (8 GPUs, 20 s) arrives with less remaining work.
  const JobWorkload w = Make({{"a", 1, 1.0}}, {{0, 100, 8, 0}, {10, 20, 8, 0}});
  const JobRun r = MustRun(w, "srtf");
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].lost_gpu_s, 30 * 8);
  EXPECT_EQ(r.jobs[1].start_s, 10);
  // The reference ends a job one second after its remaining time reaches 0.
  EXPECT_EQ(r.jobs[1].end_s, 31);
  // A had run 10 s (90 left) when preempted; 30 s of overhead; resumed at 31.
  EXPECT_EQ(r.jobs[0].end_s, 31 + 90 + 30 + 1);
  EXPECT_EQ(r.jobs[0].queue_s, 31 - 10);
}

TEST(JobsTest, PooledSharesIdleNodesIsolatedDoesNot) {
  // Tenant a has 1 node, b has 1 node; a submits two 8-GPU jobs at once.
  const JobWorkload w =
      Make({{"a", 1, 1.0}, {"b", 1, 1.0}}, {{0, 100, 8, 0}, {0, 100, 8, 0}, {500, 10, 1, 1}});
  EXPECT_EQ(MustRun(w, "fifo", Partitioning::kIsolated).jobs[1].start_s, 100);
  EXPECT_EQ(MustRun(w, "fifo", Partitioning::kPooled).jobs[1].start_s, 0);
}

TEST(JobsTest, ReclaimTakesBorrowedGpusBackAtOnce) {
  // a borrows b's idle node; when b submits within its quota, a's borrowed job is preempted.
  const JobWorkload w =
      Make({{"a", 1, 1.0}, {"b", 1, 1.0}}, {{0, 1000, 8, 0}, {0, 1000, 8, 0}, {100, 50, 8, 1}});
  for (const std::string policy : {"quota-fifo", "quota-las"}) {
    const JobRun r = MustRun(w, policy);
    EXPECT_EQ(r.jobs[0].start_s, 0) << policy;
    EXPECT_EQ(r.jobs[1].start_s, 0) << policy;  // borrowing
    EXPECT_EQ(r.jobs[2].start_s, 100) << policy;  // reclaimed at once
    EXPECT_EQ(r.jobs[1].preemptions + r.jobs[0].preemptions, 1) << policy;
    EXPECT_EQ(r.below_quota_s[1], 0) << policy;
    // The victim resumes with the 30 s overhead once b's job is done.
    EXPECT_EQ(r.jobs[1].end_s, 150 + 900 + 30) << policy;
  }
}

TEST(JobsTest, ReclaimRestoresEachOwnersShareNotOnlyOne) {
  // Three tenants of 1 node each. a fills all 3 nodes; b and c then reclaim one node each.
  const JobWorkload w = Make({{"a", 1, 1.0}, {"b", 1, 1.0}, {"c", 1, 1.0}},
                             {{0, 5000, 8, 0},
                              {0, 5000, 8, 0},
                              {0, 5000, 8, 0},
                              {100, 100, 8, 1},
                              {100, 100, 8, 2}});
  const JobRun r = MustRun(w, "quota-fifo");
  EXPECT_EQ(r.jobs[3].start_s, 100);
  EXPECT_EQ(r.jobs[4].start_s, 100);
  EXPECT_EQ(r.jobs[0].preemptions + r.jobs[1].preemptions + r.jobs[2].preemptions, 2);
}

TEST(JobsTest, GuaranteedWorkIsNeverPreempted) {
  // a runs within its quota; b borrows nothing and waits: b's job cannot evict a's.
  const JobWorkload w = Make({{"a", 1, 1.0}, {"b", 0, 1.0}}, {{0, 100, 8, 0}, {10, 10, 8, 1}});
  const JobRun r = MustRun(w, "quota-las");
  EXPECT_EQ(r.jobs[0].preemptions, 0);
  EXPECT_EQ(r.jobs[1].start_s, 100);
}

TEST(JobsTest, LeastAttainedServiceFavoursNewWorkWithoutReadingDurations) {
  // One tenant with no quota on a 1-node pool owned by an idle tenant: everything borrows. A
  // long job has run past the first level when a short one arrives: the short one preempts it.
  const JobWorkload w = Make({{"idle", 1, 1.0}, {"a", 0, 1.0}},
                             {{0, 100000, 8, 1}, {2000, 60, 8, 1}});
  const JobRun las = MustRun(w, "quota-las");
  EXPECT_EQ(las.jobs[1].start_s, 2000);
  EXPECT_EQ(las.jobs[0].preemptions, 1);
  const JobRun fifo = MustRun(w, "quota-fifo");
  EXPECT_EQ(fifo.jobs[1].start_s, 100000);
  EXPECT_EQ(fifo.jobs[0].preemptions, 0);
}

TEST(JobsTest, AGangNeverRunsPartly) {
  // 12 GPUs on two nodes with 4 GPUs busy on one: the gang waits until both pieces fit.
  const JobWorkload w = Make({{"a", 2, 1.0}}, {{0, 100, 4, 0}, {0, 10, 12, 0}});
  for (const std::string policy : {"fifo", "quota-fifo", "quota-las"}) {
    const JobRun r = MustRun(w, policy, Partitioning::kPooled);
    // 8 + 4 fits beside the 4-GPU job: one whole node and 4 GPUs of the other.
    EXPECT_EQ(r.jobs[1].start_s, 0) << policy;
  }
  const JobWorkload tight = Make({{"a", 2, 1.0}}, {{0, 100, 5, 0}, {0, 10, 12, 0}});
  EXPECT_EQ(MustRun(tight, "fifo").jobs[1].start_s, 100);
}

TEST(JobsTest, SummariesAndJson) {
  const JobWorkload w = Make({{"a", 1, 1.0}, {"b", 1, 1.0}}, {{0, 100, 8, 0}, {0, 50, 4, 1}});
  const JobRun r = MustRun(w, "fifo");
  const JobSummary all = SummarizeJobs(w, r, -1);
  EXPECT_EQ(all.jobs, 2);
  EXPECT_DOUBLE_EQ(all.avg_jct_s, 75);
  EXPECT_EQ(all.makespan_s, 100);
  EXPECT_DOUBLE_EQ(all.gpu_util, (800.0 + 200.0) / (16 * 100));
  const auto doc = JobRunsToJson(w, {r});
  ASSERT_EQ(doc["policies"].size(), 1u);
  EXPECT_EQ(doc["policies"][0]["name"], "fifo");
  EXPECT_EQ(doc["policies"][0]["tenants"][1]["name"], "b");
  EXPECT_DOUBLE_EQ(doc["policies"][0]["tenants"][1]["avg_jct_s"].get<double>(), 50);
  EXPECT_TRUE(doc["policies"][0]["summary"].contains("avg_queue_s"));
}

TEST(JobsTest, PerJobFiguresOverNoJobAreNullNotZero) {
  // Tenant b submits nothing: its averages and percentiles are null (the table prints "-").
  const JobWorkload w = Make({{"a", 1, 1.0}, {"b", 1, 1.0}}, {{0, 100, 8, 0}});
  const JobRun r = MustRun(w, "fifo");
  const auto doc = JobRunsToJson(w, {r});
  const auto& b = doc["policies"][0]["tenants"][1];
  ASSERT_EQ(b["name"], "b");
  EXPECT_EQ(b["jobs"], 0);
  for (const char* key : {"avg_jct_s", "p99_jct_s", "avg_queue_s", "p99_queue_s", "p999_queue_s"}) {
    EXPECT_TRUE(b[key].is_null()) << key;
    EXPECT_FALSE(doc["policies"][0]["summary"][key].is_null()) << key;  // tenant a ran a job
  }
  const std::string table = RenderJobTable(w, {r});
  const size_t row = table.find("fifo         b ");
  ASSERT_NE(row, std::string::npos) << table;
  const std::string line = table.substr(row, table.find('\n', row) - row);
  // avg_jct_s, avg_queue_s, p99_queue_s: "-" each (the later columns are counts and rates).
  const std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
  ASSERT_GE(cells.size(), 6u) << line;
  EXPECT_EQ(cells[3], "-") << line;
  EXPECT_EQ(cells[4], "-") << line;
  EXPECT_EQ(cells[5], "-") << line;
}

TEST(JobsTest, UnknownPolicyIsAnError) {
  const JobWorkload w = Make({{"a", 1, 1.0}}, {{0, 1, 1, 0}});
  JobSimOptions o;
  o.policy = "drf-magic";
  EXPECT_FALSE(RunJobs(w, o).ok());
  EXPECT_FALSE(ParseJobPolicies("fifo,nope").ok());
  auto all = ParseJobPolicies("fifo,all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), JobPolicyNames().size());
}

TEST(SelectJobsTest, TheReferenceProtocolsSelection) {
  std::vector<trace::TraceJob> trace = {
      {1000, 5, 1, "a", 2},   // before the window
      {2000, 5, 1, "a", 3},   // first kept: origin
      {2500, 5, 0, "a", 4},   // no GPUs
      {2500, 6, 2, "zz", 5},  // tenant without capacity
      {2500, 7, 16, "a", 6},  // larger than a's partition (2 nodes at 0.5x: 8 GPUs)
      {2600, 8, 1, "b", 7},   // tie with the next: reverse file order by default
      {2600, 9, 1, "a", 8},
      {2700, 1, 1, "a", 9},   // past the window end
  };
  std::vector<trace::TenantSpec> tenants = {{"a", 2, 1.0, 2}, {"b", 3, 1.0, 3}};
  JobSelection sel;
  sel.window = {1500, 2150};  // 650 s long, measured from the first kept job
  sel.capacity_scale = 0.5;
  auto w = SelectJobs(trace, tenants, sel);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->tenants[0].nodes, 1);  // 2 x 0.5
  EXPECT_EQ(w->tenants[1].nodes, 2);  // 1.5 rounds half to even
  EXPECT_EQ(w->origin_unix_s, 2000);
  EXPECT_EQ(w->window_s, 650);
  ASSERT_EQ(w->jobs.size(), 3u);
  EXPECT_EQ(w->jobs[0].line, 3);
  EXPECT_EQ(w->jobs[0].submit_s, 0);
  EXPECT_EQ(w->jobs[1].line, 8);  // the later row of the tie first
  EXPECT_EQ(w->jobs[2].line, 7);
  EXPECT_EQ(w->too_large, 1);
  EXPECT_EQ(w->no_gpus, 1);
  EXPECT_EQ(w->unknown_tenant, 1);
  EXPECT_EQ(w->outside_window, 2);
  sel.ties = SubmitTies::kFile;
  auto file_order = SelectJobs(trace, tenants, sel);
  ASSERT_TRUE(file_order.ok());
  EXPECT_EQ(file_order->jobs[1].line, 7);
  sel.pooled = true;
  EXPECT_EQ(SelectJobs(trace, tenants, sel)->too_large, 0);  // 16 GPUs fit the 3-node pool
}

}  // namespace
}  // namespace seedance::sim

namespace seedance::sim {
namespace {

TEST(RunJobPoliciesTest, PoliciesRunOnTheirPartitioningsAndMustCompare) {
  const std::vector<trace::TraceJob> trace = {{100, 10, 8, "a", 2}, {100, 10, 16, "b", 3}};
  const std::vector<trace::TenantSpec> tenants = {{"a", 1, 1.0, 2}, {"b", 1, 1.0, 3}};
  JobSelection sel;
  sel.window = {0, 1000};
  auto pooled = RunJobPolicies(trace, tenants, sel, /*pooled_reference=*/true,
                               {"fifo", "quota-fifo"});
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  EXPECT_EQ(pooled->workload.jobs.size(), 2u);  // the 16-GPU job fits the 2-node pool
  EXPECT_EQ(pooled->runs.size(), 2u);
  const auto meta = JobMetaJson(*pooled, {{"trace", "t.csv"}});
  EXPECT_EQ(meta["trace"], "t.csv");
  EXPECT_EQ(meta["jobs"], 2);
  EXPECT_NE(JobRunSummary(*pooled).find("2 jobs, 2 policies"), std::string::npos);
  // Isolated fifo leaves the 16-GPU job out; quota-fifo keeps it: the figures would not compare.
  auto mixed = RunJobPolicies(trace, tenants, sel, false, {"fifo", "quota-fifo"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("larger than their tenant's partition"),
            std::string::npos)
      << mixed.status();
}

}  // namespace
}  // namespace seedance::sim
