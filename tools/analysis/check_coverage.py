#!/usr/bin/python3
"""Lists every SEEDANCE_CHECK in src/ and include/ and the death tests whose regex matches it.

Issue 11 asks for "a death test per checked invariant". A check site is covered when some
EXPECT_DEATH / ASSERT_DEATH regex in a *_test.cc matches the report that check prints:

    seedance: invariant violated at FILE:LINE: CONDITION: MESSAGE

The message is the check's streamed text: string literals are kept, every other streamed value
(a variable, a call) becomes a gap that matches any text. The death-test regex is read as a
sequence of literal fragments separated by wildcards (`.*`, `.+`, `.`, `[...]` with or without
a repeat); `\\(` and friends are literals. The regex matches a check when its fragments occur in
order in some instance of the report, and at least min(10, all) of the regex's literal characters
land on the check's own condition or message text (not on the common header, and not swallowed
by a gap), so that "invariant violated.*X" does not match every check whose message ends in a
value. Checks in *_fuzz.cc are the fuzz targets' oracles, listed apart and not required to have
a death test.

Usage: tools/analysis/check_coverage.py [--root DIR] [--exclude PATH_PREFIX ...] [--uncovered]
Prints one line per check site (`covered`/`UNCOVERED`, FILE:LINE, message, the test names), then
the totals. Exit status 1 when an invariant check (not a fuzz oracle) has no death test.
Python 3 standard library only.
"""
import argparse
import os
import re
import sys

HEADER = "seedance: invariant violated at "
MIN_OWN_CHARS = 10

# Token kinds of a check's report template.
LIT, GAP, PATH, DIGITS = range(4)


def strip_comments(text):
    """Blanks // and /* */ comments, keeping string literals, offsets and newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def balanced(text, start):
    """Index just past the ')' closing the '(' at text[start]."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def split_top(text, sep):
    """Splits on `sep` outside brackets and string literals."""
    parts, depth, i, last = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[last:i])
            i += len(sep)
            last = i
            continue
        i += 1
    parts.append(text[last:])
    return parts


C_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def literal_value(expr):
    """The text of `expr` when it is only adjacent string literals, else None."""
    expr = expr.strip()
    if not expr.startswith('"'):
        return None
    out, i = [], 0
    while i < len(expr):
        if expr[i].isspace():
            i += 1
            continue
        if expr[i] != '"':
            return None
        i += 1
        while i < len(expr) and expr[i] != '"':
            if expr[i] == "\\" and i + 1 < len(expr):
                out.append(C_ESCAPES.get(expr[i + 1], expr[i + 1]))
                i += 2
            else:
                out.append(expr[i])
                i += 1
        i += 1
    return "".join(out)


def find_checks(path, text):
    """Yields (line, condition, message pieces) for each SEEDANCE_CHECK/UNREACHABLE in text."""
    code = strip_comments(text)
    for m in re.finditer(r"\bSEEDANCE_(CHECK|UNREACHABLE)\s*\(", code):
        if code[m.start() - 8:m.start()] == "#define " or "#define" in code[
                code.rfind("\n", 0, m.start()):m.start()]:
            continue  # the macro's own definition
        line = code.count("\n", 0, m.start()) + 1
        open_paren = m.end() - 1
        close = balanced(code, open_paren)
        if m.group(1) == "UNREACHABLE":
            yield line, "false", ["unreachable code reached"]
            continue
        cond = " ".join(code[open_paren + 1:close - 1].split())
        end = close + len(split_top(code[close:], ";")[0])
        rest = code[close:end].strip()
        pieces = []
        if rest.startswith("<<"):
            for part in split_top(rest[2:], "<<"):
                value = literal_value(part)
                pieces.append(value if value is not None else None)  # None: a streamed value
        yield line, cond, pieces


def template(path, cond, pieces):
    """The report as tokens: (kind, char) for literals, (kind, None) for gaps."""
    toks = [(LIT, c, False) for c in HEADER]
    toks.append((PATH, None, False))
    toks.append((LIT, ":", False))
    toks.append((DIGITS, None, False))
    toks += [(LIT, c, False) for c in ": "]
    toks += [(LIT, c, True) for c in cond]
    toks += [(LIT, c, False) for c in ": "]
    for p in pieces:
        if p is None:
            toks.append((GAP, None, False))
        else:
            toks += [(LIT, c, True) for c in p]
    return toks


def regex_fragments(rx):
    """A death-test regex as literal fragments separated by wildcards."""
    frags, cur, i = [], [], 0
    while i < len(rx):
        c = rx[i]
        if c == "\\" and i + 1 < len(rx):
            nxt = rx[i + 1]
            if nxt in "dswDSW":
                frags.append("".join(cur))
                cur = []
                i += 2
                while i < len(rx) and rx[i] in "*+?":
                    i += 1
                continue
            cur.append(nxt)
            i += 2
            continue
        if c == "[":
            j = rx.find("]", i + 2)
            frags.append("".join(cur))
            cur = []
            i = j + 1 if j > 0 else len(rx)
            while i < len(rx) and rx[i] in "*+?":
                i += 1
            continue
        if c == ".":
            frags.append("".join(cur))
            cur = []
            i += 1
            while i < len(rx) and rx[i] in "*+?":
                i += 1
            continue
        if c in "^$":
            i += 1
            continue
        if c in "*+?" and cur:
            cur.pop()  # x* / x+ / x?: drop the repeated character (treat as a gap)
            frags.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    frags.append("".join(cur))
    return [f for f in frags if f]


def gap_accepts(kind, ch):
    if kind == GAP:
        return True
    if kind == PATH:
        return not ch.isspace() and ch != ":"
    if kind == DIGITS:
        return ch.isdigit()
    return False


VALUE_CHARS = 24  # a streamed value a regex starts or ends in: one word, at most this long
LONG = VALUE_CHARS + 1


def best_own_chars(toks, frags):
    """Most regex characters matched on the check's own text over all embeddings, or -1.

    A state is (token index, run, matched): `run` counts the regex characters the current value
    gap has taken since the last printed character matched (LONG once it holds a space or is
    longer than a value), `matched` whether this fragment has matched printed text yet. A
    fragment may start or end inside a value only when the part in the value looks like a value
    (one short word): else a value would swallow text the check never prints ("task of priority
    4 made ready" is not "task of priority {} resumed while it already runs"). Values at the end
    of the report (nothing printed after them) take anything, as do values between two matched
    pieces of printed text.
    """
    n = len(toks)
    NEG = -1
    trailing = [False] * (n + 1)  # only value gaps from here to the end
    trailing[n] = True
    for k in range(n - 1, -1, -1):
        trailing[k] = toks[k][0] != LIT and trailing[k + 1]

    def put(states, key, v):
        if states.get(key, NEG) < v:
            states[key] = v

    def closure(states):
        # Leaving a gap (it may match nothing): state j on a gap moves to j + 1.
        out = dict(states)
        for (j, run, matched), v in sorted(states.items()):
            k = j
            while k < n and toks[k][0] != LIT:
                k += 1
                if not matched and run >= LONG and k < n and toks[k][0] == LIT:
                    break  # a fragment may not open with a long run inside a value
                put(out, (k, run, matched), v)
        return out

    states = None
    for frag in frags:
        if states is None:
            start = {(j, 0, False): 0 for j in range(n + 1)}
        else:
            # A wildcard between fragments: any later token position.
            start, best = {}, NEG
            by_j = {}
            for (j, _, _), v in states.items():
                by_j[j] = max(by_j.get(j, NEG), v)
            for j in range(n + 1):
                best = max(best, by_j.get(j, NEG))
                if best >= 0:
                    start[(j, 0, False)] = best
        cur = closure(start)
        for ch in frag:
            nxt = {}
            for (j, run, matched), v in cur.items():
                if j >= n:
                    continue
                kind, tch, own = toks[j]
                if kind == LIT:
                    if tch == ch and (matched or run < LONG):
                        put(nxt, (j + 1, 0, True), v + (1 if own else 0))
                elif gap_accepts(kind, ch):
                    r = LONG if ch.isspace() else min(run + 1, LONG)
                    put(nxt, (j, r, matched), v)
            last = nxt
            cur = closure(nxt)
            if not cur:
                return NEG
        # Where the fragment's last character landed: not deep inside a value that printed text
        # follows.
        ends = {(j, run, matched): v for (j, run, matched), v in last.items()
                if not (j < n and toks[j][0] != LIT and run >= LONG and not trailing[j])}
        if not ends:
            return NEG
        states = closure(ends)
    return max(states.values())


def score(toks, rx):
    """How many of the regex's characters land on this check's own text; -1: no match."""
    frags = regex_fragments(rx)
    total = sum(len(f) for f in frags)
    if total == 0:
        return -1
    own = best_own_chars(toks, frags)
    return own if own >= min(MIN_OWN_CHARS, total) else -1


def find_death_tests(path, text):
    """Yields (test name, regex) for each EXPECT/ASSERT_DEATH with a literal regex."""
    code = strip_comments(text)
    tests = [(m.start(), m.group(2)) for m in re.finditer(
        r"\bTEST(_F|_P)?\s*\(\s*\w+\s*,\s*(\w+)\s*\)", code)]
    suites = {m.start(): m.group(1) for m in re.finditer(
        r"\bTEST(?:_F|_P)?\s*\(\s*(\w+)\s*,", code)}
    for m in re.finditer(r"\b(EXPECT|ASSERT)_DEATH\s*\(", code):
        close = balanced(code, m.end() - 1)
        args = split_top(code[m.end():close - 1], ",")
        rx = literal_value(args[-1]) if len(args) >= 2 else None
        name = "?"
        for pos, test in tests:
            if pos < m.start():
                name = f"{suites.get(pos, '?')}.{test}"
        if rx is None:
            print(f"warning: {path}:{code.count(chr(10), 0, m.start()) + 1}: death test "
                  f"regex is not a string literal, skipped", file=sys.stderr)
            continue
        yield name, rx


def source_files(root, subdirs, test):
    for sub in subdirs:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, sub)):
            dirnames.sort()
            for f in sorted(filenames):
                if not f.endswith((".cc", ".h")):
                    continue
                if f.endswith("_test.cc") != test:
                    continue
                yield os.path.relpath(os.path.join(dirpath, f), root)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--exclude", action="append", default=[],
                    help="skip check sites in files under this path prefix (repeatable)")
    ap.add_argument("--uncovered", action="store_true", help="print only uncovered checks")
    args = ap.parse_args()
    root = os.path.normpath(args.root)

    deaths = []
    for rel in source_files(root, ["src", "tests"], test=True):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            deaths += [(rel, name, rx) for name, rx in find_death_tests(rel, fh.read())]

    sites = []
    for rel in source_files(root, ["src", "include"], test=False):
        if rel == os.path.join("include", "seedance", "base", "check.h"):
            continue
        if any(rel.startswith(p) for p in args.exclude):
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for line, cond, pieces in find_checks(rel, text):
            sites.append((rel, line, cond, pieces, template(rel, cond, pieces)))

    # Each death-test assertion asserts one message: it counts for the check(s) it matches best.
    hits = [set() for _ in sites]
    for _, name, rx in deaths:
        scores = [score(toks, rx) for *_, toks in sites]
        best = max(scores, default=-1)
        if best < 0:
            continue
        for i, sc in enumerate(scores):
            if sc == best:
                hits[i].add(name)

    invariants = covered = oracles = 0
    for (rel, line, cond, pieces, _), names in zip(sites, hits):
        shown = "".join(p if p is not None else "{}" for p in pieces) or f"({cond})"
        if rel.endswith("_fuzz.cc"):
            oracles += 1
            status = "fuzz-oracle"
        else:
            invariants += 1
            covered += bool(names)
            status = "covered" if names else "UNCOVERED"
        if args.uncovered and status != "UNCOVERED":
            continue
        print(f"{status:11} {rel}:{line}: {shown[:90]}"
              + (f"  <- {', '.join(sorted(names))}" if names else ""))
    print(f"\n{invariants} invariant checks, {covered} with a death test, "
          f"{invariants - covered} without; {oracles} fuzz-oracle checks (exempt); "
          f"{len(deaths)} death-test assertions")
    return 0 if covered == invariants else 1


if __name__ == "__main__":
    sys.exit(main())
