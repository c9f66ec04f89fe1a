// A pre-parse scan for YAML texts: yaml-cpp 0.7 has inputs it never returns from.
#ifndef SEEDANCE_CORE_YAML_SCAN_H_
#define SEEDANCE_CORE_YAML_SCAN_H_

#include <cstddef>
#include <string_view>

namespace seedance::core {

// yaml-cpp 0.7 never returns (and grows without bound) when a ',' follows a complete root node
// or starts a document: ",", "[a]\n,", "- [a]\n,", "'x' ,", "--- ,". A ',' that starts a token
// outside flow collections is invalid YAML anyway (no plain scalar starts with ','), so this
// light scan over comments, quoted scalars, block scalars and flow brackets finds one before the
// parser sees the text: its offset, or npos. It errs on the side of refusing (a continuation line
// of a plain scalar that starts with ',' is refused too).
// Used by CheckYamlLimits (so by every YAML reader) and by the policy reader.
size_t FindStrayYamlComma(std::string_view text);

}  // namespace seedance::core

#endif  // SEEDANCE_CORE_YAML_SCAN_H_
