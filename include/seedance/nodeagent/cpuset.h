// The node agent's cpuset pinning: which CPUs and memory nodes sit next to a pod's GPUs, and the
// cgroup writes that confine the pod to them (docs/node-agent.md).
//
// Three steps, each a plain function so that a test can drive it against a fake tree:
//   1. DetectCpusetHierarchy reads /proc/self/mountinfo and finds the cpuset controller: a
//      cgroup2 mount whose cgroup.controllers lists "cpuset", else a cgroup v1 mount with the
//      "cpuset" option.
//   2. ReadNodeTopology reads the NUMA nodes (/sys/devices/system/node/nodeN/cpulist) and the
//      NVIDIA GPUs (/sys/bus/pci/devices/*: class 0x03xx, vendor 0x10de, in PCI bus order, which
//      is NVML's and nvidia-smi's index order, and CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID) with
//      the NUMA node of each.
//   3. PlanPin turns GPU indices (or a NUMA node) into the cpulist and memory-node list to write;
//      Pin writes them into one cgroup's cpuset.cpus and cpuset.mems, and MoveProcess writes a
//      PID into its cgroup.procs.
// Sysfs is read rather than hwloc because hwloc's default topology is restricted to the calling
// process's own cpuset (an agent running in a pinned cgroup would see part of the machine), and
// because the PCI vendor decides which devices count as GPUs.
//
// Writes are plain write(2) calls on files that already exist (O_WRONLY, never O_CREAT), inside
// the hierarchy only: a cgroup path with a ".." component, or one that resolves (through
// symlinks) outside the mount point, is refused before anything is written. Errors are values:
// PermissionDenied (EACCES/EPERM: run as root or with CAP_SYS_ADMIN), NotFound (no such cgroup
// or process), InvalidArgument (a malformed list, a path outside the hierarchy, CPUs the kernel
// refuses), FailedPrecondition (a state the kernel refuses: empty cpuset, busy children).
//
// Thread-safety: plain values and functions; the writes race with anyone else writing the same
// cgroup, as any cgroup write does.
#ifndef SEEDANCE_NODEAGENT_CPUSET_H_
#define SEEDANCE_NODEAGENT_CPUSET_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::nodeagent {

// Largest CPU or memory-node id accepted in a list (the kernel's NR_CPUS ceiling is 8192).
inline constexpr int kMaxCpuId = 8191;

// Parses a kernel list ("0-3,8-11", "5", "" = empty; a trailing newline is allowed) into sorted,
// unique ids. InvalidArgument (naming `what`, e.g. "node0/cpulist") for garbage, a descending
// range, or an id above kMaxCpuId.
[[nodiscard]] absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text,
                                                            std::string_view what);
// The kernel form of `ids` (any order, duplicates allowed): {0,1,2,3,8} -> "0-3,8".
std::string FormatCpuList(const std::vector<int>& ids);

enum class CgroupVersion { kV1, kV2 };
const char* CgroupVersionName(CgroupVersion v);  // "v1", "v2"

// Where the cpuset controller is mounted.
struct CpusetHierarchy {
  CgroupVersion version = CgroupVersion::kV1;
  std::string mount_point;  // e.g. "/sys/fs/cgroup/cpuset" (v1) or "/sys/fs/cgroup" (v2)
  // v1 mounted with "noprefix": the files are "cpus" and "mems" instead of "cpuset.cpus".
  bool noprefix = false;

  std::string cpus_file() const { return noprefix ? "cpus" : "cpuset.cpus"; }
  std::string mems_file() const { return noprefix ? "mems" : "cpuset.mems"; }
};

// Finds the cpuset hierarchy from a mountinfo file (proc(5) format). A cgroup2 mount is used when
// its cgroup.controllers lists "cpuset"; otherwise the first cgroup v1 mount with the "cpuset"
// option. FailedPrecondition (listing what was seen) when there is neither; NotFound for a
// missing file; errors name the file.
[[nodiscard]] absl::StatusOr<CpusetHierarchy> DetectCpusetHierarchy(
    const std::string& mountinfo_path = "/proc/self/mountinfo");

struct NumaNode {
  int id = 0;             // also the memory node written to cpuset.mems
  std::vector<int> cpus;  // sorted
};

struct GpuLocality {
  int index = 0;            // position in PCI bus order among NVIDIA GPUs
  std::string pci_bus_id;   // "0000:3b:00.0"
  int numa_node = -1;       // -1 = the kernel does not say
  bool overridden = false;  // numa_node came from TopologyOptions::gpu_numa
};

struct NodeTopology {
  std::vector<NumaNode> numa_nodes;  // sorted by id
  std::vector<GpuLocality> gpus;     // sorted by index

  const NumaNode* FindNode(int id) const;
};

struct TopologyOptions {
  std::string sys_root = "/sys";  // tests point this at a fake tree
  // GPU index -> NUMA node, replacing what sysfs says (and adding GPUs sysfs does not show, for
  // machines without them): ParseGpuNumaMap("0:0,1:1").
  std::map<int, int> gpu_numa;
};

// The NUMA nodes and GPUs of this machine. A machine whose sysfs has no node directories is one
// NUMA node 0 holding every online CPU (/sys/devices/system/cpu/online). On a machine with one
// NUMA node a GPU whose numa_node is -1 is on node 0. Errors name the file.
[[nodiscard]] absl::StatusOr<NodeTopology> ReadNodeTopology(const TopologyOptions& options = {});

// "0:0,1:1" (GPU:NUMA pairs) -> {{0,0},{1,1}}. InvalidArgument naming `flag` for garbage, a
// negative or too large number, or a GPU given twice.
[[nodiscard]] absl::StatusOr<std::map<int, int>> ParseGpuNumaMap(std::string_view text,
                                                                 std::string_view flag);
// "0,2,3" -> {0,2,3} (sorted, unique; ranges "0-3" allowed). InvalidArgument naming `flag`.
[[nodiscard]] absl::StatusOr<std::vector<int>> ParseIndexList(std::string_view text,
                                                              std::string_view flag);

// What Pin writes.
struct PinPlan {
  std::vector<int> numa_nodes;  // the nodes the pod is confined to
  std::string cpus;             // cpulist for cpuset.cpus, e.g. "0-15,32-47"
  std::string mems;             // list for cpuset.mems, e.g. "0"
};

// The plan for GPUs `gpus` (indices into topology.gpus): their NUMA node when they share one;
// when they span nodes, the union of those nodes (the pod may then run on any of their CPUs and
// allocate from any of their memory). InvalidArgument for an unknown GPU or an empty list;
// FailedPrecondition for a GPU whose NUMA node is unknown (pass a GPU-to-NUMA override).
[[nodiscard]] absl::StatusOr<PinPlan> PlanPinForGpus(const NodeTopology& topology,
                                                     const std::vector<int>& gpus);
// The plan for NUMA nodes given directly. InvalidArgument for a node the machine lacks or one
// without CPUs.
[[nodiscard]] absl::StatusOr<PinPlan> PlanPinForNumaNodes(const NodeTopology& topology,
                                                          const std::vector<int>& nodes);

// One cgroup directory inside the hierarchy.
struct CgroupDir {
  std::string path;      // absolute, symlinks resolved, e.g. "/sys/fs/cgroup/cpuset/kubepods/x"
  std::string relative;  // below the mount point, e.g. "kubepods/x"
};

struct CgroupOptions {
  // Check that the directory is on a cgroup file system (statfs magic). Tests of fake trees
  // turn it off.
  bool require_cgroup_fs = true;
  // Writes `data` to the existing file `path` with one write(2) and returns 0 or the errno.
  // Empty = the real call; tests inject EACCES or EINVAL here.
  std::function<int(const std::string& path, std::string_view data)> write_file;
};

// Resolves `cgroup`: a path relative to the hierarchy root ("kubepods/pod1"), the same with a
// leading '/' as /proc/PID/cgroup prints it ("/kubepods/pod1"), or an absolute path under the
// mount point ("/sys/fs/cgroup/cpuset/kubepods/pod1"). InvalidArgument for an empty path, a ".."
// component, the hierarchy root itself, a path that resolves outside the mount point, or one that
// is not a directory (a FIFO, a device); NotFound when it does not exist.
[[nodiscard]] absl::StatusOr<CgroupDir> ResolveCgroup(const CpusetHierarchy& hierarchy,
                                                      std::string_view cgroup,
                                                      const CgroupOptions& options = {});

// One write Pin makes (or would make).
struct CgroupWrite {
  std::string file;  // absolute path
  std::string data;
};

// The writes that pin `dir` to `plan`, in order. v1: cpuset.cpus, then cpuset.mems (a fresh v1
// child has both empty and accepts no process until they are set; each must be a subset of the
// parent's). v2: "+cpuset" into the parent's cgroup.subtree_control first when `dir` has no
// cpuset.cpus file yet (the controller is not enabled for it), then cpuset.cpus and cpuset.mems.
std::vector<CgroupWrite> PinWrites(const CpusetHierarchy& hierarchy, const CgroupDir& dir,
                                   const PinPlan& plan);

// What the kernel reports after Pin.
struct PinResult {
  std::vector<CgroupWrite> writes;  // made, in order
  std::string effective_cpus;       // cpuset.effective_cpus (v1) / cpuset.cpus.effective (v2)
  std::string effective_mems;       // "" when the kernel has no such file
};

// Makes PinWrites(hierarchy, dir, plan) and reads back cpuset.cpus and cpuset.mems, which must
// equal the plan. Errors name the file: PermissionDenied (EACCES, EPERM, EROFS), NotFound
// (ENOENT: the cgroup went away), InvalidArgument (EINVAL: CPUs or memory nodes outside the
// parent's set or offline; the message quotes the parent's list), FailedPrecondition (EBUSY:
// v1 children hold CPUs outside the new set, or v2 processes in the parent; ENOSPC).
[[nodiscard]] absl::Status Pin(const CpusetHierarchy& hierarchy, const CgroupDir& dir,
                               const PinPlan& plan, const CgroupOptions& options = {},
                               PinResult* result = nullptr);

// Moves process `pid` (all its threads) into `dir` by writing cgroup.procs. NotFound (ESRCH) for
// no such process, FailedPrecondition (ENOSPC) for a v1 cgroup with an empty cpuset, and the
// other errors as for Pin.
[[nodiscard]] absl::Status MoveProcess(const CgroupDir& dir, pid_t pid,
                                       const CgroupOptions& options = {});

}  // namespace seedance::nodeagent

#endif  // SEEDANCE_NODEAGENT_CPUSET_H_
