// Load generator for the kube-scheduler extender of `seedance server` (BENCHMARKS.md,
// "Kubernetes extender"): N keep-alive clients send what kube-scheduler sends for each pod it
// schedules with a nodeCacheCapable extender, a filter and then a prioritize, each naming
// --names nodes (a seeded random subset of the server's nodes), and time every request.
// Closed loop. The pods are drawn from a fixed mix of whole, fractional, HAMi- and KAI-style
// requests; nothing is bound, so the cluster's state stays as the run found it.
//
//   extender_load --port 7070 --clients 32 --requests 50000 --names 100 [--nodes N] [--json]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "httplib.h"
#include "load_stats.h"
#include "nlohmann/json.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Args {
  std::string host = "127.0.0.1";
  int port = 7070;
  int clients = 32;
  int requests = 20000;  // filter + prioritize each count as one
  int names = 100;
  bool json = false;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--host") {
      a->host = next();
    } else if (k == "--port") {
      a->port = std::atoi(next().c_str());
    } else if (k == "--clients") {
      a->clients = std::max(1, std::atoi(next().c_str()));
    } else if (k == "--requests") {
      a->requests = std::max(2, std::atoi(next().c_str()));
    } else if (k == "--names") {
      a->names = std::max(1, std::atoi(next().c_str()));
    } else if (k == "--json") {
      a->json = true;
    } else {
      std::fprintf(stderr, "extender_load: unknown flag %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

json Pod(int i) {
  static const json kLimits[] = {{{"nvidia.com/gpu", "1"}},
                                 {{"seedance.io/gpu-milli", "250"}},
                                 {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "30"}},
                                 {{"nvidia.com/gpu", "2"}},
                                 json::object()};
  const int kind = i % 5;
  json meta = {{"name", "bench-" + std::to_string(i)},
               {"namespace", "bench"},
               {"uid", "00000000-0000-4000-9000-" + std::to_string(100000000000 + i)}};
  if (kind == 4) meta["annotations"] = {{"gpu-fraction", "0.5"}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", meta},
          {"spec",
           {{"containers",
             {{{"name", "c"},
               {"resources",
                {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}, {"limits", kLimits[kind]}}}}}},
            {"schedulerName", "seedance"}}},
          {"status", {{"phase", "Pending"}}}};
}

using seedance::bench::Quantile;

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) return 2;
  httplib::Client probe(a.host, a.port);
  auto nodes = probe.Get("/v1/nodes");
  if (!nodes || nodes->status != 200) {
    std::fprintf(stderr, "extender_load: GET /v1/nodes failed\n");
    return 1;
  }
  std::vector<std::string> all;
  const json listed = json::parse(nodes->body, nullptr, false);
  if (listed.is_object() && listed.contains("items")) {
    for (const json& n : listed["items"]) all.push_back(n["name"]);
  }
  if (all.empty()) {
    std::fprintf(stderr, "extender_load: the server has no nodes (start it with --nodes)\n");
    return 1;
  }
  std::atomic<int> next{0}, failed{0};
  std::vector<std::vector<double>> lat(a.clients);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < a.clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client cli(a.host, a.port);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(60, 0);
      std::mt19937_64 rng(7000 + c);
      while (true) {
        const int i = next.fetch_add(2);
        if (i >= a.requests) return;
        std::vector<std::string> names = all;
        std::shuffle(names.begin(), names.end(), rng);
        names.resize(std::min<size_t>(names.size(), static_cast<size_t>(a.names)));
        const json body = {{"Pod", Pod(i / 2)}, {"NodeNames", names}, {"Nodes", nullptr}};
        const std::string text = body.dump();
        for (const char* verb : {"/k8s/extender/v1/filter", "/k8s/extender/v1/prioritize"}) {
          const auto t0 = Clock::now();
          auto r = cli.Post(verb, text, "application/json");
          const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
          if (!r || r->status != 200) {
            if (++failed <= 5) {
              std::fprintf(stderr, "extender_load: %s failed: %s\n", verb,
                           r ? (std::to_string(r->status) + " " + r->body.substr(0, 200)).c_str()
                             : httplib::to_string(r.error()).c_str());
            }
            continue;
          }
          lat[c].push_back(dt);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> every;
  for (auto& v : lat) every.insert(every.end(), v.begin(), v.end());
  const double p50 = Quantile(every, 0.50), p99 = Quantile(every, 0.99);
  const double rate = static_cast<double>(every.size()) / wall;
  if (a.json) {
    std::printf("{\"requests\":%zu,\"failed\":%d,\"wall_s\":%.3f,\"requests_per_s\":%.1f,"
                "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"clients\":%d,\"names\":%d}\n",
                every.size(), failed.load(), wall, rate, p50 * 1e3, p99 * 1e3, a.clients,
                a.names);
  } else {
    std::printf("%zu extender requests (filter + prioritize, %d node names) from %d clients in "
                "%.2f s: %.0f requests/s, p50 %.2f ms, p99 %.2f ms, %d failed\n",
                every.size(), a.names, a.clients, wall, rate, p50 * 1e3, p99 * 1e3,
                failed.load());
  }
  return failed > 0 ? 1 : 0;
}
