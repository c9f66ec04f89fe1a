#!/usr/bin/env python3
"""Checks Seedance's tenancy policies against the reference queues on the Philly trace.

Usage: bench/philly_tenancy.py SEEDANCE_BIN [DATA_DIR] [--markdown]

For each (window, capacity scale) below it runs isolated FIFO, pooled FIFO and SJF (the
reference protocol) and quota-fifo and quota-las (one shared pool; each VC's partition is its
guaranteed quota) and checks the issue's lines:
  queue   overall avg queueing delay <= 1.10 x pooled FIFO's
  alone   every VC's avg queueing delay <= its isolated-FIFO figure
  starve  the most time any VC with pending work spent below its guaranteed quota < 1% of the window
  jct     quota-las (which never reads durations) avg JCT <= 1.10 x pooled SJF's (SJF reads them)
The first row (2017-10-01..11-30 at 0.25x) is where the defaults were chosen; the others are
confirmation. Exit 0 when every line holds on every row, else 1.
"""
import json
import os
import subprocess
import sys
import tempfile

CASES = [("2017-10-01,2017-11-30", 0.25), ("2017-10-01,2017-11-30", 0.5),
         ("2017-10-01,2017-11-30", 0.2),
         ("2017-09-01,2017-09-30", 0.25), ("2017-12-01,2017-12-31", 0.25),
         ("2017-11-01,2017-12-31", 0.25), ("2017-09-01,2017-10-31", 0.5)]


def run(binary, data, policies, partition, window, scale):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        subprocess.run([binary, "simulate", "--mode", "jobs", "--trace",
                        os.path.join(data, "philly.csv"), "--tenants",
                        os.path.join(data, "philly_vc.csv"), "--policy", policies, "--window",
                        window, "--partition", partition, "--capacity-scale", str(scale), "-q",
                        "-o", out], check=True)
        with open(out) as f:
            return {p["name"]: p for p in json.load(f)["policies"]}


def ratio(a, b):
    return f"{a / b:.3f}" if b > 0 else ("1.000" if a == 0 else "inf")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    binary = args[0]
    data = args[1] if len(args) > 1 else os.path.join(
        os.environ.get("SEEDANCE_DATA_DIR", "../shared/data"), "philly-vc")
    markdown = "--markdown" in sys.argv
    rows = []
    all_ok = True
    for window, scale in CASES:
        iso = run(binary, data, "fifo", "isolated", window, scale)["fifo"]
        pooled = run(binary, data, "fifo,sjf", "pooled", window, scale)
        ours = run(binary, data, "quota-fifo,quota-las", "pooled", window, scale)
        iso_vc = {t["name"]: t["avg_queue_s"] for t in iso["tenants"]}
        pf = pooled["fifo"]["summary"]["avg_queue_s"]
        sjf = pooled["sjf"]["summary"]["avg_jct_s"]
        for name in ("quota-fifo", "quota-las"):
            s = ours[name]["summary"]
            worse = [t["name"] for t in ours[name]["tenants"]
                     if t["jobs"] > 0 and t["avg_queue_s"] > iso_vc[t["name"]] + 1e-9]
            q_ok = s["avg_queue_s"] <= 1.10 * pf
            starve_ok = s["below_quota_pct"] < 1.0
            jct_ok = s["avg_jct_s"] <= 1.10 * sjf
            checks = [q_ok, not worse, starve_ok] + ([jct_ok] if name == "quota-las" else [])
            all_ok = all_ok and all(checks)
            rows.append([window, f"{scale}x", name, f"{s['jobs']}",
                         f"{s['avg_queue_s']:.1f} / {pf:.1f} = {ratio(s['avg_queue_s'], pf)}",
                         "all VCs" if not worse else "worse: " + " ".join(worse),
                         f"{s['below_quota_pct']:.3f}%",
                         f"{s['avg_jct_s']:.0f} / {sjf:.0f} = {ratio(s['avg_jct_s'], sjf)}",
                         f"{s['preemptions']}", f"{s['lost_gpu_h']:.1f}",
                         "ok" if all(checks) else "FAIL"])
    header = ["window", "scale", "policy", "jobs", "avg queue s / pooled FIFO",
              "VC queue <= isolated FIFO", "max below-quota", "avg JCT s / pooled SJF",
              "preemptions", "lost GPU-h", "lines"]
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print("  ".join(header))
        for r in rows:
            print("  ".join(r))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
