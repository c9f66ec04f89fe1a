#include "seedance/base/parallel.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "seedance/base/mutex.h"

namespace seedance::base {
namespace {

TEST(WorkerCountTest, BoundedByTheTasksAndAtLeastOne) {
  EXPECT_EQ(WorkerCount(4, 2), 2);
  EXPECT_EQ(WorkerCount(4, 10), 4);
  EXPECT_EQ(WorkerCount(3, 0), 3);
  EXPECT_GE(WorkerCount(0, 1000), 1);  // one per hardware thread
  EXPECT_EQ(WorkerCount(-1, 1), 1);
}

TEST(ParallelForTest, RunsEveryIndexOnceAcrossThreads) {
  constexpr size_t kN = 200;
  std::vector<std::atomic<int>> runs(kN);
  struct {
    Mutex mu;
    std::set<std::thread::id> ids ABSL_GUARDED_BY(mu);
  } threads;
  absl::Status st = ParallelFor(kN, 4, [&](size_t i) {
    runs[i].fetch_add(1);
    MutexLock lock(threads.mu);
    threads.ids.insert(std::this_thread::get_id());
    return absl::OkStatus();
  });
  EXPECT_TRUE(st.ok()) << st;
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  MutexLock lock(threads.mu);
  EXPECT_GE(threads.ids.size(), 1u);
  EXPECT_LE(threads.ids.size(), 4u);
}

TEST(ParallelForTest, NoTasksIsOk) {
  EXPECT_TRUE(ParallelFor(0, 4, [](size_t) { return absl::InternalError("never"); }).ok());
}

TEST(ParallelForTest, TheLowestFailingIndexIsReportedAndLaterTasksStop) {
  for (int jobs : {1, 2, 8}) {
    std::atomic<size_t> started{0};
    absl::Status st = ParallelFor(1000, jobs, [&](size_t i) {
      started.fetch_add(1);
      if (i == 7 || i == 9 || i == 500) return absl::InvalidArgumentError(absl::StrCat("task ", i));
      return absl::OkStatus();
    });
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << jobs;
    EXPECT_EQ(st.message(), "task 7") << jobs;
    EXPECT_LT(started.load(), 1000u) << jobs;  // 500 and most others never started
  }
}

}  // namespace
}  // namespace seedance::base
