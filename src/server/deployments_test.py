#!/usr/bin/env python3
"""The live container autoscaler (issue 17): `seedance server --deployments FILE` with a real
Prometheus (Debian's, started here on loopback) scraping the server and a synthetic load
exporter. The load crosses the HPA threshold; the test measures the time from the crossing to the
server's decision (it must be at most one period plus one scrape interval, plus the query's own
round trip), checks that the deployment's pods follow the decision, that Prometheus sees the
server's seedance_deployment_replicas, that a scale-down follows when the load falls, and that
a Prometheus that is gone costs decisions (counted) but no pods.

The synthetic exporter plays an application's /metrics from the Prometheus exposition format
(text 0.0.4): one gauge, synthetic_requests_per_second{deployment="web"}.

usage: deployments_test.py SEEDANCE_BINARY [--prometheus /usr/bin/prometheus]"""

import argparse
import http.server
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
from testlib import wait

PERIOD_S = 2.0
SCRAPE_S = 1.0
TARGET = 10.0  # requests/s per replica
# The decision's own costs beyond period + scrape: one Prometheus query and the scrape's
# duration (both milliseconds on loopback), with room for a loaded CI machine.
SLACK_S = 0.5


class Load:
    """The synthetic application: its request rate, as a Prometheus gauge."""

    def __init__(self):
        self.value = 5.0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with outer.lock:
                    v = outer.value
                body = ("# TYPE synthetic_requests_per_second gauge\n"
                        f'synthetic_requests_per_second{{deployment="web"}} {v}\n').encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def set(self, v):
        with self.lock:
            self.value = v
        return time.time()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            reply = json.load(r)
    except OSError:
        return []
    return reply.get("data", {}).get("result", []) if reply.get("status") == "success" else []


def deployment(client):
    status, body = client.request("GET", "/v1/deployments")
    assert status == 200, (status, body)
    (d,) = body["deployments"]
    return d


def web_pods(client):
    status, body = client.request("GET", "/v1/pods")
    assert status == 200, (status, body)
    return sorted(p["name"] for p in body["items"]
                  if p.get("annotations", {}).get("seedance.io/deployment") == "web")


def start_prometheus(binary, work, prom_port, targets):
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write(f"global:\n  scrape_interval: {int(SCRAPE_S)}s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n")
        for job, port in targets:
            f.write(f"  - job_name: {job}\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{port}']\n")
    return subprocess.Popen([binary, f"--config.file={work}/prometheus.yml",
                             f"--storage.tsdb.path={work}/data",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write_deployments(path, prom_port):
    with open(path, "w") as f:
        json.dump({
            "prometheus": f"http://127.0.0.1:{prom_port}",
            "deployments": [{
                "name": "web", "replicas": 1, "period_s": PERIOD_S,
                "pod": {"cpu_milli": 1000, "memory_mib": 1024, "num_gpu": 1, "gpu_milli": 250},
                "autoscale": {
                    "mode": "hpa", "min_replicas": 1, "max_replicas": 8,
                    # No down-stabilisation, so the scale-down shows within a period here.
                    "scale_down_stabilization_s": 0,
                    "metrics": [{"name": "rps", "target_per_replica": TARGET,
                                 "query": 'synthetic_requests_per_second{deployment="web"}'}]}}]},
            f)


def scale_up_latency(client, load, prom_port):
    """Crosses the threshold (1 -> 4 replicas) and returns the seconds until the decision."""
    before = deployment(client)["decisions"]
    crossed = load.set(35.0)  # ceil(35 / 10) = 4 replicas
    d = wait("the scale-up decision",
             lambda: (lambda d: d if d["replicas"] == 4 else None)(deployment(client)))
    latency = d["last_decision"]["time"] - crossed
    assert d["decisions"] > before, d
    assert d["last_decision"]["reason"] == "scale-up", d
    wait("4 pods", lambda: web_pods(client) == ["web-0", "web-1", "web-2", "web-3"])
    wait("Prometheus scraping the server's replicas gauge",
         lambda: any(float(r["value"][1]) == 4 for r in
                     query(prom_port, 'seedance_deployment_replicas{deployment="web"}')),
         timeout=30)
    return latency


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--prometheus", default="/usr/bin/prometheus")
    args = ap.parse_args()
    missing = testlib.prometheus_missing(args.prometheus)
    if missing is not None:
        return missing
    work = tempfile.mkdtemp(prefix="seedance-deploy-")
    load = Load()
    prom_port = testlib.free_port()
    write_deployments(os.path.join(work, "deployments.json"), prom_port)
    server = testlib.Server(args.binary, os.path.join(work, "state"),
                            ["--deployments", os.path.join(work, "deployments.json")]).start()
    prom = None
    try:
        client = testlib.Client(server.port)
        for i in range(2):
            client.request("PUT", f"/v1/nodes/n{i}", {"cpu_milli": 32000, "memory_mib": 131072,
                                                      "num_gpus": 4, "gpu_model": "A100"})
        # Before Prometheus runs: queries fail, periods are counted as errors, the pod exists.
        d = wait("an error counted", lambda: (lambda d: d if d["errors"] > 0 else None)(
            deployment(client)))
        assert "prometheus" in d["last_error"], d
        wait("web-0 while Prometheus is down", lambda: web_pods(client) == ["web-0"])
        prom = start_prometheus(args.prometheus, work, prom_port,
                                [("seedance", server.port), ("load", load.port)])
        wait("Prometheus reading the load", lambda: query(
            prom_port, 'synthetic_requests_per_second{deployment="web"}'), timeout=60)
        wait("a decision at 5 req/s", lambda: (lambda d: d["last_decision"] and d["replicas"] == 1
                                              and d["decisions"] > 0)(deployment(client)))
        latencies = [scale_up_latency(client, load, prom_port)]
        # Back down: ceil(5 / (10)) = 1 (no stabilisation window in this file).
        load.set(5.0)
        wait("the scale-down to 1", lambda: deployment(client)["replicas"] == 1)
        wait("1 pod", lambda: web_pods(client) == ["web-0"])
        latencies.append(scale_up_latency(client, load, prom_port))
        bound = PERIOD_S + SCRAPE_S + SLACK_S
        print(f"threshold crossing to decision: {', '.join(f'{x:.2f}' for x in latencies)} s "
              f"(bound: period {PERIOD_S} s + scrape {SCRAPE_S} s + {SLACK_S} s)")
        for x in latencies:
            assert 0 <= x <= bound, f"decision {x:.2f} s after the crossing; bound {bound} s"
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics").read().decode()
        assert 'seedance_autoscaler_scalings_total{deployment="web",direction="up",' \
               'namespace="default"} 2' in metrics, metrics[-2000:]
    finally:
        if prom:
            prom.terminate()
            prom.wait(timeout=30)
        load.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
