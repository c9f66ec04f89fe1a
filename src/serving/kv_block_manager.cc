// Paged KV block manager: free list, reference counts, copy-on-write, hash-chain prefix cache with
// LRU eviction of cached free blocks (include/seedance/serving/kv_block_manager.h).

#include "seedance/serving/kv_block_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

namespace seedance::serving {
namespace {

// SplitMix64 finaliser: a cheap bijective mixer with good avalanche.
uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Failure reports of the hot-path checks, out of line and cold, so that inline each check is a
// compare and a branch. Each reports through SEEDANCE_CHECK: what broke, the values, abort.
[[noreturn, gnu::cold, gnu::noinline]] void DieSeqNotLive(KvSeqId seq, const char* op,
                                                          size_t issued) {
  const bool sequence_is_live = false;
  SEEDANCE_CHECK(sequence_is_live)
      << op << " on sequence " << seq << ", which is not live (freed twice, or never created; "
      << issued << " ids issued)";
}

[[noreturn, gnu::cold, gnu::noinline]] void DieBlockCount(int64_t referenced, size_t free,
                                                          int64_t cached, int64_t pool) {
  const bool referenced_plus_free_plus_cached_is_pool = false;
  SEEDANCE_CHECK(referenced_plus_free_plus_cached_is_pool)
      << "KV block count not conserved: " << referenced << " referenced + " << free << " free + "
      << cached << " cached != " << pool << " blocks";
}

[[noreturn, gnu::cold, gnu::noinline]] void DieBadBlock(const char* what, BlockId b, int32_t ref,
                                                        const char* more) {
  const bool block_state_consistent = false;
  SEEDANCE_CHECK(block_state_consistent)
      << "block " << b << " " << what << " ref count " << ref << more;
}

[[noreturn, gnu::cold, gnu::noinline]] void DiePoolExhausted(int64_t referenced,
                                                             int64_t num_blocks) {
  const bool pool_has_room = false;
  SEEDANCE_CHECK(pool_has_room) << "KV pool exhausted: a block was allocated with " << referenced
                                << " of " << num_blocks << " referenced and nothing free or cached";
}

}  // namespace

uint64_t ChainHash(uint64_t prev, uint64_t key) {
  return Mix64(prev * 0x9e3779b97f4a7c15ULL + Mix64(key + 0x632be59bd9b4e019ULL));
}

KvBlockManager::KvBlockManager(const KvBlockManagerOptions& options)
    : block_size_(options.block_size),
      num_blocks_(options.num_blocks),
      prefix_caching_(options.enable_prefix_caching),
      unbounded_(options.enable_prefix_caching && options.unbounded_prefix_cache) {
  SEEDANCE_CHECK(block_size_ > 0 && num_blocks_ >= 0 && num_blocks_ <= INT32_MAX / 2)
      << "KvBlockManager needs block_size > 0 and 0 <= num_blocks <= " << INT32_MAX / 2
      << ", got block_size " << block_size_ << ", num_blocks " << num_blocks_;
  const size_t n = static_cast<size_t>(num_blocks_);
  ref_.assign(n, 0);
  filled_.assign(n, 0);
  hash_.assign(n, 0);
  hashed_.assign(n, 0);
  lru_prev_.assign(n, kNone);
  lru_next_.assign(n, kNone);
  free_list_.reserve(n);
  // Popped from the back: block 0 first.
  for (int64_t b = num_blocks_ - 1; b >= 0; --b) free_list_.push_back(static_cast<BlockId>(b));
}

KvSeqId KvBlockManager::CreateSequence() {
  KvSeqId id;
  if (!free_seq_ids_.empty()) {
    id = free_seq_ids_.back();
    free_seq_ids_.pop_back();
  } else {
    id = static_cast<KvSeqId>(seqs_.size());
    seqs_.emplace_back();
  }
  Seq& s = seqs_[id];
  s.blocks.clear();
  s.num_tokens = 0;
  s.num_registered = 0;
  s.live = true;
  ++live_seqs_;
  return id;
}

inline KvBlockManager::Seq& KvBlockManager::LiveSeq(KvSeqId seq, const char* op) {
  if (seq < 0 || static_cast<size_t>(seq) >= seqs_.size() || !seqs_[seq].live) [[unlikely]] {
    DieSeqNotLive(seq, op, seqs_.size());
  }
  return seqs_[seq];
}

inline void KvBlockManager::CheckBlockCount() const {
  const int64_t pool = static_cast<int64_t>(ref_.size());
  const int64_t unreferenced = static_cast<int64_t>(free_list_.size()) + lru_size_;
  if (referenced_blocks_ < 0 || referenced_blocks_ + unreferenced != pool) [[unlikely]] {
    DieBlockCount(referenced_blocks_, free_list_.size(), lru_size_, pool);
  }
}

KvSeqId KvBlockManager::Fork(KvSeqId parent) {
  LiveSeq(parent, "Fork");
  const KvSeqId child = CreateSequence();
  const Seq& p = seqs_[parent];
  Seq& c = seqs_[child];
  c.blocks = p.blocks;
  c.num_tokens = p.num_tokens;
  c.num_registered = p.num_registered;
  for (BlockId b : c.blocks) ++ref_[b];
  return child;
}

void KvBlockManager::FreeSequence(KvSeqId seq) {
  Seq& s = LiveSeq(seq, "FreeSequence");
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) ReleaseBlock(*it);
  s.blocks.clear();
  s.num_tokens = 0;
  s.num_registered = 0;
  s.live = false;
  --live_seqs_;
  free_seq_ids_.push_back(seq);
}

int64_t KvBlockManager::NumAllocatableBlocks() const { return num_blocks_ - referenced_blocks_; }

int64_t KvBlockManager::BlocksNeededFor(KvSeqId seq, int64_t num_tokens) const {
  const Seq& s = seqs_[seq];
  if (num_tokens <= s.num_tokens) return 0;
  const int64_t have = static_cast<int64_t>(s.blocks.size());
  const int64_t want = (num_tokens + block_size_ - 1) / block_size_;
  int64_t need = std::max<int64_t>(0, want - have);
  // Shared blocks that the new tokens would be written into are copied first.
  for (int64_t i = s.num_tokens / block_size_; i < std::min(want, have); ++i) {
    if (ref_[s.blocks[i]] > 1) ++need;
  }
  return need;
}

[[gnu::always_inline]] inline BlockId KvBlockManager::AllocateBlock() {
  BlockId b;
  if (!free_list_.empty()) {
    b = free_list_.back();
    free_list_.pop_back();
    if (ref_[b] != 0 || hashed_[b]) [[unlikely]] {
      DieBadBlock("on the free list has", b, ref_[b],
                  hashed_[b] ? " and is registered in the prefix cache" : "");
    }
  } else if (unbounded_) {
    b = static_cast<BlockId>(ref_.size());
    ref_.push_back(0);
    filled_.push_back(0);
    hash_.push_back(0);
    hashed_.push_back(0);
    lru_prev_.push_back(kNone);
    lru_next_.push_back(kNone);
  } else {
    // Evict the least recently released cached block.
    b = lru_head_;
    if (b == kNone) [[unlikely]] {
      DiePoolExhausted(referenced_blocks_, num_blocks_);
    }
    if (ref_[b] != 0) [[unlikely]] {
      DieBadBlock("cached in the LRU list has", b, ref_[b], "");
    }
    LruRemove(b);
    cached_.erase(hash_[b]);
    hashed_[b] = 0;
    filled_[b] = 0;
    ++evictions_;
  }
  ref_[b] = 1;
  filled_[b] = 0;
  ++referenced_blocks_;
  CheckBlockCount();
  return b;
}

[[gnu::always_inline]] inline void KvBlockManager::ReleaseBlock(BlockId b) {
  if (ref_[b] <= 0) [[unlikely]] {
    DieBadBlock("released with", b, ref_[b], " (double free)");
  }
  if (--ref_[b] > 0) return;
  --referenced_blocks_;
  used_slots_ -= filled_[b];
  if (hashed_[b]) {
    LruPushBack(b);
  } else {
    filled_[b] = 0;
    free_list_.push_back(b);
  }
  CheckBlockCount();
}

void KvBlockManager::LruPushBack(BlockId b) {
  lru_prev_[b] = lru_tail_;
  lru_next_[b] = kNone;
  if (lru_tail_ != kNone)
    lru_next_[lru_tail_] = b;
  else
    lru_head_ = b;
  lru_tail_ = b;
  ++lru_size_;
}

void KvBlockManager::LruRemove(BlockId b) {
  const BlockId p = lru_prev_[b], n = lru_next_[b];
  if (p != kNone)
    lru_next_[p] = n;
  else
    lru_head_ = n;
  if (n != kNone)
    lru_prev_[n] = p;
  else
    lru_tail_ = p;
  lru_prev_[b] = lru_next_[b] = kNone;
  --lru_size_;
}

void KvBlockManager::GrowTo(Seq& s, int64_t num_tokens) {
  const int64_t want = (num_tokens + block_size_ - 1) / block_size_;
  while (static_cast<int64_t>(s.blocks.size()) < want) s.blocks.push_back(AllocateBlock());
}

bool KvBlockManager::Reserve(KvSeqId seq, int64_t num_tokens) {
  Seq& s = LiveSeq(seq, "Reserve");
  const int64_t want = (num_tokens + block_size_ - 1) / block_size_;
  const int64_t need = want - static_cast<int64_t>(s.blocks.size());
  if (need <= 0) return true;
  if (need > NumAllocatableBlocks()) return false;
  GrowTo(s, num_tokens);
  return true;
}

bool KvBlockManager::AppendTokens(KvSeqId seq, int64_t n) {
  if (n <= 0) return true;
  Seq& s = LiveSeq(seq, "AppendTokens");
  const int64_t total = s.num_tokens + n;
  if (BlocksNeededFor(seq, total) > NumAllocatableBlocks()) return false;
  const int64_t have = static_cast<int64_t>(s.blocks.size());
  const int64_t want = (total + block_size_ - 1) / block_size_;
  const int64_t first = s.num_tokens / block_size_;
  // Copy-on-write for shared blocks in the write range.
  for (int64_t i = first; i < std::min(want, have); ++i) {
    const BlockId old = s.blocks[i];
    if (ref_[old] <= 1) continue;
    const BlockId copy = AllocateBlock();
    filled_[copy] = filled_[old];
    used_slots_ += filled_[copy];
    --ref_[old];  // still referenced by the other sharers
    s.blocks[i] = copy;
    ++cow_copies_;
  }
  GrowTo(s, total);
  for (int64_t i = first; i < want; ++i) {
    const int64_t end_in_block = std::min<int64_t>(block_size_, total - i * block_size_);
    filled_[s.blocks[i]] =
        std::max<int32_t>(filled_[s.blocks[i]], static_cast<int32_t>(end_in_block));
  }
  used_slots_ += n;
  s.num_tokens = total;
  return true;
}

int64_t KvBlockManager::MatchPrefix(std::span<const uint64_t> chain, int64_t* unreferenced) const {
  int64_t n = 0, unref = 0;
  if (prefix_caching_) {
    for (uint64_t h : chain) {
      auto it = cached_.find(h);
      if (it == cached_.end()) break;
      ++n;
      if (ref_[it->second] == 0) ++unref;
    }
  }
  if (unreferenced != nullptr) *unreferenced = unref;
  return n;
}

void KvBlockManager::AttachPrefix(KvSeqId seq, std::span<const uint64_t> chain, int64_t n) {
  Seq& s = LiveSeq(seq, "AttachPrefix");
  SEEDANCE_CHECK(s.num_tokens == 0 && s.blocks.empty())
      << "AttachPrefix on sequence " << seq << ", which already holds " << s.num_tokens
      << " tokens in " << s.blocks.size() << " blocks";
  SEEDANCE_CHECK(n >= 0 && n <= static_cast<int64_t>(chain.size()))
      << "AttachPrefix of " << n << " blocks from a chain of " << chain.size();
  for (int64_t i = 0; i < n; ++i) {
    const auto it = cached_.find(chain[i]);
    SEEDANCE_CHECK(it != cached_.end())
        << "AttachPrefix: block " << i << " of the chain is not in the prefix cache (" << n
        << " asked, more than MatchPrefix finds)";
    const BlockId b = it->second;
    if (ref_[b] == 0) {
      LruRemove(b);
      ++referenced_blocks_;
      used_slots_ += filled_[b];
    }
    ++ref_[b];
    s.blocks.push_back(b);
  }
  s.num_tokens = n * block_size_;
  s.num_registered = n;
  CheckBlockCount();
}

void KvBlockManager::RegisterFullBlocks(KvSeqId seq, std::span<const uint64_t> chain) {
  if (!prefix_caching_) return;
  Seq& s = LiveSeq(seq, "RegisterFullBlocks");
  const int64_t full =
      std::min<int64_t>(static_cast<int64_t>(chain.size()), s.num_tokens / block_size_);
  for (int64_t i = s.num_registered; i < full; ++i) {
    const BlockId b = s.blocks[i];
    if (hashed_[b]) continue;
    auto [it, inserted] = cached_.try_emplace(chain[i], b);
    if (!inserted) continue;  // the same content already lives in another block
    hashed_[b] = 1;
    hash_[b] = chain[i];
  }
  s.num_registered = std::max(s.num_registered, full);
}

BlockId KvBlockManager::BlockOf(KvSeqId seq, int64_t token_index) const {
  return seqs_[seq].blocks[token_index / block_size_];
}

std::span<const BlockId> KvBlockManager::BlockTable(KvSeqId seq) const { return seqs_[seq].blocks; }

int64_t KvBlockManager::NumTokens(KvSeqId seq) const { return seqs_[seq].num_tokens; }

absl::Status KvBlockManager::CheckInvariants() const {
  const size_t n = ref_.size();
  std::vector<int32_t> refs(n, 0);
  int64_t live = 0;
  for (size_t id = 0; id < seqs_.size(); ++id) {
    const Seq& s = seqs_[id];
    if (!s.live) {
      if (!s.blocks.empty())
        return absl::InternalError(absl::StrCat("dead seq ", id, " holds blocks"));
      continue;
    }
    ++live;
    if (static_cast<int64_t>(s.blocks.size()) * block_size_ < s.num_tokens) {
      return absl::InternalError(absl::StrCat("seq ", id, ": ", s.num_tokens, " tokens do not fit ",
                                              s.blocks.size(), " blocks"));
    }
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      const BlockId b = s.blocks[i];
      if (b < 0 || static_cast<size_t>(b) >= n) {
        return absl::InternalError(absl::StrCat("seq ", id, ": bad block id ", b));
      }
      ++refs[b];
      const int64_t tokens_here =
          std::clamp<int64_t>(s.num_tokens - static_cast<int64_t>(i) * block_size_, 0, block_size_);
      if (filled_[b] < tokens_here) {
        return absl::InternalError(
            absl::StrCat("seq ", id, " block ", b, ": filled ", filled_[b], " < ", tokens_here));
      }
    }
  }
  if (live != live_seqs_) return absl::InternalError("live sequence count mismatch");
  std::vector<uint8_t> where(n, 0);  // 1 free list, 2 LRU
  for (BlockId b : free_list_) {
    if (where[b]) return absl::InternalError(absl::StrCat("block ", b, " twice in free list"));
    where[b] = 1;
    if (hashed_[b]) return absl::InternalError(absl::StrCat("free block ", b, " is hashed"));
  }
  int64_t lru = 0;
  BlockId prev = kNone;
  for (BlockId b = lru_head_; b != kNone; b = lru_next_[b]) {
    if (where[b]) return absl::InternalError(absl::StrCat("block ", b, " in free list and LRU"));
    where[b] = 2;
    if (lru_prev_[b] != prev) return absl::InternalError("LRU links broken");
    if (!hashed_[b] || filled_[b] != block_size_) {
      return absl::InternalError(absl::StrCat("LRU block ", b, " not a full hashed block"));
    }
    prev = b;
    if (++lru > static_cast<int64_t>(n)) return absl::InternalError("LRU cycle");
  }
  if (prev != lru_tail_ || lru != lru_size_) return absl::InternalError("LRU size/tail mismatch");
  int64_t referenced = 0, used = 0;
  for (size_t b = 0; b < n; ++b) {
    if (refs[b] != ref_[b]) {
      return absl::InternalError(
          absl::StrCat("block ", b, ": ref count ", ref_[b], " but ", refs[b], " table entries"));
    }
    if (ref_[b] > 0) {
      if (where[b]) {
        return absl::InternalError(absl::StrCat("block ", b, " referenced and free/cached"));
      }
      ++referenced;
      used += filled_[b];
    } else if (!where[b]) {
      return absl::InternalError(absl::StrCat("block ", b, " leaked (unreferenced, not free)"));
    }
    if (hashed_[b]) {
      auto it = cached_.find(hash_[b]);
      if (it == cached_.end() || it->second != static_cast<BlockId>(b)) {
        return absl::InternalError(absl::StrCat("hashed block ", b, " not in the hash map"));
      }
    }
  }
  for (const auto& [h, b] : cached_) {
    if (!hashed_[b] || hash_[b] != h) return absl::InternalError("hash map entry is stale");
  }
  if (referenced != referenced_blocks_) return absl::InternalError("referenced count mismatch");
  if (used != used_slots_) return absl::InternalError("used slot count mismatch");
  if (!unbounded_ && static_cast<int64_t>(n) != num_blocks_) {
    return absl::InternalError("pool size changed");
  }
  if (referenced > num_blocks_) return absl::InternalError("more blocks referenced than the pool");
  return absl::OkStatus();
}

}  // namespace seedance::serving
