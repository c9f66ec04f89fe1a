// Fitting and checking the cost model against operator profiles (calibration.h).
#include "seedance/model/calibration.h"

#include <cmath>
#include <functional>
#include <map>

namespace seedance::model {
namespace {

// Minimises f over the parameters pointed to by `knobs` (all > 0) by coordinate descent on a
// log2 grid whose step halves when no move improves: deterministic and derivative-free, enough
// for 2-4 well-conditioned constants.
void Minimise(const std::vector<double*>& knobs, const std::function<double()>& f) {
  double best = f();
  double step = 0.5;
  while (step > 1.0 / 512) {
    bool improved = false;
    for (double* k : knobs) {
      for (double dir : {step, -step}) {
        const double old = *k;
        *k = old * std::exp2(dir);
        const double v = f();
        if (v < best) {
          best = v;
          improved = true;
        } else {
          *k = old;
        }
      }
    }
    if (!improved) step /= 2;
  }
}

}  // namespace

bool IsProjection(const ProfileSample& s) { return s.op_class == OpClass::kGemm; }

bool IsIntraNode(const ProfileSample& s) {
  return s.op_class == OpClass::kAllReduce && s.devices_per_node >= s.num_workers;
}

double PredictSeconds(const ProfileSample& s, const GpuSpec& gpu, const CostModelParams& p) {
  switch (s.op_class) {
    case OpClass::kGemm:
      return GemmSeconds(gpu, p, s.m, s.k, s.n, DType::kFP16);
    case OpClass::kElementwise:
      return ElementwiseSeconds(gpu, p, s.kind, s.bytes);
    case OpClass::kAllReduce:
      return AllReduceSeconds(gpu, p, s.bytes, s.num_workers);
  }
  return 0;
}

double MapePct(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
               const CostModelParams& p) {
  if (samples.empty()) return 0;
  double sum = 0;
  for (const ProfileSample& s : samples) {
    sum += std::abs(PredictSeconds(s, gpu, p) - s.measured_s) / s.measured_s;
  }
  return 100.0 * sum / static_cast<double>(samples.size());
}

CostModelParams FitGemm(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
                        CostModelParams start) {
  const auto rows = Filter(samples, IsProjection);
  if (rows.empty()) return start;
  CostModelParams p = start;
  Minimise({&p.eta_compute, &p.eta_memory, &p.gemm_overhead_s},
           [&] { return MapePct(rows, gpu, p); });
  return p;
}

CostModelParams FitElementwise(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
                               CostModelParams start) {
  const auto rows =
      Filter(samples, [](const ProfileSample& s) { return s.op_class == OpClass::kElementwise; });
  if (rows.empty()) return start;
  CostModelParams p = start;
  Minimise({&p.eta_memory_norm, &p.eta_memory_rope, &p.eta_memory_act, &p.eta_memory_add,
            &p.eta_memory_embedding, &p.elementwise_overhead_s},
           [&] { return MapePct(rows, gpu, p); });
  return p;
}

CostModelParams FitAllReduce(const std::vector<ProfileSample>& samples, const GpuSpec& gpu,
                             CostModelParams start) {
  const auto rows = Filter(samples, IsIntraNode);
  if (rows.empty()) return start;
  CostModelParams p = start;
  Minimise({&p.allreduce_latency_s, &p.allreduce_efficiency, &p.allreduce_small_latency_s,
            &p.allreduce_small_efficiency},
           [&] { return MapePct(rows, gpu, p); });
  return p;
}

CheckResult CheckProfile(const Profile& profile, const GpuSpec& gpu) {
  CheckResult r;
  std::map<std::string, std::pair<int, double>> per_op;  // rows, sum of |err|/measured
  double sum = 0;
  for (const ProfileSample& s : profile.samples) {
    if (s.op_class == OpClass::kAllReduce && !IsIntraNode(s)) {
      ++r.skipped_rows;
      continue;
    }
    const CostModelParams p = DefaultParamsFor(gpu, s.num_workers);
    const double err = std::abs(PredictSeconds(s, gpu, p) - s.measured_s) / s.measured_s;
    auto& [n, e] = per_op[s.op];
    ++n;
    e += err;
    if (s.op_class != OpClass::kElementwise) {
      ++r.rows;
      sum += err;
    }
  }
  r.mape_pct = r.rows > 0 ? 100.0 * sum / r.rows : 0;
  for (const auto& [op, v] : per_op) {
    r.per_op.push_back({op, v.first, v.first > 0 ? 100.0 * v.second / v.first : 0});
  }
  return r;
}

}  // namespace seedance::model
