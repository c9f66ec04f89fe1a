// The device plugin over gRPC, with the kubelet played by this test (no kubelet can run here).
//
// The fake kubelet follows the published device-plugin contract (k8s.io/kubelet/pkg/apis/
// deviceplugin/v1beta1/api.proto and the kubelet's device manager, pkg/kubelet/cm/devicemanager
// at v1.29):
//   - it serves Registration on kubelet.sock in the device-plugin folder and accepts a
//     RegisterRequest of version v1beta1;
//   - like the device manager's endpoint, it then dials the plugin's socket (the request's
//     endpoint, a file name in the same folder), asks GetDevicePluginOptions, opens
//     ListAndWatch and keeps the latest device list;
//   - at admission it calls GetPreferredAllocation (the plugin said it is available) and then
//     Allocate with the devices chosen;
//   - when it restarts it deletes every socket in the folder and creates kubelet.sock anew
//     (manager.go: removeContents at Start), which is how a plugin learns to register again.
// The pods come from the fake API server (src/k8s/fake_apiserver_testing.h) through the same
// list and watch the command runs.
#include "seedance/deviceplugin/plugin.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../k8s/fake_apiserver_testing.h"
#include "deviceplugin_v1beta1.grpc.pb.h"
#include "fake_kubelet_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::deviceplugin {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// A deadline for things that happen at once unless something is broken; how long they took is
// printed, never asserted (speed belongs to bench/).
constexpr auto kPatience = std::chrono::seconds(30);

using seedance::deviceplugin::testing::FakeKubelet;

// The kubelet's side of one plugin endpoint.
struct Endpoint {
  explicit Endpoint(const std::string& socket)
      : stub(v1beta1::DevicePlugin::NewStub(
            grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()))) {}
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
};

json PodJson(const std::string& name, const std::string& node, const std::string& decision) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "serving"},
        {"uid", "uid-" + name},
        {"creationTimestamp", "2026-12-01T10:00:00Z"},
        {"annotations", {{"seedance.io/gpus", decision}}}}},
      {"spec",
       {{"nodeName", node},
        {"schedulerName", "seedance"},
        {"containers",
         {{{"name", "llm"},
           {"image", "registry.example/llm:1"},
           {"resources",
            {{"limits", {{"seedance.io/gpu-count", "1"}, {"seedance.io/gpu-milli", "250"}}}}}}}}}},
      {"status", {{"phase", "Pending"}, {"qosClass", "BestEffort"}}}};
}

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("seedance-dp-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (plugin_ != nullptr) plugin_->Stop();
    if (run_.joinable()) run_.join();
    plugin_.reset();
    StopWatching();
    fs::remove_all(dir_);
  }
  std::string KubeletSocket() const { return (dir_ / "kubelet.sock").string(); }

  void Start(int gpus, int numa, int slices, PodCache* pods) {
    auto g = FakeGpus({.count = gpus, .memory_mib = 81920, .numa_nodes = numa, .node_name = "n1"});
    ASSERT_TRUE(g.ok());
    auto alloc = Allocator::Create(*g,
                                   {.node_name = "n1",
                                    .slices_per_gpu = slices,
                                    .device_nodes = DeviceNodes::kAlways,
                                    .match_wait_s = 30},
                                   pods);
    ASSERT_TRUE(alloc.ok()) << alloc.status();
    PluginOptions o;
    o.plugin_dir = dir_.string();
    o.poll_s = 0.05;
    o.log = [](const std::string& line) { std::cout << "plugin: " << line << "\n"; };
    auto p = DevicePlugin::Create(o, std::shared_ptr<Allocator>(std::move(*alloc)));
    ASSERT_TRUE(p.ok()) << p.status();
    plugin_ = std::move(*p);
    ASSERT_TRUE(plugin_->Serve().ok());
    run_ = std::thread([this] { plugin_->Run(); });
  }
  void StopWatching() {
    if (informer_ != nullptr) informer_->Stop();
    if (informer_thread_.joinable()) informer_thread_.join();
    informer_.reset();  // closes its keep-alive connection, which the API server would wait on
  }
  void WatchPods(const std::string& api_url, PodCache* cache) {
    k8s::ApiServerOptions api;
    api.url = api_url;
    informer_ = std::make_unique<k8s::Informer>(
        api, "pods", [cache](std::vector<k8s::ObjectEvent> events, bool relisted) {
          cache->Apply(std::move(events), relisted);
        });
    informer_->field_selector = "spec.nodeName=n1";
    informer_thread_ = std::thread([this] { informer_->Run(); });
  }

  fs::path dir_;
  PodCache pods_;  // outlives the informer and the plugin that use it
  std::unique_ptr<DevicePlugin> plugin_;
  std::thread run_;
  std::unique_ptr<k8s::Informer> informer_;
  std::thread informer_thread_;
};

TEST_F(DevicePluginTest, RegistersAndStreamsSlicesWithTheirNumaNodeAndHealth) {
  FakeKubelet kubelet(KubeletSocket());
  Start(/*gpus=*/4, /*numa=*/2, /*slices=*/2, nullptr);
  v1beta1::RegisterRequest reg;
  ASSERT_TRUE(kubelet.WaitForRegistration(1, kPatience, &reg));
  EXPECT_EQ(reg.version(), "v1beta1");
  EXPECT_EQ(reg.resource_name(), "seedance.io/gpu-count");
  EXPECT_EQ(reg.endpoint(), "seedance-gpu-count.sock");
  EXPECT_TRUE(reg.options().get_preferred_allocation_available());
  EXPECT_FALSE(reg.options().pre_start_required());

  Endpoint ep((dir_ / reg.endpoint()).string());
  grpc::ClientContext octx;
  v1beta1::DevicePluginOptions opts;
  ASSERT_TRUE(ep.stub->GetDevicePluginOptions(&octx, v1beta1::Empty(), &opts).ok());
  EXPECT_TRUE(opts.get_preferred_allocation_available());

  grpc::ClientContext ctx;
  auto stream = ep.stub->ListAndWatch(&ctx, v1beta1::Empty());
  v1beta1::ListAndWatchResponse list;
  ASSERT_TRUE(stream->Read(&list));
  ASSERT_EQ(list.devices_size(), 8);
  for (int i = 0; i < 8; ++i) {
    const v1beta1::Device& d = list.devices(i);
    EXPECT_EQ(d.id(), "GPU-fake-n1-" + std::to_string(i / 2) + "::" + std::to_string(i % 2));
    EXPECT_EQ(d.health(), "Healthy");
    ASSERT_EQ(d.topology().nodes_size(), 1);
    EXPECT_EQ(d.topology().nodes(0).id(), i / 2 < 2 ? 0 : 1);  // GPUs 0-1 on node 0, 2-3 on 1
  }
  plugin_->SetHealthy(1, false);
  ASSERT_TRUE(stream->Read(&list));
  for (const v1beta1::Device& d : list.devices()) {
    EXPECT_EQ(d.health(), d.id().starts_with("GPU-fake-n1-1::") ? "Unhealthy" : "Healthy")
        << d.id();
  }
  ctx.TryCancel();
}

TEST_F(DevicePluginTest, AllocateHandsOutTheGpusInThePodsAnnotation) {
  k8s::testing::FakeApiServer api;
  api.SetList("pods", json::array({PodJson("other", "n1", "GPU-fake-n1-0:500")}));
  WatchPods(api.url(), &pods_);
  FakeKubelet kubelet(KubeletSocket());
  Start(/*gpus=*/4, /*numa=*/2, /*slices=*/4, &pods_);
  v1beta1::RegisterRequest reg;
  ASSERT_TRUE(kubelet.WaitForRegistration(1, kPatience, &reg));
  // The extender bound a pod to GPU 3 after the plugin started: it arrives by the watch.
  api.Push("pods", "ADDED", PodJson("llm-0", "n1", "GPU-fake-n1-3:250"));
  const auto until = std::chrono::steady_clock::now() + kPatience;
  while (pods_.size() < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polls the cache
  }
  ASSERT_EQ(pods_.size(), 2u);
  Endpoint ep((dir_ / reg.endpoint()).string());

  // Admission of llm-0 (the older pod "other" asks GPU 0; the kubelet offers every slice).
  v1beta1::PreferredAllocationRequest preq;
  auto* c = preq.add_container_requests();
  for (int g = 1; g < 4; ++g) {
    for (int k = 0; k < 4; ++k)
      c->add_available_deviceids("GPU-fake-n1-" + std::to_string(g) + "::" + std::to_string(k));
  }
  c->set_allocation_size(1);
  v1beta1::PreferredAllocationResponse pref;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(ep.stub->GetPreferredAllocation(&ctx, preq, &pref).ok());
  }
  ASSERT_EQ(pref.container_responses_size(), 1);
  ASSERT_EQ(pref.container_responses(0).deviceids_size(), 1);
  // GPU 0 was not offered, so "other" (older, on GPU 0) cannot be the pod: llm-0's GPU 3 is.
  EXPECT_EQ(pref.container_responses(0).deviceids(0), "GPU-fake-n1-3::0");

  v1beta1::AllocateRequest areq;
  areq.add_container_requests()->add_devices_ids("GPU-fake-n1-3::0");
  v1beta1::AllocateResponse resp;
  grpc::ClientContext actx;
  const grpc::Status s = ep.stub->Allocate(&actx, areq, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& r = resp.container_responses(0);
  EXPECT_EQ(r.envs().at("CUDA_VISIBLE_DEVICES"), "GPU-fake-n1-3");
  EXPECT_EQ(r.envs().at("SEEDANCE_GPU_MILLI"), "250");
  EXPECT_EQ(r.envs().at("SEEDANCE_GPU_MEMORY_LIMIT_MIB"), "20480");
  EXPECT_EQ(r.envs().at("SEEDANCE_POD"), "serving/llm-0");
  EXPECT_EQ(r.annotations().at("seedance.io/gpus"), "GPU-fake-n1-3:250");
  ASSERT_GE(r.devices_size(), 1);
  EXPECT_EQ(r.devices(0).container_path(), "/dev/nvidia3");
  EXPECT_EQ(r.devices(0).permissions(), "rw");
  EXPECT_EQ(api.FieldSelector("pods"), "spec.nodeName=n1");

  // Asked again for the same pod's slice: llm-0 is allocated; "other" (GPU 0) is the one left,
  // so a request for GPU 3's slices now belongs to it and hands out its GPU 0.
  v1beta1::AllocateResponse again;
  grpc::ClientContext actx2;
  ASSERT_TRUE(ep.stub->Allocate(&actx2, areq, &again).ok());
  EXPECT_EQ(again.container_responses(0).envs().at("SEEDANCE_POD"), "serving/other");
  EXPECT_EQ(again.container_responses(0).envs().at("CUDA_VISIBLE_DEVICES"), "GPU-fake-n1-0");

  // A device that is not the plugin's: INVALID_ARGUMENT naming it.
  v1beta1::AllocateRequest bad;
  bad.add_container_requests()->add_devices_ids("GPU-elsewhere::0");
  grpc::ClientContext bctx;
  const grpc::Status bs = ep.stub->Allocate(&bctx, bad, &again);
  EXPECT_EQ(bs.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(bs.error_message(), HasSubstr("GPU-elsewhere::0"));
  StopWatching();  // before the fake API server goes
}

TEST_F(DevicePluginTest, RegistersAgainWhenTheKubeletRestarts) {
  auto kubelet = std::make_unique<FakeKubelet>(KubeletSocket());
  Start(/*gpus=*/2, /*numa=*/1, /*slices=*/1, nullptr);
  v1beta1::RegisterRequest reg;
  ASSERT_TRUE(kubelet->WaitForRegistration(1, kPatience, &reg));
  const std::string plugin_socket = (dir_ / reg.endpoint()).string();
  ASSERT_TRUE(fs::exists(plugin_socket));

  // The kubelet restarts: it goes away, deletes every socket in the folder, and comes back.
  kubelet->Shutdown();
  kubelet.reset();
  for (const auto& entry : fs::directory_iterator(dir_)) fs::remove(entry.path());
  const auto restarted = std::chrono::steady_clock::now();
  kubelet = std::make_unique<FakeKubelet>(KubeletSocket());
  ASSERT_TRUE(kubelet->WaitForRegistration(1, kPatience, &reg));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - restarted).count();
  std::cout << "re-registered " << took << " s after the kubelet's socket was recreated\n";
  EXPECT_EQ(reg.endpoint(), "seedance-gpu-count.sock");
  // The kubelet has the request before the plugin counts it: wait for the count.
  const auto until = std::chrono::steady_clock::now() + kPatience;
  while (plugin_->stats().registrations < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polls the count
  }
  EXPECT_EQ(plugin_->stats().serves, 2);
  EXPECT_EQ(plugin_->stats().registrations, 2);

  // The new socket serves: whole GPUs without a decision are handed out whole.
  Endpoint ep(plugin_socket);
  v1beta1::AllocateRequest areq;
  areq.add_container_requests()->add_devices_ids("GPU-fake-n1-1::0");
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(ep.stub->Allocate(&ctx, areq, &resp).ok());
  EXPECT_EQ(resp.container_responses(0).envs().at("CUDA_VISIBLE_DEVICES"), "GPU-fake-n1-1");
}

TEST_F(DevicePluginTest, RefusesBadOptionsAndForeignFiles) {
  auto g = FakeGpus({.count = 1});
  auto alloc = std::shared_ptr<Allocator>(std::move(*Allocator::Create(*g, {}, nullptr)));
  PluginOptions o;
  o.plugin_dir = dir_.string();
  for (const char* name :
       {"gpu", "/gpu", "seedance.io/", "a/b/c", "kubernetes.io/gpu", "Seedance.io/gpu"}) {
    o.resource_name = name;
    EXPECT_EQ(DevicePlugin::Create(o, alloc).status().code(), absl::StatusCode::kInvalidArgument)
        << name;
  }
  o.resource_name = kDefaultResource;
  o.endpoint = "sub/dir.sock";
  EXPECT_FALSE(DevicePlugin::Create(o, alloc).ok());
  o.endpoint = "";
  o.plugin_dir = "/" + std::string(120, 'd');
  EXPECT_THAT(DevicePlugin::Create(o, alloc).status().message(), HasSubstr("longer than"));
  // A regular file where the socket goes is never replaced.
  o.plugin_dir = dir_.string();
  const fs::path file = dir_ / "seedance-gpu-count.sock";
  std::ofstream(file) << "mine";
  auto p = DevicePlugin::Create(o, alloc);
  ASSERT_TRUE(p.ok());
  const absl::Status s = (*p)->Serve();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("not a socket"));
  EXPECT_TRUE(fs::is_regular_file(file));
  // A folder that does not exist: a clear error, no crash.
  o.plugin_dir = (dir_ / "missing").string();
  EXPECT_THAT((*DevicePlugin::Create(o, alloc))->Serve().message(), HasSubstr("does not exist"));
}

// The wire contract: the names and field numbers the kubelet speaks, as upstream's api.proto
// (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1) gives them. A renumbered or renamed field
// would still compile and round-trip between two Seedance processes, but not with a kubelet.
TEST(DevicePluginApiTest, NamesAndFieldNumbersAreUpstreams) {
  struct Field {
    const google::protobuf::Descriptor* message;
    const char* name;
    int number;
  };
  const Field fields[] = {
      {v1beta1::DevicePluginOptions::descriptor(), "pre_start_required", 1},
      {v1beta1::DevicePluginOptions::descriptor(), "get_preferred_allocation_available", 2},
      {v1beta1::RegisterRequest::descriptor(), "version", 1},
      {v1beta1::RegisterRequest::descriptor(), "endpoint", 2},
      {v1beta1::RegisterRequest::descriptor(), "resource_name", 3},
      {v1beta1::RegisterRequest::descriptor(), "options", 4},
      {v1beta1::ListAndWatchResponse::descriptor(), "devices", 1},
      {v1beta1::TopologyInfo::descriptor(), "nodes", 1},
      {v1beta1::NUMANode::descriptor(), "ID", 1},
      {v1beta1::Device::descriptor(), "ID", 1},
      {v1beta1::Device::descriptor(), "health", 2},
      {v1beta1::Device::descriptor(), "topology", 3},
      {v1beta1::PreStartContainerRequest::descriptor(), "devices_ids", 1},
      {v1beta1::PreferredAllocationRequest::descriptor(), "container_requests", 1},
      {v1beta1::ContainerPreferredAllocationRequest::descriptor(), "available_deviceIDs", 1},
      {v1beta1::ContainerPreferredAllocationRequest::descriptor(), "must_include_deviceIDs", 2},
      {v1beta1::ContainerPreferredAllocationRequest::descriptor(), "allocation_size", 3},
      {v1beta1::PreferredAllocationResponse::descriptor(), "container_responses", 1},
      {v1beta1::ContainerPreferredAllocationResponse::descriptor(), "deviceIDs", 1},
      {v1beta1::AllocateRequest::descriptor(), "container_requests", 1},
      {v1beta1::ContainerAllocateRequest::descriptor(), "devices_ids", 1},
      {v1beta1::CDIDevice::descriptor(), "name", 1},
      {v1beta1::AllocateResponse::descriptor(), "container_responses", 1},
      {v1beta1::ContainerAllocateResponse::descriptor(), "envs", 1},
      {v1beta1::ContainerAllocateResponse::descriptor(), "mounts", 2},
      {v1beta1::ContainerAllocateResponse::descriptor(), "devices", 3},
      {v1beta1::ContainerAllocateResponse::descriptor(), "annotations", 4},
      {v1beta1::ContainerAllocateResponse::descriptor(), "cdi_devices", 5},
      {v1beta1::Mount::descriptor(), "container_path", 1},
      {v1beta1::Mount::descriptor(), "host_path", 2},
      {v1beta1::Mount::descriptor(), "read_only", 3},
      {v1beta1::DeviceSpec::descriptor(), "container_path", 1},
      {v1beta1::DeviceSpec::descriptor(), "host_path", 2},
      {v1beta1::DeviceSpec::descriptor(), "permissions", 3},
  };
  for (const Field& f : fields) {
    const google::protobuf::FieldDescriptor* d = f.message->FindFieldByName(f.name);
    ASSERT_NE(d, nullptr) << f.message->full_name() << "." << f.name;
    EXPECT_EQ(d->number(), f.number) << f.message->full_name() << "." << f.name;
  }
  EXPECT_EQ(v1beta1::Device::descriptor()->field_count(), 3);
  EXPECT_EQ(v1beta1::ContainerAllocateResponse::descriptor()->field_count(), 5);
  EXPECT_TRUE(v1beta1::ContainerAllocateResponse::descriptor()->FindFieldByName("envs")->is_map());
  // The methods' wire names (the gRPC paths).
  const auto* plugin = v1beta1::DevicePlugin::service_full_name();
  EXPECT_STREQ(plugin, "v1beta1.DevicePlugin");
  EXPECT_STREQ(v1beta1::Registration::service_full_name(), "v1beta1.Registration");
  const google::protobuf::ServiceDescriptor* svc =
      v1beta1::Device::descriptor()->file()->FindServiceByName("DevicePlugin");
  ASSERT_NE(svc, nullptr);
  std::vector<std::string> methods;
  for (int i = 0; i < svc->method_count(); ++i) methods.push_back(svc->method(i)->name());
  EXPECT_THAT(methods,
              ::testing::ElementsAre("GetDevicePluginOptions", "ListAndWatch",
                                     "GetPreferredAllocation", "Allocate", "PreStartContainer"));
  EXPECT_TRUE(svc->FindMethodByName("ListAndWatch")->server_streaming());
}

}  // namespace
}  // namespace seedance::deviceplugin
