#!/usr/bin/python3
"""Checks the lock discipline: clang's thread-safety analysis over every file that uses a mutex.

The style brief (../shared/STYLE.md) asks for the lock discipline in annotations, and issue 36 for
`-Wthread-safety -Werror` in the clang build. The project's mutexes are seedance/base/mutex.h's
(std::mutex underneath, with the annotations clang reads); this check:
  1. fails on a raw standard mutex or lock in src/ or include/ (std::mutex, std::shared_mutex,
     std::lock_guard, std::unique_lock, std::scoped_lock, std::shared_lock): the analysis cannot see
     them, so they are spelled with base::Mutex / base::MutexLock and friends;
  2. fails on a base::Mutex or base::SharedMutex member that no annotation names
     (ABSL_GUARDED_BY, ABSL_PT_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED, ...) in its file or the
     file's header/source twin: a mutex must say what it guards;
  3. compiles every source that includes seedance/base/mutex.h, directly or through the project's
     headers, with `clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety` and the flags of
     the build's compile_commands.json (gcc-only and code-generation flags dropped; the analysis
     is a front-end pass, so nothing is generated). A source whose own build command is clang's
     with `-Wthread-safety` and `-Werror` (the sanitizer build of `make asan`) is not compiled
     again: the build that produced this compile_commands.json already failed on any finding.

Usage: tools/analysis/thread_safety.py --root DIR --build DIR [--jobs N] [--clang PATH] [SOURCE...]
Exit status: 0 clean, 1 a finding, 2 bad usage or a missing compiler / compile_commands.json.
Python 3 standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

MUTEX_HEADER = "seedance/base/mutex.h"
SCAN_DIRS = ("src", "include")
RAW = re.compile(r"\bstd::(mutex|shared_mutex|recursive_mutex|timed_mutex|lock_guard|unique_lock|"
                 r"scoped_lock|shared_lock)\b")
DECL = re.compile(r"^\s*(?:mutable\s+)?(?:(?:seedance::)?base::)?(?:Shared)?Mutex\s+(\w+)\s*;",
                  re.M)
ANNOTATION = re.compile(r"ABSL_\w+\(([^()]*)\)")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Flags of the gcc builds that clang rejects or that only matter to code generation.
DROP_PREFIXES = ("--param", "-fsanitize", "-fno-sanitize", "-O", "-g", "-W", "-fno-omit")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def sources(root):
    for top in SCAN_DIRS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith((".h", ".cc")):
                    yield os.path.join(d, name)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def raw_mutex_findings(root, codes):
    out = []
    for path, code in codes.items():
        if path.endswith(MUTEX_HEADER):
            continue
        for no, line in enumerate(code.split("\n"), 1):
            m = RAW.search(line)
            if m:
                rel = os.path.relpath(path, root)
                out.append(f"{rel}:{no}: std::{m.group(1)} is invisible to the thread-safety "
                           f"analysis: use {MUTEX_HEADER} (base::Mutex, base::MutexLock...)")
    return out


def twin(path):
    """The header of a source in src/ (include/seedance/DIR/NAME.h) or the source of a header."""
    base, ext = os.path.splitext(path)
    parts = base.split(os.sep)
    if "include" in parts and ext == ".h":
        i = len(parts) - 1 - parts[::-1].index("include")
        return os.sep.join(parts[:i] + ["src"] + parts[i + 2:]) + ".cc"
    if "src" in parts and ext == ".cc":
        i = len(parts) - 1 - parts[::-1].index("src")
        return os.sep.join(parts[:i] + ["include", "seedance"] + parts[i + 1:]) + ".h"
    return None


def unannotated_mutexes(root, codes):
    out = []
    for path, code in codes.items():
        if path.endswith(MUTEX_HEADER):
            continue
        names = set()
        for other in (code, codes.get(twin(path), "")):
            for args in ANNOTATION.findall(other):
                names.update(re.findall(r"\w+", args))
        for m in DECL.finditer(code):
            if m.group(1) not in names:
                no = code.count("\n", 0, m.start()) + 1
                out.append(f"{os.path.relpath(path, root)}:{no}: mutex '{m.group(1)}' guards "
                           "nothing the analysis knows: annotate what it protects "
                           f"(ABSL_GUARDED_BY({m.group(1)}) on the members, "
                           "ABSL_EXCLUSIVE_LOCKS_REQUIRED on the functions)")
    return out


def users(root, texts):
    """The files that include the mutex header, directly or through the project's headers."""
    includes = {}
    for path, text in texts.items():
        found = []
        for inc in INCLUDE.findall(text):
            for base in (os.path.join(root, "include"), os.path.dirname(path),
                         os.path.join(root, "src"), root):
                cand = os.path.normpath(os.path.join(base, inc))
                if cand in texts or inc == MUTEX_HEADER:
                    found.append(cand)
                    break
        includes[path] = found
    header = os.path.normpath(os.path.join(root, "include", MUTEX_HEADER))
    memo = {}

    def uses(path, seen):
        if path == header:
            return True
        if path in memo:
            return memo[path]
        seen.add(path)
        result = any(uses(i, seen) for i in includes.get(path, ()) if i not in seen)
        memo[path] = result
        return result

    return {p for p in texts if uses(p, set())}


def clang_command(entry, clang):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a == "-c" or a.startswith(DROP_PREFIXES):
            continue
        out.append(a)
    return out + ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety"]


def built_with_analysis(entry):
    """The entry's own command is clang with the analysis on and its warnings as errors."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    if "clang" not in os.path.basename(args[0]):
        return False
    if any(a == "-Wno-error" or a.startswith(("-Wno-thread-safety", "-Wno-error=thread-safety"))
           for a in args):
        return False
    return "-Wthread-safety" in args and ("-Werror" in args or "-Werror=thread-safety" in args)


def analyse(entry, clang):
    cmd = clang_command(entry, clang)
    proc = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], proc.returncode, proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="the source checkout")
    ap.add_argument("--build", required=True, help="a build folder with compile_commands.json")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--clang", default=shutil.which("clang++") or shutil.which("clang++-14"))
    ap.add_argument("only", nargs="*", help="analyse just these sources (default: every user)")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    db_path = os.path.join(a.build, "compile_commands.json")
    if not a.clang:
        print("thread_safety: clang++ not found (tools/install_deps.sh installs it)")
        return 2
    if not os.path.isfile(db_path):
        print(f"thread_safety: {db_path}: no compile_commands.json (configure the build first)")
        return 2
    texts = {os.path.normpath(p): read(p) for p in sources(root)}
    codes = {path: strip_comments(text) for path, text in texts.items()}
    findings = raw_mutex_findings(root, codes) + unannotated_mutexes(root, codes)
    using = users(root, texts)
    with open(db_path) as f:
        db = [e for e in json.load(f) if os.path.normpath(e["file"]) in using]
    if a.only:
        wanted = {os.path.abspath(p) for p in a.only}
        db = [e for e in db if os.path.normpath(e["file"]) in wanted]
    built = [e for e in db if built_with_analysis(e)]
    db = [e for e in db if not built_with_analysis(e)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for path, rc, err in pool.map(lambda e: analyse(e, a.clang), db):
            if rc != 0:
                findings.append(f"{os.path.relpath(path, root)}: clang -Wthread-safety:\n{err}")
    for line in findings:
        print(line)
    print(f"thread_safety: {len(db)} sources analysed with {os.path.basename(a.clang)}, "
          f"{len(built)} by the build itself (clang -Wthread-safety -Werror); "
          f"{len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
