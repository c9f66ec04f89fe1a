#!/usr/bin/python3
"""Checks tools/analysis/thread_safety.py on small trees whose findings are known.

Each case is a tree with the real seedance/base/mutex.h and one source, analysed as the check
analyses the project: a clean file passes; a raw std::mutex, a mutex that guards nothing, a
guarded member written without its lock and a condition-variable predicate without its
annotation each fail.
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import thread_safety as ts  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))

GOOD = """#include <condition_variable>
#include "seedance/base/mutex.h"
namespace seedance {
class Counter {
 public:
  void Add() {
    base::MutexLock lock(mu_);
    ++n_;
    cv_.notify_all();
  }
  void WaitFor(int want) {
    base::MutexLock lock(mu_);
    lock.Wait(cv_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return n_ >= want; });
  }
 private:
  base::Mutex mu_;
  std::condition_variable cv_;
  int n_ ABSL_GUARDED_BY(mu_) = 0;
};
}  // namespace seedance
"""

CASES = {
    # name: (source, expected exit status, a substring of the report)
    "annotated and locked": (GOOD, 0, "0 finding(s)"),
    "a raw std::mutex": (GOOD.replace("base::Mutex mu_;", "base::Mutex mu_;\n  std::mutex raw_;"),
                         1, "std::mutex is invisible"),
    "a mutex that guards nothing": (GOOD.replace("base::Mutex mu_;",
                                                 "base::Mutex mu_;\n  base::Mutex idle_;"),
                                    1, "mutex 'idle_' guards nothing"),
    "a write without the lock": (GOOD.replace("    base::MutexLock lock(mu_);\n    ++n_;",
                                              "    ++n_;"),
                                 1, "writing variable 'n_' requires holding mutex 'mu_'"),
    "a predicate without its annotation": (
        GOOD.replace("[&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {", "[&] {"), 1,
        "reading variable 'n_' requires holding mutex 'mu_'"),
}


def run_case(d, source):
    src = os.path.join(d, "src", "x", "counter.cc")
    with open(src, "w") as f:
        f.write(source)
    entry = {"directory": d, "file": src,
             "command": f"/usr/bin/c++ -I{os.path.join(d, 'include')} -Wall -Werror -O1 -g1 "
                        f"-std=c++20 -o counter.o -c {src}"}
    with open(os.path.join(d, "build", "compile_commands.json"), "w") as f:
        json.dump([entry], f)
    sys.argv = ["thread_safety.py", "--root", d, "--build", os.path.join(d, "build"), "--jobs", "1"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = ts.main()
    return rc, out.getvalue()


def main():
    if not (shutil.which("clang++") or shutil.which("clang++-14")):
        print("thread_safety_test: clang++ not found (tools/install_deps.sh installs it)")
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for sub in ("src/x", "build", "include/seedance/base"):
            os.makedirs(os.path.join(d, sub))
        shutil.copy(os.path.join(ROOT, "include", ts.MUTEX_HEADER),
                    os.path.join(d, "include", ts.MUTEX_HEADER))
        for name, (source, want_rc, want_text) in CASES.items():
            rc, out = run_case(d, source)
            ok = rc == want_rc and want_text in out
            failures += not ok
            print(("ok   " if ok else "FAIL ") + f"{name}: exit {rc}" +
                  ("" if ok else f" (want {want_rc} and '{want_text}')\n{out}"))
    # Sources the build itself compiled with the analysis as an error are not compiled again;
    # any other command (gcc, clang without the flag or with warnings allowed) is.
    for command, want in (("/usr/bin/clang++ -Wall -Werror -Wthread-safety -c a.cc", True),
                          ("/usr/bin/c++ -Wall -Werror -Wthread-safety -c a.cc", False),
                          ("/usr/bin/clang++ -Wall -Werror -c a.cc", False),
                          ("clang++ -Werror -Wthread-safety -Xclang -Wno-error -c a.cc", False),
                          ("clang++ -Werror -Wthread-safety -Wno-error=thread-safety -c a.cc",
                           False)):
        got = ts.built_with_analysis({"command": command})
        failures += got != want
        print(("ok   " if got == want else "FAIL ") + f"built with the analysis: {command}: {got}")
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
