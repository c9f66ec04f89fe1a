// `seedance node-agent`: print the machine's NUMA/GPU topology, pin a pod's cgroup to the CPUs
// and memory of its GPUs' NUMA node (docs/node-agent.md), keep the node-local cache that
// prewarms what the server binds here, and wait for a pod's prewarm (docs/cache.md).
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client_common.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/api/client.h"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/nodeagent/cpuset.h"
#include "seedance/nodeagent/node_cache.h"
#include "seedance/nodeagent/prewarm_agent.h"

namespace seedance::cli {
namespace {

namespace na = seedance::nodeagent;

const std::vector<std::string> kFormats = {"table", "json"};
constexpr int64_t kMaxPid = 4194304;  // the kernel's PID_MAX_LIMIT

// Flags both subcommands share: where the machine is read from.
struct SourceFlags {
  std::string mountinfo = "/proc/self/mountinfo";
  std::string sys_root = "/sys";
  std::map<int, int> gpu_numa;
};

void AddSourceFlags(CLI::App* app, SourceFlags* f) {
  app->add_option_function<std::string>(
         "--gpu-numa",
         [f](const std::string& text) {
           auto m = na::ParseGpuNumaMap(text, "--gpu-numa");
           if (!m.ok()) throw CLI::ValidationError(std::string(m.status().message()));
           f->gpu_numa = std::move(*m);
         },
         "GPU:NUMA pairs (e.g. 0:0,1:1) replacing what sysfs says, or naming GPUs a machine "
         "does not show")
      ->type_name("MAP");
  app->add_option("--mountinfo", f->mountinfo,
                  "Where to find the cgroup mounts (default /proc/self/mountinfo)")
      ->type_name("FILE");
  app->add_option("--sys-root", f->sys_root,
                  "Read NUMA nodes and PCI devices below DIR instead of /sys")
      ->type_name("DIR");
}

absl::StatusOr<na::NodeTopology> Topology(const SourceFlags& f) {
  na::TopologyOptions o;
  o.sys_root = f.sys_root;
  o.gpu_numa = f.gpu_numa;
  return na::ReadNodeTopology(o);
}

std::string OutputPath(const OutputFlags& out) { return out.output.empty() ? "-" : out.output; }

nlohmann::ordered_json HierarchyJson(const absl::StatusOr<na::CpusetHierarchy>& h) {
  if (!h.ok()) return {{"found", false}, {"reason", std::string(h.status().message())}};
  return {{"found", true},
          {"version", na::CgroupVersionName(h->version)},
          {"mount_point", h->mount_point}};
}

struct TopologyFlags {
  SourceFlags source;
  OutputFlags out;
};

int RunTopology(const TopologyFlags& f) {
  absl::StatusOr<std::string> format = ResolveFormat(f.out, kFormats);
  if (!format.ok()) return Fail(format.status());
  if (absl::Status s = base::CheckOutputsDistinct({{"--mountinfo", f.source.mountinfo}},
                                                  {{"--output", f.out.output}});
      !s.ok()) {
    return Fail(s);
  }
  auto topo = Topology(f.source);
  if (!topo.ok()) return Fail(topo.status());
  // The hierarchy is reported, not required: a machine without cpusets still has a topology.
  const absl::StatusOr<na::CpusetHierarchy> h = na::DetectCpusetHierarchy(f.source.mountinfo);
  if (!h.ok() && h.status().code() != absl::StatusCode::kFailedPrecondition) {
    return Fail(h.status());
  }
  auto out = base::OutputFile::Open(OutputPath(f.out));
  if (!out.ok()) return Fail(out.status());
  std::string text;
  if (*format == "json") {
    nlohmann::ordered_json j = base::JsonHeader("node-agent-topology/v1");
    j["cpuset_hierarchy"] = HierarchyJson(h);
    j["numa_nodes"] = nlohmann::ordered_json::array();
    for (const na::NumaNode& n : topo->numa_nodes) {
      j["numa_nodes"].push_back(
          {{"id", n.id}, {"cpus", na::FormatCpuList(n.cpus)}, {"cpu_count", n.cpus.size()}});
    }
    j["gpus"] = nlohmann::ordered_json::array();
    for (const na::GpuLocality& g : topo->gpus) {
      j["gpus"].push_back({{"index", g.index},
                           {"pci_bus_id", g.pci_bus_id},
                           {"numa_node", g.numa_node < 0 ? nlohmann::ordered_json(nullptr)
                                                         : nlohmann::ordered_json(g.numa_node)},
                           {"source", g.overridden ? "--gpu-numa" : "sysfs"}});
    }
    text = base::DumpJson(j, 2) + "\n";
  } else {
    text = h.ok() ? absl::StrCat("cpuset hierarchy: cgroup ", na::CgroupVersionName(h->version),
                                 " at ", base::ForTerminal(h->mount_point), "\n\n")
                  : absl::StrCat("cpuset hierarchy: none (",
                                 base::ForTerminal(std::string(h.status().message())), ")\n\n");
    absl::StrAppend(&text, absl::StrFormat("%-9s %5s  %s\n", "numa_node", "cpus", "cpu_list"));
    for (const na::NumaNode& n : topo->numa_nodes) {
      absl::StrAppend(
          &text, absl::StrFormat("%-9d %5d  %s\n", n.id, n.cpus.size(), na::FormatCpuList(n.cpus)));
    }
    if (topo->gpus.empty()) {
      absl::StrAppend(&text, "\nno NVIDIA GPUs (give them with --gpu-numa, or pin with --numa)\n");
    } else {
      absl::StrAppend(&text, absl::StrFormat("\n%-5s %-14s %-9s %s\n", "gpu", "pci_bus_id",
                                             "numa_node", "source"));
      for (const na::GpuLocality& g : topo->gpus) {
        absl::StrAppend(
            &text, absl::StrFormat("%-5d %-14s %-9s %s\n", g.index,
                                   g.pci_bus_id.empty() ? "-" : base::ForTerminal(g.pci_bus_id),
                                   g.numa_node < 0 ? "unknown" : absl::StrCat(g.numa_node),
                                   g.overridden ? "--gpu-numa" : "sysfs"));
      }
    }
  }
  if (absl::Status s = (*out)->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = (*out)->Commit(); !s.ok()) return Fail(s);
  return kExitOk;
}

struct PinFlags {
  SourceFlags source;
  std::string cgroup;
  std::vector<int> gpus;
  std::vector<int> numa;
  CLI::Option* cgroup_opt = nullptr;
  CLI::Option* gpus_opt = nullptr;
  CLI::Option* numa_opt = nullptr;
  int64_t pid = 0;
  CLI::Option* pid_opt = nullptr;
  bool dry_run = false;
  OutputFlags out;
};

int RunPin(const PinFlags& f) {
  if (f.cgroup_opt->count() == 0) {
    return UsageError("node-agent pin: --cgroup PATH is required (the pod's cgroup)");
  }
  const bool by_gpu = f.gpus_opt->count() > 0, by_numa = f.numa_opt->count() > 0;
  if (by_gpu == by_numa) {
    return UsageError(by_gpu ? "node-agent pin: give --gpus or --numa, not both"
                             : "node-agent pin: give --gpus LIST (the pod's GPUs) or --numa N");
  }
  absl::StatusOr<std::string> format = ResolveFormat(f.out, kFormats);
  if (!format.ok()) return Fail(format.status());
  if (absl::Status s = base::CheckOutputsDistinct({{"--mountinfo", f.source.mountinfo}},
                                                  {{"--output", f.out.output}});
      !s.ok()) {
    return Fail(s);
  }
  auto topo = Topology(f.source);
  if (!topo.ok()) return Fail(topo.status());
  auto plan = by_gpu ? na::PlanPinForGpus(*topo, f.gpus) : na::PlanPinForNumaNodes(*topo, f.numa);
  if (!plan.ok()) return Fail(plan.status());
  auto h = na::DetectCpusetHierarchy(f.source.mountinfo);
  if (!h.ok()) return Fail(h.status());
  auto dir = na::ResolveCgroup(*h, f.cgroup);
  if (!dir.ok()) return Fail(dir.status());
  auto out = base::OutputFile::Open(OutputPath(f.out));
  if (!out.ok()) return Fail(out.status());

  na::PinResult result;
  if (f.dry_run) {
    result.writes = na::PinWrites(*h, *dir, *plan);
    if (f.pid_opt->count() > 0) {
      result.writes.push_back({dir->path + "/cgroup.procs", absl::StrCat(f.pid)});
    }
  } else {
    if (absl::Status s = na::Pin(*h, *dir, *plan, {}, &result); !s.ok()) return Fail(s);
    if (f.pid_opt->count() > 0) {
      if (absl::Status s = na::MoveProcess(*dir, static_cast<pid_t>(f.pid)); !s.ok()) {
        return Fail(s);
      }
      result.writes.push_back({dir->path + "/cgroup.procs", absl::StrCat(f.pid)});
    }
  }
  std::string text;
  if (*format == "json") {
    nlohmann::ordered_json j = base::JsonHeader("node-agent-pin/v1");
    j["dry_run"] = f.dry_run;
    j["cgroup"] = dir->relative;
    j["cgroup_version"] = na::CgroupVersionName(h->version);
    j["mount_point"] = h->mount_point;
    j["numa_nodes"] = plan->numa_nodes;
    j["cpus"] = plan->cpus;
    j["mems"] = plan->mems;
    j["writes"] = nlohmann::ordered_json::array();
    for (const na::CgroupWrite& w : result.writes) {
      j["writes"].push_back({{"file", w.file}, {"data", w.data}});
    }
    if (!f.dry_run) {
      j["effective_cpus"] = result.effective_cpus;
      j["effective_mems"] = result.effective_mems;
    }
    text = base::DumpJson(j, 2) + "\n";
  } else {
    text = absl::StrCat(
        f.dry_run ? "would pin" : "pinned", " cgroup ", base::ForTerminal(dir->relative),
        " (cgroup ", na::CgroupVersionName(h->version), ") to NUMA node(s) ",
        na::FormatCpuList(plan->numa_nodes), ": cpus ", plan->cpus, ", mems ", plan->mems, "\n");
    for (const na::CgroupWrite& w : result.writes) {
      absl::StrAppend(&text, f.dry_run ? "  would write " : "  wrote ", base::ForTerminal(w.data),
                      " > ", base::ForTerminal(w.file), "\n");
    }
    if (!f.dry_run && !result.effective_cpus.empty()) {
      absl::StrAppend(&text, "  effective: cpus ", base::ForTerminal(result.effective_cpus),
                      ", mems ", base::ForTerminal(result.effective_mems), "\n");
    }
  }
  if (absl::Status s = (*out)->Write(text); !s.ok()) return Fail(s);
  if (absl::Status s = (*out)->Commit(); !s.ok()) return Fail(s);
  return kExitOk;
}

CLI::Option* AddIndexList(CLI::App* app, const std::string& name, std::vector<int>* target,
                          const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name,
          [target, name](const std::string& text) {
            auto v = na::ParseIndexList(text, name);
            if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
            *target = std::move(*v);
          },
          help)
      ->type_name("LIST");
}

// ------------------------------------------------------------------ cache and prewarm-wait

// The server a node agent talks to (the client commands' flags, docs/cli.md).
// A byte-size flag ("64M", "2GiB", "1048576"); with `per_second`, a trailing "/s" is allowed.
CLI::Option* AddBytes(CLI::App* app, const std::string& name, int64_t* target, int64_t lo,
                      bool per_second, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name,
          [target, name, lo, per_second](const std::string& text) {
            std::string_view t = text;
            if (per_second && t.ends_with("/s")) t.remove_suffix(2);
            auto v = base::ParseByteSize(t, name, lo, INT64_MAX);
            if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
            *target = *v;
          },
          help)
      ->type_name(per_second ? "RATE" : "SIZE");
}

struct CacheFlags {
  ConnectionFlags server;
  std::string node;
  std::string dir;
  int64_t size_bytes = 0;
  std::string policy = "lru";
  int max_concurrent = 4;
  int64_t max_bytes_per_s = 0;
  int metrics_port = -1;
  double watch_timeout_s = 30;
  double stall_timeout_s = 30;
  int64_t min_bytes_per_s = 1024;
  int parallel_pods = 2;
  bool quiet = false;
};

int RunCache(const CacheFlags& f) {
  if (f.node.empty()) return UsageError("node-agent cache: --node NAME is required");
  if (f.dir.empty()) return UsageError("node-agent cache: --cache-dir DIR is required");
  if (f.size_bytes <= 0) return UsageError("node-agent cache: --cache-size SIZE is required");
  na::PrewarmAgentOptions ao;
  ao.node = f.node;
  ao.client = ClientOptionsOf(f.server);
  ao.watch_timeout_s = f.watch_timeout_s;
  ao.parallel_pods = f.parallel_pods;
  const bool quiet = f.quiet;
  ao.log = [quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "seedance node-agent: %s\n", base::ForTerminal(line).c_str());
  };
  if (absl::Status st = na::PrewarmAgent::CheckOptions(ao); !st.ok()) return Fail(st);
  const sigset_t stop_signals = BlockStopSignals();
  na::NodeCacheOptions co;
  co.dir = f.dir;
  co.budget_bytes = f.size_bytes;
  co.policy = f.policy;
  co.max_concurrent = f.max_concurrent;
  co.max_bytes_per_s = f.max_bytes_per_s;
  co.stall_timeout_s = f.stall_timeout_s;
  co.min_bytes_per_s = f.min_bytes_per_s;
  co.ca_file = f.server.ca_file;
  auto node_cache = na::NodeCache::Open(co);
  if (!node_cache.ok()) return Fail(node_cache.status());
  auto agent = na::PrewarmAgent::Create(ao, node_cache->get());
  if (!agent.ok()) return Fail(agent.status());
  std::unique_ptr<na::MetricsEndpoint> metrics;
  if (f.metrics_port >= 0) {
    auto m = na::MetricsEndpoint::Start("0.0.0.0", f.metrics_port,
                                        [a = agent->get()] { return a->PrometheusText(); });
    if (!m.ok()) return Fail(m.status());
    metrics = *std::move(m);
  }
  ao.log(absl::StrCat("caching for node ", f.node, " in ", f.dir, " (", f.size_bytes, " bytes, ",
                      f.policy, ")",
                      metrics ? absl::StrCat("; metrics on port ", metrics->port()) : ""));
  std::thread signals([&stop_signals, &ao, a = agent->get()] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    ao.log(absl::StrCat("signal ", sig,
                        ", stopping (downloads in flight end; their partial files stay)"));
    a->Stop();
  });
  absl::Status st = (*agent)->Run();
  signals.join();
  const na::NodeCacheStats c = (*node_cache)->stats();
  const na::PrewarmAgentMetrics m = (*agent)->metrics();
  ao.log(absl::StrFormat(
      "stopped: %d pod(s) ready, %d failed; %d hit(s), %d miss(es), %d byte(s) fetched, %d "
      "resumed; lead time mean %.3f s, max %.3f s",
      m.pods_ready, m.pods_failed, c.hits, c.misses, c.bytes_fetched, c.resumed,
      m.lead_time_count > 0 ? m.lead_time_sum_s / static_cast<double>(m.lead_time_count) : 0.0,
      m.lead_time_max_s));
  metrics.reset();
  if (!st.ok()) return Fail(st);
  return kExitOk;
}

struct WaitFlags {
  ConnectionFlags server;
  std::string pod;
  double timeout_s = 3600;
};

int RunPrewarmWait(const WaitFlags& f) {
  if (f.pod.empty()) return UsageError("node-agent prewarm-wait: --pod UID is required");
  if (absl::Status s = CheckUid(f.pod); !s.ok()) return Fail(s);
  auto r = na::WaitForPrewarm(ClientOptionsOf(f.server), f.pod, f.timeout_s);
  if (!r.ok()) return Fail(r.status());
  if (r->no_list) {
    std::printf("pod %s: no %s annotation, nothing to wait for\n", f.pod.c_str(),
                na::kPrewarmAnnotation);
    return kExitOk;
  }
  auto get = [&r](const char* key) {
    auto it = r->annotations.find(key);
    return it == r->annotations.end() ? std::string("?") : base::ForTerminal(it->second);
  };
  if (r->ready) {
    std::printf(
        "pod %s: prewarm Ready on node %s: %s object(s), %s hit(s), %s byte(s) fetched, "
        "%s s after it was bound\n",
        f.pod.c_str(), get(na::kPrewarmNode).c_str(), get(na::kPrewarmObjects).c_str(),
        get(na::kPrewarmHits).c_str(), get(na::kPrewarmBytes).c_str(),
        get(na::kPrewarmLeadTime).c_str());
    return kExitOk;
  }
  return RuntimeError(absl::StrCat("pod ", f.pod, ": prewarm Failed on node ",
                                   get(na::kPrewarmNode), ": ", get(na::kPrewarmError)));
}

void AddCacheCommand(CLI::App* agent, CacheFlags* cf) {
  CLI::App* c = agent->add_subcommand(
      "cache", "Keep a node-local cache and prewarm what the server binds to this node");
  c->footer(
      "Watches the server's pods (GET /v1/watch) and, for every pod bound to --node whose "
      "annotation seedance.io/prewarm lists objects ([{\"url\", \"sha256\", \"size\"}]), fetches "
      "them into --cache-dir under the --cache-size budget (HTTP(S) with Range resumes, sha256 "
      "verified, a partial file never served), pins them while the pod lives and writes "
      "prewarm.seedance.io/status: Ready|Failed (+ error, objects, hits, bytes, lead-time-s) on "
      "the pod with PATCH /v1/pods/UID/annotations, which needs the administrator's token. A "
      "deleted or moved pod's objects are unpinned. SIGINT or SIGTERM stops it: downloads in "
      "flight end, their partial files kept for the next start to resume; the counters go to "
      "stderr, and to GET /metrics with --metrics-port. "
      "See docs/cache.md.\n\n"
      "Examples:\n"
      "  seedance node-agent cache --node gpu-1 --cache-dir /var/cache/seedance "
      "--cache-size 500G --token-file /etc/seedance/token\n"
      "  seedance node-agent cache --server http://sched:7070 --node gpu-1 --cache-dir /data/c "
      "--cache-size 64G --max-concurrent 8 --max-bandwidth 500M --metrics-port 9102\n\n"
      "Exit status: 0 ok (stopped by SIGINT or SIGTERM), 1 I/O or runtime failure, 2 usage or "
      "input error.");
  AddConnectionFlags(c, &cf->server);
  c->add_option("--node", cf->node, "The node this agent runs on (required)")->type_name("NAME");
  c->add_option("--cache-dir", cf->dir, "The cache directory (required; created when missing)")
      ->type_name("DIR");
  AddBytes(c, "--cache-size", &cf->size_bytes, 1, false,
           "The byte budget of the cache directory (required): 500G, 64GiB, 1048576");
  c->add_option("--policy", cf->policy, "Eviction policy: lru, fifo or lru2 (default lru)")
      ->type_name("NAME");
  AddInt(c, "--max-concurrent", &cf->max_concurrent, 1, 256, "Downloads at once (1..256)");
  AddBytes(c, "--max-bandwidth", &cf->max_bytes_per_s, 0, true,
           "Cap on all downloads together, bytes per second: 500M, 1G/s (default: none)");
  AddInt(c, "--metrics-port", &cf->metrics_port, 0, 65535,
         "Serve GET /metrics (Prometheus text) on this port of every address (0: any free port)")
      ->default_str("");
  AddDuration(c, "--watch-timeout", &cf->watch_timeout_s, 1, base::Closed(1, 300),
              "Each long poll of the watch waits this long (also the most a stop waits for it)");
  AddDuration(
      c, "--stall-timeout", &cf->stall_timeout_s, 1, base::Closed(0.1, 3600),
      "A download that gets no byte (or fewer than --min-rate's worth) for this long fails");
  AddBytes(c, "--min-rate", &cf->min_bytes_per_s, 0, true,
           "A store slower than this (bytes per second) over --stall-timeout is an error "
           "(default 1K)");
  AddInt(c, "--parallel-pods", &cf->parallel_pods, 1, 64, "Pods prewarmed at once (1..64)");
  c->add_flag("--quiet", cf->quiet, "No log lines on stderr");
}

void AddPrewarmWaitCommand(CLI::App* agent, WaitFlags* wf) {
  CLI::App* w = agent->add_subcommand(
      "prewarm-wait", "Wait until the node agent prewarmed a pod's data (an init container)");
  w->footer(
      "Blocks until the pod's annotation prewarm.seedance.io/status is Ready (exit 0) or Failed "
      "(exit 1, printing prewarm.seedance.io/error), watching the server (GET /v1/pods/UID, then "
      "GET /v1/watch). A pod without seedance.io/prewarm has nothing to wait for (exit 0). Run it "
      "as the pod's init container: Kubernetes starts the pod's containers only after it "
      "exits 0, so they find every object local and verified. See docs/cache.md.\n\n"
      "Examples:\n"
      "  seedance node-agent prewarm-wait --pod 6f1c0a9e-7d3b-4c55-9a43-4b2d0c1e8f10\n"
      "  seedance node-agent prewarm-wait --server http://sched:7070 --pod $POD_UID --timeout "
      "20m\n\n"
      "Exit status: 0 ready, 1 prewarm failed, timed out, pod deleted or server unreachable, 2 "
      "usage error.");
  AddConnectionFlags(w, &wf->server);
  w->add_option("--pod", wf->pod, "The pod's UID (required)")->type_name("UID");
  AddDuration(w, "--timeout", &wf->timeout_s, 1, base::Closed(1, 7 * 86400),
              "Give up (exit 1) after this long (default 1h)");
}

}  // namespace

Command AddNodeAgentCommand(CLI::App& app) {
  CLI::App* agent = app.add_subcommand(
      "node-agent",
      "Pin a pod's cgroup to its GPUs' NUMA node; prewarm a node-local cache for bound pods");
  agent->footer(
      "The node agent reads the machine's NUMA nodes and NVIDIA GPUs from sysfs and writes a pod "
      "cgroup's cpuset.cpus and cpuset.mems, in the cgroup v2 hierarchy when it has the cpuset "
      "controller, else in the cgroup v1 cpuset hierarchy. Pinning needs root (or "
      "CAP_SYS_ADMIN). See docs/node-agent.md. `cache` keeps the node-local cache and prewarms "
      "the data of the pods the server binds to the node; `prewarm-wait` is a pod's init "
      "container step that waits for it (docs/cache.md).\n\n"
      "Examples:\n"
      "  seedance node-agent topology\n"
      "  seedance node-agent pin --cgroup kubepods/pod1234 --gpus 0,1 --dry-run\n"
      "  seedance node-agent pin --cgroup /kubepods/pod1234 --numa 0 --pid 4242\n"
      "  seedance node-agent cache --node gpu-1 --cache-dir /var/cache/seedance --cache-size 500G\n"
      "  seedance node-agent prewarm-wait --pod $POD_UID\n\n"
      "Exit status: 0 ok, 1 I/O, permission or runtime failure, 2 usage or input error.");

  auto tf = std::make_shared<TopologyFlags>();
  CLI::App* topology = agent->add_subcommand(
      "topology", "Print the NUMA nodes, their CPUs, the GPUs' NUMA nodes and the cpuset mount");
  topology->footer(
      "Reads /sys/devices/system/node/node*/cpulist and /sys/bus/pci/devices/* (NVIDIA GPUs: "
      "class 0x03xx, vendor 0x10de, numbered in PCI bus order) and finds the cpuset hierarchy in "
      "--mountinfo. A GPU whose NUMA node the kernel does not report is 'unknown' (null in "
      "JSON) unless the machine has one NUMA node. --format json: schema "
      "node-agent-topology/v1.\n\n"
      "Examples:\n"
      "  seedance node-agent topology\n"
      "  seedance node-agent topology --gpu-numa 0:0,1:0 --format json -o topo.json\n\n"
      "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.");
  AddSourceFlags(topology, &tf->source);
  AddOutputFlags(topology, &tf->out, kFormats);

  auto pf = std::make_shared<PinFlags>();
  CLI::App* pin = agent->add_subcommand(
      "pin", "Write a cgroup's cpuset.cpus and cpuset.mems for its GPUs or a NUMA node");
  pin->footer(
      "--gpus: the CPUs and memory of the GPUs' NUMA node; GPUs on several nodes give the union "
      "of those nodes. --numa: those nodes directly (machines without GPUs). --cgroup is relative "
      "to the cpuset hierarchy's root (with or without a leading '/', as /proc/PID/cgroup shows "
      "it) or an absolute path below the mount point; '..' and paths leading out of the "
      "hierarchy are refused, and nothing is ever created. In cgroup v1 the parent's cpuset must "
      "hold the new CPUs and memory nodes; in cgroup v2 the cpuset controller is enabled in the "
      "parent's cgroup.subtree_control when the cgroup lacks it. After writing, the files are "
      "read back and must hold what was written. --pid then moves that process (all its threads) "
      "in through cgroup.procs. One cgroup per call: a v1 cgroup whose children hold other CPUs "
      "is refused (pin the children first). Without permission (not root, no CAP_SYS_ADMIN, a "
      "read-only cgroup fs) the error names the file and exits 1. --format json: schema "
      "node-agent-pin/v1.\n\n"
      "Examples:\n"
      "  seedance node-agent pin --cgroup kubepods/burstable/pod1234 --gpus 0,1 --dry-run\n"
      "  seedance node-agent pin --cgroup /sys/fs/cgroup/cpuset/job7 --numa 0 --pid 4242\n"
      "  seedance node-agent pin --cgroup job7 --gpus 1 --gpu-numa 0:0,1:1 --format json\n\n"
      "Exit status: 0 ok, 1 I/O, permission or runtime failure, 2 usage or input error (a "
      "missing cgroup is 2).");
  // Required and one-of, checked in RunPin: CLI11's messages would hide a mistyped flag.
  pf->cgroup_opt = pin->add_option("--cgroup", pf->cgroup,
                                   "The pod's cgroup (required): kubepods/pod1, /kubepods/pod1 or "
                                   "/sys/fs/cgroup/cpuset/kubepods/pod1")
                       ->type_name("PATH");
  pf->gpus_opt = AddIndexList(pin, "--gpus", &pf->gpus,
                              "The pod's GPUs, indices in PCI bus order (0,1 or 0-3)");
  pf->numa_opt =
      AddIndexList(pin, "--numa", &pf->numa, "NUMA node(s) to pin to, instead of --gpus");
  pf->pid_opt = AddInt<int64_t>(pin, "--pid", &pf->pid, 1, kMaxPid,
                                "Then move this process into the cgroup (1..4194304)")
                    ->default_str("");
  pin->add_flag("--dry-run", pf->dry_run, "Print the writes without making them");
  AddSourceFlags(pin, &pf->source);
  AddOutputFlags(pin, &pf->out, kFormats);

  auto cf = std::make_shared<CacheFlags>();
  AddCacheCommand(agent, cf.get());
  auto wf = std::make_shared<WaitFlags>();
  AddPrewarmWaitCommand(agent, wf.get());

  Command cmd;
  cmd.app = agent;
  cmd.run = [agent, topology, pin, tf, pf, cf, wf]() -> int {
    if (topology->parsed()) return RunTopology(*tf);
    if (pin->parsed()) return RunPin(*pf);
    if (agent->get_subcommand("cache")->parsed()) return RunCache(*cf);
    if (agent->get_subcommand("prewarm-wait")->parsed()) return RunPrewarmWait(*wf);
    return UsageError("node-agent: expected 'topology', 'pin', 'cache' or 'prewarm-wait'");
  };
  return cmd;
}

}  // namespace seedance::cli
