// The two-phase 1-bit all-reduce (collective.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"
#include "seedance/train/collective.h"

namespace seedance::train {

ByteChunk ChunkOf(size_t total_bytes, int ranks, int j) {
  SEEDANCE_CHECK(ranks > 0 && j >= 0 && j < ranks);
  const size_t n = static_cast<size_t>(ranks);
  const size_t base = total_bytes / n;
  const size_t extra = total_bytes % n;
  const size_t jj = static_cast<size_t>(j);
  return ByteChunk{jj * base + std::min(jj, extra), base + (jj < extra ? 1 : 0)};
}

namespace {

// Elements of a d-element vector that chunk `c` (whole bytes) covers.
size_t ChunkElements(const ByteChunk& c, size_t d) {
  const size_t begin = 8 * c.offset;
  const size_t end = std::min(d, 8 * (c.offset + c.bytes));
  return end > begin ? end - begin : 0;
}

// One message per rank: `header` bytes, then rank j's chunk of packed signs (or, with `same`,
// `same_bytes` from every rank: what rank j receives of its own chunk).
struct Layout {
  std::vector<int> counts, displs;
  size_t total = 0;
};

Layout ChunkLayout(size_t total_bytes, int ranks, bool same, size_t same_bytes, size_t header = 0) {
  Layout layout;
  for (int j = 0; j < ranks; ++j) {
    const size_t bytes = header + (same ? same_bytes : ChunkOf(total_bytes, ranks, j).bytes);
    layout.counts.push_back(static_cast<int>(bytes));
    layout.displs.push_back(static_cast<int>(layout.total));
    layout.total += bytes;
  }
  return layout;
}

float ScaleAt(const std::vector<uint8_t>& buffer, int displ) {
  float scale;
  std::memcpy(&scale, buffer.data() + displ, sizeof(float));
  return scale;
}

}  // namespace

std::span<const float> OneBitAllreduce::worker_error(int bucket) const {
  auto it = buffers_.find(bucket);
  return it == buffers_.end() ? std::span<const float>() : it->second.worker;
}

std::span<const float> OneBitAllreduce::server_error(int bucket) const {
  auto it = buffers_.find(bucket);
  return it == buffers_.end() ? std::span<const float>() : it->second.server;
}

absl::Status OneBitAllreduce::Run(Communicator& comm, int bucket, std::span<float> v) {
  if (absl::Status s = comm.CheckSameLength(bucket, v.size()); !s.ok()) return s;
  if (absl::Status s = FitsOneCall(bucket, v.size()); !s.ok()) return s;
  const int n = comm.size();
  const int me = comm.rank();
  const size_t d = v.size();
  const size_t total_bytes = PackedBytes(d);
  const ByteChunk mine = ChunkOf(total_bytes, n, me);
  const size_t my_elements = ChunkElements(mine, d);
  Buffers& b = buffers_[bucket];
  if (options_.error_feedback && b.worker.size() != d) {
    b.worker.assign(d, 0.0f);
    b.server.assign(my_elements, 0.0f);
  }

  // Phase 1: the worker scales first (every rank learns every scale, so a non-finite gradient
  // anywhere ends the call on every rank alike before any buffer changes), then the signs of
  // p = v + e_worker, chunk j to rank j.
  std::vector<float> scales(static_cast<size_t>(n));
  const float worker_scale = SignScaleOfSum(v, b.worker, options_.scale);
  comm.CountSent(sizeof(float) * static_cast<uint64_t>(n - 1));
  comm.BeginCall("the 1-bit all-reduce's MPI_Allgather of scales");
  MPI_Allgather(&worker_scale, 1, MPI_FLOAT, scales.data(), 1, MPI_FLOAT, comm.comm());
  comm.EndCall();
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(scales[static_cast<size_t>(i)])) {
      return absl::InvalidArgumentError(
          absl::StrCat("bucket ", bucket, ": rank ", i,
                       "'s gradient is not finite (inf or NaN); no rank applied "
                       "this all-reduce and the error buffers are unchanged"));
    }
  }
  b.send.resize(total_bytes);
  CompressSignWithScale(v, worker_scale, b.worker, b.send);
  const Layout send = ChunkLayout(total_bytes, n, false, 0);
  const Layout recv = ChunkLayout(total_bytes, n, true, mine.bytes);
  b.recv.resize(recv.total);
  comm.CountSent(total_bytes - mine.bytes);
  comm.BeginCall("the 1-bit all-reduce's MPI_Alltoallv");
  MPI_Alltoallv(b.send.data(), send.counts.data(), send.displs.data(), MPI_BYTE, b.recv.data(),
                recv.counts.data(), recv.displs.data(), MPI_BYTE, comm.comm());
  comm.EndCall();

  // Phase 2 (server): the mean of my chunk, compressed with the server error, to every rank.
  b.chunk.assign(my_elements, 0.0f);
  const size_t my_packed = PackedBytes(my_elements);
  for (int i = 0; i < n; ++i) {
    const int displ = recv.displs[static_cast<size_t>(i)];
    const float scale = scales[static_cast<size_t>(i)] / static_cast<float>(n);
    AddUnpackedSigns(std::span<const uint8_t>(b.recv.data() + displ, my_packed), scale, b.chunk);
  }
  std::vector<uint8_t>& server_bits = b.server_bits;
  server_bits.assign(mine.bytes, 0);
  const SignCode server = CompressSign(b.chunk, options_.scale, b.server,
                                       std::span<uint8_t>(server_bits.data(), my_packed));
  // A mean of finite values is finite unless the server error overflowed: then this rank sends a
  // NaN scale (its buffer unchanged) and every rank fails the call below, none waits alone.
  const float server_scale = server.finite ? server.scale : std::numeric_limits<float>::quiet_NaN();
  // Each rank's server scale travels in front of its chunk.
  const Layout all = ChunkLayout(total_bytes, n, false, 0, sizeof(float));
  std::vector<uint8_t>& gathered = b.gathered;
  gathered.resize(all.total);
  std::vector<uint8_t>& contribution = b.contribution;
  contribution.resize(sizeof(float) + mine.bytes);
  std::memcpy(contribution.data(), &server_scale, sizeof(float));
  if (mine.bytes > 0)
    std::memcpy(contribution.data() + sizeof(float), server_bits.data(), mine.bytes);
  comm.CountSent(static_cast<uint64_t>(n - 1) * contribution.size());
  comm.BeginCall("the 1-bit all-reduce's MPI_Allgatherv");
  MPI_Allgatherv(contribution.data(), static_cast<int>(contribution.size()), MPI_BYTE,
                 gathered.data(), all.counts.data(), all.displs.data(), MPI_BYTE, comm.comm());
  comm.EndCall();

  for (int j = 0; j < n; ++j) {
    if (!std::isfinite(ScaleAt(gathered, all.displs[static_cast<size_t>(j)]))) {
      return absl::InternalError(
          absl::StrCat("bucket ", bucket, ": rank ", j, "'s server error buffer overflowed"));
    }
  }
  for (int j = 0; j < n; ++j) {
    const ByteChunk c = ChunkOf(total_bytes, n, j);
    const size_t elements = ChunkElements(c, d);
    const int displ = all.displs[static_cast<size_t>(j)];
    UnpackSigns(
        std::span<const uint8_t>(gathered.data() + displ + sizeof(float), PackedBytes(elements)),
        ScaleAt(gathered, displ), v.subspan(8 * c.offset, elements));
  }
  return absl::OkStatus();
}

}  // namespace seedance::train
