#include "seedance/policy/manager.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

// Waits until `done()` holds, checking often, up to a generous deadline (a guard against a hang,
// not a timing assertion).
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done();
}

// A policy whose every part says which generation it is: `n` rules named g<n>-r<i>, a profile
// named gen-<n>. Lets a reader check that the policy it holds is complete.
std::string Generation(int n) {
  std::string s = absl::StrCat("# generation ", n, "\nprofiles:\n  - name: gen-", n,
                               "\n    policy: cas\n  - name: other\n    policy: packing\n"
                               "classes:\n  - name: all\n    profile: gen-",
                               n, "\nrules:\n");
  for (int i = 0; i <= n % 5; ++i) {
    absl::StrAppend(&s, "  - name: g", n, "-r", i, "\n    condition: pending_pods > ", i,
                    "\n    action: {type: alert, name: a", i, "}\n");
  }
  return s;
}

bool IsCompleteGeneration(const Policy& p) {
  if (p.profiles.size() != 2 || p.profiles[0].name.rfind("gen-", 0) != 0) return false;
  const int n = std::atoi(p.profiles[0].name.c_str() + 4);
  if (p.text != Generation(n)) return false;
  if (p.rules.size() != static_cast<size_t>(n % 5 + 1)) return false;
  return p.classes.size() == 1 && p.classes[0].profile == p.profiles[0].name;
}

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/policy_manager_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = (fs::path(dir_) / "policy.yaml").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Writes as an editor does: a temporary file renamed over the policy.
  void WriteByRename(const std::string& text) {
    const std::string tmp = path_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << text;
    }
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  }
  void WriteInPlace(const std::string& text) {
    std::ofstream out(path_, std::ios::trunc);
    out << text;
  }
  std::unique_ptr<PolicyManager> StartOrDie(ManagerOptions o = {}) {
    o.debounce_ms = 5;
    absl::StatusOr<std::unique_ptr<PolicyManager>> m =
        PolicyManager::Start(path_, ServerMetricNames(), std::move(o));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : nullptr;
  }

  std::string dir_, path_;
};

constexpr char kSwitching[] = R"(profiles:
  - {name: packed, policy: cas}
  - {name: spread, policy: bestfit}
  - {name: random, policy: random}
classes:
  - {name: batch, match: {namespace: batch}, profile: packed}
rules:
  - name: low-priority-switch
    condition: pending_pods > 10
    priority: 1
    timeout: 60
    action: {type: switch_profile, class: batch, profile: random}
  - name: crowded
    condition: gpu_free_pct < 10 && pending_pods > 100
    priority: 10
    timeout: 30
    action: {type: switch_profile, class: batch, profile: spread}
  - name: alert
    condition: gpu_free_pct < 5
    action: {type: alert, name: GpuLow}
  - name: cordon-a
    condition: nodes > 0
    priority: 5
    timeout: 100
    action: {type: cordon, node: n1}
  - name: cordon-b
    condition: nodes > 0
    priority: 4
    action: {type: cordon, node: n1}
)";

std::vector<std::string> RulesOf(const std::vector<Action>& actions) {
  std::vector<std::string> out;
  for (const Action& a : actions) out.push_back(a.rule);
  return out;
}

TEST_F(ManagerTest, BuiltInPolicyWithoutAFile) {
  absl::StatusOr<std::unique_ptr<PolicyManager>> m = PolicyManager::Start("", ServerMetricNames());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->state(), PolicyState::kLoaded);
  EXPECT_EQ((*m)->generation(), 1);
  EXPECT_EQ((*m)->Current()->profiles.at(0).policy, "cas");
  EXPECT_EQ((*m)->Current()->text, DefaultPolicyText());
  EXPECT_TRUE((*m)->ReloadFromFile().ok());  // no file: nothing to do
  EXPECT_EQ((*m)->generation(), 1);
}

TEST_F(ManagerTest, StartRefusesABadFileWithItsLocation) {
  WriteInPlace("profiles:\n  - name: a\n    policy: nope\n");
  absl::StatusOr<std::unique_ptr<PolicyManager>> m =
      PolicyManager::Start(path_, ServerMetricNames());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              StartsWith(path_ + ":3:13: $.profiles[0].policy: unknown policy"));
  absl::StatusOr<std::unique_ptr<PolicyManager>> missing =
      PolicyManager::Start(path_ + ".absent", ServerMetricNames());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(path_ + ".absent"));
}

TEST_F(ManagerTest, ReloadTextGoodReplacesBadKeepsPrevious) {
  WriteInPlace(Generation(1));
  std::unique_ptr<PolicyManager> m = StartOrDie();
  ASSERT_NE(m, nullptr);
  std::shared_ptr<const Policy> first = m->Current();
  EXPECT_EQ(first->profiles[0].name, "gen-1");
  EXPECT_EQ(m->state(), PolicyState::kLoaded);

  ASSERT_TRUE(m->Reload(Generation(2), "PUT /v1/policy").ok());
  EXPECT_EQ(m->state(), PolicyState::kActive);
  EXPECT_EQ(m->generation(), 2);
  EXPECT_EQ(m->Current()->profiles[0].name, "gen-2");
  EXPECT_EQ(m->Current()->source, "PUT /v1/policy");
  // The snapshot taken before stays whole: a decision in flight finishes under it.
  EXPECT_EQ(first->profiles[0].name, "gen-1");
  EXPECT_TRUE(IsCompleteGeneration(*first));

  absl::Status bad =
      m->Reload("profiles:\n  - name: x\n    policy: cas\n    bogus: 1\n", "PUT /v1/policy");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.message()),
              StartsWith("PUT /v1/policy:4:5: $.profiles[0].bogus: unknown key"));
  EXPECT_EQ(m->state(), PolicyState::kFailed);
  EXPECT_EQ(m->last_error(), bad.message());
  EXPECT_EQ(m->Current()->profiles[0].name, "gen-2");
  EXPECT_EQ(m->generation(), 2);
  EXPECT_EQ(m->reloads_ok(), 1);
  EXPECT_EQ(m->reloads_failed(), 1);

  ASSERT_TRUE(m->Reload(Generation(3), "PUT /v1/policy").ok());
  EXPECT_EQ(m->state(), PolicyState::kActive);
  EXPECT_EQ(m->last_error(), "");
}

TEST_F(ManagerTest, OnReloadSeesEveryOutcome) {
  WriteInPlace(Generation(1));
  std::vector<std::string> seen;
  ManagerOptions o;
  o.watch = false;
  o.on_reload = [&](const absl::Status& st, const std::shared_ptr<const Policy>& p) {
    seen.push_back(absl::StrCat(st.ok() ? "ok " : "failed ", p->profiles[0].name));
  };
  std::unique_ptr<PolicyManager> m = StartOrDie(o);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->Reload(Generation(2), "api").ok());
  EXPECT_FALSE(m->Reload("nope: 1", "api").ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"ok gen-2", "failed gen-2"}));
}

TEST_F(ManagerTest, FileChangeReloadsAndABrokenFileIsRefusedWithItsLine) {
  WriteInPlace(Generation(1));
  std::unique_ptr<PolicyManager> m = StartOrDie();
  ASSERT_NE(m, nullptr);
  WriteByRename(Generation(2));
  ASSERT_TRUE(Eventually([&] { return m->Current()->profiles[0].name == "gen-2"; }));
  EXPECT_EQ(m->state(), PolicyState::kActive);
  EXPECT_EQ(m->Current()->source, path_);

  WriteByRename(
      "profiles:\n  - name: a\n    policy: cas\nrules:\n  - name: r\n"
      "    condition: pending_pods >\n    action: {type: alert, name: x}\n");
  ASSERT_TRUE(Eventually([&] { return m->state() == PolicyState::kFailed; }));
  EXPECT_THAT(m->last_error(), StartsWith(path_ + ":6:"));
  EXPECT_THAT(m->last_error(), HasSubstr("$.rules[0].condition"));
  EXPECT_EQ(m->Current()->profiles[0].name, "gen-2");  // the previous stays
  EXPECT_EQ(m->reloads_failed(), 1);

  // An in-place write (no rename) is seen too.
  WriteInPlace(Generation(3));
  ASSERT_TRUE(Eventually([&] { return m->Current()->profiles[0].name == "gen-3"; }));
  EXPECT_EQ(m->state(), PolicyState::kActive);
}

TEST_F(ManagerTest, UnchangedBytesAndARemovedFileDoNotReload) {
  WriteInPlace(Generation(1));
  ManagerOptions o;
  o.watch = false;  // driven by hand
  std::unique_ptr<PolicyManager> m = StartOrDie(o);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->ReloadFromFile().ok());
  EXPECT_EQ(m->generation(), 1);
  EXPECT_EQ(m->reloads_ok() + m->reloads_failed(), 0);
  fs::remove(path_);
  EXPECT_TRUE(m->ReloadFromFile().ok());
  EXPECT_EQ(m->Current()->profiles[0].name, "gen-1");
  WriteInPlace(Generation(4));
  EXPECT_TRUE(m->ReloadFromFile().ok());
  EXPECT_EQ(m->Current()->profiles[0].name, "gen-4");
  EXPECT_EQ(m->generation(), 2);
}

TEST_F(ManagerTest, HundredRewritesUnderConcurrentReaders) {
  WriteInPlace(Generation(0));
  std::unique_ptr<PolicyManager> m = StartOrDie();
  ASSERT_NE(m, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> incomplete{0}, observed{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      while (!stop.load()) {
        std::shared_ptr<const Policy> p = m->Current();
        if (!IsCompleteGeneration(*p)) incomplete.fetch_add(1);
        const PlacementProfile& prof = p->ProfileFor("ns", {}, 0);
        if (prof.name != p->profiles[0].name) incomplete.fetch_add(1);
        if (t % 2 == 0) {
          (void)m->Evaluate({{"pending_pods", static_cast<double>(t)}}, 1.0 * t);
          (void)m->Alerts();
        }
        observed.fetch_add(1);
      }
    });
  }
  constexpr int kWrites = 100;
  for (int i = 1; i <= kWrites; ++i) {
    if (i == 50) {
      WriteByRename("profiles: [{name: broken, policy: cas}\n");  // refused; gen 49 keeps serving
    }
    WriteByRename(Generation(i));
  }
  const bool settled = Eventually([&] {
    return m->Current()->profiles[0].name == absl::StrCat("gen-", kWrites) &&
           m->state() == PolicyState::kActive;
  });
  // Let the readers see the final policy a few times.
  const int64_t before = observed.load();
  Eventually([&] { return observed.load() > before + 100; });
  stop.store(true);
  for (std::thread& r : readers) r.join();
  ASSERT_TRUE(settled) << "last error: " << m->last_error();
  EXPECT_EQ(incomplete.load(), 0);
  EXPECT_GT(observed.load(), 0);
  EXPECT_TRUE(IsCompleteGeneration(*m->Current()));
  EXPECT_GE(m->reloads_ok(), 1);
  EXPECT_EQ(m->Current()->text, Generation(kWrites));
}

TEST_F(ManagerTest, ConcurrentApiReloadsAndReaders) {
  WriteInPlace(Generation(0));
  ManagerOptions o;
  o.watch = false;
  std::unique_ptr<PolicyManager> m = StartOrDie(o);
  ASSERT_NE(m, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> incomplete{0};
  std::thread reader([&] {
    while (!stop.load()) {
      if (!IsCompleteGeneration(*m->Current())) incomplete.fetch_add(1);
      (void)m->Evaluate({{"pending_pods", 3}}, 0);
    }
  });
  std::thread writer2([&] {
    for (int i = 0; i < 50; ++i) (void)m->Reload("broken: [", "api");
  });
  for (int i = 1; i <= 100; ++i) ASSERT_TRUE(m->Reload(Generation(i), "api").ok());
  writer2.join();
  stop.store(true);
  reader.join();
  EXPECT_EQ(incomplete.load(), 0);
  EXPECT_EQ(m->reloads_ok(), 100);
  EXPECT_EQ(m->reloads_failed(), 50);
  EXPECT_EQ(m->generation(), 101);
}

class EvaluateTest : public ManagerTest {
 protected:
  void SetUp() override {
    ManagerTest::SetUp();
    WriteInPlace(kSwitching);
    ManagerOptions o;
    o.watch = false;
    m_ = StartOrDie(o);
    ASSERT_NE(m_, nullptr);
  }
  std::string BatchProfile() const { return m_->Current()->ProfileFor("batch", {}, 0).name; }
  std::unique_ptr<PolicyManager> m_;
};

TEST_F(EvaluateTest, HighestPriorityFirstAndConflictsSuppressed) {
  const std::vector<Action> a =
      m_->Evaluate({{"gpu_free_pct", 3}, {"pending_pods", 500}, {"nodes", 4}}, 0);
  // crowded (10) wins the class over low-priority-switch (1); cordon-a (5) over cordon-b (4)
  // for the same node; then the alert (0).
  EXPECT_EQ(RulesOf(a), (std::vector<std::string>{"crowded", "cordon-a", "alert"}));
  EXPECT_EQ(a[0].kind, Action::kSwitchProfile);
  EXPECT_EQ(a[0].target, "batch");
  EXPECT_EQ(a[0].value, "spread");
  EXPECT_EQ(a[1].kind, Action::kCordon);
  EXPECT_EQ(a[1].target, "n1");
  EXPECT_EQ(BatchProfile(), "spread");
  EXPECT_EQ(m_->Alerts(), (std::map<std::string, bool>{{"GpuLow", true}}));
}

TEST_F(EvaluateTest, TimeoutIsCooldownAndEffectLifetime) {
  const std::map<std::string, double> crowded = {{"gpu_free_pct", 8}, {"pending_pods", 500}};
  const std::map<std::string, double> calm = {{"gpu_free_pct", 50}, {"pending_pods", 0}};
  EXPECT_EQ(RulesOf(m_->Evaluate(crowded, 100)), (std::vector<std::string>{"crowded"}));
  EXPECT_EQ(BatchProfile(), "spread");
  // Cooling down: no second firing before 100 + 30, though the condition holds.
  EXPECT_TRUE(m_->Evaluate(crowded, 110).empty());
  // The condition stopped holding, but the switch lasts its timeout.
  EXPECT_TRUE(m_->Evaluate(calm, 120).empty());
  EXPECT_EQ(BatchProfile(), "spread");
  // At 100 + 30 the switch runs out.
  EXPECT_TRUE(m_->Evaluate(calm, 130).empty());
  EXPECT_EQ(BatchProfile(), "packed");
  // Fires again once the condition holds again.
  EXPECT_EQ(RulesOf(m_->Evaluate(crowded, 131)), (std::vector<std::string>{"crowded"}));
  // Renewed at the end of the window while the condition still holds.
  EXPECT_EQ(RulesOf(m_->Evaluate(crowded, 161)), (std::vector<std::string>{"crowded"}));
  EXPECT_EQ(BatchProfile(), "spread");
}

TEST_F(EvaluateTest, LowerPriorityTakesOverOnlyAfterTheHigherRunsOut) {
  const std::map<std::string, double> both = {{"gpu_free_pct", 8}, {"pending_pods", 500}};
  const std::map<std::string, double> only_low = {{"gpu_free_pct", 50}, {"pending_pods", 500}};
  EXPECT_EQ(RulesOf(m_->Evaluate(both, 0)), (std::vector<std::string>{"crowded"}));
  EXPECT_TRUE(m_->Evaluate(only_low, 10).empty());  // crowded's switch still lasts
  EXPECT_EQ(BatchProfile(), "spread");
  EXPECT_EQ(RulesOf(m_->Evaluate(only_low, 30)), (std::vector<std::string>{"low-priority-switch"}));
  EXPECT_EQ(BatchProfile(), "random");
  // The higher-priority rule takes the class back as soon as it fires.
  EXPECT_EQ(RulesOf(m_->Evaluate(both, 40)), (std::vector<std::string>{"crowded"}));
  EXPECT_EQ(BatchProfile(), "spread");
}

TEST_F(EvaluateTest, TimeoutZeroFiresEachTimeAndLastsOneEvaluation) {
  EXPECT_EQ(RulesOf(m_->Evaluate({{"gpu_free_pct", 1}}, 0)), (std::vector<std::string>{"alert"}));
  EXPECT_TRUE(m_->Alerts().at("GpuLow"));
  EXPECT_EQ(RulesOf(m_->Evaluate({{"gpu_free_pct", 1}}, 0)), (std::vector<std::string>{"alert"}));
  EXPECT_TRUE(m_->Evaluate({{"gpu_free_pct", 90}}, 1).empty());
  EXPECT_FALSE(m_->Alerts().at("GpuLow"));
}

TEST_F(EvaluateTest, NanAndMissingMetricsFireNothing) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(
      m_->Evaluate({{"gpu_free_pct", nan}, {"pending_pods", nan}, {"nodes", nan}}, 0).empty());
  EXPECT_TRUE(m_->Evaluate({}, 1).empty());
  EXPECT_EQ(BatchProfile(), "packed");
}

TEST_F(EvaluateTest, AReloadClearsSwitchesAndCooldowns) {
  EXPECT_FALSE(m_->Evaluate({{"gpu_free_pct", 8}, {"pending_pods", 500}}, 0).empty());
  EXPECT_EQ(BatchProfile(), "spread");
  std::shared_ptr<const Policy> old = m_->Current();
  ASSERT_TRUE(m_->Reload(kSwitching, "api").ok());
  EXPECT_EQ(BatchProfile(), "packed");
  // The old snapshot keeps its switch for decisions still using it.
  EXPECT_EQ(old->ProfileFor("batch", {}, 0).name, "spread");
  EXPECT_EQ(RulesOf(m_->Evaluate({{"gpu_free_pct", 8}, {"pending_pods", 500}}, 1)),
            (std::vector<std::string>{"crowded"}));
}

TEST(PolicyStateNameTest, Names) {
  EXPECT_EQ(PolicyStateName(PolicyState::kLoaded), "Loaded");
  EXPECT_EQ(PolicyStateName(PolicyState::kReloading), "Reloading");
  EXPECT_EQ(PolicyStateName(PolicyState::kActive), "Active");
  EXPECT_EQ(PolicyStateName(PolicyState::kFailed), "Failed");
}

}  // namespace
}  // namespace seedance::policy
