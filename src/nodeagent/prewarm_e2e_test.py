#!/usr/bin/env python3
"""The node-local cache prewarms what the server binds, with real processes (issue 40, "Done
when"; docs/cache.md, "The node-local cache").

On loopback: `seedance server` (internal backend, one node n1, an administrator's token), Debian's
nginx serving a temporary directory as the object store (generated config: `daemon off`, every
path in the temporary directory, a free port, an access log with each request's Range and status),
a slow-drip store (a thread here that sends one byte a second), and `seedance node-agent cache`
for n1. Every process is started here, waited for by polling (never a fixed sleep) and stopped by
its PID.

1. A pod bound with a 1 GiB prewarm list (8 files of 128 MiB, random bytes, sha256 known). The
   agent runs with a bandwidth cap and is SIGKILLed mid-download: objects/ holds only verified
   files (no partial file is ever served). Restarted without the cap, it resumes (nginx's access
   log shows Range requests answered 206) and finishes; `node-agent prewarm-wait` returns 0, and
   at that moment every file of the list is in objects/ and its sha256 is right. Stopped by
   SIGTERM and started again, the agent finds every object local (8 hits: pinned again) and
   does not rewrite the pod's status.
2. A 404, a checksum mismatch, a slow-drip store and a malformed list, each on its own pod:
   prewarm-wait exits 1 printing a clear error, the pod carries prewarm.seedance.io/status Failed
   and the error, and nothing of those objects is in objects/.
3. The big pod deleted: its objects are unpinned (the agent says so). The status is durable (a
   restarted server still has it) and was published as a PodUpdated event. /metrics has the
   counters; SIGTERM stops the agent (exit 0) with its summary.
After every step the cache directory's `du -sb` and `du -s` (blocks) are within the budget.

Skipped (exit 77) without /usr/sbin/nginx, or fails then when SEEDANCE_REQUIRE_DATA=1.

usage: prewarm_e2e_test.py SEEDANCE_BINARY"""

import hashlib
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import testlib  # noqa: E402

NGINX = "/usr/sbin/nginx"
ADMIN = "prewarm-e2e-admin-token-0123456789"
MIB = 1 << 20
BIG_FILES = 8
BIG_FILE_BYTES = 128 * MIB           # 8 x 128 MiB = the 1 GB list
BUDGET = BIG_FILES * BIG_FILE_BYTES + 64 * MIB
CAP = "150M"                         # the first agent's bandwidth cap, so that it is killed mid-way
DEADLINE_S = 300


def log(msg):
    print(f"[{time.monotonic() - T0:7.2f}s] {msg}", flush=True)


T0 = time.monotonic()


def wait_port(port, proc, what):
    def up():
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    testlib.wait(f"{what} on port {port}", up, timeout=60, step=0.02)


def tail(path, n=2000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError as e:
        return str(e)


def stop(proc, sig=signal.SIGTERM, timeout=60):
    if proc.poll() is None:
        os.kill(proc.pid, sig)
    return proc.wait(timeout=timeout)


class Nginx:
    """nginx -c GENERATED.conf, every path under `root`'s parent."""

    def __init__(self, tmp, root):
        # A port free when picked may be taken before nginx binds it (tests run side by side):
        # a start that exits before listening is tried again on another port.
        for attempt in range(3):
            try:
                return self._start(tmp, root)
            except AssertionError:
                if attempt == 2:
                    raise AssertionError("nginx did not start: " + tail(
                        os.path.join(tmp, "nginx-error.log")))

    def _start(self, tmp, root):
        self.port = testlib.free_port()
        self.access_log = os.path.join(tmp, "nginx-access.log")
        conf = os.path.join(tmp, "nginx.conf")
        temp = os.path.join(tmp, "nginx-temp")
        os.makedirs(temp, exist_ok=True)
        with open(conf, "w") as f:
            f.write(f"""daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 256; }}
http {{
  log_format ranges '$request_uri $status range=$http_range sent=$body_bytes_sent';
  access_log {self.access_log} ranges;
  client_body_temp_path {temp}/body;
  proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi;
  scgi_temp_path {temp}/scgi;
  server {{
    listen 127.0.0.1:{self.port};
    root {root};
    location / {{ }}
  }}
}}
""")
        self.proc = subprocess.Popen([NGINX, "-c", conf, "-p", tmp, "-e",
                                      os.path.join(tmp, "nginx-error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "nginx")

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def access(self):
        with open(self.access_log) as f:
            return f.read().splitlines()


class DripHandler(http.server.BaseHTTPRequestHandler):
    """A store that promises 1,000 bytes and sends one a second."""
    stop = threading.Event()

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b"x")
                self.wfile.flush()
                if DripHandler.stop.wait(1.0):
                    return
        except OSError:
            return

    def log_message(self, *args):
        pass


class Agent:
    def __init__(self, binary, tmp, server_port, token, cache_dir, extra=()):
        for attempt in range(3):  # as Nginx: the metrics port may be taken meanwhile
            try:
                return self._start(binary, tmp, server_port, token, cache_dir, extra)
            except AssertionError:
                if attempt == 2 or "cannot listen" not in self.text():
                    raise AssertionError("the agent did not start: " + self.text()[-2000:])

    def _start(self, binary, tmp, server_port, token, cache_dir, extra):
        self.log_path = os.path.join(tmp, f"agent-{time.monotonic_ns()}.log")
        self.metrics_port = testlib.free_port()
        cmd = [binary, "node-agent", "cache", "--server", f"http://127.0.0.1:{server_port}",
               "--token-file", token, "--node", "n1", "--cache-dir", cache_dir,
               "--cache-size", str(BUDGET), "--max-concurrent", "4", "--watch-timeout", "2s",
               "--stall-timeout", "2s", "--min-rate", "64", "--parallel-pods", "4",
               "--metrics-port", str(self.metrics_port)] + list(extra)
        self.out = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT)
        wait_port(self.metrics_port, self.proc, "the agent's /metrics")

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                    timeout=30) as r:
            return r.read().decode()


class Checks:
    """The cache directory's invariants; files already verified are not hashed again."""

    def __init__(self, cache_dir):
        self.dir = cache_dir
        self.verified = {}  # name -> (size, mtime_ns)

    def objects(self):
        d = os.path.join(self.dir, "objects")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def only_verified_objects(self, step):
        for name in self.objects():
            path = os.path.join(self.dir, "objects", name)
            st = os.stat(path)
            if self.verified.get(name) == (st.st_size, st.st_mtime_ns):
                continue
            h = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(8 * MIB):
                    h.update(chunk)
            if h.hexdigest() != name:
                raise AssertionError(f"{step}: objects/{name} holds data whose sha256 is "
                                     f"{h.hexdigest()}: a file that is not verified is served")
            self.verified[name] = (st.st_size, st.st_mtime_ns)

    def budget(self, step):
        apparent = int(subprocess.run(["du", "-sb", self.dir], check=True, capture_output=True,
                                      text=True).stdout.split()[0])
        blocks = int(subprocess.run(["du", "-s", "-B1", self.dir], check=True,
                                    capture_output=True, text=True).stdout.split()[0])
        if apparent > BUDGET or blocks > BUDGET:
            raise AssertionError(f"{step}: the cache holds {apparent} bytes ({blocks} in blocks), "
                                 f"over its budget of {BUDGET}")
        log(f"{step}: du -sb {apparent}, du -s {blocks} <= budget {BUDGET}; "
            f"{len(self.objects())} verified object(s)")

    def step(self, name):
        self.only_verified_objects(name)
        self.budget(name)


def make_big_files(store):
    """8 x 128 MiB of random bytes (each 16 MiB piece tagged, so no two pieces are alike)."""
    block = bytearray(os.urandom(16 * MIB))
    objs = []
    for i in range(BIG_FILES):
        h = hashlib.sha256()
        name = f"weights/shard-{i}.bin"
        os.makedirs(os.path.join(store, "weights"), exist_ok=True)
        with open(os.path.join(store, name), "wb") as f:
            for piece in range(BIG_FILE_BYTES // len(block)):
                block[:16] = f"{i:08d}{piece:08d}".encode()
                f.write(block)
                h.update(block)
        objs.append({"name": name, "sha256": h.hexdigest(), "size": BIG_FILE_BYTES})
    return objs


def submit(admin, name, prewarm):
    status, pod = admin.request("POST", "/v1/pods", {
        "name": name, "cpu_milli": 100, "annotations": {"seedance.io/prewarm": prewarm}})
    assert status == 201, (status, pod)
    assert pod["phase"] == "Bound" and pod["node"] == "n1", pod
    return pod["uid"]


def prewarm_wait(binary, port, token, uid, timeout="120s"):
    return subprocess.run([binary, "node-agent", "prewarm-wait", "--server",
                           f"http://127.0.0.1:{port}", "--token-file", token, "--pod", uid,
                           "--timeout", timeout], capture_output=True, text=True, timeout=300)


def big_case(binary, tmp, server, token, nginx, cache_dir, checks, store):
    objs = make_big_files(store)
    log(f"store: {BIG_FILES} x {BIG_FILE_BYTES} bytes written")
    admin = testlib.Client(server.port, token=ADMIN)
    prewarm = json.dumps([{"url": nginx.url(o["name"]), "sha256": o["sha256"], "size": o["size"]}
                          for o in objs])
    agent = Agent(binary, tmp, server.port, token, cache_dir, ["--max-bandwidth", CAP])
    uid = submit(admin, "big", prewarm)
    partial = os.path.join(cache_dir, "partial")

    def partial_bytes():
        have = 0
        for n in os.listdir(partial) if os.path.isdir(partial) else []:
            try:
                have += os.path.getsize(os.path.join(partial, n))
            except FileNotFoundError:  # renamed into objects/ meanwhile
                pass
        return have

    def mid_download():
        if agent.proc.poll() is not None:
            raise AssertionError(f"the agent exited: {agent.text()}")
        return partial_bytes() >= 96 * MIB
    testlib.wait("a partial download of 96 MiB", mid_download, timeout=DEADLINE_S, step=0.02)
    os.kill(agent.proc.pid, signal.SIGKILL)
    agent.proc.wait()
    log(f"agent SIGKILLed mid-download; partial/ has {sorted(os.listdir(partial))}")
    checks.step("after SIGKILL")
    status, pod = admin.request("GET", f"/v1/pods/{uid}")
    assert "prewarm.seedance.io/status" not in pod["annotations"], pod["annotations"]

    agent = Agent(binary, tmp, server.port, token, cache_dir)
    t = time.monotonic()
    r = prewarm_wait(binary, server.port, token, uid)
    waited = time.monotonic() - t
    # The moment prewarm-wait returns, before anything else runs: every file local and verified.
    missing = [o["name"] for o in objs if o["sha256"] not in checks.objects()]
    checks.step("prewarm-wait returned")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr, agent.text())
    assert not missing, f"prewarm-wait returned 0 with {missing} not local"
    log(f"prewarm-wait: exit 0 after {waited:.2f} s: {r.stdout.strip()}")
    ranges = [line for line in nginx.access() if " 206 range=bytes=" in line]
    assert ranges, "no Range request answered 206 after the restart:\n" + "\n".join(nginx.access())
    log(f"resumed with {len(ranges)} Range request(s), e.g. {ranges[0]}")
    status, pod = admin.request("GET", f"/v1/pods/{uid}")
    a = pod["annotations"]
    assert a["prewarm.seedance.io/status"] == "Ready", a
    assert a["prewarm.seedance.io/objects"] == str(BIG_FILES), a
    assert float(a["prewarm.seedance.io/lead-time-s"]) >= 0, a

    # A restart finds the pod Ready: every object a hit, pinned again, the status not rewritten.
    assert stop(agent.proc) == 0, agent.text()
    agent = Agent(binary, tmp, server.port, token, cache_dir)
    testlib.wait("the restarted agent to prewarm the pod again",
                 lambda: f"pod {uid}: Ready" in agent.text(), timeout=60)
    status, again = admin.request("GET", f"/v1/pods/{uid}")
    assert again["revision"] == pod["revision"], (again, pod)
    assert "seedance_node_cache_hits_total 8" in agent.metrics(), agent.metrics()
    checks.step("agent restarted")
    return agent, uid


def failure_cases(binary, server, token, nginx, drip_port, store, checks):
    admin = testlib.Client(server.port, token=ADMIN)
    good = b"the right bytes\n"
    with open(os.path.join(store, "small.bin"), "wb") as f:
        f.write(good)
    wrong_sha = hashlib.sha256(b"other bytes").hexdigest()
    missing_sha = hashlib.sha256(b"never stored").hexdigest()
    drip_sha = hashlib.sha256(b"x" * 1000).hexdigest()
    cases = {
        "not-found": ([{"url": nginx.url("no/such/object"), "sha256": missing_sha}],
                      ["NotFound", "404", "/no/such/object"]),
        "bad-checksum": ([{"url": nginx.url("small.bin"), "sha256": wrong_sha,
                           "size": len(good)}], ["DataLoss", wrong_sha]),
        "slow-drip": ([{"url": f"http://127.0.0.1:{drip_port}/drip", "sha256": drip_sha,
                        "size": 1000}], ["DeadlineExceeded", "/drip"]),
        "bad-list": ("[{\"url\": \"ftp://x/y\"}]", ["seedance.io/prewarm", "$[0]"]),
    }
    uids = {}
    for name, (objs, _) in cases.items():
        uids[name] = submit(admin, name, objs if isinstance(objs, str) else json.dumps(objs))
    results = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(
        n, prewarm_wait(binary, server.port, token, uids[n], "60s"))) for n in cases]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for name, (_, want) in cases.items():
        r = results[name]
        assert r.returncode == 1, (name, r.returncode, r.stdout, r.stderr)
        status, pod = admin.request("GET", f"/v1/pods/{uids[name]}")
        a = pod["annotations"]
        assert a.get("prewarm.seedance.io/status") == "Failed", (name, a)
        err = a.get("prewarm.seedance.io/error", "")
        for w in want:
            assert w in err, f"{name}: the error {err!r} does not name {w!r}"
            assert w in r.stderr, f"{name}: prewarm-wait printed {r.stderr!r}, not {w!r}"
        log(f"{name}: exit 1, {err}")
    for sha in (wrong_sha, missing_sha, drip_sha):
        assert sha not in checks.objects(), f"objects/{sha} exists after a failed fetch"
    checks.step("failures")
    return uids


def main():
    binary = os.path.abspath(sys.argv[1])
    if not os.path.exists(NGINX):
        msg = f"{NGINX} not installed (Debian package nginx)"
        if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1":
            sys.exit(f"FAIL: {msg}")
        print(f"SKIP: {msg}")
        return 77
    tmp = tempfile.mkdtemp(prefix="seedance-prewarm-")
    store, cache_dir = os.path.join(tmp, "store"), os.path.join(tmp, "cache")
    os.makedirs(store)
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write(ADMIN + "\n")
    procs, drip, agent, server = [], None, None, None
    try:
        server = testlib.Server(binary, os.path.join(tmp, "state"),
                                ["--token-file", token]).start()
        admin = testlib.Client(server.port, token=ADMIN)
        status, body = admin.request("PUT", "/v1/nodes/n1",
                                     {"cpu_milli": 64000, "memory_mib": 262144})
        assert status == 201, (status, body)
        nginx = Nginx(tmp, store)
        procs.append(nginx.proc)
        drip = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DripHandler)
        drip.daemon_threads = True
        threading.Thread(target=drip.serve_forever, daemon=True).start()
        checks = Checks(cache_dir)
        log(f"server, nginx and the slow-drip store up (nginx on port {nginx.port})")

        agent, big_uid = big_case(binary, tmp, server, token, nginx, cache_dir, checks, store)
        failure_cases(binary, server, token, nginx, drip.server_address[1], store, checks)

        # The big pod ends: its objects are unpinned (they stay cached, evictable).
        assert admin.request("DELETE", f"/v1/pods/{big_uid}")[0] == 200
        testlib.wait("the agent to unpin the deleted pod",
                     lambda: f"pod {big_uid}: deleted; its objects are unpinned" in agent.text(),
                     timeout=60)
        checks.step("pod deleted")
        metrics = agent.metrics()
        for want in ("seedance_node_cache_hits_total 8", "seedance_node_cache_misses_total 3",
                     "seedance_node_cache_fetched_bytes_total",
                     "seedance_prewarm_lead_time_seconds_count 0",
                     'seedance_prewarm_pods_total{result="failed"} 4'):
            assert want in metrics, f"/metrics lacks {want}:\n{metrics}"
        if os.path.exists("/usr/bin/promtool"):  # Debian's prometheus: the format's own linter
            lint = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=metrics,
                                  capture_output=True, text=True, timeout=60)
            assert lint.returncode == 0 and not lint.stdout.strip(), (lint.stdout, lint.stderr)
        rc = stop(agent.proc)
        assert rc == 0, (rc, agent.text())
        assert "stopped: 1 pod(s) ready, 4 failed; 8 hit(s), 3 miss(es)" in agent.text(), \
            agent.text()
        log("agent stopped by SIGTERM: " + agent.text().strip().splitlines()[-1])

        # The status is durable and was published as a PodUpdated event.
        uid = submit(admin, "after", "[]")  # a revision after the others
        status, events = admin.request("GET", "/v1/watch?since=0&format=json&timeout=0s")
        updated = [e for e in events["events"] if e["type"] == "PodUpdated"
                   and e["object"]["annotations"].get("prewarm.seedance.io/status")]
        assert len(updated) >= 5, [e["type"] for e in events["events"]]
        server.stop()
        server = testlib.Server(binary, os.path.join(tmp, "state"),
                                ["--token-file", token]).start()
        admin = testlib.Client(server.port, token=ADMIN)
        status, pods = admin.request("GET", "/v1/pods")
        kept = {p["name"]: p["annotations"].get("prewarm.seedance.io/status")
                for p in pods["items"]}
        assert kept["not-found"] == "Failed" and kept["slow-drip"] == "Failed", kept
        assert uid in [p["uid"] for p in pods["items"]]
        log(f"after a server restart the statuses are kept: {kept}")
        checks.step("end")
        print(f"PASS in {time.monotonic() - T0:.1f} s")
        return 0
    finally:
        DripHandler.stop.set()
        if drip is not None:
            drip.shutdown()
        if agent is not None and agent.proc.poll() is None:
            stop(agent.proc, signal.SIGKILL)
        for p in procs:
            if p.poll() is None:
                stop(p)
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
