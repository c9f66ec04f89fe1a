// Writes a synthetic GPU-cluster profile (telemetry::MakeSyntheticProfile) for timing
// `seedance analyze`:
//   gen_profile NODES SAMPLES OUTPUT.json
// Every 10th node is idle, every 5th light; 8 x A100-80GB per node.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "seedance/telemetry/profile.h"
#include "seedance/telemetry/synthetic.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: gen_profile NODES SAMPLES OUTPUT.json\n");
    return 2;
  }
  seedance::telemetry::SyntheticOptions o;
  o.nodes = std::atoi(argv[1]);
  o.samples = std::atoi(argv[2]);
  if (o.nodes <= 0 || o.samples <= 0) {
    std::fprintf(stderr, "gen_profile: NODES and SAMPLES must be > 0\n");
    return 2;
  }
  o.idle_nodes.clear();
  for (int n = 2; n < o.nodes; n += 10) o.idle_nodes.push_back(n);
  for (int n = 0; n < o.nodes; n += 50) o.numa_mismatch_nodes.push_back(n);
  auto s = seedance::telemetry::WriteProfile(seedance::telemetry::MakeSyntheticProfile(o), argv[3]);
  if (!s.ok()) {
    std::fprintf(stderr, "gen_profile: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
