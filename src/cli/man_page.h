// Manual pages rendered from the command tree: the same descriptions, option texts, defaults and
// footers (examples, exit status) that `--help` prints, as roff (man(7)), so that the installed
// pages never drift from the program. `seedance manpages DIR` writes them (the build does, for
// `cmake --install`); not thread-safe only in that it reads a CLI::App no one may be changing.
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace seedance::cli {

struct ManPage {
  std::string file;  // e.g. "seedance-simulate.1", "seedanced.8"
  std::string text;  // roff source
};

// One page per command path of `root` (seedance.1, seedance-get.1, seedance-model-run.1, ...)
// and seedanced.8 for the server under its daemon name. `version` and `date` (YYYY-MM-DD) go in
// each page's title line; the pages depend on nothing else, so equal inputs give equal bytes.
std::vector<ManPage> RenderManPages(const CLI::App& root, const std::string& version,
                                    const std::string& date);

// Text made safe for roff: backslashes doubled as \e, a leading '.' or '\'' guarded by \&.
std::string RoffEscape(const std::string& text);

}  // namespace seedance::cli
