#!/usr/bin/env bash
# Runs an MPI program with one rank per network namespace, the ranks joined by a rate-limited
# network, so that the network and not shared memory is the bottleneck (issue 38's speed line).
#
#   sudo bench/train_netns.sh [--ranks 4] [--rate 1gbit] [--no-check] -- PROGRAM [ARGS...]
#
# The network: a hub namespace `sdtrainhub` holds a Linux bridge (10.231.38.1/24, where mpirun
# runs); rank i lives in namespace `sdtrain<i>` (10.231.38.<10+i>), joined to the bridge by a veth
# pair. A tbf qdisc of the given rate sits on the egress of BOTH ends of every veth pair: eth0 in
# the rank's namespace (what the rank sends) and v<i> in the hub (what the rank receives). So
# every rank has a RATE-each-way port, like a NIC on a non-blocking switch. Nothing is created in
# the root namespace.
#
# Open MPI runs over TCP only (pml ob1, btl tcp,self) on that subnet: mpirun in the hub starts one
# orted per namespace through a launch agent (`ip netns exec sdtrain<i> sh -c CMD` in place of
# ssh); the orteds connect back to mpirun over the bridge. Ranks are not bound to cores (every
# namespace sees the whole machine; binding would pile them on core 0).
#
# Before the program, a link check (python sockets, sdtrain0 -> sdtrain1, ~2 s of traffic at the
# given rate) prints the measured rate; --no-check skips it.
#
# Ranks do not pin cores and idle ranks yield (mpi_yield_when_idle): the namespaces share one
# machine's cores, usually fewer than the ranks' threads.
#
# Everything (namespaces, veths, bridge, leftover processes in them) is removed on exit, on
# failure too; leftovers of an earlier run are removed first. Needs root, iproute2 (ip, tc),
# mpirun, python3. Exit status: 2 usage, 1 runtime failure, else the program's.
set -euo pipefail

readonly kPrefix=sdtrain
readonly kHub=sdtrainhub
readonly kNet=10.231.38
readonly kSubnet=${kNet}.0/24

usage() {
  cat >&2 <<EOF
usage: $0 [--ranks N] [--rate RATE] [--burst BYTES] [--latency TIME] [--timeout-s S] [--no-check]
       -- PROGRAM [ARGS...]
  --ranks N       ranks, one per namespace (default 4)
  --rate RATE     tbf rate per direction of each rank's link, tc syntax: 1gbit, 10gbit (default 1gbit)
  --burst BYTES   tbf bucket (default: 1 ms at RATE, at least 256kb)
  --latency TIME  tbf queue bound (default 20ms)
  --timeout-s S   end the MPI job after S seconds, launch included (default 1800)
  --no-check      skip the link-rate measurement
EOF
  exit 2
}

die() {
  echo "train_netns.sh: $*" >&2
  exit 1
}

ranks=4
rate=1gbit
burst=
latency=20ms
timeout_s=1800
check=1
while (($#)); do
  case $1 in
    --ranks) ranks=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --burst) burst=${2:?}; shift 2 ;;
    --latency) latency=${2:?}; shift 2 ;;
    --timeout-s) timeout_s=${2:?}; shift 2 ;;
    --no-check) check=0; shift ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "train_netns.sh: unknown flag '$1'" >&2; usage ;;
  esac
done
(($# >= 1)) || { echo "train_netns.sh: no PROGRAM given after --" >&2; usage; }
[[ $ranks =~ ^[0-9]+$ ]] && ((ranks >= 2 && ranks <= 200)) ||
  { echo "train_netns.sh: --ranks must be 2..200, got '$ranks'" >&2; usage; }
# Rate in bits/s from tc syntax (number with optional k/m/g and bit suffix).
rate_bps() {
  local r=${1,,} mult=1
  [[ $r =~ ^([0-9]+)([kmg]?)bit$ ]] || return 1
  case ${BASH_REMATCH[2]} in k) mult=1000 ;; m) mult=1000000 ;; g) mult=1000000000 ;; esac
  echo $((BASH_REMATCH[1] * mult))
}
bps=$(rate_bps "$rate") ||
  { echo "train_netns.sh: --rate must look like 1gbit, 500mbit, 10gbit; got '$rate'" >&2; usage; }
[[ $timeout_s =~ ^[0-9]+$ ]] && ((timeout_s > 0)) ||
  { echo "train_netns.sh: --timeout-s must be a positive integer, got '$timeout_s'" >&2; usage; }
if [[ -z $burst ]]; then
  burst=$((bps / 8 / 1000))  # 1 ms of traffic
  ((burst >= 262144)) || burst=262144
fi

((EUID == 0)) || die "must run as root (network namespaces and tc need CAP_NET_ADMIN)"
for tool in ip tc mpirun python3; do
  command -v "$tool" >/dev/null || die "'$tool' not found (ip, tc: Debian iproute2; mpirun: openmpi-bin)"
done
program=$(command -v "$1") || die "PROGRAM '$1' not found"
shift

workdir=
teardown() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk -v p="^${kPrefix}" '$1 ~ p {print $1}'); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  [[ -n $workdir ]] && rm -rf "$workdir"
  return 0
}
trap 'rc=$?; teardown; exit $rc' EXIT
trap 'exit 1' INT TERM HUP

teardown  # leftovers of an earlier run

setup() {
  ip netns add "$kHub"
  ip -n "$kHub" link set lo up
  ip -n "$kHub" link add br0 type bridge
  ip -n "$kHub" addr add "${kNet}.1/24" dev br0
  ip -n "$kHub" link set br0 up
  local i ns
  for ((i = 0; i < ranks; i++)); do
    ns=${kPrefix}$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add "v$i" netns "$kHub" type veth peer name eth0 netns "$ns"
    ip -n "$kHub" link set "v$i" master br0 up
    ip -n "$ns" addr add "${kNet}.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    tc -n "$ns" qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency "$latency"
    tc -n "$kHub" qdisc replace dev "v$i" root tbf rate "$rate" burst "$burst" latency "$latency"
  done
}
setup || die "network setup failed (see the ip/tc error above)"
echo "train_netns.sh: $ranks namespaces ${kPrefix}0..$((ranks - 1)) on $kSubnet, tbf $rate" \
  "burst $burst latency $latency on both ends of each rank's veth" >&2

workdir=$(mktemp -d /tmp/sdtrain.XXXXXX)

# Link check: one TCP stream sdtrain0 -> sdtrain1 of ~2 s at the configured rate.
if ((check)); then
  cat >"$workdir/link.py" <<'EOF'
import socket, sys, time
role, host, nbytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunk = bytearray(1 << 20)
if role == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 5201)); s.listen(1); print("ready", flush=True)
    c, _ = s.accept(); got = 0; t0 = None; view = memoryview(chunk)
    while got < nbytes:
        n = c.recv_into(view)
        if n == 0: break
        if t0 is None: t0 = time.perf_counter()
        got += n
    dt = time.perf_counter() - t0
    c.sendall(b"x")
    print(f"link check sdtrain0 -> sdtrain1: {got} bytes in {dt:.3f} s = {got * 8 / dt / 1e9:.3f} Gbit/s")
else:
    c = socket.create_connection((host, 5201)); sent = 0
    while sent < nbytes:
        c.sendall(chunk); sent += len(chunk)
    c.recv(1)
EOF
  nbytes=$((bps * 2 / 8))
  ip netns exec "${kPrefix}1" python3 "$workdir/link.py" server "${kNet}.11" "$nbytes" \
    >"$workdir/link.out" 2>&1 &
  server=$!
  for _ in $(seq 50); do grep -q ready "$workdir/link.out" 2>/dev/null && break; sleep 0.1; done
  ip netns exec "${kPrefix}0" python3 "$workdir/link.py" client "${kNet}.11" "$nbytes" ||
    die "link check client failed"
  wait "$server" || die "link check server failed: $(cat "$workdir/link.out")"
  grep -v ready "$workdir/link.out" >&2
fi

# The launch agent mpirun uses in place of ssh: `agent HOST CMD...` runs CMD in HOST's namespace.
cat >"$workdir/agent.sh" <<EOF
#!/bin/sh
host=\$1; shift
i=\$((\${host##*.} - 10))
exec ip netns exec ${kPrefix}\$i sh -c "\$*"
EOF
chmod +x "$workdir/agent.sh"
for ((i = 0; i < ranks; i++)); do echo "${kNet}.$((10 + i)) slots=1"; done >"$workdir/hosts"

# mpirun runs in the background so that a signal reaches the trap at once (the teardown then ends
# mpirun, the orteds and the ranks, all of which live in the namespaces). --timeout: a launch
# that stalls (seen once: an orted that never called back) fails instead of hanging.
ip netns exec "$kHub" mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
  --hostfile "$workdir/hosts" --map-by node --bind-to none --timeout "$timeout_s" \
  --mca plm_rsh_agent "$workdir/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$kSubnet" \
  --mca oob_tcp_if_include "$kSubnet" --mca mpi_yield_when_idle 1 \
  "$program" "$@" &
mpirun_pid=$!
rc=0
wait "$mpirun_pid" || rc=$?
exit $rc
