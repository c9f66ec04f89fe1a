#!/usr/bin/env bash
# The federation front's speed (issue 42; BENCHMARKS.md, "Federation front"): what the front adds
# to a submission, and the pods/s it sustains over three members, side by side with the same load
# sent straight to one member in the same run.
#   1. three members, each a third of the trace's 1,213 GPU nodes, and a front over them
#      (--federation-policy cost);
#   2. open loop at RATE pods/s (default 1,000), each client keeping its newest pods (the older
#      ones deleted, so the clusters never fill): straight to member 0, then through the front;
#      p50/p99 submit->reply of each, and the difference;
#   3. closed loop, 32 clients: pods/s straight to member 0 and through the front.
# Each line prints one JSON object. The states live under $SEEDANCE_BENCH_DIR (default: a
# directory under the current one, on a real disk: tmpfs makes fsync free).
#
#   bench/federation_front.sh build/src/cli/seedance build/bench/server_load [PODS] [RATE]
set -euo pipefail
seedance=${1:?usage: federation_front.sh SEEDANCE SERVER_LOAD [PODS] [RATE]}
load=${2:?usage: federation_front.sh SEEDANCE SERVER_LOAD [PODS] [RATE]}
pods=${3:-20000}
rate=${4:-1000}
data=${SEEDANCE_DATA_DIR:-$(dirname "$0")/../../shared/data}/alibaba-gpu-v2023/csv
nodes_csv=$data/openb_node_list_gpu_node.csv
pods_csv=$data/openb_pod_list_default.csv
work=${SEEDANCE_BENCH_DIR:-$PWD}/seedance-federation-bench.$$
mkdir -p "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# start NAME [server flags...]: starts a server with state $work/NAME, waits (polling) for its
# ready file; its port is in $port.
start() {
  local name=$1; shift
  rm -f "$work/ready-$name"
  "$seedance" server --listen 127.0.0.1:0 --state "$work/$name" --ready-file "$work/ready-$name" \
    --quiet "$@" &
  pids+=($!)
  for _ in $(seq 1 60000); do
    [ -s "$work/ready-$name" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "server $name exited" >&2; exit 1; }
    sleep 0.001
  done
  port=$(sed 's/.*://' "$work/ready-$name")
}

# 1. Three members (thirds of the trace's nodes; different prices) and the front.
head -1 "$nodes_csv" > "$work/header"
member_ports=()
for k in 0 1 2; do
  { cat "$work/header"; tail -n +2 "$nodes_csv" | awk -v k=$k 'NR % 3 == k'; } > "$work/nodes$k.csv"
  start "m$k" --nodes "$work/nodes$k.csv" --cluster "m$k"
  member_ports+=("$port")
done
cat > "$work/members.yaml" <<EOF
members:
  - {name: m0, url: "http://127.0.0.1:${member_ports[0]}", prices: {gpu_hour: {default: 3.0}}}
  - {name: m1, url: "http://127.0.0.1:${member_ports[1]}", prices: {gpu_hour: {default: 2.0}}}
  - {name: m2, url: "http://127.0.0.1:${member_ports[2]}", prices: {gpu_hour: {default: 1.0}}}
EOF
start front --federation "$work/members.yaml" --cluster front
front_port=$port
until curl -fs "http://127.0.0.1:$front_port/v1/federation/members" | grep -q '"state":"ready".*"state":"ready".*"state":"ready"'; do
  sleep 0.01
done

# CPU seconds (user + system) a process has used.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
front_pid=${pids[-1]}
member_pids=("${pids[0]}" "${pids[1]}" "${pids[2]}")

run() {  # run LABEL PORT [server_load flags...]: server_load's line, with the CPU each side used
  local label=$1 p=$2; shift 2
  local f0 m0 f1 m1
  f0=$(cpu_s "$front_pid")
  m0=$(for q in "${member_pids[@]}"; do cpu_s "$q"; done | paste -sd+ | bc)
  printf '{"path":"%s",' "$label"
  "$load" --port "$p" --pod-csv "$pods_csv" --json "$@" | sed 's/^{//; s/}$//' | tr -d '\n' ||
    echo -n '"failed":"see above"'
  f1=$(cpu_s "$front_pid")
  m1=$(for q in "${member_pids[@]}"; do cpu_s "$q"; done | paste -sd+ | bc)
  printf ',"front_cpu_s":%.2f,"members_cpu_s":%.2f}\n' "$(echo "$f1 - $f0" | bc)" \
    "$(echo "$m1 - $m0" | bc)"
}

# 2. Open loop: the front's added latency at the same offered rate.
echo "# open loop, $rate pods/s offered, 64 clients each keeping its 20 newest pods"
run direct "${member_ports[0]}" --clients 64 --pods "$pods" --rate "$rate" --keep 20 --prefix d1
run front "$front_port" --clients 64 --pods "$pods" --rate "$rate" --keep 20 --prefix f1

# 3. Closed loop: pods/s.
echo "# closed loop, 32 clients each keeping its 20 newest pods"
run direct "${member_ports[0]}" --clients 32 --pods "$pods" --keep 20 --prefix d2
run front "$front_port" --clients 32 --pods "$pods" --keep 20 --prefix f2
curl -fs "http://127.0.0.1:$front_port/metrics" | grep -E '^seedance_federation_(dispatches|refusals|waiting)'
