#!/usr/bin/env bash
# The extender's speed figure (issue 15; BENCHMARKS.md, "Kubernetes extender"): filter and
# prioritize, 100 node names per request, against a server holding the trace's 1,213 nodes,
# from 32 closed-loop clients on the same machine. Prints one JSON object per run.
#
#   bench/extender_bench.sh build/src/cli/seedance build/bench/extender_load [REQUESTS] [RUNS]
set -euo pipefail
seedance=${1:?usage: extender_bench.sh SEEDANCE EXTENDER_LOAD [REQUESTS] [RUNS]}
load=${2:?usage: extender_bench.sh SEEDANCE EXTENDER_LOAD [REQUESTS] [RUNS]}
requests=${3:-50000}
runs=${4:-3}
data=${SEEDANCE_DATA_DIR:-$(dirname "$0")/../../shared/data}/alibaba-gpu-v2023/csv
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$seedance" server --listen 127.0.0.1:0 --state "$work/st" --ready-file "$work/ready" --quiet \
  --placement cas --nodes "$data/openb_node_list_gpu_node.csv" &
pid=$!
for _ in $(seq 1 60000); do
  [ -s "$work/ready" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "server exited" >&2; exit 1; }
  sleep 0.001
done
port=$(sed 's/.*://' "$work/ready")
for _ in $(seq 1 "$runs"); do
  "$load" --port "$port" --clients 32 --requests "$requests" --names 100 --json
done
# The HTTP stack alone on the same server, for scale (GET /healthz).
if command -v wrk >/dev/null; then
  wrk -t2 -c32 -d5s "http://127.0.0.1:$port/healthz" | awk '/Requests\/sec/ {print "{\"wrk_healthz_per_s\":" $2 "}"}'
fi
