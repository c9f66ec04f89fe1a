// A small client of etcd's v3 API through its JSON gateway (grpc-gateway: POST /v3/kv/range,
// /v3/kv/txn, /v3/kv/compaction, /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke; keys
// and values base64, 64-bit integers as decimal strings). Only what the store and the election
// need. docs/ha.md says why the gateway and not gRPC.
//
// Endpoints are tried in turn: a request that fails at the transport level (refused, reset,
// timed out) is sent to the next endpoint, up to one round over all of them. Every request the
// store and the election send is idempotent or fenced, so a retry after a lost reply is safe.
//
// Thread-safety: one EtcdClient per thread (requests on one client are serialised anyway).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::ha {

struct EtcdEndpoint {
  std::string host;
  int port = 0;
};

// "etcd://HOST:PORT[,HOST:PORT...]" (the scheme may be left out). InvalidArgument naming `flag`.
absl::StatusOr<std::vector<EtcdEndpoint>> ParseEtcdUrl(const std::string& url,
                                                       const std::string& flag);

struct KeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0;
  int64_t lease = 0;
};

// One operation of a transaction.
struct TxnOp {
  enum Kind { kPut, kDeleteRange, kRange } kind = kPut;
  std::string key, value;  // value: kPut only
  std::string range_end;   // kDeleteRange, kRange: [key, range_end); empty = the key alone
  int64_t lease = 0;       // kPut: attach to this lease (0 = none)
};

// One comparison: the key's create_revision (kCreate) or value (kValue) equals the given one.
struct TxnCompare {
  enum Target { kCreate, kValue } target = kCreate;
  std::string key;
  int64_t create_revision = 0;
  std::string value;
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction
  // For each kRange operation of the branch taken, in order: the keys it found.
  std::vector<std::vector<KeyValue>> ranges;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
  bool more = false;  // the limit cut the result
};

struct EtcdClientOptions {
  double connect_timeout_s = 1.0;
  double request_timeout_s = 3.0;
};

class EtcdClient {
 public:
  static std::unique_ptr<EtcdClient> New(std::vector<EtcdEndpoint> endpoints,
                                         EtcdClientOptions options = {});
  virtual ~EtcdClient() = default;

  // Keys in [key, range_end) (range_end empty: the key alone), at most `limit` (0 = all),
  // sorted by key.
  virtual absl::StatusOr<RangeResult> Range(const std::string& key, const std::string& range_end,
                                            int64_t limit = 0) = 0;
  virtual absl::StatusOr<TxnResult> Txn(const std::vector<TxnCompare>& compare,
                                        const std::vector<TxnOp>& success,
                                        const std::vector<TxnOp>& failure) = 0;
  // Drops the history (old versions, deleted keys) below `revision`.
  virtual absl::Status Compact(int64_t revision) = 0;
  virtual absl::StatusOr<int64_t> LeaseGrant(int64_t ttl_s) = 0;  // the lease ID
  // The lease's remaining TTL; NotFound when the lease has expired or was revoked.
  virtual absl::StatusOr<int64_t> LeaseKeepAlive(int64_t id) = 0;
  virtual absl::Status LeaseRevoke(int64_t id) = 0;
  // For messages: "etcd://127.0.0.1:2379,127.0.0.1:2381".
  virtual const std::string& url() const = 0;
};

// The first key after every key that starts with `prefix` (etcd's "prefix" range end).
std::string PrefixEnd(const std::string& prefix);

}  // namespace seedance::ha
