#!/usr/bin/env bash
# Makes seedance_model's reference models once per test run (ctest's model_fixtures setup test):
# exports them with torch (export_models.py), runs them in onnxruntime (ort_run.js) and checks
# that the two references agree (compare.py, 1e-5), so that a disagreement with the executor is
# the executor's. The model tests then read OUT_DIR.
#
# Usage: tools/model_fixtures/make_fixtures.sh OUT_DIR
# Exit 77 (skipped) when torch, onnx or onnxruntime-node is missing and SEEDANCE_REQUIRE_DATA is
# not 1 (then missing tools are a failure: run tools/install_deps.sh and
# tools/install_onnxruntime.sh, as `make test` does); 1 on any other failure; 2 on bad usage.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: tools/model_fixtures/make_fixtures.sh OUT_DIR" >&2
  exit 2
fi
out=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ort_dir=$here/../onnxruntime/node_modules/onnxruntime-node
missing=""
/usr/bin/python3 -c 'import torch, onnx, sklearn' 2>/dev/null || missing="python3-torch/onnx/sklearn"
if ! command -v node >/dev/null 2>&1 || [[ ! -d $ort_dir ]]; then
  missing="$missing onnxruntime-node (tools/install_onnxruntime.sh)"
fi
if [[ -n $missing ]]; then
  echo "make_fixtures: missing: $missing" >&2
  [[ "${SEEDANCE_REQUIRE_DATA:-}" == 1 ]] && exit 1
  exit 77
fi
rm -rf "$out"
/usr/bin/python3 "$here/export_models.py" "$out"
node "$here/ort_run.js" "$out"/*/
/usr/bin/python3 "$here/compare.py" --tol 1e-5 "$out"
