// GPU memory defragmentation (seed B 2.2): one GPU's memory as an address range that slices
// occupy contiguously, how fragmented its free memory is for the workload's typical slice
// sizes, and the few slice moves (done when a slice restarts or checkpoints) that make the
// largest allocatable slice whole again (docs/elastic.md, "Defragmentation").
//
//   fragmentation ratio = (whole - usable) / whole: of the free memory that slices of the
//     typical sizes could fill if it were one hole (whole), the share they cannot fill as it
//     lies, hole by hole (usable; an unbounded knapsack per hole). 0: contiguous enough; 1: no
//     typical slice fits anywhere though one would fit in the free memory. 0 when no typical
//     size fits in the free memory at all (a sliver no compaction can make useful).
//   largest allocatable slice = the largest typical size not above the free memory: what the
//     device could take if its free memory were one hole.
//   PlanCompaction: up to max_moves relocations of movable slices within the device, found by a
//     beam search over (slice, destination) moves, that make the largest hole hold that slice;
//     among plans that do, the fewest moves, then the fewest MiB moved.
//
// Thread-safety: values; no shared state.
#ifndef SEEDANCE_ELASTIC_DEFRAG_H_
#define SEEDANCE_ELASTIC_DEFRAG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::elastic {

struct MemSlice {
  int64_t id = 0;
  int64_t offset_mib = 0;
  int64_t size_mib = 0;
  bool movable = true;  // false: pinned (a job that cannot checkpoint)
};

struct Hole {
  int64_t offset_mib = 0;
  int64_t size_mib = 0;
};

class DeviceMemory {
 public:
  explicit DeviceMemory(int64_t capacity_mib);

  // First fit: the slice at the lowest offset where `size_mib` fits; nullopt when no hole is
  // large enough (the memory may still be free in total: that is fragmentation).
  // REQUIRES: size_mib > 0, id not present.
  std::optional<int64_t> Allocate(int64_t id, int64_t size_mib, bool movable = true);
  // False when `id` is not here.
  bool Free(int64_t id);
  // Moves slice `id` to `offset_mib`. FailedPrecondition when the slice is pinned or the range
  // is not free (its own current range counts as free); NotFound for an unknown id.
  absl::Status Move(int64_t id, int64_t offset_mib);

  std::vector<Hole> Holes() const;  // in offset order
  int64_t capacity_mib() const { return capacity_mib_; }
  int64_t free_mib() const { return free_mib_; }
  int64_t largest_hole_mib() const;
  const std::map<int64_t, MemSlice>& slices() const { return by_offset_; }  // by offset
  const MemSlice* Find(int64_t id) const;
  // Bumped by every Allocate, Free and Move: whether the layout changed since it was last read.
  int64_t version() const { return version_; }

 private:
  int64_t capacity_mib_;
  int64_t free_mib_;
  std::map<int64_t, MemSlice> by_offset_;
  std::map<int64_t, int64_t> offset_of_;  // id -> offset
  int64_t version_ = 0;
};

// The workload's typical slice sizes, with the table of what they can fill: Usable(h) is the
// most of a hole of h MiB that slices of these sizes can fill (an unbounded knapsack, solved once
// for every h up to the capacity, so each hole costs O(1)).
class TypicalSizes {
 public:
  // InvalidArgument for no sizes, a size <= 0 or above the capacity, or a capacity outside
  // [1, 2^22] MiB (4 TiB).
  static absl::StatusOr<TypicalSizes> Create(std::vector<int64_t> sizes_mib, int64_t capacity_mib);
  int64_t Usable(int64_t hole_mib) const;
  // The largest typical size <= mib (0 when none is).
  int64_t LargestAtMost(int64_t mib) const;
  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  TypicalSizes() = default;
  std::vector<int64_t> sizes_;   // ascending, distinct
  std::vector<int32_t> usable_;  // usable_[h] for h in [0, capacity]
};

// The fragmentation ratio above.
double FragmentationRatio(const DeviceMemory& device, const TypicalSizes& typical);
// The largest typical size not above the device's free memory (0 when none is).
int64_t LargestAllocatable(const DeviceMemory& device, const TypicalSizes& typical);

struct SliceMove {
  int64_t id = 0;
  int64_t from_mib = 0, to_mib = 0;
  int64_t size_mib = 0;
};

struct CompactionPlan {
  std::vector<SliceMove> moves;  // in order; apply each with DeviceMemory::Move
  int64_t target_mib = 0;        // LargestAllocatable
  int64_t largest_before_mib = 0, largest_after_mib = 0;
  double ratio_before = 0, ratio_after = 0;
  bool restored = false;  // largest_after_mib >= target_mib
};

// The plan above; no moves when the largest hole already holds the target. When no plan within
// max_moves restores it, the plan that makes the largest hole largest (possibly none).
CompactionPlan PlanCompaction(const DeviceMemory& device, const TypicalSizes& typical,
                              int max_moves = 3);

// ---- churn: slices arriving and leaving over a fleet of devices ----

struct SliceRequest {
  int64_t arrive_s = 0;
  int64_t depart_s = -1;  // -1: never
  int64_t size_mib = 0;
  bool movable = true;
};

struct DefragChurnOptions {
  int devices = 0;               // GPUs in the fleet (> 0)
  int64_t capacity_mib = 81920;  // memory of each
  int64_t checkpoint_s = 600;    // how often slices reach a checkpoint (a move may happen then)
  double threshold = 0.35;       // devices above this fragmentation ratio are compacted
  int max_moves = 3;
  bool compact = true;        // false: measure only (the baseline)
  int64_t report_from_s = 0;  // checkpoints before this are run but not counted
};

struct DefragChurnReport {
  int64_t requests = 0, placed = 0;
  int64_t refused = 0;             // no device had a hole for it
  int64_t refused_fragmented = 0;  // ... while some device had enough free memory in all
  int64_t checks_above = 0;        // device checkpoints above the threshold
  int64_t checks_restored = 0;     // of those, restored within max_moves
  // Of the others, those no number of moves could restore: a pinned slice splits the free memory.
  int64_t checks_pinned_bound = 0;
  int64_t moves = 0;                   // moves applied (compact) or planned (not)
  int64_t recovered_mib = 0;           // largest hole after - before, summed over those checks
  std::vector<int> moves_per_restore;  // per restored check
};

// Replays `requests` (sorted or not) over the fleet: first device with a hole, first fit in it;
// at every checkpoint each device above the threshold gets PlanCompaction, applied when
// options.compact. InvalidArgument naming the field for bad options or a request larger than a
// device.
absl::StatusOr<DefragChurnReport> RunDefragChurn(const DefragChurnOptions& options,
                                                 const TypicalSizes& typical,
                                                 std::vector<SliceRequest> requests);

}  // namespace seedance::elastic

#endif  // SEEDANCE_ELASTIC_DEFRAG_H_
