// `seedance clock`: placeholder until issue #3 lands; clock probe and clock-estimator simulation.
#include "commands.h"

namespace seedance::cli {

Command AddClockCommand(CLI::App& app) {
  Command cmd;
  cmd.app =
      app.add_subcommand("clock", "clock probe and clock-estimator simulation (not built yet)");
  cmd.app->allow_extras();
  cmd.run = [] { return RuntimeError("clock: not built yet"); };
  return cmd;
}

}  // namespace seedance::cli
