#include "seedance/train/collective.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "seedance/base/mutex.h"

namespace seedance::train {

Watchdog::Watchdog(int rank, absl::Duration timeout) : rank_(rank), timeout_(timeout) {
  if (timeout_ != absl::InfiniteDuration()) thread_ = std::thread([this] { Loop(); });
}

Watchdog::~Watchdog() {
  {
    base::MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::Begin(const char* name) {
  if (!thread_.joinable()) return;
  base::MutexLock lock(mu_);
  call_ = name;
  deadline_ = std::chrono::steady_clock::now() + absl::ToChronoMilliseconds(timeout_);
  armed_ = true;
  cv_.notify_all();
}

void Watchdog::End() {
  if (!thread_.joinable()) return;
  base::MutexLock lock(mu_);
  armed_ = false;
}

void Watchdog::Loop() {
  base::MutexLock lock(mu_);
  while (!stop_) {
    if (!armed_) {
      lock.Wait(cv_);
      continue;
    }
    const auto deadline = deadline_;
    lock.WaitUntil(cv_, deadline);
    if (!stop_ && armed_ && deadline_ == deadline && std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr,
                   "seedance train: rank %d: %s did not finish within %s (a peer rank hung or "
                   "was lost); ending this rank so that mpirun ends the job\n",
                   rank_, call_, absl::FormatDuration(timeout_).c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
}

namespace {

// An FP16 sum for MPI_Allreduce: each sum rounded to FP16, as a reduction in FP16 rounds.
void SumFloat16(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const size_t n = static_cast<size_t>(*len);
  AddFloat16(std::span<const uint16_t>(static_cast<const uint16_t*>(in), n),
             std::span<uint16_t>(static_cast<uint16_t*>(inout), n));
}

// The first non-finite element of v, or -1.
int64_t FirstNonFinite(std::span<const float> v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

// Bytes a ring/tree all-reduce of `bytes` hands to MPI for others is the library's business; what
// this rank hands over is its buffer once per peer in the worst case. MPI_Allreduce's own traffic
// is counted as the bandwidth-optimal 2(N-1)/N of the buffer (what Open MPI's ring sends for
// large messages), stated in docs/training.md.
uint64_t AllreduceBytes(uint64_t bytes, int n) {
  return n <= 1 ? 0 : 2 * (static_cast<uint64_t>(n) - 1) * bytes / static_cast<uint64_t>(n);
}

}  // namespace

absl::Status FitsOneCall(int bucket, size_t elements) {
  if (elements <= static_cast<size_t>(std::numeric_limits<int>::max()) / 2) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("bucket ", bucket, " has ", elements,
                                                 " elements, more than one MPI call takes; split "
                                                 "the gradient into more buckets"));
}

Communicator::Communicator(MPI_Comm comm, absl::Duration timeout) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  watchdog_ = std::make_unique<Watchdog>(rank_, timeout);
}

Communicator::~Communicator() = default;

void Communicator::BeginCall(const char* name) { watchdog_->Begin(name); }
void Communicator::EndCall() { watchdog_->End(); }

absl::Status Communicator::CheckSameLength(int bucket, size_t d) {
  auto it = checked_lengths_.find(bucket);
  if (it != checked_lengths_.end()) {
    if (it->second == d) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank_, ": bucket ", bucket, " has ", d,
                                                   " elements; it had ", it->second,
                                                   " at its first use"));
  }
  std::vector<uint64_t> lengths(static_cast<size_t>(size_));
  const uint64_t mine = d;
  BeginCall("the bucket length check (MPI_Allgather)");
  MPI_Allgather(&mine, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, comm_);
  EndCall();
  setup_bytes_sent_ += sizeof(uint64_t) * static_cast<uint64_t>(size_ - 1);
  for (int r = 0; r < size_; ++r) {
    if (lengths[static_cast<size_t>(r)] != mine) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank_, ": bucket ", bucket, " has ", mine, " elements here but ",
                       lengths[static_cast<size_t>(r)], " on rank ", r,
                       "; every rank must all-reduce the same buckets with the same lengths"));
    }
  }
  checked_lengths_[bucket] = d;
  return absl::OkStatus();
}

absl::Status Communicator::AllreduceFp32(int bucket, std::span<float> v) {
  if (absl::Status s = CheckSameLength(bucket, v.size()); !s.ok()) return s;
  if (absl::Status s = FitsOneCall(bucket, v.size()); !s.ok()) return s;
  BeginCall("MPI_Allreduce (FP32)");
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_SUM, comm_);
  EndCall();
  CountSent(AllreduceBytes(v.size() * sizeof(float), size_));
  const float inv = 1.0f / static_cast<float>(size_);
  for (float& x : v) x *= inv;
  if (const int64_t bad = FirstNonFinite(v); bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bucket ", bucket, ": the FP32 all-reduce gave ",
                                                   v[static_cast<size_t>(bad)], " at element ", bad,
                                                   " (a rank's gradient is not finite)"));
  }
  return absl::OkStatus();
}

absl::Status Communicator::AllreduceFp16(int bucket, std::span<float> v) {
  if (absl::Status s = CheckSameLength(bucket, v.size()); !s.ok()) return s;
  if (absl::Status s = FitsOneCall(bucket, v.size()); !s.ok()) return s;
  std::vector<uint16_t>& half = half_;
  half.resize(v.size());
  const float inv = 1.0f / static_cast<float>(size_);
  for (float& x : v) x *= inv;
  CastToFloat16(v, half);
  MPI_Datatype type;
  MPI_Type_contiguous(2, MPI_BYTE, &type);
  MPI_Type_commit(&type);
  MPI_Op op;
  MPI_Op_create(&SumFloat16, /*commute=*/1, &op);
  BeginCall("MPI_Allreduce (FP16)");
  MPI_Allreduce(MPI_IN_PLACE, half.data(), static_cast<int>(half.size()), type, op, comm_);
  EndCall();
  MPI_Op_free(&op);
  MPI_Type_free(&type);
  CountSent(AllreduceBytes(half.size() * sizeof(uint16_t), size_));
  CastFromFloat16(half, v);
  if (const int64_t bad = FirstNonFinite(v); bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bucket ", bucket, ": the FP16 all-reduce gave ",
                                                   v[static_cast<size_t>(bad)], " at element ", bad,
                                                   " (a rank's gradient is not finite or exceeds "
                                                   "FP16's 65504)"));
  }
  return absl::OkStatus();
}

}  // namespace seedance::train
