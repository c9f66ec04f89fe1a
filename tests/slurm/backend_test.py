#!/usr/bin/env python3
"""End-to-end test of `seedance server --backend slurm` against a real Slurm (docs/slurm.md).

    python3 tests/slurm/backend_test.py build/src/cli/seedance

It starts a real Slurm 22.05 from Debian's packages on loopback (slurm_cluster.py: munged,
slurmctld, 16 slurmd with 8 fake GPUs each, slurmrestd), a Seedance server in front of it, and:

  bad input   a pod without a script is refused (400); an unknown partition, a node
              configuration Slurm cannot give (error 2014, as for unavailable GRES) and
              slurmrestd down reach the caller as the pod's slurm.seedance.io/error and the
              pod stays Pending;
              once slurmrestd is back the pod runs (never lost);
  1,000 jobs  GPU counts from the Alibaba trace's mix, durations scaled to seconds, all
              submitted at once: every job's CUDA_VISIBLE_DEVICES (Slurm's) equals Seedance's
              decision (SEEDANCE_GPUS) on Seedance's node, no GPU is in two running jobs at
              once, all complete and leave the ledger; prints the count and the wall time;
  node loss   a slurmd killed under a running job shows as unavailable (cordoned) within 10 s
              (--slurm-probe-slurmd) and the job is requeued and runs on another node;
              deleting pods cancels jobs;
  token       a server started with an expired token exits 1 naming the file and the expiry;
              a token that expires under a running server leaves the pod Pending with an error
              that says so, and the nodes are marked unknown (the unreachable taint); rewriting
              the file makes the next attempt succeed and lifts the taint, no restart.

Needs root (slurmd, device nodes) and the packages slurm_cluster.py names; exits 77 (skip)
without them, unless SEEDANCE_REQUIRE_DATA=1, which makes that a failure. Every wait polls."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "src", "server"))

import testlib  # noqa: E402
import workload  # noqa: E402

NODES, GPUS = 16, 8
JOBS = int(os.environ.get("SEEDANCE_SLURM_JOBS", "1000"))



def poll(what, check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def annotation(pod, key):
    return (pod.get("annotations") or {}).get(key, "")


def pod_body(name, gpus, script, **annotations):
    a = {"slurm.seedance.io/script": script}
    a.update({f"slurm.seedance.io/{k.replace('_', '-')}": v for k, v in annotations.items()})
    return {"name": name, "cpu_milli": 1000, "num_gpu": gpus, "annotations": a}


def get_pod(client, uid):
    status, pod = client.request("GET", f"/v1/pods/{uid}")
    return pod if status == 200 else None


def expect_refused(client, name, script, partition, says):
    """Submits a pod for `partition`; Slurm's refusal (`says`) must reach the pod, which stays
    Pending. Deletes it; returns the error."""
    status, pod = client.request("POST", "/v1/pods",
                                 pod_body(name, 1, script, partition=partition))
    assert status == 201, (status, pod)
    uid = pod["uid"]
    pod = poll("Slurm's refusal on the pod",
               lambda: (p := get_pod(client, uid)) and annotation(p, "slurm.seedance.io/error")
               and p, 30)
    error = annotation(pod, "slurm.seedance.io/error")
    assert says in error, error
    assert pod["phase"] in ("Pending", "Assumed"), pod
    assert client.request("DELETE", f"/v1/pods/{uid}")[0] == 200
    return error


def check_bad_input(cluster, client, out):
    ok_script = workload.script(99999, 1, out)
    status, reply = client.request("POST", "/v1/pods", {"name": "no-script", "num_gpu": 1})
    assert status == 400 and "slurm.seedance.io/script" in json.dumps(reply), (status, reply)

    error = expect_refused(client, "bad-partition", ok_script, "nope",
                           "Invalid partition name specified")
    print(f"bad input: unknown partition -> pod Pending with \"{error}\"")

    # Slurm cannot give the job what it asks for there (error 2014, as for a missing GRES).
    last = f"node{NODES}"
    assert client.request("POST", f"/v1/nodes/{last}/cordon")[0] == 200  # so it lands elsewhere
    error = expect_refused(client, "not-there", ok_script, "last",
                           "Requested node configuration is not available")
    assert client.request("POST", f"/v1/nodes/{last}/uncordon")[0] == 200
    print(f"bad input: a configuration Slurm does not have -> pod Pending with \"{error}\"")

    # slurmrestd down: the pod waits, and runs once it is back.
    cluster._signal("slurmrestd", signal.SIGTERM)
    poll("slurmrestd to exit", lambda: not cluster._proc_alive("slurmrestd"), 30)
    status, pod = client.request("POST", "/v1/pods", pod_body("rest-down", 1, ok_script))
    assert status == 201, (status, pod)
    uid = pod["uid"]
    pod = poll("the pod to record that slurmrestd is down",
               lambda: (p := get_pod(client, uid)) and
               "cannot reach slurmrestd" in annotation(p, "slurm.seedance.io/error") and p, 30)
    assert pod["phase"] in ("Pending", "Assumed"), pod
    print(f"bad input: slurmrestd down -> pod Pending with "
          f"\"{annotation(pod, 'slurm.seedance.io/error')}\"")
    cluster._start_slurmrestd()
    poll("the pod to be submitted once slurmrestd is back",
         lambda: (p := get_pod(client, uid)) is None or annotation(p, "slurm.seedance.io/job-id"),
         60)
    poll("the pod to end", lambda: get_pod(client, uid) is None, 60)
    print("bad input: slurmrestd back -> the pod ran and ended (not lost)")


def submit_all(port, jobs, out):
    """POSTs every job from 4 threads; returns {index: uid}."""
    uids, errors = {}, []
    lock = threading.Lock()

    def worker(part):
        c = testlib.Client(port)
        for i in part:
            gpus, seconds = jobs[i]
            status, pod = c.request("POST", "/v1/pods",
                                    pod_body(f"job-{i}", gpus, workload.script(i, seconds, out)))
            with lock:
                if status == 201:
                    uids[i] = pod["uid"]
                else:
                    errors.append((i, status, pod))
        c.close()

    threads = [threading.Thread(target=worker, args=(range(k, len(jobs), 4),)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    return uids


def check_thousand_jobs(server, client, out, jobs):
    t0 = time.time()
    submit_all(server.port, jobs, out)
    posted = time.time() - t0
    poll("every job to end", lambda: len(testlib.list_pods(client)) == 0, 1800)
    wall = time.time() - t0
    records = workload.read_records(out)
    records.pop(99999, None)
    missing = [i for i in range(len(jobs)) if not any(r["end"] for r in records.get(i, []))]
    assert not missing, f"{len(missing)} jobs never completed, e.g. {missing[:5]}"
    wrong = [(i, r) for i, recs in records.items() for r in recs
             if r["cvd"] != r["seedance_gpus"] or r["node"] != r["seedance_node"]]
    assert not wrong, f"{len(wrong)} jobs ran elsewhere than Seedance decided: {wrong[:3]}"
    overlaps = workload.gpu_overlaps(records, time.time())
    assert not overlaps, f"GPUs in two running jobs at once: {overlaps[:3]}"
    share, makespan = workload.idle_share_while_waiting(records, jobs, t0, NODES * GPUS)
    print(f"{len(jobs)} jobs: all completed on Seedance's GPUs, no GPU shared, wall time "
          f"{wall:.1f} s (posted in {posted:.1f} s; makespan {makespan:.1f} s, GPU-idle share "
          f"while jobs waited {share:.3f})")


def check_node_loss(cluster, client, out):
    long_script = workload.script(88888, 120, out)
    uids = []
    for k in range(4):
        status, pod = client.request("POST", "/v1/pods", pod_body(f"whole-{k}", 8, long_script))
        assert status == 201, (status, pod)
        uids.append(pod["uid"])
    bound = poll("4 whole-node jobs to be in Slurm",
                 lambda: all(annotation(get_pod(client, u) or {}, "slurm.seedance.io/job-id")
                             for u in uids) and [get_pod(client, u) for u in uids], 60)
    victim = bound[0]
    node = victim["node"]
    k = int(node.removeprefix("node"))
    poll(f"the job to start on {node}",
         lambda: any(r["node"] == node for r in workload.read_records(out).get(88888, [])), 60)
    killed = time.monotonic()
    cluster.kill_node(k)
    poll(f"{node} to show as unavailable",
         lambda: client.request("GET", f"/v1/nodes/{node}")[1].get("cordoned"), 10)
    seen = time.monotonic() - killed
    moved = poll("the lost job to be requeued and submitted on another node",
                 lambda: (p := get_pod(client, victim["uid"])) and p["node"] not in (None, node)
                 and annotation(p, "slurm.seedance.io/job-id") and p, 60)
    assert annotation(moved, "slurm.seedance.io/job-id") != \
        annotation(victim, "slurm.seedance.io/job-id")
    poll("the requeued job to start on its new node",
         lambda: any(r["node"] == moved["node"]
                     for r in workload.read_records(out).get(88888, [])), 60)
    print(f"node loss: {node}'s slurmd killed -> unavailable in Seedance after {seen:.1f} s; "
          f"its job requeued to {moved['node']} as job "
          f"{annotation(moved, 'slurm.seedance.io/job-id')}")
    for u in uids:
        assert client.request("DELETE", f"/v1/pods/{u}")[0] == 200
    poll("the deleted pods' jobs to be cancelled in Slurm",
         lambda: not [j for j in cluster.rest("GET", "/jobs")[1]["jobs"]
                      if j["job_state"] in ("RUNNING", "PENDING")], 60)
    print("node loss: deleting the pods cancelled their jobs")
    cluster.restart_node(k)


def write_token(path, token):
    """Replaces the token file whole, as a renewing cron job should (write, then rename)."""
    with open(path + ".new", "w") as f:
        f.write(f"SLURM_JWT={token}\n")
    os.replace(path + ".new", path)


def check_token_renewal(binary, root, cluster, out):
    """A token that expires under a running server, then a renewed file: no restart."""
    jwt = os.path.join(root, "short.jwt")
    # Already expired at start: the server refuses to start and says so, naming the file.
    write_token(jwt, cluster.local_token("root", lifespan=-60))
    flags = ["--backend", "slurm", "--slurm-url", cluster.rest_url, "--slurm-token-file", jwt,
             "--slurm-workdir", out, "--slurm-job-poll", "0.2", "--slurm-node-poll", "1"]
    proc = subprocess.run([binary, "server", "--listen", "127.0.0.1:0", "--state",
                           os.path.join(root, "token-state-0")] + flags,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "expired at" in proc.stderr and jwt in proc.stderr, \
        (proc.returncode, proc.stderr[-600:])
    print(f"token: expired at start -> exit 1, \"{proc.stderr.strip().splitlines()[-1][:200]}\"")

    # A token signed by slurmctld that lives 30 s (room for a sanitized server's start on a busy
    # machine); the server starts with it.
    write_token(jwt, cluster.token("root", lifespan=30))
    expires = time.time() + 30
    server = testlib.Server(binary, os.path.join(root, "token-state"), extra=flags)
    server.start()
    try:
        client = testlib.Client(server.port)
        poll("the token to expire", lambda: time.time() > expires + 1, 60)
        script = workload.script(77777, 1, out)
        status, pod = client.request("POST", "/v1/pods", pod_body("after-expiry", 1, script))
        assert status == 201, (status, pod)
        uid = pod["uid"]
        pod = poll("the pod to record the expired token",
                   lambda: (p := get_pod(client, uid)) and
                   "expired at" in annotation(p, "slurm.seedance.io/error") and p, 60)
        assert pod["phase"] in ("Pending", "Assumed"), pod
        assert jwt in annotation(pod, "slurm.seedance.io/error"), pod
        print(f"token: expired under the server -> pod Pending with "
              f"\"{annotation(pod, 'slurm.seedance.io/error')[:200]}\"")
        # Slurm's nodes cannot be read now: after the grace they carry the unreachable taint
        # (get nodes: Unknown), so nothing more is placed on them.
        t0 = time.monotonic()
        poll("every node to be marked unreachable", lambda: all(
            any(t["key"] == UNREACHABLE for t in n["taints"])
            for n in client.request("GET", "/v1/nodes")[1]["items"]), 30)
        print(f"token: nodes marked unknown (tainted {UNREACHABLE}) "
              f"{time.monotonic() - t0:.1f} s after the pod's failure")
        # Renewal: the next attempt reads the file again and succeeds, with no restart.
        failures = metric(client, FAILED_SUBMITS)
        write_token(jwt, cluster.token("root", lifespan=3600))
        poll("the pod's job to be submitted with the renewed token",
             lambda: (p := get_pod(client, uid)) is None
             or annotation(p, "slurm.seedance.io/job-id"), 30)
        # At most the attempt already under way when the file was replaced may fail.
        renewed = metric(client, FAILED_SUBMITS)
        assert renewed - failures <= 1, f"{renewed - failures} submissions failed after renewal"
        status, pod = client.request("POST", "/v1/pods", pod_body("after-renewal", 1, script))
        assert status == 201, (status, pod)
        poll("a new pod to be submitted at once",
             lambda: (p := get_pod(client, pod["uid"])) is None
             or annotation(p, "slurm.seedance.io/job-id"), 30)
        assert metric(client, FAILED_SUBMITS) == renewed, "a submission failed after renewal"
        assert server.proc.poll() is None, "the server restarted"
        poll("the unreachable taint to be lifted", lambda: not any(
            any(t["key"] == UNREACHABLE for t in n["taints"])
            for n in client.request("GET", "/v1/nodes")[1]["items"]), 30)
        print("token: file renewed -> the waiting pod's next attempt and a new pod were "
              "submitted, no failure, no restart")
        client.close()
    except BaseException:
        print(server.output(), file=sys.stderr)
        raise
    finally:
        server.stop()


FAILED_SUBMITS = 'seedance_slurm_submits_total{result="failed"}'
UNREACHABLE = "node.kubernetes.io/unreachable"


def metric(client, series):
    """The value of one series in /metrics (Prometheus text format)."""
    status, text = client.request("GET", "/metrics")
    assert status == 200 and isinstance(text, str), status
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{series} is not in /metrics")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: backend_test.py SEEDANCE_BINARY")
    binary = sys.argv[1]
    workload.require_slurm_or_skip()
    trace = testlib.trace_file("openb_pod_list_default.csv")
    jobs = workload.job_stream(trace, JOBS)
    # A second partition of one node: a job for it pinned to another node is refused by Slurm
    # as a GRES it cannot have is ("Requested node configuration is not available").
    conf = [f"PartitionName=last Nodes=node{NODES} MaxTime=INFINITE State=UP"]
    with workload.test_cluster("seedance-slurm-", NODES, GPUS, conf) as (root, cluster, jwt):
        out = workload.out_dir(root, "out")
        server = testlib.Server(binary, os.path.join(root, "state"), extra=[
            "--backend", "slurm", "--slurm-url", cluster.rest_url, "--slurm-token-file", jwt,
            "--slurm-workdir", out, "--slurm-output", os.path.join(out, "%j.out"),
            "--slurm-job-poll", "0.2", "--slurm-node-poll", "1", "--slurm-probe-slurmd"])
        server.start()
        try:
            client = testlib.Client(server.port)
            check_bad_input(cluster, client, out)
            check_thousand_jobs(server, client, out, jobs)
            check_node_loss(cluster, client, out)
            client.close()
        except BaseException:
            print(server.output(), file=sys.stderr)
            raise
        finally:
            server.stop()
        check_token_renewal(binary, root, cluster, out)
    print("PASS")


if __name__ == "__main__":
    main()
