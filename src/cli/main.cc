// seedance: command-line front end. Each subcommand lives in its own *_cmd.cc (commands.h) and
// only parses flags, calls the libraries and prints; the behaviour is documented in docs/.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace {

namespace cli = seedance::cli;
namespace base = seedance::base;

std::vector<std::string> SubcommandNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

const CLI::App* FindSubcommand(const CLI::App* app, const std::string& name) {
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

// "unknown command 'simulat'; did you mean 'simulate'?" (also for subcommands such as
// `clock prob`, and for an unknown flag before any command) before CLI11 sees the arguments,
// whose own message would only say that a subcommand is required.
int CheckCommandNames(const CLI::App& app, int argc, char** argv) {
  int i = 1;
  // Root flags before the command.
  while (i < argc && argv[i][0] == '-') {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help" || flag == "--version") return cli::kExitOk;
    if (flag == "--max-input-size") {
      i += 2;
    } else if (flag.rfind("--max-input-size=", 0) == 0) {
      i += 1;
    } else {
      const std::string near = base::ClosestMatch(flag.substr(0, flag.find('=')),
                                                  {"--max-input-size", "--version", "--help"});
      return cli::UsageError("unknown flag '" + base::ForTerminal(base::Clip(flag)) + "'" +
                             (near.empty() ? "" : "; did you mean " + near + "?") +
                             "\nRun 'seedance help' for the commands and global flags.");
    }
  }
  const CLI::App* current = &app;
  std::string path;
  for (; i < argc && argv[i][0] != '-'; ++i) {
    const std::vector<std::string> names = SubcommandNames(current);
    if (names.empty()) return cli::kExitOk;  // positional arguments from here on
    const CLI::App* next = FindSubcommand(current, argv[i]);
    if (next == nullptr) {
      const std::string near = base::ClosestMatch(argv[i], names);
      return cli::UsageError("unknown command '" + path + base::ForTerminal(base::Clip(argv[i])) +
                             "'" + (near.empty() ? "" : "; did you mean '" + path + near + "'?") +
                             "\nRun 'seedance help" +
                             (path.empty() ? "" : " " + path.substr(0, path.size() - 1)) +
                             "' for the list of commands.");
    }
    current = next;
    path += next->get_name() + " ";
  }
  return cli::kExitOk;
}

// CLI11's message for a parse error, with "did you mean" for an unknown flag.
std::string FailureMessage(const CLI::App* root, const CLI::Error& e) {
  // The deepest subcommand selected, e.g. "clock probe", names the command in the message.
  const CLI::App* app = root;
  std::string path;
  for (bool descended = true; descended;) {
    descended = false;
    for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->parsed()) {
        app = sub;
        path += " " + sub->get_name();
        descended = true;
        break;
      }
    }
  }
  std::string msg = base::ForTerminal(base::Clip(e.what(), 2048), true);
  // CLI11 checks required flags before unknown ones, so a mistyped required flag would only be
  // reported as missing; name the unknown flag instead.
  std::string unknown;
  std::vector<std::string> leftovers = app->remaining();
  if (app != root) {
    for (const std::string& r : root->remaining()) leftovers.push_back(r);  // fallthrough
  }
  for (const std::string& extra : leftovers) {
    if (extra.rfind("-", 0) == 0) {
      unknown = extra;
      break;
    }
  }
  const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
  if (required && !unknown.empty()) {
    msg = "unknown flag '" + base::ForTerminal(base::Clip(unknown)) + "' (and " + msg + ")";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr || (required && !unknown.empty())) {
    std::vector<std::string> flags;
    for (const CLI::Option* opt : app->get_options()) {
      if (opt->get_group().empty()) continue;
      for (const std::string& l : opt->get_lnames()) flags.push_back("--" + l);
    }
    std::vector<std::string> extras = app->remaining();
    for (const std::string& r : root->remaining()) extras.push_back(r);
    for (const std::string& extra : extras) {
      if (extra.rfind("--", 0) != 0) continue;
      const std::string near = base::ClosestMatch(extra.substr(0, extra.find('=')), flags);
      if (!near.empty()) msg += "; did you mean " + near + "?";
      break;
    }
  }
  return "seedance" + path + ": " + msg + "\nRun 'seedance help" + path + "' or 'seedance" + path +
         " --help' for the flags.\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Installed as `seedanced` too: that name is `seedance server`.
  std::vector<char*> args(argv, argv + argc);
  const std::string self = argc > 0 ? argv[0] : "";
  static char server_word[] = "server";
  if (self.size() >= 9 && self.compare(self.size() - 9, 9, "seedanced") == 0 &&
      (self.size() == 9 || self[self.size() - 10] == '/')) {
    args.insert(args.begin() + 1, server_word);
  }
  argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  argv = args.data();
  base::SetCommandLine(argc, argv);
  CLI::App app{
      "Seedance: cost-aware GPU cluster scheduler, simulator and inference runtime.\n"
      "Run `seedance help COMMAND` or `seedance COMMAND --help` for the flags and examples of\n"
      "each command. Exit status: 0 success, 1 I/O or runtime failure, 2 usage or input error.",
      "seedance"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "seedance " + base::GetBuildInfo().version);
  app.failure_message(FailureMessage);
  app.fallthrough();  // global flags (--max-input-size) may also follow the subcommand
  std::string max_input;
  app.add_option("--max-input-size", max_input,
                 "raise (or lower) the size cap of every input file, e.g. 4G (docs/cli.md)")
      ->type_name("SIZE")
      ->each([](const std::string& v) {
        auto bytes = base::ParseByteSize(v, "--max-input-size", 1, INT64_MAX);
        if (!bytes.ok()) throw CLI::ValidationError(std::string(bytes.status().message()));
        base::SetInputLimitOverride(*bytes);
      });

  std::vector<cli::Command> commands = {
      cli::AddSimulateCommand(app),  cli::AddProfileCommand(app),      cli::AddAnalyzeCommand(app),
      cli::AddServeSimCommand(app),  cli::AddCostmodelCommand(app),    cli::AddModelCommand(app),
      cli::AddClockCommand(app),     cli::AddBenchCommand(app),        cli::AddServerCommand(app),
      cli::AddNodeAgentCommand(app), cli::AddDevicePluginCommand(app), cli::AddTrainCommand(app),
      cli::AddCacheCommand(app),
      cli::AddExperimentCommand(app),
  };
  for (cli::Command& c : cli::AddClientCommands(app)) commands.push_back(std::move(c));
  for (cli::Command& c : cli::AddMetaCommands(app)) commands.push_back(std::move(c));
  if (int rc = CheckCommandNames(app, argc, argv); rc != cli::kExitOk) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? cli::kExitOk : cli::kExitUsage;
  }
  int rc = cli::kExitUsage;
  for (const cli::Command& c : commands) {
    if (c.app->parsed()) {
      rc = c.run();
      break;
    }
  }
  // Output written through stdio must have reached its destination (e.g. not > /dev/full).
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    std::perror("seedance: standard output: cannot write");
    return rc == cli::kExitOk ? cli::kExitFailure : rc;
  }
  return rc;
}
