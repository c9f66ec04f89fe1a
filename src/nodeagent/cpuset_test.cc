#include "seedance/nodeagent/cpuset.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::nodeagent {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A temporary directory holding a fake mountinfo, sysfs and cgroup tree.
class FakeTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "seedance-nodeagent-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  // Writes `text` to root_/rel, creating directories.
  std::string Put(const std::string& rel, const std::string& text) {
    const fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string Get(const std::string& rel) {
    std::ifstream in(fs::path(root_) / rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string Dir(const std::string& rel) {
    fs::create_directories(fs::path(root_) / rel);
    return (fs::path(root_) / rel).string();
  }
  static std::string MountLine(int id, const std::string& mount, const std::string& fstype,
                               const std::string& super_options) {
    return absl::StrCat(id, " 23 0:", id, " / ", mount, " rw,relatime - ", fstype, " ", fstype, " ",
                        super_options, "\n");
  }
  // A v1 cpuset hierarchy at root_/cpuset with a child "pod" whose parent holds 0-7 and 0-1.
  CpusetHierarchy V1Tree() {
    Put("cpuset/cpuset.cpus", "0-7\n");
    Put("cpuset/cpuset.mems", "0-1\n");
    Put("cpuset/pod/cpuset.cpus", "");
    Put("cpuset/pod/cpuset.mems", "");
    Put("cpuset/pod/cgroup.procs", "");
    return CpusetHierarchy{CgroupVersion::kV1, root_ + "/cpuset", false};
  }
  // Two NUMA nodes (0-3, 4-7), two NVIDIA GPUs (one per node), an Intel VGA and a NIC.
  void TwoNodeSys() {
    Put("sys/devices/system/node/node0/cpulist", "0-3\n");
    Put("sys/devices/system/node/node1/cpulist", "4-7\n");
    Put("sys/devices/system/node/possible", "0-1\n");
    Gpu("0000:af:00.0", "0x030200", "0x10de", "1");
    Gpu("0000:3b:00.0", "0x030200", "0x10de", "0");
    Gpu("0000:00:02.0", "0x030000", "0x8086", "-1");
    Gpu("0000:5e:00.0", "0x020000", "0x10de", "0");
  }
  void Gpu(const std::string& bus, const std::string& cls, const std::string& vendor,
           const std::string& numa) {
    Put("sys/bus/pci/devices/" + bus + "/class", cls + "\n");
    Put("sys/bus/pci/devices/" + bus + "/vendor", vendor + "\n");
    Put("sys/bus/pci/devices/" + bus + "/numa_node", numa + "\n");
  }
  NodeTopology Topology(std::map<int, int> gpu_numa = {}) {
    TopologyOptions o;
    o.sys_root = root_ + "/sys";
    o.gpu_numa = std::move(gpu_numa);
    auto t = ReadNodeTopology(o);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : NodeTopology{};
  }
  static CgroupOptions Fake() {
    CgroupOptions o;
    o.require_cgroup_fs = false;
    return o;
  }
  static CgroupOptions Failing(int err) {
    CgroupOptions o = Fake();
    o.write_file = [err](const std::string&, std::string_view) { return err; };
    return o;
  }

  std::string root_;
};

// ---- lists ----

TEST(CpuListTest, ParsesKernelLists) {
  struct Row {
    std::string text;
    std::vector<int> want;
  };
  for (const Row& r : std::vector<Row>{{"0-3,8-11", {0, 1, 2, 3, 8, 9, 10, 11}},
                                       {"5\n", {5}},
                                       {"", {}},
                                       {"\n", {}},
                                       {"3,1,1-2", {1, 2, 3}},
                                       {"8191", {8191}}}) {
    auto got = ParseCpuList(r.text, "t");
    ASSERT_TRUE(got.ok()) << r.text << ": " << got.status();
    EXPECT_EQ(*got, r.want) << r.text;
  }
}

TEST(CpuListTest, RefusesGarbageNamingTheSource) {
  for (const std::string bad : {"a", "3-1", "1,,2", "8192", "-1", "0-", "1.5", "0x1", "+1",
                                "99999999999999999999", "1 2"}) {
    auto got = ParseCpuList(bad, "node0/cpulist");
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr("node0/cpulist")) << bad;
  }
}

TEST(CpuListTest, FormatsRunsAsRanges) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({5, 5, 4}), "4-5");
  EXPECT_EQ(FormatCpuList({}), "");
  auto back = ParseCpuList(FormatCpuList({1, 3, 4, 5, 9}), "t");
  ASSERT_TRUE(back.ok());
  EXPECT_THAT(*back, ElementsAre(1, 3, 4, 5, 9));
}

TEST(GpuNumaMapTest, ParsesPairsAndRefusesGarbage) {
  auto m = ParseGpuNumaMap("0:0,1:1,3:0", "--gpu-numa");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, (std::map<int, int>{{0, 0}, {1, 1}, {3, 0}}));
  for (const std::string bad : {"", "0", "0:", ":1", "a:b", "0:0,0:1", "-1:0", "0:-1", "1024:0",
                                "0:8192", "0:0,", "0:0:0"}) {
    auto got = ParseGpuNumaMap(bad, "--gpu-numa");
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_THAT(got.status().message(), HasSubstr("--gpu-numa")) << bad;
  }
}

TEST(IndexListTest, RefusesAnEmptyList) {
  EXPECT_FALSE(ParseIndexList("", "--gpus").ok());
  auto v = ParseIndexList("2,0-1", "--gpus");
  ASSERT_TRUE(v.ok());
  EXPECT_THAT(*v, ElementsAre(0, 1, 2));
}

// ---- hierarchy detection ----

TEST_F(FakeTreeTest, FindsTheV1CpusetMount) {
  const std::string mi =
      Put("mountinfo", MountLine(31, root_ + "/cpu", "cgroup", "rw,cpu") +
                           MountLine(34, root_ + "/cpuset", "cgroup", "rw,cpuset") +
                           MountLine(41, root_ + "/unified", "cgroup2", "rw"));
  Put("unified/cgroup.controllers", "hugetlb\n");
  auto h = DetectCpusetHierarchy(mi);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->version, CgroupVersion::kV1);
  EXPECT_EQ(h->mount_point, root_ + "/cpuset");
  EXPECT_EQ(h->cpus_file(), "cpuset.cpus");
}

TEST_F(FakeTreeTest, PrefersACgroup2MountThatListsCpuset) {
  const std::string mi = Put("mountinfo", MountLine(34, root_ + "/cpuset", "cgroup", "rw,cpuset") +
                                              MountLine(41, root_ + "/v2", "cgroup2", "rw"));
  Put("v2/cgroup.controllers", "cpuset cpu io memory pids\n");
  auto h = DetectCpusetHierarchy(mi);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->version, CgroupVersion::kV2);
  EXPECT_EQ(h->mount_point, root_ + "/v2");
}

TEST_F(FakeTreeTest, UnescapesMountPointsAndHonoursNoprefix) {
  Dir("with space");
  const std::string mi =
      Put("mountinfo", MountLine(34, root_ + "/with\\040space", "cgroup", "rw,cpuset,noprefix"));
  auto h = DetectCpusetHierarchy(mi);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->mount_point, root_ + "/with space");
  EXPECT_TRUE(h->noprefix);
  EXPECT_EQ(h->cpus_file(), "cpus");
  EXPECT_EQ(h->mems_file(), "mems");
}

TEST_F(FakeTreeTest, NoCpusetMountIsAFailedPreconditionThatSaysWhatWasSeen) {
  const std::string mi = Put("mountinfo", MountLine(31, root_ + "/cpu", "cgroup", "rw,cpu") +
                                              MountLine(41, root_ + "/v2", "cgroup2", "rw"));
  Put("v2/cgroup.controllers", "memory pids\n");
  auto h = DetectCpusetHierarchy(mi);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(h.status().message(), HasSubstr("without cpuset"));
  EXPECT_THAT(h.status().message(), HasSubstr("memory pids"));
}

TEST_F(FakeTreeTest, MalformedMountinfoNamesTheLine) {
  const std::string mi =
      Put("mountinfo", MountLine(31, root_ + "/cpu", "cgroup", "rw,cpu") + "garbage line\n");
  auto h = DetectCpusetHierarchy(mi);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(h.status().message(), HasSubstr("mountinfo':2"));
}

TEST_F(FakeTreeTest, MountinfoThatIsMissingOrAFifoIsRefused) {
  auto missing = DetectCpusetHierarchy(root_ + "/nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  const std::string fifo = root_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = DetectCpusetHierarchy(fifo);  // must not block waiting for a writer
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f.status().message(), HasSubstr("not a regular file"));
}

// ---- topology ----

TEST_F(FakeTreeTest, ReadsNumaNodesAndNvidiaGpusInBusOrder) {
  TwoNodeSys();
  const NodeTopology t = Topology();
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[0].id, 0);
  EXPECT_THAT(t.numa_nodes[1].cpus, ElementsAre(4, 5, 6, 7));
  ASSERT_EQ(t.gpus.size(), 2u);  // not the Intel VGA, not the NVIDIA-vendor NIC
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(t.gpus[0].numa_node, 0);
  EXPECT_EQ(t.gpus[1].pci_bus_id, "0000:af:00.0");
  EXPECT_EQ(t.gpus[1].numa_node, 1);
}

TEST_F(FakeTreeTest, OneNodeMachineWithoutGpusTakesOverrides) {
  Put("sys/devices/system/node/node0/cpulist", "0-1\n");
  const NodeTopology t = Topology({{1, 0}});
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].numa_node, -1);  // not given, not in sysfs
  EXPECT_EQ(t.gpus[1].numa_node, 0);
  EXPECT_TRUE(t.gpus[1].overridden);
}

TEST_F(FakeTreeTest, UnknownGpuNodeIsNodeZeroOnlyOnOneNodeMachines) {
  Put("sys/devices/system/node/node0/cpulist", "0-1\n");
  Gpu("0000:01:00.0", "0x030000", "0x10de", "-1");
  EXPECT_EQ(Topology().gpus.at(0).numa_node, 0);
}

TEST_F(FakeTreeTest, KernelWithoutNumaIsOneNodeOfOnlineCpus) {
  Put("sys/devices/system/cpu/online", "0-5\n");
  const NodeTopology t = Topology();
  ASSERT_EQ(t.numa_nodes.size(), 1u);
  EXPECT_THAT(t.numa_nodes[0].cpus, ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST_F(FakeTreeTest, OverrideToAMissingNodeIsRefused) {
  TwoNodeSys();
  TopologyOptions o;
  o.sys_root = root_ + "/sys";
  o.gpu_numa = {{0, 7}};
  auto t = ReadNodeTopology(o);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("no NUMA node 7"));
}

// ---- plans ----

TEST_F(FakeTreeTest, GpusOnOneNodePinToThatNode) {
  TwoNodeSys();
  auto p = PlanPinForGpus(Topology(), {1});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->cpus, "4-7");
  EXPECT_EQ(p->mems, "1");
}

TEST_F(FakeTreeTest, GpusAcrossNodesPinToTheUnion) {
  TwoNodeSys();
  auto p = PlanPinForGpus(Topology(), {0, 1});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->cpus, "0-7");
  EXPECT_EQ(p->mems, "0-1");
  EXPECT_THAT(p->numa_nodes, ElementsAre(0, 1));
}

TEST_F(FakeTreeTest, PlanRefusesUnknownGpusNodesAndMemoryOnlyNodes) {
  TwoNodeSys();
  Put("sys/devices/system/node/node2/cpulist", "\n");  // memory only (CXL, HBM)
  const NodeTopology t = Topology();
  EXPECT_THAT(PlanPinForGpus(t, {2}).status().message(), HasSubstr("GPUs 0..1"));
  EXPECT_THAT(PlanPinForNumaNodes(t, {3}).status().message(), HasSubstr("no such node"));
  EXPECT_THAT(PlanPinForNumaNodes(t, {2}).status().message(), HasSubstr("no CPUs"));
  EXPECT_FALSE(PlanPinForGpus(t, {}).ok());
}

TEST_F(FakeTreeTest, GpuWithUnknownNodeOnTwoNodeMachineAsksForAnOverride) {
  TwoNodeSys();
  Gpu("0000:d8:00.0", "0x030200", "0x10de", "-1");
  auto p = PlanPinForGpus(Topology(), {2});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(p.status().message(), HasSubstr("--gpu-numa 2:N"));
}

// ---- cgroup paths ----

TEST_F(FakeTreeTest, ResolvesRelativeSlashedAndAbsolutePaths) {
  const CpusetHierarchy h = V1Tree();
  Dir("cpuset/kubepods/pod1");
  for (const std::string& in :
       {std::string("kubepods/pod1"), std::string("/kubepods/pod1"),
        std::string("kubepods//./pod1/"), h.mount_point + "/kubepods/pod1"}) {
    auto d = ResolveCgroup(h, in, Fake());
    ASSERT_TRUE(d.ok()) << in << ": " << d.status();
    EXPECT_EQ(d->relative, "kubepods/pod1") << in;
  }
}

TEST_F(FakeTreeTest, RefusesDotDotTheRootAndEscapingSymlinks) {
  const CpusetHierarchy h = V1Tree();
  Dir("outside");
  fs::create_directory_symlink(root_ + "/outside", h.mount_point + "/escape");
  auto dotdot = ResolveCgroup(h, "pod/../../outside", Fake());
  EXPECT_EQ(dotdot.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dotdot.status().message(), HasSubstr("'..'"));
  EXPECT_THAT(ResolveCgroup(h, "/", Fake()).status().message(), HasSubstr("root"));
  EXPECT_THAT(ResolveCgroup(h, h.mount_point, Fake()).status().message(), HasSubstr("root"));
  auto esc = ResolveCgroup(h, "escape", Fake());
  EXPECT_EQ(esc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(esc.status().message(), HasSubstr("outside the hierarchy"));
  EXPECT_FALSE(ResolveCgroup(h, "", Fake()).ok());
}

TEST_F(FakeTreeTest, MissingCgroupIsNotFoundAndAFifoIsNotACgroup) {
  const CpusetHierarchy h = V1Tree();
  auto missing = ResolveCgroup(h, "kubepods/nope", Fake());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("kubepods/nope"));
  ASSERT_EQ(::mkfifo((h.mount_point + "/fifo").c_str(), 0600), 0);
  auto fifo = ResolveCgroup(h, "fifo", Fake());
  EXPECT_EQ(fifo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fifo.status().message(), HasSubstr("not a cgroup directory"));
}

TEST_F(FakeTreeTest, ADirectoryOffTheCgroupFileSystemIsRefused) {
  const CpusetHierarchy h = V1Tree();
  auto d = ResolveCgroup(h, "pod");  // require_cgroup_fs defaults to true; a temp dir is not one
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("not on a cgroup file system"));
}

// ---- writes ----

TEST_F(FakeTreeTest, PinWritesCpusThenMemsAndReadsThemBack) {
  const CpusetHierarchy h = V1Tree();
  auto d = ResolveCgroup(h, "pod", Fake());
  ASSERT_TRUE(d.ok()) << d.status();
  PinResult r;
  ASSERT_TRUE(Pin(h, *d, PinPlan{{0}, "0-3", "0"}, Fake(), &r).ok());
  EXPECT_EQ(Get("cpuset/pod/cpuset.cpus"), "0-3");
  EXPECT_EQ(Get("cpuset/pod/cpuset.mems"), "0");
  ASSERT_EQ(r.writes.size(), 2u);
  EXPECT_EQ(r.writes[0].file, d->path + "/cpuset.cpus");
  EXPECT_EQ(r.writes[1].file, d->path + "/cpuset.mems");
}

TEST_F(FakeTreeTest, V2EnablesTheControllerInTheParentWhenTheChildLacksIt) {
  Put("v2/kubepods/cgroup.subtree_control", "");
  Dir("v2/kubepods/pod1");
  const CpusetHierarchy h{CgroupVersion::kV2, root_ + "/v2", false};
  auto d = ResolveCgroup(h, "kubepods/pod1", Fake());
  ASSERT_TRUE(d.ok()) << d.status();
  std::vector<CgroupWrite> w = PinWrites(h, *d, PinPlan{{1}, "4-7", "1"});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].file, root_ + "/v2/kubepods/cgroup.subtree_control");
  EXPECT_EQ(w[0].data, "+cpuset");
  Put("v2/kubepods/pod1/cpuset.cpus", "");
  EXPECT_EQ(PinWrites(h, *d, PinPlan{{1}, "4-7", "1"}).size(), 2u);  // already enabled
}

TEST_F(FakeTreeTest, PermissionErrorNamesTheFileAndSaysRunAsRoot) {
  const CpusetHierarchy h = V1Tree();
  auto d = ResolveCgroup(h, "pod", Fake());
  ASSERT_TRUE(d.ok());
  for (int err : {EACCES, EPERM, EROFS}) {
    absl::Status s = Pin(h, *d, PinPlan{{0}, "0-3", "0"}, Failing(err));
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << err;
    EXPECT_THAT(s.message(), HasSubstr(d->path + "/cpuset.cpus"));
    EXPECT_THAT(s.message(), HasSubstr("root or CAP_SYS_ADMIN"));
  }
}

TEST_F(FakeTreeTest, KernelErrorsBecomeExplainedStatuses) {
  const CpusetHierarchy h = V1Tree();
  auto d = ResolveCgroup(h, "pod", Fake());
  ASSERT_TRUE(d.ok());
  const PinPlan plan{{0}, "8-9", "0"};
  absl::Status inval = Pin(h, *d, plan, Failing(EINVAL));
  EXPECT_EQ(inval.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(inval.message(), HasSubstr("subset of its parent's"));
  EXPECT_THAT(inval.message(), HasSubstr("the parent has '0-7'"));
  absl::Status gone = Pin(h, *d, plan, Failing(ENOENT));
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(gone.message(), HasSubstr("cgroup 'pod'"));
  absl::Status busy = Pin(h, *d, plan, Failing(EBUSY));
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(busy.message(), HasSubstr("child cgroup"));
  absl::Status empty = MoveProcess(*d, 42, Failing(ENOSPC));
  EXPECT_EQ(empty.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(empty.message(), HasSubstr("pin it before moving"));
  EXPECT_EQ(MoveProcess(*d, 42, Failing(ESRCH)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(MoveProcess(*d, 0, Fake()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(FakeTreeTest, ReadBackMismatchIsAnError) {
  const CpusetHierarchy h = V1Tree();
  auto d = ResolveCgroup(h, "pod", Fake());
  ASSERT_TRUE(d.ok());
  CgroupOptions o = Fake();
  o.write_file = [](const std::string&, std::string_view) { return 0; };  // the kernel ignores it
  absl::Status s = Pin(h, *d, PinPlan{{0}, "0-3", "0"}, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("reads back"));
}

// ---- the real thing ----

// A child process that blocks reading a pipe until the test kills it, and a uniquely named
// cgroup; both are cleaned up (kill by PID, wait, rmdir) whatever the test's outcome.
class RealCgroup {
 public:
  ~RealCgroup() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (pipe_write_ >= 0) ::close(pipe_write_);
    if (!dir_.empty()) {
      // A reaped process leaves the cgroup asynchronously: retry while the kernel says EBUSY.
      for (int i = 0; i < 100000 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
        ::sched_yield();
      }
    }
  }
  // Returns "" on success, else why the cgroup could not be made.
  std::string Make(const std::string& mount) {
    std::random_device rd;
    dir_ = absl::StrCat(mount, "/seedance-test-", ::getpid(), "-", rd());
    if (::mkdir(dir_.c_str(), 0755) != 0) {
      const int err = errno;
      dir_.clear();
      return absl::StrCat("mkdir under ", mount, ": ", std::strerror(err));
    }
    return "";
  }
  pid_t Spawn() {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[1]);
      char c;
      while (::read(fds[0], &c, 1) < 0 && errno == EINTR) {
      }
      ::_exit(0);
    }
    ::close(fds[0]);
    pipe_write_ = fds[1];
    return pid_;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int pipe_write_ = -1;
};

std::string StatusField(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, key + ":")) {
      std::string v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

TEST(RealCgroupTest, PinsARealChildProcessAndProcStatusAgrees) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create and pin a cgroup (euid is not 0)";
  auto h = DetectCpusetHierarchy();
  if (!h.ok()) GTEST_SKIP() << "no cpuset hierarchy on this machine: " << h.status().message();
  auto topo = ReadNodeTopology();
  ASSERT_TRUE(topo.ok()) << topo.status();
  auto plan = PlanPinForNumaNodes(*topo, {topo->numa_nodes.at(0).id});
  ASSERT_TRUE(plan.ok()) << plan.status();
  RealCgroup cg;
  if (std::string why = cg.Make(h->mount_point); !why.empty()) {
    GTEST_SKIP() << "cannot create a cgroup (" << why << "); a read-only cgroup fs in a container?";
  }
  const pid_t pid = cg.Spawn();
  ASSERT_GT(pid, 0) << std::strerror(errno);
  auto dir = ResolveCgroup(*h, cg.dir());
  ASSERT_TRUE(dir.ok()) << dir.status();
  if (h->version == CgroupVersion::kV1) {
    // A fresh v1 cpuset is empty and takes no process before it is pinned.
    EXPECT_EQ(MoveProcess(*dir, pid).code(), absl::StatusCode::kFailedPrecondition);
  }
  PinResult result;
  ASSERT_TRUE(Pin(*h, *dir, *plan, {}, &result).ok());
  ASSERT_TRUE(MoveProcess(*dir, pid).ok());
  EXPECT_EQ(StatusField(pid, "Cpus_allowed_list"), plan->cpus);
  EXPECT_EQ(StatusField(pid, "Mems_allowed_list"), plan->mems);
  // Narrow to the node's first CPU: the process's affinity follows the cgroup.
  PinPlan first = *plan;
  first.cpus = FormatCpuList({topo->numa_nodes[0].cpus.at(0)});
  ASSERT_TRUE(Pin(*h, *dir, first).ok());
  EXPECT_EQ(StatusField(pid, "Cpus_allowed_list"), first.cpus);
  EXPECT_EQ(StatusField(pid, "Mems_allowed_list"), first.mems);
}

}  // namespace
}  // namespace seedance::nodeagent
