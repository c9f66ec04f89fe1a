// Seedance's prewarm-aware cache (seedance/cache/prewarm.h): its own expert (lrfu; the others are
// the library's policies, policy_base.h's NewLruExpert ...), the meta-policy that follows the
// experts, and the decayed LRU-K history it prewarms from.
//
// The meta-policy is a "follow the leader" over shadow caches (as in ACME, Ari et al., 2002, and
// the adaptive caches that pick among experts; here with SHARDS sampling, Waldspurger et al.,
// "Cache Modeling and Optimization using Miniature Simulations", ATC '17): the shadows are
// metadata-only caches of capacity rate x C that see only the requests for objects whose hash
// falls below rate. Assumption: the expert that missed least on the recent sampled requests will
// miss least on the next ones, and the sample represents the whole.
#include "seedance_policy.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "object_list.h"
#include "seedance/base/check.h"
#include "seedance/cache/prewarm.h"
#include "seedance/trace/input_error.h"

namespace seedance::cache {
namespace internal {
namespace {

using Resident = Expert::Resident;

// The decayed LRU-K score as a replacement policy (LRFU: Lee et al., "LRFU: A Spectrum of
// Policies that Subsumes the LRU and LFU Policies", IEEE ToC 2001): an object's score is the sum
// over its references of 2^(-age / half-life), age counted in requests; the lowest score goes.
// Scores are kept as key = log2(score at t) + t / half-life, which decay does not change, so the
// order of the keys is the order of the scores at any later time. Evicted objects' keys are
// retained for as many objects as the cache holds, so a returning object resumes its score.
class LrfuExpert final : public Expert {
 public:
  LrfuExpert(int64_t capacity, double half_life_requests)
      : Expert("lrfu", capacity), half_life_(std::max(1.0, half_life_requests)) {}
  int64_t occupied() const override { return occupied_; }
  bool Contains(uint64_t id) override { return cached_.contains(id); }
  void Drop(uint64_t id) override {
    auto it = cached_.find(id);
    if (it == cached_.end()) return;
    order_.erase({it->second.key, id});
    occupied_ -= it->second.size;
    retained_[id] = it->second.key;
    cached_.erase(it);
    retained_order_.PushFront(id, 1);
    while (retained_order_.count() > std::max<size_t>(1, cached_.size())) {
      const uint64_t old = retained_order_.Back().id;
      retained_order_.PopBack();
      if (retained_order_.Find(old) == nullptr) retained_.erase(old);
    }
  }
  std::unique_ptr<Expert> Clone() override {
    auto c = std::make_unique<LrfuExpert>(capacity_, half_life_);
    c->clock_ = clock_;
    c->occupied_ = occupied_;
    c->cached_ = cached_;
    c->order_ = order_;
    c->retained_ = retained_;
    CopyList(retained_order_, &c->retained_order_);
    return c;
  }
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    for (const auto& [key, id] : order_) out.emplace_back(id, cached_.at(id).size);
    return out;
  }

 private:
  struct Entry {
    double key = 0;
    int64_t size = 0;
  };
  double Now() const { return double(clock_) / half_life_; }
  // The key after one more reference now, given the previous key.
  double Bump(double key) const { return std::log2(std::exp2(key - Now()) + 1.0) + Now(); }

  bool Find(const Request& r) override {
    ++clock_;
    auto it = cached_.find(r.id);
    if (it == cached_.end()) return false;
    order_.erase({it->second.key, r.id});
    it->second.key = Bump(it->second.key);
    order_.insert({it->second.key, r.id});
    return true;
  }
  void Insert(const Request& r) override {
    double key = Now();
    if (auto g = retained_.find(r.id); g != retained_.end()) {
      key = Bump(g->second);
      retained_.erase(g);
    }
    cached_[r.id] = Entry{key, r.size};
    order_.insert({key, r.id});
    occupied_ += r.size;
  }
  void Evict(const Request&) override { Drop(order_.begin()->second); }

  const double half_life_;
  int64_t clock_ = 0;
  int64_t occupied_ = 0;
  absl::flat_hash_map<uint64_t, Entry> cached_;
  std::set<std::pair<double, uint64_t>> order_;
  absl::flat_hash_map<uint64_t, double> retained_;
  ObjectList<> retained_order_;
};

// In the order ties are broken in: the experts with the smallest worst case on the tuning traces
// (docs/cache.md) first.
constexpr std::array<std::string_view, 7> kExperts = {"lirs",  "wtinylfu", "arc", "s3fifo",
                                                      "sieve", "lrfu",     "lru"};

}  // namespace

std::unique_ptr<Expert> NewExpert(std::string_view name, int64_t capacity,
                                  double half_life_requests) {
  if (name == "lru") return NewLruExpert(capacity);
  if (name == "sieve") return NewSieveExpert(capacity);
  if (name == "s3fifo") return NewS3FifoExpert(capacity);
  if (name == "arc") return NewArcExpert(capacity);
  if (name == "lirs") return NewLirsExpert(capacity);
  if (name == "wtinylfu") return NewWTinyLfuExpert(capacity);
  if (name == "lrfu") return std::make_unique<LrfuExpert>(capacity, half_life_requests);
  return nullptr;
}

}  // namespace internal

namespace {

using internal::Expert;
using internal::kExperts;
using internal::NewExpert;

// The sampling hash (murmur3's 64-bit finalizer: independent of the sketch's splitmix64).
uint64_t SampleHash(uint64_t id) {
  id ^= id >> 33;
  id *= 0xff51afd7ed558ccdULL;
  id ^= id >> 33;
  id *= 0xc4ceb9fe1a85ec53ULL;
  id ^= id >> 33;
  return id;
}

int ExpertIndex(std::string_view name) {
  for (size_t i = 0; i < kExperts.size(); ++i) {
    if (kExperts[i] == name) return static_cast<int>(i);
  }
  return -1;
}

class SeedanceCache final : public PrewarmingCache {
 public:
  SeedanceCache(int64_t capacity, SeedanceOptions options)
      : capacity_(capacity), o_(std::move(options)), leader_(ExpertIndex(o_.initial_expert)) {
    SEEDANCE_CHECK(capacity_ >= 1)
        << "a Seedance cache of capacity " << capacity_ << ": must be >= 1";
    SEEDANCE_CHECK(leader_ >= 0) << "unknown initial expert '" << o_.initial_expert << "'";
    real_ = NewExpert(kExperts[leader_], capacity_, 1.0);
  }

  bool Access(const Request& r) override {
    MaybeStartShadows(r);
    const bool hit = real_->Access(r);
    Remember(r.id, r.size, 1.0);
    if (!recent_.empty()) {
      recent_[recent_next_] = {r.id, r.size};
      recent_next_ = (recent_next_ + 1) % recent_.size();
    }
    if (shadowing_ && Sampled(r.id)) ShadowAccess(r, /*count=*/true);
    ++now_;
    return hit;
  }
  int64_t occupied() const override { return real_->occupied(); }
  std::string_view name() const override { return "seedance"; }
  bool Contains(uint64_t id) const override { return real_->Contains(id); }
  const PrefetchStats& prefetch_stats() const override { return stats_; }
  std::string_view expert() const override { return kExperts[leader_]; }

  int64_t PrewarmHints(const std::vector<Request>& objects) override {
    int64_t fetched = 0;
    for (const Request& r : objects) {
      Remember(r.id, r.size, 1.0);
      if (real_->Contains(r.id)) {
        ++stats_.hint_resident;
        continue;
      }
      MaybeStartShadows(r);
      real_->Access(r);
      if (shadowing_ && Sampled(r.id)) ShadowAccess(r, /*count=*/false);
      if (!real_->Contains(r.id)) continue;
      ++fetched;
      ++stats_.hint_fetches;
      stats_.hint_bytes += r.size;
    }
    return fetched;
  }

  int64_t PrewarmFromHistory(const SavedHistory& history) override {
    const int from = ExpertIndex(history.expert);
    if (real_->occupied() == 0 && from >= 0 && from != leader_) {
      leader_ = from;
      real_ = NewExpert(kExperts[leader_], capacity_, RealHalfLife());
    }
    std::vector<const HistoryEntry*> chosen;
    int64_t room = capacity_ - real_->occupied();
    for (const HistoryEntry& e : history.entries) {
      if (e.size > room || real_->Contains(e.id)) continue;
      chosen.push_back(&e);
      room -= e.size;
    }
    for (const HistoryEntry& e : history.entries) Remember(e.id, e.size, e.score);
    // The best-ranked object is fetched last, so that recency-ordered experts keep it longest.
    int64_t fetched = 0;
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      const Request r{.time = now_, .id = (*it)->id, .size = (*it)->size};
      MaybeStartShadows(r);
      real_->Access(r);
      if (shadowing_ && Sampled(r.id)) ShadowAccess(r, /*count=*/false);
      if (!real_->Contains(r.id)) continue;
      ++fetched;
      ++stats_.history_fetches;
      stats_.history_bytes += r.size;
    }
    return fetched;
  }

  SavedHistory SaveHistory() const override {
    SavedHistory out;
    out.expert = std::string(kExperts[leader_]);
    out.half_life_requests = HistoryHalfLife();
    for (const auto& [id, h] : history_) {
      out.entries.push_back({.id = id, .size = h.size, .score = ScoreNow(h)});
    }
    std::sort(out.entries.begin(), out.entries.end(),
              [](const HistoryEntry& a, const HistoryEntry& b) {
                return a.score != b.score ? a.score > b.score : a.id < b.id;
              });
    const double budget = o_.saved_history_capacities * double(capacity_);
    double sum = 0;
    size_t keep = 0;
    while (keep < out.entries.size() && sum < budget) sum += double(out.entries[keep++].size);
    out.entries.resize(keep);
    return out;
  }

 private:
  struct Hist {
    double score = 0;  // at time t
    int64_t t = 0;
    int64_t size = 0;
  };

  // Objects the cache holds: counted when it first filled, else the objects seen so far.
  double Objects() const {
    return double(std::max<int64_t>(1, shadowing_ ? objects_ : int64_t(history_.size())));
  }
  double HistoryHalfLife() const { return std::max(1.0, o_.history_half_life_caches * Objects()); }
  double RealHalfLife() const { return HistoryHalfLife(); }
  double ScoreNow(const Hist& h) const {
    return h.score * std::exp2(-double(now_ - h.t) / HistoryHalfLife());
  }
  void Remember(uint64_t id, int64_t size, double weight) {
    auto [it, inserted] = history_.try_emplace(id, Hist{weight, now_, size});
    if (!inserted) {
      it->second = Hist{ScoreNow(it->second) + weight, now_, size};
      return;
    }
    const auto limit =
        std::max<size_t>(kMinHistory, size_t(o_.history_objects_caches * double(objects_)));
    if (shadowing_ && history_.size() > limit) TrimHistory(limit / 2);
  }
  // Keeps the `keep` best-scored objects of the history.
  void TrimHistory(size_t keep) {
    std::vector<std::pair<double, uint64_t>> all;
    all.reserve(history_.size());
    for (const auto& [id, h] : history_) all.emplace_back(ScoreNow(h), id);
    std::nth_element(all.begin(), all.begin() + std::ptrdiff_t(keep), all.end(), std::greater<>());
    for (size_t i = keep; i < all.size(); ++i) history_.erase(all[i].second);
  }

  bool Sampled(uint64_t id) const { return rate_all_ || SampleHash(id) < threshold_; }

  // When a miss would first evict, the cache holds what every expert would hold: the shadows
  // start there, seeded with the sampled part of it.
  void MaybeStartShadows(const Request& r) {
    if (shadowing_ || r.size > capacity_ || real_->occupied() + r.size <= capacity_ ||
        real_->Contains(r.id)) {
      return;
    }
    const std::vector<std::pair<uint64_t, int64_t>> residents = real_->Residents();
    objects_ = std::max<int64_t>(1, int64_t(residents.size()));
    const double rate = std::min(1.0, double(o_.shadow_objects) / double(objects_));
    rate_all_ = rate >= 1.0;
    threshold_ = rate_all_ ? ~uint64_t{0} : uint64_t(rate * 18446744073709551616.0);
    const int64_t shadow_capacity = std::max<int64_t>(1, std::llround(double(capacity_) * rate));
    const double shadow_objects = std::max(1.0, double(objects_) * rate);
    epoch_requests_ =
        std::max<int64_t>(o_.min_epoch_requests, int64_t(o_.epoch_caches * shadow_objects));
    for (std::string_view e : kExperts) {
      shadows_.push_back(
          NewExpert(e, shadow_capacity, o_.history_half_life_caches * shadow_objects));
    }
    shadowing_ = true;
    if (!rate_all_) {
      recent_.assign(size_t(std::max(1.0, o_.replay_caches * double(objects_))), {0, 0});
    }
    for (const auto& [id, size] : residents) {
      if (Sampled(id)) ShadowAccess(Request{.id = id, .size = size}, /*count=*/false);
    }
  }

  // Feeds a sampled request to the shadows; `count`: a demand request, whose misses count.
  void ShadowAccess(const Request& r, bool count) {
    std::array<bool, kExperts.size()> hit{};
    for (size_t i = 0; i < shadows_.size(); ++i) hit[i] = shadows_[i]->Access(r);
    if (!count) return;
    for (size_t i = 0; i < shadows_.size(); ++i) {
      if (!hit[i]) epoch_[i].misses += 1;
      if (hit[i] && !hit[leader_]) epoch_[i].won += 1;
      if (!hit[i] && hit[leader_]) epoch_[i].lost += 1;
    }
    if (++epoch_n_ >= epoch_requests_) EndEpoch();
  }

  // Decays the old counts, adds the epoch's and follows a clearly better expert. The test is
  // McNemar's on the requests where exactly one of the two hit (the experts see the same
  // requests, so their misses are far from independent).
  void EndEpoch() {
    const double keep = 1.0 - 1.0 / std::max(1.0, o_.window_epochs);
    int best = leader_;
    for (size_t i = 0; i < shadows_.size(); ++i) {
      score_[i].misses = keep * score_[i].misses + epoch_[i].misses;
      score_[i].won = keep * score_[i].won + epoch_[i].won;
      score_[i].lost = keep * score_[i].lost + epoch_[i].lost;
      epoch_[i] = Score{};
      if (score_[i].won - score_[i].lost > score_[best].won - score_[best].lost) best = int(i);
    }
    epoch_n_ = 0;
    if (best == leader_) return;
    const Score& b = score_[best];
    const double lead = b.won - b.lost;
    if (lead > o_.switch_margin * score_[leader_].misses &&
        lead > o_.switch_sigmas * std::sqrt(b.won + b.lost)) {
      SwitchTo(best);
      for (Score& sc : score_) sc.won = sc.lost = 0;
    }
  }

  // The new expert's state, with no fetch: shadowed in full, a copy of its shadow; sampled, a
  // new expert that replays the recent requests (a simulation, as the shadows are: it learns
  // their history). Either is then cut to what the real cache holds: what the real cache does
  // not hold is dropped as the expert evicts (its history stays), and what only the real cache
  // holds enters as new arrivals, least valuable first.
  void SwitchTo(int expert) {
    std::unique_ptr<Expert> next;
    if (rate_all_) {
      next = shadows_[expert]->Clone();
    } else {
      next = NewExpert(kExperts[expert], capacity_, RealHalfLife());
      for (size_t i = 0; i < recent_.size(); ++i) {
        const auto& [id, size] = recent_[(recent_next_ + i) % recent_.size()];
        if (size > 0) next->Access(Request{.id = id, .size = size});
      }
    }
    for (const auto& [id, size] : next->Residents()) {
      if (!real_->Contains(id)) next->Drop(id);
    }
    if (o_.keep_unshadowed) {
      for (const auto& [id, size] : real_->Residents()) {
        if (!next->Contains(id)) next->Access(Request{.id = id, .size = size});
      }
    }
    real_ = std::move(next);
    leader_ = expert;
    ++stats_.switches;
  }

  static constexpr size_t kMinHistory = 1024;

  const int64_t capacity_;
  const SeedanceOptions o_;
  int leader_;
  std::unique_ptr<Expert> real_;
  int64_t now_ = 0;
  PrefetchStats stats_;
  absl::flat_hash_map<uint64_t, Hist> history_;

  bool shadowing_ = false;
  int64_t objects_ = 0;
  bool rate_all_ = true;
  uint64_t threshold_ = 0;
  int64_t epoch_requests_ = 0;
  int64_t epoch_n_ = 0;
  std::vector<std::unique_ptr<Expert>> shadows_;
  // Sampled only: the last replay_caches x objects_ requests {id, size} (size 0: none yet), a
  // ring whose oldest entry is at recent_next_.
  std::vector<std::pair<uint64_t, int64_t>> recent_;
  size_t recent_next_ = 0;
  // Per expert: misses, and the requests it hit while the followed expert missed (won) and the
  // reverse (lost).
  struct Score {
    double misses = 0;
    double won = 0;
    double lost = 0;
  };
  std::array<Score, kExperts.size()> epoch_{};
  std::array<Score, kExperts.size()> score_{};
};

}  // namespace

const std::vector<std::string>& SeedanceExperts() {
  static const std::vector<std::string>* names =
      new std::vector<std::string>(internal::kExperts.begin(), internal::kExperts.end());
  return *names;
}

std::unique_ptr<PrewarmingCache> NewSeedanceCache(int64_t capacity,
                                                  const SeedanceOptions& options) {
  return std::make_unique<SeedanceCache>(capacity, options);
}

namespace internal {
std::unique_ptr<Policy> NewSeedance(int64_t capacity) { return NewSeedanceCache(capacity); }
}  // namespace internal

namespace {

constexpr std::string_view kHistoryHeader = "seedance-history 1";

std::string Shortest(double v) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), end);
}

// "NAME VALUE" of a header line: the value, or an error naming the line and field.
absl::StatusOr<std::string_view> HeaderValue(std::string_view line, std::string_view name,
                                             std::string_view source, int64_t line_no) {
  if (line.size() <= name.size() || line.substr(0, name.size()) != name ||
      line[name.size()] != ' ') {
    return trace::FieldError(source, line_no, name,
                             absl::StrCat("expected '", trace::AbslView(name), " VALUE'"), line);
  }
  return line.substr(name.size() + 1);
}

absl::StatusOr<HistoryEntry> ParseEntry(std::string_view line, std::string_view source,
                                        int64_t line_no) {
  std::vector<absl::string_view> f = absl::StrSplit(trace::AbslView(line), ' ');
  if (f.size() != 3) {
    return trace::LineError(source, line_no, "expected 'ID SIZE SCORE' (3 fields)");
  }
  HistoryEntry e;
  if (!absl::SimpleAtoi(f[0], &e.id)) {
    return trace::FieldError(source, line_no, "id", "expected an unsigned integer",
                             std::string_view(f[0].data(), f[0].size()));
  }
  if (!absl::SimpleAtoi(f[1], &e.size) || e.size < 1) {
    return trace::FieldError(source, line_no, "size", "expected an integer >= 1",
                             std::string_view(f[1].data(), f[1].size()));
  }
  if (!absl::SimpleAtod(f[2], &e.score) || !std::isfinite(e.score) || e.score <= 0) {
    return trace::FieldError(source, line_no, "score", "expected a finite number > 0",
                             std::string_view(f[2].data(), f[2].size()));
  }
  return e;
}

}  // namespace

std::string SerializeHistory(const SavedHistory& history) {
  std::string out = absl::StrCat(trace::AbslView(kHistoryHeader), "\nexpert ",
                                 history.expert.empty() ? "-" : history.expert, "\nhalf_life ",
                                 Shortest(history.half_life_requests), "\n");
  for (const HistoryEntry& e : history.entries) {
    absl::StrAppend(&out, e.id, " ", e.size, " ", Shortest(e.score), "\n");
  }
  return out;
}

absl::StatusOr<SavedHistory> ParseHistory(std::string_view text, std::string_view source) {
  std::vector<absl::string_view> lines = absl::StrSplit(trace::AbslView(text), '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  auto line = [&](size_t i) { return std::string_view(lines[i].data(), lines[i].size()); };
  if (lines.size() < 3 || line(0) != kHistoryHeader) {
    return trace::FieldError(source, 1, "header",
                             absl::StrCat("expected '", trace::AbslView(kHistoryHeader),
                                          "' then 'expert' and 'half_life' lines"),
                             lines.empty() ? "" : line(0));
  }
  SavedHistory h;
  absl::StatusOr<std::string_view> expert = HeaderValue(line(1), "expert", source, 2);
  if (!expert.ok()) return expert.status();
  if (*expert != "-" && ExpertIndex(*expert) < 0) {
    return trace::FieldError(source, 2, "expert", "expected '-' or a Seedance expert", *expert);
  }
  h.expert = *expert == "-" ? "" : std::string(*expert);
  absl::StatusOr<std::string_view> half_life = HeaderValue(line(2), "half_life", source, 3);
  if (!half_life.ok()) return half_life.status();
  if (!absl::SimpleAtod(trace::AbslView(*half_life), &h.half_life_requests) ||
      !std::isfinite(h.half_life_requests) || h.half_life_requests < 0) {
    return trace::FieldError(source, 3, "half_life", "expected a finite number >= 0", *half_life);
  }
  for (size_t i = 3; i < lines.size(); ++i) {
    absl::StatusOr<HistoryEntry> e = ParseEntry(line(i), source, int64_t(i) + 1);
    if (!e.ok()) return e.status();
    h.entries.push_back(*e);
  }
  return h;
}

}  // namespace seedance::cache
