// seedance: command-line front end. Each subcommand lives in its own *_cmd.cc (commands.h) and
// only parses flags, calls the libraries and prints; the behaviour is documented in docs/.
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"

int main(int argc, char** argv) {
  namespace cli = seedance::cli;
  CLI::App app{
      "Seedance: cost-aware GPU cluster scheduler, simulator and inference runtime.\n"
      "Run `seedance COMMAND --help` for the options and examples of each command."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "seedance 0.1.0");

  const std::vector<cli::Command> commands = {
      cli::AddSimulateCommand(app), cli::AddProfileCommand(app),   cli::AddAnalyzeCommand(app),
      cli::AddServeSimCommand(app), cli::AddCostmodelCommand(app), cli::AddClockCommand(app),
      cli::AddBenchCommand(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? cli::kExitOk : cli::kExitUsage;
  }
  for (const cli::Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return cli::kExitUsage;
}
