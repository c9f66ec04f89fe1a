#!/usr/bin/env python3
"""Checks tools/mix_families.py derive: each member keeps the default trace's pod counts and
reaches its share, the same seed gives the same bytes, another seed other draws, and bound pods
name a model that has a node wide enough for them. Needs the public data: exit 77 (skip) without
it, or a failure when SEEDANCE_REQUIRE_DATA=1."""
import csv
import filecmp
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "mix_families.py")
sys.path.insert(0, HERE)
import mix_families  # noqa: E402


def derive(out, seed, members):
    subprocess.run([sys.executable, TOOL, "derive", "--out", out, "--gen-seed", str(seed),
                    "--members", members], check=True, stdout=subprocess.DEVNULL)


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    csv_dir = mix_families.csv_dir()
    default = os.path.join(csv_dir, "openb_pod_list_default.csv")
    if not os.path.exists(default):
        msg = f"mix_families_test: {default}: not found"
        if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1":
            sys.exit(msg + " (SEEDANCE_REQUIRE_DATA=1)")
        print(msg + "; skipped")
        return 77
    pods = load(default)
    nodes = load(os.path.join(csv_dir, "openb_node_list_gpu_node.csv"))
    widest = {}
    for n in nodes:
        widest[n["model"]] = max(widest.get(n["model"], 0), int(n["gpu"]))
    members = "multigpu40,gpushare70,gpuspec30,multigpu30+gpuspec20"
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, \
            tempfile.TemporaryDirectory() as c:
        derive(a, 1, members)
        derive(b, 1, members)
        derive(c, 2, members)
        for name in members.split(","):
            path = os.path.join(a, f"openb_pod_list_{name}.csv")
            got = load(path)
            gpu = [p for p in got if mix_families.is_gpu(p)]
            check(len(got) == len(pods), f"{name}: {len(got)} pods, not {len(pods)}")
            check(len(gpu) == sum(1 for p in pods if mix_families.is_gpu(p)),
                  f"{name}: GPU pod count changed")
            check(len({p["name"] for p in got}) == len(got), f"{name}: names not unique")
            for kind, level in mix_families.parse_member(name):
                if kind == "gpuspec":
                    share = sum(1 for p in gpu if p["gpu_spec"]) / len(gpu)
                    check(abs(share - level) < 0.001, f"{name}: {share:.3f} bound, not {level}")
                else:
                    share = mix_families.share_of(got, mix_families.CLASSES[kind])
                    check(abs(share - level) < 0.02, f"{name}: {kind} share {share:.3f}")
            narrow = [p["name"] for p in gpu
                      if p["gpu_spec"] and widest.get(p["gpu_spec"], 0) < int(p["num_gpu"])]
            check(not narrow, f"{name}: bound to a model without a node that wide: {narrow[:3]}")
            other = os.path.join(b, os.path.basename(path))
            check(filecmp.cmp(path, other, shallow=False), f"{name}: seed 1 not reproducible")
            unseen = os.path.join(c, os.path.basename(path))
            check(not filecmp.cmp(path, unseen, shallow=False), f"{name}: seed 2 drew the same")
    for f in failures:
        print("FAIL:", f)
    print(f"mix_families_test: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
