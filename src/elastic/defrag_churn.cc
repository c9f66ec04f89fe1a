// RunDefragChurn (defrag.h): slices arriving and leaving over a fleet, compacted at checkpoints.
#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/elastic/defrag.h"

namespace seedance::elastic {

namespace {

absl::Status CheckOptions(const DefragChurnOptions& o) {
  auto bad = [](const char* field, const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("defrag churn: ", field, ": ", why));
  };
  if (o.devices < 1 || o.devices > 1'000'000) return bad("devices", "must be in [1, 1000000]");
  if (o.capacity_mib < 1) return bad("capacity_mib", "must be at least 1");
  if (o.checkpoint_s < 1) return bad("checkpoint_s", "must be at least 1");
  if (!(o.threshold >= 0 && o.threshold < 1)) return bad("threshold", "must be in [0, 1)");
  if (o.max_moves < 0 || o.max_moves > 8) return bad("max_moves", "must be in [0, 8]");
  return absl::OkStatus();
}

// Whether any number of moves could make a hole of `target`: the pinned slices stay, so the
// best is each stretch between them (and the ends) compacted, its free memory in one hole.
bool Restorable(const DeviceMemory& d, int64_t target) {
  int64_t start = 0, used = 0, best = 0;
  for (const auto& [offset, s] : d.slices()) {
    if (s.movable) {
      used += s.size_mib;
      continue;
    }
    best = std::max(best, offset - start - used);
    start = offset + s.size_mib;
    used = 0;
  }
  best = std::max(best, d.capacity_mib() - start - used);
  return best >= target;
}

class Fleet {
 public:
  Fleet(const DefragChurnOptions& o, const TypicalSizes& t)
      : o_(o),
        typical_(t),
        devices_(o.devices, DeviceMemory(o.capacity_mib)),
        checked_(o.devices, -1) {}

  void Place(int64_t id, const SliceRequest& r, DefragChurnReport* rep) {
    ++rep->requests;
    bool enough_free = false;
    for (size_t d = 0; d < devices_.size(); ++d) {
      enough_free = enough_free || devices_[d].free_mib() >= r.size_mib;
      if (devices_[d].largest_hole_mib() < r.size_mib) continue;
      devices_[d].Allocate(id, r.size_mib, r.movable);
      where_[id] = d;
      ++rep->placed;
      return;
    }
    ++rep->refused;
    if (enough_free) ++rep->refused_fragmented;
  }

  void Leave(int64_t id) {
    if (auto it = where_.find(id); it != where_.end()) {
      devices_[it->second].Free(id);
      where_.erase(it);
    }
  }

  void Checkpoint(bool counted, DefragChurnReport* rep) {
    for (size_t i = 0; i < devices_.size(); ++i) {
      DeviceMemory& d = devices_[i];
      if (d.version() == checked_[i]) continue;  // unchanged since its last checkpoint
      checked_[i] = d.version();
      if (FragmentationRatio(d, typical_) <= o_.threshold) continue;
      const CompactionPlan p = PlanCompaction(d, typical_, o_.max_moves);
      if (o_.compact) {
        for (const SliceMove& m : p.moves) (void)d.Move(m.id, m.to_mib);
        checked_[i] = d.version();
      }
      if (!counted) continue;
      ++rep->checks_above;
      rep->moves += static_cast<int64_t>(p.moves.size());
      rep->recovered_mib += p.largest_after_mib - p.largest_before_mib;
      if (!p.restored && !Restorable(d, p.target_mib)) ++rep->checks_pinned_bound;
      if (p.restored) {
        ++rep->checks_restored;
        rep->moves_per_restore.push_back(static_cast<int>(p.moves.size()));
      }
    }
  }

 private:
  const DefragChurnOptions& o_;
  const TypicalSizes& typical_;
  std::vector<DeviceMemory> devices_;
  std::vector<int64_t> checked_;  // each device's version at its last checkpoint
  std::map<int64_t, size_t> where_;
};

}  // namespace

absl::StatusOr<DefragChurnReport> RunDefragChurn(const DefragChurnOptions& options,
                                                 const TypicalSizes& typical,
                                                 std::vector<SliceRequest> requests) {
  if (absl::Status st = CheckOptions(options); !st.ok()) return st;
  // (time, 0 = leave / 1 = arrive, request index): a leaving slice frees its memory first.
  std::vector<std::tuple<int64_t, int, int64_t>> events;
  for (size_t i = 0; i < requests.size(); ++i) {
    const SliceRequest& r = requests[i];
    if (r.size_mib < 1 || r.size_mib > options.capacity_mib) {
      return absl::InvalidArgumentError(absl::StrCat("defrag churn: request ", i, ": size ",
                                                     r.size_mib, " MiB outside [1, ",
                                                     options.capacity_mib, "]"));
    }
    events.emplace_back(r.arrive_s, 1, static_cast<int64_t>(i));
    if (r.depart_s >= r.arrive_s) events.emplace_back(r.depart_s, 0, static_cast<int64_t>(i));
  }
  std::sort(events.begin(), events.end());
  DefragChurnReport rep;
  Fleet fleet(options, typical);
  int64_t next_checkpoint = events.empty() ? 0 : std::get<0>(events.front());
  for (const auto& [t, kind, i] : events) {
    while (next_checkpoint <= t) {
      fleet.Checkpoint(next_checkpoint >= options.report_from_s, &rep);
      next_checkpoint += options.checkpoint_s;
    }
    if (kind == 0) {
      fleet.Leave(i);
    } else {
      fleet.Place(i, requests[static_cast<size_t>(i)], &rep);
    }
  }
  return rep;
}

}  // namespace seedance::elastic
