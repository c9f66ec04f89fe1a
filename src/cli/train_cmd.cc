// `seedance train`: parses the flags (so that --help, the reference and flag errors need no MPI),
// then becomes `seedance-train` (train_main.cc), the program that links Open MPI, with the same
// arguments, in the same process, so that mpirun's environment reaches MPI_Init.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "commands.h"
#include "seedance/base/build_info.h"
#include "train_flags.h"

namespace seedance::cli {
namespace {

// SEEDANCE_TRAIN_BIN, else seedance-train beside this program, else on PATH.
std::string TrainProgram() {
  if (const char* env = std::getenv("SEEDANCE_TRAIN_BIN"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside = self.parent_path() / "seedance-train";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return "seedance-train";
}

int ExecTrain() {
  const std::vector<std::string>& line = base::CommandLine();
  std::vector<std::string> args = {"seedance-train"};
  bool after = false;
  for (size_t i = 1; i < line.size(); ++i) {
    if (after) args.push_back(line[i]);
    if (!after && line[i] == "train") after = true;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string program = TrainProgram();
  ::execvp(program.c_str(), argv.data());
  std::cerr << "seedance train: cannot run " << program << ": " << std::strerror(errno)
            << " (it is built and installed beside seedance; SEEDANCE_TRAIN_BIN names another)\n";
  return kExitFailure;
}

}  // namespace

Command AddTrainCommand(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* train = app.add_subcommand("train", kTrainDescription);
  train->footer(kTrainFooter);
  AddTrainFlags(train, flags.get());
  return Command{train, [flags] { return ExecTrain(); }};
}

}  // namespace seedance::cli
