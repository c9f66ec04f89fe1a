// APDF: the adaptive precision-degradation fuse of seed A §4.4. A circuit breaker over the
// inference service's error rate, latency and QPS, measured over fixed sampling windows, that
// decides whether to serve at full precision, at degraded (lower) precision, or from a fallback.
//
// States and transitions (evaluated once per closed window; docs/serving.md has the chart):
//   Idle        --window with QPS >= min_qps-------------------------------> Monitoring
//   Monitoring  --trip_windows consecutive breached windows----------------> Degraded
//               --idle_windows consecutive windows below min_qps-----------> Idle
//   Degraded    --fallback_windows consecutive severe windows--------------> Fallback
//               --recover_windows consecutive healthy windows--------------> Recovering
//   Fallback    --recover_windows consecutive healthy windows--------------> Recovering
//   Recovering  --trip_windows consecutive breached windows----------------> Degraded
//               --recovering_windows consecutive healthy windows-----------> Monitoring
// A window is *breached* when its error rate > error_rate_threshold (8.5%), its P99 latency >
// latency_factor (1.8) x the P99 baseline, or (when max_qps > 0) its QPS > max_qps (overload:
// lower precision buys throughput); *severe* when error rate > severe_error_rate or P99 >
// severe_latency_factor x baseline; *healthy* when error rate, P99 and QPS are below
// recover_margin x their thresholds (hysteresis: between healthy and breached a window counts for
// nothing and resets both streaks). Windows with QPS < min_qps carry too little evidence and are
// skipped. Any state other than Idle is held for at least min_dwell_s before it may be left
// (anti-flap). The P99 baseline is learnt (EWMA) from the windows seen in Monitoring that are not
// breached, and frozen elsewhere; the latency trigger is off until baseline_windows windows were
// learnt.
//
// Time is passed in by the caller (seconds, any origin), so tests drive it. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seedance::serving {

enum class ApdfState { kIdle, kMonitoring, kDegraded, kFallback, kRecovering };
std::string_view ApdfStateName(ApdfState s);

struct ApdfOptions {
  double window_s = 5.0;                // sampling window (500 requests at 100 QPS: a stable P99)
  double error_rate_threshold = 0.085;  // seed A §4.4: 8.5%
  double latency_factor = 1.8;          // seed A §4.4: 1.8 x P99 baseline
  double severe_error_rate = 0.20;      // Degraded -> Fallback
  double severe_latency_factor = 3.5;
  double min_qps = 2.0;  // below: no evidence (and Idle after idle_windows)
  double max_qps = 0;    // above: overload, a breach (0: no QPS limit)
  int trip_windows = 3;
  int fallback_windows = 3;
  int recover_windows = 5;
  int recovering_windows = 5;
  int idle_windows = 10;
  double recover_margin = 0.7;  // healthy: below 0.7 x thresholds
  double min_dwell_s = 5.0;
  int baseline_windows = 5;
  double baseline_alpha = 0.1;  // EWMA weight of a new window's P99
};

struct WindowStats {
  double start_s = 0;
  int64_t requests = 0;
  double qps = 0;
  double error_rate = 0;
  double p99_latency_s = 0;
};

struct ApdfTransition {
  double time_s = 0;
  ApdfState from = ApdfState::kIdle;
  ApdfState to = ApdfState::kIdle;
  std::string reason;
};

class ApdfBreaker {
 public:
  explicit ApdfBreaker(ApdfOptions options = {});

  // One finished request at time `t_s` (non-decreasing across calls). Closes and evaluates every
  // window that ended before t_s.
  void Record(double t_s, double latency_s, bool error);
  // Closes and evaluates the windows that ended by `now_s` (call on a timer when traffic stops).
  void Advance(double now_s);
  // Evaluates one window's statistics directly (what Record/Advance do per closed window).
  void EvaluateWindow(const WindowStats& w);

  ApdfState state() const { return state_; }
  double p99_baseline_s() const { return baseline_s_; }
  // Pins the P99 baseline (e.g. from a load test) instead of learning it.
  void set_p99_baseline(double seconds);
  const std::vector<ApdfTransition>& transitions() const { return transitions_; }
  const ApdfOptions& options() const { return options_; }

 private:
  void CloseWindow();
  void MoveTo(ApdfState to, double now_s, std::string reason);

  ApdfOptions options_;
  ApdfState state_ = ApdfState::kIdle;
  double entered_s_ = 0;
  double baseline_s_ = 0;
  int baseline_count_ = 0;
  bool baseline_pinned_ = false;
  int breach_streak_ = 0;
  int severe_streak_ = 0;
  int healthy_streak_ = 0;
  int quiet_streak_ = 0;
  // The open window.
  bool started_ = false;
  double window_start_s_ = 0;
  std::vector<double> latencies_;
  int64_t errors_ = 0;
  std::vector<ApdfTransition> transitions_;
};

}  // namespace seedance::serving
