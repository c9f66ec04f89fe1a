// The node-local cache (node_cache.h): the on-disk layout, the budget ledger, eviction, and the
// HTTP fetcher over cpp-httplib.
#include "seedance/nodeagent/node_cache.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "httplib.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/mutex.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::nodeagent {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The policies whose order the node cache keeps itself: names of the simulator's PolicyNames()
// (policy.h) with the same meaning (node_cache.h).
constexpr const char* kNodePolicies[] = {"lru", "fifo", "lru2"};
constexpr size_t kIoChunk = 1 << 20;
constexpr int64_t kMaxPrewarmSize = int64_t{1} << 53;

std::string Sv(std::string_view s) { return std::string(s); }

absl::Status IoError(std::string_view what, const std::string& path, int err) {
  return absl::InternalError(
      absl::StrCat(Sv(what), " ", base::Clip(path, 300), ": ", std::strerror(err)));
}

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string Hex(const unsigned char* d, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[d[i] >> 4]);
    out.push_back(kHex[d[i] & 15]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return Hex(md, len);
}

// The sha256 of the file at `path`, read in 1 MiB chunks.
absl::StatusOr<std::string> Sha256File(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open", path, errno);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(kIoChunk);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot read", path, err);
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return Hex(md, len);
}

absl::Status FsyncPath(const std::string& path, bool dir) {
  const int fd = ::open(path.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open", path, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : IoError("cannot fsync", path, err);
}

// An object URL split for cpp-httplib: "scheme://host[:port]" and the path with its query.
struct ObjectUrl {
  std::string origin;
  std::string target;  // "/bucket/key?query"
  std::string user, password;
  std::string shown;  // the URL for messages: userinfo and query redacted
};

absl::StatusOr<ObjectUrl> ParseObjectUrl(std::string_view url) {
  ObjectUrl out;
  out.shown = base::Clip(base::RedactUrl(url), 300);
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("URL ", out.shown, ": ", Sv(why)));
  };
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return bad("must not hold spaces or control characters");
    }
  }
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return bad("must be http://HOST/PATH or https://HOST/PATH");
  const std::string scheme = absl::AsciiStrToLower(Sv(url.substr(0, sep)));
  if (scheme != "http" && scheme != "https") return bad("the scheme must be http or https");
  std::string_view rest = url.substr(sep + 3);
  size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view target = end == std::string_view::npos ? "/" : rest.substr(end);
  target = target.substr(0, target.find('#'));
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view info = authority.substr(0, at);
    const size_t colon = info.find(':');
    out.user = Sv(info.substr(0, colon));
    if (colon != std::string_view::npos) out.password = Sv(info.substr(colon + 1));
    authority = authority.substr(at + 1);
  }
  if (authority.empty()) return bad("no host");
  out.origin = absl::StrCat(scheme, "://", Sv(authority));
  out.target = target.empty() || target.front() != '/' ? absl::StrCat("/", Sv(target)) : Sv(target);
  return out;
}

std::unique_ptr<httplib::Client> NewClient(const ObjectUrl& u, const NodeCacheOptions& o) {
  auto c = std::make_unique<httplib::Client>(u.origin);
  if (!c->is_valid()) return nullptr;
  auto split = [](double s, time_t* sec, time_t* usec) {
    const int64_t us = static_cast<int64_t>(s * 1e6);
    *sec = static_cast<time_t>(us / 1000000);
    *usec = static_cast<time_t>(us % 1000000);
  };
  time_t sec = 0, usec = 0;
  split(o.connect_timeout_s, &sec, &usec);
  c->set_connection_timeout(sec, usec);
  split(o.stall_timeout_s, &sec, &usec);
  c->set_read_timeout(sec, usec);
  c->set_write_timeout(sec, usec);
  c->set_follow_location(false);
  c->set_decompress(false);
  c->set_keep_alive(false);
  if (!u.user.empty()) c->set_basic_auth(u.user, u.password);
  if (!o.ca_file.empty()) c->set_ca_cert_path(o.ca_file);
  return c;
}

// The status an HTTP reply `http` (not 2xx) stands for.
absl::Status HttpError(std::string_view method, const ObjectUrl& u, int http) {
  const std::string what = absl::StrCat(Sv(method), " ", u.shown, ": HTTP ", http);
  if (http >= 300 && http < 400) {
    return absl::FailedPreconditionError(absl::StrCat(what, " (redirects are not followed)"));
  }
  switch (http) {
    case 401:
      return absl::UnauthenticatedError(what);
    case 403:
      return absl::PermissionDeniedError(what);
    case 404:
      return absl::NotFoundError(what);
    default:
      return http >= 500 ? absl::UnavailableError(what) : absl::FailedPreconditionError(what);
  }
}

// The status of a fetch stopped by NodeCache::Cancel.
absl::Status CancelledError(const RemoteObject& obj) {
  return absl::CancelledError(
      absl::StrCat("GET ", ParseObjectUrl(obj.url).value_or(ObjectUrl{}).shown,
                   ": stopped (the node cache is shutting down; a partial download is kept for "
                   "a resume)"));
}

std::string TransportText(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "could not connect";
    case httplib::Error::ConnectionTimeout:
      return "the connection timed out";
    case httplib::Error::Read:
      return "the connection closed or stalled before the whole reply";
    case httplib::Error::Write:
      return "the connection closed while sending the request";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "the store's TLS certificate is not trusted (ca_file)";
    default:
      return httplib::to_string(e);
  }
}

// "bytes FIRST-LAST/TOTAL" -> FIRST and TOTAL; false for anything else (TOTAL "*" too).
bool ParseContentRange(std::string_view v, int64_t* first, int64_t* total) {
  if (v.substr(0, 6) != "bytes ") return false;
  v.remove_prefix(6);
  const size_t dash = v.find('-');
  const size_t slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return false;
  }
  return absl::SimpleAtoi(Sv(v.substr(0, dash)), first) &&
         absl::SimpleAtoi(Sv(v.substr(slash + 1)), total) && *first >= 0 && *total >= 0;
}

// A shared byte-rate cap: each caller waits until its bytes fit the rate (virtual scheduling).
class Throttle {
 public:
  static constexpr Clock::duration kBurst = std::chrono::milliseconds(100);
  explicit Throttle(int64_t bytes_per_s) : rate_(static_cast<double>(bytes_per_s)) {}
  // Blocks until `n` more bytes fit the rate; returns the time waited.
  Clock::duration Acquire(size_t n) {
    if (rate_ <= 0) return Clock::duration::zero();
    Clock::time_point until;
    {
      base::MutexLock lock(mu_);
      const Clock::time_point now = Clock::now();
      // Time lost to wake-ups and reads is made up for, up to kBurst: over any span T the
      // downloads receive at most rate * (T + kBurst) bytes.
      const Clock::time_point start = std::max(now - kBurst, next_);
      next_ = start + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(static_cast<double>(n) / rate_));
      until = next_;
    }
    const Clock::time_point before = Clock::now();
    if (until <= before) return Clock::duration::zero();
    std::this_thread::sleep_until(until);
    return Clock::now() - before;
  }

 private:
  const double rate_;
  base::Mutex mu_;
  Clock::time_point next_ ABSL_GUARDED_BY(mu_){};
};

absl::Status CheckOptions(const NodeCacheOptions& o) {
  auto bad = [](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("node cache: ", Sv(why)));
  };
  if (o.dir.empty()) return bad("dir must not be empty");
  if (o.budget_bytes <= 0)
    return bad(absl::StrCat("budget_bytes must be > 0 (got ", o.budget_bytes, ")"));
  if (o.max_concurrent < 1 || o.max_concurrent > 256) {
    return bad(absl::StrCat("max_concurrent must be in 1..256 (got ", o.max_concurrent, ")"));
  }
  if (o.max_bytes_per_s < 0) return bad("max_bytes_per_s must be >= 0 (0 = no cap)");
  if (!(o.connect_timeout_s > 0) || !(o.stall_timeout_s > 0) || o.connect_timeout_s > 86400 ||
      o.stall_timeout_s > 86400) {
    return bad("connect_timeout_s and stall_timeout_s must be in (0, 86400]");
  }
  if (o.min_bytes_per_s < 0) return bad("min_bytes_per_s must be >= 0");
  const std::string p = absl::AsciiStrToLower(o.policy);
  if (std::find(std::begin(kNodePolicies), std::end(kNodePolicies), p) == std::end(kNodePolicies)) {
    return bad(absl::StrCat("policy ", base::QuoteForMessage(o.policy),
                            " is not one the node cache runs (", absl::StrJoin(kNodePolicies, ", "),
                            "; the simulator's other policies do not name their victims)"));
  }
  return absl::OkStatus();
}

class NodeCacheImpl final : public NodeCache {
 public:
  NodeCacheImpl(NodeCacheOptions o, int64_t unit)
      : o_(std::move(o)),
        policy_(absl::AsciiStrToLower(o_.policy)),
        unit_(unit),
        objects_dir_(o_.dir + "/objects"),
        partial_dir_(o_.dir + "/partial"),
        throttle_(o_.max_bytes_per_s) {}

  absl::Status Load();

  std::vector<FetchResult> Prewarm(const std::vector<RemoteObject>& objs,
                                   std::string_view pin_owner) override;
  void Unpin(std::string_view pin_owner) override;
  absl::StatusOr<std::string> Get(const RemoteObject& obj) override;
  absl::StatusOr<std::string> LocalPath(const RemoteObject& obj) const override;
  absl::Status Demote(const RemoteObject& obj, std::string_view put_url) override;
  void Cancel() override;
  NodeCacheStats stats() const override;
  const std::string& dir() const override { return o_.dir; }

 private:
  struct Object {
    int64_t size = 0;
    int64_t charge = 0;
    uint64_t inserted = 0;  // tick of the download
    uint64_t last = 0;      // tick of the last access
    uint64_t prev = 0;      // tick of the access before it; 0 = seen once
  };
  struct Flight {
    bool done = false;
    absl::Status status;
  };
  // One download's state: its reservation (bytes of used_ it holds) and the transfer.
  struct DownloadState {
    const RemoteObject* obj = nullptr;
    std::string key;
    std::string partial;
    int fd = -1;
    int64_t charged = 0;
    int64_t offset = 0;    // bytes the partial held when this attempt began
    int64_t total = -1;    // the object's size, once known
    int64_t received = 0;  // body bytes this attempt
    int64_t fetched = 0;   // body bytes over all attempts
    bool resumed = false;
    bool bad_checksum = false;
  };

  int64_t Charge(int64_t bytes) const {
    return bytes <= 0 ? 0 : (bytes + unit_ - 1) / unit_ * unit_;
  }
  std::string ObjectPath(const std::string& key) const { return objects_dir_ + "/" + key; }
  std::string PartialPath(const std::string& key) const { return partial_dir_ + "/" + key; }

  absl::Status Validate(const RemoteObject& obj, bool need_sha) const;
  // The object's path, from the cache (*hit) or downloaded (sharing a download in flight).
  absl::StatusOr<std::string> Fetch(const RemoteObject& obj, const std::string& key, int64_t* bytes,
                                    bool* hit);
  // Downloads into partial/KEY and installs the object; *bad_checksum when its sha256 differed.
  absl::Status Download(const RemoteObject& obj, const std::string& key, int64_t* bytes,
                        bool* bad_checksum);
  absl::Status Transfer(DownloadState& d);
  absl::Status Attempt(DownloadState& d, const ObjectUrl& u);
  absl::Status OnReply(DownloadState& d, const ObjectUrl& u, const httplib::Response& r);
  absl::Status Install(DownloadState& d);
  void Settle(DownloadState& d, bool installed);
  absl::Status Reserve(DownloadState& d, int64_t bytes);

  // Records an access: the policy's ticks, and (not for fifo) the file's mtime, which orders the
  // objects when Load re-indexes them after a restart.
  void Touch(const std::string& key, Object& ob) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Stamp(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool MakeRoom(int64_t need) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool EvictOne() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Pinned(const std::string& key) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return pin_count_.contains(key);
  }
  void DropPin(const std::string& owner, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const NodeCacheOptions o_;
  const std::string policy_;
  const int64_t unit_;
  const std::string objects_dir_;
  const std::string partial_dir_;
  Throttle throttle_;
  std::atomic<int64_t> bytes_fetched_{0};
  std::atomic<bool> cancelled_{false};  // Cancel() was called

  mutable base::Mutex mu_;
  std::condition_variable cv_;  // a flight ended or a download slot freed
  absl::flat_hash_map<std::string, Object> objects_ ABSL_GUARDED_BY(mu_);
  // Interrupted partials no download holds: key -> charge.
  absl::flat_hash_map<std::string, int64_t> partials_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> pins_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> pin_count_ ABSL_GUARDED_BY(mu_);
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_stamp_ns_ ABSL_GUARDED_BY(mu_) = 0;  // the newest mtime Stamp gave
  NodeCacheStats stats_ ABSL_GUARDED_BY(mu_);
};

// ---- Open: the directory scan.

struct Found {
  std::string key;
  int64_t size;
  int64_t mtime_ns;
};

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

absl::Status NodeCacheImpl::Load() {
  std::vector<Found> objects;
  for (const std::string* d : {&objects_dir_, &partial_dir_}) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(*d, ec)) {
      const std::string name = e.path().filename().string();
      std::error_code ec2;
      const bool regular = e.is_regular_file(ec2);
      if (!regular || !IsHex64(name) || absl::AsciiStrToLower(name) != name) {
        fs::remove_all(e.path(), ec2);  // a stray file: nothing of ours
        continue;
      }
      const int64_t size = static_cast<int64_t>(e.file_size(ec2));
      if (ec2) return IoError("cannot stat", e.path().string(), ec2.value());
      if (d == &partial_dir_) {
        base::MutexLock lock(mu_);
        partials_[name] = Charge(size);
        used_ += Charge(size);
      } else {
        struct stat st;
        if (::stat(e.path().c_str(), &st) != 0) return IoError("cannot stat", e.path(), errno);
        objects.push_back({name, size, MtimeNs(st)});
      }
    }
    if (ec) return IoError("cannot read directory", *d, ec.value());
  }
  std::sort(objects.begin(), objects.end(), [](const Found& a, const Found& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.key < b.key;
  });
  base::MutexLock lock(mu_);
  for (const Found& f : objects) {
    Object ob;
    ob.size = f.size;
    ob.charge = Charge(f.size);
    ob.inserted = ob.last = ++tick_;
    used_ += ob.charge;
    objects_[f.key] = ob;
    last_stamp_ns_ = std::max(last_stamp_ns_, f.mtime_ns);
  }
  MakeRoom(0);  // a smaller budget than last time
  return absl::OkStatus();
}

// ---- The ledger and eviction.

void NodeCacheImpl::Touch(const std::string& key, Object& ob) {
  ob.prev = ob.last;
  ob.last = ++tick_;
  if (policy_ != "fifo") Stamp(ObjectPath(key));
}

void NodeCacheImpl::Stamp(const std::string& path) {
  // Strictly increasing, even where the clock's granularity is coarser than the accesses.
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  last_stamp_ns_ = std::max(now, last_stamp_ns_ + 1000);
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;
  times[1].tv_sec = static_cast<time_t>(last_stamp_ns_ / 1000000000);
  times[1].tv_nsec = static_cast<long>(last_stamp_ns_ % 1000000000);
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);  // best effort: only the order after a restart
}

bool NodeCacheImpl::EvictOne() {
  if (!partials_.empty()) {
    auto it = partials_.begin();
    std::error_code ec;
    fs::remove(PartialPath(it->first), ec);
    used_ -= it->second;
    partials_.erase(it);
    ++stats_.evictions;
    return true;
  }
  const std::string* victim = nullptr;
  std::pair<uint64_t, uint64_t> best{UINT64_MAX, UINT64_MAX};
  for (const auto& [key, ob] : objects_) {
    if (Pinned(key)) continue;
    std::pair<uint64_t, uint64_t> rank;
    if (policy_ == "fifo") {
      rank = {ob.inserted, 0};
    } else if (policy_ == "lru2") {
      rank = ob.prev == 0 ? std::pair<uint64_t, uint64_t>{0, ob.last} : std::pair{ob.prev, 0ul};
    } else {
      rank = {ob.last, 0};
    }
    if (victim == nullptr || rank < best) {
      best = rank;
      victim = &key;
    }
  }
  if (victim == nullptr) return false;
  const std::string key = *victim;
  std::error_code ec;
  fs::remove(ObjectPath(key), ec);
  used_ -= objects_[key].charge;
  objects_.erase(key);
  ++stats_.evictions;
  return true;
}

bool NodeCacheImpl::MakeRoom(int64_t need) {
  while (used_ + need > o_.budget_bytes) {
    if (!EvictOne()) return false;
  }
  return true;
}

absl::Status NodeCacheImpl::Reserve(DownloadState& d, int64_t bytes) {
  const int64_t want = Charge(bytes);
  base::MutexLock lock(mu_);
  if (want <= d.charged) return absl::OkStatus();
  if (!MakeRoom(want - d.charged)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("GET ", ParseObjectUrl(d.obj->url).value_or(ObjectUrl{}).shown, ": ", bytes,
                     " bytes do not fit the cache budget of ", o_.budget_bytes, " bytes (", used_,
                     " bytes in use, pinned or downloading)"));
  }
  used_ += want - d.charged;
  d.charged = want;
  return absl::OkStatus();
}

void NodeCacheImpl::DropPin(const std::string& owner, const std::string& key) {
  auto it = pins_.find(owner);
  if (it == pins_.end() || it->second.erase(key) == 0) return;
  if (it->second.empty()) pins_.erase(it);
  auto c = pin_count_.find(key);
  if (c != pin_count_.end() && --c->second == 0) pin_count_.erase(c);
}

// ---- Fetching.

absl::Status NodeCacheImpl::Validate(const RemoteObject& obj, bool need_sha) const {
  absl::StatusOr<ObjectUrl> u = ParseObjectUrl(obj.url);
  if (!u.ok()) return u.status();
  if (obj.sha256.empty() && need_sha) {
    return absl::InvalidArgumentError(
        absl::StrCat(u->shown, ": a prewarmed object needs a sha256"));
  }
  if (!obj.sha256.empty() && !IsHex64(obj.sha256)) {
    return absl::InvalidArgumentError(absl::StrCat(u->shown, ": sha256 must be 64 hex digits (got ",
                                                   base::QuoteForMessage(obj.sha256), ")"));
  }
  if (obj.size < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat(u->shown, ": size must be >= 0, or -1 for unknown (got ", obj.size, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> NodeCacheImpl::Fetch(const RemoteObject& obj, const std::string& key,
                                                 int64_t* bytes, bool* hit) {
  *hit = false;
  *bytes = 0;
  std::shared_ptr<Flight> flight;
  {
    base::MutexLock lock(mu_);
    auto it = objects_.find(key);
    if (it != objects_.end() && ::access(ObjectPath(key).c_str(), F_OK) != 0) {
      used_ -= it->second.charge;  // removed behind the cache's back: fetch it again
      objects_.erase(it);
      it = objects_.end();
    }
    if (it != objects_.end()) {
      ++stats_.hits;
      *hit = true;
      Touch(key, it->second);
      return ObjectPath(key);
    }
    ++stats_.misses;
    auto f = flights_.find(key);
    if (f != flights_.end()) {
      // Another caller is downloading it: share that download's outcome.
      flight = f->second;
      lock.Wait(cv_, [&] { return flight->done; });
      if (!flight->status.ok()) return flight->status;
      return ObjectPath(key);
    }
    flight = std::make_shared<Flight>();
    flights_[key] = flight;
  }
  bool bad_checksum = false;
  const absl::Status st = Download(obj, key, bytes, &bad_checksum);
  {
    base::MutexLock lock(mu_);
    flight->done = true;
    flight->status = st;
    flights_.erase(key);
    if (bad_checksum) {
      ++stats_.checksum_failures;
    } else if (!st.ok()) {
      ++stats_.fetch_failures;
    }
  }
  cv_.notify_all();
  if (!st.ok()) return st;
  return ObjectPath(key);
}

absl::Status NodeCacheImpl::Download(const RemoteObject& obj, const std::string& key,
                                     int64_t* bytes, bool* bad_checksum) {
  {
    base::MutexLock lock(mu_);
    lock.Wait(cv_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return active_ < o_.max_concurrent || cancelled_.load();
    });
    if (cancelled_.load()) return CancelledError(obj);
    ++active_;
  }
  DownloadState d;
  d.obj = &obj;
  d.key = key;
  d.partial = PartialPath(key);
  {
    base::MutexLock lock(mu_);
    auto it = partials_.find(key);
    if (it != partials_.end()) {
      d.charged = it->second;  // the interrupted partial's charge becomes this download's
      partials_.erase(it);
    }
  }
  absl::Status st = Transfer(d);
  bool installed = false;
  if (st.ok()) {
    st = Install(d);
    installed = st.ok();
  }
  Settle(d, installed);
  *bytes = d.fetched;
  *bad_checksum = d.bad_checksum;
  {
    base::MutexLock lock(mu_);
    --active_;
  }
  cv_.notify_all();
  return st;
}

absl::Status NodeCacheImpl::Transfer(DownloadState& d) {
  absl::StatusOr<ObjectUrl> u = ParseObjectUrl(d.obj->url);
  if (!u.ok()) return u.status();
  d.fd = ::open(d.partial.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (d.fd < 0) return IoError("cannot create", d.partial, errno);
  struct stat st;
  if (::fstat(d.fd, &st) != 0) return IoError("cannot stat", d.partial, errno);
  d.offset = st.st_size;
  auto restart = [&]() -> absl::Status {
    if (::ftruncate(d.fd, 0) != 0) return IoError("cannot truncate", d.partial, errno);
    d.offset = 0;
    return absl::OkStatus();
  };
  const int64_t size = d.obj->size;
  if (size >= 0 && d.offset > size) {
    if (absl::Status s = restart(); !s.ok()) return s;
  }
  // What is on disk stays charged; the whole object is reserved before anything is written.
  if (absl::Status s = Reserve(d, std::max<int64_t>(d.offset, size)); !s.ok()) return s;
  if (size >= 0 && d.offset == size) {
    d.total = size;  // complete already (stopped between the last byte and the rename)
    return absl::OkStatus();
  }
  absl::Status s = Attempt(d, *u);
  if (s.code() == absl::StatusCode::kOutOfRange) {
    // 416: the partial is not a prefix the store can continue (it is longer than the object).
    if (absl::Status r = restart(); !r.ok()) return r;
    s = Attempt(d, *u);
  }
  return s;
}

absl::Status NodeCacheImpl::Attempt(DownloadState& d, const ObjectUrl& u) {
  std::unique_ptr<httplib::Client> client = NewClient(u, o_);
  if (client == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("GET ", u.shown, ": not a usable URL"));
  }
  httplib::Headers headers = {{"Accept-Encoding", "identity"},
                              {"User-Agent", "seedance-node-cache"}};
  if (d.offset > 0) headers.emplace("Range", absl::StrCat("bytes=", d.offset, "-"));
  d.received = 0;
  d.total = -1;
  absl::Status err;
  const auto stall = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o_.stall_timeout_s));
  Clock::time_point window_start = Clock::now();
  Clock::time_point last_byte = window_start;
  Clock::duration window_wait{0};
  int64_t window_bytes = 0;
  auto on_reply = [&](const httplib::Response& r) {
    err = OnReply(d, u, r);
    last_byte = window_start = Clock::now();
    return err.ok();
  };
  auto on_body = [&](const char* data, size_t n) {
    if (cancelled_.load()) {
      err = CancelledError(*d.obj);
      return false;
    }
    const int64_t at = d.offset + d.received;
    if (at + static_cast<int64_t>(n) > d.total) {
      err = absl::DataLossError(absl::StrCat("GET ", u.shown, ": the store sent more than the ",
                                             d.total, " bytes it announced"));
      return false;
    }
    for (size_t done = 0; done < n;) {
      const ssize_t w = ::pwrite(d.fd, data + done, n - done, at + static_cast<int64_t>(done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        err = IoError("cannot write", d.partial, errno);
        return false;
      }
      done += static_cast<size_t>(w);
    }
    d.received += static_cast<int64_t>(n);
    d.fetched += static_cast<int64_t>(n);
    bytes_fetched_ += static_cast<int64_t>(n);
    window_wait += throttle_.Acquire(n);
    window_bytes += static_cast<int64_t>(n);
    last_byte = Clock::now();
    if (last_byte - window_start - window_wait >= stall) {
      if (static_cast<double>(window_bytes) <
          static_cast<double>(o_.min_bytes_per_s) * o_.stall_timeout_s) {
        err = absl::DeadlineExceededError(
            absl::StrCat("GET ", u.shown, ": the store is too slow: ", window_bytes, " bytes in ",
                         base::FormatNumber(o_.stall_timeout_s), " s, below ", o_.min_bytes_per_s,
                         " bytes/s (the partial download is kept for a resume)"));
        return false;
      }
      window_start = last_byte;
      window_bytes = 0;
      window_wait = Clock::duration::zero();
    }
    return true;
  };
  httplib::Result res = client->Get(u.target, headers, on_reply, on_body);
  if (!err.ok()) return err;
  const std::string got = absl::StrCat(d.offset + d.received, " of ",
                                       d.total < 0 ? std::string("?") : absl::StrCat(d.total));
  if (!res) {
    if (res.error() == httplib::Error::Read && Clock::now() - last_byte >= stall * 99 / 100) {
      return absl::DeadlineExceededError(
          absl::StrCat("GET ", u.shown, ": the store stalled: no byte for ",
                       base::FormatNumber(o_.stall_timeout_s), " s (", got,
                       " bytes; the partial download is kept for a resume)"));
    }
    return absl::UnavailableError(
        absl::StrCat("GET ", u.shown, ": ", TransportText(res.error()), " (", got, " bytes)"));
  }
  if (d.total < 0 || d.offset + d.received != d.total) {
    return absl::UnavailableError(
        absl::StrCat("GET ", u.shown, ": the reply ended early (", got, " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status NodeCacheImpl::OnReply(DownloadState& d, const ObjectUrl& u,
                                    const httplib::Response& r) {
  if (r.status == 206 && d.offset > 0) {
    int64_t first = 0, total = 0;
    const std::string range = r.get_header_value("Content-Range");
    if (!ParseContentRange(range, &first, &total) || first != d.offset) {
      return absl::DataLossError(absl::StrCat("GET ", u.shown, ": a 206 reply with Content-Range ",
                                              base::QuoteForMessage(range), ", expected bytes ",
                                              d.offset, "-"));
    }
    d.total = total;
    d.resumed = true;
    base::MutexLock lock(mu_);
    ++stats_.resumed;
  } else if (r.status == 200) {
    if (d.offset > 0) {
      // The store ignored the Range: start again from byte 0.
      if (::ftruncate(d.fd, 0) != 0) return IoError("cannot truncate", d.partial, errno);
      d.offset = 0;
    }
    if (!absl::SimpleAtoi(r.get_header_value("Content-Length"), &d.total) || d.total < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("GET ", u.shown,
                       ": the reply has no Content-Length, and the object's size was not given "
                       "(the cache reserves an object's size before downloading it)"));
    }
  } else if (r.status == 416 && d.offset > 0) {
    return absl::OutOfRangeError("416");  // Transfer starts again from 0
  } else {
    return HttpError("GET", u, r.status);
  }
  if ((d.obj->size >= 0 && d.total != d.obj->size) || d.total < d.offset) {
    return absl::DataLossError(absl::StrCat("GET ", u.shown, ": the store has ", d.total,
                                            " bytes, expected ", d.obj->size));
  }
  return Reserve(d, d.total);
}

absl::Status NodeCacheImpl::Install(DownloadState& d) {
  if (::fsync(d.fd) != 0) return IoError("cannot fsync", d.partial, errno);
  ::close(d.fd);
  d.fd = -1;
  if (!d.obj->sha256.empty()) {
    absl::StatusOr<std::string> got = Sha256File(d.partial);
    if (!got.ok()) return got.status();
    const std::string want = absl::AsciiStrToLower(d.obj->sha256);
    if (*got != want) {
      std::error_code ec;
      fs::remove(d.partial, ec);
      d.bad_checksum = true;
      return absl::DataLossError(absl::StrCat(
          "GET ", ParseObjectUrl(d.obj->url).value_or(ObjectUrl{}).shown,
          ": sha256 mismatch: expected ", want, ", got ", *got, " (the download was removed)"));
    }
  }
  const std::string dest = ObjectPath(d.key);
  if (::rename(d.partial.c_str(), dest.c_str()) != 0)
    return IoError("cannot rename to", dest, errno);
  return FsyncPath(objects_dir_, /*dir=*/true);
}

void NodeCacheImpl::Settle(DownloadState& d, bool installed) {
  if (d.fd >= 0) ::close(d.fd);
  d.fd = -1;
  struct stat st;
  const bool partial_left = !installed && ::stat(d.partial.c_str(), &st) == 0;
  if (partial_left && st.st_size == 0) ::unlink(d.partial.c_str());
  base::MutexLock lock(mu_);
  if (installed) {
    Object ob;
    ob.size = d.total;
    ob.charge = Charge(d.total);
    ob.inserted = ob.last = ++tick_;
    used_ += ob.charge - d.charged;
    objects_[d.key] = ob;
    Stamp(ObjectPath(d.key));
  } else if (partial_left && st.st_size > 0) {
    // Interrupted: the partial stays for a resume, charged what it holds.
    partials_[d.key] = Charge(st.st_size);
    used_ += Charge(st.st_size) - d.charged;
  } else {
    used_ -= d.charged;
  }
  d.charged = 0;
}

// ---- The public calls.

std::vector<FetchResult> NodeCacheImpl::Prewarm(const std::vector<RemoteObject>& objs,
                                                std::string_view pin_owner) {
  std::vector<FetchResult> out(objs.size());
  absl::flat_hash_set<std::string> keys;
  int64_t need = 0;
  for (size_t i = 0; i < objs.size(); ++i) {
    out[i].url = objs[i].url;
    out[i].status = Validate(objs[i], /*need_sha=*/true);
    if (out[i].status.ok() && keys.insert(KeyOf(objs[i])).second) need += Charge(objs[i].size);
  }
  if (need > o_.budget_bytes) {
    const absl::Status too_big = absl::InvalidArgumentError(absl::StrCat(
        "the prewarm list needs ", need, " bytes on disk, more than the cache's budget of ",
        o_.budget_bytes, " bytes"));
    for (FetchResult& r : out) r.status = too_big;
    return out;
  }
  const std::string owner(pin_owner);
  {
    base::MutexLock lock(mu_);
    for (const std::string& key : keys) {
      if (pins_[owner].insert(key).second) ++pin_count_[key];
    }
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < objs.size();) {
      if (!out[i].status.ok()) continue;
      absl::StatusOr<std::string> path =
          Fetch(objs[i], KeyOf(objs[i]), &out[i].bytes_fetched, &out[i].hit);
      if (path.ok()) {
        out[i].path = *path;
      } else {
        out[i].status = path.status();
      }
    }
  };
  const size_t threads = std::min<size_t>(static_cast<size_t>(o_.max_concurrent), objs.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  base::MutexLock lock(mu_);
  for (size_t i = 0; i < objs.size(); ++i) {
    if (!out[i].status.ok()) DropPin(owner, KeyOf(objs[i]));
  }
  return out;
}

void NodeCacheImpl::Unpin(std::string_view pin_owner) {
  base::MutexLock lock(mu_);
  auto it = pins_.find(Sv(pin_owner));
  if (it == pins_.end()) return;
  for (const std::string& key : it->second) {
    auto c = pin_count_.find(key);
    if (c != pin_count_.end() && --c->second == 0) pin_count_.erase(c);
  }
  pins_.erase(it);
}

absl::StatusOr<std::string> NodeCacheImpl::Get(const RemoteObject& obj) {
  if (absl::Status s = Validate(obj, /*need_sha=*/false); !s.ok()) return s;
  int64_t bytes = 0;
  bool hit = false;
  return Fetch(obj, KeyOf(obj), &bytes, &hit);
}

absl::StatusOr<std::string> NodeCacheImpl::LocalPath(const RemoteObject& obj) const {
  const std::string key = KeyOf(obj);
  base::MutexLock lock(mu_);
  if (!objects_.contains(key)) {
    return absl::NotFoundError(absl::StrCat(ParseObjectUrl(obj.url).value_or(ObjectUrl{}).shown,
                                            ": not in the node cache"));
  }
  return ObjectPath(key);
}

absl::Status NodeCacheImpl::Demote(const RemoteObject& obj, std::string_view put_url) {
  if (absl::Status s = Validate(obj, /*need_sha=*/false); !s.ok()) return s;
  absl::StatusOr<ObjectUrl> u = ParseObjectUrl(put_url);
  if (!u.ok()) return u.status();
  const std::string key = KeyOf(obj);
  const std::string path = ObjectPath(key);
  int fd = -1;
  {
    base::MutexLock lock(mu_);
    if (!objects_.contains(key)) {
      return absl::NotFoundError(absl::StrCat(ParseObjectUrl(obj.url).value_or(ObjectUrl{}).shown,
                                              ": not in the node cache"));
    }
    if (Pinned(key) || flights_.contains(key)) {
      return absl::FailedPreconditionError(
          absl::StrCat(ParseObjectUrl(obj.url).value_or(ObjectUrl{}).shown,
                       ": pinned by a prewarm (Unpin first); not demoted"));
    }
    // Opened under the lock, so an eviction racing with the upload cannot pull the file away.
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open", path, errno);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("cannot stat", path, err);
  }
  std::unique_ptr<httplib::Client> client = NewClient(*u, o_);
  if (client == nullptr) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat("PUT ", u->shown, ": not a usable URL"));
  }
  std::vector<char> buf(kIoChunk);
  auto provide = [&](size_t offset, size_t length, httplib::DataSink& sink) {
    const ssize_t n =
        ::pread(fd, buf.data(), std::min(length, buf.size()), static_cast<off_t>(offset));
    return n > 0 && sink.write(buf.data(), static_cast<size_t>(n));
  };
  httplib::Result res =
      client->Put(u->target, {{"User-Agent", "seedance-node-cache"}},
                  static_cast<size_t>(st.st_size), provide, "application/octet-stream");
  ::close(fd);
  if (!res) {
    return absl::UnavailableError(absl::StrCat("PUT ", u->shown, ": ", TransportText(res.error())));
  }
  if (res->status < 200 || res->status > 299) return HttpError("PUT", *u, res->status);
  base::MutexLock lock(mu_);
  auto it = objects_.find(key);
  if (it != objects_.end() && !Pinned(key)) {
    ::unlink(path.c_str());
    used_ -= it->second.charge;
    objects_.erase(it);
  }
  return absl::OkStatus();
}

void NodeCacheImpl::Cancel() {
  {
    base::MutexLock lock(mu_);
    cancelled_.store(true);
  }
  cv_.notify_all();
}

NodeCacheStats NodeCacheImpl::stats() const {
  base::MutexLock lock(mu_);
  NodeCacheStats s = stats_;
  s.bytes_fetched = bytes_fetched_.load();
  s.bytes_used = used_;
  s.objects = static_cast<int64_t>(objects_.size());
  return s;
}

}  // namespace

std::string NodeCache::KeyOf(const RemoteObject& obj) {
  return IsHex64(obj.sha256) ? absl::AsciiStrToLower(obj.sha256) : Sha256Hex(obj.url);
}

absl::StatusOr<std::unique_ptr<NodeCache>> NodeCache::Open(NodeCacheOptions o) {
  if (absl::Status s = CheckOptions(o); !s.ok()) return s;
  for (const std::string& d : {o.dir, o.dir + "/objects", o.dir + "/partial"}) {
    std::error_code ec;
    if (fs::is_directory(d, ec)) continue;
    fs::create_directories(d, ec);
    if (ec) return IoError("cannot create directory", d, ec.value());
    fs::permissions(d, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return IoError("cannot set mode 0700 on", d, ec.value());
  }
  struct stat st;
  if (::stat(o.dir.c_str(), &st) != 0) return IoError("cannot stat", o.dir, errno);
  const int64_t unit = st.st_blksize >= 512 ? static_cast<int64_t>(st.st_blksize) : 4096;
  auto cache = std::make_unique<NodeCacheImpl>(std::move(o), unit);
  if (absl::Status s = cache->Load(); !s.ok()) return s;
  return std::unique_ptr<NodeCache>(std::move(cache));
}

absl::StatusOr<std::vector<RemoteObject>> ParsePrewarmList(std::string_view json) {
  absl::StatusOr<nlohmann::json> doc = base::ParseJsonDocument(json, "seedance.io/prewarm", 8);
  if (!doc.ok()) return doc.status();
  if (absl::Status s = base::CheckJsonKind(*doc, "$", base::JsonKind::kArray); !s.ok()) return s;
  if (doc->size() > kMaxPrewarmObjects) {
    return base::JsonError("$", absl::StrCat("must hold at most ", kMaxPrewarmObjects,
                                             " objects (got ", doc->size(), ")"));
  }
  std::vector<RemoteObject> out;
  for (size_t i = 0; i < doc->size(); ++i) {
    RemoteObject obj;
    base::JsonFields<nlohmann::json> f((*doc)[i], base::JsonPathIndex("$", i));
    f.String("url", &obj.url, /*required=*/true, kMaxPrewarmUrlBytes);
    f.String("sha256", &obj.sha256, /*required=*/true, 64);
    f.Int("size", &obj.size, 0, kMaxPrewarmSize);
    f.NoOthers();
    if (!f.ok()) return f.status();
    const std::string scheme = absl::AsciiStrToLower(obj.url.substr(0, obj.url.find("://") + 3));
    if (scheme != "http://" && scheme != "https://") {
      return base::JsonError(f.At("url"), absl::StrCat("must start with http:// or https:// (got ",
                                                       base::QuoteForMessage(obj.url), ")"));
    }
    for (char c : obj.url) {
      if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
        return base::JsonError(f.At("url"), "must not hold spaces or control characters");
      }
    }
    if (!IsHex64(obj.sha256)) {
      return base::JsonError(f.At("sha256"), absl::StrCat("must be 64 hex digits (got ",
                                                          base::QuoteForMessage(obj.sha256), ")"));
    }
    obj.sha256 = absl::AsciiStrToLower(obj.sha256);
    out.push_back(std::move(obj));
  }
  return out;
}

}  // namespace seedance::nodeagent
