// Hot/cold tiering with money (issue 40 item 3; docs/cache.md, "Tiering"): a cost model of a local
// disk tier and an object-store tier, and three placement policies replayed over a trace that
// carries time and size: the seed's fixed rule (the baseline), Seedance's online cost policy, and
// the offline optimum (the bound).
//
// The model (every policy is charged by the same ledger, so their costs compare exactly):
//  * Objects are independent. An object's size is the largest Request::size the trace shows for
//    it (a file's size is known to the store); every request reads the whole object.
//  * An object's life is [its first request, the trace's last request time]. Before its first
//    request it sits in the object store only, so the first request is a remote read for every
//    policy.
//  * At any time the object is local (on the local tier) or remote. Holding it costs
//    local_usd_per_gib_month while local and remote_usd_per_gib_month while remote, prorated to
//    the microsecond (a month is 730 h, a GiB 2^30 bytes, as AWS bills). With
//    remote_keeps_copy the store keeps a copy always: remote storage is paid for the whole life
//    and local storage on top while local.
//  * A local read costs no request; its latency is local_first_byte_s + size /
//    local_bytes_per_s. A remote read costs one GET and egress_usd_per_gib * size, and its latency
//    is remote_first_byte_s + size / remote_bytes_per_s. After a remote read the policy chooses
//    to keep the bytes (promotion: free, the bytes are already here) or not.
//  * Demotion moves a local object to the store: one PUT (the node agent's WebDAV PUT), no
//    transfer charge (ingress is free). With remote_keeps_copy a demotion only drops the local
//    copy and costs nothing.
//  * Demand fetch only: nothing moves up except by a read (prewarming is outside this model).
//  * The local tier has no byte capacity (each object is placed on its own). The optimum of this
//    uncapacitated model is therefore also a lower bound on any capacitated policy's cost.
//  * Every read makes its reader wait for the read's latency; waiting is charged
//    stall_usd_per_hour (a GPU-hour price for a GPU job that waits on its data; default 0). Costs
//    are reported with and without this term; the policies decide on the total.
//
// Time is Request::time in microseconds; requests must be in non-decreasing time order.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/cache/trace.h"

namespace seedance::cache {

// Prices and latencies. Defaults are public list prices, read 2024 (docs/cache.md "Tiering"):
//  * local tier: Amazon EBS gp3, us-east-1: $0.08 per GB-month; baseline 125 MiB/s and
//    "single-digit millisecond" latency (EBS volume types page), taken as 1 ms to first byte.
//  * object store: Amazon S3 Standard, us-east-1: $0.023 per GB-month (first 50 TB); GET $0.0004
//    and PUT $0.005 per 1,000 requests; S3 to EC2 in the same region transfers free ($0/GB;
//    $0.09/GB to the internet). Latency from the S3 performance guidelines: small requests see
//    "tens of milliseconds" median (taken as 50 ms to first byte) and one connection carries about
//    85-90 MB/s (taken as 90e6 B/s).
struct TierCostModel {
  double local_usd_per_gib_month = 0.08;
  double remote_usd_per_gib_month = 0.023;
  double get_usd_per_request = 0.0004 / 1000;
  double put_usd_per_request = 0.005 / 1000;
  double egress_usd_per_gib = 0.0;
  bool remote_keeps_copy = false;
  double local_first_byte_s = 0.001;
  double local_bytes_per_s = 125.0 * 1024 * 1024;
  double remote_first_byte_s = 0.050;
  double remote_bytes_per_s = 90e6;
  // What one second of a reader's waiting costs, as an hourly price (0: waiting is free).
  double stall_usd_per_hour = 0.0;
};

// Checks that every price is >= 0, every bandwidth > 0 and every latency >= 0. Errors:
// InvalidArgument naming the field.
absl::Status ValidateTierCostModel(const TierCostModel& model);

// The seed's rule (seed B 4.3, shouldMigrateToCold): an object is demoted when it has had fewer
// than `max_accesses` accesses (lifetime count) AND has been idle for at least `idle_us` AND is
// larger than `min_size_bytes` (the seed's 10*MB, MB read as 2^20, the convention of its Go
// code). A demoted object is promoted again on its next read.
struct SeedRuleOptions {
  int64_t max_accesses = 3;
  int64_t idle_us = int64_t{24} * 3600 * 1000000;
  int64_t min_size_bytes = int64_t{10} << 20;
};

// Seedance's cost policy: ski rental, with a prediction where the object has a history. For an
// object of size s, rent is the extra storage rate of keeping it local rather than remote, P the
// extra cost of a remote read over a local one (GET, egress, stall), b_promote = P / rent (hold
// it local rather than re-read it remotely if it comes back sooner) and b_demote = (demotion +
// P) / rent (the break-even idle time of a local object).
//  * Prediction: an object's next gap is its exponentially decayed mean gap (weight `gap_decay`
//    on the newest); an object read once has none.
//  * Promotion, at a remote read: iff the prediction (if any) is below b_promote and
//    p * P > (1 - p) * (2 * demotion + P): the expected saving against the expected cost of a
//    promotion not read again within b_promote (rent until b_demote, then a demotion). p is the
//    fraction of past reads of the same class (the object's access count, 1 .. 8 or more) read
//    again within their b_promote: an online actuarial estimate (a window still open counts for
//    the part of it that has passed), shrunk towards the same estimate over all classes, whose
//    prior is 1/2.
//  * Demotion of a local object: after idling b_demote if it has no prediction (plain ski
//    rental); else after trust * b_demote if the prediction is at least b_demote, otherwise
//    after b_demote / trust (Purohit, Svitkina and Kumar, "Improving Online Algorithms via ML
//    Predictions", NeurIPS 2018, algorithm 2: at most (1 + trust) / trust times the optimum of
//    each gap whatever the predictions).
struct CostPolicyOptions {
  double trust = 0.1;
  double gap_decay = 0.5;
};

enum class TierPolicyKind { kSeedRule, kCostPolicy, kOptimum };
std::string_view TierPolicyName(TierPolicyKind kind);

// What a policy cost over a trace. Dollars are split by cause; total_usd() includes the stall
// term, total_without_stall_usd() does not.
struct TieringResult {
  std::string policy;
  int64_t objects = 0;
  int64_t reads = 0;
  int64_t remote_reads = 0;
  int64_t demotions = 0;
  double local_storage_usd = 0;
  double remote_storage_usd = 0;
  double get_usd = 0;
  double put_usd = 0;
  double egress_usd = 0;
  double stall_usd = 0;
  double mean_read_latency_s = 0;
  double p99_read_latency_s = 0;
  double total_without_stall_usd() const {
    return local_storage_usd + remote_storage_usd + get_usd + put_usd + egress_usd;
  }
  double total_usd() const { return total_without_stall_usd() + stall_usd; }
};

// Replays `trace` under one policy. The options not of that policy are ignored. Errors:
// InvalidArgument for an invalid model or options, a request with size < 1, or times that go
// backwards (naming the request's 1-based index).
absl::StatusOr<TieringResult> SimulateTiering(const std::vector<Request>& trace,
                                              TierPolicyKind kind, const TierCostModel& model,
                                              const SeedRuleOptions& seed = {},
                                              const CostPolicyOptions& cost = {});

}  // namespace seedance::cache
