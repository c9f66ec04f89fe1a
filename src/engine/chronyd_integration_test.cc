// Integration test: a real chronyd (Debian `chrony`) serves NTP on a loopback port from a
// temporary configuration, never touching the system clock (-x), and the SNTP client queries it.
// Skips when chronyd is not installed, unless SEEDANCE_REQUIRE_DATA=1.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "seedance/engine/clock_sync.h"
#include "seedance/engine/sntp.h"
#include "seedance/trace/csv_reader.h"

extern char** environ;

namespace seedance::engine {
namespace {

namespace fs = std::filesystem;

constexpr const char* kChronyd = "/usr/sbin/chronyd";

// A UDP port on 127.0.0.1 that was free a moment ago.
uint16_t FreeUdpPort() {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// chronyd in the foreground (-d) with its own config in a temp dir. The destructor always stops it
// (SIGTERM, then SIGKILL) and removes the directory, so a failing assertion leaves nothing behind.
class Chronyd {
 public:
  Chronyd() {
    char tmpl[] = "/tmp/seedance-chronyd-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~Chronyd() { Stop(); }
  Chronyd(const Chronyd&) = delete;
  Chronyd& operator=(const Chronyd&) = delete;

  // Starts chronyd serving on `port`; false if it could not be spawned.
  bool Start(uint16_t port) {
    if (dir_.empty()) return false;
    port_ = port;
    const std::string conf = dir_ + "/chrony.conf";
    {
      std::ofstream f(conf);
      f << "port " << port << "\n"
        << "bindaddress 127.0.0.1\n"
        << "allow 127.0.0.1\n"
        << "local stratum 8\n"
        << "cmdport 0\n"
        << "pidfile " << dir_ << "/chronyd.pid\n"
        << "driftfile " << dir_ << "/chrony.drift\n";
    }
    const std::string log = dir_ + "/chronyd.log";
    // -x: never control the system clock. -d: foreground, log to stderr. As root, -u root keeps
    // it from dropping to the _chrony user (who could not read the temp dir); as another user,
    // -U skips chronyd's root check (a port above 1024 needs no privilege). -t bounds its life
    // even if this process dies without running the destructor.
    std::vector<std::string> args = {kChronyd, "-x", "-d", "-f", conf, "-t", "120"};
    if (geteuid() == 0) {
      args.insert(args.end(), {"-u", "root"});
    } else {
      args.push_back("-U");
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    const int rc = posix_spawn(&pid_, kChronyd, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
    return pid_ > 0;
  }

  // True while the process has not exited.
  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }

  std::string Log() const {
    std::ifstream f(dir_ + "/chronyd.log");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 50; ++i) {  // up to 5 s for a clean exit
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
      }
    }
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      dir_.clear();
    }
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

TEST(ChronydIntegrationTest, SntpClientQueriesALocalChronyd) {
  if (access(kChronyd, X_OK) != 0) {
    if (trace::DataRequired()) {
      FAIL() << kChronyd << " not found (apt-get install chrony); SEEDANCE_REQUIRE_DATA=1";
    }
    GTEST_SKIP() << kChronyd << " not installed (apt-get install chrony)";
  }
  // The port may be taken between probing and chronyd binding it: try a few.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const uint16_t port = FreeUdpPort();
    ASSERT_NE(port, 0);
    Chronyd chronyd;
    ASSERT_TRUE(chronyd.Start(port)) << "could not spawn " << kChronyd;

    // Wait (bounded) until it answers; the first replies may come before it serves.
    SntpClient client({"127.0.0.1", port, 200});
    absl::StatusOr<SntpResult> result = absl::UnavailableError("not queried");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline && chronyd.Running()) {
      result = client.Query();
      if (result.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!result.ok() && !chronyd.Running() && attempt < 2) continue;  // lost the port race
    ASSERT_TRUE(result.ok()) << result.status() << "\nchronyd log:\n" << chronyd.Log();

    // Same machine, same clock: the offset is only the path asymmetry, which NTP's error bound
    // caps at half the round trip (t1 <= t2 <= t3 <= t4 on one clock), whatever the load. Slack
    // of 100 us for how chronyd takes its timestamps (its receive and transmit stamps were seen
    // up to 8 us outside the client's, making the round trip slightly negative). A fixed bound
    // (it was 1 ms) failed under load.
    constexpr double kStampSlack = 1e-4;
    EXPECT_LE(std::fabs(result->sample.offset_s), result->sample.delay_s / 2 + kStampSlack)
        << "offset " << result->sample.offset_s << ", delay " << result->sample.delay_s;
    EXPECT_GE(result->sample.delay_s, -kStampSlack);
    EXPECT_LT(result->sample.delay_s, 0.1);
    EXPECT_EQ(result->reply.mode, kNtpModeServer);
    EXPECT_EQ(result->reply.stratum, 8);  // `local stratum 8`
    EXPECT_NE(result->reply.leap, 3);
    EXPECT_TRUE(result->reply.version == 4 || result->reply.version == 3);

    // A few more samples through the estimator: offset and frequency stay near zero.
    auto est = NewRegressionEstimator();
    est->AddSample(result->sample);
    double max_delay = result->sample.delay_s;
    for (int i = 0; i < 4; ++i) {
      auto more = client.Query();
      ASSERT_TRUE(more.ok()) << more.status();
      EXPECT_LE(std::fabs(more->sample.offset_s), more->sample.delay_s / 2 + kStampSlack);
      max_delay = std::max(max_delay, more->sample.delay_s);
      est->AddSample(more->sample);
    }
    // A (weighted) line through samples each within half their round trip of zero, read at an
    // end of the samples: within 1 ms on a quiet machine, and within twice the largest round
    // trip when load has stretched it.
    EXPECT_LE(std::fabs(est->OffsetAt(result->sample.local_time_s)), std::max(1e-3, 2 * max_delay));
    chronyd.Stop();
    return;
  }
  FAIL() << "chronyd did not come up on any of 3 ports";
}

}  // namespace
}  // namespace seedance::engine
