#include "seedance/experiment/experiment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace seedance::experiment {
namespace {

using Json = nlohmann::json;

Json SpecBody() {
  return Json::parse(R"({"control": "fp16",
    "variants": [{"name": "fp16", "weight": 0.5}, {"name": "int8-ffn", "weight": 0.5,
                  "precision_plan": "plans/int8.json"}],
    "metrics": [{"name": "latency_ms", "direction": "decrease"},
                {"name": "quality", "direction": "increase"}],
    "mde": 0.02, "alpha": 0.05})");
}

ExperimentSpec Spec() {
  absl::StatusOr<ExperimentSpec> s = ParseExperimentSpec(SpecBody());
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

std::string Refusal(const Json& body) {
  absl::StatusOr<ExperimentSpec> s = ParseExperimentSpec(body);
  return s.ok() ? "accepted" : std::string(s.status().message());
}

TEST(ExperimentSpecTest, ParsesAndWritesBack) {
  const ExperimentSpec s = Spec();
  ASSERT_EQ(s.variants.size(), 2u);
  EXPECT_EQ(s.control_index(), 0);
  EXPECT_EQ(s.variants[1].precision_plan, "plans/int8.json");
  EXPECT_EQ(s.metrics[1].direction, Direction::kIncrease);
  EXPECT_DOUBLE_EQ(s.power, 0.8);  // the default
  absl::StatusOr<ExperimentSpec> again = ParseExperimentSpec(SpecToJson(s));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(SpecToJson(*again), SpecToJson(s));
}

TEST(ExperimentSpecTest, RefusesWithThePath) {
  Json b = SpecBody();
  b["control"] = "bf16";
  EXPECT_NE(Refusal(b).find("$.control: must name one of the variants"), std::string::npos);
  b = SpecBody();
  b["variants"][1]["weight"] = 0;
  EXPECT_NE(Refusal(b).find("$.variants[1].weight"), std::string::npos) << Refusal(b);
  b = SpecBody();
  b["variants"][1]["name"] = "fp16";
  EXPECT_NE(Refusal(b).find("named twice"), std::string::npos);
  b = SpecBody();
  b["variants"][1]["name"] = "INT8 FFN";
  EXPECT_NE(Refusal(b).find("$.variants[1].name"), std::string::npos);
  b = SpecBody();
  b["metrics"][0]["direction"] = "down";
  EXPECT_NE(Refusal(b).find("$.metrics[0].direction"), std::string::npos);
  b = SpecBody();
  b["alpha"] = 0.9;
  EXPECT_NE(Refusal(b).find("$.alpha"), std::string::npos);
  b = SpecBody();
  b["variants"] = Json::array({b["variants"][0]});
  EXPECT_NE(Refusal(b).find("2..16 variants"), std::string::npos);
  b = SpecBody();
  b["colour"] = "red";
  EXPECT_NE(Refusal(b).find("unknown key"), std::string::npos);
  b = SpecBody();
  b.erase("metrics");
  EXPECT_NE(Refusal(b).find("missing required key \"metrics\""), std::string::npos);
  EXPECT_TRUE(CheckExperimentName("int8-probe").ok());
  EXPECT_FALSE(CheckExperimentName("Int8").ok());
  EXPECT_FALSE(CheckExperimentName("a..b").ok());
  EXPECT_FALSE(CheckExperimentName(std::string(64, 'a')).ok());
}

TEST(AssignmentTest, IsStableAndFollowsTheWeights) {
  ExperimentSpec s = Spec();
  s.variants[0].weight = 3;  // 75/25
  s.variants[1].weight = 1;
  const int n = 100000;
  int first = 0;
  for (int i = 0; i < n; ++i) {
    const std::string session = absl::StrCat("s", i);
    const int v = AssignVariant(s, "exp", session);
    EXPECT_EQ(v, AssignVariant(s, "exp", session));
    first += v == 0;
  }
  // Binomial(100000, 0.75): sd 137; 5 sd either way.
  EXPECT_NEAR(first, 75000, 5 * 137);
  // The hash is part of the API (clients may compute it): pinned values.
  EXPECT_EQ(AssignmentHash("", ""), AssignmentHash("", ""));
  EXPECT_NE(AssignmentHash("exp", "s1"), AssignmentHash("exp2", "s1"));
  EXPECT_NE(AssignmentHash("ab", "c"), AssignmentHash("a", "bc"));
}

TEST(EventsTest, DecodeRefuseAndRoundTrip) {
  const ExperimentSpec s = Spec();
  Json body = Json::parse(R"({"events": [
      {"session": "s1", "variant": "fp16", "metrics": {"latency_ms": 12.5}},
      {"session": "s2", "variant": "int8-ffn", "metrics": {"latency_ms": 10, "quality": 0.9},
       "covariates": {"latency_ms": 11}},
      {"session": "s3", "variant": "int8-ffn", "stop": "apdf: error rate 12%"}]})");
  absl::StatusOr<std::vector<Event>> e = ParseEvents(body, s, 10);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->size(), 3u);
  EXPECT_EQ((*e)[1].variant, 1);
  EXPECT_EQ((*e)[1].covariates.size(), 1u);
  EXPECT_EQ((*e)[2].stop_reason, "apdf: error rate 12%");
  absl::StatusOr<std::vector<Event>> back = ParseEvents(Json::parse(EventsToJson(*e, s)), s, 10);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(EventsToJson(*back, s), EventsToJson(*e, s));

  auto refusal = [&](const char* text, size_t max = 10) {
    absl::StatusOr<std::vector<Event>> r = ParseEvents(Json::parse(text), s, max);
    return r.ok() ? std::string("accepted") : std::string(r.status().message());
  };
  EXPECT_NE(
      refusal(R"({"events": [{"session": "a", "variant": "bf16", "metrics": {"quality": 1}}]})")
          .find("$.events[0].variant: unknown variant"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"events": [{"session": "a", "variant": "fp16", "metrics": {"qps": 1}}]})")
                .find("$.events[0].metrics.qps: unknown metric"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"events": [{"session": "a", "variant": "fp16",
                        "metrics": {"quality": "NaN"}}]})")
                .find("$.events[0].metrics.quality: must be a number"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"events": [{"session": "a", "variant": "fp16"}]})").find("at least one"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"events": []})").find("1..10 events"), std::string::npos);
  EXPECT_NE(refusal(R"({"events": [{"session": "a", "variant": "fp16", "metrics": {"quality": 1}},
                                   {"session": "b", "variant": "fp16", "metrics": {"quality": 1}}]})",
                    1)
                .find("1..1 events"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"events": [{"session": "a\u001b[31m", "variant": "fp16",
                        "metrics": {"quality": 1}}]})")
                .find("control characters"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"({"events": [{"session": "", "variant": "fp16", "metrics": {"quality": 1}}]})")
          .find("$.events[0].session"),
      std::string::npos);
}

// Events of `n` sessions, each one latency draw; variant by assignment unless `split` (the share
// logged as the control) overrides it.
std::vector<Event> Sessions(const ExperimentSpec& s, int n, double effect, std::mt19937_64& rng,
                            double split = -1) {
  std::normal_distribution<double> noise(100, 10);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Event> out;
  for (int i = 0; i < n; ++i) {
    Event e;
    e.session = absl::StrCat("u", rng());
    e.variant = split < 0 ? AssignVariant(s, "exp", e.session) : (u(rng) < split ? 0 : 1);
    e.metrics.push_back({0, noise(rng) + (e.variant == 1 ? effect : 0)});
    out.push_back(std::move(e));
  }
  return out;
}

TEST(ExperimentTest, ReportsTheEffectWithItsSign) {
  const ExperimentSpec s = Spec();
  Experiment x("exp", s);
  std::mt19937_64 rng(7);
  for (int b = 0; b < 20; ++b) x.Apply(Sessions(s, 500, -5, rng));  // 5% faster
  const Json r = x.Report();
  EXPECT_TRUE(r["valid"].get<bool>()) << r.dump(2);
  const Json& v = r["metrics"]["latency_ms"]["variants"]["int8-ffn"];
  EXPECT_LT(v["delta"].get<double>(), 0);
  EXPECT_TRUE(v["sequential"]["significant"].get<bool>()) << v.dump(2);
  EXPECT_EQ(v["decision"], "better");
  EXPECT_EQ(v["decided_by"], "sequential");
  EXPECT_LE(v["sequential"]["ci"][0].get<double>(), -5 + 1.5);
  EXPECT_LT(v["sequential"]["ci"][1].get<double>(), 0);
  EXPECT_EQ(r["assignment_mismatches"], 0);
  EXPECT_EQ(r["events"], 10000);
  // The quality metric had no event: nothing is claimed about it.
  EXPECT_EQ(r["metrics"]["quality"]["variants"]["int8-ffn"]["n"], 0);
  EXPECT_EQ(r["metrics"]["quality"]["variants"]["int8-ffn"]["decision"], "inconclusive");
}

TEST(ExperimentTest, SampleRatioMismatchVoidsTheResult) {
  const ExperimentSpec s = Spec();
  Experiment x("exp", s);
  std::mt19937_64 rng(11);
  // 10,000 sessions logged 52/48 into a 50/50 plan.
  std::vector<Event> events = Sessions(s, 10000, 0, rng, 0.52);
  x.Apply(events);
  const Json r = x.Report();
  EXPECT_TRUE(r["srm"]["mismatch"].get<bool>()) << r["srm"].dump();
  EXPECT_LT(r["srm"]["p_value"].get<double>(), 0.001);
  EXPECT_FALSE(r["valid"].get<bool>());
  EXPECT_TRUE(r["void_reason"].is_string());
  EXPECT_GT(r["assignment_mismatches"].get<int64_t>(), 4000);  // half disagree with the hash
}

TEST(ExperimentTest, ReplayingTheBatchesRebuildsTheSameState) {
  const ExperimentSpec s = Spec();
  std::mt19937_64 rng(3);
  std::vector<std::vector<Event>> batches;
  for (int b = 0; b < 12; ++b) batches.push_back(Sessions(s, 300, -1, rng));
  Experiment a("exp", s), b("exp", s);
  for (const auto& batch : batches) a.Apply(batch);
  // What the server stores and reads back after a restart.
  for (const auto& batch : batches) {
    absl::StatusOr<std::vector<Event>> e =
        ParseEvents(Json::parse(EventsToJson(batch, s)), s, batch.size());
    ASSERT_TRUE(e.ok()) << e.status();
    b.Apply(*e);
  }
  EXPECT_EQ(a.Report().dump(), b.Report().dump());
}

TEST(ExperimentTest, StopEventsAreReported) {
  const ExperimentSpec s = Spec();
  Experiment x("exp", s);
  x.Apply({Event{"s1", 1, {}, {}, "apdf: error rate 12% over 8.5%"}});
  const Json r = x.Report();
  EXPECT_EQ(r["stopped_variants"]["int8-ffn"], "apdf: error rate 12% over 8.5%");
  EXPECT_EQ(r["sessions"]["int8-ffn"], 1);
}

TEST(ExperimentDeathTest, EventOutOfRangeIsABug) {
  Experiment x("exp", Spec());
  EXPECT_DEATH(x.Apply({Event{"s1", 7, {{0, 1.0}}, {}, ""}}), "out of range");
}

TEST(ExperimentDeathTest, ExperimentWithoutControlIsABug) {
  ExperimentSpec s = Spec();
  s.control = "nope";
  EXPECT_DEATH(Experiment("exp", s), "control");
}

TEST(AssignmentDeathTest, NoVariantsIsABug) {
  EXPECT_DEATH(AssignVariant(ExperimentSpec{}, "exp", "s"), "without variants");
}

}  // namespace
}  // namespace seedance::experiment
