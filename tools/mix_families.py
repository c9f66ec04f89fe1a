#!/usr/bin/env python3
"""Trace mix families derived from the default Alibaba pod list, and cas against FGD on them.

The FGD authors derived their trace variants from openb_pod_list_default.csv by resampling its
pods so that one kind of workload takes a chosen share (README.upstream.md: "sampled from the
default one, emphasizing certain types of workloads"; gpushare20..100 keep the default's 8,152
pods, its 7,064 GPU pods and its CPU-only pods, and set the share of GPU demand that comes from
GPU-sharing pods). This tool does the same for three kinds, over several levels each:

  multigpu X   X% of the GPU demand (num_gpu x gpu_milli) comes from multi-GPU pods
               (default trace: 7.3%)
  gpushare X   X% of the GPU demand comes from GPU-sharing pods (gpu_milli < 1000)
               (default trace: 28.5%; the shipped files are 20, 40, 60, 80, 100)
  gpuspec X    X% of the GPU pods are bound to one GPU model (default trace: 0%)

Rules, the same for every member (nothing in them is fitted to a result):
  * CPU-only pods are kept as they are.
  * share families: the GPU pods are split into the emphasised class C and the rest R; the
    member keeps the default's number of GPU pods, k of them drawn with replacement from C and
    the others from R, with k = X n r / (c (1 - X) + X r), where n is the number of GPU pods and
    c, r the mean GPU demand of a C and of an R pod, so that the expected share is X.
  * gpuspec: X% of the GPU pods, drawn without replacement, get a gpu_spec naming one GPU model,
    drawn in proportion to the cluster's GPU count of that model among the models that have a
    node with at least the pod's num_gpu GPUs (so a bound pod can always fit an empty node).
  * combined members (e.g. multigpu35+gpuspec20) apply a share family, then gpuspec.
  * the pods are shuffled and renamed openb-pod-NNNN; every draw comes from one seeded stream
    (--gen-seed), so a member is reproducible and another seed gives an unseen sibling.

Usage:
  tools/mix_families.py derive [--out DIR] [--gen-seed N] [--members LIST]
  tools/mix_families.py compare BINARY [--dir DIR] [--seeds 42-51] [--rng seedance,reference]
        [--policies fgd,cas] [--jobs N]

`compare` runs `seedance simulate` (fill, tune 1.3) on every member and prints, per member and
random stream, each policy's mean unallocated GPU % at 100% arrived demand and its ratio to the
first policy's (FGD is handed the member's own shape distribution: "FGD given the workload").
Needs the public data (SEEDANCE_DATA_DIR, default ../shared/data beside the checkout).
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile

DEFAULT_MEMBERS = ("multigpu15,multigpu25,multigpu35,multigpu50,"
                   "gpuspec10,gpuspec20,gpuspec33,"
                   "gpushare10,gpushare30,gpushare50,gpushare70,gpushare90,"
                   "multigpu35+gpuspec20,gpushare50+gpuspec20")


def data_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("SEEDANCE_DATA_DIR", os.path.join(here, "..", "..", "shared", "data"))


def csv_dir():
    return os.path.join(data_dir(), "alibaba-gpu-v2023", "csv")


def demand(pod):
    return int(pod["num_gpu"]) * int(pod["gpu_milli"])


def is_gpu(pod):
    return int(pod["num_gpu"]) > 0


CLASSES = {
    "multigpu": lambda p: int(p["num_gpu"]) > 1,
    "gpushare": lambda p: 0 < int(p["gpu_milli"]) < 1000,
}


def share_of(pods, in_class):
    total = sum(demand(p) for p in pods if is_gpu(p))
    return sum(demand(p) for p in pods if is_gpu(p) and in_class(p)) / total if total else 0.0


def resample_share(pods, kind, share, rng):
    """The GPU pods resampled so that `share` of their demand comes from class `kind`."""
    in_class = CLASSES[kind]
    gpu = [p for p in pods if is_gpu(p)]
    c_pool = [p for p in gpu if in_class(p)]
    r_pool = [p for p in gpu if not in_class(p)]
    if not c_pool or (share < 1 and not r_pool):
        sys.exit(f"mix_families.py: {kind}{share * 100:g}: the default trace has no pods to draw")
    n = len(gpu)
    c = sum(demand(p) for p in c_pool) / len(c_pool)
    r = sum(demand(p) for p in r_pool) / len(r_pool) if r_pool else 1.0
    k = n if share >= 1 else round(share * n * r / (c * (1 - share) + share * r))
    drawn = [dict(rng.choice(c_pool)) for _ in range(k)]
    drawn += [dict(rng.choice(r_pool)) for _ in range(n - k)]
    return [dict(p) for p in pods if not is_gpu(p)] + drawn


def bind_models(pods, share, nodes, rng):
    """`share` of the GPU pods get a gpu_spec naming one model, drawn by GPU capacity."""
    capacity, widest = {}, {}
    for node in nodes:
        model, gpus = node["model"], int(node["gpu"])
        if gpus <= 0 or not model:
            continue
        capacity[model] = capacity.get(model, 0) + gpus
        widest[model] = max(widest.get(model, 0), gpus)
    models = sorted(capacity)
    gpu = [i for i, p in enumerate(pods) if is_gpu(p)]
    for i in rng.sample(gpu, round(share * len(gpu))):
        fits = [m for m in models if widest[m] >= int(pods[i]["num_gpu"])]
        pods[i]["gpu_spec"] = rng.choices(fits, weights=[capacity[m] for m in fits])[0]
    return pods


def parse_member(name):
    """'multigpu35+gpuspec20' -> [('multigpu', 0.35), ('gpuspec', 0.20)]."""
    parts = []
    for part in name.split("+"):
        kind = part.rstrip("0123456789")
        level = part[len(kind):]
        if kind not in ("multigpu", "gpushare", "gpuspec") or not level or int(level) > 100:
            sys.exit(f"mix_families.py: member '{name}': each part is multigpuX, gpushareX or "
                     f"gpuspecX with X in 0..100")
        parts.append((kind, int(level) / 100))
    return parts


def derive_member(name, pods, nodes, seed):
    rng = random.Random(f"{seed}:{name}")
    out = [dict(p) for p in pods]
    for kind, level in parse_member(name):
        if kind == "gpuspec":
            out = bind_models(out, level, nodes, rng)
        else:
            out = resample_share(out, kind, level, rng)
    rng.shuffle(out)
    for i, p in enumerate(out):
        p["name"] = f"openb-pod-{i:04d}"
    return out


def write_csv(path, header, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def summary(pods):
    gpu = [p for p in pods if is_gpu(p)]
    bound = sum(1 for p in gpu if p["gpu_spec"])
    return (f"{len(pods):5d} pods, {len(gpu):5d} GPU pods; GPU demand from multi-GPU "
            f"{share_of(pods, CLASSES['multigpu']) * 100:5.1f}%, from sharing "
            f"{share_of(pods, CLASSES['gpushare']) * 100:5.1f}%; bound to a model "
            f"{bound / len(gpu) * 100 if gpu else 0:5.1f}%")


def derive(args):
    src = os.path.join(csv_dir(), "openb_pod_list_default.csv")
    node_file = os.path.join(csv_dir(), "openb_node_list_gpu_node.csv")
    for f in (src, node_file):
        if not os.path.exists(f):
            sys.exit(f"mix_families.py: {f}: not found (set SEEDANCE_DATA_DIR)")
    with open(src, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        pods = list(reader)
    with open(node_file, newline="") as f:
        nodes = list(csv.DictReader(f))
    os.makedirs(args.out, exist_ok=True)
    print(f"{'default':22} {summary(pods)}")
    for name in args.members.split(","):
        member = derive_member(name, pods, nodes, args.gen_seed)
        write_csv(os.path.join(args.out, f"openb_pod_list_{name}.csv"), header, member)
        print(f"{name:22} {summary(member)}")


def members_in(folder):
    names = sorted(f for f in os.listdir(folder) if f.startswith("openb_pod_list_"))
    if not names:
        sys.exit(f"mix_families.py: {folder}: no openb_pod_list_*.csv (run derive first)")
    return [(n[len("openb_pod_list_"):-len(".csv")], os.path.join(folder, n)) for n in names]


def compare(args):
    node_file = os.path.join(csv_dir(), "openb_node_list_gpu_node.csv")
    policies = args.policies.split(",")
    print(f"{'member':22} {'rng':9} " + " ".join(f"{p:>8}" for p in policies) +
          "".join(f" {p + '/' + policies[0]:>10}" for p in policies[1:]))
    worst = {}
    for name, path in members_in(args.dir):
        for stream in args.rng.split(","):
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                cmd = [args.binary, "simulate", "-q", "--nodes", node_file, "--pods", path,
                       "--policy", ",".join(policies), "--seeds", args.seeds, "--rng", stream,
                       "--format", "json", "-o", out.name]
                if args.jobs:
                    cmd += ["-j", str(args.jobs)]
                for opt in args.policy_opt:
                    cmd += ["--policy-opt", opt]
                subprocess.run(cmd, check=True)
                doc = json.load(open(out.name))
            mean = {p["name"]: p["summary"]["unalloc_gpu_pct_at_100"]["mean"]
                    for p in doc["policies"]}
            ratios = [mean[p] / mean[policies[0]] for p in policies[1:]]
            for p, r in zip(policies[1:], ratios):
                worst[p] = max(worst.get(p, 0.0), r)
            print(f"{name:22} {stream:9} " + " ".join(f"{mean[p]:8.3f}" for p in policies) +
                  "".join(f" {r:10.4f}" for r in ratios), flush=True)
    for p, r in worst.items():
        print(f"worst {p}/{policies[0]}: {r:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("derive", help="write the family members' pod lists")
    d.add_argument("--out", default="build/mixes", help="folder for the pod lists")
    d.add_argument("--gen-seed", type=int, default=1, help="the generation stream's seed")
    d.add_argument("--members", default=DEFAULT_MEMBERS, help="comma list of members")
    c = sub.add_parser("compare", help="cas against FGD on every member")
    c.add_argument("binary", help="the seedance binary")
    c.add_argument("--dir", default="build/mixes", help="folder of derived pod lists")
    c.add_argument("--seeds", default="42-51")
    c.add_argument("--rng", default="seedance,reference", help="random streams, comma list")
    c.add_argument("--policies", default="fgd,cas", help="ratios are to the first")
    c.add_argument("--jobs", type=int, default=0, help="simulate's worker threads (0 = all)")
    c.add_argument("--policy-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="passed to simulate (repeatable), e.g. min_drift=0 for cas")
    args = ap.parse_args()
    derive(args) if args.cmd == "derive" else compare(args)


if __name__ == "__main__":
    main()
