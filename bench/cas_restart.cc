// What a restart of the scheduler costs `cas` in the fill protocol, and what learning the running
// pods at the restart gives back (docs/cas.md, item 1; Scheduler::RestorePod).
//
// The fill protocol on Seedance's stream (simulate --mode fill --tune 1.3): the trace's pods
// shuffled by the seed, resampled ones appended until their GPU request reaches 1.3 x capacity,
// placed in that order on the trace's nodes by `cas` with the seed's random node order. Until
// --restart-at percent of the capacity has arrived, one policy places every pod; there the
// policy is replaced by a new one, as a restarted server's would be, and the fill goes on.
//   no restart  the same policy all along
//   warm        the new policy is told every pod running at the restart as an arrival, as a
//               restarted server now tells it the pods it loads from its store
//   cold        the new policy learns only what arrives after the restart (the server before)
// Reported: the mean over the seeds of the unallocated GPU % at 100% arrived demand (the
// simulator's unalloc_gpu_pct_at_100: allocation averaged over the arrivals whose arrived
// demand rounds to 100%).
//
//   build/bench/cas_restart [--pods openb_pod_list_default.csv | PATH] [--seeds 42-51]
//       [--restart-at 10,25,50]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "seedance/base/parse.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"
#include "seedance/trace/csv_reader.h"

namespace {

namespace core = seedance::core;
namespace sched = seedance::sched;

constexpr double kTune = 1.3;

enum class Restart { kNone, kWarm, kCold };

sched::Framework NewCas(const core::ClusterState& state, uint64_t seed) {
  absl::StatusOr<sched::Profile> profile =
      sched::Registry::Builtins().Create("cas", sched::PolicyContext{});
  if (!profile.ok()) {
    std::fprintf(stderr, "cas_restart: %s\n", std::string(profile.status().message()).c_str());
    std::exit(1);
  }
  sched::FrameworkOptions fo;
  fo.seed = seed;
  fo.node_order = sched::Framework::RandomNodeOrder(state.num_nodes(), seed);
  return sched::Framework(std::move(*profile), std::move(fo));
}

// Seedance's fill stream for `seed`: the trace shuffled, then resampled pods to kTune x capacity.
std::vector<core::PodShape> Stream(const std::vector<core::PodSpec>& trace, double capacity,
                                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<core::PodSpec> pods = trace;
  std::shuffle(pods.begin(), pods.end(), rng);
  double total = 0;
  for (const core::PodSpec& p : pods) total += static_cast<double>(p.shape.TotalGpuMilli());
  std::uniform_int_distribution<size_t> pick(0, trace.size() - 1);
  while (total < kTune * capacity) {
    const core::PodSpec& p = trace[pick(rng)];
    pods.push_back(p);
    total += static_cast<double>(p.shape.TotalGpuMilli());
  }
  std::vector<core::PodShape> shapes;
  shapes.reserve(pods.size());
  for (const core::PodSpec& p : pods) shapes.push_back(p.shape);
  return shapes;
}

// Unallocated GPU % at 100% arrived demand of one fill.
double Fill(const std::vector<core::NodeSpec>& nodes, const std::vector<core::PodShape>& pods,
            uint64_t seed, Restart restart, double restart_at_pct) {
  absl::StatusOr<core::ClusterState> made = core::ClusterState::Create(nodes);
  if (!made.ok()) {
    std::fprintf(stderr, "cas_restart: %s\n", std::string(made.status().message()).c_str());
    std::exit(1);
  }
  core::ClusterState& state = *made;
  const double capacity = static_cast<double>(state.gpu_capacity_milli());
  sched::Framework fw = NewCas(state, seed);
  std::vector<core::PodShape> running;
  bool restarted = restart == Restart::kNone;
  double arrived = 0, alloc_sum = 0;
  int count = 0;
  for (const core::PodShape& pod : pods) {
    if (!restarted && 100.0 * arrived / capacity >= restart_at_pct) {
      fw = NewCas(state, seed);
      if (restart == Restart::kWarm) {
        for (const core::PodShape& r : running) fw.NotifyArrival(r);
      }
      restarted = true;
    }
    fw.NotifyArrival(pod);
    const sched::Outcome out = fw.Schedule(pod, state);
    if (out.ok()) running.push_back(pod);
    arrived += static_cast<double>(pod.TotalGpuMilli());
    if (std::lround(100.0 * arrived / capacity) == 100) {
      alloc_sum += 100.0 * static_cast<double>(state.gpu_allocated_milli()) / capacity;
      ++count;
    }
  }
  return count > 0 ? 100.0 - alloc_sum / count : NAN;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cas_restart: what a scheduler restart mid-fill costs cas"};
  std::string pods_file = "openb_pod_list_default.csv", seeds_text = "42-51";
  std::vector<double> restart_at = {10, 25, 50};
  app.add_option("--pods", pods_file, "openb pod list: a path, or a name in the trace's csv folder")
      ->capture_default_str();
  app.add_option("--seeds", seeds_text, "N or N-M")->capture_default_str();
  app.add_option("--restart-at", restart_at, "percent of the capacity arrived at the restart")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const std::string dir = seedance::trace::DataDir() + "/alibaba-gpu-v2023/csv";
  auto nodes = seedance::trace::ReadNodeCsv(dir + "/openb_node_list_gpu_node.csv");
  auto trace = seedance::trace::ReadPodCsv(
      pods_file.find('/') == std::string::npos ? dir + "/" + pods_file : pods_file);
  if (!nodes.ok() || !trace.ok()) {
    std::fprintf(stderr, "cas_restart: %s (skipped)\n",
                 std::string((nodes.ok() ? trace.status() : nodes.status()).message()).c_str());
    return 0;
  }
  const absl::StatusOr<std::vector<uint64_t>> parsed =
      seedance::base::ParseSeedList(seeds_text, "--seeds");
  if (!parsed.ok()) {
    std::fprintf(stderr, "cas_restart: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  const std::vector<uint64_t>& seeds = *parsed;
  absl::StatusOr<core::ClusterState> probe = core::ClusterState::Create(*nodes);
  if (!probe.ok()) {
    std::fprintf(stderr, "cas_restart: %s\n", std::string(probe.status().message()).c_str());
    return 2;
  }
  for (core::PodSpec& p : *trace) p.shape.gpu_model_mask = probe->ModelMask(p.gpu_spec);
  const double capacity = static_cast<double>(probe->gpu_capacity_milli());
  std::printf("%s, seeds %s: unallocated GPU %% at 100%% arrived demand, mean over the seeds\n",
              pods_file.c_str(), seeds_text.c_str());
  std::printf("%-12s %10s %10s %10s\n", "restart at", "none", "warm", "cold");
  for (double at : restart_at) {
    double sum[3] = {0, 0, 0};
    for (uint64_t seed : seeds) {
      const std::vector<core::PodShape> pods = Stream(*trace, capacity, seed);
      sum[0] += Fill(*nodes, pods, seed, Restart::kNone, at);
      sum[1] += Fill(*nodes, pods, seed, Restart::kWarm, at);
      sum[2] += Fill(*nodes, pods, seed, Restart::kCold, at);
    }
    const double n = static_cast<double>(seeds.size());
    std::printf("%10.0f %% %10.3f %10.3f %10.3f\n", at, sum[0] / n, sum[1] / n, sum[2] / n);
  }
  return 0;
}
