#!/usr/bin/env bash
# End-to-end checks of `seedance costmodel check|fit`: bad profiles (a directory, /dev/zero, an
# empty file, a duplicate column, NaN and negative values) exit 2 naming the file; bad flag values
# (--roofline-exponent nan, --train-workers -1) exit 2 naming the flag; -o/--format table|json
# with the costmodel-check/v1 and costmodel-fit/v1 headers; the deprecated --json still works
# with a warning; an output naming an input is refused before any work.
# Usage: costmodel_cli_test.sh PATH/TO/seedance
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# expect NAME RC WANT_SUBSTRING ARGS...
expect() {
  local name=$1 want_rc=$2 want=$3
  shift 3
  local out rc
  out=$(timeout 60 "$bin" costmodel "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want_rc ]]; then bad "$name: exit $rc, want $want_rc ($out)"; return; fi
  if [[ "$out" != *"$want"* ]]; then bad "$name: output lacks '$want' ($out)"; return; fi
  ok "$name"
}

hdr="time_stats.attn_pre_proj.median,time_stats.mlp_up_proj.median,time_stats.add.median,n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers"
prof="$tmp/ops.csv"
{
  echo "$hdr"
  for t in 16 64 256 1024 4096; do
    for tp in 1 2; do echo "0.$((t / 16 + tp))1,0.$((t / 8 + tp))2,0.01,32,8,4096,14336,128256,True,$t,$tp"; done
  done
} >"$prof"

# Bad profiles: exit 2 naming the file (and the line and field where there is one).
mkdir "$tmp/dir.csv"
expect "directory" 2 "dir.csv" check --profile "$tmp/dir.csv" --gpu a100-80g
expect "/dev/zero" 2 "/dev/zero" check --profile /dev/zero --gpu a100-80g --max-input-size 1M
expect "missing" 2 "nope.csv: cannot open" check --profile "$tmp/nope.csv" --gpu a100-80g
: >"$tmp/empty.csv"
expect "empty" 2 "empty.csv:1" check --profile "$tmp/empty.csv" --gpu a100-80g
printf '%s\n' "$hdr" >"$tmp/header_only.csv"
expect "no rows" 2 "header_only.csv: no measured rows" check --profile "$tmp/header_only.csv" \
  --gpu a100-80g
printf 'n_head,n_head,time_stats.add.median\n1,2,3\n' >"$tmp/dup.csv"
expect "duplicate column" 2 "dup.csv:1: field 'n_head': duplicate header" \
  check --profile "$tmp/dup.csv" --gpu a100-80g
printf '%s\nnan,0.2,0.01,32,8,4096,14336,128256,True,16,1\n' "$hdr" >"$tmp/nan.csv"
expect "NaN time" 2 "nan.csv:2: field 'time_stats.attn_pre_proj.median'" \
  check --profile "$tmp/nan.csv" --gpu a100-80g
printf '%s\n0.1,0.2,0.01,32,8,4096,14336,128256,True,-16,1\n' "$hdr" >"$tmp/neg.csv"
expect "negative tokens" 2 "neg.csv:2: field 'num_tokens'" check --profile "$tmp/neg.csv" \
  --gpu a100-80g
printf '%s\n0.1,0.2,0.01,64,8,32,14336,128256,True,16,1\n' "$hdr" >"$tmp/narrow.csv"
expect "embedding narrower than the heads" 2 "narrow.csv:2: field 'n_embd'" \
  check --profile "$tmp/narrow.csv" --gpu a100-80g
expect "missing --profile" 2 "--profile FILE is required" check --gpu h100
expect "missing --gpu" 2 "--gpu GPU is required" fit --profile "$prof"
expect "mistyped flag is named" 2 "--gpuu" check --profile "$prof" --gpuu h100
expect "mistyped subcommand is named" 2 "chek" chek --profile "$prof" --gpu h100
expect "no subcommand" 2 "check or fit"
expect "unknown gpu" 2 "--gpu" check --profile "$prof" --gpu b9000
expect "unknown eval gpu" 2 "--eval-gpu" fit --profile "$prof" --gpu a100-80g --eval "$prof" \
  --eval-gpu b9000

# Flags.
while read -r flag value; do
  expect "fit $flag $value" 2 "$flag" fit --profile "$prof" --gpu a100-80g "$flag" "$value"
done <<'CASES'
--roofline-exponent nan
--roofline-exponent inf
--roofline-exponent 0.5
--roofline-exponent 1e300
--train-workers -1
--train-workers 1,,2
--train-workers 1.5
--train-workers 99999999999
CASES
expect "no training rows" 2 "--train-workers" fit --profile "$prof" --gpu a100-80g \
  --train-workers 8
expect "bad format" 2 "--format" check --profile "$prof" --gpu a100-80g --format yaml
expect "-o json is a format" 2 "--format json" check --profile "$prof" --gpu a100-80g -o json
cp "$prof" "$tmp/keep.csv"
expect "output names the profile" 2 "--output" check --profile "$prof" --gpu a100-80g -o "$prof"
expect "output names --eval" 2 "--output" fit --profile "$prof" --gpu a100-80g \
  --eval "$tmp/keep.csv" -o "$tmp/keep.csv"
cmp -s "$prof" "$tmp/keep.csv" && ok "inputs untouched" || bad "an input was overwritten"

# Outputs.
expect "check table" 0 "projection GEMM rows, MAPE" check --profile "$prof" --gpu a100-80g
expect "check json header" 0 '"schema_version": "costmodel-check/v1"' check --profile "$prof" \
  --gpu a100-80g --format json
expect "check json per op" 0 '"per_op": [' check --profile "$prof" --gpu a100-80g --format json
expect "check deprecated --json" 0 "--json is deprecated" check --profile "$prof" --gpu a100-80g \
  --json
expect "fit table" 0 "held-out" fit --profile "$prof" --gpu a100-80g --train-workers 1
expect "fit json header" 0 '"schema_version": "costmodel-fit/v1"' fit --profile "$prof" \
  --gpu a100-80g --format json
expect "fit held_out null when all rows train" 0 '"held_out": null' fit --profile "$prof" \
  --gpu a100-80g --format json
expect "fit eval" 0 '"eval": {' fit --profile "$prof" --gpu a100-80g --eval "$prof" \
  --eval-gpu h100 --format json
out=$("$bin" costmodel fit --profile "$prof" --gpu a100-80g -o "$tmp/fit.json" 2>&1)
rc=$?
[[ $rc -eq 0 && -z "$out" ]] && grep -q '"costmodel-fit/v1"' "$tmp/fit.json" &&
  ok "fit -o FILE.json" || bad "fit -o: exit $rc ($out)"
out=$("$bin" costmodel check --profile - --gpu a100-80g --format json <"$prof" 2>&1)
rc=$?
[[ $rc -eq 0 && "$out" == *'"rows"'* ]] && ok "profile from stdin" || bad "stdin: exit $rc ($out)"
out=$("$bin" costmodel check --profile "$prof" --gpu a100-80g >/dev/full 2>&1)
rc=$?
[[ $rc -eq 1 ]] && ok "/dev/full is exit 1" || bad "/dev/full: exit $rc ($out)"
help=$("$bin" costmodel fit --help 2>&1)
[[ "$help" == *Examples* && "$help" == *"Exit status"* && "$help" == *--format* ]] &&
  ok "fit help" || bad "fit help: $help"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
