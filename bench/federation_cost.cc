// What placing across member clusters by expected cost saves (issue 42; docs/federation.md,
// "Placement across members (library)"): the public trace's pods replayed through three
// in-process members with different GPU models and prices, dispatched by the federation library's
// three policies side by side:
//   cost             Seedance (federation::PolicyKind::kCost): the lowest expected cost where the
//                    pod fits; the chosen model and those there that cost no more are pinned
//                    (gpu_spec) so that the cost holds
//                    (also run unpinned, and with every duration unknown: priced as 1 h)
//   first-to-admit   MultiKueue-like: the first member in file order where it fits
//   static-weights   Karmada-like: a weighted round robin (equal weights) where it fits
// Members: the GPU nodes of openb_node_list_gpu_node.csv split by model (kSplit below), each a
// real sched::Scheduler (cas, the simulator's options) on simulated time. Prices: the hardware
// catalog's GPU-hour price of each model times the member's factor; CPU kCpuHourUsd x factor.
// The dispatcher reads each member's GET /v1/cluster body as the member's server makes it
// (server::ClusterSummaryJson over the member's scheduler state) through
// federation::ParseClusterSummary. A pod arrives at its creation_time and runs for
// deletion_time - creation_time once placed; one that fits nowhere waits at the front and is
// retried whenever a pod completes. A member whose scheduler does not place a pod the summary
// admitted (the summary is an approximation) has it withdrawn at once, and the pod is decided
// again among the others. Reported per policy: GPU and CPU cost (USD, from where each pod ran),
// mean queueing time at the front (s), pods per member; and cost(cost)/cost(first-to-admit).
//
//   build/bench/federation_cost [--data-dir DIR] [--pods FILE] [--limit N] [--arrival-scale S]
// --arrival-scale S > 1 divides the arrival times (not the durations) by S: the trace's own
// times keep at most 66 GPUs busy at once, which no member runs short of.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "seedance/core/cluster_state.h"
#include "seedance/federation/config.h"
#include "seedance/federation/placement.h"
#include "seedance/hw/catalog.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/scheduler.h"
#include "seedance/server/codec.h"
#include "seedance/trace/csv_reader.h"
#include "seedance/trace/node_file.h"

namespace {

namespace core = seedance::core;
namespace fed = seedance::federation;
namespace sched = seedance::sched;

// USD per core-hour before a member's factor: a general-purpose cloud vCPU-hour.
constexpr double kCpuHourUsd = 0.04;
constexpr uint64_t kSeed = 42;

// The three members, in file order (first-to-admit's order): which GPU models each holds and
// its price factor over the catalog's on-demand prices. A model no member names goes to the
// last ("the rest").
struct MemberSplit {
  const char* name;
  std::vector<std::string> models;
  double factor;
  const char* tier;
};
const std::vector<MemberSplit>& Split() {
  static const std::vector<MemberSplit> kSplit = {
      {"v100", {"V100M16", "V100M32"}, 1.0, "on-demand"},
      {"t4", {"T4", "P100", "A10"}, 0.5, "spot"},
      {"rest", {}, 1.3, "premium"},
  };
  return kSplit;
}

struct TracePod {
  core::PodSpec spec;
  double arrival_s = 0;
  double duration_s = 0;
};

struct Run {
  std::string label;
  fed::PolicyKind kind = fed::PolicyKind::kCost;
  bool known_durations = true;  // kCost's expected duration: the trace's, or unknown (1 h)
  bool reverse_order = false;   // the member file in reverse order
  bool pin_model = true;        // kCost: the pod's gpu_spec set to the model priced
};

struct MemberResult {
  std::string name;
  int64_t pods = 0;
  double gpu_hours = 0, gpu_usd = 0;
};

struct RunResult {
  Run run;
  int64_t placed = 0, never_placed = 0, withdrawn = 0, decisions = 0;
  double gpu_usd = 0, cpu_usd = 0, queue_sum_s = 0, queue_max_s = 0, wall_s = 0;
  std::vector<MemberResult> members;
  double mean_queue_s() const { return placed > 0 ? queue_sum_s / placed : 0; }
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "federation_cost: %s\n", what.c_str());
  std::exit(1);
}

// The member file of the split, written as an operator would and read by the library.
fed::FederationConfig MemberFile(const std::vector<std::vector<core::NodeSpec>>& nodes) {
  std::string yaml = "members:\n";
  for (size_t m = 0; m < Split().size(); ++m) {
    const MemberSplit& s = Split()[m];
    std::set<std::string> models;
    for (const core::NodeSpec& n : nodes[m]) models.insert(n.gpu_model);
    std::vector<std::string> prices;
    for (const std::string& model : models) {
      const seedance::hw::GpuModel* g = seedance::hw::Find(model);
      if (g == nullptr || !g->usd_per_hour) Die("no catalog price for GPU model " + model);
      prices.push_back(absl::StrCat(model, ": ", *g->usd_per_hour * s.factor));
    }
    absl::StrAppend(&yaml, "  - name: ", s.name, "\n    url: http://127.0.0.1:", 7070 + m,
                    "\n    labels: {tier: ", s.tier, "}\n    prices:\n      gpu_hour: {",
                    absl::StrJoin(prices, ", "), "}\n      cpu_hour: ", kCpuHourUsd * s.factor,
                    "\n");
  }
  absl::StatusOr<fed::FederationConfig> c = fed::ParseFederationConfig(yaml, "<bench members>");
  if (!c.ok()) Die(std::string(c.status().message()));
  return *c;
}

// The nodes of each member of the split.
std::vector<std::vector<core::NodeSpec>> SplitNodes(const std::vector<core::NodeSpec>& all) {
  std::vector<std::vector<core::NodeSpec>> out(Split().size());
  for (const core::NodeSpec& n : all) {
    size_t m = Split().size() - 1;
    for (size_t i = 0; i + 1 < Split().size(); ++i) {
      const auto& models = Split()[i].models;
      if (std::find(models.begin(), models.end(), n.gpu_model) != models.end()) m = i;
    }
    out[m].push_back(n);
  }
  for (size_t m = 0; m < out.size(); ++m) {
    if (out[m].empty()) Die(absl::StrCat("member ", Split()[m].name, " has no nodes"));
  }
  return out;
}

class Replay {
 public:
  Replay(const std::vector<std::vector<core::NodeSpec>>& nodes, const fed::FederationConfig& file,
         const std::vector<TracePod>& pods, Run run)
      : pods_(pods), rotation_(std::vector<double>(nodes.size(), 1.0)) {
    result_.run = std::move(run);
    std::vector<size_t> order(nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (result_.run.reverse_order) std::reverse(order.begin(), order.end());
    for (size_t i : order) {
      Member m;
      m.config = file.members[i];
      absl::StatusOr<core::ClusterState> state = core::ClusterState::Create(nodes[i]);
      if (!state.ok()) Die(std::string(state.status().message()));
      sched::SchedulerOptions so = sched::SimulationOptions();
      so.seed = kSeed;
      so.node_order = sched::Framework::RandomNodeOrder(state->num_nodes(), kSeed);
      absl::StatusOr<std::unique_ptr<sched::Scheduler>> s =
          sched::Scheduler::Create(std::move(so), *std::move(state));
      if (!s.ok()) Die(std::string(s.status().message()));
      if (absl::Status st = (*s)->BuildDefaultProfile(); !st.ok()) Die(std::string(st.message()));
      m.scheduler = *std::move(s);
      members_.push_back(std::move(m));
    }
  }

  RunResult Go();

 private:
  struct Member {
    fed::MemberConfig config;
    std::unique_ptr<sched::Scheduler> scheduler;
    fed::MemberView view;
    bool stale = true;
    MemberResult tally;
  };
  struct Running {
    double end_s;
    size_t pod;
    size_t member;
    bool operator>(const Running& o) const {
      return std::tie(end_s, pod) > std::tie(o.end_s, o.pod);
    }
  };

  // The member's view from its GET /v1/cluster body, made again after its state changed.
  const fed::MemberView& View(size_t m);
  fed::PodAsk AskOf(size_t pod) const;
  // Decides, submits and checks the member placed it; false: it waits at the front.
  bool Dispatch(size_t pod, double t);
  void Placed(size_t pod, size_t member, const sched::PodInfo& info, double t);
  void Complete(const Running& r);
  // Retries the pods waiting at the front, oldest first, skipping a shape that failed already.
  void Retry(double t);

  const std::vector<TracePod>& pods_;
  std::vector<Member> members_;
  fed::WeightedRotation rotation_;
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running_;
  std::vector<size_t> waiting_;
  RunResult result_;
};

const fed::MemberView& Replay::View(size_t m) {
  Member& member = members_[m];
  if (member.stale) {
    const sched::Scheduler& s = *member.scheduler;
    const std::string body = seedance::server::ClusterSummaryJson(member.config.name, "local",
                                                                  s.state(), s.queue().size())
                                 .dump();
    absl::StatusOr<fed::ClusterSummary> summary = fed::ParseClusterSummary(body);
    if (!summary.ok()) Die(std::string(summary.status().message()));
    member.view = fed::ViewOf(member.config, *std::move(summary));
    member.stale = false;
  }
  return member.view;
}

fed::PodAsk Replay::AskOf(size_t pod) const {
  const core::PodSpec& p = pods_[pod].spec;
  fed::PodAsk ask;
  ask.request.name = p.name;
  ask.request.cpu_milli = p.shape.cpu_milli;
  ask.request.memory_mib = p.shape.memory_mib;
  ask.request.num_gpu = p.shape.num_gpu;
  ask.request.gpu_milli = p.shape.gpu_milli;
  ask.request.gpu_spec = p.gpu_spec;
  ask.request.priority = p.priority;
  if (result_.run.known_durations) ask.expected_duration_s = pods_[pod].duration_s;
  return ask;
}

bool Replay::Dispatch(size_t pod, double t) {
  const fed::PodAsk ask = AskOf(pod);
  std::vector<fed::MemberView> views;
  for (size_t m = 0; m < members_.size(); ++m) views.push_back(View(m));
  const fed::Policy policy{.kind = result_.run.kind, .rotation = &rotation_};
  for (size_t attempt = 0; attempt < members_.size(); ++attempt) {
    const fed::Decision d = fed::Decide(ask, views, policy);
    ++result_.decisions;
    if (d.member < 0) return false;
    sched::Scheduler& s = *members_[d.member].scheduler;
    sched::PodInfo info;
    info.uid = std::to_string(pod);
    info.name = ask.request.name;
    info.ns = "default";
    info.priority = ask.request.priority;
    info.shape = pods_[pod].spec.shape;
    info.shape.gpu_model_mask = 0;
    info.gpu_spec = ask.request.gpu_spec;
    // Seedance pins the model it priced and those there that cost no more (Decision::gpu_specs),
    // so that the cost it minimised is at most the cost paid.
    if (result_.run.kind == fed::PolicyKind::kCost && result_.run.pin_model &&
        info.gpu_spec.empty()) {
      info.gpu_spec = d.gpu_specs.front();
    }
    if (absl::Status st = s.SubmitPod(info, t); !st.ok()) Die(std::string(st.message()));
    s.RunCycles(t);
    (void)s.TakeChanges();
    const sched::PodInfo* placed = s.ledger().Find(info.uid);
    if (placed != nullptr && placed->phase == sched::PodPhase::kBound) {
      Placed(pod, d.member, *placed, t);
      return true;
    }
    // The member did not admit it: withdrawn, and decided again among the others.
    if (absl::Status st = s.DeletePod(info.uid, t); !st.ok()) Die(std::string(st.message()));
    (void)s.TakeChanges();
    ++result_.withdrawn;
    views[d.member].lost = true;
  }
  return false;
}

void Replay::Placed(size_t pod, size_t member, const sched::PodInfo& info, double t) {
  Member& m = members_[member];
  m.stale = true;
  const TracePod& p = pods_[pod];
  const double hours = p.duration_s / 3600.0;
  const core::PodShape& shape = p.spec.shape;
  if (shape.num_gpu > 0) {
    const std::string& model = m.scheduler->state().node(info.placement.node).gpu_model;
    const std::optional<double> price = m.config.prices.GpuHour(model);
    if (!price) Die("no price for " + model + " on " + m.config.name);
    const double gpu_hours = shape.num_gpu * shape.gpu_milli / 1000.0 * hours;
    m.tally.gpu_hours += gpu_hours;
    m.tally.gpu_usd += *price * gpu_hours;
    result_.gpu_usd += *price * gpu_hours;
  }
  result_.cpu_usd += m.config.prices.cpu_hour * shape.cpu_milli / 1000.0 * hours;
  ++m.tally.pods;
  ++result_.placed;
  const double queued = t - p.arrival_s;
  result_.queue_sum_s += queued;
  result_.queue_max_s = std::max(result_.queue_max_s, queued);
  running_.push({t + p.duration_s, pod, member});
}

void Replay::Complete(const Running& r) {
  Member& m = members_[r.member];
  if (absl::Status st = m.scheduler->DeletePod(std::to_string(r.pod), r.end_s); !st.ok()) {
    Die(std::string(st.message()));
  }
  m.scheduler->RunCycles(r.end_s);
  (void)m.scheduler->TakeChanges();
  m.stale = true;
}

void Replay::Retry(double t) {
  std::set<std::tuple<int64_t, int64_t, int32_t, int32_t, std::string>> failed;
  std::vector<size_t> still;
  for (size_t pod : waiting_) {
    const core::PodSpec& p = pods_[pod].spec;
    auto key = std::make_tuple(p.shape.cpu_milli, p.shape.memory_mib, p.shape.num_gpu,
                               p.shape.gpu_milli, p.gpu_spec);
    // Placements only take room: a shape that fit nowhere earlier in this pass fits nowhere now.
    if (failed.contains(key) || !Dispatch(pod, t)) {
      failed.insert(std::move(key));
      still.push_back(pod);
    }
  }
  waiting_ = std::move(still);
}

RunResult Replay::Go() {
  const auto start = std::chrono::steady_clock::now();
  size_t next = 0;
  while (next < pods_.size() || !running_.empty()) {
    const double ta = next < pods_.size() ? pods_[next].arrival_s : INFINITY;
    const double td = running_.empty() ? INFINITY : running_.top().end_s;
    if (td <= ta) {
      while (!running_.empty() && running_.top().end_s == td) {
        Complete(running_.top());
        running_.pop();
      }
      Retry(td);
    } else {
      const size_t pod = next++;
      if (!Dispatch(pod, ta)) waiting_.push_back(pod);
    }
  }
  result_.never_placed = static_cast<int64_t>(waiting_.size());
  for (Member& m : members_) {
    m.tally.name = m.config.name;
    result_.members.push_back(m.tally);
  }
  result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result_;
}

std::vector<TracePod> ReadPods(const std::string& path, int64_t limit, double arrival_scale) {
  absl::StatusOr<std::vector<core::PodSpec>> specs = seedance::trace::ReadPodCsv(path);
  if (!specs.ok()) Die(std::string(specs.status().message()));
  if (limit > 0 && static_cast<int64_t>(specs->size()) > limit) specs->resize(limit);
  int64_t t0 = INT64_MAX;
  for (const core::PodSpec& p : *specs) t0 = std::min(t0, p.creation_s);
  std::vector<TracePod> pods;
  for (core::PodSpec& p : *specs) {
    // A pod the trace never saw end runs to the trace's last event (none in the default trace).
    const double duration =
        p.deletion_s >= p.creation_s ? static_cast<double>(p.deletion_s - p.creation_s) : 0.0;
    pods.push_back({std::move(p), 0.0, duration});
    pods.back().arrival_s = static_cast<double>(pods.back().spec.creation_s - t0) / arrival_scale;
  }
  std::stable_sort(pods.begin(), pods.end(),
                   [](const TracePod& a, const TracePod& b) { return a.arrival_s < b.arrival_s; });
  return pods;
}

void Print(const std::vector<RunResult>& results, const fed::FederationConfig& file,
           const std::vector<std::vector<core::NodeSpec>>& nodes, size_t num_pods,
           double arrival_scale) {
  std::printf("members (file order):\n");
  for (size_t m = 0; m < file.members.size(); ++m) {
    int64_t gpus = 0;
    for (const core::NodeSpec& n : nodes[m]) gpus += n.num_gpus;
    std::vector<std::string> prices;
    for (const auto& [model, usd] : file.members[m].prices.gpu_hour) {
      prices.push_back(absl::StrCat(model, " $", usd));
    }
    std::printf("  %-5s %-9s x%.1f  %4zu nodes %5lld GPUs  GPU-hour: %s; core-hour $%g\n",
                file.members[m].name.c_str(), Split()[m].tier, Split()[m].factor, nodes[m].size(),
                static_cast<long long>(gpus), absl::StrJoin(prices, ", ").c_str(),
                file.members[m].prices.cpu_hour);
  }
  std::printf(
      "\n%zu pods, arrivals at creation_time / %g, each running its own duration\n%-34s %12s %10s "
      "%12s %8s %6s %9s  %s\n",
      num_pods, arrival_scale, "policy", "GPU cost $", "CPU cost $", "mean queue s", "waiting",
      "withdr", "wall s", "pods per member");
  for (const RunResult& r : results) {
    std::vector<std::string> per;
    for (const MemberResult& m : r.members) per.push_back(absl::StrCat(m.name, " ", m.pods));
    std::printf("%-34s %12.0f %10.0f %12.2f %8lld %6lld %9.2f  %s\n", r.run.label.c_str(),
                r.gpu_usd, r.cpu_usd, r.mean_queue_s(), static_cast<long long>(r.never_placed),
                static_cast<long long>(r.withdrawn), r.wall_s, absl::StrJoin(per, ", ").c_str());
  }
  const double ratio = results[0].gpu_usd / results[1].gpu_usd;
  std::printf("\nGPU cost, Seedance (cost) / MultiKueue-like (first-to-admit): %.3f (%.1f%% %s)\n",
              ratio, std::abs(1 - ratio) * 100, ratio <= 1 ? "lower" : "higher");
  nlohmann::ordered_json j = {
      {"bench", "federation_cost"}, {"pods", num_pods}, {"arrival_scale", arrival_scale}};
  j["runs"] = nlohmann::ordered_json::array();
  for (const RunResult& r : results) {
    nlohmann::ordered_json members = nlohmann::ordered_json::object();
    for (const MemberResult& m : r.members) members[m.name] = m.pods;
    j["runs"].push_back({{"run", r.run.label},
                         {"policy", fed::PolicyName(r.run.kind)},
                         {"gpu_cost_usd", std::round(r.gpu_usd * 100) / 100},
                         {"cpu_cost_usd", std::round(r.cpu_usd * 100) / 100},
                         {"mean_queue_s", std::round(r.mean_queue_s() * 100) / 100},
                         {"max_queue_s", std::round(r.queue_max_s * 100) / 100},
                         {"never_placed", r.never_placed},
                         {"withdrawn", r.withdrawn},
                         {"pods_per_member", members},
                         {"wall_s", std::round(r.wall_s * 1000) / 1000}});
  }
  j["gpu_cost_ratio_cost_vs_first_to_admit"] = std::round(ratio * 10000) / 10000;
  std::printf("%s\n", j.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "federation_cost: cost-aware placement across three members vs first-to-admit "
      "and static weights, on the Alibaba GPU trace"};
  std::string data_dir = seedance::trace::DataDir();
  std::string pods_file = "openb_pod_list_default.csv";
  int64_t limit = 0;
  double arrival_scale = 1;
  app.add_option("--data-dir", data_dir, "the public data folder ($SEEDANCE_DATA_DIR)")
      ->capture_default_str();
  app.add_option("--pods", pods_file, "openb pod list: a path, or a name in the trace's csv folder")
      ->capture_default_str();
  app.add_option("--limit", limit, "replay only the first N pods (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--arrival-scale", arrival_scale,
                 "divide the arrival times (not the durations) by this: > 1 loads the members")
      ->check(CLI::Range(1e-3, 1e6))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const std::string dir = data_dir + "/alibaba-gpu-v2023/csv";
  absl::StatusOr<std::vector<core::NodeSpec>> all =
      seedance::trace::ReadNodeFile(dir + "/openb_node_list_gpu_node.csv");
  if (!all.ok()) Die(std::string(all.status().message()));
  const std::vector<TracePod> pods =
      ReadPods(pods_file.find('/') == std::string::npos ? dir + "/" + pods_file : pods_file, limit,
               arrival_scale);
  const std::vector<std::vector<core::NodeSpec>> nodes = SplitNodes(*all);
  const fed::FederationConfig file = MemberFile(nodes);
  const std::vector<Run> runs = {
      {"cost (Seedance)", fed::PolicyKind::kCost, true, false},
      {"first-to-admit (MultiKueue-like)", fed::PolicyKind::kFirstToAdmit, true, false},
      {"static-weights (Karmada-like)", fed::PolicyKind::kStaticWeights, true, false},
      {"cost, durations unknown (1 h)", fed::PolicyKind::kCost, false, false},
      {"first-to-admit, file reversed", fed::PolicyKind::kFirstToAdmit, true, true},
      {"cost, model not pinned", fed::PolicyKind::kCost, true, false, false},
  };
  std::vector<RunResult> results;
  for (const Run& run : runs) results.push_back(Replay(nodes, file, pods, run).Go());
  Print(results, file, nodes, pods.size(), arrival_scale);
  return 0;
}
