// APDF breaker state machine (apdf.h).
#include "seedance/serving/apdf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace seedance::serving {
namespace {

std::string Fmt(const char* fmt, double a, double b) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

}  // namespace

std::string_view ApdfStateName(ApdfState s) {
  switch (s) {
    case ApdfState::kIdle:
      return "Idle";
    case ApdfState::kMonitoring:
      return "Monitoring";
    case ApdfState::kDegraded:
      return "Degraded";
    case ApdfState::kFallback:
      return "Fallback";
    case ApdfState::kRecovering:
      return "Recovering";
  }
  return "?";
}

ApdfBreaker::ApdfBreaker(ApdfOptions options) : options_(options) {}

void ApdfBreaker::set_p99_baseline(double seconds) {
  baseline_s_ = seconds;
  baseline_count_ = options_.baseline_windows;
  baseline_pinned_ = true;
}

void ApdfBreaker::Record(double t_s, double latency_s, bool error) {
  Advance(t_s);
  if (!started_) {
    started_ = true;
    window_start_s_ = t_s;
  }
  latencies_.push_back(latency_s);
  if (error) ++errors_;
}

void ApdfBreaker::Advance(double now_s) {
  if (!started_) return;
  while (now_s >= window_start_s_ + options_.window_s) CloseWindow();
}

void ApdfBreaker::CloseWindow() {
  WindowStats w;
  w.start_s = window_start_s_;
  w.requests = static_cast<int64_t>(latencies_.size());
  w.qps = static_cast<double>(w.requests) / options_.window_s;
  if (w.requests > 0) {
    w.error_rate = static_cast<double>(errors_) / static_cast<double>(w.requests);
    const size_t k =
        static_cast<size_t>(std::ceil(0.99 * static_cast<double>(latencies_.size()))) - 1;
    std::nth_element(latencies_.begin(), latencies_.begin() + static_cast<std::ptrdiff_t>(k),
                     latencies_.end());
    w.p99_latency_s = latencies_[k];
  }
  latencies_.clear();
  errors_ = 0;
  window_start_s_ += options_.window_s;
  EvaluateWindow(w);
}

void ApdfBreaker::MoveTo(ApdfState to, double now_s, std::string reason) {
  transitions_.push_back({now_s, state_, to, std::move(reason)});
  state_ = to;
  entered_s_ = now_s;
  breach_streak_ = severe_streak_ = healthy_streak_ = quiet_streak_ = 0;
}

void ApdfBreaker::EvaluateWindow(const WindowStats& w) {
  const ApdfOptions& o = options_;
  const double now = w.start_s + o.window_s;  // the window has just closed
  const bool evidence = w.qps >= o.min_qps;
  if (!evidence) {
    breach_streak_ = severe_streak_ = healthy_streak_ = 0;
    if (state_ == ApdfState::kMonitoring && ++quiet_streak_ >= o.idle_windows) {
      MoveTo(ApdfState::kIdle, now, "QPS below min_qps");
    }
    return;
  }
  quiet_streak_ = 0;
  if (state_ == ApdfState::kIdle) {
    MoveTo(ApdfState::kMonitoring, now, Fmt("traffic: %.1f QPS >= %.1f", w.qps, o.min_qps));
    // fall through: the window that woke us up is also judged
  }

  const bool latency_armed = baseline_count_ >= o.baseline_windows && baseline_s_ > 0;
  const double cap = o.latency_factor * baseline_s_;
  const bool err_breach = w.error_rate > o.error_rate_threshold;
  const bool lat_breach = latency_armed && w.p99_latency_s > cap;
  const bool qps_breach = o.max_qps > 0 && w.qps > o.max_qps;
  const bool breached = err_breach || lat_breach || qps_breach;
  const bool severe = w.error_rate > o.severe_error_rate ||
                      (latency_armed && w.p99_latency_s > o.severe_latency_factor * baseline_s_);
  const bool healthy = w.error_rate < o.recover_margin * o.error_rate_threshold &&
                       (!latency_armed || w.p99_latency_s < o.recover_margin * cap) &&
                       (o.max_qps <= 0 || w.qps < o.recover_margin * o.max_qps);
  breach_streak_ = breached ? breach_streak_ + 1 : 0;
  severe_streak_ = severe ? severe_streak_ + 1 : 0;
  healthy_streak_ = healthy ? healthy_streak_ + 1 : 0;

  // Learn the baseline from normal windows while serving at full precision.
  if (state_ == ApdfState::kMonitoring && !breached && !baseline_pinned_ && w.p99_latency_s > 0) {
    baseline_s_ = baseline_count_ == 0
                      ? w.p99_latency_s
                      : (1 - o.baseline_alpha) * baseline_s_ + o.baseline_alpha * w.p99_latency_s;
    ++baseline_count_;
  }

  const bool dwelt = now - entered_s_ >= o.min_dwell_s;
  const std::string why =
      err_breach
          ? Fmt("error rate %.1f%% > %.1f%%", 100 * w.error_rate, 100 * o.error_rate_threshold)
      : lat_breach ? Fmt("P99 %.0f ms > %.0f ms", 1e3 * w.p99_latency_s, 1e3 * cap)
                   : Fmt("overload: %.0f QPS > %.0f", w.qps, o.max_qps);
  switch (state_) {
    case ApdfState::kIdle:
      break;
    case ApdfState::kMonitoring:
      if (breach_streak_ >= o.trip_windows && dwelt) MoveTo(ApdfState::kDegraded, now, why);
      break;
    case ApdfState::kDegraded:
      if (severe_streak_ >= o.fallback_windows && dwelt) {
        MoveTo(ApdfState::kFallback, now, "severe: " + why);
      } else if (healthy_streak_ >= o.recover_windows && dwelt) {
        MoveTo(ApdfState::kRecovering, now, "healthy windows");
      }
      break;
    case ApdfState::kFallback:
      if (healthy_streak_ >= o.recover_windows && dwelt) {
        MoveTo(ApdfState::kRecovering, now, "healthy windows");
      }
      break;
    case ApdfState::kRecovering:
      if (breach_streak_ >= o.trip_windows && dwelt) {
        MoveTo(ApdfState::kDegraded, now, "relapse: " + why);
      } else if (healthy_streak_ >= o.recovering_windows && dwelt) {
        MoveTo(ApdfState::kMonitoring, now, "recovered");
      }
      break;
  }
}

}  // namespace seedance::serving
