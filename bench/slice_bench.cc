// The seed's SliceManager benchmark (A 2.2: 10,000 containers, 500 ms period): throughput and
// latency of requests served through the dynamic SliceManager against static slices of size 8,
// with the same number of slices in all (docs/elastic.md has the model and its reading).
//
// Part 1 is a discrete-event simulation on a FakeTimerClock that drives the real SliceManager:
// Poisson arrivals over containers whose popularity is log-normal and re-drawn every
// --shift-s (load moves between containers), a log-normal service time per request on one
// slice, a FIFO queue per container and a client timeout. Static is the same manager with
// min_slices = capacity = 8, so every container holds 8 slices, always.
// Part 2 times TryAcquire + release from --threads threads over the 10,000 containers on the
// real clock while another thread rebalances every 500 ms.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "seedance/elastic/slice_manager.h"

namespace {

namespace elastic = seedance::elastic;
using seedance::engine::FakeTimerClock;

struct Model {
  int containers = 10'000;
  double period_s = 0.5;
  double duration_s = 300;
  double warmup_s = 30;
  double rate = 20'000;         // requests/s offered in all
  double service_mean_s = 2.0;  // on one slice
  double service_cv = 0.5;
  double popularity_sigma = 1.0;
  double shift_s = 60;
  double timeout_s = 10;  // a request still queued this long is given up
  int64_t pool = 80'000;  // = 8 x containers: what static slices reserve
  uint32_t seed = 1;
};

struct Result {
  double tps = 0, p50_ms = 0, p99_ms = 0, dropped = 0;
  int64_t peak_slices = 0, entries = 0;
};

constexpr int64_t kNs = 1'000'000'000;

int64_t Ns(double s) { return static_cast<int64_t>(std::llround(s * kNs)); }

class Simulation {
 public:
  Simulation(const Model& m, const elastic::SliceOptions& o) : m_(m), rng_(m.seed) {
    auto made = elastic::SliceManager::Create(o, &clock_);
    if (!made.ok()) {
      std::fprintf(stderr, "slice_bench: %s\n", std::string(made.status().message()).c_str());
      std::exit(2);
    }
    manager_ = std::move(*made);
    for (int i = 0; i < m.containers; ++i) names_.push_back("c" + std::to_string(i));
    queues_.resize(m.containers);
    const double s2 = std::log(1 + m.service_cv * m.service_cv);
    service_ = std::lognormal_distribution<double>(std::log(m.service_mean_s) - s2 / 2,
                                                   std::sqrt(s2));
  }

  Result Run() {
    Shift();
    int64_t next_arrival = Ns(arrival_(rng_));
    int64_t next_period = Ns(m_.period_s), next_shift = Ns(m_.shift_s);
    const int64_t end = Ns(m_.duration_s);
    while (true) {
      const int64_t next_done = running_.empty() ? end : running_.top().done_ns;
      const int64_t t = std::min({next_arrival, next_period, next_shift, next_done, end});
      if (t >= end) break;
      clock_.Set(t);
      if (t == next_done) {
        Complete();
      } else if (t == next_arrival) {
        Arrive(pick_(rng_));
        next_arrival = t + std::max<int64_t>(1, Ns(arrival_(rng_)));
      } else if (t == next_period) {
        manager_->Rebalance();
        peak_slices_ = std::max(peak_slices_, manager_->stats().slices);
        DispatchAll();
        next_period += Ns(m_.period_s);
      } else {
        Shift();
        next_shift += Ns(m_.shift_s);
      }
    }
    return Summary();
  }

 private:
  struct Request {
    int64_t arrived_ns;
  };
  struct Running {
    int64_t done_ns;
    int container;
    int64_t arrived_ns;
    int slot;
    bool operator>(const Running& o) const { return done_ns > o.done_ns; }
  };

  // Popularity re-drawn: the same log-normal shape over a new order of containers.
  void Shift() {
    std::lognormal_distribution<double> w(0, m_.popularity_sigma);
    std::vector<double> weights(m_.containers);
    for (double& x : weights) x = w(rng_);
    pick_ = std::discrete_distribution<int>(weights.begin(), weights.end());
    arrival_ = std::exponential_distribution<double>(m_.rate);
  }

  void Arrive(int c) {
    queues_[c].push_back({clock_.NowNs()});
    Dispatch(c);
  }

  // Starts queued requests of `c` while it gets slices; gives up those past the timeout.
  void Dispatch(int c) {
    std::deque<Request>& q = queues_[c];
    const int64_t now = clock_.NowNs();
    while (!q.empty() && now - q.front().arrived_ns > Ns(m_.timeout_s)) {
      Count(now - q.front().arrived_ns, /*dropped=*/true);
      q.pop_front();
    }
    while (!q.empty()) {
      elastic::SliceManager::Lease l = manager_->TryAcquire(names_[c]);
      if (!l) {
        waiting_.push_back(c);
        return;
      }
      int slot;
      if (free_slots_.empty()) {
        slot = static_cast<int>(leases_.size());
        leases_.emplace_back();
      } else {
        slot = free_slots_.back();
        free_slots_.pop_back();
      }
      leases_[slot] = std::move(l);
      running_.push({now + std::max<int64_t>(1, Ns(service_(rng_))), c, q.front().arrived_ns, slot});
      q.pop_front();
    }
  }

  void DispatchAll() {
    std::vector<int> waiting;
    waiting.swap(waiting_);
    std::sort(waiting.begin(), waiting.end());
    waiting.erase(std::unique(waiting.begin(), waiting.end()), waiting.end());
    for (int c : waiting) Dispatch(c);
  }

  void Complete() {
    const Running r = running_.top();
    running_.pop();
    leases_[r.slot].Release();
    free_slots_.push_back(r.slot);
    Count(clock_.NowNs() - r.arrived_ns, /*dropped=*/false);
    Dispatch(r.container);
  }

  void Count(int64_t latency_ns, bool dropped) {
    if (clock_.NowNs() < Ns(m_.warmup_s)) return;
    if (dropped) {
      ++dropped_;
    } else {
      latencies_ms_.push_back(static_cast<float>(latency_ns / 1e6));
    }
  }

  Result Summary() {
    Result r;
    const double measured_s = m_.duration_s - m_.warmup_s;
    r.tps = latencies_ms_.size() / measured_s;
    const double all = static_cast<double>(latencies_ms_.size() + dropped_);
    r.dropped = all > 0 ? dropped_ / all : 0;
    if (!latencies_ms_.empty()) {
      auto at = [&](double q) {
        const size_t k = std::min(latencies_ms_.size() - 1,
                                  static_cast<size_t>(q * (latencies_ms_.size() - 1)));
        std::nth_element(latencies_ms_.begin(), latencies_ms_.begin() + k, latencies_ms_.end());
        return static_cast<double>(latencies_ms_[k]);
      };
      r.p50_ms = at(0.50);
      r.p99_ms = at(0.99);
    }
    r.peak_slices = peak_slices_;
    r.entries = manager_->stats().entries_created;
    return r;
  }

  const Model m_;
  std::mt19937_64 rng_;
  FakeTimerClock clock_;
  std::unique_ptr<elastic::SliceManager> manager_;
  std::vector<std::string> names_;
  std::vector<std::deque<Request>> queues_;
  std::vector<int> waiting_;
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running_;
  std::vector<elastic::SliceManager::Lease> leases_;
  std::vector<int> free_slots_;
  std::discrete_distribution<int> pick_;
  std::exponential_distribution<double> arrival_;
  std::lognormal_distribution<double> service_;
  std::vector<float> latencies_ms_;
  int64_t dropped_ = 0, peak_slices_ = 0;
};

void Print(const char* name, const Result& r) {
  std::printf("%-8s %10.0f %10.0f %10.0f %9.2f%% %12lld %9lld\n", name, r.tps, r.p50_ms, r.p99_ms,
              100 * r.dropped, static_cast<long long>(r.peak_slices),
              static_cast<long long>(r.entries));
}

// Acquire+release pairs per second from `threads` threads, a rebalance every 500 ms.
double Contention(int containers, int threads, double seconds) {
  elastic::SliceOptions o;
  o.pool_slices = int64_t{8} * containers;
  auto m = std::move(*elastic::SliceManager::Create(o));
  std::vector<std::string> names;
  for (int i = 0; i < containers; ++i) names.push_back("c" + std::to_string(i));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ops{0};
  std::thread rebalancer([&] {
    while (!stop.load()) {
      m->Rebalance();
      for (int i = 0; i < 50 && !stop.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::uniform_int_distribution<int> pick(0, containers - 1);
      int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 256; ++i, ++n) {
          elastic::SliceManager::Lease l = m->TryAcquire(names[pick(rng)]);
        }
      }
      ops.fetch_add(n);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (std::thread& w : workers) w.join();
  rebalancer.join();
  return ops.load() / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "slice_bench: the dynamic SliceManager against static slices of size 8 (seed A 2.2), then "
      "TryAcquire+release pairs per second from many threads"};
  Model m;
  int threads = 16;
  double contention_s = 2;
  app.add_option("--containers", m.containers, "containers")->capture_default_str();
  app.add_option("--rate", m.rate, "requests/s offered in all")->capture_default_str();
  app.add_option("--duration-s", m.duration_s, "simulated seconds")->capture_default_str();
  app.add_option("--warmup-s", m.warmup_s, "not measured at first")->capture_default_str();
  app.add_option("--service-s", m.service_mean_s, "mean service time on one slice")
      ->capture_default_str();
  app.add_option("--sigma", m.popularity_sigma, "log-normal sigma of container popularity")
      ->capture_default_str();
  app.add_option("--shift-s", m.shift_s, "popularity re-drawn this often")->capture_default_str();
  app.add_option("--timeout-s", m.timeout_s, "a queued request is given up after")
      ->capture_default_str();
  app.add_option("--seed", m.seed, "random seed")->capture_default_str();
  app.add_option("--threads", threads, "threads of part 2 (0: skip it)")->capture_default_str();
  app.add_option("--contention-s", contention_s, "seconds of part 2")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  m.pool = int64_t{8} * m.containers;

  elastic::SliceOptions fixed;
  fixed.capacity = 8;
  fixed.min_slices = 8;
  elastic::SliceOptions dynamic;
  dynamic.capacity = 256;
  dynamic.pool_slices = m.pool;
  std::printf(
      "%d containers, %.0f req/s offered, service %.2f s (cv %.1f), popularity log-normal "
      "sigma %.1f re-drawn every %.0f s, timeout %.0f s, %lld slices in all; %.0f s measured\n",
      m.containers, m.rate, m.service_mean_s, m.service_cv, m.popularity_sigma, m.shift_s,
      m.timeout_s, static_cast<long long>(m.pool), m.duration_s - m.warmup_s);
  std::printf("%-8s %10s %10s %10s %10s %12s %9s\n", "mode", "TPS", "p50 ms", "p99 ms", "dropped",
              "peak slices", "entries");
  const Result s = Simulation(m, fixed).Run();
  Print("static", s);
  const Result d = Simulation(m, dynamic).Run();
  Print("dynamic", d);
  std::printf("dynamic/static: TPS %.3f, p99 %.3f, peak slices %.3f\n", d.tps / s.tps,
              s.p99_ms > 0 ? d.p99_ms / s.p99_ms : 0,
              s.peak_slices > 0 ? static_cast<double>(d.peak_slices) / s.peak_slices : 0);
  if (threads > 0) {
    std::printf("part 2: %d threads, %d containers: %.2f M TryAcquire+release/s\n", threads,
                m.containers, Contention(m.containers, threads, contention_s) / 1e6);
  }
  return 0;
}
