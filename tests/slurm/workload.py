"""The job stream of the Slurm backend's test and A/B benchmark, and what is measured of a run.

Jobs: GPU counts drawn from the Alibaba GPU trace's mix of whole-GPU pods (1, 2, 4 and 8 GPUs,
openb_pod_list_default.csv), durations from the same pods' run times scaled to seconds (trace
seconds / scale, between 1 s and cap: the test's 600 and 20 s keep it short; the benchmark's 120
and 60 s make the jobs long enough that this machine's job launches are not the bottleneck). Each job's script appends what it saw to a record
file: when it started and ended, its node, CUDA_VISIBLE_DEVICES (what Slurm gave it) and
SEEDANCE_NODE / SEEDANCE_GPUS (what Seedance decided; absent under Slurm's own placement)."""

import contextlib
import csv
import glob
import os
import random
import shutil
import sys
import tempfile

import slurm_cluster


def job_stream(trace_csv, count, seed=1, scale=600.0, cap=20.0):
    """[(gpus, seconds)] for `count` jobs."""
    pods = []
    with open(trace_csv) as f:
        for r in csv.DictReader(f):
            g, m = int(r["num_gpu"]), int(r["gpu_milli"])
            if g in (1, 2, 4, 8) and m == 1000 and r["deletion_time"] and r["scheduled_time"]:
                dur = int(r["deletion_time"]) - int(r["scheduled_time"])
                if dur > 0:
                    pods.append((g, min(cap, max(1.0, dur / scale))))
    rng = random.Random(seed)
    return [rng.choice(pods) for _ in range(count)]


def script(index, seconds, out_dir):
    rec = os.path.join(out_dir, f"rec-{index}-$SLURM_JOB_ID")
    return ("#!/bin/bash\n"
            f"echo \"start $(date +%s.%N) $SLURMD_NODENAME ${{CUDA_VISIBLE_DEVICES:--}} "
            f"${{SEEDANCE_NODE:--}} ${{SEEDANCE_GPUS:--}}\" >> {rec}\n"
            f"sleep {seconds:.2f}\n"
            f"echo \"end $(date +%s.%N)\" >> {rec}\n")


def read_records(out_dir):
    """{index: [record]} with record = dict(job, start, end (None if it never ended), node, cvd,
    seedance_node, seedance_gpus)."""
    out = {}
    for path in glob.glob(os.path.join(out_dir, "rec-*")):
        _, index, job = os.path.basename(path).split("-")
        rec = {"job": int(job), "start": None, "end": None}
        with open(path) as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] == "start" and len(parts) == 6:
                    rec.update(start=float(parts[1]), node=parts[2], cvd=parts[3],
                               seedance_node=parts[4], seedance_gpus=parts[5])
                elif parts and parts[0] == "end":
                    rec["end"] = float(parts[1])
        if rec["start"] is not None:
            out.setdefault(int(index), []).append(rec)
    return out


def gpu_overlaps(records, until):
    """Pairs of records that held one GPU of one node at the same time ([] when none)."""
    by_gpu = {}
    for index, recs in records.items():
        for r in recs:
            for g in r["cvd"].split(","):
                if g != "-":
                    by_gpu.setdefault((r["node"], g), []).append(
                        (r["start"], r["end"] if r["end"] is not None else until, index))
    bad = []
    for key, spans in by_gpu.items():
        spans.sort()
        for (s1, e1, i1), (s2, e2, i2) in zip(spans, spans[1:]):
            if s2 < e1:
                bad.append((key, i1, i2))
    return bad


def idle_share_while_waiting(records, jobs, t0, total_gpus):
    """(idle GPU share while any job waits, makespan): jobs all submitted at t0; a job waits from
    t0 until its first start."""
    events = []  # (time, d_busy, d_waiting)
    for index, recs in records.items():
        first = min(r["start"] for r in recs)
        events.append((first, 0, -1))
        for r in recs:
            g = jobs[index][0]
            events.append((r["start"], g, 0))
            events.append((r["end"] if r["end"] is not None else r["start"], -g, 0))
    events.sort()
    busy, waiting, t = 0, len(jobs), t0
    idle_area = wait_time = 0.0
    for time_, d_busy, d_wait in events:
        if waiting > 0 and time_ > t:
            idle_area += (total_gpus - busy) * (time_ - t)
            wait_time += time_ - t
        t = max(t, time_)
        busy += d_busy
        waiting += d_wait
    ends = [r["end"] for recs in records.values() for r in recs if r["end"] is not None]
    makespan = (max(ends) - t0) if ends else 0.0
    share = idle_area / (wait_time * total_gpus) if wait_time > 0 else 0.0
    return share, makespan


def require_slurm_or_skip():
    """Returns if this machine can run a real Slurm (root, the packages); else exits 77 (skip),
    or fails when SEEDANCE_REQUIRE_DATA=1."""
    def skip_or_fail(msg):
        if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1":
            sys.exit(f"FAIL: {msg}")
        print(f"SKIP: {msg}")
        sys.exit(77)
    if os.geteuid() != 0:
        skip_or_fail("needs root (slurmd runs jobs and the fake GPUs are device nodes)")
    try:
        slurm_cluster.check_prerequisites()
    except slurm_cluster.MissingPackages as e:
        skip_or_fail(str(e))


@contextlib.contextmanager
def test_cluster(prefix, nodes, gpus, extra_conf=()):
    """A real Slurm under a new temporary directory ROOT, and a day's JWT for root in ROOT/jwt:
    yields (root, cluster, jwt path); stops the cluster and removes ROOT after."""
    root = tempfile.mkdtemp(prefix=prefix)
    os.chmod(root, 0o755)  # slurmrestd runs as another user
    try:
        with slurm_cluster.SlurmCluster(os.path.join(root, "cluster"), nodes=nodes, gpus=gpus,
                                        extra_conf=list(extra_conf)) as cluster:
            jwt = os.path.join(root, "jwt")
            with open(jwt, "w") as f:
                f.write(cluster.token("root", lifespan=86400) + "\n")
            yield root, cluster, jwt
    finally:
        shutil.rmtree(root, ignore_errors=True)


def out_dir(root, name):
    """A folder every job can write its record to."""
    path = os.path.join(root, name)
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o777)
    return path
