// The peer of the client tests (client_test.cc, async_client_test.cc): a cpp-httplib server on
// 127.0.0.1 (a port the kernel picks), and a temporary file.
#ifndef SEEDANCE_API_STUB_SERVER_TESTING_H_
#define SEEDANCE_API_STUB_SERVER_TESTING_H_

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "httplib.h"
#include "seedance/base/mutex.h"

namespace seedance::api {

class StubServer {
 public:
  // `nodelay`: replies go out at once (TCP_NODELAY, set on the listening socket before it binds,
  // which accepted sockets inherit); without it, a client making many calls on one connection
  // waits out delayed ACKs.
  explicit StubServer(bool nodelay = false) {
    server_.set_tcp_nodelay(nodelay);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib 0.11 has no wait_until_ready(); stop() is a no-op until listen() runs.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~StubServer() {
    Release();
    server_.stop();
    thread_.join();
  }
  httplib::Server& http() { return server_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Handlers that wait for Release() (the deadline test).
  void WaitForRelease() {
    base::MutexLock lock(mu_);
    lock.Wait(cv_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return released_; });
  }
  void Release() {
    {
      base::MutexLock lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  base::Mutex mu_;
  std::condition_variable cv_;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

inline std::string TempFile(const std::string& contents) {
  char path[] = "/tmp/seedance_client_test_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
  close(fd);
  return path;
}

}  // namespace seedance::api

#endif  // SEEDANCE_API_STUB_SERVER_TESTING_H_
