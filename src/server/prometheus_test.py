#!/usr/bin/env python3
"""The Grafana dashboard against a real Prometheus (issue 12): starts Debian's prometheus on
loopback scraping a running `seedance server` every second, puts load on the server, and polls
until every panel query of the dashboard
(deploy/kubernetes/components/grafana-dashboard/seedance-scheduler.json) returns data.

usage: prometheus_test.py SEEDANCE_BINARY DASHBOARD_JSON [--prometheus /usr/bin/prometheus]"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import testlib


def query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        reply = json.load(r)
    if reply.get("status") != "success":
        raise AssertionError(f"{expr}: {reply}")
    return reply["data"]["result"]


def load(port, stop):
    """Nodes, pods, a cordon, deletions and a policy reload: something for every panel."""
    c = testlib.Client(port)
    for i in range(8):
        c.request("PUT", f"/v1/nodes/n{i}", {"cpu_milli": 96000, "memory_mib": 786432,
                                              "num_gpus": 8, "gpu_model": "A100"})
    c.request("POST", "/v1/nodes/n7/cordon")
    status, policy = c.request("GET", "/v1/policy")
    text = policy.get("text", "") if isinstance(policy, dict) else ""
    if text:
        c.request("PUT", "/v1/policy", text)
    c.request("PUT", "/v1/policy", "profiles: [ {broken")  # a refused reload
    i = 0
    live = []
    while not stop.is_set():
        status, pod = c.request("POST", "/v1/pods", {"name": f"p{i}", "cpu_milli": 2000,
                                                     "num_gpu": 1, "gpu_milli": 250 + (i % 4) * 250})
        if status == 201:
            live.append(pod["uid"])
        if len(live) > 40:
            c.request("DELETE", f"/v1/pods/{live.pop(0)}")
        i += 1
        time.sleep(0.005)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("dashboard")
    ap.add_argument("--prometheus", default="/usr/bin/prometheus")
    args = ap.parse_args()
    missing = testlib.prometheus_missing(args.prometheus)
    if missing is not None:
        return missing
    with open(args.dashboard) as f:
        panels = json.load(f)["panels"]
    exprs = [(p["title"], t["expr"]) for p in panels for t in p["targets"]]
    work = tempfile.mkdtemp(prefix="seedance-prom-")
    server = testlib.Server(args.binary, os.path.join(work, "state")).start()
    prom_port = testlib.free_port()
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: seedance\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{server.port}']\n")
    prom = subprocess.Popen([args.prometheus, f"--config.file={work}/prometheus.yml",
                             f"--storage.tsdb.path={work}/data",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()
    loader = threading.Thread(target=load, args=(server.port, stop))
    loader.start()
    try:
        deadline = time.monotonic() + 120
        empty = list(exprs)
        while empty and time.monotonic() < deadline:
            if prom.poll() is not None:
                raise AssertionError(f"prometheus exited with {prom.returncode}")
            still = []
            for title, expr in empty:
                try:
                    result = query(prom_port, expr)
                except OSError:
                    result = []
                if not result:
                    still.append((title, expr))
            empty = still
            if empty:
                time.sleep(0.5)
        if empty:
            raise AssertionError("panels without data after 120 s: " +
                                 "; ".join(f"{t}: {e}" for t, e in empty))
        print(f"all {len(exprs)} panel queries of {os.path.basename(args.dashboard)} return data "
              f"from a real Prometheus scraping the server")
    finally:
        stop.set()
        loader.join()
        prom.terminate()
        prom.wait(timeout=30)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
