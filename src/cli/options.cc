// Validated flags shared by every subcommand (options.h).
#include "options.h"

#include <iostream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "seedance/base/text.h"

namespace seedance::cli {

int Fail(const absl::Status& status) {
  std::cerr << "seedance: "
            << base::ForTerminal(base::Clip(std::string(status.message()), 4096), true) << "\n";
  return base::ExitCodeFor(status);
}

int UsageError(const std::string& msg) { return Fail(absl::InvalidArgumentError(msg)); }
int RuntimeError(const std::string& msg) { return Fail(absl::InternalError(msg)); }

void Warn(const std::string& msg) {
  std::cerr << "seedance: warning: " << base::ForTerminal(msg, true) << "\n";
}

std::string FlagName(const std::string& names) {
  std::string first_short;
  for (absl::string_view n : absl::StrSplit(names, ',', absl::SkipEmpty())) {
    const std::string name(absl::StripAsciiWhitespace(n));
    if (name.rfind("--", 0) == 0) return name;
    if (first_short.empty()) first_short = name;
  }
  return first_short;
}

CLI::Option* AddDouble(CLI::App* app, const std::string& names, double* target,
                       const base::NumRange& range, const std::string& help) {
  const std::string flag = FlagName(names);
  CLI::Option* opt = app->add_option_function<std::string>(
      names,
      [target, range, flag](const std::string& text) {
        auto v = base::ParseDouble(text, flag, range);
        if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
        *target = *v;
      },
      help + " (" + base::DescribeRange(range) + ")");
  opt->type_name("NUM");
  opt->default_str(base::FormatNumber(*target));
  return opt;
}

CLI::Option* AddDuration(CLI::App* app, const std::string& names, double* seconds,
                         double bare_unit_s, const base::NumRange& range, const std::string& help) {
  const std::string flag = FlagName(names);
  CLI::Option* opt = app->add_option_function<std::string>(
      names,
      [seconds, bare_unit_s, range, flag](const std::string& text) {
        auto v = base::ParseDuration(text, flag, bare_unit_s, range);
        if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
        *seconds = *v;
      },
      help + " (a bare number is in " + base::UnitName(bare_unit_s) + "; or 90s, 5m, 2h)");
  opt->type_name("DURATION");
  opt->default_str(base::FormatNumber(*seconds / bare_unit_s));
  return opt;
}

CLI::Option* AddSeeds(CLI::App* app, const std::string& names, std::vector<uint64_t>* seeds,
                      std::string* text, const std::string& help) {
  const std::string flag = FlagName(names);
  CLI::Option* opt = app->add_option_function<std::string>(
      names,
      [seeds, text, flag](const std::string& value) {
        auto v = base::ParseSeedList(value, flag);
        if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
        *seeds = std::move(*v);
        *text = value;
      },
      help);
  opt->type_name("SEEDS");
  opt->default_str(*text);
  return opt;
}

void AddOutputFlags(CLI::App* app, OutputFlags* flags, const std::vector<std::string>& formats,
                    const std::string& output_help) {
  app->add_option("-o,--output", flags->output,
                  output_help.empty()
                      ? "Write the output to FILE instead of standard output ('-' = stdout)"
                      : output_help)
      ->type_name("FILE");
  app->add_option("--format", flags->format,
                  "Output format: " + absl::StrJoin(formats, ", ") + " (default: from -o's " +
                      "extension, else " + formats[0] + ")")
      ->type_name("FORMAT")
      ->check(CLI::IsMember(formats));
}

absl::StatusOr<std::string> ResolveFormat(const OutputFlags& flags,
                                          const std::vector<std::string>& formats) {
  static const std::vector<std::string> kAllFormats = {"table", "text", "json",
                                                       "yaml",  "csv",  "html"};
  auto allowed = [&](const std::string& f) {
    for (const auto& a : formats) {
      if (a == f) return true;
    }
    return false;
  };
  if (!flags.output.empty() && flags.output != "-" && flags.output.find('/') == std::string::npos) {
    for (const auto& f : kAllFormats) {
      if (flags.output == f) {
        return absl::InvalidArgumentError(absl::StrCat(
            "-o ", f, ": -o takes a file name; for ", f, " use --format ", f,
            " (add -o FILE to write a file; ./", f, " if you really mean a file named ", f, ")"));
      }
    }
  }
  if (!flags.format.empty()) {
    if (!allowed(flags.format)) {
      return absl::InvalidArgumentError(absl::StrCat("--format: expected one of ",
                                                     absl::StrJoin(formats, ", "), ", got '",
                                                     base::ForTerminal(flags.format), "'"));
    }
    return flags.format;
  }
  const size_t dot = flags.output.find_last_of('.');
  const size_t slash = flags.output.find_last_of('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    std::string ext = absl::AsciiStrToLower(flags.output.substr(dot + 1));
    if (ext == "yml") ext = "yaml";
    if (ext == "htm") ext = "html";
    if (ext == "txt") ext = allowed("table") ? "table" : "text";
    if (allowed(ext)) return ext;
  }
  return formats[0];
}

CLI::Option* AddDeprecatedString(CLI::App* app, const std::string& names, std::string* target,
                                 const std::string& replacement) {
  const std::string flag = FlagName(names);
  CLI::Option* opt = app->add_option_function<std::string>(
      names,
      [target, flag, replacement](const std::string& v) {
        Warn(flag + " is deprecated and will be removed in the next release; use " + replacement);
        *target = v;
      },
      "");
  opt->group("");  // hidden from --help
  return opt;
}

CLI::Option* AddDeprecatedFlag(CLI::App* app, const std::string& names, bool* target,
                               const std::string& replacement) {
  const std::string flag = FlagName(names);
  CLI::Option* opt = app->add_flag_callback(
      names,
      [target, flag, replacement] {
        Warn(flag + " is deprecated and will be removed in the next release; use " + replacement);
        *target = true;
      },
      "");
  opt->group("");
  return opt;
}

}  // namespace seedance::cli
