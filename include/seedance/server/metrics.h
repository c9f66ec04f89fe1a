// The server's Prometheus metrics (prometheus-cpp's core; exposed on the API's own port at
// /metrics). Names follow the Prometheus conventions: base units, _total for counters.
//
// Thread-safety: prometheus-cpp metrics are thread-safe.
#ifndef SEEDANCE_SERVER_METRICS_H_
#define SEEDANCE_SERVER_METRICS_H_

#include <memory>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace seedance::server {

struct Metrics {
  Metrics();
  // The exposition text of every metric.
  std::string Expose() const;
  // seedance_http_requests_total{route,code}.
  void CountRequest(const std::string& route, int code);

  std::shared_ptr<prometheus::Registry> registry;
  prometheus::Family<prometheus::Counter>* attempts;  // {result}
  prometheus::Counter* attempts_scheduled;
  prometheus::Counter* attempts_unschedulable;
  prometheus::Counter* attempts_error;
  prometheus::Histogram* scheduling_duration;  // submit to bound, seconds
  prometheus::Gauge* pending_active;           // seedance_pending_pods{queue}
  prometheus::Gauge* pending_backoff;
  prometheus::Gauge* pending_unschedulable;
  prometheus::Gauge* gpu_milli_allocated;  // seedance_gpu_milli{state}
  prometheus::Gauge* gpu_milli_free;
  prometheus::Gauge* fragmentation_ratio;
  prometheus::Family<prometheus::Counter>* policy_reloads;  // {result}
  prometheus::Gauge* policy_state;  // seedance_policy_state{state}: 1 = current
  prometheus::Family<prometheus::Gauge>* policy_state_family;
  prometheus::Family<prometheus::Gauge>* alerts;  // seedance_policy_alert{rule}
  // seedance_queue_gpus{queue,kind}: kind = used, guaranteed, fair_share, pending, borrowed
  prometheus::Family<prometheus::Gauge>* queue_gpus;
  prometheus::Counter* preemptions;  // seedance_preemptions_total
  prometheus::Family<prometheus::Counter>* http_requests;
  prometheus::Histogram* commit_duration;  // seconds per batch commit
  prometheus::Histogram* cycle_duration;   // seconds of scheduling cycles per batch
  prometheus::Histogram* batch_size;       // operations per batch
  prometheus::Gauge* nodes;
  prometheus::Gauge* pods_bound;
  prometheus::Gauge* revision;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_METRICS_H_
