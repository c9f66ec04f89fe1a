#include "config_json.h"

#include <algorithm>

namespace seedance::server {

absl::Status WithPath(std::string_view file, const std::string& path, const absl::Status& st) {
  return absl::InvalidArgumentError(
      absl::StrCat(base::ForTerminal(std::string(file)), ": ", path, ": ", st.message()));
}

}  // namespace seedance::server
