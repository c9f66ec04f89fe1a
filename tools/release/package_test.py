#!/usr/bin/env python3
"""A release as its users get it (docs/install.md): reproducible, lint-clean, installable on a
clean Debian bookworm, removable, and runnable as a container image.

  package_test.py [--dist DIR --second-dist DIR] [--keep DIR]

Without --dist it runs tools/release.sh twice (two Release builds of HEAD, in different
directories, one after the other: about 25 minutes on 2 cores), each signed with a throw-away
minisign key. Then:
1. Reproducible: the two runs' .deb files and source archive are byte-identical; each run's
   SHA256SUMS and signature verify.
2. lintian: no error (warnings listed).
3. A clean Debian bookworm root made here with debootstrap (minbase: no compiler, no cmake):
   `apt-get install ./seedance_*.deb` resolves every dependency from Debian's archive; `seedance
   version` names the release and commit; `seedance simulate` runs its built-in workload;
   seedanced, started by its systemd unit's own command line as the unit's user, answers
   /readyz and places a pod; `dpkg -r seedance` leaves nothing of the package but the state
   directory /var/lib/seedance.
4. The image built from deploy/container/Dockerfile with buildah (on a base image made from the
   same debootstrap root, since no registry is reachable) runs as the `seedance` user and its own
   command line, with only the listen address moved to a free loopback port, answers /readyz.

Needs root, debootstrap, lintian, minisign and buildah (bash tools/install_deps.sh release) and
Debian's archive over the network. Exit 0 when every check passes.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from checks import check, run, summary  # tools/release/checks.py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("SEEDANCE_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
MIRROR = "http://deb.debian.org/debian"
CACHE = "/var/cache/seedance-release-test"
# What stays after `dpkg -r` by design, besides /var/lib/seedance: the `seedance` system user
# (Debian leaves system users in place), whose creation left adduser's backups of the account
# files; the dynamic linker's cache.
USER_FILES = ("/etc/passwd-", "/etc/group-", "/etc/shadow-", "/etc/gshadow-", "/etc/subuid-",
              "/etc/subgid-", "/etc/ld.so.cache")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def build_release(work, name, key):
    out = os.path.join(work, name, "dist")
    r = run([os.path.join(ROOT, "tools/release.sh"), "--out", out, "--work",
             os.path.join(work, name, "work"), "--key", key], capture_output=False)
    check(r.returncode == 0, "tools/release.sh into %s" % out)
    return out


def check_reproducible(d1, d2, pub):
    arts = sorted(os.path.basename(p) for p in glob.glob(os.path.join(d1, "*.deb")) +
                  glob.glob(os.path.join(d1, "*.tar.gz")))
    check(len(arts) == 3, "three artifacts: %s" % ", ".join(arts))
    for a in arts:
        other = os.path.join(d2, a)
        same = os.path.exists(other) and sha256(os.path.join(d1, a)) == sha256(other)
        check(same, "%s byte-identical in both builds (%d bytes, sha256 %s)" %
              (a, os.path.getsize(os.path.join(d1, a)), sha256(os.path.join(d1, a))[:16]))
    for d in (d1, d2):
        if pub and os.path.exists(os.path.join(d, "SHA256SUMS.minisig")):
            r = run([os.path.join(ROOT, "tools/release.sh"), "verify", d, "--pubkey", pub])
            check(r.returncode == 0, "release.sh verify %s" % d)


def check_no_build_paths(dist, work):
    """No file of the packages names the directory it was built in (a path in a string is what
    made two builds differ before: the source directory compiled into DataDir())."""
    found = []
    for deb in sorted(glob.glob(os.path.join(dist, "*.deb"))):
        out = os.path.join(work, "x", os.path.basename(deb))
        run(["dpkg-deb", "-x", deb, out])
        for d, _, files in os.walk(out):
            for n in files:
                path = os.path.join(d, n)
                if os.path.islink(path):
                    continue
                with open(path, "rb") as f:
                    if os.path.dirname(os.path.dirname(os.path.abspath(dist))).encode() in f.read():
                        found.append(os.path.relpath(path, out))
    check(not found, "no packaged file names the build directory%s" %
          ("" if not found else ": " + ", ".join(found[:5])))


def check_lintian(d):
    report = os.path.join(d, "lintian.txt")
    if not os.path.exists(report):
        with open(report, "w") as f:
            f.write(run(["lintian", "--tag-display-limit 0", "--info"] +
                        glob.glob(os.path.join(d, "*.deb"))).stdout)
    with open(report) as f:
        lines = f.read().splitlines()
    errors = [l for l in lines if l.startswith("E:")]
    warnings = sorted(set(re.sub(r"^W: [^:]+: ", "", l).split(" ")[0] for l in lines
                          if l.startswith("W:")))
    check(not errors, "lintian: %d errors%s; warnings: %s" %
          (len(errors), "" if not errors else " (" + "; ".join(errors[:5]) + ")",
           ", ".join(warnings) or "none"))


def debootstrap(base):
    os.makedirs(CACHE, exist_ok=True)
    r = run(["debootstrap", "--variant=minbase", "--cache-dir=" + CACHE, "bookworm", base, MIRROR])
    if not check(r.returncode == 0, "debootstrap --variant=minbase bookworm"):
        print(r.stdout[-2000:], r.stderr[-2000:])
        return False
    tools = [t for t in ("gcc", "g++", "c++", "cc", "cmake", "make", "ninja")
             if os.path.exists(os.path.join(base, "usr/bin", t))]
    check(not tools, "the root has no build tools (%s)" % (", ".join(tools) or "none found"))
    return True


def chroot(root, script, user=None, timeout=1800, popen=False):
    """Runs sh -c SCRIPT in ROOT with /proc and /dev mounted in a private mount namespace."""
    inner = "mount -t proc proc '%s/proc' && mount --rbind /dev '%s/dev' && exec chroot %s '%s' " \
            "/bin/sh -c \"$0\"" % (root, root, "--userspec=%s:%s" % (user, user) if user else "",
                                   root)
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner, script]
    if popen:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    return run(cmd, timeout=timeout)


def owned_paths(root):
    """Every path an installed package lists, under both names where /bin, /lib, /sbin are
    links into /usr (bookworm is merged-/usr: a package lists /lib/x.so, the walk sees
    /usr/lib/x.so)."""
    owned = set()
    for lst in glob.glob(os.path.join(root, "var/lib/dpkg/info/*.list")):
        with open(lst) as f:
            for line in f:
                p = line.strip()
                owned.add(p)
                if re.match(r"^/(bin|sbin|lib|lib32|lib64|libx32)(/|$)", p):
                    owned.add("/usr" + p)
    return owned


def resolve(root, path):
    """Where a link inside ROOT leads, as a path inside ROOT (absolute targets are ROOT's)."""
    for _ in range(20):
        if not os.path.islink(root + path):
            break
        target = os.readlink(root + path)
        path = target if target.startswith("/") else os.path.normpath(
            os.path.join(os.path.dirname(path), target))
    return path


def all_paths(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add("/" + os.path.relpath(os.path.join(d, n), root))
    return out


def install_and_run(root, dist):
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))
    deb = os.path.basename(glob.glob(os.path.join(dist, "seedance_*.deb"))[0])
    shutil.copy(os.path.join(dist, deb), os.path.join(root, "tmp", deb))
    before = all_paths(root)
    pkgs_before = set(run(["chroot", root, "dpkg-query", "-W", "-f", "${Package}\\n"]).stdout.split())
    r = chroot(root, "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get "
               "install -y -q --no-install-recommends /tmp/%s" % deb)
    if not check(r.returncode == 0, "apt-get install ./%s in the clean root" % deb):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return
    new = sorted(set(run(["chroot", root, "dpkg-query", "-W", "-f", "${Package}\\n"]).stdout.split())
                 - pkgs_before)
    policy = run(["chroot", root, "apt-cache", "policy"] + [p for p in new if p != "seedance"]).stdout
    blocks = re.split(r"\n(?=\S)", policy)
    foreign = [b.split(":")[0] for b in blocks if b.strip() and "deb.debian.org" not in b]
    check(not foreign, "the %d packages apt added besides seedance all come from Debian's "
          "archive%s" % (len(new) - 1, "" if not foreign else ": not " + ", ".join(foreign)))
    r = chroot(root, "seedance version --format json")
    try:
        v = json.loads(r.stdout)
    except ValueError:
        v = {}
    check(r.returncode == 0 and re.match(r"^\d+\.\d+\.\d+$", v.get("version", "")) and
          re.match(r"^[0-9a-f]{12}$", v.get("commit", "")) and v.get("build_type") == "Release",
          "seedance version: %s" % json.dumps({k: v.get(k) for k in ("version", "commit",
                                                                     "build_type")}))
    r = chroot(root, "seedance simulate --format json -o /tmp/sim.json && head -c 300 /tmp/sim.json")
    check(r.returncode == 0 and "simulate/v1" in r.stdout, "seedance simulate (built-in workload)")
    run_unit(root)
    r = chroot(root, "dpkg -r seedance")
    check(r.returncode == 0, "dpkg -r seedance")
    left = sorted(p for p in all_paths(root) - before - owned_paths(root)
                  if not re.match(r"^/(var/lib/(apt|dpkg)|var/cache|var/log|tmp|run|proc|dev)(/|$)",
                                  p) and p not in USER_FILES)
    # Links other packages' maintainer scripts made (update-alternatives, ldconfig): kept when
    # they point at files of the packages that are still installed.
    owned = owned_paths(root)
    left = [p for p in left if not (os.path.islink(root + p) and resolve(root, p) in owned)]
    outside = [p for p in left if not p.startswith("/var/lib/seedance")]
    check("/var/lib/seedance/state.db" in left and not outside,
          "dpkg -r leaves only the state directory (%s)%s" %
          (", ".join(left[:4]), "" if not outside else "; also " + ", ".join(outside[:10])))


def unit_command(root, port):
    with open(os.path.join(root, "lib/systemd/system/seedanced.service")) as f:
        unit = f.read()
    user = re.search(r"^User=(\S+)", unit, re.M).group(1)
    env = dict(re.findall(r"^Environment=(\w+)=(\S*)", unit, re.M))
    env["SEEDANCED_LISTEN"] = "127.0.0.1:%d" % port  # the only change: a free loopback port
    env.setdefault("SEEDANCED_OPTS", "")
    line = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    line = re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), line)
    line = re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), ""), line)
    return user, line.split()


def run_unit(root):
    port = free_port()
    user, argv = unit_command(root, port)
    p = chroot(root, "exec " + " ".join(argv), user=user, popen=True)
    url = "http://127.0.0.1:%d" % port
    try:
        if not check(wait_ready(url, p), "seedanced from its unit's ExecStart as user %s "
                     "answers /readyz (%s)" % (user, " ".join(argv))):
            return
        body = json.dumps({"cpu_milli": 32000, "memory_mib": 65536, "num_gpus": 4,
                           "gpu_model": "A100"}).encode()
        urllib.request.urlopen(urllib.request.Request(url + "/v1/nodes/n1", body, method="PUT"))
        body = json.dumps({"name": "p1", "cpu_milli": 1000, "num_gpu": 1}).encode()
        with urllib.request.urlopen(urllib.request.Request(url + "/v1/pods", body)) as r:
            pod = json.load(r)
        check(pod.get("phase") == "Bound" and pod.get("node") == "n1", "the server places a pod")
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=60)


def build_image(work, base, dist):
    b = ["buildah", "--storage-driver", "vfs", "--root", os.path.join(work, "buildah/root"),
         "--runroot", os.path.join(work, "buildah/run")]
    ctr = run(b + ["from", "scratch"]).stdout.strip()
    mnt = run(b + ["mount", ctr]).stdout.strip()
    run(["cp", "-a", base + "/.", mnt + "/"])
    run(b + ["umount", ctr])
    r = run(b + ["commit", "-q", ctr, "localhost/debian:bookworm-local"])
    if not check(r.returncode == 0, "base image from the debootstrap root"):
        print(r.stderr[-2000:])
        return
    ctx = os.path.join(work, "context")
    os.makedirs(ctx)
    shutil.copy(os.path.join(ROOT, "deploy/container/Dockerfile"), ctx)
    for deb in glob.glob(os.path.join(dist, "seedance_*.deb")):
        shutil.copy(deb, ctx)
    r = run(b + ["bud", "--isolation", "chroot", "--build-arg",
                 "BASE=localhost/debian:bookworm-local", "-t", "localhost/seedance:test", ctx])
    if not check(r.returncode == 0, "buildah bud deploy/container/Dockerfile"):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return
    config = json.loads(run(b + ["inspect", "--type", "image", "localhost/seedance:test"]).stdout)
    cfg = config["OCIv1"]["config"]
    argv = (cfg.get("Entrypoint") or []) + (cfg.get("Cmd") or [])
    port = free_port()
    argv = [("127.0.0.1:%d" % port) if a == "0.0.0.0:7070" else a for a in argv]
    ctr = run(b + ["from", "localhost/seedance:test"]).stdout.strip()
    who = run(b + ["run", "--isolation", "chroot", ctr, "--", "id", "-un"]).stdout.strip()
    check(cfg.get("User") == "seedance" and who == "seedance", "the image runs as seedance")
    p = subprocess.Popen(b + ["run", "--isolation", "chroot", ctr, "--"] + argv,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        check(wait_ready("http://127.0.0.1:%d" % port, p),
              "the image's command (%s) answers /readyz" % " ".join(argv))
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=60)
        run(b + ["rm", "--all"])
        run(b + ["rmi", "--all", "--force"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dist")
    ap.add_argument("--second-dist")
    ap.add_argument("--keep")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (debootstrap, chroot, buildah)")
        return 1
    missing = [t for t in ("debootstrap", "lintian", "minisign", "buildah", "unshare")
               if shutil.which(t) is None]
    if missing:
        print("missing: %s (bash tools/install_deps.sh release)" % ", ".join(missing))
        return 1
    work = args.keep or tempfile.mkdtemp(prefix="seedance-package-test.")
    os.makedirs(work, exist_ok=True)
    try:
        pub = None
        if args.dist:
            d1, d2 = args.dist, args.second_dist or args.dist
        else:
            sec, pub = os.path.join(work, "key.sec"), os.path.join(work, "key.pub")
            run(["minisign", "-G", "-W", "-s", sec, "-p", pub])
            d1 = build_release(work, "first", sec)
            d2 = build_release(os.path.join(work, "elsewhere", "deeper"), "second", sec)
        check_reproducible(d1, d2, pub)
        check_no_build_paths(d1, work)
        check_lintian(d1)
        base = os.path.join(work, "base")
        if debootstrap(base):
            root = os.path.join(work, "root")
            run(["cp", "-a", base, root])
            install_and_run(root, d1)
            build_image(work, base, d1)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
