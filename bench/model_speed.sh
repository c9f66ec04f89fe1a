#!/usr/bin/env bash
# FP32 inference of the transformer encoder layer fixtures (and the others): Seedance's executor
# against onnxruntime's CPU build (onnxruntime-node, default graph optimisations), one thread
# each, side by side in one run: the median of five timings of ITERATIONS runs, and the ratio.
# Usage: bench/model_speed.sh BUILD_DIR FIXTURES_DIR [ITERATIONS]
#   FIXTURES_DIR: tools/model_fixtures/make_fixtures.sh's output.
set -euo pipefail
build=$1 fixtures=$2 iterations=${3:-200}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dirs=("$fixtures"/*/)
printf "%-14s %12s %12s %8s\n" model seedance_ms ort_ms ratio
while read -r tag dir ms; do
  ort=$(node "$here/../tools/model_fixtures/ort_run.js" --time "$iterations" "$dir" |
        awk '/^ort_time:/ {print $3}')
  printf "%-14s %12s %12s %8.2f\n" "$(basename "$dir")" "$ms" "$ort" \
    "$(echo "$ms / $ort" | bc -l)"
done < <(OMP_NUM_THREADS=1 "$build/bench/model_infer_time" "$iterations" "${dirs[@]}")
