#include "seedance/serving/probe.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace seedance::serving {
namespace {

using experiment::Event;
using experiment::ExperimentSpec;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kName[] = "int8-probe";

class ProbeTest : public ::testing::Test {
 protected:
  // A GPU whose every iteration takes `step_s`, with room for `kv_tokens` tokens of KV cache.
  static ServingHardware Gpu(double step_s, int64_t kv_tokens = 1 << 20) {
    ServingHardware hw;
    hw.step_seconds = [step_s](std::span<const model::SequenceWork>) { return step_s; };
    hw.kv_bytes_per_token = 1000;
    hw.kv_cache_bytes = kv_tokens * 1000;
    return hw;
  }

  // `n` requests `gap_s` apart; request i asks for 100 + i % 7 prompt tokens and 1 + i % 5
  // output tokens (every fifth one a single token).
  static RequestTrace Trace(int n, double gap_s) {
    RequestTrace t;
    t.source = "synthetic";
    for (int i = 0; i < n; ++i) {
      t.requests.push_back({i * gap_s, 100 + i % 7, 1 + i % 5, {}});
    }
    return t;
  }

  // fp16 (control) and int8, 50/50, with the given metrics.
  static ExperimentSpec Spec(const std::vector<std::string>& metrics) {
    nlohmann::json body = {
        {"control", "fp16"},
        {"variants", {{{"name", "fp16"}, {"weight", 1}}, {{"name", "int8"}, {"weight", 1}}}},
        {"metrics", nlohmann::json::array()}};
    for (const std::string& m : metrics) {
      body["metrics"].push_back({{"name", m}, {"direction", "decrease"}});
    }
    absl::StatusOr<ExperimentSpec> spec = experiment::ParseExperimentSpec(body);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return *spec;
  }

  absl::StatusOr<ProbeResult> Run(const RequestTrace& trace, const ExperimentSpec& spec) {
    return RunProbe(trace, spec, kName, hw_, options_);
  }

  // The value of metric `name` in `e`, or -1 when the event does not carry it.
  static double Value(const ExperimentSpec& spec, const Event& e, const std::string& name) {
    for (const experiment::MetricValue& v : e.metrics) {
      if (spec.metrics[static_cast<size_t>(v.metric)].name == name) return v.value;
    }
    return -1;
  }

  // The variant's index of each request of the trace, in trace order per variant, as RunProbe
  // splits them: session -> (variant, index in its sub-trace).
  static std::map<std::string, std::pair<int, size_t>> Split(const ExperimentSpec& spec, int n) {
    std::map<std::string, std::pair<int, size_t>> where;
    std::vector<size_t> next(spec.variants.size(), 0);
    for (int i = 0; i < n; ++i) {
      const std::string session = "r" + std::to_string(i);
      const int v = experiment::AssignVariant(spec, kName, session);
      where[session] = {v, next[static_cast<size_t>(v)]++};
    }
    return where;
  }

  std::vector<ServingHardware> hw_ = {Gpu(0.020), Gpu(0.005)};  // fp16, int8: 4x cheaper steps
  ProbeOptions options_;
};

TEST_F(ProbeTest, SplitFollowsAssignVariant) {
  const ExperimentSpec spec = Spec({"e2e_ms"});
  absl::StatusOr<ProbeResult> r = Run(Trace(400, 0.05), spec);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int64_t> assigned(2, 0);
  for (int i = 0; i < 400; ++i)
    ++assigned[experiment::AssignVariant(spec, kName, "r" + std::to_string(i))];
  ASSERT_EQ(r->variants.size(), 2u);
  for (size_t v = 0; v < 2; ++v) {
    EXPECT_EQ(r->variants[v].name, spec.variants[v].name);
    EXPECT_EQ(r->variants[v].requests, assigned[v]);
    EXPECT_EQ(r->variants[v].result.requests, assigned[v]);
    EXPECT_EQ(r->variants[v].result.outcomes.size(), static_cast<size_t>(assigned[v]));
    EXPECT_EQ(r->variants[v].events, assigned[v]);
    EXPECT_GT(assigned[v], 150);  // a fair coin over 400 sessions
  }
  ASSERT_EQ(r->events.size(), 400u);
  for (const Event& e : r->events) {
    EXPECT_EQ(e.variant, experiment::AssignVariant(spec, kName, e.session)) << e.session;
  }
  EXPECT_TRUE(r->stops.empty());
}

TEST_F(ProbeTest, SessionPrefixNamesTheSessions) {
  options_.session_prefix = "trace7-";
  absl::StatusOr<ProbeResult> r = Run(Trace(20, 0.1), Spec({"e2e_ms"}));
  ASSERT_TRUE(r.ok()) << r.status();
  for (const Event& e : r->events) EXPECT_THAT(e.session, StartsWith("trace7-"));
}

TEST_F(ProbeTest, CheaperPlanHasLowerLatency) {
  const ExperimentSpec spec = Spec({"e2e_ms", "ttft_ms"});
  absl::StatusOr<ProbeResult> r = Run(Trace(400, 0.05), spec);
  ASSERT_TRUE(r.ok()) << r.status();
  const ProbeVariant& fp16 = r->variants[0];
  const ProbeVariant& int8 = r->variants[1];
  EXPECT_GT(int8.mean_e2e_s, 0);
  EXPECT_LT(int8.mean_e2e_s, fp16.mean_e2e_s / 2);
  EXPECT_LT(int8.mean_ttft_s, fp16.mean_ttft_s);
  // The events say the same.
  double sum[2] = {0, 0}, n[2] = {0, 0};
  for (const Event& e : r->events) {
    sum[e.variant] += Value(spec, e, "e2e_ms");
    ++n[e.variant];
  }
  EXPECT_NEAR(sum[0] / n[0], 1e3 * fp16.mean_e2e_s, 1e-6);
  EXPECT_NEAR(sum[1] / n[1], 1e3 * int8.mean_e2e_s, 1e-6);
}

TEST_F(ProbeTest, EventsAreOrderedByFinishTimeAcrossVariants) {
  const int n = 300;
  const ExperimentSpec spec = Spec({"e2e_ms"});
  absl::StatusOr<ProbeResult> r = Run(Trace(n, 0.01), spec);  // busy: finishes interleave
  ASSERT_TRUE(r.ok()) << r.status();
  const auto split = Split(spec, n);
  double last = -1;
  int switches = 0, prev_variant = -1;
  for (const Event& e : r->events) {
    const auto [v, k] = split.at(e.session);
    const double finish = r->variants[static_cast<size_t>(v)].result.outcomes[k].finish_s;
    EXPECT_GE(finish, last) << e.session;
    last = finish;
    switches += prev_variant >= 0 && v != prev_variant;
    prev_variant = v;
  }
  EXPECT_GT(switches, 20);  // interleaved, not one variant after the other
}

TEST_F(ProbeTest, EventsCarryTheDeclaredMetricsOnly) {
  const int n = 50;
  const ExperimentSpec spec = Spec({"tpot_ms", "ttft_ms", "tokens_per_s", "e2e_ms", "error"});
  options_.error_latency_ms = 70;
  absl::StatusOr<ProbeResult> r = Run(Trace(n, 1.0), spec);  // idle: no queueing
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->events.size(), static_cast<size_t>(n));
  for (const Event& e : r->events) {
    const int i = std::stoi(e.session.substr(1));
    const int out_tokens = 1 + i % 5;
    const double step_ms = e.variant == 0 ? 20 : 5;
    // Idle replica: the prefill iteration gives the first token, one iteration per later one.
    EXPECT_NEAR(Value(spec, e, "ttft_ms"), step_ms, 1e-6);
    EXPECT_NEAR(Value(spec, e, "e2e_ms"), step_ms * out_tokens, 1e-6);
    EXPECT_NEAR(Value(spec, e, "tokens_per_s"), 1e3 / step_ms, 1e-6);
    if (out_tokens > 1) {
      EXPECT_NEAR(Value(spec, e, "tpot_ms"), step_ms, 1e-6);
    } else {
      EXPECT_EQ(Value(spec, e, "tpot_ms"), -1) << "no TPOT for one output token";
    }
    EXPECT_EQ(Value(spec, e, "error"), step_ms * out_tokens > 70 ? 1 : 0) << e.session;
    for (size_t j = 1; j < e.metrics.size(); ++j) {
      EXPECT_LT(e.metrics[j - 1].metric, e.metrics[j].metric) << "the spec's order";
    }
  }
}

TEST_F(ProbeTest, RefusesAMetricItCannotProduce) {
  const ExperimentSpec spec = Spec({"e2e_ms", "quality_score"});
  absl::StatusOr<ProbeResult> r = Run(Trace(10, 0.1), spec);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("$.metrics[1].name"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"quality_score\""));
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("ttft_ms, tpot_ms, e2e_ms, tokens_per_s, error, rel_error"));
  EXPECT_EQ(CheckProbeSpec(spec, options_), r.status());
}

TEST_F(ProbeTest, RelErrorNeedsEveryVariantsMeasuredError) {
  const ExperimentSpec spec = Spec({"rel_error", "e2e_ms"});
  absl::StatusOr<ProbeResult> r = Run(Trace(10, 0.1), spec);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("$.variants[0]"));
  options_.measured_rel_error = {std::nullopt, 0.012};
  r = Run(Trace(10, 0.1), spec);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("$.variants[0]: metric rel_error"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"fp16\""));

  options_.measured_rel_error = {0.0005, 0.012};
  r = Run(Trace(10, 0.1), spec);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const Event& e : r->events) {
    EXPECT_EQ(Value(spec, e, "rel_error"), e.variant == 0 ? 0.0005 : 0.012);
  }
  // Without rel_error in the spec, a variant without a measured error is fine.
  options_.measured_rel_error = {std::nullopt, 0.012};
  EXPECT_TRUE(Run(Trace(10, 0.1), Spec({"e2e_ms"})).ok());
}

TEST_F(ProbeTest, DroppedRequestIsAnErrorWithoutLatencies) {
  RequestTrace t = Trace(20, 0.5);
  t.requests[4].prompt_tokens = 50000;  // longer than either pool
  hw_ = {Gpu(0.020, 4096), Gpu(0.005, 4096)};
  const ExperimentSpec spec = Spec({"e2e_ms", "error"});
  absl::StatusOr<ProbeResult> r = Run(t, spec);
  ASSERT_TRUE(r.ok()) << r.status();
  int found = 0;
  for (const Event& e : r->events) {
    if (e.session != "r4") continue;
    ++found;
    EXPECT_EQ(Value(spec, e, "error"), 1);
    EXPECT_EQ(Value(spec, e, "e2e_ms"), -1);
    ASSERT_EQ(e.metrics.size(), 1u);
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ(r->variants[0].result.dropped + r->variants[1].result.dropped, 1);
  // With latencies only, the dropped request has nothing to say: no event.
  r = Run(t, Spec({"e2e_ms"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events.size(), 19u);
  for (const Event& e : r->events) EXPECT_NE(e.session, "r4");
}

TEST_F(ProbeTest, ApdfStopsTheSlowVariantOnceAndItsEventsEnd) {
  // fp16 takes 100 ms per iteration: 1 to 5 output tokens take 100..500 ms, over the 90 ms error
  // latency; int8 (5 ms) stays under it. 5 requests/s per variant over 60 s.
  hw_ = {Gpu(0.100), Gpu(0.005)};
  options_.error_latency_ms = 90;
  options_.apdf = ApdfOptions{};
  const int n = 600;
  const ExperimentSpec spec = Spec({"e2e_ms", "error"});
  absl::StatusOr<ProbeResult> r = Run(Trace(n, 0.1), spec);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->stops.size(), 1u);
  const ProbeStop& stop = r->stops[0];
  EXPECT_EQ(stop.variant, 0);
  EXPECT_THAT(stop.reason, StartsWith("apdf: error rate 100.0% > 8.5%"));
  // Windows start at the variant's first finish (t0 < 1 s): Monitoring from the first window's
  // end, three breached windows (the first included), dwell met: t0 + 15 s.
  EXPECT_GE(stop.time_s, 15);
  EXPECT_LT(stop.time_s, 16);
  ASSERT_TRUE(r->variants[0].stop.has_value());
  EXPECT_EQ(r->variants[0].stop->session, stop.session);
  EXPECT_FALSE(r->variants[1].stop.has_value());

  int stop_events = 0;
  bool after_stop = false;
  for (const Event& e : r->events) {
    if (!e.stop_reason.empty()) {
      ++stop_events;
      EXPECT_EQ(e.variant, 0);
      EXPECT_EQ(e.session, stop.session);
      EXPECT_EQ(e.stop_reason, stop.reason);
      EXPECT_TRUE(e.metrics.empty());
      after_stop = true;
      continue;
    }
    if (after_stop) {
      EXPECT_NE(e.variant, 0) << "an event of the stopped variant: " << e.session;
    }
  }
  EXPECT_EQ(stop_events, 1);
  // The tripping request's own event comes just before the stop.
  const auto split = Split(spec, n);
  const auto [v, k] = split.at(stop.session);
  EXPECT_EQ(v, 0);
  EXPECT_GE(r->variants[0].result.outcomes[k].finish_s, stop.time_s);
  EXPECT_LT(r->variants[0].events, r->variants[0].requests);
  EXPECT_EQ(r->variants[1].events, r->variants[1].requests);
  // The replica served everything; only its events stopped.
  EXPECT_EQ(r->variants[0].result.completed, r->variants[0].requests);
}

TEST_F(ProbeTest, NoApdfNoStop) {
  hw_ = {Gpu(0.100), Gpu(0.005)};
  options_.error_latency_ms = 90;
  absl::StatusOr<ProbeResult> r = Run(Trace(600, 0.1), Spec({"error"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stops.empty());
  EXPECT_EQ(r->events.size(), 600u);
}

TEST_F(ProbeTest, ReplicaErrorsNameTheVariant) {
  hw_ = {Gpu(0.02), Gpu(0.005, 0)};  // int8: no KV cache at all
  absl::StatusOr<ProbeResult> r = Run(Trace(10, 0.1), Spec({"e2e_ms"}));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), StartsWith("variant \"int8\": "));
}

// A server that takes `capacity` events, answers 429 `rate_limited_times` times first, and
// records the waits.
class FakeSink : public ExperimentSink {
 public:
  PostResult Post(const std::string& events_json) override {
    ++posts;
    if (throttle > 0) {
      --throttle;
      return {absl::ResourceExhaustedError("over 100 events per second"), true};
    }
    if (fail_after >= 0 && static_cast<int>(batches.size()) >= fail_after) {
      return {absl::PermissionDeniedError("not your experiment"), false};
    }
    batches.push_back(nlohmann::json::parse(events_json)["events"].size());
    return {absl::OkStatus(), false};
  }
  void Sleep(double seconds) override { slept.push_back(seconds); }

  int throttle = 0;
  int fail_after = -1;
  int posts = 0;
  std::vector<size_t> batches;
  std::vector<double> slept;
};

std::vector<Event> ManyEvents(int n) {
  std::vector<Event> events;
  for (int i = 0; i < n; ++i)
    events.push_back({"s" + std::to_string(i), i % 2, {{0, 1.0 * i}}, {}, ""});
  return events;
}

TEST_F(ProbeTest, PublishPostsInBatchesInOrder) {
  const ExperimentSpec spec = Spec({"e2e_ms"});
  FakeSink sink;
  PublishOptions o;
  std::vector<int64_t> progress;
  o.progress = [&](int64_t posted, int64_t total) {
    EXPECT_EQ(total, 2500);
    progress.push_back(posted);
  };
  ASSERT_TRUE(PublishEvents(sink, spec, ManyEvents(2500), o).ok());
  EXPECT_EQ(sink.batches, (std::vector<size_t>{1000, 1000, 500}));
  EXPECT_EQ(progress, (std::vector<int64_t>{1000, 2000, 2500}));
  EXPECT_TRUE(sink.slept.empty());
}

TEST_F(ProbeTest, PublishRetriesARateLimitedBatchWithBackoff) {
  const ExperimentSpec spec = Spec({"e2e_ms"});
  FakeSink sink;
  sink.throttle = 5;
  ASSERT_TRUE(PublishEvents(sink, spec, ManyEvents(1500), PublishOptions{}).ok());
  EXPECT_EQ(sink.batches, (std::vector<size_t>{1000, 500}));
  EXPECT_EQ(sink.slept, (std::vector<double>{1, 2, 4, 8, 8}));
}

TEST_F(ProbeTest, PublishGivesUpAfterBoundedRetries) {
  const ExperimentSpec spec = Spec({"e2e_ms"});
  FakeSink sink;
  sink.throttle = 100;
  PublishOptions o;
  o.max_retries_per_batch = 3;
  absl::Status s = PublishEvents(sink, spec, ManyEvents(10), o);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("after 0 of 10 events were accepted (rate-limited 4 times)"));
  EXPECT_EQ(sink.posts, 4);
  EXPECT_EQ(sink.slept.size(), 3u);
}

TEST_F(ProbeTest, PublishStopsAtAFailure) {
  const ExperimentSpec spec = Spec({"e2e_ms"});
  FakeSink sink;
  sink.fail_after = 1;
  absl::Status s = PublishEvents(sink, spec, ManyEvents(2500), PublishOptions{});
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("after 1000 of 2500 events were accepted: not your"));
  EXPECT_EQ(sink.posts, 2);
  EXPECT_TRUE(sink.slept.empty());
}

using ProbeDeathTest = ProbeTest;

TEST_F(ProbeDeathTest, HardwareForEveryVariant) {
  hw_.pop_back();
  EXPECT_DEATH((void)Run(Trace(4, 0.1), Spec({"e2e_ms"})), "1 hardware models for 2 variants");
}

TEST_F(ProbeDeathTest, MeasuredErrorsForEveryVariant) {
  options_.measured_rel_error = {0.1, 0.2, 0.3};
  EXPECT_DEATH((void)CheckProbeSpec(Spec({"e2e_ms"}), options_),
               "measured_rel_error has 3 entries for 2 variants");
}

TEST_F(ProbeDeathTest, SessionPrefixLeavesRoomForTheIndex) {
  options_.session_prefix = std::string(250, 'x');
  EXPECT_DEATH((void)Run(Trace(4, 0.1), Spec({"e2e_ms"})), "leaves no room for the index");
}

TEST_F(ProbeDeathTest, PublishNeedsABatch) {
  FakeSink sink;
  PublishOptions o;
  o.batch = 0;
  EXPECT_DEATH((void)PublishEvents(sink, Spec({"e2e_ms"}), ManyEvents(3), o), "a batch of no");
}

TEST_F(ProbeDeathTest, PublishNeedsAPositiveBackoff) {
  FakeSink sink;
  PublishOptions o;
  o.first_backoff_s = 0;
  EXPECT_DEATH((void)PublishEvents(sink, Spec({"e2e_ms"}), ManyEvents(3), o), "backoff 0 s");
}

}  // namespace
}  // namespace seedance::serving
