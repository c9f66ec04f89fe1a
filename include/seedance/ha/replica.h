// One replica of a highly available `seedance server` (docs/ha.md): its etcd store, its lease
// and its part in the leader election, driving a server::Service as leader or follower.
//
// Election, in the manner of Kubernetes' leader election with a Lease: each replica holds an
// etcd lease of `lease_ttl_s`, kept alive every third of it, and campaigns with a transaction
// "create PREFIX/leader if it does not exist, attached to my lease" while no replica leads. The
// winner's term is the leader key's create revision; every commit is fenced on it
// (etcd_store.h). The leader stops deciding at its local deadline, the send time of the last
// answered keepalive + TTL - margin, which comes before etcd can expire the lease; a keepalive
// answered "no such lease", a fenced commit or a commit that failed steps it down at once. A
// follower re-reads the store every `poll_s` and rebuilds its read view at most every
// `follower_reload_s`.
//
// Thread-safety: Start and Stop from one thread; the replica runs two threads of its own.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "seedance/ha/etcd_store.h"
#include "seedance/server/service.h"

namespace seedance::ha {

struct ReplicaOptions {
  EtcdStoreOptions store;
  double lease_ttl_s = 3;  // etcd's smallest is 2 s (with its default election timeout)
  double poll_s = 0.1;     // how often a follower looks at the leader key and the store
  double follower_reload_s = 1.0;
  std::string id;  // unique per replica; empty: HOSTNAME-PID-RANDOM
};

class Replica {
 public:
  // Connects to etcd and reads the state (EtcdStore::Open). The service is started by the
  // caller, as a follower, with TakeStore().
  static absl::StatusOr<std::unique_ptr<Replica>> Open(ReplicaOptions options);
  virtual ~Replica() = default;
  // The store for Service::Start (once). The replica keeps using it; the service must outlive
  // Stop().
  virtual std::unique_ptr<store::Store> TakeStore() = 0;
  // Joins the election; `url` is where this replica serves (sent to writers as the leader's).
  // `on_lead` runs (on the replica's thread) each time this replica has taken over.
  virtual void Start(server::Service* service, const std::string& url,
                     std::function<void()> on_lead = {}) = 0;
  // Leaves: a leader stops deciding and revokes its lease, so another takes over at once.
  virtual void Stop() = 0;
};

}  // namespace seedance::ha
