#!/usr/bin/env python3
"""Tenants are a security boundary (issue 13): with three tenant tokens and one administrator
token, every API route is tried with every token and with none. A tenant reads and changes only
its own namespaces' pods; nodes, the policy and the watch stream answer 403; another tenant's
pod answers 404 (its existence must not leak); without a token every /v1/ call is 401. After
the refused calls nothing has changed; then each tenant's own calls work.

usage: tenants_test.py SEEDANCE_BINARY"""

import os
import shutil
import sys
import tempfile

import testlib

ADMIN = "admin-token-for-the-tenants-test-0123456789"
TENANTS = {
    "team-a": ("token-of-team-a-0123456789abcdef", ["a-prod", "a-dev"]),
    "team-b": ("token-of-team-b-0123456789abcdef", ["b"]),
    "team-c": ("token-of-team-c-0123456789abcdef", ["c"]),
}
NODE = {"cpu_milli": 64000, "memory_mib": 262144, "num_gpus": 8, "gpu_model": "A100"}


def pod(name, ns):
    return {"name": name, "namespace": ns, "cpu_milli": 1000, "num_gpu": 1, "gpu_milli": 1000}


def snapshot(admin):
    status, nodes = admin.request("GET", "/v1/nodes")
    assert status == 200, (status, nodes)
    status, policy = admin.request("GET", "/v1/policy")
    assert status == 200, (status, policy)
    pods = testlib.list_pods(admin)
    return (sorted((n["name"], n["cordoned"]) for n in nodes["items"]),
            sorted((p["uid"], p["namespace"], p["phase"], str(sorted(p["annotations"].items())))
                   for p in pods), str(policy))


def check(got, want, what, failures):
    status, body = got
    if status != want:
        failures.append(f"{what}: want {want}, got {status} {body}")
    elif want >= 400 and not (isinstance(body, dict) and body.get("error", {}).get("message")):
        failures.append(f"{what}: error body lacks a message: {body}")


def main():
    binary = sys.argv[1]
    state = tempfile.mkdtemp(prefix="seedance-tenants-")
    admin_file = os.path.join(state, "admin.token")
    tenants_file = os.path.join(state, "tenants.csv")
    with open(admin_file, "w") as f:
        f.write(ADMIN + "\n")
    with open(tenants_file, "w") as f:
        f.write("# token,tenant,namespaces\n")
        for name, (tok, nss) in TENANTS.items():
            f.write(f"{tok},{name},{';'.join(nss)}\n")
    server = testlib.Server(binary, os.path.join(state, "st"),
                            ["--token-file", admin_file, "--tenant-tokens", tenants_file]).start()
    failures = []
    try:
        admin = testlib.Client(server.port, token=ADMIN)
        for n in ("n1", "n2"):
            check(admin.request("PUT", f"/v1/nodes/{n}", NODE), 201, f"admin PUT node {n}",
                  failures)
        # Each tenant submits one pod in each of its namespaces.
        uids = {}  # tenant -> [uid]
        for name, (tok, nss) in TENANTS.items():
            c = testlib.Client(server.port, token=tok)
            for ns in nss:
                status, body = c.request("POST", "/v1/pods", pod(f"p-{ns}", ns))
                check((status, body), 201, f"{name} POST pod in its namespace {ns}", failures)
                uids.setdefault(name, []).append(body["uid"])
        before = snapshot(admin)

        # Every route, every caller. (method, path, body, want for admin, want for a tenant).
        admin_only = [
            ("PUT", "/v1/nodes/n9", NODE), ("PUT", "/v1/nodes/n1", NODE),
            ("GET", "/v1/nodes", None), ("GET", "/v1/nodes/n1", None),
            ("POST", "/v1/nodes/n1/cordon", None), ("POST", "/v1/nodes/n1/uncordon", None),
            ("DELETE", "/v1/nodes/n2?drain=true", None), ("GET", "/v1/policy", None),
            ("PUT", "/v1/policy", "profiles:\n  - name: default\n    placement: bestfit\n"),
            ("GET", "/v1/watch?format=json&timeout=0", None), ("GET", "/v1/watch?timeout=0", None),
            # A node agent's status on a pod: a tenant must not forge it, even on its own pod.
            ("PATCH", f"/v1/pods/{uids['team-a'][0]}/annotations",
             {"prewarm.seedance.io/status": "Ready"}),
        ]
        tried = 0
        for name, (tok, nss) in TENANTS.items():
            c = testlib.Client(server.port, token=tok)
            for method, path, body in admin_only:
                check(c.request(method, path, body), 403, f"{name} {method} {path}", failures)
                tried += 1
            others = [(o, u) for o, us in uids.items() if o != name for u in us]
            for owner, uid in others:
                for method, path in (("GET", f"/v1/pods/{uid}"), ("DELETE", f"/v1/pods/{uid}"),
                                     ("GET", f"/v1/pods/{uid}/explain")):
                    check(c.request(method, path), 404, f"{name} {method} {owner}'s pod", failures)
                    tried += 1
            for other, (_, onss) in TENANTS.items():
                if other == name:
                    continue
                for ns in onss:
                    check(c.request("POST", "/v1/pods", pod("intruder", ns)), 403,
                          f"{name} POST pod in {other}'s namespace {ns}", failures)
                    check(c.request("GET", f"/v1/pods?namespace={ns}"), 403,
                          f"{name} list {other}'s namespace {ns}", failures)
                    tried += 2
            check(c.request("POST", "/v1/pods", pod("nowhere", "default")), 403,
                  f"{name} POST pod in the default namespace", failures)
            # Its own list holds exactly its pods.
            status, page = c.request("GET", "/v1/pods")
            check((status, page), 200, f"{name} list pods", failures)
            if status == 200:
                seen = sorted(p["uid"] for p in page["items"])
                if seen != sorted(uids[name]):
                    failures.append(f"{name} list pods: sees {seen}, owns {sorted(uids[name])}")
            tried += 2
        # No token, or a wrong one: 401 on every /v1/ route, reads included.
        anon_calls = admin_only + [("GET", "/v1/pods", None), ("POST", "/v1/pods", pod("x", "b")),
                                   ("GET", f"/v1/pods/{uids['team-b'][0]}", None),
                                   ("GET", f"/v1/pods/{uids['team-b'][0]}/explain", None),
                                   ("DELETE", f"/v1/pods/{uids['team-b'][0]}", None)]
        for tok in (None, "wrong-token-0123456789abcdef", ADMIN[:-1], TENANTS["team-a"][0] + "x"):
            for method, path, body in anon_calls:
                c = testlib.Client(server.port)
                got = c.request(method, path, body) if tok is None else \
                    c.request(method, path, body, token=tok)
                check(got, 401, f"token {tok!r} {method} {path}", failures)
                tried += 1
        after = snapshot(admin)
        if before != after:
            failures.append(f"refused calls changed the state:\nbefore {before}\nafter  {after}")

        # What a tenant may do works, and the administrator sees everything.
        for name, (tok, nss) in TENANTS.items():
            c = testlib.Client(server.port, token=tok)
            uid = uids[name][0]
            check(c.request("GET", f"/v1/pods/{uid}"), 200, f"{name} GET own pod", failures)
            check(c.request("GET", f"/v1/pods/{uid}/explain"), 200, f"{name} explain own pod",
                  failures)
            check(c.request("GET", f"/v1/pods?namespace={nss[0]}"), 200,
                  f"{name} list own namespace", failures)
            check(c.request("DELETE", f"/v1/pods/{uid}"), 200, f"{name} DELETE own pod", failures)
        left = testlib.list_pods(admin)
        want_left = sum(len(u) - 1 for u in uids.values())
        if len(left) != want_left:
            failures.append(f"admin sees {len(left)} pods after the deletes, want {want_left}")
        check(admin.request("GET", "/v1/watch?format=json&timeout=0"), 200, "admin watch",
              failures)
        print(f"tenants_test: {tried} refused calls tried, {len(failures)} failures")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    if failures:
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
