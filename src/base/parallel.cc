#include "seedance/base/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "seedance/base/mutex.h"

namespace seedance::base {

int WorkerCount(int jobs, size_t tasks) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (tasks > 0 && static_cast<size_t>(jobs) > tasks) jobs = static_cast<int>(tasks);
  return std::max(1, jobs);
}

absl::Status ParallelFor(size_t n, int jobs, const std::function<absl::Status(size_t)>& task) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  struct Failure {
    Mutex mu;
    size_t index ABSL_GUARDED_BY(mu) = 0;
    absl::Status status ABSL_GUARDED_BY(mu);
  } failure;
  auto worker = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      absl::Status st = task(i);
      if (st.ok()) continue;
      failed.store(true, std::memory_order_relaxed);
      MutexLock lock(failure.mu);
      if (failure.status.ok() || i < failure.index) {
        failure.index = i;
        failure.status = std::move(st);
      }
    }
  };
  const int workers = WorkerCount(jobs, n);
  if (workers == 1 || n <= 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (int j = 0; j < workers; ++j) threads.emplace_back(worker);
    for (std::thread& t : threads) t.join();
  }
  MutexLock lock(failure.mu);
  return failure.status;
}

}  // namespace seedance::base
