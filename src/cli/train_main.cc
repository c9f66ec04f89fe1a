// seedance-train: the MPI program behind `seedance train` (train_cmd.cc execs it). Parses the
// same flags, initialises MPI, reads the data set, trains (seedance_train) and prints on rank 0.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "seedance/base/exit_code.h"
#include "seedance/train/trainer.h"
#include "train_flags.h"

namespace seedance::cli {
namespace {

absl::StatusOr<train::TrainOptions> OptionsOf(const TrainFlags& f) {
  train::TrainOptions o;
  absl::StatusOr<std::vector<int>> hidden = train::ParseModelSpec(f.model);
  if (!hidden.ok()) return hidden.status();
  o.hidden = *hidden;
  absl::StatusOr<train::AllreduceMethod> method = train::ParseAllreduceMethod(f.allreduce);
  if (!method.ok()) return method.status();
  o.allreduce = *method;
  o.optimizer = f.optimizer == "adam" ? train::OptimizerKind::kAdam : train::OptimizerKind::kSgd;
  o.schedule = f.schedule == "constant" ? train::LrSchedule::kConstant : train::LrSchedule::kCosine;
  o.lr = f.lr;
  o.steps = f.steps;
  o.batch = f.batch;
  o.buckets = f.buckets;
  o.clip_norm = f.clip_norm;
  o.weight_decay = f.weight_decay;
  o.progress_s = f.progress_s;
  o.seed = f.seed;
  return o;
}

void Print(const TrainFlags& f, const train::TrainResult& r) {
  if (f.format == "json") {
    nlohmann::ordered_json j;
    j["train_loss"] = r.train_loss;
    j["train_accuracy"] = r.train_accuracy;
    j["test_accuracy"] = r.test_accuracy;
    j["bytes_sent_per_rank"] = r.bytes_sent_per_rank;
    j["ranks"] = r.ranks;
    j["steps"] = r.steps;
    j["parameters"] = r.parameters;
    j["allreduce"] = f.allreduce;
    j["seconds"] = r.seconds;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << absl::StrFormat(
      "seedance train: %d ranks, %s (%d parameters), %d steps of %d, %s lr %g (%s), all-reduce %s\n"
      "train_loss %.6f  train_accuracy %.4f  test_accuracy %.4f  (%.2f s)\n"
      "bytes_sent_per_rank %s\n",
      r.ranks, f.model, r.parameters, r.steps, f.batch, f.optimizer, f.lr, f.schedule, f.allreduce,
      r.train_loss, r.train_accuracy, r.test_accuracy, r.seconds,
      absl::StrJoin(r.bytes_sent_per_rank, " "));
}

// What is needed before MPI starts: the options and the data set, read and split. Bad flags and
// data fail here, on every rank alike and without MPI, exit 2 (I/O errors exit 1). Every rank
// reports: mpirun ends the job at the first rank's exit, so rank 0 alone might be ended before it
// printed; in practice one or two copies of the message appear.
int Prepare(const TrainFlags& f, train::TrainOptions* options, train::Split* split) {
  auto fail = [](const absl::Status& s, int code) {
    std::cerr << "seedance train: " << s.message() << "\n";
    return code;
  };
  absl::StatusOr<train::TrainOptions> o = OptionsOf(f);
  if (!o.ok()) return fail(o.status(), base::kExitUsage);
  absl::StatusOr<train::Dataset> data = train::ReadCsvDataset(f.data, f.label_column);
  if (!data.ok()) {
    const bool input = data.status().code() == absl::StatusCode::kInvalidArgument;
    return fail(data.status(), input ? base::kExitUsage : base::kExitFailure);
  }
  *options = *o;
  *split = train::SplitDataset(*data, f.test_fraction, f.seed);
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const int ranks = size != nullptr ? std::max(1, std::atoi(size)) : 1;
  if (absl::Status s = train::CheckTrainOptions(*split, *options, ranks); !s.ok()) {
    return fail(s, base::kExitUsage);
  }
  return base::kExitOk;
}

// Runs on every rank after MPI_Init; returns the exit status.
int Run(const TrainFlags& f, const train::TrainOptions& options, const train::Split& split) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (f.world_size != 0 && f.world_size != size) {
    if (rank == 0) {
      std::cerr << absl::StrFormat(
          "seedance train: mpirun started %d ranks but --world-size is %d\n", size, f.world_size);
    }
    return base::kExitUsage;
  }
  train::Communicator comm(MPI_COMM_WORLD, absl::Seconds(f.timeout_s));
  absl::StatusOr<train::TrainResult> result = train::Train(split, options, comm);
  if (!result.ok()) {
    // Option errors are every rank's (rank 0 reports); a failed step names its rank.
    const bool setup = result.status().message().find("step ") != 0;
    if (rank == 0 || !setup) {
      std::cerr << "seedance train: " << (setup ? "" : absl::StrFormat("rank %d: ", rank))
                << result.status().message() << "\n";
    }
    return setup ? base::kExitUsage : base::kExitFailure;
  }
  if (rank == 0) Print(f, *result);
  return base::kExitOk;
}

}  // namespace
}  // namespace seedance::cli

int main(int argc, char** argv) {
  seedance::cli::TrainFlags flags;
  CLI::App app{seedance::cli::kTrainDescription, "seedance train"};
  app.footer(seedance::cli::kTrainFooter);
  seedance::cli::AddTrainFlags(&app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? seedance::base::kExitOk : seedance::base::kExitUsage;
  }
  seedance::train::TrainOptions options;
  seedance::train::Split split;
  if (const int rc = seedance::cli::Prepare(flags, &options, &split); rc != 0) return rc;
  // MPI_Init waits for every rank: one that hangs or is stopped before it would hold the others
  // there, where no collective's timeout runs yet.
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  {
    seedance::train::Watchdog guard(rank != nullptr ? std::atoi(rank) : 0,
                                    absl::Seconds(flags.timeout_s));
    guard.Begin("MPI_Init");
    MPI_Init(&argc, &argv);
    guard.End();
  }
  const int rc = seedance::cli::Run(flags, options, split);
  MPI_Finalize();
  return rc;
}
