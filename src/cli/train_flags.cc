#include "train_flags.h"

namespace seedance::cli {

const char* const kTrainDescription =
    "Data-parallel training with compressed gradients, launched by mpirun: a softmax regression "
    "or an MLP on a CSV data set, gradients averaged over the ranks by an FP32, FP16 or 1-bit "
    "(sign, with or without error feedback) all-reduce on Open MPI.";

const char* const kTrainFooter = R"(
Examples:
  mpirun -np 4 seedance train --data digits.csv --label-column -1 --model mlp:64-32 \
      --allreduce onebit-ef --lr 0.1 --steps 2000 --batch 64
  mpirun -np 4 seedance train --data digits.csv --allreduce fp32 --format json

Prints the final training loss (mean cross-entropy over the training part), the training and
test accuracy and the bytes each rank handed to MPI for the others (JSON keys train_loss,
train_accuracy, test_accuracy, bytes_sent_per_rank). Every rank reads the file and splits it
with --seed; rank r of N takes its N-th of each global batch. Without mpirun it runs as one rank.
A collective that does not finish within --timeout-s (a rank hung or was lost) ends the job with
the rank named. Exit status: 0 success, 1 runtime failure, 2 bad flags or data. docs/training.md.)";

void AddTrainFlags(CLI::App* app, TrainFlags* f) {
  app->add_option("--data", f->data, "CSV data set: a header line, then numbers (docs/training.md)")
      ->required()
      ->type_name("FILE");
  app->add_option("--label-column", f->label_column,
                  "0-based column of the integer class label; negative counts from the end")
      ->capture_default_str();
  app->add_option("--test-fraction", f->test_fraction, "rows held out for test accuracy")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  app->add_option("--model", f->model, "softmax, or mlp:W1-W2-... (ReLU hidden layers)")
      ->capture_default_str();
  app->add_option("--optimizer", f->optimizer, "sgd or adam")
      ->check(CLI::IsMember({"sgd", "adam"}))
      ->capture_default_str();
  app->add_option("--lr", f->lr, "learning rate")->capture_default_str();
  app->add_option("--schedule", f->schedule, "cosine (decay to 0 over --steps) or constant")
      ->check(CLI::IsMember({"cosine", "constant"}))
      ->capture_default_str();
  app->add_option("--steps", f->steps, "optimizer steps")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  app->add_option("--batch", f->batch, "global batch, split evenly over the ranks")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  app->add_option("--allreduce", f->allreduce,
                  "fp32, fp16, onebit (sign, no error feedback) or onebit-ef (with it)")
      ->check(CLI::IsMember({"fp32", "fp16", "onebit", "onebit-ef"}))
      ->capture_default_str();
  app->add_option("--buckets", f->buckets, "all-reduce the parameters as this many buckets")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app->add_option("--weight-decay", f->weight_decay, "L2 penalty added to the gradient")
      ->capture_default_str();
  app->add_option("--clip-norm", f->clip_norm,
                  "clip the averaged gradient to this global L2 norm (0: off)")
      ->capture_default_str();
  app->add_option("--seed", f->seed, "split, initial weights and batch order")
      ->capture_default_str();
  app->add_option("--world-size", f->world_size,
                  "refuse to run unless mpirun started exactly this many ranks (0: any)")
      ->check(CLI::Range(0, 1000000));
  app->add_option("--timeout-s", f->timeout_s,
                  "end the job when one collective takes longer (a rank hung or was lost)")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  app->add_option("--progress-s", f->progress_s,
                  "rank 0 reports the step on stderr this often (0: only the result)")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  app->add_option("--format", f->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

}  // namespace seedance::cli
