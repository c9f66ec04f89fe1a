// Placement decisions per second of a policy on one core, at the public trace's 1,213 GPU nodes
// and at 10,000 nodes (the node list replicated with unique names).
//
// Method: a ClusterState and a Framework built as the simulator builds them (fgd is handed the
// trace's typical shapes as its oracle; cas learns online). Before timing, the policy itself
// fills the cluster to the steady-state level. Each timed iteration is one scheduling decision
// for the next pod of a fixed seeded stream drawn from the trace (successful or not); whenever
// the cluster's GPU allocation is above kSteadyGpuAllocPct, randomly chosen bound pods are
// released first, and those releases are part of the measured cost. items_per_second is
// decisions per second. The prepared cluster is kept between the library's repeated calls of
// a benchmark, so the stream simply continues.
//
// Needs the public data under trace::DataDir() (or $SEEDANCE_DATA_DIR); reports an error
// without it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"
#include "seedance/trace/csv_reader.h"

namespace {

using seedance::core::ClusterState;
using seedance::core::NodeSpec;
using seedance::core::Placement;
using seedance::core::PodShape;
using seedance::core::PodSpec;
namespace sched = seedance::sched;
namespace trace = seedance::trace;

// The cluster is kept at about this GPU allocation: above it, pods are released.
constexpr double kSteadyGpuAllocPct = 90.0;
constexpr uint64_t kSeed = 42;

struct TraceData {
  std::vector<NodeSpec> nodes;
  std::vector<PodSpec> pods;
  std::string error;  // non-empty if the data could not be read
};

const TraceData& LoadTrace() {
  static const TraceData* data = [] {
    auto* d = new TraceData;
    const std::string csv = trace::DataDir() + "/alibaba-gpu-v2023/csv";
    auto nodes = trace::ReadNodeCsv(csv + "/openb_node_list_gpu_node.csv");
    auto pods = trace::ReadPodCsv(csv + "/openb_pod_list_default.csv");
    if (!nodes.ok() || !pods.ok()) {
      d->error = "public trace not readable (set SEEDANCE_DATA_DIR): " +
                 (!nodes.ok() ? nodes.status().ToString() : pods.status().ToString());
    } else if (nodes->empty() || pods->empty()) {
      d->error = "public trace is empty under " + csv;
    } else {
      d->nodes = std::move(*nodes);
      d->pods = std::move(*pods);
    }
    return d;
  }();
  return *data;
}

// The trace's node list repeated until there are `count` nodes; copies get unique names.
std::vector<NodeSpec> ReplicateNodes(const std::vector<NodeSpec>& base, int count) {
  std::vector<NodeSpec> out;
  out.reserve(count);
  for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
    NodeSpec n = base[i % base.size()];
    const int copy = i / static_cast<int>(base.size());
    if (copy > 0) n.name += "-r" + std::to_string(copy);
    out.push_back(std::move(n));
  }
  return out;
}

// One policy on one cluster in steady state, with its pod stream and its bound pods.
class SteadyCluster {
 public:
  static absl::StatusOr<std::unique_ptr<SteadyCluster>> Create(const std::string& policy,
                                                               int num_nodes) {
    const TraceData& data = LoadTrace();
    if (!data.error.empty()) return absl::NotFoundError(data.error);
    absl::StatusOr<ClusterState> state =
        ClusterState::Create(ReplicateNodes(data.nodes, num_nodes));
    if (!state.ok()) return state.status();
    std::vector<PodSpec> pods = data.pods;
    for (PodSpec& p : pods) p.shape.gpu_model_mask = state->ModelMask(p.gpu_spec);

    sched::PolicyContext ctx;
    if (policy == "fgd") {
      ctx.oracle_workload = sched::TypicalShapes(sched::CountShapes(pods));
    }
    absl::StatusOr<sched::Profile> profile = sched::Registry::Builtins().Create(policy, ctx);
    if (!profile.ok()) return profile.status();
    sched::FrameworkOptions fo;
    fo.seed = kSeed;
    fo.node_order = sched::Framework::RandomNodeOrder(state->num_nodes(), kSeed);
    auto c = std::unique_ptr<SteadyCluster>(
        new SteadyCluster(std::move(*state), sched::Framework(std::move(*profile), std::move(fo))));
    for (const PodSpec& p : pods) c->shapes_.push_back(p.shape);
    std::shuffle(c->shapes_.begin(), c->shapes_.end(), c->rng_);
    c->Fill();
    return c;
  }

  // Releases pods while above the steady level, then makes one decision.
  void Step() {
    while (AboveSteady() && !bound_.empty()) ReleaseRandom();
    const PodShape& pod = shapes_[next_];
    if (++next_ == shapes_.size()) next_ = 0;
    framework_.NotifyArrival(pod);
    sched::Outcome out = framework_.Schedule(pod, state_);
    ++decisions_;
    if (out.ok()) {
      bound_.push_back({pod, out.placement});
    } else {
      ++failures_;
    }
  }

  int64_t decisions() const { return decisions_; }
  int64_t failures() const { return failures_; }
  int64_t releases() const { return releases_; }
  double gpu_alloc_pct() const {
    return 100.0 * static_cast<double>(state_.gpu_allocated_milli()) /
           static_cast<double>(state_.gpu_capacity_milli());
  }
  int num_nodes() const { return state_.num_nodes(); }

 private:
  SteadyCluster(ClusterState state, sched::Framework framework)
      : state_(std::move(state)), framework_(std::move(framework)), rng_(kSeed) {}

  bool AboveSteady() const { return gpu_alloc_pct() > kSteadyGpuAllocPct; }

  // Schedules the stream until the allocation first exceeds the steady level (untimed).
  void Fill() {
    const int64_t limit = 50 * static_cast<int64_t>(shapes_.size());
    for (int64_t i = 0; i < limit && !AboveSteady(); ++i) Step();
    decisions_ = failures_ = releases_ = 0;
  }

  void ReleaseRandom() {
    std::uniform_int_distribution<size_t> pick(0, bound_.size() - 1);
    const size_t i = pick(rng_);
    framework_.Release(bound_[i].first, bound_[i].second, state_);
    bound_[i] = bound_.back();
    bound_.pop_back();
    ++releases_;
  }

  ClusterState state_;
  sched::Framework framework_;
  std::mt19937_64 rng_;
  std::vector<PodShape> shapes_;  // the stream, in a fixed seeded order, repeated
  size_t next_ = 0;
  std::vector<std::pair<PodShape, Placement>> bound_;
  int64_t decisions_ = 0, failures_ = 0, releases_ = 0;
};

// Prepared clusters survive the library's repeated calls of one benchmark.
SteadyCluster* GetCluster(const std::string& policy, int num_nodes, std::string* error) {
  static auto* clusters = new std::map<std::pair<std::string, int>, std::unique_ptr<SteadyCluster>>;
  auto key = std::make_pair(policy, num_nodes);
  auto it = clusters->find(key);
  if (it != clusters->end()) return it->second.get();
  absl::StatusOr<std::unique_ptr<SteadyCluster>> c = SteadyCluster::Create(policy, num_nodes);
  if (!c.ok()) {
    *error = policy + " at " + std::to_string(num_nodes) + " nodes: " + c.status().ToString();
    return nullptr;
  }
  return clusters->emplace(key, std::move(*c)).first->second.get();
}

void BM_Placement(benchmark::State& state, const std::string& policy) {
  const int num_nodes = static_cast<int>(state.range(0));
  std::string error;
  SteadyCluster* c = GetCluster(policy, num_nodes, &error);
  if (c == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  const int64_t d0 = c->decisions(), f0 = c->failures(), r0 = c->releases();
  for (auto _ : state) c->Step();
  const double decisions = static_cast<double>(c->decisions() - d0);
  state.SetItemsProcessed(c->decisions() - d0);
  state.counters["nodes"] = c->num_nodes();
  state.counters["gpu_alloc_pct"] = c->gpu_alloc_pct();
  state.counters["unschedulable_pct"] =
      decisions > 0 ? 100.0 * static_cast<double>(c->failures() - f0) / decisions : 0.0;
  state.counters["releases_per_decision"] =
      decisions > 0 ? static_cast<double>(c->releases() - r0) / decisions : 0.0;
}

BENCHMARK_CAPTURE(BM_Placement, fgd, std::string("fgd"))->Arg(1213)->Arg(10000);
BENCHMARK_CAPTURE(BM_Placement, cas, std::string("cas"))->Arg(1213)->Arg(10000);
BENCHMARK_CAPTURE(BM_Placement, bestfit, std::string("bestfit"))->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
