#!/usr/bin/env bash
# End-to-end checks of the seedance CLI: bad input exits 2 with FILE:LINE: field '...';
# good input exits 0 and writes the JSON and HTML it was asked for.
# Usage: cli_test.sh PATH/TO/seedance
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0

pods="$tmp/pods.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\np1,2000,2048,1,1000\n' >"$pods"
nodes="$tmp/nodes.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,32000,65536,4,V100M32\n' >"$nodes"

# expect_error NAME WANT_SUBSTRING ARGS...
expect_error() {
  local name=$1 want=$2
  shift 2
  local out rc
  out=$("$bin" simulate -q "$@" 2>&1)
  rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "FAIL $name: exit $rc, want 2 ($out)"; fail=$((fail + 1)); return
  fi
  if [[ "$out" != *"$want"* ]]; then
    echo "FAIL $name: message '$out' lacks '$want'"; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536\n' >"$tmp/truncated.csv"
expect_error "truncated row" "truncated.csv:2: field 'gpu'" --nodes "$tmp/truncated.csv" --pods "$pods"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,lots,65536,2,T4\n' >"$tmp/nonnum.csv"
expect_error "non-numeric field" "nonnum.csv:2: field 'cpu_milli'" --nodes "$tmp/nonnum.csv" --pods "$pods"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,-5,1024,1,500\n' >"$tmp/negative.csv"
expect_error "negative quantity" "negative.csv:2: field 'cpu_milli'" --nodes "$nodes" --pods "$tmp/negative.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\np0,1000,1024,1,500,red\n' >"$tmp/header.csv"
expect_error "unknown header" "header.csv:1: field 'colour'" --nodes "$nodes" --pods "$tmp/header.csv"
: >"$tmp/empty.csv"
expect_error "empty file" "empty.csv:1" --nodes "$nodes" --pods "$tmp/empty.csv"
expect_error "missing file" "$tmp/missing.csv" --nodes "$tmp/missing.csv" --pods "$pods"
expect_error "unknown policy" "unknown policy 'nope'" --nodes "$nodes" --pods "$pods" --policy nope
expect_error "bad seeds" "--seeds" --nodes "$nodes" --pods "$pods" --seeds 9-1
expect_error "bad policy option" "unknown cas option" --nodes "$nodes" --pods "$pods" --policy cas --policy-opt nope=1
expect_error "unknown mode" "--mode" --nodes "$nodes" --pods "$pods" --mode sideways
expect_error "unknown rng" "--rng" --nodes "$nodes" --pods "$pods" --rng dice
expect_error "reference rng outside fill" "--rng reference" --nodes "$nodes" --pods "$pods" --mode churn --rng reference
expect_error "dump order outside fill" "--dump-order" --nodes "$nodes" --pods "$pods" --mode churn --dump-order "$tmp/order.csv"

if "$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy fgd,cas --seeds 1-2 \
    --json "$tmp/out.json" --report "$tmp/out.html" >"$tmp/stdout" 2>&1 &&
   grep -q '"unalloc_gpu_pct_at_100"' "$tmp/out.json" && grep -q '<svg' "$tmp/out.html" &&
   grep -q '^cas ' "$tmp/stdout"; then
  echo "ok   good input writes table, JSON and HTML"; pass=$((pass + 1))
else
  echo "FAIL good input"; cat "$tmp/stdout"; fail=$((fail + 1))
fi

if "$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy bestfit --seeds 42 --rng reference \
    --json "$tmp/ref.json" >"$tmp/stdout" 2>&1 && grep -q '"unalloc_gpu_pct_at_100"' "$tmp/ref.json"; then
  echo "ok   reference random stream"; pass=$((pass + 1))
else
  echo "FAIL reference random stream"; cat "$tmp/stdout"; fail=$((fail + 1))
fi

# --dump-order: a header, then each seed's arrivals with the cumulative GPU demand; the two trace
# pods (1500 milli) come first, then resampled ones up to 1.3 x 6 GPUs.
if "$bin" simulate -q --nodes "$nodes" --pods "$pods" --policy bestfit --seeds 1-2 \
    --dump-order "$tmp/order.csv" >"$tmp/stdout" 2>&1 &&
   head -1 "$tmp/order.csv" | grep -q '^seed,position,name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,arrived_gpu_milli$' &&
   awk -F, 'NR > 1 && $2 == 1 { if ($9 != 1500) bad = 1; n++ } NR > 1 { last[$1] = $9 }
            END { exit !(n == 2 && !bad && last[1] >= 7800 && last[2] >= 7800) }' "$tmp/order.csv"; then
  echo "ok   dump order"; pass=$((pass + 1))
else
  echo "FAIL dump order"; cat "$tmp/stdout" "$tmp/order.csv"; fail=$((fail + 1))
fi

# expect_rc NAME WANT_RC WANT_SUBSTRING ARGS...: any subcommand, exit status and output.
expect_rc() {
  local name=$1 want_rc=$2 want=$3
  shift 3
  local out rc
  out=$("$bin" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL $name: exit $rc, want $want_rc ($out)"; fail=$((fail + 1)); return
  fi
  if [[ "$out" != *"$want"* ]]; then
    echo "FAIL $name: output lacks '$want' ($out)"; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

# The other subcommands: wiring, exit statuses and output contracts (their own tests go deeper).
expect_rc "no subcommand" 2 "subcommand is required"
expect_rc "clock simulate json" 0 '"estimator": "ewma"' clock simulate --samples 64 --json
expect_rc "clock simulate zero samples" 2 "samples" clock simulate --samples 0
expect_rc "clock probe needs a server" 2 "--server" clock probe
expect_rc "clock probe unreachable" 1 "" clock probe --server 127.0.0.1:9 --samples 1 --timeout-ms 200
expect_rc "bench timers json" 0 '"impl": "seedance"' bench timers --timers 1000 --repetitions 1 \
  --min-time 0.01 --lateness-s 0 --json
expect_rc "bench timers zero" 2 "timers" bench timers --timers 0
expect_rc "analyze missing input" 2 "nope.json" analyze --input "$tmp/nope.json" --report cost-savings
expect_rc "serve-sim missing trace" 2 "nope.csv" serve-sim --trace "$tmp/nope.csv" --model llama-3-8b \
  --gpu a100-80g
expect_rc "costmodel unknown gpu" 2 "gpu" costmodel check --profile "$tmp/nope.csv" --gpu b9000

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
