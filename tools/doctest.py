#!/usr/bin/env python3
"""Runs the shell examples of the documentation that are marked runnable (the doc test).

    python3 tools/doctest.py --bin build/src/cli README.md docs
    python3 tools/doctest.py --bin build/src/cli --needs slurm --only-needs docs/slurm.md
    python3 tools/doctest.py --list README.md docs

A runnable example is a fenced block whose info string is `sh` or `bash` followed by the word
`doctest`, with optional settings after it:

    ```sh doctest                 runs; must exit 0
    ```sh doctest exit=2          must exit 2 (an example of an error)
    ```sh doctest needs=slurm     runs only with --needs slurm (a real Slurm: root, packages)
    ```sh doctest cleanup         runs last, even after a failure (stops what the page started)

Markdown renderers show only the language. Each page runs in its own bash, its blocks in page
order, so a variable set in one block is there in the next; a block stops at its first failing
command (errexit, pipefail), and a page stops at its first block that ends with another status
than it says. The working directory is the checkout, `seedance` on PATH is the binary under test
(--bin), and SEEDANCE_DATA_DIR is passed through. As root, each page runs with a private /tmp
and, unless it needs Slurm, in its own network namespace (only loopback; port 7070 is free), so
pages run beside other tests and leave nothing behind; otherwise with a fresh TMPDIR. Every process a page starts is stopped at its
end (its process group, by PID). Exit status: 0 every block as the page says, 1 a block did not,
2 bad usage or a page that marks a block it cannot run.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)```(\w+)?(.*)$")
SETTING = re.compile(r"^(exit)=(\d+)$|^(needs)=(\w+)$|^(cleanup)$")


def die(message):
    print(message, file=sys.stderr)
    sys.exit(2)


class Block:
    def __init__(self, path, line, text, exit_status=0, needs="", cleanup=False):
        self.path, self.line, self.text = path, line, text
        self.exit, self.needs, self.cleanup = exit_status, needs, cleanup

    def where(self):
        return f"{self.path}:{self.line}"


def parse(path):
    """The runnable blocks of a Markdown file, in order; SystemExit(2) for a bad marker."""
    blocks, inside, lines, start, marker, indent = [], False, [], 0, None, 0
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            m = FENCE.match(raw.rstrip("\n"))
            if not inside and m:
                inside, lines, start, indent = True, [], n + 1, len(m.group(1))
                words = (m.group(3) or "").split()
                marker = words[1:] if m.group(2) in ("sh", "bash") and words[:1] == ["doctest"] \
                    else None
                continue
            if inside and m and not m.group(2) and not m.group(3).strip():
                inside = False
                if marker is not None:
                    blocks.append(make_block(path, start, "".join(lines), marker))
                continue
            if inside:  # a block in a list item: its lines lose the fence's indentation
                cut = len(raw) - len(raw.lstrip(" "))
                lines.append(raw[min(cut, indent):])
    if inside:
        die(f"doctest: {path}:{start - 1}: a fenced block that never ends")
    return blocks


def make_block(path, line, text, settings):
    b = Block(path, line, text)
    for s in settings:
        m = SETTING.match(s)
        if not m:
            die(f"doctest: {path}:{line - 1}: unknown setting '{s}' "
                     "(expected exit=N, needs=WHAT or cleanup)")
        if m.group(1):
            b.exit = int(m.group(2))
        elif m.group(3):
            b.needs = m.group(4)
        else:
            b.cleanup = True
    return b


def driver(blocks, marker_file):
    """The bash script of one page: each block inline (so variables carry), a failing one ends it."""
    out = ["set -eo pipefail"]
    for i, b in enumerate(blocks):
        out.append(f"echo {i} > {marker_file}")
        if b.exit == 0:
            out.append(b.text)
        else:
            out.append("set +e\n( set -e\n" + b.text + ")\n__doctest_rc=$?\nset -e")
            out.append(f"[ $__doctest_rc -eq {b.exit} ] || {{ echo \"doctest: exit "
                       f"$__doctest_rc, the page says {b.exit}\" >&2; exit 97; }}")
    out.append(f"echo done > {marker_file}")
    return "\n".join(out) + "\n"


def isolation(root_dir, net):
    """The argv prefix that gives a page its own /tmp and, with `net`, its own loopback (and
    nothing else: slurmctld cannot start there, since getaddrinfo(AI_ADDRCONFIG) finds no
    address), if this machine allows it; None if not."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return None
    flags = ["--mount", "--propagation", "private"] + (["--net"] if net else [])
    if subprocess.run(["unshare"] + flags + ["true"], capture_output=True).returncode != 0:
        return None
    setup = ["ip link set lo up"] if net else []
    # The checkout (or the binary) under /tmp would be hidden by a private /tmp.
    if not os.path.realpath(root_dir).startswith("/tmp/"):
        setup.append("mount -t tmpfs -o mode=1777 tmpfs /tmp")
    return ["unshare"] + flags + ["bash", "-c", " && ".join(setup + ['exec bash "$0"'])]


def stop_group(proc):
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def run_page(path, blocks, args, repo):
    prefix = [] if args.no_isolation else (
        isolation(repo, net=not any(b.needs for b in blocks)) or [])
    # With a private /tmp, the page's own files (its script, where it is) live outside /tmp.
    work = tempfile.mkdtemp(prefix="seedance-doctest-", dir="/var/tmp" if prefix else None)
    os.chmod(work, 0o755)
    marker = os.path.join(work, "block")
    main = [b for b in blocks if not b.cleanup]
    cleanup = [b for b in blocks if b.cleanup]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEEDANCE_")}
    env.update({"PATH": os.path.abspath(args.bin) + os.pathsep + os.environ.get("PATH", ""),
                "TMPDIR": work, "HOME": work, "LC_ALL": "C.UTF-8"})
    for k in ("SEEDANCE_DATA_DIR", "SEEDANCE_REQUIRE_DATA"):
        if k in os.environ:
            env[k] = os.environ[k]
    status, failed, output = 0, None, ""
    script = os.path.join(work, "page.sh")
    with open(script, "w") as f:
        # One shell for the page, with the cleanup blocks run on its way out whatever happened.
        cleanup_text = "\n".join(b.text for b in cleanup)
        f.write("trap '__doctest_status=$?; set +e\n" + cleanup_text.replace("'", "'\\''")
                + "\nexit $__doctest_status' EXIT\n" if cleanup else "")
        f.write(driver(main, marker))
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(prefix + [script] if prefix else ["bash", script], cwd=repo,
                                env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            status = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            status = "timeout"
        stop_group(proc)
        log.seek(0)
        output = log.read().decode("utf-8", "replace")
    try:
        with open(marker) as f:
            last = f.read().strip()
    except OSError:
        last = ""
    if status != 0:
        failed = main[int(last)] if last.isdigit() else None
    shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - t0
    if status == 0:
        print(f"ok   {path}: {len(main)} blocks ({took:.1f} s)")
        if args.verbose:
            for line in output.splitlines():
                print("     | " + line)
        return True
    where = failed.where() if failed else path
    what = "timed out after %d s" % args.timeout if status == "timeout" else f"exit {status}"
    print(f"FAIL {where}: the block {what}; its output (the last 40 lines):")
    for line in output.splitlines()[-40:]:
        print("     | " + line)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("files", nargs="+", help="Markdown files, or directories of them")
    ap.add_argument("--bin", default="build/src/cli",
                    help="directory of the `seedance` under test (first on PATH)")
    ap.add_argument("--needs", action="append", default=[],
                    help="also run the blocks that need this (slurm); repeatable")
    ap.add_argument("--only-needs", action="store_true",
                    help="run only the pages with a block that needs one of --needs")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a page may take")
    ap.add_argument("--list", action="store_true", help="list the runnable blocks and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every page's output")
    ap.add_argument("--no-isolation", action="store_true",
                    help="run pages in this machine's network and /tmp, as a reader would")
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pages, files = [], []
    for path in args.files:  # a directory stands for its *.md files
        files += sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".md")) \
            if os.path.isdir(path) else [path]
    for path in files:
        if not os.path.isfile(path):
            die(f"doctest: {path}: no such file")
        blocks = parse(path)
        if not blocks:
            continue
        needs = {b.needs for b in blocks if b.needs}
        if needs - set(args.needs):
            if not args.list:
                print(f"skip {path}: it needs {', '.join(sorted(needs))} (--needs)")
                continue
        elif args.only_needs and not needs:
            continue
        pages.append((path, blocks))
    if args.list:
        for path, blocks in pages:
            for b in blocks:
                extra = " ".join(x for x in (f"exit={b.exit}" if b.exit else "",
                                             f"needs={b.needs}" if b.needs else "",
                                             "cleanup" if b.cleanup else "") if x)
                print(f"{b.where()} {extra}".rstrip())
        return 0
    if not os.access(os.path.join(args.bin, "seedance"), os.X_OK):
        die(f"doctest: --bin {args.bin}: no executable seedance there")
    if not pages:
        die("doctest: no runnable block in " + " ".join(args.files))
    ok = [run_page(p, b, args, repo) for p, b in pages]
    print(f"doctest: {sum(ok)} of {len(ok)} pages passed, "
          f"{sum(len(b) for _, b in pages)} blocks")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
