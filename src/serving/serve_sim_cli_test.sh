#!/usr/bin/env bash
# End-to-end checks of `seedance serve-sim`: bad traces (missing column, negative length,
# unsorted timestamps, broken JSONL, a directory, /dev/zero, an empty trace) exit 2 naming file,
# line and field; bad flag values (NaN, inf, out of range, -1 seeds) exit 2 naming the flag; good
# traces exit 0, print the table and write the serve-sim/v1 JSON with exactly the contract's keys;
# -o/--format table|json|csv and the deprecated --json FILE / --format TRACE-FORMAT spellings.
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
moon_early="$tmp/early.jsonl"
printf '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n' >"$moon_early"
{
  echo "$hdr"
  for i in $(seq 10 59); do echo "2023-11-16 18:15:$i.5,$((100 + i * 7)),$((5 + i))"; done
} >"$good"

printf '%s\n2023-11-16 18:15:46.1,374\n' 'TIMESTAMP,ContextTokens' >"$tmp/nocol.csv"
expect_error "missing column" "nocol.csv:1: field 'GeneratedTokens': missing required header" \
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
expect_error "missing file" "nope.csv: cannot open" --trace "$tmp/nope.csv"
mkdir "$tmp/dir.csv"
expect_error "directory as trace" "dir.csv" --trace "$tmp/dir.csv"
expect_error "/dev/zero as trace" "/dev/zero" --trace /dev/zero --max-input-size 1M
: >"$tmp/empty.csv"
expect_error "empty trace" "empty.csv:1: empty trace file" --trace "$tmp/empty.csv"
printf '\n\n' >"$tmp/blank.csv"
expect_error "blank trace" "blank.csv:1: blank trace file" --trace "$tmp/blank.csv"
printf '%s\n' "$hdr" >"$tmp/header_only.csv"
expect_error "header only" "header_only.csv: no requests" --trace "$tmp/header_only.csv"
printf '%s\n2023-02-31 10:00:00,10,10\n' "$hdr" >"$tmp/feb31.csv"
expect_error "impossible date" "feb31.csv:2: field 'TIMESTAMP'" --trace "$tmp/feb31.csv"
printf '%s\n2023-11-16 18:15:46.1,nan,44\n' "$hdr" >"$tmp/nan.csv"
expect_error "NaN token count" "nan.csv:2: field 'ContextTokens'" --trace "$tmp/nan.csv"
printf '{"timestamp": 1e300, "input_length": 6, "output_length": 5, "hash_ids": [0]}\n' >"$tmp/huge.jsonl"
expect_error "huge mooncake timestamp" "huge.jsonl:1: field 'timestamp'" --trace "$tmp/huge.jsonl"
printf '{"timestamp": 1, "input_length": -6, "output_length": 5, "hash_ids": []}\n' >"$tmp/negm.jsonl"
expect_error "negative mooncake length" "negm.jsonl:1: field 'input_length'" --trace "$tmp/negm.jsonl"
printf '{"timestamp": 1, "input_length": 6.5, "output_length": 5, "hash_ids": []}\n' >"$tmp/fracm.jsonl"
expect_error "fractional mooncake length" "fracm.jsonl:1: field 'input_length'" --trace "$tmp/fracm.jsonl"
expect_error "bad model" "--model" --trace "$good" --model gpt-17
expect_error "bad batching" "--batching" --trace "$good" --batching dynamic
expect_error "model too big for one GPU" "does not fit" --trace "$good" --model llama-3-70b
expect_error "bad prefix cache" "--prefix-cache" --trace "$good" --prefix-cache lots
expect_error "bad rate scale" "rate-scale" --trace "$good" --rate-scale -1
# Numeric flags: NaN, infinities, overflow and out-of-range values name the flag (and its range).
while read -r flag value; do
  expect_error "$flag $value" "$flag" --trace "$good" "$flag" "$value"
done <<'CASES'
--rate-scale nan
--rate-scale inf
--rate-scale 1e-300
--rate-scale 1e300
--rate-scale 0
--rate nan
--rate 0
--rate 1e300
--seed -1
--seed 18446744073709551616
--seed 9223372036854775808
--seed 1.5
--tp 0
--tp 65
--tp 1e3
--block-size 0
--block-size 99999999999999999999
--max-num-seqs -5
--max-batched-tokens 0
--swap-gib -1
--swap-gib inf
--static-max-len -1
--mem-util nan
--mem-util 1.5
--limit -1
--limit 9223372036854775808
--prefix-cache 0
--prefix-cache 99999999999
--prefix-cache -3
CASES
expect_error "range is readable" "[1e-06, 1000000]" --trace "$good" --rate-scale 1e300
# A trace spanning 317 years (or a small rate scale on a long one) is past what doubles resolve.
printf '{"timestamp": 0, "input_length": 6, "output_length": 5, "hash_ids": [0]}\n{"timestamp": 1e13, "input_length": 6, "output_length": 5, "hash_ids": [0]}\n' >"$tmp/long.jsonl"
expect_error "arrival span too long" "--rate-scale 1: the trace's arrivals span" --trace "$tmp/long.jsonl"
printf '{"timestamp": 0, "input_length": 6, "output_length": 5, "hash_ids": [0]}\n{"timestamp": 1e9, "input_length": 6, "output_length": 5, "hash_ids": [0]}\n' >"$tmp/week.jsonl"
expect_error "rate scale stretches time" "--rate-scale 0.0001" --trace "$tmp/week.jsonl" --rate-scale 0.0001
out=$("$bin" serve-sim --trace "$tmp/week.jsonl" 2>&1)
[[ $? -eq 0 ]] && ok "a 12-day trace replays" || bad "12-day trace: $out"
python3 -c 'print("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": " + "[" * 100000 + "]" * 100000 + "}")' >"$tmp/deep.jsonl" 2>/dev/null &&
  expect_error "deeply nested JSON line" "deep.jsonl:1: JSON nested deeper than 64" --trace "$tmp/deep.jsonl"
printf '%s\n2023-11-16 18:15:46.1,%s,44\n' "$hdr" "$(printf '9%.0s' $(seq 1 60))" >"$tmp/long_number.csv"
out=$("$bin" serve-sim --trace "$tmp/long_number.csv" 2>&1)
[[ $? -eq 2 && "$out" == *"long_number.csv:2: field 'ContextTokens'"* && ! "$out" =~ [0-9]{40} ]] &&
  ok "a 60-digit count is clipped in the message" || bad "60-digit count: $out"
expect_error "block size must divide 512" "--block-size 24" --trace "$moon_early" --block-size 24
expect_error "mistyped flag is named" "--tarce" --tarce "$good"
expect_error "missing --trace" "--trace FILE is required"
expect_error "bad output format" "--format" --trace "$good" --format yaml
expect_error "bad trace format" "--trace-format" --trace "$good" --trace-format csv
expect_error "-o json is a format" "--format json" --trace "$good" -o json
expect_error "output names the input" "--output" --trace "$good" -o "$good"
expect_error "--json names the input" "--json" --trace "$good" --json "$good"
out=$("$bin" serve-sim --trace "$good" -o "$tmp/nodir/out.json" 2>&1)
rc=$?
[[ $rc -eq 2 && "$out" == *nodir* ]] && ok "missing output directory fails up front" ||
  bad "missing output directory: exit $rc ($out)"
cmp -s "$good" <(
  echo "$hdr"
  for i in $(seq 10 59); do echo "2023-11-16 18:15:$i.5,$((100 + i * 7)),$((5 + i))"; done
) && ok "input untouched" || bad "the trace was changed"

keys='"mode":"continuous","throughput_rps":[^,]*,"throughput_tokens_per_s":[^,]*,"ttft_p50_s":[^,]*,"ttft_p99_s":[^,]*,"tpot_p50_s":[^,]*,"tpot_p99_s":[^,]*,"max_concurrent_seqs":[0-9]*,"kv_waste_pct":[^,]*,"preemptions":[0-9]*,"prefix_hit_ratio":[^,]*,"completed_requests":[0-9]*,"dropped_requests":[0-9]*,"iterations":[0-9]*,"wall_s":[^,}]*}'
json_ok() {
  local json
  json=$(tr -d ' \n' <"$1")
  [[ "$json" =~ ^\{\"schema_version\":\"serve-sim/v1\",\"seedance_version\":\"[^\"]*\",\"command_line\":\[ ]] &&
    [[ "$json" =~ \"modes\":\[\{$keys,\{\"mode\":\"static\" ]]
}
out=$("$bin" serve-sim --trace "$good" -o "$tmp/out.json" 2>&1)
rc=$?
if [[ $rc -ne 0 ]]; then
  bad "good trace: exit $rc ($out)"
else
  ok "good trace exits 0"
  [[ -z "$out" ]] && ok "-o FILE keeps stdout quiet" || bad "-o FILE printed: $out"
  json_ok "$tmp/out.json" && ok "json contract (format from -o's extension)" ||
    bad "json contract: $(cat "$tmp/out.json")"
fi
out=$("$bin" serve-sim --trace "$good" 2>&1)
rc=$?
[[ $rc -eq 0 && "$out" == *continuous* && "$out" == *static* && "$out" == *ttft99_s* ]] &&
  ok "table" || bad "table: exit $rc ($out)"
"$bin" serve-sim --trace "$good" --format json >"$tmp/stdout.json" 2>"$tmp/err" &&
  json_ok "$tmp/stdout.json" && ok "--format json to stdout" || bad "--format json: $(cat "$tmp/err")"
"$bin" serve-sim --trace "$good" --format csv -o - >"$tmp/out.csv" 2>"$tmp/err"
rc=$?
if [[ $rc -eq 0 && $(head -1 "$tmp/out.csv") == mode,throughput_rps,*,wall_s &&
  $(wc -l <"$tmp/out.csv") -eq 3 ]]; then ok "csv"; else bad "csv: exit $rc $(cat "$tmp/out.csv" "$tmp/err")"; fi
# Deprecated spellings still work one release, with a warning.
out=$("$bin" serve-sim --trace "$good" --json "$tmp/old.json" 2>&1)
rc=$?
if [[ $rc -eq 0 && "$out" == *"--json is deprecated"* && "$out" == *ttft99_s* ]] &&
  json_ok "$tmp/old.json"; then ok "deprecated --json FILE"; else bad "deprecated --json: exit $rc ($out)"; fi
out=$("$bin" serve-sim --trace "$good" --format azure 2>&1)
rc=$?
[[ $rc -eq 0 && "$out" == *"--trace-format azure"* && "$out" == *continuous* ]] &&
  ok "deprecated --format azure" || bad "deprecated --format azure: exit $rc ($out)"
out=$("$bin" serve-sim --trace - --trace-format azure --batching continuous <"$good" 2>&1)
rc=$?
[[ $rc -eq 0 && "$out" == *continuous* ]] && ok "trace from stdin" || bad "stdin: exit $rc ($out)"
out=$("$bin" serve-sim --trace "$good" >/dev/full 2>&1)
rc=$?
[[ $rc -eq 1 ]] && ok "/dev/full is exit 1" || bad "/dev/full: exit $rc ($out)"

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

# --precision-plan: a `model plan` JSON's formats per layer class follow into the cost model;
# a bad plan or a format the GPU does not run exits 2 naming the file.
plan="$tmp/plan.json"
cat >"$plan" <<'EOF2'
{"schema_version": "model-plan/v1", "gpu": "H100", "layers": [
 {"node": "/model/layers.0/self_attn/q_proj/MatMul", "format": "fp8-e4m3", "bytes_fp32": 64, "bytes": 20},
 {"node": "/model/layers.0/mlp/up_proj/MatMul", "format": "int8", "bytes_fp32": 64, "bytes": 20},
 {"node": "Gemm_7", "format": "int8", "bytes_fp32": 64, "bytes": 20}],
 "bytes_fp32": 192, "bytes": 60, "measured_sqnr_db": 38.5}
EOF2
out=$("$bin" serve-sim --trace "$good" --gpu h100 --batching continuous --precision-plan "$plan" \
  --format json 2>&1)
rc=$?
if [[ $rc -eq 0 ]] && python3 -c '
import json, sys
p = json.loads(sys.argv[1])["precision_plan"]
assert p["classes"]["attention"]["format"] == "fp8" and p["classes"]["ffn"]["format"] == "int8"
assert p["classes"]["kv_cache"]["planned_nodes"] == 0 and p["unmatched_nodes"] == ["Gemm_7"]
' "$out"; then ok "precision plan applied"; else bad "precision plan applied: exit $rc ($out)"; fi
plain=$("$bin" serve-sim --trace "$good" --gpu h100 --batching continuous --format json 2>&1)
[[ "$plain" != *precision_plan* ]] && ok "no plan, no plan key" || bad "no plan: $plain"
expect_error "plan gpu lacks fp8" "plan.json: the plan runs attention in fp8" \
  --trace "$good" --gpu a100-80g --precision-plan "$plan"
echo '{"layers": [{"node": "mlp", "format": "int3"}]}' >"$tmp/badplan.json"
expect_error "plan bad format" 'badplan.json: $.layers[0].format: unknown numeric format' \
  --trace "$good" --precision-plan "$tmp/badplan.json"
expect_error "plan is output" "same file" --trace "$good" --precision-plan "$plan" -o "$plan"

# --experiment: the online precision probe. Two plans (fp16 and the fp8/int8 plan above), the
# trace's requests split by the API's assignment hash, one event per request in the events file.
plan16="$tmp/plan16.json"
cat >"$plan16" <<'EOF2'
{"schema_version": "model-plan/v1", "gpu": "H100", "layers": [
 {"node": "/model/layers.0/self_attn/q_proj/MatMul", "format": "fp16", "bytes_fp32": 64, "bytes": 32},
 {"node": "/model/layers.0/mlp/up_proj/MatMul", "format": "fp16", "bytes_fp32": 64, "bytes": 32}],
 "bytes_fp32": 128, "bytes": 64}
EOF2
mkdir -p "$tmp/exp"
cat >"$tmp/exp/int8-probe.json" <<'EOF2'
{"control": "fp16", "variants": [{"name": "fp16", "weight": 1, "precision_plan": "../plan16.json"},
 {"name": "int8", "weight": 1, "precision_plan": "../plan.json"}],
 "metrics": [{"name": "e2e_ms", "direction": "decrease"}, {"name": "ttft_ms", "direction": "decrease"}]}
EOF2
out=$("$bin" serve-sim --trace "$good" --gpu h100 --batching continuous \
  --experiment "$tmp/exp/int8-probe.json" --events-out "$tmp/events.json" --format json 2>&1)
rc=$?
if [[ $rc -eq 0 ]] && python3 - "$tmp/events.json" "$out" <<'PY'
import json, sys
M = (1 << 64) - 1
def variant(experiment, session):  # experiment.h's AssignmentHash / AssignVariant, 50/50
    h = 0xcbf29ce484222325
    for c in (experiment + "\x1f" + session).encode():
        h = ((h ^ c) * 0x100000001b3) & M
    h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & M
    h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & M
    h ^= h >> 31
    return "fp16" if (h >> 11) * 2.0 ** -53 * 2 < 1 else "int8"
events = json.load(open(sys.argv[1]))["events"]
assert len(events) == 50, len(events)
assert {e["variant"] for e in events} == {"fp16", "int8"}
assert sorted(int(e["session"][1:]) for e in events) == list(range(50))
for e in events:
    assert e["variant"] == variant("int8-probe", e["session"]), e
    assert set(e["metrics"]) == {"e2e_ms", "ttft_ms"}, e
    assert 0 < e["metrics"]["ttft_ms"] <= e["metrics"]["e2e_ms"], e
x = json.loads(sys.argv[2])["experiment"]
assert x["name"] == "int8-probe" and x["events"] == 50 and x["mode"] == "continuous", x
v = {a["name"]: a for a in x["variants"]}
assert v["fp16"]["requests"] + v["int8"]["requests"] == 50
assert v["int8"]["precision_plan"].endswith("plan.json") and v["fp16"]["stop"] is None
assert v["fp16"]["requests"] == sum(e["variant"] == "fp16" for e in events)
PY
then ok "--experiment events file: the split, the metrics"; else bad "--experiment: exit $rc ($out)"; fi
out=$("$bin" serve-sim --trace "$good" --gpu h100 --batching continuous \
  --experiment "$tmp/exp/int8-probe.json" --apdf --error-latency-ms 1 2>&1)
rc=$?
[[ $rc -eq 0 && "$out" == *"experiment int8-probe"* && "$out" == *"fp16 (control)"* &&
  "$out" == *"APDF on"* ]] && ok "--experiment table section" || bad "experiment table: exit $rc ($out)"
echo '{"control": "fp16", "variants": [{"name": "fp16", "weight": 1}, {"name": "int8", "weight": -1}], "metrics": [{"name": "e2e_ms", "direction": "decrease"}]}' >"$tmp/exp/bad.json"
expect_error "bad experiment file" 'bad.json: $.variants[1].weight' --trace "$good" \
  --experiment "$tmp/exp/bad.json"
echo '{"control": "fp16", "variants": [{"name": "fp16", "weight": 1}, {"name": "int8", "weight": 1}], "metrics": [{"name": "quality", "direction": "increase"}]}' >"$tmp/exp/quality.json"
expect_error "experiment metric the probe lacks" 'quality.json: $.metrics[0].name: the probe cannot produce metric "quality"' \
  --trace "$good" --experiment "$tmp/exp/quality.json"
echo '{"control": "fp16", "variants": [{"name": "fp16", "weight": 1}, {"name": "int8", "weight": 1, "precision_plan": "nope.json"}], "metrics": [{"name": "e2e_ms", "direction": "decrease"}]}' >"$tmp/exp/noplan.json"
expect_error "experiment plan missing" 'noplan.json: $.variants[1].precision_plan: ' --trace "$good" \
  --experiment "$tmp/exp/noplan.json"
cp "$tmp/exp/noplan.json" "$tmp/exp/Not_A_Label.json"
expect_error "experiment name from the stem" "--experiment-name" --trace "$good" \
  --experiment "$tmp/exp/Not_A_Label.json"
expect_error "--precision-plan with --experiment" "--precision-plan and --experiment" \
  --trace "$good" --precision-plan "$plan" --experiment "$tmp/exp/int8-probe.json"
expect_error "--events-out alone" "--events-out needs --experiment" --trace "$good" \
  --events-out "$tmp/e.json"
out=$("$bin" serve-sim --trace "$good" --gpu h100 --experiment "$tmp/exp/int8-probe.json" \
  --server http://127.0.0.1:1 2>&1)
rc=$?
[[ $rc -eq 1 ]] && ok "unreachable --server is exit 1" || bad "unreachable --server: exit $rc ($out)"

help=$("$bin" serve-sim --help 2>&1)
[[ "$help" == *Examples* && "$help" == *--rate-scale* && "$help" == *"Exit status"* &&
  "$help" == *--trace-format* && "$help" != *"--json "* ]] && ok "help teaches" || bad "help: $help"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
