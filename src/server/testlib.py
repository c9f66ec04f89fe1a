"""Helpers for the server's end-to-end tests: start `seedance server` on loopback, wait for it by
polling (never a fixed sleep), talk to it over keep-alive HTTP, stop it by its PID.

Every test here runs the real server binary against a real SQLite state directory."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 120


def free_port():
    """A loopback port free now (a daemon the test starts binds it next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_missing(binary):
    """None when Debian's prometheus is at `binary`; else the exit code the test returns: 77
    (skip), or a failure when SEEDANCE_REQUIRE_DATA=1."""
    if os.path.exists(binary):
        return None
    msg = f"{binary} not installed (Debian package prometheus)"
    if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1":
        sys.exit(f"FAIL: {msg}")
    print(f"SKIP: {msg}")
    return 77


def data_dir():
    d = os.environ.get("SEEDANCE_DATA_DIR")
    if d:
        return d
    src = os.environ.get("SEEDANCE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    return os.path.join(src, "..", "shared", "data")


def trace_file(name):
    """Path of a file of the Alibaba GPU trace, or exits 0 with a skip message (77 unless data is
    required, when it is a failure)."""
    path = os.path.join(data_dir(), "alibaba-gpu-v2023", "csv", name)
    if os.path.exists(path):
        return path
    msg = f"data set missing: {path} (set SEEDANCE_DATA_DIR)"
    if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1":
        sys.exit(f"FAIL: {msg}")
    print(f"SKIP: {msg}")
    sys.exit(77)


def read_pod_shapes(path, limit=None):
    """Pod requests from an openb pod CSV, in file order."""
    import csv
    pods = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            pods.append({
                "cpu_milli": int(row["cpu_milli"]),
                "memory_mib": int(row["memory_mib"]),
                "num_gpu": int(row["num_gpu"]),
                "gpu_milli": int(row["gpu_milli"]) if int(row["num_gpu"]) > 0 else 0,
                "gpu_spec": row.get("gpu_spec", "") or "",
            })
            if limit and len(pods) >= limit:
                break
    return pods


class Server:
    """One `seedance server` process."""

    def __init__(self, binary, state_dir, extra=(), env=None):
        self.binary = binary
        self.state_dir = state_dir
        self.extra = list(extra)
        self.env = env
        self.proc = None
        self.port = None
        self.log = None

    def start(self):
        fd, ready = tempfile.mkstemp(prefix="seedance-ready-")
        os.close(fd)
        os.unlink(ready)
        self.log = tempfile.TemporaryFile()
        # An etcd URL is a replica's --store (src/ha/failover_test.py); anything else a --state.
        where = (["--store", self.state_dir] if self.state_dir.startswith("etcd://")
                 else ["--state", self.state_dir])
        cmd = [self.binary, "server", "--listen", "127.0.0.1:0"] + where + [
               "--ready-file", ready, "--quiet"] + self.extra
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=self.env)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.output()}")
            if os.path.exists(ready):
                with open(ready) as f:
                    url = f.read().strip()
                if url:
                    self.port = int(url.rsplit(":", 1)[1])
                    os.unlink(ready)
                    break
            time.sleep(0.01)
        else:
            raise RuntimeError("server did not write its ready file in time")
        while time.monotonic() < deadline:
            status, _ = Client(self.port).request("GET", "/readyz")
            if status == 200:
                return self
            time.sleep(0.01)
        raise RuntimeError("server never became ready")

    def output(self):
        if not self.log:
            return ""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def kill(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError("server did not stop within 30 s of SIGTERM")
            if self.proc.returncode != 0:  # e.g. a sanitizer report at exit
                raise AssertionError(f"server exited with {self.proc.returncode} on SIGTERM: "
                                     f"{self.output()}")
        return self.proc.returncode


class Client:
    """A keep-alive HTTP/1.1 client (one per thread)."""

    def __init__(self, port, token=None, timeout=60):
        self.port = port
        self.token = token
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, body=None, token=None):
        headers = {"Content-Type": "application/json"}
        tok = token if token is not None else self.token
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                           timeout=self.timeout)
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                try:
                    payload = json.loads(raw) if raw else None
                except ValueError:
                    payload = raw.decode(errors="replace")
                return resp.status, payload
            except (ConnectionError, http.client.HTTPException, OSError):
                self.close()
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def wait(what, check, timeout=60, step=0.05):
    """Polls check() until it returns something true (returned), or fails after timeout s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


def list_pods(client):
    """Every pod, through the paginated list."""
    pods, cont = [], None
    while True:
        path = "/v1/pods?limit=5000" + (f"&continue={cont}" if cont else "")
        status, page = client.request("GET", path)
        if status != 200:
            raise AssertionError(f"GET {path}: {status} {page}")
        pods.extend(page["items"])
        cont = page.get("continue")
        if not cont:
            return pods


def check_no_gpu_overcommitted(pods, nodes):
    """No GPU holds more than 1000 milli, counted from the pods and from the nodes' own view, and
    the two agree. Returns the number of GPUs in use."""
    used = {}
    for p in pods:
        if p["phase"] == "Pending":
            continue
        for g in p["gpus"]:
            key = (p["node"], g["index"])
            used[key] = used.get(key, 0) + g["milli"]
    for key, milli in used.items():
        if milli > 1000:
            raise AssertionError(f"GPU {key} holds {milli} milli")
    for n in nodes:
        for g in n["gpus"]:
            want = used.get((n["name"], g["index"]), 0)
            if g["allocated_milli"] != want:
                raise AssertionError(
                    f"node {n['name']} GPU {g['index']}: the node says {g['allocated_milli']} "
                    f"milli allocated, its pods add up to {want}")
    return len(used)
