// Telemetry collectors and the profiler that drives them.
//
// A Collector contributes to a Profile: Describe adds the nodes and devices it knows (once, before
// the first sample), Sample appends one value per series it owns for the sample time. Three
// collectors exist:
//   - procfs:     the local machine (/proc/stat, /proc/meminfo, /sys NUMA nodes) plus its hwloc
//                 topology (packages, cores, hardware threads, PCI devices with NUMA nodes);
//   - nvml:       local NVIDIA GPUs through libnvidia-ml.so.1 loaded with dlopen at run time;
//                 absent library = no GPUs (NewNvmlCollector returns NotFound, said once);
//   - prometheus: a whole cluster through a Prometheus server's HTTP API, reading the metric
//                 names of dcgm-exporter, node-exporter and kube-state-metrics.
// Every network call has a bounded timeout; a collector never blocks longer than that.
//
// Thread-safety: a collector is used by one thread. RequestStop may be called from any thread or
// a signal handler.
#ifndef SEEDANCE_TELEMETRY_COLLECTOR_H_
#define SEEDANCE_TELEMETRY_COLLECTOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/telemetry/profile.h"

namespace seedance::telemetry {

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  // Adds the nodes/devices this collector measures to `profile` (no samples yet).
  [[nodiscard]] virtual absl::Status Describe(Profile* profile) = 0;
  // Appends one value to each series it owns. `unix_s` is the sample time: live collectors read
  // the current value; a collector with history (Prometheus) reads the value at that time.
  [[nodiscard]] virtual absl::Status Sample(double unix_s, Profile* profile) = 0;
  // True if Sample can read values from the past, so a profile can be taken without waiting.
  virtual bool HasHistory() const { return false; }
};

struct ProcfsOptions {
  std::string proc_root = "/proc";  // tests may point these at a fixture tree
  std::string sys_root = "/sys";
  std::string node_name;      // "" = the host name
  bool with_topology = true;  // read the hwloc topology
};
std::unique_ptr<Collector> NewProcfsCollector(ProcfsOptions options = {});

// The local machine's hwloc topology (packages, cores, PUs, PCI devices).
[[nodiscard]] absl::StatusOr<TopologyInfo> ReadHwlocTopology();

// NotFound when libnvidia-ml.so.1 cannot be loaded or reports no device. `node_name` names the
// node whose GPUs it fills (the profile's node of that name; added if absent).
[[nodiscard]] absl::StatusOr<std::unique_ptr<Collector>> NewNvmlCollector(std::string node_name);

// One local NVIDIA GPU as NVML reports it, in NVML's index order (PCI bus order).
struct LocalGpu {
  int index = 0;
  std::string name;        // "NVIDIA H100 80GB HBM3"
  std::string uuid;        // "GPU-5fd2..."
  std::string pci_bus_id;  // lower case, "0000:3b:00.0"
  int numa_node = -1;      // -1 = unknown
  int64_t memory_mib = 0;
  bool healthy = true;            // NVML answered for it
  std::vector<int> nvlink_peers;  // indices of GPUs it has an active NVLink to
};
// The local GPUs, read once. NotFound as NewNvmlCollector; a GPU NVML cannot read is listed with
// healthy = false (and its index only).
[[nodiscard]] absl::StatusOr<std::vector<LocalGpu>> ListNvmlGpus();

struct PrometheusOptions {
  // "http://[USER[:PASSWORD]@]host:9090[/PATH]" (https is not supported). Credentials are sent as
  // HTTP basic auth and never appear in messages or in the profile's `source` (base::RedactUrl).
  std::string url;
  // Total time one HTTP request may take, connect to last byte, in (0, 600]: a server that
  // sends one byte at a time is cut off at this deadline (DeadlineExceeded).
  double timeout_s = 5;
  double rate_window_s = 60;  // window of rate() for counters (node CPU seconds, PCIe bytes)
  // Largest reply body accepted (after decompression); larger is ResourceExhausted. At most
  // (and by default) 256 MiB; tests use less.
  size_t max_response_bytes = size_t{256} << 20;
};
// Fails at once (InvalidArgument) for a malformed URL or timeout. Describe and Sample fail with
// Unavailable (connection refused, HTTP error status), DeadlineExceeded (no complete reply within
// timeout_s), ResourceExhausted (a reply over 256 MiB) or DataLoss (a reply that is not what the
// Prometheus API documents: the message names the URL path and the JSON path); the CLI exits 1
// for all of them. Values a server reports outside their meaning (a utilisation of 1e308, a
// negative memory size) are recorded as missing (null), never as garbage.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Collector>> NewPrometheusCollector(
    PrometheusOptions options);

// One PromQL instant query answered as a number, for control loops (the container autoscaler):
// the sum of the result vector's samples, NaN samples left out. NotFound when the query matched
// no series (or only NaN); errors as NewPrometheusCollector's. Thread-safety: one caller at a
// time.
class PrometheusQuerier {
 public:
  virtual ~PrometheusQuerier() = default;
  virtual absl::StatusOr<double> Sum(const std::string& promql, double unix_time_s) = 0;
  virtual const std::string& url() const = 0;  // redacted
};
[[nodiscard]] absl::StatusOr<std::unique_ptr<PrometheusQuerier>> NewPrometheusQuerier(
    PrometheusOptions options);


struct ProfilerOptions {
  double duration_s = 300;
  double interval_s = 1;
  // Live: sample now, then every interval until duration has passed (or stop is requested).
  // History: sample the past `duration_s` seconds at once (every collector must HasHistory()).
  bool history = false;
  // Called after each sample with (samples taken, samples planned).
  std::function<void(size_t, size_t)> progress;
};

// Runs collectors into one profile. Stop() (e.g. from SIGINT) ends a live run after the current
// sample; the profile then holds what was gathered and has interrupted == true.
class Profiler {
 public:
  Profiler(std::vector<std::unique_ptr<Collector>> collectors, ProfilerOptions options);
  [[nodiscard]] absl::StatusOr<Profile> Run();
  void Stop() { stop_.store(true); }
  std::atomic<bool>* stop_flag() { return &stop_; }

 private:
  std::vector<std::unique_ptr<Collector>> collectors_;
  ProfilerOptions options_;
  std::atomic<bool> stop_{false};
};

}  // namespace seedance::telemetry

#endif  // SEEDANCE_TELEMETRY_COLLECTOR_H_
