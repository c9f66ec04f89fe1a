// The SQLite-backed store. See include/seedance/store/store.h and docs/state.md.
#include "seedance/store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/base/build_info.h"
#include "seedance/base/mutex.h"

namespace seedance::store {
namespace {

constexpr char kDbName[] = "state.db";
constexpr char kInitName[] = "state.db.init";
constexpr char kLockName[] = "lock";

// Meta keys.
constexpr char kMetaRevision[] = "revision";
constexpr char kMetaPolicy[] = "policy_text";
constexpr char kMetaDropped[] = "events_dropped_through";

// Schema 2's addition; the migration from schema 1 runs the same statement.
constexpr char kObjectsTable[] =
    "CREATE TABLE objects(kind TEXT NOT NULL, key TEXT NOT NULL, json TEXT NOT NULL,"
    " revision INTEGER NOT NULL, PRIMARY KEY(kind, key)) STRICT, WITHOUT ROWID";

constexpr const char* kSchema[] = {
    "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT",
    "CREATE TABLE nodes(name TEXT PRIMARY KEY NOT NULL, spec_json TEXT NOT NULL,"
    " cordoned INTEGER NOT NULL, revision INTEGER NOT NULL) STRICT",
    "CREATE TABLE pods(uid TEXT PRIMARY KEY NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,"
    " spec_json TEXT NOT NULL, phase TEXT NOT NULL, node TEXT NOT NULL, gpus_json TEXT NOT NULL,"
    " revision INTEGER NOT NULL) STRICT",
    "CREATE TABLE events(revision INTEGER PRIMARY KEY NOT NULL, type TEXT NOT NULL,"
    " object_json TEXT NOT NULL) STRICT",
    kObjectsTable,
};

std::string Errno(int err) { return std::strerror(err); }

// An OS error on PATH as a Status: permission problems are PermissionDenied, the rest Unavailable.
absl::Status OsError(int err, const std::string& what, const std::string& path) {
  std::string msg = absl::StrCat(path, ": ", what, ": ", Errno(err));
  if (err == EACCES || err == EPERM || err == EROFS) return absl::PermissionDeniedError(msg);
  return absl::UnavailableError(msg);
}

// An SQLite result code as a Status naming the file.
absl::Status SqliteStatus(int rc, sqlite3* db, const std::string& path, std::string_view what) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string msg = absl::StrCat(path, ": ", std::string(what), ": ", detail);
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
      return absl::DataLossError(
          absl::StrCat(msg, " (the state database is corrupt); refusing to use it"));
    case SQLITE_NOTADB:
      return absl::FailedPreconditionError(absl::StrCat(msg, " (not a Seedance state database)"));
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(absl::StrCat(msg, " (disk full)"));
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::PermissionDeniedError(msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(absl::StrCat(msg, " (locked by another process)"));
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return absl::UnavailableError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// Owns a prepared statement; Reset() after each use keeps it for the next.
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }
  sqlite3_stmt*& ptr() { return stmt_; }
  sqlite3_stmt* get() const { return stmt_; }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  if (p == nullptr) return std::string();
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

// A connection that closes itself.
struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

absl::StatusOr<DbPtr> OpenDb(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db.get(), path, "cannot open");
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), 5000);
  return db;
}

absl::Status Exec(sqlite3* db, const std::string& path, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (err != nullptr) sqlite3_free(err);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db, path, sql);
  return absl::OkStatus();
}

absl::Status Prepare(sqlite3* db, const std::string& path, const char* sql, Stmt* stmt) {
  int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt->ptr(), nullptr);
  if (rc == SQLITE_OK) return absl::OkStatus();
  if ((rc & 0xff) == SQLITE_ERROR) {
    // "no such table" / "no such column": our application id but not our schema.
    return absl::DataLossError(absl::StrCat(path, ": the schema is damaged (", sqlite3_errmsg(db),
                                            "); refusing to use it"));
  }
  return SqliteStatus(rc, db, path, "cannot prepare a statement");
}

// Runs a statement returning one integer (a PRAGMA); `out` is left alone when it returns no row.
absl::Status QueryInt(sqlite3* db, const std::string& path, const char* sql, int64_t* out) {
  Stmt s;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s.ptr(), nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db, path, sql);
  rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) {
    *out = sqlite3_column_int64(s.get(), 0);
    return absl::OkStatus();
  }
  if (rc == SQLITE_DONE) return absl::OkStatus();
  return SqliteStatus(rc, db, path, sql);
}

absl::StatusOr<std::string> QueryText(sqlite3* db, const std::string& path, const char* sql) {
  Stmt s;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s.ptr(), nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db, path, sql);
  rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return ColumnText(s.get(), 0);
  if (rc == SQLITE_DONE) return std::string();
  return SqliteStatus(rc, db, path, sql);
}

absl::Status FsyncPath(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return OsError(errno, "cannot open to fsync", path);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return OsError(err, "fsync failed", path);
  return absl::OkStatus();
}

// mkdir -p with mode 0700 for every directory it creates.
absl::Status EnsureDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("state directory ", dir, " exists and is not a directory"));
    }
    return absl::OkStatus();
  }
  if (errno != ENOENT) return OsError(errno, "cannot stat the state directory", dir);
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    absl::Status parent = EnsureDir(dir.substr(0, slash));
    if (!parent.ok()) return parent;
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return OsError(errno, "cannot create the state directory", dir);
  }
  return absl::OkStatus();
}

// Holds DIR/lock with flock(LOCK_EX) for the store's life; the file says who holds it.
absl::StatusOr<int> AcquireLock(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kLockName);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return OsError(errno, "cannot open the lock file", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err != EWOULDBLOCK) {
      ::close(fd);
      return OsError(err, "cannot lock", path);
    }
    char buf[64] = {};
    ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    if (holder.empty() || holder.find_first_not_of("0123456789") != std::string::npos) {
      holder = "unknown";
    }
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", dir, " is in use by another seedance server (pid ", holder,
                     ", holding ", path, "); two servers cannot share one --state directory"));
  }
  std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    int err = errno;
    ::close(fd);
    return OsError(err, "cannot write the lock file", path);
  }
  return fd;
}

// Builds a complete, empty state database at DIR/state.db.init and renames it to DIR/state.db,
// so state.db, whenever it exists, is a whole Seedance database (a crash mid-creation leaves
// only the .init file, which the next Open discards).
absl::Status CreateFresh(const std::string& dir, const std::string& db_path) {
  const std::string tmp = absl::StrCat(dir, "/", kInitName);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::string p = tmp + suffix;
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
      return OsError(errno, "cannot remove a leftover file", p);
    }
  }
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return OsError(errno, "cannot create", tmp);
  ::close(fd);
  {
    auto db = OpenDb(tmp, SQLITE_OPEN_READWRITE);
    if (!db.ok()) return db.status();
    std::string sql = absl::StrFormat(
        "PRAGMA application_id=%d; PRAGMA user_version=%d; PRAGMA journal_mode=WAL;",
        kApplicationId, kSchemaVersion);
    absl::Status s = Exec(db->get(), tmp, sql);
    if (!s.ok()) return s;
    std::string schema = "BEGIN IMMEDIATE;";
    for (const char* t : kSchema) absl::StrAppend(&schema, t, ";");
    absl::StrAppend(&schema, "INSERT INTO meta(key, value) VALUES('", kMetaRevision, "', 0), ('",
                    kMetaDropped, "', 0), ('", kMetaPolicy, "', ''), ('created_by', 'seedance ",
                    base::GetBuildInfo().version, "'), ('created_unix_s', unixepoch()); COMMIT;");
    s = Exec(db->get(), tmp, schema);
    if (!s.ok()) return s;
    int rc = sqlite3_close(db->release());
    if (rc != SQLITE_OK) return SqliteStatus(rc, nullptr, tmp, "cannot close");
  }
  absl::Status s = FsyncPath(tmp, false);
  if (!s.ok()) return s;
  if (::rename(tmp.c_str(), db_path.c_str()) != 0) return OsError(errno, "cannot rename", tmp);
  return FsyncPath(dir, true);
}

// Refuses a database that is not Seedance's (application_id) or is newer than this build.
absl::Status CheckIds(const std::string& path, int64_t app_id, int64_t version) {
  if (app_id != kApplicationId) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: an SQLite database of another application (application_id 0x%08x, Seedance's is "
        "0x%08x); refusing to use it. Move it away or choose another --state directory",
        path, static_cast<uint32_t>(app_id), static_cast<uint32_t>(kApplicationId)));
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: schema version %d is newer than this seedance supports (%d); it was written by a "
        "newer seedance: run that version (or a newer one)",
        path, version, kSchemaVersion));
  }
  if (version < 1) {
    return absl::DataLossError(absl::StrFormat(
        "%s: Seedance application id but schema version %d; the state database is corrupt", path,
        version));
  }
  return absl::OkStatus();
}

// Refuses anything but a whole Seedance state database before SQLite touches it.
absl::Status CheckHeader(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OsError(errno, "cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return OsError(err, "cannot stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  }
  char header[100] = {};
  ssize_t n = ::pread(fd, header, sizeof(header), 0);
  ::close(fd);
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  if (n < 16 || std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": not an SQLite database (", n <= 0 ? std::string("empty file") : "wrong header",
        "); refusing to use it as Seedance state. Move it away or choose another --state "
        "directory"));
  }
  if (n < 100) {
    return absl::DataLossError(absl::StrCat(path, ": truncated SQLite header (", n,
                                            " bytes); the state database is corrupt"));
  }
  // The header's user_version (offset 60) and application_id (offset 68), big-endian: refuse a
  // foreign or newer file before SQLite opens it (opening could replay its WAL into it).
  auto be32 = [&](int at) {
    const auto* u = reinterpret_cast<const unsigned char*>(header + at);
    return static_cast<int32_t>((uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) |
                                (uint32_t{u[2]} << 8) | uint32_t{u[3]});
  };
  return CheckIds(path, be32(68), be32(60));
}

absl::Status CheckIdentity(sqlite3* db, const std::string& path) {
  int64_t app_id = 0, version = 0;
  absl::Status s = QueryInt(db, path, "PRAGMA application_id", &app_id);
  if (s.ok()) s = QueryInt(db, path, "PRAGMA user_version", &version);
  if (!s.ok()) return s;
  return CheckIds(path, app_id, version);
}

absl::Status QuickCheck(sqlite3* db, const std::string& path) {
  Stmt s;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(5)", -1, &s.ptr(), nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db, path, "quick_check");
  std::string problems;
  bool bad = false;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    // Lines such as "*** in database main ***\nPage 3: btreeInitPage() returns error code 11".
    std::string text = ColumnText(s.get(), 0);
    if (text == "ok") continue;
    bad = true;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(start, end - start);
      start = end + 1;
      if (line.empty() || line == "ok" || line.rfind("*** ", 0) == 0) continue;
      absl::StrAppend(&problems, problems.empty() ? "" : "; ", line);
    }
  }
  if (rc != SQLITE_DONE) return SqliteStatus(rc, db, path, "quick_check");
  if (bad) {
    return absl::DataLossError(absl::StrCat(path, ": the state database is corrupt (quick_check: ",
                                            problems.empty() ? "failed" : problems,
                                            "); refusing to use it"));
  }
  return absl::OkStatus();
}

struct Counters {
  int64_t revision = 0, dropped = 0, count = 0, last = 0;
};

// The smallest string above every string that starts with `prefix` (bytewise), or nullopt when
// there is none (the prefix is all 0xFF bytes): a prefix delete is key >= prefix AND key < this.
std::optional<std::string> PrefixSuccessor(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return std::nullopt;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

}  // namespace

bool Batch::empty() const {
  return put_nodes.empty() && delete_nodes.empty() && put_pods.empty() && delete_pods.empty() &&
         put_objects.empty() && delete_objects.empty() && delete_object_prefixes.empty() &&
         events.empty() && !policy_text.has_value();
}

absl::Status CheckObjectKind(std::string_view kind) {
  const bool ok = !kind.empty() && kind.size() <= kMaxObjectKindBytes &&
                  std::all_of(kind.begin(), kind.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                  });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("object kind \"", absl::CHexEscape(std::string(kind.substr(0, 80))), "\" (",
                   kind.size(), " bytes): expected 1 to ", kMaxObjectKindBytes, " of [a-z0-9-]"));
}

absl::Status CheckObjectKey(std::string_view key, bool prefix) {
  const char* what = prefix ? "object key prefix" : "object key";
  if (key.empty()) return absl::InvalidArgumentError(absl::StrCat("an empty ", what));
  if (key.size() > kMaxObjectKeyBytes || key.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " \"", absl::CHexEscape(std::string(key.substr(0, 80))), "\" (", key.size(),
        " bytes): expected 1 to ", kMaxObjectKeyBytes, " bytes, none of them NUL"));
  }
  return absl::OkStatus();
}

absl::Status CheckBatchObjects(const Batch& batch) {
  auto check = [](const char* field, size_t i, std::string_view kind, std::string_view key,
                  bool prefix) {
    absl::Status st = CheckObjectKind(kind);
    if (st.ok()) st = CheckObjectKey(key, prefix);
    if (st.ok()) return st;
    return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "]: ", st.message()));
  };
  for (size_t i = 0; i < batch.put_objects.size(); ++i) {
    const ObjectRecord& o = batch.put_objects[i];
    absl::Status st = check("put_objects", i, o.kind, o.key, false);
    if (!st.ok()) return st;
  }
  for (size_t i = 0; i < batch.delete_objects.size(); ++i) {
    const auto& [kind, key] = batch.delete_objects[i];
    absl::Status st = check("delete_objects", i, kind, key, false);
    if (!st.ok()) return st;
  }
  for (size_t i = 0; i < batch.delete_object_prefixes.size(); ++i) {
    const auto& [kind, prefix] = batch.delete_object_prefixes[i];
    absl::Status st = check("delete_object_prefixes", i, kind, prefix, true);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

// The SQLite store (Store::Open).
class SqliteStore final : public Store {
 public:
  struct Impl;
  explicit SqliteStore(std::unique_ptr<Impl> impl);
  ~SqliteStore() override;
  absl::StatusOr<Snapshot> Load() override;
  absl::Status Commit(const Batch& batch) override;
  absl::StatusOr<std::vector<EventRecord>> EventsSince(int64_t after_revision,
                                                       size_t limit) override;
  int64_t oldest_event_revision() const override { return dropped_through_.load() + 1; }
  int64_t revision() const override { return revision_.load(); }
  int64_t event_count() const override { return event_count_.load(); }
  const std::string& path() const override { return db_path_; }

 private:
  friend class Store;  // Open sets the counters
  absl::Status CommitLocked(const Batch& batch);

  std::unique_ptr<Impl> impl_;
  std::string db_path_;
  std::atomic<int64_t> dropped_through_{0};
  std::atomic<int64_t> revision_{0};
  std::atomic<int64_t> event_count_{0};
  std::atomic<int64_t> last_event_revision_{0};
};

struct SqliteStore::Impl {
  std::string dir;
  std::string path;
  StoreOptions options;
  int lock_fd = -1;

  base::Mutex writer_mu;  // the writer connection and its statements
  DbPtr writer ABSL_GUARDED_BY(writer_mu);
  Stmt begin ABSL_GUARDED_BY(writer_mu), commit ABSL_GUARDED_BY(writer_mu),
      rollback ABSL_GUARDED_BY(writer_mu), put_node ABSL_GUARDED_BY(writer_mu),
      del_node ABSL_GUARDED_BY(writer_mu), put_pod ABSL_GUARDED_BY(writer_mu),
      del_pod ABSL_GUARDED_BY(writer_mu), put_event ABSL_GUARDED_BY(writer_mu),
      set_meta ABSL_GUARDED_BY(writer_mu), nth_event ABSL_GUARDED_BY(writer_mu),
      trim_events ABSL_GUARDED_BY(writer_mu), put_object ABSL_GUARDED_BY(writer_mu),
      del_object ABSL_GUARDED_BY(writer_mu), del_object_prefix ABSL_GUARDED_BY(writer_mu);
  // Set after a failed COMMIT: the store refuses further commits.
  absl::Status broken ABSL_GUARDED_BY(writer_mu);

  base::Mutex reader_mu;  // the reader connection
  DbPtr reader ABSL_GUARDED_BY(reader_mu);
  Stmt events_since ABSL_GUARDED_BY(reader_mu);

  // Background checkpointer: copies the WAL into state.db on its own connection so that
  // commits never wait for a checkpoint's writes and fsync.
  DbPtr checkpointer;
  std::thread checkpoint_thread;
  base::Mutex checkpoint_mu;
  std::condition_variable checkpoint_cv;
  bool checkpoint_wanted ABSL_GUARDED_BY(checkpoint_mu) = false;
  bool stopping ABSL_GUARDED_BY(checkpoint_mu) = false;

  // sqlite3_wal_hook: runs in the committing thread after each commit.
  static int OnWalCommit(void* arg, sqlite3* db, const char*, int wal_pages) {
    auto* self = static_cast<Impl*>(arg);
    if (wal_pages >= 16 * self->options.checkpoint_pages) {
      // The background checkpoints never caught up with a moment without new frames (so the
      // WAL could not restart): checkpoint here, between two commits, to bound the WAL.
      (void)sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      return SQLITE_OK;
    }
    if (wal_pages >= self->options.checkpoint_pages) {
      {
        base::MutexLock lock(self->checkpoint_mu);
        self->checkpoint_wanted = true;
      }
      self->checkpoint_cv.notify_one();
    }
    return SQLITE_OK;
  }

  void CheckpointLoop() {
    for (;;) {
      {
        base::MutexLock lock(checkpoint_mu);
        lock.Wait(checkpoint_cv, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(checkpoint_mu) {
          return checkpoint_wanted || stopping;
        });
        if (stopping) return;
        checkpoint_wanted = false;
      }
      // PASSIVE: never blocks the writer; a failure is harmless (the WAL keeps the data, the
      // next checkpoint or the clean close retries).
      (void)sqlite3_wal_checkpoint_v2(checkpointer.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                      nullptr, nullptr);
    }
  }

  void StopCheckpointer() {
    if (!checkpoint_thread.joinable()) return;
    {
      base::MutexLock lock(checkpoint_mu);
      stopping = true;
    }
    checkpoint_cv.notify_one();
    checkpoint_thread.join();
  }

  // Opens the connections, checks the file (identity, WAL, quick_check, schema) and reads the
  // counters. Until everything passed, closing the writer does not checkpoint a WAL into the
  // file. Runs before the store is shared, but holds the connections' locks all the same.
  absl::Status Connect(Counters* out) {
    base::MutexLock writer_lock(writer_mu);
    base::MutexLock reader_lock(reader_mu);
    auto w_or = OpenDb(path, SQLITE_OPEN_READWRITE);
    if (!w_or.ok()) return w_or.status();
    writer = std::move(*w_or);
    sqlite3* w = writer.get();
    sqlite3_db_config(w, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    if (sqlite3_db_readonly(w, "main") == 1) {  // SQLite falls back to read-only silently
      return absl::PermissionDeniedError(absl::StrCat(
          path, ": can only be opened read-only (check its permissions and the file system)"));
    }
    absl::Status s = CheckIdentity(w, path);
    if (!s.ok()) return s;
    absl::StatusOr<std::string> mode = QueryText(w, path, "PRAGMA journal_mode=WAL");
    if (!mode.ok()) return mode.status();
    if (*mode != "wal") {
      return absl::UnavailableError(
          absl::StrCat(path, ": cannot switch to WAL mode (journal_mode is ", *mode, ")"));
    }
    s = Exec(w, path,
             "PRAGMA synchronous=FULL; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY; "
             "PRAGMA journal_size_limit=67108864; PRAGMA mmap_size=1073741824;");
    if (!s.ok()) return s;
    if (options.verify_on_open) {
      s = QuickCheck(w, path);
      if (!s.ok()) return s;
    }
    auto r_or = OpenDb(path, SQLITE_OPEN_READONLY);
    if (!r_or.ok()) return r_or.status();
    reader = std::move(*r_or);
    s = MigrateAndPrepare(out);
    if (!s.ok()) return s;
    if (options.checkpoint_pages > 0) {
      auto c_or = OpenDb(path, SQLITE_OPEN_READWRITE);
      if (!c_or.ok()) return c_or.status();
      checkpointer = std::move(*c_or);
      s = Exec(checkpointer.get(), path, "PRAGMA synchronous=FULL");
      if (s.ok()) s = Exec(w, path, "PRAGMA wal_autocheckpoint=0");
      if (!s.ok()) return s;
    }
    sqlite3_db_config(w, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);  // ours: tidy on close
    return absl::OkStatus();
  }

  // Prepares the statements and reads the counters. A file of schema 1 (seedance 0.3.0 and
  // before) is first migrated to schema 2 (the objects table, user_version=2) in one
  // transaction that also holds these checks: it commits only once the whole schema has passed
  // them, so a damaged old file is refused and left as it was.
  absl::Status MigrateAndPrepare(Counters* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu, reader_mu) {
    sqlite3* w = writer.get();
    int64_t version = kSchemaVersion;
    absl::Status s = QueryInt(w, path, "PRAGMA user_version", &version);
    if (!s.ok()) return s;
    const bool migrate = version < kSchemaVersion;  // CheckIdentity refused anything but 1 or 2
    if (migrate) s = Exec(w, path, "BEGIN IMMEDIATE");
    if (migrate && s.ok()) {
      s = Exec(w, path, absl::StrCat(kObjectsTable, "; PRAGMA user_version=", kSchemaVersion));
      if (s.code() == absl::StatusCode::kInternal) {  // SQLITE_ERROR: a table in the way
        s = absl::DataLossError(absl::StrCat(path, ": schema ", version, " cannot be migrated to ",
                                             kSchemaVersion, " (", sqlite3_errmsg(w),
                                             "); refusing to use it"));
      }
    }
    if (s.ok()) s = PrepareAll();
    if (s.ok()) s = ReadCounters(out);
    if (migrate && s.ok()) s = Exec(w, path, "COMMIT");
    if (!s.ok() && !sqlite3_get_autocommit(w)) (void)Exec(w, path, "ROLLBACK");
    return s;
  }

  absl::Status ReadCounters(Counters* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu) {
    sqlite3* w = writer.get();
    absl::Status s =
        QueryInt(w, path, "SELECT value FROM meta WHERE key = 'revision'", &c->revision);
    if (s.ok()) {
      s = QueryInt(w, path, "SELECT value FROM meta WHERE key = 'events_dropped_through'",
                   &c->dropped);
    }
    if (s.ok()) s = QueryInt(w, path, "SELECT count(*) FROM events", &c->count);
    if (s.ok()) s = QueryInt(w, path, "SELECT coalesce(max(revision), 0) FROM events", &c->last);
    if (!s.ok()) return s;
    if (c->last > c->revision) {
      return absl::DataLossError(absl::StrCat(path, ": an event has revision ", c->last,
                                              " above the revision counter ", c->revision,
                                              "; the state database is inconsistent"));
    }
    return absl::OkStatus();
  }

  // Stops the checkpointer, finalizes the statements and closes the connections (the writer
  // last, so that its close checkpoints and removes the WAL when allowed).
  void Disconnect() {
    StopCheckpointer();
    base::MutexLock writer_lock(writer_mu);
    base::MutexLock reader_lock(reader_mu);
    for (Stmt* s : {&begin, &commit, &rollback, &put_node, &del_node, &put_pod, &del_pod,
                    &put_event, &set_meta, &nth_event, &trim_events, &put_object, &del_object,
                    &del_object_prefix, &events_since}) {
      sqlite3_finalize(s->ptr());
      s->ptr() = nullptr;
    }
    checkpointer.reset();
    reader.reset();
    writer.reset();
  }

  ~Impl() {
    Disconnect();
    if (lock_fd >= 0) ::close(lock_fd);
  }

  absl::Status PrepareAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu, reader_mu) {
    sqlite3* w = writer.get();
    struct {
      Stmt* stmt;
      const char* sql;
    } const statements[] = {
        {&begin, "BEGIN IMMEDIATE"},
        {&commit, "COMMIT"},
        {&rollback, "ROLLBACK"},
        {&put_node,
         "INSERT INTO nodes(name, spec_json, cordoned, revision) VALUES(?1, ?2, ?3, ?4) "
         "ON CONFLICT(name) DO UPDATE SET spec_json = excluded.spec_json, "
         "cordoned = excluded.cordoned, revision = excluded.revision"},
        {&del_node, "DELETE FROM nodes WHERE name = ?1"},
        {&put_pod,
         "INSERT INTO pods(uid, ns, name, spec_json, phase, node, gpus_json, revision) "
         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(uid) DO UPDATE SET "
         "ns = excluded.ns, name = excluded.name, spec_json = excluded.spec_json, "
         "phase = excluded.phase, node = excluded.node, gpus_json = excluded.gpus_json, "
         "revision = excluded.revision"},
        {&del_pod, "DELETE FROM pods WHERE uid = ?1"},
        {&put_event, "INSERT INTO events(revision, type, object_json) VALUES(?1, ?2, ?3)"},
        {&set_meta,
         "INSERT INTO meta(key, value) VALUES(?1, ?2) "
         "ON CONFLICT(key) DO UPDATE SET value = excluded.value"},
        {&nth_event, "SELECT revision FROM events ORDER BY revision LIMIT 1 OFFSET ?1"},
        {&trim_events, "DELETE FROM events WHERE revision <= ?1"},
        {&put_object,
         "INSERT INTO objects(kind, key, json, revision) VALUES(?1, ?2, ?3, ?4) "
         "ON CONFLICT(kind, key) DO UPDATE SET json = excluded.json, "
         "revision = excluded.revision"},
        {&del_object, "DELETE FROM objects WHERE kind = ?1 AND key = ?2"},
        // ?3: PrefixSuccessor(?2), NULL when there is none. A range, not substr(), so that it
        // is bytewise for any key (substr counts UTF-8 characters) and uses the primary key.
        {&del_object_prefix,
         "DELETE FROM objects WHERE kind = ?1 AND key >= ?2 AND (?3 IS NULL OR key < ?3)"},
    };
    for (const auto& s : statements) {
      absl::Status st = Prepare(w, path, s.sql, s.stmt);
      if (!st.ok()) return st;
    }
    return Prepare(reader.get(), path,
                   "SELECT revision, type, object_json FROM events WHERE revision > ?1 "
                   "ORDER BY revision LIMIT ?2",
                   &events_since);
  }

  // Steps a statement that returns no rows, then resets it.
  absl::Status Run(Stmt& s, std::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu) {
    int rc = sqlite3_step(s.get());
    absl::Status st =
        rc == SQLITE_DONE ? absl::OkStatus() : SqliteStatus(rc, writer.get(), path, what);
    s.Reset();
    return st;
  }

  // The batch's objects: prefix deletes, deletes, then puts (stamped with the batch's revision).
  absl::Status WriteObjects(const Batch& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu) {
    for (const auto& [kind, prefix] : b.delete_object_prefixes) {
      const std::optional<std::string> end = PrefixSuccessor(prefix);
      sqlite3_stmt* q = del_object_prefix.get();
      BindText(q, 1, kind);
      BindText(q, 2, prefix);
      if (end.has_value()) BindText(q, 3, *end);  // else NULL (cleared by the last Reset)
      absl::Status st = Run(del_object_prefix, "cannot delete objects by prefix");
      if (!st.ok()) return st;
    }
    for (const auto& [kind, key] : b.delete_objects) {
      BindText(del_object.get(), 1, kind);
      BindText(del_object.get(), 2, key);
      absl::Status st = Run(del_object, "cannot delete an object");
      if (!st.ok()) return st;
    }
    for (const ObjectRecord& o : b.put_objects) {
      sqlite3_stmt* q = put_object.get();
      BindText(q, 1, o.kind);
      BindText(q, 2, o.key);
      BindText(q, 3, o.json);
      sqlite3_bind_int64(q, 4, b.revision);
      absl::Status st = Run(put_object, "cannot write an object");
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }

  absl::Status SetMetaInt(const char* key, int64_t value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu) {
    sqlite3_bind_text(set_meta.get(), 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(set_meta.get(), 2, value);
    return Run(set_meta, "cannot write the metadata");
  }
};

SqliteStore::SqliteStore(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)), db_path_(impl_->path) {}
SqliteStore::~SqliteStore() = default;

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& dir_in, StoreOptions o) {
  if (dir_in.empty()) return absl::InvalidArgumentError("--state: the directory name is empty");
  if (o.checkpoint_pages < 0 || o.checkpoint_pages > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint pages must be in 0..1048576 (got ", o.checkpoint_pages, ")"));
  }
  if (o.event_retention < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("event retention must be at least 1 (got ", o.event_retention, ")"));
  }
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();

  auto impl = std::make_unique<SqliteStore::Impl>();
  impl->dir = dir;
  impl->path = absl::StrCat(dir, "/", kDbName);
  impl->options = o;
  const std::string& path = impl->path;

  absl::Status s = EnsureDir(dir);
  if (!s.ok()) return s;
  const std::string lock_path = absl::StrCat(dir, "/", kLockName);
  const bool had_lock = ::access(lock_path.c_str(), F_OK) == 0;
  absl::StatusOr<int> lock = AcquireLock(dir);
  if (!lock.ok()) return lock.status();
  impl->lock_fd = *lock;
  // A refused directory keeps no lock file this call created (removed while still held).
  auto refuse = [&](absl::Status st) {
    if (!had_lock) ::unlink(lock_path.c_str());
    return st;
  };

  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return refuse(OsError(errno, "cannot stat", path));
    s = CreateFresh(dir, path);
    if (!s.ok()) return refuse(s);
  }
  s = CheckHeader(path);
  if (!s.ok()) return refuse(s);

  // SQLite creates state.db-wal and -shm when it opens the file; if the file is then refused,
  // remove them again (when they were not there before and the WAL is empty).
  const bool had_wal = ::access((path + "-wal").c_str(), F_OK) == 0;
  const bool had_shm = ::access((path + "-shm").c_str(), F_OK) == 0;
  Counters counters;
  s = impl->Connect(&counters);
  if (!s.ok()) {
    impl->Disconnect();
    struct stat wal;
    if (!had_wal && ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size == 0) {
      ::unlink((path + "-wal").c_str());
      if (!had_shm) ::unlink((path + "-shm").c_str());
    }
    return refuse(s);
  }
  if (o.checkpoint_pages > 0) {
    SqliteStore::Impl* raw = impl.get();
    {
      base::MutexLock lock(raw->writer_mu);
      sqlite3_wal_hook(raw->writer.get(), &SqliteStore::Impl::OnWalCommit, raw);
    }
    impl->checkpoint_thread = std::thread([raw] { raw->CheckpointLoop(); });
  }

  auto store = std::make_unique<SqliteStore>(std::move(impl));
  store->revision_ = counters.revision;
  store->dropped_through_ = counters.dropped;
  store->event_count_ = counters.count;
  store->last_event_revision_ = counters.last;
  return std::unique_ptr<Store>(std::move(store));
}

absl::StatusOr<Snapshot> SqliteStore::Load() {
  base::MutexLock lock(impl_->writer_mu);
  sqlite3* w = impl_->writer.get();
  const std::string& path = impl_->path;
  absl::Status s = Exec(w, path, "BEGIN");  // one read snapshot for everything
  if (!s.ok()) return s;
  auto read = [&]() -> absl::StatusOr<Snapshot> {
    Snapshot snap;
    Stmt nodes, pods, meta, objects;
    absl::Status st = Prepare(
        w, path, "SELECT name, spec_json, cordoned, revision FROM nodes ORDER BY rowid", &nodes);
    if (st.ok()) {
      st = Prepare(w, path,
                   "SELECT uid, ns, name, spec_json, phase, node, gpus_json, revision FROM pods "
                   "ORDER BY rowid",
                   &pods);
    }
    if (st.ok()) st = Prepare(w, path, "SELECT key, value FROM meta", &meta);
    if (st.ok()) {
      st = Prepare(w, path, "SELECT kind, key, json, revision FROM objects ORDER BY kind, key",
                   &objects);
    }
    if (!st.ok()) return st;
    int rc;
    while ((rc = sqlite3_step(nodes.get())) == SQLITE_ROW) {
      sqlite3_stmt* q = nodes.get();
      NodeRecord& n = snap.nodes.emplace_back();
      n.name = ColumnText(q, 0);
      n.spec_json = ColumnText(q, 1);
      n.cordoned = sqlite3_column_int64(q, 2) != 0;
      n.revision = sqlite3_column_int64(q, 3);
    }
    if (rc != SQLITE_DONE) return SqliteStatus(rc, w, path, "cannot read the nodes");
    while ((rc = sqlite3_step(pods.get())) == SQLITE_ROW) {
      sqlite3_stmt* q = pods.get();
      PodRecord& p = snap.pods.emplace_back();
      p.uid = ColumnText(q, 0);
      p.ns = ColumnText(q, 1);
      p.name = ColumnText(q, 2);
      p.spec_json = ColumnText(q, 3);
      p.phase = ColumnText(q, 4);
      p.node = ColumnText(q, 5);
      p.gpus_json = ColumnText(q, 6);
      p.revision = sqlite3_column_int64(q, 7);
    }
    if (rc != SQLITE_DONE) return SqliteStatus(rc, w, path, "cannot read the pods");
    while ((rc = sqlite3_step(meta.get())) == SQLITE_ROW) {
      std::string key = ColumnText(meta.get(), 0);
      if (key == kMetaRevision) snap.revision = sqlite3_column_int64(meta.get(), 1);
      if (key == kMetaPolicy) snap.policy_text = ColumnText(meta.get(), 1);
    }
    if (rc != SQLITE_DONE) return SqliteStatus(rc, w, path, "cannot read the metadata");
    while ((rc = sqlite3_step(objects.get())) == SQLITE_ROW) {
      sqlite3_stmt* q = objects.get();
      ObjectRecord& o = snap.objects.emplace_back();
      o.kind = ColumnText(q, 0);
      o.key = ColumnText(q, 1);
      o.json = ColumnText(q, 2);
      o.revision = sqlite3_column_int64(q, 3);
    }
    if (rc != SQLITE_DONE) return SqliteStatus(rc, w, path, "cannot read the objects");
    return snap;
  };
  absl::StatusOr<Snapshot> snap = read();
  absl::Status end = Exec(w, path, "COMMIT");
  if (!snap.ok()) return snap.status();
  if (!end.ok()) return end;
  return snap;
}

absl::Status SqliteStore::Commit(const Batch& batch) {
  base::MutexLock lock(impl_->writer_mu);
  if (!impl_->broken.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(impl_->path, ": the store is unusable after an earlier failed commit (",
                     impl_->broken.message(), "); restart to recover from disk"));
  }
  // Validate everything before writing anything.
  const int64_t current = revision_.load();
  if (batch.revision < current) {
    return absl::InvalidArgumentError(absl::StrCat("batch revision ", batch.revision,
                                                   " is below the store's revision ", current));
  }
  int64_t last = last_event_revision_.load();
  for (const EventRecord& e : batch.events) {
    if (e.revision <= last) {
      return absl::InvalidArgumentError(
          absl::StrCat("event revision ", e.revision, " is not above the previous event's ", last));
    }
    if (e.revision > batch.revision) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event revision ", e.revision, " is above the batch revision ", batch.revision));
    }
    last = e.revision;
  }
  for (const NodeRecord& n : batch.put_nodes) {
    if (n.name.empty()) return absl::InvalidArgumentError("a node record has an empty name");
  }
  for (const PodRecord& p : batch.put_pods) {
    if (p.uid.empty()) return absl::InvalidArgumentError("a pod record has an empty uid");
  }
  if (absl::Status st = CheckBatchObjects(batch); !st.ok()) return st;
  if (batch.empty() && batch.revision == current) return absl::OkStatus();
  return CommitLocked(batch);
}

absl::Status SqliteStore::CommitLocked(const Batch& batch) {
  Impl& m = *impl_;
  m.writer_mu.AssertHeld();  // Commit holds it (Impl is incomplete where CommitLocked is declared)
  absl::Status s = m.Run(m.begin, "cannot begin a transaction");
  if (!s.ok()) return s;

  int64_t count = event_count_.load();
  int64_t dropped = dropped_through_.load();
  auto apply = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(m.writer_mu) -> absl::Status {
    for (const NodeRecord& n : batch.put_nodes) {
      sqlite3_stmt* q = m.put_node.get();
      BindText(q, 1, n.name);
      BindText(q, 2, n.spec_json);
      sqlite3_bind_int(q, 3, n.cordoned ? 1 : 0);
      sqlite3_bind_int64(q, 4, n.revision);
      absl::Status st = m.Run(m.put_node, "cannot write a node");
      if (!st.ok()) return st;
    }
    for (const std::string& name : batch.delete_nodes) {
      BindText(m.del_node.get(), 1, name);
      absl::Status st = m.Run(m.del_node, "cannot delete a node");
      if (!st.ok()) return st;
    }
    for (const PodRecord& p : batch.put_pods) {
      sqlite3_stmt* q = m.put_pod.get();
      BindText(q, 1, p.uid);
      BindText(q, 2, p.ns);
      BindText(q, 3, p.name);
      BindText(q, 4, p.spec_json);
      BindText(q, 5, p.phase);
      BindText(q, 6, p.node);
      BindText(q, 7, p.gpus_json);
      sqlite3_bind_int64(q, 8, p.revision);
      absl::Status st = m.Run(m.put_pod, "cannot write a pod");
      if (!st.ok()) return st;
    }
    for (const std::string& uid : batch.delete_pods) {
      BindText(m.del_pod.get(), 1, uid);
      absl::Status st = m.Run(m.del_pod, "cannot delete a pod");
      if (!st.ok()) return st;
    }
    if (absl::Status st = m.WriteObjects(batch); !st.ok()) return st;
    for (const EventRecord& e : batch.events) {
      sqlite3_stmt* q = m.put_event.get();
      sqlite3_bind_int64(q, 1, e.revision);
      BindText(q, 2, e.type);
      BindText(q, 3, e.object_json);
      absl::Status st = m.Run(m.put_event, "cannot write an event");
      if (!st.ok()) return st;
    }
    count += static_cast<int64_t>(batch.events.size());
    if (count > m.options.event_retention) {
      // Drop the oldest events beyond the retention: find the newest revision to drop.
      const int64_t excess = count - m.options.event_retention;
      sqlite3_stmt* q = m.nth_event.get();
      sqlite3_bind_int64(q, 1, excess - 1);
      int rc = sqlite3_step(q);
      int64_t through = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
      m.nth_event.Reset();
      if (rc != SQLITE_ROW) return SqliteStatus(rc, m.writer.get(), m.path, "cannot trim events");
      sqlite3_bind_int64(m.trim_events.get(), 1, through);
      absl::Status st = m.Run(m.trim_events, "cannot trim events");
      if (!st.ok()) return st;
      count -= excess;
      dropped = through;
      st = m.SetMetaInt(kMetaDropped, dropped);
      if (!st.ok()) return st;
    }
    if (batch.revision != revision_.load()) {
      absl::Status st = m.SetMetaInt(kMetaRevision, batch.revision);
      if (!st.ok()) return st;
    }
    if (batch.policy_text.has_value()) {
      sqlite3_bind_text(m.set_meta.get(), 1, kMetaPolicy, -1, SQLITE_STATIC);
      BindText(m.set_meta.get(), 2, *batch.policy_text);
      absl::Status st = m.Run(m.set_meta, "cannot write the policy");
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  };

  s = apply();
  if (!s.ok()) {
    absl::Status rb = m.Run(m.rollback, "cannot roll back");
    if (!rb.ok()) m.broken = rb;
    return s;
  }
  s = m.Run(m.commit, "cannot commit");
  if (!s.ok()) {
    // After a failed COMMIT (an fsync error, say) the file's state is unknown: refuse more.
    if (!sqlite3_get_autocommit(m.writer.get())) (void)m.Run(m.rollback, "cannot roll back");
    m.broken = s;
    return s;
  }
  revision_ = batch.revision;
  event_count_ = count;
  dropped_through_ = dropped;
  if (!batch.events.empty()) last_event_revision_ = batch.events.back().revision;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<EventRecord>> SqliteStore::EventsSince(int64_t after_revision,
                                                                  size_t limit) {
  std::vector<EventRecord> out;
  if (limit == 0) return out;
  base::MutexLock lock(impl_->reader_mu);
  sqlite3_stmt* q = impl_->events_since.get();
  sqlite3_bind_int64(q, 1, after_revision);
  sqlite3_bind_int64(
      q, 2, limit > static_cast<size_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(limit));
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    EventRecord& e = out.emplace_back();
    e.revision = sqlite3_column_int64(q, 0);
    e.type = ColumnText(q, 1);
    e.object_json = ColumnText(q, 2);
  }
  impl_->events_since.Reset();
  if (rc != SQLITE_DONE) {
    return SqliteStatus(rc, impl_->reader.get(), impl_->path, "cannot read the events");
  }
  return out;
}

}  // namespace seedance::store
