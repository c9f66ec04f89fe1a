#!/usr/bin/python3
"""Lower bound on the fill experiment's unallocated GPU % at 100% arrived demand, for ANY policy.

The fill metric at 100% is the mean, over the events whose arrived GPU demand rounds to 100% of
capacity, of (capacity - allocated GPU) / capacity. At each such event no policy, online or
offline, can have allocated more than the optimum of this relaxation of the packing problem over
the pods arrived so far:

  * GPU only: CPU, memory, GPU models and node boundaries are ignored (each is a constraint a
    real placement must also satisfy, so dropping them can only raise the optimum);
  * a GPU-sharing pod (one GPU, under 1000 milli) sits inside one GPU: each GPU holds a
    *configuration*, a multiset of sharing sizes summing to at most 1000 milli;
  * pods asking for whole GPUs fill whole GPUs (fractionally: node boundaries are ignored);
  * the number of GPUs holding each configuration is fractional (the linear-programming
    relaxation of the configuration integer program of Gilmore and Gomory), and any pod may be
    left out.

It maximises placed milli-GPU subject to: GPUs used <= the cluster's GPUs, and pods of each
sharing size placed <= pods of that size arrived. The arrival sequences are the simulator's
own, per seed (`seedance simulate --dump-order`), so the bound is for exactly the runs that
`seedance simulate` and the paper measure. The per-seed bounds are averaged like the metric.

Usage: tools/analysis/fill_floor.py [--rng reference|seedance] [--seeds 42-51] [TRACE ...]
  (default: the paper's stream, seeds 42-51, the nine traces FGD published). Prints, per trace,
  the floor next to the issue's goal (0.7 x BestFit's published mean) and FGD's published mean.
Needs Debian's python3-scipy (apt-get install python3-scipy) and a built `seedance`
(build/src/cli/seedance, or SEEDANCE_BIN). Data: SEEDANCE_DATA_DIR (default ../shared/data
beside the checkout).
"""
import argparse
import collections
import csv
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix
except ImportError:
    sys.exit("fill_floor.py: needs numpy and scipy (apt-get install python3-scipy); "
             "run with /usr/bin/python3")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("SEEDANCE_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
CSV = os.path.join(DATA, "alibaba-gpu-v2023", "csv")
PUBLISHED = os.path.join(DATA, "fgd-atc23-expected-results", "summary_by_workload_policy.csv")
BIN = os.environ.get("SEEDANCE_BIN", os.path.join(ROOT, "build", "src", "cli", "seedance"))
TRACES = ["default", "cpu050", "cpu100", "cpu200", "cpu250", "gpushare40", "gpushare60",
          "gpushare80", "gpushare100"]
MILLI = 1000


def maximal_configurations(sizes):
    """Every multiset of `sizes` (descending) with sum <= MILLI to which no size can be added."""
    out, smallest = [], min(sizes)

    def extend(first, room, chosen):
        for j in range(first, len(sizes)):
            if sizes[j] <= room:
                chosen.append(j)
                extend(j, room - sizes[j], chosen)
                chosen.pop()
        if room < smallest:
            out.append(collections.Counter(chosen))

    extend(0, MILLI, [])
    return out


class ConfigurationLp:
    """max placed milli-GPU over configurations; a sub-multiset of a maximal configuration is
    expressed by 'phantom' items y_s that are paid back at their size."""

    def __init__(self, sizes, gpus):
        self.sizes, self.gpus = sizes, gpus
        configs = maximal_configurations(sizes)
        n, m = len(sizes), len(configs)
        # Variables: x_c (GPUs holding configuration c), y_s (phantom items), w (whole GPUs).
        rows, cols, vals = [], [], []
        cost = np.zeros(m + n + 1)
        for c, counts in enumerate(configs):
            rows.append(n)
            cols.append(c)
            vals.append(1.0)
            cost[c] = -sum(sizes[j] * k for j, k in counts.items())
            for j, k in counts.items():
                rows.append(j)
                cols.append(c)
                vals.append(float(k))
        for j in range(n):
            rows.append(j)
            cols.append(m + j)
            vals.append(-1.0)
            cost[m + j] = sizes[j]
        rows += [n, n + 1]
        cols += [m + n, m + n]
        vals += [1.0, 1.0]
        cost[m + n] = -MILLI
        self.a = csr_matrix((vals, (rows, cols)), shape=(n + 2, m + n + 1))
        self.cost = cost
        self.cache = {}

    def max_placed(self, sharing_counts, whole_gpus):
        key = (tuple(sharing_counts), whole_gpus)
        if key not in self.cache:
            b = list(sharing_counts) + [self.gpus, whole_gpus]
            res = linprog(self.cost, A_ub=self.a, b_ub=b, bounds=(0, None), method="highs")
            if not res.success:
                sys.exit(f"fill_floor.py: LP failed: {res.message}")
            self.cache[key] = -res.fun
        return self.cache[key]


def dump_orders(trace, rng, seeds, path):
    nodes = os.path.join(CSV, "openb_node_list_gpu_node.csv")
    pods = os.path.join(CSV, f"openb_pod_list_{trace}.csv")
    cmd = [BIN, "simulate", "--nodes", nodes, "--pods", pods, "--policy", "bestfit", "--seeds",
           seeds, "--rng", rng, "--dump-order", path, "-q"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def floor_for_trace(trace, rng, seeds, gpus):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "order.csv")
        dump_orders(trace, rng, seeds, path)
        by_seed = collections.defaultdict(list)
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                by_seed[r["seed"]].append((int(r["num_gpu"]), int(r["gpu_milli"])))
    capacity = gpus * MILLI
    sizes = sorted({g for s in by_seed.values() for k, g in s if k == 1 and 0 < g < MILLI},
                   reverse=True)
    lp = ConfigurationLp(sizes, gpus)
    index = {g: j for j, g in enumerate(sizes)}
    per_seed = []
    for seed, pods in by_seed.items():
        counts, whole, arrived = [0] * len(sizes), 0, 0
        bounds = []
        for k, g in pods:
            if k == 1 and 0 < g < MILLI:
                counts[index[g]] += 1
            else:
                whole += k * g
            arrived += k * g
            if math.floor(100 * arrived / capacity + 0.5) == 100:  # the simulator's lround
                placed = min(lp.max_placed(counts, whole / MILLI), arrived)
                bounds.append(100 * (capacity - placed) / capacity)
        per_seed.append(sum(bounds) / len(bounds))
    return sum(per_seed) / len(per_seed), min(per_seed), max(per_seed)


def published():
    out = collections.defaultdict(dict)
    if os.path.exists(PUBLISHED):
        with open(PUBLISHED, newline="") as f:
            for r in csv.DictReader(f):
                out[r["workload"].replace("openb_pod_list_", "")][r["policy"]] = float(
                    r["unalloc_pct_at_arrived100_mean"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rng", default="reference", choices=["reference", "seedance"])
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("traces", nargs="*", default=TRACES)
    args = ap.parse_args()
    node_csv = os.path.join(CSV, "openb_node_list_gpu_node.csv")
    if not os.path.exists(node_csv):
        sys.exit(f"fill_floor.py: {node_csv} not found; set SEEDANCE_DATA_DIR")
    if not os.access(BIN, os.X_OK):
        sys.exit(f"fill_floor.py: {BIN} not found; build first (make build) or set SEEDANCE_BIN")
    with open(node_csv, newline="") as f:
        gpus = sum(int(n["gpu"]) for n in csv.DictReader(f))
    pub = published()
    print(f"Floor on unallocated GPU % at 100% arrived ({args.rng} stream, seeds {args.seeds}; "
          "GPU-only configuration LP; no policy can go below it)\n")
    print("| trace | floor: mean (min-max over seeds) | goal: 0.7 x BestFit | FGD published |")
    print("|---|---:|---:|---:|")
    for t in args.traces:
        if not os.path.exists(os.path.join(CSV, f"openb_pod_list_{t}.csv")):
            print(f"fill_floor.py: skipping {t}: no pod list", file=sys.stderr)
            continue
        mean, lo, hi = floor_for_trace(t, args.rng, args.seeds, gpus)
        p = pub.get(t, {})
        goal = f"{0.7 * p['BestFit']:.2f}" if "BestFit" in p else "-"
        fgd = f"{p['FGD']:.2f}" if "FGD" in p else "-"
        print(f"| {t} | {mean:.2f} ({lo:.2f}-{hi:.2f}) | {goal} | {fgd} |", flush=True)


if __name__ == "__main__":
    main()
