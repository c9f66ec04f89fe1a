// The kubelet's Registration service, played for the device plugin's tests and load tool (no
// kubelet can run on the machines Seedance is developed on). It serves
// /v1beta1.Registration/Register on a unix socket, as the kubelet does on kubelet.sock in its
// device-plugin folder (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto; the device
// manager in pkg/kubelet/cm/devicemanager at v1.29), accepts every request and keeps them.
#ifndef SEEDANCE_DEVICEPLUGIN_FAKE_KUBELET_TESTING_H_
#define SEEDANCE_DEVICEPLUGIN_FAKE_KUBELET_TESTING_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "seedance/base/mutex.h"

namespace seedance::deviceplugin::testing {

class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  explicit FakeKubelet(std::string socket) : socket_(std::move(socket)) {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~FakeKubelet() override { Shutdown(); }
  // The kubelet goes away (its socket file stays until someone deletes it, as after a crash).
  void Shutdown() {
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
  }
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    base::MutexLock lock(mu_);
    requests_.push_back(*req);
    cv_.notify_all();
    return grpc::Status::OK;
  }
  // Waits up to `patience` for the n-th registration (1-based) and copies it to `out` (may be
  // null); false if it did not come.
  bool WaitForRegistration(size_t n, std::chrono::seconds patience,
                           v1beta1::RegisterRequest* out = nullptr) {
    base::MutexLock lock(mu_);
    if (!lock.WaitFor(cv_, patience,
                      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return requests_.size() >= n; })) {
      return false;
    }
    if (out != nullptr) *out = requests_[n - 1];
    return true;
  }

 private:
  std::string socket_;
  std::unique_ptr<grpc::Server> server_;
  base::Mutex mu_;
  std::condition_variable cv_;
  std::vector<v1beta1::RegisterRequest> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace seedance::deviceplugin::testing

#endif  // SEEDANCE_DEVICEPLUGIN_FAKE_KUBELET_TESTING_H_
