// The flags of `seedance train` (docs/training.md), defined once for the two programs that parse
// them: `seedance` (help, the CLI reference, flag errors before anything starts) and
// `seedance-train`, the MPI program `seedance train` becomes (exec) so that only training links
// Open MPI (libmpi and its plugins add ~40 ms to every start of a program that links them).
#pragma once

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"

namespace seedance::cli {

struct TrainFlags {
  std::string data;
  int label_column = -1;
  double test_fraction = 0.2;
  std::string model = "softmax";
  std::string optimizer = "sgd";
  double lr = 0.1;
  std::string schedule = "cosine";
  int steps = 1000;
  int batch = 64;
  std::string allreduce = "fp32";
  int buckets = 1;
  double weight_decay = 0;
  double clip_norm = 0;
  uint64_t seed = 1;
  int world_size = 0;
  double timeout_s = 300;
  double progress_s = 0;
  std::string format = "text";
};

// Adds the flags to `app` (the `train` subcommand, or seedance-train's own application).
void AddTrainFlags(CLI::App* app, TrainFlags* f);

// The subcommand's description and examples (its --help footer).
extern const char* const kTrainDescription;
extern const char* const kTrainFooter;

}  // namespace seedance::cli
