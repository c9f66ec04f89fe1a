// Runs independent tasks on a few threads: the simulator's policy x seed matrix, the cluster
// autoscaler's expander x seed runs. One home for the worker loop the commands used to write
// each time.
//
// Thread-safety: ParallelFor may be called from any thread; `task` runs concurrently with
// itself (on different indexes) and must be safe to.
#ifndef SEEDANCE_BASE_PARALLEL_H_
#define SEEDANCE_BASE_PARALLEL_H_

#include <cstddef>
#include <functional>

#include "absl/status/status.h"

namespace seedance::base {

// The number of threads for `jobs` (<= 0: one per hardware thread) and `tasks` tasks: at least
// 1, at most `tasks` (when tasks > 0).
int WorkerCount(int jobs, size_t tasks);

// Calls task(i) for every i in [0, n), at most WorkerCount(jobs, n) at a time, handing the
// indexes out in increasing order; returns when every started task returned. After a task fails,
// no task not yet started starts, and the result is the error of the lowest index that failed
// (deterministic when the failures are: every index below a failing one was already started).
// OK when every task returned OK (or n is 0).
absl::Status ParallelFor(size_t n, int jobs, const std::function<absl::Status(size_t)>& task);

}  // namespace seedance::base

#endif  // SEEDANCE_BASE_PARALLEL_H_
