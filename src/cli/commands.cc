// Helpers shared by the subcommands (commands.h).
#include "commands.h"

#include <string>
#include <vector>

#include "seedance/base/parse.h"

namespace seedance::cli {

bool ParseSeedList(const std::string& text, std::vector<uint64_t>* out) {
  auto seeds = base::ParseSeedList(text, "--seeds");
  if (!seeds.ok()) return false;
  out->insert(out->end(), seeds->begin(), seeds->end());
  return true;
}

}  // namespace seedance::cli
