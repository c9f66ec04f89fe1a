// The device plugin's speed figures (issue 15; BENCHMARKS.md, "Kubelet device plugin"), playing
// the kubelet as src/deviceplugin/plugin_test.cc does:
//   - Allocate latency: each call is one admission, as the kubelet makes it: a pod with a
//     decision arrives in the plugin's pod cache (among --pending others still waiting), then
//     GetPreferredAllocation and Allocate over the unix socket, timed from the kubelet's side
//     (round trip, one client, closed loop); the pod then starts and leaves the cache;
//   - re-registration: the kubelet restarts (its socket and the plugin's deleted, its socket
//     created anew) --restarts times; the time from the new socket to the plugin's Register.
// Prints one JSON object.
//
//   device_plugin_load [--calls N] [--pending P] [--restarts R]
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "deviceplugin/fake_kubelet_testing.h"
#include "deviceplugin_v1beta1.grpc.pb.h"
#include "load_stats.h"
#include "seedance/deviceplugin/plugin.h"

namespace {

namespace fs = std::filesystem;
namespace dp = seedance::deviceplugin;
using Clock = std::chrono::steady_clock;

using Kubelet = seedance::deviceplugin::testing::FakeKubelet;
constexpr auto kPatience = std::chrono::seconds(60);

seedance::k8s::ObjectEvent PodEvent(int i, int gpu, bool running) {
  seedance::k8s::ObjectEvent e;
  e.type = seedance::k8s::ObjectEvent::Type::kModified;
  e.pod.uid = "uid-" + std::to_string(i);
  e.pod.name = "pod-" + std::to_string(i);
  e.pod.ns = "bench";
  e.pod.node_name = "n1";
  e.pod.phase = running ? "Running" : "Pending";
  e.pod.creation_unix_s = 1000000 + i;
  e.pod.gpus = {{.index = gpu, .milli = 100}};
  return e;
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == name) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = Flag(argc, argv, "--calls", 20000);
  const int pending = Flag(argc, argv, "--pending", 20);
  const int restarts = Flag(argc, argv, "--restarts", 20);
  const fs::path dir = fs::temp_directory_path() / ("seedance-dpload-" + std::to_string(getpid()));
  fs::create_directories(dir);

  dp::PodCache pods;
  auto gpus = dp::FakeGpus({.count = 8, .numa_nodes = 2, .node_name = "n1"});
  auto alloc = dp::Allocator::Create(*gpus, {.node_name = "n1", .slices_per_gpu = 10}, &pods);
  dp::PluginOptions o;
  o.plugin_dir = dir.string();
  o.log = [](const std::string&) {};
  auto plugin = dp::DevicePlugin::Create(o, std::shared_ptr<dp::Allocator>(std::move(*alloc)));
  if (!plugin.ok() || !(*plugin)->Serve().ok()) {
    std::fprintf(stderr, "device_plugin_load: cannot start the plugin\n");
    return 1;
  }
  auto kubelet = std::make_unique<Kubelet>((dir / "kubelet.sock").string());
  std::thread run([p = plugin->get()] { (*p).Run(); });
  if (!kubelet->WaitForRegistration(1, kPatience)) return 1;

  // Pods that stay pending on GPU 7 (never requested): the matcher looks past them every time.
  for (int i = 0; i < pending; ++i) pods.Apply({PodEvent(-1 - i, 7, false)}, false);
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + (*plugin)->socket_path(), grpc::InsecureChannelCredentials()));
  std::vector<std::string> available;
  for (const dp::Gpu& g : *gpus) {
    for (int k = 0; k < 10; ++k) available.push_back(dp::SliceId(g, k));
  }
  std::vector<double> allocate_ms, preferred_ms;
  int errors = 0;
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) {
    const int gpu = i % 7;
    pods.Apply({PodEvent(i, gpu, false)}, false);
    v1beta1::PreferredAllocationRequest preq;
    auto* c = preq.add_container_requests();
    for (const std::string& id : available) c->add_available_deviceids(id);
    c->set_allocation_size(1);
    v1beta1::PreferredAllocationResponse pref;
    auto t0 = Clock::now();
    {
      grpc::ClientContext ctx;
      if (!stub->GetPreferredAllocation(&ctx, preq, &pref).ok()) ++errors;
    }
    auto t1 = Clock::now();
    v1beta1::AllocateRequest areq;
    areq.add_container_requests()->add_devices_ids(dp::SliceId((*gpus)[gpu], i % 10));
    v1beta1::AllocateResponse resp;
    {
      grpc::ClientContext ctx;
      if (!stub->Allocate(&ctx, areq, &resp).ok()) ++errors;
    }
    auto t2 = Clock::now();
    preferred_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    allocate_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    pods.Apply({PodEvent(i, gpu, true)}, false);  // it started: out of the cache
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> reregister_ms;
  for (int r = 0; r < restarts; ++r) {
    kubelet.reset();
    for (const auto& entry : fs::directory_iterator(dir)) fs::remove(entry.path());
    const auto t0 = Clock::now();
    kubelet = std::make_unique<Kubelet>((dir / "kubelet.sock").string());
    if (!kubelet->WaitForRegistration(1, kPatience)) return 1;
    reregister_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  (*plugin)->Stop();
  run.join();
  kubelet.reset();
  fs::remove_all(dir);

  using seedance::bench::Quantile;
  std::printf(
      "{\"calls\":%d,\"pending\":%d,\"errors\":%d,\"admissions_per_s\":%.0f,"
      "\"allocate_p50_ms\":%.3f,\"allocate_p99_ms\":%.3f,\"allocate_max_ms\":%.3f,"
      "\"preferred_p50_ms\":%.3f,\"preferred_p99_ms\":%.3f,"
      "\"reregister_p50_ms\":%.1f,\"reregister_max_ms\":%.1f}\n",
      calls, pending, errors, calls / seconds, Quantile(allocate_ms, 0.5),
      Quantile(allocate_ms, 0.99), Quantile(allocate_ms, 1.0), Quantile(preferred_ms, 0.5),
      Quantile(preferred_ms, 0.99), Quantile(reregister_ms, 0.5), Quantile(reregister_ms, 1.0));
  return errors == 0 ? 0 : 1;
}
