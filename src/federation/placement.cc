#include "seedance/federation/placement.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "seedance/base/check.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"

namespace seedance::federation {

// ------------------------------------------------------------------------ the cluster summary

const ModelRoom* ClusterSummary::Model(std::string_view model) const {
  for (const ModelRoom& m : gpu_models) {
    if (m.gpu_model == model) return &m;
  }
  return nullptr;
}

namespace {

// Debian's Abseil has its own string_view.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

using Json = nlohmann::json;
using Fields = base::JsonFields<Json>;

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

// An object member of `f` read with its own reader: absent leaves *out as it is.
template <class Read>
absl::Status ReadObject(Fields& f, std::string_view key, Read read) {
  const Json* j = f.Member(key);
  if (!f.ok()) return f.status();
  if (j == nullptr) return absl::OkStatus();
  Fields inner(*j, f.At(key));
  read(inner);
  return inner.status();
}

// nodes, capacity, free, largest_free: the room both the cluster and each model report.
absl::Status ReadRoom(Fields& f, Room* r) {
  f.Int("nodes", &r->nodes, 0, kMaxCount);
  if (absl::Status st = ReadObject(f, "capacity",
                                   [&](Fields& c) {
                                     c.Int("cpu_milli", &r->capacity.cpu_milli, 0, kMaxCount);
                                     c.Int("memory_mib", &r->capacity.memory_mib, 0, kMaxCount);
                                     c.Int("num_gpus", &r->capacity.num_gpus, 0, kMaxCount);
                                   });
      !st.ok()) {
    return st;
  }
  if (absl::Status st = ReadObject(f, "free",
                                   [&](Fields& c) {
                                     c.Int("cpu_milli", &r->free.cpu_milli, 0, kMaxCount);
                                     c.Int("memory_mib", &r->free.memory_mib, 0, kMaxCount);
                                     c.Int("gpu_milli", &r->free.gpu_milli, 0, kMaxCount);
                                     c.Int("whole_gpus", &r->free.whole_gpus, 0, kMaxCount);
                                   });
      !st.ok()) {
    return st;
  }
  return ReadObject(f, "largest_free", [&](Fields& c) {
    c.Int("cpu_milli", &r->largest_free.cpu_milli, 0, kMaxCount);
    c.Int("memory_mib", &r->largest_free.memory_mib, 0, kMaxCount);
    c.Int("whole_gpus", &r->largest_free.whole_gpus, 0, kMaxCount);
  });
}

absl::Status ReadSummary(const Json& j, ClusterSummary* s) {
  Fields f(j, "$");
  f.String("cluster", &s->cluster, /*required=*/true, 253);
  f.String("backend", &s->backend, false, 64);
  f.Int("cordoned_nodes", &s->cordoned_nodes, 0, kMaxCount);
  f.Int("pending_pods", &s->pending_pods, 0, kMaxCount);
  if (absl::Status st = ReadRoom(f, s); !st.ok()) return st;
  const Json* models = f.Member("gpu_models");
  if (!f.ok()) return f.status();
  if (models == nullptr) return absl::OkStatus();
  const std::string path = f.At("gpu_models");
  if (absl::Status st = base::CheckJsonKind(*models, path, base::JsonKind::kArray); !st.ok()) {
    return st;
  }
  for (size_t i = 0; i < models->size(); ++i) {
    ModelRoom m;
    Fields mf((*models)[i], base::JsonPathIndex(path, i));
    mf.String("gpu_model", &m.gpu_model, /*required=*/true, 253);
    std::string type = "gpu";
    mf.String("device_type", &type, /*required=*/false, 16);
    mf.Int("device_memory_mib", &m.device_memory_mib, 0, kMaxCount);
    if (!mf.ok()) return mf.status();
    if (type != "gpu" && type != "npu") {
      return base::JsonError(mf.At("device_type"),
                             absl::StrCat("must be \"gpu\" or \"npu\" (got '", type, "')"));
    }
    m.npu = type == "npu";
    if (absl::Status st = ReadRoom(mf, &m); !st.ok()) return st;
    if (s->Model(m.gpu_model) != nullptr) {
      return base::JsonError(mf.At("gpu_model"),
                             absl::StrCat("model '", m.gpu_model, "' is listed twice"));
    }
    s->gpu_models.push_back(std::move(m));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterSummary> ParseClusterSummary(std::string_view json) {
  constexpr std::string_view kWhat = "GET /v1/cluster";
  absl::StatusOr<Json> doc = base::ParseJsonDocument(json, kWhat);
  if (!doc.ok()) return doc.status();
  ClusterSummary s;
  if (absl::Status st = ReadSummary(*doc, &s); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(kWhat), ": ", st.message()));
  }
  return s;
}

MemberView ViewOf(const MemberConfig& member, ClusterSummary summary, bool lost) {
  return {.name = member.name,
          .region = member.region,
          .labels = member.labels,
          .prices = member.prices,
          .lost = lost,
          .refused = "",
          .summary = std::move(summary)};
}

// ------------------------------------------------------------------------------- the rotation

std::string_view PolicyName(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kCost:
      return "cost";
    case PolicyKind::kFirstToAdmit:
      return "first-to-admit";
    case PolicyKind::kStaticWeights:
      return "static-weights";
  }
  return "unknown";
}

WeightedRotation::WeightedRotation(std::vector<double> weights)
    : weights_(std::move(weights)), credit_(weights_.size(), 0.0) {
  SEEDANCE_CHECK(!weights_.empty()) << "a weighted rotation needs at least one member";
  for (double w : weights_) {
    SEEDANCE_CHECK(w > 0 && w < std::numeric_limits<double>::infinity())
        << "a member's weight must be finite and > 0, got " << w;
    total_ += w;
  }
}

std::vector<int> WeightedRotation::Order() const {
  const int n = static_cast<int>(weights_.size());
  int turn = 0;
  for (int i = 1; i < n; ++i) {
    if (credit_[i] + weights_[i] > credit_[turn] + weights_[turn]) turn = i;
  }
  std::vector<int> order;
  order.reserve(n);
  for (int k = 0; k < n; ++k) order.push_back((turn + k) % n);
  return order;
}

void WeightedRotation::Charge(int member) {
  SEEDANCE_CHECK(member >= 0 && static_cast<size_t>(member) < weights_.size())
      << "charged member " << member << " of a rotation over " << weights_.size();
  for (size_t i = 0; i < weights_.size(); ++i) credit_[i] += weights_[i];
  credit_[member] -= total_;
}

// ------------------------------------------------------------------------------- the decision

namespace {

// How one ask fares on one member.
struct AskFit {
  std::string why;                  // "" when it fits
  std::string model;                // the model priced ("" for a CPU-only pod)
  const ModelRoom* room = nullptr;  // its room in the member's summary
  double cost_usd = 0;
  std::string pin;  // Decision::gpu_specs
};

// How a pod (or a gang) fares on one member.
struct MemberFit {
  std::string why;  // "" when it fits
  double cost_usd = 0;
  int64_t whole_gpus_free = 0;  // kCost's tie-break
  std::vector<std::string> models;
  std::vector<std::string> pins;
};

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return absl::StrCat(n, " ", Sv(n == 1 ? one : many));
}

// "" when the member satisfies the pod's constraints (labels), else why not.
std::string ConstraintFailure(const PodAsk& ask, const MemberView& m) {
  const auto& labels = ask.request.labels;
  if (auto it = labels.find(std::string(kClusterLabel));
      it != labels.end() && it->second != m.name) {
    return absl::StrCat("the pod asks for cluster '", it->second, "' (", Sv(kClusterLabel), ")");
  }
  if (auto it = labels.find(std::string(kRegionLabel));
      it != labels.end() && it->second != m.region) {
    return absl::StrCat("in region '", m.region.empty() ? "(none)" : m.region,
                        "', the pod asks for '", it->second, "' (", Sv(kRegionLabel), ")");
  }
  return "";
}

// The models the pod accepts that the member has: those its gpu_spec names (every model when it
// names none) that pass its device ask (core::DeviceAccepts: kind and memory).
std::vector<const ModelRoom*> AcceptedModels(const PodAsk& ask, const ClusterSummary& s) {
  const api::PodRequest& r = ask.request;
  std::set<std::string, std::less<>> named;
  for (absl::string_view name : absl::StrSplit(r.gpu_spec, '|', absl::SkipEmpty())) {
    named.emplace(name);
  }
  std::vector<const ModelRoom*> out;
  for (const ModelRoom& m : s.gpu_models) {
    const bool in_spec = named.empty() || named.contains(m.gpu_model);
    if (core::DeviceAccepts(r.device, named.empty(), in_spec, m.npu, m.device_memory_mib)) {
      out.push_back(&m);
    }
  }
  return out;
}

// What the pod's devices must be, in words: "GPU of model T4", "NPU", "accelerator with >= 49152
// MiB" (a pod that does not say is taken to ask for GPUs, as it nearly always does).
std::string DevicesAsked(const api::PodRequest& r) {
  std::string out;
  switch (r.device.type) {
    case core::DeviceClass::kNpu:
      out = "NPU";
      break;
    case core::DeviceClass::kAny:
      out = "accelerator";
      break;
    case core::DeviceClass::kGpu:
    case core::DeviceClass::kUnset:
      out = "GPU";
      break;
  }
  if (!r.gpu_spec.empty()) absl::StrAppend(&out, " of model ", r.gpu_spec);
  if (r.device.memory_mib > 0) absl::StrAppend(&out, " with >= ", r.device.memory_mib, " MiB");
  return out;
}

bool WholeGpus(const api::PodRequest& r) { return r.num_gpu > 1 || r.gpu_milli >= 1000; }

// Why `room` (a model's or the cluster's) cannot take the pod's CPU and memory on one node.
std::string CpuMemoryFailure(const api::PodRequest& r, const Room& room, std::string_view what) {
  if (r.cpu_milli > room.largest_free.cpu_milli) {
    return absl::StrCat("no ", Sv(what), "node has ", r.cpu_milli, " free milli-CPU (largest ",
                        room.largest_free.cpu_milli, ")");
  }
  if (r.memory_mib > room.largest_free.memory_mib) {
    return absl::StrCat("no ", Sv(what), "node has ", r.memory_mib, " MiB of memory free (largest ",
                        room.largest_free.memory_mib, ")");
  }
  return "";
}

// Why the model cannot take the pod ("" when it can, as far as the summary tells).
std::string ModelFailure(const api::PodRequest& r, const ModelRoom& m) {
  if (WholeGpus(r)) {
    if (r.num_gpu > m.largest_free.whole_gpus) {
      return absl::StrCat("no node has ", r.num_gpu, " free ", m.gpu_model, " ",
                          r.num_gpu == 1 ? "GPU" : "GPUs", " (largest ", m.largest_free.whole_gpus,
                          ")");
    }
  } else if (r.gpu_milli > m.free.gpu_milli) {
    return absl::StrCat(m.gpu_model, " has ", m.free.gpu_milli,
                        " milli-GPUs free in all, the pod asks ", r.gpu_milli);
  }
  return CpuMemoryFailure(r, m, absl::StrCat(m.gpu_model, " "));
}

double Hours(const PodAsk& ask) {
  return ask.expected_duration_s.value_or(kUnknownDurationS) / 3600.0;
}

// The cost of everything but the GPUs: CPU time and bringing the data in.
double CpuAndEgressUsd(const PodAsk& ask, const MemberView& m) {
  const double cpu =
      m.prices.cpu_hour * static_cast<double>(ask.request.cpu_milli) / 1000.0 * Hours(ask);
  const bool moved = !ask.data_region.empty() && ask.data_gb > 0 && ask.data_region != m.region;
  return cpu + (moved ? m.prices.egress_gb * ask.data_gb : 0.0);
}

// The models a front may pin for a pod priced on `best`: `best`, then every other accepted
// model priced at most as it is, whether it has room now or not (the member's scheduler may use
// whichever frees first; the cost stays at most the one priced).
std::string PinFor(const ModelRoom& best, const std::vector<const ModelRoom*>& accepted,
                   const Prices& prices) {
  const double ceiling = prices.GpuHour(best.gpu_model).value_or(0);
  std::string pin = best.gpu_model;
  for (const ModelRoom* mr : accepted) {
    const std::optional<double> price = prices.GpuHour(mr->gpu_model);
    if (mr != &best && price && *price <= ceiling) absl::StrAppend(&pin, "|", mr->gpu_model);
  }
  return pin;
}

// Whether one ask fits the member on its own, priced on the cheapest accepted model with room.
AskFit FitOn(const PodAsk& ask, const MemberView& m) {
  const api::PodRequest& r = ask.request;
  AskFit out;
  if (std::string c = ConstraintFailure(ask, m); !c.empty()) {
    out.why = std::move(c);
    return out;
  }
  if (r.num_gpu == 0) {
    out.why = CpuMemoryFailure(r, m.summary, "");
    out.cost_usd = CpuAndEgressUsd(ask, m);
    return out;
  }
  const std::vector<const ModelRoom*> accepted = AcceptedModels(ask, m.summary);
  if (accepted.empty()) {
    std::vector<std::string> has;
    for (const ModelRoom& mr : m.summary.gpu_models) has.push_back(mr.gpu_model);
    out.why = r.gpu_spec.empty() && r.device == core::DeviceAsk{}
                  ? std::string("has no GPU nodes")
                  : absl::StrCat("has no ", DevicesAsked(r), " (it has ",
                                 has.empty() ? "none" : absl::StrJoin(has, ", "), ")");
    return out;
  }
  std::vector<std::string> failures;
  const ModelRoom* best = nullptr;
  double best_gpu_usd = 0;
  for (const ModelRoom* mr : accepted) {
    if (std::string f = ModelFailure(r, *mr); !f.empty()) {
      failures.push_back(std::move(f));
      continue;
    }
    const std::optional<double> price = m.prices.GpuHour(mr->gpu_model);
    if (!price) {
      failures.push_back(absl::StrCat("no GPU price for ", mr->gpu_model, " (and no default)"));
      continue;
    }
    const double usd = *price * r.num_gpu * r.gpu_milli / 1000.0 * Hours(ask);
    if (best == nullptr || usd < best_gpu_usd ||
        (usd == best_gpu_usd && mr->free.whole_gpus > best->free.whole_gpus)) {
      best = mr;
      best_gpu_usd = usd;
    }
  }
  if (best == nullptr) {
    constexpr size_t kShown = 4;
    const size_t more = failures.size() > kShown ? failures.size() - kShown : 0;
    failures.resize(std::min(failures.size(), kShown));
    out.why =
        absl::StrCat(absl::StrJoin(failures, "; "),
                     more > 0 ? absl::StrCat("; ", Plural(more, "more model", "more models")) : "");
    return out;
  }
  out.model = best->gpu_model;
  out.room = best;
  out.cost_usd = best_gpu_usd + CpuAndEgressUsd(ask, m);
  out.pin = PinFor(*best, accepted, m.prices);
  return out;
}

// What the asks placed on one member take of it together.
struct Demand {
  int64_t cpu_milli = 0, memory_mib = 0, whole_gpus = 0, gpu_milli = 0;
};

// Why the gang's asks, each fitting on its own, do not fit the member's free room together.
std::string TogetherFailure(std::span<const PodAsk> gang, const std::vector<AskFit>& fits,
                            const ClusterSummary& s) {
  Demand all;
  std::map<const ModelRoom*, Demand> by_model;
  for (size_t k = 0; k < gang.size(); ++k) {
    const api::PodRequest& r = gang[k].request;
    all.cpu_milli += r.cpu_milli;
    all.memory_mib += r.memory_mib;
    if (fits[k].room == nullptr) continue;
    Demand& d = by_model[fits[k].room];
    d.cpu_milli += r.cpu_milli;
    d.memory_mib += r.memory_mib;
    d.gpu_milli += int64_t{r.num_gpu} * r.gpu_milli;
    if (WholeGpus(r)) d.whole_gpus += r.num_gpu;
  }
  const std::string pods = Plural(static_cast<int64_t>(gang.size()), "pod", "pods");
  if (all.cpu_milli > s.free.cpu_milli || all.memory_mib > s.free.memory_mib) {
    return absl::StrCat("the gang's ", pods, " need ", all.cpu_milli, " milli-CPU and ",
                        all.memory_mib, " MiB; ", s.free.cpu_milli, " and ", s.free.memory_mib,
                        " are free");
  }
  for (const auto& [m, d] : by_model) {
    if (d.whole_gpus > m->free.whole_gpus || d.gpu_milli > m->free.gpu_milli ||
        d.cpu_milli > m->free.cpu_milli || d.memory_mib > m->free.memory_mib) {
      return absl::StrCat("the gang's ", pods, " need ", d.whole_gpus, " whole ", m->gpu_model,
                          " GPUs (", d.gpu_milli, " milli), ", d.cpu_milli, " milli-CPU and ",
                          d.memory_mib, " MiB; ", m->free.whole_gpus, " (", m->free.gpu_milli,
                          "), ", m->free.cpu_milli, " and ", m->free.memory_mib, " are free");
    }
  }
  return "";
}

// How the asks (one pod, or a gang) fare on one member together.
MemberFit FitAll(std::span<const PodAsk> asks, const MemberView& m) {
  MemberFit out;
  out.whole_gpus_free = m.summary.free.whole_gpus;
  if (m.lost) {
    out.why = "lost";
    return out;
  }
  if (!m.refused.empty()) {
    out.why = m.refused;
    return out;
  }
  std::vector<AskFit> fits;
  fits.reserve(asks.size());
  for (const PodAsk& ask : asks) {
    AskFit f = FitOn(ask, m);
    if (!f.why.empty()) {
      out.why = asks.size() == 1 ? f.why
                                 : absl::StrCat("pod ", ask.request.name, " of the gang: ", f.why);
      return out;
    }
    out.cost_usd += f.cost_usd;
    out.models.push_back(f.model);
    out.pins.push_back(f.pin);
    fits.push_back(std::move(f));
  }
  if (asks.size() > 1) out.why = TogetherFailure(asks, fits, m.summary);
  return out;
}

// The member the policy picks among those that fit (-1: none).
int Choose(const std::vector<MemberFit>& fits, const Policy& policy) {
  const int n = static_cast<int>(fits.size());
  switch (policy.kind) {
    case PolicyKind::kCost: {
      int best = -1;
      for (int i = 0; i < n; ++i) {
        if (!fits[i].why.empty()) continue;
        if (best < 0 || fits[i].cost_usd < fits[best].cost_usd ||
            (fits[i].cost_usd == fits[best].cost_usd &&
             fits[i].whole_gpus_free > fits[best].whole_gpus_free)) {
          best = i;
        }
      }
      return best;
    }
    case PolicyKind::kFirstToAdmit:
      for (int i = 0; i < n; ++i) {
        if (fits[i].why.empty()) return i;
      }
      return -1;
    case PolicyKind::kStaticWeights: {
      SEEDANCE_CHECK(policy.rotation != nullptr && policy.rotation->size() == fits.size())
          << "static weights need a rotation over the " << fits.size() << " members (got "
          << (policy.rotation == nullptr ? 0 : policy.rotation->size()) << ")";
      for (int i : policy.rotation->Order()) {
        if (fits[i].why.empty()) {
          policy.rotation->Charge(i);
          return i;
        }
      }
      return -1;
    }
  }
  return -1;
}

// Why a member that fits was not chosen.
std::string NotChosen(const MemberFit& fit, const MemberFit& chosen, std::string_view chosen_name,
                      PolicyKind kind) {
  const std::string cost = absl::StrCat("$", base::FormatNumber(fit.cost_usd));
  switch (kind) {
    case PolicyKind::kCost:
      if (fit.cost_usd > chosen.cost_usd) {
        return absl::StrCat("fits at ", cost, " expected; ", Sv(chosen_name), " is cheaper ($",
                            base::FormatNumber(chosen.cost_usd), ")");
      }
      return absl::StrCat("fits at ", cost, " expected, as ", Sv(chosen_name),
                          " does, which has more free whole GPUs or comes first");
    case PolicyKind::kFirstToAdmit:
      return absl::StrCat("fits, but ", Sv(chosen_name), " comes first in the member file");
    case PolicyKind::kStaticWeights:
      return absl::StrCat("fits, but ", Sv(chosen_name), " came first in the weighted turn");
  }
  return "fits";
}

Decision DecideAll(std::span<const PodAsk> asks, std::span<const MemberView> members,
                   Policy policy) {
  std::vector<MemberFit> fits;
  fits.reserve(members.size());
  for (const MemberView& m : members) fits.push_back(FitAll(asks, m));
  Decision d;
  d.member = Choose(fits, policy);
  if (d.member >= 0) {
    d.expected_cost_usd = fits[d.member].cost_usd;
    d.gpu_models = fits[d.member].models;
    d.gpu_specs = fits[d.member].pins;
  }
  for (size_t i = 0; i < members.size(); ++i) {
    if (static_cast<int>(i) == d.member) continue;
    const std::string why = fits[i].why.empty() ? NotChosen(fits[i], fits[d.member],
                                                            members[d.member].name, policy.kind)
                                                : fits[i].why;
    d.reasons.push_back(absl::StrCat(members[i].name, ": ", why));
  }
  return d;
}

}  // namespace

Decision Decide(const PodAsk& pod, std::span<const MemberView> members, Policy policy) {
  return DecideAll(std::span<const PodAsk>(&pod, 1), members, policy);
}

Decision DecideGang(std::span<const PodAsk> gang, std::span<const MemberView> members,
                    Policy policy) {
  SEEDANCE_CHECK(!gang.empty()) << "DecideGang needs at least one ask";
  return DecideAll(gang, members, policy);
}

}  // namespace seedance::federation
