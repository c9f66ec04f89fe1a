// `seedance node-agent`: print the machine's NUMA/GPU topology, or pin a pod's cgroup to the CPUs
// and memory of its GPUs' NUMA node (docs/node-agent.md).
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/nodeagent/cpuset.h"

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

}  // namespace

Command AddNodeAgentCommand(CLI::App& app) {
  CLI::App* agent = app.add_subcommand(
      "node-agent", "Pin a pod's cgroup to the CPUs and memory of its GPUs' NUMA node");
  agent->footer(
      "The node agent reads the machine's NUMA nodes and NVIDIA GPUs from sysfs and writes a pod "
      "cgroup's cpuset.cpus and cpuset.mems, in the cgroup v2 hierarchy when it has the cpuset "
      "controller, else in the cgroup v1 cpuset hierarchy. Pinning needs root (or "
      "CAP_SYS_ADMIN). See docs/node-agent.md.\n\n"
      "Examples:\n"
      "  seedance node-agent topology\n"
      "  seedance node-agent pin --cgroup kubepods/pod1234 --gpus 0,1 --dry-run\n"
      "  seedance node-agent pin --cgroup /kubepods/pod1234 --numa 0 --pid 4242\n\n"
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

  Command cmd;
  cmd.app = agent;
  cmd.run = [topology, pin, tf, pf]() -> int {
    if (topology->parsed()) return RunTopology(*tf);
    if (pin->parsed()) return RunPin(*pf);
    return UsageError("node-agent: expected 'topology' or 'pin'");
  };
  return cmd;
}

}  // namespace seedance::cli
