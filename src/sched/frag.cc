#include "seedance/sched/frag.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

namespace seedance::sched {

NodeResources NodeResources::Of(const core::ClusterState& s, int n) {
  NodeResources r;
  r.cpu_left = s.cpu_left(n);
  auto gl = s.gpu_left(n);
  r.num_gpus = static_cast<int32_t>(gl.size());
  std::copy(gl.begin(), gl.end(), r.gpu_left.begin());
  r.model = s.model(n);
  return r;
}

int64_t NodeResources::GpuLeftTotal() const {
  int64_t t = 0;
  for (int i = 0; i < num_gpus; ++i) t += gpu_left[i];
  return t;
}

bool Accessible(const NodeResources& node, uint64_t mask) {
  if (mask == 0) return true;
  return node.model != core::kNoGpuModel && ((mask >> node.model) & 1u);
}

namespace {

bool CanHostOnGpus(const NodeResources& node, int32_t num_gpu, int32_t gpu_milli) {
  int need = num_gpu;
  for (int i = 0; i < node.num_gpus; ++i) {
    if (node.gpu_left[i] >= gpu_milli && --need <= 0) return true;
  }
  return false;
}

}  // namespace

FragClass ClassifyNode(const NodeResources& node, const TargetShape& shape) {
  const bool cpu_ok = node.cpu_left >= shape.cpu_milli;
  if (shape.gpu_milli == 0) return cpu_ok ? FragClass::kXlSatisfied : FragClass::kXrLackCpu;
  if (!Accessible(node, shape.gpu_model_mask)) return FragClass::kNoAccess;
  if (CanHostOnGpus(node, shape.num_gpu, shape.gpu_milli)) {
    return cpu_ok ? FragClass::kQ3Satisfied : FragClass::kQ4LackCpu;
  }
  return cpu_ok ? FragClass::kQ2LackGpu : FragClass::kQ1LackBoth;
}

FragAmount NodeFragAmount(const NodeResources& node, const TargetWorkload& workload) {
  FragAmount amount{};
  const double total = static_cast<double>(node.GpuLeftTotal());
  for (const TargetShape& shape : workload) {
    if (shape.freq < 0 || shape.freq > 1) continue;  // the reference logs and skips these
    FragClass c = ClassifyNode(node, shape);
    if (c == FragClass::kQ3Satisfied) {
      int64_t frag_milli = 0;
      for (int i = 0; i < node.num_gpus; ++i) {
        if (node.gpu_left[i] < shape.gpu_milli) frag_milli += node.gpu_left[i];
      }
      amount[static_cast<int>(FragClass::kQ2LackGpu)] +=
          shape.freq * static_cast<double>(frag_milli);
      amount[static_cast<int>(FragClass::kQ3Satisfied)] +=
          shape.freq * (total - static_cast<double>(frag_milli));
    } else {
      amount[static_cast<int>(c)] += shape.freq * total;
    }
  }
  return amount;
}

double NodeFragScore(const NodeResources& node, const TargetWorkload& workload) {
  FragAmount a = NodeFragAmount(node, workload);
  double out = 0;
  for (int i = 0; i < kNumFragClasses; ++i) {
    if (i != static_cast<int>(FragClass::kQ3Satisfied)) out += a[i];
  }
  return out;
}

namespace {

// The reference's PodResource.Less: cpu, then gpu milli, then GPU count, then GPU type.
bool ShapeLess(const TargetShape& a, const TargetShape& b) {
  return std::tie(a.cpu_milli, a.gpu_milli, a.num_gpu, a.gpu_spec) <
         std::tie(b.cpu_milli, b.gpu_milli, b.num_gpu, b.gpu_spec);
}

}  // namespace

TargetWorkload TypicalShapes(std::vector<ShapeCount> counts, double coverage_pct) {
  std::sort(counts.begin(), counts.end(), [](const ShapeCount& a, const ShapeCount& b) {
    if (a.count != b.count) return a.count > b.count;
    return ShapeLess(b.shape, a.shape);
  });
  double total = 0;
  for (const ShapeCount& c : counts) total += c.count;
  TargetWorkload out;
  if (total <= 0) return out;
  const double expected = coverage_pct * total / 100.0;
  double cum = 0;
  size_t i = 0;
  while (cum < expected && i < counts.size()) {
    cum += counts[i].count;
    ++i;
  }
  for (size_t j = 0; j < i; ++j) {
    TargetShape s = counts[j].shape;
    s.freq = (counts[j].count / total) / (cum / total);
    out.push_back(std::move(s));
  }
  return out;
}

double WorkloadDistance(const TargetWorkload& a, const TargetWorkload& b) {
  std::map<std::tuple<int64_t, int32_t, int32_t, uint64_t, std::string>, double> diff;
  auto key = [](const TargetShape& t) {
    return std::make_tuple(t.cpu_milli, t.num_gpu, t.gpu_milli, t.gpu_model_mask, t.gpu_spec);
  };
  for (const TargetShape& t : a) diff[key(t)] += t.freq;
  for (const TargetShape& t : b) diff[key(t)] -= t.freq;
  double sum = 0;
  for (const auto& kv : diff) sum += std::abs(kv.second);
  return sum / 2.0;
}

std::vector<ShapeCount> CountShapes(std::span<const core::PodSpec> pods) {
  std::map<std::tuple<int64_t, int32_t, int32_t, std::string>, size_t> index;
  std::vector<ShapeCount> out;
  for (const core::PodSpec& p : pods) {
    auto key = std::make_tuple(p.shape.cpu_milli, p.shape.gpu_milli, p.shape.num_gpu, p.gpu_spec);
    auto [it, inserted] = index.emplace(key, out.size());
    if (inserted) {
      ShapeCount c;
      c.shape.cpu_milli = p.shape.cpu_milli;
      c.shape.num_gpu = p.shape.num_gpu;
      c.shape.gpu_milli = p.shape.gpu_milli;
      c.shape.gpu_model_mask = p.shape.gpu_model_mask;
      c.shape.gpu_spec = p.gpu_spec;
      out.push_back(std::move(c));
    }
    out[it->second].count += 1;
  }
  return out;
}

}  // namespace seedance::sched
