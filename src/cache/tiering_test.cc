#include "seedance/cache/tiering.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::cache {
namespace {

constexpr int64_t kSecondUs = 1000000;
constexpr int64_t kHourUs = 3600 * kSecondUs;
constexpr int64_t kMonthUs = 730 * kHourUs;  // the model's month
constexpr int64_t kGib = int64_t{1} << 30;
constexpr int64_t kMib = int64_t{1} << 20;

// Round prices for hand-computed answers: per GiB-month local $2, remote $1; a PUT $0.5, a GET
// $0.25; no egress, no stall.
TierCostModel RoundModel() {
  TierCostModel m;
  m.local_usd_per_gib_month = 2;
  m.remote_usd_per_gib_month = 1;
  m.put_usd_per_request = 0.5;
  m.get_usd_per_request = 0.25;
  m.egress_usd_per_gib = 0;
  return m;
}

TieringResult Replay(const std::vector<Request>& trace, TierPolicyKind kind,
                     const TierCostModel& model, const CostPolicyOptions& cost = {}) {
  absl::StatusOr<TieringResult> r = SimulateTiering(trace, kind, model, {}, cost);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : TieringResult{};
}

// Reads of object `id` of `size` bytes at `times_us`, merged into `trace` in time order.
void AddReads(std::vector<Request>* trace, uint64_t id, int64_t size,
              const std::vector<int64_t>& times_us) {
  for (int64_t t : times_us) trace->push_back(Request{.time = t, .id = id, .size = size});
  std::stable_sort(trace->begin(), trace->end(),
                   [](const Request& a, const Request& b) { return a.time < b.time; });
}

double PartsSum(const TieringResult& r) {
  return r.local_storage_usd + r.remote_storage_usd + r.get_usd + r.put_usd + r.egress_usd +
         r.stall_usd;
}

// Ten reads of a 1 GiB object in the first 10 us (worth keeping local: a GET is $0.25), then
// idle until a 1-byte object is read at 1 month. Keeping it costs $2, demoting it $0.5 + $1
// (reading it through ten times would cost $2.5 + $1): the optimum demotes after the last read.
std::vector<Request> BurstThenIdle() {
  std::vector<Request> t;
  AddReads(&t, 1, kGib, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  AddReads(&t, 2, 1, {kMonthUs});
  return t;
}

TEST(TieringOptimumTest, DemotesAnObjectWhenTheStorageSavedExceedsThePut) {
  const TieringResult r = Replay(BurstThenIdle(), TierPolicyKind::kOptimum, RoundModel());
  EXPECT_EQ(r.demotions, 1);
  EXPECT_EQ(r.remote_reads, 2);  // the first read of each object
  EXPECT_NEAR(r.total_usd(), 0.25 + 0.5 + 1.0 + 0.25, 1e-9);
  EXPECT_NEAR(r.remote_storage_usd, 1.0, 1e-9);
  EXPECT_NEAR(r.local_storage_usd, 0.0, 1e-9);
}

// The same with a PUT of $1.5: keeping it ($2) is now cheaper than demoting it ($1.5 + $1).
TEST(TieringOptimumTest, KeepsAnObjectWhenThePutCostsMoreThanTheStorageSaved) {
  TierCostModel m = RoundModel();
  m.put_usd_per_request = 1.5;
  const TieringResult r = Replay(BurstThenIdle(), TierPolicyKind::kOptimum, m);
  EXPECT_EQ(r.demotions, 0);
  EXPECT_NEAR(r.total_usd(), 0.25 + 2.0 + 0.25, 1e-9);
}

// Read at 0 and at 1 month: local $2.25, demote-and-reread $2.00, read through (never promote)
// $0.25 + $1 + $0.25 = $1.50. The optimum reads through.
TEST(TieringOptimumTest, ReadsThroughAnObjectReadRarely) {
  std::vector<Request> t;
  AddReads(&t, 1, kGib, {0, kMonthUs});
  const TieringResult r = Replay(t, TierPolicyKind::kOptimum, RoundModel());
  EXPECT_NEAR(r.total_usd(), 1.5, 1e-9);
  EXPECT_EQ(r.remote_reads, 2);
  EXPECT_EQ(r.demotions, 0);
}

// Ten reads a tenth of a month apart: a gap local costs $0.2, remote $0.1 + a $0.25 GET. The
// optimum keeps it local after the first read: $0.25 + 9 * $0.2.
TEST(TieringOptimumTest, KeepsAFrequentlyReadObjectLocal) {
  std::vector<int64_t> times;
  for (int i = 0; i < 10; ++i) times.push_back(i * kMonthUs / 10);
  std::vector<Request> t;
  AddReads(&t, 1, kGib, times);
  const TieringResult r = Replay(t, TierPolicyKind::kOptimum, RoundModel());
  EXPECT_NEAR(r.total_usd(), 0.25 + 9 * 0.2, 1e-9);
  EXPECT_EQ(r.remote_reads, 1);
}

// Where the store keeps a copy, dropping the local copy is free and remote storage is paid for the
// whole life: the burst object costs $0.25 + $0 (dropped after its last read) + $1 (remote).
TEST(TieringOptimumTest, DropsALocalCopyForFreeWhenTheStoreKeepsOne) {
  TierCostModel m = RoundModel();
  m.remote_keeps_copy = true;
  const TieringResult r = Replay(BurstThenIdle(), TierPolicyKind::kOptimum, m);
  EXPECT_EQ(r.demotions, 1);
  EXPECT_NEAR(r.total_usd(), 0.25 + 1.0 + 0.25, 1e-9);
  EXPECT_NEAR(r.put_usd, 0.0, 1e-12);
}

// A stall of $3600 per hour is $1 per second of waiting. With 1 s to first byte remotely and 0 s
// locally (bandwidths huge), two reads of a 1 GiB object a month apart cost: read through
// $1.25 + $1 + $1.25 = $3.5; keep local $1.25 + $2 + $0 = $3.25: the optimum keeps it.
TEST(TieringOptimumTest, AStallPriceKeepsAnObjectLocalThatWouldOtherwiseBeReadThrough) {
  std::vector<Request> t;
  AddReads(&t, 1, kGib, {0, kMonthUs});
  TierCostModel m = RoundModel();
  m.stall_usd_per_hour = 3600;
  m.local_first_byte_s = 0;
  m.remote_first_byte_s = 1;
  m.local_bytes_per_s = 1e30;
  m.remote_bytes_per_s = 1e30;
  const TieringResult r = Replay(t, TierPolicyKind::kOptimum, m);
  EXPECT_NEAR(r.total_usd(), 3.25, 1e-9);
  EXPECT_NEAR(r.stall_usd, 1.0, 1e-9);
  EXPECT_NEAR(r.total_without_stall_usd(), 2.25, 1e-9);
  EXPECT_NEAR(r.mean_read_latency_s, 0.5, 1e-9);
}

// An independent brute force of the model for one object: every sequence of choices (after each
// read: local or remote; in a gap from local: stay or demote at once), priced from the model.
double BruteForce(const std::vector<int64_t>& times, int64_t end_us, int64_t size,
                  const TierCostModel& m) {
  const double gib = double(size) / double(kGib);
  const double stall_per_s = m.stall_usd_per_hour / 3600;
  const double local_lat = m.local_first_byte_s + double(size) / m.local_bytes_per_s;
  const double remote_lat = m.remote_first_byte_s + double(size) / m.remote_bytes_per_s;
  const double remote_read =
      m.get_usd_per_request + m.egress_usd_per_gib * gib + stall_per_s * remote_lat;
  const double local_read = stall_per_s * local_lat;
  auto hold = [&](bool local, int64_t us) {
    const double months = double(us) / double(kMonthUs);
    double usd = (local ? m.local_usd_per_gib_month : m.remote_usd_per_gib_month) * gib * months;
    if (local && m.remote_keeps_copy) usd += m.remote_usd_per_gib_month * gib * months;
    return usd;
  };
  const double demote = m.remote_keeps_copy ? 0 : m.put_usd_per_request;
  std::function<double(size_t, bool)> best = [&](size_t i, bool local) -> double {
    const int64_t until = i + 1 < times.size() ? times[i + 1] : end_us;
    const bool last = i + 1 == times.size();
    double cost = 1e300;
    for (int choice = 0; choice < 3; ++choice) {  // stay local, demote, stay remote
      if ((choice == 2) == local) continue;
      const bool held_local = choice == 0;
      double c = (choice == 1 ? demote : 0) + hold(held_local, until - times[i]);
      if (last) {
        cost = std::min(cost, c);
        continue;
      }
      if (held_local) {
        cost = std::min(cost, c + local_read + best(i + 1, true));
      } else {
        c += remote_read;
        cost = std::min(cost, c + std::min(best(i + 1, true), best(i + 1, false)));
      }
    }
    return cost;
  };
  return remote_read + std::min(best(0, true), best(0, false));
}

TierCostModel RandomModel(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  TierCostModel m;
  m.local_usd_per_gib_month = 0.02 + 0.2 * u(rng);
  m.remote_usd_per_gib_month = 0.005 + 0.05 * u(rng);
  m.put_usd_per_request = 1e-6 + 1e-4 * u(rng);
  m.get_usd_per_request = 1e-7 + 1e-5 * u(rng);
  m.egress_usd_per_gib = u(rng) < 0.5 ? 0 : 0.1 * u(rng);
  m.remote_keeps_copy = u(rng) < 0.3;
  m.stall_usd_per_hour = u(rng) < 0.5 ? 0 : 20 * u(rng);
  return m;
}

// Random traces: a few objects of 1 KiB .. 1 GiB, reads minutes to months apart.
std::vector<Request> RandomTrace(std::mt19937_64& rng, int objects, int requests) {
  std::uniform_int_distribution<int> obj(0, objects - 1);
  std::uniform_real_distribution<double> log_size(10, 30), log_gap(6, 13.5);
  std::vector<int64_t> size(objects);
  for (int64_t& s : size) s = int64_t(std::exp2(log_size(rng)));
  std::vector<Request> t;
  int64_t now = 0;
  for (int i = 0; i < requests; ++i) {
    now += int64_t(std::pow(10.0, log_gap(rng)));
    const int o = obj(rng);
    t.push_back(Request{.time = now, .id = uint64_t(o), .size = size[o]});
  }
  return t;
}

TEST(TieringOptimumTest, MatchesABruteForceOnRandomSingleObjects) {
  std::mt19937_64 rng(40);
  for (int round = 0; round < 200; ++round) {
    const TierCostModel m = RandomModel(rng);
    std::vector<Request> t = RandomTrace(rng, 1, 1 + int(rng() % 7));
    const int64_t end_us = t.back().time + int64_t(rng() % (int64_t{1} << 42));
    t.push_back(Request{.time = end_us, .id = 99, .size = 1});  // sets the end; zero life
    std::vector<int64_t> times;
    for (size_t i = 0; i + 1 < t.size(); ++i) times.push_back(t[i].time);
    const double want =
        BruteForce(times, end_us, t[0].size, m) + BruteForce({end_us}, end_us, 1, m);
    const TieringResult r = Replay(t, TierPolicyKind::kOptimum, m);
    EXPECT_NEAR(r.total_usd(), want, 1e-9 * std::max(1.0, want)) << "round " << round;
  }
}

// The online policies never beat the optimum, and every result's parts add up to its total.
TEST(TieringPropertyTest, OnlinePoliciesNeverBeatTheOptimum) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 60; ++round) {
    const TierCostModel m = RandomModel(rng);
    const std::vector<Request> t = RandomTrace(rng, 1 + int(rng() % 20), 200);
    const TieringResult opt = Replay(t, TierPolicyKind::kOptimum, m);
    for (double trust : {0.05, 0.3, 1.0}) {
      for (TierPolicyKind kind : {TierPolicyKind::kSeedRule, TierPolicyKind::kCostPolicy}) {
        const TieringResult r = Replay(t, kind, m, CostPolicyOptions{.trust = trust});
        EXPECT_GE(r.total_usd(), opt.total_usd() * (1 - 1e-12)) << "round " << round;
        EXPECT_NEAR(PartsSum(r), r.total_usd(), 1e-12 * r.total_usd());
        EXPECT_EQ(r.reads, int64_t(t.size()));
      }
    }
    EXPECT_NEAR(PartsSum(opt), opt.total_usd(), 1e-12 * opt.total_usd());
  }
}

// The seed rule's three conditions, each at its edge, the other two held true. Object 1 is read
// at `times`; the trace ends at its last read.
TieringResult SeedRun(int64_t size, const std::vector<int64_t>& times) {
  std::vector<Request> t;
  AddReads(&t, 1, size, times);
  return Replay(t, TierPolicyKind::kSeedRule, TierCostModel{});
}

constexpr int64_t kDay = 24 * kHourUs;
constexpr int64_t kBig = 10 * kMib + 1;

TEST(TieringSeedRuleTest, DemotesAfterExactly24HoursIdleButNotOneMicrosecondBefore) {
  const TieringResult at = SeedRun(kBig, {0, kDay});
  EXPECT_EQ(at.demotions, 1);
  EXPECT_EQ(at.remote_reads, 2);
  const TieringResult before = SeedRun(kBig, {0, kDay - 1});
  EXPECT_EQ(before.demotions, 0);
  EXPECT_EQ(before.remote_reads, 1);
}

TEST(TieringSeedRuleTest, DemotesOnlyObjectsLargerThan10MiB) {
  EXPECT_EQ(SeedRun(10 * kMib + 1, {0, 2 * kDay}).demotions, 1);
  const TieringResult at = SeedRun(10 * kMib, {0, 2 * kDay});
  EXPECT_EQ(at.demotions, 0);
  EXPECT_EQ(at.remote_reads, 1);
}

TEST(TieringSeedRuleTest, DemotesOnlyObjectsWithFewerThanThreeAccesses) {
  const TieringResult two = SeedRun(kBig, {0, kSecondUs, kSecondUs + 2 * kDay});
  EXPECT_EQ(two.demotions, 1);
  EXPECT_EQ(two.remote_reads, 2);
  const TieringResult three =
      SeedRun(kBig, {0, kSecondUs, 2 * kSecondUs, 2 * kSecondUs + 2 * kDay});
  EXPECT_EQ(three.demotions, 0);
  EXPECT_EQ(three.remote_reads, 1);
}

// A demoted object is promoted by its next read, then demoted again while it has < 3 accesses:
// reads at 0 and 2 days of a 1 GiB object with the round prices, end at 4 days. Local 1 day, PUT,
// remote 1 day, GET, local 1 day (its second access), PUT, remote 1 day: every part by hand.
TEST(TieringSeedRuleTest, CostsAddUpByHand) {
  std::vector<Request> t;
  AddReads(&t, 1, kGib, {0, 2 * kDay});
  AddReads(&t, 2, 1, {4 * kDay});
  const TieringResult r = Replay(t, TierPolicyKind::kSeedRule, RoundModel());
  const double day_months = double(kDay) / double(kMonthUs);
  EXPECT_EQ(r.demotions, 2);
  EXPECT_NEAR(r.local_storage_usd, 2 * 2 * day_months, 1e-12);
  EXPECT_NEAR(r.remote_storage_usd, 2 * 1 * day_months, 1e-12);
  EXPECT_NEAR(r.put_usd, 2 * 0.5, 1e-12);
  EXPECT_NEAR(r.get_usd, 3 * 0.25, 1e-12);  // two reads of object 1, one of object 2
  EXPECT_NEAR(r.total_usd(), PartsSum(r), 1e-12);
}

// Latency: 99 local reads and one remote read; nearest-rank p99 of 100 reads is the 99th smallest.
TEST(TieringLatencyTest, MeanAndP99OfTheReads) {
  std::vector<int64_t> times;
  for (int i = 0; i < 100; ++i) times.push_back(i * kSecondUs);
  std::vector<Request> t;
  AddReads(&t, 1, 1000, times);
  TierCostModel m;
  m.local_first_byte_s = 0.001;
  m.local_bytes_per_s = 1e6;  // 1 ms per 1000 bytes
  m.remote_first_byte_s = 0.1;
  m.remote_bytes_per_s = 1e5;                                       // 10 ms per 1000 bytes
  const TieringResult r = Replay(t, TierPolicyKind::kSeedRule, m);  // 1000 B: never demoted
  EXPECT_EQ(r.remote_reads, 1);
  EXPECT_NEAR(r.p99_read_latency_s, 0.002, 1e-12);
  EXPECT_NEAR(r.mean_read_latency_s, (99 * 0.002 + 0.11) / 100, 1e-12);
}

// The cost policy learns from the object's own gaps and from the reads before. A 1 GiB object:
// rent (EBS gp3 - S3) is about 2.2e-14 $/us, a GET 4e-7 $, so b_promote is about 18 s. Read every
// second, it is read through while the policy learns that reads come back (a wrong promotion
// costs 2 PUTs + a GET, so it wants p > 0.96), then promoted for good: 100 reads cost no more
// remote reads than 50. Read every two months, every read goes through to the store.
TEST(TieringCostPolicyTest, KeepsWhatComesBackSoonAndReadsThroughWhatDoesNot) {
  auto every = [](int n, int64_t gap_us) {
    std::vector<int64_t> times;
    for (int i = 0; i < n; ++i) times.push_back(i * gap_us);
    std::vector<Request> t;
    AddReads(&t, 1, kGib, times);
    return Replay(t, TierPolicyKind::kCostPolicy, TierCostModel{});
  };
  const TieringResult hot50 = every(50, kSecondUs), hot100 = every(100, kSecondUs);
  EXPECT_LT(hot50.remote_reads, 50);
  EXPECT_EQ(hot100.remote_reads, hot50.remote_reads);
  EXPECT_EQ(hot100.demotions, 0);
  const TieringResult cold = every(50, 2 * kMonthUs);
  EXPECT_EQ(cold.remote_reads, 50);
  EXPECT_EQ(cold.demotions, 0);
  EXPECT_NEAR(cold.local_storage_usd, 0, 1e-15);
}

TEST(TieringTest, RejectsBadInputNamingIt) {
  std::vector<Request> back = {{.time = 5, .id = 1, .size = 1}, {.time = 4, .id = 1, .size = 1}};
  absl::StatusOr<TieringResult> r = SimulateTiering(back, TierPolicyKind::kOptimum, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("request 2: time 4"), std::string::npos) << r.status();

  std::vector<Request> empty_object = {{.time = 0, .id = 1, .size = 0}};
  r = SimulateTiering(empty_object, TierPolicyKind::kSeedRule, {});
  EXPECT_NE(r.status().message().find("request 1: size 0"), std::string::npos) << r.status();

  TierCostModel m;
  m.put_usd_per_request = -1;
  r = SimulateTiering({}, TierPolicyKind::kOptimum, m);
  EXPECT_NE(r.status().message().find("put_usd_per_request"), std::string::npos) << r.status();
  m = {};
  m.remote_bytes_per_s = 0;
  r = SimulateTiering({}, TierPolicyKind::kOptimum, m);
  EXPECT_NE(r.status().message().find("remote_bytes_per_s"), std::string::npos) << r.status();

  r = SimulateTiering({}, TierPolicyKind::kCostPolicy, {}, {}, CostPolicyOptions{.trust = 0});
  EXPECT_NE(r.status().message().find("trust = 0,"), std::string::npos) << r.status();
}

TEST(TieringTest, AnEmptyTraceCostsNothing) {
  for (TierPolicyKind kind :
       {TierPolicyKind::kSeedRule, TierPolicyKind::kCostPolicy, TierPolicyKind::kOptimum}) {
    const TieringResult r = Replay({}, kind, TierCostModel{});
    EXPECT_EQ(r.reads, 0);
    EXPECT_EQ(r.total_usd(), 0);
  }
}

}  // namespace
}  // namespace seedance::cache
