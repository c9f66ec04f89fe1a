// Paged KV-cache block manager (PagedAttention, Kwon et al., SOSP'23; prefix caching as in vLLM
// v1).
//
// GPU KV memory is a pool of fixed-size blocks of `block_size` token slots. Each sequence owns a
// block table (logical block i -> physical block), so a sequence spans non-contiguous blocks and
// wastes at most block_size - 1 slots. Blocks carry reference counts: sequences forked from one
// another, or that share a cached prompt prefix, point at the same physical blocks; writing into a
// shared, partially filled block first copies it (copy-on-write).
//
// Prefix cache: a full block may be registered under a chain hash h_i = ChainHash(h_{i-1}, key_i)
// of the content keys of blocks 0..i, so equal hashes mean equal prefixes. When its last reference
// goes, a registered block is not returned to the free list but parked in an LRU list of cached
// free blocks, where a later sequence with the same prefix can pick it up (MatchPrefix +
// AttachPrefix). Allocation takes never-registered free blocks first and evicts the least recently
// released cached block only when none is left. With `unbounded_prefix_cache`, cached blocks do not
// count against `num_blocks` and are never evicted (an idealised cache of unlimited size, used to
// reproduce a trace's own infinite-cache hit ratio).
//
// Complexity: every operation is O(1) per block touched (free list, intrusive LRU list, hash map),
// and O(1) to look up the block of a token.
// Invariants: every build checks, with SEEDANCE_CHECK (process abort, a bug), that operations
// name live sequences (no double free), that a released block's ref count is positive, that a
// block taken from the free or LRU list is unreferenced, and whenever a block is allocated or
// becomes unreferenced that referenced + free + cached blocks make up the pool (each check a
// compare and a branch; the report is out of line). CheckInvariants() audits everything in O(n).
// Thread-safety: none; one scheduler owns one manager.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace seedance::serving {

using BlockId = int32_t;
using KvSeqId = int32_t;

struct KvBlockManagerOptions {
  int block_size = 16;     // token slots per block
  int64_t num_blocks = 0;  // blocks in the GPU pool
  bool enable_prefix_caching = true;
  bool unbounded_prefix_cache = false;  // cached free blocks cost nothing and are never evicted
};

// Combines the hash of the previous full block with the content key of the next one.
uint64_t ChainHash(uint64_t prev, uint64_t key);

class KvBlockManager {
 public:
  explicit KvBlockManager(const KvBlockManagerOptions& options);

  int block_size() const { return block_size_; }
  int64_t num_blocks() const { return num_blocks_; }

  // A new, empty sequence.
  KvSeqId CreateSequence();
  // A new sequence sharing every block of `parent` (reference counts go up; copy-on-write later).
  KvSeqId Fork(KvSeqId parent);
  // Releases the sequence's blocks (last block first, so that prefix blocks stay cached longest).
  void FreeSequence(KvSeqId seq);

  // Blocks that allocation can still hand out (free plus evictable cached blocks).
  int64_t NumAllocatableBlocks() const;
  // Blocks needed so that `seq` can hold `num_tokens` tokens in total (including a copy of a
  // shared last block that would be written to).
  int64_t BlocksNeededFor(KvSeqId seq, int64_t num_tokens) const;
  // Makes room for `num_tokens` tokens in total without writing them (slots stay unused: static
  // reservation). False, with nothing changed, when blocks run out.
  [[nodiscard]] bool Reserve(KvSeqId seq, int64_t num_tokens);
  // Writes `n` more tokens, allocating blocks and copying a shared last block as needed. False,
  // with nothing changed, when blocks run out.
  [[nodiscard]] bool AppendTokens(KvSeqId seq, int64_t n);

  // Number of leading hashes of `chain` whose blocks are in the cache (0 when caching is off);
  // `*unreferenced` (optional) gets how many of them sit unreferenced in the LRU list, i.e. would
  // consume allocatable blocks when attached.
  int64_t MatchPrefix(std::span<const uint64_t> chain, int64_t* unreferenced = nullptr) const;
  // Makes the first `n` cached blocks of `chain` the first blocks of the empty sequence `seq`,
  // filled. REQUIRES: seq has no tokens, n <= MatchPrefix(chain).
  void AttachPrefix(KvSeqId seq, std::span<const uint64_t> chain, int64_t n);
  // Registers the sequence's full blocks i < chain.size() under chain[i] (those not registered
  // yet); a hash already held by another block is left to that block.
  void RegisterFullBlocks(KvSeqId seq, std::span<const uint64_t> chain);

  // O(1) lookups.
  BlockId BlockOf(KvSeqId seq, int64_t token_index) const;
  std::span<const BlockId> BlockTable(KvSeqId seq) const;
  int64_t NumTokens(KvSeqId seq) const;
  int RefCount(BlockId block) const { return ref_[block]; }

  // Accounting over blocks referenced by at least one sequence.
  int64_t num_referenced_blocks() const { return referenced_blocks_; }
  int64_t num_cached_blocks() const { return lru_size_; }
  int64_t allocated_slots() const { return referenced_blocks_ * block_size_; }
  int64_t used_slots() const { return used_slots_; }
  int64_t cow_copies() const { return cow_copies_; }
  int64_t evictions() const { return evictions_; }
  int64_t live_sequences() const { return live_seqs_; }

  // Checks every invariant: each referenced block's count equals the number of block-table
  // entries that point at it; no block is both free/cached and referenced; free + cached +
  // referenced blocks make up the pool; hash map and LRU agree; used-slot accounting matches.
  absl::Status CheckInvariants() const;

 private:
  // Test-only: defined in kv_block_manager_test.cc, breaks internal state for the death tests.
  friend class KvBlockManagerTestPeer;
  static constexpr BlockId kNone = -1;
  struct Seq {
    std::vector<BlockId> blocks;
    int64_t num_tokens = 0;
    int64_t num_registered = 0;  // leading full blocks already offered to the prefix cache
    bool live = false;
  };

  // The live sequence `seq`; dies naming `op` when it is freed or was never created.
  inline Seq& LiveSeq(KvSeqId seq, const char* op);
  // Dies unless referenced + free + cached blocks add up to the pool (O(1); run whenever a block
  // is allocated or becomes unreferenced).
  inline void CheckBlockCount() const;
  // Hot paths, inline in kv_block_manager.cc.
  inline BlockId AllocateBlock();
  inline void ReleaseBlock(BlockId b);
  void LruPushBack(BlockId b);
  void LruRemove(BlockId b);
  void GrowTo(Seq& s, int64_t num_tokens);  // REQUIRES: enough allocatable blocks

  int block_size_;
  int64_t num_blocks_;
  bool prefix_caching_;
  bool unbounded_;

  std::vector<int32_t> ref_;
  std::vector<int32_t> filled_;  // token slots written
  std::vector<uint64_t> hash_;
  std::vector<uint8_t> hashed_;
  std::vector<BlockId> lru_prev_, lru_next_;
  std::vector<BlockId> free_list_;
  BlockId lru_head_ = kNone, lru_tail_ = kNone;
  int64_t lru_size_ = 0;
  absl::flat_hash_map<uint64_t, BlockId> cached_;

  std::vector<Seq> seqs_;
  std::vector<KvSeqId> free_seq_ids_;
  int64_t live_seqs_ = 0;

  int64_t referenced_blocks_ = 0;
  int64_t used_slots_ = 0;
  int64_t cow_copies_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace seedance::serving
