// Load generator for `seedance server` (BENCHMARKS.md, "Live scheduler"): N keep-alive client
// threads POST pods drawn from a pod CSV (or a fixed mix) and time each submit -> reply. The
// server replies once the pod's binding is durable, so a reply with phase Bound is submit ->
// bound. Closed loop (each client sends its next pod when the last is answered) unless --rate
// paces the whole run at an offered rate (open loop: latency counts from the scheduled send time,
// so a slow server cannot hide its queueing).
//
//   server_load --port 7070 --clients 32 --pods 50000 [--pod-csv openb_pod_list_default.csv]
//               [--rate 1000] [--keep N] [--token-file F] [--json]
//
// --keep N: churn. Each client keeps its N newest bound pods and deletes the oldest one (DELETE,
// also durable) before each new submission once it holds N, so the cluster never fills and
// submit -> bound can be sustained for as long as the run lasts (as jobs finishing would).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "httplib.h"
#include "load_stats.h"
#include "nlohmann/json.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string host = "127.0.0.1";
  int port = 7070;
  int clients = 32;
  int pods = 20000;
  double rate = 0;  // 0: closed loop
  int keep = 0;     // 0: no deletes
  std::string pod_csv;
  std::string token;
  bool json = false;
  std::string prefix = "load";
};

struct Shape {
  int64_t cpu, mem;
  int gpus, milli;
};

std::vector<Shape> ReadShapes(const std::string& path) {
  std::vector<Shape> out;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header: name,cpu_milli,memory_mib,num_gpu,gpu_milli,...
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string f[5];
    for (auto& x : f) std::getline(ss, x, ',');
    const int gpus = std::atoi(f[3].c_str());
    out.push_back({std::atoll(f[1].c_str()), std::atoll(f[2].c_str()), gpus,
                   gpus > 0 ? std::atoi(f[4].c_str()) : 0});
  }
  return out;
}

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--host")
      a->host = next();
    else if (k == "--port")
      a->port = std::atoi(next().c_str());
    else if (k == "--clients")
      a->clients = std::max(1, std::atoi(next().c_str()));
    else if (k == "--pods")
      a->pods = std::max(1, std::atoi(next().c_str()));
    else if (k == "--rate")
      a->rate = std::atof(next().c_str());
    else if (k == "--keep")
      a->keep = std::max(0, std::atoi(next().c_str()));
    else if (k == "--pod-csv")
      a->pod_csv = next();
    else if (k == "--prefix")
      a->prefix = next();
    else if (k == "--token-file") {
      std::ifstream t(next());
      std::getline(t, a->token);
    } else if (k == "--json")
      a->json = true;
    else {
      std::fprintf(stderr, "server_load: unknown flag %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

using seedance::bench::Quantile;

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) return 2;
  std::vector<Shape> shapes = a.pod_csv.empty() ? std::vector<Shape>{} : ReadShapes(a.pod_csv);
  if (shapes.empty())
    shapes = {{4000, 16384, 1, 500},
              {8000, 32768, 1, 1000},
              {2000, 8192, 1, 250},
              {16000, 65536, 2, 1000},
              {1000, 2048, 0, 0}};
  std::atomic<int> next{0}, bound{0}, pending{0}, failed{0}, deleted{0};
  std::vector<std::vector<double>> lat(a.clients);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < a.clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client cli(a.host, a.port);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(60, 0);
      httplib::Headers h;
      if (!a.token.empty()) h.emplace("Authorization", "Bearer " + a.token);
      std::mt19937_64 rng(1000 + c);
      std::deque<std::string> mine;  // this client's bound pods, oldest first (--keep)
      while (true) {
        const int i = next.fetch_add(1);
        if (i >= a.pods) return;
        if (a.keep > 0 && static_cast<int>(mine.size()) >= a.keep) {
          auto d = cli.Delete("/v1/pods/" + mine.front(), h);
          mine.pop_front();
          if (!d || d->status != 200) {
            if (++failed <= 5) {
              std::fprintf(stderr, "server_load: DELETE failed: %s\n",
                           d ? (std::to_string(d->status) + " " + d->body.substr(0, 200)).c_str()
                             : httplib::to_string(d.error()).c_str());
            }
          } else {
            ++deleted;
          }
        }
        Clock::time_point t0 = Clock::now();
        if (a.rate > 0) {  // the i-th pod is due at i / rate
          t0 = start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(i / a.rate));
          std::this_thread::sleep_until(t0);
        }
        const Shape& s = shapes[rng() % shapes.size()];
        nlohmann::json body = {{"name", a.prefix + "-" + std::to_string(i)},
                               {"cpu_milli", s.cpu},
                               {"memory_mib", s.mem},
                               {"num_gpu", s.gpus},
                               {"gpu_milli", s.milli}};
        auto r = cli.Post("/v1/pods", h, body.dump(), "application/json");
        const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        if (!r || r->status != 201) {
          if (++failed <= 5) {
            std::fprintf(stderr, "server_load: POST failed: %s\n",
                         r ? (std::to_string(r->status) + " " + r->body.substr(0, 200)).c_str()
                           : httplib::to_string(r.error()).c_str());
          }
          continue;
        }
        if (r->body.find("\"phase\":\"Bound\"") != std::string::npos) {
          ++bound;
          lat[c].push_back(dt);
          if (a.keep > 0) {
            const nlohmann::json reply = nlohmann::json::parse(r->body, nullptr, false);
            if (reply.is_object() && reply.contains("uid") && reply["uid"].is_string()) {
              mine.push_back(reply["uid"].get<std::string>());
            }
          }
        } else {
          ++pending;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  const double p50 = Quantile(all, 0.50), p99 = Quantile(all, 0.99);
  const int done = bound + pending;
  if (a.json) {
    std::printf(
        "{\"pods\":%d,\"bound\":%d,\"pending\":%d,\"failed\":%d,\"deleted\":%d,"
        "\"wall_s\":%.3f,\"pods_per_s\":%.1f,\"bound_per_s\":%.1f,\"p50_ms\":%.3f,"
        "\"p99_ms\":%.3f,\"offered_per_s\":%.1f,\"clients\":%d,\"keep\":%d}\n",
        a.pods, bound.load(), pending.load(), failed.load(), deleted.load(), wall, done / wall,
        bound / wall, p50 * 1e3, p99 * 1e3, a.rate, a.clients, a.keep);
  } else {
    std::printf(
        "%d pods from %d clients in %.2f s: %.0f pods/s answered (%d bound, %d pending, "
        "%d failed); submit->bound p50 %.2f ms, p99 %.2f ms%s\n",
        a.pods, a.clients, wall, done / wall, bound.load(), pending.load(), failed.load(),
        p50 * 1e3, p99 * 1e3,
        a.rate > 0 ? (" at " + std::to_string(static_cast<int>(a.rate)) + "/s offered").c_str()
                   : "");
  }
  return failed > 0 ? 1 : 0;
}
