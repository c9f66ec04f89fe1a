#!/usr/bin/env python3
"""The cluster autoscaler in the service (issue 17): `seedance server --node-groups FILE`.

Seven parts, each against the real binary on loopback (bad files are in tests/hostile,
node_group_cases):
1. Simulated provisioner: unschedulable pods make the autoscaler add nodes of the right group
   (bin-packed, never past max_size, none for a pod no template can hold); the pods bind on
   them; a SIGKILL and a restart keep the nodes (they are ordinary durable nodes) and nothing is
   asked for twice; new names are the lowest free GROUP-K; emptied nodes are removed after scale_down_unneeded_s, never
   below min_size.
2. Command provisioner, as Slurm's ResumeProgram/SuspendProgram: the resume program gets the
   names and the group (SEEDANCE_NODE_GROUP); this test then registers those nodes itself, as a
   node agent would (PUT /v1/nodes/NAME); the suspend program gets the removed names. A resume
   program that exits non-zero fails its nodes at once (counted, group backed off).
3. Draining (scale_down_utilization_threshold): an underused node whose pods fit elsewhere is
   drained - its pods evicted and placed again on the other node - and removed.
4. SIGKILL while a node is provisioned: after the restart it is asked for again, once. A gang
   whose members fit alone but not together gets a node.
5. Pre-scaling (prescale): a burst that fills the cluster makes it ask for a node before any pod
   waits.
6. Quota: a pod over its queue's limit is held by the quota, not by room: no node is asked for
   it, and the scan counts it apart (held_by_quota).
7. --elastic: cas places a GPU pod in node order instead of balancing CPU (without the flag it
   goes to the node whose CPU matches its idle GPUs).

usage: node_groups_test.py SEEDANCE_BINARY"""

import json
import os
import stat
import sys
import tempfile
import time
import urllib.request

import testlib
from testlib import wait

SCAN_S = 0.2
DELAY_S = 1.0
UNNEEDED_S = 2.0

GPU_NODE = {"cpu_milli": 32000, "memory_mib": 131072, "num_gpus": 4, "gpu_model": "A100",
            "cost_usd_per_hour": 12.0}
CPU_NODE = {"cpu_milli": 64000, "memory_mib": 65536}


def config(provisioner, gpu_max=3, cpu_min=1):
    return {"scan_interval_s": SCAN_S, "scale_down_unneeded_s": UNNEEDED_S,
            "provision_timeout_s": 30, "backoff_s": 60, "provisioner": provisioner,
            "groups": [{"name": "gpu", "min_size": 0, "max_size": gpu_max, "node": GPU_NODE},
                       {"name": "cpu", "min_size": cpu_min, "max_size": 2, "node": CPU_NODE}]}


def write(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def groups(client):
    status, body = client.request("GET", "/v1/node-groups")
    assert status == 200, (status, body)
    return {g["name"]: g for g in body["groups"]}, body


def nodes(client):
    status, body = client.request("GET", "/v1/nodes")
    assert status == 200, (status, body)
    return sorted(n["name"] for n in body["items"])


def pods(client):
    return {p["name"]: p for p in testlib.list_pods(client)}


def submit(client, name, gpus, cpu=1000):
    status, body = client.request("POST", "/v1/pods", {"name": name, "cpu_milli": cpu,
                                                        "memory_mib": 1024, "num_gpu": gpus,
                                                        "gpu_milli": 1000 if gpus else 0})
    assert status in (200, 201, 202), (status, body)
    return body["uid"]


def delete_all(client):
    for p in testlib.list_pods(client):
        status, body = client.request("DELETE", f"/v1/pods/{p['uid']}")
        assert status == 200, (status, body)


def all_bound(client, names):
    ps = pods(client)
    return all(ps.get(n, {}).get("phase") == "Bound" for n in names) and ps


def simulated(binary, work):
    cfg = write(os.path.join(work, "sim.json"),
                config({"kind": "simulated", "delay_s": DELAY_S}))
    state = os.path.join(work, "sim-state")
    server = testlib.Server(binary, state, ["--node-groups", cfg]).start()
    try:
        client = testlib.Client(server.port)
        g, body = groups(client)
        assert body["provisioner"] == "simulated" and g["gpu"]["max_size"] == 3, body
        assert nodes(client) == [], "no node before any pod"

        t0 = time.monotonic()
        submit(client, "a", 2)
        wait("pod a bound on a new gpu node", lambda: all_bound(client, ["a"]))
        took = time.monotonic() - t0
        assert nodes(client) == ["gpu-0"], nodes(client)
        assert took >= DELAY_S, f"bound {took:.2f} s after submit, before the provisioning delay"
        print(f"submit to bound through a scale-up: {took:.2f} s (delay {DELAY_S} s, scan {SCAN_S} s)")

        # Three more 2-GPU pods: one fits gpu-0's free half, two share one new node (bin-packed).
        for n in ("b", "c", "d"):
            submit(client, n, 2)
        wait("b, c, d bound", lambda: all_bound(client, ["a", "b", "c", "d"]))
        assert nodes(client) == ["gpu-0", "gpu-1"], nodes(client)
        # A pod larger than a gpu node's CPU goes to the cpu group.
        submit(client, "e", 0, cpu=40000)
        wait("e bound", lambda: all_bound(client, ["e"]))
        assert pods(client)["e"]["node"] == "cpu-0", pods(client)["e"]
        # A pod no template can hold gets no node.
        submit(client, "huge", 8)
        scans = groups(client)[1]["scans"]
        wait("three more scans", lambda: groups(client)[1]["scans"] >= scans + 3)
        assert nodes(client) == ["cpu-0", "gpu-0", "gpu-1"], nodes(client)
        assert pods(client)["huge"]["phase"] == "Pending"
        last = groups(client)[1]["last_scan"]
        assert last["not_helped"]["no_group_fits"] == 1, last
        # Past max_size: four pods of 4 GPUs need four nodes, the group may add one more.
        for i in range(4):
            submit(client, f"w{i}", 4)
        wait("gpu-2 added", lambda: "gpu-2" in nodes(client))
        scans = groups(client)[1]["scans"]
        wait("three more scans", lambda: groups(client)[1]["scans"] >= scans + 3)
        g, _ = groups(client)
        assert g["gpu"]["ready"] == 3 and g["gpu"]["provisioning"] == 0, g
        assert sum(n.startswith("gpu-") for n in nodes(client)) == 3, nodes(client)

        # SIGKILL and restart: the nodes are durable; no node is asked for twice.
        server.kill()
        server = testlib.Server(binary, state, ["--node-groups", cfg]).start()
        client = testlib.Client(server.port)
        assert nodes(client) == ["cpu-0", "gpu-0", "gpu-1", "gpu-2"], nodes(client)
        wait("a scan after the restart", lambda: groups(client)[0]["gpu"]["ready"] == 3)

        # Empty the cluster: gpu nodes go after scale_down_unneeded_s, cpu-0 stays (min 1).
        t0 = time.monotonic()
        delete_all(client)
        wait("gpu nodes removed", lambda: nodes(client) == ["cpu-0"], timeout=60)
        took = time.monotonic() - t0
        assert took >= UNNEEDED_S, f"removed {took:.2f} s after emptying (unneeded {UNNEEDED_S} s)"
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics").read().decode()
        for line in ('seedance_cluster_autoscaler_nodes_total{change="removed",group="gpu"} 3',
                     'seedance_node_group_nodes{group="gpu",state="ready"} 0'):
            assert line in metrics, (line, [m for m in metrics.splitlines() if "group" in m])
        # Names come from a fixed pool, as Slurm's cloud nodes: the lowest free one again.
        submit(client, "late", 1)
        wait("late bound", lambda: all_bound(client, ["late"]))
        assert pods(client)["late"]["node"] == "gpu-0", pods(client)["late"]
    finally:
        server.stop()


def script(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, stat.S_IRWXU)
    return path


def command(binary, work):
    log = os.path.join(work, "calls.log")
    resume = script(os.path.join(work, "resume"), f'echo "resume $SEEDANCE_NODE_GROUP $*" >> {log}\n')
    suspend = script(os.path.join(work, "suspend"),
                     f'echo "suspend $SEEDANCE_NODE_GROUP $*" >> {log}\n')
    cfg = write(os.path.join(work, "cmd.json"),
                config({"kind": "command", "resume_program": resume, "suspend_program": suspend},
                       cpu_min=0))
    server = testlib.Server(binary, os.path.join(work, "cmd-state"),
                            ["--node-groups", cfg]).start()

    def calls():
        if not os.path.exists(log):
            return []
        with open(log) as f:
            return [line.split() for line in f.read().splitlines()]

    try:
        client = testlib.Client(server.port)
        submit(client, "a", 4)
        submit(client, "b", 4)
        got = wait("the resume program", lambda: calls())
        assert got == [["resume", "gpu", "gpu-0", "gpu-1"]], got
        # Not bound until the nodes register, as a node agent would.
        assert pods(client)["a"]["phase"] == "Pending"
        for name in got[0][2:]:
            status, body = client.request("PUT", f"/v1/nodes/{name}", GPU_NODE)
            assert status == 201, (status, body)
        wait("a and b bound", lambda: all_bound(client, ["a", "b"]))
        delete_all(client)
        wait("the suspend program", lambda: len(calls()) == 2)
        assert sorted(calls()[1][2:]) == ["gpu-0", "gpu-1"] and calls()[1][:2] == ["suspend", "gpu"]
        assert nodes(client) == []
    finally:
        server.stop()

    # A resume program that fails: its nodes fail at once, the group is backed off.
    failing = script(os.path.join(work, "resume-fails"), "exit 3\n")
    cfg = write(os.path.join(work, "fail.json"),
                config({"kind": "command", "resume_program": failing, "suspend_program": suspend}))
    server = testlib.Server(binary, os.path.join(work, "fail-state"),
                            ["--node-groups", cfg]).start()
    try:
        client = testlib.Client(server.port)
        submit(client, "a", 1)
        g, body = wait("the failure", lambda: (lambda r: r if r[1]["errors"] > 0 and
                                               r[0]["gpu"]["backed_off"] else None)(groups(client)))
        assert "exit 3" in body["last_error"] and g["gpu"]["provisioning"] == 0, body
        scans = body["scans"]
        wait("three more scans", lambda: groups(client)[1]["scans"] >= scans + 3)
        assert groups(client)[1]["errors"] == 1, "backed off: not asked again at once"
    finally:
        server.stop()


def draining(binary, work):
    """scale_down_utilization_threshold: of two nodes each a quarter used, one is drained (its pod
    evicted and placed on the other) and removed; the other, then half used, stays."""
    cfg = config({"kind": "simulated", "delay_s": DELAY_S}, cpu_min=0)
    cfg["scale_down_utilization_threshold"] = 0.5
    path = write(os.path.join(work, "drain.json"), cfg)
    server = testlib.Server(binary, os.path.join(work, "drain-state"),
                            ["--node-groups", path]).start()
    try:
        client = testlib.Client(server.port)
        # One pod on each node: the other node cordoned while each pod is placed.
        for name, other in (("gpu-0", None), ("gpu-1", "gpu-0")):
            status, body = client.request("PUT", f"/v1/nodes/{name}", GPU_NODE)
            assert status == 201, (status, body)
            if other:
                client.request("POST", f"/v1/nodes/{other}/cordon")
            submit(client, "p-" + name, 1)
            wait(f"p-{name} bound", lambda: all_bound(client, ["p-" + name]))
            assert pods(client)["p-" + name]["node"] == name, pods(client)["p-" + name]
            if other:
                client.request("POST", f"/v1/nodes/{other}/uncordon")
        t0 = time.monotonic()
        (left,) = wait("one node drained", lambda: (lambda ns: ns if len(ns) == 1 else None)(
            nodes(client)), timeout=60)
        took = time.monotonic() - t0
        assert took >= UNNEEDED_S - SCAN_S, f"drained {took:.2f} s after both were underused"
        wait("both pods bound on the node left",
             lambda: all(p["phase"] == "Bound" and p["node"] == left
                         for p in pods(client).values()))
        _, body = groups(client)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics").read().decode()
        for line in ('seedance_cluster_autoscaler_nodes_total{change="drained",group="gpu"} 1',
                     "seedance_cluster_autoscaler_evicted_pods_total 1"):
            assert line in metrics, (line, [m for m in metrics.splitlines() if "autoscaler" in m])
        # Half used now: not underused, never drained (scans past the unneeded time).
        scans = body["scans"] + int(UNNEEDED_S / SCAN_S) + 3
        wait("scans past the unneeded time", lambda: groups(client)[1]["scans"] >= scans)
        assert nodes(client) == [left], nodes(client)
    finally:
        server.stop()


def killed_mid_scale_up(binary, work):
    """SIGKILL while a node is being provisioned: the request dies with the process (it is not
    durable), the pod is still unschedulable after the restart, and exactly one node is asked
    for again, under the same lowest free name."""
    cfg = write(os.path.join(work, "kill.json"),
                config({"kind": "simulated", "delay_s": 3.0}, cpu_min=0))
    state = os.path.join(work, "kill-state")
    server = testlib.Server(binary, state, ["--node-groups", cfg]).start()
    try:
        client = testlib.Client(server.port)
        submit(client, "p", 2)
        wait("a node being provisioned",
             lambda: groups(client)[0]["gpu"]["provisioning"] == 1, timeout=30)
        server.kill()
        server = testlib.Server(binary, state, ["--node-groups", cfg]).start()
        client = testlib.Client(server.port)
        assert nodes(client) == [], "the node in flight did not survive the process"
        wait("p bound after the restart", lambda: all_bound(client, ["p"]), timeout=60)
        assert nodes(client) == ["gpu-0"], nodes(client)
    finally:
        server.stop()


def gang(binary, work):
    """A gang whose members each fit on the free room but not all at once gets nodes: the
    scheduler places it all or nothing, so the autoscaler counts its members together."""
    cfg = write(os.path.join(work, "gang.json"),
                config({"kind": "simulated", "delay_s": DELAY_S}, cpu_min=0))
    server = testlib.Server(binary, os.path.join(work, "gang-state"),
                            ["--node-groups", cfg]).start()
    try:
        client = testlib.Client(server.port)
        status, body = client.request("PUT", "/v1/nodes/gpu-0", GPU_NODE)  # 4 GPUs free
        assert status == 201, (status, body)
        for i in range(3):  # three 2-GPU members: any one fits on gpu-0, all three do not
            status, body = client.request("POST", "/v1/pods", {
                "name": f"m{i}", "cpu_milli": 1000, "memory_mib": 1024, "num_gpu": 2,
                "gpu_milli": 1000, "gang": "train", "gang_min": 3})
            assert status in (200, 201, 202), (status, body)
        wait("the gang bound", lambda: all_bound(client, ["m0", "m1", "m2"]), timeout=30)
        assert nodes(client) == ["gpu-0", "gpu-1"], nodes(client)
    finally:
        server.stop()


def prescaling(binary, work):
    """prescale: a burst that fills the only node makes the autoscaler ask for another before any
    pod is pending (the last hour's arrival rate x the horizon, delay_s + scan_interval_s, is
    more than the free room)."""
    cfg = config({"kind": "simulated", "delay_s": DELAY_S}, cpu_min=0)
    cfg["prescale"] = True
    cfg["scale_down_unneeded_s"] = 600  # nothing is removed while the test looks
    path = write(os.path.join(work, "prescale.json"), cfg)
    server = testlib.Server(binary, os.path.join(work, "prescale-state"),
                            ["--node-groups", path]).start()
    try:
        client = testlib.Client(server.port)
        status, body = client.request("PUT", "/v1/nodes/gpu-0", GPU_NODE)
        assert status == 201, (status, body)
        wait("a first scan", lambda: groups(client)[1]["scans"] >= 1)
        for i in range(4):  # fills gpu-0's 4 GPUs
            submit(client, f"burst-{i}", 1)
        wait("the burst bound", lambda: all_bound(client, [f"burst-{i}" for i in range(4)]))
        wait("gpu-1 asked for ahead of demand", lambda: "gpu-1" in nodes(client), timeout=30)
        ps = pods(client)
        assert all(p["phase"] == "Bound" for p in ps.values()), ps
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics").read().decode()
        line = 'seedance_cluster_autoscaler_nodes_total{change="added",group="gpu"} 1'
        assert line in metrics, [m for m in metrics.splitlines() if "autoscaler" in m]
        # Covered now: the next scans ask for nothing more.
        scans = groups(client)[1]["scans"] + 5
        wait("five more scans", lambda: groups(client)[1]["scans"] >= scans)
        assert nodes(client) == ["gpu-0", "gpu-1"], nodes(client)
    finally:
        server.stop()


def quota(binary, work):
    """A pod held back by its queue's limit is not unschedulable: no node is asked for it (a new
    node would not let it run), and the scan counts it apart."""
    cfg = config({"kind": "simulated", "delay_s": DELAY_S}, cpu_min=0)
    path = write(os.path.join(work, "quota.json"), cfg)
    server = testlib.Server(binary, os.path.join(work, "quota-state"),
                            ["--node-groups", path]).start()
    try:
        client = testlib.Client(server.port)
        policy = ("profiles:\n  - name: default\n    policy: bestfit\nqueues:\n"
                  "  - name: team-q\n    namespaces: [q]\n    guaranteed: {gpus: 4}\n"
                  "    limit: {gpus: 4}\n")
        status, body = client.request("PUT", "/v1/policy", policy)
        assert status == 200, (status, body)

        def four(name):
            status, body = client.request("POST", "/v1/pods", {
                "name": name, "namespace": "q", "cpu_milli": 1000, "memory_mib": 1024,
                "num_gpu": 4, "gpu_milli": 1000})
            assert status in (200, 201, 202), (status, body)

        four("first")
        wait("first bound on a new node", lambda: all_bound(client, ["first"]))
        assert nodes(client) == ["gpu-0"], nodes(client)
        four("second")  # over team-q's limit of 4 GPUs, and no room on gpu-0 either
        wait("second counted as held by its quota",
             lambda: (groups(client)[1]["last_scan"] or {}).get("held_by_quota") == 1)
        scans = groups(client)[1]["scans"] + 5
        wait("five more scans", lambda: groups(client)[1]["scans"] >= scans)
        last = groups(client)[1]["last_scan"]
        assert last["unschedulable"] == 0, last
        assert nodes(client) == ["gpu-0"], nodes(client)
        assert pods(client)["second"]["phase"] == "Pending", pods(client)["second"]
    finally:
        server.stop()


def elastic(binary, work):
    """--elastic (and --node-groups) tell cas the cluster is autoscaled: a GPU pod goes in node
    order (the first node) rather than where CPU balance would put it (the lean node)."""
    lean = dict(GPU_NODE, cpu_milli=8000)
    for flags, want in (([], "n1"), (["--elastic"], "n0")):
        server = testlib.Server(binary, os.path.join(work, f"elastic-{len(flags)}-state"),
                                flags).start()
        try:
            client = testlib.Client(server.port)
            for name, node in (("n0", GPU_NODE), ("n1", lean)):
                status, body = client.request("PUT", f"/v1/nodes/{name}", node)
                assert status == 201, (status, body)
            submit(client, "one", 1)
            wait("one bound", lambda: all_bound(client, ["one"]))
            got = pods(client)["one"]["node"]
            assert got == want, (flags, got)
        finally:
            server.stop()


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="seedance-node-groups-")
    simulated(binary, work)
    command(binary, work)
    draining(binary, work)
    killed_mid_scale_up(binary, work)
    gang(binary, work)
    prescaling(binary, work)
    quota(binary, work)
    elastic(binary, work)
    print("node groups: simulated and command provisioners, draining, a gang, prescaling, quota, "
          "elastic placement passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
