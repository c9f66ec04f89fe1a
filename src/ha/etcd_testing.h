// A real etcd (Debian etcd-server) for tests: one member on free loopback ports with its data
// under a temporary directory, waited for by polling /health, stopped by its PID. Skips (or,
// with SEEDANCE_REQUIRE_DATA=1, fails) when /usr/bin/etcd is not installed.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "httplib.h"

extern char** environ;

namespace seedance::ha::testing {

inline constexpr const char* kEtcd = "/usr/bin/etcd";

inline bool DaemonRequired() {
  const char* v = std::getenv("SEEDANCE_REQUIRE_DATA");
  return v && std::string(v) == "1";
}

// A TCP port on 127.0.0.1 that was free a moment ago.
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

class EtcdServer {
 public:
  ~EtcdServer() { Stop(); }
  // Starts etcd and waits (at most 30 s) until it reports healthy; false if it does not.
  bool Start() {
    dir_ = (std::filesystem::temp_directory_path() /
            ("seedance-etcd-" + std::to_string(::getpid()) + "-" + std::to_string(FreePort())))
               .string();
    std::filesystem::create_directories(dir_);
    port_ = FreePort();
    const int peer = FreePort();
    const std::string client = "http://127.0.0.1:" + std::to_string(port_);
    const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
    std::vector<std::string> args = {kEtcd,
                                     "--name",
                                     "t",
                                     "--data-dir",
                                     dir_ + "/data",
                                     "--listen-client-urls",
                                     client,
                                     "--advertise-client-urls",
                                     client,
                                     "--listen-peer-urls",
                                     peer_url,
                                     "--initial-advertise-peer-urls",
                                     peer_url,
                                     "--initial-cluster",
                                     "t=" + peer_url,
                                     "--logger",
                                     "zap",
                                     "--log-outputs",
                                     dir_ + "/etcd.log"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, kEtcd, nullptr, nullptr, argv.data(), environ) != 0) return false;
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(0, 200000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (httplib::Result r = c.Get("/health");
          r && r->status == 200 && r->body.find("true") != std::string::npos) {
        return true;
      }
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }
  std::string url() const { return "etcd://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace seedance::ha::testing
