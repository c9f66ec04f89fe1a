// `seedance profile`: placeholder until issue #4 lands; sample node and GPU telemetry into a
// profile.
#include "commands.h"

namespace seedance::cli {

Command AddProfileCommand(CLI::App& app) {
  Command cmd;
  cmd.app =
      app.add_subcommand("profile", "sample node and GPU telemetry into a profile (not built yet)");
  cmd.app->allow_extras();
  cmd.run = [] { return RuntimeError("profile: not built yet"); };
  return cmd;
}

}  // namespace seedance::cli
