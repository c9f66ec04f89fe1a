// The node-local cache of the data path (issue 40 item 4): files fetched over HTTP(S) from an
// object store (S3 path-style URLs work: http://HOST/BUCKET/KEY) into a local directory kept
// under a byte budget, verified by sha256, resumable, and prewarmed ahead of the pods that need
// them. `seedance node-agent` drives one NodeCache per node.
//
// On disk, under NodeCacheOptions::dir (created 0700 when missing):
//   objects/KEY   complete objects only: a download is renamed here after its sha256 matched (or,
//                 for an object given without a sha256, after exactly its Content-Length
//                 arrived), with fsync of the file and then of objects/. Only these are served.
//   partial/KEY   downloads in progress or interrupted; never served. A later fetch of the same
//                 KEY resumes one with an HTTP Range request from its length (from 0 again when
//                 the store answers 200 instead of 206, or when the partial is longer than the
//                 object).
//   KEY is the object's sha256 (64 lowercase hex digits) when it has one, else the sha256 of its
//   URL. Access order is persisted as the objects' mtimes (touched on every hit), so a restart
//   (Open after a crash or SIGKILL) re-indexes objects/ in access order, keeps partial/ for
//   resuming, and removes anything else it finds there (stray temporary files).
//
// The budget: the bytes on disk under objects/ and partial/ never exceed budget_bytes. Each file
// is charged its size rounded up to the directory's allocation unit (st_blksize, usually 4 KiB),
// so `du` agrees. An object's whole size is reserved before its first byte is written (from
// RemoteObject::size, else from the reply's Content-Length or Content-Range), evicting unpinned
// complete objects by the policy first and interrupted partials before them; when it still does
// not fit, that object fails with ResourceExhausted and nothing of it is written.
//
// Eviction policies: the node cache ranks its own victims, so it supports the PolicyNames()
// policies whose order it can keep on disk: "lru" (least recently used first), "fifo" (oldest
// download first) and "lru2" (LRU-K with K = 2, O'Neil et al., SIGMOD '93: objects seen once go
// first, then by the older of the last two accesses). The simulator's Policy interface does not
// name its victims, so the other simulator policies are refused by Open (InvalidArgument).
//
// Errors of a fetch (FetchResult::status, Get): a URL that is not http(s) -> InvalidArgument; a
// connection or TLS failure -> Unavailable; an HTTP 404 -> NotFound, 401 -> Unauthenticated,
// 403 -> PermissionDenied, 5xx -> Unavailable, other non-2xx -> FailedPrecondition, each naming the
// URL (userinfo redacted, never a credential) and the HTTP status; a redirect is not followed
// (FailedPrecondition naming the status); a stall (see stall_timeout_s) -> DeadlineExceeded,
// the partial kept for a later resume; a sha256 mismatch -> DataLoss "expected X, got Y", the bad
// file removed; a full budget -> ResourceExhausted; a local I/O failure -> Internal naming the
// path and errno.
//
// Thread-safety: NodeCache is thread-safe; any number of threads may call Get, Prewarm, Unpin,
// Demote and stats at once. Concurrent fetches of one KEY share one download. ParsePrewarmList is
// a pure function. Two NodeCache objects (or processes) must not share a directory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::nodeagent {

// One object to fetch: an http:// or https:// URL, its expected sha256 (hex; required in a
// prewarm list, optional for Get) and its size in bytes when known (-1: unknown; the reply's
// Content-Length is used).
struct RemoteObject {
  std::string url;
  std::string sha256;
  int64_t size = -1;
};

// Limits of ParsePrewarmList.
inline constexpr size_t kMaxPrewarmObjects = 4096;
inline constexpr size_t kMaxPrewarmUrlBytes = 2048;

// Parses the pod annotation `seedance.io/prewarm`, a JSON array (nesting at most 8 levels) of at
// most kMaxPrewarmObjects objects, each with exactly these members:
//   "url":    required string, 1..kMaxPrewarmUrlBytes bytes, starting http:// or https://
//             (case-insensitive), no whitespace or control bytes;
//   "sha256": required string of exactly 64 hex digits (either case; returned lowercase);
//   "size":   optional integer in 0..2^53 (bytes); absent -> -1.
// Errors: InvalidArgument with the JSON path of the culprit, in base/json_path.h syntax:
//   "$: must be an array (got an object)", "$[2].sha256: must be 64 hex digits (got \"abc\")",
//   "$[0]: missing required key \"url\"", "$[1].szie: unknown key \"szie\"; did you mean
//   \"size\"? ...", "$: at most 4096 objects (got 5000)"; text that is not JSON:
//   "seedance.io/prewarm:1: not JSON (byte N)".
absl::StatusOr<std::vector<RemoteObject>> ParsePrewarmList(std::string_view json);

struct NodeCacheOptions {
  // The cache directory; created (mode 0700, parents too) when missing.
  std::string dir;
  // The most bytes objects/ and partial/ may hold on disk (see the header comment). > 0.
  int64_t budget_bytes = 0;
  // The eviction policy: "lru", "fifo" or "lru2" (case-insensitive).
  std::string policy = "lru";
  // Downloads running at once, over all callers (Prewarm and Get). 1..256.
  int max_concurrent = 4;
  // A cap on the bytes per second of all downloads together; 0 = none. Over any span of T
  // seconds the downloads receive at most max_bytes_per_s * (T + 0.1) bytes.
  int64_t max_bytes_per_s = 0;
  // The longest a TCP connect (and TLS handshake) may take.
  double connect_timeout_s = 10;
  // A download stalls (DeadlineExceeded, partial kept) when no byte arrives for stall_timeout_s,
  // or when fewer than min_bytes_per_s * stall_timeout_s bytes arrive in any stall_timeout_s
  // window (time spent waiting for the bandwidth cap excluded): a store that drips slower than
  // min_bytes_per_s is an error, as curl's --speed-limit/--speed-time.
  double stall_timeout_s = 30;
  int64_t min_bytes_per_s = 1024;
  // For https:// URLs: a PEM file of trusted CAs ("" = the system's).
  std::string ca_file;
};

// The outcome of one object of a Prewarm.
struct FetchResult {
  std::string url;            // as given (with any userinfo: do not log it; use the status message)
  std::string path;           // the local path when status is OK, else ""
  bool hit = false;           // it was already local
  int64_t bytes_fetched = 0;  // bytes received for it by this call (a resume: the rest only)
  absl::Status status;
};

// Counters since Open (bytes_used: now).
struct NodeCacheStats {
  int64_t hits = 0;               // an object asked for was already local
  int64_t misses = 0;             // it was not (one per Get/Prewarm object that needed a fetch)
  int64_t bytes_fetched = 0;      // bytes received from stores (body bytes)
  int64_t evictions = 0;          // complete objects and interrupted partials removed for space
  int64_t resumed = 0;            // downloads continued from a partial with a 206 reply
  int64_t checksum_failures = 0;  // downloads whose sha256 did not match (file removed)
  int64_t fetch_failures = 0;     // fetches that ended in any other error
  int64_t bytes_used = 0;         // bytes charged now: objects, partials and reservations
  int64_t objects = 0;            // complete objects now
};

class NodeCache {
 public:
  virtual ~NodeCache() = default;

  // Opens (creating when needed) the cache in o.dir: re-indexes objects/ (by mtime), keeps
  // partial/ for resuming, removes other files there. Errors: InvalidArgument for bad options (an
  // unknown policy, a budget <= 0, max_concurrent out of range, negative timeouts); Internal for a
  // directory that cannot be created or read (naming it and errno). When what is already on disk
  // exceeds the budget (a smaller budget than last time), the policy evicts down to it here.
  static absl::StatusOr<std::unique_ptr<NodeCache>> Open(NodeCacheOptions o);

  // Makes every object local and verified (resuming partial downloads), up to max_concurrent at
  // once, and pins each against eviction under `pin_owner` (e.g. "NAMESPACE/POD") until
  // Unpin(pin_owner); pins accumulate over calls. Returns one result per object, in order.
  // Every object must carry a sha256 (else that object fails with InvalidArgument). When the
  // known sizes sum to more than the budget, every result is InvalidArgument and nothing is
  // fetched. An object that failed is not pinned. Blocks until all are done.
  virtual std::vector<FetchResult> Prewarm(const std::vector<RemoteObject>& objs,
                                           std::string_view pin_owner) = 0;

  // Drops every pin of `pin_owner`; the objects stay cached, evictable. Unknown owners: no-op.
  virtual void Unpin(std::string_view pin_owner) = 0;

  // The local path of the complete (verified when obj.sha256 is given) object, fetching it on a
  // miss (also when its file was removed behind the cache's back); counts a hit or a miss.
  // Errors: those of a fetch (above), InvalidArgument for a bad sha256 or size. The file stays
  // until evicted: a caller that opens it keeps reading it after an eviction (POSIX unlink), but
  // should pin objects it needs to last.
  virtual absl::StatusOr<std::string> Get(const RemoteObject& obj) = 0;

  // The local path when the object is complete locally, else NotFound; fetches nothing, counts
  // nothing, touches nothing.
  virtual absl::StatusOr<std::string> LocalPath(const RemoteObject& obj) const = 0;

  // Demotion (tiering): PUTs the local object to `put_url` (WebDAV/S3 PUT, streamed from disk,
  // Content-Length set) and, on a 2xx reply, removes the local copy. Errors: NotFound when the
  // object is not local; FailedPrecondition when it is pinned or being fetched; the HTTP errors
  // above for the PUT (the local copy stays).
  virtual absl::Status Demote(const RemoteObject& obj, std::string_view put_url) = 0;

  // Stops for good (a node agent shutting down): downloads in flight end at their next bytes
  // with Cancelled, their partial files kept for a resume by the next Open; fetches waiting for a
  // slot, and every later fetch, fail with Cancelled at once. Hits are still served. A download
  // whose store sends nothing ends within stall_timeout_s. Thread-safe; idempotent.
  virtual void Cancel() = 0;

  virtual NodeCacheStats stats() const = 0;

  // The key of `obj` (its lowercase sha256, or the sha256 of its URL) and the directory.
  static std::string KeyOf(const RemoteObject& obj);
  virtual const std::string& dir() const = 0;

 protected:
  NodeCache() = default;
};

}  // namespace seedance::nodeagent
