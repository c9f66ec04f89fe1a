#!/usr/bin/python3
"""Issue 42's cost line through the real HTTP federation front (BENCHMARKS.md, "Federation: the
cost line replayed through the front").

bench/federation_cost.cc measures the placement library with in-process members; this replays
the same trace through `seedance server --federation` over three real member servers, in wall
clock, once per policy, in one run:

  1. The GPU nodes of openb_node_list_gpu_node.csv are split into three members as
     federation_cost.cc's kSplit does (by GPU model): `v100` (V100M16, V100M32; on-demand x1.0),
     `t4` (T4, P100, A10; spot x0.5), `rest` (every other model: G2, G3; premium x1.3), in that
     file order (first-to-admit's order). Prices are federation_cost's: the hardware catalog's
     GPU-hour price of each model (src/hw/catalog.cc, CATALOG_USD_PER_HOUR below) times the
     member's factor, and a core-hour at $0.04 times the factor (federation_cost's kCpuHourUsd).
  2. For each policy (cost, first-to-admit, static-weights): three members with fresh --state
     folders (empty clusters) and a front over them (--federation-policy POLICY). The default
     trace's pods are POSTed to the front at (creation_time - t0) / (time_scale x load) seconds
     of wall clock; each, once Bound, runs (deletion_time - creation_time) / time_scale seconds
     and is then DELETEd through the front. `load` is federation_cost's --arrival-scale: the
     arrivals are `load` times denser than the durations; `time_scale` compresses both into
     wall clock (scaling both alike keeps the load of the trace's own times, where at most 66 of
     the 6,212 GPUs are busy at once and nothing ever waits). The default, load 30,000 (arrivals
     over 86 s of wall clock at time scale 5), is the least of federation_cost's loads where a
     pod waits at all: the unconstrained demand peaks at 5,824 GPUs, 94% of the three members'
     (at load 1,000 the cheap member fills, but no policy makes a pod wait). Under `cost` each
     pod carries its trace duration as federation.seedance.io/expected-duration
     (federation_cost's "known durations"); the front pins the model it priced (gpu_spec).
  3. Per policy: GPU cost in USD = sum over the pods placed of the trace's duration (hours,
     unscaled) x num_gpu x gpu_milli/1000 x the member's price of the model of the node it ran on
     (the front's reply names the member, "cluster", and the member's node); CPU cost likewise
     with cores x the member's core-hour price (as federation_cost counts both); mean queueing =
     submission -> Bound, in trace seconds (wall x time_scale): 0 for a pod Bound in the POST
     reply (placed at its first attempt, as federation_cost counts it), else the first poll of
     the front's GET /v1/pods?phase=Pending that no longer lists it (resolution: one poll
     interval); pods per member; pods never placed (still pending when the replay ends: every
     pod arrived and nothing is pending, or --drain seconds after the last arrival).
     Also: `withdrawn`, the copies members took and the front withdrew (their scheduler left
     the pod pending and another member placed it: members' POST /v1/pods 201s, from their
     /metrics, less the pods placed), the POST latency and the client's lag behind the
     schedule. At the end of each policy the front's records are checked against what the
     members hold (each front uid on at most one member, on the member the front names, in the
     same phase; no copy of a deleted pod left anywhere) and any difference is printed; then,
     for each kind of pod never placed, where it waits, its explain, and where a copy submitted
     now goes (whether another member, or another model, has room for it).

Prints a table and one JSON line per policy, then the ratio cost(cost)/cost(first-to-admit) and
the queueing comparison (one JSON line). Every process it starts is stopped by its PID on exit,
Ctrl-C and error; readiness is polled (ready files, then the front's member list), never slept
for. States live under $SEEDANCE_BENCH_DIR (default: the current folder), in a folder removed at
the end unless --keep.

  bench/federation_replay.py --seedance build/src/cli/seedance [--limit N] [--time-scale S]
                             [--load L] [--policies cost,first-to-admit,static-weights]

Python 3 standard library only (/usr/bin/python3).
"""

import argparse
import csv
import heapq
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

# The hardware catalog's on-demand GPU-hour prices (src/hw/catalog.cc: V100 $2.48, P100 $1.46,
# T4 $0.35 from GCP; A10 priced as AWS's A10G, $1.006; the trace's undisclosed G2 and G3 priced
# as V100). federation_cost takes them from hw::Find(model)->usd_per_hour; its printout and
# BENCHMARKS.md list the same products: V100 $2.48, T4 $0.175, P100 $0.73, A10 $0.503, G2/G3
# $3.224.
CATALOG_USD_PER_HOUR = {
    "V100M16": 2.48, "V100M32": 2.48, "V100": 2.48,
    "P100": 1.46, "T4": 0.35, "A10": 1.006, "G1": 1.46, "G2": 2.48, "G3": 2.48,
}
CPU_HOUR_USD = 0.04  # federation_cost.cc's kCpuHourUsd
# federation_cost.cc's kSplit, in file order; the last takes every model the others do not name.
SPLIT = [
    ("v100", ["V100M16", "V100M32"], 1.0, "on-demand"),
    ("t4", ["T4", "P100", "A10"], 0.5, "spot"),
    ("rest", [], 1.3, "premium"),
]
POLICIES = ["cost", "first-to-admit", "static-weights"]
LABELS = {"cost": "cost (Seedance)", "first-to-admit": "first-to-admit (MultiKueue-like)",
          "static-weights": "static-weights (Karmada-like)"}
# src/trace/csv_reader.cc's QosPriority: the simulator's and federation_cost's pod priority.
QOS_PRIORITY = {"LS": 3, "Guaranteed": 2, "Burstable": 1, "BE": 0}
FRONT_UID_LABEL = "federation.seedance.io/front-uid"


def die(msg):
    raise SystemExit(f"federation_replay: {msg}")


def price_str(x):
    return f"{x:.6g}"


# ------------------------------------------------------------------------------------- inputs

def read_nodes(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def split_nodes(header, rows):
    model_col = header.index("model")
    out = [[] for _ in SPLIT]
    for r in rows:
        m = len(SPLIT) - 1
        for i, (_, models, _, _) in enumerate(SPLIT[:-1]):
            if r[model_col] in models:
                m = i
        out[m].append(r)
    for i, nodes in enumerate(out):
        if not nodes:
            die(f"member {SPLIT[i][0]} has no nodes")
    return out


def member_prices(nodes, header):
    """Per member: {model: USD per GPU-hour}, USD per core-hour."""
    model_col = header.index("model")
    out = []
    for (name, _, factor, _), ns in zip(SPLIT, nodes):
        gpu = {}
        for model in sorted({r[model_col] for r in ns}):
            if model not in CATALOG_USD_PER_HOUR:
                die(f"no catalog price for GPU model {model}")
            gpu[model] = float(price_str(CATALOG_USD_PER_HOUR[model] * factor))
        out.append((gpu, float(price_str(CPU_HOUR_USD * factor))))
    return out


def read_pods(path, limit):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if limit:
        rows = rows[:limit]
    t0 = min(int(r["creation_time"]) for r in rows)
    pods = []
    for r in rows:
        c, d = int(r["creation_time"]), int(r["deletion_time"] or -1)
        pods.append({
            "name": r["name"], "cpu_milli": int(r["cpu_milli"]),
            "memory_mib": int(r["memory_mib"]), "num_gpu": int(r["num_gpu"]),
            "gpu_milli": int(r["gpu_milli"]), "gpu_spec": r["gpu_spec"],
            "priority": QOS_PRIORITY.get(r["qos"], 1),
            "arrival_s": float(c - t0), "duration_s": float(d - c) if d >= c else 0.0,
        })
    pods.sort(key=lambda p: p["arrival_s"])  # stable, as federation_cost's
    return pods


def pod_body(p, with_duration):
    body = {"name": p["name"], "cpu_milli": p["cpu_milli"], "memory_mib": p["memory_mib"],
            "priority": p["priority"]}
    if p["num_gpu"] > 0:
        body["num_gpu"] = p["num_gpu"]
        body["gpu_milli"] = p["gpu_milli"]
    if p["gpu_spec"]:
        body["gpu_spec"] = p["gpu_spec"]
    if with_duration:
        # The front's cost policy prices the trace's duration (1 s at least: the annotation must
        # be positive); the other policies ignore it.
        body["annotations"] = {
            "federation.seedance.io/expected-duration": f"{max(1, int(p['duration_s']))}s"}
    return json.dumps(body)


# ------------------------------------------------------------------------------------- HTTP

class Http:
    """One keep-alive connection per thread to one server."""

    def __init__(self, url, timeout=60):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.timeout = u.hostname, u.port, timeout
        self.local = threading.local()

    def _conn(self):
        c = getattr(self.local, "conn", None)
        # The server closes a connection idle for 5 s: open a new one before that.
        if c is None or time.monotonic() - self.local.used > 4.0:
            if c is not None:
                c.close()
            c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.local.conn = c
        return c

    def call(self, method, path, body=None):
        """(status, parsed JSON or text); a transport failure on a reused connection is retried
        once on a new one (the second result says `retried`)."""
        for attempt in (0, 1):
            c = self._conn()
            try:
                headers = {"Content-Type": "application/json"} if body is not None else {}
                c.request(method, path, body=body, headers=headers)
                r = c.getresponse()
                data = r.read()
                self.local.used = time.monotonic()
                try:
                    return r.status, json.loads(data) if data else None, attempt > 0
                except ValueError:
                    return r.status, data.decode(errors="replace"), attempt > 0
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.conn = None
                if attempt == 1:
                    raise

    def get(self, path):
        status, body, _ = self.call("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body}")
        return body

    def list_all(self, query):
        items, cont = [], None
        while True:
            q = query + ("&continue=" + urllib.parse.quote(cont) if cont else "")
            page = self.get("/v1/pods?" + q)
            items.extend(page["items"])
            cont = page.get("continue")
            if not cont:
                return items


# ------------------------------------------------------------------------------------- processes

def die_with_parent():
    """In the child before exec: SIGTERM when this bench dies, even by SIGKILL (Linux)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Processes:
    """Everything this bench started, stopped by PID."""

    def __init__(self):
        self.procs = []

    def start(self, args, log):
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             preexec_fn=die_with_parent)
        self.procs.append(p)
        return p

    def stop(self, p, timeout=10):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.procs:
            self.procs.remove(p)

    def stop_all(self):
        for p in reversed(list(self.procs)):
            self.stop(p)


def wait_ready(proc, ready_file, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(ready_file) and os.path.getsize(ready_file) > 0:
            with open(ready_file) as f:
                url = f.read().strip()
            if url:
                return url
        if proc.poll() is not None:
            die(f"{what} exited with status {proc.returncode} before it was ready")
        time.sleep(0.01)
    die(f"{what} not ready after {timeout} s")


def start_server(procs, seedance, work, name, extra):
    state, ready = os.path.join(work, name), os.path.join(work, f"ready-{name}")
    for path in (ready,):
        if os.path.exists(path):
            os.remove(path)
    log = open(os.path.join(work, f"{name}.log"), "w")
    p = procs.start([seedance, "server", "--listen", "127.0.0.1:0", "--state", state,
                     "--ready-file", ready, "--quiet"] + extra, log)
    log.close()
    return p, wait_ready(p, ready, f"server {name}")


# ------------------------------------------------------------------------------------- replay

class Replay:
    def __init__(self, args, pods, front, node_model, member_names, members_http):
        self.args, self.pods, self.front = args, pods, front
        self.node_model, self.member_names, self.members_http = node_model, member_names, \
            members_http
        self.scale, self.load = args.time_scale, args.load
        self.cond = threading.Condition()
        self.deletes = []  # heap of (wall time, pod index)
        self.pending = {}  # front uid -> pod index: submitted, not yet seen Bound
        self.outstanding = 0  # requests handed to the pool and not finished
        self.res = [dict() for _ in pods]  # per pod: uid, sent, reply, bound, member, node, ...
        self.anomalies = []
        self.stopping = False
        self.t0 = 0.0
        self.polls = 0
        self.poll_s = []

    def now(self):
        return time.monotonic() - self.t0

    def note(self, what):
        with self.cond:
            if len(self.anomalies) < 200:
                self.anomalies.append(what)

    def bound(self, i, t, pod):
        r = self.res[i]
        r["bound"] = t
        r["member"] = pod.get("cluster")
        r["node"] = pod.get("node")
        r["gpu_spec"] = pod.get("gpu_spec", "")
        with self.cond:
            heapq.heappush(self.deletes, (t + self.pods[i]["duration_s"] / self.scale, i))
            self.cond.notify()

    def submit(self, i):
        p, r = self.pods[i], self.res[i]
        r["sent"] = self.now()
        try:
            status, body, retried = self.front.call(
                "POST", "/v1/pods", pod_body(p, self.args.policy == "cost" and
                                         not self.args.no_durations))
            r["reply"] = self.now()
            if status == 409 and retried:  # the first try reached the front after all
                items = self.front.list_all("limit=5000")
                body = next((x for x in items if x["name"] == p["name"]), None)
                status = 201 if body else status
            if status != 201:
                self.note(f"POST {p['name']}: {status} {body}")
                r["failed"] = True
                return
            r["uid"] = body["uid"]
            r["first_member"] = body.get("cluster")
            if body.get("phase") in ("Bound", "Assumed"):
                r["queued"] = 0.0
                self.bound(i, r["reply"], body)
            else:
                with self.cond:
                    self.pending[body["uid"]] = i
        except Exception as e:  # noqa: BLE001 (a bench: count it and go on)
            r["failed"] = True
            self.note(f"POST {p['name']}: {type(e).__name__}: {e}")
        finally:
            with self.cond:
                self.outstanding -= 1
                self.cond.notify()

    def delete(self, i):
        r = self.res[i]
        try:
            for _ in range(200):
                status, body, retried = self.front.call("DELETE", "/v1/pods/" + r["uid"])
                if status == 200 or (status == 404 and retried):
                    r["deleted"] = self.now()
                    return
                if status in (409, 503):  # being dispatched, or a member call failed: again
                    time.sleep(0.05)
                    continue
                self.note(f"DELETE {self.pods[i]['name']} ({r['uid']}): {status} {body}")
                return
            self.note(f"DELETE {self.pods[i]['name']}: still refused after 200 tries")
        except Exception as e:  # noqa: BLE001
            self.note(f"DELETE {self.pods[i]['name']}: {type(e).__name__}: {e}")
        finally:
            with self.cond:
                self.outstanding -= 1
                self.cond.notify()

    def poll_loop(self):
        """Every --poll seconds: the front's Pending pods; a pod submitted pending and no longer
        listed is looked up once (GET /v1/pods/{uid})."""
        while True:
            with self.cond:
                if self.stopping:
                    return
                watched = dict(self.pending)
            t = self.now()
            if watched:
                try:
                    listed = {x["uid"] for x in self.front.list_all("phase=Pending&limit=5000")}
                    self.polls += 1
                    self.poll_s.append(self.now() - t)
                    for uid, i in watched.items():
                        if uid in listed:
                            continue
                        status, pod, _ = self.front.call("GET", "/v1/pods/" + uid)
                        if status != 200:
                            self.note(f"GET {uid} ({self.pods[i]['name']}): {status} {pod}")
                            continue
                        phase = pod.get("phase")
                        if phase == "Pending":
                            continue  # submitted after the list was taken
                        with self.cond:
                            self.pending.pop(uid, None)
                        if phase in ("Bound", "Assumed"):
                            self.res[i]["queued"] = (t - self.res[i]["sent"]) * self.scale
                            self.bound(i, t, pod)
                        else:
                            self.note(f"pod {self.pods[i]['name']} ({uid}) left Pending for "
                                      f"phase {phase} (cluster {pod.get('cluster')})")
                except Exception as e:  # noqa: BLE001
                    self.note(f"poll: {type(e).__name__}: {e}")
            delay = self.args.poll - (self.now() - t)
            if delay > 0:
                with self.cond:
                    self.cond.wait_for(lambda: self.stopping, delay)

    def run(self):
        n = len(self.pods)
        arrivals = [p["arrival_s"] / (self.scale * self.load) for p in self.pods]
        pool = ThreadPoolExecutor(max_workers=self.args.clients)
        poller = threading.Thread(target=self.poll_loop, daemon=True)
        self.t0 = time.monotonic()
        poller.start()
        nxt, end_reason = 0, None
        last_arrival = arrivals[-1] if arrivals else 0.0
        try:
            while True:
                now = self.now()
                while nxt < n and arrivals[nxt] <= now:
                    with self.cond:
                        self.outstanding += 1
                    self.res[nxt]["due"] = arrivals[nxt]
                    pool.submit(self.submit, nxt)
                    nxt += 1
                with self.cond:
                    while self.deletes and self.deletes[0][0] <= now:
                        _, i = heapq.heappop(self.deletes)
                        self.outstanding += 1
                        pool.submit(self.delete, i)
                    if nxt == n and self.outstanding == 0 and not self.pending:
                        end_reason = "every pod placed"
                        break
                    if nxt == n and now > last_arrival + self.args.drain:
                        end_reason = f"{self.args.drain:g} s after the last arrival"
                        break
                    wake = [now + 0.05]
                    if nxt < n:
                        wake.append(arrivals[nxt])
                    if self.deletes:
                        wake.append(self.deletes[0][0])
                    self.cond.wait(max(0.0, min(wake) - now))
        finally:
            # Nothing more is sent; what is under way finishes.
            pool.shutdown(wait=True)
            with self.cond:
                self.stopping = True
                self.cond.notify_all()
            poller.join()
        self.wall_s = self.now()
        self.end_reason = end_reason

    # ---------------------------------------------------------------------------- consistency

    def check(self):
        """The front's records against what the members hold."""
        problems = []
        for attempt in range(3):
            problems = self._check_once()
            if not problems:
                return []
            time.sleep(1.0)  # the front's watch may trail the members by a moment: look again
        return problems

    def _check_once(self):
        problems = []
        front = {x["uid"]: x for x in self.front.list_all("limit=5000")}
        on = {}  # front uid -> [(member, member pod)]
        for name, h in zip(self.member_names, self.members_http):
            for pod in h.list_all("limit=5000"):
                fu = (pod.get("labels") or {}).get(FRONT_UID_LABEL)
                if fu is None:
                    problems.append(f"{name} holds {pod['name']} without the front's label")
                    continue
                on.setdefault(fu, []).append((name, pod))
        deleted = {r["uid"] for r in self.res if "deleted" in r and "uid" in r}
        live = {r["uid"] for r in self.res if "uid" in r and "deleted" not in r}
        for fu, copies in on.items():
            where = ", ".join(f"{m} ({p['phase']})" for m, p in copies)
            if len(copies) > 1:
                problems.append(f"front uid {fu} on {len(copies)} members: {where}")
            if fu in deleted:
                problems.append(f"front uid {fu}, deleted through the front, still on {where}")
            elif fu not in front:
                problems.append(f"front uid {fu} unknown to the front, on {where}")
        for uid, rec in front.items():
            if uid not in live:
                problems.append(f"the front has {uid} ({rec['name']}), which was deleted or "
                                f"never acknowledged")
            cluster = rec.get("cluster")
            if cluster is None:
                if uid in on:
                    problems.append(f"{rec['name']} waits at the front but is on "
                                    f"{[m for m, _ in on[uid]]}")
                continue
            mine = [p for m, p in on.get(uid, []) if m == cluster]
            if not mine:
                problems.append(f"{rec['name']}: the front says {cluster}, which does not have it")
            elif mine[0]["uid"] != rec.get("member_uid"):
                problems.append(f"{rec['name']}: member uid {rec.get('member_uid')} at the front, "
                                f"{mine[0]['uid']} on {cluster}")
            elif mine[0]["phase"] != rec.get("phase") or mine[0].get("node") != rec.get("node"):
                problems.append(f"{rec['name']}: front says {rec.get('phase')} on "
                                f"{rec.get('node')}, {cluster} says {mine[0]['phase']} on "
                                f"{mine[0].get('node')}")
        for uid in live:
            if uid not in front:
                problems.append(f"pod {uid}, acknowledged and not deleted, is gone from the front")
        return problems

    def waiting_at_end(self):
        """The pods never placed: where each waits (a member's queue or the front) and why, as
        the front's explain says (the first of each kind)."""
        kinds, explained, probes = {}, {}, {}
        for p, r in zip(self.pods, self.res):
            if "bound" in r or "uid" not in r:
                continue
            status, pod, _ = self.front.call("GET", "/v1/pods/" + r["uid"])
            if status != 200:
                self.note(f"GET {r['uid']} ({p['name']}) at the end: {status} {pod}")
                continue
            shape = f"{p['num_gpu']}x{p['gpu_milli']}m" if p["num_gpu"] else "cpu"
            key = f"{pod.get('cluster') or 'front'} {pod.get('phase')} {shape} " \
                  f"gpu_spec={pod.get('gpu_spec') or '-'}"
            kinds[key] = kinds.get(key, 0) + 1
            if key not in explained:
                status, ex, _ = self.front.call("GET", f"/v1/pods/{r['uid']}/explain")
                explained[key] = (ex.get("message") if isinstance(ex, dict) else ex) \
                    if status == 200 else f"{status} {ex}"
                probes[key] = self.probe(p)
        return [{"where": k, "pods": n, "explain": explained[k], "a_copy_now": probes[k]}
                for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])]

    def probe(self, p):
        """Where a copy of a pod submitted now goes (after the measurement): whether another
        member has room for a pod left pending on one."""
        copy = dict(p, name=p["name"] + "-probe")
        status, pod, _ = self.front.call(
            "POST", "/v1/pods", pod_body(copy, self.args.policy == "cost" and
                                     not self.args.no_durations))
        if status != 201:
            return f"{status} {pod}"
        self.front.call("DELETE", "/v1/pods/" + pod["uid"])
        return f"{pod.get('phase')} on {pod.get('cluster') or 'the front'} " \
               f"{pod.get('node') or ''} {pod.get('gpu_spec') or ''}".strip()

    # ---------------------------------------------------------------------------- results

    def result(self, prices):
        gpu_usd = cpu_usd = 0.0
        per = {name: {"pods": 0, "gpu_hours": 0.0, "gpu_usd": 0.0} for name in self.member_names}
        queued, placed, never, failed, lags, latency = [], 0, 0, 0, [], []
        unplaced_wait, waited = [], {}
        for p, r in zip(self.pods, self.res):
            if "sent" in r and "due" in r:
                lags.append(r["sent"] - r["due"])
            if "reply" in r:
                latency.append(r["reply"] - r["sent"])
            if r.get("failed"):
                failed += 1
                continue
            if "bound" not in r:
                never += 1
                if "sent" in r:  # waited at least until the end
                    unplaced_wait.append((self.wall_s - r["sent"]) * self.scale)
                continue
            placed += 1
            queued.append(r["queued"])
            m = self.member_names.index(r["member"])
            gpu_prices, cpu_price = prices[m]
            hours = p["duration_s"] / 3600.0
            model = self.node_model.get(r["node"], "-") if p["num_gpu"] > 0 else "-"
            if r["queued"] > 0:  # where the pods that waited ran, and how long they waited
                shape = f"{p['num_gpu']}x{p['gpu_milli']}m" if p["num_gpu"] else "cpu"
                w = waited.setdefault(f"{r['member']} {model} {shape}", [0, 0.0])
                w[0] += 1
                w[1] += r["queued"]
            if p["num_gpu"] > 0:
                gh = p["num_gpu"] * p["gpu_milli"] / 1000.0 * hours
                per[r["member"]]["gpu_hours"] += gh
                per[r["member"]]["gpu_usd"] += gpu_prices[model] * gh
                gpu_usd += gpu_prices[model] * gh
            cpu_usd += cpu_price * p["cpu_milli"] / 1000.0 * hours
            per[r["member"]]["pods"] += 1
        lat = sorted(latency)

        def pct(xs, q):
            return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0
        return {
            "gpu_cost_usd": round(gpu_usd, 2), "cpu_cost_usd": round(cpu_usd, 2),
            "mean_queue_s": round(statistics.fmean(queued), 2) if queued else 0.0,
            # The pods never placed counted as waiting until the end: a lower bound.
            "mean_queue_s_all": round(statistics.fmean(queued + unplaced_wait), 2)
            if queued or unplaced_wait else 0.0,
            "max_queue_s": round(max(queued), 2) if queued else 0.0,
            "pods_queued": sum(1 for q in queued if q > 0),
            "placed": placed, "never_placed": never, "failed": failed,
            "queued_where": {k: {"pods": n, "mean_queue_s": round(t / n, 1)} for k, (n, t) in
                             sorted(waited.items(), key=lambda kv: -kv[1][1])[:8]},
            "pods_per_member": {k: v["pods"] for k, v in per.items()},
            "gpu_usd_per_member": {k: round(v["gpu_usd"], 2) for k, v in per.items()},
            "post_ms_p50": round(pct(lat, 0.5) * 1000, 2),
            "post_ms_p99": round(pct(lat, 0.99) * 1000, 2),
            "send_lag_s_mean": round(statistics.fmean(lags), 3) if lags else 0.0,
            "send_lag_s_max": round(max(lags), 3) if lags else 0.0,
            "polls": self.polls,
            "wall_s": round(self.wall_s, 1), "ended": self.end_reason,
        }


def front_counters(front):
    """The front's federation counters from /metrics."""
    status, text, _ = front.call("GET", "/metrics")
    out = {}
    if status == 200 and isinstance(text, str):
        for line in text.splitlines():
            for key in ("dispatches_total", "redispatches_total", "refusals_total",
                        "waiting_pods"):
                if line.startswith("seedance_federation_" + key + " "):
                    out[key] = float(line.split()[-1])
    return out


def member_posts(url):
    """The pods a member took (POST /v1/pods answered 201), from its /metrics."""
    status, text, _ = Http(url).call("GET", "/metrics")
    n = 0
    if status == 200 and isinstance(text, str):
        for line in text.splitlines():
            if (line.startswith("seedance_http_requests_total{") and 'route="create_pod"' in line
                    and 'code="201"' in line):
                n += int(float(line.split()[-1]))
    return n


def run_policy(args, policy, work, procs, node_files, prices, pods, node_model):
    pwork = os.path.join(work, policy)
    os.makedirs(pwork)
    members, member_procs = [], []
    for (name, _, factor, tier), nf in zip(SPLIT, node_files):
        p, url = start_server(procs, args.seedance, pwork, name,
                              ["--nodes", nf, "--cluster", name])
        members.append(url)
        member_procs.append(p)
    lines = ["members:"]
    for (name, _, _, tier), url, (gpu, cpu) in zip(SPLIT, members, prices):
        lines.append(f"  - name: {name}\n    url: \"{url}\"\n    labels: {{tier: {tier}}}\n"
                     f"    prices:\n      gpu_hour: {{"
                     + ", ".join(f"{m}: {price_str(u)}" for m, u in gpu.items())
                     + f"}}\n      cpu_hour: {price_str(cpu)}")
    member_file = os.path.join(pwork, "members.yaml")
    with open(member_file, "w") as f:
        f.write("\n".join(lines) + "\n")
    fp, furl = start_server(procs, args.seedance, pwork, "front",
                            ["--federation", member_file, "--federation-policy", policy,
                             "--federation-refresh", args.refresh, "--cluster", "front"])
    front = Http(furl)
    deadline = time.monotonic() + 60
    while True:  # every member ready and summarised once
        ms = front.get("/v1/federation/members")["members"]
        if all(m.get("state") == "ready" and m.get("polls", 0) >= 1 for m in ms):
            break
        if time.monotonic() > deadline:
            die(f"the front's members not ready: {ms}")
        if fp.poll() is not None:
            die("the front exited")
        time.sleep(0.02)
    args.policy = policy
    replay = Replay(args, pods, front, node_model, [s[0] for s in SPLIT],
                    [Http(u) for u in members])
    replay.run()
    for p in [fp] + member_procs:
        if p.poll() is not None:
            replay.note(f"a server (pid {p.pid}) exited with status {p.returncode} during the "
                        f"replay; see {pwork}/*.log")
    res = replay.result(prices)
    res["loadavg_1m"] = round(os.getloadavg()[0], 2)  # the machine's load at the end (noise)
    res.update(front_counters(front))
    # A copy a member took and the front withdrew (its scheduler left the pod pending and
    # another member placed it): federation_cost's "withdrawn".
    res["member_posts"] = sum(member_posts(u) for u in members)
    placed_now = sum(1 for x in front.list_all("limit=5000") if x.get("cluster") is not None)
    res["withdrawn"] = res["member_posts"] - placed_now - sum(1 for r in replay.res
                                                              if "deleted" in r)
    problems = replay.check() if fp.poll() is None else ["the front is gone"]
    res["inconsistencies"] = len(problems)
    # Last, as it submits copies: where the pods never placed wait, and where a copy goes now.
    res["waiting_at_end"] = replay.waiting_at_end() if fp.poll() is None else []
    res["anomalies"] = len(replay.anomalies)
    for p in [fp] + member_procs:
        procs.stop(p)
    return res, problems, replay.anomalies


def print_members(node_files_rows, prices, header):
    gpu_col = header.index("gpu")
    print("members (file order):")
    for (name, _, factor, tier), rows, (gpu, cpu) in zip(SPLIT, node_files_rows, prices):
        gpus = sum(int(r[gpu_col]) for r in rows)
        ps = ", ".join(f"{m} ${price_str(u)}" for m, u in gpu.items())
        print(f"  {name:<5} {tier:<9} x{factor:.1f}  {len(rows):4d} nodes {gpus:5d} GPUs  "
              f"GPU-hour: {ps}; core-hour ${price_str(cpu)}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seedance", default=os.path.join(here, "..", "build", "src", "cli",
                                                       "seedance"),
                    help="the seedance binary (default: build/src/cli/seedance)")
    ap.add_argument("--data-dir", default=os.environ.get("SEEDANCE_DATA_DIR") or
                    os.path.join(here, "..", "..", "shared", "data"))
    ap.add_argument("--pods", default="openb_pod_list_default.csv",
                    help="openb pod list: a path, or a name in the trace's csv folder")
    ap.add_argument("--limit", type=int, default=0, help="replay only the first N pods (0: all)")
    ap.add_argument("--time-scale", type=float, default=5,
                    help="trace seconds per wall second, for durations and arrivals alike "
                         "(default 5)")
    ap.add_argument("--load", type=float, default=30000,
                    help="arrivals this many times denser than the durations (federation_cost's "
                         "--arrival-scale; default 30000: the least of federation_cost's loads "
                         "where a pod waits)")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--poll", type=float, default=0.1,
                    help="wall seconds between two polls of the front's pending pods")
    ap.add_argument("--drain", type=float, default=120,
                    help="wall seconds after the last arrival before pods still pending count as "
                         "never placed")
    ap.add_argument("--refresh", default="1s", help="the front's --federation-refresh")
    ap.add_argument("--clients", type=int, default=16, help="concurrent HTTP requests at most")
    ap.add_argument("--no-durations", action="store_true",
                    help="no expected-duration annotation (the cost policy prices 1 h)")
    ap.add_argument("--keep", action="store_true", help="keep the states and logs")
    args = ap.parse_args()
    for pol in args.policies.split(","):
        if pol not in POLICIES:
            die(f"unknown policy {pol}")
    if not os.access(args.seedance, os.X_OK):
        die(f"{args.seedance}: not an executable (--seedance)")
    csv_dir = os.path.join(args.data_dir, "alibaba-gpu-v2023", "csv")
    header, rows = read_nodes(os.path.join(csv_dir, "openb_node_list_gpu_node.csv"))
    pods = read_pods(args.pods if "/" in args.pods else os.path.join(csv_dir, args.pods),
                     args.limit)
    node_rows = split_nodes(header, rows)
    prices = member_prices(node_rows, header)
    node_model = {r[header.index("sn")]: r[header.index("model")] for r in rows}

    work = os.path.join(os.environ.get("SEEDANCE_BENCH_DIR") or os.getcwd(),
                        f"seedance-federation-replay.{os.getpid()}")
    os.makedirs(work)
    procs = Processes()

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)  # also when started in the background (ignored)
    results = {}
    try:
        node_files = []
        for (name, _, _, _), rs in zip(SPLIT, node_rows):
            path = os.path.join(work, f"nodes-{name}.csv")
            with open(path, "w", newline="") as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(header)
                w.writerows(rs)
            node_files.append(path)
        print_members(node_rows, prices, header)
        span = pods[-1]["arrival_s"] / (args.time_scale * args.load) if pods else 0
        print(f"\n{len(pods)} pods; a trace second is 1/{args.time_scale:g} s of wall clock for "
              f"durations and 1/{args.time_scale * args.load:g} s for arrivals (load "
              f"{args.load:g}): arrivals over {span:.0f} s; front refresh {args.refresh}, "
              f"poll {args.poll:g} s (queueing resolution {args.poll * args.time_scale:g} trace s)",
              flush=True)
        for pol in args.policies.split(","):
            res, problems, anomalies = run_policy(args, pol, work, procs, node_files, prices,
                                                  pods, node_model)
            results[pol] = res
            for a in anomalies[:20]:
                print(f"  [{pol}] anomaly: {a}")
            for w in res["waiting_at_end"][:10]:
                print(f"  [{pol}] never placed: {w['pods']} pods, {w['where']}: {w['explain']}; "
                      f"a copy submitted now: {w['a_copy_now']}")
            for pr in problems[:20]:
                print(f"  [{pol}] inconsistent: {pr}")
            print(f"  [{pol}] done in {res['wall_s']} s ({res['ended']})", flush=True)
    except KeyboardInterrupt:
        print("federation_replay: interrupted; stopping the servers", file=sys.stderr)
        procs.stop_all()
        raise SystemExit(130)
    finally:
        procs.stop_all()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"states and logs kept in {work}")

    print(f"\n{'policy':<34} {'GPU cost $':>10} {'CPU cost $':>10} {'mean queue s':>12} "
          f"{'(all)':>7} {'queued':>6} {'never':>5} {'withdr':>6} {'POST p50/p99 ms':>15} "
          f"{'wall s':>6}  pods per member")
    for pol, r in results.items():
        per = ", ".join(f"{k} {v}" for k, v in r["pods_per_member"].items())
        print(f"{LABELS[pol]:<34} {r['gpu_cost_usd']:>10.0f} {r['cpu_cost_usd']:>10.0f} "
              f"{r['mean_queue_s']:>12.2f} {r['mean_queue_s_all']:>7.2f} {r['pods_queued']:>6} "
              f"{r['never_placed']:>5} "
              f"{r['withdrawn']:>6} "
              f"{r['post_ms_p50']:>7.1f}/{r['post_ms_p99']:<7.1f} {r['wall_s']:>6.0f}  {per}")
    for pol, r in results.items():
        print(json.dumps({"bench": "federation_replay", "policy": pol, "pods": len(pods),
                          "time_scale": args.time_scale, "load": args.load, **r}))
    if "cost" in results and "first-to-admit" in results:
        c, f = results["cost"], results["first-to-admit"]
        ratio = c["gpu_cost_usd"] / f["gpu_cost_usd"] if f["gpu_cost_usd"] else float("nan")
        # Queueing compared with the pods never placed counted until the end (when every pod
        # was placed, the plain mean).
        met = ratio <= 0.85 and c["mean_queue_s_all"] <= f["mean_queue_s_all"]
        print(f"\nGPU cost, Seedance (cost) / MultiKueue-like (first-to-admit): {ratio:.3f} "
              f"({abs(1 - ratio) * 100:.1f}% {'lower' if ratio <= 1 else 'higher'}); mean "
              f"queueing {c['mean_queue_s_all']:.2f} s against {f['mean_queue_s_all']:.2f} s "
              f"(trace seconds; never placed: {c['never_placed']} against "
              f"{f['never_placed']}); goal (<= 0.85 at equal or lower queueing) "
              f"{'met' if met else 'not met'}")
        summary = {"bench": "federation_replay", "pods": len(pods),
                   "time_scale": args.time_scale, "load": args.load,
                   "gpu_cost_ratio_cost_vs_first_to_admit": round(ratio, 4),
                   "mean_queue_s": {k: v["mean_queue_s"] for k, v in results.items()},
                   "mean_queue_s_all": {k: v["mean_queue_s_all"] for k, v in results.items()},
                   "never_placed": {k: v["never_placed"] for k, v in results.items()},
                   "inconsistencies": {k: v["inconsistencies"] for k, v in results.items()},
                   "goal_met": met}
        if "static-weights" in results:
            s = results["static-weights"]
            summary["gpu_cost_ratio_cost_vs_static_weights"] = round(
                c["gpu_cost_usd"] / s["gpu_cost_usd"], 4) if s["gpu_cost_usd"] else None
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
