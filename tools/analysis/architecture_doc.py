#!/usr/bin/python3
"""Checks docs/architecture.md's library table against the CMake files.

Every library built from src/ (add_library in src/*/CMakeLists.txt or in a src/*/*.cmake file
that it includes; MODULE plugins aside) must have a row, and its "depends on" cell must name
exactly the Seedance libraries its target_link_libraries names ("-" for none). Prints each difference; exit status 1 if there is one, 0 if none.

Usage: tools/analysis/architecture_doc.py [--root DIR]. Python 3 standard library only.
"""
import argparse
import glob
import os
import re
import sys

MARKER = "<!-- libraries:"


def cmake_graph(root):
    libs = {}
    # A folder's CMakeLists.txt and the *.cmake files beside it that it includes.
    paths = glob.glob(os.path.join(root, "src", "*", "CMakeLists.txt"))
    paths += glob.glob(os.path.join(root, "src", "*", "*.cmake"))
    for path in sorted(paths):
        text = re.sub(r"#[^\n]*", "", open(path).read())
        for m in re.finditer(r"add_library\(\s*(seedance_\w+)\s+(\w+)?", text):
            if m.group(2) != "MODULE":
                libs.setdefault(m.group(1), set())
        for m in re.finditer(r"target_link_libraries\(\s*(seedance_\w+)([^)]*)\)", text):
            if m.group(1) in libs:
                libs[m.group(1)] |= set(re.findall(r"\bseedance_(\w+)", m.group(2))) - {
                    m.group(1)[len("seedance_"):]}
    return {k[len("seedance_"):]: v for k, v in libs.items()}


def doc_table(path):
    rows, inside = {}, False
    for n, line in enumerate(open(path), 1):
        if line.startswith(MARKER):
            inside = True
            continue
        if not inside:
            continue
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`seedance_(\w+)`", cells[0])
        if not m:
            continue
        deps = set() if cells[2] == "-" else {d.strip() for d in cells[2].split(",")}
        rows[m.group(1)] = (deps, n)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    args = ap.parse_args()
    doc = os.path.join(args.root, "docs", "architecture.md")
    graph, rows = cmake_graph(args.root), doc_table(doc)
    problems = []
    for lib, deps in sorted(graph.items()):
        if lib not in rows:
            problems.append(f"seedance_{lib} is built but has no row in the table")
        elif rows[lib][0] != deps:
            problems.append(f"docs/architecture.md:{rows[lib][1]}: seedance_{lib} depends on "
                            f"{', '.join(sorted(deps)) or '-'} (CMake), the table says "
                            f"{', '.join(sorted(rows[lib][0])) or '-'}")
    for lib, (_, n) in sorted(rows.items()):
        if lib not in graph:
            problems.append(f"docs/architecture.md:{n}: seedance_{lib} is not built")
    for p in problems:
        print(p)
    print(f"architecture_doc: {len(graph)} libraries, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
