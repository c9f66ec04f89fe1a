// The client commands (client_cmd.cc) end to end: the real `seedance` binary against a
// cpp-httplib stub server on 127.0.0.1 (a port the kernel picks) that plays the server's
// documented contract (docs/api.md) with the API's own decoders and an in-memory state.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/api/api.h"
#include "seedance/base/mutex.h"
#include "yaml-cpp/yaml.h"

extern char** environ;

namespace seedance::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;

// ------------------------------------------------------------------------- the stub server

class StubServer {
 public:
  explicit StubServer(std::string token = "") : token_(std::move(token)) {
    Routes();
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~StubServer() {
    http_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }
  int mutations() const { return mutations_; }
  void set_page_size(int n) {
    base::MutexLock lock(mu_);
    page_size_ = n;
  }

 private:
  static void Reply(httplib::Response& res, int status, const Json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }
  static void Error(httplib::Response& res, const absl::Status& s) {
    res.status = api::HttpStatusFor(s);
    res.set_content(api::ErrorBody(s), "application/json");
  }

  static Json TaintsJson(const std::vector<core::Taint>& taints) {
    Json out = Json::array();
    for (const core::Taint& t : taints) {
      out.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
    }
    return out;
  }

  Json NodeJson(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Node& n = nodes_.at(name);
    Json j = {{"name", name},
              {"cpu_milli", n.spec.cpu_milli},
              {"memory_mib", n.spec.memory_mib},
              {"num_gpus", n.spec.num_gpus},
              {"gpu_model", n.spec.gpu_model},
              {"cost_usd_per_hour", n.spec.cost_usd_per_hour},
              {"power_w", n.spec.power_w},
              {"labels", n.spec.labels},
              {"taints", TaintsJson(n.spec.taints)},
              {"topology", {{"numa_nodes", Json::array()}, {"gpus", Json::array()}}},
              {"cordoned", n.cordoned}};
    int pods = 0;
    int64_t gpu_milli = 0;
    for (const auto& [uid, p] : pods_) {
      if (p["node"] == name) {
        ++pods;
        gpu_milli += p["num_gpu"].get<int64_t>() * p["gpu_milli"].get<int64_t>();
      }
    }
    j["allocated"] = {{"cpu_milli", 0}, {"memory_mib", 0}, {"gpu_milli", gpu_milli}};
    j["num_pods"] = pods;
    return j;
  }

  void Routes() {
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      ++requests_;
      if (req.method != "GET") ++mutations_;
      if (!token_.empty() && req.method != "GET" &&
          req.get_header_value("Authorization") != "Bearer " + token_) {
        Error(res, absl::UnauthenticatedError("a valid bearer token is required"));
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    const std::string node = R"(/v1/nodes/([A-Za-z0-9][A-Za-z0-9._-]{0,252}))";
    const std::string pod = R"(/v1/pods/([0-9a-f-]{1,64}))";
    http_.Put(node, [this](const httplib::Request& req, httplib::Response& res) {
      base::MutexLock lock(mu_);
      absl::StatusOr<api::NodeRequest> n = api::DecodeNodeRequest(req.matches[1].str(), req.body);
      if (!n.ok()) return Error(res, n.status());
      const bool created = !nodes_.contains(n->spec.name);
      nodes_[n->spec.name] = Node{n->spec, n->cordoned};
      order_.push_back(n->spec.name);
      Reply(res, created ? 201 : 200, NodeJson(n->spec.name));
    });
    http_.Get("/v1/nodes", [this](const httplib::Request&, httplib::Response& res) {
      base::MutexLock lock(mu_);
      Json items = Json::array();
      for (const auto& [name, n] : nodes_) items.push_back(NodeJson(name));
      Reply(res, 200, {{"items", items}, {"revision", 1}});
    });
    http_.Post(
        node + "/(cordon|uncordon)", [this](const httplib::Request& req, httplib::Response& res) {
          base::MutexLock lock(mu_);
          auto it = nodes_.find(req.matches[1].str());
          if (it == nodes_.end()) {
            return Error(res, absl::NotFoundError("node '" + req.matches[1].str() + "' not found"));
          }
          it->second.cordoned = req.matches[2] == "cordon";
          Reply(res, 200, NodeJson(it->first));
        });
    http_.Post("/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      base::MutexLock lock(mu_);
      absl::StatusOr<api::PodRequest> p = api::ParsePodRequest(req.body);
      if (!p.ok()) return Error(res, p.status());
      if (p->name == "explode") return Error(res, absl::InternalError("the stub fell over"));
      for (const auto& [uid, existing] : pods_) {
        if (existing["name"] == p->name && existing["namespace"] == p->ns) {
          return Error(
              res, absl::AlreadyExistsError("pod " + p->ns + "/" + p->name + " already exists"));
        }
      }
      char uid[64];
      std::snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012d", ++next_uid_);
      Json j = api::PodRequestToJson(*p);
      j["uid"] = uid;
      j["phase"] = "Pending";
      j["node"] = nullptr;
      j["gpus"] = Json::array();
      j["revision"] = next_uid_;
      // Binds to the first node with enough GPUs that is not cordoned (no accounting).
      for (const auto& [name, n] : nodes_) {
        if (!n.cordoned && n.spec.num_gpus >= p->num_gpu) {
          j["phase"] = "Bound";
          j["node"] = name;
          for (int g = 0; g < p->num_gpu; ++g)
            j["gpus"].push_back({{"index", g}, {"milli", p->gpu_milli}});
          break;
        }
      }
      pods_[uid] = j;
      Reply(res, 201, j);
    });
    http_.Get("/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      base::MutexLock lock(mu_);
      const std::string after = req.get_param_value("continue");
      const std::string phase = req.get_param_value("phase");
      Json items = Json::array();
      Json next = nullptr;
      for (const auto& [uid, p] : pods_) {
        if (!after.empty() && uid <= after) continue;
        if (!phase.empty() && p["phase"] != phase) continue;
        if (static_cast<int>(items.size()) == page_size_) {
          next = items.back()["uid"];
          break;
        }
        items.push_back(p);
      }
      Reply(res, 200, {{"items", items}, {"revision", next_uid_}, {"continue", next}});
    });
    http_.Get(pod, [this](const httplib::Request& req, httplib::Response& res) {
      base::MutexLock lock(mu_);
      auto it = pods_.find(req.matches[1].str());
      if (it == pods_.end()) return Error(res, absl::NotFoundError("pod not found"));
      Reply(res, 200, it->second);
    });
    http_.Delete(pod, [this](const httplib::Request& req, httplib::Response& res) {
      base::MutexLock lock(mu_);
      if (pods_.erase(req.matches[1].str()) == 0) {
        return Error(res, absl::NotFoundError("pod not found"));
      }
      Reply(res, 200, {{"uid", req.matches[1].str()}, {"deleted", true}});
    });
    http_.Get(pod + "/explain", [this](const httplib::Request& req, httplib::Response& res) {
      base::MutexLock lock(mu_);
      auto it = pods_.find(req.matches[1].str());
      if (it == pods_.end()) return Error(res, absl::NotFoundError("pod not found"));
      Json j = {{"uid", it->first}, {"phase", it->second["phase"]}};
      if (it->second["phase"] != "Pending") {
        j["node"] = it->second["node"];
        j["message"] = "bound";
      } else {
        const int total = static_cast<int>(nodes_.size());
        j["nodes_total"] = total;
        j["nodes_fit"] = 0;
        j["reasons"] = {{"too few GPUs", total}};
        j["message"] =
            "0/" + std::to_string(total) + " nodes fit: " + std::to_string(total) + " too few GPUs";
        j["last_attempt"] = nullptr;
      }
      Reply(res, 200, j);
    });
  }

  struct Node {
    core::NodeSpec spec;
    bool cordoned = false;
  };

  std::string token_;
  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
  base::Mutex mu_;
  std::map<std::string, Node> nodes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Json> pods_ ABSL_GUARDED_BY(mu_);
  int next_uid_ ABSL_GUARDED_BY(mu_) = 0;
  int page_size_ ABSL_GUARDED_BY(mu_) = 500;
  std::atomic<int> requests_{0};
  std::atomic<int> mutations_{0};
};

// ------------------------------------------------------------------------ running the CLI

struct Outcome {
  int rc = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ClientCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/seedance_client_cmd_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // Runs `seedance ARGS` with stdin from `stdin_text`, SEEDANCE_* unset unless in `env`.
  Outcome Seedance(const std::vector<std::string>& args, const std::string& stdin_text = "",
                   const std::vector<std::string>& env = {}) {
    const std::string in = Write("stdin", stdin_text);
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<std::string> argv_s = {SEEDANCE_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("SEEDANCE_", 0) != 0) env_s.push_back(*e);
    }
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (std::string& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    Outcome r;
    if (posix_spawn(&pid, SEEDANCE_BIN, &actions, nullptr, argv.data(), envp.data()) != 0) {
      ADD_FAILURE() << "cannot start " << SEEDANCE_BIN;
      return r;
    }
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    waitpid(pid, &status, 0);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  std::string dir_;
};

constexpr char kClusterYaml[] = R"(kind: Node
name: gpu-1
cpu_milli: 64000
memory_mib: 262144
num_gpus: 8
gpu_model: A100
labels: {zone: a}
---
kind: Node
name: cpu-1
spec:
  numa_nodes:
    - {id: 0, cpu_milli: 8000, memory_mib: 1024}
---
kind: Pod
name: train-1
num_gpu: 2
---
kind: Pod
spec: {name: share-1, num_gpu: 1, gpu_milli: 250}
)";

TEST_F(ClientCommandTest, ApplyThenGetThenDelete) {
  StubServer stub;
  const std::string file = Write("cluster.yaml", kClusterYaml);
  Outcome r = Seedance({"apply", "-f", file, "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("node/gpu-1 applied"));
  EXPECT_THAT(r.out, HasSubstr("node/cpu-1 applied"));
  EXPECT_THAT(r.out, HasSubstr("pod/train-1 created: uid 00000000-0000-4000-8000-000000000001, "
                               "Bound on gpu-1 (GPUs 0:1000,1:1000)"));
  EXPECT_THAT(r.out, HasSubstr("pod/share-1 created: uid 00000000-0000-4000-8000-000000000002, "
                               "Bound on gpu-1 (GPUs 0:250)"));
  EXPECT_EQ(stub.mutations(), 4);

  r = Seedance({"get", "nodes", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("NAME"));
  EXPECT_THAT(r.out, HasSubstr("gpu-1"));
  EXPECT_THAT(r.out, HasSubstr("A100"));

  r = Seedance({"get", "nodes", "-o", "wide"}, "", {"SEEDANCE_SERVER=" + stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("zone=a"));

  r = Seedance({"get", "pods", "-o", "json", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json pods = Json::parse(r.out);
  EXPECT_EQ(pods.begin().key(), "schema_version");
  EXPECT_EQ(pods["schema_version"], "get-pods/v1");
  ASSERT_EQ(pods["items"].size(), 2u);

  const std::string uid = "00000000-0000-4000-8000-000000000002";
  r = Seedance({"get", "pod", uid, "-o", "yaml", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const YAML::Node pod = YAML::Load(r.out);
  EXPECT_EQ(pod["name"].as<std::string>(), "share-1");
  EXPECT_EQ(pod["gpu_milli"].as<int>(), 250);
  EXPECT_EQ(pod["uid"].as<std::string>(), uid);

  r = Seedance({"delete", "pod", uid, "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "pod " + uid + " deleted\n");
  r = Seedance({"get", "pod", uid, "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("NotFound, HTTP 404"));
}

// A node whose state cannot be read carries Kubernetes' unreachable taint (the node controller's,
// or the Slurm backend's): get nodes shows it Unknown, as kubectl shows a node not Ready.
TEST_F(ClientCommandTest, AnUnreachableNodeIsUnknown) {
  StubServer stub;
  ASSERT_EQ(Seedance({"apply", "-f", "-", "--server", stub.url()},
                     R"([{"kind": "Node", "name": "n1", "cpu_milli": 1000, "memory_mib": 1000},
                         {"kind": "Node", "name": "n2", "cpu_milli": 1000, "memory_mib": 1000,
                          "taints": [{"key": "node.kubernetes.io/unreachable",
                                      "effect": "NoSchedule"}]}])")
                .rc,
            0);
  Outcome r = Seedance({"get", "nodes", "--server", stub.url()});
  auto row = [&](const std::string& name) {
    const size_t at = r.out.find("\n" + name + " ");
    return at == std::string::npos ? std::string()
                                   : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_THAT(row("n1"), HasSubstr(" Ready ")) << r.out;
  EXPECT_THAT(row("n2"), HasSubstr(" Unknown ")) << r.out;
  ASSERT_EQ(Seedance({"cordon", "n2", "--server", stub.url()}).rc, 0);
  r = Seedance({"get", "nodes", "--server", stub.url()});
  EXPECT_THAT(row("n2"), HasSubstr(" Unknown,SchedulingDisabled ")) << r.out;
}

TEST_F(ClientCommandTest, CordonExplainAndPagination) {
  StubServer stub;
  stub.set_page_size(1);
  ASSERT_EQ(Seedance({"apply", "-f", "-", "--server", stub.url()},
                     R"({"kind": "Node", "name": "n1", "cpu_milli": 1000, "memory_mib": 1000})")
                .rc,
            0);
  Outcome r = Seedance({"cordon", "n1", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "node/n1 cordoned\n");
  r = Seedance({"get", "nodes", "--server", stub.url()});
  EXPECT_THAT(r.out, HasSubstr("Ready,SchedulingDisabled"));
  ASSERT_EQ(Seedance({"uncordon", "n1", "--server", stub.url()}).rc, 0);
  r = Seedance({"get", "nodes", "--server", stub.url()});
  EXPECT_THAT(r.out, Not(HasSubstr("SchedulingDisabled")));
  r = Seedance({"cordon", "nope", "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);

  // Three pods that fit nowhere (the node has no GPU), listed one per page.
  ASSERT_EQ(Seedance({"apply", "-f", "-", "--server", stub.url()},
                     R"([{"kind": "Pod", "name": "a", "num_gpu": 1},
                         {"kind": "Pod", "name": "b", "num_gpu": 1},
                         {"kind": "Pod", "name": "c", "num_gpu": 1}])")
                .rc,
            0);
  r = Seedance({"get", "pods", "--phase", "Pending", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* name : {" a ", " b ", " c "}) EXPECT_THAT(r.out, HasSubstr(name));

  r = Seedance({"explain", "00000000-0000-4000-8000-000000000001", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Pending"));
  EXPECT_THAT(r.out, HasSubstr("0/1 nodes fit: 1 too few GPUs"));
  r = Seedance(
      {"explain", "00000000-0000-4000-8000-000000000001", "-o", "json", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["nodes_fit"], 0);
}

TEST_F(ClientCommandTest, BadFilesAreRefusedBeforeAnythingIsSent) {
  StubServer stub;
  const std::string file = Write("bad.yaml",
                                 "kind: Pod\nname: a\n---\nkind: Pod\nname: b\n"
                                 "num_gpu: 1\ngpu_milli: 1500\n");
  Outcome r = Seedance({"apply", "-f", file, "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr(file + ":7: $[1].gpu_milli: must be an integer in 1..1000"));
  EXPECT_EQ(stub.requests(), 0);
  EXPECT_EQ(r.out, "");

  r = Seedance({"apply", "-f", dir_ + "/missing.yaml", "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);
  r = Seedance({"apply", "-f", file, "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  const std::string good = Write("good.yaml", "kind: Pod\nname: a\n");
  r = Seedance({"apply", "-f", good, "--dry-run"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "pod/a valid (dry run)\n");
  EXPECT_EQ(stub.requests(), 0);
}

TEST_F(ClientCommandTest, ServerErrorsMapToExitStatus) {
  StubServer stub;
  const std::string pod = Write("pod.yaml", "kind: Pod\nname: dup\n");
  ASSERT_EQ(Seedance({"apply", "-f", pod, "--server", stub.url()}).rc, 0);
  Outcome r = Seedance({"apply", "-f", pod, "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);  // 409
  EXPECT_THAT(r.err, HasSubstr(pod + ":1: pod/dup: POST " + stub.url() +
                               "/v1/pods: error from server (AlreadyExists, HTTP 409)"));

  const std::string boom = Write("boom.yaml", "kind: Pod\nname: explode\n");
  r = Seedance({"apply", "-f", boom, "--server", stub.url()});
  EXPECT_EQ(r.rc, 1);  // 500
  EXPECT_THAT(r.err, HasSubstr("HTTP 500"));

  std::string closed;  // a port that was just served, now closed
  {
    StubServer gone;
    closed = gone.url();
  }
  r = Seedance({"get", "nodes", "--server", closed, "--timeout", "20s"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot reach"));

  r = Seedance({"get", "pod", "../../etc", "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);
  r = Seedance({"get", "pods", "--phase", "Running", "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);
  r = Seedance({"get", "nodes", "--server", "http://alice:hunter2@127.0.0.1:1"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("<redacted>"));
  EXPECT_THAT(r.err, Not(HasSubstr("hunter2")));
}

TEST_F(ClientCommandTest, TokenIsSentAndNeverPrinted) {
  StubServer stub("hunter2-token");
  const std::string pod = Write("pod.yaml", "kind: Pod\nname: a\n");
  Outcome r = Seedance({"apply", "-f", pod, "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);  // 401
  EXPECT_THAT(r.err, HasSubstr("Unauthenticated, HTTP 401"));

  const std::string wrong = Write("wrong", "not-the-token\n");
  r = Seedance({"apply", "-f", pod, "--server", stub.url(), "--token-file", wrong});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err + r.out, Not(HasSubstr("not-the-token")));

  const std::string token = Write("token", "hunter2-token\n");
  r = Seedance({"apply", "-f", pod}, "",
               {"SEEDANCE_SERVER=" + stub.url(), "SEEDANCE_TOKEN_FILE=" + token});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.err + r.out, Not(HasSubstr("hunter2")));
}

TEST_F(ClientCommandTest, OutputFileAndFormats) {
  StubServer stub;
  ASSERT_EQ(Seedance({"apply", "-f", "-", "--server", stub.url()},
                     "kind: Node\nname: n1\ncpu_milli: 1\nmemory_mib: 1\n")
                .rc,
            0);
  const std::string out = dir_ + "/nodes.json";
  Outcome r = Seedance({"get", "nodes", "-o", out, "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Json::parse(Slurp(out))["items"][0]["name"], "n1");
  r = Seedance({"get", "nodes", "--format", "yaml", "--server", stub.url()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(YAML::Load(r.out)["items"][0]["name"].as<std::string>(), "n1");
  r = Seedance({"get", "nodes", "-o", "json", "--format", "yaml", "--server", stub.url()});
  EXPECT_EQ(r.rc, 2);
}

TEST_F(ClientCommandTest, HelpHasExamplesAndExitStatus) {
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{"get", "--help"},
                                             {"get", "pods", "--help"},
                                             {"apply", "--help"},
                                             {"delete", "pod", "--help"},
                                             {"explain", "--help"},
                                             {"cordon", "--help"},
                                             {"uncordon", "--help"}}) {
    Outcome r = Seedance(cmd);
    EXPECT_EQ(r.rc, 0) << cmd[0];
    EXPECT_THAT(r.out, HasSubstr("Examples:")) << cmd[0];
    EXPECT_THAT(r.out, HasSubstr("Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or "
                                 "input error."))
        << cmd[0];
  }
  Outcome r = Seedance({"get", "nodez"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'get nodes'"));
}

}  // namespace
}  // namespace seedance::cli
