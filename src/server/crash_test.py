#!/usr/bin/env python3
"""Durability the hard way (issue 12): a server holding the trace's 1,213 GPU nodes takes pod
submissions from 32 concurrent clients and is killed with SIGKILL at a random moment, five times
in a row. After each restart every pod that got a 2xx is present with the same uid, phase, node
and GPUs; no GPU holds more than 1000 milli; nothing is duplicated. Prints the counts.

usage: crash_test.py SEEDANCE_BINARY [--rounds 5] [--pods 20000] [--clients 32] [--seed 1]

--rounds is the number of SIGKILLs; they fall at random points of one stream of --pods
submissions, and a last round sends what is left and stops the server cleanly."""

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time

import testlib


def submit_until_killed(port, shapes, next_index, total, acked, lock, rng_seed):
    """One client: POSTs pods until `total` were sent or the server dies; records every 2xx."""
    client = testlib.Client(port, timeout=30)
    rng = random.Random(rng_seed)
    while True:
        with lock:
            i = next_index[0]
            if i >= total:
                return
            next_index[0] += 1
        shape = dict(shapes[rng.randrange(len(shapes))])
        shape["name"] = f"pod-{rng_seed}-{i}"
        shape["namespace"] = f"team-{i % 7}"
        shape["priority"] = i % 3
        try:
            status, body = client.request("POST", "/v1/pods", shape)
        except Exception:  # the server was killed: no reply, no promise
            return
        if status == 201:
            with lock:
                acked[body["uid"]] = body
        elif status >= 500 or status == 0:
            return
        else:
            raise AssertionError(f"POST /v1/pods: {status} {body}")


def same_placement(acked, now):
    """The restarted server's pod against the reply it gave: uid, phase, node, GPUs."""
    if now["uid"] != acked["uid"] or now["name"] != acked["name"]:
        return False
    if acked["phase"] == "Bound":
        return (now["phase"] == "Bound" and now["node"] == acked["node"] and
                now["gpus"] == acked["gpus"])
    # Pending when acknowledged: it may have been bound since (later, also durably).
    return now["phase"] in ("Pending", "Bound")


def verify(server, acked_all, round_no):
    client = testlib.Client(server.port)
    pods = testlib.list_pods(client)
    status, nodes = client.request("GET", "/v1/nodes")
    assert status == 200, nodes
    by_uid = {}
    for p in pods:
        if p["uid"] in by_uid:
            raise AssertionError(f"round {round_no}: pod {p['uid']} listed twice")
        by_uid[p["uid"]] = p
    names = [(p["namespace"], p["name"]) for p in pods]
    if len(names) != len(set(names)):
        raise AssertionError(f"round {round_no}: a namespace/name appears twice")
    missing = [u for u in acked_all if u not in by_uid]
    if missing:
        raise AssertionError(f"round {round_no}: {len(missing)} acknowledged pods lost, e.g. "
                             f"{missing[:3]}")
    moved = [u for u, a in acked_all.items() if not same_placement(a, by_uid[u])]
    if moved:
        u = moved[0]
        raise AssertionError(f"round {round_no}: {len(moved)} pods changed, e.g. {acked_all[u]} "
                             f"-> {by_uid[u]}")
    gpus = testlib.check_no_gpu_overcommitted(pods, nodes["items"])
    bound = sum(1 for p in pods if p["phase"] == "Bound")
    # What the server reported bound since must stay bound where it was.
    for p in pods:
        if p["phase"] == "Bound":
            acked_all[p["uid"]] = p
    return len(pods), bound, gpus


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pods", type=int, default=20000, help="submissions in all")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    nodes_csv = testlib.trace_file("openb_node_list_gpu_node.csv")
    shapes = testlib.read_pod_shapes(testlib.trace_file("openb_pod_list_default.csv"))
    rng = random.Random(args.seed)
    state = tempfile.mkdtemp(prefix="seedance-crash-")
    acked_all = {}
    try:
        first = testlib.Server(args.binary, state, ["--nodes", nodes_csv]).start()
        first.stop()
        # SIGKILL at `rounds` random moments of one stream of `pods` submissions: after a random
        # number of acknowledgements each; a last round sends the rest and stops cleanly.
        kills = sorted(rng.sample(range(args.pods // 20, args.pods * 19 // 20), args.rounds))
        sent = 0
        for r in range(1, args.rounds + 2):
            server = testlib.Server(args.binary, state).start()
            if r > 1:
                n, bound, gpus = verify(server, acked_all, r - 1)
                print(f"round {r - 1}: after restart {n} pods ({bound} bound on {gpus} GPUs), "
                      f"all {len(acked_all)} acknowledged pods present and unchanged", flush=True)
            last = r > args.rounds
            budget = args.pods - sent
            kill_after = None if last else max(1, kills[r - 1] - len(acked_all))
            acked, lock, next_index = {}, threading.Lock(), [0]
            threads = [threading.Thread(target=submit_until_killed,
                                        args=(server.port, shapes, next_index, budget, acked,
                                              lock, args.seed * 1000 + r * 100 + c))
                       for c in range(args.clients)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            while kill_after is not None:
                with lock:
                    done = len(acked)
                if done >= kill_after or not any(t.is_alive() for t in threads):
                    break
                time.sleep(0.001)
            if last:
                for t in threads:
                    t.join()
                server.stop()
            else:
                server.kill()
                for t in threads:
                    t.join()
            elapsed = time.monotonic() - t0
            sent += min(next_index[0], budget)
            acked_all.update(acked)
            how = "stopped" if last else "SIGKILL"
            print(f"round {r}: {len(acked)} pods acknowledged in {elapsed:.1f} s "
                  f"({len(acked) / max(elapsed, 1e-9):.0f}/s), then {how}", flush=True)
        server = testlib.Server(args.binary, state).start()
        n, bound, gpus = verify(server, acked_all, args.rounds + 1)
        print(f"round {args.rounds + 1}: after restart {n} pods ({bound} bound on {gpus} GPUs), all "
              f"{len(acked_all)} acknowledged pods present and unchanged; no GPU over 1000 milli, "
              f"no duplicates", flush=True)
        server.stop()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    sys.exit(main())
