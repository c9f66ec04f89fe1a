// `seedance device-plugin`: the kubelet device plugin (docs/device-plugin.md). Flags, GPUs, the
// pod watch and signals; the plugin itself is seedance_deviceplugin.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "commands.h"
#include "seedance/base/mutex.h"
#include "seedance/base/parse.h"
#include "seedance/deviceplugin/plugin.h"
#include "seedance/k8s/informer.h"

namespace seedance::cli {
namespace {

namespace dp = seedance::deviceplugin;

struct DevicePluginFlags {
  std::string plugin_dir = dp::kDefaultPluginDir;
  std::string kubelet_socket;
  std::string resource = dp::kDefaultResource;
  int slices = 10;
  std::string node_name;
  int fake_gpus = 0;
  std::string fake_model = "NVIDIA-A100-SXM4-80GB";
  int64_t fake_memory_mib = 81920;
  int fake_numa = 1;
  std::string device_nodes = "auto";
  std::string cdi_kind;
  double match_wait_s = 2;
  double health_interval_s = 10;
  KubeFlags kube;
  bool quiet = false;
};

std::string NodeName(const DevicePluginFlags& f) {
  if (!f.node_name.empty()) return f.node_name;
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env != '\0') return env;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) return host;
  return "";
}

absl::StatusOr<std::vector<dp::Gpu>> Gpus(const DevicePluginFlags& f, const std::string& node) {
  if (f.fake_gpus > 0) {
    return dp::FakeGpus({.count = f.fake_gpus,
                         .model = f.fake_model,
                         .memory_mib = f.fake_memory_mib,
                         .numa_nodes = f.fake_numa,
                         .node_name = node});
  }
  auto gpus = dp::NvmlGpus();
  if (!gpus.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no GPUs to advertise: ", gpus.status().message(),
                     " (--fake-gpus N makes some up, for tests)"));
  }
  return gpus;
}

dp::DeviceNodes DeviceNodesOf(const std::string& v) {
  return v == "always"  ? dp::DeviceNodes::kAlways
         : v == "never" ? dp::DeviceNodes::kNever
                        : dp::DeviceNodes::kAuto;
}

// Re-reads NVML every interval and marks the GPUs it no longer reads unhealthy, until `stop`.
class HealthWatch {
 public:
  HealthWatch(dp::DevicePlugin* plugin, std::vector<dp::Gpu> gpus, double interval_s)
      : thread_([=, this] { Loop(plugin, gpus, interval_s); }) {}
  ~HealthWatch() {
    {
      base::MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Loop(dp::DevicePlugin* plugin, const std::vector<dp::Gpu>& gpus, double interval_s) {
    base::MutexLock lock(mu_);
    while (!lock.WaitFor(cv_, std::chrono::duration<double>(interval_s),
                         [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; })) {
      lock.Unlock();
      const std::vector<bool> healthy = dp::NvmlHealth(gpus);
      for (size_t g = 0; g < gpus.size(); ++g) plugin->SetHealthy(static_cast<int>(g), healthy[g]);
      lock.Lock();
    }
  }
  base::Mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

int RunDevicePlugin(const DevicePluginFlags& f) {
  const std::string node = NodeName(f);
  auto gpus = Gpus(f, node);
  if (!gpus.ok()) return Fail(gpus.status());
  auto kube = KubeOptionsOf(f.kube);
  if (!kube.ok()) return Fail(kube.status());
  if (*kube) {  // the URL's form, checked before anything starts
    if (auto client = k8s::NewApiServerClient(**kube); !client.ok()) return Fail(client.status());
  }

  sigset_t stop_signals = BlockStopSignals();

  auto pods = std::make_unique<dp::PodCache>();
  auto alloc = dp::Allocator::Create(*gpus,
                                     {.node_name = *kube ? node : "",
                                      .slices_per_gpu = f.slices,
                                      .device_nodes = DeviceNodesOf(f.device_nodes),
                                      .cdi_kind = f.cdi_kind,
                                      .match_wait_s = f.match_wait_s},
                                     *kube ? pods.get() : nullptr);
  if (!alloc.ok()) return Fail(alloc.status());
  dp::PluginOptions o;
  o.plugin_dir = f.plugin_dir;
  o.kubelet_socket = f.kubelet_socket;
  o.resource_name = f.resource;
  if (f.quiet) o.log = [](const std::string&) {};
  auto plugin = dp::DevicePlugin::Create(o, std::shared_ptr<dp::Allocator>(std::move(*alloc)));
  if (!plugin.ok()) return Fail(plugin.status());
  if (absl::Status s = (*plugin)->Serve(); !s.ok()) return Fail(s);
  if (!*kube && f.slices > 1 && !f.quiet) {
    Warn(
        "no --kube-api or --kube-in-cluster: without the pods' decisions only whole GPUs "
        "(--slices-per-gpu 1) can be handed out; Allocate of shared slices will fail");
  }

  std::unique_ptr<k8s::Informer> informer;
  std::thread informer_thread;
  if (*kube) {
    informer = std::make_unique<k8s::Informer>(
        **kube, "pods", [p = pods.get()](std::vector<k8s::ObjectEvent> events, bool relisted) {
          p->Apply(std::move(events), relisted);
        });
    informer->field_selector = "spec.nodeName=" + node;
    informer_thread = std::thread([i = informer.get()] { i->Run(); });
  }
  std::unique_ptr<HealthWatch> health;
  if (f.fake_gpus == 0) {
    health = std::make_unique<HealthWatch>(plugin->get(), *gpus, f.health_interval_s);
  }
  if (!f.quiet) {
    std::fprintf(stderr,
                 "seedance device-plugin: %zu %s GPU(s) on node %s as %s, %d slice(s) each; "
                 "serving on %s; pods %s\n",
                 gpus->size(), (*gpus)[0].model.c_str(), node.c_str(), f.resource.c_str(), f.slices,
                 (*plugin)->socket_path().c_str(),
                 *kube ? ("from " + (*kube)->url).c_str() : "not watched");
  }
  std::thread run([p = plugin->get()] { p->Run(); });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  if (!f.quiet) std::fprintf(stderr, "seedance device-plugin: signal %d, stopping\n", sig);
  health.reset();
  (*plugin)->Stop();
  run.join();
  if (informer != nullptr) {
    informer->Stop();
    informer_thread.join();
  }
  return kExitOk;
}

}  // namespace

Command AddDevicePluginCommand(CLI::App& app) {
  auto f = std::make_shared<DevicePluginFlags>();
  CLI::App* s = app.add_subcommand(
      "device-plugin",
      "Run the kubelet device plugin: GPU slices for pods the seedance extender placed");
  s->footer(
      "Registers with the kubelet (v1beta1 gRPC on unix sockets in --plugin-dir) and advertises\n"
      "each GPU as --slices-per-gpu devices of --resource, with its NUMA node. A container that\n"
      "asks for N of them gets the N GPUs and shares Seedance's extender wrote on its pod\n"
      "(annotation seedance.io/gpus): CUDA_VISIBLE_DEVICES, SEEDANCE_GPU_MEMORY_LIMIT_MIB,\n"
      "SEEDANCE_GPU_MILLI, the device nodes, and CDI names with --cdi-kind. The limits in the\n"
      "environment bind only programs that honour them: Seedance ships no CUDA interposer.\n"
      "The plugin re-registers when the kubelet restarts (docs/device-plugin.md).\n\n"
      "Examples:\n"
      "  seedance device-plugin --kube-in-cluster                   (in a DaemonSet)\n"
      "  seedance device-plugin --slices-per-gpu 1 --resource seedance.io/gpu\n"
      "  seedance device-plugin --fake-gpus 8 --fake-numa-nodes 2 --plugin-dir /tmp/dp\n\n"
      "Exit status: 0 ok (stopped by SIGINT or SIGTERM), 1 I/O or runtime failure, 2 usage or "
      "input error.");
  s->add_option("--plugin-dir", f->plugin_dir,
                "The kubelet's device-plugin folder (the plugin's socket goes there)")
      ->type_name("DIR")
      ->capture_default_str();
  s->add_option("--kubelet-socket", f->kubelet_socket,
                "The kubelet's Registration socket (default DIR/kubelet.sock)")
      ->type_name("PATH");
  s->add_option("--resource", f->resource, "Extended resource the slices are advertised as")
      ->type_name("NAME")
      ->capture_default_str();
  AddInt(s, "--slices-per-gpu", &f->slices, 1, dp::kMaxSlicesPerGpu,
         "Devices per GPU: how many containers may share one (1 = whole GPUs)");
  s->add_option("--node-name", f->node_name,
                "This node's name in Kubernetes (default $NODE_NAME, else the host name)")
      ->type_name("NAME");
  AddInt(s, "--fake-gpus", &f->fake_gpus, 0, static_cast<int>(core::kMaxGpusPerNode),
         "Advertise N made-up GPUs instead of NVML's (tests, CI); 0 = NVML");
  s->add_option("--fake-gpu-model", f->fake_model, "With --fake-gpus: their model")
      ->type_name("MODEL")
      ->capture_default_str();
  AddInt(s, "--fake-gpu-memory-mib", &f->fake_memory_mib, int64_t{1}, int64_t{1} << 30,
         "With --fake-gpus: memory per GPU in MiB");
  AddInt(s, "--fake-numa-nodes", &f->fake_numa, 1, static_cast<int>(core::kMaxGpusPerNode),
         "With --fake-gpus: NUMA nodes the GPUs are spread over, in order");
  s->add_option("--device-nodes", f->device_nodes,
                "Device nodes in Allocate's answer: auto (those on this host), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  s->add_option("--cdi-kind", f->cdi_kind,
                "Also answer CDI device names KIND=UUID (e.g. nvidia.com/gpu)")
      ->type_name("KIND");
  AddDuration(s, "--match-wait", &f->match_wait_s, 1, base::Closed(0, 60),
              "How long Allocate waits for the pod's decision to arrive from the API server");
  AddDuration(s, "--health-interval", &f->health_interval_s, 1, base::Closed(0.1, 3600),
              "How often NVML is asked whether each GPU still answers");
  AddKubeFlags(s, &f->kube,
               "Kubernetes API server the node's pods (and Seedance's decisions on them) are "
               "listed and watched from, e.g. https://10.0.0.1:6443");
  s->add_flag("-q,--quiet", f->quiet, "No start-up and shutdown lines on stderr");
  return {s, [f] { return RunDevicePlugin(*f); }};
}

}  // namespace seedance::cli
