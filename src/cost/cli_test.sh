#!/usr/bin/env bash
# CLI checks of `seedance profile` and `seedance analyze`: bad and truncated profiles exit 2 with
# the file and the JSON path, an unreachable Prometheus fails within the timeout, Ctrl-C writes
# what was gathered, a local profile has the samples asked for; then the hardening: outputs opened
# up front and never replacing devices, FIFOs or inputs, validated flags, meaningless values,
# escaped reports, hostile Prometheus servers.
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
check "wrong type" 2 "bad.json: $.nodes[3].gpus[0].util_pct[1]: expected number or null" \
  "$BIN" analyze --input "$T/bad.json"
head -c 200 "$T/good.json" >"$T/trunc.json"
check "truncated" 2 "trunc.json: $.nodes[1]" "$BIN" analyze --input "$T/trunc.json"
check "truncated says so" 2 "unexpected end of file" "$BIN" analyze --input "$T/trunc.json"
check "missing file" 2 "nothere.json: cannot open" "$BIN" analyze --input "$T/nothere.json"
check "bad format" 2 "--format: expected table, json or html, got 'pdf'" \
  "$BIN" analyze --input "$T/good.json" --format pdf
printf 'gpu_usd_per_hour:\n  L4: cheap\n' >"$T/prices.yaml"
check "bad prices" 2 "prices.yaml:2: $.gpu_usd_per_hour.L4: expected a non-negative number" \
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
# --- Outputs: opened before sampling, written through devices and FIFOs, symlinks followed.
check "unwritable -o fails at once" 2 "/nonexistent/dir/p.json" timeout 10 "$BIN" profile -q \
  --duration 600 -o /nonexistent/dir/p.json
check "profile -o /dev/null" 0 "wrote /dev/null" "$BIN" profile -q --duration 1 -o /dev/null
if [[ -c /dev/null ]]; then echo "ok   /dev/null still a device"; else echo "FAIL /dev/null replaced"; fail=1; fi
mkfifo "$T/fifo"
cat "$T/fifo" >"$T/fifo.out" &
reader=$!
check "profile -o FIFO" 0 "sample(s)" "$BIN" profile -q --duration 1 -o "$T/fifo"
wait "$reader"
if [[ -p "$T/fifo" ]] && grep -q '"schema_version":"profile/v1"' "$T/fifo.out"; then
  echo "ok   FIFO written through"; else echo "FAIL FIFO"; fail=1; fi
echo old >"$T/target.json"
ln -s target.json "$T/link.json"
check "profile -o symlink" 0 "sample(s)" "$BIN" profile -q --duration 1 -o "$T/link.json"
if [[ -L "$T/link.json" ]] && grep -q '"version": 1' "$T/target.json"; then
  echo "ok   symlink followed"; else echo "FAIL symlink"; fail=1; fi
check "profile -o - is stdout" 0 '{"schema_version":"profile/v1","seedance_version":' \
  "$BIN" profile -q --duration 1 -o -
"$BIN" profile -q --duration 1 -o - 2>/dev/null | "$BIN" analyze -i - >"$T/pipe.out" 2>&1
if grep -q "Cost savings" "$T/pipe.out"; then echo "ok   profile | analyze -i -"; else
  echo "FAIL profile | analyze -i -"; cat "$T/pipe.out"; fail=1; fi
check "analyze -o /dev/full" 1 "/dev/full" "$BIN" analyze -i "$T/good.json" -o /dev/full
cp "$T/good.json" "$T/keep.json"
check "analyze -o names -i" 2 "--output" "$BIN" analyze -i "$T/keep.json" -o "$T/keep.json"
check "analyze -o names --prices" 2 "--output" "$BIN" analyze -i "$T/good.json" \
  --prices "$T/prices.yaml" -o "$T/prices.yaml"
if cmp -s "$T/good.json" "$T/keep.json" && grep -q "L4: 1.0" "$T/prices.yaml"; then
  echo "ok   inputs untouched"; else echo "FAIL an input was overwritten"; fail=1; fi

# --- Flags: durations with units, unbounded plans refused up front, NaN refused.
for bad in "--duration inf" "--duration 0" "--duration nan" "--interval 0" "--interval 1e-6" \
           "--duration -5" "--timeout 0" "--timeout 601" "--duration 1e400"; do
  # shellcheck disable=SC2086
  check "profile $bad" 2 "${bad%% *}" timeout 10 "$BIN" profile -q $bad -o "$T/x.json"
done
check "sample cap" 2 "at most 10000000" timeout 10 "$BIN" profile -q --duration 366d \
  --interval 0.001 -o "$T/x.json" 2>/dev/null
check "sample cap (h)" 2 "at most 10000000" timeout 10 "$BIN" profile -q --duration 8000h \
  --interval 0.001 -o "$T/x.json"
check "history cap" 2 "at most 11000 from Prometheus history" timeout 10 "$BIN" profile -q \
  --prometheus http://127.0.0.1:1 --duration 72h -o "$T/x.json"
if [[ ! -e "$T/x.json" ]]; then echo "ok   no output left by refused runs"; else
  echo "FAIL refused run left $T/x.json"; fail=1; fi
for bad in "--idle-util nan" "--idle-util 101" "--idle-util -1" "--underused-util inf" \
           "--drain-max-util nan" "--target-util-cap 1e999" "--idle-window nan" "--idle-window -1"; do
  # shellcheck disable=SC2086
  check "analyze $bad" 2 "${bad%% *}" "$BIN" analyze -i "$T/good.json" $bad
done
check "--idle-window 2s" 0 "Idle nodes" "$BIN" analyze -i "$T/good.json" --idle-window 2s
check "--format text (deprecated)" 0 "deprecated" "$BIN" analyze -i "$T/good.json" --format text
check "-o FILE.html" 0 "wrote" "$BIN" analyze -i "$T/good.json" -o "$T/r.html"
if grep -q "<canvas" "$T/r.html"; then echo "ok   html by extension"; else echo "FAIL html ext"; fail=1; fi
check "json header" 0 '"schema_version": "analyze/v1"' "$BIN" analyze -i "$T/good.json" --format json
check "unknown policy" 2 "--policy: unknown placement policy 'bestfitt'" "$BIN" analyze \
  -i "$T/good.json" --policy bestfitt
check "-o json refused" 2 "-o takes a file name" "$BIN" analyze -i "$T/good.json" -o json
check "analyze -i dir" 2 "$T" "$BIN" analyze -i "$T"
check "analyze --prices dir" 2 "$T" "$BIN" analyze -i "$T/good.json" --prices "$T"
check "analyze -i /dev/zero" 2 "/dev/zero" timeout 60 "$BIN" --max-input-size 1M analyze -i /dev/zero

# --- Meaning: values outside their range, no samples, duplicates, meaningless prices.
sed 's/"util_pct": \[5, 6\]/"util_pct": [5, 1e308]/' "$T/good.json" >"$T/huge.json"
check "util 1e308" 2 "huge.json: $.nodes[3].gpus[0].util_pct[1]: 1e+308 is outside 0..100" \
  "$BIN" analyze -i "$T/huge.json"
sed 's/"util_pct": \[5, 6\]/"util_pct": [-50, 6]/' "$T/good.json" >"$T/neg.json"
check "util -50" 2 "neg.json: $.nodes[3].gpus[0].util_pct[0]: -50 is outside 0..100" \
  "$BIN" analyze -i "$T/neg.json"
cat >"$T/empty.json" <<'J'
{"version": 1, "timestamps_s": [],
 "nodes": [{"name": "a", "gpus": [{"index": 0, "model": "NVIDIA L4"}]}]}
J
check "no samples" 2 "empty.json: the profile has no samples" "$BIN" analyze -i "$T/empty.json"
sed 's/"name": "d"/"name": "a"/' "$T/good.json" >"$T/dup.json"
check "duplicate node" 2 \
  "dup.json: $.nodes[3].name: duplicate node name 'a' (also at $.nodes[0].name)" \
  "$BIN" analyze -i "$T/dup.json"
printf 'gpu_usd_per_hour:\n  L4: .inf\n' >"$T/inf.yaml"
check "price .inf" 2 "inf.yaml:2: $.gpu_usd_per_hour.L4" "$BIN" analyze -i "$T/good.json" \
  --prices "$T/inf.yaml"
printf 'gpu_usd_per_hour:\n  L4: -1\n' >"$T/neg.yaml"
check "price -1" 2 "neg.yaml:2: $.gpu_usd_per_hour.L4" "$BIN" analyze -i "$T/good.json" \
  --prices "$T/neg.yaml"
printf 'source: "bad \xff\xfe utf8"\ngpu_usd_per_hour:\n  L4: 1\n' >"$T/utf.yaml"
check "invalid UTF-8 source" 0 '"price_source"' "$BIN" analyze -i "$T/good.json" \
  --prices "$T/utf.yaml" --format json
check "invalid UTF-8 --node-name" 0 "sample(s)" "$BIN" profile -q --duration 1 \
  --node-name $'bad\xff\xfe' -o "$T/utf.json"
check "analyze invalid UTF-8 node" 0 '"schema_version"' "$BIN" analyze -i "$T/utf.json" --format json

# --- Reports: names escaped for HTML and stripped of control characters on terminals.
sed 's#"name": "a"#"name": "</script><img src=x onerror=alert(1)>\\u001b[31mred"#' "$T/good.json" \
  >"$T/evil.json"
"$BIN" analyze -i "$T/evil.json" --idle-window 2 --format html >"$T/evil.html" 2>&1
if grep -q "<img src=x" "$T/evil.html" || ! grep -q '<canvas' "$T/evil.html"; then
  echo "FAIL html injection"; fail=1; else echo "ok   html escapes node names"; fi
"$BIN" analyze -i "$T/evil.json" --idle-window 2 >"$T/evil.txt" 2>&1
if grep -q $'\x1b' "$T/evil.txt" || ! grep -q "Idle nodes" "$T/evil.txt"; then
  echo "FAIL terminal escapes"; fail=1; else echo "ok   table strips control characters"; fi

# --- Hostile Prometheus servers (python3 http on 127.0.0.1): a drip, a wrong type, credentials.
python3 - "$T/hport" <<'P' &
import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
def serve(c):
    req = b""
    while b"\r\n\r\n" not in req:
        d = c.recv(4096)
        if not d: return
        req += d
    try:
        if b"drip" in req.split(b"\r\n")[0]:
            for ch in b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 10000:
                c.send(bytes([ch])); time.sleep(0.3)
        else:
            body = b'{"status": 5}'
            c.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    except OSError:
        pass
    c.close()
deadline = time.time() + 60
while time.time() < deadline:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
P
hostile=$!
for _ in $(seq 100); do [[ -s "$T/hport" ]] && break; sleep 0.1; done
hp=$(cat "$T/hport")
check "prometheus drip" 1 "no complete reply within --timeout" timeout 30 "$BIN" profile -q \
  --prometheus "http://127.0.0.1:$hp/drip" --duration 2 -o "$T/p.json" --timeout 1
check "prometheus {status: 5}" 1 "/api/v1/query_range (query" "$BIN" profile -q \
  --prometheus "http://u:s3cret@127.0.0.1:$hp" --duration 2 -o "$T/p.json" --timeout 2
if grep -q "s3cret" "$T/err" "$T/out"; then echo "FAIL credentials printed"; fail=1; else
  echo "ok   credentials redacted"; fi
if grep -qF '$.status: must be a string (got 5)' "$T/err"; then echo "ok   JSON path named"; else
  echo "FAIL JSON path"; cat "$T/err"; fail=1; fi
kill "$hostile" 2>/dev/null
exit $fail
