// GPU interconnect topology inside one node: how fast two GPUs talk, how long a ring all-reduce
// over a GPU set takes, and the one GPU-set chooser every placement path uses (the framework
// after Reserve, the simulator, the service).
//
// The link between two GPUs of a node is the best of, in order:
//   kNvLink      both in one non-empty NVLink group (NVSwitch systems put all GPUs in one);
//   kPcieSwitch  both under one non-empty PCIe switch;
//   kHostBridge  both on one NUMA node (peer-to-peer through that socket's root complex);
//   kCrossSocket anything else, including GPUs whose attachment is unknown.
// Bandwidths (GB/s per direction, what one ring hop can carry) come from public figures for
// the node's GPU model; docs/topology.md gives the table and its sources:
//   NVLink 2 (V100): 6 links x 25 GB/s = 150; NVLink 3 (A100, A800): 12 x 25 = 300;
//   NVLink 4 (H100, H800, H200, H20): 18 x 25 = 450;
//   PCIe Gen3 x16 15.75, Gen4 x16 31.5, Gen5 x16 63 (PCI-SIG, after 128b/130b encoding);
//   host bridge: the GPUs' PCIe generation at x16 (the root complex is not the limit);
//   cross socket: one Intel UPI link at 11.2 GT/s, 20.8 GB/s, or the PCIe rate if lower.
// A ring all-reduce of S bytes over k GPUs moves 2(k-1)/k * S through every hop, so its time
// is 2(k-1)/k * S / (the slowest hop of the best ring) (the bandwidth-bound regime of large
// gradient buckets; per-hop latency is left out).
//
// The chooser (ChooseGpuSet), for k fully free GPUs on a node with known topology:
//   1. the highest ring bandwidth reachable: within one NVLink group if any has k free GPUs,
//      else within one PCIe switch, else within one NUMA node, else across;
//   2. among the groups at that level, the one with the fewest free GPUs that still fits (best
//      fit: larger islands stay whole for later pods), and inside it, the same rule one level
//      down (a 2-GPU pod on an NVSwitch node takes the two GPUs of one PCIe switch); so a
//      1-GPU pod takes a lone GPU before it breaks an NVLink island;
//   3. lowest device index on ties.
// Whole free GPUs are interchangeable for fragmentation (every score reads a node's GPUs as a
// multiset), so this choice never changes a node's fragmentation or any policy's node choice.
// On a node without GPU topology it gives the lowest-indexed free GPUs, exactly as before.
#ifndef SEEDANCE_SCHED_TOPOLOGY_H_
#define SEEDANCE_SCHED_TOPOLOGY_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "seedance/core/cluster_state.h"

namespace seedance::sched {

enum class GpuLink { kNvLink, kPcieSwitch, kHostBridge, kCrossSocket };
std::string_view GpuLinkName(GpuLink link);

// The interconnect generation of a GPU model: the hardware catalog's per-direction NVLink and
// PCIe figures (hw/catalog.h: V100, A100, A800, H100, H800, H200, H20 by any name the catalog
// finds); other models: NVLink 3 and PCIe Gen4.
struct LinkGeneration {
  double nvlink_gbps = 300;  // per direction, per GPU
  double pcie_gbps = 31.5;   // x16, per direction
};
LinkGeneration LinkGenerationOf(std::string_view gpu_model);
inline constexpr double kUpiLinkGbps = 20.8;

// True if the node describes where its GPUs are attached (one GpuTopology per GPU).
bool HasGpuTopology(const core::NodeSpec& node);
GpuLink LinkBetween(const core::NodeTopology& topology, int a, int b);
double LinkGbps(GpuLink link, const LinkGeneration& gen);

// The slowest hop of the best ring over `gpus` (device indices of `node`), in GB/s; +inf for
// fewer than two GPUs (no traffic). REQUIRES: HasGpuTopology(node).
double RingGbps(const core::NodeSpec& node, std::span<const int8_t> gpus);
// Seconds for a ring all-reduce of `bytes` over `gpus` (0 for fewer than two GPUs).
double RingAllReduceSeconds(const core::NodeSpec& node, std::span<const int8_t> gpus, double bytes);

// The k fully free GPUs of node n the rules above choose, in increasing index order; false
// (placement untouched) if fewer than k are free. Sets placement->num_gpus and gpus.
bool ChooseGpuSet(const core::ClusterState& s, int n, int k, core::Placement* placement);

// What a set must hold to beyond being fully free, for callers that keep a pod's link level
// when they move it (cost analysis): only `usable` GPUs (bit g: GPU g), all in one NVLink
// group, all on one known NUMA node. With nvlink or one_numa, the set comes from the best-fit
// group that meets them (the fewest usable free GPUs that hold k), chosen inside by the rules
// above; a node without GPU topology meets neither. Without them, the rules above run on the
// usable free GPUs. false (placement untouched) when no set meets the needs.
struct GpuSetNeeds {
  uint32_t usable = 0xFFFFFFFFu;
  bool nvlink = false;
  bool one_numa = false;
};
bool ChooseGpuSet(const core::ClusterState& s, int n, int k, const GpuSetNeeds& needs,
                  core::Placement* placement);
// True if ChooseGpuSet(s, n, k, needs, ...) would find a set, without choosing one (a filter's
// question: cheap when there are no link needs).
bool GpuSetFits(const core::ClusterState& s, int n, int k, const GpuSetNeeds& needs);

// The NUMA node a pod's CPU and memory go to on placement.node (placement.gpus chosen):
//   - a GPU pod whose GPUs' NUMA nodes are known: its home, the NUMA node holding most of its
//     GPUs (lowest id on ties), if its CPU and memory fit in what that NUMA node has left for
//     pinned pods; otherwise -1 (not pinned: the cores would be remote anyway);
//   - any other pod: the NUMA node with the most CPU left that fits it (lowest id on ties);
//   - -1 when the node lists no NUMA nodes or none fits.
int ChooseNuma(const core::ClusterState& s, const core::PodShape& pod,
               const core::Placement& placement);
// The home NUMA node of a placement's GPUs (as above), or -1 when unknown or CPU-only.
int HomeNuma(const core::NodeSpec& node, const core::Placement& placement);

// How good a whole-GPU placement is, against the best set the node's free GPUs offered at the
// moment of the decision. Call it after the placement was allocated: its GPUs count as free.
struct GpuSetQuality {
  bool measured = false;   // false: fewer than two GPUs, or no topology on the node
  bool best = false;       // the chosen set's ring bandwidth equals the best reachable
  double slowdown = 1.0;   // all-reduce time of the chosen set / of the best set (>= 1)
  double allreduce_s = 0;  // ring all-reduce of kAllReduceBytes over the chosen set
};
// The message MeasureGpuSet times: 1 GiB, a large gradient bucket (bandwidth-bound).
inline constexpr double kAllReduceBytes = 1024.0 * 1024 * 1024;
GpuSetQuality MeasureGpuSet(const core::ClusterState& s, const core::Placement& placement);

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_TOPOLOGY_H_
