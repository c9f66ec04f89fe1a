#!/usr/bin/env python3
"""Auth the hard way (issue 12): with --token-file, every mutating call without the token (no
header, a wrong token, a token of the wrong length, another scheme) is 401 and changes nothing;
with the token it works; reads stay open. Also checks the error body and the limits that need no
data: 413 over --max-body, 400 with the JSON path for a bad body, 404, 409, 429 over the rate.

usage: auth_test.py SEEDANCE_BINARY"""

import os
import shutil
import sys
import tempfile

import testlib

TOKEN = "s3cr3t-token-for-the-auth-test-0123456789"


def expect(status, body, want, what):
    if status != want:
        raise AssertionError(f"{what}: want {want}, got {status} {body}")
    if want >= 400:
        err = body.get("error") if isinstance(body, dict) else None
        if not err or not err.get("code") or not err.get("message"):
            raise AssertionError(f"{what}: error body lacks code/message: {body}")
        return err
    return body


def snapshot(c):
    _, nodes = c.request("GET", "/v1/nodes")
    pods = testlib.list_pods(c)
    return (sorted((n["name"], n["cordoned"]) for n in nodes["items"]),
            sorted((p["uid"], p["phase"]) for p in pods))


def main():
    binary = sys.argv[1]
    state = tempfile.mkdtemp(prefix="seedance-auth-")
    token_file = os.path.join(state, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(token_file, 0o600)
    node = {"cpu_milli": 64000, "memory_mib": 262144, "num_gpus": 8, "gpu_model": "A100"}
    pod = {"name": "p1", "cpu_milli": 1000, "num_gpu": 1, "gpu_milli": 500}
    server = testlib.Server(binary, os.path.join(state, "st"),
                            ["--token-file", token_file, "--max-body", "4096"]).start()
    try:
        good = testlib.Client(server.port, token=TOKEN)
        anon = testlib.Client(server.port)
        expect(*good.request("PUT", "/v1/nodes/n1", node), 201, "PUT node with the token")
        status, created = good.request("POST", "/v1/pods", pod)
        expect(status, created, 201, "POST pod with the token")
        uid = created["uid"]
        before = snapshot(anon)
        bad_tokens = [None, "", "wrong", TOKEN[:-1], TOKEN + "x", TOKEN.upper()]
        calls = [("PUT", "/v1/nodes/n2", node), ("PUT", "/v1/nodes/n1", node),
                 ("POST", "/v1/nodes/n1/cordon", None), ("POST", "/v1/pods", dict(pod, name="p2")),
                 ("DELETE", f"/v1/pods/{uid}", None), ("DELETE", "/v1/nodes/n1?drain=true", None),
                 ("PUT", "/v1/policy", "profiles: []\n")]
        refused = 0
        for tok in bad_tokens:
            for method, path, body in calls:
                c = testlib.Client(server.port)
                if tok is None:
                    status, reply = c.request(method, path, body)
                else:
                    status, reply = c.request(method, path, body, token=tok)
                expect(status, reply, 401, f"{method} {path} with token {tok!r}")
                refused += 1
        # Another scheme carrying the right secret is refused too.
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("POST", "/v1/pods", body='{"name":"p3"}',
                     headers={"Authorization": f"Basic {TOKEN}"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401, resp.status
        refused += 1
        after = snapshot(anon)
        if before != after:
            raise AssertionError(f"state changed by refused calls: {before} -> {after}")
        # Reads need no token.
        expect(*anon.request("GET", f"/v1/pods/{uid}"), 200, "GET pod without a token")
        # Bad bodies: 400 naming the JSON path; unknown: 404; taken: 409; too big: 413.
        err = expect(*good.request("POST", "/v1/pods", dict(pod, name="p4", gpu_milli=1500)), 400,
                     "gpu_milli 1500")
        assert err.get("field") == "$.gpu_milli", err
        expect(*good.request("POST", "/v1/pods", "{not json"), 400, "malformed JSON")
        expect(*good.request("GET", "/v1/pods/00000000-0000-4000-8000-000000000000"), 404,
               "unknown pod")
        expect(*good.request("POST", "/v1/pods", pod), 409, "pod name taken")
        expect(*good.request("DELETE", "/v1/nodes/n1"), 409, "node with a bound pod")
        expect(*good.request("POST", "/v1/pods", dict(pod, name="big", labels={
            f"k{i}": "v" * 60 for i in range(60)})), 413, "body over --max-body")
        print(f"{refused} unauthenticated mutating calls refused with 401, state unchanged; "
              f"400/404/409/413 bodies checked")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    # The rate limit, on a server of its own.
    state = tempfile.mkdtemp(prefix="seedance-rate-")
    server = testlib.Server(binary, state, ["--rate-limit", "5"]).start()
    try:
        c = testlib.Client(server.port)
        codes = [c.request("GET", "/v1/nodes")[0] for _ in range(50)]
        if 429 not in codes or 200 not in codes:
            raise AssertionError(f"--rate-limit 5: 50 quick requests gave {sorted(set(codes))}")
        print(f"--rate-limit 5: {codes.count(429)} of 50 quick requests got 429")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
