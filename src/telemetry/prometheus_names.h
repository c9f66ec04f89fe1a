// Internal: the exporter metric names the Prometheus collector reads. Test exporters use the same
// constants, so a rename cannot pass unnoticed.
//   dcgm-exporter (NVIDIA, default counters): labels gpu, UUID, device, modelName, Hostname and,
//     with Kubernetes pod mapping, namespace / pod / container of the pod using the GPU.
//   node-exporter: node_cpu_seconds_total{cpu, mode}, node_memory_*_bytes.
//   kube-state-metrics v2: kube_pod_info{namespace, pod, node},
//     kube_pod_container_resource_requests{namespace, pod, container, resource, unit},
//     kube_pod_status_phase{namespace, pod, phase}, kube_node_status_allocatable{node, resource}.
#ifndef SEEDANCE_TELEMETRY_PROMETHEUS_NAMES_H_
#define SEEDANCE_TELEMETRY_PROMETHEUS_NAMES_H_

namespace seedance::telemetry::names {

inline constexpr char kGpuUtil[] = "DCGM_FI_DEV_GPU_UTIL";            // %
inline constexpr char kFbUsed[] = "DCGM_FI_DEV_FB_USED";              // MiB
inline constexpr char kFbFree[] = "DCGM_FI_DEV_FB_FREE";              // MiB
inline constexpr char kMemCopyUtil[] = "DCGM_FI_DEV_MEM_COPY_UTIL";   // %
inline constexpr char kPowerUsage[] = "DCGM_FI_DEV_POWER_USAGE";      // W
inline constexpr char kPcieRxBytes[] = "DCGM_FI_PROF_PCIE_RX_BYTES";  // bytes/s
inline constexpr char kPcieTxBytes[] = "DCGM_FI_PROF_PCIE_TX_BYTES";  // bytes/s
inline constexpr char kNodeCpuSeconds[] = "node_cpu_seconds_total";
inline constexpr char kNodeMemTotal[] = "node_memory_MemTotal_bytes";
inline constexpr char kNodeMemAvailable[] = "node_memory_MemAvailable_bytes";
inline constexpr char kPodInfo[] = "kube_pod_info";
inline constexpr char kPodRequests[] = "kube_pod_container_resource_requests";
inline constexpr char kPodPhase[] = "kube_pod_status_phase";
inline constexpr char kNodeAllocatable[] = "kube_node_status_allocatable";
inline constexpr char kGpuResource[] = "nvidia_com_gpu";

}  // namespace seedance::telemetry::names

#endif  // SEEDANCE_TELEMETRY_PROMETHEUS_NAMES_H_
