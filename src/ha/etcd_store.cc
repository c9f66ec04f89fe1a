#include "seedance/ha/etcd_store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "batch_codec.h"
#include "etcd_client.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"

namespace seedance::ha {

namespace {

// etcd refuses requests over 1.5 MiB (--max-request-bytes); a part is base64'd (4/3) in JSON.
constexpr size_t kPartBytes = 768 << 10;
constexpr int64_t kLogPage = 32;  // log keys per range request (at most 24 MiB)

double SteadyS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Pad(int64_t seq) { return absl::StrFormat("%020d", seq); }

// Records in the order they were first put: an update keeps its place, a delete forgets it.
template <typename Record>
class OrderedTable {
 public:
  void Put(const std::string& key, Record r) {
    auto [it, added] = seq_.try_emplace(key, next_);
    if (added) ++next_;
    rows_[it->second] = std::move(r);
  }
  void Delete(const std::string& key) {
    auto it = seq_.find(key);
    if (it == seq_.end()) return;
    rows_.erase(it->second);
    seq_.erase(it);
  }
  std::vector<Record> All() const {
    std::vector<Record> out;
    out.reserve(rows_.size());
    for (const auto& [seq, r] : rows_) out.push_back(r);
    return out;
  }
  void Clear() {
    rows_.clear();
    seq_.clear();
  }

 private:
  std::map<int64_t, Record> rows_;
  std::unordered_map<std::string, int64_t> seq_;
  int64_t next_ = 0;
};

struct SnapshotPointer {
  int64_t seq = 0, parts = 0, last_event = 0;
};

absl::StatusOr<int64_t> ParseSeq(const std::string& text, const std::string& key) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 0) {
    return absl::DataLossError(absl::StrCat(key, ": not a sequence number: '",
                                            base::ForTerminal(base::Clip(text, 40)), "'"));
  }
  return v;
}

absl::StatusOr<SnapshotPointer> ParsePointer(const std::string& text, const std::string& key) {
  std::vector<std::string> f = absl::StrSplit(text, ' ');
  SnapshotPointer p;
  if (f.size() != 3 || !absl::SimpleAtoi(f[0], &p.seq) || !absl::SimpleAtoi(f[1], &p.parts) ||
      !absl::SimpleAtoi(f[2], &p.last_event) || p.parts < 1) {
    return absl::DataLossError(absl::StrCat(key, ": not a snapshot pointer: '",
                                            base::ForTerminal(base::Clip(text, 80)), "'"));
  }
  return p;
}

std::vector<std::string> Split(const std::string& bytes) {
  std::vector<std::string> parts;
  for (size_t at = 0; at < bytes.size(); at += kPartBytes)
    parts.push_back(bytes.substr(at, kPartBytes));
  if (parts.empty()) parts.emplace_back();
  return parts;
}

class EtcdStoreImpl final : public EtcdStore {
 public:
  EtcdStoreImpl(EtcdStoreOptions o, std::unique_ptr<EtcdClient> client, const Leadership* l)
      : options_(std::move(o)), client_(std::move(client)), leadership_(l) {
    path_ = absl::StrCat(client_->url(), options_.prefix);
    leader_key_ = options_.prefix + "leader";
  }

  absl::StatusOr<store::Snapshot> Load() override {
    base::MutexLock lock(mu_);
    store::Snapshot s;
    s.nodes = nodes_.All();
    s.pods = pods_.All();
    s.revision = revision_.load();
    s.policy_text = policy_;
    s.objects.reserve(objects_.size());
    for (const auto& [id, o] : objects_) s.objects.push_back(o);
    return s;
  }

  absl::Status Commit(const store::Batch& batch) override;
  absl::StatusOr<bool> Refresh() override;
  absl::Status PrepareToLead() override;

  absl::StatusOr<std::vector<store::EventRecord>> EventsSince(int64_t after,
                                                              size_t limit) override {
    base::MutexLock lock(mu_);
    std::vector<store::EventRecord> out;
    auto it =
        std::lower_bound(events_.begin(), events_.end(), after + 1,
                         [](const store::EventRecord& e, int64_t r) { return e.revision < r; });
    for (; it != events_.end() && out.size() < limit; ++it) out.push_back(*it);
    return out;
  }
  int64_t oldest_event_revision() const override { return dropped_through_.load() + 1; }
  int64_t revision() const override { return revision_.load(); }
  int64_t event_count() const override { return event_count_.load(); }
  const std::string& path() const override { return path_; }
  bool reloadable() const override { return true; }
  const std::string& leader_key() const override { return leader_key_; }

 private:
  std::string Key(const std::string& area, int64_t seq) const {
    return absl::StrCat(options_.prefix, area, "/", Pad(seq));
  }
  std::string PartKey(const std::string& area, int64_t seq, size_t part) const {
    return absl::StrCat(Key(area, seq), ".", absl::StrFormat("%06d", part));
  }
  std::vector<TxnCompare> Fence() const {
    return {{TxnCompare::kCreate, leader_key_, leadership_->create_revision.load(), ""}};
  }
  absl::Status CheckLeading() const {
    if (leadership_->create_revision.load() == 0) {
      return absl::AbortedError("this replica is not the leader");
    }
    if (SteadyS() >= leadership_->valid_until_s.load()) {
      return absl::AbortedError(
          "this replica's lease may have expired (no keepalive answered in time): not deciding");
    }
    return absl::OkStatus();
  }
  absl::Status Check(const store::Batch& b) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FencedTxn(std::vector<TxnOp> ops, int64_t* revision = nullptr);
  absl::Status RefreshLocked(bool* moved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status LoadSnapshot(const SnapshotPointer& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReadLog(int64_t from, int64_t through) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteSnapshot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A log entry's objects take its revision (the revision of the batch that put them); a
  // snapshot's keep the revisions they carry.
  enum class Source { kLog, kSnapshot };
  void Apply(const store::Batch& b, Source source = Source::kLog)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const EtcdStoreOptions options_;
  std::unique_ptr<EtcdClient> client_;
  const Leadership* leadership_;
  std::string path_, leader_key_;

  base::Mutex mu_;
  OrderedTable<store::NodeRecord> nodes_ ABSL_GUARDED_BY(mu_);
  OrderedTable<store::PodRecord> pods_ ABSL_GUARDED_BY(mu_);
  std::string policy_ ABSL_GUARDED_BY(mu_);
  // By (kind, key): std::string compares bytewise (as unsigned char), the order Load promises.
  std::map<std::pair<std::string, std::string>, store::ObjectRecord> objects_ ABSL_GUARDED_BY(mu_);
  std::deque<store::EventRecord> events_ ABSL_GUARDED_BY(mu_);
  int64_t head_ ABSL_GUARDED_BY(mu_) = 0;  // the last commit applied here
  // The snapshot the state was built from (0: none).
  int64_t snapshot_seq_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t log_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // log bytes since it
  bool stale_ ABSL_GUARDED_BY(mu_) = false;     // a commit failed: Refresh before the next one
  std::atomic<int64_t> revision_{0}, event_count_{0}, dropped_through_{0};
  int64_t last_event_revision_ ABSL_GUARDED_BY(mu_) = 0;
};

void EtcdStoreImpl::Apply(const store::Batch& b, Source source) {
  for (const store::NodeRecord& n : b.put_nodes) nodes_.Put(n.name, n);
  for (const std::string& n : b.delete_nodes) nodes_.Delete(n);
  for (const store::PodRecord& p : b.put_pods) pods_.Put(p.uid, p);
  for (const std::string& p : b.delete_pods) pods_.Delete(p);
  // Objects as the SQLite store applies them: prefix deletes, deletes, puts.
  for (const auto& [kind, prefix] : b.delete_object_prefixes) {
    auto it = objects_.lower_bound({kind, prefix});
    while (it != objects_.end() && it->first.first == kind &&
           it->first.second.compare(0, prefix.size(), prefix) == 0) {
      it = objects_.erase(it);
    }
  }
  for (const auto& id : b.delete_objects) objects_.erase(id);
  for (const store::ObjectRecord& o : b.put_objects) {
    store::ObjectRecord& kept = objects_[{o.kind, o.key}];
    kept = o;
    if (source == Source::kLog) kept.revision = b.revision;
  }
  for (const store::EventRecord& e : b.events) {
    events_.push_back(e);
    last_event_revision_ = e.revision;
  }
  while (static_cast<int64_t>(events_.size()) > options_.event_retention) {
    dropped_through_ = events_.front().revision;
    events_.pop_front();
  }
  event_count_ = static_cast<int64_t>(events_.size());
  if (b.revision > revision_.load()) revision_ = b.revision;
  if (b.policy_text) policy_ = *b.policy_text;
}

absl::Status EtcdStoreImpl::Check(const store::Batch& b) const {
  if (b.revision < revision_.load()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch revision ", b.revision, " is below the store's ", revision_.load()));
  }
  int64_t last = last_event_revision_;
  for (const store::EventRecord& e : b.events) {
    if (e.revision <= last || e.revision > b.revision) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event revision ", e.revision, " must be above ", last, " and at most ", b.revision));
    }
    last = e.revision;
  }
  for (const store::NodeRecord& n : b.put_nodes) {
    if (n.name.empty()) return absl::InvalidArgumentError("a node with an empty name");
  }
  for (const store::PodRecord& p : b.put_pods) {
    if (p.uid.empty()) return absl::InvalidArgumentError("a pod with an empty uid");
  }
  return store::CheckBatchObjects(b);
}

absl::Status EtcdStoreImpl::FencedTxn(std::vector<TxnOp> ops, int64_t* revision) {
  if (absl::Status st = CheckLeading(); !st.ok()) return st;
  absl::StatusOr<TxnResult> r = client_->Txn(Fence(), ops, {});
  if (!r.ok()) return r.status();
  if (!r->succeeded) {
    return absl::AbortedError(
        absl::StrCat(leader_key_,
                     " is no longer this replica's (its lease expired or another replica "
                     "leads): the write was refused by the fence"));
  }
  if (revision) *revision = r->revision;
  return absl::OkStatus();
}

absl::Status EtcdStoreImpl::Commit(const store::Batch& batch) {
  base::MutexLock lock(mu_);
  if (absl::Status st = Check(batch); !st.ok()) return st;
  if (stale_) {
    return absl::AbortedError(
        "an earlier commit failed: this replica's view of etcd must be refreshed first");
  }
  const std::string bytes = EncodeBatch(batch);
  const std::vector<std::string> parts = Split(bytes);
  const int64_t seq = head_ + 1;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::vector<TxnOp> ops = {{TxnOp::kPut, PartKey("log", seq, i), parts[i], "", 0}};
    if (i + 1 == parts.size())
      ops.push_back({TxnOp::kPut, options_.prefix + "head", Pad(seq), "", 0});
    if (absl::Status st = FencedTxn(std::move(ops)); !st.ok()) {
      stale_ = true;  // the outcome may be unknown: the head in etcd is read again first
      return st;
    }
  }
  head_ = seq;
  log_bytes_ += static_cast<int64_t>(bytes.size());
  Apply(batch);
  if (log_bytes_ >= options_.snapshot_log_bytes) {
    // A failed snapshot loses nothing (the log stays); the next commit tries again.
    if (absl::Status st = WriteSnapshot(); !st.ok()) {
      std::fprintf(stderr, "seedance server: etcd snapshot failed: %s\n",
                   std::string(st.message()).c_str());
    }
  }
  return absl::OkStatus();
}

absl::Status EtcdStoreImpl::WriteSnapshot() {
  store::Batch all;
  all.put_nodes = nodes_.All();
  all.put_pods = pods_.All();
  all.revision = revision_.load();
  all.policy_text = policy_;
  all.put_objects.reserve(objects_.size());
  for (const auto& [id, o] : objects_) all.put_objects.push_back(o);
  const std::vector<std::string> parts = Split(EncodeBatch(all));
  for (size_t i = 0; i < parts.size(); ++i) {
    if (absl::Status st = FencedTxn({{TxnOp::kPut, PartKey("snap", head_, i), parts[i], "", 0}});
        !st.ok()) {
      return st;
    }
  }
  const std::string pointer = absl::StrCat(head_, " ", parts.size(), " ", last_event_revision_);
  int64_t rev = 0;
  absl::Status st =
      FencedTxn({{TxnOp::kPut, options_.prefix + "snapshot", pointer, "", 0},
                 {TxnOp::kDeleteRange, options_.prefix + "log/", "", Key("log", head_ + 1), 0},
                 {TxnOp::kDeleteRange, options_.prefix + "snap/", "", Key("snap", head_), 0}},
                &rev);
  if (!st.ok()) return st;
  snapshot_seq_ = head_;
  log_bytes_ = 0;
  return client_->Compact(rev);  // the deleted log's history
}

absl::Status EtcdStoreImpl::LoadSnapshot(const SnapshotPointer& p) {
  absl::StatusOr<RangeResult> r = client_->Range(Key("snap", p.seq), Key("snap", p.seq + 1));
  if (!r.ok()) return r.status();
  if (static_cast<int64_t>(r->kvs.size()) != p.parts) {
    return absl::UnavailableError(absl::StrCat("snapshot ", p.seq, " has ", r->kvs.size(),
                                               " of its ", p.parts, " parts; retry"));
  }
  std::string bytes;
  for (const KeyValue& kv : r->kvs) bytes += kv.value;
  absl::StatusOr<store::Batch> b = DecodeBatch(bytes);
  if (!b.ok())
    return absl::DataLossError(
        absl::StrCat(path_, "snap/", Pad(p.seq), ": ", b.status().message()));
  nodes_.Clear();
  pods_.Clear();
  objects_.clear();
  events_.clear();
  revision_ = 0;
  Apply(*b, Source::kSnapshot);
  head_ = snapshot_seq_ = p.seq;
  dropped_through_ = last_event_revision_ = p.last_event;
  log_bytes_ = 0;
  return absl::OkStatus();
}

absl::Status EtcdStoreImpl::ReadLog(int64_t from, int64_t through) {
  std::string start = Key("log", from);
  const std::string end = Key("log", through + 1);
  int64_t seq = from;
  std::string bytes;
  auto flush = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    absl::StatusOr<store::Batch> b = DecodeBatch(bytes);
    if (!b.ok())
      return absl::DataLossError(absl::StrCat(path_, "log/", Pad(seq), ": ", b.status().message()));
    Apply(*b);
    head_ = seq;
    log_bytes_ += static_cast<int64_t>(bytes.size());
    bytes.clear();
    return absl::OkStatus();
  };
  while (true) {
    absl::StatusOr<RangeResult> r = client_->Range(start, end, kLogPage);
    if (!r.ok()) return r.status();
    for (const KeyValue& kv : r->kvs) {
      const std::string name = kv.key.substr(options_.prefix.size() + 4, 20);
      int64_t s = 0;
      if (!absl::SimpleAtoi(name, &s))
        return absl::DataLossError(absl::StrCat(kv.key, ": not a log key"));
      if (s != seq) {
        if (absl::Status st = flush(); !st.ok()) return st;
        if (s != seq + 1) return absl::UnavailableError("the log changed while it was read; retry");
        seq = s;
      }
      bytes += kv.value;
      start = kv.key + '\0';
    }
    if (!r->more) break;
  }
  if (bytes.empty()) return absl::UnavailableError("the log changed while it was read; retry");
  return flush();
}

absl::Status EtcdStoreImpl::RefreshLocked(bool* moved) {
  const int64_t before = head_;
  absl::StatusOr<TxnResult> r =
      client_->Txn({},
                   {{TxnOp::kRange, options_.prefix + "head", "", "", 0},
                    {TxnOp::kRange, options_.prefix + "snapshot", "", "", 0}},
                   {});
  if (!r.ok()) return r.status();
  int64_t head = 0;
  if (r->ranges.size() == 2 && !r->ranges[0].empty()) {
    absl::StatusOr<int64_t> h = ParseSeq(r->ranges[0][0].value, options_.prefix + "head");
    if (!h.ok()) return h.status();
    head = *h;
  }
  if (r->ranges.size() == 2 && !r->ranges[1].empty()) {
    absl::StatusOr<SnapshotPointer> p =
        ParsePointer(r->ranges[1][0].value, options_.prefix + "snapshot");
    if (!p.ok()) return p.status();
    if (p->seq > head_) {
      if (absl::Status st = LoadSnapshot(*p); !st.ok()) return st;
    }
  }
  if (head > head_) {
    if (absl::Status st = ReadLog(head_ + 1, head); !st.ok()) return st;
  }
  *moved = head_ != before;
  stale_ = false;
  return absl::OkStatus();
}

absl::StatusOr<bool> EtcdStoreImpl::Refresh() {
  base::MutexLock lock(mu_);
  bool moved = false;
  absl::Status st = RefreshLocked(&moved);
  if (st.code() == absl::StatusCode::kUnavailable) st = RefreshLocked(&moved);  // raced a snapshot
  if (!st.ok()) return st;
  return moved;
}

absl::Status EtcdStoreImpl::PrepareToLead() {
  base::MutexLock lock(mu_);
  bool moved = false;
  absl::Status st = RefreshLocked(&moved);
  if (st.code() == absl::StatusCode::kUnavailable) st = RefreshLocked(&moved);
  if (!st.ok()) return st;
  // Parts a deposed leader wrote beyond the head (an unfinished commit) must not mix with ours.
  return FencedTxn(
      {{TxnOp::kDeleteRange, Key("log", head_ + 1), "", PrefixEnd(options_.prefix + "log/"), 0}});
}

absl::Status CheckPrefix(const std::string& prefix) {
  const bool ok =
      !prefix.empty() && prefix.front() == '/' && prefix.back() == '/' && prefix.size() <= 200 &&
      std::all_of(prefix.begin(), prefix.end(), [](char c) { return c > ' ' && c < 0x7f; });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--etcd-prefix: expected a key prefix that starts and ends with '/' (printable ASCII, at "
      "most 200 characters), got '",
      base::ForTerminal(base::Clip(prefix, 100)), "'"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdStore>> EtcdStore::Open(EtcdStoreOptions o,
                                                           const Leadership* leadership) {
  absl::StatusOr<std::vector<EtcdEndpoint>> eps = ParseEtcdUrl(o.url, "--store");
  if (!eps.ok()) return eps.status();
  if (absl::Status st = CheckPrefix(o.prefix); !st.ok()) return st;
  if (o.event_retention < 1)
    return absl::InvalidArgumentError("event retention must be at least 1");
  EtcdClientOptions co;
  co.request_timeout_s = o.request_timeout_s;
  auto s = std::make_unique<EtcdStoreImpl>(std::move(o), EtcdClient::New(std::move(*eps), co),
                                           leadership);
  absl::StatusOr<bool> r = s->Refresh();
  if (!r.ok()) return r.status();
  return std::unique_ptr<EtcdStore>(std::move(s));
}

}  // namespace seedance::ha
