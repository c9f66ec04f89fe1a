#include <chrono>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "seedance/base/clock.h"
#include "seedance/base/parse.h"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace internal {
absl::Status PrefetchHistory(Collector* c, double start, double end, double step);
}  // namespace internal

Profiler::Profiler(std::vector<std::unique_ptr<Collector>> collectors, ProfilerOptions options)
    : collectors_(std::move(collectors)), options_(std::move(options)) {}

absl::StatusOr<Profile> Profiler::Run() {
  if (!(options_.interval_s > 0) || !(options_.duration_s >= options_.interval_s) ||
      !std::isfinite(options_.duration_s)) {
    return absl::InvalidArgumentError(
        absl::StrCat("need 0 < interval (", base::FormatNumber(options_.interval_s),
                     " s) <= duration (", base::FormatNumber(options_.duration_s), " s)"));
  }
  if (collectors_.empty()) return absl::InvalidArgumentError("no collector");
  const double planned_d = std::floor(options_.duration_s / options_.interval_s + 1e-9);
  if (!(planned_d <= static_cast<double>(kMaxProfileSamples))) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration / interval = ", base::FormatNumber(planned_d), " samples; at most ",
                     kMaxProfileSamples, " (use a longer interval or a shorter duration)"));
  }
  const size_t planned = static_cast<size_t>(planned_d);
  Profile profile;
  profile.interval_s = options_.interval_s;
  if (profile.source.empty()) profile.source = "local";

  if (options_.history) {
    for (const auto& c : collectors_) {
      if (!c->HasHistory()) {
        return absl::InvalidArgumentError(absl::StrCat("collector ", std::string(c->Name()),
                                                       " cannot read the past; use a live run"));
      }
    }
    // Whole seconds, so that repeated runs line up with the server's step grid.
    const double end = std::floor(base::UnixNowSeconds());
    const double start = end - static_cast<double>(planned - 1) * options_.interval_s;
    for (const auto& c : collectors_) {
      if (absl::Status s = internal::PrefetchHistory(c.get(), start, end, options_.interval_s);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = c->Describe(&profile); !s.ok()) return s;
    }
    profile.start_unix_s = start;
    for (size_t k = 0; k < planned; ++k) {
      const double t = start + static_cast<double>(k) * options_.interval_s;
      for (const auto& c : collectors_) {
        if (absl::Status s = c->Sample(t, &profile); !s.ok()) return s;
      }
      profile.timestamps_s.push_back(t - start);
      if (options_.progress) options_.progress(k + 1, planned);
    }
    return profile;
  }

  for (const auto& c : collectors_) {
    if (absl::Status s = c->Describe(&profile); !s.ok()) return s;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto step = std::chrono::duration<double>(options_.interval_s);
  for (size_t k = 1; k <= planned; ++k) {
    const auto deadline =
        t0 + std::chrono::duration_cast<Clock::duration>(step * static_cast<double>(k));
    // Short sleeps so that Stop() (Ctrl-C) takes effect within ~50 ms.
    while (!stop_.load() && Clock::now() < deadline) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(50)));
    }
    if (stop_.load()) {
      profile.interrupted = true;
      break;
    }
    const double t = base::UnixNowSeconds();
    for (const auto& c : collectors_) {
      if (absl::Status s = c->Sample(t, &profile); !s.ok()) return s;
    }
    if (profile.timestamps_s.empty()) profile.start_unix_s = t;
    profile.timestamps_s.push_back(t - profile.start_unix_s);
    if (options_.progress) options_.progress(k, planned);
  }
  return profile;
}

}  // namespace seedance::telemetry
