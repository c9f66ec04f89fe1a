#include "seedance/elastic/defrag.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

namespace seedance::elastic {

DeviceMemory::DeviceMemory(int64_t capacity_mib)
    : capacity_mib_(capacity_mib), free_mib_(capacity_mib) {
  SEEDANCE_CHECK(capacity_mib > 0) << "device memory of " << capacity_mib << " MiB";
}

std::vector<Hole> DeviceMemory::Holes() const {
  std::vector<Hole> holes;
  int64_t at = 0;
  for (const auto& [offset, s] : by_offset_) {
    if (offset > at) holes.push_back({at, offset - at});
    at = offset + s.size_mib;
  }
  if (capacity_mib_ > at) holes.push_back({at, capacity_mib_ - at});
  return holes;
}

int64_t DeviceMemory::largest_hole_mib() const {
  int64_t best = 0;
  for (const Hole& h : Holes()) best = std::max(best, h.size_mib);
  return best;
}

std::optional<int64_t> DeviceMemory::Allocate(int64_t id, int64_t size_mib, bool movable) {
  SEEDANCE_CHECK(size_mib > 0 && !offset_of_.contains(id))
      << "allocate slice " << id << " of " << size_mib << " MiB";
  for (const Hole& h : Holes()) {
    if (h.size_mib < size_mib) continue;
    by_offset_[h.offset_mib] = {id, h.offset_mib, size_mib, movable};
    offset_of_[id] = h.offset_mib;
    free_mib_ -= size_mib;
    ++version_;
    return h.offset_mib;
  }
  return std::nullopt;
}

bool DeviceMemory::Free(int64_t id) {
  auto it = offset_of_.find(id);
  if (it == offset_of_.end()) return false;
  free_mib_ += by_offset_.at(it->second).size_mib;
  by_offset_.erase(it->second);
  offset_of_.erase(it);
  ++version_;
  return true;
}

const MemSlice* DeviceMemory::Find(int64_t id) const {
  auto it = offset_of_.find(id);
  return it == offset_of_.end() ? nullptr : &by_offset_.at(it->second);
}

absl::Status DeviceMemory::Move(int64_t id, int64_t offset_mib) {
  auto it = offset_of_.find(id);
  if (it == offset_of_.end()) return absl::NotFoundError(absl::StrCat("no slice ", id));
  const MemSlice s = by_offset_.at(it->second);
  if (!s.movable) return absl::FailedPreconditionError(absl::StrCat("slice ", id, " is pinned"));
  if (offset_mib < 0 || offset_mib + s.size_mib > capacity_mib_) {
    return absl::FailedPreconditionError(absl::StrCat("offset ", offset_mib, " is outside"));
  }
  by_offset_.erase(s.offset_mib);
  auto next = by_offset_.lower_bound(offset_mib);
  const bool clear_after = next == by_offset_.end() || next->first >= offset_mib + s.size_mib;
  const bool clear_before = next == by_offset_.begin() ||
                            std::prev(next)->first + std::prev(next)->second.size_mib <= offset_mib;
  if (!clear_after || !clear_before) {
    by_offset_[s.offset_mib] = s;
    return absl::FailedPreconditionError(
        absl::StrCat("slice ", id, " does not fit at ", offset_mib));
  }
  MemSlice moved = s;
  moved.offset_mib = offset_mib;
  by_offset_[offset_mib] = moved;
  it->second = offset_mib;
  ++version_;
  return absl::OkStatus();
}

absl::StatusOr<TypicalSizes> TypicalSizes::Create(std::vector<int64_t> sizes_mib,
                                                  int64_t capacity_mib) {
  if (capacity_mib < 1 || capacity_mib > (int64_t{1} << 22)) {
    return absl::InvalidArgumentError(
        absl::StrCat("typical sizes: capacity ", capacity_mib, " MiB is outside [1, 2^22]"));
  }
  if (sizes_mib.empty()) return absl::InvalidArgumentError("typical sizes: none given");
  for (int64_t s : sizes_mib) {
    if (s <= 0 || s > capacity_mib) {
      return absl::InvalidArgumentError(
          absl::StrCat("typical sizes: ", s, " MiB is outside [1, ", capacity_mib, "]"));
    }
  }
  std::sort(sizes_mib.begin(), sizes_mib.end());
  sizes_mib.erase(std::unique(sizes_mib.begin(), sizes_mib.end()), sizes_mib.end());
  TypicalSizes t;
  t.sizes_ = std::move(sizes_mib);
  // reach[h]: h MiB can be filled exactly; usable_[h]: the largest reachable value <= h.
  std::vector<char> reach(static_cast<size_t>(capacity_mib) + 1, 0);
  reach[0] = 1;
  for (int64_t h = 1; h <= capacity_mib; ++h) {
    for (int64_t s : t.sizes_) {
      if (s > h) break;
      if (reach[h - s]) {
        reach[h] = 1;
        break;
      }
    }
  }
  t.usable_.resize(reach.size());
  for (size_t h = 0; h < reach.size(); ++h) {
    t.usable_[h] = reach[h] ? static_cast<int32_t>(h) : (h > 0 ? t.usable_[h - 1] : 0);
  }
  return t;
}

int64_t TypicalSizes::Usable(int64_t hole_mib) const {
  if (hole_mib <= 0) return 0;
  return usable_[std::min<size_t>(static_cast<size_t>(hole_mib), usable_.size() - 1)];
}

int64_t TypicalSizes::LargestAtMost(int64_t mib) const {
  auto it = std::upper_bound(sizes_.begin(), sizes_.end(), mib);
  return it == sizes_.begin() ? 0 : *std::prev(it);
}

double FragmentationRatio(const DeviceMemory& device, const TypicalSizes& typical) {
  const int64_t whole = typical.Usable(device.free_mib());
  if (whole <= 0) return 0;
  int64_t usable = 0;
  for (const Hole& h : device.Holes()) usable += typical.Usable(h.size_mib);
  return static_cast<double>(whole - usable) / static_cast<double>(whole);
}

int64_t LargestAllocatable(const DeviceMemory& device, const TypicalSizes& typical) {
  return typical.LargestAtMost(device.free_mib());
}

namespace {

struct Candidate {
  DeviceMemory device;
  std::vector<SliceMove> moves;
  int64_t moved_mib = 0;
  int64_t largest = 0;
};

// Better: a larger largest hole, then fewer MiB moved.
bool Better(const Candidate& a, const Candidate& b) {
  return std::tie(a.largest, b.moved_mib) > std::tie(b.largest, a.moved_mib);
}

// Every single move from `c`: each movable slice to the start or the end of each hole of the
// memory without it (which includes sliding it within its own hole).
std::vector<Candidate> Expand(const Candidate& c) {
  std::vector<Candidate> out;
  for (const auto& [offset, s] : c.device.slices()) {
    if (!s.movable) continue;
    DeviceMemory without = c.device;
    without.Free(s.id);
    for (const Hole& h : without.Holes()) {
      if (h.size_mib < s.size_mib) continue;
      for (int64_t to : {h.offset_mib, h.offset_mib + h.size_mib - s.size_mib}) {
        if (to == offset) continue;
        Candidate next{c.device, c.moves, c.moved_mib + s.size_mib, 0};
        if (!next.device.Move(s.id, to).ok()) continue;
        next.moves.push_back({s.id, offset, to, s.size_mib});
        next.largest = next.device.largest_hole_mib();
        out.push_back(std::move(next));
      }
    }
  }
  return out;
}

}  // namespace

CompactionPlan PlanCompaction(const DeviceMemory& device, const TypicalSizes& typical,
                              int max_moves) {
  constexpr size_t kBeam = 12;
  CompactionPlan plan;
  plan.target_mib = LargestAllocatable(device, typical);
  plan.largest_before_mib = device.largest_hole_mib();
  plan.ratio_before = FragmentationRatio(device, typical);
  Candidate best{device, {}, 0, plan.largest_before_mib};
  std::vector<Candidate> beam = {best};
  for (int depth = 0; depth < max_moves && best.largest < plan.target_mib; ++depth) {
    std::vector<Candidate> next;
    for (const Candidate& c : beam) {
      std::vector<Candidate> more = Expand(c);
      std::move(more.begin(), more.end(), std::back_inserter(next));
    }
    if (next.empty()) break;
    // Restored at this depth (the fewest moves): the one that moves the fewest MiB.
    const Candidate* done = nullptr;
    for (const Candidate& c : next) {
      if (c.largest >= plan.target_mib && (done == nullptr || c.moved_mib < done->moved_mib)) {
        done = &c;
      }
    }
    if (done != nullptr) {
      best = *done;
      break;
    }
    std::sort(next.begin(), next.end(), Better);
    if (next.size() > kBeam) next.erase(next.begin() + kBeam, next.end());
    if (Better(next.front(), best)) best = next.front();
    beam = std::move(next);
  }
  plan.moves = best.moves;
  plan.largest_after_mib = best.largest;
  plan.ratio_after = FragmentationRatio(best.device, typical);
  plan.restored = plan.largest_after_mib >= plan.target_mib;
  return plan;
}

}  // namespace seedance::elastic
