// Cpuset hierarchy detection, NUMA/GPU topology from sysfs, and the cgroup writes (cpuset.h).
#include "seedance/nodeagent/cpuset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "seedance/base/text.h"

namespace seedance::nodeagent {
namespace {

// statfs(2) magic numbers of the cgroup file systems (linux/magic.h).
constexpr long kCgroupSuperMagic = 0x27e0eb;
constexpr long kCgroup2SuperMagic = 0x63677270;
// Largest sysfs/procfs file read (mountinfo of a host with many containers is the big one).
constexpr size_t kMaxSmallFileBytes = size_t{16} << 20;
constexpr int kMaxGpuIndex = 1023;

std::string ErrnoName(int err) {
  switch (err) {
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case EROFS:
      return "EROFS";
    case ENOENT:
      return "ENOENT";
    case EINVAL:
      return "EINVAL";
    case EBUSY:
      return "EBUSY";
    case ENOSPC:
      return "ENOSPC";
    case ESRCH:
      return "ESRCH";
    default:
      return absl::StrCat("errno ", err);
  }
}

std::string OsError(int err) { return absl::StrCat(std::strerror(err), " (", ErrnoName(err), ")"); }

// A name or value for a message: quoted, clipped, control characters escaped.
std::string Quote(absl::string_view s) {
  return "'" + base::ForTerminal(base::Clip(std::string_view(s.data(), s.size()), 256)) + "'";
}

// Reads a small regular file (procfs, sysfs, cgroupfs) whole. A FIFO or device is refused without
// blocking (O_NONBLOCK, then fstat).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = absl::StrCat(Quote(path), ": cannot open: ", OsError(err));
    if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(msg);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::DataLossError(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(Quote(path), ": not a regular file"));
  }
  std::string out;
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return absl::DataLossError(absl::StrCat(Quote(path), ": read error: ", OsError(err)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxSmallFileBytes) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(Quote(path), ": larger than ", kMaxSmallFileBytes, " bytes"));
    }
  }
  ::close(fd);
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string UnescapeMountField(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const absl::string_view oct = s.substr(i + 1, 3);
      if (std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool HasOption(absl::string_view options, absl::string_view name) {
  for (absl::string_view o : absl::StrSplit(options, ',')) {
    if (o == name) return true;
  }
  return false;
}

int RealWrite(const std::string& path, std::string_view data) {
  // O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of blocking; no O_CREAT, so a
  // missing file is ENOENT and nothing is ever created. O_TRUNC is what a shell's `echo 0 > F`
  // does: cgroup files ignore it, a plain file (a test's fake tree) holds just the new value.
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return errno;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return ENOTSUP;
  }
  ssize_t n;
  do {
    n = ::write(fd, data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  const int err = n < 0 ? errno : (static_cast<size_t>(n) != data.size() ? EIO : 0);
  if (::close(fd) != 0 && err == 0) return errno;
  return err;
}

std::string Parent(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

// The parent's value of `file`'s name, for messages ("" when unreadable).
std::string ParentValue(const std::string& file) {
  const std::filesystem::path p(file);
  auto text = ReadSmallFile((p.parent_path().parent_path() / p.filename()).string());
  if (!text.ok()) return "";
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::Status WriteError(int err, const CgroupWrite& w, const CgroupDir& dir) {
  const std::string where = absl::StrCat(Quote(w.file), ": writing ", Quote(w.data), ": ");
  const bool subtree = absl::EndsWith(w.file, "/cgroup.subtree_control");
  const bool procs = absl::EndsWith(w.file, "/cgroup.procs");
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(absl::StrCat(
          where, OsError(err),
          ": changing cgroups needs root or CAP_SYS_ADMIN (and a cgroup file system mounted "
          "read-write); run the node agent as root"));
    case ENOENT:
      if (subtree) {
        return absl::FailedPreconditionError(
            absl::StrCat(where, OsError(err), ": the cpuset controller is not available in ",
                         Quote(Parent(w.file)),
                         " (its cgroup.controllers lacks cpuset): enable +cpuset in the "
                         "cgroup.subtree_control of each ancestor first"));
      }
      return absl::NotFoundError(absl::StrCat(where, OsError(err), ": cgroup ", Quote(dir.relative),
                                              " does not exist (any more) or has no such file"));
    case EINVAL: {
      if (procs) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, OsError(err), ": the kernel refused the process id"));
      }
      const std::string parent = ParentValue(w.file);
      return absl::InvalidArgumentError(absl::StrCat(
          where, OsError(err),
          ": the kernel refused the list: every CPU and memory node must exist and be online, and "
          "in cgroup v1 a cpuset must be a subset of its parent's",
          parent.empty() ? "" : absl::StrCat(" (the parent has ", Quote(parent), ")")));
    }
    case EBUSY:
      if (subtree) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, OsError(err), ": ", Quote(Parent(w.file)),
            " has processes of its own, and cgroup v2 enables controllers only for the children "
            "of cgroups without processes"));
      }
      return absl::FailedPreconditionError(
          absl::StrCat(where, OsError(err), ": a child cgroup of ", Quote(dir.relative),
                       " uses CPUs or memory nodes outside the new list; pin (or remove) the "
                       "children first (the node agent pins one cgroup per call)"));
    case ENOSPC:
      return absl::FailedPreconditionError(absl::StrCat(
          where, OsError(err), ": cgroup ", Quote(dir.relative),
          " has an empty cpuset.cpus or cpuset.mems; pin it before moving processes in"));
    case ESRCH:
      return absl::NotFoundError(absl::StrCat(where, OsError(err), ": no such process"));
    case ENOTSUP:
      return absl::InvalidArgumentError(absl::StrCat(where, "not a regular file"));
    default:
      return absl::DataLossError(absl::StrCat(where, OsError(err)));
  }
}

int DoWrite(const CgroupOptions& options, const std::string& path, absl::string_view data) {
  const std::string_view d(data.data(), data.size());
  return options.write_file ? options.write_file(path, d) : RealWrite(path, d);
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text_in, std::string_view what_in) {
  const absl::string_view text(text_in.data(), text_in.size()),
      what(what_in.data(), what_in.size());
  std::set<int> ids;
  const absl::string_view body = absl::StripAsciiWhitespace(text);
  if (body.empty()) return std::vector<int>();
  auto bad = [&](absl::string_view item, absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", Quote(item), " in ", Quote(body), ": ", why,
                     " (expected a list such as 0-3,8-11 of ids 0..", kMaxCpuId, ")"));
  };
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    if (item.empty()) return bad(item, "empty item");
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    auto id = [](absl::string_view s, int* out) {
      return !s.empty() && std::all_of(s.begin(), s.end(), absl::ascii_isdigit) && s.size() <= 5 &&
             absl::SimpleAtoi(s, out) && *out <= kMaxCpuId;
    };
    if (dash == absl::string_view::npos) {
      if (!id(item, &lo)) return bad(item, "not an id");
      hi = lo;
    } else {
      if (!id(item.substr(0, dash), &lo) || !id(item.substr(dash + 1), &hi)) {
        return bad(item, "not a range of ids");
      }
      if (hi < lo) return bad(item, "descending range");
    }
    for (int i = lo; i <= hi; ++i) ids.insert(i);
  }
  return std::vector<int>(ids.begin(), ids.end());
}

std::string FormatCpuList(const std::vector<int>& ids) {
  std::vector<int> v(ids);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ",";
    absl::StrAppend(&out, v[i]);
    if (j > i) absl::StrAppend(&out, "-", v[j]);
    i = j + 1;
  }
  return out;
}

const char* CgroupVersionName(CgroupVersion v) { return v == CgroupVersion::kV2 ? "v2" : "v1"; }

absl::StatusOr<CpusetHierarchy> DetectCpusetHierarchy(const std::string& mountinfo_path) {
  auto text = ReadSmallFile(mountinfo_path);
  if (!text.ok()) return text.status();
  std::vector<std::string> seen;
  bool have_v1 = false;
  CpusetHierarchy v1;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    auto sep = std::find(f.begin(), f.end(), "-");
    if (f.size() < 10 || sep - f.begin() < 6 || f.end() - sep < 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          Quote(mountinfo_path), ":", line_no,
          ": not a mountinfo line (expected 'ID PARENT MAJ:MIN ROOT MOUNT OPTIONS ... - TYPE "
          "SOURCE SUPER-OPTIONS')"));
    }
    const std::string mount = UnescapeMountField(f[4]);
    const absl::string_view fstype = sep[1];
    const absl::string_view super_options = sep[3];
    if (fstype == "cgroup2") {
      auto controllers = ReadSmallFile(mount + "/cgroup.controllers");
      if (!controllers.ok()) {
        seen.push_back(
            absl::StrCat("cgroup2 at ", Quote(mount), " (cgroup.controllers unreadable)"));
        continue;
      }
      std::vector<absl::string_view> names =
          absl::StrSplit(*controllers, absl::ByAnyChar(" \n"), absl::SkipEmpty());
      if (std::find(names.begin(), names.end(), "cpuset") != names.end()) {
        return CpusetHierarchy{CgroupVersion::kV2, mount, false};
      }
      seen.push_back(absl::StrCat("cgroup2 at ", Quote(mount), " without cpuset (controllers: ",
                                  Quote(absl::StripAsciiWhitespace(*controllers)), ")"));
    } else if (fstype == "cgroup") {
      if (HasOption(super_options, "cpuset") || HasOption(f[5], "cpuset")) {
        if (!have_v1) {
          have_v1 = true;
          v1 = CpusetHierarchy{CgroupVersion::kV1, mount,
                               HasOption(super_options, "noprefix") || HasOption(f[5], "noprefix")};
        }
      } else {
        seen.push_back(absl::StrCat("cgroup v1 at ", Quote(mount)));
      }
    }
  }
  if (have_v1) return v1;
  return absl::FailedPreconditionError(absl::StrCat(
      Quote(mountinfo_path),
      ": no cpuset controller mounted (neither a cgroup2 mount listing cpuset in "
      "cgroup.controllers nor a cgroup v1 mount with the cpuset option)",
      seen.empty() ? "; no cgroup mounts at all" : "; seen: " + absl::StrJoin(seen, ", ")));
}

const NumaNode* NodeTopology::FindNode(int id) const {
  for (const NumaNode& n : numa_nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

absl::StatusOr<NodeTopology> ReadNodeTopology(const TopologyOptions& options) {
  NodeTopology topo;
  namespace fs = std::filesystem;
  const std::string node_dir = options.sys_root + "/devices/system/node";
  std::error_code ec;
  std::vector<int> ids;
  for (const auto& e : fs::directory_iterator(node_dir, ec)) {
    const std::string base = e.path().filename().string();
    int id = 0;
    if (absl::StartsWith(base, "node") && base.size() > 4 &&
        std::all_of(base.begin() + 4, base.end(), absl::ascii_isdigit) &&
        absl::SimpleAtoi(base.substr(4), &id) && id <= kMaxCpuId) {
      ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  for (int id : ids) {
    const std::string file = absl::StrCat(node_dir, "/node", id, "/cpulist");
    auto text = ReadSmallFile(file);
    if (!text.ok()) return text.status();
    auto cpus = ParseCpuList(*text, file);
    if (!cpus.ok()) return cpus.status();
    topo.numa_nodes.push_back(NumaNode{id, std::move(*cpus)});
  }
  if (topo.numa_nodes.empty()) {
    // A kernel without NUMA support: one node 0 with every online CPU.
    const std::string file = options.sys_root + "/devices/system/cpu/online";
    auto text = ReadSmallFile(file);
    if (!text.ok()) {
      return absl::NotFoundError(absl::StrCat("no NUMA nodes under ", Quote(node_dir),
                                              " and no CPU list: ", text.status().message()));
    }
    auto cpus = ParseCpuList(*text, file);
    if (!cpus.ok()) return cpus.status();
    topo.numa_nodes.push_back(NumaNode{0, std::move(*cpus)});
  }

  // NVIDIA GPUs in PCI bus order ("DDDD:BB:DD.F" names sort as numbers do).
  const std::string pci_dir = options.sys_root + "/bus/pci/devices";
  std::vector<std::string> bus_ids;
  for (const auto& e : fs::directory_iterator(pci_dir, ec)) {
    bus_ids.push_back(e.path().filename().string());
  }
  std::sort(bus_ids.begin(), bus_ids.end());
  for (const std::string& bus : bus_ids) {
    const std::string dev = pci_dir + "/" + bus;
    auto cls = ReadSmallFile(dev + "/class");
    auto vendor = ReadSmallFile(dev + "/vendor");
    if (!cls.ok() || !vendor.ok()) continue;
    unsigned long class_id = 0, vendor_id = 0;
    const std::string c(absl::StripAsciiWhitespace(*cls)), v(absl::StripAsciiWhitespace(*vendor));
    char* end = nullptr;
    class_id = std::strtoul(c.c_str(), &end, 16);
    if (end == c.c_str() || *end != '\0') continue;
    vendor_id = std::strtoul(v.c_str(), &end, 16);
    if (end == v.c_str() || *end != '\0') continue;
    if ((class_id >> 16) != 0x03 || vendor_id != 0x10de) continue;
    GpuLocality gpu;
    gpu.index = static_cast<int>(topo.gpus.size());
    gpu.pci_bus_id = bus;
    auto numa = ReadSmallFile(dev + "/numa_node");
    int node = -1;
    if (numa.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*numa), &node) && node >= 0 &&
        topo.FindNode(node) != nullptr) {
      gpu.numa_node = node;
    }
    topo.gpus.push_back(std::move(gpu));
  }
  if (topo.numa_nodes.size() == 1) {
    for (GpuLocality& g : topo.gpus) {
      if (g.numa_node < 0) g.numa_node = topo.numa_nodes[0].id;
    }
  }
  for (const auto& [gpu, node] : options.gpu_numa) {
    if (topo.FindNode(node) == nullptr) {
      std::vector<int> have;
      for (const NumaNode& n : topo.numa_nodes) have.push_back(n.id);
      return absl::InvalidArgumentError(absl::StrCat("GPU-to-NUMA override ", gpu, ":", node,
                                                     ": this machine has no NUMA node ", node,
                                                     " (nodes: ", FormatCpuList(have), ")"));
    }
    while (static_cast<int>(topo.gpus.size()) <= gpu) {
      GpuLocality g;
      g.index = static_cast<int>(topo.gpus.size());
      topo.gpus.push_back(g);
    }
    topo.gpus[gpu].numa_node = node;
    topo.gpus[gpu].overridden = true;
  }
  return topo;
}

absl::StatusOr<std::vector<int>> ParseIndexList(std::string_view text, std::string_view flag_in) {
  const absl::string_view flag(flag_in.data(), flag_in.size());
  auto ids = ParseCpuList(text, flag_in);
  if (!ids.ok()) return ids.status();
  if (ids->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": empty list (expected indices such as 0,1 or 0-3)"));
  }
  return ids;
}

absl::StatusOr<std::map<int, int>> ParseGpuNumaMap(std::string_view text_in,
                                                   std::string_view flag_in) {
  const absl::string_view text(text_in.data(), text_in.size()),
      flag(flag_in.data(), flag_in.size());
  std::map<int, int> out;
  const absl::string_view body = absl::StripAsciiWhitespace(text);
  auto bad = [&](absl::string_view item, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": ", Quote(item), ": ", why, " (expected GPU:NUMA pairs such as 0:0,1:1; GPU 0..",
        kMaxGpuIndex, ", NUMA 0..", kMaxCpuId, ")"));
  };
  if (body.empty()) return bad(body, "empty list");
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    const size_t colon = item.find(':');
    int gpu = 0, node = 0;
    auto num = [](absl::string_view s, int max, int* v) {
      return !s.empty() && s.size() <= 5 && std::all_of(s.begin(), s.end(), absl::ascii_isdigit) &&
             absl::SimpleAtoi(s, v) && *v <= max;
    };
    if (colon == absl::string_view::npos || !num(item.substr(0, colon), kMaxGpuIndex, &gpu) ||
        !num(item.substr(colon + 1), kMaxCpuId, &node)) {
      return bad(item, "not a GPU:NUMA pair");
    }
    if (!out.emplace(gpu, node).second) return bad(item, "GPU given twice");
  }
  return out;
}

absl::StatusOr<PinPlan> PlanPinForNumaNodes(const NodeTopology& topology,
                                            const std::vector<int>& nodes) {
  if (nodes.empty()) return absl::InvalidArgumentError("no NUMA node to pin to");
  std::vector<int> have;
  for (const NumaNode& n : topology.numa_nodes) have.push_back(n.id);
  std::vector<int> cpus, sorted(nodes);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int id : sorted) {
    const NumaNode* n = topology.FindNode(id);
    if (n == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "NUMA node ", id, ": this machine has no such node (nodes: ", FormatCpuList(have), ")"));
    }
    if (n->cpus.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "NUMA node ", id, " has no CPUs (a memory-only node); pin to a node with CPUs"));
    }
    cpus.insert(cpus.end(), n->cpus.begin(), n->cpus.end());
  }
  PinPlan plan;
  plan.numa_nodes = sorted;
  plan.cpus = FormatCpuList(cpus);
  plan.mems = FormatCpuList(sorted);
  return plan;
}

absl::StatusOr<PinPlan> PlanPinForGpus(const NodeTopology& topology, const std::vector<int>& gpus) {
  if (gpus.empty()) return absl::InvalidArgumentError("no GPU to pin next to");
  std::vector<int> nodes;
  for (int g : gpus) {
    if (g < 0 || g >= static_cast<int>(topology.gpus.size())) {
      return absl::InvalidArgumentError(
          topology.gpus.empty()
              ? absl::StrCat("GPU ", g,
                             ": this machine shows no NVIDIA GPUs; give their NUMA nodes "
                             "(--gpu-numa 0:0) or pin to a NUMA node (--numa N)")
              : absl::StrCat("GPU ", g, ": this machine has GPUs 0..", topology.gpus.size() - 1));
    }
    const GpuLocality& gpu = topology.gpus[static_cast<size_t>(g)];
    if (gpu.numa_node < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "GPU ", g, gpu.pci_bus_id.empty() ? "" : " (" + gpu.pci_bus_id + ")",
          ": the kernel does not say which NUMA node it is on (numa_node is -1); give it with "
          "--gpu-numa ",
          g, ":N or pin to a NUMA node (--numa N)"));
    }
    nodes.push_back(gpu.numa_node);
  }
  return PlanPinForNumaNodes(topology, nodes);
}

absl::StatusOr<CgroupDir> ResolveCgroup(const CpusetHierarchy& hierarchy,
                                        std::string_view cgroup_in, const CgroupOptions& options) {
  const absl::string_view cgroup(cgroup_in.data(), cgroup_in.size());
  if (cgroup.empty()) return absl::InvalidArgumentError("cgroup path is empty");
  for (absl::string_view part : absl::StrSplit(cgroup, '/')) {
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "cgroup ", Quote(cgroup), ": '..' is not allowed in a cgroup path (it could leave the ",
          "hierarchy at ", Quote(hierarchy.mount_point), ")"));
    }
  }
  absl::string_view rel = cgroup;
  const std::string& mount = hierarchy.mount_point;
  if (absl::StartsWith(rel, mount) && (rel.size() == mount.size() || rel[mount.size()] == '/' ||
                                       (!mount.empty() && mount.back() == '/'))) {
    rel.remove_prefix(mount.size());
  }
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(rel, '/', absl::SkipEmpty())) {
    if (part != ".") parts.emplace_back(part);
  }
  if (parts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup ", Quote(cgroup), " is the root of the hierarchy at ", Quote(mount),
                     "; the node agent pins a pod's cgroup, never the root"));
  }
  const std::string joined = absl::StrCat(mount, "/", absl::StrJoin(parts, "/"));
  char root_buf[PATH_MAX], path_buf[PATH_MAX];
  if (::realpath(mount.c_str(), root_buf) == nullptr) {
    const int err = errno;
    return absl::NotFoundError(
        absl::StrCat("cpuset hierarchy ", Quote(mount), ": cannot resolve: ", OsError(err)));
  }
  if (::realpath(joined.c_str(), path_buf) == nullptr) {
    const int err = errno;
    const std::string msg = absl::StrCat("cgroup ", Quote(cgroup), ": ", Quote(joined), ": ");
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(
          msg,
          "no such cgroup (create it with mkdir, or give the pod's path as /proc/PID/cgroup "
          "shows it)"));
    }
    if (err == EACCES) return absl::PermissionDeniedError(absl::StrCat(msg, OsError(err)));
    if (err == ENOTDIR) return absl::InvalidArgumentError(msg + "not a cgroup directory");
    return absl::InvalidArgumentError(absl::StrCat(msg, OsError(err)));
  }
  const std::string root(root_buf), path(path_buf);
  if (path == root) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup ", Quote(cgroup), " resolves to the root of the hierarchy at ",
                     Quote(mount), "; the node agent pins a pod's cgroup, never the root"));
  }
  if (!absl::StartsWith(path, root + "/")) {
    return absl::InvalidArgumentError(absl::StrCat("cgroup ", Quote(cgroup), " resolves to ",
                                                   Quote(path), ", outside the hierarchy at ",
                                                   Quote(root), "; refusing to write there"));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup ", Quote(cgroup), ": ", Quote(path), " is not a cgroup directory"));
  }
  if (options.require_cgroup_fs) {
    struct statfs sf;
    if (::statfs(path.c_str(), &sf) != 0 || (static_cast<long>(sf.f_type) != kCgroupSuperMagic &&
                                             static_cast<long>(sf.f_type) != kCgroup2SuperMagic)) {
      return absl::InvalidArgumentError(absl::StrCat("cgroup ", Quote(cgroup), ": ", Quote(path),
                                                     " is not on a cgroup file system"));
    }
  }
  return CgroupDir{path, path.substr(root.size() + 1)};
}

std::vector<CgroupWrite> PinWrites(const CpusetHierarchy& hierarchy, const CgroupDir& dir,
                                   const PinPlan& plan) {
  std::vector<CgroupWrite> writes;
  const std::string cpus = dir.path + "/" + hierarchy.cpus_file();
  if (hierarchy.version == CgroupVersion::kV2) {
    std::error_code ec;
    if (!std::filesystem::exists(cpus, ec)) {
      writes.push_back({Parent(dir.path) + "/cgroup.subtree_control", "+cpuset"});
    }
  }
  writes.push_back({cpus, plan.cpus});
  writes.push_back({dir.path + "/" + hierarchy.mems_file(), plan.mems});
  return writes;
}

absl::Status Pin(const CpusetHierarchy& hierarchy, const CgroupDir& dir, const PinPlan& plan,
                 const CgroupOptions& options, PinResult* result) {
  const std::vector<CgroupWrite> writes = PinWrites(hierarchy, dir, plan);
  for (const CgroupWrite& w : writes) {
    if (const int err = DoWrite(options, w.file, w.data); err != 0) {
      return WriteError(err, w, dir);
    }
    if (result != nullptr) result->writes.push_back(w);
  }
  // The kernel normalises lists ("0,1" reads back as "0-1"): compare as sets.
  for (const auto& [file, want] :
       {std::pair{hierarchy.cpus_file(), plan.cpus}, std::pair{hierarchy.mems_file(), plan.mems}}) {
    const std::string path = dir.path + "/" + file;
    auto text = ReadSmallFile(path);
    if (!text.ok()) return text.status();
    auto got = ParseCpuList(*text, path);
    if (!got.ok()) return got.status();
    auto wanted = ParseCpuList(want, "plan");
    if (!wanted.ok()) return wanted.status();
    if (*got != *wanted) {
      return absl::InternalError(absl::StrCat(Quote(path), ": reads back ",
                                              Quote(absl::StripAsciiWhitespace(*text)),
                                              " after writing ", Quote(want)));
    }
  }
  if (result != nullptr) {
    const bool v2 = hierarchy.version == CgroupVersion::kV2;
    const std::string prefix = hierarchy.noprefix ? "" : "cpuset.";
    const std::string ecpus = v2 ? "cpuset.cpus.effective" : prefix + "effective_cpus";
    const std::string emems = v2 ? "cpuset.mems.effective" : prefix + "effective_mems";
    if (auto t = ReadSmallFile(dir.path + "/" + ecpus); t.ok()) {
      result->effective_cpus = std::string(absl::StripAsciiWhitespace(*t));
    }
    if (auto t = ReadSmallFile(dir.path + "/" + emems); t.ok()) {
      result->effective_mems = std::string(absl::StripAsciiWhitespace(*t));
    }
  }
  return absl::OkStatus();
}

absl::Status MoveProcess(const CgroupDir& dir, pid_t pid, const CgroupOptions& options) {
  if (pid <= 0) return absl::InvalidArgumentError(absl::StrCat("process id ", pid, ": not > 0"));
  const CgroupWrite w{dir.path + "/cgroup.procs", absl::StrCat(pid)};
  if (const int err = DoWrite(options, w.file, w.data); err != 0) return WriteError(err, w, dir);
  return absl::OkStatus();
}

}  // namespace seedance::nodeagent
