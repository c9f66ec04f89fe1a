#!/usr/bin/env python3
"""Hot reload under load (issue 12): the policy file is rewritten 100 times (write to a temp file,
rename over: what editors and config managers do) while 10,000 pods are submitted by 16 clients;
every pod gets a decision, none is lost, and a broken file midway is refused with file:line while
the previous policy keeps serving.

usage: reload_test.py SEEDANCE_BINARY [--pods 10000] [--rewrites 100]"""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

import testlib

GOOD = """version: 1
profiles:
  - name: pack
    policy: {a}
  - name: spread
    policy: {b}
default_profile: pack
classes:
  - name: training
    match: {{namespace: train}}
    profile: spread
rules:
  - name: low-free-{i}
    condition: gpu_free_pct < 5 && pending_pods > 100
    priority: 10
    timeout: 30s
    action: {{type: alert, name: gpu-low, message: "rewrite {i}"}}
"""

BROKEN = """version: 1
profiles:
  - name: pack
    policy: cas
    polcy_options: {}
"""


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def wait_for(client, pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, p = client.request("GET", "/v1/policy")
        if status == 200 and pred(p):
            return p
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}; last: {p}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--rewrites", type=int, default=100)
    ap.add_argument("--clients", type=int, default=16)
    args = ap.parse_args()
    nodes_csv = testlib.trace_file("openb_node_list_gpu_node.csv")
    shapes = testlib.read_pod_shapes(testlib.trace_file("openb_pod_list_default.csv"))
    work = tempfile.mkdtemp(prefix="seedance-reload-")
    policy = os.path.join(work, "policy.yaml")
    write_atomically(policy, GOOD.format(a="cas", b="fgd", i=0))
    server = testlib.Server(args.binary, os.path.join(work, "state"),
                            ["--nodes", nodes_csv, "--policy", policy]).start()
    acked, errors, lock, next_i = {}, [], threading.Lock(), [0]

    def submit(c):
        client = testlib.Client(server.port)
        while True:
            with lock:
                i = next_i[0]
                if i >= args.pods:
                    return
                next_i[0] += 1
            shape = dict(shapes[(i * 7919) % len(shapes)])
            shape["name"] = f"p{i}"
            shape["namespace"] = "train" if i % 3 == 0 else "serve"
            status, body = client.request("POST", "/v1/pods", shape)
            with lock:
                if status == 201:
                    acked[body["uid"]] = body
                else:
                    errors.append((status, body))

    try:
        watcher = testlib.Client(server.port)
        gen0 = wait_for(watcher, lambda p: p["state"] in ("Loaded", "Active"), "first policy")[
            "generation"]
        threads = [threading.Thread(target=submit, args=(c,)) for c in range(args.clients)]
        for t in threads:
            t.start()
        broken_at = args.rewrites // 2
        refused_checked = False
        gen = gen0
        for k in range(1, args.rewrites + 1):
            if k == broken_at:
                write_atomically(policy, BROKEN)
                p = wait_for(watcher, lambda p: p["reloads_failed"] >= 1, "the broken file refused")
                err = p["last_error"] or ""
                if "policy.yaml:" not in err or "polcy_options" not in err:
                    raise AssertionError(f"refusal does not name file:line and the field: {err}")
                if p["generation"] != gen or "rewrite" not in p["text"]:
                    raise AssertionError(f"the previous policy stopped serving: {p}")
                refused_checked = True
                continue
            a, b = ("cas", "fgd") if k % 2 else ("fgd", "cas")
            write_atomically(policy, GOOD.format(a=a, b=b, i=k))
            p = wait_for(watcher, lambda p, g=gen: p["generation"] > g and f"rewrite {k}" in p[
                "text"], f"rewrite {k} active")
            gen = p["generation"]
        for t in threads:
            t.join()
        if errors:
            raise AssertionError(f"{len(errors)} submissions failed, e.g. {errors[:3]}")
        client = testlib.Client(server.port)
        pods = testlib.list_pods(client)
        uids = {p["uid"] for p in pods}
        lost = [u for u in acked if u not in uids]
        if len(acked) != args.pods or lost or len(pods) != args.pods:
            raise AssertionError(f"{args.pods} submitted, {len(acked)} acknowledged, {len(pods)} "
                                 f"listed, {len(lost)} lost")
        # Every pod got a decision: bound, or tried and explained.
        undecided = 0
        pending = [p for p in pods if p["phase"] == "Pending"]
        for p in pending:
            status, e = client.request("GET", f"/v1/pods/{p['uid']}/explain")
            if status != 200 or not e.get("last_attempt"):
                undecided += 1
        if undecided:
            raise AssertionError(f"{undecided} pending pods were never tried")
        final = wait_for(watcher, lambda p: True, "status")
        if final["reloads_failed"] < 1 or final["generation"] - gen0 < args.rewrites - 1:
            raise AssertionError(f"reloads: {final}")
        if not refused_checked:
            raise AssertionError("the broken file was never tried")
        print(f"{args.pods} pods submitted during {args.rewrites} policy rewrites "
              f"({final['generation'] - gen0} reloads applied, {final['reloads_failed']} refused): "
              f"{len(pods) - len(pending)} bound, {len(pending)} pending and explained, 0 lost")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
