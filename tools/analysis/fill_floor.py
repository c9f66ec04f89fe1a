#!/usr/bin/python3
"""Lower bound on the fill experiment's unallocated GPU % at 100% arrived demand, for ANY policy.

When the arrived GPU demand equals the cluster's GPU capacity, no placement can allocate more
than the optimum of this relaxation: GPU shares only (CPU, memory and node boundaries ignored),
items fractional except that a GPU-sharing item must sit inside one GPU, so an item over 500
milli-GPU takes a GPU of its own and leaves only its remainder to smaller items; pods asking for
whole GPUs fill whole GPUs. Item counts are the trace's, scaled so that demand = capacity (the
fill protocol resamples the trace). The true floor is higher: the relaxation knows every arrival
in advance and ignores CPU.

Usage: tools/analysis/fill_floor.py [TRACE ...]   (default: the nine traces FGD published)
Needs Debian's python3-scipy (apt-get install python3-scipy). Data: SEEDANCE_DATA_DIR
(default ../shared/data beside the checkout).
"""
import collections
import csv
import os
import sys

try:
    from scipy.optimize import linprog
except ImportError:
    sys.exit("fill_floor.py: needs scipy (apt-get install python3-scipy), run with /usr/bin/python3")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("SEEDANCE_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
CSV = os.path.join(DATA, "alibaba-gpu-v2023", "csv")
TRACES = sys.argv[1:] or ["default", "cpu050", "cpu100", "cpu200", "cpu250", "gpushare40",
                          "gpushare60", "gpushare80", "gpushare100"]


def floor_pct(pod_csv, gpus):
    sharing = collections.Counter()  # milli-GPU size -> pod count
    whole = 0                        # milli-GPU of pods asking for whole GPUs
    with open(pod_csv, newline="") as f:
        for p in csv.DictReader(f):
            k, g = int(p["num_gpu"]), int(p["gpu_milli"])
            if k == 0 or g == 0:
                continue
            if k == 1 and g < 1000:
                sharing[g] += 1
            else:
                whole += k * g
    demand = sum(s * c for s, c in sharing.items()) + whole
    scale = gpus * 1000 / demand
    large = sorted(s for s in sharing if s > 500)
    small = sorted(s for s in sharing if s <= 500)
    # Variables: placed[L] large items of size L; w = whole-GPU milli placed; x[s, L] milli of
    # small size s in the remainders of size-L GPUs (only if it fits); free[s] milli of size s in
    # GPUs holding no large item. Maximise placed milli.
    var = ([("placed", L) for L in large] + [("whole",)] +
           [("x", s, L) for s in small for L in large if s <= 1000 - L] + [("free", s) for s in small])
    idx = {v: i for i, v in enumerate(var)}
    cost = [-(v[1] if v[0] == "placed" else 1.0) for v in var]
    rows, rhs = [], []

    def add(coeffs, bound):
        r = [0.0] * len(var)
        for v, a in coeffs:
            r[idx[v]] = a
        rows.append(r)
        rhs.append(bound)

    for L in large:
        add([(("placed", L), 1)], sharing[L] * scale)
        add([(("placed", L), -(1000 - L))] + [(("x", s, L), 1) for s in small if s <= 1000 - L], 0)
    add([(("whole",), 1)], whole * scale)
    for s in small:
        add([(("free", s), 1)] + [(("x", s, L), 1) for L in large if s <= 1000 - L],
            sharing[s] * s * scale)
    add([(("placed", L), 1000) for L in large] + [(("whole",), 1)] + [(("free", s), 1) for s in small],
        gpus * 1000)
    res = linprog(cost, A_ub=rows, b_ub=rhs, bounds=(0, None), method="highs")
    if not res.success:
        sys.exit(f"fill_floor.py: {pod_csv}: LP failed: {res.message}")
    large_share = 100 * sum(s * sharing[s] for s in large) / demand
    return 100 * (gpus * 1000 + res.fun) / (gpus * 1000), large_share


def main():
    node_csv = os.path.join(CSV, "openb_node_list_gpu_node.csv")
    if not os.path.exists(node_csv):
        sys.exit(f"fill_floor.py: {node_csv} not found; set SEEDANCE_DATA_DIR")
    with open(node_csv, newline="") as f:
        gpus = sum(int(n["gpu"]) for n in csv.DictReader(f))
    print("| trace | sharing pods > 500 milli, share of GPU demand | floor: unallocated % at 100% >= |")
    print("|---|---:|---:|")
    for t in TRACES:
        path = os.path.join(CSV, f"openb_pod_list_{t}.csv")
        if not os.path.exists(path):
            print(f"fill_floor.py: skipping {t}: {path} not found", file=sys.stderr)
            continue
        pct, large = floor_pct(path, gpus)
        print(f"| {t} | {large:.0f}% | {pct:.2f} |")


if __name__ == "__main__":
    main()
