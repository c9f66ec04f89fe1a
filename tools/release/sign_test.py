#!/usr/bin/env python3
"""tools/release.sh's source archive, checksums and signature, checked the way a user checks a
download (docs/install.md, "Verifying a download").

1. Two `release.sh archive` runs of one commit, into different directories and at different
   times (the second starts after the clock has moved on by more than the archive formats'
   one-second resolution), give byte-identical archives, which hold the commit's files.
2. `release.sh sums DIR --key SECKEY` (a throw-away minisign key made here) writes SHA256SUMS
   and SHA256SUMS.minisig; `release.sh verify DIR --pubkey PUBKEY` passes.
3. Verification fails when any one byte of any artifact changes, when SHA256SUMS changes, when
   an artifact is missing, and when the public key is another one.

Needs git and minisign (tools/install_deps.sh); exit 77 without minisign unless
SEEDANCE_REQUIRE_DATA=1.
"""
import os
import shutil
import sys
import tarfile
import tempfile
import time

from checks import check, run, summary  # tools/release/checks.py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("SEEDANCE_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
RELEASE = os.path.join(ROOT, "tools/release.sh")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def flip_one_byte(path, offset):
    data = bytearray(read(path))
    data[offset % len(data)] ^= 0x01
    with open(path, "wb") as f:
        f.write(data)


def verify(d, pub):
    return run([RELEASE, "verify", d, "--pubkey", pub])


def main():
    if shutil.which("minisign") is None:
        print("minisign not found (apt-get install minisign): skipping")
        return 1 if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1" else 77
    work = tempfile.mkdtemp(prefix="seedance-sign-test.")
    try:
        a, b = os.path.join(work, "a"), os.path.join(work, "elsewhere", "b")
        r1 = run([RELEASE, "archive", "--out", a])
        start = time.time()
        while time.time() - start < 1.2:  # the clock moves past tar's and gzip's 1 s resolution
            time.sleep(0.1)
        r2 = run([RELEASE, "archive", "--out", b], cwd=work)
        if not check(r1.returncode == 0 and r2.returncode == 0, "release.sh archive twice"):
            print(r1.stderr, r2.stderr)
            return 1
        names = os.listdir(a)
        check(len(names) == 1 and names[0].startswith("seedance-") and names[0].endswith(".tar.gz"),
              "one archive: %s" % names)
        tgz = os.path.join(a, names[0])
        check(read(tgz) == read(os.path.join(b, names[0])),
              "the two archives are byte-identical (%d bytes)" % len(read(tgz)))
        with tarfile.open(tgz) as t:
            members = [m.name for m in t.getmembers() if not m.isdir()]
        top = names[0][:-len(".tar.gz")]
        head = run(["git", "-C", ROOT, "ls-tree", "-r", "--name-only", "HEAD"]).stdout.split()
        check(bool(head) and sorted(m[len(top) + 1:] for m in members) == sorted(head),
              "the archive holds exactly the commit's %d files under %s/" % (len(head), top))

        sec, pub = os.path.join(work, "key.sec"), os.path.join(work, "key.pub")
        r = run(["minisign", "-G", "-W", "-s", sec, "-p", pub])
        check(r.returncode == 0, "a throw-away minisign key")
        # A second artifact beside the archive, as a release has (its packages).
        with open(os.path.join(a, "seedance_0.0.0_amd64.deb"), "wb") as f:
            f.write(b"!<arch>\n" + bytes(range(256)) * 8)
        r = run([RELEASE, "sums", a, "--key", sec])
        check(r.returncode == 0 and os.path.exists(os.path.join(a, "SHA256SUMS.minisig")),
              "release.sh sums signs SHA256SUMS")
        with open(os.path.join(a, "SHA256SUMS")) as f:
            check(len(f.read().splitlines()) == 2, "SHA256SUMS lists both artifacts")
        r = verify(a, pub)
        check(r.returncode == 0, "verify passes on the release as written: " + r.stderr.strip())

        artifacts = sorted(n for n in os.listdir(a) if n != "SHA256SUMS.minisig")
        for name in artifacts:
            for offset in (0, 4097, -1):
                c = os.path.join(work, "case")
                shutil.rmtree(c, ignore_errors=True)
                shutil.copytree(a, c)
                flip_one_byte(os.path.join(c, name), offset)
                r = verify(c, pub)
                check(r.returncode == 1, "one byte changed at %d of %s: verify fails (%s)" %
                      (offset, name, r.stderr.strip().splitlines()[-1] if r.stderr else "no message"))
        c = os.path.join(work, "case")
        shutil.rmtree(c)
        shutil.copytree(a, c)
        os.remove(os.path.join(c, names[0]))
        check(verify(c, pub).returncode == 1, "a missing artifact: verify fails")
        other_sec, other_pub = os.path.join(work, "o.sec"), os.path.join(work, "o.pub")
        run(["minisign", "-G", "-W", "-s", other_sec, "-p", other_pub])
        check(verify(a, other_pub).returncode == 1, "another public key: verify fails")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
