#!/usr/bin/env bash
# Installs onnxruntime-node, the independent reference that `make test` runs seedance_model's
# model fixtures on (tools/model_fixtures/ort_run.js, issue 37), from the npm registry at the
# version pinned in tools/onnxruntime/package-lock.json, into tools/onnxruntime/node_modules
# (ignored by git). Its npm package ships the Linux x64 CPU build (bin/napi-v6/linux/x64); its
# post-install step would download CUDA/TensorRT binaries from a host that cannot be reached, so
# it is skipped (ONNXRUNTIME_NODE_INSTALL=skip, and --ignore-scripts: no dependency needs one).
# Node.js and npm come from the machine (Debian: apt-get install nodejs npm); tested with Node.js
# 20. Exits at once when the pinned set is installed. Exit 1 when Node.js or npm is missing, the
# install fails, or the installed package cannot create a CPU session.
# Usage: tools/install_onnxruntime.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/onnxruntime"
export ONNXRUNTIME_NODE_INSTALL=skip ONNXRUNTIME_NODE_INSTALL_CUDA=skip

stamp=node_modules/.seedance-lock
if [[ -f "${stamp}" ]] && cmp -s package-lock.json "${stamp}" &&
   [[ -f node_modules/onnxruntime-node/package.json ]]; then
  echo "install_onnxruntime: onnxruntime-node already installed (tools/onnxruntime/node_modules)"
  exit 0
fi
for tool in node npm; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "install_onnxruntime: ${tool} not found; install Node.js >= 20 and npm" \
         "(Debian: apt-get install nodejs npm)" >&2
    exit 1
  fi
done
echo "install_onnxruntime: npm ci in tools/onnxruntime ($(node --version), npm $(npm --version))"
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
# The binding must load: a missing CPU binary for this platform shows here, not in a test.
node -e 'const ort = require("onnxruntime-node");
         if (!ort.listSupportedBackends().some((b) => b.name === "cpu")) {
           throw new Error("onnxruntime-node has no CPU backend on this machine");
         }
         console.log("install_onnxruntime: done: onnxruntime-node " + ort.env.versions.node);'
cp package-lock.json "${stamp}"
