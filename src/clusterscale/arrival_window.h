// Internal: the GPU demand of the last hour's arrivals, shared by the simulator's churn and the
// live autoscaler for predictive pre-scaling and the headroom guard on drains
// (docs/cluster-autoscaler.md). Not thread-safe.
#ifndef SEEDANCE_SRC_CLUSTERSCALE_ARRIVAL_WINDOW_H_
#define SEEDANCE_SRC_CLUSTERSCALE_ARRIVAL_WINDOW_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "seedance/clusterscale/cluster_autoscaler.h"

namespace seedance::clusterscale::internal {

class ArrivalWindow {
 public:
  // Counts arrivals of the last window_s seconds; the rate is taken over the time since
  // start_s while that is shorter than the window.
  ArrivalWindow(double start_s, double window_s) : start_s_(start_s), window_s_(window_s) {}

  // An arrival at t (non-decreasing); arrivals older than the window are dropped.
  void Add(double t, const PendingPod& pod) {
    recent_.push_back({t, pod});
    milli_ += pod.shape.TotalGpuMilli();
    Expire(t);
  }
  // Drops arrivals older than the window at t (Add does it too).
  void Expire(double t) {
    while (!recent_.empty() && recent_.front().time_s < t - window_s_) {
      milli_ -= recent_.front().pod.shape.TotalGpuMilli();
      recent_.pop_front();
    }
  }

  // GPU milli expected to arrive in the next horizon_s at the window's rate. The rate is taken
  // over at least the horizon, so that shortly after the start the expectation is never more
  // than what has arrived so far (a burst in the first second is not a rate).
  double ExpectedMilli(double t, double horizon_s) const {
    const double over = std::clamp(t - start_s_, std::clamp(horizon_s, 1.0, window_s_), window_s_);
    return static_cast<double>(milli_) / over * horizon_s;
  }

  // The latest arrivals, newest first, until their GPU milli reaches `milli`: what the expected
  // demand is taken to look like.
  std::vector<PendingPod> Latest(double milli) const {
    std::vector<PendingPod> out;
    for (auto it = recent_.rbegin(); it != recent_.rend() && milli > 0; ++it) {
      out.push_back(it->pod);
      milli -= static_cast<double>(it->pod.shape.TotalGpuMilli());
    }
    return out;
  }

 private:
  struct Arrival {
    double time_s;
    PendingPod pod;
  };
  double start_s_, window_s_;
  std::deque<Arrival> recent_;
  int64_t milli_ = 0;
};

}  // namespace seedance::clusterscale::internal

#endif  // SEEDANCE_SRC_CLUSTERSCALE_ARRIVAL_WINDOW_H_
