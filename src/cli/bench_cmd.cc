// `seedance bench`: placeholder until issue #3 lands; side-by-side engine benchmarks.
#include "commands.h"

namespace seedance::cli {

Command AddBenchCommand(CLI::App& app) {
  Command cmd;
  cmd.app = app.add_subcommand("bench", "side-by-side engine benchmarks (not built yet)");
  cmd.app->allow_extras();
  cmd.run = [] { return RuntimeError("bench: not built yet"); };
  return cmd;
}

}  // namespace seedance::cli
