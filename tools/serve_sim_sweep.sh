#!/usr/bin/env bash
# Highest --rate-scale at which each batching mode of `seedance serve-sim` meets a TTFT p99 SLO.
#
# For each mode, a geometric bisection over the rate scale (arrivals sped up by X) between a
# passing and a failing point, a x4 bracket then 8 steps (about 0.5% resolution); assumes TTFT p99 grows with load.
# Prints a Markdown table: mode, highest passing scale, the achieved throughput and TTFT p99
# there, and the lowest failing scale found.
#
# Usage: tools/serve_sim_sweep.sh SEEDANCE TRACE [SLO_S] [-- extra serve-sim flags]
#   e.g. tools/serve_sim_sweep.sh build/src/cli/seedance \
#          ../shared/data/llm-traces/azure-2023/AzureLLMInferenceTrace_conv.csv 2 \
#          -- --model llama-3-8b --gpu a100-80g
set -euo pipefail
bin=$1
trace=$2
slo=${3:-2}
shift $(($# >= 3 ? 3 : $#))
[[ ${1:-} == "--" ]] && shift
extra=("$@")

# run MODE SCALE -> "req_s ttft_p99" from the table row of MODE
run() {
  "$bin" serve-sim --trace "$trace" --batching "$1" --rate-scale "$2" "${extra[@]}" |
    awk -v m="$1" '$1 == m { print $2, $5 }'
}
passes() { awk -v t="$1" -v s="$slo" 'BEGIN { exit !(t <= s) }'; }
mid() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6g", sqrt(a * b) }'; }

echo "| mode | highest rate scale meeting TTFT p99 <= ${slo} s | achieved req/s | TTFT p99 (s) | first failing scale (TTFT p99) |"
echo "|---|---|---|---|---|"
for mode in continuous static; do
  lo=0.0001 hi=4
  read -r lo_rps lo_ttft < <(run "$mode" "$lo")
  if ! passes "$lo_ttft"; then
    echo "| $mode | < $lo (TTFT p99 $lo_ttft s at $lo) | | | |"
    continue
  fi
  read -r hi_rps hi_ttft < <(run "$mode" "$hi")
  if passes "$hi_ttft"; then
    echo "| $mode | >= $hi | $hi_rps | $hi_ttft | |"
    continue
  fi
  # Bracket quickly on a x4 grid from the top, then bisect.
  s=$hi
  while true; do
    s=$(awk -v x="$s" 'BEGIN { printf "%.6g", x / 4 }')
    awk -v x="$s" -v l="$lo" 'BEGIN { exit !(x <= l) }' && break
    read -r r t < <(run "$mode" "$s")
    if passes "$t"; then lo=$s lo_rps=$r lo_ttft=$t; break; else hi=$s hi_ttft=$t; fi
  done
  for _ in 1 2 3 4 5 6 7 8; do
    m=$(mid "$lo" "$hi")
    read -r r t < <(run "$mode" "$m")
    if passes "$t"; then lo=$m lo_rps=$r lo_ttft=$t; else hi=$m hi_ttft=$t; fi
  done
  echo "| $mode | $lo | $lo_rps | $lo_ttft | $hi ($hi_ttft s) |"
done
