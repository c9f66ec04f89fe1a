#!/usr/bin/env python3
"""`seedance server --listen HOST:PORT` with a fixed port answers every new connection.

The server checks its flags before it opens the state, binding the port once to find out whether
it is free. That probe socket must be closed: httplib binds with SO_REUSEPORT, so a probe left
open stays bound beside the real listener and takes (and never answers) a share of the
connections. Each request here opens a new connection; every one must be answered."""

import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time

import testlib


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        port = testlib.free_port()
        fd, ready = tempfile.mkstemp(dir=d)
        os.close(fd)
        os.unlink(ready)
        proc = subprocess.Popen([binary, "server", "--listen", f"127.0.0.1:{port}", "--state",
                                 os.path.join(d, "st"), "--ready-file", ready, "--quiet"])
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(ready):
                assert proc.poll() is None, "server exited"
                assert time.monotonic() < deadline, "no ready file"
                time.sleep(0.01)
            unanswered = 0
            for _ in range(40):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
                try:
                    conn.request("GET", "/healthz")
                    assert conn.getresponse().status == 200
                except (socket.timeout, TimeoutError):
                    unanswered += 1
                finally:
                    conn.close()
            assert unanswered == 0, f"{unanswered} of 40 new connections were never answered"
            listeners = [l for l in open("/proc/net/tcp").read().splitlines()[1:]
                         if l.split()[1].endswith(f":{port:04X}") and l.split()[3] == "0A"]
            assert len(listeners) == 1, f"{len(listeners)} sockets listen on port {port}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print("PASS: 40 of 40 new connections answered on a fixed --listen port, one listener")


if __name__ == "__main__":
    main()
