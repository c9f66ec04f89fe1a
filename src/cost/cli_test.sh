#!/usr/bin/env bash
# CLI checks of `seedance profile` and `seedance analyze`: bad and truncated profiles exit 2 with
# the file and the JSON path, an unreachable Prometheus fails within the timeout, Ctrl-C writes
# what was gathered, a local profile has the samples asked for.
set -u
BIN="$1"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail=0
check() {  # check NAME WANT_RC WANT_SUBSTRING CMD...
  local name="$1" want_rc="$2" want="$3"; shift 3
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [[ $rc -ne $want_rc ]] || ! grep -qF -- "$want" "$T/out" "$T/err"; then
    echo "FAIL $name: rc=$rc (want $want_rc), want '$want' in output:"; cat "$T/out" "$T/err"
    fail=1
  else
    echo "ok   $name"
  fi
}

cat >"$T/good.json" <<'J'
{"version": 1, "source": "t", "interval_s": 1, "timestamps_s": [0, 1],
 "nodes": [{"name": "a", "gpus": [{"index": 0, "model": "NVIDIA L4", "util_pct": [1, 2]}]},
           {"name": "b", "gpus": [{"index": 0, "model": "NVIDIA L4", "util_pct": [50, 60]}]},
           {"name": "c", "gpus": [{"index": 0, "model": "NVIDIA L4", "util_pct": [3, 4]}]},
           {"name": "d", "gpus": [{"index": 0, "model": "NVIDIA L4", "util_pct": [5, 6]}]}]}
J
check "analyze good" 0 "Idle nodes" "$BIN" analyze --input "$T/good.json" --idle-window 2
sed 's/"util_pct": \[5, 6\]/"util_pct": [5, "x"]/' "$T/good.json" >"$T/bad.json"
check "wrong type" 2 "bad.json: /nodes/3/gpus/0/util_pct/1: expected number or null" \
  "$BIN" analyze --input "$T/bad.json"
head -c 200 "$T/good.json" >"$T/trunc.json"
check "truncated" 2 "trunc.json: /nodes/1" "$BIN" analyze --input "$T/trunc.json"
check "truncated says so" 2 "unexpected end of file" "$BIN" analyze --input "$T/trunc.json"
check "missing file" 2 "nothere.json: cannot open" "$BIN" analyze --input "$T/nothere.json"
check "bad format" 2 "--format: expected text, json or html" \
  "$BIN" analyze --input "$T/good.json" --format pdf
printf 'gpu_usd_per_hour:\n  L4: cheap\n' >"$T/prices.yaml"
check "bad prices" 2 "prices.yaml:2: gpu_usd_per_hour.L4: expected a non-negative number" \
  "$BIN" analyze --input "$T/good.json" --prices "$T/prices.yaml"
printf 'gpu_usd_per_hour:\n  L4: 1.0\n' >"$T/prices.yaml"
check "prices file" 0 "saves \$730/month" "$BIN" analyze --input "$T/good.json" \
  --prices "$T/prices.yaml" --idle-window 2
check "html" 0 "<canvas" "$BIN" analyze --input "$T/good.json" --format html

# Unreachable Prometheus: nothing listens on port 1 (connection refused at once).
start=$(date +%s)
check "prometheus refused" 1 "cannot query" "$BIN" profile -q --prometheus http://127.0.0.1:1 \
  --duration 2 --output "$T/p.json" --timeout 2
# A listener that never answers (a blackhole) must fail within the timeout, not hang.
python3 - "$T/port" <<'P' &
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
time.sleep(30)
P
hole=$!
for _ in $(seq 50); do [[ -s "$T/port" ]] && break; sleep 0.1; done
check "prometheus blackhole" 1 "timeout 2 s" timeout 20 "$BIN" profile -q \
  --prometheus "http://127.0.0.1:$(cat "$T/port")" --duration 2 --output "$T/p.json" --timeout 2
kill "$hole" 2>/dev/null
elapsed=$(( $(date +%s) - start ))
if (( elapsed > 15 )); then echo "FAIL prometheus errors took ${elapsed} s"; fail=1; fi
check "https refused" 2 "https is not supported" "$BIN" profile --prometheus https://x:9090 \
  --output "$T/p.json"

# Local profile: samples, and Ctrl-C writes what was gathered.
check "local profile" 0 "3 sample(s)" "$BIN" profile --duration 3 --interval 1 -q --output "$T/l.json"
"$BIN" profile --duration 60 --interval 0.5 --output "$T/i.json" 2>"$T/ierr" &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
rc=$?
if [[ $rc -ne 0 ]] || ! grep -q '"interrupted": true' "$T/i.json" || ! grep -q "interrupted; wrote" "$T/ierr"; then
  echo "FAIL ctrl-c: rc=$rc"; cat "$T/ierr"; fail=1
else
  echo "ok   ctrl-c"
fi
check "analyze local" 0 "1 nodes, 0 GPUs" "$BIN" analyze --input "$T/i.json"
exit $fail
