// GPU memory defragmentation in churn on the Alibaba trace (issue 17 part 5, docs/elastic.md):
// the trace's GPU-sharing pods (one GPU, gpu_milli < 1000) as memory slices of gpu_milli/1000 of
// a device, arriving and leaving at their trace times over a fleet sized to their peak; every
// checkpoint, each device above the fragmentation threshold gets a compaction plan of at most 3
// moves. The typical slice sizes come from the first half of the trace (by arrival) and only the
// second half's checkpoints are counted, so the sizes are never fitted to what is measured.
// Runs without compaction (the baseline) and with it, and prints both.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "seedance/elastic/defrag.h"
#include "seedance/trace/csv_reader.h"

namespace {

namespace elastic = seedance::elastic;

struct Flags {
  std::string pods;
  int64_t capacity_mib = 81920;
  int64_t granularity_mib = 256;
  double fill = 0.9;  // fleet = peak demand / (capacity x fill)
  double pinned = 0.1;
  int64_t checkpoint_s = 600;
  double coverage = 0.9;  // typical sizes: the most common, until they cover this share
};

std::vector<int64_t> TypicalFrom(const std::vector<elastic::SliceRequest>& r, int64_t split_s,
                                 double coverage) {
  std::map<int64_t, int64_t> count;
  int64_t n = 0;
  for (const auto& x : r) {
    if (x.arrive_s < split_s) ++count[x.size_mib], ++n;
  }
  std::vector<std::pair<int64_t, int64_t>> by(count.begin(), count.end());
  std::sort(by.begin(), by.end(), [](auto a, auto b) { return a.second > b.second; });
  std::vector<int64_t> sizes;
  int64_t covered = 0;
  for (const auto& [size, c] : by) {
    if (sizes.size() >= 8 || covered >= coverage * n) break;
    sizes.push_back(size);
    covered += c;
  }
  return sizes;
}

int Devices(const std::vector<elastic::SliceRequest>& r, const Flags& f) {
  std::vector<std::pair<int64_t, int64_t>> d;
  for (const auto& x : r) {
    d.emplace_back(x.arrive_s, x.size_mib);
    if (x.depart_s >= x.arrive_s) d.emplace_back(x.depart_s, -x.size_mib);
  }
  std::sort(d.begin(), d.end());
  int64_t now = 0, peak = 0;
  for (const auto& [t, v] : d) peak = std::max(peak, now += v);
  return static_cast<int>(std::ceil(peak / (f.capacity_mib * f.fill)));
}

void Print(const char* name, const elastic::DefragChurnReport& r, int64_t typical_max) {
  std::vector<int> m = r.moves_per_restore;
  std::sort(m.begin(), m.end());
  std::printf(
      "%-10s placed %lld/%lld, refused %lld (%lld fragmented) | checks above 0.35: %lld, "
      "restored within 3 moves: %lld (%.1f%%; %lld others pinned apart), moves %lld (median "
      "per restore %d), recovered per move %.0f MiB (%.2f largest typical slices)\n",
      name, static_cast<long long>(r.placed), static_cast<long long>(r.requests),
      static_cast<long long>(r.refused), static_cast<long long>(r.refused_fragmented),
      static_cast<long long>(r.checks_above), static_cast<long long>(r.checks_restored),
      r.checks_above ? 100.0 * r.checks_restored / r.checks_above : 0,
      static_cast<long long>(r.checks_pinned_bound), static_cast<long long>(r.moves),
      m.empty() ? 0 : m[m.size() / 2], r.moves ? static_cast<double>(r.recovered_mib) / r.moves : 0,
      r.moves ? static_cast<double>(r.recovered_mib) / r.moves / typical_max : 0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "defrag_churn: GPU memory compaction in churn on the Alibaba trace's GPU-sharing pods"};
  Flags f;
  f.pods = seedance::trace::DataDir() + "/alibaba-gpu-v2023/csv/openb_pod_list_gpushare40.csv";
  app.add_option("--pods", f.pods, "openb pod CSV")->capture_default_str();
  app.add_option("--capacity-mib", f.capacity_mib, "memory of one GPU")->capture_default_str();
  app.add_option("--granularity-mib", f.granularity_mib, "slice sizes rounded up to this")
      ->capture_default_str();
  app.add_option("--fill", f.fill, "fleet sized to peak demand / (capacity x fill)")
      ->capture_default_str();
  app.add_option("--pinned", f.pinned, "share of slices that can never move")
      ->capture_default_str();
  app.add_option("--checkpoint-s", f.checkpoint_s, "checkpoint period")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto pods = seedance::trace::ReadPodCsv(f.pods);
  if (!pods.ok()) {
    std::fprintf(stderr, "defrag_churn: %s (skipped)\n",
                 std::string(pods.status().message()).c_str());
    return 0;
  }
  std::vector<elastic::SliceRequest> requests;
  std::vector<int64_t> arrivals;
  for (const auto& p : *pods) {
    if (p.shape.num_gpu != 1 || p.shape.gpu_milli >= 1000) continue;
    const double mib = p.shape.gpu_milli * static_cast<double>(f.capacity_mib) / 1000;
    const int64_t size =
        static_cast<int64_t>(std::ceil(mib / f.granularity_mib)) * f.granularity_mib;
    elastic::SliceRequest r{p.creation_s, p.deletion_s, std::min(size, f.capacity_mib), true};
    // Pinned by a fixed rule of the request's index: every 1/pinned-th one.
    r.movable = f.pinned <= 0 || requests.size() % static_cast<size_t>(1 / f.pinned) != 0;
    requests.push_back(r);
    arrivals.push_back(p.creation_s);
  }
  if (requests.empty()) {
    std::fprintf(stderr, "defrag_churn: %s has no GPU-sharing pods\n", f.pods.c_str());
    return 2;
  }
  std::nth_element(arrivals.begin(), arrivals.begin() + arrivals.size() / 2, arrivals.end());
  const int64_t split = arrivals[arrivals.size() / 2];
  const std::vector<int64_t> sizes = TypicalFrom(requests, split, f.coverage);
  auto typical = elastic::TypicalSizes::Create(sizes, f.capacity_mib);
  if (!typical.ok()) {
    std::fprintf(stderr, "defrag_churn: %s\n", std::string(typical.status().message()).c_str());
    return 2;
  }
  elastic::DefragChurnOptions o;
  o.devices = Devices(requests, f);
  o.capacity_mib = f.capacity_mib;
  o.checkpoint_s = f.checkpoint_s;
  o.report_from_s = split;
  std::printf("%zu GPU-sharing pods of %s on %d GPUs of %lld MiB; typical sizes (first half):",
              requests.size(), f.pods.c_str(), o.devices, static_cast<long long>(f.capacity_mib));
  for (int64_t s : sizes) std::printf(" %lld", static_cast<long long>(s));
  std::printf(" MiB; %.0f%% pinned; second half counted\n", 100 * f.pinned);
  o.compact = false;
  auto base = elastic::RunDefragChurn(o, *typical, requests);
  o.compact = true;
  auto comp = elastic::RunDefragChurn(o, *typical, requests);
  if (!base.ok() || !comp.ok()) {
    std::fprintf(stderr, "defrag_churn: %s\n",
                 std::string((base.ok() ? comp.status() : base.status()).message()).c_str());
    return 2;
  }
  Print("planned", *base, sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end()));
  Print("compacted", *comp, sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end()));
  return 0;
}
