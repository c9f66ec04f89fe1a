// Shared by the HTTP load generators (server_load.cc, extender_load.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace seedance::bench {

// The q-quantile of v (reordered), 0 for none: the value at rank floor(q x size).
inline double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace seedance::bench
