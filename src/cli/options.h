// The one way every subcommand declares its flags, so that they all accept and refuse the same
// things (docs/cli.md):
//   - numbers go through base::ParseDouble/ParseInt64/ParseUint64: NaN, infinities, overflow and
//     values outside the flag's range are exit 2 naming the flag and the range;
//   - durations take unit suffixes (300s, 5m, 72h); the unit of a bare number is in the help;
//   - the main output is -o/--output FILE ("-" = standard output) with --format NAME;
//   - old spellings stay as hidden aliases that warn once.
// Errors are thrown as CLI::ValidationError while parsing, so main() prints them and exits 2.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/base/exit_code.h"
#include "seedance/base/parse.h"

namespace seedance::cli {

using base::kExitFailure;
using base::kExitOk;
using base::kExitUsage;

// Prints "seedance: MESSAGE" (control characters escaped) to stderr and returns the exit code
// the status code maps to (base::ExitCodeFor).
int Fail(const absl::Status& status);
// Prints "seedance: MSG" and returns kExitUsage / kExitFailure.
int UsageError(const std::string& msg);
int RuntimeError(const std::string& msg);
// Prints "seedance: warning: MSG" to stderr.
void Warn(const std::string& msg);

// The flag name used in messages: the first long name of `names` ("-o,--output" -> "--output").
std::string FlagName(const std::string& names);

// A floating-point flag within `range`.
CLI::Option* AddDouble(CLI::App* app, const std::string& names, double* target,
                       const base::NumRange& range, const std::string& help);

// An integer flag within [lo, hi] (defaults: the type's range).
template <typename T>
CLI::Option* AddInt(CLI::App* app, const std::string& names, T* target, T lo, T hi,
                    const std::string& help) {
  static_assert(std::is_integral_v<T>);
  const std::string flag = FlagName(names);
  CLI::Option* opt = app->add_option_function<std::string>(
      names,
      [target, lo, hi, flag](const std::string& text) {
        if constexpr (std::is_unsigned_v<T>) {
          auto v = base::ParseUint64(text, flag, lo, hi);
          if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
          *target = static_cast<T>(*v);
        } else {
          auto v = base::ParseInt64(text, flag, lo, hi);
          if (!v.ok()) throw CLI::ValidationError(std::string(v.status().message()));
          *target = static_cast<T>(*v);
        }
      },
      help);
  opt->type_name(std::is_unsigned_v<T> ? "UINT" : "INT");
  opt->default_str(std::to_string(*target));
  return opt;
}

// A duration flag stored in seconds. A bare number is in `bare_unit_s` seconds (1 or 3600);
// suffixed values (90s, 5m, 2h) are converted. `range` is in seconds.
CLI::Option* AddDuration(CLI::App* app, const std::string& names, double* seconds,
                         double bare_unit_s, const base::NumRange& range,
                         const std::string& help);

// A seed-list flag ("42-51", "1,5-9"); `text` keeps what was given for reports.
CLI::Option* AddSeeds(CLI::App* app, const std::string& names, std::vector<uint64_t>* seeds,
                      std::string* text, const std::string& help);

// -o/--output and --format, the same in every subcommand.
struct OutputFlags {
  std::string output;  // "" = the command's default (usually standard output), "-" = stdout
  std::string format;  // "" = from the output's extension, else the command's default
};
// Registers -o/--output and --format NAME (one of `formats`, the first is the default).
void AddOutputFlags(CLI::App* app, OutputFlags* flags, const std::vector<std::string>& formats,
                    const std::string& output_help = "");
// The format to write: --format when given, else the output file's extension (.json, .yaml,
// .csv, .html, .txt = table), else formats[0]. Refuses "-o json" (a format name given as a
// file name) with a hint, and a format or extension the command does not write.
absl::StatusOr<std::string> ResolveFormat(const OutputFlags& flags,
                                          const std::vector<std::string>& formats);

// A hidden, deprecated spelling: sets *target like the new flag would and warns once, naming
// `replacement` (e.g. "-o FILE --format json").
CLI::Option* AddDeprecatedString(CLI::App* app, const std::string& names, std::string* target,
                                 const std::string& replacement);
CLI::Option* AddDeprecatedFlag(CLI::App* app, const std::string& names, bool* target,
                               const std::string& replacement);

}  // namespace seedance::cli
