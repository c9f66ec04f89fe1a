"""What the release tests share (install_test, sign_test, package_test): a line per check, `ok` or
`FAIL`, the failures counted for the exit status, and commands run with their output captured."""
import subprocess

FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def run(cmd, timeout=3600, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(cmd, timeout=timeout, **kw)


def summary():
    """Prints the verdict; the exit status: 1 when a check failed, else 0."""
    print("%d failed" % len(FAILURES) if FAILURES else "all passed")
    return 1 if FAILURES else 0
