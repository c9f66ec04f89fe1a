// Gradient all-reduce time of seedance_train's three collectives side by side (issue 38's speed
// line): FP32 MPI_Allreduce, FP16 (fp16_compress_hook) and the 1-bit all-reduce, on one gradient
// of --elements floats. Not a Google Benchmark: it runs under mpirun, normally on the rate-limited
// namespaces of bench/train_netns.sh, where the network is the bottleneck:
//
//   sudo bench/train_netns.sh --rate 1gbit -- build/bench/train_allreduce_bench
//       [--elements 100000000] [--repeats 5] [--methods fp32,fp16,onebit]
//
// Each rank holds its own gradient (seeded by the rank, uniform in [-1, 1)). For each method: one
// warm-up call (it also does the bucket's once-only length check), then --repeats timed calls,
// each on a fresh copy of the gradient, after an MPI_Barrier; a call's time is the maximum over
// the ranks of its wall time (MPI_Reduce MAX). Rank 0 prints one JSON object: per method the
// median and every time in seconds and the bytes a rank handed to MPI for other ranks per call
// (the maximum over ranks of Communicator::bytes_sent's increase), and the ratios of the medians
// onebit/fp32 and onebit/fp16 when those methods ran.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "seedance/train/collective.h"

namespace {

namespace train = seedance::train;

struct MethodResult {
  std::string name;
  std::vector<double> times_s;  // rank 0 only: max over ranks per call
  uint64_t bytes_sent_per_call = 0;
  double median_s = 0;
};

// Uniform in [-1, 1) from a splitmix64 stream seeded by the rank: cheap for 10^8 elements.
std::vector<float> Gradient(size_t n, int rank) {
  std::vector<float> g(n);
  uint64_t x = 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(rank + 1);
  for (float& v : g) {
    x += 0x9E3779B97F4A7C15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    v = static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1ULL << 23) - 1.0);
  }
  return g;
}

[[noreturn]] void Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "train_allreduce_bench: %s: %s\n", what.c_str(),
               std::string(status.message()).c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class Bench {
 public:
  Bench(train::Communicator& comm, std::span<const float> gradient)
      : comm_(comm), gradient_(gradient), work_(gradient.size()) {}

  MethodResult Run(const std::string& method, int repeats) {
    MethodResult result;
    result.name = method;
    Call(method);  // warm-up
    uint64_t max_bytes = 0;
    for (int r = 0; r < repeats; ++r) {
      std::copy(gradient_.begin(), gradient_.end(), work_.begin());
      MPI_Barrier(comm_.comm());
      const uint64_t bytes_before = comm_.bytes_sent();
      const double t0 = MPI_Wtime();
      Call(method);
      double elapsed_s = MPI_Wtime() - t0;
      const uint64_t bytes = comm_.bytes_sent() - bytes_before;
      double max_s = 0;
      uint64_t bytes_max = 0;
      MPI_Reduce(&elapsed_s, &max_s, 1, MPI_DOUBLE, MPI_MAX, 0, comm_.comm());
      MPI_Reduce(&bytes, &bytes_max, 1, MPI_UINT64_T, MPI_MAX, 0, comm_.comm());
      result.times_s.push_back(max_s);
      max_bytes = std::max(max_bytes, bytes_max);
    }
    result.bytes_sent_per_call = max_bytes;
    result.median_s = Median(result.times_s);
    return result;
  }

 private:
  void Call(const std::string& method) {
    absl::Status status;
    if (method == "fp32") {
      status = comm_.AllreduceFp32(kBucketFp32, work_);
    } else if (method == "fp16") {
      status = comm_.AllreduceFp16(kBucketFp16, work_);
    } else {
      status = onebit_.Run(comm_, kBucketOneBit, work_);
    }
    if (!status.ok()) Fail(method, status);
  }

  static constexpr int kBucketFp32 = 0;
  static constexpr int kBucketFp16 = 1;
  static constexpr int kBucketOneBit = 2;

  train::Communicator& comm_;
  std::span<const float> gradient_;
  std::vector<float> work_;
  train::OneBitAllreduce onebit_{train::OneBitOptions{}};
};

const MethodResult* Find(const std::vector<MethodResult>& results, const std::string& name) {
  for (const MethodResult& r : results) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

void PrintJson(const std::vector<MethodResult>& results, int ranks, size_t elements, int repeats) {
  std::printf("{\"ranks\": %d, \"elements\": %zu, \"repeats\": %d, \"methods\": {", ranks, elements,
              repeats);
  for (size_t i = 0; i < results.size(); ++i) {
    const MethodResult& r = results[i];
    std::printf("%s\"%s\": {\"median_s\": %.6f, \"times_s\": [", i ? ", " : "", r.name.c_str(),
                r.median_s);
    for (size_t k = 0; k < r.times_s.size(); ++k) {
      std::printf("%s%.6f", k ? ", " : "", r.times_s[k]);
    }
    std::printf("], \"bytes_sent_per_rank_per_call\": %llu}",
                static_cast<unsigned long long>(r.bytes_sent_per_call));
  }
  std::printf("}, \"ratios\": {");
  const MethodResult* onebit = Find(results, "onebit");
  bool first = true;
  for (const char* base : {"fp32", "fp16"}) {
    const MethodResult* b = Find(results, base);
    if (onebit == nullptr || b == nullptr || b->median_s <= 0) continue;
    std::printf("%s\"onebit_over_%s\": %.4f", first ? "" : ", ", base,
                onebit->median_s / b->median_s);
    first = false;
  }
  std::printf("}}\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  CLI::App app{"FP32, FP16 and 1-bit gradient all-reduce times under mpirun"};
  size_t elements = 100'000'000;
  int repeats = 5;
  std::string methods_flag = "fp32,fp16,onebit";
  double timeout_s = 600;
  app.add_option("--elements", elements, "gradient length in floats")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed calls per method")->check(CLI::PositiveNumber);
  app.add_option("--methods", methods_flag, "comma-separated: fp32, fp16, onebit");
  app.add_option("--timeout-s", timeout_s, "bound on one collective")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
    MPI_Finalize();
    return rc == 0 ? 0 : 2;
  }
  const std::vector<std::string> methods = absl::StrSplit(methods_flag, ',', absl::SkipEmpty());
  for (const std::string& m : methods) {
    if (m != "fp32" && m != "fp16" && m != "onebit") {
      if (rank == 0) {
        std::fprintf(stderr,
                     "train_allreduce_bench: --methods: unknown '%s' (want fp32, fp16, "
                     "onebit)\n",
                     m.c_str());
      }
      MPI_Finalize();
      return 2;
    }
  }

  const std::vector<float> gradient = Gradient(elements, rank);
  train::Communicator comm(MPI_COMM_WORLD, absl::Seconds(timeout_s));
  Bench bench(comm, gradient);
  std::vector<MethodResult> results;
  for (const std::string& m : methods) results.push_back(bench.Run(m, repeats));
  if (rank == 0) PrintJson(results, ranks, elements, repeats);
  MPI_Finalize();
  return 0;
}
