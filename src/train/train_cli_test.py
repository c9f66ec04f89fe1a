#!/usr/bin/python3
"""`mpirun -np 4 seedance train` end to end (issue 38; docs/training.md).

Usage: train_cli_test.py SEEDANCE SEEDANCE_TRAIN DATA_DIR
DATA_DIR holds digits.csv and breast_cancer.csv (tools/train_fixtures/export_datasets.py).

Checks, on real Open MPI jobs of 4 ranks:
  * convergence: with error feedback the 1-bit all-reduce ends within 1% of the FP32 all-reduce's
    training loss and within 0.5 points of its test accuracy (digits softmax, digits 64-32 MLP,
    breast-cancer softmax); without error feedback the digits softmax ends >= 30% above FP32;
  * failures end cleanly, with the cause named: the wrong rank count, a batch the ranks cannot
    split, a malformed CSV cell, a diverging run (non-finite gradients), a rank killed with
    SIGKILL mid-training, and a rank stopped (SIGSTOP) so that its peers wait in a collective
    until --timeout-s.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe",
          "--mca", "btl_vader_single_copy_mechanism", "none",
          "--mca", "btl_vader_backing_directory", "/tmp"]
FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


def train(seedance, env, ranks, args, timeout=300):
    cmd = MPIRUN + ["-np", str(ranks), seedance, "train"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def train_json(seedance, env, args):
    import json
    p = train(seedance, env, 4, args + ["--format", "json"])
    if p.returncode != 0:
        FAILURES.append(f"train {' '.join(args)} exited {p.returncode}: {p.stderr[-2000:]}")
        return None
    return json.loads(p.stdout)


def convergence(seedance, env, data):
    cases = [
        ("digits softmax", ["--data", f"{data}/digits.csv", "--steps", "2000"], True),
        ("digits mlp:64-32", ["--data", f"{data}/digits.csv", "--model", "mlp:64-32",
                              "--steps", "1500", "--weight-decay", "1e-2"], False),
        ("breast-cancer softmax", ["--data", f"{data}/breast_cancer.csv", "--steps", "2000"],
         False),
    ]
    for name, args, without_ef in cases:
        args = args + ["--batch", "64", "--lr", "0.1", "--seed", "1"]
        fp32 = train_json(seedance, env, args + ["--allreduce", "fp32"])
        ef = train_json(seedance, env, args + ["--allreduce", "onebit-ef"])
        if fp32 is None or ef is None:
            continue
        rel = abs(ef["train_loss"] - fp32["train_loss"]) / fp32["train_loss"]
        acc = abs(ef["test_accuracy"] - fp32["test_accuracy"]) * 100
        print(f"     {name}: fp32 loss {fp32['train_loss']:.6f} acc {fp32['test_accuracy']:.4f}; "
              f"onebit-ef loss {ef['train_loss']:.6f} acc {ef['test_accuracy']:.4f}; "
              f"bytes/rank {fp32['bytes_sent_per_rank'][0]} vs {ef['bytes_sent_per_rank'][0]}")
        check(rel <= 0.01, f"{name}: onebit-ef loss within 1% of fp32 ({rel * 100:.2f}%)")
        check(acc <= 0.5, f"{name}: onebit-ef test accuracy within 0.5 points ({acc:.2f})")
        # Issue 38's bound per rank per step, d parameters in one bucket on N = 4 ranks.
        d, n, steps = ef["parameters"], 4, ef["steps"]
        bound = (2 * (n - 1) / n * ((d + 7) // 8) + 8 * n) * steps
        worst = max(ef["bytes_sent_per_rank"])
        check(worst <= bound, f"{name}: onebit-ef bytes per rank {worst} <= the bound {bound:.0f} "
              f"(fp32: {fp32['bytes_sent_per_rank'][0]})")
        if without_ef:
            plain = train_json(seedance, env, args + ["--allreduce", "onebit"])
            if plain is not None:
                above = plain["train_loss"] / fp32["train_loss"] - 1
                print(f"     {name}: onebit (no error feedback) loss {plain['train_loss']:.6f}")
                check(above >= 0.30, f"{name}: onebit without EF >= 30% above fp32 "
                      f"({above * 100:.0f}%)")


def refusals(seedance, env, data, tmp):
    p = train(seedance, env, 4, ["--data", f"{data}/digits.csv", "--world-size", "3"])
    check(p.returncode == 2 and "mpirun started 4 ranks but --world-size is 3" in p.stderr,
          f"the wrong rank count: exit 2 naming both counts (got {p.returncode})")
    p = train(seedance, env, 4, ["--data", f"{data}/digits.csv", "--batch", "30"])
    check(p.returncode == 2 and "--batch 30 does not split evenly over the 4 ranks" in p.stderr,
          f"a batch 4 ranks cannot split: exit 2 (got {p.returncode})")
    bad = os.path.join(tmp, "bad.csv")
    with open(f"{data}/breast_cancer.csv") as f:
        lines = f.read().splitlines()
    cells = lines[3].split(",")
    cells[2] = "abc"
    lines[3] = ",".join(cells)
    with open(bad, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = train(seedance, env, 2, ["--data", bad])
    check(p.returncode == 2 and f"{bad}:4: field 'mean_perimeter': must be a finite number"
          in p.stderr, f"a malformed cell: exit 2 naming file, line and column ({p.stderr[:200]!r})")
    p = train(seedance, env, 4, ["--data", f"{data}/digits.csv", "--model", "mlp:64", "--lr",
                                 "1e30", "--steps", "50"])
    check(p.returncode == 1 and "not finite" in p.stderr and "step " in p.stderr,
          f"a diverging run: exit 1 naming the step ({p.stderr[:300]!r})")


def ranks_of(marker):
    """PIDs of this job's ranks: the seedance-train processes whose arguments hold `marker` (read
    from /proc: no procps needed)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"seedance-train") and marker.encode() in argv:
            pids.append(int(entry))
    return sorted(pids)


def lost_rank(seedance, env, data, sig, timeout_s, expect):
    marker = str(900000 + sig)  # a --seed no other test uses: finds this job's ranks
    cmd = MPIRUN + ["-np", "4", seedance, "train", "--data", f"{data}/digits.csv",
                    "--steps", "100000000", "--seed", marker, "--timeout-s", str(timeout_s),
                    "--progress-s", "1000"]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=env)
    # Rank 0's first progress line comes after the first step: every rank is past MPI_Init and in
    # the training loop.
    # Open MPI may print warnings first: read up to that line (EOF if the job ended).
    first = ""
    while "step 1 of" not in first:
        line = job.stdout.readline()
        if not line:
            break
        first += line
    pids = ranks_of(marker)
    if "step 1 of" not in first or len(pids) < 4:
        job.kill()
        check(False, f"signal {sig}: the 4 ranks never started ({first!r}, {pids})")
        return
    os.kill(pids[-1], sig)
    start = time.monotonic()
    try:
        out, _ = job.communicate(timeout=timeout_s + 60)
        out = first + out
    except subprocess.TimeoutExpired:
        job.kill()
        out, _ = job.communicate()
        check(False, f"signal {sig}: the job hung after a rank was lost")
        return
    took = time.monotonic() - start
    check(job.returncode != 0 and expect in out,
          f"signal {sig} to one rank: the job ended in {took:.1f} s, exit {job.returncode}, "
          f"naming it ({expect!r} in {out[-600:]!r})")
    for pid in pids:  # nothing left behind, stopped or not
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    seedance, train_bin, data = sys.argv[1:]
    if not os.path.exists(f"{data}/digits.csv"):
        print(f"train_cli_test: {data}/digits.csv missing (the train_datasets fixture)")
        return 1 if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1" else 77
    env = dict(os.environ, SEEDANCE_TRAIN_BIN=train_bin)
    with tempfile.TemporaryDirectory() as tmp:
        convergence(seedance, env, data)
        refusals(seedance, env, data, tmp)
        lost_rank(seedance, env, data, signal.SIGKILL, 300, "exited on signal 9")
        lost_rank(seedance, env, data, signal.SIGSTOP, 3, "did not finish within")
    if FAILURES:
        print(f"train_cli_test: {len(FAILURES)} failure(s)")
        return 1
    print("train_cli_test: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
