#!/usr/bin/env python3
"""A/B on a real Slurm: the same job stream under Slurm's own placement (select/cons_tres,
sched/backfill) and under Seedance's (`seedance server --backend slurm`), side by side.

    python3 bench/slurm_ab.py build-int/src/cli/seedance [--jobs 1000] [--runs 3]

Each run starts a 16-node x 8-GPU Slurm on loopback (tests/slurm/slurm_cluster.py) and submits
the whole stream at once (tests/slurm/workload.py: the Alibaba trace's mix of 1/2/4/8-GPU jobs,
durations the trace's / --scale, 1 s .. --cap). Slurm's own run submits to slurmrestd directly, `gres gpu:N` with
a time limit of its duration rounded up to minutes, plus one (so backfill can plan); Seedance's submits the same jobs to
its API. Measured from the jobs' own records: the GPU-idle share while any job waits and the
makespan. Then the submission rate: 500 CPU-only 5 s jobs posted at once, the time until all are
in Slurm; Seedance's decision time per job (seedance_scheduling_cycles_duration_seconds over
the attempts) and slurmrestd's submit time (seedance_slurm_submit_duration_seconds).
Prints medians over the runs, and the ratios Seedance / Slurm. Needs root and Slurm's packages."""

import argparse
import os
import re
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "slurm"))
sys.path.insert(0, os.path.join(HERE, "..", "src", "server"))

import backend_test  # noqa: E402
import testlib  # noqa: E402
import workload  # noqa: E402

NODES, GPUS = 16, 8


def wait_slurm_idle(cluster, timeout):
    backend_test.poll("Slurm to run every job", lambda: not [
        j for j in cluster.rest("GET", "/jobs")[1]["jobs"]
        if j["job_state"] in ("RUNNING", "PENDING", "CONFIGURING", "COMPLETING")], timeout)


def run_slurm(cluster, jobs, out):
    t0 = time.time()
    errors = []

    def worker(part):
        for i in part:
            gpus, seconds = jobs[i]
            body = {"script": workload.script(i, seconds, out),
                    "job": {"name": f"job-{i}", "nodes": "1", "tasks": 1, "cpus_per_task": 1,
                            "gres": f"gpu:{gpus}",
                            "time_limit": int(seconds // 60) + 2,
                            "current_working_directory": out,
                            "standard_output": os.path.join(out, "%j.out"),
                            "environment": {"PATH": "/usr/bin:/bin"}}}
            status, reply = cluster.rest("POST", "/job/submit", body, user="root")
            if status != 200:
                errors.append((i, status, reply))

    # In order, from one thread: Slurm's queue order is its submission order.
    worker(range(len(jobs)))
    assert not errors, errors[:3]
    wait_slurm_idle(cluster, 3600)
    return workload.read_records(out), t0


def direct_rate(cluster, out, count=500, threads=8):
    """Jobs/s of POST /job/submit straight to slurmrestd (the baseline of the rate): the same
    CPU-only 5 s jobs as Seedance's rate run, from `threads` threads, until all are accepted."""
    body = lambda i: {"script": workload.script(70000 + i, 5.0, out),  # noqa: E731
                      "job": {"name": f"direct-{i}", "nodes": "1", "tasks": 1,
                              "cpus_per_task": 1, "current_working_directory": out,
                              "standard_output": os.path.join(out, "%j.out"),
                              "environment": {"PATH": "/usr/bin:/bin"}}}
    errors = []

    def worker(part):
        for i in part:
            status, reply = cluster.rest("POST", "/job/submit", body(i), user="root")
            if status != 200:
                errors.append((status, reply))

    t0 = time.time()
    ts = [threading.Thread(target=worker, args=(range(k, count, threads),))
          for k in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    rate = count / (time.time() - t0)
    assert not errors, errors[:3]
    wait_slurm_idle(cluster, 600)
    return rate


def seedance_rate(client, port, root, count=500):
    """Jobs/s from POSTing `count` CPU-only 5 s jobs (all fit at once) until all are in Slurm."""
    rate_out = workload.out_dir(root, "rate")
    def submitted():
        _, text = client.request("GET", "/metrics")
        m = re.search(r'^seedance_slurm_submits_total\{result="ok"\} (\S+)$', text, re.M)
        return float(m.group(1)) if m else 0.0

    before = submitted()
    t1 = time.time()
    backend_test.submit_all(port, [(0, 5.0)] * count, rate_out)
    # The backend's own counter (cheap to read), not a listing of every pod.
    backend_test.poll(f"{count} CPU-only jobs to be in Slurm",
                      lambda: submitted() - before >= count, 600)
    rate = count / (time.time() - t1)
    backend_test.poll("the CPU-only jobs to end", lambda: not testlib.list_pods(client), 600)
    return rate


def start_server(binary, cluster, root, jwt, out):
    server = testlib.Server(binary, os.path.join(root, "state-" + os.path.basename(out)), extra=[
        "--backend", "slurm", "--slurm-url", cluster.rest_url, "--slurm-token-file", jwt,
        "--slurm-workdir", out, "--slurm-output", os.path.join(out, "%j.out"),
        "--slurm-job-poll", "0.2"])
    return server.start()


def run_seedance(binary, cluster, root, jwt, jobs, out):
    server = start_server(binary, cluster, root, jwt, out)
    try:
        client = testlib.Client(server.port)
        t0 = time.time()
        backend_test.submit_all(server.port, jobs, out)
        backend_test.poll("every job to end", lambda: not testlib.list_pods(client), 3600)
        rate = seedance_rate(client, server.port, root)
        _, metrics = client.request("GET", "/metrics")

        def metric(name):
            return sum(float(v) for v in re.findall(
                r"^" + name + r"(?:\{[^}]*\})? (\S+)$", metrics, re.M))
        decide_ms = 1000.0 * metric("seedance_scheduling_cycles_duration_seconds_sum") / max(
            1.0, metric("seedance_schedule_attempts_total"))
        submit_ms = 1000.0 * metric("seedance_slurm_submit_duration_seconds_sum") / max(
            1.0, metric("seedance_slurm_submit_duration_seconds_count"))
        client.close()
    finally:
        server.stop()
    return workload.read_records(out), t0, rate, decide_ms, submit_ms


def rate_only(a):
    seedance, direct = [], []
    for run in range(a.runs):
        with workload.test_cluster("seedance-ab-", NODES, GPUS) as (root, cluster, jwt):
            out = workload.out_dir(root, "out")
            direct.append(direct_rate(cluster, out))
            server = start_server(a.binary, cluster, root, jwt, out)
            try:
                seedance.append(seedance_rate(testlib.Client(server.port), server.port, root))
            finally:
                server.stop()
        print(f"run {run + 1}: Seedance {seedance[-1]:.0f} jobs/s, slurmrestd directly "
              f"{direct[-1]:.0f} jobs/s", flush=True)
    print(f"median of {a.runs}: Seedance {statistics.median(seedance):.0f} jobs/s, slurmrestd "
          f"directly {statistics.median(direct):.0f} jobs/s, ratio "
          f"{statistics.median(seedance) / statistics.median(direct):.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=120.0,
                    help="trace seconds per benchmark second (durations capped at --cap)")
    ap.add_argument("--cap", type=float, default=60.0)
    ap.add_argument("--rate-only", action="store_true",
                    help="only the submission rates (Seedance's and slurmrestd's directly)")
    a = ap.parse_args()
    trace = testlib.trace_file("openb_pod_list_default.csv")
    jobs = workload.job_stream(trace, a.jobs, scale=a.scale, cap=a.cap)
    res = {"slurm": [], "seedance": []}
    rates, decide_ms, submit_ms, direct = [], [], [], []
    if a.rate_only:
        return rate_only(a)
    for run in range(a.runs):
        with workload.test_cluster("seedance-ab-", NODES, GPUS) as (root, cluster, jwt):
            for mode in (("slurm", "seedance") if run % 2 == 0 else ("seedance", "slurm")):
                out = workload.out_dir(root, f"out-{mode}")
                if mode == "slurm":
                    records, t0 = run_slurm(cluster, jobs, out)
                    direct.append(direct_rate(cluster, out))
                else:
                    records, t0, rate, ms, sms = run_seedance(a.binary, cluster, root, jwt, jobs,
                                                              out)
                    rates.append(rate)
                    decide_ms.append(ms)
                    submit_ms.append(sms)
                done = sum(1 for i in range(len(jobs)) if any(r["end"] for r in records.get(i, [])))
                assert done == len(jobs), f"{mode}: {done} of {len(jobs)} jobs completed"
                share, makespan = workload.idle_share_while_waiting(records, jobs, t0,
                                                                    NODES * GPUS)
                res[mode].append((share, makespan))
                print(f"run {run + 1} {mode:8s}: GPU-idle share while jobs wait {share:.3f}, "
                      f"makespan {makespan:.1f} s", flush=True)
    med = {m: (statistics.median(s for s, _ in v), statistics.median(t for _, t in v))
           for m, v in res.items()}
    print(f"\nmedian of {a.runs} runs, {a.jobs} jobs, {NODES}x{GPUS} GPUs")
    print(f"{'':10s} {'idle share while waiting':>26s} {'makespan s':>12s}")
    for m in ("slurm", "seedance"):
        print(f"{m:10s} {med[m][0]:26.3f} {med[m][1]:12.1f}")
    print(f"{'ratio':10s} {med['seedance'][0] / med['slurm'][0]:26.3f} "
          f"{med['seedance'][1] / med['slurm'][1]:12.3f}")
    print(f"submission rate: Seedance {statistics.median(rates):.0f} jobs/s, slurmrestd directly "
          f"{statistics.median(direct):.0f} jobs/s, ratio "
          f"{statistics.median(rates) / statistics.median(direct):.2f} (500 CPU-only jobs, 8 "
          f"submitters; medians)")
    print(f"Seedance's decision per job: {statistics.median(decide_ms):.4f} ms "
          f"(seedance_scheduling_cycles_duration_seconds per attempt); slurmrestd's submit call: "
          f"{statistics.median(submit_ms):.1f} ms (mean; medians of runs)")


if __name__ == "__main__":
    main()
