// The tiering cost model and its three policies (include/seedance/cache/tiering.h).
//
// Every policy drives the same Ledger, which charges storage per microsecond held, requests,
// egress and stall time, and records each read's latency. The online policies replay the trace
// in time order keeping one ObjectState per object; the optimum solves a two-state dynamic
// program per object and replays its choices through the Ledger.
#include "seedance/cache/tiering.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace seedance::cache {
namespace {

constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;
constexpr double kUsPerMonth = 730.0 * 3600.0 * 1e6;  // AWS bills a month as 730 hours
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// The per-event prices of a model, for one object size.
struct Prices {
  double local_hold_usd_per_us = 0;   // while local (plus the store's copy if it keeps one)
  double remote_hold_usd_per_us = 0;  // while remote
  double local_read_usd = 0;          // stall only
  double remote_read_usd = 0;         // GET + egress + stall
  double demote_usd = 0;              // PUT, or 0 where the store keeps a copy
  double local_latency_s = 0;
  double remote_latency_s = 0;
};

Prices PricesFor(const TierCostModel& m, int64_t size) {
  const double gib = double(size) / kBytesPerGib;
  const double stall_usd_per_s = m.stall_usd_per_hour / 3600.0;
  Prices p;
  p.remote_hold_usd_per_us = m.remote_usd_per_gib_month * gib / kUsPerMonth;
  p.local_hold_usd_per_us = m.local_usd_per_gib_month * gib / kUsPerMonth;
  if (m.remote_keeps_copy) p.local_hold_usd_per_us += p.remote_hold_usd_per_us;
  p.local_latency_s = m.local_first_byte_s + double(size) / m.local_bytes_per_s;
  p.remote_latency_s = m.remote_first_byte_s + double(size) / m.remote_bytes_per_s;
  p.local_read_usd = stall_usd_per_s * p.local_latency_s;
  p.remote_read_usd =
      m.get_usd_per_request + m.egress_usd_per_gib * gib + stall_usd_per_s * p.remote_latency_s;
  p.demote_usd = m.remote_keeps_copy ? 0.0 : m.put_usd_per_request;
  return p;
}

// Charges one policy's events to a TieringResult.
class Ledger {
 public:
  Ledger(const TierCostModel& model, TieringResult* result) : model_(model), result_(result) {}

  void Hold(bool local, int64_t size, int64_t duration_us) {
    const double gib_months = double(size) / kBytesPerGib * double(duration_us) / kUsPerMonth;
    if (local) result_->local_storage_usd += model_.local_usd_per_gib_month * gib_months;
    if (!local || model_.remote_keeps_copy) {
      result_->remote_storage_usd += model_.remote_usd_per_gib_month * gib_months;
    }
  }
  void Read(bool local, int64_t size) {
    const Prices p = PricesFor(model_, size);
    const double latency_s = local ? p.local_latency_s : p.remote_latency_s;
    latencies_s_.push_back(latency_s);
    result_->stall_usd += model_.stall_usd_per_hour / 3600.0 * latency_s;
    ++result_->reads;
    if (local) return;
    ++result_->remote_reads;
    result_->get_usd += model_.get_usd_per_request;
    result_->egress_usd += model_.egress_usd_per_gib * double(size) / kBytesPerGib;
  }
  void Demote() {
    ++result_->demotions;
    if (!model_.remote_keeps_copy) result_->put_usd += model_.put_usd_per_request;
  }
  // Fills the latency statistics; call once, after the last event.
  void Finish() {
    if (latencies_s_.empty()) return;
    double sum = 0;
    for (double l : latencies_s_) sum += l;
    result_->mean_read_latency_s = sum / double(latencies_s_.size());
    // Nearest rank: the ceil(0.99 n)-th smallest.
    const size_t rank = size_t(std::ceil(0.99 * double(latencies_s_.size())));
    std::nth_element(latencies_s_.begin(), latencies_s_.begin() + (rank - 1), latencies_s_.end());
    result_->p99_read_latency_s = latencies_s_[rank - 1];
  }

 private:
  const TierCostModel& model_;
  TieringResult* result_;
  std::vector<double> latencies_s_;
};

// The trace grouped by object: dense indices, sizes (the largest request size) and the horizon.
struct Objects {
  std::vector<int32_t> index_of_request;  // request -> object
  std::vector<int64_t> size;              // object -> bytes
  int64_t end_us = 0;                     // the trace's last request time
};

absl::StatusOr<Objects> GroupObjects(const std::vector<Request>& trace) {
  Objects o;
  absl::flat_hash_map<uint64_t, int32_t> index;
  o.index_of_request.reserve(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const Request& r = trace[i];
    if (r.size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("request ", i + 1, ": size ", r.size, " (want >= 1)"));
    }
    if (i > 0 && r.time < trace[i - 1].time) {
      return absl::InvalidArgumentError(absl::StrCat("request ", i + 1, ": time ", r.time,
                                                     " goes back from ", trace[i - 1].time,
                                                     " (want non-decreasing times)"));
    }
    auto [it, inserted] = index.try_emplace(r.id, int32_t(o.size.size()));
    if (inserted) o.size.push_back(r.size);
    o.size[it->second] = std::max(o.size[it->second], r.size);
    o.index_of_request.push_back(it->second);
  }
  if (!trace.empty()) o.end_us = trace.back().time;
  return o;
}

// One object's place in an online replay.
struct ObjectState {
  int64_t accesses = 0;
  int64_t last_us = 0;
  bool local = false;
  int64_t demote_at_us = kNever;  // demoted then if not read before
  double gap_mean_us = 0;         // decayed mean inter-access gap; valid when accesses >= 2
};

// Moves `s` from its last access to `now_us`, charging storage and a due demotion.
void Advance(ObjectState* s, int64_t size, int64_t now_us, Ledger* ledger) {
  if (s->local && s->demote_at_us <= now_us) {
    ledger->Hold(true, size, s->demote_at_us - s->last_us);
    ledger->Demote();
    ledger->Hold(false, size, now_us - s->demote_at_us);
    s->local = false;
  } else {
    ledger->Hold(s->local, size, now_us - s->last_us);
  }
  s->demote_at_us = kNever;
}

int64_t AddSaturating(int64_t t_us, double delay_us) {
  if (!(delay_us < double(kNever - t_us))) return kNever;
  return t_us + int64_t(delay_us);
}

// The seed's rule: promote on every read; schedule a demotion when the rule's count and size
// conditions hold, at the moment the idle condition will.
class SeedRule {
 public:
  explicit SeedRule(const SeedRuleOptions& o) : o_(o) {}
  void AfterRead(ObjectState* s, int64_t size, int64_t now_us) {
    s->local = true;
    if (s->accesses < o_.max_accesses && size > o_.min_size_bytes) {
      s->demote_at_us = AddSaturating(now_us, double(o_.idle_us));
    }
  }

 private:
  SeedRuleOptions o_;
};

// Seedance's cost policy (tiering.h): ski rental with a predicted next gap and an estimated
// chance of a next read. For an object of size s, rent is the extra storage rate of keeping it
// local, P the extra cost of a remote read over a local one, b_promote = P / rent and
// b_demote = (demotion + P) / rent.
class CostRule {
 public:
  // Reads are classed by the object's access count, 1 .. kClasses (the last class: that many or
  // more).
  static constexpr int kClasses = 8;

  CostRule(const TierCostModel& m, const CostPolicyOptions& o, size_t objects)
      : m_(m), o_(o), open_(objects, 0), open_start_(objects, 0), open_class_(objects, 0) {}

  // Closes the windows that ended before `now_us` without a next read.
  void ResolveExpired(int64_t now_us) {
    while (!windows_.empty() && windows_.top().end_us < now_us) {
      const Window w = windows_.top();
      windows_.pop();
      if (open_[w.obj] == 0 || w.start_us != open_start_[w.obj]) continue;  // closed already
      open_[w.obj] = 0;
      Close(w, /*back=*/false);
    }
  }

  // Called after `s` was read at `now_us` (s->accesses counts it), `gap_us` after its last read.
  void AfterRead(ObjectState* s, int32_t obj, int64_t size, int64_t now_us, int64_t gap_us) {
    const Prices p = PricesFor(m_, size);
    const double rent = p.local_hold_usd_per_us - p.remote_hold_usd_per_us;
    const double penalty = std::max(p.remote_read_usd - p.local_read_usd, 0.0);
    if (!(rent > 0)) {  // keeping it local is free: always keep it
      s->local = true;
      return;
    }
    const double b_promote_us = penalty / rent;
    const double b_demote_us = (p.demote_usd + penalty) / rent;
    if (s->accesses >= 2) {
      if (open_[obj] != 0) {  // read again within the last read's window
        open_[obj] = 0;
        Close(Window{0, open_start_[obj], b_promote_us, obj, open_class_[obj]}, /*back=*/true);
      }
      s->gap_mean_us = s->accesses == 2
                           ? double(gap_us)
                           : o_.gap_decay * double(gap_us) + (1 - o_.gap_decay) * s->gap_mean_us;
    }
    const int cls = int(std::min<int64_t>(s->accesses, kClasses)) - 1;
    Open(obj, cls, now_us, b_promote_us);
    if (!s->local) {
      // Promote iff the next read is predicted within b_promote (no history: assumed) and the
      // expected saving p * P beats the expected cost of a promotion that is not read again
      // within b_promote (rent until b_demote, then a demotion: 2 demotions + P).
      const double back = BackWithinWindow(cls, now_us);
      s->local = (s->accesses == 1 || s->gap_mean_us < b_promote_us) &&
                 back * penalty > (1 - back) * (2 * p.demote_usd + penalty);
    }
    if (!s->local) return;
    if (s->accesses == 1) {  // no prediction of its own: plain ski rental
      s->demote_at_us = AddSaturating(now_us, b_demote_us);
      return;
    }
    const bool predicted_long = s->gap_mean_us >= b_demote_us;
    s->demote_at_us =
        AddSaturating(now_us, predicted_long ? o_.trust * b_demote_us : b_demote_us / o_.trust);
  }

 private:
  // A read's window [start, start + length] (length b_promote): a next read of the object
  // inside it counts as back for the read's class.
  struct Window {
    int64_t end_us;
    int64_t start_us;
    double length_us;
    int32_t obj;
    int cls;
    bool operator>(const Window& o) const { return end_us > o.end_us; }
  };
  struct ClassCounts {
    int64_t back = 0;
    int64_t not_back = 0;
    double rate_sum = 0;        // sum over open windows of 1 / length
    double start_rate_sum = 0;  // sum over open windows of start / length
  };

  void Open(int32_t obj, int cls, int64_t now_us, double length_us) {
    if (!std::isfinite(length_us) || !(length_us > 0)) {
      ++counts_[cls].not_back;  // a window of length 0 closes at once
      return;
    }
    windows_.push(Window{AddSaturating(now_us, length_us), now_us, length_us, obj, cls});
    open_[obj] = 1;
    open_start_[obj] = now_us;
    open_class_[obj] = cls;
    counts_[cls].rate_sum += 1 / length_us;
    counts_[cls].start_rate_sum += double(now_us) / length_us;
  }
  void Close(const Window& w, bool back) {
    ClassCounts& c = counts_[w.cls];
    c.rate_sum -= 1 / w.length_us;
    c.start_rate_sum -= double(w.start_us) / w.length_us;
    ++(back ? c.back : c.not_back);
  }

  // The fraction of reads of class `cls` read again within their window: an actuarial estimate,
  // in which a window still open counts as observed in the fraction of it that has passed. Its
  // prior (2 pseudo-reads) is the same estimate over all classes, whose own prior is 1/2
  // (Laplace): a class with few reads borrows from the others.
  double BackWithinWindow(int cls, int64_t now_us) const {
    double back = 0, seen = 0;
    double class_back = 0, class_seen = 0;
    for (int k = 0; k < kClasses; ++k) {
      const ClassCounts& c = counts_[k];
      const double partial = std::max(0.0, double(now_us) * c.rate_sum - c.start_rate_sum);
      back += double(c.back);
      seen += double(c.back + c.not_back) + partial;
      if (k == cls) {
        class_back = double(c.back);
        class_seen = double(c.back + c.not_back) + partial;
      }
    }
    const double pooled = (back + 1) / (seen + 2);
    return (class_back + 2 * pooled) / (class_seen + 2);
  }

  TierCostModel m_;
  CostPolicyOptions o_;
  std::vector<uint8_t> open_;        // object -> its last read's window is open
  std::vector<int64_t> open_start_;  // object -> that window's start
  std::vector<int> open_class_;      // object -> that read's class
  ClassCounts counts_[kClasses];
  std::priority_queue<Window, std::vector<Window>, std::greater<>> windows_;
};

void ReplayOnline(const std::vector<Request>& trace, const Objects& objects, TierPolicyKind kind,
                  const TierCostModel& model, const SeedRuleOptions& seed_options,
                  const CostPolicyOptions& cost_options, Ledger* ledger) {
  std::vector<ObjectState> states(objects.size.size());
  SeedRule seed(seed_options);
  CostRule cost(model, cost_options, objects.size.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const int64_t now_us = trace[i].time;
    const int32_t obj = objects.index_of_request[i];
    const int64_t size = objects.size[obj];
    ObjectState& s = states[obj];
    if (kind == TierPolicyKind::kCostPolicy) cost.ResolveExpired(now_us);
    const int64_t gap_us = s.accesses == 0 ? 0 : now_us - s.last_us;
    if (s.accesses > 0) Advance(&s, size, now_us, ledger);
    ledger->Read(s.local, size);
    ++s.accesses;
    if (kind == TierPolicyKind::kSeedRule) {
      seed.AfterRead(&s, size, now_us);
    } else {
      cost.AfterRead(&s, obj, size, now_us, gap_us);
    }
    s.last_us = now_us;
  }
  for (size_t obj = 0; obj < states.size(); ++obj) {
    Advance(&states[obj], objects.size[obj], objects.end_us, ledger);
  }
}

// How the optimum spends the gap before an access (or the tail after the last one).
enum class Gap : uint8_t { kStayLocal, kDemote, kStayRemote };

// The exact optimum for one object read at `times_us` (non-decreasing), alive until `end_us`.
// States after a read: local (0) or remote (1). Within a gap the cost of demoting at time d is
// linear in d, so only d = gap start or no demotion can be optimal; promotion happens only on a
// read. Returns the choice for the gap after each read (the last one is the tail).
void SolveObject(const std::vector<int64_t>& times_us, int64_t end_us, const Prices& p,
                 std::vector<Gap>* gaps) {
  const size_t n = times_us.size();
  // from[i][s]: how the gap before read i was spent on the best path ending in state s after it.
  std::vector<std::pair<Gap, Gap>> from(n);
  double cost_local = p.remote_read_usd, cost_remote = p.remote_read_usd;
  auto gap_costs = [&](int64_t gap_us, double* stay_local, double* via_remote, Gap* via) {
    *stay_local = cost_local + p.local_hold_usd_per_us * double(gap_us);
    const double demote = cost_local + p.demote_usd;
    *via = demote < cost_remote ? Gap::kDemote : Gap::kStayRemote;
    *via_remote = std::min(demote, cost_remote) + p.remote_hold_usd_per_us * double(gap_us);
  };
  for (size_t i = 1; i < n; ++i) {
    double stay_local, via_remote;
    Gap via;
    gap_costs(times_us[i] - times_us[i - 1], &stay_local, &via_remote, &via);
    const double local_read = stay_local + p.local_read_usd;
    const double remote_read = via_remote + p.remote_read_usd;
    from[i].second = via;
    cost_remote = remote_read;
    if (local_read <= remote_read) {
      from[i].first = Gap::kStayLocal;
      cost_local = local_read;
    } else {
      from[i].first = via;
      cost_local = remote_read;
    }
  }
  double stay_local, via_remote;
  Gap via;
  gap_costs(end_us - times_us[n - 1], &stay_local, &via_remote, &via);
  gaps->assign(n, Gap::kStayLocal);
  // Backtrack: the tail's choice fixes the state after the last read, and so on backwards.
  uint8_t state = 0;
  if (stay_local <= via_remote) {
    (*gaps)[n - 1] = Gap::kStayLocal;
  } else {
    (*gaps)[n - 1] = via;
    state = via == Gap::kDemote ? 0 : 1;
  }
  for (size_t i = n - 1; i > 0; --i) {
    const Gap g = state == 0 ? from[i].first : from[i].second;
    (*gaps)[i - 1] = g;
    state = g == Gap::kStayRemote ? 1 : 0;
  }
}

void ReplayOptimum(const std::vector<Request>& trace, const Objects& objects,
                   const TierCostModel& model, Ledger* ledger) {
  const size_t n_objects = objects.size.size();
  std::vector<std::vector<int64_t>> times(n_objects);
  for (size_t i = 0; i < trace.size(); ++i) {
    times[objects.index_of_request[i]].push_back(trace[i].time);
  }
  std::vector<Gap> gaps;
  for (size_t obj = 0; obj < n_objects; ++obj) {
    const int64_t size = objects.size[obj];
    const std::vector<int64_t>& t = times[obj];
    SolveObject(t, objects.end_us, PricesFor(model, size), &gaps);
    // gaps[i] is spent after read i, up to read i + 1 or the end.
    ledger->Read(false, size);
    for (size_t i = 0; i < t.size(); ++i) {
      const int64_t until_us = i + 1 < t.size() ? t[i + 1] : objects.end_us;
      const bool local = gaps[i] == Gap::kStayLocal;
      if (gaps[i] == Gap::kDemote) ledger->Demote();
      ledger->Hold(local, size, until_us - t[i]);
      if (i + 1 < t.size()) ledger->Read(local, size);
    }
  }
}

}  // namespace

std::string_view TierPolicyName(TierPolicyKind kind) {
  switch (kind) {
    case TierPolicyKind::kSeedRule:
      return "seed-rule";
    case TierPolicyKind::kCostPolicy:
      return "cost-policy";
    case TierPolicyKind::kOptimum:
      return "optimum";
  }
  return "unknown";
}

absl::Status ValidateTierCostModel(const TierCostModel& m) {
  const std::pair<const char*, double> non_negative[] = {
      {"local_usd_per_gib_month", m.local_usd_per_gib_month},
      {"remote_usd_per_gib_month", m.remote_usd_per_gib_month},
      {"get_usd_per_request", m.get_usd_per_request},
      {"put_usd_per_request", m.put_usd_per_request},
      {"egress_usd_per_gib", m.egress_usd_per_gib},
      {"local_first_byte_s", m.local_first_byte_s},
      {"remote_first_byte_s", m.remote_first_byte_s},
      {"stall_usd_per_hour", m.stall_usd_per_hour}};
  for (const auto& [name, value] : non_negative) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tier cost model: ", name, " = ", value, " (want a finite value >= 0)"));
    }
  }
  const std::pair<const char*, double> positive[] = {{"local_bytes_per_s", m.local_bytes_per_s},
                                                     {"remote_bytes_per_s", m.remote_bytes_per_s}};
  for (const auto& [name, value] : positive) {
    if (!(value > 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tier cost model: ", name, " = ", value, " (want a finite value > 0)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TieringResult> SimulateTiering(const std::vector<Request>& trace,
                                              TierPolicyKind kind, const TierCostModel& model,
                                              const SeedRuleOptions& seed,
                                              const CostPolicyOptions& cost) {
  if (absl::Status s = ValidateTierCostModel(model); !s.ok()) return s;
  if (kind == TierPolicyKind::kSeedRule && (seed.idle_us < 0 || seed.min_size_bytes < 0)) {
    return absl::InvalidArgumentError("seed rule: idle_us and min_size_bytes must be >= 0");
  }
  if (kind == TierPolicyKind::kCostPolicy &&
      (!(cost.trust > 0 && cost.trust <= 1) || !(cost.gap_decay > 0 && cost.gap_decay <= 1))) {
    return absl::InvalidArgumentError(absl::StrCat("cost policy: trust = ", cost.trust,
                                                   ", gap_decay = ", cost.gap_decay,
                                                   " (want both in (0, 1])"));
  }
  absl::StatusOr<Objects> objects = GroupObjects(trace);
  if (!objects.ok()) return objects.status();
  TieringResult result;
  result.policy = std::string(TierPolicyName(kind));
  result.objects = int64_t(objects->size.size());
  Ledger ledger(model, &result);
  if (kind == TierPolicyKind::kOptimum) {
    ReplayOptimum(trace, *objects, model, &ledger);
  } else {
    ReplayOnline(trace, *objects, kind, model, seed, cost, &ledger);
  }
  ledger.Finish();
  return result;
}

}  // namespace seedance::cache
