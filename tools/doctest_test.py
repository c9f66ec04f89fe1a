#!/usr/bin/env python3
"""Checks tools/doctest.py itself: what it runs, and that it fails when a page is wrong.

    python3 tools/doctest_test.py build/src/cli
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

PAGES = {
    "carry.md": (0, "ok", """
```sh doctest
A=5
```
Text between blocks.
```sh doctest exit=3
[ "$A" = 5 ] && exit 3
```
```sh
false   # not marked: never run
```
"""),
    "stops.md": (1, "stops.md:6: the block exit 1", """
```sh doctest
echo first
```
```sh doctest
false
echo never printed
```
```sh doctest cleanup
echo cleanup ran
```
"""),
    "status.md": (1, "the page says 2", """
```sh doctest exit=2
true
```
"""),
    "pipefail.md": (1, "the block exit", """
```sh doctest
false | cat
```
"""),
    "hangs.md": (1, "timed out", """
```sh doctest
sleep 600 &
sleep 600
```
"""),
    "binary.md": (0, "ok", """
```sh doctest
seedance version >/dev/null
```
"""),
    "marker.md": (2, "unknown setting 'bogus'", """
```sh doctest bogus
true
```
"""),
}


def main():
    bindir = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory(dir="/var/tmp" if os.path.isdir("/var/tmp") else None) as d:
        for name, (want_rc, want_text, text) in PAGES.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([sys.executable, os.path.join(HERE, "doctest.py"), "--bin", bindir,
                                "--timeout", "5", path], capture_output=True, text=True,
                               timeout=120)
            out = p.stdout + p.stderr
            ok = p.returncode == want_rc and want_text in out
            if name == "stops.md":
                ok = ok and "cleanup ran" in out and "never printed" not in out
            print(("ok   " if ok else "FAIL ") + f"{name}: exit {p.returncode}")
            if not ok:
                failures += 1
                print(f"     wanted exit {want_rc} and '{want_text}'; got:\n{out}")
    # The pages of this checkout parse (every marker is one the runner knows).
    p = subprocess.run([sys.executable, os.path.join(HERE, "doctest.py"), "--list",
                        os.path.join(HERE, "..", "README.md"), os.path.join(HERE, "..", "docs")],
                       capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        failures += 1
        print(f"FAIL --list of the docs: exit {p.returncode}: {p.stderr}")
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
