// `seedance device-plugin`: the kubelet device plugin, API v1beta1 over gRPC on unix sockets
// (docs/device-plugin.md).
//
// The plugin serves the DevicePlugin service on its own socket in the kubelet's device-plugin
// folder (default /var/lib/kubelet/device-plugins/seedance-<resource>.sock) and registers it
// with the kubelet's Registration service (kubelet.sock in that folder): version "v1beta1", its
// socket's file name, the resource name, and GetPreferredAllocation available.
//   ListAndWatch            every slice (gpus.h) with its health ("Healthy"/"Unhealthy") and its
//                           GPU's NUMA node as TopologyInfo; the whole list again on every
//                           health change (SetHealthy), until the kubelet hangs up or Stop
//   GetPreferredAllocation  Allocator::Preferred per container
//   Allocate                Allocator::Allocate per container; an error fails the RPC
//                           (InvalidArgument / FailedPrecondition with the reason), which the
//                           kubelet reports on the pod
//   PreStartContainer       not required; answers empty
// Run watches both sockets every poll_s: when the kubelet restarts it deletes every socket in
// the folder and creates its own anew, so when the plugin's socket is gone it serves again on a
// new one, and whenever the kubelet's socket is a new file (another inode or change time) or the
// plugin serves anew, it registers again. A failed registration is retried at the next poll.
//
// Thread-safety: Serve and Run from one thread; Stop and SetHealthy from any.
#ifndef SEEDANCE_DEVICEPLUGIN_PLUGIN_H_
#define SEEDANCE_DEVICEPLUGIN_PLUGIN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "seedance/deviceplugin/allocator.h"

namespace seedance::deviceplugin {

inline constexpr char kApiVersion[] = "v1beta1";
inline constexpr char kDefaultPluginDir[] = "/var/lib/kubelet/device-plugins";
inline constexpr char kDefaultResource[] = "seedance.io/gpu-count";

struct PluginOptions {
  std::string plugin_dir = kDefaultPluginDir;
  std::string kubelet_socket;  // empty = plugin_dir/kubelet.sock
  std::string resource_name = kDefaultResource;
  std::string endpoint;  // the socket's file name; empty = "seedance-<resource's last part>.sock"
  double poll_s = 0.25;
  double register_timeout_s = 5;
  std::function<void(const std::string&)> log;  // one line per event; empty = stderr
};

struct PluginStats {
  int64_t serves = 0;             // times the gRPC server was started on the socket
  int64_t registrations = 0;      // accepted by the kubelet
  int64_t register_failures = 0;  // refused or unreachable
  int64_t list_watch_sends = 0;
  int64_t preferred = 0;
  int64_t allocations = 0;
  int64_t allocate_errors = 0;
  std::string last_error;
};

class DevicePlugin {
 public:
  // InvalidArgument for a resource name that is not DOMAIN/NAME or a socket path that does not
  // fit a unix socket address.
  static absl::StatusOr<std::unique_ptr<DevicePlugin>> Create(PluginOptions options,
                                                              std::shared_ptr<Allocator> allocator);
  ~DevicePlugin();

  // Serves on the plugin's socket, replacing a socket file left there (never any other kind of
  // file: that is FailedPrecondition). Errors when the folder cannot hold the socket.
  absl::Status Serve();
  // Registers, then watches the sockets as above, until Stop.
  void Run();
  void Stop();

  // Marks every slice of GPU `gpu` (an index into the allocator's GPUs) healthy or not and
  // sends the list to every ListAndWatch stream when that changes.
  void SetHealthy(int gpu, bool healthy);
  std::string socket_path() const;
  PluginStats stats() const;

  struct Impl;

 private:
  explicit DevicePlugin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace seedance::deviceplugin

#endif  // SEEDANCE_DEVICEPLUGIN_PLUGIN_H_
