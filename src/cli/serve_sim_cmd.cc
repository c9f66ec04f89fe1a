// `seedance serve-sim`: placeholder until issue #5 lands; trace-driven LLM serving simulator.
#include "commands.h"

namespace seedance::cli {

Command AddServeSimCommand(CLI::App& app) {
  Command cmd;
  cmd.app = app.add_subcommand("serve-sim", "trace-driven LLM serving simulator (not built yet)");
  cmd.app->allow_extras();
  cmd.run = [] { return RuntimeError("serve-sim: not built yet"); };
  return cmd;
}

}  // namespace seedance::cli
