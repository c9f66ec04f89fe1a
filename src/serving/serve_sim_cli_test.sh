#!/usr/bin/env bash
# End-to-end checks of `seedance serve-sim`: bad traces (missing column, negative length,
# unsorted timestamps, broken JSONL) exit 2 naming file, line and field; good traces exit 0, print
# the table and write the {"modes": [...]} JSON with exactly the contract's keys.
# Usage: serve_sim_cli_test.sh PATH/TO/seedance
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# expect_error NAME WANT_SUBSTRING ARGS...
expect_error() {
  local name=$1 want=$2
  shift 2
  local out rc
  out=$("$bin" serve-sim "$@" 2>&1)
  rc=$?
  if [[ $rc -ne 2 ]]; then bad "$name: exit $rc, want 2 ($out)"; return; fi
  if [[ "$out" != *"$want"* ]]; then bad "$name: message '$out' lacks '$want'"; return; fi
  ok "$name"
}

hdr='TIMESTAMP,ContextTokens,GeneratedTokens'
good="$tmp/good.csv"
{
  echo "$hdr"
  for i in $(seq 10 59); do echo "2023-11-16 18:15:$i.5,$((100 + i * 7)),$((5 + i))"; done
} >"$good"

printf '%s\n2023-11-16 18:15:46.1,374\n' 'TIMESTAMP,ContextTokens' >"$tmp/nocol.csv"
expect_error "missing column" "nocol.csv:1: field 'GeneratedTokens': missing column" \
  --trace "$tmp/nocol.csv"
printf '%s\n2023-11-16 18:15:46.1,374,44\n2023-11-16 18:15:47.1,-3,44\n' "$hdr" >"$tmp/neg.csv"
expect_error "negative length" "neg.csv:3: field 'ContextTokens': must be non-negative" \
  --trace "$tmp/neg.csv"
printf '%s\n2023-11-16 18:15:46.1,374,44\n2023-11-16 18:15:45.0,300,44\n' "$hdr" >"$tmp/unsorted.csv"
expect_error "unsorted timestamps" "unsorted.csv:3: field 'TIMESTAMP': timestamps must not decrease" \
  --trace "$tmp/unsorted.csv"
printf '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n{"timestamp": 3, "input_length": 6\n' >"$tmp/broken.jsonl"
expect_error "broken jsonl" "broken.jsonl:2: expected one JSON object" --trace "$tmp/broken.jsonl"
printf '{"timestamp": 9, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n{"timestamp": 3, "input_length": 6, "output_length": 5, "hash_ids": [0]}\n' >"$tmp/unsorted.jsonl"
expect_error "unsorted jsonl" "unsorted.jsonl:2: field 'timestamp'" --trace "$tmp/unsorted.jsonl"
printf 'a,b\n1,2\n' >"$tmp/unknown.csv"
expect_error "unknown format" "unknown.csv:1: unknown trace format" --trace "$tmp/unknown.csv"
expect_error "missing file" "cannot open" --trace "$tmp/nope.csv"
expect_error "bad model" "--model" --trace "$good" --model gpt-17
expect_error "bad batching" "--batching" --trace "$good" --batching dynamic
expect_error "model too big for one GPU" "does not fit" --trace "$good" --model llama-3-70b
expect_error "bad prefix cache" "--prefix-cache" --trace "$good" --prefix-cache lots
expect_error "bad rate scale" "rate-scale" --trace "$good" --rate-scale -1

out=$("$bin" serve-sim --trace "$good" --json "$tmp/out.json" 2>&1)
rc=$?
if [[ $rc -ne 0 ]]; then
  bad "good trace: exit $rc ($out)"
else
  ok "good trace exits 0"
  [[ "$out" == *continuous* && "$out" == *static* && "$out" == *ttft99* ]] && ok "table" ||
    bad "table lacks modes: $out"
  json=$(tr -d ' \n' <"$tmp/out.json")
  keys='"mode":"continuous","throughput_rps":[^,]*,"throughput_tokens_per_s":[^,]*,"ttft_p50_s":[^,]*,"ttft_p99_s":[^,]*,"tpot_p50_s":[^,]*,"tpot_p99_s":[^,]*,"max_concurrent_seqs":[0-9]*,"kv_waste_pct":[^,]*,"preemptions":[0-9]*,"prefix_hit_ratio":[^,}]*}'
  if [[ "$json" =~ ^\{\"modes\":\[\{$keys,\{\"mode\":\"static\" ]]; then ok "json contract"; else
    bad "json contract: $json"
  fi
fi

moon="$tmp/m.jsonl"
{
  for i in $(seq 0 9); do
    echo "{\"timestamp\": $((i * 5000)), \"input_length\": 1100, \"output_length\": 4, \"hash_ids\": [0, 1, $((10 + i))]}"
  done
} >"$moon"
out=$("$bin" serve-sim --trace "$moon" --batching continuous --prefix-cache unbounded 2>&1)
rc=$?
# 9 of 10 requests find blocks 0 and 1 (1024 of 1100 tokens) cached: 9 * 1024 / 11000.
if [[ $rc -eq 0 && "$out" == *" 0.838 "* ]]; then ok "mooncake prefix hits"; else
  bad "mooncake prefix hits: exit $rc ($out)"
fi

help=$("$bin" serve-sim --help 2>&1)
[[ "$help" == *Examples* && "$help" == *--rate-scale* ]] && ok "help teaches" || bad "help: $help"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
