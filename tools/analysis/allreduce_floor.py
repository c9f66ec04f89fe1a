#!/usr/bin/python3
"""Noise floor of the Vidur all-reduce profiles: the lowest MAPE any model can reach on one
group size N if its time never decreases with message size, fitted on that N's own rows.

For each GPU and intra-node N, the MAPE-optimal non-decreasing fit of the median time against
size is a weighted-L1 isotonic regression (weights 1/t), solved exactly by pool-adjacent-
violators with weighted medians. No cost model, however many constants it has, beats this on
those rows in-sample; a model fitted on the other group sizes (held out) does worse.

Usage: tools/analysis/allreduce_floor.py      Needs Debian's python3-numpy.
Data: SEEDANCE_DATA_DIR (default ../shared/data beside the checkout).
"""
import csv
import os
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("allreduce_floor.py: needs numpy (apt-get install python3-numpy), run with /usr/bin/python3")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("SEEDANCE_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
PROFILES = os.path.join(DATA, "llm-traces", "vidur-profiling")
BANDS = [("< 64 KB", 0, 64 << 10), ("64 KB - 4 MB", 64 << 10, 4 << 20), (">= 4 MB", 4 << 20, float("inf"))]


def load(gpu):
    path = os.path.join(PROFILES, gpu, "dgx_all_reduce.csv")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["devices_per_node"] == r["num_workers"]]
    n = np.array([int(r["num_workers"]) for r in rows])
    s = np.array([2 * int(r["size"]) for r in rows], dtype=float)  # FP16 elements -> bytes
    t = np.array([float(r["time_stats.all_reduce.median"]) for r in rows])
    order = np.lexsort((s, n))
    return n[order], s[order], t[order]


def weighted_median(y, w):
    o = np.argsort(y)
    c = np.cumsum(w[o])
    return y[o][np.searchsorted(c, 0.5 * c[-1])]


def isotonic_l1(y, w):
    blocks = []  # [values, weights, fitted level]
    for yi, wi in zip(y, w):
        blocks.append([np.array([yi]), np.array([wi]), yi])
        while len(blocks) > 1 and blocks[-2][2] > blocks[-1][2]:
            b, a = blocks.pop(), blocks.pop()
            ys, ws = np.r_[a[0], b[0]], np.r_[a[1], b[1]]
            blocks.append([ys, ws, weighted_median(ys, ws)])
    return np.concatenate([np.full(len(b[0]), b[2]) for b in blocks])


def main():
    print("| GPU | N | rows | floor MAPE | " + " | ".join(f"floor {b[0]}" for b in BANDS) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(BANDS))
    for gpu in ("a100", "h100"):
        try:
            n, s, t = load(gpu)
        except FileNotFoundError as e:
            sys.exit(f"allreduce_floor.py: {e.filename} not found; set SEEDANCE_DATA_DIR")
        for k in sorted(set(n.tolist())):
            m = n == k
            err = np.abs(isotonic_l1(t[m], 1 / t[m]) - t[m]) / t[m]
            bands = []
            for _, lo, hi in BANDS:
                b = (s[m] >= lo) & (s[m] < hi)
                bands.append(f"{100 * err[b].mean():.1f}%" if b.any() else "-")
            print(f"| {gpu} | {k} | {m.sum()} | {100 * err.mean():.2f}% | " + " | ".join(bands) + " |")


if __name__ == "__main__":
    main()
