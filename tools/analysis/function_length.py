#!/usr/bin/python3
"""Lists the functions in src/ and include/ longer than the style brief's 150 lines.

The style brief (../shared/STYLE.md) caps a function at 150 lines; issue 36 asks for none above
it. Until every one is split, the ones above it today are listed in
tools/analysis/function_length_allow.txt (`FILE FUNCTION LINES`) and this check fails when:
  - a function not on the list is longer than the limit (a new long function), or
  - a function on the list grew past its recorded length.
A listed function that shrank below the limit is reported so its line can go (run with --update
to rewrite the list from the tree).

A function is a brace block that opens where a definition's parameter list closes, at namespace
or class level (not inside another function: lambdas and local classes count toward the function
around them). Its length is the lines from the line of its name to its closing brace. Comments,
string and character literals (raw strings included) and preprocessor lines are skipped when
matching braces.

Usage: tools/analysis/function_length.py [--root DIR] [--limit N] [--update] [--top K]
Exit status: 0 within the rules, 1 a new or grown long function, 2 bad usage.
Python 3 standard library only.
"""
import argparse
import os
import re
import sys

ALLOW = os.path.join("tools", "analysis", "function_length_allow.txt")
SKIP_DIRS = ("third_party",)
KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof",
            "static_assert", "requires", "noexcept", "alignas", "defined"}


def blank_code(text):
    """Replaces comments, literals and preprocessor lines with spaces, keeping newlines."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        m = re.match(r'(?:u8|[uUL])?R"([^()\\ ]{0,16})\(', text[i:i + 40])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c in "\"'":
            # A ' between digits is a digit separator (1'000'000), not a literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length in lines) of every function definition in the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank_code(f.read())
    found = []
    # Scopes: for each open brace, whether it is a function body (then nothing inside counts).
    stack = []
    for m in re.finditer(r"[{}]", code):
        pos = m.start()
        if m.group() == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "function":
                    end_line = code.count("\n", 0, pos) + 1
                    found.append((name, start, end_line - start + 1))
            continue
        if any(k == "function" for k, _, _ in stack):
            stack.append(("block", "", 0))
            continue
        name, start = definition_before(code, pos)
        stack.append(("function", name, start) if name else ("scope", "", 0))
    return found


def definition_before(code, brace):
    """The function's name and line when the `{` at `brace` opens a function body, else ("", 0)."""
    head = code[max(0, brace - 2000):brace]
    # `name{...}` is a brace initializer (a member's in a constructor's list, a variable's).
    word = re.search(r"(\w+)\s*$", head)
    if word and word.group(1) not in ("const", "override", "final", "noexcept", "mutable", "try"):
        return "", 0
    # Brace initializers in a constructor's list read as parentheses: `: a_(x), b_{y} {`.
    head = re.sub(r"(\w)\s*\{([^{};]*)\}", r"\1(\2)", head)
    # Trailing qualifiers between the parameter list and the body.
    head = re.sub(r"(\s*(const|override|final|noexcept(\s*\([^()]*\))?|mutable|&&|&|"
                  r"->\s*[\w:<>,\s*&]+?|try))*\s*$", "", head)
    # A constructor's member initializers: `) : a_(x), b_{y} {`.
    init = re.search(r"\)\s*:\s*[\w:]+\s*[({][^;{}]*$", head)
    if init:
        head = head[:init.start() + 1]
    if not head.endswith(")"):
        return "", 0
    depth, i = 0, len(head) - 1
    while i >= 0:
        if head[i] == ")":
            depth += 1
        elif head[i] == "(":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    if i < 0:
        return "", 0
    m = re.search(r"([~\w:]+(?:\s*<[^<>;{}]*>)?(?:::~?\w+)?|operator\s*\S+)\s*$", head[:i])
    if not m:
        return "", 0
    name = re.sub(r"\s+", "", m.group(1))
    if name.split("::")[-1] in KEYWORDS or name in KEYWORDS:
        return "", 0
    # `= [](...) {`, `Type x(args) {` are not definitions: a definition's name follows a type,
    # a `::`, or starts the line.
    before = head[:m.start()].rstrip()
    if before.endswith(("=", ",", "(", "return", "[", "?", ":")) and not before.endswith("::"):
        return "", 0
    line = head.count("\n", 0, m.start()) + code.count("\n", 0, max(0, brace - 2000)) + 1
    return name, line


def scan(root, limit):
    rows = []
    for top in ("src", "include"):
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for fn in sorted(files):
                if not fn.endswith((".cc", ".h", ".c")):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root)
                for name, line, length in functions(path):
                    rows.append((rel, name, line, length))
    return rows


def read_allow(path):
    allowed = {}
    if not os.path.exists(path):
        return allowed
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3 or not parts[2].isdigit():
                sys.exit(f"{path}:{n}: expected FILE FUNCTION LINES")
            allowed[(parts[0], parts[1])] = int(parts[2])
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("--update", action="store_true", help="rewrite the allow list from the tree")
    ap.add_argument("--top", type=int, default=0, help="also print the K longest functions")
    args = ap.parse_args()
    rows = scan(args.root, args.limit)
    allow_path = os.path.join(args.root, ALLOW)
    long_ones = sorted((r for r in rows if r[3] > args.limit), key=lambda r: (-r[3], r[0]))
    if args.update:
        with open(allow_path, "w") as f:
            f.write("# Functions above the 150-line limit of ../shared/STYLE.md, to be split (issue 36).\n"
                    "# FILE FUNCTION LINES; tools/analysis/function_length.py fails when one grows or\n"
                    "# a new one appears. Rewrite with --update after splitting one.\n")
            for rel, name, _, length in sorted(long_ones):
                f.write(f"{rel} {name} {length}\n")
        print(f"function_length: wrote {len(long_ones)} functions to {ALLOW}")
        return 0
    allowed = read_allow(allow_path)
    bad = 0
    seen = set()
    for rel, name, line, length in long_ones:
        key = (rel, name)
        seen.add(key)
        if key not in allowed:
            print(f"NEW   {rel}:{line}: {name} is {length} lines (limit {args.limit})")
            bad += 1
        elif length > allowed[key]:
            print(f"GREW  {rel}:{line}: {name} is {length} lines, was {allowed[key]} "
                  f"(limit {args.limit}; split it rather than grow it)")
            bad += 1
    for key, length in sorted(allowed.items()):
        if key not in seen:
            print(f"gone  {key[0]}: {key[1]} (listed at {length}) is within the limit now or gone: "
                  f"drop its line (--update)")
    if args.top:
        for rel, name, line, length in sorted(rows, key=lambda r: -r[3])[:args.top]:
            print(f"{length:5d}  {rel}:{line}: {name}")
    print(f"function_length: {len(rows)} functions; {len(long_ones)} above {args.limit} lines "
          f"({len(allowed)} listed to be split); {bad} new or grown")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
