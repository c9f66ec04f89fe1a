// libFuzzer target: any bytes in a kubectl snapshot (or an extender request's objects) must give
// a snapshot or a status, never a crash: JSON, quantities, the pod request rules, GPU styles and
// the placement annotation. The first byte picks --ignore-unknown; the rest is split at the first
// 0xFF byte into a node file and a pod file, read together as `simulate` reads them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/k8s/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  namespace k8s = seedance::k8s;
  const k8s::SnapshotOptions options{.ignore_unknown = (data[0] & 1) != 0};
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
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
