// Durable state of `seedance server`: nodes, pods, generic objects (ObjectRecord), the revision
// counter, the policy text and the recent events (for watch ?since=), behind the Store interface;
// the SQLite implementation keeps them in one database in WAL mode under the --state directory. The
// store is schema-agnostic: specs and objects are opaque JSON text chosen by the server.
// docs/state.md describes the files, the schema, the durability promise and recovery.
//
// Thread safety (SQLite): Load and Commit are serialised by an internal mutex (one writer
// connection); EventsSince runs on its own reader connection and may be called from any thread
// concurrently with Commit; oldest_event_revision and revision are lock-free. A background thread
// checkpoints the WAL (StoreOptions::checkpoint_pages).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::store {

struct NodeRecord {
  std::string name;       // the key; not empty
  std::string spec_json;  // opaque to the store
  bool cordoned = false;
  int64_t revision = 0;  // revision of the last change
};

struct PodRecord {
  std::string uid;  // the key; not empty
  std::string ns, name;
  std::string spec_json;  // opaque to the store
  std::string phase;      // e.g. "Pending", "Bound"
  std::string node;       // empty when not placed
  std::string gpus_json;  // e.g. [{"index":0,"milli":500}]
  int64_t revision = 0;   // revision of the last change
};

struct EventRecord {
  int64_t revision = 0;  // unique and increasing across the store's life
  std::string type;      // e.g. "PodAdded"
  std::string object_json;
};

// A generic durable record for subsystems beyond nodes and pods (experiments first): the store
// keeps it by (kind, key) and never looks inside `json`.
struct ObjectRecord {
  // e.g. "experiment", "experiment-events": 1 to kMaxObjectKindBytes of [a-z0-9-].
  std::string kind;
  // Unique within its kind: 1 to kMaxObjectKeyBytes bytes, any but NUL ('/' and non-UTF-8 too).
  std::string key;
  std::string json;  // opaque to the store
  // The revision of the batch that last put it: Commit stores the batch's `revision` here
  // whatever the record in put_objects holds; Load returns it.
  int64_t revision = 0;
};

inline constexpr size_t kMaxObjectKindBytes = 63;
inline constexpr size_t kMaxObjectKeyBytes = 1024;

struct Snapshot {
  // Nodes and pods in the order they were first put (an update keeps a record's place; a record
  // deleted and put again goes to the end), so a server replaying them gets the same node indices
  // and the same queue order as before the restart.
  std::vector<NodeRecord> nodes;
  std::vector<PodRecord> pods;
  int64_t revision = 0;               // the revision counter of the last Commit (0 for a new store)
  std::string policy_text;            // empty when none was ever committed
  std::vector<ObjectRecord> objects;  // ordered by kind, then key (bytewise, as memcmp)
};

// Applied in one transaction, in this order.
struct Batch {
  std::vector<NodeRecord> put_nodes;      // insert or update by name
  std::vector<std::string> delete_nodes;  // absent names are ignored
  std::vector<PodRecord> put_pods;        // insert or update by uid
  std::vector<std::string> delete_pods;   // absent uids are ignored
  // Objects are applied deletes first: prefix deletes, deletes, then puts. So a batch can
  // replace every object under a prefix, and a delete and a put of one object leave it put.
  std::vector<ObjectRecord> put_objects;  // insert or replace by (kind, key)
  std::vector<std::pair<std::string, std::string>> delete_objects;  // (kind, key); absent ignored
  // (kind, key prefix): every object of that kind whose key starts with the (non-empty) prefix.
  std::vector<std::pair<std::string, std::string>> delete_object_prefixes;
  // Appended to the event log. Revisions must be strictly increasing, above every event already
  // in the store, and not above `revision`.
  std::vector<EventRecord> events;
  int64_t revision = 0;  // the new revision counter: must not be below the store's current one
  std::optional<std::string> policy_text;
  bool empty() const;
};

struct StoreOptions {
  int64_t event_retention = 200000;  // events kept for watch ?since= (the newest ones); >= 1
  // PRAGMA quick_check on Open (O(file size), about 0.1 s per 100,000 pods): refuse a corrupt
  // file before serving from it. Turning it off saves that time and serves from an unchecked file.
  bool verify_on_open = true;
  // A background thread checkpoints the WAL into state.db (PASSIVE, on its own connection) once
  // it holds this many pages (4 KiB each), so no Commit waits for a checkpoint's writes and
  // fsync. Should the WAL still reach 16 times this (the background checkpoints never caught up
  // with a quiet moment), Commit checkpoints itself once. 0: SQLite's automatic checkpoint in
  // the committing thread instead (every 1,000 pages).
  int checkpoint_pages = 1000;
};

// The database's identity: PRAGMA application_id ("SDNC") and user_version. Version 2 added the
// objects table; Open migrates a version-1 file (seedance 0.3.0 and before) in place.
inline constexpr int32_t kApplicationId = 0x53444E43;
inline constexpr int32_t kSchemaVersion = 2;

// OK when `kind` is a valid ObjectRecord kind ([a-z0-9-]{1,63}); InvalidArgument naming it
// otherwise. Both stores check every kind, key and prefix of a batch with these.
absl::Status CheckObjectKind(std::string_view kind);
// OK when `key` is a valid ObjectRecord key (1 to 1024 bytes, no NUL), or, with `prefix`, a valid
// key prefix for delete_object_prefixes (the same rules).
absl::Status CheckObjectKey(std::string_view key, bool prefix = false);
// The objects' part of the rules of a Batch: every kind, key and prefix above.
absl::Status CheckBatchObjects(const Batch& batch);

// The store a server keeps its state in. Two implementations: SQLite under a --state directory
// (Store::Open, this header; docs/state.md) and etcd (seedance/ha/etcd_store.h; docs/ha.md).
class Store {
 public:
  // The SQLite store. Creates DIR (0700) and DIR/state.db (0600, created complete under a
  // temporary name and renamed into place) if absent. WAL, synchronous=FULL (a commit is
  // fsync'd), an application_id + schema version so a foreign or newer file is refused
  // (FailedPrecondition naming the file), a quick_check so a corrupt file is refused (DataLoss),
  // never reset. A lock file DIR/lock (flock) so two servers cannot share one --state
  // (FailedPrecondition naming the holder's pid). InvalidArgument for an empty DIR or options out
  // of range.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& dir, StoreOptions o = {});
  virtual ~Store() = default;

  virtual absl::StatusOr<Snapshot> Load() = 0;  // everything, fast: 100,000 pods well under 1 s

  // One atomic change, durable on return (SQLite: fsync'd; etcd: on a quorum). InvalidArgument
  // (nothing written) for a batch breaking the rules above (empty key, a bad object kind or key,
  // an empty prefix, revisions going backwards). SQLite: an I/O failure returns
  // Unavailable/DataLoss and leaves the store unusable: every later Commit fails with
  // FailedPrecondition, since after a failed fsync the file's state is unknown; the server should
  // exit and recover from disk on restart. etcd: Aborted when this process is no longer the leader
  // (fenced; nothing written), Unavailable when etcd could not be reached (the change may or may
  // not be in etcd); reloadable() is true.
  virtual absl::Status Commit(const Batch& batch) = 0;

  // Events with revision > after_revision, oldest first, at most `limit` (0 = none).
  // Check oldest_event_revision() AFTER the call: if after_revision + 1 < it, events the watcher
  // needs were dropped by retention (possibly meanwhile) and it must relist.
  virtual absl::StatusOr<std::vector<EventRecord>> EventsSince(int64_t after_revision,
                                                               size_t limit) = 0;

  // The revision from which the event log is complete: every event with a revision >= this is
  // still in the store (one above the highest revision dropped by retention; 1 when nothing was
  // ever dropped). A watch for the events after `since` is served iff since + 1 >= this;
  // otherwise it must relist (HTTP 410).
  virtual int64_t oldest_event_revision() const = 0;
  virtual int64_t revision() const = 0;     // of the last Commit
  virtual int64_t event_count() const = 0;  // events retained
  // Where the state is, for messages: DIR/state.db, or etcd://HOST:PORT,...PREFIX.
  virtual const std::string& path() const = 0;
  // True when a failed Commit leaves the store usable and the caller may rebuild its state from
  // Load() (etcd: another replica may have taken over); false when the process must exit (SQLite).
  virtual bool reloadable() const { return false; }
};

}  // namespace seedance::store
