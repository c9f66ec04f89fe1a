// The node-local cache against a real object store: Debian's nginx on loopback (static GET with
// ranges, WebDAV PUT), started per test from a generated configuration in a temporary directory
// and stopped by its PID; and an in-process store that drips bytes, for the stall timeout.
// Skipped when /usr/sbin/nginx is absent unless SEEDANCE_REQUIRE_DATA=1.
#include "seedance/nodeagent/node_cache.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::nodeagent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNginx[] = "/usr/sbin/nginx";

std::string Sha256(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& data) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

// A listening socket on 127.0.0.1 with a kernel-chosen port.
int ListenLoopback(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(fd, 16) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

bool CanConnect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// Debian's nginx serving root/ on a free loopback port, with PUT into it.
class Nginx {
 public:
  // Starts it; "" on success, else why not.
  std::string Start(const std::string& dir) {
    dir_ = dir;
    fs::create_directories(dir + "/root");
    fs::create_directories(dir + "/tmp");
    for (int attempt = 0; attempt < 5; ++attempt) {
      int fd = ListenLoopback(&port_);  // a port nobody holds; closed for nginx to take it
      if (fd < 0) return "cannot bind a loopback port";
      ::close(fd);
      WriteConfig();
      pid_ = ::fork();
      if (pid_ == 0) {
        const std::string conf = dir_ + "/nginx.conf", err = dir_ + "/error.log";
        ::execl(kNginx, kNginx, "-p", dir_.c_str(), "-c", conf.c_str(), "-e", err.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
      }
      // Ready when it accepts connections; gone when it exits (a port taken meanwhile: retry).
      for (int i = 0; i < 1000; ++i) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        if (CanConnect(port_)) return "";
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      Stop();
    }
    return "nginx did not start: " + ReadAll(dir_ + "/error.log");
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  ~Nginx() { Stop(); }

  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string Root() const { return dir_ + "/root"; }
  std::string AccessLog() const { return ReadAll(dir_ + "/access.log"); }

 private:
  void WriteConfig() {
    std::ofstream c(dir_ + "/nginx.conf");
    // As root the workers would drop to nobody, who cannot read a 0700 temporary directory.
    if (::geteuid() == 0) c << "user root root;\n";
    c << "daemon off;\nworker_processes 1;\npid " << dir_ << "/nginx.pid;\n"
      << "error_log " << dir_ << "/error.log;\nevents { worker_connections 64; }\nhttp {\n"
      << "  log_format store '$request_method $uri $status \"$http_range\" $body_bytes_sent';\n"
      << "  access_log " << dir_ << "/access.log store;\n"
      << "  client_body_temp_path " << dir_ << "/tmp/body;\n"
      << "  proxy_temp_path " << dir_ << "/tmp/proxy;\n"
      << "  fastcgi_temp_path " << dir_ << "/tmp/fastcgi;\n"
      << "  uwsgi_temp_path " << dir_ << "/tmp/uwsgi;\n"
      << "  scgi_temp_path " << dir_ << "/tmp/scgi;\n"
      << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << dir_ << "/root;\n"
      << "    location / {\n      dav_methods PUT DELETE;\n      create_full_put_path on;\n"
      << "      client_max_body_size 0;\n    }\n"
      << "    location = /moved { return 302 /bucket/a; }\n"
      << "    location = /forbidden { return 403; }\n"
      << "    location = /broken { return 503; }\n  }\n}\n";
  }

  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A store that answers every GET with a 200 and a Content-Length, then sends one body byte
// every `interval` (0: never) until the client goes away.
class DripStore {
 public:
  explicit DripStore(std::chrono::milliseconds interval) : interval_(interval) {
    listen_fd_ = ListenLoopback(&port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~DripStore() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string req;
      char buf[1024];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      const std::string head =
          "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n";
      bool alive = ::send(c, head.data(), head.size(), MSG_NOSIGNAL) > 0;
      for (int i = 0; alive && !stop_ && i < 1000; ++i) {
        pollfd q{c, POLLRDHUP, 0};
        const int wait_ms = interval_.count() > 0 ? static_cast<int>(interval_.count()) : 20;
        if (::poll(&q, 1, wait_ms) > 0) break;  // the client hung up
        if (interval_.count() > 0) alive = ::send(c, "x", 1, MSG_NOSIGNAL) == 1;
      }
      ::close(c);
    }
  }

  std::chrono::milliseconds interval_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A store that serves GET /NAME with 4000 bytes of NAME's last character, in 10 chunks 5 ms
// apart, one thread per connection, and records the most connections it held at once.
class CountingStore {
 public:
  CountingStore() {
    listen_fd_ = ListenLoopback(&port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CountingStore() {
    stop_ = true;
    thread_.join();
    for (std::thread& t : workers_) t.join();
    ::close(listen_fd_);
  }
  static std::string Body(const std::string& name) { return std::string(4000, name.back()); }
  std::string Url(const std::string& name) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + name;
  }
  int max_open() const { return max_open_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) workers_.emplace_back([this, c] { Answer(c); });
    }
  }
  void Answer(int c) {
    const int now = ++open_;
    for (int seen = max_open_; now > seen && !max_open_.compare_exchange_weak(seen, now);) {
    }
    std::string req;
    char buf[1024];
    while (req.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
      if (n <= 0) break;
      req.append(buf, static_cast<size_t>(n));
    }
    const size_t sp = req.find(' '), sp2 = req.find(' ', sp + 1);
    const std::string body = Body(req.substr(sp + 1, sp2 - sp - 1));
    std::string out = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n\r\n";
    ::send(c, out.data(), out.size(), MSG_NOSIGNAL);
    for (size_t at = 0; at < body.size(); at += 400) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ::send(c, body.data() + at, 400, MSG_NOSIGNAL);
    }
    --open_;  // before the close: the client may start its next download once the body is in
    ::close(c);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0};
  std::atomic<int> max_open_{0};
  std::thread thread_;
  std::vector<std::thread> workers_;  // touched by the accept thread only, joined after it
};

struct DiskUse {
  int64_t bytes = 0;   // sum of file sizes
  int64_t blocks = 0;  // sum of st_blocks * 512, as du counts
};

DiskUse Usage(const std::string& dir) {
  DiskUse u;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    struct stat st;
    if (::stat(e.path().c_str(), &st) != 0) continue;
    u.bytes += st.st_size;
    u.blocks += static_cast<int64_t>(st.st_blocks) * 512;
  }
  return u;
}

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

class NodeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/seedance_node_cache_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    if (::access(kNginx, X_OK) != 0) {
      const char* req = std::getenv("SEEDANCE_REQUIRE_DATA");
      if (req != nullptr && std::string(req) == "1") {
        FAIL() << kNginx << " missing and SEEDANCE_REQUIRE_DATA=1 (tools/install_deps.sh)";
      }
      GTEST_SKIP() << kNginx << " not found: install Debian's nginx (tools/install_deps.sh)";
    }
    const std::string why = nginx_.Start(tmp_ + "/nginx");
    ASSERT_EQ(why, "");
  }
  void TearDown() override {
    nginx_.Stop();
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  // Puts `data` on the store as /bucket/NAME and describes it.
  RemoteObject Put(const std::string& name, const std::string& data, bool with_size = true) {
    WriteAll(nginx_.Root() + "/bucket/" + name, data);
    return RemoteObject{nginx_.Url("/bucket/" + name), Sha256(data),
                        with_size ? static_cast<int64_t>(data.size()) : -1};
  }

  std::unique_ptr<NodeCache> Open(int64_t budget, std::string policy = "lru") {
    NodeCacheOptions o;
    o.dir = CacheDir();
    o.budget_bytes = budget;
    o.policy = std::move(policy);
    o.stall_timeout_s = 2;
    absl::StatusOr<std::unique_ptr<NodeCache>> c = NodeCache::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  std::string CacheDir() const { return tmp_ + "/cache"; }
  std::string ObjectFile(const RemoteObject& o) const {
    return CacheDir() + "/objects/" + NodeCache::KeyOf(o);
  }
  std::string PartialFile(const RemoteObject& o) const {
    return CacheDir() + "/partial/" + NodeCache::KeyOf(o);
  }

  // What `du` would see in the cache directory never exceeds the budget.
  void ExpectWithinBudget(int64_t budget, const std::string& step) {
    const DiskUse u = Usage(CacheDir());
    EXPECT_LE(u.bytes, budget) << step;
    EXPECT_LE(u.blocks, budget) << step;
  }

  std::string tmp_;
  Nginx nginx_;
};

TEST_F(NodeCacheTest, FetchesVerifiesAndServesTheObject) {
  const std::string data = RandomBytes(10000, 1);
  const RemoteObject obj = Put("model/weights.bin", data);
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  absl::StatusOr<std::string> path = cache->Get(obj);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, ObjectFile(obj));
  EXPECT_EQ(ReadAll(*path), data);
  EXPECT_EQ(FilesIn(CacheDir() + "/partial"), 0u);
  const NodeCacheStats s = cache->stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.bytes_fetched, 10000);
  EXPECT_EQ(s.objects, 1);
  EXPECT_EQ(s.bytes_used, 12288);  // charged in 4 KiB allocation units, as du counts
  struct stat st;
  ASSERT_EQ(::stat(CacheDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(NodeCacheTest, SecondGetIsAHitWithoutARequest) {
  const std::string data = RandomBytes(5000, 2);
  const RemoteObject obj = Put("a.bin", data, /*with_size=*/false);
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->Get(obj).ok());
  absl::StatusOr<std::string> again = cache->Get(obj);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ReadAll(*again), data);
  const NodeCacheStats s = cache->stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.bytes_fetched, 5000);
  const std::string log = nginx_.AccessLog();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  // A file removed behind the cache's back is fetched again, not served as a dangling path.
  fs::remove(*again);
  absl::StatusOr<std::string> third = cache->Get(obj);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(ReadAll(*third), data);
  EXPECT_EQ(cache->stats().misses, 2);
  EXPECT_EQ(cache->stats().bytes_used, 8192);
}

TEST_F(NodeCacheTest, ChecksumMismatchIsDataLossAndLeavesNothing) {
  RemoteObject obj = Put("b.bin", RandomBytes(3000, 3));
  const std::string wrong = Sha256("something else");
  const std::string right = obj.sha256;
  obj.sha256 = wrong;
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  absl::StatusOr<std::string> path = cache->Get(obj);
  ASSERT_EQ(path.status().code(), absl::StatusCode::kDataLoss) << path.status();
  EXPECT_THAT(path.status().message(), HasSubstr("expected " + wrong + ", got " + right));
  EXPECT_EQ(FilesIn(CacheDir() + "/objects"), 0u);
  EXPECT_EQ(FilesIn(CacheDir() + "/partial"), 0u);
  EXPECT_EQ(cache->stats().checksum_failures, 1);
  EXPECT_EQ(cache->stats().bytes_used, 0);
}

TEST_F(NodeCacheTest, NotFoundNamesTheUrlButNoCredential) {
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  std::string url = nginx_.Url("/bucket/missing.bin");
  url.insert(url.find("127.0.0.1"), "alice:s3cr3t@");
  absl::StatusOr<std::string> path = cache->Get(RemoteObject{url, Sha256("x"), 1});
  ASSERT_EQ(path.status().code(), absl::StatusCode::kNotFound) << path.status();
  EXPECT_THAT(path.status().message(), HasSubstr("/bucket/missing.bin: HTTP 404"));
  EXPECT_THAT(path.status().message(), Not(HasSubstr("s3cr3t")));
  EXPECT_EQ(FilesIn(CacheDir() + "/partial"), 0u);
  EXPECT_EQ(cache->stats().fetch_failures, 1);
}

TEST_F(NodeCacheTest, HttpErrorsNameTheUrlAndTheStatus) {
  Put("a", "a redirect target");
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  struct Case {
    std::string path;
    absl::StatusCode code;
    std::string want;
  } cases[] = {
      {"/moved", absl::StatusCode::kFailedPrecondition, "/moved: HTTP 302 (redirects are not"},
      {"/forbidden", absl::StatusCode::kPermissionDenied, "/forbidden: HTTP 403"},
      {"/broken", absl::StatusCode::kUnavailable, "/broken: HTTP 503"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> p = cache->Get(RemoteObject{nginx_.Url(c.path), "", -1});
    EXPECT_EQ(p.status().code(), c.code) << p.status();
    EXPECT_THAT(p.status().message(), HasSubstr(c.want));
  }
  EXPECT_EQ(FilesIn(CacheDir() + "/partial"), 0u);
  EXPECT_EQ(FilesIn(CacheDir() + "/objects"), 0u);
  // Nothing listens on port 1.
  absl::StatusOr<std::string> p = cache->Get(RemoteObject{"http://127.0.0.1:1/x", "", -1});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnavailable) << p.status();
  EXPECT_EQ(cache->Get(RemoteObject{"ftp://h/x", "", -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NodeCacheTest, BudgetIsNeverExceededAndLruEvicts) {
  constexpr int64_t kBudget = 3 * 8192;
  std::vector<RemoteObject> objs;
  for (int i = 0; i < 5; ++i) {
    objs.push_back(Put("o" + std::to_string(i), RandomBytes(8192, 10 + i), /*with_size=*/i % 2));
  }
  std::unique_ptr<NodeCache> cache = Open(kBudget);
  ASSERT_NE(cache, nullptr);
  for (int i : {0, 1, 2, 3, 1, 4}) {  // 3 evicts 0; 1 is touched; 4 evicts 2, not 1
    ASSERT_TRUE(cache->Get(objs[i]).ok()) << i;
    ExpectWithinBudget(kBudget, "after object " + std::to_string(i));
  }
  EXPECT_FALSE(cache->LocalPath(objs[0]).ok());
  EXPECT_TRUE(cache->LocalPath(objs[1]).ok());
  EXPECT_FALSE(cache->LocalPath(objs[2]).ok());
  EXPECT_TRUE(cache->LocalPath(objs[3]).ok());
  EXPECT_TRUE(cache->LocalPath(objs[4]).ok());
  EXPECT_EQ(cache->stats().evictions, 2);
  EXPECT_EQ(cache->stats().bytes_used, kBudget);

  // Larger than the whole budget, with or without a declared size: refused, nothing written.
  for (bool with_size : {true, false}) {
    const RemoteObject big = Put("big", RandomBytes(kBudget + 1, 20), with_size);
    absl::StatusOr<std::string> p = cache->Get(big);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted) << p.status();
    ExpectWithinBudget(kBudget, "after the oversized object");
    EXPECT_EQ(FilesIn(CacheDir() + "/partial"), 0u);
  }
}

TEST_F(NodeCacheTest, PinnedObjectsAreNotEvictedUntilUnpinned) {
  constexpr int64_t kBudget = 2 * 4096;
  const RemoteObject a = Put("a", RandomBytes(4096, 30));
  const RemoteObject b = Put("b", RandomBytes(4096, 31));
  const RemoteObject c = Put("c", RandomBytes(4096, 32));
  std::unique_ptr<NodeCache> cache = Open(kBudget);
  ASSERT_NE(cache, nullptr);
  const std::vector<FetchResult> r = cache->Prewarm({a, b}, "ns/pod");
  ASSERT_EQ(r.size(), 2u);
  for (const FetchResult& f : r) {
    EXPECT_TRUE(f.status.ok()) << f.status;
    EXPECT_FALSE(f.hit);
    EXPECT_EQ(f.bytes_fetched, 4096);
    EXPECT_EQ(ReadAll(f.path).size(), 4096u);
  }
  EXPECT_EQ(cache->Get(c).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cache->Demote(a, nginx_.Url("/cold/a")).code(), absl::StatusCode::kFailedPrecondition);
  ExpectWithinBudget(kBudget, "with both pinned");
  cache->Unpin("ns/pod");
  ASSERT_TRUE(cache->Get(c).ok());
  ExpectWithinBudget(kBudget, "after unpinning");
  EXPECT_EQ(cache->stats().evictions, 1);
  // A second prewarm of a cached object is a hit.
  const std::vector<FetchResult> again = cache->Prewarm({c}, "ns/pod2");
  EXPECT_TRUE(again[0].hit);
  EXPECT_EQ(again[0].bytes_fetched, 0);
}

TEST_F(NodeCacheTest, PrewarmLargerThanTheBudgetFetchesNothing) {
  const RemoteObject a = Put("a", RandomBytes(4096, 40));
  const RemoteObject b = Put("b", RandomBytes(4096, 41));
  std::unique_ptr<NodeCache> cache = Open(4096);
  ASSERT_NE(cache, nullptr);
  const std::vector<FetchResult> r = cache->Prewarm({a, b}, "ns/pod");
  ASSERT_EQ(r.size(), 2u);
  for (const FetchResult& f : r) {
    EXPECT_EQ(f.status.code(), absl::StatusCode::kInvalidArgument) << f.status;
    EXPECT_THAT(f.status.message(), HasSubstr("more than the cache's budget"));
  }
  EXPECT_EQ(nginx_.AccessLog(), "");
  RemoteObject no_sha = a;
  no_sha.sha256.clear();
  EXPECT_EQ(cache->Prewarm({no_sha}, "ns/pod")[0].status.code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NodeCacheTest, PrewarmFetchesManyUnderConcurrencyAndBandwidthCaps) {
  std::vector<RemoteObject> objs;
  std::vector<std::string> data;
  for (int i = 0; i < 6; ++i) {
    data.push_back(RandomBytes(20000 + 1000 * i, 50 + i));
    objs.push_back(Put("m" + std::to_string(i), data.back(), i % 2));
  }
  objs.push_back(objs[0]);  // a duplicate shares the download
  NodeCacheOptions o;
  o.dir = CacheDir();
  o.budget_bytes = 1 << 20;
  o.max_concurrent = 2;
  o.max_bytes_per_s = 2 << 20;
  absl::StatusOr<std::unique_ptr<NodeCache>> cache = NodeCache::Open(o);
  ASSERT_TRUE(cache.ok()) << cache.status();
  const std::vector<FetchResult> r = (*cache)->Prewarm(objs, "ns/pod");
  ASSERT_EQ(r.size(), objs.size());
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(r[i].status.ok()) << i << ": " << r[i].status;
    EXPECT_EQ(ReadAll(r[i].path), data[i % 6]) << i;
  }
  EXPECT_EQ((*cache)->stats().bytes_fetched, 6 * 20000 + 1000 * 15);
  const std::string log = nginx_.AccessLog();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 6) << log;
}

TEST_F(NodeCacheTest, NoMoreDownloadsAtOnceThanMaxConcurrent) {
  CountingStore store;
  std::vector<RemoteObject> objs;
  for (char c = 'a'; c < 'i'; ++c) {
    const std::string name = std::string("obj-") + c;
    objs.push_back(RemoteObject{store.Url(name), Sha256(CountingStore::Body(name)), -1});
  }
  NodeCacheOptions o;
  o.dir = CacheDir();
  o.budget_bytes = 1 << 20;
  o.max_concurrent = 2;
  absl::StatusOr<std::unique_ptr<NodeCache>> cache = NodeCache::Open(o);
  ASSERT_TRUE(cache.ok()) << cache.status();
  // Two prewarms and a Get at once share the cap.
  std::vector<FetchResult> r1, r2;
  std::thread t1([&] { r1 = (*cache)->Prewarm({objs.begin(), objs.begin() + 4}, "p1"); });
  std::thread t2([&] { r2 = (*cache)->Prewarm({objs.begin() + 4, objs.end() - 1}, "p2"); });
  absl::StatusOr<std::string> last = (*cache)->Get(objs.back());
  t1.join();
  t2.join();
  ASSERT_TRUE(last.ok()) << last.status();
  for (const std::vector<FetchResult>* r : {&r1, &r2}) {
    for (const FetchResult& f : *r) EXPECT_TRUE(f.status.ok()) << f.status;
  }
  EXPECT_EQ((*cache)->stats().objects, 8);
  EXPECT_GE(store.max_open(), 1);
  EXPECT_LE(store.max_open(), 2);
}

TEST_F(NodeCacheTest, ResumesAPartialDownloadWithARangeRequest) {
  const std::string data = RandomBytes(20000, 60);
  const RemoteObject obj = Put("ckpt", data);
  WriteAll(PartialFile(obj), data.substr(0, 5000));  // left by a killed agent
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->LocalPath(obj).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<std::string> path = cache->Get(obj);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(ReadAll(*path), data);
  EXPECT_EQ(cache->stats().bytes_fetched, 15000);
  EXPECT_EQ(cache->stats().resumed, 1);
  EXPECT_THAT(nginx_.AccessLog(), HasSubstr("GET /bucket/ckpt 206 \"bytes=5000-\" 15000"));
  EXPECT_FALSE(fs::exists(PartialFile(obj)));
}

TEST_F(NodeCacheTest, AStoreThatIgnoresTheRangeIsReadFromByteZero) {
  CountingStore store;  // answers 200 with the whole body whatever the Range
  const RemoteObject obj{store.Url("obj-r"), Sha256(CountingStore::Body("obj-r")), -1};
  WriteAll(PartialFile(obj), std::string(1500, 'z'));  // not a prefix of the body
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  absl::StatusOr<std::string> path = cache->Get(obj);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(ReadAll(*path), CountingStore::Body("obj-r"));
  EXPECT_EQ(cache->stats().bytes_fetched, 4000);
  EXPECT_EQ(cache->stats().resumed, 0);
}

TEST_F(NodeCacheTest, APartialLongerThanTheObjectStartsAgain) {
  std::vector<std::string> data;
  std::vector<RemoteObject> objs;
  for (bool with_size : {true, false}) {
    data.push_back(RandomBytes(6000, with_size ? 70 : 71));
    objs.push_back(Put(with_size ? "s" : "u", data.back(), with_size));
    WriteAll(PartialFile(objs.back()), RandomBytes(9000, 72));
  }
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  for (size_t i = 0; i < objs.size(); ++i) {
    absl::StatusOr<std::string> path = cache->Get(objs[i]);
    ASSERT_TRUE(path.ok()) << path.status();
    EXPECT_EQ(ReadAll(*path), data[i]);
  }
  EXPECT_THAT(nginx_.AccessLog(), HasSubstr("GET /bucket/s 200 \"-\" 6000"));
  // The unsized one asked for bytes=9000- first and got 416.
  EXPECT_THAT(nginx_.AccessLog(), HasSubstr("GET /bucket/u 416 \"bytes=9000-\""));
  EXPECT_EQ(cache->stats().resumed, 0);
}

TEST_F(NodeCacheTest, ReopenKeepsVerifiedObjectsInAccessOrderAndDropsStrays) {
  const RemoteObject a = Put("a", RandomBytes(4096, 80));
  const RemoteObject b = Put("b", RandomBytes(4096, 81));
  const RemoteObject c = Put("c", RandomBytes(4096, 82));
  {
    std::unique_ptr<NodeCache> cache = Open(3 * 4096);
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(cache->Get(a).ok());
    ASSERT_TRUE(cache->Get(b).ok());
    ASSERT_TRUE(cache->Get(a).ok());  // b is now the least recently used
  }
  WriteAll(CacheDir() + "/objects/tmp.123", "stray");
  WriteAll(CacheDir() + "/partial/not-a-key", "stray");
  std::unique_ptr<NodeCache> cache = Open(2 * 4096);
  ASSERT_NE(cache, nullptr);
  EXPECT_TRUE(cache->LocalPath(a).ok());
  EXPECT_TRUE(cache->LocalPath(b).ok());
  EXPECT_FALSE(fs::exists(CacheDir() + "/objects/tmp.123"));
  EXPECT_FALSE(fs::exists(CacheDir() + "/partial/not-a-key"));
  EXPECT_EQ(cache->stats().objects, 2);
  ASSERT_TRUE(cache->Get(c).ok());
  EXPECT_TRUE(cache->LocalPath(a).ok());
  EXPECT_FALSE(cache->LocalPath(b).ok());
  ExpectWithinBudget(2 * 4096, "after reopening");
  cache.reset();
  cache = Open(4096);  // a smaller budget than last time: evicts down to it
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->stats().objects, 1);
  EXPECT_TRUE(cache->LocalPath(c).ok());
  ExpectWithinBudget(4096, "after reopening smaller");
}

TEST_F(NodeCacheTest, FifoAndLru2EvictInTheirOwnOrder) {
  std::vector<RemoteObject> objs;
  for (int i = 0; i < 4; ++i)
    objs.push_back(Put("f" + std::to_string(i), RandomBytes(4096, 90 + i)));
  // Access 0, 1, 0, 2, then 3 needs a slot: fifo drops 0 (the oldest download) although it was
  // used since; lru would drop 1.
  {
    std::unique_ptr<NodeCache> fifo = Open(3 * 4096, "fifo");
    ASSERT_NE(fifo, nullptr);
    for (int i : {0, 1, 0, 2, 3}) ASSERT_TRUE(fifo->Get(objs[i]).ok());
    EXPECT_FALSE(fifo->LocalPath(objs[0]).ok());
    EXPECT_TRUE(fifo->LocalPath(objs[1]).ok());
  }
  fs::remove_all(CacheDir());
  std::unique_ptr<NodeCache> lru2 = Open(3 * 4096, "LRU2");
  ASSERT_NE(lru2, nullptr);
  // 1 and 2 are seen twice, 0 once but most recently: LRU would evict 1, LRU-2 evicts 0.
  for (int i : {1, 2, 1, 2, 0, 3}) ASSERT_TRUE(lru2->Get(objs[i]).ok());
  EXPECT_FALSE(lru2->LocalPath(objs[0]).ok());
  EXPECT_TRUE(lru2->LocalPath(objs[1]).ok());
  EXPECT_TRUE(lru2->LocalPath(objs[2]).ok());
}

TEST_F(NodeCacheTest, ASlowStoreStallsAndKeepsThePartial) {
  std::unique_ptr<NodeCache> cache;
  NodeCacheOptions o;
  o.dir = CacheDir();
  o.budget_bytes = 1 << 20;
  o.stall_timeout_s = 0.5;
  o.min_bytes_per_s = 100;
  absl::StatusOr<std::unique_ptr<NodeCache>> c = NodeCache::Open(o);
  ASSERT_TRUE(c.ok()) << c.status();
  {
    DripStore drip(std::chrono::milliseconds(50));  // 20 bytes/s, below 100
    const RemoteObject obj{drip.Url("/slow"), Sha256("never"), -1};
    absl::StatusOr<std::string> path = (*c)->Get(obj);
    ASSERT_EQ(path.status().code(), absl::StatusCode::kDeadlineExceeded) << path.status();
    EXPECT_THAT(path.status().message(), HasSubstr("too slow"));
    EXPECT_EQ((*c)->LocalPath(obj).status().code(), absl::StatusCode::kNotFound);
    ASSERT_TRUE(fs::exists(PartialFile(obj)));
    EXPECT_GT(fs::file_size(PartialFile(obj)), 0u);
    EXPECT_LT(fs::file_size(PartialFile(obj)), 1000u);
    EXPECT_EQ(FilesIn(CacheDir() + "/objects"), 0u);
  }
  {
    DripStore silent(std::chrono::milliseconds(0));  // headers, then nothing
    const RemoteObject obj{silent.Url("/silent"), "", -1};
    absl::StatusOr<std::string> path = (*c)->Get(obj);
    ASSERT_EQ(path.status().code(), absl::StatusCode::kDeadlineExceeded) << path.status();
    EXPECT_THAT(path.status().message(), HasSubstr("stalled"));
  }
  EXPECT_EQ((*c)->stats().fetch_failures, 2);
}

TEST_F(NodeCacheTest, CancelStopsADownloadInFlightKeepsItsPartialAndStillServesHits) {
  const std::string data = RandomBytes(3000, 7);
  const RemoteObject hot = Put("hot", data);
  NodeCacheOptions o;
  o.dir = CacheDir();
  o.budget_bytes = 1 << 20;
  o.stall_timeout_s = 60;  // the drip below is slow but never "too slow": only Cancel ends it
  o.min_bytes_per_s = 1;
  absl::StatusOr<std::unique_ptr<NodeCache>> c = NodeCache::Open(o);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE((*c)->Get(hot).ok());
  DripStore drip(std::chrono::milliseconds(5));
  const RemoteObject slow{drip.Url("/slow"), Sha256("never"), -1};
  absl::Status got;
  std::thread fetch([&] { got = (*c)->Get(slow).status(); });
  for (int i = 0;
       i < 6000 && !(fs::exists(PartialFile(slow)) && fs::file_size(PartialFile(slow)) > 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling for the first bytes
  }
  ASSERT_GT(fs::file_size(PartialFile(slow)), 0u);
  (*c)->Cancel();
  fetch.join();
  EXPECT_EQ(got.code(), absl::StatusCode::kCancelled) << got;
  EXPECT_THAT(got.message(), HasSubstr("partial download is kept"));
  EXPECT_TRUE(fs::exists(PartialFile(slow)));
  EXPECT_EQ(FilesIn(CacheDir() + "/objects"), 1u);
  // Later fetches fail at once; what is local is still served.
  EXPECT_EQ((*c)->Get(Put("cold", RandomBytes(3000, 8))).status().code(),
            absl::StatusCode::kCancelled);
  absl::StatusOr<std::string> path = (*c)->Get(hot);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(ReadAll(*path), data);
}

TEST_F(NodeCacheTest, DemotePutsTheObjectToTheStoreAndDropsIt) {
  const std::string data = RandomBytes(7000, 100);
  const RemoteObject obj = Put("hot", data);
  std::unique_ptr<NodeCache> cache = Open(1 << 20);
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->Get(obj).ok());
  const absl::Status st = cache->Demote(obj, nginx_.Url("/cold/tier/hot"));
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(ReadAll(nginx_.Root() + "/cold/tier/hot"), data);
  EXPECT_EQ(cache->LocalPath(obj).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FilesIn(CacheDir() + "/objects"), 0u);
  EXPECT_EQ(cache->stats().bytes_used, 0);
  EXPECT_EQ(cache->Demote(obj, nginx_.Url("/cold/again")).code(), absl::StatusCode::kNotFound);
}

TEST(NodeCacheOpenTest, RefusesBadOptions) {
  NodeCacheOptions o;
  o.dir = "/tmp/seedance_node_cache_unused";
  o.budget_bytes = 0;
  EXPECT_EQ(NodeCache::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.budget_bytes = 1;
  o.policy = "arc";
  absl::Status s = NodeCache::Open(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("lru, fifo, lru2"));
  o.policy = "lru";
  o.max_concurrent = 0;
  EXPECT_EQ(NodeCache::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParsePrewarmListTest, ReadsObjects) {
  const std::string sha(64, 'A');
  absl::StatusOr<std::vector<RemoteObject>> l =
      ParsePrewarmList(R"([{"url": "http://s3.local/b/k", "sha256": ")" + sha +
                       R"(", "size": 12}, {"url": "HTTPS://h/x", "sha256": ")" + sha + R"("}])");
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0].url, "http://s3.local/b/k");
  EXPECT_EQ((*l)[0].sha256, std::string(64, 'a'));
  EXPECT_EQ((*l)[0].size, 12);
  EXPECT_EQ((*l)[1].size, -1);
  EXPECT_TRUE(ParsePrewarmList("[]").ok());
}

TEST(ParsePrewarmListTest, ErrorsNameTheJsonPath) {
  const std::string sha(64, 'f');
  const std::string ok = R"({"url": "http://h/a", "sha256": ")" + sha + R"("})";
  std::string many = "[";
  for (size_t i = 0; i <= kMaxPrewarmObjects; ++i) many += (i ? "," : "") + ok;
  many += "]";
  struct Case {
    std::string name, input, want;
  } cases[] = {
      {"not json", "[{", "seedance.io/prewarm:1: not JSON"},
      {"not an array", "{}", "$: must be an array"},
      {"element not an object", "[" + ok + ", 3]", "$[1]: must be an object"},
      {"missing url", R"([{"sha256": ")" + sha + R"("}])",
       "$[0].url: missing required key \"url\""},
      {"bad sha", "[" + ok + R"(, {"url": "http://h/b", "sha256": "abc"}])",
       "$[1].sha256: must be 64 hex digits (got \"abc\")"},
      {"non-hex sha", R"([{"url": "http://h/b", "sha256": ")" + std::string(64, 'g') + R"("}])",
       "$[0].sha256: must be 64 hex digits"},
      {"ftp url", R"([{"url": "ftp://h/b", "sha256": ")" + sha + R"("}])",
       "$[0].url: must start with http:// or https://"},
      {"space in url", R"([{"url": "http://h/a b", "sha256": ")" + sha + R"("}])",
       "$[0].url: must not hold spaces"},
      {"negative size", R"([{"url": "http://h/b", "sha256": ")" + sha + R"(", "size": -5}])",
       "$[0].size: must be an integer in 0..9007199254740992 (got -5)"},
      {"unknown key", R"([{"url": "http://h/b", "sha256": ")" + sha + R"(", "szie": 1}])",
       "$[0].szie: unknown key \"szie\"; did you mean \"size\"?"},
      {"long url",
       R"([{"url": "http://h/)" + std::string(3000, 'a') + R"(", "sha256": ")" + sha + R"("}])",
       "$[0].url: must be at most 2048 bytes"},
      {"too many", many, "$: must hold at most 4096 objects (got 4097)"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<RemoteObject>> l = ParsePrewarmList(c.input);
    ASSERT_FALSE(l.ok()) << c.name;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(l.status().message(), HasSubstr(c.want)) << c.name;
  }
}

}  // namespace
}  // namespace seedance::nodeagent
