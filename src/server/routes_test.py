#!/usr/bin/env python3
"""Every route with every kind of credential, against docs/api.md "Who may call what".

The routes table and the levels table are read from docs/api.md (http_core_test checks that the
server registers exactly those routes with those levels). Each route is called, with a body that
would change something where it can, by: no token, a wrong token, a tenant's token and the
administrator's token, on a server with tenants and on one with the administrator's token only.
A caller the table refuses must get exactly 401 or 403; one it allows must get neither. After the
refused calls the cluster (nodes, pods, the policy) must be what it was: a tenant's extender
`filter` with a node list, for one, rewrote durable nodes before.

usage: routes_test.py SEEDANCE_BINARY"""

import json
import os
import re
import shutil
import sys
import tempfile

import testlib

ADMIN = "routes-test-admin-token-0123456789"
TENANT = "routes-test-tenant-token-0123456789"
NODE = {"cpu_milli": 64000, "memory_mib": 262144, "num_gpus": 8, "gpu_model": "A100"}
EXTENDER_ARGS = {
    "Pod": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "kp", "namespace": "ml", "uid": "11111111-2222-4333-8444-555555555555"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Pending"}},
    "Nodes": {"items": [{"kind": "Node", "metadata": {"name": "n1"},
                         "status": {"allocatable": {"cpu": "1", "memory": "1Gi"}}}]}}
EXPERIMENT = {"control": "a", "variants": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}],
              "metrics": [{"name": "latency_ms", "direction": "decrease"}]}


def doc_tables():
    src = os.environ.get("SEEDANCE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(src, "docs", "api.md")) as f:
        doc = f.read()
    routes = doc[doc.index("<!-- routes:"):doc.index("<!-- /routes -->")]
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in routes.splitlines() if line.startswith("|") and not line.startswith("|---")]
    levels_text = doc[doc.index("| level | anonymous |"):doc.index("A wrong token")]
    levels = {}
    for line in levels_text.splitlines()[2:]:
        if line.startswith("|"):
            c = [x.strip() for x in line.strip("|").split("|")]
            levels[c[0]] = c[1:]
    return rows[1:], levels


def request_for(method, path, uid):
    """A concrete path and body for a documented route."""
    path = path.replace("{name}", "n1").replace("{uid}", uid)
    body = None
    if path == "/v1/nodes/n1" and method == "PUT":
        body = dict(NODE, num_gpus=0, cpu_milli=1000)
    elif path == "/v1/pods" and method == "POST":
        body = {"name": f"made-{os.urandom(4).hex()}", "namespace": "ml", "cpu_milli": 100}
    elif path == "/v1/policy" and method == "PUT":
        body = "profiles:\n  - name: default\n    policy: bestfit\n"
    elif path.startswith("/k8s/extender/v1/") and path.endswith(("filter", "prioritize")):
        body = EXTENDER_ARGS
    elif path.endswith("/annotations"):
        body = {"prewarm.seedance.io/status": "Ready"}
    elif path.endswith("/bind"):
        body = {"PodName": "kp", "PodNamespace": "ml", "PodUID": EXTENDER_ARGS["Pod"]["metadata"]["uid"],
                "Node": "n1"}
    elif path.endswith("/preempt"):
        body = {"Pod": EXTENDER_ARGS["Pod"], "NodeNameToVictims": {}}
    elif path == "/v1/experiments/n1" and method == "PUT":
        body = EXPERIMENT
    elif path.endswith("/events"):
        body = {"events": [{"session": "s1", "variant": "a", "metrics": {"latency_ms": 1.0}}]}
    elif path.endswith("/assign"):
        path += "?session=s1"
    if path == "/v1/watch":
        path += "?format=json&timeout=0s"
    return path, body


def snapshot(admin):
    nodes = admin.request("GET", "/v1/nodes")[1]["items"]
    pods = testlib.list_pods(admin)
    policy = admin.request("GET", "/v1/policy")[1]["text"]
    experiments = admin.request("GET", "/v1/experiments")[1]["items"]
    return (sorted(json.dumps(n, sort_keys=True) for n in nodes),
            sorted((p["uid"], p["phase"], p.get("node")) for p in pods), policy,
            sorted(json.dumps(e, sort_keys=True) for e in experiments))


def walk(binary, with_tenants):
    rows, levels = doc_tables()
    state = tempfile.mkdtemp(prefix="seedance-routes-")
    with open(os.path.join(state, "token"), "w") as f:
        f.write(ADMIN + "\n")
    extra = ["--token-file", os.path.join(state, "token")]
    if with_tenants:
        with open(os.path.join(state, "tenants"), "w") as f:
            f.write(f"{TENANT},t1,ml\n")
        extra += ["--tenant-tokens", os.path.join(state, "tenants")]
    server = testlib.Server(binary, os.path.join(state, "st"), extra).start()
    checked = 0
    try:
        admin = testlib.Client(server.port, token=ADMIN)
        assert admin.request("PUT", "/v1/nodes/n1", NODE)[0] == 201
        status, pod = admin.request("POST", "/v1/pods",
                                    {"name": "mine", "namespace": "ml", "cpu_milli": 100})
        assert status == 201, (status, pod)
        uid = pod["uid"]
        callers = [("anonymous", None), ("wrong token", "wrong-token-0123456789")]
        if with_tenants:
            callers.append(("tenant", TENANT))
        column = {"anonymous": 1 if with_tenants else 0, "wrong token": 1 if with_tenants else 0,
                  "tenant": 2}
        failures = []
        for method, path, label, level in rows:
            for who, token in callers:
                want = levels[level][column[who]]
                target, body = request_for(method, path, uid)
                c = testlib.Client(server.port, token=token)
                refused = want in ("401", "403")
                before = snapshot(admin) if refused else None
                status, reply = c.request(method, target, body)
                if refused and snapshot(admin) != before:
                    failures.append(f"{who} {method} {target} ({status}) changed the cluster")
                if refused and str(status) != want:
                    failures.append(f"{who} {method} {target}: want {want}, got {status} {reply}")
                if not refused and status in (401, 403):
                    failures.append(f"{who} {method} {target}: refused {status} ({level})")
                checked += 1
        # The administrator may call everything (each gets neither 401 nor 403).
        for method, path, label, level in rows:
            target, body = request_for(method, path, uid)
            status, reply = admin.request(method, target, body)
            if status in (401, 403):
                failures.append(f"admin {method} {target}: {status} {reply}")
            checked += 1
        if failures:
            raise AssertionError("\n".join(failures))
        print(f"{'tenants' if with_tenants else 'admin token only'}: {checked} calls over "
              f"{len(rows)} routes as the table says; refused calls changed nothing")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)


def main():
    binary = sys.argv[1]
    walk(binary, with_tenants=True)
    walk(binary, with_tenants=False)
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
