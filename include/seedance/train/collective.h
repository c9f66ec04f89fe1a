// Gradient all-reduce on a real engine, Open MPI (docs/training.md): the plain FP32 and FP16
// all-reduces and the two-phase 1-bit all-reduce in the shape of DeepSpeed's compressed_allreduce.
// The library never picks the network: the MPI library and its transports (shared memory, TCP)
// do.
//
// Every call returns the MEAN over ranks, in place, on every rank (DDP's semantics), and every
// rank must make the same calls in the same order with the same bucket ids and lengths (as MPI's
// collectives require).
//
// The 1-bit all-reduce of a bucket of d elements on N ranks, DeepSpeed's two phases:
//  1. each rank computes the scale of p = v + e_worker and the ranks exchange their scales
//     (MPI_Allgather, 4 bytes each); then each rank packs the signs of p, keeping the worker
//     error e_worker, splits the packed bits into N chunks of whole bytes, as equal as bytes
//     allow (floor or ceil of ceil(d/8) / N), and sends chunk j to rank j (MPI_Alltoallv);
//  2. rank j averages the N decompressed chunks it received, adds its server error e_server,
//     compresses that again (keeping e_server) and sends it, its scale in front, to every rank
//     (MPI_Allgatherv); every rank decompresses the N chunks into the result.
// Bytes a rank hands to MPI for other ranks per call: at most (N-1)(4 + ceil(B/N)) in each phase,
// B = ceil(d/8), which is <= 2(N-1)/N B + 8N for N <= 9 (the bound of issue 38; tested).
// Without error feedback (OneBitOptions::error_feedback false) neither buffer is kept.
//
// Checks that fail cleanly instead of hanging: on a bucket's first use the ranks exchange its
// length and every rank refuses a mismatch naming each rank's length (16 bytes a rank, once per
// bucket, counted apart from the per-call bytes); a non-finite gradient on any rank is reported by
// every rank naming that rank, with every error buffer left as it was (the scales travel first,
// so every rank sees the bad one and no rank waits for another); a collective that does not finish
// within the timeout (a peer hung or lost) ends the process with a message naming the rank and the
// call, after which mpirun ends the job. A rank that dies is seen by mpirun, which ends the job and
// names it.
//
// Thread-safety: a Communicator belongs to one thread (MPI is initialised for one); the watchdog
// thread it starts only reads the deadline under its mutex.
#pragma once

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "seedance/base/mutex.h"
#include "seedance/train/compress.h"

namespace seedance::train {

// Ends the process (exit 1, after a message naming the rank and the call) when a call between
// Begin and End outlives `timeout`: a peer that hung or was lost leaves MPI waiting forever, and
// mpirun ends the job once one rank exits without MPI_Finalize. Each Communicator has one around
// its collectives; seedance-train puts one around MPI_Init. With an infinite timeout it does
// nothing (no thread). Thread-safety: Begin and End from one thread; its own thread only reads
// the deadline under the mutex.
class Watchdog {
 public:
  Watchdog(int rank, absl::Duration timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void Begin(const char* name);  // `name` must outlive the call
  void End();

 private:
  void Loop();

  const int rank_;
  const absl::Duration timeout_;
  base::Mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  const char* call_ ABSL_GUARDED_BY(mu_) = "";
  std::chrono::steady_clock::time_point deadline_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class Communicator {
 public:
  // `comm` must stay valid for the Communicator's life (MPI_COMM_WORLD, say); MPI initialised.
  // `timeout` bounds each collective (absl::InfiniteDuration() for none).
  Communicator(MPI_Comm comm, absl::Duration timeout);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return comm_; }

  // Bytes this rank handed to MPI calls for other ranks, per-call traffic only (the once-per-bucket
  // length check is in setup_bytes_sent).
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t setup_bytes_sent() const { return setup_bytes_sent_; }

  // Mean over ranks by MPI_Allreduce(MPI_SUM) of FP32 values.
  absl::Status AllreduceFp32(int bucket, std::span<float> v);
  // PyTorch's fp16_compress_hook: v / N cast to FP16, summed in FP16 by a user MPI_Op (each sum
  // rounded to FP16), cast back.
  absl::Status AllreduceFp16(int bucket, std::span<float> v);

  // Internal to the collectives (collective.cc, onebit.cc): the length check of a bucket's first
  // use, and the byte counter with the timeout around one MPI call.
  absl::Status CheckSameLength(int bucket, size_t d);
  void CountSent(uint64_t bytes) { bytes_sent_ += bytes; }
  void BeginCall(const char* name);
  void EndCall();

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  uint64_t bytes_sent_ = 0;
  uint64_t setup_bytes_sent_ = 0;
  std::map<int, size_t> checked_lengths_;  // bucket -> length every rank agreed on
  std::vector<uint16_t>
      half_;  // the FP16 all-reduce's staging, kept between calls (no page faults)
  std::unique_ptr<Watchdog> watchdog_;
};

struct OneBitOptions {
  SignScale scale = SignScale::kL2Rms;  // DeepSpeed's
  bool error_feedback = true;
};

// The 1-bit all-reduce with its worker and server error buffers, one pair per bucket id (sized at
// the bucket's first use).
class OneBitAllreduce {
 public:
  explicit OneBitAllreduce(OneBitOptions options) : options_(options) {}

  // Replaces v (the same length on every rank) by the compressed mean over ranks.
  absl::Status Run(Communicator& comm, int bucket, std::span<float> v);

  // The buffers of `bucket` (empty before its first use or without error feedback), for tests.
  std::span<const float> worker_error(int bucket) const;
  std::span<const float> server_error(int bucket) const;

 private:
  struct Buffers {
    std::vector<float> worker;
    std::vector<float> server;
    // Staging kept between calls: fresh buffers of a 100 M-element bucket cost more in page
    // faults than the compression itself.
    std::vector<uint8_t> send, recv, server_bits, contribution, gathered;
    std::vector<float> chunk;
  };
  OneBitOptions options_;
  std::map<int, Buffers> buffers_;
};

// The chunk of rank j of a B-byte packed vector on N ranks: byte offset and byte count (the first
// B % N ranks get one byte more). Exposed for the byte-bound test.
struct ByteChunk {
  size_t offset = 0;
  size_t bytes = 0;
};
ByteChunk ChunkOf(size_t total_bytes, int ranks, int j);

// OK when a bucket of `elements` fits the int counts of one MPI call (half of INT_MAX, so that
// every byte count of the 1-bit all-reduce fits too), else the error naming the bucket.
absl::Status FitsOneCall(int bucket, size_t elements);

}  // namespace seedance::train
