// Training-job re-placement in churn on the Alibaba trace (issue 17 part 4, docs/elastic.md):
// the trace's GPU nodes with a documented topology (--topology, default mixed: DGX-like and
// PCIe-tree nodes), its pods arriving and leaving in trace order, each placed on the first node
// that fits with the GPU set a chooser picks (--gpu-choice topology: sched::ChooseGpuSet; index:
// the lowest free GPUs, as a topology-unaware scheduler). Multi-GPU pods are training jobs that
// checkpoint every --checkpoint-s from their start. Every --plan-s, PlanReplacements moves the
// poorly placed ones whose simulated speed-up pays for the migration; a moved job's remaining
// work runs faster, so it ends (and frees its GPUs) earlier. Prints the job time saved, beside a
// run without re-placement.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "CLI/CLI.hpp"
#include "seedance/core/topology_template.h"
#include "seedance/elastic/replacement.h"
#include "seedance/sched/topology.h"
#include "seedance/trace/csv_reader.h"

namespace {

namespace elastic = seedance::elastic;
namespace core = seedance::core;
namespace sched = seedance::sched;

struct Flags {
  std::string dir;
  std::string pods = "openb_pod_list_default.csv";
  std::string topology = "mixed";
  std::string gpu_choice = "index";
  double checkpoint_s = 1800;
  double plan_s = 600;
  elastic::ReplacementOptions options;
};

struct Running {
  core::PodShape shape;
  core::Placement placement;
  double start_s = 0, end_s = 0;
  bool job = false;  // multi-GPU: a training job
  int version = 0;
};

struct Result {
  int64_t jobs = 0, poorly_placed_at_start = 0, moves = 0, refused = 0;
  double job_hours = 0;    // of multi-GPU jobs, as run
  double saved_hours = 0;  // job time saved by moves
};

bool Place(core::ClusterState& s, const core::PodShape& pod, bool topology, core::Placement* p) {
  for (int n = 0; n < s.num_nodes(); ++n) {
    if (!s.Fits(n, pod)) continue;
    p->node = n;
    p->num_gpus = 0;
    if (pod.num_gpu > 0 && pod.gpu_milli >= core::kMilliGpu) {
      if (topology) {
        if (!sched::ChooseGpuSet(s, n, pod.num_gpu, p)) continue;
      } else {
        for (int g = 0; g < s.node(n).num_gpus && p->num_gpus < pod.num_gpu; ++g) {
          if (s.gpu_left(n)[g] == core::kMilliGpu) p->gpus[p->num_gpus++] = static_cast<int8_t>(g);
        }
        if (p->num_gpus < pod.num_gpu) continue;
      }
    } else if (pod.num_gpu == 1) {
      int best = -1;
      for (int g = 0; g < s.node(n).num_gpus; ++g) {
        if (s.gpu_left(n)[g] >= pod.gpu_milli &&
            (best < 0 || s.gpu_left(n)[g] < s.gpu_left(n)[best])) {
          best = g;
        }
      }
      if (best < 0) continue;
      p->num_gpus = 1;
      p->gpus[0] = static_cast<int8_t>(best);
    }
    p->numa = sched::ChooseNuma(s, pod, *p);
    if (s.Allocate(pod, *p).ok()) return true;
  }
  return false;
}

Result Run(std::vector<core::NodeSpec> nodes, const std::vector<core::PodSpec>& pods,
           const Flags& f, bool replace) {
  core::ClusterState s = std::move(*core::ClusterState::Create(std::move(nodes)));
  const bool topology = f.gpu_choice == "topology";
  Result r;
  std::map<int, Running> running;
  // (end time, pod, version): a moved job's old end is stale when its version moved on.
  using Event = std::tuple<double, int, int>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> ends;
  double next_plan = 0;
  auto finish_until = [&](double t) {
    while (!ends.empty() && std::get<0>(ends.top()) <= t) {
      auto [end, id, version] = ends.top();
      ends.pop();
      auto it = running.find(id);
      if (it == running.end() || it->second.version != version) continue;
      if (it->second.job) r.job_hours += (end - it->second.start_s) / 3600;
      (void)s.Release(it->second.shape, it->second.placement);
      running.erase(it);
    }
  };
  auto plan = [&](double now) {
    std::vector<elastic::TrainingJob> jobs;
    for (auto& [id, run] : running) {
      if (!run.job) continue;
      const double into = std::fmod(now - run.start_s, f.checkpoint_s);
      const double remaining = run.end_s - now;
      elastic::TrainingJob j{std::to_string(id), run.shape, run.placement, remaining,
                             std::min(remaining, f.checkpoint_s - into)};
      jobs.push_back(j);
    }
    auto plans = elastic::PlanReplacements(s, jobs, f.options);
    if (!plans.ok()) return;
    for (const elastic::ReplacementPlan& p : *plans) {
      Running& run = running.at(std::stoi(p.id));
      const double remaining = run.end_s - now;
      const double after = remaining - p.move_in_s;
      const double new_end = now + p.move_in_s + f.options.migration_s + after / p.speedup;
      r.saved_hours += (run.end_s - new_end) / 3600;
      run.placement = p.to;  // PlanReplacements moved it in the state
      run.end_s = new_end;
      ++run.version;
      ends.emplace(new_end, std::stoi(p.id), run.version);
      ++r.moves;
    }
  };
  for (size_t i = 0; i < pods.size(); ++i) {
    const core::PodSpec& pod = pods[i];
    const double t = static_cast<double>(pod.creation_s);
    while (replace && next_plan <= t) {
      finish_until(next_plan);
      plan(next_plan);
      next_plan += f.plan_s;
    }
    finish_until(t);
    if (pod.deletion_s < pod.creation_s) continue;  // never ends: not part of the replay
    Running run;
    run.shape = pod.shape;
    run.start_s = t;
    run.end_s = static_cast<double>(pod.deletion_s);
    run.job = pod.shape.num_gpu >= 2;
    if (!Place(s, pod.shape, topology, &run.placement)) {
      ++r.refused;
      continue;
    }
    if (run.job) {
      ++r.jobs;
      r.poorly_placed_at_start += elastic::PoorlyPlaced(s, run.placement);
    }
    ends.emplace(run.end_s, static_cast<int>(i), 0);
    running.emplace(static_cast<int>(i), run);
  }
  finish_until(1e18);
  return r;
}

void Print(const char* name, const Result& r) {
  std::printf(
      "%-12s multi-GPU jobs %lld (%lld poorly placed when started), refused pods %lld, moves "
      "%lld, job hours %.0f, saved %.0f h (%.2f%%)\n",
      name, static_cast<long long>(r.jobs), static_cast<long long>(r.poorly_placed_at_start),
      static_cast<long long>(r.refused), static_cast<long long>(r.moves), r.job_hours,
      r.saved_hours,
      r.job_hours + r.saved_hours > 0 ? 100 * r.saved_hours / (r.job_hours + r.saved_hours) : 0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"replacement_churn: training-job re-placement in churn on the Alibaba trace"};
  Flags f;
  f.dir = seedance::trace::DataDir() + "/alibaba-gpu-v2023/csv";
  app.add_option("--pods", f.pods, "openb pod list in the trace's csv folder")
      ->capture_default_str();
  app.add_option("--topology", f.topology, "dgx, pcie-tree or mixed")->capture_default_str();
  app.add_option("--gpu-choice", f.gpu_choice, "index or topology")
      ->check(CLI::IsMember({"index", "topology"}))
      ->capture_default_str();
  app.add_option("--checkpoint-s", f.checkpoint_s, "jobs checkpoint this often")
      ->capture_default_str();
  app.add_option("--plan-s", f.plan_s, "re-placement planned this often")->capture_default_str();
  app.add_option("--comm-fraction", f.options.comm_fraction,
                 "all-reduce share of a step on the better set")
      ->capture_default_str();
  app.add_option("--migration-s", f.options.migration_s, "cost of one move")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto nodes = seedance::trace::ReadNodeCsv(f.dir + "/openb_node_list_gpu_node.csv");
  auto pods = seedance::trace::ReadPodCsv(f.dir + "/" + f.pods);
  if (!nodes.ok() || !pods.ok()) {
    std::fprintf(stderr, "replacement_churn: %s (skipped)\n",
                 std::string((nodes.ok() ? pods.status() : nodes.status()).message()).c_str());
    return 0;
  }
  auto t = core::ParseTopologyTemplate(f.topology);
  if (!t.ok()) {
    std::fprintf(stderr, "replacement_churn: %s\n", std::string(t.status().message()).c_str());
    return 2;
  }
  core::ApplyTopologyTemplate(*t, &*nodes);
  std::sort(pods->begin(), pods->end(), [](const core::PodSpec& a, const core::PodSpec& b) {
    return a.creation_s < b.creation_s;
  });
  std::printf(
      "%zu nodes (%s), %zu pods of %s, GPU choice %s, comm fraction %.2f, migration %.0f s\n",
      nodes->size(), f.topology.c_str(), pods->size(), f.pods.c_str(), f.gpu_choice.c_str(),
      f.options.comm_fraction, f.options.migration_s);
  Print("as placed", Run(*nodes, *pods, f, false));
  Print("re-placed", Run(*nodes, *pods, f, true));
  return 0;
}
