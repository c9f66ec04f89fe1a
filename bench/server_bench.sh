#!/usr/bin/env bash
# The live scheduler's speed figures (issue 12; BENCHMARKS.md, "Live scheduler"):
#   1. sustained submit->bound with durable state, 1,213 nodes, 32 closed-loop clients, each
#      keeping its 150 newest pods (the older ones deleted, so the cluster never fills);
#   2. submit->bound latency at 1,000 pods/s offered (open loop, the same churn);
#   3. the same as 1 at 10,000 nodes (the trace's nodes replicated);
#   4. restart with 100,000 pods in the state: exec to /readyz 200.
# Each line prints one JSON object. The state lives under $SEEDANCE_BENCH_DIR (default: a
# directory under the current one, which must be on a real disk: tmpfs makes fsync free).
#
#   bench/server_bench.sh build/src/cli/seedance build/bench/server_load [PODS]
set -euo pipefail
seedance=${1:?usage: server_bench.sh SEEDANCE SERVER_LOAD [PODS]}
load=${2:?usage: server_bench.sh SEEDANCE SERVER_LOAD [PODS]}
pods=${3:-50000}
data=${SEEDANCE_DATA_DIR:-$(dirname "$0")/../../shared/data}/alibaba-gpu-v2023/csv
nodes_csv=$data/openb_node_list_gpu_node.csv
pods_csv=$data/openb_pod_list_default.csv
work=${SEEDANCE_BENCH_DIR:-$PWD}/seedance-server-bench.$$
mkdir -p "$work"
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# start STATE_DIR [server flags...]: starts the server, waits (polling) for its ready file.
start() {
  local state=$1; shift
  rm -f "$work/ready"
  "$seedance" server --listen 127.0.0.1:0 --state "$state" --ready-file "$work/ready" --quiet "$@" &
  pid=$!
  for _ in $(seq 1 60000); do
    [ -s "$work/ready" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "server exited" >&2; exit 1; }
    sleep 0.001
  done
  port=$(sed 's/.*://' "$work/ready")
}
stop() { kill "$pid"; wait "$pid" || true; pid=; }

# 1. 1,213 nodes, closed loop; and the HTTP stack alone (wrk, GET /healthz) for scale.
start "$work/s1" --nodes "$nodes_csv"
echo "# 1,213 nodes, 32 clients, closed loop, each keeping its 150 newest pods"
"$load" --port "$port" --clients 32 --pods "$pods" --keep 150 --pod-csv "$pods_csv" --json || echo "# (some requests failed: see above)"
if command -v wrk > /dev/null; then
  echo "# raw HTTP: wrk -t2 -c32 -d5s GET /healthz"
  wrk -t2 -c32 -d5s "http://127.0.0.1:$port/healthz" | grep -E "Requests/sec|Latency"
fi
stop

# 2. 1,000 pods/s offered, open loop, on a fresh state.
start "$work/s2" --nodes "$nodes_csv"
echo "# 1,213 nodes, 1,000 pods/s offered, each client keeping its 75 newest pods"
"$load" --port "$port" --clients 64 --pods 20000 --rate 1000 --keep 75 --pod-csv "$pods_csv" --json || echo "# (some requests failed: see above)"
stop

# 3. 10,000 nodes.
awk -F, -v OFS=, 'NR == 1 { print; next } { rows[++n] = $0 }
  END { for (k = 0; k < 10000; k++) { split(rows[k % n + 1], f, ",");
          f[1] = sprintf("bench-node-%05d", k); print f[1], f[2], f[3], f[4], f[5] } }' \
  "$nodes_csv" > "$work/nodes10k.csv"
start "$work/s3" --nodes "$work/nodes10k.csv"
echo "# 10,000 nodes, 32 clients, closed loop"
"$load" --port "$port" --clients 32 --pods "$pods" --pod-csv "$pods_csv" --json || echo "# (some requests failed: see above)"
stop

# 4. Restart with 100,000 pods in the state (10,000 nodes: most are bound, the rest pending).
start "$work/s4" --nodes "$work/nodes10k.csv"
"$load" --port "$port" --clients 32 --pods 100000 --pod-csv "$pods_csv" --json > /dev/null || true
kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=
t0=$(date +%s.%N)
start "$work/s4"
until curl -fs "http://127.0.0.1:$port/readyz" > /dev/null; do sleep 0.001; done
t1=$(date +%s.%N)
count=$(curl -fs "http://127.0.0.1:$port/metrics" | awk '/^seedance_pods_bound /{print $2}')
echo "{\"restart_pods\":100000,\"pods_bound_after_restart\":${count:-null},\"ready_s\":$(echo "$t1 - $t0" | bc)}"
stop
