// Durable state throughput and restart cost of seedance_store (SQLite, WAL, synchronous=FULL).
//
// BM_Commit/pods:N/bg_checkpoint:B: each iteration commits one batch of N new pods (upserts with a
// typical 200-byte spec) and N events, fsync'd before Commit returns - what the server's group
// commit does for N requests. items_per_second is pods/s; commits_per_second is batches/s;
// p50/p99/max_ms are single-Commit latencies. bg_checkpoint:1 is the default background
// checkpointer, 0 SQLite's automatic checkpoint inside the committing call. BM_BindCommit/64: 64
// existing pods updated to Bound plus 64 events (the binding half). BM_Load/N: Load() of a store
// holding N pods and 1,213 nodes (after a clean reopen); BM_OpenLoad/N: Open (lock, identity
// checks, quick_check) + Load, i.e. the store's share of a server restart.
//
// State goes to $SEEDANCE_BENCH_DIR/store_bench.state (default: the current directory); it must
// be a real disk since tmpfs makes fsync free.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "seedance/store/store.h"

namespace {

using seedance::store::Batch;
using seedance::store::EventRecord;
using seedance::store::NodeRecord;
using seedance::store::PodRecord;
using seedance::store::Store;

std::string BenchDir(const std::string& name) {
  const char* base = std::getenv("SEEDANCE_BENCH_DIR");
  return std::string(base != nullptr ? base : ".") + "/store_bench.state/" + name;
}

void Fresh(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

PodRecord MakePod(int64_t i, int64_t revision) {
  PodRecord p;
  p.uid = "3f2a9c1e-0000-4000-8000-" + std::to_string(100000000000 + i);
  p.ns = "default";
  p.name = "pod-" + std::to_string(i);
  p.spec_json = "{\"name\":\"" + p.name +
                "\",\"namespace\":\"default\",\"cpu_milli\":8000,\"memory_mib\":32768,"
                "\"num_gpu\":1,\"gpu_milli\":500,\"gpu_spec\":\"A100|H100\",\"priority\":0,"
                "\"labels\":{\"app\":\"train\",\"team\":\"vision\"},\"created_unix_ns\":"
                "1764590000000000000}";
  p.phase = "Pending";
  p.gpus_json = "[]";
  p.revision = revision;
  return p;
}

EventRecord MakeEvent(const PodRecord& p) {
  return EventRecord{p.revision, "PodAdded",
                     "{\"uid\":\"" + p.uid + "\",\"name\":\"" + p.name + "\",\"phase\":\"" +
                         p.phase + "\",\"revision\":" + std::to_string(p.revision) + "}"};
}

std::unique_ptr<Store> MustOpen(const std::string& dir, benchmark::State& state,
                                seedance::store::StoreOptions o = {}) {
  auto s = Store::Open(dir, o);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return nullptr;
  }
  return std::move(*s);
}

// p50/p99/max of the individual Commit calls (checkpoints included), in milliseconds.
void AddLatencyCounters(benchmark::State& state, std::vector<double>* ms) {
  if (ms->empty()) return;
  std::sort(ms->begin(), ms->end());
  auto at = [&](double q) { return (*ms)[static_cast<size_t>(q * (ms->size() - 1))]; };
  state.counters["p50_ms"] = at(0.5);
  state.counters["p99_ms"] = at(0.99);
  state.counters["max_ms"] = ms->back();
}

void BM_Commit(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string dir = BenchDir("commit");
  Fresh(dir);
  seedance::store::StoreOptions o;
  if (state.range(1) == 0) o.checkpoint_pages = 0;  // SQLite's checkpoint inside Commit
  auto store = MustOpen(dir, state, o);
  if (store == nullptr) return;
  int64_t rev = 0, next_pod = 0;
  std::vector<double> latencies_ms;
  for (auto _ : state) {
    state.PauseTiming();
    Batch b;
    for (int i = 0; i < n; ++i) {
      b.put_pods.push_back(MakePod(next_pod++, ++rev));
      b.events.push_back(MakeEvent(b.put_pods.back()));
    }
    b.revision = rev;
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    auto s = store->Commit(b);
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["commits_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  AddLatencyCounters(state, &latencies_ms);
  store.reset();
  Fresh(dir);
}

void BM_BindCommit(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int kPods = 20000;
  const std::string dir = BenchDir("bind");
  Fresh(dir);
  auto store = MustOpen(dir, state);
  if (store == nullptr) return;
  int64_t rev = 0;
  {
    Batch b;
    for (int i = 0; i < kPods; ++i) b.put_pods.push_back(MakePod(i, ++rev));
    b.revision = rev;
    if (!store->Commit(b).ok()) state.SkipWithError("setup commit failed");
  }
  int64_t next = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Batch b;
    for (int i = 0; i < n; ++i) {
      PodRecord p = MakePod(next++ % kPods, ++rev);
      p.phase = "Bound";
      p.node = "node-" + std::to_string(rev % 1213);
      p.gpus_json = "[{\"index\":" + std::to_string(rev % 8) + ",\"milli\":500}]";
      b.events.push_back(MakeEvent(p));
      b.put_pods.push_back(std::move(p));
    }
    b.revision = rev;
    state.ResumeTiming();
    auto s = store->Commit(b);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["commits_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  store.reset();
  Fresh(dir);
}

// A store with `pods` pods (half of them bound), 1,213 nodes and one event per pod, closed.
bool Populate(const std::string& dir, int64_t pods, benchmark::State& state) {
  if (std::filesystem::exists(dir + "/pods-" + std::to_string(pods))) return true;
  Fresh(dir);
  auto store = MustOpen(dir, state);
  if (store == nullptr) return false;
  int64_t rev = 0;
  Batch nodes;
  for (int i = 0; i < 1213; ++i) {
    NodeRecord n;
    n.name = "node-" + std::to_string(i);
    n.spec_json = "{\"name\":\"" + n.name +
                  "\",\"cpu_milli\":96000,\"memory_mib\":786432,\"num_gpus\":8,\"gpu_model\":"
                  "\"A100\",\"labels\":{\"zone\":\"a\"}}";
    n.revision = ++rev;
    nodes.put_nodes.push_back(n);
  }
  nodes.revision = rev;
  if (!store->Commit(nodes).ok()) return false;
  for (int64_t i = 0; i < pods;) {
    Batch b;
    for (int k = 0; k < 1000 && i < pods; ++k, ++i) {
      PodRecord p = MakePod(i, ++rev);
      if (i % 2 == 1) {
        p.phase = "Bound";
        p.node = "node-" + std::to_string(i % 1213);
        p.gpus_json = "[{\"index\":3,\"milli\":500}]";
      }
      b.events.push_back(MakeEvent(p));
      b.put_pods.push_back(std::move(p));
    }
    b.revision = rev;
    if (!store->Commit(b).ok()) return false;
  }
  store.reset();
  std::FILE* f = std::fopen((dir + "/pods-" + std::to_string(pods)).c_str(), "w");
  if (f != nullptr) std::fclose(f);
  return true;
}

void BM_Load(benchmark::State& state) {
  const std::string dir = BenchDir("load");
  if (!Populate(dir, state.range(0), state)) return;
  auto store = MustOpen(dir, state);
  if (store == nullptr) return;
  size_t pods = 0;
  for (auto _ : state) {
    auto snap = store->Load();
    if (!snap.ok()) state.SkipWithError(std::string(snap.status().message()).c_str());
    pods = snap.ok() ? snap->pods.size() : 0;
    benchmark::DoNotOptimize(snap);
  }
  state.counters["pods"] = static_cast<double>(pods);
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(store->path())) / 1e6;
}

void BM_OpenLoad(benchmark::State& state) {
  const std::string dir = BenchDir("load");
  if (!Populate(dir, state.range(0), state)) return;
  for (auto _ : state) {
    auto store = MustOpen(dir, state);
    if (store == nullptr) return;
    auto snap = store->Load();
    if (!snap.ok()) state.SkipWithError(std::string(snap.status().message()).c_str());
    benchmark::DoNotOptimize(snap);
    state.PauseTiming();
    store.reset();  // the close's checkpoint is not part of a restart
    state.ResumeTiming();
  }
}

BENCHMARK(BM_Commit)
    ->ArgNames({"pods", "bg_checkpoint"})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({64, 1})
    ->Args({64, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BindCommit)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Load)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_OpenLoad)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
