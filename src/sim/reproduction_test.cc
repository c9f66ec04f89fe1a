// Integration test (label "integration"): reproduces the FGD paper's fill experiment on the
// public Alibaba GPU trace and compares every reference policy with the authors' published
// means (hkust-adsl/kubernetes-scheduler-simulator, expected_results; 10 seeds 42..51, tune 1.3).
//
// Needs the public data under trace::DataDir(); skips without it unless SEEDANCE_REQUIRE_DATA=1.
// Runs spread over all cores (seconds in Release, minutes under sanitizers).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/sched/registry.h"
#include "seedance/sim/report.h"
#include "seedance/sim/simulator.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::sim {
namespace {

constexpr double kTolerancePct = 0.4;
// Random placement varies most between seeds (its published sd is larger).
constexpr double kRandomTolerancePct = 1.0;
constexpr uint64_t kFirstSeed = 42;
constexpr uint64_t kLastSeed = 51;
constexpr char kTrace[] = "openb_pod_list_default";
// cas's goal: no more unallocated GPU at 100% arrived demand than FGD's published mean on the
// default trace (summary_by_workload_policy.csv: openb_pod_list_default,FGD = 4.77).
constexpr double kCasGoalUnallocPctAt100 = 4.77;

// Our policy name -> the name in the published results.
const std::map<std::string, std::string>& PublishedName() {
  static const auto* names = new std::map<std::string, std::string>{
      {"random", "Random"},      {"dotprod", "DotProd"}, {"clustering", "GpuClustering"},
      {"packing", "GpuPacking"}, {"bestfit", "BestFit"}, {"fgd", "FGD"}};
  return *names;
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) {
    if (!field.empty() && field.back() == '\r') field.pop_back();
    out.push_back(field);
  }
  return out;
}

// Reads the named columns of a published results CSV; each row's values in `columns` order
// go to `row(line_no, values)`, which may reject the row with an error.
absl::Status ReadColumns(
    const std::string& path, const std::vector<std::string>& columns,
    const std::function<absl::Status(int, const std::vector<std::string>&)>& row) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) return absl::InvalidArgumentError(path + ": empty");
  const std::vector<std::string> header = SplitCsvLine(line);
  std::vector<size_t> index;
  for (const std::string& name : columns) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      return absl::InvalidArgumentError(path + ":1: no column '" + name + "'");
    }
    index.push_back(static_cast<size_t>(it - header.begin()));
  }
  const size_t need = *std::max_element(index.begin(), index.end()) + 1;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> f = SplitCsvLine(line);
    if (f.size() < need) {
      return absl::InvalidArgumentError(path + ":" + std::to_string(line_no) + ": short row");
    }
    std::vector<std::string> values;
    for (size_t i : index) values.push_back(f[i]);
    if (absl::Status st = row(line_no, values); !st.ok()) {
      return absl::InvalidArgumentError(path + ":" + std::to_string(line_no) + ": " +
                                        std::string(st.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Number(const std::string& field, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return absl::InvalidArgumentError("field '" + field + "': not a number (got '" + text + "')");
}

// Reads workload,policy -> unalloc_pct_at_arrived100_mean from the published summary.
absl::StatusOr<std::map<std::pair<std::string, std::string>, double>> ReadPublished(
    const std::string& path) {
  std::map<std::pair<std::string, std::string>, double> out;
  absl::Status st = ReadColumns(path, {"workload", "policy", "unalloc_pct_at_arrived100_mean"},
                                [&](int, const std::vector<std::string>& f) -> absl::Status {
                                  auto v = Number("unalloc_pct_at_arrived100_mean", f[2]);
                                  if (!v.ok()) return v.status();
                                  out[{f[0], f[1]}] = *v;
                                  return absl::OkStatus();
                                });
  if (!st.ok()) return st;
  return out;
}

// Reads the published per-seed curves (analysis_allo_discrete.csv): workload,policy,seed ->
// unallocated GPU % at 100% arrived demand (100 - the allocation ratio in column "100").
absl::StatusOr<std::map<std::tuple<std::string, std::string, int>, double>> ReadPublishedPerSeed(
    const std::string& path) {
  std::map<std::tuple<std::string, std::string, int>, double> out;
  absl::Status st = ReadColumns(
      path, {"workload", "sc_policy", "seed", "100"},
      [&](int, const std::vector<std::string>& f) -> absl::Status {
        auto seed = Number("seed", f[2]);
        if (!seed.ok()) return seed.status();
        auto alloc = Number("100", f[3]);
        if (!alloc.ok()) return alloc.status();
        // sc_policy is "NN-Name", e.g. "05-BestFit".
        out[{f[0], f[1].substr(f[1].find('-') + 1), static_cast<int>(*seed)}] = 100.0 - *alloc;
        return absl::OkStatus();
      });
  if (!st.ok()) return st;
  return out;
}

class ReproductionTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string csv = trace::DataDir() + "/alibaba-gpu-v2023/csv";
    nodes_path_ = csv + "/openb_node_list_gpu_node.csv";
    pods_path_ = csv + "/" + kTrace + ".csv";
    published_path_ =
        trace::DataDir() + "/fgd-atc23-expected-results/summary_by_workload_policy.csv";
    for (const std::string& p : {nodes_path_, pods_path_, published_path_}) {
      if (!std::filesystem::exists(p)) {
        missing_ = p;
        return;
      }
    }
    auto nodes = trace::ReadNodeCsv(nodes_path_);
    auto pods = trace::ReadPodCsv(pods_path_);
    if (!nodes.ok() || !pods.ok()) {
      load_error_ = !nodes.ok() ? nodes.status().ToString() : pods.status().ToString();
      return;
    }
    workload_ = new Workload{std::move(*nodes), std::move(*pods), kTrace};
  }
  static void TearDownTestSuite() {
    delete workload_;
    workload_ = nullptr;
  }

  void SetUp() override {
    if (!missing_.empty()) {
      if (trace::DataRequired()) {
        FAIL() << "public data missing (" << missing_ << ") and SEEDANCE_REQUIRE_DATA=1";
      }
      GTEST_SKIP() << "public data not found (" << missing_
                   << "); set SEEDANCE_DATA_DIR to run the reproduction";
    }
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    ASSERT_NE(workload_, nullptr);
  }

  // Runs each policy over seeds 42..51 in fill mode with tune 1.3 on all cores and returns
  // each policy's unalloc_gpu_pct_at_100 per seed.
  static std::map<std::string, std::vector<double>> RunFill(
      const std::vector<std::string>& policies, RngKind rng = RngKind::kSeedance) {
    struct Task {
      size_t policy;
      uint64_t seed;
    };
    std::vector<Task> tasks;
    for (size_t p = 0; p < policies.size(); ++p) {
      for (uint64_t s = kFirstSeed; s <= kLastSeed; ++s) tasks.push_back({p, s});
    }
    std::vector<double> values(tasks.size(), NAN);
    struct Errors {
      base::Mutex mu;
      std::vector<std::string> list ABSL_GUARDED_BY(mu);
    } errors;
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i = next++; i < tasks.size(); i = next++) {
        SimOptions o;
        o.mode = Mode::kFill;
        o.tune = 1.3;
        o.seed = tasks[i].seed;
        o.rng = rng;
        absl::StatusOr<RunResult> r = sim::Run(*workload_, policies[tasks[i].policy], o);
        if (r.ok()) {
          values[i] = r->unalloc_gpu_pct_at_100;
        } else {
          base::MutexLock lock(errors.mu);
          errors.list.push_back(policies[tasks[i].policy] + " seed " +
                                std::to_string(tasks[i].seed) + ": " + r.status().ToString());
        }
      }
    };
    const size_t threads =
        std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), tasks.size());
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
    {
      base::MutexLock lock(errors.mu);
      for (const std::string& e : errors.list) ADD_FAILURE() << e;
    }
    std::map<std::string, std::vector<double>> out;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!std::isnan(values[i])) out[policies[tasks[i].policy]].push_back(values[i]);
    }
    return out;
  }

  static Workload* workload_;
  static std::string nodes_path_, pods_path_, published_path_, missing_, load_error_;
};

Workload* ReproductionTest::workload_ = nullptr;
std::string ReproductionTest::nodes_path_, ReproductionTest::pods_path_,
    ReproductionTest::published_path_, ReproductionTest::missing_, ReproductionTest::load_error_;

TEST_F(ReproductionTest, ReferencePoliciesMatchPublishedMeansOnDefaultTrace) {
  auto published = ReadPublished(published_path_);
  ASSERT_TRUE(published.ok()) << published.status();
  const std::vector<std::string>& policies = sched::ReferencePolicyNames();
  ASSERT_EQ(policies.size(), 6u);
  const auto ours = RunFill(policies);

  std::printf("\n%s, fill, tune 1.3, seeds %llu-%llu: unallocated GPU %% at 100%% arrived\n",
              kTrace, static_cast<unsigned long long>(kFirstSeed),
              static_cast<unsigned long long>(kLastSeed));
  std::printf("%-11s %10s %15s %7s %5s\n", "policy", "published", "ours (sd)", "diff", "tol");
  for (const std::string& policy : policies) {
    auto name = PublishedName().find(policy);
    ASSERT_NE(name, PublishedName().end()) << "no published name for " << policy;
    auto want = published->find({kTrace, name->second});
    ASSERT_NE(want, published->end())
        << published_path_ << ": no row for " << kTrace << "," << name->second;
    auto got = ours.find(policy);
    ASSERT_NE(got, ours.end()) << policy << ": no successful run";
    ASSERT_EQ(got->second.size(), kLastSeed - kFirstSeed + 1) << policy;
    const MeanSd m = Summarize(got->second);
    const double tol = policy == "random" ? kRandomTolerancePct : kTolerancePct;
    const double diff = m.mean - want->second;
    std::printf("%-11s %10.2f %8.2f (%4.2f) %+7.2f %5.1f%s\n", policy.c_str(), want->second, m.mean,
                m.sd, diff, tol, std::abs(diff) <= tol ? "" : "  <-- off");
    EXPECT_LE(std::abs(diff), tol) << policy << ": ours " << m.mean << " vs published "
                                   << want->second << " (" << name->second << ")";
  }
  std::fflush(stdout);
}

// With Go's math/rand drawn as the authors' simulator draws it (--rng reference), the runs are
// the paper's own runs: every deterministic policy must give each published per-seed value, not
// only the mean. (random cannot: the reference's random scores come from the same global
// stream during scheduling.)
TEST_F(ReproductionTest, ReferenceStreamGivesEveryPublishedPerSeedValueOnDefaultTrace) {
  const std::string path =
      trace::DataDir() + "/fgd-atc23-expected-results/analysis_allo_discrete.csv";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  auto published = ReadPublishedPerSeed(path);
  ASSERT_TRUE(published.ok()) << published.status();
  const std::vector<std::string> policies = {"dotprod", "clustering", "packing", "bestfit", "fgd"};
  const auto ours = RunFill(policies, RngKind::kReference);
  // The published values are rounded; per-seed differences we measured are <= 0.008.
  constexpr double kPerSeedTolerancePct = 0.02;
  for (const std::string& policy : policies) {
    auto got = ours.find(policy);
    ASSERT_NE(got, ours.end()) << policy << ": no successful run";
    ASSERT_EQ(got->second.size(), kLastSeed - kFirstSeed + 1) << policy;
    for (uint64_t seed = kFirstSeed; seed <= kLastSeed; ++seed) {
      auto want = published->find({kTrace, PublishedName().at(policy), static_cast<int>(seed)});
      ASSERT_NE(want, published->end()) << policy << " seed " << seed << ": no published row";
      const double value = got->second[seed - kFirstSeed];
      EXPECT_NEAR(value, want->second, kPerSeedTolerancePct)
          << policy << " seed " << seed << " with the reference random stream";
    }
  }
}

// The project's goal for its own policy (issue #2): oracle-free cas no worse than FGD published.
TEST_F(ReproductionTest, CasGoalUnallocAt100NoWorseThanFgdPublishedOnDefaultTrace) {
  const auto ours = RunFill({"cas"});
  auto got = ours.find("cas");
  ASSERT_NE(got, ours.end()) << "cas: no successful run";
  ASSERT_EQ(got->second.size(), kLastSeed - kFirstSeed + 1);
  const MeanSd m = Summarize(got->second);
  std::printf(
      "\ncas on %s, seeds %llu-%llu: unallocated GPU %% at 100%% arrived %.2f (sd %.2f);"
      " goal <= %.2f\n",
      kTrace, static_cast<unsigned long long>(kFirstSeed),
      static_cast<unsigned long long>(kLastSeed), m.mean, m.sd, kCasGoalUnallocPctAt100);
  std::fflush(stdout);
  EXPECT_LE(m.mean, kCasGoalUnallocPctAt100)
      << "cas misses its goal: mean unalloc_gpu_pct_at_100 over seeds 42-51 is " << m.mean
      << ", FGD's published mean is " << kCasGoalUnallocPctAt100;
}

TEST(PublishedSummaryTest, CoversEveryReferencePolicyOnTheDefaultTrace) {
  const std::string path =
      trace::DataDir() + "/fgd-atc23-expected-results/summary_by_workload_policy.csv";
  if (!std::filesystem::exists(path)) {
    if (trace::DataRequired()) FAIL() << path << " missing and SEEDANCE_REQUIRE_DATA=1";
    GTEST_SKIP() << path << " not found; set SEEDANCE_DATA_DIR";
  }
  auto published = ReadPublished(path);
  ASSERT_TRUE(published.ok()) << published.status();
  for (const auto& [ours, theirs] : PublishedName()) {
    auto it = published->find({kTrace, theirs});
    ASSERT_NE(it, published->end()) << theirs;
    EXPECT_GT(it->second, 0) << theirs;
    EXPECT_LT(it->second, 100) << theirs;
  }
  EXPECT_DOUBLE_EQ(published->at({kTrace, "FGD"}), kCasGoalUnallocPctAt100);
}

}  // namespace
}  // namespace seedance::sim
