#!/usr/bin/env python3
"""Decision rate of whole fill runs: `seedance simulate --mode fill`, relearning included.

Each run is the simulator's own fill of the default trace (every pod that arrives is one
decision, placed or not), timed by the simulator (the JSON's per-run wall_s). Policies run side
by side in the same invocation, one thread, so the ratio compares like with like. --nodes-count
replicates the trace's node list (unique names) to reach a larger cluster.

  bench/fill_rate.py build/src/cli/seedance                       # 1,213 nodes, seeds 42-51
  bench/fill_rate.py build/src/cli/seedance --nodes-count 10000 --topology pcie-tree --seeds 42-44

Prints, per policy, the median over repeats of (decisions / seconds) summed over the seeds, and
the ratio of each policy's rate to the first's. Needs the public data (SEEDANCE_DATA_DIR, default
../shared/data next to the checkout).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile


def data_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("SEEDANCE_DATA_DIR", os.path.join(here, "..", "..", "shared", "data"))


def replicate_nodes(src, count, dst):
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    name = header.index("sn")
    with open(dst, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i in range(count):
            row = list(body[i % len(body)])
            copy = i // len(body)
            if copy:
                row[name] = f"{row[name]}-r{copy}"
            w.writerow(row)


def one_run(binary, nodes, pods, policies, seeds, topology):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [binary, "simulate", "-q", "--nodes", nodes, "--pods", pods, "--policy",
               ",".join(policies), "--seeds", seeds, "-j", "1", "--format", "json", "-o", out.name]
        if topology:
            cmd += ["--topology", topology]
        subprocess.run(cmd, check=True)
        doc = json.load(open(out.name))
    rates = {}
    for p in doc["policies"]:
        decisions = sum(r["pods_arrived"] for r in p["runs"])
        seconds = sum(r["wall_s"] for r in p["runs"])
        rates[p["name"]] = decisions / seconds
    return rates


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("binary", help="the seedance binary")
    ap.add_argument("--policies", default="fgd,cas", help="comma list; ratios are to the first")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nodes-count", type=int, default=0, help="replicate the node list to this")
    ap.add_argument("--topology", default="", help="dgx, pcie-tree or mixed (default none)")
    ap.add_argument("--pods", default="openb_pod_list_default.csv")
    args = ap.parse_args()
    csv_dir = os.path.join(data_dir(), "alibaba-gpu-v2023", "csv")
    nodes = os.path.join(csv_dir, "openb_node_list_gpu_node.csv")
    pods = os.path.join(csv_dir, args.pods)
    for f in (nodes, pods):
        if not os.path.exists(f):
            sys.exit(f"fill_rate.py: {f}: not found (set SEEDANCE_DATA_DIR)")
    policies = args.policies.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        if args.nodes_count:
            big = os.path.join(tmp, "nodes.csv")
            replicate_nodes(nodes, args.nodes_count, big)
            nodes = big
        runs = []
        for i in range(args.repeats):
            runs.append(one_run(args.binary, nodes, pods, policies, args.seeds, args.topology))
            print(f"run {i + 1}: " + ", ".join(f"{p} {runs[-1][p]:,.0f}/s" for p in policies),
                  file=sys.stderr)
    med = {p: statistics.median(r[p] for r in runs) for p in policies}
    base = policies[0]
    print(f"{'policy':10} {'decisions/s (median)':>22} {'runs':>40} {'rate / ' + base:>12}")
    for p in policies:
        each = " / ".join(f"{r[p]:,.0f}" for r in runs)
        print(f"{p:10} {med[p]:>22,.0f} {each:>40} {med[p] / med[base]:>12.3f}")


if __name__ == "__main__":
    main()
