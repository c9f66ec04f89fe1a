#include "config_json.h"

#include <algorithm>

namespace seedance::server {

absl::StatusOr<nlohmann::json> ParseConfigJson(std::string_view text, std::string_view file) {
  if (base::JsonNestingDepth(text, 32) > 32) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(file), ": JSON nested deeper than 32 levels"));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const size_t byte = std::min(e.byte, text.size());
    const auto line = std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(byte), '\n');
    return absl::InvalidArgumentError(absl::StrCat(base::ForTerminal(std::string(file)), ":",
                                                   line + 1, ": not JSON (byte ", e.byte, ")"));
  } catch (const nlohmann::json::exception& e) {
    // A number beyond a double (1e999): the parser names no position, its message the token.
    return absl::InvalidArgumentError(absl::StrCat(base::ForTerminal(std::string(file)),
                                                   ": not JSON: ", base::Clip(e.what(), 160)));
  }
  return j;
}

absl::Status WithPath(std::string_view file, const std::string& path, const absl::Status& st) {
  return absl::InvalidArgumentError(
      absl::StrCat(base::ForTerminal(std::string(file)), ": ", path, ": ", st.message()));
}

}  // namespace seedance::server
