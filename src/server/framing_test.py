#!/usr/bin/env python3
"""HTTP/1.1 framing the hard way (RFC 9112): raw bytes on a socket against the real server.

Each smuggling case (two different Content-Length values, a space before the colon, a
Content-Length with chunked, an unknown transfer coding, a negative or non-numeric length, a body
without any length, obs-fold, bare LF line ends, an oversized chunk size, no Host) must get a 4xx
reply and create nothing; pipelined requests in one write each get their own reply, in order; a
POST with `Expect: 100-continue` gets the interim reply before sending its body. Afterwards the
server holds exactly the pods the well-framed requests created.

A socket timeout here guards against a hang only (a reply that never comes); it is not a speed
goal.

usage: framing_test.py SEEDANCE_BINARY"""

import json
import os
import shutil
import socket
import sys
import tempfile

import testlib

POD = json.dumps({"name": "p", "cpu_milli": 100}).encode()


def exchange(port, data, want_replies=1, timeout=15):
    """Sends `data` in one write and reads until `want_replies` replies or the server closes.
    Returns the list of (status, headers, body) replies."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        replies = []
        closed = False
        while len(replies) < want_replies:
            reply, buf = parse_one(buf)
            if reply:
                replies.append(reply)
                continue
            if closed:
                break
            chunk = s.recv(65536)
            if not chunk:
                closed = True
            buf += chunk
        return replies


def parse_one(buf):
    """One complete reply off the front of buf (Content-Length framed), or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None, buf
    head = buf[:end].decode("latin-1").split("\r\n")
    status = int(head[0].split(" ")[1])
    headers = {}
    for line in head[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if status == 100:
        return (100, headers, b""), buf[end + 4:]
    n = int(headers.get("content-length", "0"))
    if len(buf) < end + 4 + n:
        return None, buf
    return (status, headers, buf[end + 4:end + 4 + n]), buf[end + 4 + n:]


def post(extra_headers, body=POD, line_end=b"\r\n", host=True):
    lines = [b"POST /v1/pods HTTP/1.1"]
    if host:
        lines.append(b"Host: x")
    lines += [b"Content-Type: application/json"] + extra_headers
    return line_end.join(lines) + line_end + line_end + body


def pods(port):
    return testlib.list_pods(testlib.Client(port))


def main():
    binary = sys.argv[1]
    state = tempfile.mkdtemp(prefix="seedance-framing-")
    server = testlib.Server(binary, os.path.join(state, "st"), ["--max-body", "4096"]).start()
    try:
        port = server.port
        n = str(len(POD)).encode()
        cases = [
            ("two different Content-Length", post([b"Content-Length: " + n,
                                                   b"Content-Length: 5"]), 400),
            ("space before the colon", post([b"Content-Length : " + n]), 400),
            ("Content-Length with chunked", post([b"Content-Length: " + n,
                                                  b"Transfer-Encoding: chunked"]), 400),
            ("chunked then Content-Length", post([b"Transfer-Encoding: chunked",
                                                  b"Content-Length: " + n]), 400),
            ("unknown transfer coding", post([b"Transfer-Encoding: gzip"]), 400),
            ("chunked not last", post([b"Transfer-Encoding: chunked, gzip"]), 400),
            ("negative Content-Length", post([b"Content-Length: -1"]), 400),
            ("Content-Length not a number", post([b"Content-Length: 1e3"]), 400),
            ("Content-Length with a sign", post([b"Content-Length: +" + n]), 400),
            # RFC 9112 6.3: a request without either has no body; the JSON is then not read as
            # the pod (400 for the empty body), and what follows is no valid request either.
            ("no length at all", post([]), 400),
            ("obs-fold", post([b"Content-Length: " + n, b"X-A: a", b" folded"]), 400),
            ("bare LF", post([b"Content-Length: " + n], line_end=b"\n"), 400),
            ("oversized chunk size", post([b"Transfer-Encoding: chunked"],
                                          body=b"fffffffffffffffffff1\r\n" + POD + b"\r\n0\r\n\r\n"),
             400),
            ("chunk over --max-body", post([b"Transfer-Encoding: chunked"],
                                           body=b"2000\r\n" + b"x" * 0x2000 + b"\r\n0\r\n\r\n"),
             413),
            ("Content-Length over --max-body", post([b"Content-Length: 100000"]), 413),
            ("no Host on HTTP/1.1", post([b"Content-Length: " + n], host=False), 400),
            ("two Authorization", post([b"Content-Length: " + n, b"Authorization: Bearer a",
                                        b"Authorization: Bearer b"]), 400),
            ("a request line of garbage", b"\x16\x03\x01\x02\x00 HTTP/1.1\r\n\r\n", 400),
            ("a bad escape in the path", b"GET /v1/pods%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ]
        failures = []
        for name, data, want in cases:
            replies = exchange(port, data)
            got = replies[0][0] if replies else None
            if got != want:
                failures.append(f"{name}: want {want}, got {got}")
            elif replies[0][0] >= 400:
                err = json.loads(replies[0][2]).get("error", {})
                if not err.get("message"):
                    failures.append(f"{name}: error body without a message: {replies[0][2]!r}")
        left = pods(port)
        if left:
            failures.append(f"the refused requests created {len(left)} pods: {left}")

        # Pipelining: 50 GETs in one write, 50 replies in order; then two POSTs and a GET.
        gets = b"".join(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" for _ in range(50))
        replies = exchange(port, gets, want_replies=50)
        if len(replies) != 50 or any(r[0] != 200 or r[2] != b"ok\n" for r in replies):
            failures.append(f"50 pipelined GETs: {len(replies)} replies "
                            f"{sorted(set(r[0] for r in replies))}")
        bodies = [json.dumps({"name": f"pipe-{i}", "cpu_milli": 100}).encode() for i in range(2)]
        mixed = b"".join(b"POST /v1/pods HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                         str(len(b)).encode() + b"\r\n\r\n" + b for b in bodies)
        mixed += b"GET /v1/pods HTTP/1.1\r\nHost: x\r\n\r\n"
        replies = exchange(port, mixed, want_replies=3)
        names = [json.loads(r[2]).get("name") for r in replies[:2]]
        if [r[0] for r in replies] != [201, 201, 200] or names != ["pipe-0", "pipe-1"]:
            failures.append(f"pipelined POST, POST, GET: {[r[0] for r in replies]} {names}")
        elif len(json.loads(replies[2][2])["items"]) != 2:
            failures.append("the pipelined GET did not see both pipelined POSTs")

        # Expect: 100-continue: the interim reply first, then the body, then 201.
        with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
            body = json.dumps({"name": "cont", "cpu_milli": 100}).encode()
            s.sendall(b"POST /v1/pods HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            interim = s.recv(4096)
            if not interim.startswith(b"HTTP/1.1 100"):
                failures.append(f"Expect: 100-continue: first reply {interim[:40]!r}")
            s.sendall(body)
            buf = b""
            reply = None
            while reply is None:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                reply, buf = parse_one(buf)
            if not reply or reply[0] != 201:
                failures.append(f"Expect: 100-continue: final reply {reply}")

        # HTTP/1.0 without keep-alive: one reply, then the server closes.
        replies = exchange(port, b"GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n",
                           want_replies=2)
        if len(replies) != 1 or replies[0][0] != 200:
            failures.append(f"HTTP/1.0 without keep-alive: {len(replies)} replies")

        # A method the path does not have: 405 with the methods it has (RFC 9110 15.5.6).
        replies = exchange(port, b"PATCH /v1/nodes/gpu-1 HTTP/1.1\r\nHost: x\r\n"
                                 b"Content-Length: 0\r\n\r\n")
        allow = replies[0][1].get("allow") if replies else None
        if not replies or replies[0][0] != 405 or allow != "PUT, GET, HEAD, DELETE":
            failures.append(f"PATCH /v1/nodes/gpu-1: {replies[0][0] if replies else None}, "
                            f"Allow {allow!r}, want 405 with 'PUT, GET, HEAD, DELETE'")

        names = sorted(p["name"] for p in pods(port))
        if names != ["cont", "pipe-0", "pipe-1"]:
            failures.append(f"pods at the end: {names}, want cont, pipe-0, pipe-1")
        status, _ = testlib.Client(port).request("GET", "/healthz")
        if status != 200:
            failures.append(f"/healthz after the cases: {status}")
        if failures:
            raise AssertionError("\n".join(failures))
        print(f"{len(cases)} malformed framings refused, nothing created; 50 pipelined GETs and "
              f"POST, POST, GET answered in order; 100-continue; HTTP/1.0 close")
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
