#include "seedance/cache/policy.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "policy_base.h"
#include "seedance/base/check.h"
#include "seedance/trace/input_error.h"
#include "seedance_policy.h"

namespace seedance::cache {
namespace internal {

bool PolicyBase::Access(const Request& req) {
  SEEDANCE_CHECK(req.size >= 1) << "request for object " << req.id << " has size " << req.size
                                << ": a cached object has size >= 1";
  bool hit = Find(req);
  if (!hit && CanInsert(req)) {
    while (occupied() + req.size > capacity_) Evict(req);
    Insert(req);
  }
  AfterAccess();
  return hit;
}

}  // namespace internal

namespace {

using Factory = std::unique_ptr<Policy> (*)(int64_t);

struct Entry {
  std::string_view name;
  std::string_view alias;
  Factory factory;
};

constexpr std::array<Entry, 17> kPolicies = {{
    {"lru", "lru", internal::NewLru},
    {"fifo", "fifo", internal::NewFifo},
    {"clock", "fifo-reinsertion", internal::NewClock},
    {"sieve", "sieve", internal::NewSieve},
    {"s3fifo", "s3-fifo", internal::NewS3Fifo},
    {"arc", "arc", internal::NewArc},
    {"lirs", "lirs", internal::NewLirs},
    {"2q", "twoq", internal::NewTwoQ},
    {"slru", "slru", internal::NewSlru},
    {"lru2", "lru-k", internal::NewLruK},
    {"tinylfu", "tinylfu", internal::NewTinyLfu},
    {"wtinylfu", "w-tinylfu", internal::NewWTinyLfu},
    {"belady", "optimal", internal::NewBelady},
    {"caffeine-arc", "caffeine-arc", internal::NewCaffeineArc},
    {"caffeine-lirs", "caffeine-lirs", internal::NewCaffeineLirs},
    {"caffeine-wtinylfu", "caffeine-w-tinylfu", internal::NewCaffeineWTinyLfu},
    {"seedance", "seedance", internal::NewSeedance},
}};

}  // namespace

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>;
    for (const Entry& e : kPolicies) v->emplace_back(e.name);
    return v;
  }();
  return *names;
}

absl::StatusOr<std::unique_ptr<Policy>> NewPolicy(std::string_view name, int64_t capacity) {
  if (capacity < 1) {
    return absl::InvalidArgumentError(absl::StrCat("cache capacity ", capacity, " for policy '",
                                                   trace::QuoteValue(name), "': must be >= 1"));
  }
  const std::string lower = absl::AsciiStrToLower(trace::AbslView(name));
  for (const Entry& e : kPolicies) {
    if (lower == e.name || lower == e.alias) return e.factory(capacity);
  }
  std::string known;
  for (const Entry& e : kPolicies)
    absl::StrAppend(&known, known.empty() ? "" : ", ", trace::AbslView(e.name));
  return absl::InvalidArgumentError(absl::StrCat("unknown cache policy '", trace::QuoteValue(name),
                                                 "'; expected one of ", known));
}

absl::StatusOr<SimulationRow> Simulate(const std::vector<Request>& trace, std::string_view policy,
                                       int64_t capacity, CacheUnit unit) {
  absl::StatusOr<std::unique_ptr<Policy>> p = NewPolicy(policy, capacity);
  if (!p.ok()) return p.status();
  const std::vector<Request>* input = &trace;
  std::vector<Request> with_next;
  const bool needs_next =
      (*p)->name() == "belady" && std::any_of(trace.begin(), trace.end(), [](const Request& r) {
        return r.next_access_vtime == kUnknownNextAccess;
      });
  if (needs_next) {
    with_next = trace;
    ComputeNextAccess(&with_next);
    input = &with_next;
  }
  SimulationRow row{.policy = std::string((*p)->name()), .size = capacity};
  Request r;
  for (const Request& req : *input) {
    r = req;
    if (unit == CacheUnit::kObjects) {
      r.size = 1;
    } else if (r.size == 0) {
      continue;
    }
    ++row.requests;
    if (!(*p)->Access(r)) ++row.misses;
  }
  return row;
}

absl::StatusOr<std::string> SimulateJson(const std::vector<Request>& trace,
                                         const std::vector<std::string>& policies,
                                         const std::vector<int64_t>& capacities, CacheUnit unit) {
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& policy : policies) {
    for (int64_t capacity : capacities) {
      absl::StatusOr<SimulationRow> row = Simulate(trace, policy, capacity, unit);
      if (!row.ok()) return row.status();
      rows.push_back({{"policy", row->policy},
                      {"size", row->size},
                      {"requests", row->requests},
                      {"misses", row->misses},
                      {"miss_ratio", row->miss_ratio()}});
    }
  }
  return rows.dump();
}

}  // namespace seedance::cache
