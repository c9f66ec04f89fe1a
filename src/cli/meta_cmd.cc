// `seedance version`, `seedance help [COMMAND...]` and `seedance completion bash|zsh`: commands
// about the CLI itself, built from the registered command tree so they never drift from it.
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "man_page.h"
#include "nlohmann/json.hpp"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::cli {
namespace {

std::vector<std::string> SubcommandNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_group().empty()) names.push_back(sub->get_name());  // "": hidden
  }
  return names;
}

std::vector<std::string> FlagNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->get_group().empty()) continue;  // hidden (deprecated aliases)
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// One bash `case` arm per command path, completing subcommands and flags.
void BashCases(const CLI::App* app, const std::string& path, std::string* out) {
  std::vector<std::string> words = SubcommandNames(app);
  for (const std::string& f : FlagNames(app)) words.push_back(f);
  *out += "    \"" + path + "\") words=\"" + absl::StrJoin(words, " ") + "\" ;;\n";
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_group().empty()) continue;
    BashCases(sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

std::string BashCompletion(const CLI::App* root) {
  std::string cases;
  BashCases(root, "", &cases);
  return "# bash completion for seedance; load with: source <(seedance completion bash)\n"
         "_seedance() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" w words\n"
         "  for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n"
         "    case \"$w\" in -*) ;; *) local next=\"${path:+$path }$w\"\n"
         "      case \"$next\" in\n" +
         [&] {
           std::string known;
           std::vector<std::string> paths;
           std::function<void(const CLI::App*, const std::string&)> walk =
               [&](const CLI::App* a, const std::string& p) {
                 for (const CLI::App* s :
                      a->get_subcommands([](const CLI::App*) { return true; })) {
                   if (s->get_group().empty()) continue;
                   const std::string q = p.empty() ? s->get_name() : p + " " + s->get_name();
                   paths.push_back("\"" + q + "\"");
                   walk(s, q);
                 }
               };
           walk(root, "");
           return "        " + absl::StrJoin(paths, "|") + ") path=\"$next\" ;;\n";
         }() +
         "      esac ;;\n"
         "    esac\n"
         "  done\n"
         "  case \"$path\" in\n" +
         cases +
         "  esac\n"
         "  COMPREPLY=($(compgen -f -W \"$words\" -- \"$cur\"))\n"
         "}\n"
         "complete -o filenames -F _seedance seedance\n";
}

std::string ZshCompletion(const CLI::App* root) {
  return "#compdef seedance\n"
         "# zsh completion for seedance; load with: source <(seedance completion zsh)\n"
         "autoload -U +X bashcompinit && bashcompinit\n" +
         BashCompletion(root);
}

// The day of SOURCE_DATE_EPOCH (reproducible builds), else today, as YYYY-MM-DD in UTC.
std::string ManDate() {
  std::time_t t = std::time(nullptr);
  if (const char* e = std::getenv("SOURCE_DATE_EPOCH"); e != nullptr) {
    auto v = base::ParseInt64(e, "SOURCE_DATE_EPOCH", 0, INT64_MAX);
    if (v.ok()) t = static_cast<std::time_t>(*v);
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// `seedance manpages DIR`: hidden (the build runs it for `cmake --install`).
Command AddManPagesCommand(CLI::App& root) {
  auto dir = std::make_shared<std::string>();
  CLI::App* man = root.add_subcommand("manpages", "Write the manual pages (roff) into DIR");
  man->group("");
  man->add_option("dir", *dir,
                  "directory to write seedance.1, seedance-COMMAND.1, seedanced.8 into")
      ->required();
  return {man, [&root, dir] {
            std::error_code ec;
            std::filesystem::create_directories(*dir, ec);
            if (ec) return Fail(absl::UnavailableError(*dir + ": " + ec.message()));
            for (const ManPage& p : RenderManPages(root, base::GetBuildInfo().version, ManDate())) {
              if (absl::Status s = base::WriteOutput(*dir + "/" + p.file, p.text); !s.ok()) {
                return Fail(s);
              }
            }
            return kExitOk;
          }};
}

}  // namespace

std::vector<Command> AddMetaCommands(CLI::App& root) {
  std::vector<Command> out;

  auto version_format = std::make_shared<OutputFlags>();
  CLI::App* version =
      root.add_subcommand("version", "Print the version, commit, build type and compiler");
  AddOutputFlags(version, version_format.get(), {"table", "json"});
  version->footer("Examples:\n  seedance version\n  seedance version --format json");
  out.push_back({version, [version_format] {
                   auto format = ResolveFormat(*version_format, {"table", "json"});
                   if (!format.ok()) return Fail(format.status());
                   const base::BuildInfo& b = base::GetBuildInfo();
                   std::string text;
                   if (*format == "json") {
                     nlohmann::ordered_json j = base::JsonHeader("version/v1");
                     j["version"] = b.version;
                     j["commit"] = b.commit;
                     j["build_type"] = b.build_type;
                     j["compiler"] = b.compiler;
                     j["invariant_checks"] = b.invariant_checks;
                     text = base::DumpJson(j, 2) + "\n";
                   } else {
                     text = "seedance " + b.version + "\ncommit      " + b.commit +
                            "\nbuild type  " + b.build_type + "\ncompiler    " + b.compiler +
                            "\ninvariants  checked (SEEDANCE_CHECK, every build type)\n";
                   }
                   const std::string path =
                       version_format->output.empty() ? "-" : version_format->output;
                   if (absl::Status s = base::WriteOutput(path, text); !s.ok()) return Fail(s);
                   return kExitOk;
                 }});

  auto help_words = std::make_shared<std::vector<std::string>>();
  CLI::App* help =
      root.add_subcommand("help", "Show the help of a command: seedance help COMMAND [SUBCOMMAND]");
  help->add_option("command", *help_words, "the command (and subcommand) to describe");
  out.push_back(
      {help, [&root, help_words] {
         const CLI::App* app = &root;
         std::string path = "seedance";
         for (const std::string& w : *help_words) {
           const CLI::App* next = nullptr;
           for (const CLI::App* s : app->get_subcommands([](const CLI::App*) { return true; })) {
             if (s->get_name() == w) next = s;
           }
           if (next == nullptr) {
             const std::string near = base::ClosestMatch(w, SubcommandNames(app));
             return UsageError("help: unknown command '" + base::ForTerminal(w) + "'" +
                               (near.empty() ? "" : "; did you mean '" + near + "'?") +
                               " (commands: " + absl::StrJoin(SubcommandNames(app), ", ") + ")");
           }
           app = next;
           if (app != &root) path += " " + app->get_name();
         }
         std::cout << app->help(path == "seedance" ? "" : path.substr(0, path.rfind(' ')));
         return kExitOk;
       }});

  auto shell = std::make_shared<std::string>();
  CLI::App* completion = root.add_subcommand(
      "completion", "Print a shell completion script: seedance completion bash|zsh");
  completion->add_option("shell", *shell, "bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  completion->footer(
      "Examples:\n  source <(seedance completion bash)\n  seedance completion zsh > "
      "~/.zfunc/_seedance");
  out.push_back({completion, [&root, shell] {
                   const std::string text =
                       *shell == "zsh" ? ZshCompletion(&root) : BashCompletion(&root);
                   if (absl::Status s = base::WriteStdout(text); !s.ok()) return Fail(s);
                   return kExitOk;
                 }});
  out.push_back(AddManPagesCommand(root));
  return out;
}

}  // namespace seedance::cli
