#!/usr/bin/env bash
# Reproduces the FGD paper's (USENIX ATC'23) fill experiment on every public Alibaba GPU trace
# that the authors' published results cover, and compares each policy's mean unallocated GPU %
# at 100% arrived demand with the published mean (tolerance 0.4 points, random 1.0).
#
# Usage: tools/reproduce_fgd.sh [--seeds A-B] [--jobs N]
#   --seeds 42-51 (default): the published seeds; the table goes into BENCHMARKS.md between
#                            <!-- repro:begin --> and <!-- repro:end -->.
#   --seeds other:           a confirmation on other seeds (the published means are for 42-51
#                            only and are shown for reference); the table goes between
#                            <!-- confirm:begin --> and <!-- confirm:end -->.
# Environment: SEEDANCE_DATA_DIR (default ../shared/data beside the checkout), BUILD_DIR
# (default build). Builds the CLI in Release, writes per-trace JSON under $BUILD_DIR/repro/,
# prints the table and writes it into BENCHMARKS.md (created if missing; only the text between
# the markers is replaced). Takes about a minute per trace on two cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SEEDS="42-51"
JOBS=""
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; SEEDS="$2"; shift 2 ;;
    --seeds=*) SEEDS="${1#--seeds=}"; shift ;;
    --jobs|-j) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; JOBS="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "reproduce_fgd.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if ! [[ "$SEEDS" =~ ^[0-9]+(-[0-9]+)?$ ]]; then
  echo "reproduce_fgd.sh: --seeds: expected N or A-B, got '$SEEDS'" >&2
  exit 2
fi

DATA_DIR="${SEEDANCE_DATA_DIR:-$ROOT/../shared/data}"
CSV_DIR="$DATA_DIR/alibaba-gpu-v2023/csv"
SUMMARY="$DATA_DIR/fgd-atc23-expected-results/summary_by_workload_policy.csv"
NODES="$CSV_DIR/openb_node_list_gpu_node.csv"
BUILD_DIR="${BUILD_DIR:-build}"
OUT_DIR="$BUILD_DIR/repro"
for f in "$NODES" "$SUMMARY"; do
  if [[ ! -f "$f" ]]; then
    echo "reproduce_fgd.sh: $f not found; set SEEDANCE_DATA_DIR to the public data folder" >&2
    exit 1
  fi
done

if [[ "$SEEDS" == "42-51" ]]; then
  MARK="repro"
else
  MARK="confirm"
fi

echo "== building $BUILD_DIR (Release)" >&2
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" --target seedance >&2
SEEDANCE="$BUILD_DIR/src/cli/seedance"
mkdir -p "$OUT_DIR"

# The traces the published summary covers, in the paper's order, that exist here.
TRACES=()
for t in default cpu050 cpu100 cpu200 cpu250 gpushare40 gpushare60 gpushare80 gpushare100; do
  if grep -q "^openb_pod_list_${t}," "$SUMMARY" && [[ -f "$CSV_DIR/openb_pod_list_${t}.csv" ]]; then
    TRACES+=("$t")
  else
    echo "reproduce_fgd.sh: skipping $t (no pod list or no published results)" >&2
  fi
done
if [[ ${#TRACES[@]} -eq 0 ]]; then
  echo "reproduce_fgd.sh: no trace to run under $CSV_DIR" >&2
  exit 1
fi

JOB_ARGS=()
[[ -n "$JOBS" ]] && JOB_ARGS=(--jobs "$JOBS")
WALL_FILE="$OUT_DIR/wall_${MARK}.tsv"
: > "$WALL_FILE"
for t in "${TRACES[@]}"; do
  out="$OUT_DIR/${t}_seeds_${SEEDS}.json"
  echo "== $t: all policies, seeds $SEEDS -> $out" >&2
  start_ns=$(date +%s%N)
  "$SEEDANCE" simulate -q --nodes "$NODES" --pods "$CSV_DIR/openb_pod_list_${t}.csv" \
    --policy all --seeds "$SEEDS" --json "$out" "${JOB_ARGS[@]}" >&2
  end_ns=$(date +%s%N)
  wall_ms=$(( (end_ns - start_ns) / 1000000 ))
  printf '%s\t%s\t%d.%03d\n' "$t" "$out" $((wall_ms / 1000)) $((wall_ms % 1000)) >> "$WALL_FILE"
done

COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git status --porcelain 2>/dev/null | head -1)" ]]; then COMMIT="$COMMIT (uncommitted changes)"; fi
THREADS="${JOBS:-$(nproc)}"

python3 - "$SUMMARY" "$WALL_FILE" "$SEEDS" "$MARK" "$ROOT/BENCHMARKS.md" "$COMMIT" "$THREADS" <<'PY'
import csv, datetime, json, os, sys

summary_path, wall_path, seeds, mark, bench_md, commit, threads = sys.argv[1:8]
PUBLISHED_NAME = {"random": "Random", "dotprod": "DotProd", "clustering": "GpuClustering",
                  "packing": "GpuPacking", "bestfit": "BestFit", "fgd": "FGD"}
TOL = {"random": 1.0}
DEFAULT_TOL = 0.4

published = {}
with open(summary_path, newline="") as f:
    for row in csv.DictReader(f):
        published[(row["workload"], row["policy"])] = float(row["unalloc_pct_at_arrived100_mean"])

runs = []
with open(wall_path) as f:
    for line in f:
        trace, path, wall = line.rstrip("\n").split("\t")
        runs.append((trace, path, float(wall)))

official = seeds == "42-51"
lines = []
title = ("FGD reproduction" if official else f"FGD confirmation on seeds {seeds}")
lines.append(f"### {title}: unallocated GPU % at 100% arrived demand")
lines.append("")
lines.append(f"Fill mode, tune 1.3, seeds {seeds}, GPU nodes of the Alibaba GPU trace (1,213 nodes, "
             f"6,212 GPUs). Generated by `tools/reproduce_fgd.sh"
             f"{'' if official else ' --seeds ' + seeds}` on "
             f"{datetime.date.today().isoformat()}, commit {commit}, {threads} thread(s).")
if not official:
    lines.append("")
    lines.append("**Published means are for seeds 42-51 only**; they are shown for reference, and "
                 "the tolerance column tells whether other seeds land within the same tolerance.")
lines.append("Tolerance: |ours - published| <= 0.4 points (random 1.0). The `cas` row compares "
             "with FGD's published figure (cas - FGD published) and with our bestfit.")
lines.append("")
lines.append("| trace | policy | published mean | ours mean ± sd | diff | within tolerance |")
lines.append("|---|---|---:|---:|---:|---|")
walls = []
misses = 0
for trace, path, wall in runs:
    workload = f"openb_pod_list_{trace}"
    with open(path) as f:
        doc = json.load(f)
    ours = {p["name"]: p["summary"]["unalloc_gpu_pct_at_100"] for p in doc["policies"]}
    walls.append((trace, wall, doc.get("meta", {}).get("total_wall_s"),
                  sum(len(p["runs"]) for p in doc["policies"])))
    for policy, theirs in PUBLISHED_NAME.items():
        if policy not in ours or (workload, theirs) not in published:
            continue
        pub = published[(workload, theirs)]
        m, sd = ours[policy]["mean"], ours[policy]["sd"]
        diff = m - pub
        tol = TOL.get(policy, DEFAULT_TOL)
        ok = abs(diff) <= tol
        misses += not ok
        lines.append(f"| {trace} | {policy} | {pub:.2f} | {m:.2f} ± {sd:.2f} | {diff:+.2f} | "
                     f"{'yes' if ok else '**no**'} (±{tol:.1f}) |")
    if "cas" in ours and (workload, "FGD") in published:
        fgd_pub = published[(workload, "FGD")]
        m, sd = ours["cas"]["mean"], ours["cas"]["sd"]
        # Issue goal: <= FGD's published figure on the default trace, within 3% of it elsewhere.
        limit = fgd_pub if trace == "default" else 1.03 * fgd_pub
        note = (f"{'meets' if m <= limit else '**misses**'} "
                f"{'<= FGD' if trace == 'default' else 'within 3% of FGD'} ({m / fgd_pub:.3f}x)")
        if "bestfit" in ours and ours["bestfit"]["mean"] > 0:
            bf = ours["bestfit"]["mean"]
            lower = 100.0 * (bf - m) / bf
            note += f"; {abs(lower):.1f}% {'lower' if lower >= 0 else 'higher'} than bestfit (ours {bf:.2f})"
        lines.append(f"| {trace} | cas | {fgd_pub:.2f} (FGD) | {m:.2f} ± {sd:.2f} | "
                     f"{m - fgd_pub:+.2f} vs FGD | {note} |")
lines.append("")
lines.append(f"{misses} reference row(s) outside tolerance.")
lines.append("")
lines.append("| trace | runs | wall s (script) | wall s (simulator) |")
lines.append("|---|---:|---:|---:|")
for trace, wall, sim_wall, n in walls:
    sim = f"{sim_wall:.1f}" if isinstance(sim_wall, (int, float)) else "?"
    lines.append(f"| {trace} | {n} | {wall:.1f} | {sim} |")
table = "\n".join(lines)
print(table)

begin, end = f"<!-- {mark}:begin -->", f"<!-- {mark}:end -->"
if os.path.exists(bench_md):
    with open(bench_md) as f:
        text = f.read()
else:
    text = ("# Benchmarks\n\n"
            "## FGD reproduction\n\n<!-- repro:begin -->\n<!-- repro:end -->\n\n"
            "## Confirmation on other seeds\n\n<!-- confirm:begin -->\n<!-- confirm:end -->\n")
if begin not in text or end not in text or text.index(begin) > text.index(end):
    text = text.rstrip("\n") + f"\n\n{begin}\n{end}\n"
head = text[:text.index(begin) + len(begin)]
tail = text[text.index(end):]
with open(bench_md, "w") as f:
    f.write(head + "\n" + table + "\n" + tail)
print(f"\nwrote {bench_md} between {begin} and {end}", file=sys.stderr)
PY
