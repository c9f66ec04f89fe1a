#include "seedance/server/metrics.h"

#include "prometheus/text_serializer.h"

namespace seedance::server {

namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

Metrics::Metrics() : registry(std::make_shared<prometheus::Registry>()) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  prometheus::Registry& r = *registry;
  attempts = &BuildCounter()
                  .Name("seedance_schedule_attempts_total")
                  .Help("Scheduling attempts by result (scheduled, unschedulable, error).")
                  .Register(r);
  attempts_scheduled = &attempts->Add({{"result", "scheduled"}});
  attempts_unschedulable = &attempts->Add({{"result", "unschedulable"}});
  attempts_error = &attempts->Add({{"result", "error"}});
  scheduling_duration = &BuildHistogram()
                             .Name("seedance_scheduling_duration_seconds")
                             .Help("Time from a pod's submission to its binding.")
                             .Register(r)
                             .Add({}, LatencyBuckets());
  auto& pending = BuildGauge()
                      .Name("seedance_pending_pods")
                      .Help("Pods waiting, by scheduling sub-queue.")
                      .Register(r);
  pending_active = &pending.Add({{"queue", "active"}});
  pending_backoff = &pending.Add({{"queue", "backoff"}});
  pending_unschedulable = &pending.Add({{"queue", "unschedulable"}});
  auto& gpu = BuildGauge()
                  .Name("seedance_gpu_milli")
                  .Help("GPU capacity in milli-GPU by state (allocated, free).")
                  .Register(r);
  gpu_milli_allocated = &gpu.Add({{"state", "allocated"}});
  gpu_milli_free = &gpu.Add({{"state", "free"}});
  fragmentation_ratio =
      &BuildGauge()
           .Name("seedance_fragmentation_ratio")
           .Help("Share of the free GPU capacity that the typical pods cannot use (0..1).")
           .Register(r)
           .Add({});
  policy_reloads = &BuildCounter()
                        .Name("seedance_policy_reloads_total")
                        .Help("Policy reloads by result (ok, failed).")
                        .Register(r);
  policy_reloads->Add({{"result", "ok"}});
  policy_reloads->Add({{"result", "failed"}});
  policy_state_family = &BuildGauge()
                             .Name("seedance_policy_state")
                             .Help("1 for the policy manager's current state.")
                             .Register(r);
  policy_state = &policy_state_family->Add({{"state", "Active"}});
  alerts = &BuildGauge()
                .Name("seedance_policy_alert")
                .Help("1 while a policy rule's alert action holds.")
                .Register(r);
  queue_gpus = &BuildGauge()
                    .Name("seedance_queue_gpus")
                    .Help("Per tenant queue, whole GPUs by kind: used, guaranteed, fair_share, "
                          "pending, borrowed.")
                    .Register(r);
  preemptions = &BuildCounter()
                     .Name("seedance_preemptions_total")
                     .Help("Pods evicted for a higher-priority pod or a reclaim.")
                     .Register(r)
                     .Add({});
  http_requests = &BuildCounter()
                       .Name("seedance_http_requests_total")
                       .Help("API requests by route and status code.")
                       .Register(r);
  commit_duration = &BuildHistogram()
                         .Name("seedance_state_commit_duration_seconds")
                         .Help("Time to make one batch of changes durable (one fsync).")
                         .Register(r)
                         .Add({}, LatencyBuckets());
  cycle_duration = &BuildHistogram()
                        .Name("seedance_scheduling_cycles_duration_seconds")
                        .Help(
                            "Time a batch spent in scheduling cycles (placement decisions); "
                            "divided by the attempts it made, the cost of one decision.")
                        .Register(r)
                        .Add({}, LatencyBuckets());
  batch_size = &BuildHistogram()
                    .Name("seedance_batch_operations")
                    .Help("Operations applied per batch (group commit).")
                    .Register(r)
                    .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128,
                                                                     256, 512, 1024, 4096});
  nodes = &BuildGauge().Name("seedance_nodes").Help("Nodes registered.").Register(r).Add({});
  pods_bound =
      &BuildGauge().Name("seedance_pods_bound").Help("Pods bound to a node.").Register(r).Add({});
  revision = &BuildGauge()
                  .Name("seedance_state_revision")
                  .Help("The revision of the last durable change.")
                  .Register(r)
                  .Add({});
}

std::string Metrics::Expose() const {
  return prometheus::TextSerializer().Serialize(registry->Collect());
}

void Metrics::CountRequest(const std::string& route, int code) {
  http_requests->Add({{"route", route}, {"code", std::to_string(code)}}).Increment();
}

}  // namespace seedance::server
