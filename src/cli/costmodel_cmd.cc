// `seedance costmodel`: placeholder until issue #5 lands; GPU cost model checks against operator
// profiles.
#include "commands.h"

namespace seedance::cli {

Command AddCostmodelCommand(CLI::App& app) {
  Command cmd;
  cmd.app = app.add_subcommand("costmodel",
                               "GPU cost model checks against operator profiles (not built yet)");
  cmd.app->allow_extras();
  cmd.run = [] { return RuntimeError("costmodel: not built yet"); };
  return cmd;
}

}  // namespace seedance::cli
