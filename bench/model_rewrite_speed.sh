#!/usr/bin/env bash
# Issue 43's CPU line: each model fixture run in Seedance's executor as exported and as
# `seedance model optimize` rewrote it, and in onnxruntime on its own optimised model (its
# default optimisations, which rewrite the original as it loads it), one thread each, side by
# side in one run: the median of five timings of ITERATIONS runs, the rewrite's speed-up and the
# rewritten model's time over onnxruntime's.
# Usage: bench/model_rewrite_speed.sh BUILD_DIR FIXTURES_DIR [ITERATIONS]
#   BUILD_DIR: a Release build with seedance and bench/model_infer_time;
#   FIXTURES_DIR: tools/model_fixtures/make_fixtures.sh's output.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: bench/model_rewrite_speed.sh BUILD_DIR FIXTURES_DIR [ITERATIONS]" >&2
  exit 2
fi
build=$1 fixtures=$2 iterations=${3:-500}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf "%-14s %12s %14s %8s %10s %14s\n" model exported_ms rewritten_ms speedup ort_ms rewritten/ort
for dir in "$fixtures"/*/; do
  name=$(basename "$dir")
  mkdir -p "$work/$name"
  cp -r "$dir/test_data_set_0" "$work/$name/"
  "$build/src/cli/seedance" model optimize "$dir/model.onnx" -o "$work/$name/model.onnx" >/dev/null
  times=$(OMP_NUM_THREADS=1 "$build/bench/model_infer_time" "$iterations" "$dir" "$work/$name" |
          awk '/^seedance_time:/ {print $3}')
  exported=$(echo "$times" | sed -n 1p)
  rewritten=$(echo "$times" | sed -n 2p)
  ort=$(node "$here/../tools/model_fixtures/ort_run.js" --time "$iterations" "$dir" |
        awk '/^ort_time:/ {print $3}')
  printf "%-14s %12s %14s %8.2f %10s %14.2f\n" "$name" "$exported" "$rewritten" \
    "$(echo "$exported / $rewritten" | bc -l)" "$ort" "$(echo "$rewritten / $ort" | bc -l)"
done
