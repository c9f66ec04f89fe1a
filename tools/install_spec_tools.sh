#!/usr/bin/env bash
# Installs the third-party validators that `make test` runs against docs/openapi.yaml and a live
# server (src/server/spec_test.py): Redocly's CLI and Stoplight's Prism, from the npm registry,
# at the versions pinned in tools/spec/package-lock.json, into tools/spec/node_modules (ignored
# by git). Node.js and npm come from the machine (Debian: apt-get install nodejs npm); Prism 5.14
# needs Node.js >= 18.20, Redocly 2.x >= 20.19. Exits at once when the pinned set is installed.
# Exit 1 when Node.js or npm is missing or the install fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/spec"
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

stamp=node_modules/.seedance-lock
if [[ -f "${stamp}" ]] && cmp -s package-lock.json "${stamp}" &&
   [[ -x node_modules/.bin/redocly && -x node_modules/.bin/prism ]]; then
  echo "install_spec_tools: redocly and prism already installed (tools/spec/node_modules)"
  exit 0
fi
for tool in node npm; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "install_spec_tools: ${tool} not found; install Node.js >= 20.19 and npm" \
         "(Debian: apt-get install nodejs npm)" >&2
    exit 1
  fi
done
echo "install_spec_tools: npm ci in tools/spec ($(node --version), npm $(npm --version))"
# --ignore-scripts: neither tool needs an install script (one dependency only sends analytics).
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
cp package-lock.json "${stamp}"
echo "install_spec_tools: done: redocly $(node_modules/.bin/redocly --version)," \
     "prism $(node_modules/.bin/prism --version)"
