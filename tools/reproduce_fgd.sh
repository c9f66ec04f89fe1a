#!/usr/bin/env bash
# Reproduces the FGD paper's (USENIX ATC'23) fill experiment on every public Alibaba GPU trace
# that the authors' published results cover, and compares each policy's mean unallocated GPU %
# at 100% arrived demand with the published mean (tolerance 0.4 points, random 1.0).
#
# Every trace runs twice: with the reference random stream (`--rng reference`, Go's math/rand
# drawn as the authors' simulator draws it, so seeds 42-51 are the paper's own runs and each
# per-seed value can be compared) and with Seedance's own stream (`--rng seedance`, where only
# the means can agree). Both must be within tolerance.
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
# the markers is replaced). Takes about ten seconds per trace on two cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SEEDS="42-51"
JOBS=""
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
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
PER_SEED="$DATA_DIR/fgd-atc23-expected-results/analysis_allo_discrete.csv"
NODES="$CSV_DIR/openb_node_list_gpu_node.csv"
BUILD_DIR="${BUILD_DIR:-build}"
OUT_DIR="$BUILD_DIR/repro"
for f in "$NODES" "$SUMMARY" "$PER_SEED"; do
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
  for rng in reference seedance; do
    out="$OUT_DIR/${t}_seeds_${SEEDS}_${rng}.json"
    echo "== $t: all policies, seeds $SEEDS, $rng stream -> $out" >&2
    start_ns=$(date +%s%N)
    "$SEEDANCE" simulate -q --nodes "$NODES" --pods "$CSV_DIR/openb_pod_list_${t}.csv" \
      --policy all --seeds "$SEEDS" --rng "$rng" -o "$out" --format json "${JOB_ARGS[@]}" >&2
    end_ns=$(date +%s%N)
    wall_ms=$(( (end_ns - start_ns) / 1000000 ))
    printf '%s\t%s\t%s\t%d.%03d\n' "$t" "$rng" "$out" $((wall_ms / 1000)) $((wall_ms % 1000)) \
      >> "$WALL_FILE"
  done
done

COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git status --porcelain 2>/dev/null | head -1)" ]]; then COMMIT="$COMMIT (uncommitted changes)"; fi
THREADS="${JOBS:-$(nproc)}"

python3 - "$SUMMARY" "$PER_SEED" "$WALL_FILE" "$SEEDS" "$MARK" "$ROOT/BENCHMARKS.md" "$COMMIT" \
  "$THREADS" <<'PY'
import csv, datetime, json, os, sys

summary_path, per_seed_path, wall_path, seeds, mark, bench_md, commit, threads = sys.argv[1:9]
PUBLISHED_NAME = {"random": "Random", "dotprod": "DotProd", "clustering": "GpuClustering",
                  "packing": "GpuPacking", "bestfit": "BestFit", "fgd": "FGD"}
TOL = {"random": 1.0}
DEFAULT_TOL = 0.4

published = {}
with open(summary_path, newline="") as f:
    for row in csv.DictReader(f):
        published[(row["workload"], row["policy"])] = float(row["unalloc_pct_at_arrived100_mean"])

per_seed = {}  # (workload, published policy name, seed) -> unallocated % at 100% arrived
with open(per_seed_path, newline="") as f:
    for row in csv.DictReader(f):
        name = row["sc_policy"].split("-", 1)[1]
        per_seed[(row["workload"], name, int(row["seed"]))] = 100.0 - float(row["100"])

runs = {}  # trace -> {rng: (path, wall)}
order = []
with open(wall_path) as f:
    for line in f:
        trace, rng, path, wall = line.rstrip("\n").split("\t")
        if trace not in runs:
            order.append(trace)
            runs[trace] = {}
        runs[trace][rng] = (path, float(wall))

official = seeds == "42-51"
lines = []
title = ("FGD reproduction" if official else f"FGD confirmation on seeds {seeds}")
lines.append(f"### {title}: unallocated GPU % at 100% arrived demand")
lines.append("")
lines.append(f"Fill mode, tune 1.3, seeds {seeds}, GPU nodes of the Alibaba GPU trace (1,213 nodes, "
             f"6,212 GPUs). Generated by `tools/reproduce_fgd.sh"
             f"{'' if official else ' --seeds ' + seeds}` on "
             f"{datetime.date.today().isoformat()}, commit {commit}, {threads} thread(s).")
lines.append("")
lines.append("Two random streams per trace (docs/simulator.md, \"Random streams\"): **paper's** = "
             "`--rng reference`, Go's math/rand drawn as the authors' simulator draws it, so seed 42 "
             "is the paper's seed 42 and each run can be compared with its published value "
             "(\"max per-seed\" = the largest |ours - published| over the seeds); **Seedance's** = "
             "`--rng seedance` (mt19937_64), independent orders where only means can agree.")
if not official:
    lines.append("")
    lines.append("**Published means are for seeds 42-51 only**; they are shown for reference, and "
                 "the tolerance column tells whether other seeds land within the same tolerance.")
lines.append("Tolerance: |mean - published mean| <= 0.4 points (random 1.0), for both streams. The "
             "`cas` rows compare with FGD's published figure and with our bestfit on the same stream.")
lines.append("")
lines.append("| trace | policy | published mean | paper's stream: ours ± sd | diff | max per-seed | "
             "Seedance's stream: ours ± sd | diff | within tolerance (paper's / Seedance's) |")
lines.append("|---|---|---:|---:|---:|---:|---:|---:|---|")
walls = []
misses_ref = misses_own = 0
for trace in order:
    workload = f"openb_pod_list_{trace}"
    docs = {}
    for rng, (path, wall) in runs[trace].items():
        with open(path) as f:
            docs[rng] = json.load(f)
        walls.append((trace, rng, wall, docs[rng].get("meta", {}).get("total_wall_s"),
                      sum(len(p["runs"]) for p in docs[rng]["policies"])))
    ours = {rng: {p["name"]: p for p in d["policies"]} for rng, d in docs.items()}
    ref, own = ours.get("reference", {}), ours.get("seedance", {})
    for policy, theirs in PUBLISHED_NAME.items():
        if policy not in ref or policy not in own or (workload, theirs) not in published:
            continue
        pub = published[(workload, theirs)]
        tol = TOL.get(policy, DEFAULT_TOL)
        cells = []
        oks = []
        for stream in (ref, own):
            s = stream[policy]["summary"]["unalloc_gpu_pct_at_100"]
            oks.append(abs(s["mean"] - pub) <= tol)
            cells.append((s["mean"], s["sd"], s["mean"] - pub))
        worst = None
        if official:
            diffs = [abs(r["unalloc_gpu_pct_at_100"] - per_seed[(workload, theirs, r["seed"])])
                     for r in ref[policy]["runs"] if (workload, theirs, r["seed"]) in per_seed]
            worst = max(diffs) if diffs else None
        misses_ref += not oks[0]
        misses_own += not oks[1]
        (rm, rsd, rd), (om, osd, od) = cells
        worst_text = f"{worst:.3f}" if worst is not None else "–"
        verdict = " / ".join("yes" if ok else "**no**" for ok in oks)
        lines.append(f"| {trace} | {policy} | {pub:.2f} | {rm:.2f} ± {rsd:.2f} | {rd:+.2f} | "
                     f"{worst_text} | {om:.2f} ± {osd:.2f} | {od:+.2f} | {verdict} (±{tol:.1f}) |")
    if "cas" in ref and "cas" in own and (workload, "FGD") in published:
        fgd_pub = published[(workload, "FGD")]
        # Issue goal: <= FGD's published figure on the default trace, within 3% of it elsewhere.
        limit = fgd_pub if trace == "default" else 1.03 * fgd_pub
        cells, notes = [], []
        for label, stream in (("paper's", ref), ("Seedance's", own)):
            s = stream["cas"]["summary"]["unalloc_gpu_pct_at_100"]
            m = s["mean"]
            cells.append((m, s["sd"]))
            bf = stream["bestfit"]["summary"]["unalloc_gpu_pct_at_100"]["mean"] if "bestfit" in stream else None
            lower = f", {100.0 * (bf - m) / bf:.1f}% below bestfit" if bf else ""
            notes.append(f"{label}: {'meets' if m <= limit else '**misses**'} ({m / fgd_pub:.3f}x FGD{lower})")
        (rm, rsd), (om, osd) = cells
        lines.append(f"| {trace} | cas | {fgd_pub:.2f} (FGD) | {rm:.2f} ± {rsd:.2f} | "
                     f"{rm - fgd_pub:+.2f} | – | {om:.2f} ± {osd:.2f} | {om - fgd_pub:+.2f} | "
                     f"{'; '.join(notes)} |")
lines.append("")
lines.append(f"Reference rows outside tolerance: {misses_ref} with the paper's stream, {misses_own} "
             f"with Seedance's stream.")
lines.append("")
lines.append("| trace | stream | runs | wall s (script) | wall s (simulator) |")
lines.append("|---|---|---:|---:|---:|")
for trace, rng, wall, sim_wall, n in walls:
    sim = f"{sim_wall:.1f}" if isinstance(sim_wall, (int, float)) else "?"
    lines.append(f"| {trace} | {rng} | {n} | {wall:.1f} | {sim} |")
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
