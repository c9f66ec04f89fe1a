#!/usr/bin/env python3
"""The Slurm quick start of docs/slurm.md, run as written (tools/doctest.py --needs slurm).

    python3 tests/slurm/doc_test.py build/src/cli

Needs what backend_test.py needs (root, the Debian packages slurm_cluster.py names) and skips
(77) without them, unless SEEDANCE_REQUIRE_DATA=1 makes that a failure."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import workload  # noqa: E402



def main():
    if len(sys.argv) != 2:
        sys.exit("usage: doc_test.py DIRECTORY_OF_SEEDANCE")
    workload.require_slurm_or_skip()
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "doctest.py"), "-v",
                           "--bin", sys.argv[1], "--needs", "slurm", "--only-needs",
                           os.path.join(ROOT, "docs", "slurm.md")], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
