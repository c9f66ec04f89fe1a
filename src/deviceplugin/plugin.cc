#include "seedance/deviceplugin/plugin.h"

#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "deviceplugin_v1beta1.grpc.pb.h"
#include "seedance/base/mutex.h"

namespace seedance::deviceplugin {
namespace {

constexpr char kHealthy[] = "Healthy";
constexpr char kUnhealthy[] = "Unhealthy";

// Which file a path names now: a socket deleted and created again is another file.
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileId&) const = default;
};

FileId Identify(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return {};
  return {true, st.st_dev, st.st_ino,
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

bool ValidResourceName(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string::npos || name.size() > 253) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                    (i > slash && ((c >= 'A' && c <= 'Z') || c == '_'));
    if (!ok && i != slash) return false;
  }
  const std::string domain = name.substr(0, slash);
  return domain != "kubernetes.io" && !absl::EndsWith(domain, ".kubernetes.io");
}

grpc::Status ToGrpc(const absl::Status& s) {
  const grpc::StatusCode code = absl::IsInvalidArgument(s)      ? grpc::INVALID_ARGUMENT
                                : absl::IsFailedPrecondition(s) ? grpc::FAILED_PRECONDITION
                                                                : grpc::INTERNAL;
  return {code, std::string(s.message())};
}

}  // namespace

struct DevicePlugin::Impl final : public v1beta1::DevicePlugin::Service {
  Impl(PluginOptions options, std::shared_ptr<Allocator> allocator)
      : o(std::move(options)), alloc(std::move(allocator)), healthy(alloc->gpus().size(), true) {}

  PluginOptions o;
  std::string socket;  // the plugin's socket path
  std::shared_ptr<Allocator> alloc;

  mutable base::Mutex mu;
  std::condition_variable cv;
  std::vector<bool> healthy ABSL_GUARDED_BY(mu);
  uint64_t health_version ABSL_GUARDED_BY(mu) = 0;
  uint64_t generation ABSL_GUARDED_BY(mu) = 0;  // bumped when a server stops: its streams end
  bool stopping ABSL_GUARDED_BY(mu) = false;
  PluginStats stats ABSL_GUARDED_BY(mu);
  std::string last_logged ABSL_GUARDED_BY(mu);

  std::unique_ptr<grpc::Server> server;
  FileId served;      // the socket file the server listens on
  FileId registered;  // the kubelet socket registered with

  void Log(const std::string& line) {
    if (o.log) {
      o.log(line);
    } else {
      std::cerr << "seedance device-plugin: " << line << "\n";
    }
  }
  void Fail(const std::string& what) {
    {
      base::MutexLock lock(mu);
      stats.last_error = what;
      if (what == last_logged) return;  // said once while it lasts
      last_logged = what;
    }
    Log(what);
  }
  // What the plugin tells the kubelet at registration and when asked.
  static void FillOptions(v1beta1::DevicePluginOptions* out) {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(true);
  }

  v1beta1::ListAndWatchResponse DeviceList() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    v1beta1::ListAndWatchResponse r;
    const int slices = alloc->config().slices_per_gpu;
    for (size_t g = 0; g < alloc->gpus().size(); ++g) {
      const Gpu& gpu = alloc->gpus()[g];
      for (int k = 0; k < slices; ++k) {
        v1beta1::Device* d = r.add_devices();
        d->set_id(SliceId(gpu, k));
        d->set_health(healthy[g] ? kHealthy : kUnhealthy);
        if (gpu.numa_node >= 0) d->mutable_topology()->add_nodes()->set_id(gpu.numa_node);
      }
    }
    return r;
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    FillOptions(out);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    base::MutexLock lock(mu);
    const uint64_t gen = generation;
    auto over = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return stopping || generation != gen || ctx->IsCancelled();
    };
    while (!over()) {
      const v1beta1::ListAndWatchResponse list = DeviceList();
      const uint64_t sent = health_version;
      ++stats.list_watch_sends;
      lock.Unlock();
      if (!writer->Write(list)) return grpc::Status::OK;  // the kubelet hung up
      lock.Lock();
      // Woken by a health change or Stop; the timeout notices a cancelled stream.
      while (health_version == sent && !over()) lock.WaitFor(cv, std::chrono::milliseconds(200));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* out) override {
    for (const auto& c : req->container_requests()) {
      const std::vector<std::string> available(c.available_deviceids().begin(),
                                               c.available_deviceids().end());
      const std::vector<std::string> must(c.must_include_deviceids().begin(),
                                          c.must_include_deviceids().end());
      auto* r = out->add_container_responses();
      for (const std::string& id : alloc->Preferred(available, must, c.allocation_size())) {
        r->add_deviceids(id);
      }
    }
    base::MutexLock lock(mu);
    ++stats.preferred;
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* out) override {
    for (const auto& c : req->container_requests()) {
      auto a = alloc->Allocate({c.devices_ids().begin(), c.devices_ids().end()});
      if (!a.ok()) {
        {
          base::MutexLock lock(mu);
          ++stats.allocate_errors;
        }
        Fail(absl::StrCat("Allocate: ", a.status().message()));
        return ToGrpc(a.status());
      }
      v1beta1::ContainerAllocateResponse* r = out->add_container_responses();
      for (const auto& [k, v] : a->envs) (*r->mutable_envs())[k] = v;
      for (const auto& [k, v] : a->annotations) (*r->mutable_annotations())[k] = v;
      for (const DeviceNodeSpec& d : a->devices) {
        v1beta1::DeviceSpec* spec = r->add_devices();
        spec->set_container_path(d.container_path);
        spec->set_host_path(d.host_path);
        spec->set_permissions(d.permissions);
      }
      for (const std::string& name : a->cdi_devices) r->add_cdi_devices()->set_name(name);
    }
    base::MutexLock lock(mu);
    ++stats.allocations;
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

  absl::Status Serve() {
    struct stat st {};
    if (stat(o.plugin_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the device-plugin folder ", o.plugin_dir,
                       " does not exist (is this a Kubernetes node? see --plugin-dir)"));
    }
    if (lstat(socket.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat(socket, " exists and is not a socket; refusing to replace it"));
      }
      if (unlink(socket.c_str()) != 0) {
        return absl::PermissionDeniedError(
            absl::StrCat("cannot remove the old socket ", socket, ": ", std::strerror(errno)));
      }
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server = builder.BuildAndStart();
    served = Identify(socket);
    if (server == nullptr || !served.exists) {
      if (server != nullptr) server->Shutdown();
      server.reset();
      return absl::UnavailableError(absl::StrCat(
          "cannot serve on ", socket, " (does the folder exist, and may this user write it?)"));
    }
    base::MutexLock lock(mu);
    ++stats.serves;
    return absl::OkStatus();
  }

  void StopServing() {
    if (server == nullptr) return;
    {
      base::MutexLock lock(mu);
      ++generation;
    }
    cv.notify_all();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server.reset();
    served = {};
  }

  absl::Status Register() {
    auto channel =
        grpc::CreateChannel("unix:" + KubeletSocket(), grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    v1beta1::RegisterRequest req;
    req.set_version(kApiVersion);
    req.set_endpoint(Endpoint());
    req.set_resource_name(o.resource_name);
    FillOptions(req.mutable_options());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(o.register_timeout_s * 1000)));
    v1beta1::Empty reply;
    const grpc::Status s = stub->Register(&ctx, req, &reply);
    if (!s.ok()) {
      return absl::UnavailableError(absl::StrCat("the kubelet at ", KubeletSocket(),
                                                 " refused registration: ", s.error_message()));
    }
    return absl::OkStatus();
  }

  std::string KubeletSocket() const {
    return o.kubelet_socket.empty() ? o.plugin_dir + "/kubelet.sock" : o.kubelet_socket;
  }
  std::string Endpoint() const {
    if (!o.endpoint.empty()) return o.endpoint;
    return absl::StrCat("seedance-", o.resource_name.substr(o.resource_name.find('/') + 1),
                        ".sock");
  }

  // One look at both sockets (Run's loop body).
  void Poll() {
    if (server == nullptr || Identify(socket) != served) {
      if (server != nullptr)
        Log(absl::StrCat(socket, " is gone (the kubelet restarted?): serving again"));
      StopServing();
      if (absl::Status s = Serve(); !s.ok()) {
        Fail(std::string(s.message()));
        return;
      }
      registered = {};
    }
    const FileId kubelet = Identify(KubeletSocket());
    if (!kubelet.exists) {
      if (registered.exists)
        Log(absl::StrCat(KubeletSocket(), " is gone: waiting for the kubelet"));
      registered = {};
      return;
    }
    if (kubelet == registered) return;
    if (absl::Status s = Register(); !s.ok()) {
      {
        base::MutexLock lock(mu);
        ++stats.register_failures;
      }
      Fail(std::string(s.message()));
      return;
    }
    registered = kubelet;
    {
      base::MutexLock lock(mu);
      ++stats.registrations;
      last_logged.clear();
    }
    Log(absl::StrCat("registered ", o.resource_name, " (", alloc->gpus().size(), " GPUs x ",
                     alloc->config().slices_per_gpu, " slices) with the kubelet at ",
                     KubeletSocket(), " as ", Endpoint()));
  }
};

absl::StatusOr<std::unique_ptr<DevicePlugin>> DevicePlugin::Create(
    PluginOptions options, std::shared_ptr<Allocator> allocator) {
  if (!ValidResourceName(options.resource_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("resource name \"", options.resource_name,
                     "\" is not DOMAIN/NAME (lower-case DNS domain outside kubernetes.io, e.g. "
                     "seedance.io/gpu-count)"));
  }
  if (!(options.poll_s > 0 && options.poll_s <= 60) ||
      !(options.register_timeout_s > 0 && options.register_timeout_s <= 600)) {
    return absl::InvalidArgumentError(
        "poll interval must be in (0, 60] s, registration timeout in (0, 600] s");
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(allocator));
  if (impl->Endpoint().find('/') != std::string::npos || impl->Endpoint().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint \"", impl->Endpoint(), "\" must be a file name, not a path"));
  }
  impl->socket = impl->o.plugin_dir + "/" + impl->Endpoint();
  for (const std::string& path : {impl->socket, impl->KubeletSocket()}) {
    if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("socket path ", path, " is longer than ",
                                                     sizeof(sockaddr_un{}.sun_path) - 1,
                                                     " bytes, the most a unix socket takes"));
    }
  }
  return std::unique_ptr<DevicePlugin>(new DevicePlugin(std::move(impl)));
}

DevicePlugin::DevicePlugin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DevicePlugin::~DevicePlugin() {
  Stop();
  impl_->StopServing();
}

absl::Status DevicePlugin::Serve() {
  impl_->StopServing();
  return impl_->Serve();
}

void DevicePlugin::Run() {
  base::MutexLock lock(impl_->mu);
  while (!impl_->stopping) {
    lock.Unlock();
    impl_->Poll();
    lock.Lock();
    lock.WaitFor(impl_->cv, std::chrono::duration<double>(impl_->o.poll_s),
                 [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) { return impl_->stopping; });
  }
  lock.Unlock();
  const FileId mine = impl_->served;
  impl_->StopServing();
  if (mine.exists && Identify(impl_->socket) == mine) unlink(impl_->socket.c_str());
}

void DevicePlugin::Stop() {
  {
    base::MutexLock lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
}

void DevicePlugin::SetHealthy(int gpu, bool healthy) {
  {
    base::MutexLock lock(impl_->mu);
    if (gpu < 0 || static_cast<size_t>(gpu) >= impl_->healthy.size() ||
        impl_->healthy[gpu] == healthy) {
      return;
    }
    impl_->healthy[gpu] = healthy;
    ++impl_->health_version;
  }
  impl_->cv.notify_all();
}

std::string DevicePlugin::socket_path() const { return impl_->socket; }

PluginStats DevicePlugin::stats() const {
  base::MutexLock lock(impl_->mu);
  return impl_->stats;
}

}  // namespace seedance::deviceplugin
