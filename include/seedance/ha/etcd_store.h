// The server's state in etcd (`seedance server --store etcd://...`, docs/ha.md): a store::Store
// whose commits are durable on a quorum of etcd members and fenced by leadership, so that only
// the replica holding the leader key can commit and a deposed leader's commit fails.
//
// Layout under the prefix P (default "/seedance/"):
//   P + "leader"                  the elected replica (election.h), attached to its lease
//   P + "head"                    the sequence number of the last complete commit (20 digits)
//   P + "log/SEQ.PART"            one commit: store::Batch bytes (batch_codec.h), in parts of at
//                                 most 768 KiB (etcd refuses requests over 1.5 MiB)
//   P + "snapshot"                "SEQ PARTS LAST_EVENT_REVISION": the state through SEQ is in
//   P + "snap/SEQ.PART"           these parts; the log up to SEQ has been deleted
// A commit writes its parts (each a transaction) and then the last part with the new head in one
// transaction: a reader applies log entries up to the head only, so half a commit is never seen.
// Every write's transaction compares the leader key's create_revision with the one this replica
// created (the fence): once the lease is gone (expired, revoked) or another replica leads, no
// write of this one can succeed. The store keeps the state it has read or written in memory, so
// Load() costs no etcd round trip; Refresh() reads what others committed since. Generic objects
// (store::ObjectRecord: the experiments' records) travel inside the log entries and snapshots
// like the rest of a batch, not as keys of their own, so a batch of any size stays atomic.
//
// Thread-safety: all methods may be called from any thread (one internal mutex).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/store/store.h"

namespace seedance::ha {

// What the election tells the store: whether this replica leads and until when it may decide.
struct Leadership {
  std::atomic<int64_t> create_revision{0};  // of the leader key this replica created; 0: follower
  std::atomic<double> valid_until_s{0};     // steady clock, seconds: stop committing from then on
};

struct EtcdStoreOptions {
  std::string url;  // etcd://HOST:PORT[,HOST:PORT...]
  std::string prefix = "/seedance/";
  int64_t event_retention = 100000;  // events kept in memory for watch ?since=; >= 1
  // Once the log holds this many bytes, the leader writes a snapshot and deletes the log.
  int64_t snapshot_log_bytes = 64 << 20;
  double request_timeout_s = 3.0;
};

class EtcdStore : public store::Store {
 public:
  // Connects and reads the whole state (snapshot + log up to the head). Unavailable when etcd
  // cannot be reached, InvalidArgument for a bad url or prefix, DataLoss for a value that is
  // not a Seedance batch. `leadership` must outlive the store.
  static absl::StatusOr<std::unique_ptr<EtcdStore>> Open(EtcdStoreOptions options,
                                                         const Leadership* leadership);

  // Reads the commits made since the last read (by the leader, when this replica follows).
  // Returns whether the revision moved.
  virtual absl::StatusOr<bool> Refresh() = 0;
  // Called once this replica has won the election (leadership->create_revision set): reads
  // everything committed up to now, then deletes any log parts beyond the head (a deposed
  // leader's unfinished commit), fenced.
  virtual absl::Status PrepareToLead() = 0;
  // The leader key's name, for the election.
  virtual const std::string& leader_key() const = 0;
};

}  // namespace seedance::ha
