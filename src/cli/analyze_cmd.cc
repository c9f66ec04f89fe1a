// `seedance analyze`: placeholder until issue #4 lands; cost-savings analysis of a profile.
#include "commands.h"

namespace seedance::cli {

Command AddAnalyzeCommand(CLI::App& app) {
  Command cmd;
  cmd.app = app.add_subcommand("analyze", "cost-savings analysis of a profile (not built yet)");
  cmd.app->allow_extras();
  cmd.run = [] { return RuntimeError("analyze: not built yet"); };
  return cmd;
}

}  // namespace seedance::cli
