// The adaptive policies that keep history beyond the cached objects: ARC and LIRS, each with the
// semantics of its libCacheSim module (libCacheSim/cache/eviction/ARC.c, LIRS.c) so that
// byte-sized runs reproduce libCacheSim's miss counts.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "object_list.h"
#include "policy_base.h"

namespace seedance::cache::internal {
namespace {

// ARC (Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST '03) in bytes:
// T1 (seen once) and T2 (seen twice or more) hold the cached objects, B1 and B2 the ghosts evicted
// from them; the target size p of T1 grows on a B1 hit by max(|B2|/|B1|, 1) bytes and shrinks on a
// B2 hit by max(|B1|/|B2|, 1). The directory is bounded as in the paper's case IV: when
// |T1| + |B1| + the new object exceed the cache, B1's oldest ghost (or, without ghosts, T1's
// oldest object) goes; when all four lists reach twice the cache, B2's oldest ghost goes.
class Arc final : public Expert {
 public:
  explicit Arc(int64_t capacity) : Expert("arc", capacity) {}
  int64_t occupied() const override { return t1_.bytes() + t2_.bytes(); }
  bool Contains(uint64_t id) override { return t1_.Find(id) != nullptr || t2_.Find(id) != nullptr; }
  // The object becomes a ghost of its list, as REPLACE demotes it.
  void Drop(uint64_t id) override {
    for (auto [from, ghost] : {std::pair{&t1_, &b1_}, std::pair{&t2_, &b2_}}) {
      if (auto* n = from->Find(id)) {
        const int64_t size = n->size;
        from->Remove(id);
        ghost->PushFront(id, size);
        return;
      }
    }
  }
  std::unique_ptr<Expert> Clone() override {
    auto c = std::make_unique<Arc>(capacity_);
    CopyList(t1_, &c->t1_);
    CopyList(t2_, &c->t2_);
    CopyList(b1_, &c->b1_);
    CopyList(b2_, &c->b2_);
    c->p_ = p_;
    return c;
  }
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    AppendBackToFront(t1_, &out);
    AppendBackToFront(t2_, &out);
    return out;
  }

 private:
  bool Find(const Request& r) override {
    ghost_hit_ = 0;
    if (t1_.Remove(r.id)) {
      t2_.PushFront(r.id, r.size);
      return true;
    }
    if (t2_.Touch(r.id) != nullptr) return true;
    if (auto* g = b1_.Find(r.id)) {
      ghost_hit_ = 1;
      const double delta = std::max(double(b2_.bytes()) / double(b1_.bytes()), 1.0);
      p_ = std::min(p_ + delta, double(capacity_));
      b1_.Remove(g->id);
    } else if (auto* g2 = b2_.Find(r.id)) {
      ghost_hit_ = 2;
      const double delta = std::max(double(b1_.bytes()) / double(b2_.bytes()), 1.0);
      p_ = std::max(p_ - delta, 0.0);
      b2_.Remove(g2->id);
    }
    return false;
  }
  void Insert(const Request& r) override {
    if (ghost_hit_ != 0) {
      t2_.PushFront(r.id, r.size);
      ghost_hit_ = 0;
    } else {
      t1_.PushFront(r.id, r.size);
    }
  }
  void Evict(const Request& r) override {
    if (ghost_hit_ != 0) {
      Replace();
      return;
    }
    if (t1_.bytes() + b1_.bytes() + r.size > capacity_) {
      if (b1_.bytes() > 0) {
        b1_.PopBack();
        Replace();
      } else {
        t1_.PopBack();
      }
      return;
    }
    if (t1_.bytes() + b1_.bytes() + t2_.bytes() + b2_.bytes() >= 2 * capacity_ && b2_.bytes() > 0) {
      b2_.PopBack();
    }
    Replace();
  }
  // The paper's REPLACE: demotes T1's or T2's oldest object to its ghost list.
  void Replace() {
    const double t1 = double(t1_.bytes());
    const bool from_t1 =
        (t1_.bytes() > 0 && (t1 > p_ || (t1 == p_ && ghost_hit_ == 2))) || t2_.bytes() == 0;
    ObjectList<>& from = from_t1 ? t1_ : t2_;
    ObjectList<>& ghost = from_t1 ? b1_ : b2_;
    auto victim = from.Back();
    from.PopBack();
    ghost.PushFront(victim.id, victim.size);
  }

  ObjectList<> t1_, t2_, b1_, b2_;
  double p_ = 0;
  int ghost_hit_ = 0;  // 1 or 2: the current request hit ghost list B1 or B2
};

struct LirsState {
  bool is_lir = false;
  bool in_cache = false;
};

// LIRS (Jiang & Zhang, "LIRS: An Efficient Low Inter-reference Recency Set Replacement Policy",
// SIGMETRICS '02) as libCacheSim's LIRS module builds it, in bytes: the LIRS stack S (LIR and HIR
// entries, resident or not), the list Q of resident HIR objects (1% of the cache), and the list
// NH of non-resident HIR entries, which bounds S to twice the cache. libCacheSim's quirks are kept
// (they decide its miss counts): a hit on a resident HIR object found only in Q first makes room
// in the LIR set, and evicting a LIR object takes S's bottom whatever its status.
class Lirs final : public Expert {
 public:
  static constexpr double kHirRatio = 0.01;
  explicit Lirs(int64_t capacity)
      : Expert("lirs", capacity),
        hirs_limit_(std::max<int64_t>(1, static_cast<int64_t>(kHirRatio * double(capacity)))),
        lirs_limit_(capacity - hirs_limit_) {}
  int64_t occupied() const override { return occupied_; }
  bool Contains(uint64_t id) override {
    if (List::Node* q = q_.Find(id); q != nullptr && q->x.in_cache) return true;
    List::Node* s = s_.Find(id);
    return s != nullptr && s->x.in_cache;
  }
  // A resident HIR object leaves as EvictHir evicts it; a LIR object as a demoted one would: it
  // stays in S as a non-resident HIR entry.
  void Drop(uint64_t id) override {
    if (List::Node* q = q_.Find(id); q != nullptr && q->x.in_cache) {
      const int64_t size = q->size;
      hirs_count_ -= size;
      q_.Remove(id);
      occupied_ -= size;
      if (List::Node* s = s_.Find(id)) {
        s->x.in_cache = false;
        nh_.PushFront(id, size);
        nonresident_ += s->size;
      }
      return;
    }
    List::Node* s = s_.Find(id);
    if (s == nullptr || !s->x.in_cache) return;
    s->x = {.is_lir = false, .in_cache = false};
    lirs_count_ -= s->size;
    occupied_ -= s->size;
    nh_.PushFront(id, s->size);
    nonresident_ += s->size;
    Prune();
  }
  std::unique_ptr<Expert> Clone() override {
    auto c = std::make_unique<Lirs>(capacity_);
    CopyList(s_, &c->s_);
    CopyList(q_, &c->q_);
    CopyList(nh_, &c->nh_);
    c->lirs_count_ = lirs_count_;
    c->hirs_count_ = hirs_count_;
    c->nonresident_ = nonresident_;
    c->occupied_ = occupied_;
    return c;
  }
  // Q's resident HIR objects, then S's LIR objects, each back first.
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    AppendBackToFront(q_, &out);
    for (auto it = s_.end(); it != s_.begin();) {
      --it;
      if (it->x.is_lir && it->x.in_cache && q_.Find(it->id) == nullptr) {
        out.emplace_back(it->id, it->size);
      }
    }
    return out;
  }

 private:
  using List = ObjectList<LirsState>;

  bool Find(const Request& r) override {
    List::Node* s = s_.Touch(r.id);
    List::Node* q = q_.Touch(r.id);
    if (s != nullptr) {
      if (s->x.is_lir) {
        Prune();
        return true;
      }
      if (!s->x.in_cache) return false;
      HitHirInS(r, q != nullptr);
      return true;
    }
    if (q != nullptr && q->x.in_cache) {
      HitHirInQ(r);
      return true;
    }
    return false;
  }
  bool CanInsert(const Request& r) override {
    if (r.size > capacity_) return false;
    List::Node* s = s_.Find(r.id);
    if (s != nullptr && !s->x.is_lir && !s->x.in_cache) {
      while (lirs_count_ + r.size > lirs_limit_ && !s_.empty()) EvictLir();
      if (nh_.Remove(r.id)) nonresident_ -= r.size;
      return true;
    }
    if (s == nullptr && q_.Find(r.id) == nullptr) {
      if (r.size > lirs_limit_ || r.size > hirs_limit_) return false;
      if (lirs_count_ + r.size > lirs_limit_ && hirs_count_ + r.size > hirs_limit_) {
        while (hirs_count_ + r.size > hirs_limit_ && !q_.empty()) EvictHir();
      }
    }
    return true;
  }
  void Evict(const Request& r) override {
    const int64_t before = occupied_;
    List::Node* s = s_.Find(r.id);
    if (s != nullptr && !s->x.is_lir && !s->x.in_cache) {
      while (hirs_count_ >= hirs_limit_ && !q_.empty()) EvictHir();
      if (!s_.empty()) EvictLir();
    } else if (s == nullptr && q_.Find(r.id) == nullptr && lirs_count_ + r.size > lirs_limit_ &&
               hirs_count_ + r.size > hirs_limit_ && !q_.empty()) {
      EvictHir();
    }
    // libCacheSim would loop for ever here; free something instead (never on the shipped traces).
    if (occupied_ == before) {
      if (!q_.empty()) {
        EvictHir();
      } else if (!s_.empty()) {
        EvictLir();
      }
    }
  }
  void Insert(const Request& r) override {
    List::Node* s = s_.Find(r.id);
    if (s != nullptr) {
      if (!s->x.is_lir && !s->x.in_cache) {
        s->x = {.is_lir = true, .in_cache = true};
        lirs_count_ += r.size;
        occupied_ += r.size;
      }
      return;
    }
    if (q_.Find(r.id) != nullptr) return;
    if (lirs_count_ + r.size <= lirs_limit_) {
      s_.PushFront(r.id, r.size, {.is_lir = true, .in_cache = true});
      lirs_count_ += r.size;
    } else {
      s_.PushFront(r.id, r.size, {.is_lir = false, .in_cache = true});
      q_.PushFront(r.id, r.size, {.is_lir = false, .in_cache = true});
      hirs_count_ += r.size;
    }
    occupied_ += r.size;
  }
  void AfterAccess() override {
    while (s_.bytes() > 2 * capacity_ && !nh_.empty()) {
      const List::Node victim = nh_.Back();
      nonresident_ -= victim.size;
      s_.Remove(victim.id);
      nh_.PopBack();
    }
  }

  // A resident HIR object in S becomes LIR (and leaves Q).
  void HitHirInS(const Request& r, bool in_q) {
    if (in_q) {
      hirs_count_ -= r.size;
      q_.Remove(r.id);
      occupied_ -= r.size;
    }
    while (lirs_count_ + r.size > lirs_limit_ && !s_.empty()) EvictLir();
    if (List::Node* s = s_.Find(r.id)) s->x.is_lir = true;
    lirs_count_ += r.size;
    occupied_ += r.size;
  }
  // A resident HIR object only in Q re-enters S as a resident HIR.
  void HitHirInQ(const Request& r) {
    while (lirs_count_ + r.size > lirs_limit_ && !s_.empty()) EvictLir();
    s_.PushFront(r.id, r.size, {.is_lir = false, .in_cache = true});
  }
  // S's bottom leaves S; it stays resident as a HIR object in Q if it fits there.
  void EvictLir() {
    const List::Node victim = s_.Back();
    lirs_count_ -= victim.size;
    s_.PopBack();
    occupied_ -= victim.size;
    if (victim.size <= hirs_limit_) {
      while (hirs_count_ + victim.size > hirs_limit_ && !q_.empty()) EvictHir();
      q_.PushFront(victim.id, victim.size, {.is_lir = false, .in_cache = true});
      hirs_count_ += victim.size;
      occupied_ += victim.size;
    }
    Prune();
  }
  // Q's oldest object leaves the cache; its S entry, if any, becomes non-resident.
  void EvictHir() {
    const List::Node victim = q_.Back();
    hirs_count_ -= victim.size;
    q_.PopBack();
    if (List::Node* s = s_.Find(victim.id)) {
      s->x.in_cache = false;
      nh_.PushFront(victim.id, victim.size);
      nonresident_ += s->size;
    }
    occupied_ -= victim.size;
  }
  // Removes HIR entries from S's bottom until a LIR entry is there (or one entry is left).
  void Prune() {
    while (s_.count() > 1 && !s_.Back().x.is_lir) {
      if (!s_.Back().x.in_cache && nh_.Remove(s_.Back().id)) nonresident_ -= s_.Back().size;
      s_.PopBack();
    }
  }

  const int64_t hirs_limit_;
  const int64_t lirs_limit_;
  int64_t lirs_count_ = 0;
  int64_t hirs_count_ = 0;
  int64_t nonresident_ = 0;
  int64_t occupied_ = 0;
  List s_, q_;
  ObjectList<LirsState> nh_;
};

}  // namespace

std::unique_ptr<Expert> NewArcExpert(int64_t c) { return std::make_unique<Arc>(c); }
std::unique_ptr<Expert> NewLirsExpert(int64_t c) { return std::make_unique<Lirs>(c); }
std::unique_ptr<Policy> NewArc(int64_t c) { return std::make_unique<Arc>(c); }
std::unique_ptr<Policy> NewLirs(int64_t c) { return std::make_unique<Lirs>(c); }

}  // namespace seedance::cache::internal
