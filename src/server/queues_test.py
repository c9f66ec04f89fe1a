#!/usr/bin/env python3
"""Quotas in the policy YAML are enforced on pods submitted through the API (issue 13): three
tenants with queues of 8 GPUs each on three 8-GPU nodes. One tenant borrows the whole cluster;
the others reclaim their guarantee at once, up to their fair share; GET /v1/queues shows usage,
fair share, borrowed and pending, and a tenant sees only its own queue. A policy reload that
lowers a quota lets the other tenants reclaim as defined, and a limit caps a queue.

usage: queues_test.py SEEDANCE_BINARY"""

import os
import shutil
import sys
import tempfile
import time

import testlib

ADMIN = "admin-token-for-the-queues-test-0123456789"
TOKENS = {"a": "token-of-tenant-a-0123456789abcdef", "b": "token-of-tenant-b-0123456789abcdef",
          "c": "token-of-tenant-c-0123456789abcdef"}
NODE = {"cpu_milli": 64000, "memory_mib": 262144, "num_gpus": 8, "gpu_model": "A100"}


def policy(quotas, limits=None):
    limits = limits or {}
    text = "profiles:\n  - name: default\n    policy: bestfit\nqueues:\n"
    for name, gpus in quotas.items():
        text += f"  - name: team-{name}\n    namespaces: [{name}]\n"
        text += f"    guaranteed: {{gpus: {gpus}}}\n"
        if name in limits:
            text += f"    limit: {{gpus: {limits[name]}}}\n"
    return text


def bound(admin, ns):
    return sum(1 for p in testlib.list_pods(admin)
               if p["namespace"] == ns and p["phase"] == "Bound")


def wait_for(what, fn, want, timeout=30):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = fn()
        if got == want:
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: want {want}, got {got}")


def refused_at_limit(admin, ns):
    """True once every pending pod of `ns` was last refused because its queue is at its limit:
    the scheduler tried each of them with the queue full, so none of them is still to come."""
    status, pods = admin.request("GET", f"/v1/pods?namespace={ns}&phase=Pending")
    assert status == 200, (status, pods)
    for p in pods["items"]:
        status, why = admin.request("GET", f"/v1/pods/{p['uid']}/explain")
        assert status == 200, (status, why)
        if "is at its limit" not in (why.get("last_attempt") or ""):
            return False
    return bool(pods["items"])


def submit(client, ns, count, start=0):
    for i in range(start, start + count):
        status, body = client.request("POST", "/v1/pods", {
            "name": f"p{i}", "namespace": ns, "cpu_milli": 1000, "num_gpu": 1,
            "gpu_milli": 1000})
        assert status == 201, (status, body)


def queues(client):
    status, body = client.request("GET", "/v1/queues")
    assert status == 200, (status, body)
    return {q["name"]: q for q in body["items"]}


def main():
    binary = sys.argv[1]
    state = tempfile.mkdtemp(prefix="seedance-queues-")
    admin_file = os.path.join(state, "admin.token")
    tenants_file = os.path.join(state, "tenants.csv")
    with open(admin_file, "w") as f:
        f.write(ADMIN + "\n")
    with open(tenants_file, "w") as f:
        for name, tok in TOKENS.items():
            f.write(f"{tok},tenant-{name},{name}\n")
    server = testlib.Server(binary, os.path.join(state, "st"),
                            ["--token-file", admin_file, "--tenant-tokens", tenants_file]).start()
    try:
        admin = testlib.Client(server.port, token=ADMIN)
        t = {n: testlib.Client(server.port, token=tok) for n, tok in TOKENS.items()}
        for n in range(3):
            status, body = admin.request("PUT", f"/v1/nodes/n{n}", NODE)
            assert status == 201, (status, body)
        status, body = admin.request("PUT", "/v1/policy", policy({"a": 8, "b": 8, "c": 8}))
        assert status == 200, (status, body)

        # a borrows every idle GPU.
        submit(t["a"], "a", 24)
        wait_for("a borrows the cluster", lambda: bound(admin, "a"), 24)
        q = queues(admin)
        assert q["team-a"]["usage"]["gpus"] == 24 and q["team-a"]["borrowed"]["gpus"] == 16, q
        # b and c reclaim: b its whole guarantee, c the 4 it asks for.
        submit(t["b"], "b", 8)
        submit(t["c"], "c", 4)
        wait_for("b reclaims its guarantee", lambda: bound(admin, "b"), 8)
        wait_for("c reclaims what it asks", lambda: bound(admin, "c"), 4)
        # a keeps c's unused 4 GPUs: its fair share is 12, above its guarantee of 8.
        wait_for("a keeps its fair share", lambda: bound(admin, "a"), 12)
        q = queues(admin)
        assert q["team-a"]["fair_share"]["gpus"] == 12, q["team-a"]
        assert q["team-a"]["pending"]["gpus"] == 12, q["team-a"]
        assert q["team-b"]["fair_share"]["gpus"] == 8, q["team-b"]
        # A tenant sees its own queue only.
        mine = queues(t["b"])
        assert list(mine) == ["team-b"], mine

        # The reload moves 4 GPUs of guarantee from a to b; b asks for 4 more and reclaims them.
        status, body = admin.request("PUT", "/v1/policy", policy({"a": 4, "b": 12, "c": 8}))
        assert status == 200, (status, body)
        submit(t["b"], "b", 4, start=100)
        wait_for("b reclaims the raised quota", lambda: bound(admin, "b"), 12)
        wait_for("a is down to its new fair share", lambda: bound(admin, "a"), 8)
        q = queues(admin)
        assert q["team-a"]["fair_share"]["gpus"] == 8, q["team-a"]

        # A limit caps a queue: c may hold at most 5, however many GPUs it could reclaim.
        status, body = admin.request("PUT", "/v1/policy",
                                     policy({"a": 4, "b": 12, "c": 4}, limits={"c": 5}))
        assert status == 200, (status, body)
        status, pods = admin.request("GET", "/v1/pods?namespace=b&phase=Bound")
        for p in pods["items"][:6]:  # b leaves 6 GPUs: a and c share them
            status, _ = admin.request("DELETE", f"/v1/pods/{p['uid']}")
            assert status == 200
        submit(t["c"], "c", 4, start=200)
        wait_for("c stops at its limit", lambda: bound(admin, "c"), 5)
        wait_for("c's other pods are refused at its limit", lambda: refused_at_limit(admin, "c"),
                 True)
        assert bound(admin, "c") == 5
        status, metrics = admin.request("GET", "/metrics")
        assert 'seedance_queue_gpus{kind="used",queue="team-c"} 5' in metrics, \
            [line for line in metrics.splitlines() if "queue_gpus" in line]
        assert "seedance_preemptions_total" in metrics
        print("queues_test: borrowing, reclaim to fair share, reload and limit as defined")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
