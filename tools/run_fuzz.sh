#!/usr/bin/env bash
# Runs each libFuzzer target of the fuzz build for SECONDS, JOBS at a time (`make fuzz`).
#
#   tools/run_fuzz.sh FUZZ_DIR SECONDS JOBS TARGET...
#
# Each target starts from a copy of its seed corpus (tests/fuzz_corpus/TARGET/) in
# FUZZ_DIR/corpus/TARGET/, logs to FUZZ_DIR/TARGET.log and writes any reproducer under
# FUZZ_DIR/artifacts/TARGET/. A target runs on one core for its whole time whatever JOBS is, so
# running them side by side shortens the wall time, not the fuzzing. FUZZ_DIR/fuzz.result gets
# one line per target, in the order given. Exit 1 if any target crashed, leaked, timed out or
# is missing (its log's tail is printed); 2 on bad arguments.
set -euo pipefail

if [[ $# -lt 4 || ! $2 =~ ^[0-9]+$ || ! $3 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: tools/run_fuzz.sh FUZZ_DIR SECONDS JOBS TARGET..." >&2
  exit 2
fi
dir=$1 seconds=$2 jobs=$3
shift 3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# One target; its verdict goes to $dir/$t.verdict ("ok LINE" or "failed LINE").
run_one() {
  local t=$1 bin log
  mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
  if [[ -d $root/tests/fuzz_corpus/$t ]]; then
    find "$root/tests/fuzz_corpus/$t" -maxdepth 1 -type f -exec cp -f {} "$dir/corpus/$t/" \;
  fi
  bin=$(find "$dir" -type f -name "$t" -perm -u+x | head -n 1)
  if [[ -z $bin ]]; then
    echo "failed $t: binary not found under $dir" > "$dir/$t.verdict"
    return
  fi
  log=$dir/$t.log
  echo "== fuzz: $bin for $seconds s (log: $log)"
  if "$bin" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$dir/artifacts/$t/" "$dir/corpus/$t" > "$log" 2>&1; then
    echo "ok $t: $(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1); no crash" > "$dir/$t.verdict"
  else
    echo "failed $t: FAILED; reproducer in $dir/artifacts/$t/, full log in $log" \
      > "$dir/$t.verdict"
  fi
}

rm -f "$dir/fuzz.result"
for t in "$@"; do rm -f "$dir/$t.verdict"; done
running=0
for t in "$@"; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
for t in "$@"; do
  verdict=$(cat "$dir/$t.verdict" 2> /dev/null || echo "failed $t: no verdict")
  if [[ $verdict == ok\ * ]]; then
    grep -E '^INFO: Seed:|DONE|^Done [0-9]+ runs|^stat::' "$dir/$t.log" || true
  else
    [[ -f $dir/$t.log ]] && tail -n 120 "$dir/$t.log"
    failed=1
  fi
  echo "${verdict#* }" | tee -a "$dir/fuzz.result"
done
exit "$failed"
