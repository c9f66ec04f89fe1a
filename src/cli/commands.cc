// Helpers shared by the subcommands (commands.h).
#include "commands.h"

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace seedance::cli {

bool ParseSeedList(const std::string& text, std::vector<uint64_t>* out) {
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<std::string> ends = absl::StrSplit(part, '-');
    uint64_t a = 0, b = 0;
    if (ends.size() == 1 && absl::SimpleAtoi(ends[0], &a)) {
      out->push_back(a);
    } else if (ends.size() == 2 && absl::SimpleAtoi(ends[0], &a) && absl::SimpleAtoi(ends[1], &b) &&
               a <= b && b - a < 100000) {
      for (uint64_t s = a; s <= b; ++s) out->push_back(s);
    } else {
      return false;
    }
  }
  return !out->empty();
}

}  // namespace seedance::cli
