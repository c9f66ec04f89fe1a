#!/usr/bin/env python3
"""The watch stream delivers every event once, in order (docs/api.md, "Watch").

Event streams write each published batch as one shared block, or its events one by one, in
pieces of at most 256 KiB (routes.cc, service.cc). Checked here on the real server: a watcher
opened before a concurrent load (4 clients, so that batches hold several events) and one opened
afterwards from revision 0 (a catch-up over several pieces) both see revisions since+1 .. the
server's last, each once, in order, and each event's data names its own revision.

usage: watch_test.py SEEDANCE_BINARY"""

import json
import os
import shutil
import socket
import sys
import tempfile
import threading

import testlib

PODS = 800  # 1,600 events of ~400 B: more than two 256 KiB pieces for the catch-up


class SseReader:
    """A raw HTTP/1.1 GET /v1/watch: de-chunks the body and splits it into events."""

    def __init__(self, port, since):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(f"GET /v1/watch?since={since}&timeout=120s HTTP/1.1\r\n"
                          f"Host: x\r\n\r\n".encode())
        self.raw = b""
        self.body = b""
        head = self._until(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
            raise AssertionError(f"watch: {head[:200]!r}")

    def _fill(self):
        got = self.sock.recv(65536)
        if not got:
            raise AssertionError("the server closed the watch stream")
        self.raw += got

    def _until(self, mark):
        while mark not in self.raw:
            self._fill()
        head, self.raw = self.raw.split(mark, 1)
        return head

    def events_until(self, revision):
        """(id, data) pairs until the event with `revision`."""
        out = []
        while not out or out[-1][0] < revision:
            while b"\n\n" not in self.body:
                size = int(self._until(b"\r\n"), 16)
                while len(self.raw) < size + 2:
                    self._fill()
                self.body += self.raw[:size]
                self.raw = self.raw[size + 2:]
            event, self.body = self.body.split(b"\n\n", 1)
            if event.startswith(b":"):  # keep-alive comment
                continue
            lines = dict(line.split(b": ", 1) for line in event.split(b"\n"))
            out.append((int(lines[b"id"]), json.loads(lines[b"data"])))
        return out


def check(events, since, last, who):
    ids = [i for i, _ in events]
    if ids != list(range(since + 1, last + 1)):
        missing = sorted(set(range(since + 1, last + 1)) - set(ids))
        raise AssertionError(f"{who}: {len(ids)} events, want {last - since} in order; "
                             f"missing {missing[:5]}, duplicates "
                             f"{len(ids) - len(set(ids))}")
    wrong = [i for i, d in events if d.get("revision") != i]
    if wrong:
        raise AssertionError(f"{who}: the data of events {wrong[:5]} name another revision")


def main():
    binary = sys.argv[1]
    state = tempfile.mkdtemp(prefix="seedance-watch-")
    server = testlib.Server(binary, os.path.join(state, "st")).start()
    try:
        c = testlib.Client(server.port)
        c.request("PUT", "/v1/nodes/n1", {"cpu_milli": 10 ** 7, "memory_mib": 10 ** 7,
                                          "num_gpus": 0})
        since = c.request("GET", "/v1/nodes")[1]["revision"]
        live = SseReader(server.port, since)

        def submit(k):
            client = testlib.Client(server.port)
            for i in range(k, PODS, 4):
                status, body = client.request("POST", "/v1/pods", {"name": f"p-{i}",
                                                                   "cpu_milli": 10})
                assert status == 201, (status, body)

        threads = [threading.Thread(target=submit, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        last = c.request("GET", "/v1/nodes")[1]["revision"]
        check(live.events_until(last), since, last, "a watcher during the load")
        check(SseReader(server.port, 0).events_until(last), 0, last, "a watcher from 0")
        print(f"{last - since} events during a 4-client load and {last} from revision 0: each "
              f"once, in order")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
