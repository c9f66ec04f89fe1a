#!/usr/bin/env python3
"""Availability under idle, dripping and streaming clients (docs/server.md, "The HTTP front end").

A second process holds DRIPPERS connections that send a request header one byte a second (each is
reopened when the server cuts it) and WATCHERS open GET /v1/watch streams, from loopback addresses
127.0.0.2-9. Meanwhile this process measures, on the administrator's keep-alive connections:
/healthz latency and POST /v1/pods throughput, and compares both with the same measures before the
load started. It checks behaviour, and prints the figures:
  - every /healthz and every submission is answered (200 / 201) under the load;
  - the watchers see the submitted pods as events;
  - a dripping header is cut off at the header deadline (--read-timeout 10 s; checked < 20 s);
  - over --max-connections-per-client a connection gets 503, over --max-watches-per-client a
    watch gets 429 (on a second server with small caps).
With --goals it also fails unless /healthz answered within 100 ms every time and the submissions
kept >= 80% of their unloaded rate (the issue's figures; BENCHMARKS.md runs it this way).

usage: slowloris_test.py [--goals] [--drippers N] [--watchers N] SEEDANCE_BINARY"""

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time

import testlib

TOKEN = "slowloris-test-admin-token-0123456789"
SOURCES = [f"127.0.0.{i}" for i in range(2, 10)]


def raise_file_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def connect(port, source):
    s = socket.socket()
    s.setblocking(True)
    s.bind((source, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def attacker(port, drippers, watchers, seconds, ready, report, read_watches):
    """The load: dripping headers and open watch streams, for `seconds`."""
    raise_file_limit()
    drips = []
    for i in range(drippers):
        s = connect(port, SOURCES[i % 4])
        s.sendall(b"POST /v1/pods HTTP/1.1\r\nHost: x\r\n")
        drips.append([s, time.monotonic()])
    watches = []
    for i in range(watchers):
        s = connect(port, SOURCES[4 + i % 4])
        s.sendall(b"GET /v1/watch HTTP/1.1\r\nHost: x\r\n\r\n")
        if not s.recv(4096).startswith(b"HTTP/1.1 200"):
            raise AssertionError("a watch was not accepted")
        s.setblocking(False)
        watches.append(s)
    ready.set()
    cut_after = []  # how long a dripping header lived before the server closed it
    reopened = 0
    watch_bytes = [0] * len(watches)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tick = time.monotonic()
        for d in drips:
            try:
                d[0].send(b"X")
            except OSError:
                cut_after.append(time.monotonic() - d[1])
                d[0].close()
                d[0] = connect(port, SOURCES[reopened % 4])
                d[0].sendall(b"POST /v1/pods HTTP/1.1\r\nHost: x\r\n")
                d[1] = time.monotonic()
                reopened += 1
        for i, w in enumerate(watches if read_watches else []):
            try:
                while True:
                    got = w.recv(65536)
                    if not got:
                        break
                    watch_bytes[i] += len(got)
            except BlockingIOError:
                pass
            except OSError:
                pass
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    report.put({"cut_after": cut_after, "reopened": reopened,
                "watchers_with_events": sum(1 for b in watch_bytes if b > 300),
                "watch_bytes": sum(watch_bytes)})
    for d in drips:
        d[0].close()
    for w in watches:
        w.close()


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(port, pods, prefix, threads=4):
    """(healthz latencies in ms, submissions per second, statuses)."""
    lat = []
    probe = testlib.Client(port)
    for _ in range(50):
        t0 = time.perf_counter()
        status, _ = probe.request("GET", "/healthz")
        lat.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            raise AssertionError(f"/healthz: {status}")
    statuses = []
    lock = threading.Lock()

    def submit(k):
        c = testlib.Client(port, token=TOKEN)
        mine = []
        for i in range(k, pods, threads):
            status, _ = c.request("POST", "/v1/pods",
                                  {"name": f"{prefix}-{i}", "cpu_milli": 10, "num_gpu": 0})
            mine.append(status)
        with lock:
            statuses.extend(mine)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=submit, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    rate = pods / (time.perf_counter() - t0)
    return lat, rate, statuses


def caps(binary):
    """Over the per-client caps: 503 for a connection, 429 for a watch."""
    state = tempfile.mkdtemp(prefix="seedance-caps-")
    server = testlib.Server(binary, state, ["--max-connections-per-client", "20",
                                            "--max-watches-per-client", "5"]).start()
    try:
        held = [connect(server.port, "127.0.0.2") for _ in range(20)]
        extra = connect(server.port, "127.0.0.2")
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = extra.recv(4096)
        if not reply.startswith(b"HTTP/1.1 503"):
            raise AssertionError(f"connection 21 from one client: {reply[:60]!r}")
        other = testlib.Client(server.port).request("GET", "/healthz")[0]
        if other != 200:
            raise AssertionError(f"another client over the cap of the first: {other}")
        for s in held:
            s.close()
        watches = []
        codes = []
        for _ in range(6):
            s = connect(server.port, "127.0.0.3")
            s.sendall(b"GET /v1/watch HTTP/1.1\r\nHost: x\r\n\r\n")
            codes.append(s.recv(4096).split(b" ")[1].decode())
            watches.append(s)
        if codes != ["200"] * 5 + ["429"]:
            raise AssertionError(f"6 watches from one client: {codes}")
        for s in watches:
            s.close()
        print("caps: connection 21 of a client capped at 20 got 503 (others still served); "
              "watch 6 of a client capped at 5 got 429")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--goals", action="store_true")
    ap.add_argument("--drippers", type=int, default=2000)
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--read-watches", action="store_true",
                    help="the watchers read every event (the server's fan-out cost) instead of "
                         "holding their streams open")
    ap.add_argument("binary")
    a = ap.parse_args()
    raise_file_limit()
    caps(a.binary)
    state = tempfile.mkdtemp(prefix="seedance-slowloris-")
    token_file = os.path.join(state, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    server = testlib.Server(a.binary, os.path.join(state, "st"),
                            ["--token-file", token_file]).start()
    try:
        c = testlib.Client(server.port, token=TOKEN)
        c.request("PUT", "/v1/nodes/n1", {"cpu_milli": 10 ** 7, "memory_mib": 10 ** 7,
                                          "num_gpus": 0})
        cpu = cpu_seconds(server.proc.pid)
        lat0, rate0, st0 = measure(server.port, a.pods, "unloaded")
        cpu0 = cpu_seconds(server.proc.pid) - cpu
        ready = multiprocessing.Event()
        report = multiprocessing.Queue()
        seconds = 25
        proc = multiprocessing.Process(target=attacker, args=(
            server.port, a.drippers, a.watchers, seconds, ready, report, a.read_watches))
        proc.start()
        if not ready.wait(120):
            raise AssertionError("the load did not start")
        cpu = cpu_seconds(server.proc.pid)
        lat1, rate1, st1 = measure(server.port, a.pods, "loaded")
        cpu1 = cpu_seconds(server.proc.pid) - cpu
        got = report.get(timeout=seconds + 120)
        proc.join()
        if set(st0) != {201} or set(st1) != {201}:
            raise AssertionError(f"submissions not all 201: {set(st0)} / {set(st1)}")
        if a.drippers and (not got["cut_after"] or max(got["cut_after"]) >= 20):
            raise AssertionError(f"dripping headers not cut at the deadline: {got}")
        if a.read_watches and got["watchers_with_events"] < a.watchers * 0.9:
            raise AssertionError(f"only {got['watchers_with_events']} of {a.watchers} watchers "
                                 f"saw events")
        p99 = lambda v: sorted(v)[int(len(v) * 0.99) - 1]
        ratio = rate1 / rate0
        print(f"unloaded: /healthz median {statistics.median(lat0):.2f} ms, max {max(lat0):.2f} "
              f"ms; {rate0:.0f} submissions/s, server CPU {cpu0 * 1e6 / a.pods:.0f} us a submission")
        print(f"{a.drippers} dripping + {a.watchers} watching: /healthz median "
              f"{statistics.median(lat1):.2f} ms, p99 {p99(lat1):.2f} ms, max {max(lat1):.2f} ms; "
              f"{rate1:.0f} submissions/s ({ratio:.2f}x unloaded), server CPU "
              f"{cpu1 * 1e6 / a.pods:.0f} us a submission")
        cut = got["cut_after"] or [0]
        print(f"dripping headers cut after {min(cut):.1f}-{max(cut):.1f} s ({got['reopened']} "
              f"reopened); {got['watchers_with_events']} watchers saw events")
        if a.goals and (max(lat1) > 100 or ratio < 0.8):
            print("GOALS NOT MET: /healthz within 100 ms and >= 0.8x submissions")
            return 1
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
