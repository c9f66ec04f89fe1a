#!/usr/bin/python3
"""The hostile-input suite: runs `seedance` against a catalogue of bad inputs (catalogue.py).

Each case runs in its own temporary directory, with a timeout and a memory cap, and is judged on
its exit status, its message, its outputs and what it left behind. Outcomes that fail a case:

  crash                      a signal, a sanitizer report, an invariant abort or an exception
  hang                       the timeout (or the case's own wall-clock bound) ran out
  destroyed-special-file     a FIFO, device, symlink or input file was replaced or changed
  exit-0-with-bad-or-missing-output
                             exit 0 where the case must fail, or exit 0 with an output that is
                             missing or not valid JSON/CSV/HTML/text as asked
  wrong-exit                 another exit status than the expected one
  message-does-not-name-input
                             a failure whose message lacks the path, flag or file:line
  unclear-message            an empty, huge (> 4 KB a line) or unreadable (40-digit) message
  partial-output-left        a failed run left a new file or a .NAME.seedance-* temp file
  raw-control-chars          an ANSI/control sequence from the input reached the terminal raw
  raw-injection              an HTML report holds a hostile string unescaped

Usage: hostile.py [--jobs 2] [--filter REGEX] [--failures FILE] [--list] [--counts] SEEDANCE
Standard library only (run as /usr/bin/python3). docs/reliability.md has the rules.
"""

import argparse
import concurrent.futures
import csv
import hashlib
import http.server
import io
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import catalogue  # noqa: E402

DEFAULT_TIMEOUT_S = 20
# A sanitized binary runs 2-3x slower and, on the 2-core CI machine where ctest runs beside this
# suite, may wait seconds for a core; its wall-clock bounds (a case's timeout and max_s) are
# stretched by this factor. A FIFO case bounded at 16 s (10 s of waiting for data, then start-up
# and exit) took 16.1 s there; at 1.5x, one bounded at 15 s took 22.6 s beside the failover test
# (load average 10 on 2 cores). The product's own waits (the 10 s FIFO timeout) are not stretched.
SANITIZED_TIME_FACTOR = 2.0
RELEASE_AS_LIMIT = 4 << 30        # RLIMIT_AS for non-sanitized builds
FSIZE_LIMIT = 256 << 20           # no output file may grow past this
ASAN_RSS_MB = 2048
MAX_LINE = 4096                   # a message line longer than this is unclear
NOBODY = 65534

SANITIZER_MARKS = (
    b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:",
    b"UndefinedBehaviorSanitizer", b"invariant violated", b"terminate called",
    b"Assertion `", b"stack-overflow", b"hard rss limit exhausted",
    b"ThreadSanitizer", b"MemorySanitizer", b"Traceback (most recent",
)
SANITIZER_EXIT = {86, 87, 23}


# ----------------------------------------------------------------------------------------------
# Servers started by the driver on 127.0.0.1 for network inputs.

def _prom_matrix(query, start, end, step, node, value):
    """A Prometheus range/instant answer with one GPU series on `node` for utilisation queries."""
    if "DCGM_FI_DEV_GPU_UTIL" not in query and "DCGM_FI_DEV_FB" not in query:
        return []
    metric = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-0",
              "modelName": "NVIDIA L4", "Hostname": node}
    if start is None:
        return [{"metric": metric, "value": [time.time(), value]}]
    n = int(round((end - start) / step)) + 1 if step > 0 else 1
    n = max(1, min(n, 10000))
    return [{"metric": metric, "values": [[start + i * step, value] for i in range(n)]}]


class _PromHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _raw(self, data):
        try:
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except OSError:
            return False

    def _reply(self, code, body, ctype="application/json", extra=b""):
        if isinstance(body, str):
            body = body.encode()
        head = ("HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n" %
                (code, ctype, len(body))).encode() + extra + b"\r\n"
        self._raw(head + body)

    def do_GET(self):  # noqa: N802
        srv = self.server
        mode = srv.mode
        stop = srv.stop
        from urllib.parse import urlparse, parse_qs
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if mode.startswith("valid") or mode in ("ansi_name", "huge_value", "invalid_utf8",
                                                "negative_value"):
            node = {"ansi_name": "\x1b[2J\x1b[31mevil-node\x07",
                    "invalid_utf8": "node"}.get(mode, "node-a")
            value = {"huge_value": "1e308", "negative_value": "-50"}.get(mode, "12")
            try:
                start = float(q["start"]) if "start" in q else None
                end = float(q.get("end", 0))
                step = float(q.get("step", 1))
            except ValueError:
                start, end, step = None, 0, 1
            kind = "matrix" if start is not None else "vector"
            doc = {"status": "success", "data": {
                "resultType": kind,
                "result": _prom_matrix(q.get("query", ""), start, end, step, node, value)}}
            body = json.dumps(doc).encode()
            if mode == "invalid_utf8":
                body = body.replace(b'"node"', b'"n\xff\xfeode"')
            self._reply(200, body)
        elif mode == "drip":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100000\r\n\r\n")
            while not stop.is_set():
                if not self._raw(b" "):
                    break
                time.sleep(0.3)
        elif mode == "drip_headers":
            for ch in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 100:
                if stop.is_set() or not self._raw(bytes([ch])):
                    break
                time.sleep(0.3)
        elif mode == "huge_length":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 999999999999999\r\n\r\n{\"status\": \"success\"")
            stop.wait(30)
        elif mode == "huge_length_stream":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 99999999999999\r\n\r\n[")
            chunk = b"0," * 32768
            while not stop.is_set() and self._raw(chunk):
                pass
        elif mode == "chunked_endless":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n")
            chunk = b"[0," * 21845
            frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
            while not stop.is_set() and self._raw(frame):
                pass
        elif mode == "huge_chunk_size":
            self._raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"ffffffffffffffff\r\n{\"status\":")
            stop.wait(30)
        elif mode == "status5":
            self._reply(200, '{"status": 5}')
        elif mode == "status_error":
            self._reply(400, '{"status": "error", "errorType": "bad_data", '
                             '"error": "parse error at char 1"}')
        elif mode == "data_null":
            self._reply(200, '{"status": "success", "data": null}')
        elif mode == "result_string":
            self._reply(200, '{"status": "success", "data": {"resultType": "matrix", '
                             '"result": "oops"}}')
        elif mode == "wrong_types":
            self._reply(200, '{"status": "success", "data": {"resultType": "matrix", '
                             '"result": [{"metric": 5, "values": [[1, 2, 3], "x", null]}]}}')
        elif mode == "bad_points":
            self._reply(200, '{"status": "success", "data": {"resultType": "matrix", "result": '
                             '[{"metric": {"Hostname": "n"}, "values": [["a", "b"]]}], '
                             '"value": ["x"]}}')
        elif mode == "array_top":
            self._reply(200, "[1, 2, 3]")
        elif mode == "http500":
            self._reply(500, "internal error " + "x" * 100)
        elif mode == "slurm_refused":
            # slurmrestd 22.05.8's answer to a token it turns down, and to any request while
            # slurmctld is down (tests/slurm/README.md, "Authentication failures").
            self._reply(500, '{"meta": {}, "errors": [{"error": "Unspecified error", '
                             '"errno": -1}], "nodes": []}')
        elif mode == "slurm_401":
            self._reply(401, "Authentication failure")
        elif mode == "http500_huge":
            self._reply(500, "E" * (3 << 20), ctype="text/plain")
        elif mode == "not_json":
            self._reply(200, "<html><body>login required</body></html>", ctype="text/html")
        elif mode == "deep_json":
            self._reply(200, "[" * 200000 + "]" * 200000)
        elif mode == "deep_object":
            self._reply(200, '{"a":' * 100000 + "1" + "}" * 100000)
        elif mode == "empty_body":
            self._reply(200, "")
        elif mode == "redirect":
            self._raw(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\n"
                      b"Content-Length: 0\r\n\r\n")
        elif mode == "redirect_loop":
            self._raw(b"HTTP/1.1 302 Found\r\nLocation: " + self.path.encode() +
                      b"\r\nContent-Length: 0\r\n\r\n")
        elif mode == "negative_length":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n{}")
        elif mode == "short_body":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"status\": \"succ")
        elif mode == "close":
            pass
        elif mode == "garbage":
            self._raw(b"\x00\xff\x1b[2JSSH-2.0-OpenSSH\r\n\r\n")
        elif mode == "huge_header":
            self._raw(b"HTTP/1.1 200 OK\r\nX-Junk: " + b"a" * (8 << 20) + b"\r\n\r\n")
        elif mode == "many_headers":
            self._raw(b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200000 + b"\r\n")
        else:
            self._reply(500, "unknown test mode " + mode)

    do_POST = do_GET  # noqa: N815
    do_PUT = do_GET  # noqa: N815
    do_PATCH = do_GET  # noqa: N815
    do_DELETE = do_GET  # noqa: N815


class PromServer:
    def __init__(self, mode):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PromHandler)
        self.httpd.daemon_threads = True
        self.httpd.mode = mode
        self.httpd.stop = threading.Event()
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class SeedanceServer:
    """The binary under test as `seedance server` on 127.0.0.1, for the client commands' cases.

    It runs as this user with its state in its own temporary directory (not the case's), two
    nodes preloaded and two pods submitted: p-fits (bound) and p-huge (pending: 8 GPUs, and no
    node has more than 4).
    mode 'auth' requires the bearer token catalogue.SERVER_TOKEN. close() stops it by its PID
    and reports a crash or a sanitizer report in its stderr.
    """

    def __init__(self, binary, mode):
        self.dir = tempfile.mkdtemp(prefix="hostile-server-")
        with open(os.path.join(self.dir, "nodes.csv"), "w") as f:
            f.write(catalogue.NODES_CSV)
        ready = os.path.join(self.dir, "ready")
        argv = [binary, "server", "-q", "--listen", "127.0.0.1:0", "--state",
                os.path.join(self.dir, "st"), "--nodes", os.path.join(self.dir, "nodes.csv"),
                "--ready-file", ready]
        headers = {"Content-Type": "application/json"}
        if mode == "auth":
            with open(os.path.join(self.dir, "token"), "w") as f:
                f.write(catalogue.SERVER_TOKEN + "\n")
            argv += ["--token-file", os.path.join(self.dir, "token")]
            headers["Authorization"] = "Bearer " + catalogue.SERVER_TOKEN
        self.err = open(os.path.join(self.dir, "stderr"), "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.err,
                                     stderr=self.err, start_new_session=True)
        deadline = time.monotonic() + 60
        url = ""
        while not url:  # readiness by polling the ready file, never a fixed sleep
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("seedance server did not start: " + self._stderr())
            if os.path.exists(ready):
                with open(ready) as f:
                    url = f.read().strip()
            else:
                time.sleep(0.02)
        self.port = int(url.rsplit(":", 1)[1])
        import urllib.request
        self.uids = {}
        for pod in ({"name": "p-fits", "cpu_milli": 1000, "num_gpu": 1, "gpu_milli": 500},
                    {"name": "p-huge", "cpu_milli": 1000, "num_gpu": 8, "gpu_milli": 1000}):
            req = urllib.request.Request(url + "/v1/pods", data=json.dumps(pod).encode(),
                                         headers=headers, method="POST")
            reply = json.loads(urllib.request.urlopen(req, timeout=30).read())
            self.uids[pod["name"]] = reply["uid"]

    def _stderr(self):
        with open(os.path.join(self.dir, "stderr"), "rb") as f:
            return f.read().decode(errors="replace")[-2000:]

    def close(self):
        """Stops the server; returns a problem (a crash, a sanitizer report) or None."""
        problem = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                problem = "seedance server did not stop within 30 s of SIGTERM"
        self.err.close()
        err = self._stderr().encode()
        marks = [m.decode() for m in SANITIZER_MARKS if m in err]
        if problem is None and (self.proc.returncode != 0 or marks):
            problem = "seedance server exited %s%s: %s" % (
                self.proc.returncode, " with " + ", ".join(marks) if marks else "", err[-600:])
        shutil.rmtree(self.dir, ignore_errors=True)
        return problem


NTP_EPOCH = 2208988800


def _ntp(t):
    sec = int(t) + NTP_EPOCH
    frac = int((t - int(t)) * (1 << 32)) & 0xFFFFFFFF
    return ((sec & 0xFFFFFFFF) << 32) | frac


def _ntp_reply(req, mode):
    origin = req[40:48] if len(req) >= 48 else b"\0" * 8
    now = time.time()
    li, vn, md, stratum, refid = 0, 4, 4, 2, b"LOCL"
    rx, tx = now, now + 0.00001
    if mode == "tx_before_rx":
        rx, tx = now, now - 1.0
    elif mode == "zero_tx":
        tx = None
    elif mode == "zero_rx":
        rx = None
    elif mode == "kod":
        stratum, refid = 0, b"RATE"
    elif mode == "kod_ansi":
        stratum, refid = 0, b"\x1b[2J"
    elif mode == "version7":
        vn = 7
    elif mode == "mode3":
        md = 3
    elif mode == "stratum16":
        stratum = 16
    elif mode == "leap3":
        li = 3
    elif mode == "stale_origin":
        origin = b"\x01\x02\x03\x04\x05\x06\x07\x08"
    elif mode == "negative_delay":
        rx, tx = now - 30, now + 30
    elif mode == "far_future":
        rx, tx = now + 100 * 365 * 86400.0, now + 100 * 365 * 86400.0 + 0.00001
    head = struct.pack("!BBbbII4sQ", (li << 6) | (vn << 3) | md, stratum, 4, -20, 0, 0,
                       refid, _ntp(now - 10))
    rx_q = 0 if rx is None else _ntp(rx)
    tx_q = 0 if tx is None else _ntp(tx)
    pkt = head + origin + struct.pack("!QQ", rx_q, tx_q)
    if mode == "short":
        pkt = pkt[:47]
    elif mode == "long":
        pkt = pkt + b"\0" * 2000
    elif mode == "odd_length":
        pkt = pkt + b"\0\0\0"
    return pkt


class SntpServer:
    """Answers each request per `mode`; 'bad_then_good' sends an impossible reply first."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop.is_set():
            try:
                req, addr = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                if self.mode == "silent":
                    continue
                if self.mode == "bad_then_good":
                    self.sock.sendto(_ntp_reply(req, "tx_before_rx"), addr)
                    self.sock.sendto(_ntp_reply(req, "good"), addr)
                elif self.mode == "flood_then_good":
                    for m in ("zero_tx", "version7", "mode3", "stale_origin", "short"):
                        self.sock.sendto(_ntp_reply(req, m), addr)
                    self.sock.sendto(_ntp_reply(req, "good"), addr)
                else:
                    self.sock.sendto(_ntp_reply(req, self.mode), addr)
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.sock.close()


# ----------------------------------------------------------------------------------------------
# Output validation.

class Invalid(Exception):
    pass


class Skip(Exception):
    """The machine cannot set the case up (e.g. no permission to mount a tmpfs)."""


def _reject_constant(name):
    raise Invalid("non-standard JSON constant %s" % name)


def validate(data, fmt):
    """Raises Invalid when `data` (bytes) is not a valid document of `fmt`."""
    if fmt == "any":
        return
    if not data:
        raise Invalid("empty output")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Invalid("not valid UTF-8: %s" % e)
    if fmt == "json-object":  # an API reply: any JSON object, no report envelope
        try:
            doc = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, Invalid) as e:
            raise Invalid("not valid JSON: %s" % e)
        if not isinstance(doc, dict):
            raise Invalid("JSON output is not an object")
        return
    if fmt in ("json", "profile"):
        try:
            pairs = []
            doc = json.loads(text, parse_constant=_reject_constant,
                             object_pairs_hook=lambda p: (pairs.append(p), dict(p))[1])
        except (ValueError, Invalid) as e:
            raise Invalid("not valid JSON: %s" % e)
        if not isinstance(doc, dict):
            raise Invalid("JSON output is not an object")
        first = list(json.loads(text, object_pairs_hook=lambda p: p))  # top-level key order
        keys = [k for k, _ in first]
        if fmt == "json" and keys[:3] != ["schema_version", "seedance_version", "command_line"]:
            raise Invalid("JSON does not start with schema_version, seedance_version, "
                          "command_line (got %s)" % keys[:3])
        if fmt == "profile" and doc.get("version") != 1:
            raise Invalid("profile has no \"version\": 1")
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        if not rows or not rows[0]:
            raise Invalid("CSV has no header")
        bad = [i for i, r in enumerate(rows) if r and len(r) != len(rows[0])]
        if bad:
            raise Invalid("CSV row %d has %d fields, header %d" %
                          (bad[0] + 1, len(rows[bad[0]]), len(rows[0])))
    elif fmt == "html":
        low = text.lower()
        if not (low.lstrip().startswith("<!doctype html") or low.lstrip().startswith("<html")):
            raise Invalid("HTML does not start with <!DOCTYPE html> or <html>")
        if "</html>" not in low:
            raise Invalid("HTML is truncated (no </html>)")
    elif fmt in ("text", "yaml", "table"):
        if not text.strip():
            raise Invalid("blank output")
    else:
        raise Invalid("unknown format %s in the catalogue" % fmt)


# ----------------------------------------------------------------------------------------------
# Running one case.

PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.\-/:]+)\}")


class Result:
    def __init__(self, case, outcome, detail, rc, stderr, argv, elapsed):
        self.case = case
        self.outcome = outcome  # None = passed
        self.detail = detail
        self.rc = rc
        self.stderr = stderr
        self.argv = argv
        self.elapsed = elapsed


def _snapshot(path):
    st = os.lstat(path)
    info = {"mode": stat.S_IFMT(st.st_mode), "ino": st.st_ino, "rdev": st.st_rdev}
    if stat.S_ISLNK(st.st_mode):
        info["link"] = os.readlink(path)
    elif stat.S_ISREG(st.st_mode):
        try:
            with open(path, "rb") as f:
                info["sha"] = hashlib.sha256(f.read()).hexdigest()
        except PermissionError:  # an unreadable input (not root): its size and mtime then
            info["sha"] = "mtime %d" % st.st_mtime_ns
        info["size"] = st.st_size
    return info


def _walk(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = p
    return out


class FifoReader:
    """Reads a FIFO for the command. The driver also holds a write end, so the reader never sees
    a spurious end of file before the command opens the FIFO; finish() drops it and drains."""

    def __init__(self, path):
        self.rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.wfd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.set_blocking(self.rfd, True)
        self.data = bytearray()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        try:
            while len(self.data) <= FSIZE_LIMIT:
                chunk = os.read(self.rfd, 1 << 16)
                if not chunk:
                    return
                self.data += chunk
        finally:
            os.close(self.rfd)

    def finish(self):
        os.close(self.wfd)
        self.thread.join(5)
        return bytes(self.data)


class FifoFeeder:
    """Writes `data` into a FIFO once the command opens it for reading."""

    def __init__(self, path, data):
        self.path = path
        self.data = data
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        try:
            fd = os.open(self.path, os.O_WRONLY)  # blocks until a reader comes
        except OSError:
            return
        try:
            os.write(fd, self.data)
        except OSError:
            pass
        finally:
            os.close(fd)

    def finish(self):
        # Unblock the writer's open if the command never opened the FIFO.
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            self.thread.join(1)
            os.close(fd)
        except OSError:
            pass


class Runner:
    def __init__(self, binary, asan, base_tmp, is_root):
        self.binary = binary
        self.asan = asan
        self.time_factor = SANITIZED_TIME_FACTOR if asan else 1.0
        self.base_tmp = base_tmp
        self.is_root = is_root
        self._local = threading.local()  # per worker thread: the UIDs of its case's server

    def _env(self, case):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ASAN_", "UBSAN_", "LSAN_", "SEEDANCE_"))}
        env["LC_ALL"] = "C.UTF-8"
        env["TERM"] = "xterm"  # a terminal-capable TERM: colour must still not leak
        env["ASAN_OPTIONS"] = ("hard_rss_limit_mb=%d:detect_leaks=1:exitcode=86:"
                               "abort_on_error=0:allocator_may_return_null=0:"
                               "detect_stack_use_after_return=0" % ASAN_RSS_MB)
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:exitcode=87"
        env["LSAN_OPTIONS"] = "exitcode=23"
        env.update(case.env)
        return env

    def _limits(self, nobody):
        def fn():
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))
            if not self.asan:
                resource.setrlimit(resource.RLIMIT_AS, (RELEASE_AS_LIMIT, RELEASE_AS_LIMIT))
            if nobody:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
        return fn

    def run(self, case):
        work = tempfile.mkdtemp(prefix="case-", dir=self.base_tmp)
        d = os.path.join(work, "d")
        os.mkdir(d)
        try:
            return self._run(case, work, d)
        except Skip as e:
            return Result(case, "skipped", str(e), None, b"", case.argv, 0)
        except Exception as e:  # a bug in the driver or the catalogue: report, never hide
            return Result(case, "driver-error", "%s: %s" % (type(e).__name__, e), None, b"",
                          case.argv, 0)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _path(self, d, name):
        return os.path.join(d, name)

    def _subst(self, d, text, port, used):
        def one(m):
            key = m.group(1)
            if key == "T":
                return d
            if key == "port":
                return str(port)
            if key == "bin":
                return self.binary
            if key.startswith("uid:"):  # a pod of the case's seedance server
                return getattr(self._local, "uids", {}).get(key[4:], "no-such-pod")
            path = self._path(d, key)
            used.add(key)
            return path
        return PLACEHOLDER.sub(one, text)

    def _write_file(self, d, name, content):
        path = self._path(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8", "surrogateescape")
        with open(path, "wb") as f:
            f.write(content)
        return path

    def _run(self, case, work, d):
        server = None
        feeders, readers = [], {}
        port = 0
        if case.server:
            kind, mode = case.server
            if kind == "seedance":
                server = SeedanceServer(self.binary, mode)
                self._local.uids = server.uids
            else:
                server = PromServer(mode) if kind == "http" else SntpServer(mode)
            port = server.port
        result = None
        try:
            result = self._run_with(case, work, d, port, feeders, readers)
            return result
        finally:
            self._local.uids = {}
            problem = server.close() if server else None
            if problem and result is not None and result.outcome is None:
                result.outcome, result.detail = "crash", problem

    def _run_with(self, case, work, d, port, feeders, readers):
        mounts = []
        try:
            return self._run_mounted(case, work, d, port, feeders, readers, mounts)
        finally:
            for m in mounts:
                subprocess.run(["umount", "-l", m], capture_output=True)

    def _run_mounted(self, case, work, d, port, feeders, readers, mounts):
        used = set()
        argv = [self.binary] + [self._subst(d, a, port, used) for a in case.argv]
        msgs = [tuple(self._subst(d, a, port, set()) for a in (m if isinstance(m, tuple) else (m,)))
                for m in case.msg]
        # Files: the case's own, then fixtures it names, then special files.
        for name, content in case.files.items():
            self._write_file(d, name, content)
        for key in sorted(used):
            if key in catalogue.FIXTURES and not os.path.lexists(self._path(d, key)):
                self._write_file(d, key, catalogue.FIXTURES[key])
        # As root, every command runs as nobody: a buggy writer can then damage nothing outside
        # the case's directory (it could otherwise replace /dev/full or /dev/null).
        nobody = self.is_root
        for step in case.setup:
            what, name = step[0], step[1]
            p = self._path(d, name)
            if what in ("fifo", "fifo_reader", "fifo_held", "fifo_feed"):
                os.mkfifo(p)
                if what == "fifo_reader":
                    readers[name] = FifoReader(p)
                elif what == "fifo_held":
                    readers[name] = os.open(p, os.O_RDWR)  # a writer that never writes
                elif what == "fifo_feed":
                    feeders.append(FifoFeeder(p, catalogue.FIXTURES[step[2]].encode()))
            elif what == "fifo_reader_late":
                pass
            elif what == "chardev":  # /dev/null's numbers, made here so nothing real is at risk
                try:
                    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                except PermissionError as e:
                    raise Skip("cannot make a character device here (%s)" % e)
            elif what == "symlink":
                os.symlink(step[2], p)
            elif what == "hardlink":
                os.link(self._path(d, step[2]), p)
            elif what == "dir":
                os.makedirs(p, exist_ok=True)
            elif what == "full_fs":  # a 16 KiB tmpfs, filled: every write gets ENOSPC
                os.makedirs(p, exist_ok=True)
                r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", p],
                                   capture_output=True)
                if r.returncode != 0:
                    raise Skip("cannot mount a tmpfs here (%s)" %
                               r.stderr.decode(errors="replace").strip())
                mounts.append(p)
                for extra in step[2:]:
                    self._write_file(d, extra[0], extra[1])
                try:
                    with open(os.path.join(p, ".filler"), "wb") as f:
                        while True:
                            f.write(b"\0" * 4096)
                            f.flush()
                except OSError:
                    pass
            elif what == "socket":
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(p)
                readers[name] = s
            elif what == "chmod":
                os.chmod(p, step[2])
            elif what == "file":
                self._write_file(d, name, step[2])
            else:
                raise ValueError("unknown setup step %r" % (step,))
        if nobody:  # the case's files belong to nobody, with the modes the case gave them
            os.chmod(work, 0o755)
            os.lchown(work, NOBODY, NOBODY)
            os.lchown(d, NOBODY, NOBODY)
            for p in _walk(d).values():
                os.lchown(p, NOBODY, NOBODY)
        before = {rel: _snapshot(p) for rel, p in _walk(d).items()}

        stdin = subprocess.DEVNULL
        if case.stdin is not None:
            if isinstance(case.stdin, tuple):
                src = case.stdin[1]
                stdin = open(src if src.startswith("/") else self._path(d, src), "rb")
            else:
                sp = os.path.join(work, "stdin")
                with open(sp, "wb") as f:
                    f.write(case.stdin.encode("utf-8", "surrogateescape")
                            if isinstance(case.stdin, str) else case.stdin)
                stdin = open(sp, "rb")
        out_path = os.path.join(work, "stdout")
        err_path = os.path.join(work, "stderr")
        if case.stdout == "pipe":
            stdout = subprocess.PIPE
        elif case.stdout:
            if not stat.S_ISCHR(os.stat(case.stdout).st_mode):
                raise RuntimeError("%s is not a character device; refusing to run" % case.stdout)
            stdout = open(case.stdout, "wb")
        else:
            stdout = open(out_path, "wb")
        stderr = open(err_path, "wb")
        if nobody:  # so that /dev/stdout and /dev/stderr can be reopened by the command
            for f in (stdout, stderr):
                if hasattr(f, "fileno") and os.path.isfile(f.name):
                    os.fchown(f.fileno(), NOBODY, NOBODY)
        limit = (case.timeout or DEFAULT_TIMEOUT_S) * self.time_factor
        t0 = time.monotonic()
        hung = False
        try:
            proc = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=d,
                                    env=self._env(case), start_new_session=True,
                                    preexec_fn=self._limits(nobody))
            piped = b""
            try:
                if case.stdout == "pipe":
                    piped = proc.communicate(timeout=limit)[0] or b""
                    rc = proc.returncode
                else:
                    rc = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                hung = True
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate() if case.stdout == "pipe" else None
                rc = proc.wait()
            try:  # reap anything the command left in its process group
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        finally:
            for f in (stdin, stdout, stderr):
                if hasattr(f, "close") and not isinstance(f, int):
                    f.close()
        elapsed = time.monotonic() - t0
        reader_data = {}
        for name, r in readers.items():
            if isinstance(r, FifoReader):
                reader_data[name] = r.finish()
            elif isinstance(r, int):
                os.close(r)
            else:
                r.close()
        for f in feeders:
            f.finish()
        for rel, p in _walk(d).items():  # so that the judge (and rmtree) can read everything
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o755)
        with open(err_path, "rb") as f:
            err = f.read()
        out = b""
        if case.stdout == "pipe":
            out = piped
        elif not case.stdout:
            with open(out_path, "rb") as f:
                out = f.read()
        res = lambda outcome, detail: Result(case, outcome, detail, rc, err, argv, elapsed)  # noqa
        return self._judge(case, d, before, rc, hung, elapsed, limit, out, err, msgs,
                           reader_data, res)

    def _judge(self, case, d, before, rc, hung, elapsed, limit, out, err, msgs, reader_data, res):
        # 1. hang
        if hung:
            return res("hang", "no exit within %d s" % limit)
        max_s = case.max_s * self.time_factor if case.max_s else 0
        if max_s and elapsed > max_s:
            return res("hang", "took %.1f s, the case allows %.1f s" % (elapsed, max_s))
        # 2. crash
        if rc < 0:
            return res("crash", "killed by signal %s" % signal.Signals(-rc).name)
        marks = [m.decode() for m in SANITIZER_MARKS if m in err]
        if marks or rc in SANITIZER_EXIT:
            return res("crash", "exit %d, stderr has %s" % (rc, marks or "a sanitizer exit"))
        # 3. destroyed special files and inputs
        for dev in ("/dev/null", "/dev/full", "/dev/zero"):
            if not stat.S_ISCHR(os.lstat(dev).st_mode):
                return res("destroyed-special-file", "%s is no longer a character device" % dev)
        after = _walk(d)
        for rel, snap in before.items():
            p = os.path.join(d, rel)
            if rel in case.mutable:
                if not os.path.lexists(p):
                    return res("destroyed-special-file", "%s is gone" % rel)
                now = _snapshot(p)
                if now["mode"] != snap["mode"] or now.get("link") != snap.get("link"):
                    return res("destroyed-special-file",
                               "%s changed kind (%o -> %o)" % (rel, snap["mode"], now["mode"]))
                continue
            if not os.path.lexists(p):
                return res("destroyed-special-file", "%s was removed" % rel)
            now = _snapshot(p)
            if now != snap:
                what = ("replaced" if now["ino"] != snap["ino"] or now["mode"] != snap["mode"]
                        else "modified")
                return res("destroyed-special-file", "%s was %s" % (rel, what))
        temps = [rel for rel in after if re.search(r"(^|/)\.[^/]*\.seedance-", rel)
                 or re.search(r"\.tmp\.\d+$", rel)]
        # 4. exit status
        allowed = case.exit if isinstance(case.exit, tuple) else (case.exit,)
        if rc not in allowed:
            if rc == 0:
                return res("exit-0-with-bad-or-missing-output",
                           "exit 0, want %s" % "/".join(map(str, allowed)))
            return res("wrong-exit", "exit %d, want %s" % (rc, "/".join(map(str, allowed))))
        if temps:
            return res("partial-output-left", "temp file(s) left: %s" % ", ".join(temps))
        # 5. output
        if rc == 0 and case.no_new_files:
            expected = {t for t, _ in case.out}
            new = [rel for rel in after if rel not in before and rel not in expected]
            if new:
                return res("partial-output-left", "stray file(s) created: %s" % ", ".join(new))
        if rc == 0:
            for target, fmt in case.out:
                if target == "stdout":
                    data = out
                elif target.startswith("fifo:"):
                    data = reader_data.get(target[5:], b"")
                else:
                    p = os.path.join(d, target)
                    if not os.path.isfile(p):
                        return res("exit-0-with-bad-or-missing-output",
                                   "%s was not written" % target)
                    with open(p, "rb") as f:
                        data = f.read()
                try:
                    validate(data, fmt)
                except Invalid as e:
                    return res("exit-0-with-bad-or-missing-output", "%s: %s" % (target, e))
        else:
            new = [rel for rel in after if rel not in before]
            if new:
                return res("partial-output-left", "failed run left %s" % ", ".join(new))
            # 6. message
            text = err.decode("utf-8", "replace")
            if not text.strip():
                return res("unclear-message", "exit %d with nothing on stderr" % rc)
            long_lines = [len(l) for l in err.split(b"\n") if len(l) > MAX_LINE]
            if long_lines:
                return res("unclear-message", "a %d-byte message line" % long_lines[0])
            unquoted = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"", "", text)  # echoed input is fine
            if re.search(r"\d{40}", unquoted):
                return res("unclear-message", "a 40-digit number in the message")
            for alts in msgs:
                if not any(a in text for a in alts):
                    return res("message-does-not-name-input",
                               "stderr lacks %s" % " or ".join(map(repr, alts)))
        # 7. injection
        for where, needle in case.absent:
            if where == "stderr":
                hay = err
            elif where == "stdout":
                hay = out
            else:
                p = os.path.join(d, where)
                hay = open(p, "rb").read() if os.path.isfile(p) else b""
            nb = needle.encode() if isinstance(needle, str) else needle
            if nb in hay:
                kind = "raw-control-chars" if nb[:1] in (b"\x1b", b"\x07", b"\x9b") or \
                    (len(nb) == 1 and nb < b" ") else "raw-injection"
                return res(kind, "%s holds %r" % (where, needle))
        for where, needle in case.present:
            hay = err if where == "stderr" else out
            if needle not in hay.decode("utf-8", "replace"):
                return res("message-does-not-name-input", "%s lacks %r" % (where, needle))
        return res(None, "")


# ----------------------------------------------------------------------------------------------

IDLE_SERVER_MODES = ("drip", "drip_headers", "huge_length", "huge_chunk_size", "silent")


def is_idle(case):
    """A case whose command spends its time waiting, not computing."""
    if case.server and case.server[1] in IDLE_SERVER_MODES:
        return True
    return any(step[0] in ("fifo", "fifo_held") and step[1].startswith("in.")
               for step in case.setup)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--filter", default="", help="only cases whose class/name matches")
    ap.add_argument("--failures", default="", help="write the failing cases here (JSON lines)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--counts", action="store_true", help="print cases per class and exit")
    ap.add_argument("--asan", choices=("auto", "yes", "no"), default="auto")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    binary = os.path.abspath(args.binary) if args.binary else None
    cases = catalogue.build(binary)
    names = set()
    for c in cases:
        if c.id in names:
            sys.exit("hostile: duplicate case %s" % c.id)
        names.add(c.id)
    if args.filter:
        rx = re.compile(args.filter)
        cases = [c for c in cases if rx.search(c.id)]
    counts = {}
    for c in cases:
        counts[c.cls] = counts.get(c.cls, 0) + 1
    if args.list:
        for c in cases:
            print("%-12s %-60s exit=%s %s" % (c.cls, c.name, c.exit, " ".join(map(str, c.argv))))
        return 0
    if args.counts:
        for k in sorted(counts):
            print("%-12s %4d" % (k, counts[k]))
        print("%-12s %4d" % ("total", len(cases)))
        return 0
    if not binary or not os.access(binary, os.X_OK):
        sys.exit("hostile: usage: hostile.py PATH/TO/seedance")
    if args.asan == "auto":
        with open(binary, "rb") as f:
            asan = b"__asan_init" in f.read()
    else:
        asan = args.asan == "yes"
    is_root = os.geteuid() == 0
    for dev in ("/dev/null", "/dev/full", "/dev/zero"):
        if not stat.S_ISCHR(os.lstat(dev).st_mode):
            sys.exit("hostile: %s is not a character device; restore it first "
                     "(mknod -m 666 /dev/full c 1 7)" % dev)
    base_tmp = tempfile.mkdtemp(prefix="seedance-hostile-")
    os.chmod(base_tmp, 0o755)
    runner = Runner(binary, asan, base_tmp, is_root)
    t0 = time.monotonic()
    results = []
    try:
        # Cases that mostly wait (a silent FIFO, a dripping server) run in their own pool, so
        # they do not hold the --jobs workers; slow cases first, so the workers finish together.
        idle = [c for c in cases if is_idle(c)]
        busy = sorted((c for c in cases if not is_idle(c)),
                      key=lambda c: -(c.max_s or c.timeout or 0))
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex, \
                concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex_idle:
            futs = [ex_idle.submit(runner.run, c) for c in idle]
            futs += [ex.submit(runner.run, c) for c in busy]
            for fut in concurrent.futures.as_completed(futs):
                r = fut.result()
                results.append(r)
                if r.outcome == "skipped":
                    print("SKIP %-12s %s: %s" % (r.case.cls, r.case.name, r.detail), flush=True)
                elif r.outcome:
                    tail = r.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
                    print("FAIL %-12s %s: %s: %s | %s" % (r.case.cls, r.case.name, r.outcome,
                                                          r.detail, tail[0][:300]), flush=True)
                elif args.verbose:
                    print("ok   %-12s %s (%.1f s)" % (r.case.cls, r.case.name, r.elapsed),
                          flush=True)
    finally:
        shutil.rmtree(base_tmp, ignore_errors=True)
    skipped = [r for r in results if r.outcome == "skipped"]
    results = [r for r in results if r.outcome != "skipped"]
    failed = [r for r in results if r.outcome]
    if args.failures:
        with open(args.failures, "w") as f:
            for r in sorted(failed, key=lambda r: r.case.id):
                f.write(json.dumps({
                    "case": r.case.name, "class": r.case.cls, "command": r.case.command,
                    "argv": [a if isinstance(a, str) else a.decode("latin-1") for a in r.argv],
                    "want_exit": r.case.exit, "rc": r.rc, "outcome": r.outcome,
                    "detail": r.detail,
                    "stderr_tail": r.stderr.decode("utf-8", "replace")[-600:]}) + "\n")
    by_outcome = {}
    for r in failed:
        by_outcome[r.outcome] = by_outcome.get(r.outcome, 0) + 1
    print("hostile: cases per class: " +
          ", ".join("%s %d" % (k, counts[k]) for k in sorted(counts)))
    by_command = {}
    for r in failed:
        by_command[r.case.command] = by_command.get(r.case.command, 0) + 1
    if by_command:
        print("hostile: failures by command: " +
              ", ".join("%s %d" % (k, v) for k, v in sorted(by_command.items())))
    if by_outcome:
        print("hostile: failures by outcome: " +
              ", ".join("%s %d" % (k, v) for k, v in sorted(by_outcome.items())))
    print("hostile: %.0f s%s" % (time.monotonic() - t0, " (sanitized build)" if asan else ""))
    if skipped:
        print("hostile: %d skipped (the machine cannot set them up)" % len(skipped))
    print("hostile: %d passed, %d failed" % (len(results) - len(failed), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
