#!/usr/bin/python3
"""The spec is the server (docs/openapi.yaml, issue 35): real third-party validators against a
live `seedance server`, and nothing reported.

1. Redocly lint (npm @redocly/cli, tools/spec/redocly.yaml: the recommended rules but the
   license's): no error and no warning.
2. Prism (npm @stoplight/prism-cli) as a validating proxy with --errors in front of the server:
   - a scripted session of valid calls through a proxy that checks requests and replies, so
     the spec must accept every request the server accepts (gang_min, annotations, YAML policy,
     the extender's bodies) and describe every reply, field by field where the schema is closed;
   - the server's error replies (400, 401, 403, 404, 409, 413, 429) through a second proxy that
     forwards any request (--validate-request=false) and checks only the reply.
   Every operation of the spec must be called with a 2xx reply (the test fails on one it did not
   reach). A violation is a Prism error reply or a "Violation" line in Prism's log.
3. `promtool check metrics` (Debian's prometheus) on the /metrics the session produced: no
   message.

The npm tools come from tools/install_spec_tools.sh (`make test` runs it). Without them, or
without promtool, the test is skipped (exit 77), or fails when SEEDANCE_REQUIRE_DATA=1 (CI).

usage: spec_test.py SEEDANCE_BINARY"""

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import testlib

SRC = os.environ.get("SEEDANCE_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SPEC = os.path.join(SRC, "docs", "openapi.yaml")
BIN = os.path.join(SRC, "tools", "spec", "node_modules", ".bin")
PROMTOOL = "/usr/bin/promtool"
ADMIN = "spec-test-admin-token-0123456789"
TENANT = "spec-test-tenant-token-0123456789"
NODE = {"cpu_milli": 64000, "memory_mib": 262144, "num_gpus": 4, "gpu_model": "A100",
        "cost_usd_per_hour": 12.5, "power_w": 2000, "labels": {"zone": "a"},
        "taints": [{"key": "gpu", "value": "yes", "effect": "PreferNoSchedule"}]}
DESCRIPTOR_NODE = {
    "labels": {"zone": "b"},
    "numa_nodes": [{"id": 0, "cpu_milli": 32000, "memory_mib": 131072, "distances": [10, 21]},
                   {"id": 1, "cpu_milli": 32000, "memory_mib": 131072, "distances": [21, 10]}],
    "devices": [{"id": f"gpu{i}", "type": "gpu", "model": "H100", "capacity": {"memory_mib": 81920},
                 "binding": {"numa_node": i // 2, "pci_address": f"0000:{0x3b + i:02x}:00.0"},
                 "nvlink_group": "nv0"} for i in range(4)],
    "gpu_models": {"H100": {"memory_mib": 81920, "price_usd_per_hour": 4.0, "power_w": 700}}}
QUEUE_POLICY = """profiles:
  - name: default
    policy: bestfit
queues:
  - name: research
    namespaces: [ml]
    guaranteed: {gpus: 2}
    limit: {gpus: 4}
  - name: prod
    namespaces: [default]
    guaranteed: {gpus: 2}
"""
K8S_POD = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "kp", "namespace": "ml",
                        "uid": "11111111-2222-4333-8444-555555555555",
                        "annotations": {"seedance.io/gpu-milli": "500"}},
           "spec": {"containers": [{"name": "c", "resources": {
               "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}}]},
           "status": {"phase": "Pending"}}
K8S_NODE = {"kind": "Node", "metadata": {"name": "kn-1", "labels": {"seedance.io/gpu-model": "A100"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "4"}}}


def missing_tool():
    for path, what in ((os.path.join(BIN, "redocly"), "npm @redocly/cli"),
                       (os.path.join(BIN, "prism"), "npm @stoplight/prism-cli"),
                       (PROMTOOL, "Debian package prometheus")):
        if not os.access(path, os.X_OK):
            return f"{path} not installed ({what}; run tools/install_spec_tools.sh)"
    return None


def redocly_lint():
    env = dict(os.environ, REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_UPDATE_NOTICE="true",
               NO_COLOR="1")
    p = subprocess.run([os.path.join(BIN, "redocly"), "lint", "--config",
                        os.path.join(SRC, "tools", "spec", "redocly.yaml"), "--format=summary",
                        SPEC], capture_output=True, text=True, env=env, timeout=300)
    out = p.stdout + p.stderr
    findings = [ln.strip() for ln in out.splitlines() if re.match(r"\s*(error|warning) ", ln)]
    if p.returncode != 0 or findings:
        raise AssertionError(f"redocly lint: exit {p.returncode}, {findings or out[-2000:]}")
    print("redocly lint: valid, no error, no warning", flush=True)


class Prism:
    """`prism proxy` on a free loopback port, its log in a file, stopped by its PID."""

    def __init__(self, upstream_port, validate_request):
        self.port = testlib.free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="seedance-prism-", suffix=".log")
        cmd = [os.path.join(BIN, "prism"), "proxy", SPEC, f"http://127.0.0.1:{upstream_port}",
               "--port", str(self.port), "--host", "127.0.0.1", "--errors",
               f"--validate-request={'true' if validate_request else 'false'}"]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, NO_COLOR="1", FORCE_COLOR="0"))
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prism exited with {self.proc.returncode}: {self.text()}")
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            try:
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            finally:
                c.close()
            time.sleep(0.1)
        raise RuntimeError(f"prism did not answer in 120 s: {self.text()}")

    def text(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def violations(self):
        return [ln.strip() for ln in self.text().splitlines() if "Violation" in ln]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Session:
    """Calls through one Prism proxy; records each operation's statuses and Prism's errors."""

    def __init__(self, port, spec_ops):
        self.port = port
        self.ops = spec_ops  # (method, path regex) -> operationId
        self.seen = {}       # operationId -> set of statuses
        self.problems = []

    def op_of(self, method, path):
        bare = path.split("?", 1)[0]
        for (m, rx), op in self.ops.items():
            if m == method and rx.fullmatch(bare):
                return op
        return None

    def call(self, method, path, body=None, token=ADMIN, want=None, ctype=None, timeout=60):
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = body
        if isinstance(body, (dict, list)):
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        elif body is not None:
            headers["Content-Type"] = ctype or "application/json"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            status, rtype = resp.status, resp.getheader("Content-Type", "")
        finally:
            conn.close()
        payload = raw.decode(errors="replace")
        if "json" in rtype:
            payload = json.loads(raw)
        if isinstance(payload, dict) and "stoplight.io/prism/errors" in str(payload.get("type")):
            self.problems.append(f"{method} {path}: Prism {payload.get('title')}: "
                                 f"{json.dumps(payload.get('validation'))[:1500]}")
        elif want is not None and status != want:
            self.problems.append(f"{method} {path}: {status}, want {want}: {raw[:300]!r}")
        op = self.op_of(method, path)
        if op:
            self.seen.setdefault(op, set()).add(status)
        return status, payload


def spec_operations():
    """(method, path regex) -> operationId, read from the spec without a YAML library: the paths
    are the two-space keys under `paths:`, the methods the four-space keys below them."""
    ops, path, method = {}, None, None
    in_paths = False
    with open(SPEC) as f:
        for line in f:
            if line.startswith("paths:"):
                in_paths = True
                continue
            if in_paths and re.match(r"^\S", line):
                break
            m = re.match(r"^  (/\S*):\s*$", line)
            if m:
                path = m.group(1)
                continue
            m = re.match(r"^    (get|put|post|patch|delete):\s*$", line)
            if m:
                method = m.group(1).upper()
                continue
            m = re.match(r"^      operationId:\s*(\S+)", line)
            if m and path and method:
                rx = re.compile(re.sub(r"\\\{[a-z]+\\\}", "[^/]+", re.escape(path)))
                ops[(method, rx)] = m.group(1)
    return ops


def valid_session(s):
    """Every operation with a valid request; returns what the later steps need."""
    s.call("GET", "/healthz", token=None, want=200)
    s.call("GET", "/readyz", token=None, want=200)
    s.call("PUT", "/v1/nodes/gpu-1", NODE, want=201)
    s.call("PUT", "/v1/nodes/gpu-1", dict(NODE, cordoned=False), want=200)
    s.call("PUT", "/v1/nodes/numa-1", DESCRIPTOR_NODE, want=201)
    s.call("GET", "/v1/nodes", want=200)
    s.call("GET", "/v1/nodes/gpu-1", want=200)
    s.call("POST", "/v1/nodes/numa-1/cordon", want=200)
    s.call("POST", "/v1/nodes/numa-1/uncordon", want=200)
    s.call("PUT", "/v1/policy", QUEUE_POLICY, ctype="application/yaml", want=200)
    s.call("GET", "/v1/policy", want=200)
    _, pod = s.call("POST", "/v1/pods", {
        "name": "train-0", "namespace": "ml", "cpu_milli": 4000, "memory_mib": 8192,
        "num_gpu": 2, "gpu_milli": 1000, "gpu_spec": "A100|H100", "priority": 10,
        "labels": {"app": "train"}, "annotations": {"team": "vision"},
        "gang": "g1", "gang_min": 1}, token=TENANT, want=201)
    s.call("POST", "/v1/pods", {"name": "infer-0", "cpu_milli": 500, "num_gpu": 1,
                                "gpu_milli": 250}, want=201)
    s.call("POST", "/v1/pods", {"name": "huge", "cpu_milli": 1000, "num_gpu": 8}, want=201)
    _, page = s.call("GET", "/v1/pods?limit=1", want=200)
    s.call("GET", f"/v1/pods?limit=1&continue={page.get('continue')}", want=200)
    s.call("GET", "/v1/pods?phase=Bound&namespace=ml&node=gpu-1", want=200)
    s.call("GET", f"/v1/pods/{pod['uid']}", want=200)
    s.call("PATCH", f"/v1/pods/{pod['uid']}/annotations",
           {"prewarm.seedance.io/status": "Ready", "prewarm.seedance.io/error": None}, want=200)
    pending = [p for p in s.call("GET", "/v1/pods?phase=Pending")[1]["items"]]
    s.call("GET", f"/v1/pods/{(pending or [pod])[0]['uid']}/explain", want=200)
    s.call("GET", "/v1/queues", want=200)
    s.call("GET", "/v1/queues", token=TENANT, want=200)
    s.call("GET", "/v1/watch?since=0&format=json&timeout=0s", want=200)
    s.call("GET", "/v1/watch?since=0&timeout=1s", want=200)
    s.call("GET", "/v1/deployments", want=200)
    s.call("GET", "/v1/node-groups", want=200)
    s.call("GET", "/v1/leader", want=200)
    s.call("GET", "/v1/cluster", want=200)
    # The extender, as kube-scheduler calls it: nodes as objects, then by name.
    args = {"Pod": K8S_POD, "Nodes": {"items": [K8S_NODE]}}
    s.call("POST", "/k8s/extender/v1/filter", args, want=200)
    s.call("POST", "/k8s/extender/v1/filter", {"Pod": K8S_POD, "NodeNames": ["kn-1"]}, want=200)
    s.call("POST", "/k8s/extender/v1/prioritize", args, want=200)
    # No --kube-api: bind answers 200 with the reason in Error, as the protocol wants.
    s.call("POST", "/k8s/extender/v1/bind", {"PodName": "kp", "PodNamespace": "ml",
                                               "PodUID": K8S_POD["metadata"]["uid"],
                                               "Node": "kn-1"}, want=200)
    s.call("POST", "/k8s/extender/v1/preempt",
           {"Pod": K8S_POD, "NodeNameToMetaVictims": {"gpu-1": {"Pods": [{"UID": pod["uid"]}],
                                                                "NumPDBViolations": 0}}},
           want=200)
    experiment_session(s)
    s.call("DELETE", f"/v1/pods/{pod['uid']}", token=TENANT, want=200)
    s.call("DELETE", "/v1/nodes/gpu-1?drain=true", want=200)
    s.call("GET", "/metrics", token=None, want=200)
    return pod


EXPERIMENT = {"control": "fp16",
              "variants": [{"name": "fp16", "weight": 0.5},
                           {"name": "int8-ffn", "weight": 0.5, "precision_plan": "int8.json"}],
              "metrics": [{"name": "latency_ms", "direction": "decrease"}], "mde": 0.05}


def experiment_events(n):
    return {"events": [{"session": f"s{i}", "variant": "fp16" if i % 2 else "int8-ffn",
                        "metrics": {"latency_ms": 10.0 + i % 7}} for i in range(n)]}


def experiment_session(s):
    """Every experiment operation with a valid request (docs/experiments.md)."""
    one = "/v1/experiments/probe?namespace=ml"
    s.call("PUT", one, EXPERIMENT, token=TENANT, want=201)
    s.call("PUT", one, EXPERIMENT, token=TENANT, want=200)
    s.call("GET", "/v1/experiments", want=200)
    s.call("GET", one, token=TENANT, want=200)
    s.call("GET", "/v1/experiments/probe/assign?namespace=ml&session=s1", want=200)
    s.call("POST", "/v1/experiments/probe/events?namespace=ml", experiment_events(15),
           token=TENANT, want=202)
    s.call("GET", "/v1/experiments/probe/report?namespace=ml", want=200)
    s.call("POST", "/v1/experiments/probe/stop?namespace=ml&reason=done", want=200)
    s.call("GET", "/v1/experiments/probe/report?namespace=ml", want=200)
    s.call("DELETE", one, token=TENANT, want=200)


def experiment_errors(s):
    """The experiments' own refusals: 400, 403, 404, 409 and 429 (--experiment-event-rate 10:
    a burst of 20 events, so 25 in one request is refused whatever the timing)."""
    one = "/v1/experiments/flood"
    s.call("PUT", one, EXPERIMENT, want=201)
    s.call("PUT", one, dict(EXPERIMENT, control="bf16"), want=400)
    s.call("PUT", "/v1/experiments/x?namespace=other", EXPERIMENT, token=TENANT, want=403)
    s.call("GET", "/v1/experiments/nope", want=404)
    s.call("POST", "/v1/experiments/nope/events", experiment_events(1), want=404)
    bad = {"events": [{"session": "s", "variant": "bf16", "metrics": {"latency_ms": 1}}]}
    s.call("POST", one + "/events", bad, want=400)
    s.call("GET", one + "/assign", want=400)
    s.call("POST", one + "/events", experiment_events(15), want=202)
    s.call("POST", one + "/events", experiment_events(25), want=429)
    s.call("PUT", one, dict(EXPERIMENT, mde=0.1), want=409)  # it has events
    s.call("POST", one + "/stop", want=200)
    s.call("POST", one + "/events", experiment_events(1), want=409)


def error_session(s, uid, server_port):
    """The server's own error replies (Prism forwards the requests unchecked)."""
    s.call("POST", "/v1/pods", {"name": "bad", "num_gpu": 1, "gpu_milli": 1500}, want=400)
    s.call("POST", "/v1/pods", "{not json", want=400)
    s.call("GET", "/v1/pods?limit=0", want=400)
    s.call("PUT", "/v1/nodes/gpu-2", {"cpu_milli": -1, "memory_mib": 1}, want=400)
    s.call("PUT", "/v1/policy", "profiles: [", ctype="application/yaml", want=400)
    s.call("GET", "/v1/watch?since=999999999&format=json", want=400)
    s.call("POST", "/k8s/extender/v1/filter", {"Pod": 5}, want=400)
    s.call("POST", "/v1/pods", {"name": "anon", "cpu_milli": 1}, token=None, want=401)
    s.call("POST", "/v1/pods", {"name": "wrong", "cpu_milli": 1}, token="wrong-token-0123456789",
           want=401)
    s.call("GET", "/v1/nodes", token=None, want=401)
    s.call("PUT", "/v1/nodes/gpu-2", NODE, token=TENANT, want=403)
    s.call("GET", "/v1/nodes", token=TENANT, want=403)
    s.call("POST", "/k8s/extender/v1/filter", {"Pod": K8S_POD, "NodeNames": []}, token=TENANT,
           want=403)
    s.call("GET", "/v1/nodes/nope", want=404)
    s.call("GET", "/v1/pods/0123abcd", want=404)
    s.call("PATCH", "/v1/pods/0123abcd/annotations", {"prewarm.seedance.io/status": "Ready"},
           want=404)
    s.call("PATCH", f"/v1/pods/{uid}/annotations", {"team": "forged"}, want=400)
    s.call("PATCH", f"/v1/pods/{uid}/annotations", {"prewarm.seedance.io/status": "Ready"},
           token=TENANT, want=403)
    s.call("DELETE", "/v1/pods/0123abcd", want=404)
    s.call("POST", "/v1/nodes/nope/cordon", want=404)
    s.call("POST", "/v1/pods", {"name": "infer-0", "cpu_milli": 500}, want=409)
    # A pod of a namespace in no queue (so nothing queued ahead holds it) keeps its node.
    _, pin = s.call("POST", "/v1/pods", {"name": "pin", "namespace": "misc", "cpu_milli": 100},
                    want=201)
    if pin.get("phase") != "Bound":
        s.problems.append(f"pod pin: {pin}, want it bound")
    s.call("DELETE", f"/v1/nodes/{pin.get('node')}", want=409)
    s.call("POST", "/v1/pods", {"name": "x" * 10, "labels": {"k": "v" * 5000}}, want=413)
    experiment_errors(s)
    # 429: a second open watch over --max-watches-per-client 1 (both come from Prism's address).
    opened = threading.Event()

    def hold():
        c = http.client.HTTPConnection("127.0.0.1", server_port, timeout=30)
        c.request("GET", "/v1/watch?timeout=3s", headers={"Authorization": f"Bearer {ADMIN}"})
        resp = c.getresponse()
        opened.set()
        resp.read()
        c.close()

    t = threading.Thread(target=hold)
    t.start()
    opened.wait(20)
    s.call("GET", "/v1/watch?format=json&timeout=1s", want=429)
    t.join()


def promtool_check(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read()
    c.close()
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       timeout=60)
    said = (p.stdout + p.stderr).decode(errors="replace").strip()
    if p.returncode != 0 or said:
        raise AssertionError(f"promtool check metrics: exit {p.returncode}: {said[:3000]}")
    # Every request the session made is counted under its route and real status.
    counted = set(re.findall(rb'seedance_http_requests_total\{([^}]*)\}', text))
    routes = {re.search(rb'route="([^"]*)"', c).group(1).decode() for c in counted}
    bad = [c.decode() for c in counted if re.search(rb'code="(-|0")', c)]
    want = {"get_policy", "watch", "cordon_node", "uncordon_node", "extender_filter"}
    if bad or not want <= routes:
        raise AssertionError(f"seedance_http_requests_total: labels without a status {bad}, "
                             f"routes missing {sorted(want - routes)}")
    print(f"promtool check metrics: nothing to report on {text.count(b'# TYPE')} metric "
          f"families", flush=True)


def main():
    binary = sys.argv[1]
    why = missing_tool()
    if why:
        if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1":
            sys.exit(f"FAIL: {why}")
        print(f"SKIP: {why}")
        return 77
    redocly_lint()
    ops = spec_operations()
    work = tempfile.mkdtemp(prefix="seedance-spec-")
    with open(os.path.join(work, "token"), "w") as f:
        f.write(ADMIN + "\n")
    with open(os.path.join(work, "tenants"), "w") as f:
        f.write(f"{TENANT},t1,ml\n")
    server = testlib.Server(binary, os.path.join(work, "st"), [
        "--token-file", os.path.join(work, "token"),
        "--tenant-tokens", os.path.join(work, "tenants"),
        "--max-body", "4096", "--max-watches-per-client", "1",
        "--experiment-event-rate", "10"]).start()
    proxies = []
    try:
        strict = Prism(server.port, validate_request=True)
        proxies.append(strict)
        lax = Prism(server.port, validate_request=False)
        proxies.append(lax)
        good = Session(strict.port, ops)
        pod = valid_session(good)
        bad = Session(lax.port, ops)
        error_session(bad, pod["uid"], server.port)
        problems = good.problems + bad.problems
        problems += [f"prism log: {v}" for p in proxies for v in p.violations()]
        reached = {op for op, st in good.seen.items() if any(200 <= x < 300 for x in st)}
        unreached = sorted(set(ops.values()) - reached)
        if unreached:
            problems.append(f"operations of the spec never called with a 2xx reply: {unreached}")
        if problems:
            raise AssertionError("\n".join(problems))
        statuses = sorted({x for st in bad.seen.values() for x in st})
        print(f"prism: {len(reached)} operations called through a validating proxy, error "
              f"statuses {statuses} through a reply-checking one; no violation", flush=True)
        promtool_check(server.port)
    finally:
        for p in proxies:
            p.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
