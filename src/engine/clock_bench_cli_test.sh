#!/usr/bin/env bash
# End-to-end checks of `seedance clock probe|simulate` and `seedance bench timers` flags: NaN,
# infinities, overflow, out-of-range values and values that would make a loop unbounded (a tick
# below the clock's resolution, a probe running for days, a simulation of 10^14 updates) exit 2
# naming the flag; -o/--format table|json with the clock-probe/v1, clock-simulate/v1 and
# bench-timers/v1 headers; the deprecated --json flag still works with a warning; and a probe
# against a real UDP server on 127.0.0.1 that first sends an impossible reply goes on to the next
# sample.
# Usage: clock_bench_cli_test.sh PATH/TO/seedance
set -u
bin="$1"
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
pass=0

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# expect NAME RC WANT_SUBSTRING ARGS...
expect() {
  local name=$1 want_rc=$2 want=$3
  shift 3
  local out rc
  out=$(timeout 60 "$bin" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want_rc ]]; then bad "$name: exit $rc, want $want_rc ($out)"; return; fi
  if [[ "$out" != *"$want"* ]]; then bad "$name: output lacks '$want' ($out)"; return; fi
  ok "$name"
}

# Flag values refused with exit 2, the message naming the flag.
while read -r sub flag value; do
  case $sub in
    simulate) expect "clock simulate $flag $value" 2 "$flag" clock simulate "$flag" "$value" ;;
    probe) expect "clock probe $flag $value" 2 "$flag" clock probe --server 127.0.0.1:9 "$flag" "$value" ;;
    bench) expect "bench timers $flag $value" 2 "$flag" bench timers --timers 1000 "$flag" "$value" ;;
  esac
done <<'CASES'
simulate --samples 0
simulate --samples -1
simulate --samples 1e9
simulate --samples 99999999999999999999
simulate --poll-s nan
simulate --poll-s inf
simulate --poll-s 0
simulate --poll-s 1e300
simulate --poll-s 2h
simulate --drift-ppm nan
simulate --drift-ppm -inf
simulate --drift-ppm 1e6
simulate --jitter-us -1
simulate --outlier-pct 101
simulate --warmup -1
simulate --window 1
simulate --seeds -1
simulate --seeds 5-1
simulate --seeds 1-18446744073709551616
probe --samples 0
probe --samples 1e3
probe --interval-ms nan
probe --interval-ms -5
probe --interval-ms 2h
probe --timeout-ms 0
probe --timeout-ms inf
probe --timeout-ms 90s
bench --tick-ms 5e-7
bench --tick-ms 0
bench --tick-ms nan
bench --tick-ms 2000
bench --lateness-s inf
bench --lateness-s 1e300
bench --lateness-s -1
bench --lateness-s 700
bench --lateness-timers -1
bench --lateness-timers 1e12
bench --timers 0
bench --timers -1
bench --timers 18446744073709551615
bench --repetitions 0
bench --min-time 0
bench --min-time nan
CASES

expect "range printed readably" 2 "(0, 60]" bench timers --min-time 1e300
expect "warmup leaves no samples" 2 "--warmup" clock simulate --samples 8 --warmup 8
expect "default warmup shrinks for short runs" 0 '"warmup": 4' clock simulate --samples 8 \
  --seeds 18446744073709551615 --format json
expect "mistyped subcommand is named" 2 "prob" clock prob
expect "mistyped flag is named" 2 "--servre" clock probe --servre 127.0.0.1
expect "missing --server" 2 "--server HOST[:PORT] is required" clock probe
expect "bad port names the server" 2 "127.0.0.1:ntp!" clock probe --server '127.0.0.1:ntp!'
expect "bench without a subcommand" 2 "timers" bench
expect "mistyped bench subcommand is named" 2 "timer" bench timer
expect "simulation too large" 2 "estimator updates" clock simulate --samples 1000000 \
  --window 100000 --seeds 1-1000
expect "probe too long" 2 "24 h" clock probe --server 127.0.0.1:9 --samples 10000 \
  --interval-ms 1h
expect "bad server" 2 "--server" clock probe --server "host:70000"
expect "bench unknown impl" 2 "--impl" bench timers --timers 1000 --impl nope
expect "bench bad format" 2 "--format" bench timers --format csv
expect "clock -o json is a format" 2 "--format json" clock simulate -o json

# Outputs: JSON headers, null drift before 4 samples, -o FILE, the deprecated --json.
header='"schema_version": "clock-simulate/v1"'
expect "simulate json header" 0 "$header" clock simulate --samples 32 --seeds 1-3 --format json
expect "simulate table" 0 "freq_error_ppm" clock simulate --samples 32 --seeds 1-3
expect "simulate deprecated --json" 0 "--json is deprecated" clock simulate --samples 32 \
  --seeds 1-3 --json
out=$("$bin" clock simulate --samples 32 --seeds 1-3 -o "$tmp/sim.json" 2>&1)
rc=$?
[[ $rc -eq 0 && -z "$out" ]] && grep -q "$header" "$tmp/sim.json" && ok "simulate -o FILE.json" ||
  bad "simulate -o: exit $rc ($out)"
expect "simulate poll with suffix" 0 '"poll_s": 0.25' clock simulate --samples 32 --seeds 1 \
  --poll-s 250ms --format json
expect "bench json header" 0 '"schema_version": "bench-timers/v1"' bench timers --timers 1000 \
  --impl seedance --repetitions 1 --min-time 10ms --lateness-s 0 --format json
expect "bench lateness null when skipped" 0 '"lateness": null' bench timers --timers 1000 \
  --impl seedance --repetitions 1 --min-time 10ms --lateness-s 0 --format json
expect "bench 1 us tick is the floor" 0 '"tick_us": 1.0' bench timers --timers 1000 \
  --impl seedance --repetitions 1 --min-time 10ms --lateness-s 20ms --lateness-timers 100 \
  --tick-ms 1us --format json
expect "bench deprecated --json" 0 "--json is deprecated" bench timers --timers 1000 \
  --impl seedance --repetitions 1 --min-time 10ms --lateness-s 0 --json
out=$("$bin" bench timers --timers 1000 --impl seedance --repetitions 1 --min-time 10ms \
  --lateness-s 0 >/dev/full 2>&1)
rc=$?
[[ $rc -eq 1 ]] && ok "bench to /dev/full is exit 1" || bad "bench /dev/full: exit $rc ($out)"
expect "probe unreachable" 1 "--server '127.0.0.1:9': no usable reply" clock probe --server 127.0.0.1:9 --samples 1 \
  --timeout-ms 200

# A real UDP server on 127.0.0.1: the first reply's transmit time precedes its receive time
# (impossible), then good replies. The probe rejects the first and uses the next samples.
if command -v python3 >/dev/null; then
  python3 - "$tmp/port" <<'PY' &
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.settimeout(30)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
n = 0
while n < 3:
    try:
        data, addr = s.recvfrom(2048)
    except socket.timeout:
        break
    if len(data) < 48:
        continue
    t1 = struct.unpack("!Q", data[40:48])[0]
    now = int((time.time() + 2208988800) * 2**32)
    recv, xmit = now, now
    if n == 0:
        xmit = now - 2**32  # one second before it received the request
    ref = now - 10 * 2**32
    pkt = struct.pack("!BBbbIII", (0 << 6) | (4 << 3) | 4, 2, 6, -20, 0, 0, 0x7F000001)
    pkt += struct.pack("!QQQQ", ref, t1, recv, xmit)
    s.sendto(pkt, addr)
    n += 1
PY
  server_pid=$!
  for _ in $(seq 1 200); do [[ -s "$tmp/port" ]] && break; sleep 0.05; done
  port=$(cat "$tmp/port" 2>/dev/null)
  out=$("$bin" clock probe --server "127.0.0.1:$port" --samples 3 --interval-ms 0 \
    --timeout-ms 500 --format json 2>"$tmp/err")
  rc=$?
  err=$(cat "$tmp/err")
  if [[ $rc -eq 0 && "$out" == *'"samples": 2'* && "$out" == *'"samples_failed": 1'* &&
    "$out" == *'"drift_ppm": null'* && "$out" == *'"schema_version": "clock-probe/v1"'* &&
    "$err" == *"before the receive timestamp"* ]]; then
    ok "probe rejects an impossible reply and uses the next"
  else
    bad "probe with an impossible first reply: exit $rc ($out) ($err)"
  fi
else
  echo "skip probe against a UDP server (no python3)"
fi

help=$("$bin" clock probe --help 2>&1)
[[ "$help" == *Examples* && "$help" == *"Exit status"* && "$help" == *"--format"* ]] &&
  ok "clock probe help" || bad "clock probe help: $help"
help=$("$bin" bench timers --help 2>&1)
[[ "$help" == *Examples* && "$help" == *"Exit status"* && "$help" == *"1us..1s"* ]] &&
  ok "bench timers help" || bad "bench timers help: $help"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
