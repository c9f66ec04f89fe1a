// What the device plugin answers the kubelet: which slices it would rather give a container
// (GetPreferredAllocation) and what a container gets for the slices it was given (Allocate).
//
// The kubelet's requests name devices, never the pod, so the plugin finds the pod itself, as
// HAMi's plugin does: among the pods bound to this node (PodCache, fed by a list and watch of
// the API server with fieldSelector spec.nodeName=NODE), the pending ones carrying Seedance's
// decision (annotation seedance.io/gpus, written by the extender's bind before the Binding) and
// not yet allocated, the oldest (by creationTimestamp, then namespace/name) whose decision has
// as many GPUs as the request; one whose GPUs are exactly the requested slices' GPUs comes
// first. The kubelet admits a node's pods one at a time, oldest first, so oldest-first follows
// its order.
//
// GetPreferredAllocation answers with one available slice on each GPU of that pod's decision
// (the slices must_include names first); without such a pod, with one slice on each of the GPUs
// the topology-aware chooser (sched::ChooseGpuSet: one NVLink island, else one NUMA node) takes
// among the GPUs with an available slice. It never fails: the kubelet fails admission on an
// error, and its answer is only advice.
//
// Allocate hands the container the decision's GPUs with their shares:
//   envs         CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES (the GPUs' UUIDs, comma-
//                separated, in decision order), SEEDANCE_GPU_MILLI (the share of each, 1..1000),
//                SEEDANCE_GPU_MEMORY_LIMIT_MIB (share x GPU memory / 1000, rounded down, per GPU),
//                SEEDANCE_POD (namespace/name), and the names HAMi's in-container CUDA
//                interposer (HAMi-core) reads: CUDA_DEVICE_MEMORY_LIMIT_<i> ("<MiB>m", i the
//                GPU's position in the container) and CUDA_DEVICE_SM_LIMIT (the largest share in
//                percent, rounded up). These are limits only for a program that honours them:
//                Seedance ships no interposer, and nothing here enforces them.
//   devices      /dev/nvidia<minor> of each GPU, /dev/nvidiactl, /dev/nvidia-uvm and
//                /dev/nvidia-uvm-tools, "rw" (DeviceNodes: kAuto lists those present on the host)
//   annotations  seedance.io/gpus (the decision) and seedance.io/pod
//   cdi_devices  "<cdi_kind>=<UUID>" per GPU when cdi_kind is set (e.g. "nvidia.com/gpu", the
//                names `nvidia-ctk cdi generate` writes)
// With whole-GPU devices (slices_per_gpu = 1) the kubelet's device IDs are the GPUs (each one
// container's alone), so a decision is followed only when it names exactly those GPUs, and a
// container without one gets its devices whole. Slices of a shared GPU need the decision:
// without one Allocate waits up to match_wait_s for the pod cache to show it, then fails
// (FailedPrecondition, naming the node and the GPUs), which the kubelet reports on the pod.
//
// Thread-safety: PodCache and Allocator are thread-safe.
#ifndef SEEDANCE_DEVICEPLUGIN_ALLOCATOR_H_
#define SEEDANCE_DEVICEPLUGIN_ALLOCATOR_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/core/cluster_state.h"
#include "seedance/deviceplugin/gpus.h"
#include "seedance/k8s/informer.h"
#include "seedance/k8s/objects.h"

namespace seedance::deviceplugin {

// The pods bound to one node, as the API server reports them, and which of them have been
// allocated. A pod stays claimed until it leaves Pending or is deleted.
class PodCache {
 public:
  // An informer's events (k8s::EventSink); relisted: `events` is the whole list.
  void Apply(std::vector<k8s::ObjectEvent> events, bool relisted);
  // The pods that may still be allocated: pending (or without a phase), not claimed, with a
  // decision. Copies.
  std::vector<k8s::Pod> Unclaimed() const;
  // Marks `uid` allocated; false if it already was (someone else took it first).
  bool Claim(const std::string& uid);
  // How many times the cache changed; WaitForChange returns once it differs from `seen` or
  // `timeout_s` passed.
  uint64_t version() const;
  void WaitForChange(uint64_t seen, double timeout_s) const;
  size_t size() const;

 private:
  mutable base::Mutex mu_;
  mutable std::condition_variable changed_;
  // By uid (namespace/name when the uid is empty).
  std::map<std::string, k8s::Pod> pods_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> claimed_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
};

enum class DeviceNodes { kAuto, kAlways, kNever };

struct AllocatorConfig {
  std::string node_name = {};  // the pods' spec.nodeName; empty = any (a cache of one node's pods)
  int slices_per_gpu = 10;
  DeviceNodes device_nodes = DeviceNodes::kAuto;
  std::string dev_root = "/dev";  // where kAuto looks for the device nodes
  std::string cdi_kind = {};      // empty = no CDI names
  double match_wait_s = 2;        // how long Allocate waits for a slice's pod to appear
};

struct DeviceNodeSpec {
  std::string container_path, host_path, permissions;
};

struct ContainerAllocation {
  std::vector<int> gpus;       // indices into the plugin's GPUs, in decision order
  std::vector<int32_t> milli;  // share of each
  std::string pod;             // "namespace/name"; empty = whole GPUs without a decision
  std::map<std::string, std::string> envs;
  std::map<std::string, std::string> annotations;
  std::vector<DeviceNodeSpec> devices;
  std::vector<std::string> cdi_devices;
};

class Allocator {
 public:
  // `pods` may be null (no API server: only whole GPUs can be handed out). InvalidArgument for
  // GPUs ValidateGpus refuses or a slice count outside 1..kMaxSlicesPerGpu.
  static absl::StatusOr<std::unique_ptr<Allocator>> Create(std::vector<Gpu> gpus,
                                                           AllocatorConfig config, PodCache* pods);

  const std::vector<Gpu>& gpus() const { return gpus_; }
  const AllocatorConfig& config() const { return config_; }

  // `size` device IDs from `available` (those of `must_include` among them), as above.
  std::vector<std::string> Preferred(const std::vector<std::string>& available,
                                     const std::vector<std::string>& must_include, int size) const;
  // InvalidArgument for an empty request or a device ID that is not this plugin's;
  // FailedPrecondition for shared slices without a decision (above).
  absl::StatusOr<ContainerAllocation> Allocate(const std::vector<std::string>& device_ids);

 private:
  Allocator(std::vector<Gpu> gpus, AllocatorConfig config, PodCache* pods,
            core::ClusterState state);
  struct Candidate {
    k8s::Pod pod;
    std::vector<int> gpus;  // the decision resolved to indices
    std::vector<int32_t> milli;
  };
  // The unclaimed pod with a decision of `count` GPUs on this node that ranks lowest (rank < 0:
  // not eligible), oldest first among equals.
  bool FindPod(size_t count, const std::function<int(const Candidate&)>& rank,
               Candidate* out) const;
  bool Resolve(const k8s::Pod& pod, Candidate* out) const;
  // k of the `usable` GPUs, by the topology-aware chooser (fewer when fewer are usable).
  std::vector<int> ChooseGpus(const std::vector<bool>& usable, int k) const;
  ContainerAllocation Describe(std::vector<int> gpus, std::vector<int32_t> milli,
                               const k8s::Pod* pod) const;

  std::vector<Gpu> gpus_;
  AllocatorConfig config_;
  PodCache* pods_;
  core::ClusterState state_;  // the node, nothing allocated: the chooser's view of its topology
};

}  // namespace seedance::deviceplugin

#endif  // SEEDANCE_DEVICEPLUGIN_ALLOCATOR_H_
