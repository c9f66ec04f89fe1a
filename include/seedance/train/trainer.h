// The data-parallel trainer behind `seedance train` (docs/training.md): a softmax regression or
// an MLP (ReLU hidden layers, softmax cross-entropy) on a numeric CSV data set, trained with SGD
// or Adam, its gradients averaged over MPI ranks by the FP32, FP16 or 1-bit all-reduce
// (collective.h), optionally clipped to a global norm first (clip.h).
//
// Determinism: every rank reads the same file, splits it with the same seed, initialises the same
// weights and walks the same shuffled order; rank r of N takes its N-th of each global batch. The
// all-reduces leave identical values on every rank, so the ranks' models stay identical and the
// figures rank 0 prints are every rank's.
//
// Thread-safety: functions of their arguments; Train drives the Communicator of its caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/train/collective.h"

namespace seedance::train {

// Features (row-major, standardised by the training part's mean and deviation) and class labels
// 0..classes-1.
struct Dataset {
  int features = 0;
  int classes = 0;
  std::vector<float> x;
  std::vector<int> y;
  size_t rows() const { return y.size(); }
};

// Reads a CSV whose first line names the columns; `label_column` (0-based; negative counts from
// the end, -1 the last) holds integer class labels >= 0 (classes = the largest + 1); every other
// column is a feature. Errors name the file, line and column (exit code 2 material).
absl::StatusOr<Dataset> ParseCsvDataset(std::string_view text, std::string_view source,
                                        int label_column);
absl::StatusOr<Dataset> ReadCsvDataset(const std::string& path, int label_column);

struct Split {
  Dataset train, test;
};
// Shuffles the rows with `seed`, puts round(test_fraction * rows) of them (at least one when
// test_fraction > 0) in `test`, and standardises both by the training rows' mean and deviation.
Split SplitDataset(const Dataset& all, double test_fraction, uint64_t seed);

enum class OptimizerKind { kSgd, kAdam };
enum class AllreduceMethod { kFp32, kFp16, kOneBit, kOneBitEf };
enum class LrSchedule { kConstant, kCosine };

struct TrainOptions {
  std::vector<int> hidden;  // empty: softmax regression; {64, 32}: `mlp:64-32`
  OptimizerKind optimizer = OptimizerKind::kSgd;
  double lr = 0.1;
  LrSchedule schedule = LrSchedule::kCosine;  // cosine: lr * (1 + cos(pi t / steps)) / 2
  int steps = 1000;
  int batch = 64;  // the global batch, split evenly over the ranks
  AllreduceMethod allreduce = AllreduceMethod::kFp32;
  double weight_decay = 0;  // L2: weight_decay * w added to the averaged gradient (biases too)
  double clip_norm = 0;     // > 0: the averaged gradient clipped to this global L2 norm
  uint64_t seed = 1;
  double progress_s = 0;  // > 0: rank 0 reports the step to stderr this often
  int buckets = 1;        // the parameters all-reduced as this many buckets (layers split evenly)
};

// "softmax" or "mlp:64-32" (hidden widths 1..65536).
absl::StatusOr<std::vector<int>> ParseModelSpec(std::string_view spec);
absl::StatusOr<AllreduceMethod> ParseAllreduceMethod(std::string_view name);
std::string_view AllreduceMethodName(AllreduceMethod method);

struct TrainResult {
  double train_loss = 0;      // mean cross-entropy over the whole training part, final model
  double train_accuracy = 0;  // fraction in [0, 1]
  double test_accuracy = 0;   // fraction in [0, 1] (0 with an empty test part)
  int64_t parameters = 0;
  int steps = 0;
  int ranks = 1;
  std::vector<uint64_t> bytes_sent_per_rank;  // all-reduce bytes each rank handed to MPI
  double seconds = 0;                         // wall time of the training loop on rank 0
};

// The options' own checks against a data set and a rank count (InvalidArgument naming the flag):
// what Train checks first, callable before MPI starts.
absl::Status CheckTrainOptions(const Split& split, const TrainOptions& options, int ranks);

// Trains on split.train and scores on both parts. Options are checked first (InvalidArgument:
// batch not a multiple of the rank count, steps < 1, lr <= 0, ...); a non-finite gradient or loss
// fails the run naming the step (and, from the all-reduce, the rank).
absl::StatusOr<TrainResult> Train(const Split& split, const TrainOptions& options,
                                  Communicator& comm);

}  // namespace seedance::train
