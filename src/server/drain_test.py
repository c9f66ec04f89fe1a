#!/usr/bin/env python3
"""Drain keeps pods (docs/api.md, DELETE /v1/nodes/{name}?drain=true): a node is drained while
two clients keep submitting; every pod ever acknowledged is still there afterwards, none on the
drained node, and the evicted ones are placed on the other nodes (or wait as Pending when they do
not fit). A restart finds the same pods.

usage: drain_test.py SEEDANCE_BINARY"""

import os
import shutil
import sys
import tempfile
import threading

import testlib

NODE = {"cpu_milli": 16000, "memory_mib": 65536, "num_gpus": 4, "gpu_model": "A100"}


def main():
    binary = sys.argv[1]
    state = tempfile.mkdtemp(prefix="seedance-drain-")
    server = testlib.Server(binary, state).start()
    try:
        admin = testlib.Client(server.port)
        for n in ("a", "b", "c"):
            assert admin.request("PUT", f"/v1/nodes/{n}", NODE)[0] == 201
        made = []
        lock = threading.Lock()
        start_drain = threading.Event()

        def submit(k):
            c = testlib.Client(server.port)
            for i in range(150):
                status, pod = c.request("POST", "/v1/pods", {
                    "name": f"p{k}-{i}", "cpu_milli": 100})
                assert status == 201, (status, pod)
                with lock:
                    made.append(pod["uid"])
                if i == 50:
                    start_drain.set()

        threads = [threading.Thread(target=submit, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        start_drain.wait(60)
        on_a = [p["uid"] for p in testlib.list_pods(admin) if p.get("node") == "a"]
        status, reply = admin.request("DELETE", "/v1/nodes/a?drain=true")
        assert status == 200, (status, reply)
        for t in threads:
            t.join()
        evicted = set(reply["evicted_pods"])
        if not evicted or not set(on_a) <= evicted:
            raise AssertionError(f"drain evicted {len(evicted)} pods; {len(on_a)} were on a")

        def check(client, what):
            pods = {p["uid"]: p for p in testlib.list_pods(client)}
            lost = [u for u in made if u not in pods]
            if lost:
                raise AssertionError(f"{what}: {len(lost)} acknowledged pods lost, e.g. {lost[:3]}")
            on_drained = [u for u, p in pods.items() if p.get("node") == "a"]
            if on_drained:
                raise AssertionError(f"{what}: {len(on_drained)} pods on the drained node")
            # 300 pods of 0.1 core fit on the 32 cores of b and c: every evicted pod is placed.
            pending = [u for u in evicted if pods[u]["phase"] == "Pending"]
            return None if pending else pods

        testlib.wait("evicted pods placed again", lambda: check(admin, "after the drain"))
        server.stop()
        server.start()
        testlib.wait("the pods after a restart", lambda: check(testlib.Client(server.port),
                                                               "after a restart"))
        print(f"{len(made)} pods submitted while node a was drained: {len(evicted)} evicted, all "
              f"placed on b and c again, none lost (also after a restart)")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
