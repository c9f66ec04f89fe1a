// libFuzzer target: any bytes in a kubectl snapshot (or an extender request's objects) must give
// a snapshot or a status, never a crash: JSON, quantities, the pod request rules, GPU styles and
// the placement annotation. The first byte's bit 0 picks --ignore-unknown; with bit 1 set the rest
// is an extender request body (ExtenderArgs, binding and preemption args, each decoded and the
// filter and prioritize replies written against a small cluster); otherwise it is split at the
// first 0xFF byte into a node file and a pod file, read together as `simulate` reads them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/k8s/extender.h"
#include "seedance/k8s/snapshot.h"

namespace {

namespace k8s = seedance::k8s;

void FuzzExtender(std::string_view body) {
  static seedance::sched::Scheduler* scheduler = [] {
    seedance::sched::SchedulerOptions o;
    o.default_profile.policy = "bestfit";
    auto s = seedance::sched::Scheduler::Create(o);
    SEEDANCE_CHECK(s.ok()) << s.status().message();
    for (int i = 0; i < 4; ++i) {
      seedance::core::NodeSpec n;
      n.name = "n" + std::to_string(i);
      n.cpu_milli = 32000;
      n.memory_mib = 65536;
      n.num_gpus = 1 + i;
      n.gpu_model = i % 2 ? "A100" : "T4";
      SEEDANCE_CHECK((*s)->PutNode(n).ok()) << "node " << i;
    }
    return s->release();
  }();
  if (absl::StatusOr<k8s::ExtenderArgs> a = k8s::ParseExtenderArgs(body); a.ok()) {
    const seedance::sched::PodInfo pod = k8s::ResolvePod(*scheduler, a->pod, a->node_names);
    const k8s::FilterResult f = k8s::Filter(*scheduler, *a, pod);
    SEEDANCE_CHECK(f.passed.size() + f.failed.size() + f.unresolvable.size() <=
                   a->node_names.size())
        << "filter answered for more nodes than were sent";
    (void)k8s::FilterResultJson(*a, f);
    if (auto scores = k8s::Prioritize(*scheduler, *a, pod); scores.ok()) {
      for (const auto& [host, score] : *scores) {
        SEEDANCE_CHECK(score >= 0 && score <= k8s::kMaxExtenderPriority)
            << "prioritize scored " << host << " " << score;
      }
      (void)k8s::PriorityListJson(*scores);
    }
  }
  (void)k8s::ParseBindingArgs(body);
  if (absl::StatusOr<k8s::PreemptionArgs> p = k8s::ParsePreemptionArgs(body); p.ok()) {
    (void)k8s::PreemptionResultJson(k8s::Preempt(*scheduler, *p));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const k8s::SnapshotOptions options{.ignore_unknown = (data[0] & 1) != 0};
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 2) {
    FuzzExtender(rest);
    return 0;
  }
  const size_t cut = rest.find('\xff');
  const std::string_view nodes = rest.substr(0, cut);
  const std::string_view pods = cut == std::string_view::npos ? "" : rest.substr(cut + 1);
  k8s::Snapshot s;
  if (!k8s::AddSnapshotText(nodes, "nodes.json", options, &s).ok()) return 0;
  if (!pods.empty() && !k8s::AddSnapshotText(pods, "pods.json", options, &s).ok()) return 0;
  if (!k8s::FinishSnapshot(options, &s).ok()) return 0;
  for (const k8s::Pod& p : s.pods) {
    SEEDANCE_CHECK(p.shape.cpu_milli >= 0 && p.shape.memory_mib >= 0 && p.shape.num_gpu >= 0 &&
                   p.shape.num_gpu <= seedance::core::kMaxGpusPerNode && p.shape.gpu_milli >= 0 &&
                   p.shape.gpu_milli <= seedance::core::kMilliGpu)
        << "pod " << p.ns << "/" << p.name << " decoded to an impossible request";
    SEEDANCE_CHECK(p.shape.num_gpu == 0 || p.shape.gpu_milli > 0)
        << "pod " << p.ns << "/" << p.name << " asks for GPUs with no share after resolution";
  }
  (void)k8s::ToNodeSpecs(s);
  (void)k8s::ToPodSpecs(s);
  (void)k8s::ToProfile(s);
  return 0;
}
