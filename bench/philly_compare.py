#!/usr/bin/env python3
"""Side-by-side table of `seedance simulate --mode jobs` against the Helios reference results.

Usage: bench/philly_compare.py SEEDANCE_BIN [DATA_DIR] [--markdown] [--update BENCHMARKS.md]

Runs the reference protocol (window 2017-10-01..11-30, consolidate placement) with fifo, sjf and
srtf on isolated VCs, and fifo and sjf on the pooled and 0.25x variants, then prints every row of
expected/reference_isolated_vcs.csv and expected/reference_variants.csv beside Seedance's figures
with the differences. Exit 0 when every avg JCT, avg queueing delay and makespan is within
+-0.01 s and every preemption count is equal, else 1. With --update FILE the markdown table
replaces what stands between the FILE's "<!-- philly-reproduction -->" and
"<!-- end philly-reproduction -->" lines.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

TOL = 0.01


def run(binary, data, policies, partition, scale):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        subprocess.run([binary, "simulate", "--mode", "jobs", "--trace",
                        os.path.join(data, "philly.csv"), "--tenants",
                        os.path.join(data, "philly_vc.csv"), "--policy", policies,
                        "--window", "2017-10-01,2017-11-30", "--partition", partition,
                        "--capacity-scale", str(scale), "-q", "-o", out], check=True)
        with open(out) as f:
            doc = json.load(f)
    rows = {}
    for p in doc["policies"]:
        rows[(p["name"], "all")] = p["summary"]
        for t in p["tenants"]:
            rows[(p["name"], t["name"])] = t
    return rows


def main():
    argv = sys.argv[1:]
    update = None
    if "--update" in argv:
        i = argv.index("--update")
        if i + 1 >= len(argv):
            print("--update needs a file", file=sys.stderr)
            return 2
        update = argv[i + 1]
        del argv[i:i + 2]
    args = [a for a in argv if not a.startswith("--")]
    markdown = "--markdown" in argv or update is not None
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    binary = args[0]
    data = args[1] if len(args) > 1 else os.path.join(
        os.environ.get("SEEDANCE_DATA_DIR", "../shared/data"), "philly-vc")
    iso = run(binary, data, "fifo,sjf,srtf", "isolated", 1.0)
    variants = {(v, s): run(binary, data, "fifo,sjf", v, s)
                for v in ("isolated", "pooled") for s in (1.0, 0.25)}
    table = []
    ok = True

    def compare(label, ref, got, fields):
        nonlocal ok
        cells = [label]
        for ref_key, got_key in fields:
            r = float(ref[ref_key])
            g = float(got[got_key])
            exact = ref_key == "preemptions"
            good = (r == g) if exact else abs(round(g, 2) - r) <= TOL + 1e-9
            ok = ok and good
            cells.append(f"{r:.2f} / {g:.2f}{'' if good else ' (DIFF)'}")
        table.append(cells)

    fields = [("avg_jct_s", "avg_jct_s"), ("avg_queue_s", "avg_queue_s"),
              ("makespan_s", "makespan_s"), ("preemptions", "preemptions")]
    with open(os.path.join(data, "expected", "reference_isolated_vcs.csv")) as f:
        for ref in csv.DictReader(f):
            compare(f"isolated {ref['policy']} {ref['vc']}", ref,
                    iso[(ref["policy"], ref["vc"])], fields)
    with open(os.path.join(data, "expected", "reference_variants.csv")) as f:
        for ref in csv.DictReader(f):
            part = "isolated" if ref["variant"] == "partitioned" else "pooled"
            got = variants[(part, float(ref["vc_node_scale"]))][(ref["policy"], "all")]
            compare(f"{ref['variant']} {ref['vc_node_scale']}x {ref['policy']} all", ref, got,
                    fields[:3])
    header = ["row", "avg JCT s (ref / seedance)", "avg queue s", "makespan s", "preemptions"]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for cells in table:
            lines.append("| " + " | ".join(cells + [""] * (len(header) - len(cells))) + " |")
        text = "\n".join(lines) + "\n"
        if update:
            with open(update) as f:
                doc = f.read()
            begin, end = "<!-- philly-reproduction -->\n", "<!-- end philly-reproduction -->"
            if begin not in doc or end not in doc:
                print(f"{update}: no {begin.strip()} ... {end} markers", file=sys.stderr)
                return 2
            a = doc.index(begin) + len(begin)
            b = doc.index(end)
            tmp = update + ".tmp"
            with open(tmp, "w") as f:
                f.write(doc[:a] + text + doc[b:])
            os.replace(tmp, update)
        else:
            sys.stdout.write(text)
    else:
        for cells in table:
            print("  ".join(cells))
    print(f"{'all rows match' if ok else 'some rows differ'} (tolerance {TOL} s, preemptions exact)",
          file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
