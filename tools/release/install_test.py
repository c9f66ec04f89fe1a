#!/usr/bin/env python3
"""`cmake --install` of a build tree, checked as a user of each installed piece would use it.

  install_test.py BUILD_DIR

1. The layout: binaries (seedanced a link to seedance), libraries, headers, the CMake package,
   pkg-config files, manual pages, shell completion, the systemd unit, examples, deploy files.
2. The manual pages: groff reads each without a warning, and every flag `--help` lists for a
   command is in its page (the pages are generated from the same text).
3. A separate CMake project (tools/release/consumer) finds the installed package with
   find_package(Seedance CONFIG), links Seedance::sched and places a pod with fgd; the same
   program built with `pkg-config --cflags --libs seedance-sched` does the same.
4. Upgrade: the installed seedanced opens a state directory written by the previous release
   (fixtures/state-0.2.0, made by seedance 0.2.0) and serves every pod and node it held; a state
   whose schema is newer than the binary's is refused with a message naming both versions.
5. The systemd unit passes `systemd-analyze verify` and its hardening rates "OK" or better in
   `systemd-analyze security` (when systemd-analyze is installed).

Under a sanitizer build the consumer is compiled with the same sanitizers. Exit 0 on success.
"""
import gzip
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

from checks import check, run, summary  # tools/release/checks.py

HERE = os.path.dirname(os.path.abspath(__file__))


def cache_value(build, key):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"^%s:[A-Z]+=(.*)$" % re.escape(key), line.strip())
            if m:
                return m.group(1)
    return ""


def libdir_of(prefix):
    for cand in ("lib/x86_64-linux-gnu", "lib64", "lib"):
        if os.path.exists(os.path.join(prefix, cand, "libseedance_sched.a")):
            return os.path.join(prefix, cand)
    return None


def check_layout(prefix, build):
    must = ["bin/seedance", "bin/seedance-train", "include/seedance/sched/scheduler.h",
            "include/seedance/base/check.h", "share/man/man1/seedance.1.gz",
            "share/man/man1/seedance-simulate.1.gz", "share/man/man1/seedance-model-plan.1.gz",
            "share/man/man8/seedanced.8.gz", "share/bash-completion/completions/seedance",
            "share/zsh/vendor-completions/_seedance", "lib/systemd/system/seedanced.service",
            "share/doc/seedance/examples/cluster.yaml", "share/doc/seedance/copyright",
            "share/doc/seedance/changelog.gz", "share/doc/seedance/deploy/systemd/seedanced.default",
            "share/doc/seedance/deploy/kubernetes/kustomization.yaml",
            "share/doc/seedance/docs/install.md", "share/doc/seedance/docs/openapi.yaml",
            "share/doc/seedance/README.md"]
    for rel in must:
        check(os.path.exists(os.path.join(prefix, rel)), "installed " + rel)
    link = os.path.join(prefix, "bin/seedanced")
    check(os.path.islink(link) and os.readlink(link) == "seedance", "bin/seedanced -> seedance")
    lib = libdir_of(prefix)
    if not check(lib is not None, "libseedance_sched.a installed"):
        return None
    for rel in ("cmake/Seedance/SeedanceConfig.cmake", "cmake/Seedance/SeedanceConfigVersion.cmake",
                "cmake/Seedance/SeedanceTargets.cmake", "pkgconfig/seedance-sched.pc"):
        check(os.path.exists(os.path.join(lib, rel)), "installed %s/%s" %
              (os.path.relpath(lib, prefix), rel))
    names = sorted(f for f in os.listdir(lib) if f.startswith("libseedance_") and f.endswith(".a"))
    check(len(names) >= 20, "%d static libraries installed" % len(names))
    with open(os.path.join(lib, "cmake/Seedance/SeedanceTargets.cmake")) as f:
        targets = f.read()
    source = os.path.dirname(os.path.dirname(HERE))
    check(source not in targets and build not in targets,
          "the exported targets name no source or build directory")
    return lib


def help_flags(binary, words):
    out = run([binary] + words + ["--help"]).stdout
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", out.split("\n\n")[0] + "\n" +
                                 "\n".join(l for l in out.splitlines() if l.startswith("  -")))))


def check_man_pages(prefix):
    mandir = os.path.join(prefix, "share/man")
    pages = []
    for sec in ("man1", "man8"):
        d = os.path.join(mandir, sec)
        pages += [os.path.join(d, f) for f in sorted(os.listdir(d))] if os.path.isdir(d) else []
    check(len(pages) >= 30, "%d manual pages" % len(pages))
    noisy = []
    for page in pages:
        with gzip.open(page, "rt") as f:
            text = f.read()
        r = run(["groff", "-man", "-z", "-ww", "-Tutf8"], input=text)
        warnings = [l for l in r.stderr.splitlines()
                    if "cannot adjust line" not in l and "can't break line" not in l]
        if r.returncode != 0 or warnings:
            noisy.append("%s: %s" % (os.path.basename(page), "; ".join(warnings[:2])))
    check(not noisy, "groff reads every page without a warning" + ("" if not noisy else
                                                                      ": " + " | ".join(noisy[:3])))
    seedance = os.path.join(prefix, "bin/seedance")
    for words, page in ((["simulate"], "man1/seedance-simulate.1.gz"),
                        (["model", "plan"], "man1/seedance-model-plan.1.gz"),
                        (["server"], "man8/seedanced.8.gz")):
        with gzip.open(os.path.join(mandir, page), "rt") as f:
            roff = f.read().replace("\\-", "-")
        flags = help_flags(seedance, words)
        missing = [fl for fl in flags if fl not in roff]
        check(len(flags) >= 3 and not missing,
              "%s lists the %d flags of `seedance %s --help`%s" %
              (page, len(flags), " ".join(words), "" if not missing else ": missing " +
               ", ".join(missing)))


def check_completion(prefix):
    bash = os.path.join(prefix, "share/bash-completion/completions/seedance")
    r = run(["bash", "-c", "source '%s' && complete -p seedance" % bash])
    check(r.returncode == 0 and "_seedance" in r.stdout, "bash loads the completion")
    with open(os.path.join(prefix, "share/zsh/vendor-completions/_seedance")) as f:
        check(f.readline().startswith("#compdef seedance"), "zsh completion starts #compdef")


def check_unit(prefix, work):
    unit = os.path.join(prefix, "lib/systemd/system/seedanced.service")
    with open(unit) as f:
        text = f.read()
    for key in ("User=seedance", "StateDirectory=seedance", "NoNewPrivileges=yes",
                "ProtectSystem=strict"):
        check(key in text, "unit sets " + key)
    if shutil.which("systemd-analyze") is None:
        print("skip systemd-analyze not installed: unit not verified")
        return
    # verify checks that ExecStart's program exists: point it at the staged binary.
    d = os.path.join(work, "unit")
    os.makedirs(d, exist_ok=True)
    staged = os.path.join(d, "seedanced.service")
    with open(staged, "w") as f:
        f.write(text.replace("/usr/bin/seedanced", os.path.join(prefix, "bin/seedanced")))
    r = run(["systemd-analyze", "verify", "--man=no", staged])
    problems = [l for l in (r.stdout + r.stderr).splitlines() if "seedanced.service" in l]
    check(r.returncode == 0 and not problems, "systemd-analyze verify: " +
          ("clean" if not problems else "; ".join(problems[:3])))
    r = run(["systemd-analyze", "security", "--offline=yes", staged])
    m = re.search(r"Overall exposure level for seedanced.service: ([0-9.]+) (\w+)", r.stdout)
    check(m is not None and float(m.group(1)) <= 2.0,
          "systemd-analyze security: exposure %s" % (m.group(0).split(": ")[1] if m else "?"))


def sanitizer_flags(build):
    if cache_value(build, "SEEDANCE_SANITIZE") == "ON":
        return ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    return []


def check_consumers(build, prefix, lib, work):
    cxx = cache_value(build, "CMAKE_CXX_COMPILER") or "c++"
    flags = sanitizer_flags(build)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    out = os.path.join(work, "consumer-build")
    r = run(["cmake", "-S", os.path.join(HERE, "consumer"), "-B", out, "-G", "Ninja",
             "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_CXX_COMPILER=" + cxx,
             "-DCMAKE_CXX_FLAGS=" + " ".join(flags), "-DCMAKE_BUILD_TYPE=Release",
             "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"])
    if not check(r.returncode == 0, "consumer: find_package(Seedance CONFIG) configures"):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return
    with open(os.path.join(out, "CMakeCache.txt")) as f:
        found = re.search(r"^Seedance_DIR:PATH=(.*)$", f.read(), re.M)
    check(found is not None and found.group(1).startswith(prefix),
          "consumer: Seedance_DIR is the installed tree (%s)" % (found.group(1) if found else "?"))
    r = run(["cmake", "--build", out])
    if not check(r.returncode == 0, "consumer: builds against Seedance::sched"):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return
    r = run([os.path.join(out, "place_one")], env=env)
    check(r.returncode == 0 and re.match(r"placed share-1 on gpu-[ab] gpu [0-3] \(fgd\)", r.stdout),
          "consumer places a pod with fgd: " + (r.stdout.strip() or r.stderr.strip()[:300]))
    pc_env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
    r = run(["pkg-config", "--cflags", "--libs", "seedance-sched"], env=pc_env)
    if not check(r.returncode == 0, "pkg-config resolves seedance-sched"):
        print(r.stderr)
        return
    exe = os.path.join(work, "place_one_pc")
    r = run([cxx, "-std=c++20", "-O1"] + flags + [os.path.join(HERE, "consumer/place_one.cc"),
                                                  "-o", exe] + r.stdout.split())
    if not check(r.returncode == 0, "pkg-config consumer builds"):
        print(r.stderr[-3000:])
        return
    r = run([exe], env=env)
    check(r.returncode == 0 and "(fgd)" in r.stdout, "pkg-config consumer places a pod: " +
          (r.stdout.strip() or r.stderr.strip()[:300]))


def start_server(binary, state, work):
    ready = os.path.join(work, "ready")
    if os.path.exists(ready):
        os.remove(ready)
    log = open(os.path.join(work, "server.log"), "w")
    p = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--state", state, "--ready-file",
                          ready, "-q"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        if os.path.exists(ready) and os.path.getsize(ready) > 0:
            with open(ready) as f:
                return p, f.read().strip()
        time.sleep(0.05)
    return p, None


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def check_upgrade(prefix, work):
    fixture = os.path.join(HERE, "fixtures/state-0.2.0")
    with open(os.path.join(fixture, "expected.json")) as f:
        expected = json.load(f)
    state = os.path.join(work, "state")
    os.makedirs(state)
    shutil.copy(os.path.join(fixture, "state.db"), state)
    seedanced = os.path.join(prefix, "bin/seedanced")
    p, url = start_server(seedanced, state, work)
    try:
        if not check(url is not None, "seedanced starts on the 0.2.0 state directory"):
            with open(os.path.join(work, "server.log")) as f:
                print(f.read()[-2000:])
            return
        pods = get(url + "/v1/pods")["items"]
        keys = list(expected["pods"][0].keys())
        have = sorted(({k: q.get(k) for k in keys} for q in pods), key=lambda q: q["uid"])
        want = sorted(expected["pods"], key=lambda q: q["uid"])
        check(have == want, "every one of the %d pods of 0.2.0 kept (uid, phase, node, GPUs, "
              "labels, annotations, gang)" % len(want))
        nodes = {n["name"]: n for n in get(url + "/v1/nodes")["items"]}
        same = all(n["name"] in nodes and all(nodes[n["name"]].get(k) == v for k, v in n.items())
                   for n in expected["nodes"])
        check(same and len(nodes) == len(expected["nodes"]), "every node of 0.2.0 kept")
        ready = urllib.request.urlopen(url + "/readyz", timeout=30).status
        check(ready == 200, "/readyz answers 200 after the upgrade")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    newer = os.path.join(work, "newer")
    os.makedirs(newer)
    shutil.copy(os.path.join(fixture, "state.db"), newer)
    db = sqlite3.connect(os.path.join(newer, "state.db"))
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    r = run([seedanced, "--listen", "127.0.0.1:0", "--state", newer, "-q"], timeout=60)
    msg = r.stderr.strip()
    check(r.returncode != 0 and "schema version 99 is newer" in msg and "seedance" in msg,
          "a newer schema is refused (exit %d): %s" % (r.returncode, msg[:200]))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="seedance-install-test.")
    try:
        # DESTDIR, not --prefix: a tree configured for /usr puts the unit in /lib/systemd/system,
        # an absolute destination --prefix would not move (it would land on this machine).
        stage = os.path.join(work, "stage")
        prefix = stage + (cache_value(build, "CMAKE_INSTALL_PREFIX") or "/usr/local")
        r = run(["cmake", "--install", build], env=dict(os.environ, DESTDIR=stage))
        if not check(r.returncode == 0, "DESTDIR=%s cmake --install %s" % (stage, build)):
            print(r.stdout[-3000:], r.stderr[-3000:])
            return 1
        if prefix.endswith("/usr") and os.path.isdir(os.path.join(stage, "lib/systemd")):
            # Debian's place for a package's units; the checks below look under the prefix.
            os.makedirs(os.path.join(prefix, "lib"), exist_ok=True)
            os.symlink(os.path.join(stage, "lib/systemd"), os.path.join(prefix, "lib/systemd"))
        lib = check_layout(prefix, build)
        check_man_pages(prefix)
        check_completion(prefix)
        check_unit(prefix, work)
        if lib:
            check_consumers(build, prefix, lib, work)
        check_upgrade(prefix, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
