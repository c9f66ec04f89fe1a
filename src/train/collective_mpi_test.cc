// The all-reduces on a real Open MPI job: run by mpirun with 2, 3, 4 and 8 ranks (CMake). Every
// rank runs every test; a failure on any rank fails mpirun's exit status.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "seedance/train/collective.h"

namespace seedance::train {
namespace {

std::vector<float> RankVector(size_t d, int rank, int step) {
  std::mt19937_64 rng(1000003ULL * static_cast<uint64_t>(rank) + static_cast<uint64_t>(step));
  std::normal_distribution<float> normal(0.0f, 1.0f + static_cast<float>(rank));
  std::vector<float> v(d);
  for (float& x : v) x = normal(rng);
  return v;
}

Communicator& World() {
  static Communicator comm(MPI_COMM_WORLD, absl::Seconds(120));
  return comm;
}

TEST(Fp32Allreduce, IsTheExactMeanOnEveryRank) {
  Communicator& comm = World();
  std::vector<float> v(1001);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(comm.rank() * 4 + static_cast<int>(i % 8));
  ASSERT_TRUE(comm.AllreduceFp32(100, v).ok());
  const int n = comm.size();
  for (size_t i = 0; i < v.size(); ++i) {
    const float want = (4.0f * static_cast<float>(n * (n - 1) / 2) +
                        static_cast<float>(n * static_cast<int>(i % 8))) /
                       static_cast<float>(n);
    ASSERT_FLOAT_EQ(v[i], want) << i;
  }
}

TEST(Fp16Allreduce, IsTheMeanWithinFp16Rounding) {
  Communicator& comm = World();
  const size_t d = 777;
  std::vector<float> v = RankVector(d, comm.rank(), 0);
  std::vector<double> want(d, 0.0);
  for (int r = 0; r < comm.size(); ++r) {
    const std::vector<float> other = RankVector(d, r, 0);
    for (size_t i = 0; i < d; ++i) want[i] += other[i] / comm.size();
  }
  ASSERT_TRUE(comm.AllreduceFp16(101, v).ok());
  for (size_t i = 0; i < d; ++i) {
    // n roundings of values below 8 * (1 + rank): each at most 2^-11 relative.
    ASSERT_NEAR(v[i], want[i], comm.size() * 8.0 * comm.size() / 2048.0) << i;
  }
}

// The 1-bit all-reduce replayed on one rank from every rank's inputs (compress.h only), step by
// step with its own error buffers: the MPI result must be bit-identical.
struct Replay {
  int n;
  size_t d;
  std::vector<std::vector<float>> worker;  // per rank
  std::vector<std::vector<float>> server;  // per rank, its chunk

  std::vector<float> Step(const std::vector<std::vector<float>>& inputs) {
    const size_t total = PackedBytes(d);
    std::vector<std::vector<uint8_t>> bits(static_cast<size_t>(n), std::vector<uint8_t>(total));
    std::vector<float> scales(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      scales[r] = CompressSign(inputs[r], SignScale::kL2Rms, worker[r], bits[r]).scale;
    }
    std::vector<float> out(d);
    for (int j = 0; j < n; ++j) {
      const ByteChunk c = ChunkOf(total, n, j);
      const size_t begin = 8 * c.offset;
      const size_t elements = std::min(d, 8 * (c.offset + c.bytes)) > begin
                                  ? std::min(d, 8 * (c.offset + c.bytes)) - begin
                                  : 0;
      std::vector<float> chunk(elements, 0.0f);
      for (int r = 0; r < n; ++r) {
        AddUnpackedSigns(std::span<const uint8_t>(bits[r].data() + c.offset, PackedBytes(elements)),
                         scales[r] / static_cast<float>(n), chunk);
      }
      if (server[j].size() != elements) server[j].assign(elements, 0.0f);
      std::vector<uint8_t> sb(PackedBytes(elements));
      const float s = CompressSign(chunk, SignScale::kL2Rms, server[j], sb).scale;
      UnpackSigns(sb, s, std::span<float>(out.data() + begin, elements));
    }
    return out;
  }
};

TEST(OneBitAllreduce, MatchesItsReplayBitForBitAndKeepsTheByteBound) {
  Communicator& comm = World();
  const int n = comm.size();
  for (size_t d : {size_t{1}, size_t{13}, size_t{1001}, size_t{100003}}) {
    OneBitAllreduce onebit(OneBitOptions{});
    Replay replay{n, d, std::vector<std::vector<float>>(n, std::vector<float>(d, 0.0f)),
                  std::vector<std::vector<float>>(n)};
    const int bucket = static_cast<int>(d);
    for (int step = 0; step < 5; ++step) {
      // Rank 0 replays every rank's compression; the others check they hold rank 0's result.
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < n; ++r) {
        inputs.push_back(comm.rank() == 0 || r == comm.rank() ? RankVector(d, r, step)
                                                              : std::vector<float>());
      }
      std::vector<float> v = inputs[comm.rank()];
      const uint64_t before = comm.bytes_sent();
      ASSERT_TRUE(onebit.Run(comm, bucket, v).ok());
      const uint64_t sent = comm.bytes_sent() - before;
      const double bound = 2.0 * (n - 1) / n * static_cast<double>(PackedBytes(d)) + 8.0 * n;
      EXPECT_LE(static_cast<double>(sent), bound) << "d=" << d << " n=" << n;
      std::vector<float> first = v;
      MPI_Bcast(first.data(), static_cast<int>(d), MPI_FLOAT, 0, MPI_COMM_WORLD);
      ASSERT_EQ(std::memcmp(first.data(), v.data(), d * sizeof(float)), 0) << "rank " << comm.rank();
      if (comm.rank() == 0) {
        const std::vector<float> want = replay.Step(inputs);
        ASSERT_EQ(v, want) << "d=" << d << " step " << step;
      }
    }
  }
}

TEST(OneBitAllreduce, MismatchedLengthsAreRefusedOnEveryRankNamingThem) {
  Communicator& comm = World();
  OneBitAllreduce onebit(OneBitOptions{});
  std::vector<float> v(comm.rank() == comm.size() - 1 ? 65 : 64, 1.0f);
  const absl::Status s = onebit.Run(comm, 7777, v);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("rank"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find(comm.rank() == comm.size() - 1 ? "64" : "65"), std::string_view::npos)
      << s;
}

TEST(OneBitAllreduce, ANonFiniteGradientOnOneRankFailsEveryRankAndChangesNoBuffer) {
  Communicator& comm = World();
  OneBitAllreduce onebit(OneBitOptions{});
  std::vector<float> v = RankVector(300, comm.rank(), 1);
  ASSERT_TRUE(onebit.Run(comm, 8888, v).ok());
  const std::vector<float> worker(onebit.worker_error(8888).begin(),
                                  onebit.worker_error(8888).end());
  const std::vector<float> server(onebit.server_error(8888).begin(),
                                  onebit.server_error(8888).end());
  v = RankVector(300, comm.rank(), 2);
  if (comm.rank() == comm.size() - 1) v[123] = std::numeric_limits<float>::quiet_NaN();
  const absl::Status s = onebit.Run(comm, 8888, v);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(absl::StrCat("rank ", comm.size() - 1)), std::string_view::npos) << s;
  EXPECT_EQ(std::vector<float>(onebit.worker_error(8888).begin(), onebit.worker_error(8888).end()),
            worker);
  EXPECT_EQ(std::vector<float>(onebit.server_error(8888).begin(), onebit.server_error(8888).end()),
            server);
}

}  // namespace
}  // namespace seedance::train

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {  // one rank reports; every rank's failures still set its exit status
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rc != 0) std::fprintf(stderr, "rank %d: tests FAILED\n", rank);
  MPI_Finalize();
  return worst;
}
